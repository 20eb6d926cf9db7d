"""Cold start: ``fastcal precompile`` into an empty cache, then the first call of each subject in a new process.

``python -m benchmarks.cold_start`` (or ``--cache DIR`` to reuse a cache that
``fastcal precompile`` already filled) prints, for a new interpreter reading
that cache: the time to import NumPy, Numba and fastcal, then the time of
the first call of each subject on 1000 rows (float64; machine code loaded from
the cache, nothing compiled: the count of compilations is printed too), and
the size of the cache on disk. The README's cold-start figures come from it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, time
t = time.perf_counter
times = {}
t0 = t(); import numpy as np; times["import numpy"] = t() - t0
t0 = t(); import numba; times["import numba"] = t() - t0
t0 = t(); import fastcal; times["import fastcal"] = t() - t0
from fastcal import _precompile
rng = np.random.default_rng(0)
x = rng.random(1000); y = (rng.random(1000) < x).astype(np.uint8)
P = rng.dirichlet(np.ones(4), 1000); k = np.arange(1000) % 4
subjects = {
    "IsotonicRegression fit + predict": lambda: fastcal.IsotonicRegression().fit(x, y).predict(x),
    "platt_scaling": lambda: fastcal.platt_scaling(x, y),
    "TemperatureScaling.fit": lambda: fastcal.TemperatureScaling().fit(np.log(P), k),
    "correct_negative_sampling": lambda: fastcal.correct_negative_sampling(x, 0.1),
    "adjust_priors (n, 4)": lambda: fastcal.adjust_priors(P, np.full(4, 0.25), np.array([0.1, 0.2, 0.3, 0.4])),
    "estimate_priors_em": lambda: fastcal.estimate_priors_em(P, np.full(4, 0.25)),
    "calibration_curve": lambda: fastcal.calibration_curve(y, x),
    "roc_auc_score": lambda: fastcal.roc_auc_score(y, x),
    "calibration_report": lambda: fastcal.calibration_report(y, x),
}
for name, call in subjects.items():
    t0 = t(); call(); times[name] = t() - t0
kernels = _precompile.dispatchers()
print(json.dumps(dict(times=times, compiled=sum(sum(d.stats.cache_misses.values()) for d in kernels.values()),
                      loaded=sum(sum(d.stats.cache_hits.values()) for d in kernels.values()))))
"""


def _size(folder):
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(folder) for f in files)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cache", help="a cache folder fastcal precompile filled (default: fill a new one)")
    parser.add_argument("--runs", type=int, default=3, help="new processes measured (the best of each time)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        cache = args.cache or tmp
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        if not args.cache:
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-m", "fastcal", "precompile", "--quiet"], env=env, check=True)
            print(f"fastcal precompile into an empty cache: {time.perf_counter() - t0:.0f} s")
        runs = [json.loads(subprocess.run([sys.executable, "-c", CHILD], env=env, check=True, capture_output=True,
                                          text=True).stdout) for _ in range(args.runs)]
        best = {name: min(r["times"][name] for r in runs) for name in runs[0]["times"]}
        print(f"cache: {_size(cache) / 2**20:.1f} MiB on disk, {sum(len(f) for _, _, f in os.walk(cache))} files")
        print(f"new process, best of {args.runs}: {runs[0]['compiled']} compiled, {runs[0]['loaded']} loaded")
        for name, seconds in best.items():
            print(f"  {name:34s} {seconds * 1e3:8.1f} ms")
        print(f"  {'total':34s} {sum(best.values()) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
