"""Run every asv benchmark and every comparison once, on tiny sizes, so that none can rot.

``FASTCAL_BENCH_QUICK=1 python -m benchmarks.smoke`` (the test suite does this)
imports each ``bench_*.py`` module and runs each benchmark as asv runs it: for
each benchmark class, each combination of its parameters and each ``time_*``,
``peakmem_*``, ``mem_*`` and ``track_*`` method, with no kernel loaded yet (asv
forks a fresh process per benchmark), it calls ``setup``, the method once,
then ``teardown``. It checks two things:

- no benchmark raises;
- ``setup`` warms what is timed: a ``time_*``, ``peakmem_*`` or ``mem_*``
  method that makes a fastcal kernel compile or load from the cache (a Numba
  signature its ``setup`` did not call) is reported, since asv would time the
  compilation (every call under ``--quick``, which makes no warm-up call).

"No kernel loaded yet" is emulated by dropping every fastcal dispatcher's
compiled signatures before each ``setup`` (they load again from the on-disk
cache). The check sees the signatures of the tiny sizes: a setup that warms
on a prefix of the data must take one long enough for every size-dependent
path of the full sizes (``_harness.WARM`` rows, checked against them by
tests/test_benchmarks.py).
The Dask benchmarks run on the synchronous scheduler here, so their kernels
run in this process and are checked too.

Then it collects the rows of every ``compare_*.py`` module with ``quick=True`` and prints their table
(``benchmarks.compare``'s, as ``python -m benchmarks.compare --quick`` would).
Any problem is printed and the exit status is 1. Without
``FASTCAL_BENCH_QUICK=1`` it refuses to run (the full sizes reach 10^8 rows).
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import sys
import traceback

import benchmarks
from benchmarks import compare
from benchmarks._harness import QUICK
from fastcal._precompile import dispatchers

#: Methods asv times or measures: a compilation inside one is a defect.
MEASURED = ("time_", "peakmem_", "mem_")
#: Every method asv runs.
METHODS = MEASURED + ("track_",)


def _modules(prefix):
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith(prefix))
    return [importlib.import_module(f"benchmarks.{name}") for name in names]


def benchmark_classes(module):
    """The classes of ``module`` that asv runs (those defined there with a benchmark method, but for the ones whose
    name starts with an underscore: asv skips them too)."""
    return [c for name, c in vars(module).items() if isinstance(c, type) and c.__module__ == module.__name__
            and not name.startswith("_") and any(m.startswith(METHODS) for m in dir(c))]


def _combos(cls):
    params = getattr(cls, "params", [])
    if params and not isinstance(params[0], (list, tuple)):
        params = [params]
    return list(itertools.product(*params)) if params else [()]


def _forget_compiled():
    """Drop the compiled signatures of every fastcal kernel, as in a process that has run nothing yet."""
    for disp in dispatchers().values():
        disp._reset_overloads()


def _signatures():
    return {name: set(disp.overloads) for name, disp in dispatchers().items()}


def check_benchmark(cls, combo, method):
    """Run ``setup``, ``method`` and ``teardown`` of ``cls`` on ``combo`` as asv does; a problem, or None."""
    where = f"{cls.__module__}.{cls.__name__}.{method}{combo}"
    _forget_compiled()
    bench = cls()
    try:
        if hasattr(bench, "setup"):
            bench.setup(*combo)
        before = _signatures()
        getattr(bench, method)(*combo)
        after = _signatures()
    except Exception:
        return f"{where}: raised\n{traceback.format_exc()}"
    finally:
        if hasattr(bench, "teardown"):
            bench.teardown(*combo)
    if method.startswith(MEASURED):
        new = [f"{name}{tuple(sig)}" for name, sigs in after.items() for sig in sigs - before.get(name, set())]
        if new:
            return f"{where}: compiled or loaded during the measured call (not warmed in setup): " + ", ".join(new)
    return None


def run_asv_suite(modules=None):
    """Check every benchmark of ``modules`` (default: every ``bench_*.py``); returns ``(calls, problems)``."""
    calls, problems = 0, []
    for module in _modules("bench_") if modules is None else modules:
        for cls in benchmark_classes(module):
            for combo in _combos(cls):
                for method in sorted(m for m in dir(cls) if m.startswith(METHODS)):
                    problem = check_benchmark(cls, combo, method)
                    calls += 1
                    if problem:
                        problems.append(problem)
    return calls, problems


def main():
    if not QUICK:  # the full sizes reach 10^8 rows: never in the test suite
        sys.exit("smoke: set FASTCAL_BENCH_QUICK=1 (tiny sizes)")
    calls, problems = run_asv_suite()
    for problem in problems:
        print(problem, file=sys.stderr)
    rows = compare.collect(quick=True)
    print(compare.render(rows))
    print(f"smoke: {calls} asv benchmark calls, {len(problems)} problems, {len(rows)} comparison rows")
    if problems:
        sys.exit(1)
    if not calls or not rows:
        sys.exit("smoke: nothing ran")


if __name__ == "__main__":
    main()
