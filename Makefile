# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= configs/anakin_catch.py
WORKDIR ?= runs/$(notdir $(basename $(CONFIG)))

.PHONY: run test test-fast lint format bench bench-sebulba clean

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

# The whole suite, learning tests included, after the lint and format checks.
test: lint
	$(BIN)/python -m pytest -n 2 --dist worksteal $(PYTEST_ARGS)

# Everything but the tests marked slow (learning tests, big compiles), for quick loops.
test-fast: lint
	$(BIN)/python -m pytest -n 2 --dist worksteal -m "not slow" $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# Rewrites the code in ruff's format and applies ruff's safe fixes.
format: $(VENV)/.installed-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(VENV)/.installed
	$(BIN)/python scripts/benchmark_anakin.py

bench-sebulba: $(VENV)/.installed
	$(BIN)/python scripts/benchmark_sebulba.py

clean:
	rm -rf $(VENV) runs
