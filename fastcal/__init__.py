"""fastcal: honest probabilities, fast.

Isotonic calibration (PAV), Platt scaling, prior correction for undersampled
or shifted classes, and calibration diagnostics, as Numba kernels behind
scikit-learn/SciPy-style functions and estimators.
"""

from ._base import NotFittedError
from ._persist import load
from .isotonic import IsotonicRegression, isotonic_regression
from .temperature import TemperatureScaling

__version__ = "0.1.0"

__all__ = [
    "IsotonicRegression",
    "NotFittedError",
    "TemperatureScaling",
    "isotonic_regression",
    "load",
]
