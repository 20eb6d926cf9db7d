r"""Numba kernels behind :mod:`fastcal.multicalibration`: per-segment cumulative differences, Kuiper's distribution.

The caller validates; these kernels assume clean, contiguous input (scores
sorted ascending without NaN, labels with nonzero = positive, non-negative
weights) and never check.

Segments. Every row has a *cell*: its combination of values of all the
segment features, numbered ``0..m-1``. A segment is a set of cells (a value
combination of some of the features), so its rows, weight and variance are
sums over its cells (:func:`cell_sums`, in input order), and a table
``table[cell, :]`` lists the segments of a cell, one per combination of
features (``-1``: none). :func:`running_extremes` goes once over the rows
sorted by score and moves the running sum of every segment of each row's
cell: no mask per segment. Both run on chunks of rows whose partial results
the caller merges in chunk order (:func:`merge_extremes` for the running sums).

Ties. All rows of one score form one step of the cumulative sums: the
running sum of each segment a tie group touches is compared with the
segment's maximum and minimum only after the whole group, so the result does
not depend on the order of tied rows.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel

__all__ = ["KUIPER_SPLIT", "add_digit", "code_stats", "combo_sums", "count_distinct", "gather_terms", "kuiper_cdf",
           "kuiper_sf",
           "kuiper_sf_many", "tied_range"]

#: Below this point the theta-function series gives the CDF, above it the alternating
#: series gives the survival function; both converge in a few terms there.
KUIPER_SPLIT = 2.0


@kernel
def running_extremes(sorted_p, carried, row_bits, w, cells, table, bounds, end, low, high, lo, hi):
    """Chunks ``lo..hi`` of the rows sorted by score: for chunk ``k`` (rows ``bounds[k]..bounds[k+1]``, which start
    and end on groups of equal scores), row ``k`` of ``end`` (the running sum ``S = sum w (y - p)`` at the chunk's
    end), ``low`` and ``high`` (its minimum ``<= 0`` and maximum ``>= 0`` over the chunk, taken after each group of
    equal scores, ``S`` counted from 0 at the chunk's start) of each segment of ``table``.

    ``sorted_p`` are the scores, ``carried`` what :func:`cell_sums` made of each row; ``w`` the weights (empty:
    ones) and ``cells`` (if not empty) the cells, read at the row number. A row of cell ``c`` is in the segments
    ``table[c, :]`` that are not ``-1``.
    """
    weighted = w.shape[0] > 0
    gather = cells.shape[0] > 0
    row_mask = (np.int64(1) << row_bits) - 1
    n_cols = table.shape[1]
    n_seg = end.shape[1]
    mark = np.empty(n_seg, dtype=np.int64)
    touched = np.empty(n_seg, dtype=np.int64)
    for k in range(lo, hi):
        mark[:] = -1
        run = end[k]
        low_k = low[k]
        high_k = high[k]
        i = bounds[k]
        b = bounds[k + 1]
        while i < b:
            pi = sorted_p[i]
            j = i + 1
            single = j == b or sorted_p[j] != pi
            if not single:
                while j < b and sorted_p[j] == pi:
                    j += 1
            n_touched = 0
            for t in range(i, j):
                q = carried[t]
                label = 1.0 if q & 1 else 0.0
                q >>= 1
                row = q & row_mask
                cell = cells[row] if gather else q >> row_bits
                pj = np.float64(sorted_p[t])
                r = np.float64(w[row]) * (label - pj) if weighted else label - pj
                for c in range(n_cols):
                    s = table[cell, c]
                    if s < 0:
                        continue
                    run[s] += r
                    if single:
                        if run[s] > high_k[s]:
                            high_k[s] = run[s]
                        elif run[s] < low_k[s]:
                            low_k[s] = run[s]
                    elif mark[s] != i:
                        mark[s] = i
                        touched[n_touched] = s
                        n_touched += 1
            for t in range(n_touched):
                s = touched[t]
                if run[s] > high_k[s]:
                    high_k[s] = run[s]
                elif run[s] < low_k[s]:
                    low_k[s] = run[s]
            i = j


@kernel
def merge_extremes(end, low, high):
    """``(lo, hi)`` per segment over all rows from the per-chunk results of :func:`running_extremes`, taken in
    chunk order: each chunk's extremes shifted by the running sum before it."""
    n_chunks, n_seg = end.shape
    lo_all = np.zeros(n_seg)
    hi_all = np.zeros(n_seg)
    for s in range(n_seg):
        before = 0.0
        for k in range(n_chunks):
            up = before + high[k, s]
            down = before + low[k, s]
            if up > hi_all[s]:
                hi_all[s] = up
            if down < lo_all[s]:
                lo_all[s] = down
            before += end[k, s]
    return lo_all, hi_all


@kernel
def cell_sums(cells, p, y, w, row_bits, with_cells, bounds, carry, total, var, positive, lo, hi):
    """Chunks ``lo..hi`` (rows ``bounds[k]..bounds[k+1]``, in input order): row ``k`` of ``total`` (``sum w``),
    ``var`` (``sum w^2 p (1 - p)``) and ``positive`` (``sum w y``) per cell (``w`` empty: unit weights); and what
    the sort is to carry with each score, ``carry[i] = cells[i] << (row_bits + 1) | i << 1 | y[i]`` (no row number
    if ``row_bits`` is 0, no cell unless ``with_cells``), which :func:`running_extremes` unpacks."""
    weighted = w.shape[0] > 0
    shift = row_bits + 1
    for k in range(lo, hi):
        tot = total[k]
        v = var[k]
        pos = positive[k]
        for i in range(bounds[k], bounds[k + 1]):
            c = cells[i]
            pi = np.float64(p[i])
            wi = np.float64(w[i]) if weighted else 1.0
            tot[c] += wi
            v[c] += wi * wi * pi * (1.0 - pi)
            q = np.int64(0)
            if y[i] != 0:
                pos[c] += wi
                q = np.int64(1)
            if row_bits > 0:
                q |= np.int64(i) << 1
            if with_cells:
                q |= np.int64(c) << shift
            carry[i] = q


@kernel
def group_starts(sorted_p, bounds):
    """Each bound moved back to the start of its group of equal scores (in place)."""
    for k in range(bounds.shape[0]):
        b = bounds[k]
        while 0 < b < sorted_p.shape[0] and sorted_p[b - 1] == sorted_p[b]:
            b -= 1
        bounds[k] = b


@kernel
def code_stats(codes, offset, p, k):
    """Per code ``0..k-1`` of ``codes - offset``: its rows, and its first row along the rows sorted stably by ``p``,
    as ``(p, row)`` (the least ``p``, then the least row index; ``(inf, n)`` if absent). One sequential pass."""
    n = codes.shape[0]
    counts = np.zeros(k, dtype=np.int64)
    first_p = np.full(k, np.inf)
    first_row = np.full(k, n, dtype=np.int64)
    for i in range(n):
        c = np.int64(codes[i]) - offset
        counts[c] += 1
        x = np.float64(p[i])
        if x < first_p[c]:
            first_p[c] = x
            first_row[c] = i
    return counts, first_p, first_row


@kernel
def add_digit(cells, codes, offset, remap, size):
    """``cells = cells * size + remap[codes - offset]`` in place: one more digit of the mixed-radix cell numbers."""
    for i in range(cells.shape[0]):
        cells[i] = cells[i] * size + remap[np.int64(codes[i]) - offset]


@kernel
def _theta_cdf(x):
    # F(x) = sum_{k >= 0} (8 / x^2 + 2 / ((k + 1/2)^2 pi^2)) exp(-2 (k + 1/2)^2 pi^2 / x^2)
    total = 0.0
    k = 0
    while True:
        h = (k + 0.5) * math.pi
        term = (8.0 / (x * x) + 2.0 / (h * h)) * math.exp(-2.0 * h * h / (x * x))
        total += term
        if term <= 1e-17 * total or term == 0.0:
            return total
        k += 1


@kernel
def _alternating_sf(x):
    # 1 - F(x) = 8 sum_{k >= 1} (-1)^(k-1) k Q(k x), Q the standard normal upper tail
    total = 0.0
    k = 1
    sign = 1.0
    while True:
        term = 4.0 * k * math.erfc(k * x / math.sqrt(2.0))  # 8 k Q(k x)
        total += sign * term
        if term <= 1e-17 * total or term == 0.0:
            return total
        sign = -sign
        k += 1


@kernel
def kuiper_cdf(x):
    """CDF of the range of a standard Brownian motion on [0, 1] at ``x`` (0 for ``x <= 0``)."""
    if not x > 0.0:
        return 0.0
    if x < KUIPER_SPLIT:
        return _theta_cdf(x)
    return 1.0 - _alternating_sf(x)


@kernel
def kuiper_sf(x):
    """``1 - kuiper_cdf(x)``, accurate to relative rounding in the tail (0 only past underflow)."""
    if not x > 0.0:
        return 1.0
    if x < KUIPER_SPLIT:
        return 1.0 - _theta_cdf(x)
    if x == math.inf:
        return 0.0
    return _alternating_sf(x)


@kernel
def kuiper_sf_many(x):
    """:func:`kuiper_sf` of each element of the float64 array ``x``."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = kuiper_sf(x[i])
    return out


@kernel
def tied_range(ps, rs):
    """``(lo, hi)``: the minimum and maximum of 0 and of the running sum of ``rs`` after each group of equal ``ps``
    (sorted): :func:`segment_sums` of one segment, from rows already sorted with their terms."""
    lo = 0.0
    hi = 0.0
    run = 0.0
    n = ps.shape[0]
    i = 0
    while i < n:
        j = i
        while j < n and ps[j] == ps[i]:
            run += rs[j]
            j += 1
        if run > hi:
            hi = run
        elif run < lo:
            lo = run
        i = j
    return lo, hi


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


#: Columns of :func:`group_report`'s table.
G_N, G_W, G_SY, G_SP, G_BRIER, G_LOG, G_ECE, G_LO, G_HI, G_VAR, G_U, G_WPOS, G_WNEG = range(13)
G_COLUMNS = 13


@kernel
def group_report(ps, ys, ws, starts, edges, one, clip_lo, clip_hi, out, lo, hi):
    """Groups ``lo..hi``: group ``g``'s rows are ``starts[g]..starts[g+1]`` of ``ps`` (sorted ascending within the
    group), labels ``ys`` and weights ``ws`` (empty: ones); row ``g`` of ``out`` gets the columns ``G_*``: rows,
    ``W``, ``sum w y``, ``sum w p``, ``sum w (p - y)^2``, ``-sum w log q`` (``q`` the probability of the observed
    class clipped to ``[clip_lo, clip_hi]`` in the dtype of ``ps``), ``sum_k W_k |ybar_k - pbar_k|`` over the bins
    ``edges`` (a row is in the bin of the inner edges strictly below it), the extremes of the running sum of
    ``w (y - p)`` after each group of equal scores, ``sum w^2 p (1 - p)``, the Mann-Whitney sum (ties count half)
    and the weights of the positives and the negatives."""
    weighted = ws.shape[0] > 0
    n_inner = edges.shape[0] - 2
    for g in range(lo, hi):
        a = starts[g]
        b = starts[g + 1]
        row = out[g]
        row[:] = 0.0
        row[G_N] = b - a
        k = 0
        bw = 0.0
        by = 0.0
        bp = 0.0
        run = 0.0
        neg_below = 0.0
        i = a
        while i < b:
            x = ps[i]
            j = i
            tie_pos = 0.0
            tie_neg = 0.0
            xf = np.float64(x)
            bin_k = k
            while bin_k < n_inner and edges[bin_k + 1] < xf:
                bin_k += 1
            if bin_k != k:
                if bw > 0:
                    row[G_ECE] += bw * abs(by / bw - bp / bw)
                bw = 0.0
                by = 0.0
                bp = 0.0
                k = bin_k
            while j < b and ps[j] == x:
                wi = np.float64(ws[j]) if weighted else 1.0
                pos = ys[j] != 0
                yf = 1.0 if pos else 0.0
                row[G_W] += wi
                row[G_SY] += wi * yf
                row[G_SP] += wi * xf
                e = xf - yf
                row[G_BRIER] += wi * e * e
                q = x if pos else one - x
                if q < clip_lo:
                    q = clip_lo
                elif q > clip_hi:
                    q = clip_hi
                row[G_LOG] -= wi * np.log(np.float64(q))
                row[G_VAR] += wi * wi * xf * (1.0 - xf)
                run += wi * (yf - xf)
                bw += wi
                by += wi * yf
                bp += wi * xf
                if pos:
                    tie_pos += wi
                else:
                    tie_neg += wi
                j += 1
            if run > row[G_HI]:
                row[G_HI] = run
            elif run < row[G_LO]:
                row[G_LO] = run
            row[G_U] += tie_pos * (neg_below + 0.5 * tie_neg)
            row[G_WPOS] += tie_pos
            row[G_WNEG] += tie_neg
            neg_below += tie_neg
            i = j
        if bw > 0:
            row[G_ECE] += bw * abs(by / bw - bp / bw)
