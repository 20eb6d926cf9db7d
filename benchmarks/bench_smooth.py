"""asv benchmarks of fastcal.smooth_ece; sizes and dtypes from ``_harness``.

``setup`` builds the data and warms the JIT, so compile time is never timed.
"""

from __future__ import annotations

import numpy as np

import fastcal

from ._harness import DTYPES, SIZES, miscalibrated_scores, warm_rows


class SmoothECE:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        self.p, self.y = miscalibrated_scores(n, dtype)
        self.w = np.random.default_rng(1).uniform(0.5, 2.0, n).astype(dtype)
        m = warm_rows(n)
        fastcal.smooth_ece(self.y[:m], self.p[:m])
        fastcal.smooth_ece(self.y[:m], self.p[:m], sample_weight=self.w[:m])
        fastcal.smooth_ece(self.y[:m], self.p[:m], bandwidth=0.05)

    def time_smooth_ece(self, n, dtype):
        fastcal.smooth_ece(self.y, self.p)

    def time_smooth_ece_weighted(self, n, dtype):
        fastcal.smooth_ece(self.y, self.p, sample_weight=self.w)

    def time_smooth_ece_fixed_bandwidth(self, n, dtype):
        fastcal.smooth_ece(self.y, self.p, bandwidth=0.05)
