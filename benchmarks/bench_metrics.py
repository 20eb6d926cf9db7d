"""asv benchmarks of fastcal.metrics (diagnostics); sizes and dtypes from ``_harness``.

Each class builds its data and warms the JIT in ``setup``, so compile time is
never timed. Runs directly too: ``python -m benchmarks.bench_metrics`` times
every benchmark once.
"""

from __future__ import annotations

import time

import numpy as np

import fastcal

from ._harness import DTYPES, SIZES, miscalibrated_scores, warm_rows


def _data(n, dtype, weighted=False):
    p, y = miscalibrated_scores(n, dtype)
    w = np.random.default_rng(1).uniform(0.5, 2.0, n).astype(dtype) if weighted else None
    return y, p, w


class CalibrationCurve:
    params = (SIZES, DTYPES, ["uniform", "quantile"])
    param_names = ["n", "dtype", "strategy"]
    timeout = 900

    def setup(self, n, dtype, strategy):
        self.y, self.p, self.w = _data(n, dtype, weighted=True)
        m = warm_rows(n)
        fastcal.calibration_curve(self.y[:m], self.p[:m], n_bins=10, strategy=strategy)
        fastcal.calibration_curve(self.y[:m], self.p[:m], n_bins=10, strategy=strategy, sample_weight=self.w[:m])
        fastcal.expected_calibration_error(self.y[:m], self.p[:m], n_bins=15, strategy=strategy)
        fastcal.brier_decomposition(self.y[:m], self.p[:m], n_bins=10, strategy=strategy)

    def time_calibration_curve(self, n, dtype, strategy):
        fastcal.calibration_curve(self.y, self.p, n_bins=10, strategy=strategy)

    def time_calibration_curve_weighted(self, n, dtype, strategy):
        fastcal.calibration_curve(self.y, self.p, n_bins=10, strategy=strategy, sample_weight=self.w)

    def time_expected_calibration_error(self, n, dtype, strategy):
        fastcal.expected_calibration_error(self.y, self.p, n_bins=15, strategy=strategy)

    def time_brier_decomposition(self, n, dtype, strategy):
        fastcal.brier_decomposition(self.y, self.p, n_bins=10, strategy=strategy)


class Scores:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        self.y, self.p, self.w = _data(n, dtype, weighted=True)
        m = warm_rows(n)
        fastcal.brier_score_loss(self.y[:m], self.p[:m])
        fastcal.log_loss(self.y[:m], self.p[:m])
        fastcal.roc_auc_score(self.y[:m], self.p[:m])
        fastcal.roc_auc_score(self.y[:m], self.p[:m], sample_weight=self.w[:m])

    def time_brier_score_loss(self, n, dtype):
        fastcal.brier_score_loss(self.y, self.p)

    def time_log_loss(self, n, dtype):
        fastcal.log_loss(self.y, self.p)

    def time_roc_auc_score(self, n, dtype):
        fastcal.roc_auc_score(self.y, self.p)

    def time_roc_auc_score_weighted(self, n, dtype):
        fastcal.roc_auc_score(self.y, self.p, sample_weight=self.w)


class Report:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 1800

    def setup(self, n, dtype):
        self.y, self.p, _ = _data(n, dtype)
        m = warm_rows(n)
        fastcal.calibration_report(self.y[:m], self.p[:m])

    def time_calibration_report(self, n, dtype):
        fastcal.calibration_report(self.y, self.p)

    def peakmem_calibration_report(self, n, dtype):
        fastcal.calibration_report(self.y, self.p)


def main():
    from ._harness import SIZES as sizes

    for cls in (CalibrationCurve, Scores, Report):
        combos = [(n, d, s) for n in sizes[:2] for d in DTYPES for s in cls.params[2]] if len(cls.params) == 3 else [
            (n, d) for n in sizes[:2] for d in DTYPES
        ]
        for combo in combos:
            bench = cls()
            bench.setup(*combo)
            for name in [m for m in dir(cls) if m.startswith("time_")]:
                t0 = time.perf_counter()
                getattr(bench, name)(*combo)
                print(f"{cls.__name__}.{name}{combo}: {time.perf_counter() - t0:.4f} s")


if __name__ == "__main__":
    main()
