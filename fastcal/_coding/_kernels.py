"""Numba kernels that number rows by group and segment: the coding passes of :mod:`fastcal.multicalibration`.

A segment feature's values become codes ``0..k-1`` (:func:`int_range`,
:func:`code_stats`, :func:`count_values`, :func:`renumber`, :func:`count_distinct`; a numerical feature's quantile
bins by :func:`bin_numbers`), and the codes of all features one cell number
per row (:func:`add_digit`, a digit per feature); :func:`counting_order`
orders rows by code. Every pass over rows takes a range ``lo, hi`` and is run
by :mod:`fastcal._core.parallel` on fastcal's threads; the caller merges the
ranges' results exactly (integer counts, least and greatest values). The
caller validates; these kernels check nothing.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel

__all__ = ["FEW_EDGES", "add_digit", "bin_numbers", "code_stats", "count_distinct", "count_values", "counting_order",
           "int_range", "renumber"]


@kernel
def int_range(values, lo, hi):
    """``(least, greatest)`` of the integers, or floats without NaN, ``values[lo:hi]`` (``hi > lo``), in their own
    dtype: one pass for both, which the caller reduces over its ranges of rows (exact)."""
    part = values[lo:hi]  # indices from 0 (see code_stats)
    least = part[0]
    most = part[0]
    for i in range(1, part.shape[0]):
        least = min(least, part[i])
        most = max(most, part[i])
    return least, most


@kernel
def code_stats(codes, offset, p, k, lo, hi):
    """Per code ``0..k-1`` of ``codes - offset``, over rows ``lo..hi``: its rows, and its first row along the rows
    sorted stably by ``p``, as ``(p, row)`` (the least ``p``, then the least row index; ``(inf, n)`` if absent,
    ``n`` the length of ``codes``). Exact: the caller adds the counts of its ranges of rows and takes the least
    ``(p, row)``."""
    counts = np.zeros(k, dtype=np.int64)
    first_p = np.full(k, np.inf)
    first_row = np.full(k, codes.shape[0], dtype=np.int64)
    part = codes[lo:hi]  # indices from 0: no wrap-around of negative indices to compile in (a third faster)
    scores = p[lo:hi]
    for i in range(part.shape[0]):
        c = np.uint64(np.int64(part[i]) - offset)  # unsigned: no negative-index wrap-around compiled in
        counts[c] += 1
        x = np.float64(scores[i])
        if x < first_p[c]:
            first_p[c] = x
            first_row[c] = lo + i
    return counts, first_p, first_row


@kernel
def count_values(values, offset, counts, lo, hi):
    """``counts[v - offset]`` += 1 for each integer ``v`` of ``values[lo:hi]`` (a buffer of
    :func:`fastcal._core.parallel.parallel_accumulate`, or one chunk's row of a per-chunk table: integer counts, the
    same sums on any number of threads)."""
    part = values[lo:hi]  # indices from 0 (see code_stats)
    for i in range(part.shape[0]):
        counts[np.uint64(np.int64(part[i]) - offset)] += 1  # unsigned: no wrap-around compiled in


@kernel
def renumber(values, offset, index, out, lo, hi):
    """Rows ``lo..hi``: ``out = index[values - offset]``, integers numbered through a table."""
    part = values[lo:hi]  # indices from 0 (see code_stats)
    o = out[lo:hi]
    for i in range(part.shape[0]):
        o[i] = index[np.uint64(np.int64(part[i]) - offset)]


#: Edges up to which :func:`bin_numbers` counts the edges below a value (no branch) instead of a binary search.
FEW_EDGES = 16


@kernel
def bin_numbers(x, edges, missing, out, lo, hi):
    """Rows ``lo..hi``: the quantile bin of each ``x`` into ``out``, ``max(searchsorted(edges, x, side="left") - 1,
    0)`` (the bins ``(e_{k-1}, e_k]``, the first closed; ``edges`` ascending, at least 2), clamped to the last bin
    ``m - 2`` (a value past the last edge: a prediction's), ``missing`` for NaN. Up to :data:`FEW_EDGES` edges the edges below ``x`` are counted without a branch (a
    binary search mispredicts one branch in two), past that a binary search."""
    m = edges.shape[0]
    part = x[lo:hi]  # indices from 0 (see code_stats)
    bins = out[lo:hi]
    for i in range(part.shape[0]):
        v = part[i]
        if v != v:
            bins[i] = missing
            continue
        if m <= FEW_EDGES:
            a = 0
            for j in range(m):
                a += edges[j] < v
        else:
            a = 0
            b = m
            while a < b:
                mid = (a + b) >> 1
                if edges[mid] < v:
                    a = mid + 1
                else:
                    b = mid
        bins[i] = min(max(a - 1, 0), m - 2)


@kernel
def add_digit(cells, codes, offset, remap, size, counts, lo, hi):
    """Rows ``lo..hi``: ``cells = cells * size + remap[codes - offset]`` in place, one more digit of the mixed-radix
    cell numbers; and, if ``counts`` is not empty, ``counts[cell] += 1`` of each new cell number (exact: the
    caller adds the counts of its ranges of rows)."""
    counting = counts.shape[0] > 0
    out = cells[lo:hi]  # indices from 0 (see code_stats)
    part = codes[lo:hi]
    for i in range(out.shape[0]):
        c = out[i] * size + remap[np.uint64(np.int64(part[i]) - offset)]  # unsigned: no wrap-around compiled in
        out[i] = c
        if counting:
            counts[np.uint64(c)] += 1


@kernel
def count_distinct(x, limit):
    """Distinct values of ``x`` other than NaN, counted up to ``limit + 1`` (the scan stops there)."""
    seen = np.empty(limit + 1)
    n_seen = 0
    for i in range(x.shape[0]):
        v = x[i]
        if v != v:
            continue
        new = True
        for j in range(n_seen):
            if seen[j] == v:
                new = False
                break
        if new:
            seen[n_seen] = v
            n_seen += 1
            if n_seen > limit:
                return n_seen
    return n_seen


@kernel
def counting_order(codes, k):
    """``(order, starts)``: the rows ordered by ``codes`` (``0..k-1``), stably (a counting sort), and where each
    code's rows start in that order (``starts[k]`` is the number of rows)."""
    n = codes.shape[0]
    starts = np.zeros(k + 1, dtype=np.int64)
    for i in range(n):
        starts[codes[i] + 1] += 1
    for j in range(k):
        starts[j + 1] += starts[j]
    fill = starts[:k].copy()
    order = np.empty(n, dtype=np.int64)
    for i in range(n):
        c = codes[i]
        order[fill[c]] = i
        fill[c] += 1
    return order, starts
