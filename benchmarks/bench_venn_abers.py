"""asv benchmarks for fastcal.VennAbers: fit and prediction.

Each class builds its data and warms the JIT in ``setup``.
"""

from __future__ import annotations

from fastcal import VennAbers

from ._harness import DTYPES, QUICK, miscalibrated_scores, warm_rows

#: Up to 10^7: the fit holds the tables of every distinct score.
ROWS = [10**3, 10**4] if QUICK else [10**3, 10**5, 10**7]


class TimeVennAbers:
    params = [ROWS, DTYPES]
    param_names = ["n", "dtype"]

    def setup(self, n, dtype):
        self.p, self.y = miscalibrated_scores(n, dtype)
        self.t, _ = miscalibrated_scores(n, dtype, seed=1)
        self.va = VennAbers().fit(self.p, self.y)
        self.va.predict_proba(self.t[: warm_rows(n)])

    def time_fit(self, n, dtype):
        VennAbers().fit(self.p, self.y)

    def time_predict_proba(self, n, dtype):
        self.va.predict_proba(self.t)
