"""asv benchmarks of fastcal.decomposition (CORP); sizes and dtypes from ``_harness``.

Each class builds its data and warms the JIT in ``setup``, so compile time is
never timed.
"""

from __future__ import annotations

import numpy as np

import fastcal

from ._harness import DTYPES, QUICK, SIZES, miscalibrated_scores, warm_rows


class ScoreDecomposition:
    params = (SIZES, DTYPES, ["brier", "log_loss"])
    param_names = ["n", "dtype", "scoring"]
    timeout = 900

    def setup(self, n, dtype, scoring):
        self.p, self.y = miscalibrated_scores(n, dtype)
        self.w = np.random.default_rng(1).uniform(0.5, 2.0, n)
        m = warm_rows(n)
        fastcal.score_decomposition(self.y[:m], self.p[:m], scoring=scoring)
        fastcal.score_decomposition(self.y[:m], self.p[:m], scoring=scoring, sample_weight=self.w[:m])

    def time_score_decomposition(self, n, dtype, scoring):
        fastcal.score_decomposition(self.y, self.p, scoring=scoring)

    def time_score_decomposition_weighted(self, n, dtype, scoring):
        fastcal.score_decomposition(self.y, self.p, scoring=scoring, sample_weight=self.w)


class CorpReliability:
    params = ([10**3, 10**4] if QUICK else [10**4, 10**6], [10, 100], ["consistency", "confidence"])
    param_names = ["n", "n_resamples", "band"]
    timeout = 900

    def setup(self, n, n_resamples, band):
        self.p, self.y = miscalibrated_scores(n, "float64")
        m = warm_rows(n)
        fastcal.corp_reliability(self.y[:m], self.p[:m], n_resamples=2, band=band, random_state=0)

    def time_corp_reliability(self, n, n_resamples, band):
        fastcal.corp_reliability(self.y, self.p, n_resamples=n_resamples, band=band, random_state=0)
