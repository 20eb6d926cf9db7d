"""Parquet files, with pyarrow (the ``io`` extra), imported only when a Parquet file is read or written.

pyarrow decodes a row group at a time, so a row group must fit in memory;
batches of fewer rows are cut from it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .base import DataError, Reader, Writer, arrow_to_numpy, new_target, record_batch

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from numpy.typing import NDArray


def pyarrow_parquet():
    """``pyarrow.parquet``; ``ImportError`` saying how to install it when pyarrow is missing."""
    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError('Parquet files need pyarrow; install it with pip install "fastcal[io]".') from exc
    return pq


def iter_parquet(
    path: str | os.PathLike[str], columns: Sequence[str], chunk_rows: int
) -> Iterator[dict[str, NDArray[Any]]]:
    """Chunks (dicts of column name to ndarray) of a Parquet file, one row group at a time.

    Needs pyarrow (the ``io`` extra). Null values raise ``ValueError`` naming
    the column and the row.

    Parameters
    ----------
    path : str or os.PathLike
    columns : list of str
        The columns to read, in the order of the chunks' keys.
    chunk_rows : int
        Rows per chunk (at most: a chunk does not span row groups).

    Yields
    ------
    dict of str to ndarray

    Raises
    ------
    KeyError
        For a column the file does not have.
    ValueError
        For a null value.
    """
    pq = pyarrow_parquet()
    pf = pq.ParquetFile(path)
    names = pf.schema_arrow.names
    for c in columns:
        if c not in names:
            raise KeyError(c)
    offset = 0
    for batch in pf.iter_batches(batch_size=chunk_rows, columns=list(columns)):
        out = arrow_to_numpy(batch, path, columns, offset, error=ValueError)
        offset += batch.num_rows
        yield {c: out[c] for c in columns}


class ParquetReader(Reader):
    """A Parquet file's columns, ``batch_rows`` rows at a time; ``n_rows`` from its metadata."""

    def __init__(self, path):
        pq = pyarrow_parquet()
        self.path = path
        try:
            self._file = pq.ParquetFile(path)
        except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a bad file
            raise DataError(f"{path}: not a readable Parquet file ({str(exc).splitlines()[0]})") from None
        self.names = list(self._file.schema_arrow.names)
        self.n_rows = self._file.metadata.num_rows

    def batches(self, columns=None, numeric=()):
        offset = 0
        for batch in self._file.iter_batches(batch_size=self.batch_rows, columns=list(columns) if columns else None):
            yield arrow_to_numpy(batch, self.path, numeric, offset)
            offset += batch.num_rows


class ParquetWriter(Writer):
    """Every column of the batches, as a Parquet file."""

    def __init__(self, path):
        self.target = new_target(path, ".parquet")
        self._writer = None

    def write(self, batch):
        pq = pyarrow_parquet()
        rb = record_batch(batch)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.target.tmp, rb.schema)
        self._writer.write_batch(rb)

    def _close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
