"""asv benchmarks of temperature scaling, vector scaling, BCTS, matrix scaling and Dirichlet calibration (sizes and
dtypes from ``_harness``)."""

import numpy as np

import fastcal
from benchmarks._harness import DTYPES, SIZES, warm_rows
from benchmarks.compare_calibration import _logits


class _Fit:
    """A calibrator's fit on 10-class logits (``probabilities``: their softmax); sizes above ``max_rows`` are
    skipped. A subclass names the ``calibrator``."""

    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900
    calibrator = None
    probabilities = False
    max_rows = max(SIZES)

    def setup(self, n, dtype):
        if n > self.max_rows:
            raise NotImplementedError  # asv: skipped
        z, self.y = _logits(n, 10)
        if self.probabilities:
            p = np.exp(z - z.max(axis=1, keepdims=True))
            z = p / p.sum(axis=1, keepdims=True)
        self.z = z.astype(dtype)
        m = warm_rows(n)
        self.calibrator().fit(self.z[:m], self.y[:m])

    def time_fit(self, n, dtype):
        self.calibrator().fit(self.z, self.y)


class TemperatureFit(_Fit):
    calibrator = fastcal.TemperatureScaling


class VectorScalingFit(_Fit):
    """VectorScaling's fit (at 10^8 rows the float64 logits take 8 GB)."""

    calibrator = fastcal.VectorScaling


class BiasCorrectedTemperatureFit(_Fit):
    calibrator = fastcal.BiasCorrectedTemperatureScaling


#: The linear model's fits read O(k^2 (k + 1)^2 / 4) = 3025 products a row at k = 10 per Newton step: sizes above
#: this one would take minutes a fit; their time is the 10^7 rows' times n / 10^7.
_LINEAR_MAX_ROWS = 10**7


class MatrixScalingFit(_Fit):
    """MatrixScaling's fit (full W, 110 parameters)."""

    calibrator = fastcal.MatrixScaling
    max_rows = _LINEAR_MAX_ROWS


class DirichletCalibrationFit(_Fit):
    """DirichletCalibration's fit (full W) on probabilities."""

    calibrator = fastcal.DirichletCalibration
    probabilities = True
    max_rows = _LINEAR_MAX_ROWS
