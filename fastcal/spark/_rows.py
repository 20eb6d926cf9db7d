"""The :class:`fastcal._engine.Rows` of a Spark DataFrame (:class:`SparkRows`), and the call of an engine's driver
on a DataFrame's columns."""

from __future__ import annotations

import contextlib
import functools
import pickle
import weakref
from typing import Any, Callable

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .._engine import bind_chunk
from ._buckets import array_column, partition_keys, temp_name, with_bound_count
from ._tasks import CACHE_LEVEL, SPARK_OF_NUMPY, convert_task, is_numeric, map_task, numeric_column, raise_first


# ---------------------------------------------------------------------------
# The Rows adapter.
# ---------------------------------------------------------------------------


#: The range of the hash that picks :meth:`SparkRows.describe`'s sample of rows.
_HASH_RANGE = 1 << 30

#: Rows of the ``spark.range`` whose partitions :func:`leaf_parallelism` counts: enough for every slice to hold one.
_PROBE_ROWS = 1 << 16

_PARALLELISM: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def leaf_parallelism(spark) -> int:
    """The number of partitions of a ``spark.range`` of :data:`_PROBE_ROWS` rows in ``spark`` (its leaf nodes' default
    parallelism: ``spark.sql.leafNodeDefaultParallelism`` if set, else ``SparkContext.defaultParallelism``), counted
    as its largest ``spark_partition_id() + 1`` by one small job in the JVM: a range cuts its rows into slices of
    equal size, so every slice holds rows."""
    pid = spark.range(0, _PROBE_ROWS).select(F.spark_partition_id().alias("pid"))  # nondeterministic: not in agg
    return int(pid.agg(F.max("pid")).collect()[0][0]) + 1


def default_parallelism(spark) -> int:
    """How many partitions ``spark`` gives a new DataFrame by default (Spark's default parallelism), the same on a
    classic session and on Spark Connect, whose client has no ``SparkContext``: ``spark.default.parallelism``
    where it is set (``SparkContext.defaultParallelism`` is that number then, on every scheduler), else
    :func:`leaf_parallelism` (the cores of a local master, of a cluster's executors, at least 2; one small job).
    Found once per session: the setting is static."""
    try:
        return _PARALLELISM[spark]
    except KeyError:
        pass
    found = spark.conf.get("spark.default.parallelism", None)
    n = int(found) if found is not None else leaf_parallelism(spark)
    _PARALLELISM[spark] = n
    return n


class SparkRows:
    """The :class:`fastcal._engine.Rows` of a Spark DataFrame: one chunk per partition.

    Built by :meth:`from_columns` on a user's DataFrame. Chunks are the
    partitions' columns as NumPy arrays, in the order of the partition ids;
    :meth:`map` and :meth:`convert` run the engine's function in a
    ``mapInArrow`` task per partition, :meth:`convert` caches its result,
    :meth:`partition` shuffles the rows in the JVM so that partition ``j``
    holds exactly the keys in ``[bounds[j - 1], bounds[j])``, and
    :meth:`release` unpersists what this object cached. The engine's
    optional :meth:`convert_later` and :meth:`describe` let a driver cut the
    raw rows in the JVM before any pass of Python over them.

    Parameters
    ----------
    df : pyspark.sql.DataFrame
        Its columns, in order, are the chunk's columns that are not ``None``.
    columns : tuple
        The chunk's columns: a column name of ``df``, or ``None`` (absent in every chunk).
    dtypes : tuple of numpy.dtype
        Each column's dtype in a chunk (``None`` columns: ignored); with
        ``prepare``, those its functions give.
    labels : tuple of str
        How errors name each column (the user's argument).
    n_partitions : int, optional
        The number of partitions when it is known (after :meth:`partition`).
    owned : pyspark.sql.DataFrame, optional
        The persisted DataFrame :meth:`release` unpersists.
    prepare : tuple, optional
        ``(read_dtypes, steps)``: the tasks read the columns as
        ``read_dtypes``, then each ``(fn, args)`` of ``steps`` in turn
        makes the chunk ``fn(chunk, *args)`` (:meth:`convert_later`).
    cached : bool
        Whether ``df``'s rows are cached (by the user or by fastcal).
    """

    def __init__(self, df: DataFrame, columns, dtypes, labels, *, n_partitions=None, owned=None, prepare=None,
                 cached=False):
        self._df = df
        self._columns = tuple(columns)
        self._labels = tuple(labels)
        self._n_partitions = n_partitions
        self._owned = owned
        self._cached = cached
        self._prepare = prepare
        if prepare is None:
            self._dtypes = tuple(None if d is None else np.dtype(d) for d in dtypes)
        else:
            self._dtypes = tuple(None if c is None else c.dtype for c in self._empty_chunk())
        self.parallelism = default_parallelism(df.sparkSession)

    @property
    def columns(self) -> tuple:
        """The DataFrame's column names, one per chunk column (``None`` for an absent column)."""
        return self._columns

    @property
    def dtypes(self) -> tuple:
        """The NumPy dtype of each chunk column (``None`` for an absent column)."""
        return self._dtypes

    @property
    def n_rows(self) -> int | None:
        """The number of rows where they are cached (a count of the cache: one quick job), else None (a count
        would compute the DataFrame once more; rows converted later: their conversion may drop rows). The
        engine's optional hint: a Newton fit takes its warm-start subsample in the conversion pass instead of a
        pass of its own."""
        return int(self._df.count()) if self._cached and self._prepare is None else None

    @property
    def cached(self) -> bool:
        """Whether this object holds a DataFrame it cached (released by :meth:`release`)."""
        return self._owned is not None and self._owned.is_cached

    @classmethod
    def from_columns(cls, df: DataFrame, columns, labels, *, pinned: bool = False) -> SparkRows:
        """Rows of ``df``'s ``columns`` (names, or ``None`` for an absent column); ``labels`` name them in errors.
        ``pinned``: ``df`` reads the same rows in every job though it is not cached itself (made from a
        :func:`pin_rows` DataFrame by deterministic steps)."""
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
            if not is_numeric(fields[name].dataType):
                raise TypeError(f"{label}={name!r} must be a numeric or boolean column, got "
                                f"{fields[name].dataType.simpleString()}.")
            column, dtype = numeric_column(df[name], fields[name].dataType)
            internal = f"_c{i}"
            selected.append(column.alias(internal))
            names.append(internal)
            dtypes.append(dtype)
        return cls(df.select(*selected), names, dtypes, labels,
                   cached=pinned or df.storageLevel != StorageLevel.NONE)

    @property
    def dataframe(self) -> DataFrame:
        """The DataFrame of the chunks' columns (internal names ``_c0``, ``_c1``, ...)."""
        return self._df

    def _read(self):
        """The columns' dtypes as read in the tasks, and the preparation then applied (or None)."""
        if self._prepare is None:
            return self._dtypes, None
        return self._prepare

    def _empty_chunk(self):
        dtypes, prepare = self._read()
        chunk = tuple(None if c is None else np.empty(0, dtype=d) for c, d in zip(self._columns, dtypes))
        for fn, args in prepare or ():
            chunk = fn(chunk, *args)
        return chunk

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
                    out.append((True, fn(self._empty_chunk(), *bind_chunk(args, pid))))
                except (ValueError, TypeError, ArithmeticError) as exc:
                    out.append((False, exc))
        return out

    def map(self, fn: Callable[..., Any], *args: Any) -> list:
        """``fn(chunk, *args)`` for every partition, in a ``mapInArrow`` task; the results in partition order."""
        dtypes, prepare = self._read()
        task = functools.partial(map_task, fn=fn, args=args, columns=self._columns, dtypes=dtypes,
                                 labels=self._labels, prepare=prepare)
        schema = T.StructType([T.StructField("pid", T.LongType()), T.StructField("result", T.BinaryType())])
        rows = self._df.mapInArrow(task, schema).collect()
        pairs = [(r["pid"], pickle.loads(r["result"])) for r in rows]
        return raise_first(self._by_partition(pairs, fn, args))

    def convert(self, fn: Callable[..., Any], *args: Any) -> tuple[SparkRows, list]:
        """``fn(chunk, *args) -> (new_chunk, fact)`` per partition; the new chunks cached, the facts returned.

        The new chunks' dtypes are those ``fn`` gives on an empty chunk (run
        here first). Each task returns its rows and one more row that carries
        its pickled fact; the result is persisted and the facts read back
        from it, so ``fn`` runs once per partition.
        """
        probe, _ = fn(self._empty_chunk(), *bind_chunk(args, 0))
        out_columns: list[str | None] = []
        out_fields: list[str] = []
        out_dtypes: list[np.dtype] = []
        for i, col in enumerate(probe):
            if col is None:
                out_columns.append(None)
                continue
            dtype = np.dtype(col.dtype)
            if dtype not in SPARK_OF_NUMPY:
                raise TypeError(f"fastcal.spark cannot keep a chunk column of dtype {dtype}.")
            out_columns.append(f"_c{i}")
            out_fields.append(f"_c{i}")
            out_dtypes.append(dtype)
        schema = T.StructType([T.StructField(name, SPARK_OF_NUMPY[d]) for name, d in zip(out_fields, out_dtypes)]
                              + [T.StructField("_fact", T.BinaryType())])
        dtypes, prepare = self._read()
        task = functools.partial(convert_task, fn=fn, args=args, columns=self._columns, dtypes=dtypes,
                                 labels=self._labels, out_fields=out_fields, out_dtypes=out_dtypes, prepare=prepare)
        converted = self._df.mapInArrow(task, schema).persist(CACHE_LEVEL)
        try:
            facts = [pickle.loads(r["_fact"]) for r in converted.where(F.col("_fact").isNotNull()).select(
                "_fact").collect()]
            pairs = [(f[0], (f[1], f[2])) for f in facts]

            def fact_of_empty(chunk, *a):
                return fn(chunk, *a)[1]

            results = raise_first(self._by_partition(pairs, fact_of_empty, args))
        except BaseException:
            converted.unpersist()
            raise
        data = converted.where(F.col("_fact").isNull()).select(*out_fields)
        labels = tuple(self._labels[i] if i < len(self._labels) else f"column {i}" for i in range(len(probe)))
        rows = SparkRows(data, out_columns, [None if c is None else c.dtype for c in probe], labels,
                         n_partitions=len(results), owned=converted, cached=True)
        return rows, results

    def convert_later(self, fn: Callable[..., Any], *args: Any) -> SparkRows:
        """The rows of ``fn(chunk, *args)`` (a new chunk), converted in the task of each later pass, not now.

        The engine's optional method for a backend that cuts raw rows
        itself: :meth:`partition` then cuts the raw key column in the JVM
        (``fn`` must convert each row on its own, in order, keeping the
        key's order). The selected columns of a DataFrame that is not cached
        are cached here (in the JVM, as they are), so that every pass reads
        the same rows once computed; :meth:`release` unpersists them.
        """
        df, owned = self._df, None
        if not self._cached:
            df = owned = self._df.persist(CACHE_LEVEL)
        dtypes, steps = self._read()
        return SparkRows(df, self._columns, dtypes, self._labels, n_partitions=self._n_partitions, owned=owned,
                         prepare=(dtypes, (*(steps or ()), (fn, args))), cached=True)

    def describe(self, key: int, size: int, largest: int | None = None) -> tuple:
        """``(rows, chunks, sample, most)``: the number of rows and of chunks (partitions up to the last that holds
        rows, by ``spark_partition_id``: trailing empty partitions are not counted), about ``size`` values of column
        ``key`` (non-null, as the DataFrame holds them) and the largest value of column ``largest`` (None: not
        asked); two jobs in the JVM. The engine's optional method, with :meth:`convert_later`."""
        pid = temp_name("pid")  # a nondeterministic expression: projected, then aggregated
        aggregates = [F.count(F.lit(1)), F.max(pid)] + ([] if largest is None else [F.max(self._columns[largest])])
        found = self._df.withColumn(pid, F.spark_partition_id()).agg(*aggregates).collect()[0]
        n = int(found[0])
        n_chunks = 1 if found[1] is None else int(found[1]) + 1
        most = None if largest is None or found[2] is None else float(found[2])
        # Rows kept by a hash of their position, not DataFrame.sample: its Bernoulli draws come from the generator
        # of rand(seed) with the same seed per partition, so a score column made by rand(0) would be sampled
        # exactly where it is below the fraction (measured: 3 partitions of 2 10^7 rows got 2717, 2717 and the rest)
        kept = min(_HASH_RANGE, -(-size * _HASH_RANGE // max(n, 1)))
        position = F.pmod(F.xxhash64(F.monotonically_increasing_id()), F.lit(_HASH_RANGE))
        sample = self._df.where(position < kept).select(self._columns[key]).toArrow().column(0)
        return n, n_chunks, sample.drop_null().to_numpy(), most

    def partition(self, bounds, key: int = 0) -> SparkRows:
        """Rows cut by column ``key``: partition ``j`` holds the rows with ``bounds[j - 1] <= v < bounds[j]``.

        Each row's ``j`` is found in the JVM (a binary search over the
        bounds in Spark SQL, :func:`with_bound_count`), then the rows are shuffled by a
        hash partitioning whose keys are chosen so that ``j`` goes to
        partition ``j`` exactly (Spark's partition of a key is
        ``pmod(murmur3(key), n)``; :func:`partition_keys`). Rows converted
        later (:meth:`convert_later`) are cut by their raw key as a double,
        NaN in the last partition (the conversion raises there). The result
        is persisted and released by :meth:`release`; if this object holds
        a cache, the result is computed now, so the caller may release it.
        """
        name = self._columns[key]
        bounds = np.asarray(bounds, dtype=self._dtypes[key])
        n = bounds.shape[0] + 1
        j_col, h_col = temp_name("j"), temp_name("h")
        df = with_bound_count(self._df, F.col(name), bounds, j_col)
        j = F.least(F.col(j_col), F.lit(n - 1))  # NaN: one past the last bucket; null: least skips it
        keys = array_column(np.asarray(partition_keys(n), dtype=np.int32))
        df = df.withColumn(h_col, F.element_at(keys, j + F.lit(1)))
        cut = df.repartition(n, F.col(h_col)).drop(j_col, h_col).persist(CACHE_LEVEL)
        if self._owned is not None:
            cut.count()  # cached now: the caller may release the rows this was cut from
        return SparkRows(cut, self._columns, self._dtypes, self._labels, n_partitions=n, owned=cut,
                         prepare=self._prepare, cached=True)

    def release(self) -> None:
        """Unpersist what this object cached (nothing for a user's DataFrame). Idempotent."""
        if self._owned is not None:
            self._owned.unpersist()
            self._owned = None


@contextlib.contextmanager
def pin_rows(df, columns):
    """A DataFrame of ``df``'s ``columns`` whose rows are the same in every job that reads them, for the drivers
    that read a user's rows more than once before they convert them (the numbering of groups, then their passes).

    A cached ``df`` is that DataFrame. Any other is selected and persisted
    here, and unpersisted when the block ends: a DataFrame need not give
    the same rows twice (``repartition(4).limit(30)``, a nondeterministic
    UDF), and passes that each saw other rows would number a group that one
    pass never saw as missing. MLlib persists its input for the same reason.
    A ``df`` that is not a DataFrame, or lacks one of ``columns`` (names or
    ``None``), is given as it is, for the caller's own error.
    """
    names = [c for c in dict.fromkeys(columns) if c is not None]
    if (not isinstance(df, DataFrame) or df.storageLevel != StorageLevel.NONE
            or not all(isinstance(c, str) and c in df.columns for c in names)):
        yield df
        return
    frame = df.select(*(df[c] for c in names)).persist(CACHE_LEVEL)
    try:
        yield frame
    finally:
        frame.unpersist()


def drive(driver, df, columns, labels, *, pinned=False, **kwargs):
    """``driver(rows, x_dtype=..., weighted=..., **kwargs)`` on the SparkRows of ``df``'s ``columns``
    (the first the scores, the third the weights or None); ``pinned`` as in :meth:`SparkRows.from_columns`."""
    rows = SparkRows.from_columns(df, columns, labels, pinned=pinned)
    try:
        return driver(rows, x_dtype=rows.dtypes[0], weighted=columns[2] is not None, **kwargs)
    finally:
        rows.release()


def drive_metric(driver, df, label_col, prob_col, weight_col, **kwargs):
    """:func:`drive` on the metrics' columns ``(prob_col, label_col, weight_col)``, named as the arguments."""
    return drive(driver, df, (prob_col, label_col, weight_col), ("prob_col", "label_col", "weight_col"), **kwargs)
