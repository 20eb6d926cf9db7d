"""Predictions in Spark SQL: :func:`predict` of a fitted 1-D calibrator, from the data of its prediction.

Each calibrator says what its ``predict`` computes as data
(``prediction_data()``: :class:`fastcal._prediction.Knots`, ``Steps`` or
``Logistic``); this module writes that computation as Spark SQL text, parsed
by ``pyspark.sql.functions.expr`` (:mod:`fastcal.spark._expr`): PySpark's
public API, so the same plan on a classic session and on Spark Connect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .._core.errors import not_fitted
from .._prediction import Knots, Logistic, Steps
from . import _expr as sql
from ._buckets import INLINE_HALVINGS, grid_counts, temp_name, with_count_below, with_first_not_less
from ._tasks import check_output, column_type

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import TypeAlias

    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..grouped import GroupedCalibrator
    from ..multicalibration import MulticalibrationCalibrator
    from ..platt import PlattScaling

    #: The fitted 1-D calibrators :func:`predict` applies.
    OneD: TypeAlias = IsotonicRegression | PlattScaling | BetaCalibration | HistogramBinning

_INF = sql.double(np.inf)


def _as_double(name: str, float32: bool) -> str:
    """The column ``name`` as a double, through a float first where the model computes in float32."""
    col = sql.ident(name)
    return f"CAST(CAST({col} AS FLOAT) AS DOUBLE)" if float32 else f"CAST({col} AS DOUBLE)"


def _with(df, out, text):
    return df.withColumn(out, F.expr(text))


def _finish(df, columns, out, text):
    """``df``'s ``columns`` (the caller's, before its temporary ones) and the new column ``out``: one projection
    where the names are distinct (each step is one more analysis of the plan on a classic session), else
    ``withColumn`` and a ``drop`` of the rest."""
    if len(set(columns)) == len(columns):
        return df.select(*(F.col(sql.ident(c)) for c in columns), F.expr(text).alias(out))
    return _with(df, out, text).drop(*(c for c in df.columns if c not in columns))


def _finite_or_raise(t: str, name: str, value: str) -> str:
    """``value``, or a run-time error (the in-memory message) where ``t`` is NaN or infinite; nulls stay null."""
    nan = sql.string(f"{name} must be finite, but contains NaN.")
    inf = sql.string(f"{name} must be finite, but contains infinity.")
    return (f"CASE WHEN {t} IS NULL THEN NULL WHEN NOT (abs({t}) < {_INF}) "  # one test if finite
            f"THEN (CASE WHEN isnan({t}) THEN raise_error({nan}) ELSE raise_error({inf}) END) ELSE {value} END")


def _probability_checked(p: str, value: str) -> str:
    """``value``, null for a null ``p``, or the in-memory error where ``p`` is NaN or outside [0, 1]."""
    return (f"CASE WHEN {p} IS NULL THEN NULL "
            f"WHEN isnan({p}) THEN raise_error({sql.string('p must be finite, but contains NaN.')}) "
            f"WHEN {p} < 0.0D OR {p} > 1.0D THEN raise_error({sql.string('p must contain probabilities in [0, 1].')}) "
            f"ELSE {value} END")


def _knots_value(t, tc, x0, xm, x_lo, x_hi, y_lo, y_hi, mode, x0_text, xm_text):
    """The interpolation at ``t`` (``tc``: ``t`` clipped to ``[x0, xm]``) on the segment of knots ``(x_lo, y_lo)``
    and ``(x_hi, y_hi)`` (SQL texts), with ``out_of_bounds`` ``mode``; SQL text."""
    inside = f"({y_lo} + ({tc} - {x_lo}) / ({x_hi} - {x_lo}) * ({y_hi} - {y_lo}))"
    if mode == "clip":
        return inside
    if mode == "nan":
        return f"CASE WHEN {t} < {x0} OR {t} > {xm} THEN {sql.double(np.nan)} ELSE {inside} END"
    def message(side, bound, bound_text):
        return (f"concat({sql.string('A value (')}, CAST({t} AS STRING), "
                f"{sql.string(f') in x_new is {side} the interpolation range' + chr(39) + f's {bound} value (')}, "
                f"{bound_text}, {sql.string('). x_new: the argument T.')})")

    below, above = message("below", "minimum", x0_text), message("above", "maximum", xm_text)
    return (f"CASE WHEN {t} < {x0} THEN raise_error({below}) WHEN {t} > {xm} THEN raise_error({above}) "
            f"ELSE {inside} END")


def _knot_table(xs, ys):
    """The isotonic prediction's search, as data: ``(flat, cells, steps, grid)``. ``flat`` is one float64 array:
    the grid's counts (``cells`` values, none where :func:`fastcal.spark._buckets.grid_counts` gives no ``grid``),
    then the knots ``x[0], y[0], x[1], y[1], ...``, padded with ``2^steps - 1`` copies of the last knot (never
    ``<`` a clipped score) so that every halving's probe lies inside; ``steps`` halvings find the knots ``< t``
    within a cell (within all of them without a grid)."""
    a = xs[:-1]
    grid = grid_counts(a)
    if grid is None:
        counts, steps = np.zeros(0), int(a.shape[0]).bit_length()
    else:
        counts, steps = grid[2].astype(np.float64), grid[3].bit_length()
    pad = (1 << steps) - 1
    xy = np.empty(2 * (xs.shape[0] + pad))
    xy[0::2] = np.concatenate([xs, np.full(pad, xs[-1])])
    xy[1::2] = np.concatenate([ys, np.full(pad, ys[-1])])
    return np.concatenate([counts, xy]), counts.shape[0], steps, grid


def _knots_prediction(data: Knots, df, score, out_col):
    xs, ys = data.x.astype(np.float64), data.y.astype(np.float64)
    float32 = data.dtype == np.float32
    out_type = "FLOAT" if float32 else "DOUBLE"
    t = _as_double(score, float32)
    m = xs.shape[0]
    if m == 1:
        return _with(df, out_col, f"CAST({_finite_or_raise(t, 'T', sql.double(ys[0]))} AS {out_type})")
    x0, xm = sql.double(xs[0]), sql.double(xs[-1])
    # Every number the search and the interpolation read is in one array of doubles, the value of a scalar subquery
    # on a one-row table: Spark runs it once on the driver (no job) and each task reads that one array in place (a
    # literal array of the plan would be a boxed copy in every place it is written).
    flat, cells, steps, grid = _knot_table(xs, ys)
    a_col, c_col, j_col = (temp_name(n) for n in ("a", "c", "j"))
    a, c, j = (sql.ident(n) for n in (a_col, c_col, j_col))
    table = df.sparkSession.sql(f"SELECT {sql.array(flat)} AS a FROM VALUES (0) AS t(i)")
    tc = f"least(greatest({t}, {x0}), {xm})"  # t clipped to the knots: inline, cheaper than a projection

    def x_at(i):  # the knot x[i] (get counts from 0)
        return f"get({a}, 2 * ({i}) + {cells})"

    # j: the number of knots < t among the first m - 1 (a cell's count below it from the grid, then the halvings
    # within the cell: i += 2^k while x[i + 2^k - 1] < t), clipped to 1 .. m - 1 as the kernel's search; its segment
    # is knots j - 1 and j. In a column of its own: Spark does not inline it into the four uses below. Few
    # projections: each is one more analysis of the plan on a classic session (three here: a, j, the result).
    if grid is None:
        count = "0"
    else:
        count = (f"CAST(get({a}, CAST(floor(least(greatest(({tc} - {sql.double(grid[0])}) * {sql.double(grid[1])}, "
                 f"0.0D), {sql.double(cells - 2)})) AS INT)) AS INT)")
    columns = df.columns
    df = df.select("*", table.scalar().alias(a_col))
    if steps > INLINE_HALVINGS:  # a projection a halving (the text would double with each one inline)
        df, count = _with(df, c_col, count), c
        for k in reversed(range(steps)):
            df = _with(df, c_col, f"{c} + CAST({x_at(f'{c} + {(1 << k) - 1}')} < {tc} AS INT) * {1 << k}")
    else:
        for k in reversed(range(steps)):  # the codegen computes the repeated parts once
            count = f"({count} + CAST({x_at(f'{count} + {(1 << k) - 1}')} < {tc} AS INT) * {1 << k})"
    df = _with(df, j_col, f"least(greatest({count}, 1), {m - 1})")
    x_lo, y_lo, x_hi, y_hi = (f"get({a}, 2 * {j} + {cells + d})" for d in (-2, -1, 0, 1))
    value = _knots_value(t, tc, x0, xm, x_lo, x_hi, y_lo, y_hi, data.out_of_bounds, sql.string(f"{data.x[0]}"),
                         sql.string(f"{data.x[-1]}"))
    return _finish(df, columns, out_col, f"CAST({_finite_or_raise(t, 'T', value)} AS {out_type})")


def _steps_prediction(data: Steps, df, score, out_col):
    p = _as_double(score, False)
    if data.edges.shape[0] == 0:
        return _with(df, out_col, _probability_checked(p, sql.double(data.values[0])))
    # values[i], i = the number of edges < p (searchsorted, side="left"), i.e. the repeated edges counted in full
    # below the number k of distinct ones < p.
    distinct, counts = np.unique(data.edges, return_counts=True)
    b_col = temp_name("b")
    columns = df.columns
    df = with_count_below(df, p, distinct, b_col)
    by_k = data.values[np.concatenate([[0], np.cumsum(counts)])]
    value = f"element_at({sql.array(by_k)}, {sql.ident(b_col)} + 1)"
    return _finish(df, columns, out_col, _probability_checked(p, value))


def _logistic_value(coef, intercept, features, x, eps):
    """The logistic function of ``coef[0] f[0] + ... + intercept`` (SQL texts) as the kernels compute it."""
    pc = f"least(greatest({x}, {sql.double(eps)}), {sql.double(1.0 - eps)})"
    feature = {"x": x, "log_p": f"ln({pc})", "log_1mp": f"ln(1.0D - {pc})"}
    u = f"({coef[0]} * {feature[features[0]]})"
    for c, f in zip(coef[1:], features[1:]):
        u = f"({u} + {c} * {feature[f]})"
    u = f"({u} + {intercept})"
    e = f"exp(-abs({u}))"
    d = f"(1.0D / (1.0D + {e}))"
    return f"CASE WHEN {u} >= 0.0D THEN {d} ELSE {e} * {d} END"


def _logistic_prediction(data: Logistic, df, score, out_col, spark_type, params=None):
    is32 = isinstance(spark_type, T.FloatType)
    eps = float(np.finfo(np.float32 if is32 else np.float64).eps)
    x = _as_double(score, False)
    coef, intercept = params if params is not None else (tuple(map(sql.double, data.coef)), sql.double(data.intercept))
    value = _logistic_value(coef, intercept, data.features, x, eps)
    checked = _finite_or_raise(x, "scores", value) if data.domain == "finite" else _probability_checked(x, value)
    return _with(df, out_col, f"CAST({checked} AS {'FLOAT' if is32 else 'DOUBLE'})")


def _prediction(data, df, score, out_col, spark_type):
    if isinstance(data, Knots):
        return _knots_prediction(data, df, score, out_col)
    if isinstance(data, Steps):
        return _steps_prediction(data, df, score, out_col)
    return _logistic_prediction(data, df, score, out_col, spark_type)


# ---------------------------------------------------------------------------
# A GroupedCalibrator: each row's model number by a broadcast join, the models' parameters in literal arrays.
# ---------------------------------------------------------------------------


def _python_value(value):
    return value.item() if isinstance(value, np.generic) else value


def _is_missing(value):
    return value is None or (isinstance(value, float) and value != value)


def _with_model_number(df, group_col, groups, out, label=None):
    """``df`` with an int column ``out``: the number of each row's group among ``groups`` (a model's
    ``groups_``), or ``len(groups)`` (the global model) for an unseen group. Null and NaN are the missing group
    (``None`` or NaN in ``groups``), as in memory. One broadcast left join on a table of the groups: every row
    and column of ``df`` kept. ``label``: how errors name the column and the values (default ``group_col=...``
    and "groups")."""
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
        column, what = (f"group_col={group_col!r}", "groups") if label is None else label
        raise TypeError(f"{column} is a {spark_type.simpleString()} column, but the model's {what} are "
                        f"{sorted({type(v).__name__ for v, _ in present})}: {exc}") from None
    joined = df.join(F.broadcast(table), df[group_col] == table[key], "left").drop(key)
    return joined.withColumn(out, F.coalesce(F.col(number), fallback.cast("int"))).drop(number)


def _with_tuple_model_number(df, group_cols, groups, out):
    """:func:`_with_model_number` of several group columns, ``groups`` tuples of their values (a model fitted
    on several columns): one broadcast left join on a table of the tuples, by null-safe equality on every
    column, with null and NaN (in a float column) both the missing value (``None`` in a tuple)."""
    keys = [temp_name("k") for _ in group_cols]
    number = temp_name("n")
    types = [df.schema[c].dataType for c in group_cols]
    rows = []
    for i, g in enumerate(groups):
        if not isinstance(g, tuple) or len(g) != len(group_cols):
            raise TypeError(f"group_col names {len(group_cols)} columns, but the model's groups are not tuples of "
                            f"{len(group_cols)} values (e.g. {g!r}): give the columns the model was fitted on.")
        rows.append((*(None if _is_missing(v) else v for v in map(_python_value, g)), i))
    schema = T.StructType([*(T.StructField(k, t) for k, t in zip(keys, types)),
                           T.StructField(number, T.IntegerType())])
    try:
        table = df.sparkSession.createDataFrame(rows, schema)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"group_col={list(group_cols)!r} are {[t.simpleString() for t in types]} columns, but "
                        f"the model's groups do not fit them: {exc}") from None

    def value(c, t):  # NaN in a float column: missing, as null
        col = F.col(c)
        return F.when(F.isnan(col), F.lit(None)).otherwise(col) if isinstance(t, (T.FloatType, T.DoubleType)) else col

    condition = None
    for c, t, k in zip(group_cols, types, keys):
        term = value(c, t).eqNullSafe(table[k])
        condition = term if condition is None else condition & term
    joined = df.join(F.broadcast(table), condition, "left").drop(*keys)
    return joined.withColumn(out, F.coalesce(F.col(number), F.lit(len(groups)))).drop(number)


def _flat(arrays):
    """One literal array of ``arrays`` laid end to end, and each one's offset (0-based) and length."""
    lengths = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    flat = np.concatenate(arrays).astype(np.float64) if arrays else np.zeros(0)
    return flat, offsets, lengths


def _grouped_prediction(est, df, score, group_col, out_col, spark_type):
    models = [*est.calibrators_, est.global_calibrator_]
    if not all(callable(getattr(m, "prediction_data", None)) for m in models):
        raise TypeError("fastcal.spark.predict applies a GroupedCalibrator of IsotonicRegression, PlattScaling, "
                        f"BetaCalibration or HistogramBinning models, got {sorted({type(m).__name__ for m in models})}.")
    data = [m.prediction_data() for m in models]
    shapes = {(type(d), d.features, d.domain) if isinstance(d, Logistic) else type(d) for d in data}
    if len(shapes) != 1:
        raise TypeError("fastcal.spark.predict applies a GroupedCalibrator of IsotonicRegression, PlattScaling, "
                        "BetaCalibration or HistogramBinning models of one kind, got "
                        f"{sorted({type(m).__name__ for m in models})}.")
    k_col = temp_name("m")
    if isinstance(group_col, list):
        df = _with_tuple_model_number(df, group_col, est.groups_, k_col)
    else:
        df = _with_model_number(df, group_col, est.groups_, k_col)
    k = f"({sql.ident(k_col)} + 1)"  # element_at counts from 1

    def per_model(values, ints=False):
        return f"element_at({sql.array(np.asarray(values, dtype=np.int32 if ints else np.float64))}, {k})"

    first = data[0]
    if isinstance(first, Logistic):
        coef = tuple(per_model([d.coef[i] for d in data]) for i in range(len(first.coef)))
        params = (coef, per_model([d.intercept for d in data]))
        return _logistic_prediction(first, df, score, out_col, spark_type, params).drop(k_col)
    if isinstance(first, Steps):
        edges, e_off, e_len = _flat([d.edges for d in data])
        values, v_off, _ = _flat([d.values for d in data])
        p = _as_double(score, False)
        lo_col, i_col = temp_name("lo"), temp_name("i")
        df = _with(df, lo_col, per_model(e_off, ints=True))
        lo = sql.ident(lo_col)
        if edges.shape[0]:
            df = with_first_not_less(df, sql.array(edges), edges.shape[0], lo, f"({lo} + {per_model(e_len, True)})",
                                     p, int(e_len.max()).bit_length(), i_col)
            below = f"({sql.ident(i_col)} - {lo})"
        else:  # one bin per model: no search (dropping the absent i_col below is a no-op)
            below = "0"
        value = f"element_at({sql.array(values)}, {per_model(v_off, True)} + {below} + 1)"
        return _with(df, out_col, _probability_checked(p, value)).drop(k_col, lo_col, i_col)
    modes = {d.out_of_bounds for d in data}
    dtypes = {d.dtype for d in data}
    if len(modes) != 1 or len(dtypes) != 1 or not modes <= {"nan", "clip", "raise"}:
        raise ValueError("fastcal.spark.predict applies isotonic group models of one out_of_bounds ('nan', 'clip' "
                         f"or 'raise') and one dtype, got {sorted(modes)} and {sorted(map(str, dtypes))}.")
    float32 = dtypes.pop() == np.float32
    out_type = "FLOAT" if float32 else "DOUBLE"
    t = _as_double(score, float32)
    xs, off, m = _flat([d.x for d in data])
    ys, _, _ = _flat([d.y for d in data])
    x_knots, y_knots = sql.array(xs), sql.array(ys)
    a_col, size_col, tc_col, j_col = (temp_name(n) for n in ("a", "n", "t", "j"))
    df = _with(df, a_col, per_model(off, ints=True))  # the model's first knot (0-based, flat)
    df = _with(df, size_col, per_model(m, ints=True))
    a, size, tc, j = (sql.ident(c) for c in (a_col, size_col, tc_col, j_col))
    x0, xm = f"element_at({x_knots}, {a} + 1)", f"element_at({x_knots}, {a} + {size})"
    df = _with(df, tc_col, f"least(greatest({t}, {x0}), {xm})")
    # j: the first knot >= t among the model's first m - 1 (never m, as t <= the last knot), clipped to 1 .. m - 1
    # as the kernel's search, counted from the model's first knot; its segment is knots j - 1 and j. In a column
    # of its own: Spark does not inline an expression this costly into the four uses below.
    df = with_first_not_less(df, x_knots, xs.shape[0], a, f"({a} + {size} - 1)", tc, int(m.max()).bit_length(),
                             j_col)
    df = _with(df, j_col, f"least(greatest({j} - {a}, 1), {size} - 1)")
    seg = f"({a} + {j})"  # element_at counts from 1: knots seg - 1 and seg (0-based)
    value = _knots_value(t, tc, x0, xm, f"element_at({x_knots}, {seg})", f"element_at({x_knots}, {seg} + 1)",
                         f"element_at({y_knots}, {seg})", f"element_at({y_knots}, {seg} + 1)", modes.pop(),
                         f"CAST({x0} AS STRING)", f"CAST({xm} AS STRING)")
    value = f"CASE WHEN {size} = 1 THEN element_at({y_knots}, {a} + 1) ELSE {value} END"
    return _with(df, out_col, f"CAST({_finite_or_raise(t, 'T', value)} AS {out_type})").drop(
        a_col, size_col, tc_col, j_col, k_col)

# ---------------------------------------------------------------------------
# A MulticalibrationCalibrator: each feature's digit (a broadcast join of its values, or the bin of a number), the
# score's bucket, the row's segments of each term from a literal map, their offsets added in the in-memory order.
# ---------------------------------------------------------------------------


def _bin_number(x: str, edges, missing=None) -> str:
    """SQL: the bin of the double ``x`` among ``edges`` as :class:`fastcal._prediction.SegmentFeature` says
    (``min(max(b - 1, 0), m - 2)``, ``b`` the edges ``< x``; ``missing``, by default ``m``, for NaN and null)."""
    m = edges.shape[0]
    below = " + ".join(f"CAST({sql.double(e)} < {x} AS INT)" for e in edges.tolist())
    return (f"CASE WHEN {x} IS NULL OR isnan({x}) THEN {m if missing is None else missing} "
            f"ELSE least(greatest(({below}) - 1, 0), {m - 2}) END")


def _with_digits(df, data, columns):
    """``df`` with an int column per feature of ``data`` (their names returned): the row's digit, -1 for none."""
    names, exprs = [], []
    for f, (feature, column) in enumerate(zip(data.features, columns)):
        col = sql.ident(column)
        if feature.numerical and feature.edges.shape[0]:
            lut = np.full(feature.edges.shape[0] + 1, -1, dtype=np.int32)
            lut[np.asarray(feature.values, dtype=np.int64)] = feature.digits
            number = _bin_number(f"CAST({col} AS DOUBLE)", feature.edges)
        else:
            if feature.numerical:  # looked up as float64, as in memory
                as_double = temp_name("x")
                df = _with(df, as_double, f"CAST({col} AS DOUBLE)")
                column = as_double
            index = temp_name("i")
            df = _with_model_number(df, column, feature.values, index,
                                    label=(f"segment column {feature.name!r}", "values"))
            lut = np.append(feature.digits, -1).astype(np.int32)
            number = sql.ident(index)
        names.append(temp_name(f"d{f}"))
        exprs.append(F.expr(f"element_at({sql.array(lut)}, {number} + 1)").alias(names[-1]))
    return df.select("*", *exprs), names


def _segment_prediction(data, df, score, columns, out_col, spark_type):
    """``df`` with ``out_col``: :class:`fastcal._prediction.SegmentOffsets` ``data`` of the scores ``score`` and the
    segment ``columns`` (one per feature of ``data``)."""
    keep = list(df.columns)
    is32 = isinstance(spark_type, T.FloatType)
    p = _as_double(score, False)
    df, digits = _with_digits(df, data, columns)
    n_b = max(data.bucket_edges.shape[0] - 1, 1)
    k_col = temp_name("k")
    # a null or NaN score has no bucket (its result is null, or an error): bucket 0 keeps the lookups in range
    bucket = _bin_number(p, data.bucket_edges, 0) if data.bucket_edges.shape[0] >= 2 else "0"
    places = [temp_name(f"t{j}") for j in range(len(data.terms))]
    exprs = [F.expr(bucket).alias(k_col)]
    for term, place in zip(data.terms, places):
        ds = [sql.ident(digits[f]) for f in term.features]
        present = " AND ".join(f"{d} >= 0" for d in ds)
        key = " + ".join(f"CAST({d} AS BIGINT) * {m}" for d, m in zip(ds, term.mult))
        places_of = np.arange(1, term.keys.shape[0] + 1, dtype=np.int32)
        lookup = f"map_from_arrays({sql.array(term.keys)}, {sql.array(places_of)})"
        exprs.append(F.expr(f"CASE WHEN {present} THEN try_element_at({lookup}, {key}) END").alias(place))
    df = df.select("*", *exprs)
    k = sql.ident(k_col)
    acc = f"({sql.double(data.base_own)} + element_at({sql.array(data.base_by_bucket)}, {k} + 1))"
    for term, place in zip(data.terms, places):
        t = sql.ident(place)
        acc = (f"(({acc} + coalesce(element_at({sql.array(term.own)}, {t}), 0.0D)) + "
               f"coalesce(element_at({sql.array(term.by_bucket.ravel())}, ({t} - 1) * {n_b} + {k} + 1), 0.0D))")
    v = f"least(greatest({p}, {sql.double(data.eps)}), {sql.double(1.0 - data.eps)})"
    z_col = temp_name("z")
    df = _with(df, z_col, f"{sql.double(data.slope)} * (ln({v}) - log1p(-{v})) + {acc}")
    z = sql.ident(z_col)
    e = f"exp(-abs({z}))"
    value = f"CASE WHEN {z} >= 0.0D THEN 1.0D / (1.0D + {e}) ELSE {e} / (1.0D + {e}) END"
    checked = (f"CASE WHEN {p} IS NULL THEN NULL "
               f"WHEN isnan({p}) THEN raise_error({sql.string('scores must be finite, but contains NaN.')}) "
               f"WHEN {p} < 0.0D OR {p} > 1.0D THEN "
               f"raise_error({sql.string('scores has values outside [0, 1]; it must hold probabilities.')}) "
               f"ELSE {value} END")
    return _finish(df, keep, out_col, f"CAST({checked} AS {'FLOAT' if is32 else 'DOUBLE'})")


def _predict_segments(estimator, df, score_col, output_col, segment_cols):
    from ..multicalibration import MulticalibrationCalibrator

    if not isinstance(estimator, MulticalibrationCalibrator):
        raise TypeError(f"segment_cols is only for a MulticalibrationCalibrator; {type(estimator).__name__} does "
                        "not take segment features.")
    data = estimator.prediction_data()  # NotFittedError if not fitted
    spark_type = column_type(df, score_col, "score_col")
    names = [f.name for f in data.features]
    if segment_cols is None:
        segment_cols = {}
    if not hasattr(segment_cols, "items"):
        raise TypeError(f"segment_cols must be a mapping of the model's feature names to column names, got "
                        f"{type(segment_cols).__name__}.")
    unknown = [name for name in segment_cols if name not in names]
    if unknown:
        raise ValueError(f"segment_cols names {unknown}, which are not features of the model ({names}).")
    columns = [segment_cols.get(name, name) for name in names]
    for name, column in zip(names, columns):
        if not isinstance(column, str):
            raise TypeError(f"segment_cols[{name!r}] must be a column name (str), got {type(column).__name__}.")
        if column not in df.columns:
            raise ValueError(f"the model's feature {name!r} needs the column {column!r}, which is not a column of the "
                             f"DataFrame; its columns are {df.columns} (segment_cols maps features to columns).")
    check_output(df, output_col)
    return _segment_prediction(data, df, score_col, columns, output_col, spark_type)


def _predict_grouped(estimator, df, score_col, output_col, group_col):
    from ..grouped import GroupedCalibrator

    if not isinstance(estimator, GroupedCalibrator):
        raise TypeError(f"group_col is only for a GroupedCalibrator; {type(estimator).__name__} predicts from the "
                        "scores alone.")
    if group_col is None:
        raise TypeError("group_col is required to predict with a GroupedCalibrator: the column of each row's group.")
    if not hasattr(estimator, "global_calibrator_"):
        raise not_fitted("This GroupedCalibrator instance is not fitted yet. Call 'fit' first.")
    spark_type = column_type(df, score_col, "score_col")
    if isinstance(group_col, (list, tuple)):  # several columns: each row's group the tuple of its values
        if not group_col:
            raise ValueError("group_col must name at least one column, got none.")
        for j, name in enumerate(group_col):
            if not isinstance(name, str):
                raise TypeError(f"group_col[{j}] must be a column name (str), got {type(name).__name__}.")
            if name not in df.columns:
                raise ValueError(f"group_col[{j}]={name!r} is not a column of the DataFrame; its columns are "
                                 f"{df.columns}.")
        group_col = list(group_col) if len(group_col) > 1 else group_col[0]
    if not isinstance(group_col, (str, list)):
        raise TypeError(f"group_col must be a column name (str), got {type(group_col).__name__}.")
    if isinstance(group_col, str) and group_col not in df.columns:
        raise ValueError(f"group_col={group_col!r} is not a column of the DataFrame; its columns are {df.columns}.")
    check_output(df, output_col)
    return _grouped_prediction(estimator, df, score_col, group_col, output_col, spark_type)


def predict(estimator: OneD | GroupedCalibrator | MulticalibrationCalibrator, df: DataFrame, score_col: str,
            output_col: str, *, group_col: str | Sequence[str] | None = None,
            segment_cols: Mapping[str, str] | None = None) -> DataFrame:
    """``df`` with a column ``output_col``: the predictions of a fitted 1-D calibrator, of a fitted
    ``GroupedCalibrator`` of them, or of a fitted ``MulticalibrationCalibrator``, on ``score_col``, in Spark SQL.

    Every column and row of ``df`` is kept (the partitioning too); the new
    column is computed by Spark SQL expressions, with no Python worker,
    written from the model's ``prediction_data()`` and built with PySpark's
    public functions, so the same on a classic session and on Spark Connect:

    - ``PlattScaling``: ``1 / (1 + exp(a s + b))`` as the kernel writes it
      (``e = exp(-|z|)``, ``d = 1 / (1 + e)``);
    - ``BetaCalibration``: the same logistic function of
      ``a log p' - b log(1 - p') + c`` with ``p'`` clipped to ``[eps, 1 - eps]``;
    - ``IsotonicRegression``: a search of the knots (a grid of ``4 m`` equal
      cells over the knots, the count of knots below each cell, then a
      binary search within the cell), then the kernel's linear interpolation
      ``y[j-1] + (t - x[j-1]) / (x[j] - x[j-1]) (y[j] - y[j-1])`` with ``j`` the
      first knot ``>= t``, and ``out_of_bounds`` applied as in memory; the
      counts and the knots are one array of doubles, the value of a scalar
      subquery on a one-row table (run once on the driver, no job), which
      every task reads in place;
    - ``HistogramBinning``: the same search of the bin edges (from literal
      arrays), and the bin's value.

    A ``GroupedCalibrator`` (of the four above) needs ``group_col``, each
    row's group (refused for the others): a broadcast left join of a table
    of its groups gives each row its model's number (unseen groups: the
    global model; null and NaN: the missing group, as in memory), and the
    models' parameters are literal arrays indexed by it (Platt, beta); the
    knots or bin edges of all models are one literal array, searched by a
    binary search over the row's model's slice (a fixed number of halvings,
    each a projection of plain SQL), then interpolated as above.

    A ``MulticalibrationCalibrator`` reads its segment features from the
    columns of the same names (``segment_cols`` maps a feature to another
    column): each feature's digit by a broadcast left join of a table of its
    values (null and NaN the missing value; an unseen value none), or, for a
    binned numerical feature, by counting the bin edges below the value; the
    score's bucket likewise; each combination of features with an offset
    finds the row's segment in a literal map of its keys; the offsets are
    added in the order of the in-memory ``predict``
    (``fastcal._prediction.SegmentOffsets``), and the logistic function of
    the scaled logit plus their sum is computed as the kernel does. Only the
    segments with an offset are in the plan.

    The results equal ``estimator.predict`` on the collected column bit for
    bit for the isotonic and histogram models (the same comparisons and the
    same IEEE float64 operations; float32 fits give a float column); for
    Platt and beta within an ulp or two, from the ``exp`` and ``log`` of the
    JVM (``StrictMath``, within 1 ulp) against fastcal's own (within 1.1 and 2
    ulp); for a ``MulticalibrationCalibrator``, the same offsets bit for bit
    and the result within the rounding of those functions (a few ulp, more
    where a large slope scales the logit's). Scores are checked as in memory, lazily: a NaN or infinite score,
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
        For a ``GroupedCalibrator`` (required then): the column of groups, of the type the model was fitted on;
        a list of column names for a model fitted on several (its groups tuples of their values: a broadcast
        join on every column, null and NaN the missing value).
    segment_cols : mapping of str to str, optional
        For a ``MulticalibrationCalibrator``: the column of each of its features whose column has another name
        (by default, each feature's column has its name).

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

    from ..multicalibration import MulticalibrationCalibrator

    if group_col is not None and segment_cols is not None:
        raise TypeError("give group_col (a GroupedCalibrator) or segment_cols (a MulticalibrationCalibrator), not "
                        "both.")
    if isinstance(estimator, MulticalibrationCalibrator) or segment_cols is not None:
        if group_col is not None:
            raise TypeError("group_col is only for a GroupedCalibrator; a MulticalibrationCalibrator reads the "
                            "columns of its features (segment_cols).")
        return _predict_segments(estimator, df, score_col, output_col, segment_cols)
    if isinstance(estimator, GroupedCalibrator) or group_col is not None:
        return _predict_grouped(estimator, df, score_col, output_col, group_col)
    if not isinstance(estimator, (IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning)):
        raise TypeError("estimator must be a fitted IsotonicRegression, PlattScaling, BetaCalibration or "
                        f"HistogramBinning, got {type(estimator).__name__}.")
    if isinstance(estimator, IsotonicRegression) and estimator.out_of_bounds not in ("nan", "clip", "raise"):
        raise ValueError(f"out_of_bounds must be 'nan', 'clip' or 'raise', got {estimator.out_of_bounds!r}.")
    data = estimator.prediction_data()  # NotFittedError if not fitted
    spark_type = column_type(df, score_col, "score_col")
    check_output(df, output_col)
    return _prediction(data, df, score_col, output_col, spark_type)
