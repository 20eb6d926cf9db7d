"""asv benchmarks of temperature scaling, vector scaling, BCTS, matrix scaling and Dirichlet calibration (sizes and
dtypes from ``_harness``)."""

import numpy as np

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


def _multiclass_setup(bench, cls, n, dtype, probabilities=False):
    z, bench.y = _logits(n, 10)
    if probabilities:
        p = np.exp(z - z.max(axis=1, keepdims=True))
        z = p / p.sum(axis=1, keepdims=True)
    bench.z = z.astype(dtype)
    m = warm_rows(n)
    cls().fit(bench.z[:m], bench.y[:m])


#: The linear model's fits read O(k^2 (k + 1)^2 / 4) = 3025 products a row at k = 10 per Newton step: sizes above
#: this one would take minutes a fit; their time is the 10^7 rows' times n / 10^7.
_LINEAR_MAX_ROWS = 10**7


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


class MatrixScalingFit:
    """MatrixScaling's fit (full W, 110 parameters) on 10-class logits."""

    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        if n > _LINEAR_MAX_ROWS:
            raise NotImplementedError  # asv: skipped
        _multiclass_setup(self, fastcal.MatrixScaling, n, dtype)

    def time_fit(self, n, dtype):
        fastcal.MatrixScaling().fit(self.z, self.y)


class DirichletCalibrationFit:
    """DirichletCalibration's fit (full W) on 10-class probabilities."""

    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        if n > _LINEAR_MAX_ROWS:
            raise NotImplementedError  # asv: skipped
        _multiclass_setup(self, fastcal.DirichletCalibration, n, dtype, probabilities=True)

    def time_fit(self, n, dtype):
        fastcal.DirichletCalibration().fit(self.z, self.y)
