"""asv benchmarks for fastcal.platt (Platt scaling, calibration slope and intercept).

Each class builds its data and warms the JIT in ``setup``. scikit-learn's
sigmoid calibration is timed as the peer up to 10^7 rows (at 10^8 it needs
tens of seconds and several GB). Runs directly too:
``python -m benchmarks.bench_platt`` times every benchmark once on the two
smallest sizes.
"""

from __future__ import annotations

import numpy as np

from fastcal import PlattScaling, calibration_slope_intercept, platt_scaling

from ._harness import DTYPES, SIZES, miscalibrated_scores

PEER_SIZES = [n for n in SIZES if n <= 10**7]


def _scores(n, dtype, seed=0):
    # The miscalibrated probabilities of the harness serve as the scores (the
    # peer's timings in PERF_NOTES.md are on the same data).
    return miscalibrated_scores(n, dtype, seed)


class TimePlattScaling:
    params = [SIZES, DTYPES]
    param_names = ["n", "dtype"]
    timeout = 600

    def setup(self, n, dtype):
        self.s, self.y = _scores(n, dtype)
        self.w = np.random.default_rng(1).uniform(0.5, 2.0, n).astype(dtype)
        platt_scaling(self.s, self.y)  # compile / load the kernels for these dtypes
        platt_scaling(self.s[:1000], self.y[:1000], sample_weight=self.w[:1000])
        platt_scaling(self.s, self.y, sample_weight=self.w)

    def time_platt_scaling(self, n, dtype):
        platt_scaling(self.s, self.y)

    def time_platt_scaling_weighted(self, n, dtype):
        platt_scaling(self.s, self.y, sample_weight=self.w)

    def track_n_iter(self, n, dtype):
        return platt_scaling(self.s, self.y).n_iter


class TimePlattPredict:
    params = [SIZES, DTYPES]
    param_names = ["n", "dtype"]
    timeout = 600

    def setup(self, n, dtype):
        self.s, y = _scores(n, dtype, seed=2)
        m = min(n, 10**5)
        self.cal = PlattScaling().fit(self.s[:m], y[:m])
        self.cal.predict(self.s)

    def time_predict(self, n, dtype):
        self.cal.predict(self.s)


class TimeCalibrationSlopeIntercept:
    params = [SIZES, DTYPES]
    param_names = ["n", "dtype"]
    timeout = 600

    def setup(self, n, dtype):
        self.p, self.y = miscalibrated_scores(n, dtype, seed=3)
        calibration_slope_intercept(self.y, self.p)

    def time_calibration_slope_intercept(self, n, dtype):
        calibration_slope_intercept(self.y, self.p)


class TimeSklearnSigmoidCalibration:
    """The peer: scikit-learn's ``_SigmoidCalibration().fit`` (L-BFGS), same data as TimePlattScaling."""

    params = [PEER_SIZES, DTYPES]
    param_names = ["n", "dtype"]
    timeout = 600

    def setup(self, n, dtype):
        from sklearn.calibration import _SigmoidCalibration

        self.cls = _SigmoidCalibration
        self.s, self.y = _scores(n, dtype)

    def time_sklearn_fit(self, n, dtype):
        self.cls().fit(self.s, self.y)


if __name__ == "__main__":  # pragma: no cover - manual run
    import time

    for cls in [TimePlattScaling, TimePlattPredict, TimeCalibrationSlopeIntercept, TimeSklearnSigmoidCalibration]:
        for n in cls.params[0][:2]:
            for dtype in cls.params[1]:
                bench = cls()
                bench.setup(n, dtype)
                for name in [m for m in dir(bench) if m.startswith(("time_", "track_"))]:
                    t0 = time.perf_counter()
                    out = getattr(bench, name)(n, dtype)
                    extra = f" -> {out}" if name.startswith("track_") else ""
                    print(f"{cls.__name__}.{name}(n={n}, {dtype}): {time.perf_counter() - t0:.6f} s{extra}")
