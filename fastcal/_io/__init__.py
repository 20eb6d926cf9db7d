"""fastcal's file I/O: the readers and atomic writers behind the command line and the out-of-core fits.

One module per format, each with its reader and writer, over what they share:

- :mod:`.base`: :class:`UsageError` and :class:`DataError` (messages name
  the file, column and row), the :class:`Reader` and :class:`Writer`
  interfaces, :func:`check_numeric_column`, :func:`read_columns`;
- :mod:`.atomic`: :class:`AtomicTarget`, a temporary file renamed over the
  target when complete (also for model files, :mod:`fastcal._persist`);
- :mod:`.groups`: the types of CSV group columns, as Parquet, pandas and
  Spark infer them (:meth:`Reader.group_column`, :meth:`Reader.prepare_groups`);
- :mod:`.csv`, :mod:`.parquet`, :mod:`.npy`, :mod:`.npz`: the formats;
  :func:`iter_npy`, :func:`npy_info` and :func:`iter_parquet` are the
  chunk readers of :mod:`fastcal.outofcore` too.

Readers yield *batches*: dicts of column name to 1-D ndarray. Writers write to
a temporary file next to the target and rename it on ``commit()``, so no
partial output is ever left. pyarrow (the ``io`` extra) is imported only when
a CSV or Parquet file is read or written.

Internal API (for :mod:`fastcal.cli` and :mod:`fastcal.outofcore`):
:data:`FORMATS`, :func:`format_of`, :func:`open_input`, :func:`open_output`,
:func:`read_columns`, :func:`check_numeric_column`, :func:`check_output_dir`, :func:`display_name`,
:func:`optional_pyarrow`, :func:`new_target`, :class:`AtomicTarget`,
:class:`Reader`, :class:`Writer`, :class:`UsageError`, :class:`DataError`,
:data:`BATCH_ROWS`, :func:`npy_info`, :func:`iter_npy`, :func:`iter_parquet`,
:func:`pyarrow_parquet`.
"""

from __future__ import annotations

import os

from .atomic import AtomicTarget
from .base import (
    BATCH_ROWS,
    DataError,
    Reader,
    UsageError,
    Writer,
    check_numeric_column,
    check_output_dir,
    display_name,
    new_target,
    optional_pyarrow,
    read_columns,
)
from .csv import CsvWriter, csv_reader
from .npy import NpyReader, NpyWriter, iter_npy, npy_info
from .npz import NpzReader, NpzWriter
from .parquet import ParquetReader, ParquetWriter, iter_parquet, pyarrow_parquet

__all__ = [
    "BATCH_ROWS",
    "FORMATS",
    "AtomicTarget",
    "DataError",
    "Reader",
    "UsageError",
    "Writer",
    "check_numeric_column",
    "check_output_dir",
    "display_name",
    "format_of",
    "iter_npy",
    "iter_parquet",
    "new_target",
    "npy_info",
    "open_input",
    "open_output",
    "optional_pyarrow",
    "pyarrow_parquet",
    "read_columns",
]

#: File formats by extension.
FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy", ".npz": "npz"}


def format_of(path, role):
    """The format of ``path`` by its extension (``-``: CSV on stdin or stdout).

    Parameters
    ----------
    path : str
    role : {"input", "output"}
        For the message.

    Returns
    -------
    str
        A value of :data:`FORMATS`.

    Raises
    ------
    UsageError
        For an unknown extension, or Parquet without pyarrow.
    """
    if path == "-":
        return "csv"
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise UsageError(f"{path}: unknown {role} format {ext or '(no extension)'!r}; "
                         "use .csv, .parquet, .npy or .npz (or - for CSV on stdin/stdout)")
    fmt = FORMATS[ext]
    if fmt == "parquet" and optional_pyarrow() is None:
        raise UsageError(f'{path}: Parquet files need pyarrow; install it with pip install "fastcal[io]"')
    return fmt


def open_input(path, batch_rows=BATCH_ROWS):
    """A :class:`Reader` for ``path``, by its extension (``-``: CSV on stdin).

    Parameters
    ----------
    path : str
    batch_rows : int, optional
        Rows per batch.

    Raises
    ------
    UsageError
        For an unknown format or a missing file.
    DataError
        For a file that is not of its format (read as far as its header).
    """
    fmt = format_of(path, "input")
    if path != "-" and not os.path.isfile(path):
        if os.path.exists(path):  # a directory, or a pipe such as <(zcat data.csv.gz): it is read more than once
            raise UsageError(f"{path}: not a regular file; pipe CSV into stdin and give - as the input instead")
        raise UsageError(f"{path}: no such file")
    if fmt == "csv":
        reader = csv_reader(path)
    else:
        reader = {"parquet": ParquetReader, "npy": NpyReader, "npz": NpzReader}[fmt](path)
    reader.batch_rows = batch_rows
    return reader


def open_output(path, output_columns):
    """A :class:`Writer` for ``path``, by its extension (``-``: CSV on stdout).

    CSV, Parquet and ``.npz`` files get every column of the batches written;
    a ``.npy`` file gets ``output_columns`` only, as a 1-D array (one column)
    or a 2-D one.

    Raises
    ------
    UsageError
        For an unknown format or a missing directory.
    """
    fmt = format_of(path, "output")
    if fmt == "parquet":
        return ParquetWriter(path)
    if fmt == "npy":
        return NpyWriter(path, output_columns)
    if fmt == "npz":
        return NpzWriter(path)
    return CsvWriter(path)
