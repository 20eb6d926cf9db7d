"""Predictions in the JVM: :func:`predict` of a fitted 1-D calibrator as Spark SQL expressions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .._errors import not_fitted
from ._buckets import temp_name, with_bucket
from ._tasks import NUMPY_OF_SPARK

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..platt import PlattScaling

    #: The fitted 1-D calibrators :func:`predict` applies.
    OneD: TypeAlias = IsotonicRegression | PlattScaling | BetaCalibration | HistogramBinning


def _column_type(df, name, label):
    fields = {f.name: f for f in df.schema.fields}
    if name not in fields:
        raise ValueError(f"{label}={name!r} is not a column of the DataFrame; its columns are {list(fields)}.")
    spark_type = fields[name].dataType
    if type(spark_type) not in NUMPY_OF_SPARK:
        raise TypeError(f"{label}={name!r} must be a numeric column, got {spark_type.simpleString()}.")
    return spark_type


def _finite_or_raise(t: Column, name: str, value: Column) -> Column:
    """``value``, or a run-time error (the in-memory message) where ``t`` is NaN or infinite; nulls stay null."""
    return (F.when(t.isNull(), F.lit(None))
            .when(F.isnan(t), F.raise_error(F.lit(f"{name} must be finite, but contains NaN.")))
            .when(F.abs(t) == float("inf"), F.raise_error(F.lit(f"{name} must be finite, but contains infinity.")))
            .otherwise(value))


def _with_count_below(df, value: Column, sorted_values, out):
    """``df`` with column ``out``: how many of ``sorted_values`` (strictly increasing, finite) are ``< value``.

    For floats, ``x < v`` exactly when ``nextafter(x, inf) <= v``: a binary search
    (:func:`with_bucket`) over the values moved up by one ulp.
    """
    return with_bucket(df, value, np.nextafter(np.asarray(sorted_values, dtype=np.float64), np.inf), out)


def _literal_doubles(values) -> Column:
    """A literal ``array<double>`` of ``values`` (finite), exact: one typed literal built from the NumPy array
    (no SQL text to parse, and constant in the generated code: ``element_at`` reads it without a copy)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    if not np.all(np.isfinite(values)):
        raise ValueError("internal: a literal array must be finite")
    return F.lit(values)


def _isotonic_prediction(est, df, score, out_col):
    xs, ys = est.X_thresholds_, est.y_thresholds_
    out_type = "float" if xs.dtype == np.float32 else "double"
    t = F.col(score).cast(out_type).cast("double") if out_type == "float" else F.col(score).cast("double")
    m = xs.shape[0]
    if m == 1:
        return df.withColumn(out_col, _finite_or_raise(t, "T", F.lit(float(ys[0]))).cast(out_type))
    x0, xm = float(xs[0]), float(xs[-1])
    tc_col, j_col = temp_name("t"), temp_name("j")
    df = df.withColumn(tc_col, F.least(F.greatest(t, F.lit(x0)), F.lit(xm)))
    tc = F.col(tc_col)
    # j: the first knot >= t (the number of knots < t; never m, as t <= the last knot), clipped to 1 .. m - 1,
    # as the kernel's search; its segment is knots j - 1 and j (element_at counts from 1).
    df = _with_count_below(df, tc, xs[:-1], j_col)
    j = F.least(F.greatest(F.col(j_col), F.lit(1)), F.lit(m - 1))
    x_knots, y_knots = _literal_doubles(xs), _literal_doubles(ys)
    x_lo, x_hi = F.element_at(x_knots, j), F.element_at(x_knots, j + 1)
    y_lo, y_hi = F.element_at(y_knots, j), F.element_at(y_knots, j + 1)
    inside = y_lo + (tc - x_lo) / (x_hi - x_lo) * (y_hi - y_lo)
    mode = est.out_of_bounds
    if mode == "clip":
        value = inside
    elif mode == "nan":
        value = F.when((t < x0) | (t > xm), F.lit(float("nan"))).otherwise(inside)
    else:
        value = (F.when(t < x0, F.raise_error(F.concat(
            F.lit("A value ("), t.cast("string"),
            F.lit(f") in x_new is below the interpolation range's minimum value ({xs[0]}). x_new: the argument T."))))
                 .when(t > xm, F.raise_error(F.concat(
                     F.lit("A value ("), t.cast("string"),
                     F.lit(f") in x_new is above the interpolation range's maximum value ({xs[-1]}). "
                           "x_new: the argument T."))))
                 .otherwise(inside))
    return df.withColumn(out_col, _finite_or_raise(t, "T", value).cast(out_type)).drop(tc_col, j_col)


def _histogram_prediction(est, df, score, out_col):
    edges, values = est.bin_edges_, est.bin_values_
    p = F.col(score).cast("double")
    inner = edges[1:-1]
    check = F.when(p.isNull(), F.lit(None)).when(
        F.isnan(p), F.raise_error(F.lit("p must be finite, but contains NaN."))).when(
        (p < 0.0) | (p > 1.0), F.raise_error(F.lit("p must contain probabilities in [0, 1].")))
    if inner.shape[0] == 0:
        return df.withColumn(out_col, check.otherwise(F.lit(float(values[0]))))
    # The in-memory rule: values[i], i = the number of inner edges < p (searchsorted, side="left"), i.e.
    # the repeated edges counted in full below the number k of distinct ones < p.
    distinct, counts = np.unique(inner, return_counts=True)
    b_col = temp_name("b")
    df = _with_count_below(df, p, distinct, b_col)
    by_k = values[np.concatenate([[0], np.cumsum(counts)])]
    value = F.element_at(_literal_doubles(by_k), F.col(b_col) + 1)
    return df.withColumn(out_col, check.otherwise(value)).drop(b_col)


def _sigmoid_parts(z: Column):
    """``(e, d)``: ``e = exp(-|z|)``, ``d = 1 / (1 + e)``, as the kernels compute the logistic function."""
    e = F.exp(-F.abs(z))
    return e, F.lit(1.0) / (F.lit(1.0) + e)


def _platt_prediction(est, df, score, out_col, spark_type):
    out_type = "float" if isinstance(spark_type, T.FloatType) else "double"
    s = F.col(score).cast("double")
    z = F.lit(float(est.a_)) * s + F.lit(float(est.b_))
    e, d = _sigmoid_parts(z)
    value = F.when(z >= 0.0, e * d).otherwise(d)
    return df.withColumn(out_col, _finite_or_raise(s, "scores", value).cast(out_type))


def _beta_prediction(est, df, score, out_col, spark_type):
    is32 = isinstance(spark_type, T.FloatType)
    out_type = "float" if is32 else "double"
    eps = float(np.finfo(np.float32 if is32 else np.float64).eps)
    p = F.col(score).cast("double")
    pc = F.least(F.greatest(p, F.lit(eps)), F.lit(1.0 - eps))
    eta = F.lit(float(est.a_)) * F.log(pc) - F.lit(float(est.b_)) * F.log(F.lit(1.0) - pc) + F.lit(float(est.c_))
    e, d = _sigmoid_parts(eta)
    value = F.when(eta >= 0.0, d).otherwise(e * d)
    checked = (F.when(p.isNull(), F.lit(None)).when(F.isnan(p), F.raise_error(F.lit("p must be finite, but contains NaN.")))
               .when((p < 0.0) | (p > 1.0), F.raise_error(F.lit("p must contain probabilities in [0, 1].")))
               .otherwise(value))
    return df.withColumn(out_col, checked.cast(out_type))


def predict(estimator: OneD, df: DataFrame, score_col: str, output_col: str) -> DataFrame:
    """``df`` with a column ``output_col``: the predictions of a fitted 1-D calibrator on ``score_col``, in the JVM.

    Every column and row of ``df`` is kept (the partitioning too); the new
    column is computed by Spark SQL expressions, with no Python worker:

    - ``PlattScaling``: ``1 / (1 + exp(a s + b))`` as the kernel writes it
      (``e = exp(-|z|)``, ``d = 1 / (1 + e)``);
    - ``BetaCalibration``: the same logistic function of
      ``a log p' - b log(1 - p') + c`` with ``p'`` clipped to ``[eps, 1 - eps]``;
    - ``IsotonicRegression``: a binary search of the knots (ML's
      ``Bucketizer``), then the kernel's linear interpolation
      ``y[j-1] + (t - x[j-1]) / (x[j] - x[j-1]) (y[j] - y[j-1])`` with ``j`` the
      first knot ``>= t``, and ``out_of_bounds`` applied as in memory;
    - ``HistogramBinning``: a binary search of the bin edges and the bin's value.

    The results equal ``estimator.predict`` on the collected column bit for
    bit for the isotonic and histogram models (the same comparisons and the
    same IEEE float64 operations; float32 fits give a float column); for
    Platt and beta within an ulp or two, from the ``exp`` and ``log`` of the
    JVM (``StrictMath``, within 1 ulp) against fastcal's own (within 1.1 and 2
    ulp). Scores are checked as in memory, lazily: a NaN or infinite score,
    a probability outside ``[0, 1]`` for beta and histogram, or a score out
    of bounds for an isotonic model with ``out_of_bounds="raise"`` fails the
    Spark job that computes it, with the in-memory message. Null scores give
    null predictions.

    Parameters
    ----------
    estimator : IsotonicRegression, PlattScaling, BetaCalibration or HistogramBinning
        A fitted fastcal calibrator.
    df : pyspark.sql.DataFrame
    score_col : str
        The column of scores (probabilities for beta and histogram binning), numeric.
    output_col : str
        The name of the new column; it must not be a column of ``df``.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df``'s columns, then ``output_col`` (float when the model computes in
        float32: a float32 isotonic fit, or Platt and beta on a float column;
        double otherwise).
    """
    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..platt import PlattScaling

    if not isinstance(estimator, (IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning)):
        raise TypeError("estimator must be a fitted IsotonicRegression, PlattScaling, BetaCalibration or "
                        f"HistogramBinning, got {type(estimator).__name__}.")
    fitted = {IsotonicRegression: "X_thresholds_", PlattScaling: "a_", BetaCalibration: "a_",
              HistogramBinning: "bin_values_"}[type(estimator)]
    if not hasattr(estimator, fitted):
        raise not_fitted(f"This {type(estimator).__name__} instance is not fitted yet. Call 'fit' first.")
    if not isinstance(df, DataFrame):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}.")
    spark_type = _column_type(df, score_col, "score_col")
    if not isinstance(output_col, str):
        raise TypeError(f"output_col must be a column name (str), got {type(output_col).__name__}.")
    if output_col in df.columns:
        raise ValueError(f"output_col={output_col!r} is already a column of the DataFrame.")
    if isinstance(estimator, IsotonicRegression):
        if estimator.out_of_bounds not in ("nan", "clip", "raise"):
            raise ValueError(f"out_of_bounds must be 'nan', 'clip' or 'raise', got {estimator.out_of_bounds!r}.")
        return _isotonic_prediction(estimator, df, score_col, output_col)
    if isinstance(estimator, HistogramBinning):
        return _histogram_prediction(estimator, df, score_col, output_col)
    if isinstance(estimator, PlattScaling):
        return _platt_prediction(estimator, df, score_col, output_col, spark_type)
    return _beta_prediction(estimator, df, score_col, output_col, spark_type)
