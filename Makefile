# semmem: two commands on a fresh machine with only Python 3.11 —
#   make run    set up (venv, torch CPU, pinned deps, verified model) and serve on 127.0.0.1
#   make test   set up likewise, then lint, type-check and run the whole test suite
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
MODEL  := models/all-MiniLM-L6-v2
STAMP  := $(VENV)/.semmem-installed

.PHONY: setup model run test lint pytest browser bench docker-smoke clean

setup: $(STAMP) $(MODEL)/.verified

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	# torch first, pinned, so nothing resolves a newer (CUDA) build
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -c requirements.lock -e '.[dev]'
	touch $@

$(MODEL)/.verified: models/manifest.json $(STAMP)
	$(BIN)/semmem model fetch --model $(MODEL)
	touch $@

model: $(MODEL)/.verified

run: setup
	$(BIN)/semmem serve $(ARGS)

lint: $(STAMP)
	$(BIN)/ruff check semmem tests benchmarks
	$(BIN)/mypy

# Debian's chromium + chromedriver for the console's browser tests (installs as root when missing)
browser:
	scripts/ensure-browser.sh

pytest: setup browser
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

test: setup lint pytest

bench: setup
	$(BIN)/python benchmarks/run_all.py

docker-smoke:
	scripts/docker-smoke.sh

clean:
	rm -rf $(VENV) $(MODEL) .pytest_cache .mypy_cache .ruff_cache
