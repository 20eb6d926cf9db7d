"""Compiled kernels are cached: a second process loads them and compiles nothing."""

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, time
import numpy as np
from numba.core.registry import CPUDispatcher
import fastcal
from fastcal import _isotonic_kernels, _validation

t0 = time.perf_counter()
rng = np.random.default_rng(0)
for dtype in (np.float32, np.float64):
    x = rng.random(400_000).astype(dtype)
    y = (rng.random(400_000) < x).astype(np.uint8)
    iso = fastcal.IsotonicRegression().fit(x, y)
    iso.predict(x)
    fastcal.IsotonicRegression().fit(x, y, sample_weight=np.ones(x.shape[0]))
fastcal.isotonic_regression(rng.random(100))
elapsed = time.perf_counter() - t0
hits = misses = 0
for module in (_isotonic_kernels, _validation):
    for obj in vars(module).values():
        if isinstance(obj, CPUDispatcher):
            hits += sum(obj.stats.cache_hits.values())
            misses += sum(obj.stats.cache_misses.values())
print(json.dumps(dict(hits=hits, misses=misses, seconds=elapsed)))
"""


def run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_second_process_does_not_recompile(tmp_path):
    first = run(tmp_path)
    second = run(tmp_path)
    assert first["misses"] > 0, "the first process should have compiled (empty cache)"
    assert second["misses"] == 0, f"the second process recompiled {second['misses']} kernels"
    assert second["hits"] > 0  # callees inlined into cached callers need no load of their own
    assert second["seconds"] < first["seconds"]
