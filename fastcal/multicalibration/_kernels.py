r"""Numba kernels behind :mod:`fastcal.multicalibration`: per-segment cumulative differences, and the report by
group, which shares their sort of ties (Kuiper's distribution is in :mod:`~fastcal.multicalibration._kuiper_kernels`).

The caller validates; these kernels assume clean, contiguous input (scores
sorted ascending without NaN, labels with nonzero = positive, non-negative
weights) and never check.

Segments. Every row has a *cell*: its combination of values of all the
segment features, numbered ``0..m-1``. A segment is a set of cells (a value
combination of some of the features), so its rows are a sum over its cells,
and a table ``table[cell, :]`` lists the segments of a cell, one per
combination of features. The rows are moved to *score ranges*
(:func:`~fastcal._core.math_kernels.range_of_score`, a non-decreasing map: every
score of a range is below every score of the next; :func:`range_counts`,
:func:`range_scatter`); each range is then sorted in the cache
(:func:`sort_ranges`), which puts all the rows in one order along the
scores, and blocks of the sorted rows are scanned once, moving the running
sum, weight and variance of every segment of each row's cell
(:func:`block_sums`): no mask per segment, no global sort. The caller
merges the per-block partial results in order (:func:`merge_extremes` for
the running sums).

Order. The score ranges depend on a sample of the rows, so on their order;
the sorted rows do not: within a group of equal scores the rows are put in
an order that is a function of the group (:func:`order_ties`), and the
blocks are cut at groups of equal scores by the number of rows alone. So
every sum is a function of the multiset of rows. All rows of one score
form one step of the cumulative sums: the running sum of each segment a tie
group touches is compared with the segment's maximum and minimum only after
the whole group.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.jit import kernel
from .._core.math_kernels import range_of_score

__all__ = ["big_ties", "block_sums", "group_counts", "group_report", "group_scatter", "merge_extremes", "merge_runs",
           "order_group_ties", "order_ties", "range_counts", "range_scatter", "SMALL_BUCKET", "sort_key_chunks",
           "sort_ranges", "sort_rows"]

@kernel
def range_counts(p, x0, scale, cell_range, bounds, counts, lo, hi):
    """Chunks ``lo..hi`` of the rows in input order (chunk ``k``: rows ``bounds[k]..bounds[k+1]``): row ``k`` of
    ``counts``, the chunk's rows per score range (:func:`~fastcal._core.math_kernels.range_of_score`)."""
    for k in range(lo, hi):
        cnt = counts[k]
        scores = p[bounds[k]:bounds[k + 1]]  # indices from 0: no wrap-around of negative indices to compile in
        for i in range(scores.shape[0]):
            cnt[np.uint64(range_of_score(np.float64(scores[i]), x0, scale, cell_range))] += 1


@kernel
def range_scatter(cells, p, y, w, factor, x0, scale, cell_range, bounds, offsets, xs, qs, ws, lo, hi):
    """Chunks ``lo..hi`` (as :func:`range_counts`): each row moved to its score range (found again, not stored:
    a multiply and a lookup cost less than writing and reading an array of ranges), in row order: ``xs`` its score
    (float64, -0.0 as +0.0), ``qs`` its cell and label, ``cells[i] << 1 | (y[i] != 0)``, and ``ws`` its weight
    times ``factor`` (an exact power of two of ``w``'s dtype, multiplied in that dtype; if ``w`` is not empty);
    ``offsets[k, r]``: where chunk ``k``'s rows of range ``r`` start."""
    weighted = w.shape[0] > 0
    for k in range(lo, hi):
        at = offsets[k]
        start = bounds[k]
        part = cells[start:bounds[k + 1]]  # indices from 0 (see range_counts)
        scores = p[start:bounds[k + 1]]
        labels = y[start:bounds[k + 1]]
        weights = w[start:bounds[k + 1]] if weighted else w
        for i in range(part.shape[0]):
            r = np.uint64(range_of_score(scores[i], x0, scale, cell_range))
            j = at[r]
            at[r] = j + 1
            xs[j] = np.float64(scores[i]) + 0.0
            qs[j] = (part[i] << 1) | (labels[i] != 0)
            if weighted:
                ws[j] = np.float64(weights[i] * factor) + 0.0


#: Rows of a bucket of :func:`sort_rows` above which it is merge-sorted before the insertion sort.
SMALL_BUCKET = 16
#: :func:`sort_rows` counts its rows into ``BUCKETS_PER_ROW * rows + 1`` buckets: two per row leave a quarter of
#: the rows out of order after the counting pass (one per row: a third, and the insertion sort's branch is
#: mispredicted twice as often; measured 6.1 ms against 7.0 ms for 10^6 rows in ranges of 16k).
BUCKETS_PER_ROW = 2


@kernel
def sort_rows(xs, qs, ws, a, b, most):
    """Rows ``a..b`` of ``(xs, qs, ws)`` (``ws`` empty: none) sorted by ``xs`` (:func:`_bucket_sort`), then the
    rows of each group of equal scores put in the order of :func:`order_ties`, a function of the group's rows
    alone, in place; weighted groups of more than ``most`` rows are left to :func:`big_ties` and
    :func:`merge_runs`, which order them in parallel."""
    if b - a < 2:
        return
    _bucket_sort(xs, qs, ws, a, b)
    order_ties(xs[a:b], qs[a:b], ws[a:b] if ws.shape[0] > 0 else ws, most)


@kernel
def _bucket_sort(xs, qs, ws, a, b):
    """Rows ``a..b`` of ``(xs, qs, ws)`` (``ws`` empty: none) sorted stably by ``xs``, in place.

    A counting sort into ``BUCKETS_PER_ROW * (b - a) + 1`` buckets of equal width between the least
    and the greatest score (a non-decreasing map: every score of a bucket is
    below every score of the next; each row's bucket computed once), a merge
    sort of each bucket of more than :data:`SMALL_BUCKET` rows (unless its
    scores are all equal), then one insertion sort of all the rows, which
    moves rows only within their bucket. Also the sort by key of
    :func:`_order_by_signed_weight` and :func:`order_group_ties` (an argsort
    and a gather were 3x slower on large groups of tied scores).
    """
    n = b - a
    if n < 2:
        return
    weighted = ws.shape[0] > 0
    x_in = xs[a:b]
    q_in = qs[a:b]
    w_in = ws[a:b] if weighted else ws
    least = x_in[0]
    most = x_in[0]
    for i in range(n):
        least = min(least, x_in[i])
        most = max(most, x_in[i])
    if least == most:
        return
    n_buckets = BUCKETS_PER_ROW * n + 1
    scale = n_buckets / (most - least)
    if not scale < math.inf:  # scores closer than n / DBL_MAX: one bucket
        scale = 0.0
    top = np.float64(n_buckets - 1)
    # unsigned: indices that cannot be negative compile without a wrap-around (a seventh faster)
    ends = np.zeros(n_buckets + 1, dtype=np.uint64)
    bucket = np.empty(n, dtype=np.uint64)
    one = np.uint64(1)
    for i in range(n):
        c = np.uint64(min((x_in[i] - least) * scale, top))
        bucket[i] = c
        ends[c + one] += one
    big = np.empty(n // (SMALL_BUCKET + 1) + 1, dtype=np.int64)  # the buckets of more than SMALL_BUCKET rows
    n_big = 0
    for j in range(n_buckets):
        if ends[j + 1] > np.uint64(SMALL_BUCKET):
            big[n_big] = j
            n_big += 1
        ends[j + 1] += ends[j]
    xt = np.empty(n)
    qt = np.empty(n, dtype=qs.dtype)
    wt = np.empty(n if weighted else 0)
    for i in range(n):  # ends[c]: the next free place of bucket c, then its end
        c = bucket[i]
        f = ends[c]
        xt[f] = x_in[i]
        qt[f] = q_in[i]
        if weighted:
            wt[f] = w_in[i]
        ends[c] = f + one
    for g in range(n_big):
        j = big[g]
        s = np.int64(ends[j - 1]) if j > 0 else 0
        e = np.int64(ends[j])
        same = True
        for i in range(s + 1, e):
            if xt[i] != xt[s]:
                same = False
                break
        if not same:
            order = np.argsort(xt[s:e], kind="mergesort")
            x_part = xt[s:e].copy()
            q_part = qt[s:e].copy()
            w_part = wt[s:e].copy() if weighted else wt
            for i in range(e - s):
                xt[s + i] = x_part[order[i]]
                qt[s + i] = q_part[order[i]]
                if weighted:
                    wt[s + i] = w_part[order[i]]
    for i in range(1, n):
        x = xt[i]
        if not x < xt[i - 1]:
            continue
        q = qt[i]
        t = np.uint64(i)  # the place to fill, unsigned
        if weighted:
            wi = wt[i]
            while t > 0 and xt[t - one] > x:
                xt[t] = xt[t - one]
                qt[t] = qt[t - one]
                wt[t] = wt[t - one]
                t -= one
            wt[t] = wi
        else:
            while t > 0 and xt[t - one] > x:
                xt[t] = xt[t - one]
                qt[t] = qt[t - one]
                t -= one
        xt[t] = x
        qt[t] = q
    x_in[:] = xt
    q_in[:] = qt
    if weighted:
        w_in[:] = wt


@kernel
def order_ties(xs, qs, ws, most):
    """The rows ``(xs, qs, ws)`` (sorted by ``xs``; ``ws`` empty: none) of each group of equal scores put in an
    order that is a function of the group's rows alone, whatever their order before, in place (weighted groups of
    more than ``most`` rows are left as they are).

    Rows of a group that add different terms to a running sum are ordered:
    the labels 0 first (a partition, unweighted), or by the signed weight
    ``(2 y - 1) w`` (weighted). Rows of equal key add the same terms
    ``w (y - p)``, ``w`` and ``w^2 p (1 - p)`` to the sums of their segments,
    so every segment sums the same sequence of terms within the group, and
    every sum along the sorted scores is a function of the multiset of rows.
    """
    n = xs.shape[0]
    weighted = ws.shape[0] > 0
    i = 0
    while i < n:
        j = i + 1
        while j < n and xs[j] == xs[i]:
            j += 1
        if j - i > 1:
            if not weighted:
                _partition_labels(qs, i, j)
            elif j - i <= most:
                _order_by_signed_weight(qs, ws, i, j)
        i = j


@kernel
def _partition_labels(qs, a, b):
    # the rows a..b of label 0 (qs & 1 == 0) before those of label 1, in place (not stable: rows of one label
    # add the same term)
    one = qs.dtype.type(1)
    lo = a
    hi = b - 1
    while True:
        while lo < hi and qs[lo] & one == 0:
            lo += 1
        while lo < hi and qs[hi] & one != 0:
            hi -= 1
        if lo >= hi:
            return
        q = qs[lo]
        qs[lo] = qs[hi]
        qs[hi] = q


@kernel
def _signed_weight(q, w):
    return w if q & 1 else -w


@kernel
def _order_by_signed_weight(qs, ws, a, b):
    # the rows a..b by (2 y - 1) w ascending, in place: an insertion sort up to SMALL_BUCKET rows, else an argsort
    if b - a <= SMALL_BUCKET:
        for i in range(a + 1, b):
            q = qs[i]
            w = ws[i]
            key = _signed_weight(q, w)
            t = i
            while t > a and _signed_weight(qs[t - 1], ws[t - 1]) > key:
                qs[t] = qs[t - 1]
                ws[t] = ws[t - 1]
                t -= 1
            qs[t] = q
            ws[t] = w
        return
    keys = np.empty(b - a)
    for i in range(b - a):
        keys[i] = _signed_weight(qs[a + i], ws[a + i])
    _bucket_sort(keys, qs[a:b], ws[a:b], 0, b - a)


@kernel
def sort_ranges(xs, qs, ws, starts, most, lo, hi):
    """Score ranges ``lo..hi`` (range ``k``: rows ``starts[k]..starts[k+1]`` of ``(xs, qs, ws)`` as
    :func:`range_scatter` wrote them) each sorted by :func:`sort_rows` (``most``: its limit), in place."""
    for k in range(lo, hi):
        sort_rows(xs, qs, ws, starts[k], starts[k + 1], most)


@kernel
def big_ties(xs, starts, most, lo, hi):
    """Ranges ``lo..hi`` of the sorted scores ``xs`` (as :func:`sort_ranges`): the bounds ``(a, b)`` of each group
    of equal scores of more than ``most`` rows, in order, an int64 array of 2 columns."""
    out = np.empty(((starts[hi] - starts[lo]) // (most + 1) + 1, 2), dtype=np.int64)
    n_out = 0
    for k in range(lo, hi):
        b = starts[k + 1]
        if b - starts[k] <= most:
            continue
        i = starts[k]
        while i < b:
            j = i + 1
            while j < b and xs[j] == xs[i]:
                j += 1
            if j - i > most:
                out[n_out, 0] = i
                out[n_out, 1] = j
                n_out += 1
            i = j
    return out[:n_out]


@kernel
def sort_key_chunks(qs, ws, keys, bq, bw, chunks, lo, hi):
    """Chunks ``lo..hi`` of the large groups of equal scores (chunk ``k``: rows ``chunks[k, 0]..chunks[k, 1]`` of
    ``(qs, ws)``, copied to ``chunks[k, 2]..`` of ``(keys, bq, bw)``): each row's signed weight ``(2 y - 1) w``
    in ``keys``, its cell and label in ``bq``, its weight in ``bw``, the chunk sorted by key (:func:`_bucket_sort`)."""
    for k in range(lo, hi):
        a = chunks[k, 0]
        at = chunks[k, 2]
        m = chunks[k, 1] - a
        for i in range(m):
            q = qs[a + i]
            w = ws[a + i]
            keys[at + i] = _signed_weight(q, w)
            bq[at + i] = q
            bw[at + i] = w
        _bucket_sort(keys, bq, bw, at, at + m)


@kernel
def merge_runs(keys, bq, bw, to_keys, to_q, to_w, tasks, lo, hi):
    """Tasks ``lo..hi`` of a round of merges of runs sorted by key: task ``t`` merges ``s..m`` and ``m..e`` of
    ``(keys, bq, bw)`` (``tasks[t, 0:3]``) and writes the places ``d0..d1`` of the merged run (``tasks[t, 3:5]``)
    to ``base + d0..`` of ``(to_keys, to_q, to_w)`` (``base = tasks[t, 5]``; ``to_keys`` empty: no keys written;
    ``m = e``: a copy). Where a task starts in each run is found by a binary search (the merge path), so the
    tasks of one merge are independent; rows of equal keys of the first run go first."""
    with_keys = to_keys.shape[0] > 0
    for t in range(lo, hi):
        s = tasks[t, 0]
        m = tasks[t, 1]
        e = tasks[t, 2]
        d0 = tasks[t, 3]
        d1 = tasks[t, 4]
        base = tasks[t, 5]
        n_a = m - s
        n_b = e - m
        # i: rows of the first run among the first d0 of the merged run
        i_lo = max(0, d0 - n_b)
        i_hi = min(d0, n_a)
        while i_lo < i_hi:
            i = (i_lo + i_hi) // 2
            if keys[s + i] <= keys[m + d0 - i - 1]:
                i_lo = i + 1
            else:
                i_hi = i
        i = s + i_lo
        j = m + d0 - i_lo
        for d in range(d0, d1):
            if j >= e or (i < m and keys[i] <= keys[j]):
                r = i
                i += 1
            else:
                r = j
                j += 1
            if with_keys:
                to_keys[base + d] = keys[r]
            to_q[base + d] = bq[r]
            to_w[base + d] = bw[r]


@kernel
def block_sums(xs, qs, ws, starts, table, whole, end, low, high, weight, var, positive, lo, hi):
    """Blocks ``lo..hi`` of the sorted rows (block ``k``: rows ``starts[k]..starts[k+1]`` of ``(xs, qs, ws)``,
    sorted by :func:`sort_ranges`, whole groups of equal scores): row ``k`` of ``end`` (the running sum
    ``S = sum w (y - p)`` at the block's end), ``low`` and ``high`` (its minimum ``<= 0`` and maximum ``>= 0``
    over the block, taken after each group of equal scores, ``S`` counted from 0 at the block's start),
    ``var`` (``sum w^2 p (1 - p)``) and, if weighted, ``weight`` (``sum w``) of the segments ``table[cell, :]``
    of each row's cell (``end.shape[1]``: none, a slot not returned); ``positive[k]``: ``sum w y`` of the
    block. ``whole``: column 0 of ``table`` is segment 0 for every cell (all rows), whose sums are kept in
    registers: every row adds to it, and a sum in memory would make each row wait for the last one's store.

    The running sums of the segments of a group's rows are compared with
    their extremes only after the whole group; within the group, the rows
    are in the order of :func:`order_ties`, so every sum is a function of
    the group's rows, not of their order.
    """
    weighted = ws.shape[0] > 0
    n_cols = table.shape[1]
    first = 1 if whole else 0
    n_seg = end.shape[1]
    state = np.empty((n_seg + 1, 5))  # running sum, minimum, maximum, weight, variance
    for k in range(lo, hi):
        a = starts[k]
        b = starts[k + 1]
        state[:] = 0.0
        s0 = 0.0
        low0 = 0.0
        high0 = 0.0
        w0 = 0.0
        v0 = 0.0
        pos0 = 0.0
        x_part = xs[a:b]  # indices from 0: no wrap-around of negative indices to compile in
        q_part = qs[a:b]
        w_part = ws[a:b] if weighted else ws
        m = b - a
        i = 0
        while i < m:
            pi = x_part[i]
            vi = pi * (1.0 - pi)
            if i + 1 == m or x_part[i + 1] != pi:
                q = q_part[i]
                label = np.float64(q & 1)
                r = label - pi
                wi = 1.0
                if weighted:
                    wi = w_part[i]
                    r *= wi
                    vi *= wi * wi
                    w0 += wi
                s0 += r
                v0 += vi
                pos0 += wi * label
                low0 = min(low0, s0)
                high0 = max(high0, s0)
                segs = table[q >> 1]
                for c in range(first, n_cols):
                    s = segs[c]
                    x = state[s, 0] + r
                    state[s, 0] = x
                    state[s, 1] = min(state[s, 1], x)
                    state[s, 2] = max(state[s, 2], x)
                    if weighted:
                        state[s, 3] += wi
                    state[s, 4] += vi
                i += 1
                continue
            j = i
            while j < m and x_part[j] == pi:
                q = q_part[j]
                label = np.float64(q & 1)
                r = label - pi
                v = vi
                wj = 1.0
                if weighted:
                    wj = w_part[j]
                    r *= wj
                    v *= wj * wj
                    w0 += wj
                s0 += r
                v0 += v
                pos0 += wj * label
                segs = table[q >> 1]
                for c in range(first, n_cols):
                    s = segs[c]
                    state[s, 0] += r
                    if weighted:
                        state[s, 3] += wj
                    state[s, 4] += v
                j += 1
            low0 = min(low0, s0)
            high0 = max(high0, s0)
            for t in range(i, j):
                segs = table[q_part[t] >> 1]
                for c in range(first, n_cols):
                    s = segs[c]
                    state[s, 1] = min(state[s, 1], state[s, 0])
                    state[s, 2] = max(state[s, 2], state[s, 0])
            i = j
        if whole:
            state[0, 0] = s0
            state[0, 1] = low0
            state[0, 2] = high0
            state[0, 3] = w0
            state[0, 4] = v0
        end[k] = state[:n_seg, 0]
        low[k] = state[:n_seg, 1]
        high[k] = state[:n_seg, 2]
        weight[k] = state[:n_seg, 3]
        var[k] = state[:n_seg, 4]
        positive[k] = pos0


@kernel
def merge_extremes(end, low, high):
    """``(lo, hi)`` per segment over all rows from the per-block results of :func:`block_sums`, taken in
    block order: each block's extremes shifted by the running sum before it."""
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


#: Rows of :func:`group_counts` and :func:`group_scatter` read at random (their groups, scores, labels and weights)
#: into buffers in the L1 cache before they are counted or written: a write whose place depends on a read at random
#: stalls the reads that follow it (measured at 10^6 rows in 20 groups: 88 ms for the scatter reading at random as
#: it writes, against 30 ms for NumPy's gathers and a counting sort).
GATHER_ROWS = 256


@kernel
def group_counts(codes, order, bounds, counts, lo, hi):
    """Chunks ``lo..hi`` of the rows in order of score (chunk ``k``: ``order[bounds[k]:bounds[k+1]]``): row ``k``
    of ``counts``, the chunk's rows per group ``codes[order[i]]``."""
    g = np.empty(GATHER_ROWS, dtype=codes.dtype)
    for k in range(lo, hi):
        cnt = counts[k]
        part = order[bounds[k]:bounds[k + 1]]  # indices from 0: no wrap-around of negative indices to compile in
        for a in range(0, part.shape[0], GATHER_ROWS):
            m = min(GATHER_ROWS, part.shape[0] - a)
            for i in range(m):
                g[i] = codes[part[a + i]]
            for i in range(m):
                cnt[g[i]] += 1


@kernel
def group_scatter(codes, order, p, y, w, factor, bounds, offsets, ps, ys, ws, lo, hi):
    """Chunks ``lo..hi`` (as :func:`group_counts`): each row ``r = order[i]`` moved to its group, in order of
    score: ``ps``, ``ys`` and (if ``w`` is not empty) ``ws`` its score, label and weight times ``factor`` (an exact
    power of two of ``w``'s dtype, multiplied in that dtype); ``offsets[k, g]``: where chunk ``k``'s rows of
    group ``g`` start. With :func:`group_counts`, a stable counting sort of the rows by group, in parallel."""
    weighted = w.shape[0] > 0
    g = np.empty(GATHER_ROWS, dtype=codes.dtype)
    pb = np.empty(GATHER_ROWS, dtype=p.dtype)
    yb = np.empty(GATHER_ROWS, dtype=y.dtype)
    wb = np.empty(GATHER_ROWS if weighted else 0, dtype=w.dtype)
    for k in range(lo, hi):
        at = offsets[k]
        part = order[bounds[k]:bounds[k + 1]]
        for a in range(0, part.shape[0], GATHER_ROWS):
            m = min(GATHER_ROWS, part.shape[0] - a)
            for i in range(m):
                r = part[a + i]
                g[i] = codes[r]
                pb[i] = p[r]
                yb[i] = y[r]
                if weighted:
                    wb[i] = w[r] * factor
            for i in range(m):
                c = g[i]
                j = at[c]
                at[c] = j + 1
                ps[j] = pb[i]
                ys[j] = yb[i]
                if weighted:
                    ws[j] = wb[i]


@kernel
def order_group_ties(ps, ys, ws, starts, lo, hi):
    """Groups ``lo..hi`` (as :func:`group_report` reads them): the rows of each run of equal scores of a group put
    in an order that is a function of the run's rows alone, in place (the labels and weights move; the scores
    are equal): the labels 0 first (a partition, unweighted), or by the signed weight ``(2 y - 1) w``
    (weighted), as :func:`order_ties`. Rows of equal key add the same terms to every sum of the group."""
    weighted = ws.shape[0] > 0
    for g in range(lo, hi):
        b = starts[g + 1]
        i = starts[g]
        while i < b:
            j = i + 1
            while j < b and ps[j] == ps[i]:
                j += 1
            if j - i > 1:
                if weighted:
                    _order_labels_by_signed_weight(ys, ws, i, j)
                else:
                    _partition_label_values(ys, i, j)
            i = j


@kernel
def _partition_label_values(ys, a, b):
    # the rows a..b of label 0 (ys == 0) before the others, in place (not stable: rows of one label add the same
    # terms)
    lo = a
    hi = b - 1
    while True:
        while lo < hi and ys[lo] == 0:
            lo += 1
        while lo < hi and ys[hi] != 0:
            hi -= 1
        if lo >= hi:
            return
        y = ys[lo]
        ys[lo] = ys[hi]
        ys[hi] = y


@kernel
def _order_labels_by_signed_weight(ys, ws, a, b):
    # the rows a..b of (ys, ws) by (2 y - 1) w ascending, in place (as _order_by_signed_weight)
    keys = np.empty(b - a)
    for i in range(b - a):
        keys[i] = ws[a + i] if ys[a + i] != 0 else -ws[a + i]
    if b - a <= SMALL_BUCKET:
        for i in range(1, b - a):
            key = keys[i]
            y = ys[a + i]
            w = ws[a + i]
            t = i
            while t > 0 and keys[t - 1] > key:
                keys[t] = keys[t - 1]
                ys[a + t] = ys[a + t - 1]
                ws[a + t] = ws[a + t - 1]
                t -= 1
            keys[t] = key
            ys[a + t] = y
            ws[a + t] = w
        return
    _bucket_sort(keys, ys[a:b], ws[a:b], 0, b - a)


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
