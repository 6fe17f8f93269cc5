# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= configs/anakin_catch.py
WORKDIR ?= runs/$(notdir $(basename $(CONFIG)))

.PHONY: run test bench bench-sebulba clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install --quiet -e ".[test]"
	touch $@

run: $(VENV)/.installed
	$(BIN)/podracer train --config $(CONFIG) --workdir $(WORKDIR)

test: $(VENV)/.installed-test
	$(BIN)/python -m pytest -n 2 $(PYTEST_ARGS)

bench: $(VENV)/.installed
	$(BIN)/python scripts/benchmark_anakin.py

bench-sebulba: $(VENV)/.installed
	$(BIN)/python scripts/benchmark_sebulba.py

clean:
	rm -rf $(VENV) runs
