"""Numba kernels of the grouped calibrators: the rows laid out by buckets of consecutive groups, in one counting
pass and one scatter, for the per-group fits that follow.

A row's *slot*: its group's bucket ``bucket_of[g]`` (``g = group_of[code]``; -1 leaves the row out), or twice it
plus the row's 0/1 label when ``by_label``; a row of weight zero is left out (``weights`` empty: unit weights).

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.grouped._fits` give it, and checks nothing.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel
from .._core.pav_kernels import pav_binary, pav_sorted, thresholds


@kernel
def count_slots(codes, group_of, bucket_of, labels, weights, by_label, counts, wmax, lo, hi):
    """Rows ``lo .. hi - 1``: ``counts[s]`` += 1 for each row's slot, and ``wmax[g]`` the largest weight of group
    ``g`` (``weights`` not empty). ``counts`` and ``wmax`` are this chunk's rows of the caller's per-chunk tables
    (chunks fixed by the row count), so nothing depends on the thread count."""
    weighted = weights.shape[0] > 0
    for i in range(lo, hi):
        g = group_of[codes[i]]
        if g < 0:
            continue
        if weighted:
            v = weights[i]
            if not v > 0:
                continue
            if v > wmax[g]:
                wmax[g] = v
        s = bucket_of[g]
        if by_label:
            s = 2 * s + np.int64(labels[i] != 0)
        counts[s] += 1


@kernel
def scatter_slots(codes, group_of, bucket_of, labels, weights, by_label, x, offsets, xo, go, wo, lo, hi):
    """Rows ``lo .. hi - 1`` written slot by slot: at ``j = offsets[s]`` (then ``offsets[s]`` += 1), ``xo[j]`` the
    score and ``go[j]`` the group; with weights, ``wo[j]`` the weight, negated where the label is not 0 (a weight
    carrying its label as its sign). ``offsets`` is this chunk's first place in each slot (from the counts of
    :func:`count_slots`), so rows keep their input order within a slot."""
    weighted = weights.shape[0] > 0
    for i in range(lo, hi):
        g = group_of[codes[i]]
        if g < 0:
            continue
        if weighted and not weights[i] > 0:
            continue
        s = bucket_of[g]
        if by_label:
            s = 2 * s + np.int64(labels[i] != 0)
        j = offsets[s]
        offsets[s] = j + 1
        xo[j] = x[i]
        go[j] = g
        if weighted:
            v = weights[i]
            wo[j] = -v if labels[i] != 0 else v


@kernel
def group_max(codes, group_of, weights, out):
    """``out[g]``: the largest of ``weights`` over the rows of group ``g = group_of[codes[i]]`` (-1: left out);
    ``out`` starts at zeros. One sequential pass (a maximum does not depend on the order)."""
    for i in range(codes.shape[0]):
        g = group_of[codes[i]]
        if g >= 0 and weights[i] > out[g]:
            out[g] = weights[i]


@kernel
def bin_sums(p, y, weights, codes, group_of, inner, table):
    """The bin sums of each group: ``table[g, k, 0]`` += the weight (1 if ``weights`` is empty) and
    ``table[g, k, 1]`` += the weight of a positive, over the rows of group ``g = group_of[codes[i]]`` (-1:
    left out), ``k`` the number of ``inner`` edges strictly below ``p[i]`` (``np.searchsorted`` on the left, as
    :class:`~fastcal.HistogramBinning` bins), found from the guess of uniform edges of [0, 1].

    One sequential pass in input order: each group's sums are added in the order of its own rows, as one chunk of
    :func:`fastcal._binning.bin_stats` over them adds them, in float64 (without a branch on the label, as there).
    """
    weighted = weights.shape[0] > 0
    m = inner.shape[0]
    for i in range(p.shape[0]):
        g = group_of[codes[i]]
        if g < 0:
            continue
        x = np.float64(p[i])
        k = min(max(np.int64(x * (m + 1)), 0), m)  # the bin of x for uniform edges, give or take one
        while k > 0 and inner[k - 1] >= x:  # then exactly the number of inner edges < x, for any edges
            k -= 1
        while k < m and inner[k] < x:
            k += 1
        wi = np.float64(weights[i]) if weighted else 1.0
        table[g, k, 0] += wi
        table[g, k, 1] += wi * (1.0 if y[i] != 0 else 0.0)


@kernel
def scatter_rows(codes, s, y, w, offsets, so, yo, wo, lo, hi):
    """Rows ``lo .. hi - 1`` written group by group: at ``j = offsets[codes[i]]`` (then ``offsets[codes[i]]`` += 1),
    ``so[j]``, ``yo[j]`` and ``wo[j]`` the row's score, label and weight (``w`` empty: none). ``offsets`` is this
    chunk's first place in each group (from the per-chunk counts of
    :func:`fastcal._coding._kernels.count_values`), so rows keep their input
    order within a group: the rows a stable counting sort by group gives."""
    weighted = w.shape[0] > 0
    for i in range(lo, hi):
        c = codes[i]
        j = offsets[c]
        offsets[c] = j + 1
        so[j] = s[i]
        yo[j] = y[i]
        if weighted:
            wo[j] = w[i]


@kernel
def count_positive(codes, weights, counts, lo, hi):
    """``counts[c]`` += the rows ``lo .. hi - 1`` of code ``c`` of positive weight (a buffer of
    :func:`fastcal._core.parallel.parallel_accumulate`: integer counts, the same sums on any number of threads)."""
    for i in range(lo, hi):
        counts[codes[i]] += np.int64(weights[i] > 0)


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
    """``(sw, swy, xf, xl, vals)``: the PAV stack of :func:`~fastcal._core.pav_kernels.push_block` (float64 sums,
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
    :func:`fastcal._core.validation.rescale_weights`, negated where the label is
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
