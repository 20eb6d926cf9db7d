"""One cold ``fastcal precompile`` into an empty ``NUMBA_CACHE_DIR``, and what it compiled: a JSON line.

tests/test_precompile.py checks the report: every ``@kernel`` dispatcher of
every fastcal module has at least one signature in the cache it left (the
run is ``fastcal precompile --jobs``, as a Dockerfile would run it). The
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

#: In a fresh interpreter: run what the CLI runs (in JOBS worker processes), then list every kernel of every fastcal
#: module with the signatures the cache holds for it.
COLD = r"""
import importlib, json, pkgutil, sys
import fastcal
from fastcal import _precompile
from fastcal.cli import main

status = main(["precompile", "--quiet", "--jobs", sys.argv[1]])
for info in pkgutil.walk_packages(fastcal.__path__, "fastcal."):
    if not info.name.endswith("__main__"):  # which runs the command line when imported
        importlib.import_module(info.name)
kernels = {name: dict(signatures=count) for name, count in _precompile.cached_signatures().items()}
print(json.dumps(dict(status=status, kernels=kernels)))
"""

#: Worker processes of the cold run: the CPUs available, at most 4 (each needs up to about 2 GiB at once).
JOBS = min(4, len(os.sched_getaffinity(0)))


def cache_facts(cache):
    """``(files, bytes)`` of the Numba cache files (index ``.nbi`` and machine code ``.nbc``) under ``cache``."""
    paths = [os.path.join(d, f) for d, _, files in os.walk(cache) for f in files if f.endswith((".nbi", ".nbc"))]
    return len(paths), sum(os.path.getsize(p) for p in paths)


def run(cache, timeout=3600):
    """The cold run into ``cache`` (created; it must hold no Numba cache yet): its report, a dict.

    Besides the child's ``status`` and ``kernels`` (each kernel's signatures in the cache): ``signatures`` (all
    of them), the cache's ``files`` and ``bytes``, ``jobs`` (the worker processes), and the run's ``seconds``
    (wall), ``cpu_seconds`` and ``peak_rss_bytes`` (of the child and its workers, the largest one), which
    docs/performance.md quotes.
    """
    os.makedirs(cache, exist_ok=True)
    if cache_facts(cache)[0]:
        raise SystemExit(f"{cache}: not empty: the run would not be cold")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", COLD, str(JOBS)], env=env, capture_output=True, text=True, timeout=timeout)
    seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    report = json.loads(out.stdout.splitlines()[-1])
    files, size = cache_facts(cache)
    return dict(report, cache=os.path.abspath(cache),
                signatures=sum(k["signatures"] for k in report["kernels"].values()), files=files, bytes=size, jobs=JOBS,
                seconds=seconds, cpu_seconds=(after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
                peak_rss_bytes=after.ru_maxrss * 1024)


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
