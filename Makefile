# skiff: the two commands (make lab, make test) and the benchmarks (make bench).
# Every target creates .venv itself and reinstalls only when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.skiff-installed
LAB_DIR := .lab
LAB_PORT ?= 8888
LAB_ARGS ?=
# JupyterLab refuses to run as root without --allow-root (containers, CI)
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root)
PYTEST_ARGS ?=

.PHONY: lab test lint unit bench install system-deps clean lab-config gpu-check labext

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	$(BIN)/python -m skiff.kernels.solve  # numba's cache for the solver, so a first solve finds it warm
	touch $(STAMP)

install: $(STAMP)

system-deps:
	@bash tools/system-deps.sh

lab-config: $(STAMP)
	@$(BIN)/python tools/lab_config.py $(LAB_DIR)

lab: $(STAMP) lab-config
	IPYTHONDIR=$(CURDIR)/$(LAB_DIR)/ipython JUPYTER_CONFIG_DIR=$(CURDIR)/$(LAB_DIR)/jupyter \
	  SKIFF_RUNS=$(CURDIR)/notebooks/skiff-runs OPENBLAS_THREAD_TIMEOUT=20 \
	  $(BIN)/jupyter lab --notebook-dir=notebooks --ip=127.0.0.1 --port=$(LAB_PORT) \
	  --no-browser $(ROOT_ARGS) $(LAB_ARGS)

# the Jobs sidebar's frontend (labextension/, TypeScript) built with JupyterLab's builder into
# skiff/lab/labextensions/skiff-lab, which is committed: `make lab` and `make test` need no Node.
# Needs node and npm (Debian: apt-get install nodejs npm); rebuilds only when a source changed.
LABEXT_OUT := skiff/lab/labextensions/skiff-lab/sources.sha256
LABEXT_SRC := $(shell find labextension/src labextension/style -type f 2>/dev/null) \
  labextension/package.json labextension/package-lock.json labextension/tsconfig.json

labext: $(LABEXT_OUT)

labextension/node_modules/.package-lock.json: labextension/package.json labextension/package-lock.json
	cd labextension && npm ci --no-audit --no-fund

$(LABEXT_OUT): $(LABEXT_SRC) labextension/node_modules/.package-lock.json | $(STAMP)
	rm -rf skiff/lab/labextensions/skiff-lab/static
	cd labextension && npx tsc && PATH=$(abspath $(BIN)):$$PATH jupyter labextension build .
	$(BIN)/python tools/labext_sources.py --write

lint: $(STAMP)
	$(BIN)/ruff check skiff tests benchmarks tools

# the tests run in two processes (pytest-xdist, a file's tests together: its module fixtures
# are built once; TEST_WORKERS=0 runs them in this one); the slowest are listed at the end:
# ~30 min in one process on this 2-core machine, about half that in two.
# Bytecode is written even where the shell sets PYTHONDONTWRITEBYTECODE (this machine does):
# the CLI runs, MPI ranks and notebook kernels the tests start then load skiff's modules
# from .pyc instead of compiling the ones they import each time (round 46: tests/cli 49 -> 31 s
# in one process), and pytest keeps its rewritten test modules; compiled once up front (2 s)
TEST_WORKERS ?= 2
TEST_ENV := env -u PYTHONDONTWRITEBYTECODE OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
test: $(STAMP) system-deps lab-config lint
	$(BIN)/python -m compileall -q -j 2 skiff tests > /dev/null
	$(TEST_ENV) $(BIN)/python -m pytest tests --durations=20 \
	  -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

unit: $(STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest tests \
	  -m "not mpi and not notebook and not browser and not slow" $(PYTEST_ARGS)

bench: $(STAMP) system-deps
	@bash tools/bench-deps.sh
	$(BIN)/python benchmarks/run_all.py
	$(BIN)/python benchmarks/collect.py

# every gpu-marked test and the GPU rows of the benchmarks in under 8 minutes on one GPU, written
# to benchmarks/results/gpu.md; without a GPU it says so there and exits 0
GPU_STAMP := $(VENV)/.skiff-gpu-installed

$(GPU_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,gpu]'
	touch $(GPU_STAMP)

gpu-check: $(GPU_STAMP)
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 $(BIN)/python tools/gpu_check.py

clean:
	rm -rf $(VENV) $(LAB_DIR) test-artifacts .pytest_cache skiff-runs
