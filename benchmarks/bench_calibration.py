"""asv benchmarks of temperature scaling, vector scaling and BCTS (sizes and dtypes from ``_harness``)."""

import fastcal
from benchmarks._harness import DTYPES, SIZES, warm_rows
from benchmarks.compare_calibration import _logits


class TemperatureFit:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        z, self.y = _logits(n, 10)
        self.z = z.astype(dtype)
        m = warm_rows(n)
        fastcal.TemperatureScaling().fit(self.z[:m], self.y[:m])

    def time_fit(self, n, dtype):
        fastcal.TemperatureScaling().fit(self.z, self.y)


def _multiclass_setup(bench, cls, n, dtype):
    z, bench.y = _logits(n, 10)
    bench.z = z.astype(dtype)
    m = warm_rows(n)
    cls().fit(bench.z[:m], bench.y[:m])


class VectorScalingFit:
    """VectorScaling's fit on 10-class logits (at 10^8 rows the float64 logits take 8 GB)."""

    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        _multiclass_setup(self, fastcal.VectorScaling, n, dtype)

    def time_fit(self, n, dtype):
        fastcal.VectorScaling().fit(self.z, self.y)


class BiasCorrectedTemperatureFit:
    """BiasCorrectedTemperatureScaling's fit on 10-class logits."""

    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        _multiclass_setup(self, fastcal.BiasCorrectedTemperatureScaling, n, dtype)

    def time_fit(self, n, dtype):
        fastcal.BiasCorrectedTemperatureScaling().fit(self.z, self.y)
