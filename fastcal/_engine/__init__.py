"""The engine at the bottom of fastcal: the one small API through which every backend drives every algorithm.

An algorithm computes its result from data it never holds whole. It is
written once, as

summarise
    a chunk of rows into a small *summary* (sums, counts, PAV blocks, a bin
    table), where the chunk lives;
merge
    summaries, in chunk order, into the summary of their union (for the
    PAV, of chunks adjacent in score order);
finish
    the result from the merged summary, on the caller's side.

One pass of these is a :class:`Reduction` (:func:`reduce` runs it).
Algorithms that need several passes (a Newton fit takes one pass per step)
or a range partition by score (the PAV, the AUC) are *drivers*: plain
functions that take a :class:`Rows` and call its methods. Nothing else of a
backend is visible to them. A backend is therefore an adapter and nothing
more: it turns its data into a :class:`Rows` (and back, for the results
that are rows), and calls the driver. Today's adapters:

- in memory, on fastcal's own threads (:mod:`fastcal._core.parallel`): the
  drivers' per-chunk functions are the same kernels, run on score ranges
  or row tasks whose bounds depend on the input size alone;
- :class:`ListRows` below: chunks held in this process (tests, and the
  reference any other adapter must equal);
- out of core (:mod:`fastcal.outofcore`): chunks read from files, partitions
  written to temporary files;
- Dask (:mod:`fastcal.dask`): chunks persisted on the workers;
- Spark (:mod:`fastcal.spark`): partitions of a cached DataFrame, per-chunk
  functions run by ``mapInArrow``.

Another system (Ray, Beam, Flink) drives the algorithms the same way:
implement the methods of :class:`Rows`, and call the drivers. This package
imports no subject of fastcal: each subject's driver lives in the subject's
package, above it, and the package exports it as ``rows``.

Its modules hold the rest of what the subjects share below their drivers:
:mod:`~fastcal._engine.chunked` (fixed-chunk reductions in memory: the chunk
count, the in-order and exact merges), :mod:`~fastcal._engine.newton` (the
Newton driver of every logistic fit, a schedule of passes), :mod:`~fastcal._engine.sort` (the
parallel radix sorts and range sorts of rows in memory) and
:mod:`~fastcal._engine.partition` (range partitions of rows and the
tie-group walk of partitioned isotonic fits).

The drivers
-----------
Each is ``f(rows, *, x_dtype, weighted, **parameters)``: ``rows`` of raw
NumPy chunks as the backend has them (the driver's ``convert`` validates and
converts them, raising the in-memory errors), ``w`` None in every chunk when
``weighted`` is False, ``x_dtype`` the declared dtype of column 0 (needed
when chunks are empty), the other parameters those of the public function.
Each module states its exactness rule.

:mod:`fastcal.isotonic._rows` (``fastcal.isotonic.rows``)
    ``fit_isotonic(rows, *, x_dtype, weighted, n_partitions=None, **params)``
    on chunks ``(scores, y, w)``: an :class:`fastcal.IsotonicRegression`.
:mod:`fastcal.platt._rows`, :mod:`fastcal.beta._rows`
    ``fit_platt`` and ``fit_beta`` on chunks ``(scores, y, w)`` / ``(p, y, w)``.
:mod:`fastcal.prior._rows`
    ``estimate_priors_em(rows, *, x_dtype, train_priors, **params)`` on
    chunks ``(p,)`` or ``(p_0, ..., p_{k-1})``: the EM estimate of new
    class priors.
:mod:`fastcal.metrics._rows` (``fastcal.metrics.rows``)
    ``calibration_curve``, ``expected_calibration_error``,
    ``brier_score_loss``, ``log_loss``, ``brier_decomposition``,
    ``smooth_ece``, ``fit_histogram`` on chunks ``(y_prob, y_true, w)``.
:mod:`fastcal.metrics._report_rows` (``fastcal.metrics.report_rows``)
    ``score_decomposition``, ``corp_reliability``, ``roc_auc_score``,
    ``calibration_slope_intercept``, ``calibration_report`` on chunks
    ``(y_prob, y_true, w)``.
:mod:`fastcal.multicalibration._rows`, :mod:`fastcal.multicalibration._mce_rows`
    ``ecce`` and the single-pass metrics (``calibration_ratio``,
    ``normalized_entropy``, ``proportional_ece``: its table ``REDUCTIONS``)
    on chunks ``(y_prob, y_true, w)``; ``segment_report`` on chunks
    ``(y_prob, y_true, w, groups)``; ``multicalibration_error`` on chunks
    ``(y_prob, y_true, w, *features)``.
:mod:`fastcal.grouped._rows`
    ``fit_grouped(rows, *, x_dtype, weighted, calibrator, min_samples_per_group)``
    on chunks ``(scores, y, w, groups)``: a :class:`fastcal.GroupedCalibrator`.

Helpers for adapters: :func:`split_chunk` (a chunk cut by key ranges, for a
``partition`` that shuffles), :func:`fit_dtype`, :func:`flat_column`; for
drivers, :func:`user_stacklevel`, :func:`partition_count` (the default
number of range partitions) and :func:`convert` (a conversion whose chunks
a backend may not keep).

The ``Rows`` contract
---------------------
A ``Rows`` is a table of aligned columns cut into *chunks*; a chunk is a
tuple of 1-D NumPy arrays of equal length (a column may be ``None``, the
same in every chunk, e.g. no weights). The columns' meaning is the driver's
business: the backend moves them and never looks inside, except at the key
column of :meth:`Rows.partition`.

``map(fn, *args) -> list``
    ``fn(chunk, *args)`` for every chunk, run where the chunk lives, results
    returned to the caller in chunk order. ``fn`` is a module-level
    function of fastcal (a backend may pickle it by reference, so workers
    need fastcal installed); ``args`` and results are small and picklable.
``convert(fn, *args) -> (Rows, list)``
    ``fn(chunk, *args)`` returns ``(new_chunk, fact)``; the new chunks are
    kept where they are (persisted, cached, or recomputed from the source
    on every pass: the backend chooses, but every pass sees the same rows),
    the facts come back in chunk order. Validation and conversion run here,
    once, and raise the in-memory fit's errors.
``partition(bounds, key=0) -> Rows``
    The rows cut by the value of column ``key``: partition ``j`` holds the
    rows whose key ``v`` has ``bounds[j - 1] <= v < bounds[j]`` (``bounds``
    ascending values of the key's dtype, compared in it; ``len(bounds) + 1``
    partitions, some maybe empty, in that order). Within a partition the row order is the backend's
    (drivers sort when order matters). Calling it again on a partitioned
    ``Rows`` with moved bounds re-cuts it (backends may move only the rows
    that change side).
``release()``
    Free what the backend keeps for this ``Rows`` (cached partitions,
    temporary files). Idempotent; a ``Rows`` is not used after it.
``parallelism``
    How many chunks the backend can work on at once (a hint for the number
    of partitions; never a bound that changes a result).
``convert_later(fn, *args) -> Rows`` and ``describe(key, size, largest=None)`` (optional, together)
    For a backend that cuts its rows itself, before any pass of fastcal's
    functions over them (Spark: in the JVM). ``convert_later`` returns the
    Rows of ``fn(chunk, *args)`` (a new chunk), converted where each chunk
    is read in every later pass, not now; its ``partition`` cuts the raw
    rows by their key as a float64 (NaN in the last partition), so ``fn``
    must convert each row on its own, in order, keep the key's order and
    raise on the keys it refuses. ``describe`` returns ``(rows, chunks,
    sample, most)``: the number of rows and of chunks, about ``size`` raw
    values of column ``key`` (maybe not finite), and the largest raw value
    of column ``largest`` (None if not asked, or no rows), without a pass of
    fastcal's functions. The isotonic driver then cuts before it converts:
    one pass over the rows instead of two.
The chunk's number
    A driver that needs a chunk's place in the rows (its rows' global
    positions: a fold drawn from a hash of the position) passes
    :data:`CHUNK_NUMBER` among the ``args`` of ``map`` or ``convert``: the
    backend gives ``fn`` the chunk's number (0, 1, ... in chunk order) in
    its place (:func:`bind_chunk`). The chunks' sizes, from an earlier
    pass's facts, then give each chunk its first row.
``n_rows`` (optional)
    The number of rows, if the backend knows it without a pass (else None,
    or no such attribute). Drivers use it only to fold work into an earlier
    pass (the warm-start subsample of a Newton fit into the conversion);
    a result never depends on it.

Exactness
---------
Each engine documents its exactness rule next to its summary. The common
ground: a driver's result depends on the rows, on the chunk order where its
merges add floating-point sums, and on nothing else: not on the backend,
the thread count, or where a chunk ran. Integer counts are exact; float
sums are accumulated in float64 per chunk and added in chunk order, so two
backends that cut the same rows into the same chunks return the same bits,
and any two cuts agree to the rounding of the sums.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Protocol, Sequence

import numpy as np

__all__ = ["CHUNK_NUMBER", "ListRows", "Reduction", "Rows", "bind_chunk", "convert", "fit_dtype", "flat_column",
           "partition_count",
           "reduce", "split_chunk"]

Chunk = tuple  # of 1-D NumPy arrays or None, one per column


class _ChunkNumber:
    """The type of :data:`CHUNK_NUMBER`: one instance, pickled by reference (the same object in a worker)."""

    __slots__ = ()

    def __reduce__(self):
        return "CHUNK_NUMBER"

    def __repr__(self):
        return "CHUNK_NUMBER"


#: Among the arguments of :meth:`Rows.map` or :meth:`Rows.convert`: the chunk's number, given by the backend.
CHUNK_NUMBER = _ChunkNumber()


def bind_chunk(args, number):
    """``args`` with :data:`CHUNK_NUMBER` replaced by the chunk's ``number`` (what a backend passes to ``fn``)."""
    return tuple(number if isinstance(a, _ChunkNumber) else a for a in args)


class Rows(Protocol):
    """What a backend gives the engines: see the module docstring for the contract."""

    parallelism: int

    def map(self, fn: Callable[..., Any], *args: Any) -> list: ...

    def convert(self, fn: Callable[..., tuple[Chunk, Any]], *args: Any) -> tuple[Rows, list]: ...

    def partition(self, bounds: np.ndarray, key: int = 0) -> Rows: ...

    def release(self) -> None: ...


class Reduction:
    """One pass of summarise → merge → finish (a flox ``Aggregation``): see :func:`reduce`.

    Parameters
    ----------
    summarise : callable
        ``summarise(chunk, *args)``: a module-level function returning the chunk's summary.
    merge : callable
        ``merge(summaries)``: the summary of all the chunks, from theirs in chunk order.
    finish : callable, optional
        ``finish(summary)``: the result (default: the merged summary itself).
    """

    __slots__ = ("finish", "merge", "summarise")

    def __init__(self, summarise, merge, finish=None):
        self.summarise = summarise
        self.merge = merge
        self.finish = finish


def reduce(rows: Rows, reduction: Reduction, *args: Any) -> Any:
    """``finish(merge(rows.map(summarise, *args)))``: one pass of ``reduction`` over ``rows``."""
    merged = reduction.merge(rows.map(reduction.summarise, *args))
    return merged if reduction.finish is None else reduction.finish(merged)


class ListRows:
    """:class:`Rows` of chunks held in this process, worked on one after another.

    The reference adapter: every other backend must give the drivers the
    results this one gives for the same chunks. ``partition`` keeps the
    rows' order (chunk order, then row order within a chunk).

    Parameters
    ----------
    chunks : sequence of tuples
        The chunks: tuples of equal-length 1-D arrays (or ``None``), with the
        same columns in every chunk.
    """

    parallelism = 1

    def __init__(self, chunks: Sequence[Chunk]):
        self.chunks = [tuple(c) for c in chunks]

    @property
    def n_rows(self):
        return sum(int(np.shape(c[0])[0]) for c in self.chunks)

    def map(self, fn, *args):
        return [fn(c, *bind_chunk(args, i)) for i, c in enumerate(self.chunks)]

    def convert(self, fn, *args):
        pairs = self.map(fn, *args)
        return ListRows([p[0] for p in pairs]), [p[1] for p in pairs]

    def partition(self, bounds, key=0):
        pieces = [[] for _ in range(len(bounds) + 1)]
        for c in self.chunks:
            j = np.searchsorted(np.asarray(bounds, dtype=c[key].dtype), c[key], side="right")
            for part in np.unique(j):
                rows = np.flatnonzero(j == part)
                pieces[part].append(tuple(None if col is None else col[rows] for col in c))
        template = self.chunks[0] if self.chunks else ()
        out = []
        for ps in pieces:
            if ps:
                out.append(tuple(None if ps[0][i] is None else np.concatenate([p[i] for p in ps])
                                 for i in range(len(ps[0]))))
            else:
                out.append(tuple(None if col is None else col[:0] for col in template))
        return ListRows(out)

    def release(self):
        self.chunks = []


def _new_chunk(chunk, fn, *args):
    return fn(chunk, *args)[0]


def _fact(chunk, fn, *args):
    return fn(chunk, *args)[1]


def convert(rows, fn, *args):
    """``rows.convert(fn, *args)`` for a driver whose converted chunks the backend may not keep (2-D blocks): on a
    backend that converts rows in each pass (one with :meth:`Rows.convert_later`: Spark keeps 1-D columns of
    Spark types only), a :meth:`Rows.map` of the facts, and the rows converted in every later pass. ``rows``
    must read the same rows in every pass (on Spark, rows of ``convert_later``, whose frame is cached)."""
    if hasattr(rows, "convert_later"):
        facts = rows.map(_fact, fn, *args)
        return rows.convert_later(_new_chunk, fn, *args), facts
    return rows.convert(fn, *args)


def split_chunk(chunk, bounds, key=0):
    """The rows of ``chunk`` cut by the value of column ``key``: one chunk per range, in order.

    Range ``j`` holds the rows whose key ``v`` has ``bounds[j - 1] <= v <
    bounds[j]`` (the semantics of :meth:`Rows.partition`); row order is kept
    within a range. A helper for adapters whose ``partition`` is a shuffle
    (Dask, files): the range partition kernel of the isotonic fit for
    ``(scores, labels, weights)`` chunks, NumPy otherwise.
    """
    from .partition import split_by_bounds

    bounds = np.asarray(bounds)
    x = chunk[key]
    if key == 0 and len(chunk) == 3 and chunk[1] is not None and x.ndim == 1 and x.dtype.kind == "f":
        return split_by_bounds(chunk[0], chunk[1], chunk[2], bounds.astype(x.dtype))
    j = np.searchsorted(bounds.astype(x.dtype), x, side="right")
    order = np.argsort(j, kind="stable")
    starts = np.searchsorted(j[order], np.arange(bounds.shape[0] + 2))
    return [tuple(None if c is None else c[order[a:b]] for c in chunk)
            for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]


def fit_dtype(dtype):
    """The dtype the drivers compute scores in: float32 and float64 stay, anything else becomes float64."""
    from .partition import fit_dtype as _fit_dtype

    return _fit_dtype(dtype)


def flat_column(a, name):
    """``a`` as a 1-D array (an ``(n, 1)`` column flattened); ``ValueError`` naming ``name`` otherwise."""
    from .partition import flat_column as _flat_column

    return _flat_column(a, name)


def partition_count(n_rows, n_chunks, parallelism, rows_per_partition):
    """The default number of score-range partitions of a driver: one per ``rows_per_partition`` rows, at least
    ``parallelism`` (the backend's hint), at most one per chunk."""
    return min(n_chunks, max(int(parallelism), -(-int(n_rows) // rows_per_partition)))


def user_stacklevel():
    """The ``stacklevel`` of the first frame outside fastcal, counted from the caller of this function (1).

    Where a driver's warnings point, whichever adapter (and however many of
    its frames) called the driver: the user's line.
    """
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "fastcal":
        frame = frame.f_back
        level += 1
    return level
