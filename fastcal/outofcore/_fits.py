r"""Exact fits from data that does not fit in memory: ``.npy`` files and Parquet, read in chunks.

:func:`fit_isotonic` and :func:`fit_platt` take 1-D arrays (``np.memmap``
included) or paths of ``.npy`` files; :func:`fit_isotonic_parquet` and
:func:`fit_platt_parquet` take a Parquet file and column names (pyarrow, the
``io`` extra); :func:`fit_beta` and :func:`fit_beta_parquet` likewise. They
return the same fitted :class:`fastcal.IsotonicRegression`,
:class:`fastcal.PlattScaling` and :class:`fastcal.BetaCalibration` as the in-memory API, equal to an in-memory
fit of the same data, while holding only a bounded part of it in memory.

Isotonic regression: partition by score, then merge
---------------------------------------------------
A first pass validates the data and takes an evenly strided sample of the
scores; the sample's quantiles cut the score range into partitions of about
``memory_budget / 64`` rows each. A second pass appends every chunk's rows to
the temporary file of their partition (an external bucket sort). Then the
partitions are read back one at a time, **in increasing score order**, and
each is summarised by the PAV steps (:func:`fastcal.isotonic._pav.summarise`,
on every thread); the blocks of the parts are pooled into the blocks of
the whole (:func:`fastcal.isotonic._pav.merge`) and finished by the estimator. This is exact because the
PAV blocks of a contiguous range of scores are unions of the blocks of the
whole fit, provided each part begins at the start of one of the fit's *tie
groups*: scikit-learn (and fastcal) pools scores closer than the dtype's
resolution :math:`\varepsilon` into one point, each group starting at the first
score at least :math:`\varepsilon` above the previous group's first score. A
partition that begins less than :math:`\varepsilon` above the previous one's
largest score (dense float32 data: :math:`\varepsilon = 10^{-6}`) has its first
rows, those within :math:`\varepsilon` of the previous partition's last group
start, moved to the previous partition before that one is fitted; the moved
rows are exactly the ones the whole fit would pool there. The same
partition-and-merge scheme, with the partitions on Dask workers, is
:func:`fastcal.dask.fit_isotonic`.

Platt scaling: chunked passes
-----------------------------
Each Newton iteration of :func:`fastcal.platt_scaling` needs the objective's
gradient and Hessian: sums over rows, which the fused Numba kernel computes
chunk by chunk and which are added up over the chunks. One pass over the file
per iteration (plus a few line-search passes, rarely); the iterations start
from the solution of a subsample (at most 2^20 rows) kept in memory, so a fit
takes about four passes (validation, the subsample, two or three Newton steps).

The algorithms are the subjects' drivers over a :class:`fastcal._engine.Rows`; this
module is their adapter: :class:`FileRows` streams the chunks and keeps the
partitions in temporary files.

Memory
------
Memory use is bounded by ``memory_budget`` (bytes, default 256 MiB), not by
the size of the data: chunks of ``chunk_rows`` rows are read (default: the
budget / 64 bytes), and partitions are sized so that fitting one, plus the
rows carried over, stays within the budget. Paths of ``.npy`` files are read
with plain file reads, a chunk at a time (no memory map), so even the address
space stays bounded; an ``np.memmap`` you pass works as well (the OS pages it
in and out), but a map counts its whole size against an address space limit
(``RLIMIT_AS``). What must fit in memory is the result: the PAV blocks of the
whole fit (32 bytes each; a calibration map has thousands, but isotonic
regression of a strictly increasing target has one per distinct score), and a
Parquet row group. Disk: the partition files take about the size of the score,
label and weight columns, in ``tmpdir`` (default: the system's temporary
directory), and are removed when the fit ends, also when it fails.
"""

from __future__ import annotations

import numbers
import os
import shutil
import tempfile
from typing import TYPE_CHECKING, Literal, Unpack

import numpy as np

from ._engine import fit_dtype, flat_column, split_chunk
from .isotonic import rows as _isotonic
from .beta import rows as _beta_rows
from .platt import rows as _platt_rows
from ._io import iter_npy, iter_parquet, npy_info, pyarrow_parquet
from ._params import Integer, check

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from .beta import BetaCalibration
    from .isotonic import IsotonicParams, IsotonicRegression
    from .platt import PlattScaling

    #: A 1-D array (a memory map included) or the path of a ``.npy`` file.
    ArrayOrPath = ArrayLike | str | os.PathLike[str]

__all__ = [
    "fit_beta",
    "fit_beta_parquet",
    "fit_isotonic",
    "fit_isotonic_parquet",
    "fit_platt",
    "fit_platt_parquet",
    "iter_npy",
    "iter_parquet",
]

#: Default memory budget of an out-of-core fit, in bytes.
DEFAULT_MEMORY_BUDGET = 256 << 20
#: Bytes of working memory per row of a partition being fitted (input columns,
#: sort buffers, the PAV stack, rows carried over), a generous bound.
_BYTES_PER_ROW_FIT = 64
#: Bytes per row of a chunk being read and split (chunk, bucket ids, split copy).
_BYTES_PER_ROW_READ = 64


# ---------------------------------------------------------------------------
# Sources: the chunk readers are fastcal._io's (iter_npy, iter_parquet).
# ---------------------------------------------------------------------------


class Columns:
    """Scores, labels and weights read in chunks, any number of times.

    ``factory()`` returns an iterator of ``(x, y, w)`` raw chunks (w may be
    None); ``n`` is the number of rows and ``x_dtype`` the dtype the scores
    are fitted in (float32 and float64 kept, anything else float64).
    """

    def __init__(self, factory, n, x_dtype, weighted, chunk_rows=1 << 20):
        self.factory = factory
        self.n = n
        self.chunk_rows = chunk_rows
        self.x_dtype = np.dtype(x_dtype)
        self.weighted = weighted

    def raw_chunks(self):
        """The raw chunks ``(x, y, w)``; ``ValueError`` if they do not hold :attr:`n` rows."""
        read = 0
        for x, y, w in self.factory():
            read += int(np.shape(x)[0]) if np.ndim(x) else 1
            yield x, y, w
        if read != self.n:
            raise ValueError(f"expected {self.n} rows, read {read}")


def array_source(scores, y, sample_weight, chunk_rows, score_name):
    """:class:`Columns` over arrays or paths of .npy files."""
    parts = {}
    n_of = {}
    for name, value in ((score_name, scores), ("y", y), ("sample_weight", sample_weight)):
        if value is None:
            continue
        if isinstance(value, numbers.Number) and name == "sample_weight":
            parts[name] = value
            continue
        if isinstance(value, (str, os.PathLike)):
            path = os.fspath(value)
            shape, dtype, _ = npy_info(path)
            if len(shape) == 2 and shape[1] == 1:
                shape = shape[:1]
            if len(shape) != 1:
                raise ValueError(f"{name} must be a 1-D array (or a single column), got an array of shape {shape}.")
            parts[name] = ("npy", path, dtype)
            n_of[name] = shape[0]
        else:
            arr = flat_column(value, name)
            parts[name] = ("array", arr, arr.dtype)
            n_of[name] = arr.shape[0]
    if len(set(n_of.values())) > 1:
        detail = ", ".join(f"{k} has {v}" for k, v in n_of.items())
        raise ValueError(f"Inconsistent numbers of samples: {detail}.")
    n = n_of[score_name]
    if n == 0:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")

    def stream(spec):
        if not isinstance(spec, tuple):
            while True:
                yield spec
        kind, obj, _ = spec
        if kind == "npy":
            yield from iter_npy(obj, chunk_rows, column=0 if len(npy_info(obj)[0]) == 2 else None)
        else:
            for lo in range(0, n, chunk_rows):
                yield obj[lo : lo + chunk_rows]

    def factory():
        xs = stream(parts[score_name])
        ys = stream(parts["y"])
        ws = stream(parts["sample_weight"]) if "sample_weight" in parts else None
        for x in xs:
            yield x, next(ys), (None if ws is None else next(ws))

    return Columns(factory, n, fit_dtype(parts[score_name][2]), "sample_weight" in parts, chunk_rows)


def _parquet_source(path, score_col, label_col, weight_col, chunk_rows):
    pq = pyarrow_parquet()
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    cols = [c for c in (score_col, label_col, weight_col) if c is not None]
    for c in cols:
        if c not in schema.names:
            raise ValueError(f"{path}: no column {c!r} (columns: {', '.join(schema.names)})")
    x_type = schema.field(score_col).type
    try:
        x_dtype = np.dtype(x_type.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        x_dtype = np.dtype(np.float64)

    def factory():
        for batch in iter_parquet(path, cols, chunk_rows):
            yield batch[score_col], batch[label_col], (None if weight_col is None else batch[weight_col])

    if not pf.metadata.num_rows:
        raise ValueError(f"{path}: no rows of data")
    return Columns(factory, pf.metadata.num_rows, fit_dtype(x_dtype), weight_col is not None, chunk_rows)


# ---------------------------------------------------------------------------
# Isotonic regression, out of core.
# ---------------------------------------------------------------------------


def budget_rows(memory_budget, chunk_rows):
    """``(chunk_rows, part_rows)``: rows read per chunk and rows per partition for ``memory_budget`` bytes.

    Validates both arguments (``None``: the defaults); used by the CLI too.
    """
    memory_budget = check("memory_budget", memory_budget, [Integer(1 << 20), None])
    chunk_rows = check("chunk_rows", chunk_rows, [Integer(1), None])
    if memory_budget is None:
        memory_budget = DEFAULT_MEMORY_BUDGET
    if chunk_rows is None:
        chunk_rows = max(1 << 12, memory_budget // _BYTES_PER_ROW_READ)
    part_rows = max(1 << 12, memory_budget // _BYTES_PER_ROW_FIT)
    return int(chunk_rows), int(part_rows)


class _PartitionFiles:
    """Append-only files, one per column and partition, in a temporary directory; removed by :meth:`cleanup`."""

    def __init__(self, n_parts, dtypes, tmpdir):
        self.dir = tempfile.mkdtemp(prefix="fastcal-partitions-", dir=tmpdir)
        self.n_parts = n_parts
        self.dtypes = dtypes  # one per column, None for a column of None
        self.rows = np.zeros(n_parts, dtype=np.int64)
        self.users = 1

    def _path(self, j, k):
        return os.path.join(self.dir, f"part{j:06d}.{k}")

    def append(self, j, arrays):
        m = arrays[0].shape[0]
        if not m:
            return
        for k, a in enumerate(arrays):
            if a is None:
                continue
            with open(self._path(j, k), "ab") as f:
                np.ascontiguousarray(a).tofile(f)
        self.rows[j] += m

    def read(self, j):
        if not self.rows[j]:
            return None
        return tuple(None if dtype is None else np.fromfile(self._path(j, k), dtype=dtype)
                     for k, dtype in enumerate(self.dtypes))

    def cleanup(self):
        self.users -= 1
        if self.users <= 0:
            shutil.rmtree(self.dir, ignore_errors=True)


def _apply(chunk, fns):
    for fn, args in fns:
        chunk = fn(chunk, *args)[0]
    return chunk


class FileRows:
    """The :class:`fastcal._engine.Rows` of out-of-core data: chunks streamed, partitions in temporary files.

    Chunks are read from a :class:`Columns` source on every pass (one at a
    time: memory holds one chunk); ``convert`` returns rows whose chunks are
    the source's, converted again on every pass. ``partition`` is one pass
    that appends every chunk's rows of each key range to that range's files
    (an external bucket sort, in ``tmpdir``); a partition is read whole when
    a pass reaches it, so it must fit in memory (the fits size them from the
    memory budget). Re-cutting partitioned rows rewrites only the partitions
    a moved bound falls in; the others are kept as they are. ``release``
    removes the files; so does an error or a signal inside ``partition``.
    """

    parallelism = 1

    def __init__(self, src, tmpdir=None, *, fns=(), parts=None, bounds=None, template=None):
        self.src = src
        self.tmpdir = tmpdir
        self.fns = tuple(fns)
        self.parts = parts  # per partition, the (files, j) it is read from
        self.bounds = bounds
        self.template = template  # empty chunk of the partitions' dtypes
        self.files = [] if parts is None else sorted({id(f): f for ps in parts for f, _ in ps}.values(), key=id)

    @property
    def n_rows(self):
        """The source's rows (known up front) for the raw chunks; None for converted or partitioned ones."""
        return self.src.n if self.parts is None and not self.fns else None

    def _raw(self, skip=()):
        if self.parts is None:
            yield from self.src.raw_chunks()
            return
        for i, sources in enumerate(self.parts):
            if i in skip:
                yield None
                continue
            pieces = [p for p in (f.read(j) for f, j in sources) if p is not None]
            if not pieces:
                yield self.template
            elif len(pieces) == 1:
                yield pieces[0]
            else:
                yield tuple(None if p[0] is None else np.concatenate(p) for p in zip(*pieces))

    def _chunks(self, skip=()):
        for chunk in self._raw(skip):
            yield None if chunk is None else _apply(chunk, self.fns)

    def map(self, fn, *args):
        return [fn(c, *args) for c in self._chunks()]

    def convert(self, fn, *args):
        facts = [fn(c, *args)[1] for c in self._chunks()]
        return self._derived(fns=self.fns + ((fn, args),)), facts

    def _derived(self, **kw):
        for f in self.files:
            f.users += 1
        kw = {"parts": self.parts, "bounds": self.bounds, "template": self.template, **kw}
        return FileRows(self.src, self.tmpdir, **kw)

    def partition(self, bounds, key=0):
        bounds = np.asarray(bounds)
        n_parts = bounds.shape[0] + 1
        whole = {}
        if self.parts is not None and not self.fns and len(self.parts) == self.bounds.shape[0] + 1:
            old = self.bounds
            for i in range(len(self.parts)):
                lo = old[i - 1] if i else -np.inf
                hi = old[i] if i < old.shape[0] else np.inf
                first = int(np.searchsorted(bounds, bounds.dtype.type(lo), side="right"))
                if first == int(np.searchsorted(bounds, bounds.dtype.type(hi), side="left")):
                    whole[i] = first  # every row stays together: its files are kept
        files = None
        template = self.template
        try:
            for chunk in self._chunks(whole):
                if chunk is None:  # a partition kept whole
                    continue
                if files is None:
                    dtypes = tuple(None if c is None else c.dtype for c in chunk)
                    files = _PartitionFiles(n_parts, dtypes, self.tmpdir)
                    template = tuple(None if c is None else c[:0] for c in chunk)
                for j, piece in enumerate(split_chunk(chunk, bounds, key)):
                    files.append(j, piece)
        except BaseException:
            if files is not None:
                files.cleanup()
            raise
        parts = [[] for _ in range(n_parts)]
        kept = {}
        for i, j in whole.items():
            parts[j].extend(self.parts[i])
            kept.update((id(f), f) for f, _ in self.parts[i])
        for f in kept.values():  # now also the new rows' (a FileRows holds one use of each of its files)
            f.users += 1
        if files is not None:
            for j in range(n_parts):
                parts[j].append((files, j))
        return FileRows(self.src, self.tmpdir, parts=parts, bounds=bounds, template=template)

    def release(self):
        files, self.files, self.parts = self.files, [], [[] for _ in (self.parts or ())]
        for f in files:
            f.cleanup()


def fit_isotonic_source(src, params, tmpdir, part_rows, score_name="X"):
    """The exact out-of-core isotonic fit of a :class:`Columns` source (the CLI's entry point too): the engine's
    driver (:func:`fastcal.isotonic._rows.fit_isotonic`) over :class:`FileRows`, partitions of about
    ``part_rows`` rows."""
    if not src.n:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")
    rows = FileRows(src, tmpdir)
    try:
        return _isotonic.fit_isotonic(rows, x_dtype=src.x_dtype, weighted=src.weighted,
                                      n_partitions=max(1, -(-src.n // part_rows)), **params)
    finally:
        rows.release()


def fit_isotonic(
    scores: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
    tmpdir: str | os.PathLike[str] | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """Fit :class:`fastcal.IsotonicRegression` on data read in chunks: equal to the in-memory fit.

    Parameters
    ----------
    scores, y : array-like or path
        1-D arrays (an ``np.memmap`` from ``np.load(path, mmap_mode="r")``
        is read chunk by chunk) or paths of ``.npy`` files (read with plain
        file reads, no map). Scores finite; labels finite (0/1 labels for
        calibration).
    sample_weight : array-like, path, float or None
        Non-negative weights, as in ``IsotonicRegression.fit``.
    memory_budget : int, optional
        Bytes of memory the fit may use for data (default 256 MiB): sets the
        chunk and partition sizes.
    chunk_rows : int, optional
        Rows per chunk read (default ``memory_budget // 64``).
    tmpdir : str, optional
        Directory for the partition files (default: the system's).
    **params
        ``IsotonicRegression`` parameters: ``y_min``, ``y_max``,
        ``increasing`` (True, False, or "auto" with 0/1 labels),
        ``out_of_bounds``, ``centered``.

    Returns
    -------
    IsotonicRegression
        Fitted; thresholds equal to an in-memory fit of the same data (the
        block means may differ in the last bits: sums are added in a
        different order).

    Notes
    -----
    Two passes over the data (validation and sampling; partitioning into
    temporary files), then two reads of the partitions (their heads, and
    with ``increasing="auto"`` Spearman's rho, exactly; the fit of each
    partition in score order), and, when bounds fall inside chains of tie
    groups, a rewrite of the partitions those bounds move through. See the module docstring for why the merge
    of the partitions' fits is exact.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from fastcal import outofcore
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random(10_000); y = (rng.random(10_000) < x).astype(np.uint8)
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "x.npy"), x); np.save(os.path.join(d, "y.npy"), y)
    >>> iso = outofcore.fit_isotonic(os.path.join(d, "x.npy"), os.path.join(d, "y.npy"), chunk_rows=1000)
    >>> from fastcal import IsotonicRegression
    >>> bool(np.array_equal(iso.X_thresholds_, IsotonicRegression().fit(x, y).X_thresholds_))
    True
    """
    chunk_rows, part_rows = budget_rows(memory_budget, chunk_rows)
    src = array_source(scores, y, sample_weight, chunk_rows, "X")
    return fit_isotonic_source(src, params, tmpdir, part_rows)


def fit_isotonic_parquet(
    path: str | os.PathLike[str],
    score_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
    tmpdir: str | os.PathLike[str] | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """:func:`fit_isotonic` on columns of a Parquet file (pyarrow, the ``io`` extra).

    The file is read one batch of ``chunk_rows`` rows at a time; pyarrow
    decodes a row group at a time, so a row group (10^6 rows in files written
    by pyarrow's defaults) must fit in memory. Null values raise
    ``ValueError`` naming the column and the row.
    """
    chunk_rows, part_rows = budget_rows(memory_budget, chunk_rows)
    src = _parquet_source(path, score_col, label_col, weight_col, chunk_rows)
    return fit_isotonic_source(src, params, tmpdir, part_rows)


# ---------------------------------------------------------------------------
# Platt scaling, in passes over chunks (the setup shared with beta calibration).
# ---------------------------------------------------------------------------


def fit_platt_source(src, max_iter, tol):
    """Platt scaling of a :class:`Columns` source in passes over its chunks (the CLI's entry point too).

    The engine's :func:`fastcal.platt._rows.fit_platt` over :class:`FileRows`:
    one pass over the chunks per Newton step, after the validation and the warm-start subsample.
    """
    if not src.n:
        raise ValueError("scores must have at least 1 element, got 0.")
    return _platt_rows.fit_platt(FileRows(src), x_dtype=src.x_dtype, weighted=src.weighted, max_iter=max_iter, tol=tol)


def fit_platt(
    scores: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> PlattScaling:
    """Fit :class:`fastcal.PlattScaling` on data read in chunks: equal to the in-memory fit (to ~1e-10).

    ``scores``, ``y``, ``sample_weight`` as in :func:`fit_isotonic` (arrays,
    memory maps or ``.npy`` paths); ``max_iter`` and ``tol`` as in
    :class:`fastcal.PlattScaling`. One pass validates the data, computes the
    class weights and score range, one more collects a subsample (at most
    2^20 rows, evenly spaced blocks) from which the Newton iterations start;
    each Newton iteration is then one pass over the chunks with the fused
    objective/gradient/Hessian kernel: about four passes in all.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = array_source(scores, y, sample_weight, chunk_rows, "scores")
    return fit_platt_source(src, max_iter, tol)


def fit_platt_parquet(
    path: str | os.PathLike[str],
    score_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> PlattScaling:
    """:func:`fit_platt` on columns of a Parquet file (pyarrow, the ``io`` extra)."""
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = _parquet_source(path, score_col, label_col, weight_col, chunk_rows)
    return fit_platt_source(src, max_iter, tol)


# ---------------------------------------------------------------------------
# Beta calibration, in passes over chunks.
# ---------------------------------------------------------------------------


def fit_beta_source(src, parameters, max_iter, tol):
    """Beta calibration of a :class:`Columns` source in passes over its chunks (the CLI's entry point too).

    The engine's :func:`fastcal.beta._rows.fit_beta` over :class:`FileRows`, as :func:`fit_platt_source`.
    """
    if not src.n:
        raise ValueError("p must have at least 1 element, got 0.")
    return _beta_rows.fit_beta(FileRows(src), x_dtype=src.x_dtype, weighted=src.weighted, parameters=parameters,
                              max_iter=max_iter, tol=tol)


def fit_beta(
    p: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> BetaCalibration:
    """Fit :class:`fastcal.BetaCalibration` on data read in chunks: equal to the in-memory fit (to ~1e-10).

    ``p`` (probabilities), ``y``, ``sample_weight`` as in :func:`fit_isotonic`
    (arrays, memory maps or ``.npy`` paths); ``parameters``, ``max_iter`` and
    ``tol`` as in :class:`fastcal.BetaCalibration`. As :func:`fit_platt`: one
    pass validates the data, one collects a subsample for the warm start, then one
    pass per Newton iteration (two or three), and, for "abm" with a negative
    a or b, the passes of the refit.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = array_source(p, y, sample_weight, chunk_rows, "p")
    return fit_beta_source(src, parameters, max_iter, tol)


def fit_beta_parquet(
    path: str | os.PathLike[str],
    p_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> BetaCalibration:
    """:func:`fit_beta` on columns of a Parquet file (pyarrow, the ``io`` extra)."""
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = _parquet_source(path, p_col, label_col, weight_col, chunk_rows)
    return fit_beta_source(src, parameters, max_iter, tol)
