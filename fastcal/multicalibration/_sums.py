"""The per-segment sums behind the ECCE and the multicalibration error: :func:`segment_sums` (internal API of
:mod:`fastcal.multicalibration`: :func:`~fastcal.multicalibration.ecce` is its one-segment case,
:func:`~fastcal.multicalibration.multicalibration_error` its many-segment one)."""

from __future__ import annotations

import numpy as np

from .. import _multicalibration_kernels as _k
from .. import _parallel
from .._parallel import run, split, task_bounds
from .._sort import range_map
from ._coding import Sizes, row_type

__all__ = ["segment_sums"]


def _row_chunks(n, m):
    """Bounds of the chunks of rows in input order, for ``m`` cells: :func:`fastcal._parallel.task_bounds`, fewer
    where chunks x ``3 m`` (each chunk's sums per cell) would pass :attr:`Sizes.COUNT_ENTRIES` (by the size of
    the problem alone)."""
    bounds = task_bounds(n)
    most = max(1, Sizes.COUNT_ENTRIES // max(3 * m, 1))
    return np.array(bounds if len(bounds) - 1 <= most else split(n, most), dtype=np.int64)


def _n_ranges(n, width, n_chunks):
    """Score ranges of ``n`` rows: about :attr:`Sizes.RANGE_ROWS` rows each, fewer if ranges x ``width`` (the
    partial results per range) would pass :attr:`Sizes.CHUNK_ENTRIES`, or ranges x ``n_chunks`` (the rows of each
    range in each chunk of rows) :attr:`Sizes.COUNT_ENTRIES`. A function of the size of the problem alone."""
    return max(1, min(n // Sizes.RANGE_ROWS, Sizes.CHUNK_ENTRIES // max(width, 1),
                      Sizes.COUNT_ENTRIES // max(n_chunks, 1)))


def _run_chunks(kernel, n, args, n_chunks):
    """``kernel(*args, k, k + 1)`` for every chunk ``k < n_chunks``, each a task on fastcal's threads (in this
    thread under :data:`fastcal._parallel.PARALLEL_MIN_SIZE` rows)."""
    calls = [(kernel, (*args, k, k + 1)) for k in range(n_chunks)]
    if n < _parallel.PARALLEL_MIN_SIZE:  # read at each call: tests lower it
        for func, call_args in calls:
            func(*call_args)
    else:
        run(calls)


def _moved_rows(n, row, weighted):
    """``(xs, qs, ws)``: the arrays :func:`~fastcal._multicalibration_kernels.range_scatter` writes (``n`` float64
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


def segment_sums(y, p, w, cells, digits, cell_counts, combos, n_segments):
    """Per segment ``(count, W, V, lo, hi)``: rows, ``W = sum w``, ``V = sum w^2 p (1 - p)`` and the extremes of
    the running sum of ``w (y - p)`` along the sorted scores, after each group of equal scores; and the
    weight of the positive rows, ``sum w y``.

    ``y``, ``p``, ``w``: as :func:`~fastcal.multicalibration._ecce.check_inputs` gives them; ``cells``: each row's
    cell ``0..m-1`` (of :func:`~fastcal.multicalibration._coding.cell_type`, at least as wide as ``cell_type(m)``),
    ``digits`` (``m`` x features) and
    ``cell_counts`` each cell's value number of each feature and its rows, ``combos`` and ``n_segments`` the
    segments of :func:`~fastcal.multicalibration.choose_segments`. One cell and no ``combos``: segment 0 alone,
    the ECCE's sums.

    Three passes, each in tasks on fastcal's threads cut by the size of
    the problem alone and merged in order, so the same at any thread count:

    1. chunks of rows in input order: the rows of each score range
       (:func:`fastcal._sort.range_map`, a non-decreasing map cut at
       quantiles of a sample, so every score of a range is below every
       score of the next) and the sums per cell,
       which need no order
       (:func:`fastcal._multicalibration_kernels.range_cell_sums`); a
       segment's count and sums are then those of its cells;
    2. the same chunks: each row's score, cell and label (and weight)
       moved to its range (found again), in row order (``range_scatter``);
    3. the ranges, about :attr:`Sizes.RANGE_ROWS` rows each: each sorted stably
       in the cache (``sort_rows``), then one pass over its rows moves the
       float64 running sum of every segment of each row's cell, through a
       table of the segments of each cell (``range_extremes``); the ranges'
       extremes are merged in range order (``merge_extremes``).

    Combinations of features whose table would pass :attr:`Sizes.TABLE_CELLS`
    entries are split into blocks, one pass 3 each (the first sorts).
    """
    n = p.shape[0]
    m = digits.shape[0]
    weights = np.empty(0) if w is None else w
    columns = [(0, np.zeros(m, dtype=np.int64))]  # segment 0: every cell
    for subset, mult, local, start, _ in combos:
        columns.append((start, local[digits[:, list(subset)] @ np.array(mult, dtype=np.int64)]))
    per_block = max(1, Sizes.TABLE_CELLS // max(m, 1))
    blocks = [columns[b:b + per_block] for b in range(0, len(columns), per_block)]
    ends = [blocks[i + 1][0][0] if i + 1 < len(blocks) else n_segments for i in range(len(blocks))]
    widest = max(end - block[0][0] for block, end in zip(blocks, ends))

    bounds = _row_chunks(n, m)
    n_chunks = bounds.size - 1
    x0, scale, cell_range = range_map(p, _n_ranges(n, 3 * widest, n_chunks))
    n_ranges = int(cell_range[-1]) + 1
    counts = np.zeros((n_chunks, n_ranges), dtype=np.int64)
    parts = np.zeros((3, n_chunks, m))
    _run_chunks(_k.range_cell_sums, n, (cells, p, y, weights, x0, scale, cell_range, bounds, counts, *parts), n_chunks)
    cell_total, cell_var, cell_positive = np.zeros(m), np.zeros(m), np.zeros(m)
    for k in range(n_chunks):  # in chunk order
        cell_total += parts[0, k]
        cell_var += parts[1, k]
        cell_positive += parts[2, k]
    del parts
    count = np.zeros(n_segments, dtype=np.int64)
    total, var = np.zeros(n_segments), np.zeros(n_segments)
    for start, col in columns:
        keep = col >= 0
        size = int(col.max()) + 1 if keep.any() else 0
        at = slice(start, start + size)
        count[at] = np.bincount(col[keep], weights=cell_counts[keep], minlength=size)
        total[at] = np.bincount(col[keep], weights=cell_total[keep], minlength=size)
        var[at] = np.bincount(col[keep], weights=cell_var[keep], minlength=size)

    starts = np.zeros(n_ranges + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(counts, axis=0) - counts
    del counts
    # unsigned: indices that cannot be negative compile without a wrap-around (the scan: a quarter faster)
    xs, qs, ws = _moved_rows(n, row_type(m), w is not None)
    _run_chunks(_k.range_scatter, n, (cells, p, y, weights, x0, scale, cell_range, bounds, offsets, xs, qs, ws),
                n_chunks)
    del offsets
    lo, hi = np.zeros(n_segments), np.zeros(n_segments)
    for i, (block, last) in enumerate(zip(blocks, ends)):
        first = block[0][0]
        table = np.empty((m, len(block)), dtype=np.uint32)
        for c, (start, col) in enumerate(block):
            table[:, c] = np.where(col >= 0, col + (start - first), last - first)  # last - first: no segment
        parts = np.zeros((3, n_ranges, last - first))
        _run_chunks(_k.range_extremes, n, (xs, qs, ws, starts, table, i == 0, i == 0, *parts), n_ranges)
        lo[first:last], hi[first:last] = _k.merge_extremes(*parts)
    return count, total, var, lo, hi, float(cell_positive.sum())
