"""The fits on a DataFrame's columns: isotonic regression, Platt scaling, beta calibration, histogram binning and
the multiclass calibrators, each the engine's driver on a :class:`SparkRows`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import DataFrame

from ..metrics import rows as _binned
from ..isotonic import rows as _isotonic
from ..beta import rows as _beta_rows
from ..platt import rows as _platt_rows
from ..multiclass import rows as _multiclass_rows
from ._rows import SparkRows, drive

if TYPE_CHECKING:
    from typing import Literal, Sequence, TypeVar, Unpack

    from ..multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
    from ..temperature import TemperatureScaling

    Multiclass = TypeVar("Multiclass", TemperatureScaling, VectorScaling, BiasCorrectedTemperatureScaling,
                         MatrixScaling, DirichletCalibration)

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


def fit_multiclass(
    calibrator: Multiclass,
    df: DataFrame,
    score_cols: str | Sequence[str],
    label_col: str,
    *,
    weight_col: str | None = None,
) -> Multiclass:
    """Fit a multiclass calibrator on a DataFrame's columns: a fitted copy of ``calibrator``, equal to the in-memory
    fit (probabilities to ~1e-10).

    Parameters
    ----------
    calibrator : TemperatureScaling, VectorScaling, BiasCorrectedTemperatureScaling, MatrixScaling or \
            DirichletCalibration
        Unfitted; its parameters are used, and it is not modified.
    df : pyspark.sql.DataFrame
    score_cols : str or sequence of str
        One numeric column per class (logits or probabilities, as the
        calibrator's ``input_type`` reads them), or one column of binary
        decision values.
    label_col : str
        Class indices in ``0 .. k - 1`` (column ``j`` of ``score_cols`` is class ``j``).
    weight_col : str, optional
        Non-negative weights.

    Notes
    -----
    :func:`fastcal.multiclass.rows.fit_softmax`, the driver of every
    backend. The selected columns are cached (a DataFrame that is not
    cached is computed once); each pass is one ``mapInArrow`` job whose
    tasks check and convert their partition's rows and return its sums
    (the in-memory kernels), added on the driver: two passes for the
    checks and the warm-start subsamples, then one per step of temperature
    scaling's start and per Newton step.
    """
    cols = [score_cols] if isinstance(score_cols, str) else list(score_cols)
    d = len(cols)
    if d == 0:
        raise ValueError("score_cols must name at least one column.")
    labels = tuple(f"score_cols[{i}]" for i in range(d)) if d > 1 else ("score_cols",)
    rows = SparkRows.from_columns(df, (*cols, label_col, weight_col), (*labels, "label_col", "weight_col"))
    try:
        stacked = rows.convert_later(_multiclass_rows.stack_columns, d)
        try:
            return _multiclass_rows.fit_softmax(stacked, n_columns=d, calibrator=calibrator,
                                                weighted=weight_col is not None)
        finally:
            stacked.release()
    finally:
        rows.release()
