"""Parquet files, with pyarrow (the ``io`` extra), imported only when a Parquet file is read or written.

pyarrow decodes a row group at a time, so a row group must fit in memory;
batches of fewer rows are cut from it. Row groups are read one at a time with
``ParquetFile.read_row_group`` (``iter_batches`` keeps buffers alive: its
memory grows with the file), and numeric columns are viewed in their Arrow
buffers, not converted.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .base import DataError, Piece, Reader, Writer, arrow_table, arrow_to_numpy, new_target

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
    for table in _row_groups(pf, list(columns), chunk_rows):
        out = arrow_to_numpy(table, path, columns, offset, error=ValueError)
        offset += table.num_rows
        yield {c: out[c] for c in columns}


def _row_groups(pf, columns, rows):
    """Tables of at most ``rows`` rows of the ``ParquetFile`` ``pf``, a row group at a time."""
    for i in range(pf.metadata.num_row_groups):
        table = pf.read_row_group(i, columns=columns)
        for lo in range(0, table.num_rows, rows):
            yield table.slice(lo, rows)
        del table


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
        for table in _row_groups(self._file, list(columns) if columns else None, self.batch_rows):
            yield arrow_to_numpy(table, self.path, numeric, offset)
            offset += table.num_rows

    def pieces(self):
        offset = 0
        for table in _row_groups(self._file, None, self.batch_rows):
            yield ParquetPiece(table, offset)
            offset += table.num_rows
        if not offset:
            yield ParquetPiece(self._file.schema_arrow.empty_table(), 0)


class ParquetPiece(Piece):
    """Rows of a Parquet file as a pyarrow ``Table``: written on with the same Arrow types and values."""

    def __init__(self, table, offset):
        super().__init__(table, offset, table.num_rows)

    def numbers(self, name, path):
        column = self._batch.column(self._batch.column_names.index(name))
        return self.numbers_of(column, name, path)


class ParquetWriter(Writer):
    """Every column of the batches, as a Parquet file."""

    def __init__(self, path):
        self.target = new_target(path, ".parquet")
        self._writer = None

    def write(self, batch):
        pq = pyarrow_parquet()
        table = arrow_table(batch)
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.target.tmp, table.schema)
        self._writer.write_table(table)

    def _close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None
