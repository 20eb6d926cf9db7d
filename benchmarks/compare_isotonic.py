"""Isotonic regression: fastcal against scikit-learn, SciPy and NumPy on the same arrays."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks._harness import Row, best_of, big_run, miscalibrated_scores

SUBJECT = "isotonic"


def _sklearn():
    from sklearn.isotonic import IsotonicRegression

    return IsotonicRegression


def _interleaved(ours, theirs, repeat):
    """Best times of ``ours`` and ``theirs`` run alternately (the load of a shared machine hits both alike)."""
    t_ours, t_theirs = float("inf"), float("inf")
    for _ in range(repeat):
        t_ours = min(t_ours, best_of(ours, 2))
        t_theirs = min(t_theirs, best_of(theirs, 1))
    return t_ours, t_theirs


def rows(quick=False):
    from scipy.optimize import isotonic_regression as scipy_isotonic

    import fastcal

    n = 10**4 if quick else 10**7
    repeat = 1 if quick else 3
    SkIso = _sklearn()
    for dtype in ("float64", "float32"):
        x, y = miscalibrated_scores(n, dtype, seed=1)
        fastcal.IsotonicRegression().fit(x[: 1 << 19], y[: 1 << 19])  # warm the JIT
        ours = best_of(lambda: fastcal.IsotonicRegression().fit(x, y), repeat)
        theirs = best_of(lambda: SkIso().fit(x, y), 1 if not quick else repeat)
        yield Row(SUBJECT, f"`IsotonicRegression.fit`, unsorted {dtype} scores, 0/1 labels", n, ours,
                  {"scikit-learn": theirs})

    rng = np.random.default_rng(3)
    w = rng.uniform(0.5, 2.0, n)
    for dtype in ("float64", "float32"):
        xw, yw = miscalibrated_scores(n, dtype, seed=2)
        real = yw + rng.normal(0.0, 0.1, n)  # real-valued targets
        fastcal.IsotonicRegression().fit(xw[: 1 << 19], yw[: 1 << 19], sample_weight=w[: 1 << 19])
        fastcal.IsotonicRegression().fit(xw[: 1 << 19], real[: 1 << 19])
        for task, args, kwargs in (("with sample weights", (xw, yw), dict(sample_weight=w)),
                                   ("real-valued targets", (xw, real), {})):
            ours, theirs = _interleaved(lambda: fastcal.IsotonicRegression().fit(*args, **kwargs),
                                        lambda: SkIso().fit(*args, **kwargs), repeat if quick else 2)
            yield Row(SUBJECT, f"`IsotonicRegression.fit`, unsorted {dtype} scores, {task} (radix sort path)", n,
                      ours, {"scikit-learn": theirs})
    x, y = miscalibrated_scores(n, "float64", seed=2)

    fitted = fastcal.IsotonicRegression(out_of_bounds="clip").fit(x, y)
    sk_fitted = SkIso(out_of_bounds="clip").fit(x, y)
    t = np.random.default_rng(4).random(n)
    fitted.predict(t[:100_000])
    ours = best_of(lambda: fitted.predict(t), repeat)
    theirs = best_of(lambda: sk_fitted.predict(t), repeat)
    numpy_time = best_of(lambda: np.interp(t, fitted.X_thresholds_, fitted.y_thresholds_), repeat)
    yield Row(SUBJECT, f"`IsotonicRegression.predict`, {fitted.X_thresholds_.shape[0]} knots", n, ours,
              {"scikit-learn": theirs, "NumPy `np.interp`": numpy_time})

    ordered = np.random.default_rng(5).normal(size=n) + np.linspace(0, 10, n)
    fastcal.isotonic_regression(ordered[:1000])
    ours = best_of(lambda: fastcal.isotonic_regression(ordered), repeat + 2)
    theirs = best_of(lambda: scipy_isotonic(ordered), repeat + 2)
    yield Row(SUBJECT, "`isotonic_regression`, ordered values", n, ours, {"SciPy (C++ PAVA)": theirs})

    if not quick:
        yield _big_fit_row()
        yield _cold_start_row()


def _big_fit_row(n=10**8):
    r = big_run("fastcal.IsotonicRegression().fit(p, y)", n, seed=7)
    note = (f"peak memory beyond the inputs: {r['extra'] / 2**30:.2f} GiB = {r['extra'] / r['inputs']:.2f}x "
            f"the {r['inputs'] / 2**30:.2f} GiB of scores and uint8 labels; scikit-learn not run at this size")
    return Row(SUBJECT, "`IsotonicRegression.fit`, unsorted float64 scores, 0/1 labels", n, r["seconds"], {}, note)


_COLD = r"""
import time
t0 = time.perf_counter()
import numpy as np, fastcal
t1 = time.perf_counter()
x = np.random.default_rng(0).random(1000); y = (x > 0.5).astype(float)
fastcal.IsotonicRegression().fit(x, y).predict(x)
t2 = time.perf_counter()
print(t1 - t0, t2 - t1)
"""


def _cold_start_row():
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        times = []
        for _ in range(2):
            out = subprocess.run([sys.executable, "-c", _COLD], capture_output=True, text=True, env=env, check=True)
            times.append([float(v) for v in out.stdout.split()])
    (imp1, cold), (imp2, warm) = times
    return Row(SUBJECT, "first fit + predict in a new process, machine code cached", 1000, warm,
               {"same, first process ever (compiles)": cold},
               f"`import fastcal` {imp2:.2f} s")
