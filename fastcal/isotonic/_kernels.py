"""Numba kernels of isotonic regression: pooling ties, PAV, thresholds, prediction.

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.isotonic` give it, and checks nothing.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from .._pav_kernels import push_block

# --------------------------------------------------------------------------
# Pool adjacent violators
# --------------------------------------------------------------------------


@kernel
def pav_blocks(x, w, r):
    """Pool adjacent violators in place; return the number of blocks ``b``.

    On return ``x[:b]`` holds the block values, ``w[:b]`` the block weights and
    ``r[:b + 1]`` the block boundaries (block ``k`` is ``r[k]:r[k + 1]``).

    This is Algorithm 1 of Busing (2022), the O(n) single-pass form in which a
    new element first absorbs the following "up" violators and then pools
    backwards; equal neighbouring values are pooled (``>=``), so the blocks are
    the maximal runs of equal fitted values. The arithmetic follows the same
    order as SciPy's C++ ``pava`` so that both give the same bits.

    Busing, F. M. T. A. (2022). Monotone Regression: A Simple and Fast O(n)
    PAVA Implementation. Journal of Statistical Software, Code Snippets,
    102(1), 1-25. https://doi.org/10.18637/jss.v102.c01
    """
    n = x.shape[0]
    r[0] = 0
    r[1] = 1
    b = 0
    xb_prev = x[0]
    wb_prev = w[0]
    i = 1
    while i < n:
        b += 1
        xb = x[i]
        wb = w[i]
        if xb_prev >= xb:
            b -= 1
            sb = wb_prev * xb_prev + wb * xb
            wb += wb_prev
            xb = sb / wb
            while i < n - 1 and xb >= x[i + 1]:
                i += 1
                sb += w[i] * x[i]
                wb += w[i]
                xb = sb / wb
            while b > 0 and x[b - 1] >= xb:
                b -= 1
                sb += w[b] * x[b]
                wb += w[b]
                xb = sb / wb
        x[b] = xb
        xb_prev = xb
        w[b] = wb
        wb_prev = wb
        r[b + 1] = i + 1
        i += 1
    return b + 1


@kernel
def expand_blocks(x, r, nb):
    """Overwrite ``x`` with each block's value repeated over the block (backwards, in place)."""
    for k in range(nb - 1, -1, -1):
        v = x[k]
        for i in range(r[k], r[k + 1]):
            x[i] = v


# --------------------------------------------------------------------------
# Sorted order and tie pooling
# --------------------------------------------------------------------------


@kernel
def is_sorted(x):
    """True if ``x`` is non-decreasing."""
    for i in range(1, x.shape[0]):
        if x[i] < x[i - 1]:
            return False
    return True


@kernel
def pav_binary(neg, pos, eps, sign, sw, swy, xf, xl):
    """Isotonic fit of 0/1 labels given the scores of each class as sorted runs.

    ``neg`` holds the sorted scores of label 0, ``pos`` those of label 1.
    One pass merges the two runs (label 0 first among equal scores) and
    pools scores closer than ``eps`` into groups (a score starts a new group
    when it exceeds the group's first score by at least ``eps``:
    scikit-learn's rule, ``eps`` being the dtype's resolution). A group of
    both labels is fed, with ``sign`` times its count of positives, to the
    PAV stack (:func:`push_group`); consecutive groups of one label (all
    negatives, or all positives) are fed as one block spanning them
    (:func:`push_block`). PAV pools such groups anyway: after a push the top
    block's mean is at least the pushed group's, so the next group of the
    same mean pools with it. Counts are exact in any order, so the blocks are
    those of one push per group, bit for bit (measured at 10^7 rows: 12%
    faster at a base rate of 1/2, 25-30% at 1/10 to 1/30, where the runs of
    negatives are long). The merge is branch-free: the labels interleave at
    random (measured: 18% faster than the former three-run merge). Returns
    the number of blocks.
    """
    n0 = neg.shape[0]
    n1 = pos.shape[0]
    i0 = 0
    i1 = 0
    top = 0
    cur = 0.0
    count = 0.0
    hits = 0.0
    run_w = 0.0  # the groups of one label not yet pushed: rows, positives, first and last group's score
    run_wy = 0.0
    run_first = 0.0
    run_last = 0.0
    v = 0.0
    one = False
    for k in range(n0 + n1 + 1):
        if k < n0 + n1:
            a = np.float64(neg[i0]) if i0 < n0 else np.inf
            b = np.float64(pos[i1]) if i1 < n1 else np.inf
            one = b < a
            v = b if one else a
            i1 += np.int64(one)
            i0 += np.int64(not one)
            if k == 0:
                cur = v
            if k == 0 or v - cur < eps:
                count += 1.0
                hits += np.float64(one)
                continue
        # the group at cur (count rows, hits positives) is complete: v starts the next one, or the rows ended
        pure = hits == 0.0 or hits == count
        if run_w > 0.0 and not (pure and (run_wy == 0.0) == (hits == 0.0)):
            top = push_block(sw, swy, xf, xl, top, run_w, sign * run_wy, run_first, run_last)
            run_w = 0.0
        if pure:
            if run_w == 0.0:
                run_first = cur
                run_wy = 0.0
            run_w += count
            run_wy += hits
            run_last = cur
        else:
            top = push_group(sw, swy, xf, xl, top, count, hits, sign, cur)
        cur = v
        count = 1.0
        hits = np.float64(one)
    if run_w > 0.0:
        top = push_block(sw, swy, xf, xl, top, run_w, sign * run_wy, run_first, run_last)
    return top


@kernel
def push_group(sw, swy, xf, xl, top, w, wy, sign, x):
    """Push the tie group at score ``x`` (weight ``w``, weighted target sum ``wy``).

    Like scikit-learn, the group enters the fit with its mean rounded to the
    dtype of the scores (the dtype of ``xf``), so that float32 fits keep the
    same knots; ``sign`` is -1 for a decreasing fit.
    """
    xl[top] = wy / w  # round the mean through the scores' dtype
    mean = np.float64(xl[top])
    return push_block(sw, swy, xf, xl, top, w, sign * (w * mean), x, x)


@kernel
def push_blocks(sw, swy, xf, xl, top, start, stop):
    """Push the blocks ``start:stop`` of the same stack arrays onto the stack of height ``top``.

    Pooling the blocks of two PAV fits of adjacent score ranges gives the fit
    of the union (blocks of a part are unions of blocks of the whole), which is
    how a fit is split across threads. Requires ``top <= start``; returns the
    new height.
    """
    for j in range(start, stop):
        top = push_block(sw, swy, xf, xl, top, sw[j], swy[j], xf[j], xl[j])
    return top


@kernel
def pav_sorted(x, p, w, kind, eps, sign, sw, swy, xf, xl):
    """Isotonic fit of sorted scores ``x``; returns the number of blocks.

    ``kind`` 0: ``p[i]`` is the target of row ``i`` and ``w[i]`` its weight
    (``w`` empty: unit weights). 1 or 2: ``p`` is a float64 carried per row,
    a positive weight negated where the 0/1 label is 1 (weight ``|p|``,
    label 1 where ``p < 0``, decoded as ``|p| - max(p, 0)``; ``w`` unused),
    the one float the weighted 0/1 fit moves through its sort. Ties are
    pooled into weighted means as in :func:`pav_binary`, each group's sums
    in row order; the kinds give the same bits on the same rows.

    Consecutive groups of the same mean are pooled into a *run* before the
    stack sees them (one :func:`push_block` per run): neighbours with equal
    targets always share a block of the fit (a block's first row is at least
    its mean and its last row at most, so a block could only end between
    equal targets ``t`` with ``t <= f(left) < f(right) <= t``), so the
    blocks are those of pushing every group; a run's sums are added in row
    order, then pooled with the blocks below. Kind 1 also finds the mean of
    a group of one label without a division (it is exactly 0 or 1): with
    0/1 labels of distinct scores the division's latency held up every row.
    Measured at 10^7 rows (2.4 rows per run), one pass over all rows against
    one push and one division per group: float64 scores 69 ms against 76
    (kind 1), float32 scores, whose many mixed tie groups make kind 1's test
    mispredict, 29.5 ms against 33 (kind 2). The run's logic is written out
    in the loop: as a helper taking the stack arrays, called per group, it
    was not inlined and ran 6x slower.
    """
    n = x.shape[0]
    weighted = w.shape[0] > 0
    top = 0
    cur = 0.0
    sum_w = 0.0
    sum_wy = 0.0
    rw = 0.0  # the pending run: weight, signed target sum, first and last score, mean
    rwy = 0.0
    rfirst = 0.0
    rlast = 0.0
    rmean = 0.0
    for i in range(n + 1):  # the last step, past the rows (v = inf), ends the last group
        v = np.float64(x[i]) if i < n else np.inf
        if i == 0:
            cur = v
        elif v - cur >= eps:
            if kind == 1 and (sum_wy == 0.0) | (sum_wy == sum_w):
                mean = np.float64(sum_wy == sum_w)
            else:
                xl[top] = sum_wy / sum_w  # round the mean through the scores' dtype (see push_group)
                mean = np.float64(xl[top])
            if mean == rmean and rw > 0.0:
                rw += sum_w
                rwy += sign * (sum_w * mean)
            else:  # a new run (its sums as pushing the group alone would make them: -0.0 stays -0.0)
                if rw > 0.0:
                    top = push_block(sw, swy, xf, xl, top, rw, rwy, rfirst, rlast)
                rw = sum_w
                rwy = sign * (sum_w * mean)
                rfirst = cur
                rmean = mean
            rlast = cur
            cur = v
            sum_w = 0.0
            sum_wy = 0.0
        if i < n:
            if kind == 0:
                wk = np.float64(w[i]) if weighted else 1.0
                wyk = np.float64(p[i]) * wk
            else:
                pk = np.float64(p[i])
                wk = abs(pk)
                wyk = wk - max(pk, 0.0)  # wk, or +0.0
            sum_w += wk
            sum_wy += wyk
    if rw > 0.0:
        top = push_block(sw, swy, xf, xl, top, rw, rwy, rfirst, rlast)
    return top


@kernel
def thresholds(vals, xf, xl, nb):
    """The interpolation knots scikit-learn keeps, from the PAV blocks.

    Fitted values ``vals[k]`` hold from score ``xf[k]`` to ``xl[k]``. A point
    is dropped when both neighbours share its value, so each maximal run of
    equal values keeps its first and last score (one, if they coincide).
    Returns ``(x, y)`` of the knots.
    """
    tx = np.empty(2 * nb, dtype=xf.dtype)
    ty = np.empty(2 * nb, dtype=vals.dtype)
    m = 0
    k = 0
    while k < nb:
        first = xf[k]
        while k + 1 < nb and vals[k + 1] == vals[k]:
            k += 1
        tx[m] = first
        ty[m] = vals[k]
        m += 1
        if xl[k] != first:
            tx[m] = xl[k]
            ty[m] = vals[k]
            m += 1
        k += 1
    return tx[:m].copy(), ty[:m].copy()


# --------------------------------------------------------------------------
# Prediction: piecewise-linear interpolation between thresholds
# --------------------------------------------------------------------------


@kernel
def build_lookup(xs, n_cells):
    """Bucket table for :func:`interpolate_one` over the sorted thresholds ``xs``.

    The range ``[xs[0], xs[-1]]`` is cut into ``n_cells`` equal cells;
    ``table[c]`` counts the thresholds whose cell is below ``c``. Because the
    cell of a value is a monotone function of it, the first threshold ``>= t``
    lies in ``table[cell(t)] .. table[cell(t) + 1]``, usually a range of zero to
    two thresholds, so a prediction costs O(1) instead of a binary search.
    Returns ``(table, scale)``; ``scale`` is 0 when the range is too wide to cut.
    """
    m = xs.shape[0]
    x0 = np.float64(xs[0])
    width = np.float64(xs[m - 1]) - x0
    scale = n_cells / width if width > 0 else 0.0
    if not (scale > 0 and scale < np.inf):
        n_cells = 1
        scale = 0.0
    table = np.zeros(n_cells + 1, dtype=np.int64)
    for i in range(m):
        table[cell_of(np.float64(xs[i]), x0, scale, n_cells) + 1] += 1
    for c in range(n_cells):
        table[c + 1] += table[c]
    return table, scale


@kernel
def cell_of(t, x0, scale, n_cells):
    if n_cells == 1:
        return 0
    v = (t - x0) * scale
    if v >= n_cells - 1:
        return n_cells - 1
    if v <= 0:
        return 0
    return np.int64(v)


@kernel
def interpolate_one(t, xs, ys, table, scale):
    """Linear interpolation at ``x0 <= t <= xs[-1]`` (``t`` as float64).

    With ``j`` the first threshold ``>= t`` (clipped to ``1 .. m - 1``, the
    knot search of SciPy's ``interp1d``), the value is
    ``y[j-1] + (t - x[j-1]) / (x[j] - x[j-1]) * (y[j] - y[j-1])``: the fraction
    lies in [0, 1], so a steep slope cannot overflow into ``inf * 0``.
    """
    n_cells = table.shape[0] - 1
    c = cell_of(t, np.float64(xs[0]), scale, n_cells)
    lo = table[c]
    hi = table[c + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if xs[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    m = xs.shape[0]
    if lo < 1:
        lo = 1
    elif lo > m - 1:
        lo = m - 1
    x_lo = np.float64(xs[lo - 1])
    y_lo = np.float64(ys[lo - 1])
    frac = (t - x_lo) / (np.float64(xs[lo]) - x_lo)
    return y_lo + frac * (np.float64(ys[lo]) - y_lo)


@kernel
def predict_one(t, xs, ys, table, scale, clip):
    """Prediction at one point; NaN outside the thresholds unless ``clip``."""
    x_min = np.float64(xs[0])
    x_max = np.float64(xs[xs.shape[0] - 1])
    if t < x_min:
        if not clip:
            return np.nan
        t = x_min
    elif t > x_max:
        if not clip:
            return np.nan
        t = x_max
    return interpolate_one(t, xs, ys, table, scale)


@kernel
def predict(T, xs, ys, table, scale, clip, out, lo, hi):
    """``out[i]``: the fitted function at ``T[i]``, for ``i`` in ``lo .. hi - 1``."""
    T, out = T[lo:hi], out[lo:hi]  # indices from 0: no wraparound check
    for i in range(T.shape[0]):
        out[i] = predict_one(np.float64(T[i]), xs, ys, table, scale, clip)


# --------------------------------------------------------------------------
# The PAV steps' chunks (see fastcal.isotonic._pav): cuts at tie-group starts,
# and each block's sum of weight times score (the rows are grouped by score
# range in fastcal._sort)
# --------------------------------------------------------------------------


@kernel
def clean_cuts(a, b, start_a, start_b, eps, tries, cut_a, cut_b):
    """Tie-group starts near given positions of the merged sorted runs ``a`` and ``b``.

    ``(start_a[c], start_b[c])`` is a position of the merge of ``a`` and
    ``b`` (``b`` may be empty): every row before it is ``<=`` every row from
    it on. From there the merge is walked for at most ``tries`` rows; the
    first row at least ``eps`` above the row before it starts a tie group
    whatever the groups before it (a group's first score is at most the row
    before), and its position is stored in ``(cut_a[c], cut_b[c])``;
    ``-1, -1`` when none is found.
    """
    na = a.shape[0]
    nb = b.shape[0]
    for c in range(start_a.shape[0]):
        ia = start_a[c]
        ib = start_b[c]
        cut_a[c] = -1
        cut_b[c] = -1
        prev = -np.inf
        if ia > 0:
            prev = np.float64(a[ia - 1])
        if ib > 0:
            prev = max(prev, np.float64(b[ib - 1]))
        for _ in range(tries):
            va = np.float64(a[ia]) if ia < na else np.inf
            vb = np.float64(b[ib]) if ib < nb else np.inf
            v = min(va, vb)
            if v == np.inf:
                break
            if v - prev >= eps:
                cut_a[c] = ia
                cut_b[c] = ib
                break
            prev = v
            if va <= vb:
                ia += 1
            else:
                ib += 1


@kernel
def score_sums(x, p, kind, xf, nb, swx):
    """Add each row's weight times score to its block's ``swx`` (the centered fit's block centres).

    ``x`` are sorted scores fitted into the blocks of first scores
    ``xf[:nb]``; a row belongs to the last block with ``xf[k] <= x`` (a tie
    group's rows lie between its first score and the next group's). The
    weight is 1 (``kind`` 0), ``p[i]`` (1) or ``|p[i]|`` (2, a weight carried
    with its label as sign, see :func:`pav_sorted`). Sums run in row order.
    """
    k = 0
    for i in range(x.shape[0]):
        v = x[i]
        while k + 1 < nb and xf[k + 1] <= v:
            k += 1
        if kind == 0:
            wk = 1.0
        elif kind == 1:
            wk = np.float64(p[i])
        else:
            wk = abs(np.float64(p[i]))
        swx[k] += wk * np.float64(v)


# --------------------------------------------------------------------------
# Many isotonic fits in one pass: one per group of rows (fastcal.grouped)
# --------------------------------------------------------------------------


@kernel
def group_starts(gs, g0, ng):
    """``starts`` (``ng + 1`` long): where each group ``g0 .. g0 + ng - 1`` of ``gs`` (float64 group numbers) starts
    in the rows ordered by group (:func:`by_group`)."""
    starts = np.zeros(ng + 1, dtype=np.int64)
    for i in range(gs.shape[0]):
        starts[np.int64(gs[i]) - g0 + 1] += 1
    for k in range(ng):
        starts[k + 1] += starts[k]
    return starts


@kernel
def knots_of_blocks(sw, swy, xf, xl, nb, sign, y_lo, y_hi, vals, knots_x, knots_y, m):
    """The knots of the PAV blocks ``[:nb]`` written to ``knots_x``/``knots_y`` from ``m``; returns their number.

    :func:`fastcal._pav.finish` in the same arithmetic: the block
    means ``sign * swy / sw`` rounded to the dtype of ``vals`` (the scores'),
    clipped to ``[y_lo, y_hi]``, then :func:`thresholds`.
    """
    for j in range(nb):
        v = swy[j] / sw[j]
        if sign < 0:
            v = -v
        vals[j] = v
        v = np.float64(vals[j])
        if v < y_lo:
            vals[j] = y_lo
        elif v > y_hi:
            vals[j] = y_hi
    tx, ty = thresholds(vals[:nb], xf[:nb], xl[:nb], nb)
    t = tx.shape[0]
    knots_x[m:m + t] = tx
    knots_y[m:m + t] = ty
    return t


@kernel
def by_group(xs, ws, gs, g0, ng):
    """``(out, out_w, starts)``: the scores ``xs`` (and the weights ``ws``, unless empty) ordered by their groups
    ``gs`` (numbers ``g0 .. g0 + ng - 1``) with a counting sort, stably; group ``g0 + k`` is
    ``out[starts[k]:starts[k + 1]]``. One counting pass and one scatter of the values themselves."""
    starts = group_starts(gs, g0, ng)
    fill = starts[:ng].copy()
    weighted = ws.shape[0] > 0
    out = np.empty(xs.shape[0], dtype=xs.dtype)
    out_w = np.empty(ws.shape[0], dtype=ws.dtype)
    for i in range(xs.shape[0]):
        k = np.int64(gs[i]) - g0
        j = fill[k]
        fill[k] = j + 1
        out[j] = xs[i]
        if weighted:
            out_w[j] = ws[i]
    return out, out_w, starts


@kernel
def group_score_keys(bits, starts, keys):
    """``keys[i]``: distinct uint64 keys whose ascending order is that of the grouped rows (group ``k`` at
    ``starts[k]:starts[k + 1]``) by group, then by score up to its last bits, then by position in the group
    (returns ``p``, the bits of that position). ``bits``: the scores' bits (``uint64`` of float64, ``uint32`` of
    float32). From the top: the group number (``b`` bits, its bit length), the order-preserving bits of the
    score (``-0.0`` as ``+0.0``) cut to the ``64 - b - p`` bits left, the position (``p`` bits).
    :func:`order_in_groups` finishes the order where the cut dropped bits."""
    ng = starts.shape[0] - 1
    most = 1
    for k in range(ng):
        most = max(most, starts[k + 1] - starts[k])
    b = np.uint64(0)
    while (np.uint64(1) << b) < np.uint64(ng):
        b += np.uint64(1)
    p = np.uint64(0)
    while (np.uint64(1) << p) < np.uint64(most):
        p += np.uint64(1)
    width = np.uint64(bits.itemsize * 8)
    sign = np.uint64(1) << (width - np.uint64(1))
    mask = (sign - np.uint64(1)) | sign
    room = np.uint64(64) - b - p
    cut = width - room if width > room else np.uint64(0)
    for k in range(ng):
        g = np.uint64(k) << (np.uint64(64) - b) if b > np.uint64(0) else np.uint64(0)
        a = starts[k]
        for i in range(a, starts[k + 1]):
            u = np.uint64(bits[i])
            if u == sign:  # -0.0: +0.0
                u = np.uint64(0)
            u = (~u) & mask if u & sign else u | sign
            keys[i] = g | ((u >> cut) << p) | np.uint64(i - a)
    return p


#: Moves per row past which :func:`order_in_groups` sorts a group by a merge sort instead.
MOST_MOVES_PER_ROW = 16


@kernel
def order_in_groups(z, starts, keys, p, order):
    """``order[i]``: the position in its group of the grouped row of ``z`` whose key (:func:`group_score_keys`,
    ``p`` position bits) is the ``i``-th of the sorted ``keys``, each group's positions sorted stably by score,
    as ``np.argsort(z_group, kind="stable")`` gives them. An insertion sort by (score, position): only rows
    whose scores the keys cut to equal bits move (``-0.0 == +0.0``); a group that needs more than
    :data:`MOST_MOVES_PER_ROW` moves per row is merge-sorted instead."""
    low = (np.uint64(1) << np.uint64(p)) - np.uint64(1)
    for k in range(starts.shape[0] - 1):
        a = starts[k]
        e = starts[k + 1]
        budget = MOST_MOVES_PER_ROW * (e - a)
        for i in range(a, e):
            q = np.int64(keys[i] & low)
            x = z[a + q]
            j = i
            while j > a and (z[a + order[j - 1]] > x or (z[a + order[j - 1]] == x and order[j - 1] > q)):
                order[j] = order[j - 1]
                j -= 1
            order[j] = q
            budget -= i - j
            if budget < 0:
                order[a:e] = np.argsort(z[a:e], kind="mergesort")
                break


@kernel
def _group_buffers(rows, z):
    """``(sw, swy, xf, xl, vals)``: the PAV stack of :func:`~fastcal._pav_kernels.push_block` (float64 sums,
    scores of the dtype of ``z``) and the fitted values of :func:`knots_of_blocks`, for groups of up to ``rows``
    rows, fitted one after the other in them."""
    return (np.empty(rows), np.empty(rows), np.empty(rows, dtype=z.dtype), np.empty(rows, dtype=z.dtype),
            np.empty(rows, dtype=z.dtype))


@kernel
def pav_groups(z, s0, o, s1, g0, eps, sign, y_lo, y_hi, knots_x, knots_y, n_knots):
    """The isotonic fits of 0/1 labels without weights of groups ``g0 .. g0 + len(s0) - 2``, each on its own rows.

    Group ``g0 + k`` has the sorted scores ``z[s0[k]:s0[k + 1]]`` of label 0
    and ``o[s1[k]:s1[k + 1]]`` of label 1 (:func:`by_group`, then each run
    sorted), fitted by :func:`pav_binary` (sums of counts, exact in any
    order: the blocks of the group's own fit) and finished by
    :func:`knots_of_blocks`. ``knots_x`` and ``knots_y`` (as long as the
    rows: a fit has at most one knot per row) receive the knots from 0 on,
    ``n_knots[g]`` their number per group (0: a group without rows). Returns
    the number of knots written.
    """
    ng = s0.shape[0] - 1
    rows = 0
    for k in range(ng):
        rows = max(rows, s0[k + 1] - s0[k] + s1[k + 1] - s1[k])
    sw, swy, xf, xl, vals = _group_buffers(rows, z)
    m = 0
    for k in range(ng):
        if s0[k + 1] == s0[k] and s1[k + 1] == s1[k]:
            n_knots[g0 + k] = 0
            continue
        nb = pav_binary(z[s0[k]:s0[k + 1]], o[s1[k]:s1[k + 1]], eps, sign, sw, swy, xf, xl)
        t = knots_of_blocks(sw, swy, xf, xl, nb, sign, y_lo, y_hi, vals, knots_x, knots_y, m)
        n_knots[g0 + k] = t
        m += t
    return m


@kernel
def pav_groups_weighted(z, zw, order, starts, g0, eps, sign, y_lo, y_hi, knots_x, knots_y, n_knots):
    """The isotonic fits of weighted 0/1 labels of groups ``g0 .. g0 + len(starts) - 2``, each on its own rows.

    Group ``g0 + k`` has the scores ``z[starts[k]:starts[k + 1]]`` and the
    weights ``zw`` (as the group's own fit rescales them,
    :func:`fastcal._validation.rescale_weights`, negated where the label is
    1) in input order (:func:`by_group`); ``order`` (within each group) sorts
    them by score stably (ties in input order, as the engine's stable sort of
    the group's rows leaves them). Each group is fitted by
    :func:`pav_sorted` (sums in that order: the group's own fit) and
    finished by :func:`knots_of_blocks`. Outputs as :func:`pav_groups`.
    """
    ng = starts.shape[0] - 1
    rows = 0
    for k in range(ng):
        rows = max(rows, starts[k + 1] - starts[k])
    sw, swy, xf, xl, vals = _group_buffers(rows, z)
    sx = np.empty(rows, dtype=z.dtype)
    sp = np.empty(rows)
    m = 0
    for k in range(ng):
        a = starts[k]
        r = starts[k + 1] - a
        if r == 0:
            n_knots[g0 + k] = 0
            continue
        for i in range(r):
            j = a + order[a + i]
            sx[i] = z[j] + 0.0  # -0.0 as +0.0, as the engine's radix sort of the weighted fit gives it
            sp[i] = zw[j]
        nb = pav_sorted(sx[:r], sp[:r], sp[:0], 1, eps, sign, sw, swy, xf, xl)
        t = knots_of_blocks(sw, swy, xf, xl, nb, sign, y_lo, y_hi, vals, knots_x, knots_y, m)
        n_knots[g0 + k] = t
        m += t
    return m


#: Rows whose knot searches :func:`predict_groups` advances in lockstep.
SEARCH_BLOCK = 16


@kernel
def predict_groups(T, model, offsets, knots_x, knots_y, clip, out, lo, hi):
    """``out[i]``, ``i`` in ``lo .. hi - 1``: the fit of model ``model[i]`` at ``T[i]``, as :func:`predict` gives it.

    Model ``g``'s knots are ``offsets[g] .. offsets[g + 1] - 1`` of ``knots_x``
    and ``knots_y``. The arithmetic of :func:`predict_one` (NaN outside the
    knots unless ``clip``) and :func:`interpolate_one`, found by a binary
    search over the model's knots instead of a lookup table: the knot found is
    the first one ``>= T[i]`` either way, so the value has the bits of the
    model's own prediction. A model of one knot predicts its value everywhere.

    The searches of :data:`SEARCH_BLOCK` rows advance in lockstep, one halving
    of each per round: each row's models lie anywhere in the knots, and the
    rounds' loads, independent of each other, wait for memory together
    instead of one after the other (10^7 rows of 10^4 models, 2 threads: 211
    ms one row at a time).
    """
    first = np.empty(SEARCH_BLOCK, dtype=np.int64)  # the search's current knot of each row of the block
    length = np.empty(SEARCH_BLOCK, dtype=np.int64)  # its remaining length (<= 1: done or no search)
    point = np.empty(SEARCH_BLOCK)
    for start in range(lo, hi, SEARCH_BLOCK):
        stop = min(hi, start + SEARCH_BLOCK)
        longest = 0
        for j in range(stop - start):
            i = start + j
            g = model[i]
            a = offsets[g]
            b = offsets[g + 1]
            first[j] = a
            length[j] = 0
            if b - a == 1:
                out[i] = knots_y[a]
                continue
            t = np.float64(T[i])
            x_min = np.float64(knots_x[a])
            x_max = np.float64(knots_x[b - 1])
            if t < x_min:
                if not clip:
                    out[i] = np.nan
                    continue
                t = x_min
            elif t > x_max:
                if not clip:
                    out[i] = np.nan
                    continue
                t = x_max
            point[j] = t
            length[j] = b - a
            longest = max(longest, b - a)
        while longest > 1:  # one halving of every search still going (a select per step, no branch)
            longest -= longest >> 1
            for j in range(stop - start):
                n_left = length[j]
                half = n_left >> 1
                at = first[j]
                probe = at + half  # half is 0 once the search is done
                first[j] = probe if knots_x[probe] < point[j] else at
                length[j] = n_left - half
        for j in range(stop - start):
            if length[j] == 0:  # one knot, or out of the knots: set above
                continue
            i = start + j
            g = model[i]
            a = offsets[g]
            b = offsets[g + 1]
            t = point[j]
            k = first[j]
            k += np.int64(knots_x[k] < t)
            if k < a + 1:
                k = a + 1
            elif k > b - 1:
                k = b - 1
            x_lo = np.float64(knots_x[k - 1])
            y_lo = np.float64(knots_y[k - 1])
            frac = (t - x_lo) / (np.float64(knots_x[k]) - x_lo)
            out[i] = y_lo + frac * (np.float64(knots_y[k]) - y_lo)
