r"""fastcal on Spark: the same fits, predictions and diagnostics on Spark DataFrames.

``import fastcal.spark`` needs the ``spark`` extra (pyspark, with pyarrow);
``import fastcal`` never imports it. Every function takes a
``pyspark.sql.DataFrame`` and the names of its columns, and works on any
master (``local[*]``, a standalone or YARN or Kubernetes cluster); the
workers need fastcal installed in their Python.

Fits and diagnostics are adapters on fastcal's engines (:mod:`fastcal._engine`):
:class:`SparkRows` gives the engines' drivers the DataFrame's partitions as
chunks of NumPy arrays, and the drivers do the rest, as they do for the
in-memory, out-of-core and Dask backends. So every result equals the
in-memory function of the collected columns (the isotonic thresholds bit for
bit, the Newton fits to ~1e-10, the diagnostics to ~1e-12), and the driver
never collects rows: it receives summaries (block lists, bin tables,
gradient sums) a few kB each.

- The per-chunk work runs in ``mapInArrow`` tasks: each task turns its
  partition into NumPy arrays (Arrow, no pickling of rows), calls the
  engine's module-level function on them, and returns its pickled summary.
- A conversion (validation, dtype) runs once; its result is cached
  (``DataFrame.persist``) and the Newton passes read the cache.
- The isotonic fit range-partitions the rows by score in the JVM: each row's
  partition is found by a binary search over the bounds (``Bucketizer``) and
  the rows are shuffled so that partition ``j`` holds exactly the scores
  between ``bounds[j - 1]`` and ``bounds[j]``.

:func:`predict` never leaves the JVM: Platt and beta calibration are closed
forms written as Spark SQL expressions; isotonic regression and histogram
binning find each score's knot by a binary search (``Bucketizer``) and
interpolate with SQL arithmetic, so a Spark plan applies them at the speed of
any SQL projection, equal to ``estimator.predict`` (see :func:`predict`).

Workers
-------
Each task runs fastcal's kernels on ``spark.task.cpus`` threads (the
TaskContext's CPUs; the setting is scoped to the task and restored after it).
Numba compiles fastcal's kernels on first use in every Python worker
(about 17 s) unless the workers share a filled cache: run
``NUMBA_CACHE_DIR=/shared/numba fastcal precompile`` once on a machine like the
workers, and give the executors the same directory
(``spark.executorEnv.NUMBA_CACHE_DIR=/shared/numba``, or the cluster's
environment); a new worker then loads the kernels in a few seconds, and with
``spark.python.worker.reuse`` (Spark's default) later tasks pay nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import pickle
import uuid
from typing import TYPE_CHECKING, Any, Callable

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ._engine import binned as _binned
from ._engine import decomposition as _decomposition
from ._engine import isotonic as _isotonic
from ._engine import logistic as _logistic
from ._engine import segments as _segments
from ._errors import not_fitted
from ._parallel import get_num_threads, set_num_threads
from .multicalibration import MISSING, OTHER

if TYPE_CHECKING:
    from typing import Literal, TypeAlias, Unpack

    from numpy.typing import NDArray

    from .beta import BetaCalibration
    from .decomposition import CorpReliabilityResult, ScoreDecomposition
    from .metrics import CalibrationReport
    from .histogram import HistogramBinning
    from .isotonic import IsotonicParams, IsotonicRegression
    from .metrics import BrierDecomposition
    from collections.abc import Sequence

    from .multicalibration import ECCEResult, MulticalibrationResult, SegmentReport
    from .platt import PlattScaling
    from .smooth import SmoothECEResult

    #: The fitted 1-D calibrators :func:`predict` applies.
    OneD: TypeAlias = IsotonicRegression | PlattScaling | BetaCalibration | HistogramBinning

__all__ = [
    "SparkRows",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "calibration_ratio",
    "calibration_report",
    "corp_reliability",
    "ecce",
    "expected_calibration_error",
    "fit_beta",
    "fit_histogram",
    "fit_isotonic",
    "fit_platt",
    "log_loss",
    "multicalibration_error",
    "predict",
    "roc_auc_score",
    "score_decomposition",
    "segment_report",
    "smooth_ece",
]

#: How SparkRows caches converted and partitioned rows: Spark SQL's own default (deserialized column batches, in
#: memory while they fit, then on disk). The serialized level (PySpark's MEMORY_AND_DISK) Java-serializes every
#: batch into the heap first: at 10^8 rows with a 4 GiB local driver that ran out of heap.
_CACHE_LEVEL = StorageLevel.MEMORY_AND_DISK_DESER

#: Rows per Arrow batch a task returns (a few MB).
_BATCH_ROWS = 1 << 18

_SPARK_OF_NUMPY = {
    np.dtype(np.float64): T.DoubleType(),
    np.dtype(np.float32): T.FloatType(),
    np.dtype(np.int64): T.LongType(),
    np.dtype(np.int32): T.IntegerType(),
    np.dtype(np.int16): T.ShortType(),
    np.dtype(np.int8): T.ByteType(),
    np.dtype(np.bool_): T.BooleanType(),
    np.dtype(np.uint8): T.ShortType(),  # Spark has no unsigned types: the next wider
    np.dtype(np.uint16): T.IntegerType(),
    np.dtype(np.uint32): T.LongType(),
}

_NUMPY_OF_SPARK: dict[type, type] = {
    T.DoubleType: np.float64,
    T.FloatType: np.float32,
    T.LongType: np.int64,
    T.IntegerType: np.int32,
    T.ShortType: np.int16,
    T.ByteType: np.int8,
    T.BooleanType: np.bool_,
}


# ---------------------------------------------------------------------------
# Inside the tasks.
# ---------------------------------------------------------------------------


@contextlib.contextmanager
def _task_threads():
    """fastcal's threads follow the task's CPUs (``spark.task.cpus``) in this thread, then are restored."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    cpus = ctx.cpus() if ctx is not None else None
    before = get_num_threads()
    set_num_threads(max(1, int(cpus)) if cpus else None)
    try:
        yield
    finally:
        set_num_threads(before)


def _read_chunk(batches, columns, dtypes, labels):
    """A task's Arrow batches as a chunk: a tuple of 1-D arrays (``None`` for absent columns)."""
    import pyarrow as pa

    batches = list(batches)
    chunk, i = [], 0
    for name, dtype, label in zip(columns, dtypes, labels):
        if name is None:
            chunk.append(None)
            continue
        parts = [b.column(i) for b in batches]
        i += 1
        if not parts:
            chunk.append(np.empty(0, dtype=dtype))
            continue
        col = pa.chunked_array(parts)
        if col.null_count:
            raise ValueError(f"{label} must not contain nulls, but has {col.null_count} in a partition.")
        arr = col.to_numpy()
        chunk.append(arr if arr.dtype == dtype else arr.astype(dtype))
    return tuple(chunk)


def _task_id():
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def _result_batch(pid, payload):
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([pid], pa.int64()), pa.array([payload], pa.binary())],
                                      names=["pid", "result"])


def _map_task(batches, fn, args, columns, dtypes, labels):
    """``fn(chunk, *args)`` on this task's partition: one row ``(partition id, pickled (ok, result or error))``."""
    pid = _task_id()
    try:
        chunk = _read_chunk(batches, columns, dtypes, labels)
        with _task_threads():
            result = (True, fn(chunk, *args))
    except (ValueError, TypeError, ArithmeticError) as exc:  # the in-memory errors: raised again on the driver
        result = (False, exc)
    yield _result_batch(pid, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def _convert_task(batches, fn, args, columns, dtypes, labels, out_fields, out_dtypes):
    """``fn(chunk, *args) -> (new_chunk, fact)``: the new chunk's rows, then one row holding the pickled fact."""
    import pyarrow as pa

    pid = _task_id()
    schema = pa.schema([pa.field(name, _arrow_type(dtype)) for name, dtype in zip(out_fields, out_dtypes)]
                       + [pa.field("_fact", pa.binary())])
    try:
        chunk = _read_chunk(batches, columns, dtypes, labels)
        with _task_threads():
            new_chunk, fact = fn(chunk, *args)
        kept = [c for c in new_chunk if c is not None]
        result = (True, fact)
    except (ValueError, TypeError, ArithmeticError) as exc:
        kept, result = [], (False, exc)
    if kept:
        n = kept[0].shape[0]
        for lo in range(0, n, _BATCH_ROWS):
            hi = min(n, lo + _BATCH_ROWS)
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.asarray(c[lo:hi], dtype=d)) for c, d in zip(kept, out_dtypes)]
                + [pa.nulls(hi - lo, pa.binary())], schema=schema)
    marker = [pa.nulls(1, _arrow_type(d)) for d in out_dtypes]
    payload = pickle.dumps((pid,) + result, protocol=pickle.HIGHEST_PROTOCOL)
    yield pa.RecordBatch.from_arrays(marker + [pa.array([payload], pa.binary())], schema=schema)


def _arrow_type(dtype):
    import pyarrow as pa

    return pa.from_numpy_dtype(_stored_dtype(dtype))


def _stored_dtype(dtype):
    """The dtype a column of ``dtype`` is stored as in Spark (no unsigned types there)."""
    return np.dtype({np.dtype(np.uint8): np.int16, np.dtype(np.uint16): np.int32,
                     np.dtype(np.uint32): np.int64}.get(np.dtype(dtype), dtype))


def _raise_first(results):
    """Re-raise the error of the first chunk that failed (as :class:`fastcal._engine.ListRows` would)."""
    for ok, value in results:
        if not ok:
            raise value
    return [value for _, value in results]


# ---------------------------------------------------------------------------
# The Rows adapter.
# ---------------------------------------------------------------------------


class SparkRows:
    """The :class:`fastcal._engine.Rows` of a Spark DataFrame: one chunk per partition.

    Built by :meth:`from_columns` on a user's DataFrame. Chunks are the
    partitions' columns as NumPy arrays, in the order of the partition ids;
    :meth:`map` and :meth:`convert` run the engine's function in a
    ``mapInArrow`` task per partition, :meth:`convert` caches its result,
    :meth:`partition` shuffles the rows in the JVM so that partition ``j``
    holds exactly the keys in ``[bounds[j - 1], bounds[j])``, and
    :meth:`release` unpersists what this object cached.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Its columns, in order, are the chunk's columns that are not ``None``.
    columns : tuple
        The chunk's columns: a column name of ``df``, or ``None`` (absent in every chunk).
    dtypes : tuple of numpy.dtype
        Each column's dtype in a chunk (``None`` columns: ignored).
    labels : tuple of str
        How errors name each column (the user's argument).
    n_partitions : int, optional
        The number of partitions when it is known (after :meth:`partition`).
    owned : pyspark.sql.DataFrame, optional
        The persisted DataFrame :meth:`release` unpersists.
    """

    def __init__(self, df: DataFrame, columns, dtypes, labels, *, n_partitions=None, owned=None):
        self._df = df
        self._columns = tuple(columns)
        self._dtypes = tuple(None if d is None else np.dtype(d) for d in dtypes)
        self._labels = tuple(labels)
        self._n_partitions = n_partitions
        self._owned = owned
        self.parallelism = int(df.sparkSession.sparkContext.defaultParallelism)

    @property
    def columns(self) -> tuple:
        """The DataFrame's column names, one per chunk column (``None`` for an absent column)."""
        return self._columns

    @property
    def dtypes(self) -> tuple:
        """The NumPy dtype of each chunk column (``None`` for an absent column)."""
        return self._dtypes

    @property
    def cached(self) -> bool:
        """Whether this object holds a DataFrame it cached (released by :meth:`release`)."""
        return self._owned is not None and self._owned.is_cached

    @classmethod
    def from_columns(cls, df: DataFrame, columns, labels) -> SparkRows:
        """Rows of ``df``'s ``columns`` (names, or ``None`` for an absent column); ``labels`` name them in errors."""
        if not isinstance(df, DataFrame):
            raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}.")
        fields = {f.name: f for f in df.schema.fields}
        selected: list[Column] = []
        names: list[str | None] = []
        dtypes: list[Any] = []
        for i, (name, label) in enumerate(zip(columns, labels)):
            if name is None:
                names.append(None)
                dtypes.append(None)
                continue
            if not isinstance(name, str):
                raise TypeError(f"{label} must be a column name (str), got {type(name).__name__}.")
            if name not in fields:
                raise ValueError(f"{label}={name!r} is not a column of the DataFrame; its columns are "
                                 f"{list(fields)}.")
            dtype = _NUMPY_OF_SPARK.get(type(fields[name].dataType))
            if dtype is None:
                raise TypeError(f"{label}={name!r} must be a numeric or boolean column, got "
                                f"{fields[name].dataType.simpleString()}.")
            internal = f"_c{i}"
            selected.append(df[name].alias(internal))
            names.append(internal)
            dtypes.append(dtype)
        return cls(df.select(*selected), names, dtypes, labels)

    @property
    def dataframe(self) -> DataFrame:
        """The DataFrame of the chunks' columns (internal names ``_c0``, ``_c1``, ...)."""
        return self._df

    def _empty_chunk(self):
        return tuple(None if c is None else np.empty(0, dtype=d) for c, d in zip(self._columns, self._dtypes))

    def _by_partition(self, rows, fn, args):
        """Results keyed by partition id, in order; partitions Spark did not run (empty) run here, on no rows."""
        found = dict(rows)
        n = self._n_partitions if self._n_partitions is not None else (max(found) + 1 if found else 1)
        out = []
        for pid in range(n):
            if pid in found:
                out.append(found[pid])
            else:
                try:
                    out.append((True, fn(self._empty_chunk(), *args)))
                except (ValueError, TypeError, ArithmeticError) as exc:
                    out.append((False, exc))
        return out

    def map(self, fn: Callable[..., Any], *args: Any) -> list:
        """``fn(chunk, *args)`` for every partition, in a ``mapInArrow`` task; the results in partition order."""
        task = functools.partial(_map_task, fn=fn, args=args, columns=self._columns, dtypes=self._dtypes,
                                 labels=self._labels)
        schema = T.StructType([T.StructField("pid", T.LongType()), T.StructField("result", T.BinaryType())])
        rows = self._df.mapInArrow(task, schema).collect()
        pairs = [(r["pid"], pickle.loads(r["result"])) for r in rows]
        return _raise_first(self._by_partition(pairs, fn, args))

    def convert(self, fn: Callable[..., Any], *args: Any) -> tuple[SparkRows, list]:
        """``fn(chunk, *args) -> (new_chunk, fact)`` per partition; the new chunks cached, the facts returned.

        The new chunks' dtypes are those ``fn`` gives on an empty chunk (run
        here first). Each task returns its rows and one more row that carries
        its pickled fact; the result is persisted and the facts read back
        from it, so ``fn`` runs once per partition.
        """
        probe, _ = fn(self._empty_chunk(), *args)
        out_columns: list[str | None] = []
        out_fields: list[str] = []
        out_dtypes: list[np.dtype] = []
        for i, col in enumerate(probe):
            if col is None:
                out_columns.append(None)
                continue
            dtype = np.dtype(col.dtype)
            if dtype not in _SPARK_OF_NUMPY:
                raise TypeError(f"fastcal.spark cannot keep a chunk column of dtype {dtype}.")
            out_columns.append(f"_c{i}")
            out_fields.append(f"_c{i}")
            out_dtypes.append(dtype)
        schema = T.StructType([T.StructField(name, _SPARK_OF_NUMPY[d]) for name, d in zip(out_fields, out_dtypes)]
                              + [T.StructField("_fact", T.BinaryType())])
        task = functools.partial(_convert_task, fn=fn, args=args, columns=self._columns, dtypes=self._dtypes,
                                 labels=self._labels, out_fields=out_fields, out_dtypes=out_dtypes)
        converted = self._df.mapInArrow(task, schema).persist(_CACHE_LEVEL)
        try:
            facts = [pickle.loads(r["_fact"]) for r in converted.where(F.col("_fact").isNotNull()).select(
                "_fact").collect()]
            pairs = [(f[0], (f[1], f[2])) for f in facts]

            def fact_of_empty(chunk, *a):
                return fn(chunk, *a)[1]

            results = _raise_first(self._by_partition(pairs, fact_of_empty, args))
        except BaseException:
            converted.unpersist()
            raise
        data = converted.where(F.col("_fact").isNull()).select(*out_fields)
        labels = tuple(self._labels[i] if i < len(self._labels) else f"column {i}" for i in range(len(probe)))
        rows = SparkRows(data, out_columns, [None if c is None else c.dtype for c in probe], labels,
                         n_partitions=len(results), owned=converted)
        return rows, results

    def partition(self, bounds, key: int = 0) -> SparkRows:
        """Rows cut by column ``key``: partition ``j`` holds the rows with ``bounds[j - 1] <= v < bounds[j]``.

        Each row's ``j`` is found in the JVM (a binary search over the
        distinct bounds, :func:`_bucket`), then the rows are shuffled by a
        hash partitioning whose keys are chosen so that ``j`` goes to
        partition ``j`` exactly (Spark's partition of a key is
        ``pmod(murmur3(key), n)``; :func:`partition_keys`). The result is
        persisted and released by :meth:`release`.
        """
        name = self._columns[key]
        dtype = self._dtypes[key]
        bounds = np.asarray(bounds, dtype=dtype)
        n = bounds.shape[0] + 1
        j_col, h_col = _temp_name("j"), _temp_name("h")
        df = _with_bucket_count(self._df, F.col(name), bounds, j_col)
        keys = partition_keys(n)
        df = df.withColumn(h_col, F.element_at(_int_array(keys), F.col(j_col) + 1))
        cut = df.repartition(n, F.col(h_col)).drop(j_col, h_col).persist(_CACHE_LEVEL)
        cut.count()  # cached now: the caller may release the rows this was cut from
        return SparkRows(cut, self._columns, self._dtypes, self._labels, n_partitions=n, owned=cut)

    def release(self) -> None:
        """Unpersist what this object cached (nothing for a user's DataFrame). Idempotent."""
        if self._owned is not None:
            self._owned.unpersist()
            self._owned = None


# ---------------------------------------------------------------------------
# Expressions: binary search over sorted values, partition keys.
# ---------------------------------------------------------------------------


def _temp_name(what):
    return f"__fastcal_{what}_{uuid.uuid4().hex[:12]}"


def _int_array(values) -> Column:
    return F.expr("array(" + ", ".join(str(int(v)) for v in values) + ")")


def _with_bucket(df, value: Column, sorted_values, out):
    """``df`` with column ``out``: the number of ``sorted_values`` (strictly increasing, finite) ``<= value``, an int.

    A binary search in the JVM: ML's ``Bucketizer`` on the splits
    ``[-inf, *sorted_values, inf]``, whose bucket ``i`` holds
    ``splits[i] <= v < splits[i + 1]``. Nulls stay null.
    """
    from pyspark.ml.feature import Bucketizer

    tmp = _temp_name("v")
    splits = [-np.inf] + [float(v) for v in sorted_values] + [np.inf]
    df = df.withColumn(tmp, value.cast("double"))
    df = Bucketizer(splits=splits, inputCol=tmp, outputCol=out + "_b", handleInvalid="keep").transform(df)
    return df.withColumn(out, F.col(out + "_b").cast("int")).drop(tmp, out + "_b")


def _with_bucket_count(df, value: Column, bounds, out):
    """``df`` with column ``out``: how many of ``bounds`` (ascending, maybe repeated) are ``<= value``."""
    bounds = np.asarray(bounds, dtype=np.float64)
    below = int(np.sum(bounds == -np.inf))
    finite = bounds[np.isfinite(bounds)]
    distinct, counts = np.unique(finite, return_counts=True)
    if distinct.shape[0] == 0:
        return df.withColumn(out, F.lit(below))
    df = _with_bucket(df, value, distinct, out)
    if below == 0 and np.all(counts == 1):
        return df
    cum = below + np.concatenate([[0], np.cumsum(counts)])
    return df.withColumn(out, F.element_at(_int_array(cum), F.col(out) + 1))


def _murmur3_int(value, seed=42):
    """Spark's ``hash`` of an int column (Murmur3 x86_32 of 4 bytes, seed 42), as a signed 32-bit int."""
    m = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    k1 = (value & m) * 0xCC9E2D51 & m
    k1 = rotl(k1, 15) * 0x1B873593 & m
    h1 = seed ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & m
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & m
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & m
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_keys(n):
    """``keys[j]``: an int whose Spark hash partition among ``n`` is ``j`` (``pmod(hash(key), n) == j``)."""
    keys = [None] * n
    missing, k = n, 0
    while missing:
        j = _murmur3_int(k) % n
        if keys[j] is None:
            keys[j] = k
            missing -= 1
        k += 1
    return keys


# ---------------------------------------------------------------------------
# Predictions in the JVM.
# ---------------------------------------------------------------------------


def _column_type(df, name, label):
    fields = {f.name: f for f in df.schema.fields}
    if name not in fields:
        raise ValueError(f"{label}={name!r} is not a column of the DataFrame; its columns are {list(fields)}.")
    spark_type = fields[name].dataType
    if type(spark_type) not in _NUMPY_OF_SPARK:
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
    (:func:`_with_bucket`) over the values moved up by one ulp.
    """
    return _with_bucket(df, value, np.nextafter(np.asarray(sorted_values, dtype=np.float64), np.inf), out)


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
    tc_col, j_col = _temp_name("t"), _temp_name("j")
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
    b_col = _temp_name("b")
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
    from .beta import BetaCalibration
    from .histogram import HistogramBinning
    from .isotonic import IsotonicRegression
    from .platt import PlattScaling

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


# ---------------------------------------------------------------------------
# Fits and diagnostics: a SparkRows of the columns, then the engine's driver.
# ---------------------------------------------------------------------------


def _call(driver, df, columns, labels, **kwargs):
    """``driver(rows, x_dtype=..., weighted=..., **kwargs)`` on the SparkRows of ``df``'s ``columns``
    (the first the scores, the third the weights or None)."""
    rows = SparkRows.from_columns(df, columns, labels)
    try:
        return driver(rows, x_dtype=rows.dtypes[0], weighted=columns[2] is not None, **kwargs)
    finally:
        rows.release()


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
    The driver of :mod:`fastcal._engine.isotonic` on :class:`SparkRows`:
    one ``mapInArrow`` job validates and converts the partitions (cached)
    and returns a sample of each; the rows are range-partitioned by score in
    the JVM (one shuffle, cached); small jobs find where the fit's tie
    groups begin near the bounds (and move the bounds there, a second
    shuffle, only when scores closer than the float resolution straddle a
    bound); one job fits every part with the PAV kernel and returns its
    blocks, which the driver pools. Nothing but samples and blocks reaches
    the driver.
    """
    return _call(_isotonic.fit_isotonic, df, (score_col, label_col, weight_col),
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
    partition order (:mod:`fastcal._engine.logistic`). ``max_iter`` and
    ``tol`` as in :class:`fastcal.PlattScaling`.
    """
    return _call(_logistic.fit_platt, df, (score_col, label_col, weight_col),
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
    return _call(_logistic.fit_beta, df, (prob_col, label_col, weight_col),
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
    return _call(_binned.fit_histogram, df, (prob_col, label_col, weight_col),
                 ("prob_col", "label_col", "weight_col"), n_bins=n_bins, strategy=strategy)


def _metric(driver, df, label_col, prob_col, weight_col, **kwargs):
    return _call(driver, df, (prob_col, label_col, weight_col), ("prob_col", "label_col", "weight_col"), **kwargs)


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
    return _metric(_binned.calibration_curve, df, label_col, prob_col, weight_col, pos_label=pos_label,
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
    return _metric(_binned.expected_calibration_error, df, label_col, prob_col, weight_col, n_bins=n_bins,
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
    return _metric(_binned.brier_score_loss, df, label_col, prob_col, weight_col, pos_label=pos_label)


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
    return _metric(_binned.log_loss, df, label_col, prob_col, weight_col, pos_label=pos_label, normalize=normalize)


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
    return _metric(_binned.brier_decomposition, df, label_col, prob_col, weight_col, n_bins=n_bins,
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
    return _metric(_binned.smooth_ece, df, label_col, prob_col, weight_col, bandwidth=bandwidth)


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
    return _metric(_decomposition.score_decomposition, df, label_col, prob_col, weight_col, scoring=scoring)


def _corp_fit_columns(chunk):
    """A validated metrics chunk as the isotonic fit's columns: float64 predictions, 0/1 labels (uint8), weights."""
    p, labels, w = chunk
    return (p.astype(np.float64), (labels != 0).view(np.uint8), w), None


def corp_reliability(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
) -> CorpReliabilityResult:
    r""":func:`fastcal.corp_reliability` of a DataFrame's columns (binary, no resampling band): the CORP curve.

    The curve is the PAV fit :math:`\hat p` of the labels on the
    probabilities (Dimitriadis, Gneiting & Jordan 2021, PNAS 118(8)
    e2016191118): ``x`` the edges of the fit's blocks, ``y`` the recalibrated
    probability at each, computed by :func:`fit_isotonic`'s exact range-partitioned
    fit after the in-memory checks of the columns (probabilities in [0, 1],
    labels {0, 1} or {-1, 1}). ``x`` equals the in-memory curve's bit for bit,
    ``y`` to the rounding of the blocks' sums (added in another order).
    The bands (``n_resamples``) redraw every row and are not offered here.
    """
    from .decomposition import CorpReliabilityResult

    rows = SparkRows.from_columns(df, (prob_col, label_col, weight_col), ("prob_col", "label_col", "weight_col"))
    try:
        data = _binned.Metrics(rows, rows.dtypes[0], weight_col is not None, None)
        try:
            fit_rows, _ = data.rows.convert(_corp_fit_columns)
            try:
                iso = _isotonic.fit_isotonic(fit_rows, x_dtype=np.float64, weighted=data.weighted,
                                             out_of_bounds="clip")
            finally:
                fit_rows.release()
        finally:
            data.release()
    finally:
        rows.release()
    return CorpReliabilityResult(x=np.asarray(iso.X_thresholds_, dtype=np.float64),
                                 y=np.asarray(iso.y_thresholds_, dtype=np.float64), lower=None, upper=None,
                                 level=0.9, band="consistency", n_resamples=0)


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
    merged in score order on the driver (:mod:`fastcal._engine.decomposition`):
    equal to the in-memory AUC bit for bit without weights, to the rounding
    of the sums with them. ``n_partitions`` score ranges (the result does not
    depend on it).
    """
    return _metric(_decomposition.roc_auc_score, df, label_col, score_col, weight_col, pos_label=pos_label,
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
) -> CalibrationReport:
    """:func:`fastcal.calibration_report` of a DataFrame's columns (binary).

    One validation pass, one bin table, the exact AUC of :func:`roc_auc_score`,
    both CORP decompositions from one exact isotonic fit, and the calibration
    slope and intercept from Newton passes over the cached logits
    (:func:`fastcal._engine.decomposition.calibration_report`): the in-memory
    report, sums to their rounding and the slope to the solver's tolerance.
    """
    return _metric(_decomposition.calibration_report, df, label_col, prob_col, weight_col, n_bins=n_bins,
                   strategy=strategy, pos_label=pos_label)


# ---------------------------------------------------------------------------
# ECCE, calibration ratio, report by segment: the drivers of fastcal._engine.segments.
# ---------------------------------------------------------------------------


def ecce(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    n_partitions: int | None = None,
) -> ECCEResult:
    """:func:`fastcal.ecce` of a DataFrame's columns: the ECCE, its sigma and p-value.

    The rows are range-partitioned by probability in the JVM (as
    :func:`fit_isotonic` does: equal probabilities are never split), each
    partition's task returns its sum and the extremes of its running sums, and
    the driver merges them in score order by prefix offsets
    (:mod:`fastcal._engine.segments`): equal to the in-memory result to the
    rounding of the float64 sums. ``n_partitions``: probability ranges (the
    result does not depend on it).
    """
    return _metric(_segments.ecce, df, label_col, prob_col, weight_col, n_partitions=n_partitions)


def calibration_ratio(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    adjust_unjoined: bool = False,
) -> float:
    """:func:`fastcal.calibration_ratio` of a DataFrame's columns: per-partition sums, added on the driver."""
    return _metric(_segments.calibration_ratio, df, label_col, prob_col, weight_col, adjust_unjoined=adjust_unjoined)


def _group_numbers(df, group_col):
    """``(df with an int column numbering group_col, its name, the values by number)`` for a non-numeric column.

    The distinct values are collected (one small job) and ordered as :func:`fastcal.segment_report` orders a
    NumPy array of them (strings), or sorted (other objects: dates, decimals); a missing value, null, is last. Each
    row gets its value's number by a broadcast join.
    """
    from .multicalibration import group_codes

    values = [r[0] for r in df.select(group_col).distinct().collect()]
    present = [v for v in values if v is not None]
    array = np.array(present)
    ordered = sorted(present) if array.dtype.kind == "O" else group_codes(array, "groups")[1] if present else []
    if len(present) < len(values):
        ordered.append(None)
    number = _temp_name("g")
    value = _temp_name("v")
    session = df.sparkSession
    table = session.createDataFrame([(v, i) for i, v in enumerate(ordered) if v is not None],
                                    T.StructType([T.StructField(value, df.schema[group_col].dataType),
                                                  T.StructField(number, T.LongType())]))
    out = df.join(F.broadcast(table), df[group_col] == table[value], "left").drop(value)
    if ordered and ordered[-1] is None:
        out = out.withColumn(number, F.coalesce(F.col(number), F.lit(len(ordered) - 1).cast("long")))
    return out, number, ordered


def segment_report(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    group_col: str,
    *,
    weight_col: str | None = None,
    n_bins: int = 10,
    n_partitions: int | None = None,
) -> SegmentReport:
    """:func:`fastcal.segment_report` of a DataFrame's columns: one row per group, in the in-memory order.

    The groups are numbered as the in-memory function numbers the whole
    column, the rows are shuffled so that each partition holds whole groups,
    and each partition's task runs the in-memory report on its rows
    (:mod:`fastcal._engine.segments`): ``n`` exact, the rest to the rounding
    of a group's sums. A numeric or boolean ``group_col`` is used as it is
    (no nulls); any other column is numbered first: strings in the order the
    in-memory function gives a NumPy array of them, other values (dates)
    sorted; nulls are one group, last.
    """
    fields = {f.name: f for f in df.schema.fields} if isinstance(df, DataFrame) else {}
    if group_col in fields and type(fields[group_col].dataType) not in _NUMPY_OF_SPARK:
        numbered, column, ordered = _group_numbers(df, group_col)
        report = _call(_segments.segment_report, numbered, (prob_col, label_col, weight_col, column),
                       ("prob_col", "label_col", "weight_col", "group_col"), n_bins=n_bins, n_partitions=n_partitions)
        return dataclasses.replace(report, groups=[ordered[int(g)] for g in report.groups])
    return _call(_segments.segment_report, df, (prob_col, label_col, weight_col, group_col),
                 ("prob_col", "label_col", "weight_col", "group_col"), n_bins=n_bins, n_partitions=n_partitions)


def multicalibration_error(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    segment_cols: str | Sequence[str],
    *,
    weight_col: str | None = None,
    numerical: str | Sequence[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 3,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
    n_partitions: int | None = None,
) -> MulticalibrationResult:
    """:func:`fastcal.multicalibration_error` of a DataFrame's columns, ``segment_cols`` the features.

    The features' value orders, collapsed categories and quantile bins come
    from reductions on the driver (the bins are NumPy's percentiles of the
    whole column, exactly), each partition's cells are summed in its task,
    and the per-segment running sums come from a range partition by
    probability in the JVM, merged per segment by prefix offsets
    (:mod:`fastcal._engine.segments`): the in-memory segments and counts
    exactly, the ECCEs to ~1e-12 relative. A non-numeric feature (strings) is
    numbered in the JVM first, as in :func:`segment_report`; its labels are
    its values (null: ``"__NA"``, collapsed values: ``"__OTHER"``, as in
    memory). Numeric features hold no nulls.
    """
    names = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols)
    fields = {f.name: f for f in df.schema.fields} if isinstance(df, DataFrame) else {}
    frame, columns, numbered = df, [], {}
    for name in names:
        if name in fields and type(fields[name].dataType) not in _NUMPY_OF_SPARK:
            frame, column, ordered = _group_numbers(frame, name)
            numbered[name] = ordered
            columns.append(column)
        else:
            columns.append(name)
    rows = SparkRows.from_columns(frame, (prob_col, label_col, weight_col, *columns),
                                  ("prob_col", "label_col", "weight_col",
                                   *(f"segment_cols[{i}]" for i in range(len(names)))))
    try:
        result = _segments.multicalibration_error(
            rows, x_dtype=rows.dtypes[0], weighted=weight_col is not None, names=names, numerical=numerical,
            max_depth=max_depth, max_values_per_segment_feature=max_values_per_segment_feature,
            min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments,
            n_partitions=n_partitions)
    finally:
        rows.release()
    if not numbered:
        return result

    def label(name, value):
        if name not in numbered:
            return value
        if value == -1:  # the collapsed values (the least number less 1, as for any numeric feature)
            return OTHER
        original = numbered[name][int(value)]
        return MISSING if original is None else original

    values = [{name: label(name, v) for name, v in seg.items()} for seg in result.segment_values]
    return dataclasses.replace(result, segment_values=values)
