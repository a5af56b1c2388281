# prep — set up and run, or set up and test, on a fresh machine:
#   make run     create .venv, install prep, open today's quiz
#   make test    create .venv, install prep + dev tools, run ruff and the test suite
#   make bench   print the benchmark numbers (with their floors)
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
	$(BIN)/python -m pip install -q --disable-pip-version-check -e ".[dev,real]"
	touch $@

run: $(VENV)/.installed
	$(BIN)/prep

test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python -m pytest -q

lint: $(VENV)/.installed
	$(BIN)/ruff check . && $(BIN)/ruff format --check .

bench: $(VENV)/.installed
	$(BIN)/python tests/benchmarks/run.py

clean:
	rm -rf $(VENV) build *.egg-info
