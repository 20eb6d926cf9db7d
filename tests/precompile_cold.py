"""One cold ``fastcal precompile`` into an empty ``NUMBA_CACHE_DIR``, and what it compiled: a JSON line.

tests/test_precompile.py checks the report: every ``@kernel`` dispatcher of
every fastcal module compiled at least one signature in that process. The
run takes minutes (it compiles everything), so ``make test`` runs this
script once, first, and gives the suite its report (``FASTCAL_COLD_PRECOMPILE``)
and a copy of its cache to start from, warm; run alone, the test runs it itself.

Usage: ``python tests/precompile_cold.py CACHE_DIR`` (the folder must be empty or absent).
"""

import json
import os
import resource
import subprocess
import sys
import time

#: In a fresh interpreter: run what the CLI runs, then list every kernel of every fastcal module.
COLD = r"""
import importlib, json, pkgutil, sys
import fastcal
from fastcal.cli import main
from numba.core.registry import CPUDispatcher

status = main(["precompile", "--quiet"])
kernels = {}
for info in pkgutil.walk_packages(fastcal.__path__, "fastcal."):
    if info.name.endswith("__main__"):
        continue  # runs the command line when imported
    module = importlib.import_module(info.name)
    for name, obj in vars(module).items():
        if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == info.name:
            kernels[f"{info.name}.{name}"] = dict(signatures=len(obj.signatures),
                                                  compiled=sum(obj.stats.cache_misses.values()))
print(json.dumps(dict(status=status, kernels=kernels)))
"""


def cache_facts(cache):
    """``(files, bytes)`` of the Numba cache files (index ``.nbi`` and machine code ``.nbc``) under ``cache``."""
    paths = [os.path.join(d, f) for d, _, files in os.walk(cache) for f in files if f.endswith((".nbi", ".nbc"))]
    return len(paths), sum(os.path.getsize(p) for p in paths)


def run(cache, timeout=3600):
    """The cold run into ``cache`` (created; it must hold no Numba cache yet): its report, a dict.

    Besides the child's ``status`` and ``kernels``: ``signatures`` (all compiled), the cache's ``files`` and
    ``bytes``, and the run's ``seconds`` (wall), ``cpu_seconds`` and ``peak_rss_bytes`` (of the child), which
    docs/performance.md quotes.
    """
    os.makedirs(cache, exist_ok=True)
    if cache_facts(cache)[0]:
        raise SystemExit(f"{cache}: not empty: the run would not be cold")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    report = json.loads(out.stdout.splitlines()[-1])
    files, size = cache_facts(cache)
    return dict(report, cache=os.path.abspath(cache),
                signatures=sum(k["signatures"] for k in report["kernels"].values()), files=files, bytes=size,
                seconds=seconds, cpu_seconds=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
                peak_rss_bytes=after.ru_maxrss * 1024)


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
