# fastcal: `make demo` runs the main job, `make test` the test suite. Both
# create .venv from nothing (python3 and make are all they need) and install
# the project with every extra into it the first time, or when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.fastcal-installed
PYTEST_ARGS ?=

.PHONY: all venv test demo bench bench-check bench-kernels scaling asv clean

all: test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[all]"
	@touch $(STAMP)

venv: $(STAMP)

## test: the import contracts in pyproject.toml (the layers); the whole suite (unit, property,
## peer-comparison and benchmark smoke tests) with every core; again on one thread without the
## `slow` large-input tests (results must not depend on the thread count; the slow ones are about
## memory, signals and the compile cache, not threads); a subset with the JIT disabled
test: $(STAMP)
	$(BIN)/lint-imports
	$(BIN)/python -m pytest $(PYTEST_ARGS)
	NUMBA_NUM_THREADS=1 $(BIN)/python -m pytest -q -m "not slow" $(PYTEST_ARGS)
	NUMBA_DISABLE_JIT=1 $(BIN)/python -m pytest -q -m nojit tests $(PYTEST_ARGS)

## demo: the main job on 10^7 rows, with timings against scikit-learn and plots in demo_output/
demo: $(STAMP)
	$(BIN)/python -m fastcal.demo

## bench: side-by-side timings against the peers; rewrites the README's table
bench: $(STAMP)
	$(BIN)/python -m benchmarks.compare --write-readme

## bench-check: the benchmark gate (CI): ratios to the peers at 10^6 rows must stay above benchmarks/floors.json
bench-check: $(STAMP)
	$(BIN)/python -m benchmarks.check

## bench-kernels: the kernel micro-benchmarks (pytest-benchmark), JSON in benchmarks/results/
bench-kernels: $(STAMP)
	mkdir -p benchmarks/results
	$(BIN)/python -m pytest -q benchmarks/test_kernels.py --benchmark-enable --benchmark-json=benchmarks/results/kernels.json

## scaling: each in-memory path at 10^7 rows (N=1e8 for more) in fresh processes: time at 1 and 2 threads,
## the per-thread CPU spread at 8 and 16 threads, the extra peak memory; writes docs/scaling.md
N ?= 1e7
scaling: $(STAMP)
	$(BIN)/python -m benchmarks.scaling --n $(N)

## asv: the asv suite against the working tree, in this environment
asv: $(STAMP)
	$(BIN)/asv machine --yes
	$(BIN)/asv run --python=same --quick --show-stderr

clean:
	rm -rf $(VENV) .asv .pytest_cache .hypothesis demo_output .import_linter_cache .grimp_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
