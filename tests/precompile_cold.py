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
import subprocess
import sys

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


def run(cache, timeout=3600):
    """The cold run into ``cache`` (created; it must hold no Numba cache yet): its report, a dict."""
    os.makedirs(cache, exist_ok=True)
    if any(f.endswith((".nbi", ".nbc")) for _, _, files in os.walk(cache) for f in files):
        raise SystemExit(f"{cache}: not empty: the run would not be cold")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    out = subprocess.run([sys.executable, "-c", COLD], env=env, capture_output=True, text=True, timeout=timeout)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return dict(json.loads(out.stdout.splitlines()[-1]), cache=os.path.abspath(cache))


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1])))
