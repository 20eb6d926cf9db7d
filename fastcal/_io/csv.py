"""CSV files (``-``: stdin or stdout): read and written with pyarrow when it is there, else the ``csv`` module.

Both readers give the same columns and the same errors: a value that is not
a number, a missing value (an empty field) or a row with the wrong number of
fields raises :class:`~fastcal._io.base.DataError` naming the row. "nan" is a
NaN, as in Python (then rejected as not finite by the checks).
"""

from __future__ import annotations

import io
import sys

import numpy as np

from .base import DataError, Reader, Writer, arrow_to_numpy, display_name, new_target, optional_pyarrow, record_batch


class CsvArrowReader(Reader):
    """CSV read by ``pyarrow.csv`` in blocks of about ``batch_rows`` rows; stdin is read whole first."""

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
                        return (f"{display_name(self.path)}: row {r}: expected {len(header)} fields, got {len(row)}")
                    for c, k in idx.items():
                        try:
                            float(row[k])
                        except ValueError:
                            if row[k].strip() == "":
                                return f"{display_name(self.path)}: column {c!r}, row {r}: missing value"
                            return f"{display_name(self.path)}: column {c!r}, row {r}: {row[k]!r} is not a number"
        except (OSError, UnicodeDecodeError):
            pass
        return f"{display_name(self.path)}: {str(exc).splitlines()[0]}"

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
                yield arrow_to_numpy(batch, self.path, numeric, offset)
                offset += batch.num_rows
        except pa.ArrowInvalid as exc:
            raise DataError(self._explain(exc, numeric)) from None


class CsvPlainReader(Reader):
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
                    raise DataError(f"{display_name(self.path)}: row {r}: expected {len(header)} fields, "
                                    f"got {len(row)}")
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
                        raise DataError(f"{display_name(self.path)}: column {name!r}, row {offset + i + 1}: "
                                        f"{what}") from None
                out[name] = arr
            else:
                out[name] = np.array(values, dtype=object)
        return out


def csv_reader(path):
    """The CSV reader for ``path`` (``-``: stdin): pyarrow's when it is there, else the standard library's."""
    return CsvArrowReader(path) if optional_pyarrow() is not None else CsvPlainReader(path)


class CsvWriter(Writer):
    """Every column of the batches, as CSV with a header line (``-``: stdout)."""

    def __init__(self, path):
        self.target = None if path == "-" else new_target(path, ".csv")
        self._pa = optional_pyarrow()
        self._writer = None
        self._file = None
        if path == "-":
            self._file = sys.stdout.buffer
        else:
            self._file = open(self.target.tmp, "wb")  # noqa: SIM115 - closed in _close

    def write(self, batch):
        if self._pa is not None:
            import pyarrow.csv as pcsv

            rb = record_batch(batch)
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
