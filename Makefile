# prep — set up and run, or set up and test, on a fresh machine:
#   make run     create .venv, install prep, open today's quiz
#   make test    create .venv, install prep + dev tools, run ruff, mypy and the test suite
#   make bench   print the benchmark numbers (with their floors, and beside Anki's engine;
#                the grader's accuracy per answer style on its held-out set)
#
# torch, installed before prep so pip never picks the wrong build:
# - a machine with an NVIDIA GPU (nvidia-smi works): PyPI's CUDA build;
# - a machine where pip already has a torch $(LOCAL_TORCH) wheel on disk (find-links): that one;
# - any other: the CPU build from PyTorch's CPU index (~200 MB instead of PyPI's 3 GB CUDA
#   build); if that index cannot be reached within a few seconds, plain PyPI.
# Override with `make test TORCH_SPEC="torch==2.x.y"` (installed as given, from PyPI).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install -q --disable-pip-version-check
HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)
LOCAL_TORCH ?= torch==2.13.0
CPU_INDEX ?= https://download.pytorch.org/whl/cpu
ifeq ($(origin TORCH_SPEC),undefined)
TORCH_SPEC := torch>=2.4
TORCH_AUTO := yes
endif

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml setup.py | $(BIN)/python
ifeq ($(TORCH_AUTO):$(HAS_GPU),yes:)
	if $(PIP) --dry-run --no-deps --no-index "$(LOCAL_TORCH)" >/dev/null 2>&1; then \
		$(PIP) "$(LOCAL_TORCH)"; \
	elif $(PIP) --timeout 10 --retries 0 --index-url $(CPU_INDEX) "$(TORCH_SPEC)"; then :; \
	else echo "the CPU index is out of reach; installing torch from PyPI" >&2; $(PIP) "$(TORCH_SPEC)"; fi
else
	$(PIP) "$(TORCH_SPEC)"
endif
	$(PIP) -e ".[dev,real]"
	touch $@

run: $(VENV)/.installed
	$(BIN)/prep

test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tests/typecheck.py
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check . && $(BIN)/python tests/typecheck.py

$(VENV)/.bench-installed: $(VENV)/.installed
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev,bench]"
	touch $@

# the Anki comparison builds its collections once under bench-out/ (add ARGS=--million for
# the 1M-card row of the growth table)
bench: $(VENV)/.bench-installed
	$(BIN)/python tests/benchmarks/run.py
	$(BIN)/python tests/benchmarks/grader_bench.py
	$(BIN)/python tests/benchmarks/anki_bench.py $(ARGS)
	$(BIN)/python tests/benchmarks/pty_bench.py
	$(BIN)/python tests/benchmarks/sync_bench.py
	$(BIN)/python tests/benchmarks/demo_bench.py
	$(BIN)/python tests/benchmarks/fill_bench.py $(if $(findstring --million,$(ARGS)),--million)

clean:
	rm -rf $(VENV) build *.egg-info
