"""Prior corrections of a probability column: :func:`correct_negative_sampling` and :func:`adjust_priors` in Spark SQL;
the EM estimate of new priors and the label-shift estimate (:func:`estimate_label_shift`), by the drivers over rows.

Each is the in-memory binary map ``p -> p / (p + c (1 - p))`` (:mod:`fastcal.prior`), written from what
:func:`fastcal.prior.binary_map` says the kernel computes (its evaluation and its constants): the same IEEE
operations in the same order, so the same bits. A double column is computed in double; a float column in
float, each operation rounded to float (Spark computes a float division in double: rounding that quotient to
float gives the correctly rounded float quotient, as the kernel's, since a double holds more than twice a
float's 24 bits plus two).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Sequence

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .. import prior
from . import _expr as sql
from ._tasks import check_output, column_type

if TYPE_CHECKING:
    from .._typing import Priors
    from ..label_shift import LabelShiftResult
    from ..prior import PriorEMResult

__all__ = ["adjust_priors", "correct_negative_sampling", "estimate_label_shift", "estimate_priors_em"]


def _map(df, prob_col, output_col, c, cm1):
    spark_type = column_type(df, prob_col, "prob_col")
    check_output(df, output_col)
    float32 = spark_type.typeName() == "float"
    dtype = np.float32 if float32 else np.float64
    kind, constants = prior.binary_map(c, cm1, dtype)
    cast = "FLOAT" if float32 else "DOUBLE"

    def r(text):  # one operation, rounded to the column's type
        return f"CAST({text} AS {cast})"

    def lit(v):
        return r(sql.double(float(v)))

    p = r(sql.ident(prob_col))
    one = lit(1.0)
    if kind == "copy":
        value = p
    elif kind == "down":  # p / (1 + cm1 (1 - p))
        (cm1_d,) = constants
        value = r(p + " / " + r(one + " + " + r(lit(cm1_d) + " * " + r(one + " - " + p))))
    else:  # 1 / (c / p + omc); at p = +-0 that is 1 / +-inf = p, which Spark's division by zero would refuse
        c_d, omc = constants
        inverse = r(one + " / " + r(r(lit(c_d) + " / " + p) + " + " + lit(omc)))
        value = f"CASE WHEN {p} = {r('0.0D')} THEN {p} ELSE {inverse} END"
    message = sql.string(f"{prob_col} must hold probabilities in [0, 1] without NaN.")
    checked = (f"CASE WHEN {p} IS NULL THEN NULL WHEN NOT ({p} >= {r('0.0D')} AND {p} <= {one}) "
               f"THEN raise_error({message}) ELSE {value} END")
    return df.withColumn(output_col, F.expr(checked))


def correct_negative_sampling(df: DataFrame, prob_col: str, rate: float, output_col: str) -> DataFrame:
    """``df`` with a column ``output_col``: :func:`fastcal.correct_negative_sampling` of ``prob_col``, in Spark SQL.

    The in-memory map ``p / (1 + c (1 - p))`` with ``c = (1 - rate) / rate``
    (:func:`fastcal.correct_negative_sampling` says how it is evaluated), the
    same operations on the same constants: the same bits as in memory, in
    double for a double column and in float for a float column (other numeric
    columns are read as doubles). Every column and row of ``df`` is kept. A
    probability outside [0, 1] or NaN fails the Spark job that computes it,
    with the in-memory message; a null stays null. ``rate`` is checked now.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    prob_col : str
        The column of predicted probabilities of the positive class, numeric.
    rate : float in (0, 1]
        The fraction of the negatives kept in the training sample.
    output_col : str
        The name of the new column; it must not be a column of ``df``.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df``'s columns, then ``output_col`` (float for a float column, double otherwise).
    """
    return _map(df, prob_col, output_col, *prior.sampling_odds(rate))


def adjust_priors(df: DataFrame, prob_col: str, train_priors: Priors, new_priors: Priors,
                  output_col: str) -> DataFrame:
    """``df`` with a column ``output_col``: the binary :func:`fastcal.adjust_priors` of ``prob_col``, in Spark SQL.

    The in-memory map ``p / (p + c (1 - p))``, ``c = w0 / w1`` with
    ``w = new_priors / train_priors``, evaluated as in memory: the same bits,
    as :func:`correct_negative_sampling` says. The priors are those of a binary
    problem (a scalar, the positive class's, or two values); they are
    checked now. Every column and row of ``df`` is kept; a probability outside
    [0, 1] or NaN fails the job, a null stays null.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
    prob_col : str
        The column of P(y=1), numeric.
    train_priors, new_priors : float or array_like of shape (2,)
        The class priors of the training sample and of the target population.
    output_col : str
        The name of the new column; it must not be a column of ``df``.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df``'s columns, then ``output_col`` (float for a float column, double otherwise).
    """
    return _map(df, prob_col, output_col, *prior.shift_odds(train_priors, new_priors, "fastcal.spark.adjust_priors"))


def estimate_priors_em(df: DataFrame, prob_col: str, train_priors: Priors, *, max_iter: int = 1000,
                       tol: float = 1e-8, accelerate: bool = True) -> PriorEMResult:
    """:func:`fastcal.estimate_priors_em` of a binary problem's column of P(y=1).

    The EM driver of every backend: one job to check and convert the
    partitions (cached), then one a map, each partition's sums merged in
    partition order: the in-memory estimate to about ``tol`` (bit for bit
    when every partition but the last holds 4096 rows). Warns as in memory
    when the iterations do not converge. ``train_priors`` is the positive
    class's prior, or two values. The result's ``proba`` is None: adjust the
    column with :func:`adjust_priors` (``train_priors``, and ``priors`` of the
    result as ``new_priors``). (Multiclass posteriors, k columns, are not
    offered on Spark.)
    """
    from ..prior import rows as _prior
    from ..prior import PriorEMResult
    from ._rows import SparkRows

    prior.shift_odds(train_priors, train_priors, "fastcal.spark.estimate_priors_em")  # binary priors
    rows = SparkRows.from_columns(df, [prob_col], ["prob_col"])
    try:
        pi, n_iter, converged = _prior.estimate_priors_em(rows, x_dtype=rows.dtypes[0], train_priors=train_priors,
                                                          max_iter=max_iter, tol=tol, accelerate=accelerate)
    finally:
        rows.release()
    return PriorEMResult(priors=pi, proba=None, n_iter=n_iter, converged=converged)


def estimate_label_shift(
    source_df: DataFrame,
    target_df: DataFrame,
    proba_cols: Sequence[str],
    label_col: str,
    *,
    method: Literal["em", "bbse", "bbse-soft", "rlls", "rlls-soft"] = "em",
    calibrator: Any = "auto",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    max_iter: int = 1000,
    tol: float = 1e-8,
    condition_warning: float = 100.0,
    rlls_alpha: float = 0.01,
) -> LabelShiftResult:
    """:func:`fastcal.estimate_label_shift` of two DataFrames: the source's ``proba_cols`` (one column of
    probabilities per class) and ``label_col`` (class indices, column ``j`` of ``proba_cols`` is class ``j``),
    and the target's ``proba_cols`` (the same names).

    The label-shift driver of every backend (:func:`fastcal.label_shift.rows.estimate_label_shift`): the
    selected columns cached (a frame that is not cached is computed once), each pass a ``mapInArrow`` job whose
    tasks check, renormalise (and calibrate) their partition's rows and return its sums; the calibrator fitted
    as :func:`fit_multiclass` fits it, the EM the driver's of :func:`estimate_priors_em`. The parameters are
    the in-memory function's; ``calibrator`` is a name or one of fastcal's multiclass calibrators, and
    ``n_bootstrap`` is for hard BBSE and RLLS without a calibrator (their sufficient statistics are resampled).
    Equal to the in-memory estimate of the collected columns to about ``tol`` (the counts exactly).
    """
    from ..label_shift import rows as _label_shift
    from ..multiclass import rows as _multiclass_rows
    from ._rows import SparkRows

    cols = [proba_cols] if isinstance(proba_cols, str) else list(proba_cols)
    k = len(cols)
    names = tuple(f"proba_cols[{i}]" for i in range(k))
    opened = []
    try:
        source = SparkRows.from_columns(source_df, (*cols, label_col, None), (*names, "label_col", "weight"))
        opened.append(source)
        target = SparkRows.from_columns(target_df, (*cols, None, None), (*names, "label_col", "weight"))
        opened.append(target)
        source_rows = source.convert_later(_multiclass_rows.stack_columns, k)
        opened.append(source_rows)
        target_rows = target.convert_later(_multiclass_rows.stack_columns, k)
        opened.append(target_rows)
        return _label_shift.estimate_label_shift(source_rows, target_rows, n_classes=k, method=method,
                                                 calibrator=calibrator, n_bootstrap=n_bootstrap,
                                                 confidence=confidence, random_state=random_state, max_iter=max_iter,
                                                 tol=tol, condition_warning=condition_warning, rlls_alpha=rlls_alpha)
    finally:
        for rows in reversed(opened):
            rows.release()
