"""asv benchmarks for fastcal.beta and fastcal.histogram (beta calibration, histogram binning).

Each class builds its data and warms the JIT in ``setup``; the peer (betacal)
is timed side by side in ``compare_beta.py``.
"""

from __future__ import annotations

from fastcal import BetaCalibration, HistogramBinning

from ._harness import DTYPES, SIZES, miscalibrated_scores, warm_rows


class TimeBetaCalibration:
    params = [SIZES, DTYPES, ["abm", "am"]]
    param_names = ["n", "dtype", "parameters"]
    timeout = 600

    def setup(self, n, dtype, parameters):
        self.p, self.y = miscalibrated_scores(n, dtype, seed=0)
        self.cal = BetaCalibration(parameters).fit(self.p, self.y)  # compile / load the kernels
        self.cal.predict(self.p[: warm_rows(n)])

    def time_fit(self, n, dtype, parameters):
        BetaCalibration(parameters).fit(self.p, self.y)

    def time_predict(self, n, dtype, parameters):
        self.cal.predict(self.p)

    def track_n_iter(self, n, dtype, parameters):
        return BetaCalibration(parameters).fit(self.p, self.y).n_iter_


class TimeHistogramBinning:
    params = [SIZES, ["uniform", "quantile"]]
    param_names = ["n", "strategy"]
    timeout = 600

    def setup(self, n, strategy):
        self.p, self.y = miscalibrated_scores(n, "float64", seed=0)
        self.cal = HistogramBinning(n_bins=10, strategy=strategy).fit(self.p, self.y)
        self.cal.predict(self.p[: warm_rows(n)])

    def time_fit(self, n, strategy):
        HistogramBinning(n_bins=10, strategy=strategy).fit(self.p, self.y)

    def time_predict(self, n, strategy):
        self.cal.predict(self.p)
