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
each is summarised by the PAV engine (:func:`fastcal._pav_engine.summarise`,
on every thread); the blocks of the parts are pooled into the blocks of
the whole (:func:`fastcal._pav_engine.merge`) and finished by the estimator. This is exact because the
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
takes about three passes.

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

from . import _pav_engine
from ._io import iter_npy, iter_parquet, npy_info, pyarrow_parquet
from ._params import Integer, check
from ._partition import (
    SAMPLE_PER_CHUNK,
    auto_needs_binary,
    chain_exits,
    check_total_weight,
    choose_bounds,
    convert_chunk,
    fit_dtype,
    flat_column,
    global_weight_exponent,
    head_summary,
    increasing_from_rho,
    merge_heads,
    prepare_chunk,
    resolution,
    spearman_from_partials,
    spearman_partial,
    split_by_bounds,
    summarize_chunk,
    tie_entries,
)
from ._validation import rescale_weights, weight_exponent

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

    def chunks(self, *, score_name="X", binary=False, validate=True):
        """Chunks ``(x, labels, w)``, converted; validated unless ``validate`` is False (a later pass)."""
        offset = 0
        check = prepare_chunk if validate else convert_chunk
        kw = dict(binary=binary) if validate else {}
        for x, y, w in self.factory():
            chunk = check(x, y, w, self.x_dtype, score_name=score_name, offset=offset, **kw)
            offset += chunk[0].shape[0]
            yield chunk
        if offset != self.n:
            raise ValueError(f"expected {self.n} rows, read {offset}")


def _array_source(scores, y, sample_weight, chunk_rows, score_name):
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
    """Append-only files, one set (x, y[, w]) per partition, in a temporary directory."""

    def __init__(self, n_parts, dtypes, tmpdir):
        self.dir = tempfile.mkdtemp(prefix="fastcal-partitions-", dir=tmpdir)
        self.n_parts = n_parts
        self.dtypes = dtypes  # (x, y, w or None)
        self.rows = np.zeros(n_parts, dtype=np.int64)

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
                a.tofile(f)
        self.rows[j] += m

    def read(self, j, *, delete=True):
        if not self.rows[j]:
            return None
        out = []
        for k, dtype in enumerate(self.dtypes):
            if dtype is None:
                out.append(None)
                continue
            path = self._path(j, k)
            out.append(np.fromfile(path, dtype=dtype))
            if delete:
                os.unlink(path)
        return tuple(out)

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def _fit_blocks(part, sign, exponent, centered):
    """The engine's summary (PAV blocks) of a unit; the weights rescaled by ``2**-exponent``, the same for every unit (see ``global_weight_exponent``)."""
    w = rescale_weights(part[2], exponent)[0]
    return _pav_engine.summarise(part[0], part[1], w, sign, centered=centered)


def _concat(a, b):
    return tuple(None if p is None else np.concatenate((p, q)) for p, q in zip(a, b))


def _select(part, mask):
    return tuple(None if p is None else p[mask] for p in part)


def fit_isotonic_source(src, params, tmpdir, part_rows, score_name="X"):
    """The exact out-of-core isotonic fit of a :class:`Columns` source (the CLI's entry point too)."""
    from .isotonic import new_estimator, set_fitted_blocks

    est = new_estimator(params)
    if not src.n:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")
    auto = est.increasing == "auto"
    dtype = src.x_dtype
    eps = resolution(dtype)

    # Pass 1: validate, sample, count. About 64 sampled scores per partition
    # place the boundaries well enough (a partition is at most ~2x its target).
    n_chunks = max(1, -(-src.n // src.chunk_rows))
    per_chunk = int(min(SAMPLE_PER_CHUNK, max(16, -(-64 * -(-src.n // part_rows) // n_chunks))))
    summaries = [summarize_chunk(*c, sample_size=per_chunk, binary=auto) for c in src.chunks(score_name=score_name)]
    check_total_weight(summaries, src.weighted)
    exponent = global_weight_exponent(summaries)
    n_fit = sum(s.n_fit for s in summaries)
    if auto:
        auto_needs_binary(summaries)
    n_parts = max(1, -(-n_fit // part_rows))
    bounds = choose_bounds(summaries, n_parts, dtype)
    keep_zero = auto and any(s.has_zero for s in summaries)

    # Pass 2: append every chunk's rows to its partition's file; summarise the heads of the pieces.
    files = None
    pieces = [[] for _ in range(bounds.shape[0] + 1)]
    try:
        for x, labels, w in src.chunks(score_name=score_name, validate=False):
            if files is None:
                files = _PartitionFiles(bounds.shape[0] + 1, (dtype, labels.dtype, None if w is None else w.dtype),
                                        tmpdir)
            for j, piece in enumerate(split_by_bounds(x, labels, w, bounds, drop_zero=not keep_zero)):
                files.append(j, piece)
                if piece[0].shape[0]:
                    pieces[j].append(head_summary(piece[0], piece[2] if keep_zero else None, eps))
        heads = [merge_heads(p, eps) for p in pieces]

        # Direction: Spearman's rho over all rows, from the partitions (ranges of scores).
        if auto:
            partials = []
            for j in range(files.n_parts):
                part = files.read(j, delete=False)
                if part is not None:
                    partials.append(spearman_partial(part[0], part[1]))
                del part
            est.increasing_ = increasing_from_rho(spearman_from_partials(partials), src.n, stacklevel=4)
        else:
            est.increasing_ = bool(est.increasing)
        sign = 1.0 if est.increasing_ else -1.0

        # Pass 3: fit the units in score order (see _partition.tie_entries); a
        # partition's rows below its entry join the unit before.
        blocks = []
        pending = None
        part = None

        def exits_of(j):
            return chain_exits(np.sort(part[0]), eps, heads[j][3])

        for j, entry in tie_entries(heads, eps, exits_of):
            part = files.read(j)
            if keep_zero and part[2] is not None:
                part = _select(part, part[2] > 0)
            if entry is None:
                pending = _concat(pending, part)
                continue
            rest = part
            if pending is not None:
                if entry > heads[j][1]:
                    below = part[0] < part[0].dtype.type(entry)
                    pending = _concat(pending, _select(part, below))
                    rest = _select(part, ~below)
                blocks.append(_fit_blocks(pending, sign, exponent, est.centered))
            pending = rest
        blocks.append(_fit_blocks(pending, sign, exponent, est.centered))
    finally:
        if files is not None:
            files.cleanup()
    return set_fitted_blocks(est, _pav_engine.merge(blocks))


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
    Three passes over the data (validation and sampling; partitioning into
    temporary files; fitting the partitions in score order), plus one read of
    the partitions with ``increasing="auto"``, which computes Spearman's rho
    exactly from the partitions. See the module docstring for why the merge
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
    src = _array_source(scores, y, sample_weight, chunk_rows, "X")
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


def _logistic_passes(src, name, array_pass):
    """The first pass of a Platt or beta fit over a :class:`Columns` source, and the passes that follow it.

    One pass over the chunks (scores called ``name``) checks them, merges
    their preparation sums and keeps the warm-start subsample. Returns
    ``(prepared, exponent, run_pass, rows)`` for ``platt.fit_passes`` /
    ``beta.fit_passes``: the passes see the weights rescaled by
    ``2**-exponent`` (:func:`fastcal._validation.weight_exponent` of the
    largest weight), as the in-memory fit does; ``run_pass(*args)`` is one
    pass of ``array_pass(s, y, w)(*args)`` over the chunks, added in chunk
    order; ``rows(fraction)`` returns the subsample kept.
    """
    from . import platt

    if not src.n:
        raise ValueError(f"{name} must have at least 1 element, got 0.")
    fraction = platt.subsample_fraction(src.n)
    preps, subs, wmax = [], [], 0.0
    for s, y, w in src.chunks(score_name=name, validate=False):
        preps.append(platt.prepare(s, y, w, name=name))
        subs.append(platt.subsample(s, y, w, fraction))
        wmax = max(wmax, float(w.max())) if w is not None and w.shape[0] else wmax
    if src.weighted and not sum(float(p[1].sum()) for p in preps) > 0:
        raise ValueError("sample_weight must have a positive sum.")
    exponent = weight_exponent(None, wmax)

    def run_pass(*args):
        acc = 0.0
        for s, y, w in src.chunks(score_name=name, validate=False):
            acc = acc + array_pass(s, y, rescale_weights(w, exponent)[0])(*args)
        return acc

    def rows(_):
        s, y, w = (None if parts[0] is None else np.concatenate(parts) for parts in zip(*subs))
        return s, y, rescale_weights(w, exponent)[0]

    return platt.merge_prepared(preps, exponent), exponent, run_pass, rows


def fit_platt_source(src, max_iter, tol):
    """Platt scaling of a :class:`Columns` source in passes over its chunks (the CLI's entry point too).

    :func:`fastcal.platt.fit_passes` with one pass over the chunks per call;
    the first pass also keeps the warm-start subsample.
    """
    from . import platt

    max_iter_c, tol_c = platt.check_max_iter(max_iter), platt.check_tol(tol)
    prepared, exponent, run_pass, rows = _logistic_passes(src, "scores", platt.array_pass)
    fit = platt.fit_passes(prepared, src.n, src.weighted, run_pass, rows, max_iter_c, tol_c, exponent)
    return platt.fitted_estimator(fit, max_iter, tol, stacklevel=3)


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
    class weights and score range and keeps a subsample (at most 2^20 rows,
    evenly spaced blocks) from which the Newton iterations start; each Newton
    iteration is then one pass over the chunks with the fused
    objective/gradient/Hessian kernel: about three passes in all.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = _array_source(scores, y, sample_weight, chunk_rows, "scores")
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

    :func:`fastcal.beta.fit_passes` with one pass over the chunks per call,
    as :func:`fit_platt_source`; the first pass also keeps the warm-start subsample.
    """
    from . import beta, platt

    model = beta.check_model(parameters)
    max_iter_c, tol_c = platt.check_max_iter(max_iter), platt.check_tol(tol)
    prepared, _, run_pass, rows = _logistic_passes(src, "p", beta.array_pass)
    eps = float(np.finfo(src.x_dtype).eps)
    fit = beta.fit_passes(prepared, src.n, src.weighted, run_pass, rows, model, eps, max_iter_c, tol_c)
    return beta.fitted_estimator(fit, parameters, max_iter, tol, stacklevel=3)


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
    pass validates the data and keeps a subsample for the warm start, then one
    pass per Newton iteration (two or three), and, for "abm" with a negative
    a or b, the passes of the refit.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = _array_source(p, y, sample_weight, chunk_rows, "p")
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
