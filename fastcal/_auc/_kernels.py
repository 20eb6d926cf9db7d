"""Numba kernels behind :mod:`fastcal._auc` (the ROC AUC of :mod:`fastcal.metrics`).

The wrapper validates; these kernels assume clean, contiguous input (finite
scores, labels with nonzero meaning positive, class codes in ``[0, k)``,
non-negative weights) and never check.

Determinism. :func:`class_counts` and :func:`scatter_by_class` split the rows
into ``nchunks`` contiguous chunks whose bounds depend only on ``n`` and
``nchunks`` (chosen by the wrapper from the problem size, never from the
thread count) and handle the chunks ``c`` in ``[lo, hi)``, so
:func:`fastcal._core.parallel.parallel_for` can run ranges of chunks on separate
threads with the same result.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel


@kernel
def _chunk_start(n, nchunks, c):
    return (c * n) // nchunks


# --------------------------------------------------------------------------
# unweighted: scores scattered by label and value range, sorted, then counted
# --------------------------------------------------------------------------
@kernel
def mann_whitney_twice(pos, neg):
    """Twice the Mann-Whitney U of sorted ``pos`` against sorted ``neg``, exactly, as int64.

    ``sum over x in pos of 2 * #(neg < x) + #(neg == x)``: every
    (positive, negative) pair ranked correctly counts 2, every tie 1.
    One merge-like sweep, O(len(pos) + len(neg)).
    """
    m = neg.shape[0]
    npos = pos.shape[0]
    total = 0
    i = 0
    j = 0
    while i < npos:
        x = pos[i]
        while j < m and neg[j] < x:
            j += 1
        k = j
        while k < m and neg[k] == x:
            k += 1
        g = i + 1
        while g < npos and pos[g] == x:
            g += 1
        total += (g - i) * (2 * j + (k - j))
        i = g
    return total


# --------------------------------------------------------------------------
# weighted: one sweep over the ascending order, tied groups at once
# --------------------------------------------------------------------------
@kernel
def weighted_auc_signed(xs, ps):
    """``(u, w_pos, w_neg)`` of ascending scores ``xs``, each row's weight and label carried in one float64 of
    ``ps``: the weight ``|p|``, positive where ``p < 0`` (:func:`fastcal._engine.sort.sort_pairs` with ``flip``).

    ``u`` is the weighted Mann-Whitney statistic
    ``sum_{i pos, j neg} w_i w_j ([x_i > x_j] + [x_i == x_j] / 2)``, so that
    AUC = u / (w_pos * w_neg); ties count half. Sequential reads only; a tie
    group's weights are added in input order (the sort is stable), so the
    sums are those of a sweep over a stable argsort, bit for bit. A zero
    weight (``-0.0`` for a positive) adds nothing to either class.
    """
    n = xs.shape[0]
    u = 0.0
    w_pos = 0.0
    w_neg = 0.0
    i = 0
    while i < n:
        v = xs[i]
        g_pos = 0.0
        g_neg = 0.0
        j = i
        while j < n and xs[j] == v:
            p = np.float64(ps[j])
            wi = abs(p)
            pos = np.float64(p < 0.0)
            g_pos += wi * pos  # branch-free: adding 0.0 leaves a sum unchanged, bit for bit
            g_neg += wi * (1.0 - pos)
            j += 1
        u += g_pos * (w_neg + 0.5 * g_neg)
        w_pos += g_pos
        w_neg += g_neg
        i = j
    return u, w_pos, w_neg


# --------------------------------------------------------------------------
# partial AUC: the ROC curve from the top, the two classes sorted apart
# --------------------------------------------------------------------------
@kernel
def _group_weight(values, weights, i, v):
    """The weight of the run of ``v`` ending at ``values[i]`` (ascending ``values``; ``weights`` None: a count)
    and the index just below the run."""
    g = 0.0
    while i >= 0 and values[i] == v:
        g += 1.0 if weights is None else np.float64(weights[i])
        i -= 1
    return g, i


@kernel
def partial_area(pos, w_pos, neg, w_neg, fp_limit):
    """Area under the unnormalised ROC curve up to ``fp_limit`` false-positive weight, from the highest score down.

    ``pos``, ``neg``: the scores of the positives and of the negatives, each
    sorted ascending; ``w_pos``, ``w_neg``: their weights, or None (unit
    weights). The curve joins the points (false-positive weight,
    true-positive weight) of every threshold; the positives ``g_pos`` and
    negatives ``g_neg`` of one score make one straight segment. Returns the
    area under it for abscissae in ``[0, fp_limit]`` (the segment that
    crosses ``fp_limit`` interpolated), reading only the scores above it.
    """
    area = 0.0
    tp = 0.0
    fp = 0.0
    i = pos.shape[0] - 1
    j = neg.shape[0] - 1
    while i >= 0 or j >= 0:
        if j < 0 or (i >= 0 and pos[i] > neg[j]):
            v = pos[i]
        else:
            v = neg[j]
        g_pos, i = _group_weight(pos, w_pos, i, v)
        g_neg, j = _group_weight(neg, w_neg, j, v)
        if fp + g_neg > fp_limit:
            dx = fp_limit - fp
            return area + dx * (tp + 0.5 * g_pos * dx / g_neg)
        area += g_neg * (tp + 0.5 * g_pos)
        fp += g_neg
        tp += g_pos
    return area


# --------------------------------------------------------------------------
# multiclass: the scores of every column grouped by true class, each group sorted
# --------------------------------------------------------------------------
@kernel
def _class_count_chunk(codes, start, stop, counts):
    for i in range(start, stop):
        counts[codes[i]] += 1


@kernel
def class_counts(codes, counts, lo, hi):
    """Per-chunk counts of each class code into ``counts[c]`` (zeros, ``(nchunks, k)``), chunks ``[lo, hi)``."""
    n = codes.shape[0]
    nchunks = counts.shape[0]
    for c in range(lo, hi):
        _class_count_chunk(codes, _chunk_start(n, nchunks, c), _chunk_start(n, nchunks, c + 1), counts[c])


@kernel
def _scatter_class_chunk(P, codes, start, stop, offsets, out):
    k = P.shape[1]
    for i in range(start, stop):
        c = codes[i]
        at = offsets[c]
        for j in range(k):
            out[j, at] = P[i, j]
        offsets[c] = at + 1


@kernel
def scatter_by_class(P, codes, offsets, out, lo, hi):
    """Copy the rows of chunks ``[lo, hi)`` of ``P`` (n, k) into ``out`` (k, n), grouped by class: ``out[j]`` is column ``j``.

    ``offsets[c, g]``: where chunk ``c`` writes its first row of class ``g``
    in every ``out[j]`` (exclusive prefix sums of :func:`class_counts`);
    advanced in place. Input order is kept within each class.
    """
    n = P.shape[0]
    nchunks = offsets.shape[0]
    for c in range(lo, hi):
        _scatter_class_chunk(P, codes, _chunk_start(n, nchunks, c), _chunk_start(n, nchunks, c + 1), offsets[c], out)


@kernel
def class_pair_counts(column, starts, sizes, a, u2):
    """``u2[b]``: twice the Mann-Whitney U of class ``a`` against class ``b`` on ``column``, for every ``b != a``.

    ``column`` holds one column of the scores grouped by class, each group
    sorted (group ``g`` at ``starts[g]``, ``sizes[g]`` long): the scores of
    class ``a`` are the positives, those of class ``b`` the negatives.
    """
    pos = column[starts[a] : starts[a] + sizes[a]]
    for b in range(sizes.shape[0]):
        if b != a:
            u2[b] = mann_whitney_twice(pos, column[starts[b] : starts[b] + sizes[b]])
