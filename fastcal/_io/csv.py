"""CSV files (``-``: stdin or stdout), read as a stream of whole records, parsed only where numbers are needed.

The bytes are read in blocks of a bounded size and cut into whole records by
a Numba state machine (:func:`fastcal._io._csv_kernels.split_records`: quoted
fields, doubled quotes, line breaks inside quotes, LF, CR LF and CR line
ends), so memory does not grow with the file, stdin included. Only the
columns a command asks for are parsed: with pyarrow when it is there (the
``io`` extra), else with the ``csv`` module (slower, same results), numbers
as float64 and other columns as text; a column of groups is then typed as
Parquet, pandas and Spark infer it, an empty cell the missing group
(:mod:`fastcal._io.groups`). ``fastcal
apply`` from CSV to CSV parses the score column alone and copies every
record's bytes through, appending the new field before its line break.

A value that is not a number, a missing value (an empty field) or a row with
the wrong number of fields raises :class:`~fastcal._io.base.DataError` naming
the row. "nan" is a NaN, as in Python (then rejected as not finite by the checks).
"""

from __future__ import annotations

import io
import sys

import numpy as np

from .base import (
    DataError,
    Piece,
    Reader,
    UsageError,
    Writer,
    arrow_array,
    arrow_table,
    arrow_to_numpy,
    display_name,
    new_target,
    optional_pyarrow,
)
from .groups import join, kind_of, text_codes, typed

#: Bytes read from the file at a time (records longer than this are read whole).
READ_BYTES = 1 << 20


def _split(buf, start, final, cap):
    """``(content_end, next_start)`` of up to ``cap`` whole records of ``buf`` from ``start`` (see the kernel)."""
    from ._csv_kernels import split_records

    content_end = np.empty(cap, dtype=np.int64)
    next_start = np.empty(cap, dtype=np.int64)
    k = split_records(np.frombuffer(buf, dtype=np.uint8), start, final, content_end, next_start)
    return content_end[:k], next_start[:k]


class Block:
    """Whole records: ``data`` (bytes), each record's content end and line-break end (offsets into ``data``)."""

    def __init__(self, data, content_end, next_start, offset):
        self.data = data
        self.content_end = content_end
        self.next_start = next_start
        self.offset = offset  # data rows of the file before these
        self.n = content_end.shape[0]


def records(stream, cap, first=b""):
    """Blocks of at most ``cap`` whole records from a binary stream, with ``first`` the bytes already read."""
    buf = first
    pos = 0
    final = False
    while True:
        if not final and len(buf) - pos < READ_BYTES:
            more = stream.read(READ_BYTES)
            final = not more
            buf = buf[pos:] + more
            pos = 0
        content_end, next_start = _split(buf, pos, final, cap)
        if content_end.shape[0]:
            end = int(next_start[-1])
            yield buf[pos:end], content_end - pos, next_start - pos
            pos = end
            continue
        if final:
            return
        # Not one whole record in what is buffered: read on (a long record).
        more = stream.read(max(READ_BYTES, len(buf)))
        final = not more
        buf = buf[pos:] + more
        pos = 0


class CsvReader(Reader):
    """A CSV file's records, a bounded block at a time; the header is its first record.

    ``engine`` is "pyarrow" or "csv module". stdin can be read once: a second
    pass (an out-of-core fit) raises :class:`UsageError`.
    """

    def __init__(self, path):
        import csv

        self.path = path
        self._pa = optional_pyarrow()
        self.engine = "pyarrow" if self._pa is not None else "csv module"
        self._stdin_used = False
        self._kinds = {}  # the types of group columns (fastcal._io.groups), once prepare_groups decides them
        self._decided = False
        stream = self._open()
        try:
            buf = b""
            while True:
                more = stream.read(1 << 16)
                buf += more
                content_end, next_start = _split(buf, 0, not more, 1)
                if content_end.shape[0] or not more:
                    break
        finally:
            if path != "-":
                stream.close()
        if not content_end.shape[0]:
            raise DataError(f"{display_name(path)}: empty file, no header line")
        self.header = buf[: int(next_start[0])]
        self.header_end = int(content_end[0])  # the header's content, without its line break
        self._rest = buf[int(next_start[0]):] if path == "-" else None
        try:
            text = self.header[: self.header_end].decode("utf-8-sig")
        except UnicodeDecodeError:
            raise DataError(f"{display_name(path)}: the header line is not UTF-8 text") from None
        self.names = next(csv.reader([text]), [""]) if text else [""]
        self._fields = [f"f{i}" for i in range(len(self.names))]

    def _open(self):
        if self.path == "-":
            return sys.stdin.buffer
        return open(self.path, "rb")  # noqa: SIM115 - closed by the callers

    def blocks(self):
        """Yield :class:`Block` objects of at most ``batch_rows`` records, from the first data row."""
        if self.path == "-":
            if self._stdin_used:
                raise UsageError("<stdin> can be read only once (an out-of-core fit reads its input several "
                                 "times): give a file")
            self._stdin_used = True
            stream, first = sys.stdin.buffer, self._rest
        else:
            stream, first = self._open(), b""
            stream.seek(len(self.header))
        offset = 0
        try:
            for data, content_end, next_start in records(stream, self.batch_rows, first):
                yield Block(data, content_end, next_start, offset)
                offset += content_end.shape[0]
        finally:
            if self.path != "-":
                stream.close()

    def count_rows(self):
        """The number of data rows, by splitting the records without parsing them (a pass over the file)."""
        return sum(block.n for block in self.blocks())

    def _index(self, name):
        return self.names.index(name)

    # -- parsing ------------------------------------------------------------------------------------------------

    def parse(self, block, columns, numeric):
        """Columns of ``block``: ``numeric`` ones as float64 ndarrays, others as text (pyarrow or object arrays).

        Raises :class:`DataError` naming the row of a value that is not a
        number, a missing number or a row with the wrong number of fields.
        """
        if self._pa is None:
            return self._parse_plain(block, columns, numeric)
        import pyarrow as pa

        if not block.n:
            return {c: np.empty(0) if c in numeric else pa.array([], pa.string()) for c in columns}

        try:
            table = self._arrow_table(block, columns, numeric)
        except pa.ArrowInvalid as exc:
            raise DataError(self._explain(block, columns, numeric, exc)) from None
        if table.num_rows != block.n:
            raise DataError(f"{display_name(self.path)}: rows {block.offset + 1}..{block.offset + block.n}: "
                            f"pyarrow reads {table.num_rows} rows where fastcal finds {block.n}")
        out = {}
        for name, col in zip(columns, table.columns):
            out[name] = arrow_to_numpy({name: col}, self.path, (name,), block.offset)[name] if name in numeric else col
        return out

    def _arrow_table(self, block, columns, numeric, text_only=False):
        import pyarrow as pa
        import pyarrow.csv as pcsv

        fields = [self._fields[self._index(c)] for c in columns]
        types = {f: (pa.float64() if c in numeric and not text_only else pa.string()) for f, c in zip(fields, columns)}
        read = pcsv.ReadOptions(column_names=self._fields, use_threads=False, block_size=max(1 << 20, len(block.data)))
        parse = pcsv.ParseOptions(newlines_in_values=b'"' in block.data, ignore_empty_lines=False)
        convert = pcsv.ConvertOptions(include_columns=fields, column_types=types, null_values=[""],
                                      strings_can_be_null=False, quoted_strings_can_be_null=False)
        table = pcsv.read_csv(io.BytesIO(block.data), read_options=read, parse_options=parse, convert_options=convert)
        return table.select(fields)

    def _explain(self, block, columns, numeric, exc):
        """The message for pyarrow's error on ``block``: the row with the wrong fields, or the first bad number."""
        import pyarrow as pa
        import pyarrow.compute as pc

        path = display_name(self.path)
        try:
            table = self._arrow_table(block, columns, numeric, text_only=True)
        except pa.ArrowInvalid:
            row, got = self._ragged_row(block)
            if row is not None:
                return f"{path}: row {block.offset + row + 1}: expected {len(self.names)} fields, got {got}"
            return f"{path}: rows {block.offset + 1}..{block.offset + block.n}: {str(exc).splitlines()[0]}"
        first = None
        for name, col in zip(columns, table.columns):
            if name not in numeric:
                continue
            col = col.combine_chunks()
            try:
                pc.cast(col, pa.float64())
                continue
            except pa.ArrowInvalid:
                pass
            lo, hi = 0, len(col)  # the first value that does not convert is in [lo, hi)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                try:
                    pc.cast(col.slice(lo, mid - lo), pa.float64())
                    lo = mid
                except pa.ArrowInvalid:
                    hi = mid
            if first is None or lo < first[0]:
                first = (lo, name, col[lo].as_py())
        if first is None:
            return f"{path}: rows {block.offset + 1}..{block.offset + block.n}: {str(exc).splitlines()[0]}"
        row, name, value = first
        return _bad_number(path, name, block.offset + row + 1, value)

    def _ragged_row(self, block):
        """(row in the block, fields) of the first record whose number of fields is not the header's."""
        import csv

        rows = csv.reader(io.StringIO(block.data.decode("utf-8", "replace"), newline=""))
        for r, row in enumerate(rows):
            got = max(len(row), 1)
            if got != len(self.names):
                return r, got
        return None, None

    def _parse_plain(self, block, columns, numeric):
        import csv

        path = display_name(self.path)
        text = block.data.decode("utf-8", "surrogateescape")  # bytes that are not UTF-8 kept, as pyarrow does
        idx = [self._index(c) for c in columns]
        buf = [[] for _ in columns]
        k = len(self.names)
        r = -1
        for r, row in enumerate(csv.reader(io.StringIO(text, newline=""))):
            if not row:
                row = [""]
            if len(row) != k:
                raise DataError(f"{path}: row {block.offset + r + 1}: expected {k} fields, got {len(row)}")
            for b, j in zip(buf, idx):
                b.append(row[j])
        if r + 1 != block.n:
            raise DataError(f"{path}: rows {block.offset + 1}..{block.offset + block.n}: the csv module reads "
                            f"{r + 1} rows where fastcal finds {block.n}")
        out = {}
        for name, values in zip(columns, buf):
            if name in numeric:
                arr = np.empty(len(values))
                for i, v in enumerate(values):
                    try:
                        arr[i] = _strict_float(v)
                    except ValueError:
                        raise DataError(_bad_number(path, name, block.offset + i + 1, v)) from None
                out[name] = arr
            else:
                out[name] = np.array(values, dtype=object)
        return out

    # -- the Reader interface -------------------------------------------------------------------------------------

    def batches(self, columns=None, numeric=()):
        columns = list(self.names) if not columns else [c for c in self.names if c in columns]
        columns = list(dict.fromkeys(columns))
        for block in self.blocks():
            parsed = self.parse(block, columns, numeric)
            yield {c: (v if isinstance(v, np.ndarray) else arrow_to_numpy({c: v}, self.path, (), 0)[c])
                   for c, v in parsed.items()}

    def group_column(self, values):
        if values.dtype.kind == "f":  # a column read as numbers too (e.g. the labels): integers if all are
            whole = np.isfinite(values).all() and (np.trunc(values) == values).all() and (
                not values.shape[0] or (values.min() >= -(2.0**63) and values.max() < 2.0**63))
            return values.astype(np.int64) if whole else values
        if not len(values):
            return np.empty(0, dtype=object)
        uniques, codes = text_codes(values)
        return typed(uniques, codes, kind_of(uniques))

    def prepare_groups(self, names):
        """Decide the type of each group column ``names`` from its distinct texts in the whole file (a pass
        over it); from stdin, which is read once, block by block (see :meth:`CsvPiece.groups`)."""
        self._kinds = {name: None for name in names}
        if self.path == "-":
            return
        names = list(dict.fromkeys(names))
        for block in self.blocks():
            parsed = self.parse(block, names, ())
            for name in names:
                self._kinds[name] = join(self._kinds[name], kind_of(text_codes(parsed[name])[0]))
        self._decided = True

    def pieces(self):
        any_block = False
        for block in self.blocks():
            any_block = True
            yield CsvPiece(self, block)
        if not any_block:
            empty = np.empty(0, dtype=np.int64)
            yield CsvPiece(self, Block(b"", empty, empty, 0))


def _strict_float(text):
    """``float(text)`` for what pyarrow reads as a number too: no digit separators, ASCII digits only."""
    if "_" in text or not text.isascii():
        raise ValueError(text)
    return float(text)


def _bad_number(path, name, row, value):
    if value is None or str(value).strip() == "":
        return f"{path}: column {name!r}, row {row}: missing value"
    return f"{path}: column {name!r}, row {row}: {value!r} is not a number"


class CsvPiece(Piece):
    """Records of a CSV file: the score columns parsed on demand, every column as text for other formats."""

    def __init__(self, reader, block):
        self.reader = reader
        self.block = block
        self.offset = block.offset
        self.n = block.n
        self._numbers = {}

    def numbers(self, name, path):
        from .base import check_numeric_column

        if name not in self._numbers:
            self._numbers[name] = self.reader.parse(self.block, [name], (name,))[name]
        return check_numeric_column(self._numbers[name], display_name(path), name, self.offset)

    def groups(self, name, path):
        """Column ``name`` typed as the whole column is (:meth:`CsvReader.prepare_groups`). From stdin, the type
        is that of the rows read so far: text after rows of numbers raises :class:`DataError`."""
        reader = self.reader
        uniques, codes = text_codes(reader.parse(self.block, [name], ())[name])
        kind = reader._kinds.get(name)
        if not reader._decided:
            new = join(kind, kind_of(uniques))
            if new == "str" and kind in ("int", "float"):
                bad = next(j for j, t in enumerate(uniques) if kind_of([t]) == "str")
                row = self.offset + int(np.flatnonzero(codes == bad)[0]) + 1
                raise DataError(f"{display_name(path)}: column {name!r}, row {row}: {uniques[bad]!r} is not a number, "
                                "but the rows before hold numbers: read from stdin, a group column takes the type "
                                "of its first rows; give a file")
            kind = reader._kinds[name] = new
        return typed(uniques, codes, kind)

    def batch(self):
        names = self.reader.names
        if len(set(names)) != len(names):
            raise UsageError(f"{display_name(self.reader.path)}: duplicate column names; only CSV output can "
                             "carry them through")
        parsed = self.reader.parse(self.block, list(names), ())
        if self.reader._pa is None:
            return parsed
        import pyarrow as pa

        return pa.Table.from_arrays([parsed[c] for c in names], names=list(names))


def csv_reader(path):
    """The CSV reader for ``path`` (``-``: stdin)."""
    return CsvReader(path)


def _csv_quote(name):
    """A header field as CSV writes it: quoted when it holds a comma, quote or line break."""
    if any(ch in name for ch in ',"\r\n') or name != name.strip():
        return '"' + name.replace('"', '""') + '"'
    return name


def _format_values(columns, pa_module):
    """The values of the output columns as CSV text: one line per row, fields separated by commas."""
    if pa_module is not None:
        import pyarrow.csv as pcsv

        table = pa_module.Table.from_arrays([arrow_array(np.asarray(v)) for v in columns],
                                            names=[f"c{j}" for j in range(len(columns))])
        out = io.BytesIO()
        pcsv.write_csv(table, out, pcsv.WriteOptions(include_header=False))
        return out.getvalue()
    rows = zip(*[np.asarray(v, dtype=np.float64).tolist() for v in columns])
    return "".join(",".join(map(repr, r)) + "\n" for r in rows).encode()


def _csv_writable(arrow_type):
    """Whether pyarrow's CSV writer takes a column of ``arrow_type`` (not lists, structs, maps, ...)."""
    import pyarrow.types as t

    if t.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return not (t.is_nested(arrow_type) or t.is_union(arrow_type))


class CsvWriter(Writer):
    """Every column of the batches, as CSV with a header line (``-``: stdout).

    :meth:`write_piece` of CSV records copies each record's bytes and appends
    the new fields before its line break.
    """

    def __init__(self, path):
        self.path = path
        self.target = None if path == "-" else new_target(path, ".csv")
        self._pa = optional_pyarrow()
        self._writer = None
        self._file = None
        self._header_done = False
        if path == "-":
            self._file = sys.stdout.buffer
        else:
            self._file = open(self.target.tmp, "wb")  # noqa: SIM115 - closed in _close

    def write_piece(self, piece, new):
        if not isinstance(piece, CsvPiece):
            return super().write_piece(piece, new)
        reader, block = piece.reader, piece.block
        if not self._header_done:
            head = reader.header
            extra = "".join("," + _csv_quote(str(name)) for name in new).encode("utf-8")
            self._file.write(head[: reader.header_end] + extra + head[reader.header_end:])
            self._header_done = True
        if not block.n:
            return
        from ._csv_kernels import append_fields

        text = np.frombuffer(_format_values(list(new.values()), self._pa), dtype=np.uint8)
        line_end = np.flatnonzero(text == 10)
        if line_end.shape[0] != block.n:
            raise DataError(f"{display_name(self.path)}: internal error: {line_end.shape[0]} values for {block.n} rows")
        data = np.frombuffer(block.data, dtype=np.uint8)
        out = np.empty(data.shape[0] + text.shape[0], dtype=np.uint8)
        m = append_fields(data, block.content_end, text, line_end, out)
        self._file.write(memoryview(out)[:m])

    def write(self, batch):
        if self._pa is not None:
            import pyarrow.csv as pcsv

            table = arrow_table(batch)
            if self._writer is None:
                for field in table.schema:
                    if not _csv_writable(field.type):
                        raise UsageError(f"{display_name(self.path)}: column {field.name!r} of type {field.type} "
                                         "cannot be written as CSV; write Parquet")
                self._writer = pcsv.CSVWriter(self._file, table.schema)
            self._writer.write_table(table)
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
        if self._pa is not None and self._writer is not None and self._writer is not True:
            self._writer.close()
            self._writer = None
        if self._file is not None:
            self._file.flush()
            if self.target is not None:
                self._file.close()
            self._file = None
