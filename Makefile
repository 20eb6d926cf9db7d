# fastcal: `make demo` runs the main job, `make test` the test suite. Both
# create .venv from nothing (python3 and make are all they need) and install
# the project with every extra into it the first time, or when pyproject.toml changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.fastcal-installed
PYTEST_ARGS ?=
# Numba's cache. `make demo` and the other targets leave it where a fastcal run puts it by itself (__pycache__
# beside the sources, or your NUMBA_CACHE_DIR), so your own runs of .venv/bin/fastcal or python load what they
# compiled. The checks CI runs (test, docs, bench-check) keep one of their own in the venv, which `make test` starts
# from one cold `fastcal precompile`. `make clean` empties both.
CHECK_CACHE := $(abspath $(VENV))/numba-cache
COLD_CACHE := $(abspath $(VENV))/numba-cache-cold
# Processes each pass of the suite runs in (pytest-xdist, whole test files to a process): one per CPU, at most 4
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
# Worker processes of `fastcal precompile` (each needs up to about 2 GiB at once): the same count
PRECOMPILE_JOBS ?= $(TEST_WORKERS)

# The checks write the bytecode of fastcal and the tests (Python's default) even where the environment asks for none:
# each of their pytest processes and the hundreds of Python processes the tests start would otherwise compile every
# module from its source again (pytest's collection alone: 15 s a process against 9.5 s).
test docs bench-check: export PYTHONDONTWRITEBYTECODE :=

.PHONY: all venv test demo demo-readme docs bench bench-check bench-kernels scaling asv clean

all: test

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --upgrade pip
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e ".[all]"
	# MCGrad, the oracle of tests/test_multicalibration.py: its metrics need only NumPy, pandas, SciPy,
	# scikit-learn and psutil, but it declares torch and lightgbm, so it is installed without its dependencies;
	# its fit (MCGrad().fit, the peer of benchmarks/compare_multicalibration_fit.py) needs lightgbm alone, which
	# the bench extra installs
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps mcgrad==0.1.5
	# abstention (Alexandari et al.), the oracle of tests/test_multiclass.py: vector scaling and BCTS by L-BFGS,
	# EM and BBSE for label shift; it needs NumPy, SciPy and scikit-learn only, but pins old versions of them
	$(BIN)/python -m pip install --quiet --disable-pip-version-check --no-deps abstention==0.1.3.1
	@touch $(STAMP)

venv: $(STAMP)

## test: the import contracts in pyproject.toml (the layers); one cold `fastcal precompile` into an empty Numba
## cache (tests/test_precompile.py checks what it compiled), copied into CHECK_CACHE so that the passes
## start warm; the whole suite (unit, property,
## peer-comparison and benchmark smoke tests) with every core; again on one thread without the
## `slow` tests (each pass in TEST_WORKERS processes, whole test files to a process; results must not depend on the thread count; the slow ones are about memory, signals,
## the compile cache, host processes, the asv benchmarks, the docs' blocks, the demo and scikit-learn's test files, not threads); a subset
## with the JIT disabled
test: $(STAMP)
	$(BIN)/lint-imports
	rm -rf $(COLD_CACHE) && $(BIN)/python tests/precompile_cold.py $(COLD_CACHE) > $(COLD_CACHE).json
	mkdir -p $(CHECK_CACHE) && cp -R $(COLD_CACHE)/. $(CHECK_CACHE)/
	NUMBA_CACHE_DIR=$(CHECK_CACHE) FASTCAL_COLD_PRECOMPILE=$(COLD_CACHE).json $(BIN)/python -m pytest --durations=20 -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)
	NUMBA_CACHE_DIR=$(CHECK_CACHE) NUMBA_NUM_THREADS=1 $(BIN)/python -m pytest -q -m "not slow" -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)
	NUMBA_CACHE_DIR=$(CHECK_CACHE) NUMBA_DISABLE_JIT=1 $(BIN)/python -m pytest -q -m nojit tests $(PYTEST_ARGS)

## demo: `fastcal precompile` (compiles every kernel into the cache the first time, minutes; loads them later), then
## the main job on 10^7 rows, with timings against scikit-learn; its pictures go to fastcal-demo/ in the current
## directory (git-ignored; the demo writes nothing else). DEMO_ARGS="--n 1000000" for fewer rows
demo: $(STAMP)
	$(BIN)/python -m fastcal precompile --jobs $(PRECOMPILE_JOBS)
	$(BIN)/python -m fastcal.demo $(DEMO_ARGS)

## demo-readme: the demo, writing its transcript into README.md (between the demo-transcript markers) and
## its pictures into docs/images/: the README's transcript and pictures, made by one run
demo-readme: $(STAMP)
	$(BIN)/python -m fastcal precompile --jobs $(PRECOMPILE_JOBS)
	$(BIN)/python -m fastcal.demo --out docs/images --readme README.md $(DEMO_ARGS)

## docs: the documentation site (Sphinx: user guide, API reference from the docstrings, the example
## gallery run at build time) in docs/_build/html; any warning fails the build
docs: $(STAMP)
	NUMBA_CACHE_DIR=$(CHECK_CACHE) $(BIN)/python -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "docs: open docs/_build/html/index.html"

## bench: side-by-side timings against the peers; rewrites the table in docs/performance.md
bench: $(STAMP)
	$(BIN)/python -m benchmarks.compare --write-readme

## bench-check: the benchmark gate (CI): one-thread ratios to the peers at 10^6 rows (least CPU times of alternating calls) must stay
## above 0.7 of this CPU's references in benchmarks/floors.json, and the spread over 8 threads well above 1
bench-check: $(STAMP)
	NUMBA_CACHE_DIR=$(CHECK_CACHE) $(BIN)/python -m benchmarks.check

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
	rm -rf $(VENV) .asv .pytest_cache .hypothesis fastcal-demo .import_linter_cache .grimp_cache \
		docs/_build docs/generated docs/auto_examples docs/sg_execution_times.rst
	find . -name __pycache__ -prune -exec rm -rf {} +
