# semmem: two commands on a fresh machine with only Python 3.11 —
#   make run    set up what serving needs (venv, pinned deps without torch, the verified model
#               and its ONNX file) and serve on 127.0.0.1
#   make test   set up likewise plus the dev tools and the torch reference encoder, then lint,
#               type-check and run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
MODEL  := models/all-MiniLM-L6-v2
STAMP  := $(VENV)/.semmem-installed
DEV    := $(VENV)/.semmem-dev-installed
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check -c requirements.lock

.PHONY: setup setup-dev model run test lint pytest browser bench docker-smoke clean

# What serving needs: no torch (the model runs on ONNX Runtime; set-up builds its file).
setup: $(STAMP) $(MODEL)/.verified

# The tests' set-up: the dev tools and the reference extra (torch, sentence-transformers).
setup-dev: setup $(DEV)

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

$(DEV): $(STAMP)
	# torch first, pinned, so nothing resolves a newer (CUDA) build
	$(PIP) torch==2.13.0
	$(PIP) -e '.[dev,reference]'
	touch $@

$(MODEL)/.verified: models/manifest.json models/probe-reference.json $(STAMP)
	$(BIN)/semmem model fetch --model $(MODEL)
	touch $@

model: $(MODEL)/.verified

run: setup
	$(BIN)/semmem serve $(ARGS)

lint: $(DEV)
	$(BIN)/ruff check semmem tests benchmarks
	$(BIN)/mypy

# Debian's chromium + chromedriver for the console's browser tests (installs as root when missing)
browser:
	scripts/ensure-browser.sh

pytest: setup-dev browser
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test: setup-dev lint pytest

bench: setup-dev
	$(BIN)/python benchmarks/run_all.py

docker-smoke:
	scripts/docker-smoke.sh

clean:
	rm -rf $(VENV) $(MODEL) .pytest_cache .mypy_cache .ruff_cache
