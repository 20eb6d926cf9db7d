"""Diagnostics on Dask data: the drivers of fastcal.metrics._rows and fastcal.metrics._report_rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from ..metrics import rows as _binned
from ..metrics import report_rows as _decomposition
from ._rows import binary_only, call_driver, is_class_matrix, matrix_rows, metric

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike

    from .._typing import Curve, CurveWithCounts, DaskBinOptions, DaskData, DaskWeights
    from ..decomposition import CorpReliabilityResult, ScoreDecomposition
    from ..metrics import BrierDecomposition, CalibrationReport
    from ..platt import SlopeInterceptResult
    from ..smooth import SmoothECEResult

# ---------------------------------------------------------------------------
# Diagnostics: fastcal.metrics' binning passes (fastcal._binning) on every chunk, results merged in chunk order.
# ---------------------------------------------------------------------------


@overload
def calibration_curve(y_true: DaskData, y_prob: DaskData, *, return_counts: Literal[False] = False,
                      **options: Unpack[DaskBinOptions]) -> Curve: ...
@overload
def calibration_curve(y_true: DaskData, y_prob: DaskData, *, return_counts: Literal[True],
                      **options: Unpack[DaskBinOptions]) -> CurveWithCounts: ...
@overload
def calibration_curve(y_true: DaskData, y_prob: DaskData, *, return_counts: bool = False,
                      **options: Unpack[DaskBinOptions]) -> Curve | CurveWithCounts: ...
def calibration_curve(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: DaskWeights = None,
    return_counts: bool = False,
) -> Curve | CurveWithCounts:
    """:func:`fastcal.calibration_curve` of Dask data: per-chunk bin sums, added on the client.

    Same arguments, bins and results as the in-memory function. ``"quantile"``
    edges are NumPy's percentiles of all of ``y_prob``, exactly: two more
    rounds select the order statistics (a histogram of 2^15 buckets, then
    the values of the few buckets that hold them).
    """
    return metric(_binned.calibration_curve, y_true, y_prob, sample_weight, pos_label=pos_label, n_bins=n_bins,
                  strategy=strategy, return_counts=return_counts)


def _binary_or_classes(driver, y_true, y_prob, sample_weight, pos_label, labels, **kwargs):
    """``driver`` on a 1-D ``y_prob`` (binary, ``pos_label`` the positive label) or on an (n, k) matrix (a column
    per class, ``labels`` the classes), as the in-memory losses take them."""
    if is_class_matrix(y_prob):
        rows, k = matrix_rows(y_true, y_prob, sample_weight)
        return driver(rows, x_dtype=np.float64, weighted=sample_weight is not None, labels=labels, n_classes=k,
                      **kwargs)
    return metric(driver, y_true, y_prob, sample_weight, pos_label=pos_label, **kwargs)


def brier_score_loss(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    sample_weight: DaskWeights = None,
    pos_label: float | str | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """:func:`fastcal.brier_score_loss` of Dask data (per-chunk sums).

    ``y_prob`` 1-D: binary, the labels {0, 1}, {-1, 1} or any two with
    ``pos_label``. An (n, k) matrix (a Dask array or DataFrame of k columns):
    one column per class, the classes of ``y_true`` or ``labels`` in sorted
    order, as in memory (halved for k = 2, scikit-learn's "auto").
    """
    return _binary_or_classes(_binned.brier_score_loss, y_true, y_prob, sample_weight, pos_label, labels)


def log_loss(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    sample_weight: DaskWeights = None,
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
    return _binary_or_classes(_binned.log_loss, y_true, y_prob, sample_weight, pos_label, labels,
                              normalize=normalize)


def expected_calibration_error(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    sample_weight: DaskWeights = None,
    pos_label: float | str | None = None,
) -> float:
    """:func:`fastcal.expected_calibration_error` of Dask data (per-chunk bin sums)."""
    return metric(_binned.expected_calibration_error, y_true, y_prob, sample_weight, n_bins=n_bins, strategy=strategy,
                  norm=norm, pos_label=pos_label)


def smooth_ece(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    bandwidth: float | None = None,
    sample_weight: DaskWeights = None,
) -> SmoothECEResult:
    """:func:`fastcal.smooth_ece` of Dask data: each chunk's sums binned onto the grid, added on the client in chunk
    order, then smoothed as in memory (the same grid, kernel and fixed point; equal up to the order of the sums).
    Binary only; labels {0, 1} or {-1, 1}."""
    return metric(_binned.smooth_ece, y_true, y_prob, sample_weight, binary=True, bandwidth=bandwidth)


def brier_decomposition(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: DaskWeights = None,
    pos_label: float | str | None = None,
) -> BrierDecomposition:
    """:func:`fastcal.brier_decomposition` of Dask data (per-chunk bin sums and moments)."""
    return metric(_binned.brier_decomposition, y_true, y_prob, sample_weight, n_bins=n_bins, strategy=strategy,
                  pos_label=pos_label)


# ---------------------------------------------------------------------------
# CORP score decomposition: the exact distributed isotonic fit, then per-chunk score sums.
# ---------------------------------------------------------------------------


def score_decomposition(
    y: DaskData,
    p: DaskData,
    *,
    scoring: Literal["brier", "log_loss"] = "brier",
    sample_weight: DaskWeights = None,
) -> ScoreDecomposition:
    """:func:`fastcal.score_decomposition` of binary Dask data, through the exact distributed isotonic fit.

    The chunks are validated as by the Dask metrics (0/1 labels, or
    {-1, 1}; probabilities in [0, 1]); :func:`fit_isotonic` fits the
    recalibration on the float64 predictions (exactly the in-memory PAV
    fit); one more pass sums, per chunk, the scores of ``p`` and of the
    fit's predictions, merged in chunk order. Equal to the in-memory result
    to ~1e-15 (sums in another order). Binary only: ``p`` is 1-D.
    """
    return metric(_decomposition.score_decomposition, y, p, sample_weight, binary=True, scoring=scoring)


def corp_reliability(y: DaskData, p: DaskData, *, sample_weight: DaskWeights = None, n_resamples: int = 0,
                     level: float = 0.9, band: Literal["consistency"] = "consistency",
                     random_state: int | np.random.Generator | None = None) -> CorpReliabilityResult:
    """:func:`fastcal.corp_reliability` of binary Dask data: the CORP curve and its consistency band.

    The exact distributed isotonic fit of :func:`score_decomposition` (the
    labels on the float64 probabilities, after the Dask metrics' checks):
    ``x`` the edges of its blocks, equal to the in-memory curve's bit for
    bit, ``y`` the recalibrated probability at each, to the rounding of the
    blocks' sums (added in another order). With ``n_resamples > 0``, the
    in-memory consistency band from range partitions of the rows (each row
    redraws its label from the number of its place in the whole, as in
    memory): the same bits without weights, the rounding of the blocks' sums
    with weights. ``band="confidence"`` (a bootstrap of all the rows at
    once) is refused. Binary only: ``p`` is 1-D.
    """
    return metric(_decomposition.corp_reliability, y, p, sample_weight, binary=True, n_resamples=n_resamples,
                  level=level, band=band, random_state=random_state)


def calibration_slope_intercept(y: DaskData, p: DaskData, *, sample_weight: DaskWeights = None
                                ) -> SlopeInterceptResult:
    """:func:`fastcal.calibration_slope_intercept` of binary Dask data: the Newton passes of
    :func:`calibration_report`'s slope over the persisted logits; the in-memory fit to the solver's tolerance,
    and its errors where the estimate does not exist. Binary only: ``p`` is 1-D."""
    return metric(_decomposition.calibration_slope_intercept, y, p, sample_weight, binary=True)


# ---------------------------------------------------------------------------
# ROC AUC and the calibration report: the drivers of fastcal.metrics._report_rows.
# ---------------------------------------------------------------------------


def roc_auc_score(
    y_true: DaskData,
    y_score: DaskData,
    *,
    sample_weight: DaskWeights = None,
    pos_label: float | str | None = None,
    n_partitions: int | None = None,
) -> float:
    """:func:`fastcal.roc_auc_score` of binary Dask data, exact.

    The rows are range-partitioned by score with a shuffle (as
    :func:`fit_isotonic` does), each partition's Mann-Whitney counts are
    computed on the workers and merged in score order on the client: equal to the in-memory AUC bit for
    bit without weights, to the rounding of the sums with them. Binary only
    (``y_score`` 1-D); ``n_partitions`` score ranges (the result does not
    depend on it).
    """
    binary_only("roc_auc_score", y_score)
    return call_driver(_decomposition.roc_auc_score, y_score, y_true, sample_weight, "y_score", "y_true",
                       pos_label=pos_label, n_partitions=n_partitions)


def calibration_report(
    y_true: DaskData,
    y_prob: DaskData,
    *,
    sample_weight: DaskWeights = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | str | None = None,
    slope: bool = True,
) -> CalibrationReport:
    """:func:`fastcal.calibration_report` of binary Dask data.

    One validation pass, one bin table, the exact AUC of :func:`roc_auc_score`,
    both CORP decompositions from one exact isotonic fit, and the calibration
    slope and intercept from Newton passes over the persisted logits: the in-memory
    report, sums to their rounding and the slope to the solver's tolerance.
    """
    return metric(_decomposition.calibration_report, y_true, y_prob, sample_weight, binary=True, n_bins=n_bins,
                  strategy=strategy, pos_label=pos_label, slope=slope)
