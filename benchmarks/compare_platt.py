"""Platt scaling and the calibration slope: fastcal against scikit-learn, statsmodels and SciPy on the same arrays.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table (one process, warm JIT, best of N); ``python -m
benchmarks.compare_platt`` prints them.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np

from benchmarks._harness import Row, best_of, miscalibrated_scores

SUBJECT = "platt"


def _sk_sigmoid():
    from sklearn.calibration import _SigmoidCalibration

    return _SigmoidCalibration


def platt_rows(n, repeat, peer_repeat):
    import fastcal

    Sig = _sk_sigmoid()
    for dtype in ("float64", "float32"):
        s, y = miscalibrated_scores(n, dtype, seed=1)
        fastcal.platt_scaling(s, y)  # warm the JIT (and the page cache)
        res = fastcal.platt_scaling(s, y)
        ours = best_of(lambda: fastcal.platt_scaling(s, y), repeat)
        theirs = best_of(lambda: Sig().fit(s, y), peer_repeat)
        yield Row(SUBJECT, f"`platt_scaling`, {dtype} scores", n, ours,
                  {"scikit-learn `_SigmoidCalibration().fit` (L-BFGS)": theirs},
                  f"{res.n_iter} Newton iterations over the full data")
        del s, y
        gc.collect()

    s, y = miscalibrated_scores(n, "float64", seed=2)
    w = np.random.default_rng(3).uniform(0.5, 2.0, n)
    fastcal.platt_scaling(s, y, sample_weight=w)
    ours = best_of(lambda: fastcal.platt_scaling(s, y, sample_weight=w), repeat)
    theirs = best_of(lambda: Sig().fit(s, y, sample_weight=w), peer_repeat)
    yield Row(SUBJECT, "`platt_scaling`, with sample weights", n, ours,
              {"scikit-learn `_SigmoidCalibration().fit` (L-BFGS)": theirs})

    from scipy.special import expit

    cal = fastcal.PlattScaling().fit(s, y)
    sk = Sig()
    sk.a_, sk.b_ = cal.a_, cal.b_
    cal.predict(s)
    ours = best_of(lambda: cal.predict(s), repeat + 2)
    theirs = best_of(lambda: sk.predict(s), repeat + 2)
    scipy_time = best_of(lambda: expit(-(cal.a_ * s + cal.b_)), repeat + 2)
    yield Row(SUBJECT, "`PlattScaling.predict`", n, ours,
              {"scikit-learn `_SigmoidCalibration.predict`": theirs, "SciPy `expit(-(a*s + b))`": scipy_time})


def big_row(n):
    import fastcal

    s, y = miscalibrated_scores(n, "float64", seed=4)
    fastcal.platt_scaling(s[: 1 << 20], y[: 1 << 20])
    res = fastcal.platt_scaling(s, y)
    ours = best_of(lambda: fastcal.platt_scaling(s, y), 2)
    row = Row(SUBJECT, "`platt_scaling`, float64 scores", n, ours, {},
              f"{res.n_iter} Newton iterations over the full data; peer not run at this size")
    s = y = None  # frees the arrays (not `del`: the timed lambda above closes over the names)
    gc.collect()
    return row


def slope_rows(n, repeat, with_statsmodels):
    import fastcal
    from sklearn.linear_model import LogisticRegression

    p, y = miscalibrated_scores(n, "float64", seed=5)
    fastcal.calibration_slope_intercept(y, p)
    ours = best_of(lambda: fastcal.calibration_slope_intercept(y, p), repeat)

    def sklearn_fit():
        x = (np.log(p) - np.log1p(-p))[:, None]
        LogisticRegression(C=np.inf, tol=1e-8, max_iter=1000).fit(x, y)

    peers = {"scikit-learn `LogisticRegression(C=inf)` on logit(p)": best_of(sklearn_fit, 1)}
    if with_statsmodels:
        import statsmodels.api as sm

        def statsmodels_fit():
            x = np.log(p) - np.log1p(-p)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                sm.Logit(y, sm.add_constant(x)).fit(disp=0)

        peers["statsmodels `Logit` (Newton)"] = best_of(statsmodels_fit, 1)
    yield Row(SUBJECT, "`calibration_slope_intercept` (slope, intercept, SEs, calibration in the large)", n,
              ours, peers, "peers fit slope and intercept only")


def rows(quick=False):
    """Rows for the comparison table: quick=True uses tiny sizes."""
    if quick:
        yield from platt_rows(10_000, 2, 1)
        yield from slope_rows(10_000, 2, True)
        return
    yield from platt_rows(10**7, 5, 1)
    yield big_row(10**8)
    yield from slope_rows(10**6, 5, True)
    yield from slope_rows(10**7, 3, False)


def main(quick=False):  # pragma: no cover - manual run
    for row in rows(quick):
        peers = ", ".join(f"{name} {t:.4f} s ({t / row.ours:.1f}x)" for name, t in row.peers.items())
        print(f"{row.task:60s} n={row.n:>11,d}  fastcal {row.ours:.4f} s | {peers} | {row.note}", flush=True)


if __name__ == "__main__":  # pragma: no cover
    import sys

    main(quick="--quick" in sys.argv)
