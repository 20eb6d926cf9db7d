"""The per-segment sums behind the ECCE and the multicalibration error: :func:`segment_sums` (internal API of
:mod:`fastcal.multicalibration`: :func:`~fastcal.multicalibration.ecce` is its one-segment case,
:func:`~fastcal.multicalibration.multicalibration_error` its many-segment one)."""

from __future__ import annotations

import numpy as np

from . import _kernels as _k
from .._core import parallel as _parallel
from .._core.parallel import capped_chunks, run, split, task_bounds
from .._engine.sort import range_map
from .._coding import Sizes, row_type

__all__ = ["segment_sums"]


def _n_ranges(n, n_chunks):
    """Score ranges of ``n`` rows, each sorted by one task: about :attr:`Sizes.RANGE_ROWS` rows each, fewer if
    ranges x ``n_chunks`` (the rows of each range in each chunk of rows) would pass :attr:`Sizes.COUNT_ENTRIES`.
    A function of the size of the problem alone."""
    return capped_chunks(n, Sizes.RANGE_ROWS, Sizes.COUNT_ENTRIES // max(n_chunks, 1))


def _blocks(xs, width):
    """Bounds of the blocks of the sorted scores ``xs`` that the scan cuts: about :attr:`Sizes.RANGE_ROWS` rows
    each, fewer if blocks x ``width`` (the partial results per block) would pass :attr:`Sizes.CHUNK_ENTRIES`;
    each bound moved up to the start of its group of equal scores. A function of the sorted scores alone."""
    n = xs.shape[0]
    n_blocks = capped_chunks(n, Sizes.RANGE_ROWS, Sizes.CHUNK_ENTRIES // max(width, 1))
    bounds = np.array(split(n, n_blocks), dtype=np.int64)
    inner = bounds[1:-1]
    tied = inner[xs[inner - 1] == xs[inner]]
    if tied.size:
        bounds[1:-1][xs[inner - 1] == xs[inner]] = np.searchsorted(xs, xs[tied], side="right")
    return bounds


def _order_big_ties(xs, qs, ws, starts, most, n):
    """The rows of each group of equal scores of more than ``most`` rows (weighted: the ranges' sorts left them;
    ``xs`` sorted by :func:`~fastcal.multicalibration._kernels.sort_ranges`) put in order of their signed weight
    ``(2 y - 1) w``, in parallel: chunks of about ``most / 4`` rows each sorted in the cache
    (``sort_key_chunks``), then rounds of merges of pairs of runs, each merge cut into pieces of about as many rows
    found by binary searches (``merge_runs``), the last round writing the rows back. Chunks and pieces depend on
    the groups' sizes alone; the rows come out in order of key, as
    :func:`~fastcal.multicalibration._kernels.order_ties` puts them (rows of equal key add equal terms)."""
    big = [k for k in range(starts.size - 1) if starts[k + 1] - starts[k] > most]
    if not big:
        return
    found = [g for g in run([(_k.big_ties, (xs, starts, most, k, k + 1)) for k in big]) if g.shape[0]]
    if not found:
        return
    groups = np.concatenate(found)
    size = groups[:, 1] - groups[:, 0]
    offset = np.concatenate([[0], np.cumsum(size)])
    step = max(1, most // 4)
    chunks, runs = [], []  # runs: each group's sorted runs, as bounds in the buffers
    for (a, b), at in zip(groups.tolist(), offset[:-1].tolist()):
        cut = split(b - a, -(-(b - a) // step))
        chunks += [(a + c0, a + c1, at + c0) for c0, c1 in zip(cut[:-1], cut[1:])]
        runs.append([at + c for c in cut])
    chunks = np.array(chunks, dtype=np.int64)
    total = int(offset[-1])
    bufs = [(np.empty(total), np.empty(total, dtype=qs.dtype), np.empty(total)) for _ in range(2)]
    _run_chunks(_k.sort_key_chunks, n, (qs, ws, *bufs[0], chunks), chunks.shape[0])
    src = 0
    while True:
        last = all(len(r) <= 2 for r in runs)  # one run a group: write the rows back
        tasks, merged = [], []
        for g, r in enumerate(runs):
            pairs = [(r[i], r[i + 1], r[i + 2] if i + 2 < len(r) else r[i + 1]) for i in range(0, len(r) - 1, 2)]
            for s0, m0, e0 in pairs:
                cut = split(e0 - s0, -(-(e0 - s0) // step))
                base = int(groups[g, 0] - offset[g]) + s0 if last else s0
                tasks += [(s0, m0, e0, d0, d1, base) for d0, d1 in zip(cut[:-1], cut[1:])]
            merged.append([p[0] for p in pairs] + [r[-1]])
        tasks = np.array(tasks, dtype=np.int64)
        to = (np.empty(0), qs, ws) if last else bufs[1 - src]
        _run_chunks(_k.merge_runs, n, (*bufs[src], *to, tasks), tasks.shape[0])
        if last:
            return
        runs, src = merged, 1 - src


def _run_chunks(kernel, n, args, n_chunks):
    """``kernel(*args, k, k + 1)`` for every chunk ``k < n_chunks``, each a task on fastcal's threads (in this
    thread under :data:`fastcal._core.parallel.PARALLEL_MIN_SIZE` rows)."""
    calls = [(kernel, (*args, k, k + 1)) for k in range(n_chunks)]
    if n < _parallel.PARALLEL_MIN_SIZE:  # read at each call: tests lower it
        for func, call_args in calls:
            func(*call_args)
    else:
        run(calls)


def _moved_rows(n, row, weighted):
    """``(xs, qs, ws)``: the arrays :func:`~fastcal.multicalibration._kernels.range_scatter` writes (``n`` float64
    scores, rows of type ``row``, float64 weights if ``weighted``, else an empty ``ws``), views of one allocation.

    NumPy asks the kernel for huge pages for an allocation of 4 MB or more; ``qs`` alone (1 MB at 10^6 rows) took
    4 kB pages, a fault each: measured 376 faults and 2.2 ms for the scatter at 10^6 rows after MCGrad's call, 74
    and 1.8 ms from one allocation.
    """
    width = np.dtype(row).itemsize
    block = np.empty(n * (16 + width) if weighted else n * (8 + width), dtype=np.uint8)
    xs = block[:8 * n].view(np.float64)
    ws = block[8 * n:16 * n].view(np.float64) if weighted else np.empty(0)
    return xs, block[block.shape[0] - width * n:].view(row), ws


def segment_sums(y, p, w, cells, digits, cell_counts, combos, n_segments, factor=1.0):
    """Per segment ``(count, W, V, lo, hi)``: rows, ``W = sum w``, ``V = sum w^2 p (1 - p)`` and the extremes of
    the running sum of ``w (y - p)`` along the sorted scores, after each group of equal scores; and the
    weight of the positive rows, ``sum w y``.

    ``y``, ``p``, ``w``, ``factor``: as :func:`~fastcal.multicalibration._ecce.check_scaled_inputs` gives them (the
    weights ``w * factor``, rescaled as they are moved); ``cells``: each row's
    cell ``0..m-1`` (of :func:`~fastcal._coding.cell_type`, at least as wide as ``cell_type(m)``),
    ``digits`` (``m`` x features) and
    ``cell_counts`` each cell's value number of each feature and its rows, ``combos`` and ``n_segments`` the
    segments of :func:`~fastcal.multicalibration.choose_segments`. One cell and no ``combos``: segment 0 alone,
    the ECCE's sums.

    Four passes, each in tasks on fastcal's threads cut by the size of
    the problem alone and merged in order, so the same at any thread count:

    1. chunks of rows in input order: the rows of each score range
       (:func:`fastcal._engine.sort.range_map`, a non-decreasing map cut at
       quantiles of a sample, so every score of a range is below every
       score of the next; :func:`fastcal.multicalibration._kernels.range_counts`);
    2. the same chunks: each row's score, cell and label (and weight)
       moved to its range (found again), in row order (``range_scatter``);
    3. the ranges, about :attr:`Sizes.RANGE_ROWS` rows each, each sorted in
       the cache (``sort_ranges``): all rows then lie in order of score, the
       rows of each group of equal scores ordered by a key of their own
       (``order_ties``; rows of equal key add equal terms), so every
       segment meets the same terms in the same order whatever the input
       order, and the ranges no longer matter; a weighted group of more than
       :attr:`Sizes.TIE_ROWS` rows (a score that a large share of the rows
       have, which one task would order while the other threads wait) is
       ordered by chunks and merges on all threads instead
       (:func:`_order_big_ties`), into the same order;
    4. blocks of the sorted rows, cut at groups of equal scores by the
       number of rows alone: one pass over each block's rows moves the
       float64 running sum, weight and variance of every segment of each
       row's cell, through a table of the segments of each cell
       (``block_sums``); the blocks' results are merged in block order
       (``merge_extremes``).

    So every sum is a function of the multiset of rows: the same bits for
    the rows in any order. A segment's count is that of its cells, and
    without weights its ``W`` too.

    Combinations of features whose table would pass :attr:`Sizes.TABLE_CELLS`
    entries are split into table blocks, one pass 4 each.
    """
    n = p.shape[0]
    m = digits.shape[0]
    weighted = w is not None
    weights = np.empty(0) if w is None else w
    columns = [(0, np.zeros(m, dtype=np.int64))]  # segment 0: every cell
    for subset, mult, local, start, _ in combos:
        columns.append((start, local[digits[:, list(subset)] @ np.array(mult, dtype=np.int64)]))
    per_block = max(1, Sizes.TABLE_CELLS // max(m, 1))
    blocks = [columns[b:b + per_block] for b in range(0, len(columns), per_block)]
    ends = [blocks[i + 1][0][0] if i + 1 < len(blocks) else n_segments for i in range(len(blocks))]
    widest = max(end - block[0][0] for block, end in zip(blocks, ends))

    count = np.zeros(n_segments, dtype=np.int64)
    for start, col in columns:
        keep = col >= 0
        size = int(col.max()) + 1 if keep.any() else 0
        count[start:start + size] = np.bincount(col[keep], weights=cell_counts[keep], minlength=size)

    bounds = np.array(task_bounds(n), dtype=np.int64)
    n_chunks = bounds.size - 1
    x0, scale, cell_range = range_map(p, _n_ranges(n, n_chunks))
    n_ranges = int(cell_range[-1]) + 1
    counts = np.zeros((n_chunks, n_ranges), dtype=np.int64)
    _run_chunks(_k.range_counts, n, (p, x0, scale, cell_range, bounds, counts), n_chunks)
    starts = np.zeros(n_ranges + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(counts, axis=0) - counts
    del counts
    # unsigned: indices that cannot be negative compile without a wrap-around (the scan: a quarter faster)
    xs, qs, ws = _moved_rows(n, row_type(m), weighted)
    factor = weights.dtype.type(factor)
    _run_chunks(_k.range_scatter, n, (cells, p, y, weights, factor, x0, scale, cell_range, bounds, offsets, xs, qs,
                                      ws), n_chunks)
    del offsets
    most = Sizes.TIE_ROWS
    _run_chunks(_k.sort_ranges, n, (xs, qs, ws, starts, most), n_ranges)
    if weighted:
        _order_big_ties(xs, qs, ws, starts, most, n)
    cuts = _blocks(xs, 5 * widest)
    n_blocks = cuts.size - 1
    lo, hi = np.zeros(n_segments), np.zeros(n_segments)
    total = count.astype(np.float64) if not weighted else np.zeros(n_segments)
    var = np.zeros(n_segments)
    positive = np.zeros(n_blocks)
    for i, (block, last) in enumerate(zip(blocks, ends)):
        first = block[0][0]
        table = np.empty((m, len(block)), dtype=np.uint32)
        for c, (start, col) in enumerate(block):
            table[:, c] = np.where(col >= 0, col + (start - first), last - first)  # last - first: no segment
        parts = np.zeros((5, n_blocks, last - first))
        _run_chunks(_k.block_sums, n, (xs, qs, ws, cuts, table, i == 0, *parts, positive), n_blocks)
        lo[first:last], hi[first:last] = _k.merge_extremes(*parts[:3])
        if weighted:
            total[first:last] = parts[3].sum(axis=0)  # in block order
        var[first:last] = parts[4].sum(axis=0)
    return count, total, var, lo, hi, float(positive.sum())
