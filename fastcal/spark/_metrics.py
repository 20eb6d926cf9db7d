"""The diagnostics of a DataFrame's columns: curve, ECE, Brier, log loss, decompositions, smooth ECE, CORP,
AUC and the calibration report, each the engine's driver on a :class:`SparkRows`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame

from ..metrics import rows as _binned
from ..metrics import report_rows as _decomposition
from ._rows import drive_metric

if TYPE_CHECKING:
    from typing import Literal

    from numpy.typing import NDArray

    from ..decomposition import CorpReliabilityResult, ScoreDecomposition
    from ..platt import SlopeInterceptResult
    from ..metrics import BrierDecomposition, CalibrationReport
    from ..smooth import SmoothECEResult


def calibration_curve(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    pos_label: float | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    return_counts: bool = False,
) -> tuple[NDArray[np.float64], ...]:
    """:func:`fastcal.calibration_curve` of a DataFrame's columns: the partitions' bin sums, added on the driver.

    Same arguments (the columns by name), bins and results as the in-memory
    function; ``"quantile"`` edges are NumPy's percentiles of the whole
    column, exactly (two more jobs select the order statistics).
    """
    return drive_metric(_binned.calibration_curve, df, label_col, prob_col, weight_col, pos_label=pos_label,
                        n_bins=n_bins, strategy=strategy, return_counts=return_counts)


def expected_calibration_error(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    pos_label: float | None = None,
) -> float:
    """:func:`fastcal.expected_calibration_error` of a DataFrame's columns (the partitions' bin sums)."""
    return drive_metric(_binned.expected_calibration_error, df, label_col, prob_col, weight_col, n_bins=n_bins,
                        strategy=strategy, norm=norm, pos_label=pos_label)


def brier_score_loss(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    pos_label: float | None = None,
) -> float:
    """:func:`fastcal.brier_score_loss` of a DataFrame's columns (binary: ``prob_col`` is P(y = 1))."""
    return drive_metric(_binned.brier_score_loss, df, label_col, prob_col, weight_col, pos_label=pos_label)


def log_loss(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    pos_label: float | None = None,
    normalize: bool = True,
) -> float:
    """:func:`fastcal.log_loss` of a DataFrame's columns (binary: ``prob_col`` is P(y = 1))."""
    return drive_metric(_binned.log_loss, df, label_col, prob_col, weight_col, pos_label=pos_label, normalize=normalize)


def brier_decomposition(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | None = None,
) -> BrierDecomposition:
    """:func:`fastcal.brier_decomposition` of a DataFrame's columns (the partitions' bin sums and moments)."""
    return drive_metric(_binned.brier_decomposition, df, label_col, prob_col, weight_col, n_bins=n_bins,
                        strategy=strategy, pos_label=pos_label)


def smooth_ece(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    bandwidth: float | None = None,
) -> SmoothECEResult:
    """:func:`fastcal.smooth_ece` of a DataFrame's columns: each partition's sums on the grid, added on the driver
    in partition order, then smoothed as in memory. Labels {0, 1} or {-1, 1}."""
    return drive_metric(_binned.smooth_ece, df, label_col, prob_col, weight_col, bandwidth=bandwidth)


def score_decomposition(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    scoring: Literal["brier", "log_loss"] = "brier",
) -> ScoreDecomposition:
    """:func:`fastcal.score_decomposition` of a DataFrame's columns, through the exact isotonic fit of
    :func:`fit_isotonic` (its range partition by probability), then one job of score sums per partition."""
    return drive_metric(_decomposition.score_decomposition, df, label_col, prob_col, weight_col, scoring=scoring)


def calibration_slope_intercept(df: DataFrame, label_col: str, prob_col: str, *,
                                weight_col: str | None = None) -> SlopeInterceptResult:
    """:func:`fastcal.calibration_slope_intercept` of a DataFrame's columns (binary): the Newton passes of
    :func:`calibration_report`'s slope over the cached logits; the in-memory fit to the solver's tolerance, and
    its errors where the estimate does not exist."""
    return drive_metric(_decomposition.calibration_slope_intercept, df, label_col, prob_col, weight_col)


def corp_reliability(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    n_resamples: int = 0,
    level: float = 0.9,
    band: Literal["consistency"] = "consistency",
    random_state: int | np.random.Generator | None = None,
) -> CorpReliabilityResult:
    r""":func:`fastcal.corp_reliability` of a DataFrame's columns (binary): the CORP curve and its consistency band.

    The curve is the PAV fit :math:`\hat p` of the labels on the
    probabilities (Dimitriadis, Gneiting & Jordan 2021, PNAS 118(8)
    e2016191118): ``x`` the edges of the fit's blocks, ``y`` the recalibrated
    probability at each, computed by :func:`fit_isotonic`'s exact range-partitioned
    fit after the in-memory checks of the columns (probabilities in [0, 1],
    labels {0, 1} or {-1, 1}). ``x`` equals the in-memory curve's bit for bit,
    ``y`` to the rounding of the blocks' sums (added in another order).

    With ``n_resamples > 0``, the consistency band at ``level`` (the
    in-memory ``band="consistency"``): each partition of the rows, in score
    order, redraws its labels from the same counter-based random numbers as
    the in-memory band (each row the number of its place in the whole, rows
    of equal probability in order of weight), fits them, and the fits are
    merged per resample. The band equals the in-memory one bit for bit
    without weights, and to the rounding of the blocks' sums with weights.
    ``band="confidence"`` (a bootstrap of all the rows at once) is refused.
    """
    return drive_metric(_decomposition.corp_reliability, df, label_col, prob_col, weight_col,
                        n_resamples=n_resamples, level=level, band=band, random_state=random_state)


def roc_auc_score(
    df: DataFrame,
    label_col: str,
    score_col: str,
    *,
    weight_col: str | None = None,
    pos_label: float | None = None,
    n_partitions: int | None = None,
) -> float:
    """:func:`fastcal.roc_auc_score` of a DataFrame's columns (binary), exact.

    The rows are range-partitioned by score in the JVM (as :func:`fit_isotonic`
    does), each partition's Mann-Whitney counts are computed in its task and
    merged in score order on the driver:
    equal to the in-memory AUC bit for bit without weights, to the rounding
    of the sums with them. ``n_partitions`` score ranges (the result does not
    depend on it).
    """
    return drive_metric(_decomposition.roc_auc_score, df, label_col, score_col, weight_col, pos_label=pos_label,
                        n_partitions=n_partitions)


def calibration_report(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | None = None,
    slope: bool = True,
) -> CalibrationReport:
    """:func:`fastcal.calibration_report` of a DataFrame's columns (binary): the passes of
    :func:`fastcal.dask.calibration_report`, with its exactness, on the DataFrame's partitions, its converted
    rows and logits cached."""
    return drive_metric(_decomposition.calibration_report, df, label_col, prob_col, weight_col, n_bins=n_bins,
                        strategy=strategy, pos_label=pos_label, slope=slope)
