"""Run every asv benchmark and every comparison once, on tiny sizes, so that none can rot.

``FASTCAL_BENCH_QUICK=1 python -m benchmarks.smoke`` (the test suite does this)
imports each ``bench_*.py`` module, and for each benchmark class and each
combination of its parameters calls ``setup``, every ``time_*``, ``peakmem_*``
and ``track_*`` method once, then ``teardown``; then it collects the rows of
every ``compare_*.py`` module with ``quick=True``.
"""

from __future__ import annotations

import importlib
import itertools
import pkgutil
import sys

import benchmarks


def _modules(prefix):
    names = sorted(m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith(prefix))
    return [importlib.import_module(f"benchmarks.{name}") for name in names]


def run_asv_suite():
    calls = 0
    for module in _modules("bench_"):
        for cls in [c for c in vars(module).values() if isinstance(c, type) and c.__module__ == module.__name__]:
            methods = [m for m in dir(cls) if m.startswith(("time_", "peakmem_", "track_", "mem_"))]
            if not methods:
                continue
            params = getattr(cls, "params", [])
            if params and not isinstance(params[0], (list, tuple)):
                params = [params]
            for combo in itertools.product(*params) if params else [()]:
                bench = cls()
                if hasattr(bench, "setup"):
                    bench.setup(*combo)
                for name in methods:
                    getattr(bench, name)(*combo)
                    calls += 1
                if hasattr(bench, "teardown"):
                    bench.teardown(*combo)
    return calls


def run_comparisons():
    rows = []
    for module in _modules("compare_"):
        rows.extend(module.rows(quick=True))
    return rows


def main():
    calls = run_asv_suite()
    rows = run_comparisons()
    print(f"smoke: {calls} asv benchmark calls, {len(rows)} comparison rows")
    if not calls or not rows:
        sys.exit("smoke: nothing ran")


if __name__ == "__main__":
    main()
