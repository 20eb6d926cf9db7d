"""The PAV steps of every isotonic fit: isotonic regression as summarise → merge → finish.

Every isotonic fit of fastcal (in memory on fastcal's threads, out of core
from files, on Dask workers; the score decomposition's PAV too) is these three
steps, and only the first touches rows:

:func:`summarise`
    The *summary* of a chunk of rows: its PAV blocks ``(sw, swy, xf, xl)``,
    block ``k`` having total weight ``sw[k]``, weighted target sum ``swy[k]``
    (times ``sign``) and spanning the tie groups whose first scores run from
    ``xf[k]`` to ``xl[k]``; with ``centered=True`` a fifth array ``swx``,
    each block's sum of weight times score. The rows may come in any order.
:func:`merge`
    The summary of the union of chunks adjacent in score order, from theirs:
    pool adjacent violators over their blocks, in order. Blocks of a chunk
    are unions of blocks of the whole, so this gives the blocks of the whole.
:func:`finish`
    The fitted function from a summary: the interpolation knots
    ``(X_thresholds, y_thresholds)`` that scikit-learn keeps (or the block
    centres of a centered fit), with ``y_min``/``y_max`` applied.

**Tie groups.** Scores closer than the dtype's resolution ``eps`` (see
:func:`resolution`) are pooled as scikit-learn does: a score starts a new
group when it is at least ``eps`` above the current group's first score.
Chunks passed to :func:`merge` must be *clean*: each chunk's lowest score
starts a tie group of the whole (it is at least ``eps`` above the previous
chunk's highest score, or the backend has moved the rows of a group that
straddles the boundary into one chunk, see :func:`fastcal._engine.partition.tie_entries`).

**Exactness rule.**

- A summary is a function of the chunk's rows in their order; the fitted
  blocks of clean chunks merged equal those of one chunk holding all the
  rows, up to the order in which each block's sums are added.
- Without weights and with 0/1 (or other integer) targets every sum is an
  exact integer, so the merged summary is bit-identical to the one-chunk
  summary, whatever the chunks. With weights (or real targets) the sums of a
  block that spans several chunks are added chunk by chunk: same bits for
  the same chunks, not necessarily for other chunks.
- The in-memory :func:`summarise` cuts its rows into score-range chunks
  whose number and bounds depend on the rows alone (:func:`chunk_count` of
  the row count; boundaries from a fixed sample of the scores, then moved
  to the first tie-group start within :data:`CUT_TRIES` rows), never on the
  thread count; the chunks are taken by the threads as they free up
  (:func:`fastcal._core.parallel.run`) and merged in score order. Its result is
  therefore bit-identical at every thread count.
- :func:`finish` is deterministic: same summary, same knots.

How the in-memory :func:`summarise` orders the rows:

- 0/1 labels without weights: a *range partition* (sample sort). Bounds at
  quantiles of a strided sample cut the scores into :func:`chunk_count`
  ranges; one parallel pass counts every row-chunk's rows per (range,
  label), a prefix sum places them, a second parallel pass scatters the
  scores (not the labels: each class gets its own run) into place, and each
  range's two classes are sorted by value (NumPy's sort, no argsort) in
  whichever thread takes the range (:func:`fastcal._engine.sort.sort_by_label`).
  The whole is then two sorted runs (the scores of label 0 and those of
  label 1), fitted range by range by
  :func:`~fastcal._core.pav_kernels.pav_binary`. A caller that needs the
  same sort for another statistic (the AUC of ``calibration_report``) makes
  it once with :func:`sort_for_fit` and passes it as ``by_label``.
- Weighted 0/1 labels, and real-valued targets without weights: the same
  range partition moves one float64 with each score (the target, or the
  weight signed by the label), and each range is radix-sorted carrying it
  (:func:`fastcal._engine.sort.range_sorted_pairs`, stable: the rows end in the
  order of a stable sort of the whole); weighted real-valued targets are argsorted and
  gathered (:func:`fastcal._engine.sort.sort_with`, its passes on every thread).
- Sorted scores are fitted as they are.

Chunks of the sorted rows are then fitted in parallel into disjoint parts of
one block stack and merged onto it.

Another backend (Ray, Beam, Spark, Flink) drives these steps from outside the
same way :mod:`fastcal.outofcore` and :mod:`fastcal.dask` do: partition the
rows by score range (:mod:`fastcal._engine.partition` chooses the bounds and makes
the partitions clean), :func:`summarise` each partition where it lives
(rescale the weights with one exponent for all of them first:
:func:`fastcal._core.validation.rescale_weights`), collect the summaries (a few
arrays as long as the number of blocks) in score order, :func:`merge` and
:func:`finish`.
"""

from __future__ import annotations

import numpy as np

from . import _kernels as _k
from .._core import pav_kernels as _pk
from .._core.parallel import capped_chunks, run, split
from .._engine.sort import SortedPairs, range_sorted_pairs, sort_by_label, sort_with
from .._core.validation import is_binary, rescale_weights

__all__ = ["CHUNK_ROWS", "CUT_TRIES", "chunk_count", "finish", "lookup_cells", "merge", "resolution", "sort_for_fit",
           "summarise"]

#: Rows per score-range chunk of the in-memory fit: a chunk's sorts work in
#: the L2 cache. Measured at 10^7 float64 rows, one thread, 0/1 labels
#: (median of 5, alternating, a loaded machine): 2^14 rows 1.41 s, 2^16
#: 1.27 s, 2^17 1.10 s, 2^18 1.17 s (the former two-way fit: 1.08 s);
#: real-valued targets 2.31, 1.72, 1.69, 1.75 s (former: 2.63 s).
CHUNK_ROWS = 1 << 17

#: Chunks at most (the range partition's scatter writes to two streams per chunk).
MAX_CHUNKS = 1024

#: Rows searched from a chunk's nominal start for a tie-group start; none found: the chunk joins the one before.
CUT_TRIES = 64


def chunk_count(n):
    """Number of score-range chunks of an in-memory fit of ``n`` rows: one per :data:`CHUNK_ROWS`, 1 to :data:`MAX_CHUNKS`."""
    return capped_chunks(n, CHUNK_ROWS, MAX_CHUNKS)


def resolution(dtype):
    """The tie tolerance ``eps`` for scores of ``dtype`` (float32 or float64), a scalar of that dtype."""
    dtype = np.dtype(dtype)
    return dtype.type(np.finfo(dtype).resolution)


def lookup_cells(n_knots):
    """Cells of a lookup table (:func:`~fastcal.isotonic._kernels.build_lookup`) over ``n_knots`` sorted values:
    a power of two, 16 to 32 per knot, at most 2^16.

    Most cells then hold no knot, so a search rarely searches; a larger
    table would no longer fit in the L2 cache (measured on predictions: 2
    cells per knot 25% slower, 2^18 cells 50% slower).
    """
    return 1 << min(16, max(4, int(16 * n_knots - 1).bit_length()))


# ---------------------------------------------------------------------------
# summarise
# ---------------------------------------------------------------------------


def sort_for_fit(X, labels, w):
    """The sort of the rows that :func:`summarise` ``(X, labels, w, ...)`` would make, for other statistics of the
    same call to share (the AUC): for 0/1 labels, :class:`fastcal._engine.sort.ByLabel` without weights, and
    :class:`fastcal._engine.sort.SortedPairs` (the weights signed by the labels) with positive weights (rescaled);
    None where the fit sorts otherwise (other labels, zero weights, scores already sorted)."""
    if _k.is_sorted(X) or not is_binary(labels) or (w is not None and not w.min() > 0):
        return None
    if w is None:
        return sort_by_label(X, labels, chunk_count(X.shape[0]))
    return range_sorted_pairs(X, w, labels, chunk_count(X.shape[0]))


def summarise(X, labels, w, sign, *, centered=False, by_label=None, w_exponent=0):
    """The summary (PAV blocks) of the rows ``X``, ``labels``, ``w``, fitted on every thread.

    Parameters
    ----------
    X : ndarray
        Contiguous float32/float64 scores, finite, in any order (not modified).
    labels : ndarray
        Targets as a label array (:func:`fastcal._core.validation.as_label_array`).
    w : ndarray or None
        Positive weights, or None for unit weights; ``ldexp(w, -w_exponent)``
        are the rescaled weights (:func:`fastcal._core.validation.rescale_weights`).
    sign : float
        1.0 for an increasing fit, -1.0 for a decreasing one (targets times ``sign``).
    centered : bool
        Add the fifth array ``swx`` (each block's sum of weight times score).
    by_label : fastcal._engine.sort.ByLabel or fastcal._engine.sort.SortedPairs, optional
        :func:`sort_for_fit` of the same rows (and weights), if the caller made it (not None).
    w_exponent : int
        The exponent of the weights' rescaling, applied here: as weighted 0/1
        labels' rows are written for their sort (so the rescaled weights take
        no array of their own), otherwise to a copy of ``w``. Scaling by a power of two rounds once, whichever
        array it is applied to, so the bits are those of rescaled weights.

    Returns
    -------
    blocks : tuple of ndarray
        ``(sw, swy, xf, xl)`` (and ``swx``): float64 sums, first and last
        tie-group scores in the dtype of ``X``. See the module's exactness rule.
    """
    n = X.shape[0]
    eps = resolution(X.dtype)
    binary = bool(is_binary(labels))
    if w is not None and w_exponent and not (binary and by_label is None and not _k.is_sorted(X)):
        w, w_exponent = rescale_weights(w, w_exponent)[0], 0
    if isinstance(by_label, SortedPairs):
        return _summarise_pairs(by_label, 2 if X.dtype == np.float32 else 1, eps, sign, centered)
    if by_label is not None:
        return _summarise_binary(X, labels, eps, sign, centered, by_label)
    targets = split(n, chunk_count(n))[1:-1]
    empty = np.empty(0, dtype=np.float64)
    if _k.is_sorted(X):
        ws = empty if w is None else w
        return _fit_runs(X, X[:0], targets, [0] * len(targets), _ordered_unit(X, labels, ws, eps, sign, centered),
                         eps, centered)
    if binary and w is None:
        return _summarise_binary(X, labels, eps, sign, centered)
    if binary or w is None:
        # One float64 per row carries the target, or the weight with the 0/1 label as its sign, through
        # the sort: no pass reads at random (a gather after an argsort cost as much as the sort).
        if binary:
            pairs = range_sorted_pairs(X, w, labels, chunk_count(n), exponent=w_exponent)
        else:
            pairs = range_sorted_pairs(X, labels, labels[:0], chunk_count(n))
        kind = (2 if X.dtype == np.float32 else 1) if binary else 0  # see pav_sorted
        return _summarise_pairs(pairs, kind, eps, sign, centered)
    xs, ys, ws = sort_with(X, labels, w)
    return _fit_runs(xs, xs[:0], targets, [0] * len(targets), _ordered_unit(xs, ys, ws, eps, sign, centered),
                     eps, centered)


def _summarise_pairs(pairs, kind, eps, sign, centered):
    """:func:`summarise` of sorted scores with one float64 carried per row (``kind``: see
    :func:`~fastcal._core.pav_kernels.pav_sorted`)."""
    xs, ps = pairs
    targets = split(xs.shape[0], chunk_count(xs.shape[0]))[1:-1]

    def unit(ia0, ia1, ib0, ib1, out):
        nb = _pk.pav_sorted(xs[ia0:ia1], ps[ia0:ia1], ps[:0], kind, eps, sign, *out[:4])
        if centered:
            _score_sums(xs[ia0:ia1], ps[ia0:ia1], 0 if kind == 0 else 2, out, nb)
        return nb

    return _fit_runs(xs, xs[:0], targets, [0] * len(targets), unit, eps, centered)


def _ordered_unit(xs, ys, ws, eps, sign, centered):
    """Fit of the sorted rows ``ia0 .. ia1 - 1`` (:func:`~fastcal._core.pav_kernels.pav_sorted`), for :func:`_fit_runs`."""
    weighted = ws.shape[0] > 0

    def unit(ia0, ia1, ib0, ib1, out):
        wu = ws[ia0:ia1] if weighted else ws
        nb = _pk.pav_sorted(xs[ia0:ia1], ys[ia0:ia1], wu, 0, eps, sign, *out[:4])
        if centered:
            _score_sums(xs[ia0:ia1], wu, 1 if weighted else 0, out, nb)
        return nb

    return unit


def _score_sums(x, p, kind, out, nb):
    out[4][:nb] = 0.0
    _k.score_sums(x, p, kind, out[2], nb, out[4])


def _summarise_binary(X, labels, eps, sign, centered, by_label=None):
    """:func:`summarise` of 0/1 labels without weights: range partition, sort per range and class, fit.

    ``by_label``: the rows already sorted per class (:func:`fastcal._engine.sort.sort_by_label` with
    :func:`chunk_count` ranges), shared with another statistic of the same call.
    """
    n = X.shape[0]
    view = sort_by_label(X, labels, chunk_count(n)) if by_label is None else by_label
    starts, n_ranges = view.starts, view.ranges
    neg, pos = view.neg, view.pos
    n_neg = neg.shape[0]
    none = neg[:0]

    def unit(ia0, ia1, ib0, ib1, out):
        nb = _pk.pav_binary(neg[ia0:ia1], pos[ib0:ib1], eps, sign, *out[:4])
        if centered:
            _score_sums(neg[ia0:ia1], none, 0, out, nb)
            _k.score_sums(pos[ib0:ib1], none, 0, out[2], nb, out[4])
        return nb

    return _fit_runs(neg, pos, starts[1:n_ranges].tolist(), (starts[n_ranges + 1:2 * n_ranges] - n_neg).tolist(),
                     unit, eps, centered)


def _fit_runs(a, b, targets_a, targets_b, unit, eps, centered):
    """Fit the sorted runs ``a`` and ``b`` (merged) chunk by chunk on every thread, and merge.

    ``(targets_a[c], targets_b[c])`` are the nominal chunk starts (positions
    in the merge, see :func:`~fastcal.isotonic._kernels.clean_cuts`); each
    moves to the first tie-group start within :data:`CUT_TRIES` rows, or is
    dropped. ``unit(ia0, ia1, ib0, ib1, out)`` fits the rows ``a[ia0:ia1]``
    and ``b[ib0:ib1]`` into the stack arrays ``out`` and returns the number
    of blocks. The chunks' summaries are merged in order.
    """
    na, nb = a.shape[0], b.shape[0]
    n = na + nb
    cuts = [(0, 0)]
    cut_a = np.empty(len(targets_a), dtype=np.int64)
    cut_b = np.empty(len(targets_a), dtype=np.int64)
    _k.clean_cuts(a, b, np.asarray(targets_a, dtype=np.int64), np.asarray(targets_b, dtype=np.int64), float(eps),
                  CUT_TRIES, cut_a, cut_b)  # called with no targets too: a one-chunk fit compiles it
    for ia, ib in zip(cut_a.tolist(), cut_b.tolist()):
        if ia >= 0 and ia + ib > sum(cuts[-1]) and ia + ib < n:
            cuts.append((ia, ib))
    cuts.append((na, nb))
    parts = run([(_fit_unit, (unit, ia0, ia1, ib0, ib1, a.dtype, centered))
                 for (ia0, ib0), (ia1, ib1) in zip(cuts[:-1], cuts[1:])])
    return merge(parts)


def _fit_unit(unit, ia0, ia1, ib0, ib1, dtype, centered):
    """The summary of one chunk: ``unit`` fitted into a stack of its own, its blocks copied out.

    The stack is as deep as the chunk's rows; only its first pages (as many
    as blocks) are touched. One stack for all chunks, each writing from its
    first row's position, measured 3x slower: every chunk faulted in its own
    huge pages.
    """
    rows = (ia1 - ia0) + (ib1 - ib0)
    stack = [np.empty(rows), np.empty(rows), np.empty(rows, dtype=dtype), np.empty(rows, dtype=dtype)]
    if centered:
        stack.append(np.empty(rows))
    nb = unit(ia0, ia1, ib0, ib1, stack)
    return tuple(s[:nb].copy() for s in stack)


# ---------------------------------------------------------------------------
# merge
# ---------------------------------------------------------------------------


def merge(parts):
    """The summary of clean chunks adjacent in score order, from their summaries ``parts`` (in order).

    All parts have the same ``sign``, and all or none the fifth array
    ``swx``. Pooling adjacent violators over the parts' blocks gives the
    blocks of the whole (see the module's exactness rule); a pooled block's
    ``swx`` is the sum of those of the parts' blocks in it, in order. One
    part is returned as it is.
    """
    if len(parts) == 1:
        return tuple(parts[0])
    stack = [np.concatenate(a) for a in zip(*parts)]
    segments = []
    start = 0
    for p in parts:
        segments.append((start, p[0].shape[0]))
        start += p[0].shape[0]
    return _pool(stack, segments)


def _pool(stack, segments):
    """Pool the blocks ``stack[..][start:start + count]`` of each segment, in order, onto the stack from 0; copies.

    Segments are in increasing order, each starting at or after the end of
    the one before: the stack never grows past the segment being read.
    """
    sw, swy, xf, xl = stack[:4]
    centered = len(stack) > 4
    firsts, sums = [], []
    top = 0
    for start, count in segments:
        if centered:
            firsts.append(xf[start:start + count].copy())
            sums.append(stack[4][start:start + count].copy())
        top = _pk.push_blocks(sw, swy, xf, xl, top, start, start + count)
    # Copies: views would keep the n-sized stack arrays alive.
    pooled = (sw[:top].copy(), swy[:top].copy(), xf[:top].copy(), xl[:top].copy())
    if not centered:
        return pooled
    swx = np.zeros(top)
    first = np.concatenate(firsts)
    np.add.at(swx, np.searchsorted(pooled[2], first, side="right") - 1, np.concatenate(sums))
    return (*pooled, swx)


# ---------------------------------------------------------------------------
# finish
# ---------------------------------------------------------------------------


def finish(blocks, sign, *, y_min=None, y_max=None, centered=False):
    """The knots ``(X_thresholds, y_thresholds)`` of the fit summarised by ``blocks``.

    Each block's value is its mean ``sign * swy / sw`` rounded to the dtype of
    the scores and clipped to ``[y_min, y_max]``. Step fits keep the two ends
    of each run of equal values (:func:`~fastcal._core.pav_kernels.thresholds`,
    scikit-learn's points); centered fits the block centres
    ``swx / sw`` (see :func:`centered_knots`).
    """
    sw, swy, xf, xl = blocks[:4]
    vals = swy / sw
    if sign < 0:
        vals = -vals
    vals = vals.astype(xf.dtype, copy=False)
    if y_min is not None or y_max is not None:
        lo = -np.inf if y_min is None else y_min
        hi = np.inf if y_max is None else y_max
        np.clip(vals, lo, hi, out=vals)
    if centered:
        return centered_knots(vals, sw, xf, xl, blocks[4])
    return _pk.thresholds(vals, xf, xl, vals.shape[0])


def centered_knots(vals, sw, xf, xl, swx):
    """Knots of the centered fit: block centres ``swx / sw`` (clipped into ``[xf, xl]``) and the end points.

    Blocks whose values became equal in the scores' dtype (or by ``y_min``/``y_max``) are one block here.
    """
    starts = np.flatnonzero(np.concatenate(([True], vals[1:] != vals[:-1])))
    if starts.shape[0] < vals.shape[0]:
        ends = np.append(starts[1:], vals.shape[0]) - 1
        sw, swx = np.add.reduceat(sw, starts), np.add.reduceat(swx, starts)
        vals, xf, xl = vals[starts], xf[starts], xl[ends]
    centers = np.clip((swx / sw).astype(xf.dtype), xf, xl)
    xs, ys = [centers], [vals]
    if xf[0] < centers[0]:
        xs.insert(0, xf[:1])
        ys.insert(0, vals[:1])
    if xl[-1] > centers[-1]:
        xs.append(xl[-1:])
        ys.append(vals[-1:])
    return np.concatenate(xs), np.concatenate(ys)
