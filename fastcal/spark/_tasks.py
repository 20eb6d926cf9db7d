"""Inside the Spark tasks: a partition's Arrow batches as a chunk, the engine's function run on it on the
task's CPUs, its result (or error) returned as a pickled row; the type maps between NumPy and Spark."""

from __future__ import annotations

import contextlib
import pickle

import numpy as np
from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import types as T

from .._core.parallel import get_num_threads, set_num_threads
from .._engine import bind_chunk


#: How SparkRows caches converted and partitioned rows: Spark SQL's own default (deserialized column batches, in
#: memory while they fit, then on disk). The serialized level (PySpark's MEMORY_AND_DISK) Java-serializes every
#: batch into the heap first: at 10^8 rows with a 4 GiB local driver that ran out of heap.
CACHE_LEVEL = StorageLevel.MEMORY_AND_DISK_DESER

#: Rows per Arrow batch a task returns (a few MB).
_BATCH_ROWS = 1 << 18

SPARK_OF_NUMPY = {
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

NUMPY_OF_SPARK: dict[type, type] = {
    T.DoubleType: np.float64,
    T.FloatType: np.float32,
    T.LongType: np.int64,
    T.IntegerType: np.int32,
    T.ShortType: np.int16,
    T.ByteType: np.int8,
    T.BooleanType: np.bool_,
}


def is_numeric(spark_type) -> bool:
    """Whether a column of ``spark_type`` is numeric or boolean: a type of :data:`NUMPY_OF_SPARK`, read as it is,
    or a decimal, read as a double (:func:`numeric_column`)."""
    return type(spark_type) in NUMPY_OF_SPARK or isinstance(spark_type, T.DecimalType)


def column_type(df, name, label):
    """The Spark type of the numeric column ``name`` of ``df`` (``label``: the argument that named it, in the errors),
    after checking that ``df`` is a DataFrame."""
    if not isinstance(df, DataFrame):
        raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}.")
    fields = {f.name: f for f in df.schema.fields}
    if name not in fields:
        raise ValueError(f"{label}={name!r} is not a column of the DataFrame; its columns are {list(fields)}.")
    spark_type = fields[name].dataType
    if not is_numeric(spark_type):
        raise TypeError(f"{label}={name!r} must be a numeric column, got {spark_type.simpleString()}.")
    return spark_type


def check_output(df, output_col):
    """A TypeError or ValueError unless ``output_col`` is a name for a new column of ``df``."""
    if not isinstance(output_col, str):
        raise TypeError(f"output_col must be a column name (str), got {type(output_col).__name__}.")
    if output_col in df.columns:
        raise ValueError(f"output_col={output_col!r} is already a column of the DataFrame.")


def numeric_column(column, spark_type):
    """``(column as the tasks read it, its NumPy dtype)`` of a numeric column (:func:`is_numeric`): a decimal
    cast to a double in the JVM (its nearest double, as ``float(Decimal)`` gives in Python)."""
    if isinstance(spark_type, T.DecimalType):
        return column.cast("double"), np.dtype(np.float64)
    return column, np.dtype(NUMPY_OF_SPARK[type(spark_type)])



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


def _read_chunk(batches, columns, dtypes, labels, prepare=None):
    """A task's Arrow batches as a chunk: a tuple of 1-D arrays (``None`` for absent columns); then
    ``fn(chunk, *args)`` for each ``(fn, args)`` of ``prepare`` in turn."""
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
    chunk = tuple(chunk)
    for fn, args in prepare or ():
        chunk = fn(chunk, *args)
    return chunk


def _task_id():
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def _result_batch(pid, payload):
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([pa.array([pid], pa.int64()), pa.array([payload], pa.binary())],
                                      names=["pid", "result"])


def map_task(batches, fn, args, columns, dtypes, labels, prepare=None):
    """``fn(chunk, *args)`` on this task's partition (read by :func:`_read_chunk`): one row ``(partition id,
    pickled (ok, result or error))``."""
    pid = _task_id()
    try:
        with _task_threads():  # the conversions of `prepare` too: fastcal's kernels run in them
            result = (True, fn(_read_chunk(batches, columns, dtypes, labels, prepare), *bind_chunk(args, pid)))
    except (ValueError, TypeError, ArithmeticError) as exc:  # the in-memory errors: raised again on the driver
        result = (False, exc)
    yield _result_batch(pid, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))


def convert_task(batches, fn, args, columns, dtypes, labels, out_fields, out_dtypes, prepare=None):
    """``fn(chunk, *args) -> (new_chunk, fact)``: the new chunk's rows, then one row holding the pickled fact."""
    import pyarrow as pa

    pid = _task_id()
    schema = pa.schema([pa.field(name, _arrow_type(dtype)) for name, dtype in zip(out_fields, out_dtypes)]
                       + [pa.field("_fact", pa.binary())])
    try:
        with _task_threads():
            new_chunk, fact = fn(_read_chunk(batches, columns, dtypes, labels, prepare), *bind_chunk(args, pid))
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


def raise_first(results):
    """Re-raise the error of the first chunk that failed (as :class:`fastcal._engine.ListRows` would)."""
    for ok, value in results:
        if not ok:
            raise value
    return [value for _, value in results]
