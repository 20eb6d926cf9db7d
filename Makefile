# fastcal: `make demo` runs the main job, `make test` the test suite. Both
# create .venv from nothing (python3 and make are all they need) and install
# the project with every extra into it the first time, or when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.fastcal-installed
PYTEST_ARGS ?=

.PHONY: all venv test demo bench bench-check bench-kernels asv clean

all: test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[all]"
	# MCGrad, the oracle of tests/test_multicalibration.py: its metrics need only NumPy, pandas, SciPy,
	# scikit-learn and psutil, but it declares torch and lightgbm, so it is installed without its dependencies
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps mcgrad==0.1.5
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

## bench-check: the benchmark gate (CI): one-thread ratios to the peers at 10^6 rows (medians of paired calls) must stay
## above 0.6 of this CPU's references in benchmarks/floors.json, and the spread over 8 threads above halfway to its own
bench-check: $(STAMP)
	$(BIN)/python -m benchmarks.check

## bench-kernels: the kernel micro-benchmarks (pytest-benchmark), JSON in benchmarks/results/
bench-kernels: $(STAMP)
	mkdir -p benchmarks/results
	$(BIN)/python -m pytest -q benchmarks/test_kernels.py --benchmark-enable --benchmark-json=benchmarks/results/kernels.json

## asv: the asv suite against the working tree, in this environment
asv: $(STAMP)
	$(BIN)/asv machine --yes
	$(BIN)/asv run --python=same --quick --show-stderr

clean:
	rm -rf $(VENV) .asv .pytest_cache .hypothesis demo_output .import_linter_cache .grimp_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
