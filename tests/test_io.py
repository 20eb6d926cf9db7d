"""The I/O layer (fastcal._io) on its own: atomic writes, .npy headers, chunk and batch boundaries.

The command line drives the same code end to end (test_cli.py); here each
reader and writer is checked directly, against NumPy's and pyarrow's own
readers and against the arrays the files were written from.
"""

import os

import numpy as np
import pyarrow as pa  # the io extra is a test dependency: a missing one fails, never skips
import pyarrow.parquet as pq
import pytest
from numpy.testing import assert_array_equal

from fastcal import _io
from fastcal._io import (
    AtomicTarget,
    DataError,
    UsageError,
    format_of,
    iter_npy,
    iter_parquet,
    new_target,
    npy_info,
    open_input,
    open_output,
    read_columns,
)


def _umask():
    """The process umask, read without changing it (Linux's /proc)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    raise AssertionError("no Umask line in /proc/self/status")


class Counter:
    """A progress stand-in that records what read_columns reports."""

    def __init__(self):
        self.rows = []
        self.closed = False

    def update(self, n):
        self.rows.append(n)

    def close(self):
        self.closed = True


# ---------------------------------------------------------------------------
# Atomic writes.
# ---------------------------------------------------------------------------


def test_atomic_target_commit_and_abort(tmp_path, monkeypatch):
    def no_umask(*args):
        raise AssertionError("the umask is process-wide: AtomicTarget must neither read nor change it")

    monkeypatch.setattr(os, "umask", no_umask)
    path = tmp_path / "model.json"
    path.write_text("old")
    target = AtomicTarget(path, ".json")
    tmp = os.path.basename(target.tmp)
    assert os.path.dirname(target.tmp) == str(tmp_path)  # same file system: the rename is atomic
    assert tmp.startswith(".fastcal-") and tmp.endswith(".json.tmp")
    assert os.stat(target.tmp).st_mode & 0o777 == 0o666 & ~_umask()
    with open(target.tmp, "w") as f:
        f.write("new")
    assert path.read_text() == "old"  # nothing changes before the commit
    target.commit()
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]
    target.abort()  # after a commit: nothing left to remove, no error

    second = AtomicTarget(path, ".json")
    assert second.tmp != target.tmp
    with open(second.tmp, "w") as f:
        f.write("partial")
    second.abort()
    assert path.read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.json"]


def test_atomic_target_needs_the_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        AtomicTarget(tmp_path / "nowhere" / "m.json")
    with pytest.raises(UsageError, match="directory .*nowhere does not exist"):
        new_target(str(tmp_path / "nowhere" / "out.csv"), ".csv")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.npy", "out.npz"])
def test_writers_leave_no_partial_file_on_an_exception(tmp_path, name):
    target = tmp_path / name
    target.write_bytes(b"previous content")
    batch = {"score": np.linspace(0, 1, 50), "calibrated": np.linspace(0.1, 0.9, 50)}
    writer = open_output(str(target), ["calibrated"])
    with pytest.raises(RuntimeError, match="disk on fire"):
        try:
            writer.write(batch)
            writer.write(batch)
            raise RuntimeError("disk on fire")
        except BaseException:
            writer.abort()
            raise
    assert target.read_bytes() == b"previous content"
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.npy", "out.npz"])
def test_writers_round_trip(tmp_path, name):
    rng = np.random.default_rng(0)
    batches = [{"id": np.arange(lo, lo + 40), "calibrated": rng.random(40)} for lo in (0, 40, 80)]
    target = tmp_path / name
    writer = open_output(str(target), ["calibrated"])
    for b in batches:
        writer.write(dict(b))
    writer.commit()
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    want = {c: np.concatenate([b[c] for b in batches]) for c in ("id", "calibrated")}
    if name.endswith(".npy"):
        assert_array_equal(np.load(target), want["calibrated"])  # the output column only
        return
    got = read_columns(open_input(str(target)), ["id", "calibrated"], ["id", "calibrated"], Counter())
    assert_array_equal(got["id"], want["id"])
    assert_array_equal(got["calibrated"], want["calibrated"])  # CSV too: floats are written round-trippable


@pytest.mark.parametrize(("k", "rows"), [(1, 0), (1, 1000), (3, 7)])
def test_npy_writer_header(tmp_path, k, rows):
    cols = [f"c{j}" for j in range(k)]
    data = np.arange(rows * k, dtype=np.float32).reshape(rows, k) / 7
    writer = open_output(str(tmp_path / "o.npy"), cols)
    for lo in range(0, rows, 300):
        writer.write({c: data[lo:lo + 300, j] for j, c in enumerate(cols)})
    writer.commit()
    got = np.load(tmp_path / "o.npy")
    if rows:
        assert got.dtype == np.float32
        assert_array_equal(got, data[:, 0] if k == 1 else data)
    else:
        assert got.dtype == np.float64 and got.shape == (0,)  # nothing written: an empty float64 column
    with open(tmp_path / "o.npy", "rb") as f:
        assert np.lib.format.read_magic(f) == (1, 0)
        np.lib.format.read_array_header_1_0(f)
        assert f.tell() % 64 == 0  # the data starts aligned, as NumPy writes it


# ---------------------------------------------------------------------------
# .npy files: format versions, chunks.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("version", "field"), [((1, 0), "score"), ((2, 0), "score"), ((3, 0), "σκορ")])
def test_npy_header_versions(tmp_path, version, field):
    # Version 3 exists for field names that are not latin-1: only it can hold this one.
    rec = np.zeros(1001, dtype=[(field, "<f8"), ("label", "u1")])
    rec[field] = np.linspace(0, 1, 1001)
    rec["label"] = np.arange(1001) % 2
    path = tmp_path / "v.npy"
    with open(path, "wb") as f:
        np.lib.format.write_array(f, rec, version=version)
    with open(path, "rb") as f:
        assert np.lib.format.read_magic(f) == version
    shape, dtype, fortran = npy_info(path)
    assert (shape, dtype, fortran) == ((1001,), rec.dtype, False)
    chunks = list(iter_npy(path, 250, column=field))
    assert [c.shape[0] for c in chunks] == [250, 250, 250, 250, 1]
    assert_array_equal(np.concatenate(chunks), rec[field])
    reader = open_input(str(path), batch_rows=500)
    assert reader.names == [field, "label"] and reader.n_rows == 1001
    got = read_columns(reader, [field, "label"], [field, "label"], Counter())
    assert_array_equal(got[field], rec[field])
    assert_array_equal(got["label"], rec["label"])


def test_npy_header_errors(tmp_path):
    rec = np.zeros(3, dtype=[("σ", "<f8")])
    with open(tmp_path / "v3.npy", "wb") as f:
        np.lib.format.write_array(f, rec, version=(3, 0))
    data = (tmp_path / "v3.npy").read_bytes()
    (tmp_path / "v4.npy").write_bytes(data[:6] + b"\x04\x00" + data[8:])
    with pytest.raises(ValueError, match=r"unsupported .npy format version 4\.0"):
        npy_info(tmp_path / "v4.npy")
    for cut in (10, 20):  # in the header's length, in the header
        (tmp_path / "cut.npy").write_bytes(data[:cut])
        with pytest.raises(ValueError, match="EOF while reading the array header"):
            npy_info(tmp_path / "cut.npy")
    (tmp_path / "latin1.npy").write_bytes(data.replace("σ".encode(), b"\xe9\xe9"))  # not UTF-8
    with pytest.raises(ValueError):
        npy_info(tmp_path / "latin1.npy")


@pytest.mark.parametrize("chunk_rows", [1, 999, 1000, 1001, 5000])
def test_iter_npy_chunk_boundaries(tmp_path, chunk_rows):
    m = np.arange(3000.0).reshape(1000, 3)
    np.save(tmp_path / "m.npy", m)
    whole = list(iter_npy(tmp_path / "m.npy", chunk_rows))
    assert all(0 < c.shape[0] <= chunk_rows for c in whole)  # never an empty chunk at an exact boundary
    assert sum(c.shape[0] for c in whole) == 1000
    assert_array_equal(np.concatenate(whole), m)
    col = list(iter_npy(tmp_path / "m.npy", chunk_rows, column=2))
    assert all(c.flags.c_contiguous for c in col)
    assert_array_equal(np.concatenate(col), m[:, 2])


def test_iter_npy_rejects_what_it_cannot_read(tmp_path):
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    np.save(tmp_path / "fortran.npy", np.asfortranarray(np.zeros((5, 2))))
    np.save(tmp_path / "fortran1.npy", np.asfortranarray(np.arange(5.0)[:, None]))
    np.save(tmp_path / "objects.npy", np.array([1, "a"], dtype=object), allow_pickle=True)
    full = np.arange(1000.0)
    np.save(tmp_path / "full.npy", full)
    (tmp_path / "short.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-80])
    for name, match in [("cube", "expected a 1-D or 2-D array"), ("fortran", "Fortran-ordered"),
                        ("objects", "Python objects"), ("short", "truncated")]:
        with pytest.raises(ValueError, match=match):
            list(iter_npy(tmp_path / f"{name}.npy", 100))
    assert_array_equal(np.concatenate(list(iter_npy(tmp_path / "fortran1.npy", 2))).ravel(), np.arange(5.0))
    # The complete chunks before the truncation are read: the error comes with the last one.
    chunks = []
    with pytest.raises(ValueError, match="truncated"):
        for c in iter_npy(tmp_path / "short.npy", 100):
            chunks.append(c)
    assert_array_equal(np.concatenate(chunks), full[:900])


def test_npy_reader_errors(tmp_path):
    (tmp_path / "junk.npy").write_bytes(b"not an npy file")
    with pytest.raises(DataError, match="junk.npy: not a readable .npy file"):
        open_input(str(tmp_path / "junk.npy"))
    np.save(tmp_path / "cube.npy", np.zeros((2, 2, 2)))
    with pytest.raises(DataError, match="expected a 1-D, 2-D or structured array, got shape"):
        open_input(str(tmp_path / "cube.npy"))
    np.save(tmp_path / "full.npy", np.arange(1000.0))
    (tmp_path / "short.npy").write_bytes((tmp_path / "full.npy").read_bytes()[:-80])
    reader = open_input(str(tmp_path / "short.npy"), batch_rows=100)
    with pytest.raises(DataError, match="truncated"):
        list(reader.batches())


# ---------------------------------------------------------------------------
# Parquet: batches across row groups, rows named across batches.
# ---------------------------------------------------------------------------


@pytest.fixture
def parquet_file(tmp_path):
    n = 3000
    table = pa.table({"id": np.arange(n), "s": np.linspace(0, 1, n), "name": [f"r{i}" for i in range(n)]})
    path = tmp_path / "d.parquet"
    pq.write_table(table, path, row_group_size=1000)
    return path, table


@pytest.mark.parametrize("chunk_rows", [999, 1000, 1001, 3000, 5000])
def test_iter_parquet_chunks(parquet_file, chunk_rows):
    path, table = parquet_file
    chunks = list(iter_parquet(path, ["s", "id"], chunk_rows))
    assert all(list(c) == ["s", "id"] for c in chunks)  # the order asked for, not the file's
    assert all(0 < len(c["s"]) <= chunk_rows for c in chunks)
    assert sum(len(c["s"]) for c in chunks) == table.num_rows
    assert_array_equal(np.concatenate([c["s"] for c in chunks]), table.column("s").to_numpy())
    assert_array_equal(np.concatenate([c["id"] for c in chunks]), np.arange(table.num_rows))
    with pytest.raises(KeyError, match="nope"):
        next(iter_parquet(path, ["s", "nope"], chunk_rows))


@pytest.mark.parametrize("null_at", [999, 1000, 2999])
def test_parquet_nulls_are_named_by_row_across_batches(tmp_path, null_at):
    s = np.linspace(0, 1, 3000).tolist()
    s[null_at] = None
    pq.write_table(pa.table({"s": pa.array(s), "t": [None] * 3000}), tmp_path / "n.parquet", row_group_size=1000)
    with pytest.raises(ValueError, match=rf"n.parquet: column 's', row {null_at + 1}: missing value"):
        list(iter_parquet(tmp_path / "n.parquet", ["s"], 1000))
    reader = open_input(str(tmp_path / "n.parquet"), batch_rows=1000)
    with pytest.raises(DataError, match=rf"n.parquet: column 's', row {null_at + 1}: missing value"):
        list(reader.batches(None, ["s"]))
    # Nulls are an error only in the columns that must hold numbers.
    got = read_columns(reader, ["t"], [], Counter())
    assert got["t"].shape == (3000,) and all(v is None for v in got["t"])


def test_parquet_reader(parquet_file):
    path, table = parquet_file
    reader = open_input(str(path), batch_rows=1000)
    assert reader.names == ["id", "s", "name"] and reader.n_rows == 3000
    batches = list(reader.batches(["name", "s"], ["s"]))
    assert [len(b["s"]) for b in batches] == [1000, 1000, 1000]
    assert all(sorted(b) == ["name", "s"] for b in batches)
    progress = Counter()
    got = read_columns(reader, ["s", "name"], ["s"], progress)
    assert progress.rows == [1000, 1000, 1000] and progress.closed
    assert_array_equal(got["s"], table.column("s").to_numpy())
    assert got["name"].tolist() == table.column("name").to_pylist()


# ---------------------------------------------------------------------------
# CSV: the pyarrow and the standard-library readers, batch boundaries, row numbers.
# ---------------------------------------------------------------------------


@pytest.fixture(params=["pyarrow", "csv module"])
def csv_engine(request, monkeypatch):
    if request.param == "csv module":
        monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")
    else:
        monkeypatch.delenv("FASTCAL_CLI_NO_PYARROW", raising=False)
    return request.param


def write_csv(path, n, bad_row=None, bad=""):
    lines = ["s,name"] + [f"{i / n!r},r{i}" for i in range(n)]
    if bad_row is not None:
        lines[bad_row] = bad  # line bad_row is data row bad_row (line 0 is the header)
    path.write_text("\n".join(lines) + "\n")


def test_csv_batches(tmp_path, csv_engine):
    n = 5000
    write_csv(tmp_path / "d.csv", n)
    reader = open_input(str(tmp_path / "d.csv"), batch_rows=1000)
    assert reader.engine == csv_engine
    assert reader.names == ["s", "name"] and reader.n_rows is None
    batches = list(reader.batches(None, ["s"]))
    sizes = [len(b["s"]) for b in batches]
    assert sum(sizes) == n and len(sizes) > 1 and min(sizes) > 0
    assert sizes == [1000] * 5  # batches of batch_rows records; an exact multiple: no empty batch at the end
    assert_array_equal(np.concatenate([b["s"] for b in batches]), np.arange(n) / n)
    assert [str(v) for b in batches for v in b["name"]] == [f"r{i}" for i in range(n)]
    got = read_columns(reader, ["s"], ["s"], Counter())
    assert_array_equal(got["s"], np.arange(n) / n)


@pytest.mark.parametrize(("bad", "message"), [
    ("0.5,", None),  # an empty name is fine: only numeric columns have missing values
    (",r", "column 's', row {row}: missing value"),
    ("oops,r", "column 's', row {row}: 'oops' is not a number"),
    ("0.5,r,extra", "row {row}: expected 2 fields, got 3"),
])
@pytest.mark.parametrize("bad_row", [1000, 1001, 4000])
def test_csv_errors_name_the_row_across_batches(tmp_path, csv_engine, bad, message, bad_row):
    write_csv(tmp_path / "d.csv", 5000, bad_row, bad)
    if message is None:
        got = read_columns(open_input(str(tmp_path / "d.csv"), batch_rows=1000), ["s", "name"], ["s"], Counter())
        assert str(got["name"][bad_row - 1]) in ("", "None")
        return
    with pytest.raises(DataError) as exc:  # pyarrow finds a ragged row in its first block, on opening
        read_columns(open_input(str(tmp_path / "d.csv"), batch_rows=1000), ["s"], ["s"], Counter())
    assert str(exc.value) == f"{tmp_path / 'd.csv'}: " + message.format(row=bad_row)


def test_csv_non_finite_values_are_named(tmp_path, csv_engine):
    write_csv(tmp_path / "d.csv", 3000, 2001, "nan,r")
    with pytest.raises(DataError, match=r"column 's', row 2001: nan is not finite"):
        read_columns(open_input(str(tmp_path / "d.csv"), batch_rows=1000), ["s"], ["s"], Counter())


# ---------------------------------------------------------------------------
# .npz files; formats by extension.
# ---------------------------------------------------------------------------


def test_npz_reader(tmp_path):
    np.savez(tmp_path / "d.npz", s=np.arange(3000.0), y=np.arange(3000)[:, None] % 2, short=np.zeros(5))
    reader = open_input(str(tmp_path / "d.npz"), batch_rows=1000)
    assert reader.names == ["s", "y", "short"] and reader.n_rows is None
    batches = list(reader.batches(["s", "y"]))
    assert [len(b["s"]) for b in batches] == [1000, 1000, 1000] and reader.n_rows == 3000
    assert_array_equal(np.concatenate([b["y"] for b in batches]), np.arange(3000) % 2)  # (n, 1): one column
    with pytest.raises(DataError, match="array 'short' has 5 rows, others have 3000"):
        list(reader.batches())


def test_formats_by_extension(monkeypatch):
    assert [format_of(p, "input") for p in ("-", "a.csv", "a.PQ", "a.parquet", "b.npy", "c.NPZ")] == [
        "csv", "csv", "parquet", "parquet", "npy", "npz"]
    assert set(_io.FORMATS.values()) == {"csv", "parquet", "npy", "npz"}
    with pytest.raises(UsageError, match=r"a.txt: unknown output format '.txt'; use .csv"):
        format_of("a.txt", "output")
    with pytest.raises(UsageError, match=r"unknown input format '\(no extension\)'"):
        format_of("data", "input")
    monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")
    assert format_of("a.csv", "input") == "csv"
    with pytest.raises(UsageError, match="Parquet files need pyarrow"):
        format_of("a.parquet", "input")


def test_open_input_missing_file_and_column(tmp_path):
    with pytest.raises(UsageError, match="missing.npy: no such file"):
        open_input(str(tmp_path / "missing.npy"))
    (tmp_path / "dir.csv").mkdir()
    os.mkfifo(tmp_path / "fifo.csv")
    for name in ("dir.csv", "fifo.csv"):
        with pytest.raises(UsageError, match=f"{name}: not a regular file; pipe CSV into stdin and give - "):
            open_input(str(tmp_path / name))
    np.save(tmp_path / "m.npy", np.zeros((4, 3)))
    reader = open_input(str(tmp_path / "m.npy"))
    assert reader.names == ["0", "1", "2"]
    reader.require(["2", "0"])
    with pytest.raises(UsageError, match=r"m.npy: no column '3' \(columns: 0, 1, 2\)"):
        reader.require(["0", "3"])


# ---------------------------------------------------------------------------
# CSV records: the Numba splitter against the csv module, across read and batch boundaries.
# ---------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_FIELD = st.text(alphabet=st.sampled_from(list('ab1 ,"\r\n\u00e9')), max_size=6)


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(_FIELD, min_size=2, max_size=2), min_size=0, max_size=25),
       eol=st.sampled_from(["\n", "\r\n", "\r"]), final_eol=st.booleans(), cap=st.integers(1, 7),
       read_bytes=st.integers(1, 40), quote_all=st.booleans())
def test_split_records_matches_the_csv_module(rows, eol, final_eol, cap, read_bytes, quote_all):
    import csv
    import io

    from fastcal._io import csv as fcsv

    def field(f):  # quoted when it must be (a comma, quote or line break in it), or always
        return '"' + f.replace('"', '""') + '"' if quote_all or any(c in f for c in ',"\r\n') else f

    data = eol.join(",".join(map(field, r)) for r in rows).encode()
    if final_eol and rows:
        data += eol.encode()
    old = fcsv.READ_BYTES
    fcsv.READ_BYTES = read_bytes  # many reads, records cut anywhere
    try:
        blocks = list(fcsv.records(io.BytesIO(data), cap))
    finally:
        fcsv.READ_BYTES = old
    assert b"".join(b for b, _, _ in blocks) == data  # every byte, in order, once
    assert all(0 < ce.shape[0] <= cap for _, ce, _ in blocks)
    records = []
    for block, content_end, next_start in blocks:
        starts = np.concatenate(([0], next_start[:-1]))
        assert next_start[-1] == len(block)
        for s, e, n in zip(starts, content_end, next_start):
            assert block[e:n] in (eol.encode(), b"")  # the line break, or nothing at the very end
            records.append(block[s:e])
    parsed = [next(csv.reader(io.StringIO(r.decode(), newline=""))) for r in records]
    assert parsed == rows


def test_csv_reader_reads_stdin_once_in_blocks(monkeypatch):
    import io
    import sys

    data = b"s,t\n" + b"".join(b"%d,x\n" % i for i in range(5000))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    reader = open_input("-", batch_rows=700)
    got = read_columns(reader, ["s"], ["s"], Counter())
    assert_array_equal(got["s"], np.arange(5000))
    with pytest.raises(UsageError, match="can be read only once"):
        next(reader.batches(["s"], ["s"]))
