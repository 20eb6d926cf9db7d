"""``.npy`` files (format versions 1, 2 and 3), read a chunk at a time with plain file reads (no memory map).

Columns of a ``.npy`` file are the fields of a structured array, or ``0``,
``1``, ... for the columns of a 2-D array (``0`` for a 1-D one).
"""

from __future__ import annotations

import io
import os
from typing import TYPE_CHECKING, Any

import numpy as np

from .base import DataError, Reader, Writer, arrow_values, new_target

if TYPE_CHECKING:
    from collections.abc import Iterator

    from numpy.typing import NDArray


def _npy_header(f):
    """(shape, fortran_order, dtype) of the open .npy file ``f``, positioned at the data."""
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        return np.lib.format.read_array_header_1_0(f)
    if version == (2, 0):
        return np.lib.format.read_array_header_2_0(f)
    if version == (3, 0):
        return _header_3_0(f)
    raise ValueError(f"unsupported .npy format version {version[0]}.{version[1]}")


def _header_3_0(f):
    """The header of a version 3.0 file: version 2.0's, in UTF-8 rather than latin-1.

    NumPy reads only versions 1.0 and 2.0 publicly; the header (a Python
    literal) goes to its 2.0 reader with non-ASCII characters escaped, which
    is the same literal.
    """
    size = f.read(4)
    length = int.from_bytes(size, "little")
    text = f.read(length)
    if len(size) != 4 or len(text) != length:
        raise ValueError("EOF while reading the array header")
    text = text.decode("utf-8").encode("ascii", "backslashreplace")
    return np.lib.format.read_array_header_2_0(io.BytesIO(len(text).to_bytes(4, "little") + text))


def npy_info(path):
    """Shape, dtype and Fortran order of the array in a .npy file, without reading it.

    Returns
    -------
    tuple
        ``(shape, dtype, fortran_order)``.

    Raises
    ------
    ValueError
        If the file is not a .npy file.
    """
    with open(path, "rb") as f:
        shape, fortran, dtype = _npy_header(f)
    return shape, dtype, fortran


def iter_npy(
    path: str | os.PathLike[str], chunk_rows: int, *, column: int | str | None = None
) -> Iterator[NDArray[Any]]:
    """Chunks of ``chunk_rows`` rows of the array in the .npy file ``path``, read with plain reads.

    ``column``: for a 2-D array the column index, for a structured array the
    field name; None for a 1-D array. Each chunk is a new contiguous array.

    Parameters
    ----------
    path : str or os.PathLike
    chunk_rows : int
        Rows per chunk (the last may have fewer).
    column : int, str or None, optional
        With None, chunks of the whole rows: 1-D, or 2-D for a 2-D array.

    Yields
    ------
    ndarray

    Raises
    ------
    ValueError
        For an array of Python objects, of more than 2 dimensions, a
        Fortran-ordered 2-D array, or a truncated file.
    """
    with open(path, "rb") as f:
        shape, fortran, dtype = _npy_header(f)
        if dtype.hasobject:
            raise ValueError(f"{path}: arrays of Python objects cannot be read")
        if len(shape) not in (1, 2):
            raise ValueError(f"{path}: expected a 1-D or 2-D array, got shape {shape}")
        if fortran and len(shape) == 2 and shape[1] > 1:
            raise ValueError(f"{path}: Fortran-ordered 2-D arrays are not supported; save it in C order")
        n = shape[0]
        width = shape[1] if len(shape) == 2 else 1
        row_bytes = dtype.itemsize * width
        start = f.tell()
        for lo in range(0, n, chunk_rows):
            m = min(chunk_rows, n - lo)
            f.seek(start + lo * row_bytes)
            buf = np.empty(m * width, dtype=dtype)
            got = f.readinto(memoryview(buf).cast("B"))  # type: ignore[arg-type]  # a buffer (stubs: >= 3.12)
            if got != m * row_bytes:
                raise ValueError(f"{path}: file is truncated (expected {n} rows)")
            buf = buf.reshape(m, width) if len(shape) == 2 else buf
            if column is None:
                yield buf
            elif dtype.names is not None:
                yield np.ascontiguousarray(buf[column])
            else:
                yield np.ascontiguousarray(buf[:, column])  # type: ignore[index]  # an int here


class NpyReader(Reader):
    """The columns of a 1-D, 2-D or structured array in a .npy file, by :func:`iter_npy`."""

    def __init__(self, path):
        self.path = path
        try:
            shape, dtype, fortran = npy_info(path)
        except ValueError as exc:
            raise DataError(f"{path}: not a readable .npy file ({exc})") from None
        if dtype.names:
            self.names = list(dtype.names)
        elif len(shape) == 1:
            self.names = ["0"]
        elif len(shape) == 2:
            self.names = [str(i) for i in range(shape[1])]
        else:
            raise DataError(f"{path}: expected a 1-D, 2-D or structured array, got shape {shape}")
        self.n_rows = shape[0]
        self._shape, self._dtype = shape, dtype

    def batches(self, columns=None, numeric=()):
        try:
            for block in iter_npy(self.path, self.batch_rows):
                if self._dtype.names:
                    yield {c: np.ascontiguousarray(block[c]) for c in self.names if not columns or c in columns}
                elif block.ndim == 1:
                    yield {"0": block}
                else:
                    yield {c: np.ascontiguousarray(block[:, int(c)]) for c in self.names if not columns or c in columns}
        except ValueError as exc:
            raise DataError(str(exc)) from None


class NpyWriter(Writer):
    """The output column(s) only, as a float array: (n,) or (n, k). Streamed with a header fixed at the end."""

    _HEADER = 128

    def __init__(self, path, columns):
        self.target = new_target(path, ".npy")
        self.columns = columns
        self._file = open(self.target.tmp, "wb")  # noqa: SIM115 - closed in _close
        self._file.write(b"\0" * self._HEADER)
        self._rows = 0
        self._dtype = None

    def write(self, batch):
        if not isinstance(batch, dict):  # a pyarrow Table
            batch = {name: arrow_values(col) for name, col in zip(batch.column_names, batch.columns)}
        cols = [batch[c] for c in self.columns]
        block = cols[0] if len(cols) == 1 else np.column_stack(cols)
        if self._dtype is None:
            self._dtype = block.dtype
        np.ascontiguousarray(block, dtype=self._dtype).tofile(self._file)
        self._rows += block.shape[0]

    def write_piece(self, piece, new):
        self.write(new)  # the new columns only: no need to read the others

    def _close(self):
        if self._file is None:
            return
        dtype = self._dtype if self._dtype is not None else np.dtype(np.float64)
        shape = (self._rows,) if len(self.columns) == 1 else (self._rows, len(self.columns))
        header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
        text = repr(header).encode("latin1")
        body = text + b" " * (self._HEADER - 10 - len(text) - 1) + b"\n"
        self._file.seek(0)
        self._file.write(b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body)
        self._file.close()
        self._file = None
