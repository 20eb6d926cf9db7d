"""``.npz`` files: columns are the archive's 1-D arrays (or ``(n, 1)`` ones), held in memory."""

from __future__ import annotations

import numpy as np

from .base import DataError, Reader, Writer, arrow_values, new_target


class NpzReader(Reader):
    """The arrays of an .npz file, loaded (without pickles) when first read; ``n_rows`` known after that."""

    def __init__(self, path):
        self.path = path
        try:
            self._npz = np.load(path, allow_pickle=False)
        except (ValueError, OSError) as exc:
            raise DataError(f"{path}: not a readable .npz file ({exc})") from None
        self.names = list(self._npz.files)
        self._arrays = {}
        self.n_rows = None

    def _array(self, name):
        if name not in self._arrays:
            try:
                arr = self._npz[name]
            except ValueError as exc:
                raise DataError(f"{self.path}: array {name!r} cannot be read ({exc})") from None
            if arr.ndim == 2 and arr.shape[1] == 1:
                arr = arr[:, 0]
            if arr.ndim != 1:
                raise DataError(f"{self.path}: array {name!r} has shape {arr.shape}; columns must be 1-D")
            if self.n_rows is not None and arr.shape[0] != self.n_rows:
                raise DataError(f"{self.path}: array {name!r} has {arr.shape[0]} rows, others have {self.n_rows}")
            self.n_rows = arr.shape[0]
            self._arrays[name] = arr
        return self._arrays[name]

    def batches(self, columns=None, numeric=()):
        names = [c for c in self.names if not columns or c in columns]
        arrays = [self._array(c) for c in names]
        n = arrays[0].shape[0] if arrays else 0
        for lo in range(0, max(n, 1), self.batch_rows):
            yield {c: a[lo: lo + self.batch_rows] for c, a in zip(names, arrays)}


class NpzWriter(Writer):
    """All columns (input and output), as 1-D arrays of an .npz file; assembled in memory."""

    def __init__(self, path):
        self.target = new_target(path, ".npz")
        self._parts = {}

    def write(self, batch):
        if not isinstance(batch, dict):  # a pyarrow Table
            batch = {name: arrow_values(col) for name, col in zip(batch.column_names, batch.columns)}
        for name, values in batch.items():
            self._parts.setdefault(name, []).append(np.asarray(values))

    def _close(self):
        if self._parts is None:
            return
        arrays = {}
        for name, parts in self._parts.items():
            arr = np.concatenate(parts)
            if arr.dtype == object:
                arr = arr.astype(str)
            arrays[str(name)] = arr
        with open(self.target.tmp, "wb") as f:
            np.savez(f, **arrays)
        self._parts = None
