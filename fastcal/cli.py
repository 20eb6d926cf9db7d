"""The ``fastcal`` command line: fit a calibrator on a file, apply it to another, report, demo.

::

    fastcal fit --method isotonic|sigmoid|temperature --score-col COL --label-col COL
                [--weight-col COL] INPUT -o model.json
    fastcal apply model.json INPUT -o OUTPUT [--score-col COL] [--prior-rate R | --priors TRAIN NEW]
    fastcal report INPUT --score-col COL --label-col COL -o report.png|report.html|report.json
    fastcal demo [--n ROWS]

Files are read and written by extension: ``.csv``, ``.parquet`` (pyarrow,
the ``io`` extra), ``.npy`` and ``.npz``; ``-`` is CSV on stdin or stdout.
Columns of a ``.npy`` file are the fields of a structured array, or ``0``,
``1``, ... for the columns of a 2-D array (``0`` for a 1-D one); columns of a
``.npz`` file are its 1-D arrays.

Progress bars go to stderr, only when it is a terminal (``--quiet``
silences them). Exit status: 0 on success, 2 on bad usage (unknown option
or format, missing file or column), 1 on bad data (values that are not
numbers, missing values, NaN, labels that are not 0/1, an invalid model
file), with a one-line ``fastcal: error: ...`` naming the file, the column and
the row where it applies. Outputs are written to a temporary file in the
target's directory and renamed when complete, so a failure never leaves a
partial output file (stdout excepted).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import sys
import time

import numpy as np

from ._files import AtomicTarget

__all__ = ["main"]

EXIT_OK = 0
EXIT_DATA = 1
EXIT_USAGE = 2

FORMATS = {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".npy": "npy", ".npz": "npz"}
#: Rows per batch read or written.
BATCH_ROWS = 1 << 20


class UsageError(Exception):
    """Bad usage: exit status 2."""


class DataError(Exception):
    """Bad data: exit status 1."""


def _env_no_pyarrow():
    return os.environ.get("FASTCAL_CLI_NO_PYARROW") == "1"


def _pyarrow():
    """pyarrow, or None when it is not installed (or disabled for tests)."""
    if _env_no_pyarrow():
        return None
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return None
    return pyarrow


def _format_of(path, role):
    if path == "-":
        return "csv"
    ext = os.path.splitext(path)[1].lower()
    if ext not in FORMATS:
        raise UsageError(f"{path}: unknown {role} format {ext or '(no extension)'!r}; "
                         "use .csv, .parquet, .npy or .npz (or - for CSV on stdin/stdout)")
    fmt = FORMATS[ext]
    if fmt == "parquet" and _pyarrow() is None:
        raise UsageError(f'{path}: Parquet files need pyarrow; install it with pip install "fastcal[io]"')
    return fmt


def _display(path):
    return "<stdin>" if path == "-" else path


# ---------------------------------------------------------------------------
# Progress on stderr.
# ---------------------------------------------------------------------------


class Progress:
    """A one-line progress bar on stderr, drawn only when ``enabled`` (stderr is a terminal, not --quiet)."""

    def __init__(self, label, total=None, enabled=False, unit="rows"):
        self.label = label
        self.total = total
        self.enabled = enabled
        self.unit = unit
        self.done = 0
        self._last = 0.0
        self._drawn = False
        self._t0 = time.perf_counter()

    def update(self, n):
        self.done += n
        if self.enabled and time.perf_counter() - self._last > 0.1:
            self._draw()

    def _draw(self):
        self._last = time.perf_counter()
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(30 * frac)
            text = f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {self.done:,}/{self.total:,} {self.unit}"
        else:
            text = f"\r{self.label} {self.done:,} {self.unit}"
        sys.stderr.write(text)
        sys.stderr.flush()
        self._drawn = True

    def status(self, message):
        """A one-off line (a phase without a count, e.g. fitting)."""
        if self.enabled:
            sys.stderr.write(f"{message}\n")
            sys.stderr.flush()

    def close(self):
        if self.enabled:
            self._draw()
            sys.stderr.write(f" ({time.perf_counter() - self._t0:.1f}s)\n")
            sys.stderr.flush()


# ---------------------------------------------------------------------------
# Readers: batches of columns (dicts of name -> 1-D ndarray).
# ---------------------------------------------------------------------------


def _check_numeric_column(values, path, column, offset, *, what="a number"):
    """Float64-able numeric values, finite; DataError naming the first bad row."""
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


class _Reader:
    """Base: ``names``, ``n_rows`` (None if unknown before reading), ``batches(columns, numeric)``."""

    names: list
    n_rows = None
    batch_rows = BATCH_ROWS

    def require(self, columns):
        for c in columns:
            if c not in self.names:
                shown = ", ".join(map(str, self.names[:20])) + (", ..." if len(self.names) > 20 else "")
                raise UsageError(f"{_display(self.path)}: no column {c!r} (columns: {shown})")


class _CsvArrowReader(_Reader):
    def __init__(self, path):
        import pyarrow.csv as pcsv

        self.path = path
        self._pcsv = pcsv
        self._stdin = None
        if path == "-":
            self._stdin = sys.stdin.buffer.read()
        try:
            reader = pcsv.open_csv(self._source(), read_options=pcsv.ReadOptions(block_size=1 << 16))
        except Exception as exc:  # noqa: BLE001 - pyarrow's errors name no row
            raise DataError(self._explain(exc)) from None
        self.names = list(reader.schema.names)

    def _source(self):
        return io.BytesIO(self._stdin) if self._stdin is not None else self.path

    def _explain(self, exc, columns=()):
        """A row-numbered message for a pyarrow CSV error, found by re-reading with the csv module."""
        import csv

        text = self._stdin.decode("utf-8", "replace") if self._stdin is not None else None
        try:
            with (io.StringIO(text) if text is not None else open(self.path, newline="", encoding="utf-8")) as f:
                rows = csv.reader(f)
                header = next(rows, [])
                idx = {c: header.index(c) for c in columns if c in header}
                for r, row in enumerate(rows, start=1):
                    if len(row) != len(header):
                        return (f"{_display(self.path)}: row {r}: expected {len(header)} fields, got {len(row)}")
                    for c, k in idx.items():
                        try:
                            float(row[k])
                        except ValueError:
                            if row[k].strip() == "":
                                return f"{_display(self.path)}: column {c!r}, row {r}: missing value"
                            return f"{_display(self.path)}: column {c!r}, row {r}: {row[k]!r} is not a number"
        except (OSError, UnicodeDecodeError):
            pass
        return f"{_display(self.path)}: {str(exc).splitlines()[0]}"

    def batches(self, columns=None, numeric=()):
        import pyarrow as pa

        pcsv = self._pcsv
        types = {c: pa.float64() for c in numeric}
        # Only empty fields are missing values: "nan" is a NaN (then rejected as not finite), as in Python.
        opts = pcsv.ConvertOptions(column_types=types, include_columns=list(columns) if columns else None,
                                   null_values=[""], strings_can_be_null=False)
        offset = 0
        try:
            block = min(16 << 20, max(1 << 12, 16 * self.batch_rows))  # bytes: about batch_rows rows
            reader = pcsv.open_csv(self._source(), read_options=pcsv.ReadOptions(block_size=block),
                                   convert_options=opts)
            for batch in reader:
                yield self._to_dict(batch, numeric, offset)
                offset += batch.num_rows
        except pa.ArrowInvalid as exc:
            raise DataError(self._explain(exc, numeric)) from None

    def _to_dict(self, batch, numeric, offset):
        out = {}
        for name, col in zip(batch.schema.names, batch.columns):
            if name in numeric and col.null_count:
                row = offset + int(np.flatnonzero(np.asarray(col.is_null()))[0]) + 1
                raise DataError(f"{_display(self.path)}: column {name!r}, row {row}: missing value")
            out[name] = col.to_numpy(zero_copy_only=False)
        return out


class _CsvPlainReader(_Reader):
    """CSV with the standard library (when pyarrow is not installed): slower, same results."""

    def __init__(self, path):
        import csv

        self.path = path
        self._csv = csv
        self._text = sys.stdin.read() if path == "-" else None
        with self._open() as f:
            self.names = next(csv.reader(f), [])

    def _open(self):
        if self._text is not None:
            return io.StringIO(self._text)
        return open(self.path, newline="", encoding="utf-8")

    def batches(self, columns=None, numeric=()):
        with self._open() as f:
            rows = self._csv.reader(f)
            header = next(rows, [])
            keep = [c for c in header if not columns or c in columns]
            idx = [header.index(c) for c in keep]
            buf = [[] for _ in keep]
            offset = 0
            for r, row in enumerate(rows, start=1):
                if len(row) != len(header):
                    raise DataError(f"{_display(self.path)}: row {r}: expected {len(header)} fields, got {len(row)}")
                for b, k in zip(buf, idx):
                    b.append(row[k])
                if len(buf[0]) >= self.batch_rows:
                    yield self._convert(keep, buf, numeric, offset)
                    offset += len(buf[0])
                    buf = [[] for _ in keep]
            if buf and buf[0]:
                yield self._convert(keep, buf, numeric, offset)

    def _convert(self, names, buf, numeric, offset):
        out = {}
        for name, values in zip(names, buf):
            if name in numeric:
                arr = np.empty(len(values))
                for i, v in enumerate(values):
                    try:
                        arr[i] = float(v)
                    except ValueError:
                        what = "missing value" if v.strip() == "" else f"{v!r} is not a number"
                        raise DataError(f"{_display(self.path)}: column {name!r}, row {offset + i + 1}: {what}") \
                            from None
                out[name] = arr
            else:
                out[name] = np.array(values, dtype=object)
        return out


class _ParquetReader(_Reader):
    def __init__(self, path):
        import pyarrow.parquet as pq

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
            out = {}
            for name, col in zip(batch.schema.names, batch.columns):
                if name in numeric and col.null_count:
                    row = offset + int(np.flatnonzero(np.asarray(col.is_null()))[0]) + 1
                    raise DataError(f"{self.path}: column {name!r}, row {row}: missing value")
                out[name] = col.to_numpy(zero_copy_only=False)
            offset += batch.num_rows
            yield out


class _NpyReader(_Reader):
    def __init__(self, path):
        from .outofcore import npy_info

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
        from .outofcore import iter_npy

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


class _NpzReader(_Reader):
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


def open_input(path, batch_rows=BATCH_ROWS):
    """A reader for ``path`` (by extension; ``-`` is CSV on stdin)."""
    fmt = _format_of(path, "input")
    if path != "-" and not os.path.isfile(path):
        raise UsageError(f"{path}: no such file")
    if fmt == "csv":
        reader = _CsvArrowReader(path) if _pyarrow() is not None else _CsvPlainReader(path)
    else:
        reader = {"parquet": _ParquetReader, "npy": _NpyReader, "npz": _NpzReader}[fmt](path)
    reader.batch_rows = batch_rows
    return reader


def read_columns(reader, columns, numeric, progress):
    """The whole ``columns`` of ``reader`` as arrays (numeric ones checked finite, rows named)."""
    parts = {c: [] for c in columns}
    out = {}  # with a known row count, batches are copied straight into the result
    n = reader.n_rows
    offset = 0
    for batch in reader.batches(columns, numeric):
        m = len(next(iter(batch.values()))) if batch else 0
        for c in columns:
            values = batch[c]
            if c in numeric:
                values = _check_numeric_column(values, _display(reader.path), c, offset)
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


# ---------------------------------------------------------------------------
# Writers: atomic (temporary file, then rename).
# ---------------------------------------------------------------------------


def _AtomicTarget(path, suffix):
    """:class:`fastcal._files.AtomicTarget`, a missing directory being a usage error."""
    try:
        return AtomicTarget(path, suffix)
    except FileNotFoundError as exc:
        raise UsageError(str(exc)) from None


class _Writer:
    def write(self, batch):
        raise NotImplementedError

    def commit(self):
        self._close()
        if self.target is not None:
            self.target.commit()

    def abort(self):
        with contextlib.suppress(Exception):
            self._close()
        if self.target is not None:
            self.target.abort()

    def _close(self):
        pass


class _CsvWriter(_Writer):
    def __init__(self, path):
        self.target = None if path == "-" else _AtomicTarget(path, ".csv")
        self._pa = _pyarrow()
        self._writer = None
        self._file = None
        if path == "-":
            self._file = sys.stdout.buffer
        else:
            self._file = open(self.target.tmp, "wb")  # noqa: SIM115 - closed in _close

    def write(self, batch):
        if self._pa is not None:
            import pyarrow as pa
            import pyarrow.csv as pcsv

            rb = pa.RecordBatch.from_arrays([pa.array(v) for v in batch.values()], names=list(batch))
            if self._writer is None:
                self._writer = pcsv.CSVWriter(self._file, rb.schema)
            self._writer.write_batch(rb)
            return
        import csv

        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        if self._writer is None:
            w.writerow(list(batch))
            self._writer = True
        cols = [v.tolist() for v in batch.values()]
        w.writerows(zip(*cols))
        self._file.write(text.getvalue().encode("utf-8"))

    def _close(self):
        if self._pa is not None and self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.flush()
            if self.target is not None:
                self._file.close()
            self._file = None


class _ParquetWriter(_Writer):
    def __init__(self, path):
        self.target = _AtomicTarget(path, ".parquet")
        self._writer = None

    def write(self, batch):
        import pyarrow as pa
        import pyarrow.parquet as pq

        rb = pa.RecordBatch.from_arrays([pa.array(v) for v in batch.values()], names=list(batch))
        if self._writer is None:
            self._writer = pq.ParquetWriter(self.target.tmp, rb.schema)
        self._writer.write_batch(rb)

    def _close(self):
        if self._writer is not None:
            self._writer.close()
            self._writer = None


class _NpyWriter(_Writer):
    """The output column(s) only, as a float array: (n,) or (n, k). Streamed with a header fixed at the end."""

    _HEADER = 128

    def __init__(self, path, columns):
        self.target = _AtomicTarget(path, ".npy")
        self.columns = columns
        self._file = open(self.target.tmp, "wb")  # noqa: SIM115 - closed in _close
        self._file.write(b"\0" * self._HEADER)
        self._rows = 0
        self._dtype = None

    def write(self, batch):
        cols = [batch[c] for c in self.columns]
        block = cols[0] if len(cols) == 1 else np.column_stack(cols)
        if self._dtype is None:
            self._dtype = block.dtype
        np.ascontiguousarray(block, dtype=self._dtype).tofile(self._file)
        self._rows += block.shape[0]

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


class _NpzWriter(_Writer):
    """All columns (input and output), as 1-D arrays of an .npz file; assembled in memory."""

    def __init__(self, path):
        self.target = _AtomicTarget(path, ".npz")
        self._parts = {}

    def write(self, batch):
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


def open_output(path, output_columns):
    fmt = _format_of(path, "output")
    if fmt == "parquet":
        return _ParquetWriter(path)
    if fmt == "npy":
        return _NpyWriter(path, output_columns)
    if fmt == "npz":
        return _NpzWriter(path)
    return _CsvWriter(path)


# ---------------------------------------------------------------------------
# Commands.
# ---------------------------------------------------------------------------


def _columns_arg(values):
    """``--score-col a --score-col b`` or ``--score-col a,b`` -> ["a", "b"]."""
    out = []
    for v in values or []:
        out.extend(p for p in v.split(",") if p)
    return out


def _bool_arg(text):
    low = text.lower()
    if low in ("true", "yes", "1", "increasing"):
        return True
    if low in ("false", "no", "0", "decreasing"):
        return False
    if low == "auto":
        return "auto"
    raise argparse.ArgumentTypeError(f"expected true, false or auto, got {text!r}")


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _check_labels(y, path, column, method, n_classes=None):
    """0/1 labels for sigmoid (and for report), class indices for temperature; DataError naming the row."""
    if method in ("sigmoid", "binary"):
        bad = (y != 0) & (y != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{path}: column {column!r}, row {i + 1}: label {y[i]!r} is not 0 or 1")
    elif method == "temperature":
        bad = (y != np.round(y)) | (y < 0) | (y >= n_classes)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{path}: column {column!r}, row {i + 1}: label {y[i]!r} is not a class index "
                            f"in 0 .. {n_classes - 1}")


def _check_weights(w, path, column):
    bad = w < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: column {column!r}, row {i + 1}: weight {w[i]!r} is negative")
    if not w.sum() > 0:
        raise DataError(f"{path}: column {column!r}: the weights must have a positive sum")


def _estimator(args):
    import fastcal

    if args.method == "isotonic":
        return fastcal.IsotonicRegression(increasing=args.increasing, out_of_bounds=args.out_of_bounds,
                                          y_min=args.y_min, y_max=args.y_max)
    if args.method == "sigmoid":
        return fastcal.PlattScaling(max_iter=args.max_iter)
    return fastcal.TemperatureScaling()


def cmd_fit(args, progress_enabled, timings):
    score_cols = _columns_arg(args.score_col)
    if not score_cols:
        raise UsageError("fit needs --score-col")
    if len(score_cols) > 1 and args.method != "temperature":
        raise UsageError(f"--method {args.method} takes one --score-col, got {len(score_cols)}")
    est = _estimator(args)
    out_fmt = os.path.splitext(args.output)[1].lower()
    if out_fmt != ".json":
        raise UsageError(f"{args.output}: the model file must be .json")
    reader = open_input(args.input, args.batch_rows)
    cols = score_cols + [args.label_col] + ([args.weight_col] if args.weight_col else [])
    reader.require(cols)
    path = _display(args.input)
    if args.memory_budget is not None:
        if args.method == "temperature":
            raise UsageError("--memory-budget (out-of-core fitting) supports isotonic and sigmoid only")
        est = _fit_out_of_core(args, reader, score_cols[0], progress_enabled, timings)
    else:
        t0 = time.perf_counter()
        data = read_columns(reader, cols, cols, Progress(f"reading {path}", reader.n_rows, progress_enabled))
        timings["read"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        y = data[args.label_col]
        n_classes = len(score_cols) if len(score_cols) > 1 else 2
        _check_labels(y, path, args.label_col, args.method, n_classes)
        w = data[args.weight_col] if args.weight_col else None
        if w is not None:
            _check_weights(w, path, args.weight_col)
        X = data[score_cols[0]] if len(score_cols) == 1 else np.column_stack([data[c] for c in score_cols])
        timings["validate"] = time.perf_counter() - t0
        Progress("", enabled=progress_enabled).status(f"fitting {args.method} on {len(y):,} rows")
        t0 = time.perf_counter()
        try:
            est.fit(X, y, sample_weight=w)
        except ValueError as exc:
            raise DataError(f"{path}: {exc}") from None
        timings["fit"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    try:
        est.save(args.output)
    except TypeError as exc:
        raise DataError(f"{args.output}: {exc}") from None
    timings["write"] = time.perf_counter() - t0
    return EXIT_OK


def _fit_out_of_core(args, reader, score_col, progress_enabled, timings):
    from . import _partition
    from . import outofcore as oc

    path = _display(args.input)
    numeric = [score_col, args.label_col] + ([args.weight_col] if args.weight_col else [])
    chunk_rows, part_rows = oc.budget_rows(args.memory_budget, None)
    reader.batch_rows = min(reader.batch_rows, chunk_rows)
    n_rows = reader.n_rows
    passes = {"n": 0}

    def factory():
        passes["n"] += 1
        progress = Progress(f"pass {passes['n']} over {path}", n_rows, progress_enabled)
        offset = 0
        for batch in reader.batches(numeric, numeric):
            x = _check_numeric_column(batch[score_col], path, score_col, offset)
            y = _check_numeric_column(batch[args.label_col], path, args.label_col, offset)
            if args.method == "sigmoid":
                bad = (y != 0) & (y != 1)
                if bad.any():
                    i = int(np.flatnonzero(bad)[0])
                    raise DataError(f"{path}: column {args.label_col!r}, row {offset + i + 1}: label {y[i]!r} "
                                    "is not 0 or 1")
            w = None
            if args.weight_col:
                w = _check_numeric_column(batch[args.weight_col], path, args.weight_col, offset)
                if (w < 0).any():
                    i = int(np.flatnonzero(w < 0)[0])
                    raise DataError(f"{path}: column {args.weight_col!r}, row {offset + i + 1}: weight {w[i]!r} "
                                    "is negative")
            offset += x.shape[0]
            progress.update(x.shape[0])
            yield x, y, w
        progress.close()

    if n_rows is None:  # CSV: count the rows first
        n_rows = sum(len(b[score_col]) for b in reader.batches([score_col], ()))
    first = next(reader.batches([score_col], [score_col]), {score_col: np.empty(0)})[score_col]
    src = oc.Columns(factory, n_rows, _partition.fit_dtype(first.dtype), args.weight_col is not None, reader.batch_rows)
    t0 = time.perf_counter()
    try:
        if args.method == "isotonic":
            params = dict(increasing=args.increasing, out_of_bounds=args.out_of_bounds, y_min=args.y_min,
                          y_max=args.y_max)
            est = oc.fit_isotonic_source(src, params, None, part_rows)
        else:
            est = oc.fit_platt_source(src, args.max_iter, None)
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    timings["fit (out of core, incl. reading)"] = time.perf_counter() - t0
    return est


def _parse_priors(values):
    out = []
    for v in values:
        parts = [p for p in v.split(",") if p]
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            raise UsageError(f"--priors: {v!r} is not a number or a comma-separated list of numbers") from None
        out.append(nums[0] if len(nums) == 1 else nums)
    return out


def cmd_apply(args, progress_enabled, timings):
    import fastcal

    if args.prior_rate is not None and args.priors is not None:
        raise UsageError("give --prior-rate or --priors, not both")
    if not os.path.isfile(args.model):
        raise UsageError(f"{args.model}: no such file")
    try:
        est = fastcal.load(args.model)
    except ValueError as exc:
        raise DataError(f"{args.model}: {exc}") from None
    priors = _parse_priors(args.priors) if args.priors is not None else None
    reader = open_input(args.input, args.batch_rows)
    path = _display(args.input)
    score_cols = _columns_arg(args.score_col)
    if not score_cols:
        if len(reader.names) == 1:
            score_cols = list(reader.names)
        elif "score" in reader.names:
            score_cols = ["score"]
        else:
            raise UsageError(f"{path}: say which column holds the scores with --score-col")
    reader.require(score_cols)
    multiclass = hasattr(est, "n_classes_") and not hasattr(est, "X_thresholds_")
    if multiclass:
        k = est.n_classes_
        out_cols = [f"{args.output_col}_{j}" for j in range(k)]
    else:
        if len(score_cols) > 1:
            raise UsageError(f"a {type(est).__name__} model takes one --score-col, got {len(score_cols)}")
        out_cols = [args.output_col]
    clash = [c for c in out_cols if c in reader.names]
    if clash:
        raise UsageError(f"{path}: already has a column {clash[0]!r}; choose another name with --output-col")
    writer = open_output(args.output, out_cols)
    progress = Progress(f"calibrating {path}", reader.n_rows, progress_enabled)
    t_read = t_compute = t_write = 0.0
    ok = False
    try:
        offset = 0
        t0 = time.perf_counter()
        for batch in reader.batches(None, score_cols):
            t1 = time.perf_counter()
            t_read += t1 - t0
            cols = [_check_numeric_column(batch[c], path, c, offset) for c in score_cols]
            X = cols[0] if len(cols) == 1 else np.column_stack(cols)
            try:
                p = est.predict_proba(X) if multiclass else est.predict(X)
                if args.prior_rate is not None:
                    p = fastcal.correct_negative_sampling(p, args.prior_rate)
                if priors is not None:
                    p = fastcal.adjust_priors(p, priors[0], priors[1])
            except ValueError as exc:
                raise DataError(f"{path}: rows {offset + 1}..{offset + len(cols[0])}: {exc}") from None
            if multiclass:
                for j, c in enumerate(out_cols):
                    batch[c] = np.ascontiguousarray(p[:, j])
            else:
                batch[out_cols[0]] = p
            t2 = time.perf_counter()
            t_compute += t2 - t1
            writer.write(batch)
            t0 = time.perf_counter()
            t_write += t0 - t2
            offset += len(cols[0])
            progress.update(len(cols[0]))
        progress.close()
        t0 = time.perf_counter()
        writer.commit()
        t_write += time.perf_counter() - t0
        ok = True
    finally:
        if not ok:
            writer.abort()
    timings.update(read=t_read, compute=t_compute, write=t_write)
    return EXIT_OK


def _report_html(report, png_bytes, source):
    import base64
    import html

    img = ""
    if png_bytes is not None:
        img = f'<img alt="reliability diagram" src="data:image/png;base64,{base64.b64encode(png_bytes).decode()}">'
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fastcal calibration report</title>"
        "<style>body{font-family:sans-serif;margin:2em} pre{font-size:14px}</style></head><body>\n"
        f"<h1>Calibration report</h1><p>{html.escape(source)}</p>\n<pre>{html.escape(str(report))}</pre>\n"
        f"{img}\n</body></html>\n"
    )


def _reliability_png(y, p, w, n_bins, strategy):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .plot import reliability_diagram

    fig, _ = reliability_diagram(y, p, n_bins=n_bins, strategy=strategy, sample_weight=w)
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    return buf.getvalue()


def _json_ready(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    return value


def cmd_report(args, progress_enabled, timings):
    import fastcal

    kind = os.path.splitext(args.output)[1].lower()
    if kind not in (".png", ".html", ".json"):
        raise UsageError(f"{args.output}: the report must be .png, .html or .json")
    if kind in (".png",):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError('a .png report needs matplotlib; install it with pip install "fastcal[plot]"') from None
    reader = open_input(args.input, args.batch_rows)
    cols = [args.score_col, args.label_col] + ([args.weight_col] if args.weight_col else [])
    reader.require(cols)
    path = _display(args.input)
    t0 = time.perf_counter()
    data = read_columns(reader, cols, cols, Progress(f"reading {path}", reader.n_rows, progress_enabled))
    timings["read"] = time.perf_counter() - t0
    p, y = data[args.score_col], data[args.label_col]
    bad = (p < 0) | (p > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: column {args.score_col!r}, row {i + 1}: {p[i]!r} is not a probability in [0, 1]")
    _check_labels(y, path, args.label_col, "binary")
    w = data[args.weight_col] if args.weight_col else None
    if w is not None:
        _check_weights(w, path, args.weight_col)
    t0 = time.perf_counter()
    try:
        report = fastcal.calibration_report(y, p, sample_weight=w, n_bins=args.n_bins, strategy=args.strategy)
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    timings["compute"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    target = _AtomicTarget(args.output, kind)
    try:
        if kind == ".json":
            doc = {"input": path, "score_col": args.score_col, "label_col": args.label_col,
                   "report": _json_ready(report.to_dict())}
            with open(target.tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1, allow_nan=False)
        else:
            png = None
            try:
                png = _reliability_png(y, p, w, args.n_bins, args.strategy)
            except ImportError:
                if kind == ".png":
                    raise
            if kind == ".png":
                with open(target.tmp, "wb") as f:
                    f.write(png)
            else:
                with open(target.tmp, "w", encoding="utf-8") as f:
                    f.write(_report_html(report, png, f"{path}: {args.score_col} against {args.label_col}"))
        target.commit()
    except BaseException:
        target.abort()
        raise
    timings["write"] = time.perf_counter() - t0
    if not args.quiet:
        print(report)
    return EXIT_OK


def cmd_demo(args, progress_enabled, timings):
    from . import demo

    demo.main(args.demo_args)
    return EXIT_OK


# ---------------------------------------------------------------------------
# Entry point.
# ---------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"fastcal: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser():
    from . import __version__

    parser = _Parser(prog="fastcal", description="Fast, exact probability calibration from the command line.")
    parser.add_argument("--version", action="version", version=f"fastcal {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def common(p):
        p.add_argument("-q", "--quiet", action="store_true", help="no progress bars (and no report table)")
        p.add_argument("--timings", action="store_true", help="print the time of each phase on stderr")
        p.add_argument("--batch-rows", type=_positive_int, default=BATCH_ROWS, metavar="N",
                       help=f"rows per batch read and written (default {BATCH_ROWS})")
        p.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)

    fit = sub.add_parser("fit", help="fit a calibrator and save it as a JSON model file")
    fit.add_argument("input", metavar="INPUT", help="data file (.csv, .parquet, .npy, .npz; - for CSV on stdin)")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL.json", help="model file to write")
    fit.add_argument("--method", required=True, choices=("isotonic", "sigmoid", "temperature"))
    fit.add_argument("--score-col", action="append", metavar="COL",
                     help="column of scores (temperature: one per class, repeated or comma-separated)")
    fit.add_argument("--label-col", required=True, metavar="COL", help="column of labels")
    fit.add_argument("--weight-col", metavar="COL", help="column of sample weights")
    fit.add_argument("--increasing", type=_bool_arg, default=True, metavar="true|false|auto",
                     help="isotonic: direction (default true)")
    fit.add_argument("--out-of-bounds", choices=("nan", "clip", "raise"), default="clip",
                     help="isotonic: prediction outside the fitted range (default clip)")
    fit.add_argument("--y-min", type=float, default=None, help="isotonic: lower bound of the fit")
    fit.add_argument("--y-max", type=float, default=None, help="isotonic: upper bound of the fit")
    fit.add_argument("--max-iter", type=_positive_int, default=100, help="sigmoid: Newton iterations (default 100)")
    fit.add_argument("--memory-budget", type=_memory_arg, default=None, metavar="SIZE",
                     help="fit out of core within SIZE bytes of memory (e.g. 512M, 2G): for inputs larger "
                          "than memory (isotonic, sigmoid)")
    common(fit)
    fit.set_defaults(func=cmd_fit)

    app = sub.add_parser("apply", help="apply a model file to a data file")
    app.add_argument("model", metavar="MODEL.json")
    app.add_argument("input", metavar="INPUT")
    app.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                     help="output file: the input's columns plus the calibrated probabilities "
                          "(.npy: the probabilities only); - for CSV on stdout")
    app.add_argument("--score-col", action="append", metavar="COL",
                     help="column of scores (default: the only column, or 'score')")
    app.add_argument("--output-col", default="calibrated", metavar="NAME",
                     help="name of the new column (default calibrated; NAME_j per class for temperature)")
    prior = app.add_mutually_exclusive_group()
    prior.add_argument("--prior-rate", type=float, metavar="R",
                       help="then undo negative undersampling at rate R (fastcal.correct_negative_sampling)")
    prior.add_argument("--priors", nargs=2, metavar=("TRAIN", "NEW"),
                       help="then adapt to new class priors (fastcal.adjust_priors): positive-class priors, "
                            "or comma-separated per-class priors")
    common(app)
    app.set_defaults(func=cmd_apply)

    rep = sub.add_parser("report", help="calibration diagnostics and reliability diagram")
    rep.add_argument("input", metavar="INPUT")
    rep.add_argument("-o", "--output", required=True, metavar="REPORT",
                     help="report.png (reliability diagram), report.html (table and diagram) or report.json")
    rep.add_argument("--score-col", required=True, metavar="COL", help="column of predicted probabilities")
    rep.add_argument("--label-col", required=True, metavar="COL", help="column of 0/1 labels")
    rep.add_argument("--weight-col", metavar="COL")
    rep.add_argument("--n-bins", type=_positive_int, default=10)
    rep.add_argument("--strategy", choices=("uniform", "quantile"), default="uniform")
    common(rep)
    rep.set_defaults(func=cmd_report)

    demo = sub.add_parser("demo", help="the fastcal demo (what make demo runs)", add_help=False)
    demo.add_argument("demo_args", nargs=argparse.REMAINDER)
    demo.set_defaults(func=cmd_demo, quiet=False, timings=False, traceback=False)
    return parser


def _memory_arg(text):
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().rstrip("b")
    unit = t[-1] if t and t[-1] in "kmgt" else ""
    try:
        value = float(t[: len(t) - len(unit)]) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 512M or 2G, got {text!r}") from None
    if value < 1 << 20:
        raise argparse.ArgumentTypeError(f"the memory budget must be at least 1M, got {text!r}")
    return int(value)


def main(argv=None):
    """Run the ``fastcal`` command line; returns the exit status (0 ok, 1 bad data, 2 bad usage)."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["demo"]:
        # Everything after "demo" is the demo's own (argparse's REMAINDER does not take options).
        args = argparse.Namespace(command="demo", func=cmd_demo, demo_args=argv[1:], quiet=False, timings=False,
                                  traceback=False)
    else:
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    progress_enabled = not args.quiet and sys.stderr.isatty()
    timings = {}
    try:
        status = args.func(args, progress_enabled, timings)
    except UsageError as exc:
        _error(exc)
        return EXIT_USAGE
    except DataError as exc:
        _error(exc)
        return EXIT_DATA
    except KeyboardInterrupt:
        sys.stderr.write("\nfastcal: interrupted\n")
        return 130
    except (ValueError, OSError, MemoryError) as exc:
        if args.traceback:
            raise
        _error(f"{type(exc).__name__}: {exc}")
        return EXIT_DATA
    if args.timings and timings:
        total = sum(timings.values())
        parts = ", ".join(f"{k} {v:.3f}s ({100 * v / total:.0f}%)" for k, v in timings.items())
        sys.stderr.write(f"fastcal: timings: {parts}\n")
    return status


def _error(message):
    text = " ".join(str(message).split())  # one line
    sys.stderr.write(f"fastcal: error: {text}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
