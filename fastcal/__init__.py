"""fastcal: honest probabilities, fast.

Isotonic calibration (PAV), Platt scaling, beta calibration, histogram
binning, temperature scaling, prior correction for undersampled or shifted
classes, and calibration diagnostics, as Numba kernels behind scikit-learn/SciPy-style functions and estimators.
``import fastcal`` needs only NumPy, SciPy and Numba; the scikit-learn
meta-estimator (:class:`CalibratedClassifierCV`), the plots (``fastcal.plot``)
and the Dask fits (``fastcal.dask``) load their optional dependencies when used.
"""

import os
from typing import TYPE_CHECKING, Any

from ._core.errors import ConvergenceWarning, InvalidParameterError, NotFittedError
from ._core.jit import NoCacheWarning
from ._core.parallel import get_num_threads, set_num_threads
from . import _persist
from .beta import BetaCalibration
from .grouped import GroupedCalibrator
from .decomposition import CorpReliabilityResult, ScoreDecomposition, corp_reliability, score_decomposition
from .histogram import HistogramBinning
from .isotonic import IsotonicRegression, isotonic_regression
from .metrics import (
    BrierDecomposition,
    CalibrationReport,
    brier_decomposition,
    brier_score_loss,
    calibration_curve,
    calibration_report,
    expected_calibration_error,
    log_loss,
    roc_auc_score,
)
from .multicalibration import (
    ECCEResult,
    MulticalibrationCalibrator,
    MulticalibrationResult,
    calibration_ratio,
    ecce,
    SegmentReport,
    multicalibration_error,
    normalized_entropy,
    proportional_ece,
    segment_report,
)
from .label_shift import LabelShiftResult, estimate_label_shift
from .multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
from .platt import (
    PlattResult,
    PlattScaling,
    SlopeInterceptResult,
    calibration_slope_intercept,
    platt_scaling,
)
from .prior import (
    PriorEMResult,
    adjust_priors,
    correct_negative_sampling,
    estimate_priors_em,
    negative_sampling_logit_offset,
)
from .smooth import SmoothECEResult, smooth_ece
from .temperature import TemperatureScaling
from .venn_abers import VennAbers

if TYPE_CHECKING:  # loaded lazily at run time (they import scikit-learn), see __getattr__
    from .calibration import CalibratedClassifierCV, CrossValCalibrationReport, cross_val_calibration_report

__version__ = "0.1.0"

#: Names that live in modules importing optional dependencies; loaded on first access.
_LAZY = {
    "CalibratedClassifierCV": "calibration",
    "cross_val_calibration_report": "calibration",
    "CrossValCalibrationReport": "calibration",
}


def load(
    path: str | os.PathLike[str],
) -> (IsotonicRegression | PlattScaling | TemperatureScaling | BetaCalibration | HistogramBinning | VennAbers
      | VectorScaling | BiasCorrectedTemperatureScaling | MatrixScaling | DirichletCalibration | GroupedCalibrator | MulticalibrationCalibrator):
    """Load a fitted calibrator saved with ``save`` (a ``GroupedCalibrator`` too, with its group models, and a
    ``MulticalibrationCalibrator``). Raises
    ``ValueError`` for anything but a valid model file."""
    return _persist.load(path)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'fastcal' has no attribute {name!r}")


__all__ = [
    "BetaCalibration",
    "BiasCorrectedTemperatureScaling",
    "BrierDecomposition",
    "CalibratedClassifierCV",
    "CalibrationReport",
    "ConvergenceWarning",
    "CorpReliabilityResult",
    "CrossValCalibrationReport",
    "DirichletCalibration",
    "ECCEResult",
    "GroupedCalibrator",
    "HistogramBinning",
    "InvalidParameterError",
    "IsotonicRegression",
    "LabelShiftResult",
    "MatrixScaling",
    "MulticalibrationCalibrator",
    "MulticalibrationResult",
    "NoCacheWarning",
    "NotFittedError",
    "PlattResult",
    "PlattScaling",
    "PriorEMResult",
    "ScoreDecomposition",
    "SegmentReport",
    "SlopeInterceptResult",
    "SmoothECEResult",
    "TemperatureScaling",
    "VectorScaling",
    "VennAbers",
    "adjust_priors",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "calibration_ratio",
    "calibration_report",
    "calibration_slope_intercept",
    "corp_reliability",
    "correct_negative_sampling",
    "cross_val_calibration_report",
    "ecce",
    "estimate_label_shift",
    "estimate_priors_em",
    "expected_calibration_error",
    "get_num_threads",
    "isotonic_regression",
    "load",
    "log_loss",
    "multicalibration_error",
    "negative_sampling_logit_offset",
    "normalized_entropy",
    "platt_scaling",
    "proportional_ece",
    "roc_auc_score",
    "score_decomposition",
    "segment_report",
    "set_num_threads",
    "smooth_ece",
]
