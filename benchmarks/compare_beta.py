"""Beta calibration and histogram binning: fastcal against betacal and NumPy on the same arrays.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table (one process, warm JIT, best of N); ``python -m
benchmarks.compare_beta`` prints them.
"""

from __future__ import annotations

import warnings

import numpy as np

from benchmarks._harness import Row, best_of, miscalibrated_scores

SUBJECT = "beta"


def _betacal(parameters):
    from betacal import BetaCalibration

    return BetaCalibration(parameters)


def _quiet(func):
    """betacal switches every warning off globally; keep the caller's filters."""
    def run():
        with warnings.catch_warnings():
            return func()

    return run


def _numpy_histogram(p, y, n_bins):
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    k = np.searchsorted(edges[1:-1], p, side="left")
    weight = np.bincount(k, minlength=n_bins)
    return np.bincount(k, weights=y, minlength=n_bins) / np.maximum(weight, 1)


def rows(quick=False):
    import fastcal

    n = 10**4 if quick else 10**7
    repeat = 1 if quick else 3
    p, y = miscalibrated_scores(n, "float64", seed=5)
    for parameters in ("abm", "am"):
        fastcal.BetaCalibration(parameters).fit(p[:1000], y[:1000])  # warm the JIT
        cal = fastcal.BetaCalibration(parameters).fit(p, y)
        ours = best_of(lambda: fastcal.BetaCalibration(parameters).fit(p, y), repeat)
        peer = _quiet(lambda: _betacal(parameters).fit(p, y))
        theirs = best_of(peer, repeat if quick else 1)
        yield Row(SUBJECT, f"`BetaCalibration(\"{parameters}\").fit`", n, ours,
                  {"betacal `BetaCalibration.fit` (scikit-learn L-BFGS)": theirs},
                  f"{cal.n_iter_} Newton iterations over the full data")
    fitted = peer()
    cal.predict(p)
    ours = best_of(lambda: cal.predict(p), repeat + 2)
    theirs = best_of(_quiet(lambda: fitted.predict(p)), repeat)
    yield Row(SUBJECT, "`BetaCalibration.predict`", n, ours, {"betacal `BetaCalibration.predict`": theirs})

    hist = fastcal.HistogramBinning(n_bins=10)
    hist.fit(p[:1000], y[:1000])
    ours = best_of(lambda: hist.fit(p, y), repeat)
    theirs = best_of(lambda: _numpy_histogram(p, y, 10), repeat)
    yield Row(SUBJECT, "`HistogramBinning(n_bins=10).fit`", n, ours,
              {"NumPy `searchsorted` + `bincount`": theirs})


if __name__ == "__main__":
    from benchmarks.compare import render

    print(render(list(rows())))
