"""Diagnostics on Dask data: the drivers of fastcal._engine.binned and fastcal._engine.decomposition."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import dask
import numpy as np

from .._engine import binned as _binned
from .._engine import decomposition as _decomposition
from ._rows import aligned_columns, driver_args, is_dataframe, matrix_rows, metric_columns

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike, NDArray

    from .._typing import BinOptions, Curve, CurveWithCounts
    from ..decomposition import ScoreDecomposition
    from ..metrics import BrierDecomposition, CalibrationReport
    from ..smooth import SmoothECEResult
    from ._rows import Data

# ---------------------------------------------------------------------------
# Diagnostics: fastcal.metrics' binning engine (fastcal._binning) on every chunk, results merged in chunk order.
# ---------------------------------------------------------------------------


@overload
def calibration_curve(y_true: Data, y_prob: Data, *, return_counts: Literal[False] = False,
                      **options: Unpack[BinOptions[Data | float | None]]) -> Curve: ...
@overload
def calibration_curve(y_true: Data, y_prob: Data, *, return_counts: Literal[True],
                      **options: Unpack[BinOptions[Data | float | None]]) -> CurveWithCounts: ...
@overload
def calibration_curve(y_true: Data, y_prob: Data, *, return_counts: bool = False,
                      **options: Unpack[BinOptions[Data | float | None]]) -> Curve | CurveWithCounts: ...
def calibration_curve(
    y_true: Data,
    y_prob: Data,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    return_counts: bool = False,
) -> (tuple[NDArray[np.float64], NDArray[np.float64]]
      | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]):
    """:func:`fastcal.calibration_curve` of Dask data: per-chunk bin sums, added on the client.

    Same arguments, bins and results as the in-memory function. ``"quantile"``
    edges are NumPy's percentiles of all of ``y_prob``, exactly: two more
    rounds select the order statistics (a histogram of 2^15 buckets, then
    the values of the few buckets that hold them).
    """
    return _binned.calibration_curve(**driver_args(metric_columns(y_true, y_prob, sample_weight)), pos_label=pos_label,
                n_bins=n_bins, strategy=strategy, return_counts=return_counts)


def _is_class_matrix(y_prob):
    """Whether ``y_prob`` is an (n, k >= 2) matrix of class probabilities (a Dask DataFrame of k >= 2 columns too)."""
    if is_dataframe(y_prob):
        return len(y_prob.columns) >= 2
    shape = getattr(y_prob, "shape", None)
    if shape is None and not dask.is_dask_collection(y_prob):
        shape = np.shape(y_prob)
    return shape is not None and len(shape) == 2 and shape[1] != 1

def brier_score_loss(
    y_true: Data,
    y_prob: Data,
    *,
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """:func:`fastcal.brier_score_loss` of Dask data (per-chunk sums).

    ``y_prob`` 1-D: binary, the labels {0, 1}, {-1, 1} or any two with
    ``pos_label``. An (n, k) matrix (a Dask array or DataFrame of k columns):
    one column per class, the classes of ``y_true`` or ``labels`` in sorted
    order, as in memory (halved for k = 2, scikit-learn's "auto").
    """
    if _is_class_matrix(y_prob):
        rows, k = matrix_rows(y_true, y_prob, sample_weight)
        return _binned.brier_score_loss(rows, x_dtype=np.float64, weighted=sample_weight is not None, labels=labels,
                                        n_classes=k)
    return _binned.brier_score_loss(**driver_args(metric_columns(y_true, y_prob, sample_weight)), pos_label=pos_label)


def log_loss(
    y_true: Data,
    y_prob: Data,
    *,
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
    normalize: bool = True,
    labels: ArrayLike | None = None,
) -> float:
    """:func:`fastcal.log_loss` of Dask data (per-chunk sums).

    ``y_prob`` 1-D: binary, the labels {0, 1}, {-1, 1} or any two with
    ``pos_label`` (the in-memory function also takes the greater of two
    other labels as positive). An (n, k) matrix (a Dask array or DataFrame
    of k columns): one column per class, the classes of ``y_true`` or
    ``labels`` in sorted order, as in memory.
    """
    if _is_class_matrix(y_prob):
        rows, k = matrix_rows(y_true, y_prob, sample_weight)
        return _binned.log_loss(rows, x_dtype=np.float64, weighted=sample_weight is not None, normalize=normalize,
                                labels=labels, n_classes=k)
    return _binned.log_loss(**driver_args(metric_columns(y_true, y_prob, sample_weight)), pos_label=pos_label,
                            normalize=normalize)


def expected_calibration_error(
    y_true: Data,
    y_prob: Data,
    *,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
) -> float:
    """:func:`fastcal.expected_calibration_error` of Dask data (per-chunk bin sums)."""
    return _binned.expected_calibration_error(**driver_args(metric_columns(y_true, y_prob, sample_weight)), n_bins=n_bins,
                                              strategy=strategy, norm=norm, pos_label=pos_label)


def smooth_ece(
    y_true: Data,
    y_prob: Data,
    *,
    bandwidth: float | None = None,
    sample_weight: Data | float | None = None,
) -> SmoothECEResult:
    """:func:`fastcal.smooth_ece` of Dask data: each chunk's sums binned onto the grid, added on the client in chunk
    order, then smoothed as in memory (the same grid, kernel and fixed point; equal up to the order of the sums).
    Binary only; labels {0, 1} or {-1, 1}."""
    _binary_only("smooth_ece", y_prob)
    return _binned.smooth_ece(**driver_args(metric_columns(y_true, y_prob, sample_weight)), bandwidth=bandwidth)


def brier_decomposition(
    y_true: Data,
    y_prob: Data,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
) -> BrierDecomposition:
    """:func:`fastcal.brier_decomposition` of Dask data (per-chunk bin sums and moments)."""
    return _binned.brier_decomposition(**driver_args(metric_columns(y_true, y_prob, sample_weight)), n_bins=n_bins,
                                       strategy=strategy, pos_label=pos_label)


def _binary_only(func, y_prob):
    """``ValueError`` if ``y_prob`` is an (n, k >= 2) matrix: ``func`` is binary only on Dask."""
    shape = getattr(y_prob, "shape", None)
    if shape is None and not dask.is_dask_collection(y_prob):
        shape = np.shape(y_prob)
    if shape is not None and len(shape) == 2 and shape[1] != 1:
        raise ValueError(f"fastcal.dask.{func} is binary only: y_prob must be 1-D, the probability of the positive "
                         f"class, got shape {shape}; for an (n, k) matrix of class probabilities use fastcal.{func} "
                         "in memory.")


# ---------------------------------------------------------------------------
# CORP score decomposition: the exact distributed isotonic fit, then per-chunk score sums.
# ---------------------------------------------------------------------------


def score_decomposition(
    y: Data,
    p: Data,
    *,
    scoring: Literal["brier", "log_loss"] = "brier",
    sample_weight: Data | float | None = None,
) -> ScoreDecomposition:
    """:func:`fastcal.score_decomposition` of binary Dask data, through the exact distributed isotonic fit.

    The chunks are validated as by the Dask metrics (0/1 labels, or
    {-1, 1}; probabilities in [0, 1]); :func:`fit_isotonic` fits the
    recalibration on the float64 predictions (exactly the in-memory PAV
    fit); one more pass sums, per chunk, the scores of ``p`` and of the
    fit's predictions, merged in chunk order. Equal to the in-memory result
    to ~1e-15 (sums in another order). Binary only: ``p`` is 1-D.
    """
    _binary_only("score_decomposition", p)
    return _decomposition.score_decomposition(**driver_args(metric_columns(y, p, sample_weight)), scoring=scoring)


# ---------------------------------------------------------------------------
# ROC AUC and the calibration report: the drivers of fastcal._engine.decomposition.
# ---------------------------------------------------------------------------


def roc_auc_score(
    y_true: Data,
    y_score: Data,
    *,
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
    n_partitions: int | None = None,
) -> float:
    """:func:`fastcal.roc_auc_score` of binary Dask data, exact.

    The rows are range-partitioned by score with a shuffle (as
    :func:`fit_isotonic` does), each partition's Mann-Whitney counts are
    computed on the workers and merged in score order on the client
    (:mod:`fastcal._engine.decomposition`): equal to the in-memory AUC bit for
    bit without weights, to the rounding of the sums with them. Binary only
    (``y_score`` 1-D); ``n_partitions`` score ranges (the result does not
    depend on it).
    """
    _binary_only("roc_auc_score", y_score)
    return _decomposition.roc_auc_score(**driver_args(aligned_columns(y_score, y_true, sample_weight, "y_score",
                                                         y_name="y_true")),
                                        pos_label=pos_label, n_partitions=n_partitions)


def calibration_report(
    y_true: Data,
    y_prob: Data,
    *,
    sample_weight: Data | float | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | str | None = None,
) -> CalibrationReport:
    """:func:`fastcal.calibration_report` of binary Dask data.

    One validation pass, one bin table, the exact AUC of :func:`roc_auc_score`,
    both CORP decompositions from one exact isotonic fit, and the calibration
    slope and intercept from Newton passes over the persisted logits
    (:func:`fastcal._engine.decomposition.calibration_report`): the in-memory
    report, sums to their rounding and the slope to the solver's tolerance.
    """
    _binary_only("calibration_report", y_prob)
    return _decomposition.calibration_report(**driver_args(metric_columns(y_true, y_prob, sample_weight)), n_bins=n_bins,
                                             strategy=strategy, pos_label=pos_label)
