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

from ._jit import kernel

# --------------------------------------------------------------------------
# Tie groups of the sorted calibration scores
# --------------------------------------------------------------------------


@kernel
def _head(a, i):
    return np.float64(a[i]) if i < a.shape[0] else np.inf


@kernel
def group_class_runs(big_a, big_b, small, big_label, c, cw, cy):
    """Distinct scores of 0/1 labels given as sorted runs per class; return their number ``k``.

    ``big_a`` and ``big_b`` are sorted runs of the scores of label
    ``big_label``, ``small`` the sorted scores of the other label. On return
    ``c[:k]`` holds the distinct scores (exact equality), ``cw[:k]`` their
    counts and ``cy[:k]`` their counts of label 1.
    """
    n = big_a.shape[0] + big_b.shape[0] + small.shape[0]
    small_label = 1.0 - big_label
    ia = 0
    ib = 0
    ic = 0
    k = -1
    cur = 0.0
    for j in range(n):
        a = _head(big_a, ia)
        b = _head(big_b, ib)
        s = _head(small, ic)
        from_a = a <= b
        big = a if from_a else b
        is_small = s < big
        v = s if is_small else big
        ia += np.int64(from_a and not is_small)
        ib += np.int64(not from_a and not is_small)
        ic += np.int64(is_small)
        if k < 0 or v != cur:
            k += 1
            cur = v
            c[k] = v
            cw[k] = 0.0
            cy[k] = 0.0
        cw[k] += 1.0
        cy[k] += small_label if is_small else big_label
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


# --------------------------------------------------------------------------
# The (p0, p1) tables
# --------------------------------------------------------------------------


@kernel
def _push(hx, hy, stack, top, px, py, j, rightward, undo, u):
    """Push point ``j`` (at ``px, py``) on the lower hull ``stack[:top]``; return the new height.

    ``rightward``: the points arrive in increasing x (else decreasing). The
    popped entries stay in the array; ``undo[u]`` records the old height and the
    entry overwritten, so :func:`_pop` restores the hull exactly.
    """
    while top >= 2:
        ax = hx[stack[top - 1]]
        ay = hy[stack[top - 1]]
        bx = hx[stack[top - 2]]
        by = hy[stack[top - 2]]
        # cross product of (a - b) and (p - b): keep a only if strictly below the chord b-p
        cross = (ax - bx) * (py - by) - (ay - by) * (px - bx)
        if (cross > 0) if rightward else (cross < 0):
            break
        top -= 1
    undo[u, 0] = top
    undo[u, 1] = stack[top]
    undo[u, 2] = 0
    stack[top] = j
    return top + 1


@kernel
def _min_slope_from_left(hx, hy, stack, top, px, py):
    """Least slope from ``(px, py)`` to a point of the hull ``stack[:top]`` (built leftward), which lies to its right."""
    lo = 0
    hi = top - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        a = stack[top - 1 - mid]
        b = stack[top - 2 - mid]
        # slope(p, b) < slope(p, a), multiplied out (both x differences are positive)
        if (hy[b] - py) * (hx[a] - px) < (hy[a] - py) * (hx[b] - px):
            lo = mid + 1
        else:
            hi = mid
    v = stack[top - 1 - lo]
    return (hy[v] - py) / (hx[v] - px)


@kernel
def _max_slope_from_right(hx, hy, stack, top, qx, qy):
    """Greatest slope from a point of the hull ``stack[:top]`` (built rightward) to ``(qx, qy)``, right of it."""
    lo = 0
    hi = top - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        a = stack[mid]
        b = stack[mid + 1]
        # slope(a, q) < slope(b, q), multiplied out (both x differences are positive)
        if (qy - hy[a]) * (qx - hx[b]) < (qy - hy[b]) * (qx - hx[a]):
            lo = mid + 1
        else:
            hi = mid
    v = stack[lo]
    return (qy - hy[v]) / (qx - hx[v])


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
    stack = np.empty(k + 1, dtype=np.int64)
    undo = np.empty((k + 1, 3), dtype=np.int64)

    # label 1: the points P[b] + (wt, wt), b > i, hull built leftward (b = k .. 1)
    bx = np.empty(k + 1)
    by = np.empty(k + 1)
    for b in range(k + 1):
        bx[b] = W[b] + wt
        by[b] = Y[b] + wt
    top = 0
    for b in range(k, 0, -1):
        top = _push(bx, by, stack, top, bx[b], by[b], b, False, undo, b)
    g = _min_slope_from_left(bx, by, stack, top, W[0], Y[0])
    p1[0] = g
    corner = 0
    for i in range(1, k + 1):
        stack[undo[i, 0]] = undo[i, 1]  # undo the push of b = i: the hull of b > i
        top = undo[i, 0]
        line = Y[corner] + (W[i] - W[corner]) * g
        if Y[i] < line:
            corner = i
            if top > 0:
                g = _min_slope_from_left(bx, by, stack, top, W[i], Y[i])
        p1[i] = g
    p1[k] = 1.0

    # label 0: the points P[a], a < i, hull built rightward (a = 0 .. k - 1); the test point at P[i] + (wt, 0)
    top = 0
    for a in range(k):
        top = _push(W, Y, stack, top, W[a], Y[a], a, True, undo, a)
    qx_corner = W[k] + wt
    g = max(0.0, _max_slope_from_right(W, Y, stack, top, qx_corner, Y[k]))
    p0[k] = g
    corner = k
    for i in range(k - 1, -1, -1):
        stack[undo[i, 0]] = undo[i, 1]  # undo the push of a = i: the hull of a < i
        top = undo[i, 0]
        qx = W[i] + wt
        line = Y[corner] + (qx - qx_corner) * g
        if Y[i] < line:
            corner = i
            qx_corner = qx
            g = max(0.0, _max_slope_from_right(W, Y, stack, top, qx, Y[i])) if top > 0 else 0.0
        p0[i] = g


# --------------------------------------------------------------------------
# Prediction
# --------------------------------------------------------------------------


@kernel
def _lower_bound(a, lo, n, t):
    """First ``j`` in ``lo .. lo + n`` with ``a[j] >= t`` (``a[lo:lo + n]`` sorted), by a branch-free bisection."""
    if n == 0:
        return lo
    base = lo
    while n > 1:
        half = n >> 1
        base = base + half if np.float64(a[base + half]) < t else base
        n -= half
    return base + (1 if np.float64(a[base]) < t else 0)


@kernel
def _search_left(c, top, stride, t):
    """Index of ``t`` in the sorted ``c``: the first ``c[j] >= t``.

    ``top`` is ``c[::stride]``: a bisection of it (small enough to stay in
    cache) narrows the range to ``stride`` scores, then ``c`` is bisected there.
    """
    i = _lower_bound(top, 0, top.shape[0], t)
    # c[(i - 1) * stride] < t <= c[i * stride]
    hi = min(i * stride, c.shape[0])
    lo = (i - 1) * stride + 1 if i > 0 else 0
    return _lower_bound(c, lo, hi - lo, t)


@kernel
def predict(T, c, top, stride, p0, p1, out0, out1, merged, lo, hi):
    """For ``T[lo:hi]``: ``out0 = p0[searchsorted(c, t, "right")]``, ``out1 = p1[searchsorted(c, t, "left")]``.

    ``top`` is ``c[::stride]`` (see :func:`_search_left`); ``merged[i]`` (if
    not empty) gets ``p1 / (1 - p0 + p1)``.
    """
    T, out0, out1 = T[lo:hi], out0[lo:hi], out1[lo:hi]  # indices from 0: no wraparound check
    has_merged = merged.shape[0] > 0
    if has_merged:
        merged = merged[lo:hi]
    for i in range(T.shape[0]):
        t = np.float64(T[i])
        j = _search_left(c, top, stride, t)
        # c is strictly increasing, so the first c > t is j, or j + 1 when c[j] == t
        a = p0[j + 1 if j < c.shape[0] and np.float64(c[j]) == t else j]
        b = p1[j]
        out0[i] = a
        out1[i] = b
        if has_merged:
            merged[i] = b / (1.0 - a + b)
