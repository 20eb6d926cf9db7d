"""asv benchmarks of isotonic regression (sizes and dtypes from ``_harness``)."""

import numpy as np

import fastcal
from benchmarks._harness import DTYPES, SIZES, miscalibrated_scores, warm_rows


class IsotonicFit:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        self.x, self.y = miscalibrated_scores(n, dtype)
        self.w = np.random.default_rng(1).uniform(0.5, 2.0, n).astype(dtype)
        warm = warm_rows(n)
        fastcal.IsotonicRegression().fit(self.x[:warm], self.y[:warm])
        fastcal.IsotonicRegression().fit(self.x[:warm], self.y[:warm], sample_weight=self.w[:warm])

    def time_fit_binary(self, n, dtype):
        fastcal.IsotonicRegression().fit(self.x, self.y)

    def time_fit_weighted(self, n, dtype):
        fastcal.IsotonicRegression().fit(self.x, self.y, sample_weight=self.w)

    def peakmem_fit_binary(self, n, dtype):
        fastcal.IsotonicRegression().fit(self.x, self.y)


class IsotonicPredict:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        x, y = miscalibrated_scores(max(n, 1000), dtype)
        self.model = fastcal.IsotonicRegression(out_of_bounds="clip").fit(x, y)
        self.t = np.random.default_rng(2).random(n).astype(dtype)
        self.model.predict(self.t[: warm_rows(n)])

    def time_predict(self, n, dtype):
        self.model.predict(self.t)


class IsotonicRegressionOrdered:
    params = (SIZES,)
    param_names = ["n"]

    def setup(self, n):
        rng = np.random.default_rng(3)
        self.y = rng.normal(size=n) + np.linspace(0, 10, n)
        fastcal.isotonic_regression(self.y[: warm_rows(n)])

    def time_isotonic_regression(self, n):
        fastcal.isotonic_regression(self.y)
