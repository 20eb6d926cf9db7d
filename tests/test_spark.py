"""fastcal.spark on a local[2] SparkSession: the Rows adapter, predictions in the JVM, fits and diagnostics.

Oracles: :class:`fastcal._engine.ListRows` (the reference adapter) on the
partitions Spark holds (read independently with ``rdd.glom()``) for
:class:`fastcal.spark.SparkRows`; the in-memory ``predict``, fits and
diagnostics on the collected columns for the rest. Data is made in the JVM
(``spark.range`` and ``rand``) or from crafted arrays. The session is started
once; the tests skip only when no Java runtime is installed (pyspark itself is
a test dependency: a missing one fails).
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import pyspark  # noqa: F401 - the spark extra is a test dependency: a missing one fails, never skips
from pyspark.sql import functions as F

import fastcal
import fastcal.spark as fs
from fastcal import BetaCalibration, HistogramBinning, IsotonicRegression, PlattScaling
from fastcal._engine import ListRows

from ._spark_helpers import frame
from ._spark_helpers import persisted_rdds

pytestmark = [
    # pyspark's own notice about pandas 3 (installed for other tests), raised by mapInArrow's version check.
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    # A JVM and Python workers: `make test` runs these once (about 2 minutes), not again on one thread; each task
    # runs fastcal on spark.task.cpus threads whatever NUMBA_NUM_THREADS says, and the engine's tests cover threads.
    pytest.mark.slow,
]


def _from_arrays(spark, parts=2, **columns):
    """A DataFrame of NumPy columns (small), in ``parts`` partitions cut by row order."""
    import pyarrow as pa

    df = spark.createDataFrame(pa.table({k: pa.array(v) for k, v in columns.items()}))
    return df.repartition(parts) if parts > 1 else df.coalesce(1)


def _collect(df, *cols):
    table = df.select(*cols).toArrow()
    return [table.column(c).to_numpy() for c in cols]


def _glom(rows):
    """The chunks SparkRows holds, read with the RDD API (no mapInArrow), as ListRows chunks."""
    parts = rows.dataframe.rdd.glom().collect()
    chunks = []
    for part in parts:
        cols, i = [], 0
        for name, dtype in zip(rows.columns, rows.dtypes):
            if name is None:
                cols.append(None)
            else:
                cols.append(np.array([r[i] for r in part], dtype=dtype))
                i += 1
        chunks.append(tuple(cols))
    return chunks


def _rows_multiset(chunk):
    cols = [c for c in chunk if c is not None]
    if not cols or cols[0].shape[0] == 0:
        return []
    return sorted(zip(*[c.tolist() for c in cols]))


def _ulps(a, b):
    """Distance in units in the last place between two float arrays of one dtype (0 where both are NaN)."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype
    it = np.int64 if a.dtype == np.float64 else np.int32
    ia, ib = a.view(it).astype(np.int64), b.view(it).astype(np.int64)
    sign = np.int64(1) << (63 if a.dtype == np.float64 else 31)
    ia = np.where(ia < 0, -(ia + sign) if a.dtype == np.float64 else -(ia + sign), ia)
    ib = np.where(ib < 0, -(ib + sign) if b.dtype == np.float64 else -(ib + sign), ib)
    d = np.abs(ia - ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


# ---------------------------------------------------------------------------
# SparkRows against ListRows.
# ---------------------------------------------------------------------------


def test_map_runs_on_every_partition_in_order(spark):
    df = frame(spark, 5000, 4).where("id % 7 != 3")
    rows = fs.SparkRows.from_columns(df, ("s", "y", None), ("score_col", "label_col", "weight_col"))
    ref = ListRows(_glom(rows))
    assert len(ref.chunks) == 4

    def summary(chunk, scale):
        s, y, w = chunk
        assert w is None
        return (s.dtype.str, y.dtype.str, s.shape[0], float(np.sum(s * scale)), int(y.sum()), _rows_multiset(chunk))

    got, want = rows.map(summary, 2.0), ref.map(summary, 2.0)
    assert got == want
    assert [g[:2] for g in got] == [("<f8", "<i4")] * 4
    assert sum(g[2] for g in got) == df.count()


def _chunks_by_partition_id(rows, n):
    """The ``n`` chunks SparkRows holds, read in the JVM with ``spark_partition_id`` (no RDD: Spark Connect has
    none), as ListRows chunks."""
    names = [c for c in rows.columns if c is not None]
    table = rows.dataframe.select(F.spark_partition_id().alias("__pid"), *names).toArrow()
    pid = table.column("__pid").to_numpy()
    chunks = []
    for j in range(n):
        cols = iter([table.column(c).to_numpy()[pid == j].astype(d) for c, d in zip(rows.columns, rows.dtypes)
                     if c is not None])
        chunks.append(tuple(None if c is None else next(cols) for c in rows.columns))
    return chunks


def test_rows_map_and_convert_on_classic_and_connect_sessions(spark, session):
    # SparkRows reads no SparkContext and no RDD: the same chunks, results and facts on both kinds of session.
    from fastcal.spark._rows import default_parallelism, leaf_parallelism

    df = frame(session, 5000, 4).where("id % 7 != 3")
    rows = fs.SparkRows.from_columns(df, ("s", "y", "w"), ("score_col", "label_col", "weight_col"))
    ref = ListRows(_chunks_by_partition_id(rows, 4))
    assert rows.parallelism == default_parallelism(session) == spark.sparkContext.defaultParallelism == 2
    # without spark.default.parallelism: the partitions of a range, the leaf nodes' default
    assert leaf_parallelism(session) == spark.sparkContext.defaultParallelism

    def summary(chunk, scale):
        s, y, w = chunk
        return (s.dtype.str, y.dtype.str, s.shape[0], float(np.sum(s * scale)), int(y.sum()), _rows_multiset(chunk))

    got = rows.map(summary, 2.0)
    assert got == ref.map(summary, 2.0)
    assert sum(g[2] for g in got) == df.count() and all(g[2] > 0 for g in got)
    held = persisted_rdds(spark)  # one JVM behind both sessions: the same cache
    conv, facts = rows.convert(_narrow, np.float32)
    try:
        ref_conv, ref_facts = ref.convert(_narrow, np.float32)
        assert facts == ref_facts and conv.cached
        assert conv.map(_rows_multiset) == ref_conv.map(_rows_multiset)
    finally:
        conv.release()
    assert persisted_rdds(spark) == held
    # the describe of the engine's drivers: rows, chunks (up to the last partition that holds rows), the largest weight
    w = _collect(df, "w")[0]
    n, chunks, sample, most = rows.describe(0, 1000, 2)
    assert (n, chunks, most) == (w.shape[0], 4, float(w.max())) and sample.shape[0] > 0
    assert rows.describe(0, 10)[1] == 4
    head = fs.SparkRows.from_columns(frame(session, 2000, 4).where("id < 900"), ("s", "y", None), ("s", "y", "w"))
    assert head.describe(0, 10)[:2] == (900, 2)  # partitions 2 and 3 hold no rows


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.int32, np.int64])
def test_array_column_is_one_literal_exact_to_the_bit_on_classic_and_connect_sessions(session, dtype, capsys):
    from fastcal.spark._buckets import array_column

    rng = np.random.default_rng(5)
    if np.dtype(dtype).kind == "f":
        info = np.finfo(dtype)
        special = [info.smallest_subnormal, -info.smallest_subnormal, info.tiny, info.max, -info.max, 0.0, -0.0,
                   0.1, 1 / 3, np.nextafter(dtype(1), dtype(2))]
        values = np.concatenate([special, rng.standard_normal(300) * 10.0 ** rng.integers(-30, 30, 300)])
    else:
        info = np.iinfo(dtype)
        values = np.concatenate([[info.min, info.max, 0, -1], rng.integers(info.min, info.max, 300)])
    values = values.astype(dtype)
    got = session.range(1).select(array_column(values).alias("a")).toArrow().column("a").combine_chunks()
    got = got.flatten().to_numpy()
    assert got.dtype == values.dtype and got.tobytes() == values.tobytes()  # every bit, signed zeros too
    empty = session.range(1).select(array_column(values[:0]).alias("a")).toArrow().column("a").to_pylist()
    assert empty == [[]]
    # folded into one literal array of the plan: no split, no cast of strings left to run on the rows
    capsys.readouterr()
    session.range(3).select(F.element_at(array_column(values), (F.col("id") + 1).cast("int")).alias("v")).explain(True)
    optimized = capsys.readouterr().out.split("== Optimized Logical Plan ==")[1].split("== Physical Plan ==")[0]
    assert "element_at([" in optimized and "split(" not in optimized and "string" not in optimized


@pytest.mark.parametrize("float32", [False, True])
def test_empty_partitions_give_empty_chunks_of_the_column_dtypes(spark, float32):
    df = frame(spark, 2000, 4, float32=float32).where("id < 500")  # partitions 1 to 3 hold no rows
    rows = fs.SparkRows.from_columns(df, ("s", "y", "w"), ("score_col", "label_col", "weight_col"))

    def shape(chunk):
        return [(c.dtype.str, c.shape[0]) for c in chunk]

    got = rows.map(shape)
    assert got == ListRows(_glom(rows)).map(shape)
    s = "<f4" if float32 else "<f8"
    assert got == [[(s, 500), ("<i4", 500), ("<f8", 500)]] + [[(s, 0), ("<i4", 0), ("<f8", 0)]] * 3


def _narrow(chunk, dtype):
    """A conversion as the drivers write them: new columns of other dtypes, a fact per chunk."""
    s, y, w = chunk
    if s.shape[0] and s.max() > 2.0:
        raise ValueError("s must be at most 2.")
    return (s.astype(dtype), y.astype(np.int8), None if w is None else w * 2.0), (s.shape[0], float(s.sum()))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_convert_caches_new_chunks_and_returns_facts(spark, dtype):
    df = frame(spark, 3000, 3).where("id % 5 != 0")
    rows = fs.SparkRows.from_columns(df, ("s", "y", "w"), ("score_col", "label_col", "weight_col"))
    ref = ListRows(_glom(rows))
    conv, facts = rows.convert(_narrow, dtype)
    ref_conv, ref_facts = ref.convert(_narrow, dtype)
    try:
        assert facts == ref_facts
        assert conv.parallelism == rows.parallelism

        def dump(chunk):
            return [c.dtype.str for c in chunk], _rows_multiset(chunk)

        assert conv.map(dump) == ref_conv.map(dump)
        assert conv.map(dump)[0][0] == [np.dtype(dtype).str, "|i1", "<f8"]
        assert conv.cached
    finally:
        conv.release()
    assert not conv.cached
    conv.release()  # idempotent


def test_errors_of_the_chunk_functions_are_raised_on_the_driver(spark):
    df = frame(spark, 1000, 2).withColumn("s", F.when(F.col("id") == 700, 3.0).otherwise(F.col("s")))
    rows = fs.SparkRows.from_columns(df, ("s", "y", None), ("score_col", "label_col", "weight_col"))
    with pytest.raises(ValueError, match="s must be at most 2"):
        rows.convert(_narrow, np.float64)
    with pytest.raises(ValueError, match="s must be at most 2"):
        rows.map(_narrow, np.float64)


def test_nulls_are_rejected_naming_the_column(spark):
    df = frame(spark, 100, 2).withColumn("w", F.when(F.col("id") == 3, None).otherwise(F.col("w")))
    rows = fs.SparkRows.from_columns(df, ("s", "y", "w"), ("score_col", "label_col", "weight_col"))
    with pytest.raises(ValueError, match="weight_col must not contain nulls"):
        rows.map(len)


def test_from_columns_checks_its_arguments(spark):
    df = frame(spark, 10, 1).withColumn("name", F.lit("a"))
    with pytest.raises(ValueError, match="label_col='nope' is not a column"):
        fs.SparkRows.from_columns(df, ("s", "nope"), ("score_col", "label_col"))
    with pytest.raises(TypeError, match="score_col='name' must be a numeric or boolean column, got string"):
        fs.SparkRows.from_columns(df, ("name", "y"), ("score_col", "label_col"))
    with pytest.raises(TypeError, match="df must be a pyspark.sql.DataFrame"):
        fs.SparkRows.from_columns(np.zeros(3), ("s",), ("score_col",))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_partition_holds_exactly_the_keys_between_the_bounds(session, dtype):
    rng = np.random.default_rng(3)
    s = rng.choice(np.array([0.1, 0.2, 0.25, 0.5, 0.7, 0.9], dtype=dtype), 4000)
    s[:1000] = rng.random(1000).astype(dtype)
    df = _from_arrays(session, 3, s=s, y=(rng.random(4000) < 0.5).astype(np.int64))
    rows = fs.SparkRows.from_columns(df, ("s", "y", None), ("score_col", "label_col", "weight_col"))
    ref = ListRows(_chunks_by_partition_id(rows, 3))
    # Repeated bounds (empty partitions between them), bounds equal to keys, a bound below every key, and more
    # partitions (8) than keys above 0.9.
    bounds = np.array([0.0, 0.1, 0.2, 0.2, 0.25, 0.5000001, 0.7, 0.9], dtype=dtype)
    part = rows.partition(bounds)
    try:
        got = part.map(lambda c: _rows_multiset(c))
        want = ref.partition(bounds).map(_rows_multiset)
        assert len(got) == bounds.shape[0] + 1
        assert got == want
        for j, chunk in enumerate(part.map(lambda c: c[0])):
            assert chunk.dtype == dtype
            if j > 0:
                assert np.all(chunk >= bounds[j - 1])
            if j < bounds.shape[0]:
                assert np.all(chunk < bounds[j])
        assert [j for j, g in enumerate(got) if not g] == [0, 3]  # below 0, and between the repeated bounds
        again = part.partition(bounds[::2])  # re-cut a partitioned Rows
        try:
            assert again.map(_rows_multiset) == ref.partition(bounds[::2]).map(_rows_multiset)
        finally:
            again.release()
    finally:
        part.release()


def test_bound_count_of_every_kind_of_value_on_classic_and_connect_sessions(session):
    from fastcal.spark._buckets import with_bound_count

    v = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 5e-324, 0.1, np.nextafter(0.1, 0), 0.3, 0.5, 2.0, -1.0])
    bounds = np.array([-np.inf, 0.0, 0.0, 0.1, 0.1, 0.5, np.inf])
    df = _from_arrays(session, 2, v=np.concatenate([v, [7.0]]), i=np.arange(v.shape[0] + 1))
    df = df.withColumn("v", F.when(F.col("i") == v.shape[0], None).otherwise(F.col("v")))  # and a null
    got = with_bound_count(df, F.col("v"), bounds, "j").orderBy("i").toArrow().column("j").to_pylist()
    finite = bounds[np.isfinite(bounds)]
    # NumPy's comparisons (-0.0 == 0.0); -inf bounds below every value, +inf ones above all; NaN past them; null
    want = [1 + finite.shape[0] + 1 if np.isnan(x) else 1 + int(np.searchsorted(finite, x, side="right")) for x in v]
    assert got == want + [None]
    assert want[:6] == [7, 1, 6, 3, 3, 3]


def test_partition_keys_follow_sparks_hash(spark):
    for n in (1, 2, 3, 16, 97):
        keys = fs.partition_keys(n)
        got = spark.createDataFrame([(k,) for k in keys], "k int").select(
            F.expr(f"pmod(hash(k), {n})").alias("p")).collect()
        assert [r["p"] for r in got] == list(range(n))


def test_tasks_use_the_task_cpus_and_restore_the_thread_count(spark):
    df = frame(spark, 100, 2)
    rows = fs.SparkRows.from_columns(df, ("s",), ("score_col",))
    cpus = int(spark.conf.get("spark.task.cpus", "1"))
    assert rows.map(lambda c: fastcal.get_num_threads()) == [cpus, cpus]
    lazy = rows.convert_later(lambda c: (*c, np.array([fastcal.get_num_threads()])))
    try:  # a conversion run in the task's reading of its rows (convert_later) too
        assert lazy.map(lambda c: int(c[-1][0])) == [cpus, cpus]
    finally:
        lazy.release()

    def outside(batches):
        import pyarrow as pa

        for _ in batches:
            pass
        yield pa.RecordBatch.from_pydict({"n": [fastcal.get_num_threads()]})

    import numba

    default = int(numba.config.NUMBA_NUM_THREADS)
    for _ in range(3):  # the same (reused) workers, after tasks that set the count
        rows.map(lambda c: fastcal.get_num_threads())
        assert {r["n"] for r in df.mapInArrow(outside, "n long").collect()} == {default}


# ---------------------------------------------------------------------------
# predict in the JVM.
# ---------------------------------------------------------------------------


def _knot_scores(xs, rng, n, dtype):
    """Scores at, between, just beside, below and above the knots ``xs``."""
    lo, hi = float(xs[0]), float(xs[-1])
    pieces = [xs, np.nextafter(xs, np.inf, dtype=xs.dtype), np.nextafter(xs, -np.inf, dtype=xs.dtype),
              rng.uniform(lo - 0.2, hi + 0.2, n), [lo - 1.0, hi + 1.0]]
    return np.concatenate([np.asarray(p, dtype=np.float64) for p in pieces]).astype(dtype)


def _predict_all(spark, estimators, scores):
    """Every estimator's Spark predictions of ``scores`` (one column each, one job) and its in-memory ones."""
    df = _from_arrays(spark, 2, s=scores, k=np.arange(scores.shape[0]))
    out = df
    for i, est in enumerate(estimators):
        out = fs.predict(est, out, "s", f"p{i}")
    names = [f"p{i}" for i in range(len(estimators))]
    assert out.columns == ["s", "k"] + names  # every input column kept, the new ones after them
    cols = _collect(out, "s", "k", *names)
    order = np.argsort(cols[1])
    assert_array_equal(cols[1][order], np.arange(scores.shape[0]))  # every row, once
    assert_array_equal(cols[0][order], scores)
    return [(c[order], est.predict(scores)) for c, est in zip(cols[2:], estimators)]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predict_isotonic_equals_the_in_memory_predict(session, dtype):
    spark = session  # each kind of session in turn
    rng = np.random.default_rng(5)
    x = rng.random(3000).astype(dtype)
    x[:600] = np.round(x[:600], 2)  # ties
    estimators = []
    for increasing in (True, False):
        y = (rng.random(3000) < (x if increasing else 1 - x)).astype(np.int64)
        for out_of_bounds in ("nan", "clip"):
            estimators.append(IsotonicRegression(increasing=increasing, out_of_bounds=out_of_bounds).fit(x, y))
        estimators.append(IsotonicRegression(increasing=increasing, centered=True, out_of_bounds="clip").fit(x, y))
    estimators.append(IsotonicRegression().fit(np.array([0.3, 0.3], dtype), [0, 1]))  # a single knot
    assert estimators[-1].X_thresholds_.shape[0] == 1 and estimators[0].X_thresholds_.shape[0] > 20
    scores = np.concatenate([_knot_scores(e.X_thresholds_, rng, 300, dtype) for e in estimators])
    for got, want in _predict_all(spark, estimators, scores):
        assert got.dtype == want.dtype == dtype
        assert_array_equal(got, want)  # bit for bit, NaN where in-memory gives NaN


@pytest.mark.parametrize("values", [
    np.linspace(0.0, 1.0, 500) ** 1.5,  # spread out: the grid, its halvings in one expression
    1e-12 * 1.1 ** np.arange(300.0),  # crowded in the low cells: the grid, a projection a halving
    np.array([0.25]),  # no grid: a binary search over all values
    np.array([-2.0, 3.0]),
    np.array([-1e308, 0.0, 1e308]),  # a span past the largest double: no grid
])
def test_count_below_equals_searchsorted_on_every_path(session, values):
    """``with_count_below`` (the searches of the isotonic and histogram predictions): the grid, with its halvings
    inline or in projections, and the plain binary search all give ``np.searchsorted(values, v, side="left")`` at
    the values, an ulp either side, between them and outside; a null stays null."""
    spark = session  # each kind of session in turn
    v = np.concatenate([values, np.nextafter(values, np.inf), np.nextafter(values, -np.inf),
                        values[:-1] / 2 + values[1:] / 2, [values[0] - 1.0, values[-1] + 1.0, -np.inf, np.inf]])
    df = spark.createDataFrame([(float(x),) for x in v] + [(None,)], "v double")
    rows = fs.with_count_below(df, "v", values, "j").collect()
    assert rows[-1]["j"] is None
    assert_array_equal([r["j"] for r in rows[:-1]], np.searchsorted(values, v, side="left"))


def test_predict_isotonic_knots_and_values_of_every_magnitude_reach_the_jvm_bit_for_bit(spark):
    """Knots and fitted values of every magnitude (signed zeros, subnormal values, near the largest double, numbers
    that are not short decimals), sent to the JVM as bytes: the predictions are the in-memory ones bit for bit."""
    x = np.array([-1e308, -3.5, -0.0, 0.1, 1 / 3, 0.7, 2.0 ** 60, 1e307, 1e308])
    y = np.array([-7e307, -1 / 3, -0.0, 5e-324, 1e-310, 0.1, 0.7, 1e300, 1.5e308])
    est = IsotonicRegression(out_of_bounds="clip").fit(x, y)
    assert est.X_thresholds_.shape[0] == x.shape[0]
    scores = np.concatenate([x, (x[:-1] + x[1:]) / 2, [np.nextafter(v, np.inf) for v in x[:-1]]])
    [(got, want)] = _predict_all(spark, [est], scores)
    assert_array_equal(got.view(np.int64), want.view(np.int64))


def test_predict_isotonic_with_crowded_knots_and_repeated_column_names(session):
    """Knots crowded in a few grid cells (a projection a halving) on a frame whose column names repeat: every
    column is kept, in order, with its values, and the predictions equal memory's bit for bit."""
    from fastcal.spark._buckets import INLINE_HALVINGS, grid_counts

    spark = session  # each kind of session in turn
    x = np.concatenate([1e-12 * 1.1 ** np.arange(200.0), np.linspace(0.5, 1.0, 50)])
    est = IsotonicRegression(out_of_bounds="clip").fit(x, np.arange(x.shape[0], dtype=np.float64))
    xs = est.X_thresholds_
    assert grid_counts(xs[:-1])[3].bit_length() > INLINE_HALVINGS  # the halvings of the search within a cell
    rng = np.random.default_rng(8)
    scores = np.concatenate([xs, (xs[:-1] + xs[1:]) / 2, rng.random(200)])
    rows = [(float(v), i, -i) for i, v in enumerate(scores)]
    df = spark.createDataFrame(rows, "s double, k long, k2 long").toDF("s", "k", "k")
    out = fs.predict(est, df, "s", "p")
    assert out.columns == ["s", "k", "k", "p"]
    got = out.collect()
    assert [tuple(r)[:3] for r in got] == rows
    assert_array_equal(np.array([r[3] for r in got]), est.predict(scores))


def test_predict_isotonic_casts_scores_to_the_fit_dtype(spark):
    rng = np.random.default_rng(6)
    x = rng.random(500).astype(np.float32)
    est = IsotonicRegression(out_of_bounds="clip").fit(x, rng.random(500) < x)
    scores = np.concatenate([rng.random(500), est.X_thresholds_.astype(np.float64) + 1e-12])  # float64 column
    [(got, want)] = _predict_all(spark, [est], scores)
    assert got.dtype == want.dtype == np.float32
    assert_array_equal(got, want)


def test_predict_isotonic_raise_mode_fails_the_job(session):
    spark = session  # each kind of session in turn
    est = IsotonicRegression(out_of_bounds="raise").fit([0.2, 0.4, 0.6], [0, 1, 1])
    inside = fs.predict(est, _from_arrays(spark, 1, s=np.array([0.2, 0.3, 0.6])), "s", "p")
    assert_array_equal(_collect(inside, "p")[0], est.predict([0.2, 0.3, 0.6]))
    for bad, word in ((0.1, "below"), (0.7, "above")):
        out = fs.predict(est, _from_arrays(spark, 1, s=np.array([0.3, bad])), "s", "p")
        with pytest.raises(Exception, match=f"in x_new is {word} the interpolation range"):
            out.collect()


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_predict_rejects_non_finite_scores_when_run(spark, bad):
    est = IsotonicRegression().fit([0.2, 0.4, 0.6], [0, 1, 1])
    out = fs.predict(est, _from_arrays(spark, 1, s=np.array([0.3, bad])), "s", "p")
    with pytest.raises(Exception, match="T must be finite, but contains " + ("NaN" if np.isnan(bad) else "infinity")):
        out.collect()


def test_predict_keeps_nulls_as_nulls(spark):
    df = spark.createDataFrame([(0.3,), (None,), (0.5,)], "s double")
    for est in (IsotonicRegression(out_of_bounds="clip").fit([0.2, 0.4, 0.6], [0, 1, 1]),
                PlattScaling().fit([0.2, 0.4, 0.6, 0.3], [0, 1, 1, 0]),
                HistogramBinning(n_bins=2).fit([0.2, 0.4, 0.6, 0.3], [0, 1, 1, 0])):
        p = [r["p"] for r in fs.predict(est, df, "s", "p").collect()]
        assert p[1] is None and p[0] is not None and p[2] is not None


def test_predict_histogram_equals_the_in_memory_predict(session):
    spark = session  # each kind of session in turn
    rng = np.random.default_rng(8)
    p = rng.random(4000) ** 2
    p[:2000] = np.round(p[:2000], 1)  # quantile edges repeat
    y = rng.random(4000) < p
    estimators = [HistogramBinning(n_bins=15, strategy=strategy).fit(p, y) for strategy in ("uniform", "quantile")]
    estimators.append(HistogramBinning(n_bins=1).fit([0.2, 0.6], [0, 1]))
    assert np.any(np.diff(estimators[1].bin_edges_) == 0)
    edges = np.concatenate([e.bin_edges_ for e in estimators])
    scores = np.clip(np.concatenate([edges, np.nextafter(edges, 2), np.nextafter(edges, -1), rng.random(3000)]), 0, 1)
    for got, want in _predict_all(spark, estimators, scores):
        assert got.dtype == want.dtype == np.float64
        assert_array_equal(got, want)
    out = fs.predict(estimators[0], _from_arrays(spark, 1, s=np.array([0.5, 1.5])), "s", "q")
    with pytest.raises(Exception, match=r"p must contain probabilities in \[0, 1\]"):
        out.collect()


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_predict_platt_and_beta_within_an_ulp_or_two(session, dtype):
    spark = session  # each kind of session in turn
    rng = np.random.default_rng(9)
    p = rng.random(20000)
    y = rng.random(20000) < p ** 1.5
    scores = np.concatenate([rng.normal(0, 4, 5000), [0.0, -0.0, 40.0, -40.0, 800.0, -800.0]]).astype(dtype)
    probs = np.concatenate([rng.random(5000), [0.0, 1.0, 1e-300, 1 - 1e-16]]).astype(dtype)
    platt = PlattScaling().fit(p, y)
    betas = [BetaCalibration(parameters=model).fit(p, y) for model in ("abm", "ab", "am")]
    [(got, want)] = _predict_all(spark, [platt], scores)
    assert got.dtype == want.dtype == dtype
    # fastcal's exp is within 1.1 ulp of the exact value, the JVM's StrictMath.exp within 1 ulp:
    # the logistic function of both stays within 2 ulp (in float32 the float64 differences round away).
    assert _ulps(got, want).max() <= (2 if dtype == np.float64 else 1)
    eps = np.finfo(dtype).eps
    pc = np.clip(probs.astype(np.float64), eps, 1 - eps)
    for beta, (got, want) in zip(betas, _predict_all(spark, betas, probs)):
        assert got.dtype == want.dtype == dtype
        # fastcal's log is within 2 ulp and the JVM's within 1: eta = a log p' - b log(1 - p') + c differs by up to
        # about 4 eps (|a log p'| + |b log(1 - p')| + |c|), which the logistic function turns into the same
        # relative difference of its (small) result, plus the exp's 2 ulp.
        terms = np.abs(beta.a_ * np.log(pc)) + np.abs(beta.b_ * np.log1p(-pc)) + abs(beta.c_)
        rel = np.abs(got.astype(np.float64) - want) / np.maximum(np.abs(want.astype(np.float64)), np.finfo(dtype).tiny)
        assert np.all(rel <= (4 * terms + 3) * eps), np.max(rel / ((4 * terms + 3) * eps))
        assert np.median(_ulps(got, want)) == 0


def test_predict_checks_its_arguments(spark):
    df = _from_arrays(spark, 1, s=np.array([0.1, 0.5]), t=np.array(["a", "b"]))
    est = PlattScaling().fit([0.1, 0.5, 0.7], [0, 1, 1])
    with pytest.raises(fastcal.NotFittedError):
        fs.predict(PlattScaling(), df, "s", "p")
    with pytest.raises(TypeError, match="estimator must be a fitted"):
        fs.predict(object(), df, "s", "p")
    with pytest.raises(ValueError, match="score_col='x' is not a column"):
        fs.predict(est, df, "x", "p")
    with pytest.raises(TypeError, match="score_col='t' must be a numeric column"):
        fs.predict(est, df, "t", "p")
    with pytest.raises(ValueError, match="output_col='s' is already a column"):
        fs.predict(est, df, "s", "s")


def test_predict_large_isotonic_model_in_the_jvm(spark, capsys):
    """Thousands of knots (a fit on 10^5 JVM rows): the plan has no Python step, the result every row's."""
    df = frame(spark, 100_000, 2)
    s, y = _collect(df, "s", "y")
    est = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    out = fs.predict(est, df, "s", "p")
    capsys.readouterr()
    out.explain()
    plan = capsys.readouterr().out
    assert "== Physical Plan ==" in plan and "Python" not in plan and "Arrow" not in plan
    got_s, got_p = _collect(out, "s", "p")
    assert_array_equal(got_s, s)
    assert_array_equal(got_p, est.predict(s))


def test_predict_isotonic_plan_writes_no_knot(session, capsys):
    """The isotonic search reads its knots from one array, the value of a scalar subquery (computed once on the
    driver): no knot is written into the physical plan's expressions, where a literal array would be a boxed copy
    in every place it is written."""
    spark = session  # each kind of session in turn
    est = IsotonicRegression(out_of_bounds="clip").fit([0.1, 0.123456789, 0.3, 0.4], [0.0, 0.25, 0.5, 1.0])
    assert 0.123456789 in est.X_thresholds_[1:-1]  # an inner knot: the bounds are written for the clip
    out = fs.predict(est, _from_arrays(spark, 1, s=np.array([0.2, 0.35])), "s", "p")
    capsys.readouterr()
    out.explain()
    plan = capsys.readouterr().out
    assert "== Physical Plan ==" in plan and "Subquery" in plan and "0.123456789" not in plan
    assert_array_equal(_collect(out, "p")[0], est.predict([0.2, 0.35]))


# ---------------------------------------------------------------------------
# Fits and diagnostics on the engine's drivers, against the in-memory ones on the collected columns.
# ---------------------------------------------------------------------------

EPS = np.finfo(np.float64).eps


def _assert_same_isotonic(got, ref, atol):
    assert type(got) is IsotonicRegression
    assert got.increasing_ == ref.increasing_
    assert got.X_thresholds_.dtype == ref.X_thresholds_.dtype
    assert_array_equal(got.X_thresholds_, ref.X_thresholds_)  # bit for bit
    assert (got.X_min_, got.X_max_) == (ref.X_min_, ref.X_max_)
    # Block means: float64 sums of the same rows added in another order (0/1 labels, weights below 2).
    np.testing.assert_allclose(got.y_thresholds_, ref.y_thresholds_, rtol=0, atol=atol)
    assert got.get_params() == ref.get_params()


@pytest.mark.parametrize("float32, weighted, params", [
    (False, False, {}),
    (True, True, {"increasing": "auto", "centered": True, "y_min": 0.1}),
])
def test_fit_isotonic_equals_the_in_memory_fit(session, float32, weighted, params):
    spark = session  # each kind of session in turn
    n = 30_000
    df = frame(spark, n, 3, seed=11, float32=float32)
    s, y, w = _collect(df, "s", "y", "w")
    got = fs.fit_isotonic(df, "s", "y", weight_col="w" if weighted else None, **params)
    ref = IsotonicRegression(**params).fit(s, y, sample_weight=w if weighted else None)
    # without weights a block's sums are counts, exact in any order: the same bits (the Spark guide says so)
    _assert_same_isotonic(got, ref, n * EPS if weighted else 0)


def test_fit_isotonic_cuts_raw_rows_of_a_cached_frame_in_the_jvm(spark, monkeypatch):
    # A cached DataFrame is cut as it is (no conversion pass, nothing cached by fastcal but the cut rows, released
    # after); an uncached one has its columns cached first (tests above). Integer scores are cut as doubles,
    # rows of weight zero travel with the others, and bad scores (NaN, null, infinite) reach the last partition
    # or another one and fail its conversion with the in-memory error.
    from fastcal.spark import SparkRows

    def keyed(seed):
        return frame(spark, 20_000, 4, seed=seed).withColumn("k", F.floor(F.col("s") * 5000).cast("long")).withColumn(
            "z", F.when(F.col("id") % 7 == 0, 0.0).otherwise(F.col("w")))

    base = keyed(32)  # not cached (Spark finds a cache by the plan: another seed)
    converted, persisted = [], []
    original, persist = SparkRows.convert, type(base).persist  # PySpark's classic DataFrame
    monkeypatch.setattr(SparkRows, "convert", lambda *a: converted.append(1) or original(*a))
    monkeypatch.setattr(type(base), "persist", lambda *a: persisted.append(1) or persist(*a))
    df = keyed(31).cache()
    try:
        assert df.count() == 20_000
        k, y, z = _collect(df, "k", "y", "z")
        persisted.clear()
        got = fs.fit_isotonic(df, "k", "y", weight_col="z", increasing=False)
        ref = IsotonicRegression(increasing=False).fit(k, y, sample_weight=z)
        _assert_same_isotonic(got, ref, 20_000 * EPS)
        assert not converted and len(persisted) == 1  # the cut rows alone
        fs.fit_isotonic(base, "k", "y", weight_col="z", increasing=False)
        assert not converted and len(persisted) == 3  # the columns of a frame not cached, then the cut rows
        held = persisted_rdds(spark)
        for bad, message in ((float("nan"), "X must be finite, but contains NaN"), (None, "must not contain nulls"),
                             (float("-inf"), "X must be finite")):
            broken = df.withColumn("s", F.when(F.col("id") == 11, F.lit(bad)).otherwise(F.col("s"))).cache()
            try:
                broken.count()
                with pytest.raises(ValueError, match=message):
                    fs.fit_isotonic(broken, "s", "y")
            finally:
                broken.unpersist()
        assert persisted_rdds(spark) == held  # the cut rows released, errors too
    finally:
        df.unpersist()


def test_describe_samples_rows_whatever_made_the_scores(spark):
    # DataFrame.sample(seed=0) draws from the generator of rand(0) with the same per-partition seeds: it would keep
    # exactly the rows whose rand(0) score is below the fraction. describe's rows are picked by a hash of their
    # position: the sample of rand(0) scores spreads over (0, 1).
    from fastcal.spark import SparkRows

    df = frame(spark, 200_000, 4, seed=0)
    rows = SparkRows.from_columns(df, ("s", "y", "w"), ("s", "y", "w"))
    n, chunks, sample, most = rows.describe(0, 2000, 2)
    s, w = _collect(df, "s", "w")
    assert (n, chunks, most) == (200_000, 4, float(w.max()))
    assert 1500 < sample.shape[0] < 2500 and np.all(np.isin(sample, s))
    assert abs(np.median(sample) - 0.5) < 0.05 and sample.min() < 0.01 and sample.max() > 0.99
    assert rows.describe(0, 10)[3] is None
    # the number of rows: known where they are cached (a quick count), else not asked for (a count would compute them)
    assert rows.n_rows is None
    cached = df.cache()
    try:
        later = SparkRows.from_columns(cached, ("s", "y", "w"), ("s", "y", "w"))
        assert later.n_rows == 200_000
        assert later.convert_later(lambda chunk: chunk).n_rows is None  # a conversion may drop rows
    finally:
        cached.unpersist()


def test_fit_isotonic_tie_chains_across_16_partitions(spark, monkeypatch):
    # float32 scores on a lattice finer than the float32 resolution: every bound of the 16 score ranges lies in a
    # chain of tie groups, chains cross several bounds; the issue saw a Python worker crash on such data.
    import fastcal._engine.partition as part

    eps = float(np.float32(np.finfo(np.float32).resolution))
    unclean = []
    original = part.unclean_boundaries
    monkeypatch.setattr(part, "unclean_boundaries", lambda *a: unclean.append(original(*a)) or unclean[-1])
    for step, weight_col in ((0.3, "w"),):
        df = spark.range(0, 20_000, numPartitions=16).select(
            (F.lit(0.25) + F.floor(F.rand(21) * 400) * (step * eps)).cast("float").alias("s"),
            (F.rand(22) < 0.5).cast("int").alias("y"), (F.rand(23) * 1.5 + 0.5).alias("w"))
        s, y, w = _collect(df, "s", "y", "w")
        assert s.dtype == np.float32 and np.unique(s).shape[0] > 100
        got = fs.fit_isotonic(df, "s", "y", weight_col=weight_col, n_partitions=16)
        ref = IsotonicRegression().fit(s, y, sample_weight=None if weight_col is None else w)
        _assert_same_isotonic(got, ref, 20_000 * EPS)
    assert unclean and all(len(u) >= 8 for u in unclean)  # the chains were followed across most bounds


def test_fit_platt_and_beta_equal_the_in_memory_fits(spark, session):
    df = frame(session, 30_000, 3, seed=31)  # not cached: the fits cache its columns while they run
    s, y, w = _collect(df, "s", "y", "w")
    held = persisted_rdds(spark)
    # Newton fits stop at a decrement of 1e-10 per unit weight; the sums differ in their order only.
    for weighted in (False, True):
        got = fs.fit_platt(df, "s", "y", weight_col="w" if weighted else None)
        ref = PlattScaling().fit(s, y, sample_weight=w if weighted else None)
        np.testing.assert_allclose([got.a_, got.b_], [ref.a_, ref.b_], rtol=1e-10)
        assert got.converged_ and got.n_iter_ == ref.n_iter_
    for model, weighted in (("abm", True), ("am", False)):
        got = fs.fit_beta(df, "s", "y", weight_col="w" if weighted else None, parameters=model)
        ref = BetaCalibration(parameters=model).fit(s, y, sample_weight=w if weighted else None)
        np.testing.assert_allclose([got.a_, got.b_, got.c_], [ref.a_, ref.b_, ref.c_], rtol=1e-10)
    assert persisted_rdds(spark) == held  # every cache released


def _close(got, want):
    # float64 sums of the same 2e4 rows added in another order: a few n eps of the terms, under 1e-12.
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


def test_binned_metrics_and_histogram_equal_the_in_memory_ones(session):
    spark = session  # each kind of session in turn
    df = frame(spark, 20_000, 3, seed=41)
    s, y, w = _collect(df, "s", "y", "w")
    got = fs.calibration_curve(df, "y", "s", n_bins=7, return_counts=True)
    for g, r in zip(got, fastcal.calibration_curve(y, s, n_bins=7, return_counts=True)):
        _close(g, r)
    got = fs.calibration_curve(df, "y", "s", weight_col="w", strategy="quantile", n_bins=7, return_counts=True)
    for g, r in zip(got, fastcal.calibration_curve(y, s, sample_weight=w, strategy="quantile", n_bins=7,
                                                   return_counts=True)):
        _close(g, r)
    _close(fs.expected_calibration_error(df, "y", "s", strategy="quantile", norm="l2"),
           fastcal.expected_calibration_error(y, s, strategy="quantile", norm="l2"))
    terms = ("brier", "reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance")
    got, ref = fs.brier_decomposition(df, "y", "s", weight_col="w"), fastcal.brier_decomposition(y, s, sample_weight=w)
    _close([getattr(got, t) for t in terms], [getattr(ref, t) for t in terms])
    for strategy, weighted in (("uniform", True), ("quantile", False)):
        got = fs.fit_histogram(df, "s", "y", weight_col="w" if weighted else None, n_bins=12, strategy=strategy)
        ref = HistogramBinning(n_bins=12, strategy=strategy).fit(s, y, sample_weight=w if weighted else None)
        assert_array_equal(got.bin_edges_, ref.bin_edges_)
        _close(got.bin_values_, ref.bin_values_)
        _close(got.bin_weights_, ref.bin_weights_)


def test_losses_and_decompositions_equal_the_in_memory_ones(session):
    spark = session  # each kind of session in turn
    df = frame(spark, 20_000, 3, seed=43)
    s, y, w = _collect(df, "s", "y", "w")
    _close(fs.brier_score_loss(df, "y", "s"), fastcal.brier_score_loss(y, s))
    _close(fs.log_loss(df, "y", "s", weight_col="w", normalize=False),
           fastcal.log_loss(y, s, sample_weight=w, normalize=False))
    got, ref = fs.smooth_ece(df, "y", "s", weight_col="w"), fastcal.smooth_ece(y, s, sample_weight=w)
    _close([got.ece, got.bandwidth, got.error_bound], [ref.ece, ref.bandwidth, ref.error_bound])
    _close(got.y, ref.y)
    for weighted in (False, True):
        got = fs.score_decomposition(df, "y", "s", weight_col="w" if weighted else None)
        ref = fastcal.score_decomposition(y, s, sample_weight=w if weighted else None)
        # miscalibration and discrimination are differences of sums of the size of the score: 1e-12 of the score.
        for field in ("score", "miscalibration", "discrimination", "uncertainty"):
            np.testing.assert_allclose(getattr(got, field), getattr(ref, field), rtol=0, atol=1e-12 * ref.score)
    # CORP: the curve's x (the PAV's block edges) bit for bit; y, block means, to the rounding of their sums.
    got, ref = fs.corp_reliability(df, "y", "s", weight_col="w"), fastcal.corp_reliability(y, s, sample_weight=w)
    assert_array_equal(got.x, ref.x)
    np.testing.assert_allclose(got.y, ref.y, rtol=1e-12, atol=0)
    assert got.lower is None and got.upper is None and got.n_resamples == 0
    with pytest.raises(ValueError, match="it must hold probabilities"):
        fs.corp_reliability(df.withColumn("s", F.col("s") * 2), "y", "s")
    # The consistency band: the in-memory draws, bit for bit without weights (counts), else to the sums' rounding.
    for weighted in (False, True):
        got = fs.corp_reliability(df, "y", "s", weight_col="w" if weighted else None, n_resamples=20, random_state=2)
        ref = fastcal.corp_reliability(y, s, sample_weight=w if weighted else None, n_resamples=20, random_state=2)
        for a, b in ((got.lower, ref.lower), (got.upper, ref.upper)):
            if weighted:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=0)
            else:
                assert_array_equal(a, b)
    with pytest.raises(ValueError, match="band='confidence'"):
        fs.corp_reliability(df, "y", "s", n_resamples=3, band="confidence")


def test_fits_raise_the_in_memory_errors(spark):
    df = frame(spark, 1000, 2).withColumn("s", F.when(F.col("id") == 5, float("nan")).otherwise(F.col("s")))
    with pytest.raises(ValueError, match="X must be finite, but contains NaN"):
        fs.fit_isotonic(df, "s", "y")
    with pytest.raises(ValueError, match="scores"):
        fs.fit_platt(df, "s", "y")
    bad_w = frame(spark, 1000, 2).withColumn("w", F.when(F.col("id") == 5, -1.0).otherwise(F.col("w")))
    with pytest.raises(ValueError, match="sample_weight"):
        fs.fit_isotonic(bad_w, "s", "y", weight_col="w")
    with pytest.raises(ValueError, match="X must have at least 1 element"):
        fs.fit_isotonic(frame(spark, 10, 2).where("id < 0"), "s", "y")
    with pytest.raises(ValueError, match="weight_col='v' is not a column"):
        fs.brier_score_loss(df, "y", "s", weight_col="v")
    assert persisted_rdds(spark) == 0  # every cache released, errors too


def test_roc_auc_and_calibration_report_equal_the_in_memory_ones(session):
    spark = session  # each kind of session in turn
    df = frame(spark, 20_000, 3, seed=47).withColumn("t", F.round(F.col("s"), 2))  # t: scores with ties
    s, y, w, t = _collect(df, "s", "y", "w", "t")
    assert fs.roc_auc_score(df, "y", "t", n_partitions=4) == fastcal.roc_auc_score(y, t)  # integer counts: exact
    _close(fs.roc_auc_score(df, "y", "s", weight_col="w"), fastcal.roc_auc_score(y, s, sample_weight=w))
    got = fs.calibration_report(df, "y", "s", n_bins=8).to_dict()
    ref = fastcal.calibration_report(y, s, n_bins=8).to_dict()
    assert got.keys() == ref.keys()
    slope = {k for k in ref if k.startswith(("slope", "intercept", "calibration_in"))}
    for key, value in ref.items():
        if isinstance(value, (bool, int, str)) or value is None:
            assert got[key] == value, key
        elif key in slope:  # a Newton fit: the solver's tolerance
            np.testing.assert_allclose(got[key], value, rtol=1e-10, err_msg=key)
        else:  # sums of the same rows in another order; differences of sums: 1e-12 of the Brier score's size
            np.testing.assert_allclose(got[key], value, rtol=1e-12, atol=1e-14, err_msg=key)


def test_weighted_results_do_not_depend_on_the_weight_scale(spark):
    # Every weighted function hands the weight column to an engine driver, which rescales it by a power of two
    # (tests/test_weight_scale.py): scaled by 2^-1000 or 2^1000, the results are the same bits (weight sums scale,
    # and the slope's standard errors, those of frequency weights, by the scale to the power -1/2). Two calls
    # cover the adapter's paths (a Spark job costs seconds): the isotonic fit (the range partition and PAV driver)
    # and the report (its bin table, range-partitioned AUC, CORP fit and Newton slope: the drivers the other
    # weighted functions use, each checked on ListRows and Dask in tests/test_weight_scale.py).
    df = frame(spark, 5_000, 3, seed=5)
    df = df.withColumn("small", F.col("w") * 2.0**-1000).withColumn("big", F.col("w") * 2.0**1000)
    calls = {
        "isotonic": lambda c: (lambda e: np.concatenate([e.X_thresholds_, e.y_thresholds_]))(
            fs.fit_isotonic(df, "s", "y", weight_col=c)),
        "report": lambda c: (lambda r: {k: v for k, v in r.to_dict().items() if k not in ("weight_sum", "bin_weights") and not k.endswith(("_se", "_ci"))})(
            fs.calibration_report(df, "y", "s", weight_col=c)),
    }
    for name, call in calls.items():
        base = call("w")
        for col in ("small", "big"):
            got = call(col)
            if isinstance(base, dict):
                assert got.keys() == base.keys()
                for k in base:
                    np.testing.assert_array_equal(np.asarray(got[k], dtype=object), np.asarray(base[k], dtype=object),
                                                  err_msg=f"{name} {k} {col}")
            else:
                np.testing.assert_array_equal(got, base, err_msg=f"{name} {col}")
