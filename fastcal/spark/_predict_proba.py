"""Multiclass predictions in Spark SQL: :func:`predict_proba` of a fitted multiclass calibrator, from the data of
its prediction (``prediction_data()``: :class:`fastcal._prediction.Softmax`), written as Spark SQL text parsed by
``pyspark.sql.functions.expr``: PySpark's public API, the same plan on a classic session and on Spark Connect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .._core.errors import not_fitted
from .._prediction import Softmax
from ..temperature import ROW_SUM_TOL, probability_errors, reading_why
from . import _expr as sql
from ._buckets import temp_name
from ._tasks import column_type

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import TypeAlias

    from ..multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
    from ..temperature import TemperatureScaling

    #: The fitted multiclass calibrators :func:`predict_proba` applies.
    Multiclass: TypeAlias = (TemperatureScaling | VectorScaling | BiasCorrectedTemperatureScaling | MatrixScaling
                             | DirichletCalibration)

#: Added to probabilities before their log, as in memory (fastcal.temperature).
_PROBA_EPS = 1e-12


def _checked(x, probabilities, why):
    """A SQL value that is null where a score of the row is null, 0.0 where the row is valid, and otherwise fails
    the job with the in-memory message: a score that is NaN or infinite, and for probabilities one outside
    [0, 1] or a row that does not sum to 1 within :data:`fastcal.temperature.ROW_SUM_TOL`."""
    inf = sql.double(np.inf)
    nan_error = sql.string("X must be finite, but contains NaN.")
    inf_error = sql.string("X must be finite, but contains infinity.")
    cases = [f"WHEN {' OR '.join(f'{v} IS NULL' for v in x)} THEN NULL"]
    cases += [f"WHEN NOT (abs({v}) < {inf}) THEN (CASE WHEN isnan({v}) THEN raise_error({nan_error}) "
              f"ELSE raise_error({inf_error}) END)" for v in x]
    if probabilities:
        range_error, sum_error = (sql.string(m) for m in probability_errors("X", why))
        cases.append(f"WHEN {' OR '.join(f'{v} < 0.0D OR {v} > 1.0D' for v in x)} THEN raise_error({range_error})")
        cases.append(f"WHEN abs({' + '.join(x)} - 1.0D) > {sql.double(ROW_SUM_TOL)} THEN raise_error({sum_error})")
    return f"CASE {' '.join(cases)} ELSE 0.0D END"


def _affine(coef, intercept, features):
    """``intercept + coef[0] f[0] + coef[1] f[1] + ...`` (SQL text), added left to right; zero coefficients left
    out (the features are finite, so a term ``0 f`` changes no sum)."""
    u = sql.double(intercept)
    for c, f in zip(coef, features):
        if c != 0.0:
            u = f"({u} + {sql.double(c)} * {f})"
    return u


def _softmax_prediction(data: Softmax, df, score_cols, output_cols, is32, why):
    """``df``'s columns, then the ``output_cols``: :class:`Softmax` of the ``score_cols`` in three projections (the
    checked features, the affine map, the softmax), so that each value is written once in the plan."""
    columns = list(df.columns)
    k = data.coef.shape[0]
    probabilities = data.reading == "probabilities"
    x = [f"CAST({sql.ident(c)} AS DOUBLE)" for c in score_cols]
    ok, u_cols, m_col = temp_name("ok"), [temp_name("u") for _ in range(k)], temp_name("m")
    if probabilities:
        logs = [f"ln({v} + {sql.double(_PROBA_EPS)})" for v in x]
        features = logs
        if data.centre:
            mean = f"(({' + '.join(logs)}) / {sql.double(len(logs))})"
            features = [f"({lg} - {mean})" for lg in logs]
    else:
        features = [f"(- {x[0]})", x[0]] if len(x) == 1 else x  # a binary decision value: the logits (-x, x)
    f_cols = [temp_name("f") for _ in features]
    step = df.select(*(F.col(sql.ident(c)) for c in columns), F.expr(_checked(x, probabilities, why)).alias(ok),
                     *(F.expr(f).alias(name) for f, name in zip(features, f_cols)))
    refs = [sql.ident(c) for c in f_cols]
    # the check's value (0.0, or null for a row with a null score) enters every class's logit: never pruned
    step = step.select(*(F.col(sql.ident(c)) for c in columns),
                       *(F.expr(f"{_affine(data.coef[j], data.intercept[j], refs)} + {sql.ident(ok)}").alias(u)
                         for j, u in enumerate(u_cols)))
    u = [sql.ident(c) for c in u_cols]
    step = step.select(*(F.col(sql.ident(c)) for c in columns), *(F.col(c) for c in u),
                       F.expr(f"greatest({', '.join(u)})").alias(m_col))
    e = [f"exp({v} - {sql.ident(m_col)})" for v in u]
    total = " + ".join(e)
    kind = "FLOAT" if is32 else "DOUBLE"
    return step.select(*(F.col(sql.ident(c)) for c in columns),
                       *(F.expr(f"CAST({ej} / ({total}) AS {kind})").alias(out) for ej, out in zip(e, output_cols)))


def predict_proba(estimator: Multiclass, df: DataFrame, score_cols: str | Sequence[str],
                  output_cols: Sequence[str]) -> DataFrame:
    """``df`` with the columns ``output_cols``: the calibrated probabilities of a fitted multiclass calibrator
    (``TemperatureScaling``, ``VectorScaling``, ``BiasCorrectedTemperatureScaling``, ``MatrixScaling``,
    ``DirichletCalibration``) of the scores in ``score_cols``, in Spark SQL.

    Every column and row of ``df`` is kept; the new columns are computed by
    Spark SQL expressions, with no Python worker, written from the model's
    ``prediction_data()`` (:class:`fastcal._prediction.Softmax`) with
    PySpark's public functions, so the same on a classic session and on Spark
    Connect: the scores read as the fit read its rows (``input_type_``: logits
    as they are; probabilities as ``log(p + 1e-12)``, less their row mean for
    vector scaling and BCTS), the fitted affine map, then the softmax
    ``exp(u_j - max u) / sum exp(u_i - max u)``. The scores are checked as in
    memory, lazily: a NaN or infinite score, and for probabilities a value
    outside [0, 1] or a row that does not sum to 1 within 1e-6, fails the
    Spark job that computes it with the in-memory message. A row with a null
    score has null probabilities.

    The probabilities equal ``estimator.predict_proba`` of the collected
    columns to the rounding of the float64 operations, the JVM's ``exp`` and
    ``ln`` (``StrictMath``, within 1 ulp) against fastcal's, and the order of
    the sums: a few ulp of each logit's magnitude, relative. Float32 score
    columns (all of them) give float columns, as in memory; their logs are
    taken in float64 here (in float32 in memory), a difference of a float32
    rounding of the log-probability.

    Parameters
    ----------
    estimator : TemperatureScaling, VectorScaling, BiasCorrectedTemperatureScaling, MatrixScaling or DirichletCalibration
        A fitted fastcal multiclass calibrator.
    df : pyspark.sql.DataFrame
    score_cols : str or sequence of str
        The columns of scores, one per class (column ``j``: class ``j``), numeric; or one column of binary decision
        values, for a model fitted on them.
    output_cols : sequence of str
        The names of the new columns, one per class of the model (``n_classes_``); none may be a column of ``df``.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df``'s columns, then ``output_cols`` (float where every score column is float, else double).

    Examples
    --------
    >>> import fastcal, fastcal.spark as fs  # doctest: +SKIP
    >>> model = fs.fit_multiclass(fastcal.VectorScaling(), df, ["s0", "s1", "s2"], "y")  # doctest: +SKIP
    >>> fs.predict_proba(model, df, ["s0", "s1", "s2"], ["p0", "p1", "p2"])  # doctest: +SKIP
    """
    data_of = getattr(estimator, "prediction_data", None)
    if not hasattr(estimator, "predict_proba") or data_of is None:
        raise TypeError(f"estimator must be a fastcal multiclass calibrator (TemperatureScaling, VectorScaling, "
                        f"BiasCorrectedTemperatureScaling, MatrixScaling, DirichletCalibration), got "
                        f"{type(estimator).__name__}; use fastcal.spark.predict for the 1-D calibrators.")
    if not hasattr(estimator, "n_classes_"):
        raise not_fitted(f"This {type(estimator).__name__} instance is not fitted yet; fit it before predict_proba.")
    data = data_of()
    if not isinstance(data, Softmax):
        raise TypeError(f"estimator must be a fastcal multiclass calibrator, got {type(estimator).__name__}; use "
                        "fastcal.spark.predict for the 1-D calibrators.")
    if data.reading == "auto":
        raise ValueError(f"this {type(estimator).__name__} reads each batch anew (input_type_='auto', a model file "
                         "of fastcal 0.1.0), which a Spark projection of one row at a time cannot do: set its "
                         "input_type_ to 'logits' or 'probabilities', or refit it.")
    k = data.coef.shape[0]
    cols = [score_cols] if isinstance(score_cols, str) else list(score_cols)
    d = len(cols)
    if d != k and not (d == 1 and k == 2):
        raise ValueError(f"score_cols names {d} columns, but the {type(estimator).__name__} was fitted on {k} "
                         f"classes (one column per class, or for two classes one of binary decision values).")
    if d == 1 and data.reading == "probabilities":
        raise ValueError("score_cols names one column; probabilities need one column per class.")
    labels = [f"score_cols[{i}]" for i in range(d)] if d > 1 else ["score_cols"]
    types = [column_type(df, c, label) for c, label in zip(cols, labels)]
    if isinstance(output_cols, str):
        raise TypeError("output_cols must be a sequence of column names, one per class, not one str.")
    outputs = list(output_cols)
    if len(outputs) != k:
        raise ValueError(f"output_cols names {len(outputs)} columns, but the model has {k} classes.")
    for out in outputs:
        if not isinstance(out, str):
            raise TypeError(f"output_cols must hold column names (str), got {type(out).__name__}.")
        if out in df.columns:
            raise ValueError(f"output_cols: {out!r} is already a column of the DataFrame.")
    if len(set(outputs)) != k:
        raise ValueError(f"output_cols must be distinct, got {outputs}.")
    is32 = all(isinstance(t, T.FloatType) for t in types)
    why = reading_why(estimator) if data.reading == "probabilities" else ""
    return _softmax_prediction(data, df, cols, outputs, is32, why)
