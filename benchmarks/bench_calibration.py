"""asv benchmarks of temperature scaling (sizes and dtypes from ``_harness``)."""

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
