# prep — set up and run, or set up and test, on a fresh machine:
#   make run     create .venv, install prep, open today's quiz
#   make test    create .venv, install prep + dev tools, run ruff and the test suite
#   make bench   print the benchmark numbers (with their floors, and beside Anki's engine)
#
# torch: a machine with an NVIDIA GPU (nvidia-smi works) gets PyPI's CUDA build; any other gets
# the CPU build of 2.13.0 (this workplace keeps its wheel on disk, so no 3 GB download).
# Override with `make test TORCH_SPEC="torch==2.x.y"`.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HAS_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)
TORCH_SPEC ?= $(if $(HAS_GPU),torch>=2.4,torch==2.13.0)

.PHONY: run test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q --disable-pip-version-check "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev]"
	touch $@

run: $(VENV)/.installed
	$(BIN)/prep

test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

$(VENV)/.bench-installed: $(VENV)/.installed
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev,bench]"
	touch $@

# the Anki comparison builds its collections once under bench-out/ (add ARGS=--million for
# the 1M-card row of the growth table)
bench: $(VENV)/.bench-installed
	$(BIN)/python tests/benchmarks/run.py
	$(BIN)/python tests/benchmarks/anki_bench.py $(ARGS)

clean:
	rm -rf $(VENV) build *.egg-info
