"""asv benchmarks of temperature scaling (sizes and dtypes from ``_harness``)."""

import fastcal
from benchmarks._harness import DTYPES, SIZES
from benchmarks.compare_calibration import _logits


class TemperatureFit:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        z, self.y = _logits(n, 10)
        self.z = z.astype(dtype)
        fastcal.TemperatureScaling().fit(self.z[:1000], self.y[:1000])
        fastcal.TemperatureScaling().fit(self.z[: 1 << 15], self.y[: 1 << 15])

    def time_fit(self, n, dtype):
        fastcal.TemperatureScaling().fit(self.z, self.y)
