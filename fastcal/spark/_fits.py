"""The fits on a DataFrame's columns: isotonic regression, Platt scaling, beta calibration, histogram binning,
each the engine's driver on a :class:`SparkRows`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from ..metrics import rows as _binned
from ..isotonic import rows as _isotonic
from ..beta import rows as _beta_rows
from ..platt import rows as _platt_rows
from ._rows import drive

if TYPE_CHECKING:
    from typing import Literal, Unpack

    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicParams, IsotonicRegression
    from ..platt import PlattScaling


def fit_isotonic(
    df: DataFrame,
    score_col: str,
    label_col: str,
    *,
    weight_col: str | None = None,
    n_partitions: int | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """Fit :class:`fastcal.IsotonicRegression` on a DataFrame's columns: exactly the in-memory fit.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    score_col : str
        The scores, numeric and finite; a float column is fitted in float32.
    label_col : str
        The targets (0/1 labels for calibration), numeric or boolean.
    weight_col : str, optional
        Non-negative weights; rows of weight zero are dropped, as in ``fit``.
    n_partitions : int, optional
        Score ranges the rows are shuffled into, each fitted in one task.
        Default: one per 2^23 rows, at least ``spark.default.parallelism``, at
        most the DataFrame's partition count.
    **params
        ``IsotonicRegression`` parameters (``y_min``, ``y_max``,
        ``increasing``, ``out_of_bounds``, ``centered``).

    Returns
    -------
    IsotonicRegression
        Fitted, with the thresholds of ``IsotonicRegression(**params).fit`` on
        the collected columns, bit for bit (block means to the rounding of
        their sums, added in another order).

    Notes
    -----
    On :class:`SparkRows`:
    two small JVM jobs count the rows (and the largest weight) and sample
    the scores; the rows are range-partitioned by score as they are, in the
    JVM (one shuffle, cached; the selected columns of a DataFrame that is
    not cached are cached first); one ``mapInArrow`` job validates and
    converts every part, finds where its first tie group can begin, and
    fits it with the PAV kernel, returning its blocks. Where scores closer
    than the float resolution straddle a bound, small jobs follow the tie
    groups and a second shuffle moves the bounds, then the parts are fitted
    again. The driver pools the blocks. Nothing but counts, samples and
    blocks reaches the driver.
    """
    return drive(_isotonic.fit_isotonic, df, (score_col, label_col, weight_col),
                 ("score_col", "label_col", "weight_col"), n_partitions=n_partitions, **params)


def fit_platt(
    df: DataFrame,
    score_col: str,
    label_col: str,
    *,
    weight_col: str | None = None,
    max_iter: int = 100,
    tol: float | None = None,
) -> PlattScaling:
    """Fit :class:`fastcal.PlattScaling` on a DataFrame's columns: ``a_``, ``b_`` equal to the in-memory fit (~1e-10).

    The validated columns are cached; every Newton step is one ``mapInArrow``
    job whose tasks return their partition's objective, gradient and Hessian
    sums (the fused Numba kernel of the in-memory fit), added on the driver in
    partition order. ``max_iter`` and
    ``tol`` as in :class:`fastcal.PlattScaling`.
    """
    return drive(_platt_rows.fit_platt, df, (score_col, label_col, weight_col),
                 ("score_col", "label_col", "weight_col"), max_iter=max_iter, tol=tol)


def fit_beta(
    df: DataFrame,
    prob_col: str,
    label_col: str,
    *,
    weight_col: str | None = None,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
) -> BetaCalibration:
    """Fit :class:`fastcal.BetaCalibration` on a DataFrame's columns: ``a_``, ``b_``, ``c_`` equal to the in-memory
    fit (~1e-10). ``prob_col`` holds probabilities in [0, 1]; the passes as in :func:`fit_platt`."""
    return drive(_beta_rows.fit_beta, df, (prob_col, label_col, weight_col),
                 ("prob_col", "label_col", "weight_col"), parameters=parameters, max_iter=max_iter, tol=tol)


def fit_histogram(
    df: DataFrame,
    prob_col: str,
    label_col: str,
    *,
    weight_col: str | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> HistogramBinning:
    """Fit :class:`fastcal.HistogramBinning` on a DataFrame's columns: equal to the in-memory fit.

    The bins of :func:`calibration_curve` ("quantile" edges exactly NumPy's
    percentiles of the whole column), the partitions' bin tables added in
    partition order. Labels {0, 1} or {-1, 1}.
    """
    return drive(_binned.fit_histogram, df, (prob_col, label_col, weight_col),
                 ("prob_col", "label_col", "weight_col"), n_bins=n_bins, strategy=strategy)
