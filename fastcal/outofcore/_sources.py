"""The sources of an out-of-core fit: :class:`Columns` read in chunks from arrays, ``.npy`` files or Parquet, and the
chunk and partition sizes of a memory budget (:func:`budget_rows`)."""

from __future__ import annotations

import numbers
import os

import numpy as np

from .._engine import fit_dtype, flat_column
from .._io import iter_npy, iter_parquet, npy_info, pyarrow_parquet
from .._core.params import Integer, check

__all__ = ["DEFAULT_MEMORY_BUDGET", "Columns", "array_source", "budget_rows", "parquet_source"]

#: Default memory budget of an out-of-core fit, in bytes.
DEFAULT_MEMORY_BUDGET = 256 << 20
#: Bytes of working memory per row of a partition being fitted (input columns,
#: sort buffers, the PAV stack, rows carried over), a generous bound.
_BYTES_PER_ROW_FIT = 64
#: Bytes per row of a chunk being read and split (chunk, bucket ids, split copy).
_BYTES_PER_ROW_READ = 64


class Columns:
    """Scores, labels and weights read in chunks, any number of times.

    ``factory()`` returns an iterator of ``(x, y, w)`` raw chunks (w may be
    None); ``n`` is the number of rows and ``x_dtype`` the dtype the scores
    are fitted in (float32 and float64 kept, anything else float64).
    """

    def __init__(self, factory, n, x_dtype, weighted, chunk_rows=1 << 20):
        self.factory = factory
        self.n = n
        self.chunk_rows = chunk_rows
        self.x_dtype = np.dtype(x_dtype)
        self.weighted = weighted

    def raw_chunks(self):
        """The raw chunks ``(x, y, w)``; ``ValueError`` if they do not hold :attr:`n` rows."""
        read = 0
        for x, y, w in self.factory():
            read += int(np.shape(x)[0]) if np.ndim(x) else 1
            yield x, y, w
        if read != self.n:
            raise ValueError(f"expected {self.n} rows, read {read}")


def array_source(scores, y, sample_weight, chunk_rows, score_name):
    """:class:`Columns` over arrays or paths of .npy files."""
    parts = {}
    n_of = {}
    for name, value in ((score_name, scores), ("y", y), ("sample_weight", sample_weight)):
        if value is None:
            continue
        if isinstance(value, numbers.Number) and name == "sample_weight":
            parts[name] = value
            continue
        if isinstance(value, (str, os.PathLike)):
            path = os.fspath(value)
            shape, dtype, _ = npy_info(path)
            if len(shape) == 2 and shape[1] == 1:
                shape = shape[:1]
            if len(shape) != 1:
                raise ValueError(f"{name} must be a 1-D array (or a single column), got an array of shape {shape}.")
            parts[name] = ("npy", path, dtype)
            n_of[name] = shape[0]
        else:
            arr = flat_column(value, name)
            parts[name] = ("array", arr, arr.dtype)
            n_of[name] = arr.shape[0]
    if len(set(n_of.values())) > 1:
        detail = ", ".join(f"{k} has {v}" for k, v in n_of.items())
        raise ValueError(f"Inconsistent numbers of samples: {detail}.")
    n = n_of[score_name]
    if n == 0:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")

    def stream(spec):
        if not isinstance(spec, tuple):
            while True:
                yield spec
        kind, obj, _ = spec
        if kind == "npy":
            yield from iter_npy(obj, chunk_rows, column=0 if len(npy_info(obj)[0]) == 2 else None)
        else:
            for lo in range(0, n, chunk_rows):
                yield obj[lo : lo + chunk_rows]

    def factory():
        xs = stream(parts[score_name])
        ys = stream(parts["y"])
        ws = stream(parts["sample_weight"]) if "sample_weight" in parts else None
        for x in xs:
            yield x, next(ys), (None if ws is None else next(ws))

    return Columns(factory, n, fit_dtype(parts[score_name][2]), "sample_weight" in parts, chunk_rows)


def parquet_source(path, score_col, label_col, weight_col, chunk_rows):
    """:class:`Columns` over columns of a Parquet file (pyarrow), read in batches of ``chunk_rows`` rows."""
    pq = pyarrow_parquet()
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    cols = [c for c in (score_col, label_col, weight_col) if c is not None]
    for c in cols:
        if c not in schema.names:
            raise ValueError(f"{path}: no column {c!r} (columns: {', '.join(schema.names)})")
    x_type = schema.field(score_col).type
    try:
        x_dtype = np.dtype(x_type.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        x_dtype = np.dtype(np.float64)

    def factory():
        for batch in iter_parquet(path, cols, chunk_rows):
            yield batch[score_col], batch[label_col], (None if weight_col is None else batch[weight_col])

    if not pf.metadata.num_rows:
        raise ValueError(f"{path}: no rows of data")
    return Columns(factory, pf.metadata.num_rows, fit_dtype(x_dtype), weight_col is not None, chunk_rows)


def budget_rows(memory_budget, chunk_rows):
    """``(chunk_rows, part_rows)``: rows read per chunk and rows per partition for ``memory_budget`` bytes.

    Validates both arguments (``None``: the defaults); used by the CLI too.
    """
    memory_budget = check("memory_budget", memory_budget, [Integer(1 << 20), None])
    chunk_rows = check("chunk_rows", chunk_rows, [Integer(1), None])
    if memory_budget is None:
        memory_budget = DEFAULT_MEMORY_BUDGET
    if chunk_rows is None:
        chunk_rows = max(1 << 12, memory_budget // _BYTES_PER_ROW_READ)
    part_rows = max(1 << 12, memory_budget // _BYTES_PER_ROW_FIT)
    return int(chunk_rows), int(part_rows)
