"""Numba kernels of inductive Venn-Abers prediction: tie groups, the (p0, p1) tables, prediction.

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.venn_abers` give it, and checks nothing.

Notation (Vovk, Petej & Fedorova 2015). The calibration scores have ``k``
distinct values ``c[0] < ... < c[k-1]``; ``W[j]``, ``Y[j]`` (``j = 0 .. k``)
are the cumulative weight and weighted label sum of the first ``j`` of them,
so the cumulative sum diagram (CSD) is the points ``P[j] = (W[j], Y[j])``. The
test object (weight ``wt``) goes into gap ``i``: after ``c[i-1]``, before
``c[i]``. Its isotonic fitted value with label 1 is the slope of the greatest
convex minorant of the CSD with ``P[i+1:]`` moved by ``(wt, wt)``; with label
0, ``P[i:]`` moved by ``(wt, 0)``. Both are found by one sweep over the gaps
(Algorithms 1-4 of the paper, as the ``venn-abers`` package orders them),
where the only costly step, the tangent from a point to the lower convex hull
of the points on one side, is a binary search on that hull, kept for every
gap at once by a stack whose pushes are undone in reverse order.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel

# --------------------------------------------------------------------------
# Tie groups of the sorted calibration scores
# --------------------------------------------------------------------------


@kernel
def _head(a, i):
    return np.float64(a[i]) if i < a.shape[0] else np.inf


@kernel
def group_class_runs(neg, pos, c, cw, cy):
    """Distinct scores of 0/1 labels given as the sorted scores of each class; return their number ``k``.

    ``neg`` and ``pos`` are the ascending scores of label 0 and of label 1.
    On return ``c[:k]`` holds the distinct scores (exact equality), ``cw[:k]``
    their counts and ``cy[:k]`` their counts of label 1. The merge selects
    without branching on the labels, which random labels would mispredict.
    """
    i0 = 0
    i1 = 0
    k = -1
    cur = 0.0
    for _ in range(neg.shape[0] + pos.shape[0]):
        a = _head(neg, i0)
        b = _head(pos, i1)
        one = np.int64(b < a)
        v = b if one else a
        i0 += 1 - one
        i1 += one
        if k < 0 or v != cur:
            k += 1
            cur = v
            c[k] = v
            cw[k] = 0.0
            cy[k] = 0.0
        cw[k] += 1.0
        cy[k] += one
    return k + 1


@kernel
def group_sorted(x, y, w, c, cw, cy):
    """Like :func:`group_class_runs` for sorted scores ``x`` with labels ``y`` and weights ``w``."""
    k = -1
    cur = 0.0
    for j in range(x.shape[0]):
        v = np.float64(x[j])
        if k < 0 or v != cur:
            k += 1
            cur = v
            c[k] = x[j]
            cw[k] = 0.0
            cy[k] = 0.0
        cw[k] += np.float64(w[j])
        cy[k] += np.float64(w[j]) * np.float64(y[j])
    return k + 1


@kernel
def cumulate(cw, cy, starts, counts, W, Y):
    """The CSD ``W``, ``Y`` (length ``k + 1``, ``W[0] = Y[0] = 0``) of groups given as pieces in score order.

    Piece ``s`` is ``cw[starts[s]:starts[s] + counts[s]]`` (and the same of
    ``cy``). The sums run left to right over the pieces, as ``np.cumsum`` of
    the concatenated pieces would (the same additions in the same order), so
    the groups need not be packed first.
    """
    sw = 0.0
    sy = 0.0
    W[0] = 0.0
    Y[0] = 0.0
    j = 0
    for s in range(starts.shape[0]):
        a = starts[s]
        for i in range(a, a + counts[s]):
            sw += cw[i]
            sy += cy[i]
            j += 1
            W[j] = sw
            Y[j] = sy


# --------------------------------------------------------------------------
# The (p0, p1) tables
# --------------------------------------------------------------------------


@kernel
def _push(sx, sy, stack, top, px, py, j, rightward, undo, u):
    """Push point ``j`` at ``(px, py)`` on the lower hull held in ``sx[:top]``, ``sy[:top]``; return the new height.

    ``rightward``: the points arrive in increasing x (else decreasing). The
    hull keeps its points' coordinates (``stack`` their indices), so the
    searches read contiguous memory. The popped entries stay in the arrays;
    ``undo[u]`` records the old height and the index overwritten, from which
    :func:`_undo` restores the hull exactly.
    """
    while top >= 2:
        ax = sx[top - 1]
        ay = sy[top - 1]
        bx = sx[top - 2]
        by = sy[top - 2]
        # cross product of (a - b) and (p - b): keep a only if strictly below the chord b-p
        cross = (ax - bx) * (py - by) - (ay - by) * (px - bx)
        if (cross > 0) if rightward else (cross < 0):
            break
        top -= 1
    undo[u, 0] = top
    undo[u, 1] = stack[top]
    stack[top] = j
    sx[top] = px
    sy[top] = py
    return top + 1


@kernel
def _undo(hx, hy, sx, sy, stack, undo, u):
    """Undo push ``u`` (see :func:`_push`); ``hx``, ``hy`` are the points' coordinates by index. Returns the height."""
    top = undo[u, 0]
    j = undo[u, 1]
    stack[top] = j
    sx[top] = hx[j]
    sy[top] = hy[j]
    return top


@kernel
def _min_slope_from_left(sx, sy, top, px, py):
    """Least slope from ``(px, py)`` to a point of the hull ``[:top]`` (built leftward), which lies to its right."""
    lo = 0
    hi = top - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        a = top - 1 - mid
        b = a - 1
        # slope(p, b) < slope(p, a), multiplied out (both x differences are positive)
        if (sy[b] - py) * (sx[a] - px) < (sy[a] - py) * (sx[b] - px):
            lo = mid + 1
        else:
            hi = mid
    v = top - 1 - lo
    return (sy[v] - py) / (sx[v] - px)


@kernel
def _max_slope_from_right(sx, sy, top, qx, qy):
    """Greatest slope from a point of the hull ``[:top]`` (built rightward) to ``(qx, qy)``, right of it."""
    lo = 0
    hi = top - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        # slope(a, q) < slope(b, q) for a = mid, b = mid + 1, multiplied out (both x differences are positive)
        if (qy - sy[mid]) * (qx - sx[mid + 1]) < (qy - sy[mid + 1]) * (qx - sx[mid]):
            lo = mid + 1
        else:
            hi = mid
    return (qy - sy[lo]) / (qx - sx[lo])


@kernel
def tables(W, Y, wt, p0, p1):
    """Fill ``p0[i]`` and ``p1[i]`` (``i = 0 .. k``): the Venn-Abers probabilities of a test object in gap ``i``.

    ``W`` and ``Y`` are the CSD (``k + 1`` cumulative sums from 0), ``wt`` the
    test object's weight. ``p1[i]`` is the fitted value of the test object
    labelled 1, ``p0[i]`` labelled 0 (see the module docstring).

    Each sweep follows the corners of the minorant: the value stays the slope
    of the current corner's line until a CSD point falls below that line, and
    a new corner's slope is the tangent from it to the hull of the points on
    the other side (moved by the test object). O(k log k) in all.
    """
    k = W.shape[0] - 1
    stack = np.zeros(k + 1, dtype=np.int64)  # zeros: an undo may restore a never-used slot, read as index 0
    sx = np.empty(k + 1)
    sy = np.empty(k + 1)
    undo = np.empty((k + 1, 2), dtype=np.int64)

    # label 1: the points P[b] + (wt, wt), b > i, hull built leftward (b = k .. 1)
    bx = np.empty(k + 1)
    by = np.empty(k + 1)
    for b in range(k + 1):
        bx[b] = W[b] + wt
        by[b] = Y[b] + wt
    top = 0
    for b in range(k, 0, -1):
        top = _push(sx, sy, stack, top, bx[b], by[b], b, False, undo, b)
    g = _min_slope_from_left(sx, sy, top, W[0], Y[0])
    p1[0] = g
    corner = 0
    for i in range(1, k + 1):
        top = _undo(bx, by, sx, sy, stack, undo, i)  # the hull of b > i
        line = Y[corner] + (W[i] - W[corner]) * g
        if Y[i] < line:
            corner = i
            if top > 0:
                g = _min_slope_from_left(sx, sy, top, W[i], Y[i])
        p1[i] = g
    p1[k] = 1.0

    # label 0: the points P[a], a < i, hull built rightward (a = 0 .. k - 1); the test point at P[i] + (wt, 0)
    stack[:] = 0
    top = 0
    for a in range(k):
        top = _push(sx, sy, stack, top, W[a], Y[a], a, True, undo, a)
    qx_corner = W[k] + wt
    g = max(0.0, _max_slope_from_right(sx, sy, top, qx_corner, Y[k]))
    p0[k] = g
    corner = k
    for i in range(k - 1, -1, -1):
        top = _undo(W, Y, sx, sy, stack, undo, i)  # the hull of a < i
        qx = W[i] + wt
        line = Y[corner] + (qx - qx_corner) * g
        if Y[i] < line:
            corner = i
            qx_corner = qx
            g = max(0.0, _max_slope_from_right(sx, sy, top, qx, Y[i])) if top > 0 else 0.0
        p0[i] = g


# --------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------


@kernel
def _lower_bound(a, lo, n, t):
    """First ``j`` in ``lo .. lo + n`` with ``a[j, 0] >= t`` (sorted there), by a branch-free bisection."""
    if n == 0:
        return lo
    base = lo
    while n > 1:
        half = n >> 1
        base = base + half if a[base + half, 0] < t else base
        n -= half
    return base + (1 if a[base, 0] < t else 0)


@kernel
def records(c, p0, p1):
    """The prediction table: row ``j`` holds ``(c[j], p0[j], p1[j])`` (``c[k]`` = inf), one cache line's worth per lookup."""
    k = c.shape[0]
    rec = np.empty((k + 1, 3))
    for j in range(k + 1):
        rec[j, 0] = np.float64(c[j]) if j < k else np.inf
        rec[j, 1] = p0[j]
        rec[j, 2] = p1[j]
    return rec


@kernel
def predict(T, rec, top, stride, out0, out1, merged, lo, hi):
    """For ``T[lo:hi]``: ``out0 = p0[searchsorted(c, t, "right")]``, ``out1 = p1[searchsorted(c, t, "left")]``.

    ``rec`` is :func:`records`, ``top`` is ``rec[:k:stride, :1]``: a bisection
    of ``top`` narrows the range to ``stride`` scores, which are bisected
    next. The bisections of ``top`` run for 16 scores in lockstep, so that
    their memory reads overlap instead of waiting for each other; every
    score's result is the same as alone. ``merged[i]`` (if not empty) gets
    ``p1 / (1 - p0 + p1)``.
    """
    T, out0, out1 = T[lo:hi], out0[lo:hi], out1[lo:hi]  # indices from 0: no wraparound check
    has_merged = merged.shape[0] > 0
    if has_merged:
        merged = merged[lo:hi]
    n = T.shape[0]
    k = rec.shape[0] - 1
    m = top.shape[0]
    group = 16
    base = np.zeros(group, dtype=np.int64)
    tv = np.zeros(group)
    for start in range(0, n, group):
        size = min(group, n - start)
        for g in range(size):
            tv[g] = np.float64(T[start + g])
            base[g] = 0
        length = m
        while length > 1:
            half = length >> 1
            for g in range(size):
                b = base[g]
                base[g] = b + half if top[b + half, 0] < tv[g] else b
            length -= half
        for g in range(size):
            t = tv[g]
            i = base[g] + (1 if m > 0 and top[base[g], 0] < t else 0)
            # score (i - 1) * stride < t <= score i * stride
            last = min(i * stride, k)
            first = (i - 1) * stride + 1 if i > 0 else 0
            j = _lower_bound(rec, first, last - first, t)
            # the scores are strictly increasing, so the first score > t is j, or j + 1 when score j == t
            a = rec[j + 1, 1] if rec[j, 0] == t else rec[j, 1]
            b = rec[j, 2]
            out0[start + g] = a
            out1[start + g] = b
            if has_merged:
                merged[start + g] = b / (1.0 - a + b)
