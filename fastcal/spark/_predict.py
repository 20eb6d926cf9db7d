"""Predictions in the JVM: :func:`predict` of a fitted 1-D calibrator as Spark SQL expressions."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .._errors import not_fitted
from ._buckets import double_array, int_array, temp_name, with_count_below, with_first_not_less
from ._expr import Expr, sql
from ._tasks import is_numeric

if TYPE_CHECKING:
    from typing import TypeAlias

    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..grouped import GroupedCalibrator
    from ..platt import PlattScaling

    #: The fitted 1-D calibrators :func:`predict` applies.
    OneD: TypeAlias = IsotonicRegression | PlattScaling | BetaCalibration | HistogramBinning


def _column_type(df, name, label):
    fields = {f.name: f for f in df.schema.fields}
    if name not in fields:
        raise ValueError(f"{label}={name!r} is not a column of the DataFrame; its columns are {list(fields)}.")
    spark_type = fields[name].dataType
    if not is_numeric(spark_type):
        raise TypeError(f"{label}={name!r} must be a numeric column, got {spark_type.simpleString()}.")
    return spark_type


def _finite_or_raise(t: Expr, name: str, value: Expr) -> Expr:
    """``value``, or a run-time error (the in-memory message) where ``t`` is NaN or infinite; nulls stay null."""
    q = t.sql
    bad = q.when(q.isnan(t), q.raise_error(f"{name} must be finite, but contains NaN.")).otherwise(
        q.raise_error(f"{name} must be finite, but contains infinity."))
    return q.when(t.isNull(), None).when(~(q.abs(t) < float("inf")), bad).otherwise(value)  # one test if finite


def _isotonic_prediction(est, df, score, out_col):
    xs, ys = est.X_thresholds_, est.y_thresholds_
    q = sql(df.sparkSession)
    out_type = "float" if xs.dtype == np.float32 else "double"
    t = q.col(score).cast(out_type).cast("double") if out_type == "float" else q.col(score).cast("double")
    m = xs.shape[0]
    if m == 1:
        return df.withColumn(out_col, _finite_or_raise(t, "T", q.lit(float(ys[0]))).cast(out_type).column)
    x0, xm = float(xs[0]), float(xs[-1])
    tc_col, j_col = temp_name("t"), temp_name("j")
    df = df.withColumn(tc_col, q.least(q.greatest(t, x0), xm).column)
    tc = q.col(tc_col)
    # j: the first knot >= t (the number of knots < t; never m, as t <= the last knot), clipped to 1 .. m - 1,
    # as the kernel's search; its segment is knots j - 1 and j (element_at counts from 1).
    df = with_count_below(df, tc, xs[:-1], j_col)
    j = q.least(q.greatest(q.col(j_col), 1), m - 1)
    x_knots, y_knots = double_array(df.sparkSession, xs), double_array(df.sparkSession, ys)
    value = _isotonic_value(t, tc, q.lit(x0), q.lit(xm), x_knots, y_knots, j, est.out_of_bounds, q.lit(f"{xs[0]}"),
                            q.lit(f"{xs[-1]}"))
    return df.withColumn(out_col, _finite_or_raise(t, "T", value).cast(out_type).column).drop(tc_col, j_col)


def _isotonic_value(t, tc, x0, xm, x_knots, y_knots, j, mode, x0_text, xm_text):
    """The isotonic prediction at ``t`` (``tc``: ``t`` clipped to ``[x0, xm]``) on the segment of knots ``j``
    and ``j + 1`` of the literal arrays (``element_at`` counts from 1), with ``out_of_bounds`` ``mode``."""
    q = t.sql
    x_lo, x_hi = q.element_at(x_knots, j), q.element_at(x_knots, j + 1)
    y_lo, y_hi = q.element_at(y_knots, j), q.element_at(y_knots, j + 1)
    inside = y_lo + (tc - x_lo) / (x_hi - x_lo) * (y_hi - y_lo)
    if mode == "clip":
        return inside
    if mode == "nan":
        return q.when((t < x0) | (t > xm), float("nan")).otherwise(inside)
    return (q.when(t < x0, q.raise_error(q.concat(
        "A value (", t.cast("string"), ") in x_new is below the interpolation range's minimum value (",
        x0_text, "). x_new: the argument T.")))
            .when(t > xm, q.raise_error(q.concat(
                "A value (", t.cast("string"), ") in x_new is above the interpolation range's maximum value (",
                xm_text, "). x_new: the argument T.")))
            .otherwise(inside))


def _histogram_prediction(est, df, score, out_col):
    edges, values = est.bin_edges_, est.bin_values_
    q = sql(df.sparkSession)
    p = q.col(score).cast("double")
    inner = edges[1:-1]
    if inner.shape[0] == 0:
        return df.withColumn(out_col, _probability_checked(p, q.lit(float(values[0]))).column)
    # The in-memory rule: values[i], i = the number of inner edges < p (searchsorted, side="left"), i.e.
    # the repeated edges counted in full below the number k of distinct ones < p.
    distinct, counts = np.unique(inner, return_counts=True)
    b_col = temp_name("b")
    df = with_count_below(df, p, distinct, b_col)
    by_k = values[np.concatenate([[0], np.cumsum(counts)])]
    value = q.element_at(double_array(df.sparkSession, by_k), q.col(b_col) + 1)
    return df.withColumn(out_col, _probability_checked(p, value).column).drop(b_col)


def _sigmoid_parts(z: Expr):
    """``(e, d)``: ``e = exp(-|z|)``, ``d = 1 / (1 + e)``, as the kernels compute the logistic function."""
    q = z.sql
    e = q.exp(-q.abs(z))
    return e, q.lit(1.0) / (1.0 + e)


def _platt_value(a: Expr, b: Expr, s: Expr) -> Expr:
    """``1 / (1 + exp(a s + b))`` as the kernel writes it."""
    z = a * s + b
    e, d = _sigmoid_parts(z)
    return s.sql.when(z >= 0.0, e * d).otherwise(d)


def _platt_prediction(est, df, score, out_col, spark_type, params=None):
    q = sql(df.sparkSession)
    out_type = "float" if isinstance(spark_type, T.FloatType) else "double"
    s = q.col(score).cast("double")
    a, b = params if params is not None else (q.lit(float(est.a_)), q.lit(float(est.b_)))
    return df.withColumn(out_col, _finite_or_raise(s, "scores", _platt_value(a, b, s)).cast(out_type).column)


def _beta_prediction(est, df, score, out_col, spark_type, params=None):
    q = sql(df.sparkSession)
    is32 = isinstance(spark_type, T.FloatType)
    out_type = "float" if is32 else "double"
    eps = float(np.finfo(np.float32 if is32 else np.float64).eps)
    p = q.col(score).cast("double")
    pc = q.least(q.greatest(p, eps), 1.0 - eps)
    a, b, c = params if params is not None else (q.lit(float(est.a_)), q.lit(float(est.b_)), q.lit(float(est.c_)))
    eta = a * q.log(pc) - b * q.log(1.0 - pc) + c
    e, d = _sigmoid_parts(eta)
    value = q.when(eta >= 0.0, d).otherwise(e * d)
    return df.withColumn(out_col, _probability_checked(p, value).cast(out_type).column)


def _probability_checked(p: Expr, value: Expr) -> Expr:
    """``value``, null for a null ``p``, or the in-memory error where ``p`` is NaN or outside [0, 1]."""
    q = p.sql
    return (q.when(p.isNull(), None).when(q.isnan(p), q.raise_error("p must be finite, but contains NaN."))
            .when((p < 0.0) | (p > 1.0), q.raise_error("p must contain probabilities in [0, 1]."))
            .otherwise(value))


# ---------------------------------------------------------------------------
# A GroupedCalibrator: each row's model number by a broadcast join, the models' parameters in literal arrays.
# ---------------------------------------------------------------------------


def _python_value(value):
    return value.item() if isinstance(value, np.generic) else value


def _is_missing(value):
    return value is None or (isinstance(value, float) and value != value)


def _with_model_number(df, group_col, groups, out):
    """``df`` with an int column ``out``: the number of each row's group among ``groups`` (a model's
    ``groups_``), or ``len(groups)`` (the global model) for an unseen group. Null and NaN are the missing group
    (``None`` or NaN in ``groups``), as in memory. One broadcast left join on a table of the groups: every row
    and column of ``df`` kept."""
    values = [_python_value(g) for g in groups]
    missing = [i for i, v in enumerate(values) if _is_missing(v)]
    fallback = F.lit(len(values))
    if missing:
        spark_type = df.schema[group_col].dataType
        is_missing = F.col(group_col).isNull()
        if isinstance(spark_type, (T.FloatType, T.DoubleType)):
            is_missing = is_missing | F.isnan(F.col(group_col))
        fallback = F.when(is_missing, F.lit(missing[0])).otherwise(fallback)
    present = [(v, i) for i, v in enumerate(values) if not _is_missing(v)]
    if not present:
        return df.withColumn(out, fallback.cast("int"))
    key, number = temp_name("k"), temp_name("n")
    spark_type = df.schema[group_col].dataType
    schema = T.StructType([T.StructField(key, spark_type), T.StructField(number, T.IntegerType())])
    try:
        table = df.sparkSession.createDataFrame(present, schema)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"group_col={group_col!r} is a {spark_type.simpleString()} column, but the model's groups "
                        f"are {sorted({type(v).__name__ for v, _ in present})}: {exc}") from None
    joined = df.join(F.broadcast(table), df[group_col] == table[key], "left").drop(key)
    return joined.withColumn(out, F.coalesce(F.col(number), fallback.cast("int"))).drop(number)


def _flat(arrays):
    """One literal array of ``arrays`` laid end to end, and each one's offset (0-based) and length."""
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    flat = np.concatenate(arrays).astype(np.float64) if arrays else np.zeros(0)
    return flat, offsets, lengths


def _grouped_prediction(est, df, score, group_col, out_col, spark_type):
    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..platt import PlattScaling

    models = [*est.calibrators_, est.global_calibrator_]
    kinds = {type(m) for m in models}
    kind = kinds.pop() if len(kinds) == 1 else None
    if kind not in (IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning):
        raise TypeError("fastcal.spark.predict applies a GroupedCalibrator of IsotonicRegression, PlattScaling, "
                        f"BetaCalibration or HistogramBinning models, got {sorted(t.__name__ for t in {*map(type, models)})}.")
    k_col = temp_name("m")
    spark = df.sparkSession
    df = _with_model_number(df, group_col, est.groups_, k_col)
    q = sql(spark)
    k = q.col(k_col) + 1  # element_at counts from 1

    def per_model(values):
        return q.element_at(double_array(spark, values), k)

    if kind is PlattScaling:
        params = (per_model([m.a_ for m in models]), per_model([m.b_ for m in models]))
        return _platt_prediction(est, df, score, out_col, spark_type, params).drop(k_col)
    if kind is BetaCalibration:
        params = tuple(per_model([getattr(m, a) for m in models]) for a in ("a_", "b_", "c_"))
        return _beta_prediction(est, df, score, out_col, spark_type, params).drop(k_col)
    if kind is HistogramBinning:
        edges, e_off, e_len = _flat([m.bin_edges_[1:-1] for m in models])
        values, v_off, _ = _flat([m.bin_values_ for m in models])
        p = q.col(score).cast("double")
        lo_col, i_col = temp_name("lo"), temp_name("i")
        df = df.withColumn(lo_col, q.element_at(int_array(spark, e_off), k).column)
        lo = q.col(lo_col)
        if edges.shape[0]:
            df = with_first_not_less(df, double_array(spark, edges), edges.shape[0], lo,
                                      lo + q.element_at(int_array(spark, e_len), k), p, int(e_len.max()).bit_length(),
                                      i_col)
            below = q.col(i_col) - lo
        else:  # one bin per model: no search (dropping the absent i_col below is a no-op)
            below = q.lit(0)
        value = q.element_at(double_array(spark, values), q.element_at(int_array(spark, v_off), k) + below + 1)
        return df.withColumn(out_col, _probability_checked(p, value).column).drop(k_col, lo_col, i_col)
    modes = {m.out_of_bounds for m in models}
    dtypes = {m.X_thresholds_.dtype for m in models}
    if len(modes) != 1 or len(dtypes) != 1 or not modes <= {"nan", "clip", "raise"}:
        raise ValueError("fastcal.spark.predict applies isotonic group models of one out_of_bounds ('nan', 'clip' "
                         f"or 'raise') and one dtype, got {sorted(modes)} and {sorted(map(str, dtypes))}.")
    out_type = "float" if dtypes.pop() == np.float32 else "double"
    t = q.col(score).cast(out_type).cast("double") if out_type == "float" else q.col(score).cast("double")
    xs, off, m = _flat([mod.X_thresholds_ for mod in models])
    ys, _, _ = _flat([mod.y_thresholds_ for mod in models])
    x_knots, y_knots = double_array(df.sparkSession, xs), double_array(df.sparkSession, ys)
    a_col, size_col, tc_col, j_col = (temp_name(n) for n in ("a", "n", "t", "j"))
    df = df.withColumn(a_col, q.element_at(int_array(spark, off), k).column)  # the model's first knot (0-based, flat)
    df = df.withColumn(size_col, q.element_at(int_array(spark, m), k).column)
    a, size = q.col(a_col), q.col(size_col)
    x0, xm = q.element_at(x_knots, a + 1), q.element_at(x_knots, a + size)
    df = df.withColumn(tc_col, q.least(q.greatest(t, x0), xm).column)
    tc = q.col(tc_col)
    # j: the first knot >= t among the model's first m - 1 (never m, as t <= the last knot), clipped to 1 .. m - 1
    # as the kernel's search, counted from the model's first knot; its segment is knots j - 1 and j. In a column
    # of its own: Spark does not inline an expression this costly into the four uses below.
    df = with_first_not_less(df, x_knots, xs.shape[0], a, a + size - 1, tc, int(m.max()).bit_length(), j_col)
    df = df.withColumn(j_col, q.least(q.greatest(q.col(j_col) - a, 1), size - 1).column)
    value = _isotonic_value(t, tc, x0, xm, x_knots, y_knots, a + q.col(j_col), modes.pop(), x0.cast("string"),
                            xm.cast("string"))
    value = q.when(size == 1, q.element_at(y_knots, a + 1)).otherwise(value)
    return df.withColumn(out_col, _finite_or_raise(t, "T", value).cast(out_type).column).drop(
        a_col, size_col, tc_col, j_col, k_col)


def _check_output(df, output_col):
    if not isinstance(output_col, str):
        raise TypeError(f"output_col must be a column name (str), got {type(output_col).__name__}.")
    if output_col in df.columns:
        raise ValueError(f"output_col={output_col!r} is already a column of the DataFrame.")


def _predict_grouped(estimator, df, score_col, output_col, group_col):
    from ..grouped import GroupedCalibrator

    if not isinstance(estimator, GroupedCalibrator):
        raise TypeError(f"group_col is only for a GroupedCalibrator; {type(estimator).__name__} predicts from the "
                        "scores alone.")
    if group_col is None:
        raise TypeError("group_col is required to predict with a GroupedCalibrator: the column of each row's group.")
    if not hasattr(estimator, "global_calibrator_"):
        raise not_fitted("This GroupedCalibrator instance is not fitted yet. Call 'fit' first.")
    if not isinstance(df, DataFrame):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}.")
    spark_type = _column_type(df, score_col, "score_col")
    if not isinstance(group_col, str):
        raise TypeError(f"group_col must be a column name (str), got {type(group_col).__name__}.")
    if group_col not in df.columns:
        raise ValueError(f"group_col={group_col!r} is not a column of the DataFrame; its columns are {df.columns}.")
    _check_output(df, output_col)
    return _grouped_prediction(estimator, df, score_col, group_col, output_col, spark_type)


def predict(estimator: OneD | GroupedCalibrator, df: DataFrame, score_col: str, output_col: str, *,
            group_col: str | None = None) -> DataFrame:
    """``df`` with a column ``output_col``: the predictions of a fitted 1-D calibrator, or of a fitted
    ``GroupedCalibrator`` of them, on ``score_col``, in the JVM.

    Every column and row of ``df`` is kept (the partitioning too); the new
    column is computed by Spark SQL expressions, with no Python worker:

    - ``PlattScaling``: ``1 / (1 + exp(a s + b))`` as the kernel writes it
      (``e = exp(-|z|)``, ``d = 1 / (1 + e)``);
    - ``BetaCalibration``: the same logistic function of
      ``a log p' - b log(1 - p') + c`` with ``p'`` clipped to ``[eps, 1 - eps]``;
    - ``IsotonicRegression``: a search of the knots (a grid of SQL
      expressions where the knots are spread out, else ML's ``Bucketizer``:
      :func:`fastcal.spark.with_count_below`), then the kernel's linear interpolation
      ``y[j-1] + (t - x[j-1]) / (x[j] - x[j-1]) (y[j] - y[j-1])`` with ``j`` the
      first knot ``>= t``, and ``out_of_bounds`` applied as in memory;
    - ``HistogramBinning``: a binary search of the bin edges and the bin's value.

    A ``GroupedCalibrator`` (of the four above) needs ``group_col``, each
    row's group (refused for the others): a broadcast left join of a table
    of its groups gives each row its model's number (unseen groups: the
    global model; null and NaN: the missing group, as in memory), and the
    models' parameters are literal arrays indexed by it (Platt, beta); the
    knots or bin edges of all models are one literal array, searched by a
    binary search over the row's model's slice (a fixed number of halvings,
    each a projection of plain SQL), then interpolated as above.

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
    group_col : str, optional
        For a ``GroupedCalibrator`` (required then): the column of groups, of the type the model was fitted on.

    Returns
    -------
    pyspark.sql.DataFrame
        ``df``'s columns, then ``output_col`` (float when the model computes in
        float32: a float32 isotonic fit, or Platt and beta on a float column;
        double otherwise).
    """
    from ..beta import BetaCalibration
    from ..grouped import GroupedCalibrator
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..platt import PlattScaling

    if isinstance(estimator, GroupedCalibrator) or group_col is not None:
        return _predict_grouped(estimator, df, score_col, output_col, group_col)
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
    _check_output(df, output_col)
    if isinstance(estimator, IsotonicRegression):
        if estimator.out_of_bounds not in ("nan", "clip", "raise"):
            raise ValueError(f"out_of_bounds must be 'nan', 'clip' or 'raise', got {estimator.out_of_bounds!r}.")
        return _isotonic_prediction(estimator, df, score_col, output_col)
    if isinstance(estimator, HistogramBinning):
        return _histogram_prediction(estimator, df, score_col, output_col)
    if isinstance(estimator, PlattScaling):
        return _platt_prediction(estimator, df, score_col, output_col, spark_type)
    return _beta_prediction(estimator, df, score_col, output_col, spark_type)
