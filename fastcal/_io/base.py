"""What the formats share: the two errors, the reader and writer interfaces, checks of numeric columns.

A *batch* is a dict of column name to 1-D ndarray, all of one length, in the
file's column order.
"""

from __future__ import annotations

import contextlib
import os

import numpy as np

from .atomic import AtomicTarget

#: Rows per batch read or written, unless the caller sets ``Reader.batch_rows``.
BATCH_ROWS = 1 << 20


class UsageError(Exception):
    """The caller asked for what is not there: a format, file, directory or column (the CLI's exit status 2)."""


class DataError(Exception):
    """A file's content is bad: not numbers, missing values, NaN, not the format it claims (exit status 1).

    The message names the file, and the column and row (1-based) where it applies.
    """


def display_name(path):
    """``path`` as messages show it: ``<stdin>`` for ``-``."""
    return "<stdin>" if path == "-" else path


def optional_pyarrow():
    """pyarrow, or None when it is not installed (or disabled, for tests, by ``FASTCAL_CLI_NO_PYARROW=1``).

    Imports it only when called: ``import fastcal`` never loads pyarrow.
    """
    if os.environ.get("FASTCAL_CLI_NO_PYARROW") == "1":
        return None
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None
    return pyarrow


def check_numeric_column(values, path, column, offset, *, what="a number"):
    """``values`` as an ndarray of numbers, all finite.

    Parameters
    ----------
    values : array-like
        One column of a batch.
    path : str
        The file, for messages.
    column : str
        The column's name, for messages.
    offset : int
        Rows of the file before this batch: row numbers in messages count from ``offset + 1``.
    what : str, optional
        What a value must be, for the message about one that is not a number.

    Returns
    -------
    ndarray
        ``values`` (bool, integer or float dtype; unchanged).

    Raises
    ------
    DataError
        Naming the first value that is not a number, or not finite.
    """
    arr = np.asarray(values)
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        bad = 0
        for i, v in enumerate(arr.tolist()):
            try:
                float(v)
            except (TypeError, ValueError):
                bad = i
                break
        raise DataError(f"{path}: column {column!r}, row {offset + bad + 1}: {arr[bad]!r} is not {what}")
    if arr.dtype.kind == "f":
        finite = np.isfinite(arr)
        if not finite.all():
            i = int(np.flatnonzero(~finite)[0])
            raise DataError(f"{path}: column {column!r}, row {offset + i + 1}: {arr[i]} is not finite")
    return arr


def _numpy_dtype(arrow_type):
    """The NumPy dtype of a fixed-width numeric Arrow type (None for others, booleans included)."""
    name = str(arrow_type)
    if name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"):
        return np.dtype(name)
    return {"halffloat": np.dtype(np.float16), "float": np.dtype(np.float32),
            "double": np.dtype(np.float64)}.get(name)


def arrow_values(col):
    """A pyarrow ``Array`` or ``ChunkedArray`` as an ndarray.

    Fixed-width numbers without nulls are read from the Arrow buffer directly
    (no copy of one chunk, read-only), booleans unpacked from their bits;
    anything else goes through ``to_numpy`` (nulls as None or NaN).
    """
    if hasattr(col, "chunks"):
        chunks = col.chunks
        if len(chunks) == 1:
            return arrow_values(chunks[0])
        if not chunks:
            dtype = _numpy_dtype(col.type)
            return np.empty(0, dtype=dtype if dtype is not None else object)
        parts = [arrow_values(c) for c in chunks]
        return np.concatenate(parts)
    n = len(col)
    if not col.null_count:
        dtype = _numpy_dtype(col.type)
        if dtype is not None:
            buf = col.buffers()[1]
            return np.frombuffer(buf, dtype=dtype, count=n, offset=col.offset * dtype.itemsize)
        if str(col.type) == "bool":
            bits = np.frombuffer(col.buffers()[1], dtype=np.uint8)
            return np.unpackbits(bits, bitorder="little")[col.offset: col.offset + n].view(np.bool_)
    return col.to_numpy(zero_copy_only=False)


def group_values(col):
    """A pyarrow column of groups (or of any values that are not checked as numbers) as an ndarray: as
    :func:`arrow_values`, but integers with nulls as Python ints and None (not floats and NaN), exactly."""
    import pyarrow.types as t

    if col.null_count and t.is_integer(col.type):
        import pyarrow.compute as pc

        values = np.asarray(arrow_values(pc.fill_null(col, 0))).astype(object)
        values[arrow_values(col.is_null())] = None
        return values
    return arrow_values(col)


def arrow_to_numpy(batch, path, not_null, offset, error=DataError, columns=None):
    """A pyarrow ``RecordBatch`` or ``Table`` as a batch (dict of column name to ndarray, in its order).

    ``error`` (an exception class) names ``path``, the column and the row
    (counting from ``offset + 1``) of the first null value in a column of
    ``not_null``; nulls elsewhere become None or NaN, as pyarrow converts them
    (integers with nulls: Python ints and None, :func:`group_values`).
    ``columns``: only these (default: all).
    """
    out = {}
    items = batch.items() if isinstance(batch, dict) else zip(batch.schema.names, batch.columns)
    for name, col in items:
        if columns is not None and name not in columns:
            continue
        if name in not_null and col.null_count:
            row = offset + int(np.flatnonzero(arrow_values(col.is_null()))[0]) + 1
            raise error(f"{display_name(path)}: column {name!r}, row {row}: missing value")
        out[name] = arrow_values(col) if name in not_null else group_values(col)
    return out


def arrow_array(values):
    """An ndarray (or a pyarrow array, returned as it is) as a pyarrow ``Array``."""
    import pyarrow as pa

    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        return values
    values = np.asarray(values)
    if values.dtype.kind in "iuf" and values.dtype.byteorder in "=|":
        values = np.ascontiguousarray(values)
        return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), values.shape[0],
                                     [None, pa.py_buffer(values)])
    return pa.array(values)


def arrow_table(batch):
    """A batch (dict of column name to ndarray or pyarrow array), or a pyarrow ``Table``, as a ``Table``."""
    import pyarrow as pa

    if isinstance(batch, pa.Table):
        return batch
    return pa.Table.from_arrays([arrow_array(v) for v in batch.values()], names=list(batch))


def record_batch(batch):
    """A batch (dict of column name to ndarray) as a pyarrow ``RecordBatch``."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([arrow_array(v) for v in batch.values()], names=list(batch))


class Piece:
    """Rows of an input file, for ``fastcal apply``: every column as it was read, and the score columns as numbers.

    Attributes
    ----------
    n : int
        Rows.
    offset : int
        Rows of the file before these.
    """

    def __init__(self, batch, offset, n):
        self._batch = batch
        self.offset = offset
        self.n = n

    def numbers(self, name, path):
        """Column ``name`` as an ndarray of numbers (checked by :func:`check_numeric_column`)."""
        return self.numbers_of(self._batch[name], name, path)

    def numbers_of(self, values, name, path):
        """``values`` (an ndarray or a pyarrow column) as checked numbers, the messages naming ``name``."""
        if not isinstance(values, np.ndarray):
            values = arrow_to_numpy({name: values}, path, (name,), self.offset)[name]
        return check_numeric_column(values, display_name(path), name, self.offset)

    def batch(self):
        """Every column, as read: a dict of name to ndarray, or a pyarrow ``Table``."""
        return self._batch

    def groups(self, name, path):
        """Column ``name`` as group values (an ndarray; see :meth:`Reader.group_column`)."""
        batch = self.batch()
        if isinstance(batch, dict):
            return np.asarray(batch[name])
        return group_values(batch.column(batch.column_names.index(name)))


def with_columns(batch, new):
    """``batch`` (a dict or a pyarrow ``Table``) with the columns of the dict ``new`` appended."""
    if isinstance(batch, dict):
        return {**batch, **new}
    for name, values in new.items():
        batch = batch.append_column(name, arrow_array(values))
    return batch


def check_output_dir(path):
    """Raise :class:`UsageError` unless the directory of the output ``path`` exists (``-``: stdout, fine)."""
    if path == "-":
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise UsageError(f"{path}: directory {directory} does not exist")


def new_target(path, suffix):
    """:class:`~fastcal._io.atomic.AtomicTarget` for ``path``, a missing directory raising :class:`UsageError`."""
    try:
        return AtomicTarget(path, suffix)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None


class Reader:
    """The columns of one input file, read in batches; made by :func:`fastcal._io.open_input`.

    Attributes
    ----------
    path : str
        The file (``-``: stdin).
    names : list of str
        Its columns, in order.
    n_rows : int or None
        Its number of rows, None if unknown before reading (CSV, ``.npz``).
    batch_rows : int
        Rows per batch (at most); may be changed before reading.
    """

    names: list
    n_rows = None
    batch_rows = BATCH_ROWS

    def require(self, columns):
        """Raise :class:`UsageError`, listing the file's columns, unless it has every one of ``columns``."""
        for c in columns:
            if c not in self.names:
                shown = ", ".join(map(str, self.names[:20])) + (", ..." if len(self.names) > 20 else "")
                raise UsageError(f"{display_name(self.path)}: no column {c!r} (columns: {shown})")

    def batches(self, columns=None, numeric=()):
        """Yield the file's rows as batches, from the start (each call reads the file again).

        Parameters
        ----------
        columns : list of str, optional
            The columns to read (default: all); batches keep the file's column order.
        numeric : collection of str
            Columns that must hold numbers: read as numbers where the format
            has text (CSV), and a missing value there raises :class:`DataError`.
            Non-finite values are left to :func:`check_numeric_column`.

        Yields
        ------
        dict of str to ndarray
        """
        raise NotImplementedError

    def group_column(self, values):
        """The whole column ``values`` of groups, as :meth:`batches` read it, as group values: unchanged where
        the format has types; CSV text typed as Parquet, pandas and Spark infer it (:mod:`fastcal._io.groups`),
        and a CSV column read as numbers too (float64) as integers when every value is one."""
        return values

    def prepare_groups(self, names):
        """Before :meth:`pieces`: make :meth:`Piece.groups` of the columns ``names`` type their values as
        :meth:`group_column` types the whole column (CSV: a pass over the file to decide their types)."""

    def count_rows(self):
        """The number of rows (a pass over the file where ``n_rows`` is not known)."""
        if self.n_rows is not None:
            return self.n_rows
        return sum(len(b[self.names[0]]) for b in self.batches(self.names[:1], ()))

    def pieces(self):
        """Yield the file's rows as :class:`Piece` objects, every column as read, at least one (maybe empty)."""
        offset = 0
        for batch in self.batches(None, ()):
            n = len(next(iter(batch.values()))) if batch else 0
            yield Piece(batch, offset, n)
            offset += n


class Writer:
    """An output file written batch by batch to a temporary file; made by :func:`fastcal._io.open_output`.

    Nothing appears at the target until :meth:`commit`; :meth:`abort` (after
    any failure) removes the temporary file, so no partial file is ever left
    (stdout excepted).
    """

    target = None  # an AtomicTarget; None for stdout

    def write(self, batch):
        """Append the rows of ``batch`` (the same columns every time): a dict of name to ndarray, or a pyarrow ``Table``."""
        raise NotImplementedError

    def write_piece(self, piece, new):
        """Append the rows of ``piece`` (a :class:`Piece`) with the columns of the dict ``new`` after them."""
        self.write(with_columns(piece.batch(), new))

    def commit(self):
        """Finish the file and move it into place."""
        self._close()
        if self.target is not None:
            self.target.commit()

    def abort(self):
        """Drop what was written; never raises for the writer's own state."""
        with contextlib.suppress(Exception):
            self._close()
        if self.target is not None:
            self.target.abort()

    def _close(self):
        """Flush and close the temporary file (subclasses)."""


def read_columns(reader, columns, numeric, progress):
    """The whole ``columns`` of ``reader`` as arrays, numeric ones checked by :func:`check_numeric_column`.

    Parameters
    ----------
    reader : Reader
    columns : list of str
    numeric : collection of str
        Columns of numbers (a subset of ``columns``).
    progress : object
        Told ``update(rows)`` after each batch and ``close()`` at the end
        (e.g. :class:`fastcal.cli.progress.Progress`).

    Returns
    -------
    dict of str to ndarray
        With a known row count, batches are copied straight into arrays of
        the full length (promoted if a later batch needs a wider dtype).
        Columns not in ``numeric`` as the format has them (CSV: text); a
        column of groups is typed by :meth:`Reader.group_column`.
    """
    columns = list(dict.fromkeys(columns))  # a column in two roles (e.g. labels and groups) is read once
    parts = {c: [] for c in columns}
    out = {}
    n = reader.n_rows
    offset = 0
    for batch in reader.batches(columns, numeric):
        m = len(next(iter(batch.values()))) if batch else 0
        for c in columns:
            values = batch[c]
            if c in numeric:
                values = check_numeric_column(values, display_name(reader.path), c, offset)
            if n is None or values.dtype == object:
                parts[c].append(values)
                continue
            if c not in out:
                out[c] = np.empty(n, dtype=values.dtype)
            elif out[c].dtype != values.dtype:
                out[c] = out[c].astype(np.result_type(out[c].dtype, values.dtype))
            out[c][offset: offset + m] = values
        offset += m
        progress.update(m)
    progress.close()
    for c, v in parts.items():
        if c not in out:
            out[c] = (np.concatenate(v) if len(v) != 1 else v[0]) if v else np.empty(0)
    return out
