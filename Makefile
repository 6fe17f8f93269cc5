# Two commands on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
CONFIG ?= configs/anakin_catch.py
WORKDIR ?= runs/$(notdir $(basename $(CONFIG)))

.PHONY: run test test-fast test-extended test-seeds lint docs format bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The installs go through uv, from PyPI: about three times as fast as pip on a fresh machine (36 s against 100 s
# for the test extras on the 2-core CI machine), which is time `make test` keeps for the tests. Bytecode is
# compiled at install, as pip does: where PYTHONDONTWRITEBYTECODE is set (as on CI), every test process would
# otherwise parse JAX and the rest from source again.
$(BIN)/uv: | $(BIN)/python
	$(BIN)/python -m pip install --quiet uv

INSTALL := $(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python

$(VENV)/.installed: pyproject.toml | $(BIN)/uv
	$(INSTALL) -e .
	touch $@

$(VENV)/.installed-plot: pyproject.toml $(VENV)/.installed
	$(INSTALL) -e ".[plot]"
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(INSTALL) -e ".[test]"
	touch $@

$(VENV)/.installed-docs: pyproject.toml $(VENV)/.installed
	$(INSTALL) -e ".[docs]"
	touch $@

run: $(VENV)/.installed
	$(BIN)/podracer train --config $(CONFIG) --workdir $(WORKDIR)

# Two pytest-xdist workers for the two cores, each handed one test at a time as it finishes the last: xdist's default
# hands each worker a quarter of its share up front, and the slow tests (run first) then end with one worker idle for
# minutes while the other works through its chunk (simulated from a run's durations: 1,579 s against 1,443).
XDIST := -n 2 --dist load --maxschedchunk 1

# The whole suite, learning tests included, but the tests marked `extended` (a second proof of what another test in it
# proves: docs/testing.md lists each, and what stands for it), after the lint and format checks and the docs' strict
# build; the slowest 15 tests are listed at the end (docs/testing.md has the budget).
test: lint docs
	$(BIN)/python -m pytest $(XDIST) -m "not extended" --durations=15 $(PYTEST_ARGS)

# The tests `make test` leaves out: about 13 minutes of test time, 7 on the two cores.
test-extended: $(VENV)/.installed-test
	$(BIN)/python -m pytest $(XDIST) -m extended $(PYTEST_ARGS)

# Everything but the tests marked slow (learning tests, big compiles), for quick loops: after the lint and format
# checks, but not the docs' build (`make docs`, 18 s of its 3-minute budget on the AVX2 host; `make test` builds them).
test-fast: lint
	$(BIN)/python -m pytest $(XDIST) -m "not slow" $(PYTEST_ARGS)

# Every learning test once per seed in SEEDS (0-4 unless given), then each metric against its threshold: each seed's
# value and the worst seed's margin (tests/learning.py; the measured table is docs/testing.md). About an hour here.
SEEDS ?= 0 1 2 3 4
test-seeds: $(VENV)/.installed-test
	$(BIN)/python -m pytest $(XDIST) -m learning --learning-seeds "$(SEEDS)" $(PYTEST_ARGS)

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The documentation site (docs/, mkdocs.yml) into site/. Strict: a broken link, a missing page or a
# cross-reference to an API name that no longer exists fails the build (never --quiet: it hides the warnings
# that strict mode counts). Works offline once installed; the variables hush a notice about MkDocs 2.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/mkdocs build --strict --site-dir site

# Rewrites the code in ruff's format and applies ruff's safe fixes.
format: $(VENV)/.installed-test
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Throughput figures (podracer bench): BENCH_ARGS=--quick for a check in under a minute, --figures 4a,... for some.
bench: $(VENV)/.installed-plot
	$(BIN)/podracer bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) runs site
