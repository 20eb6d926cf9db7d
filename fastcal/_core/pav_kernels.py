"""Pool adjacent violators, shared by the kernels that fit isotonic regressions.

The one copy of the PAV step, :func:`push_block`: :mod:`fastcal.isotonic._kernels`
(the isotonic fit, and through it Venn-Abers and the CORP decomposition of
:mod:`fastcal.isotonic._pav`), :mod:`fastcal.grouped._kernels` (one fit per
group) and :mod:`fastcal.decomposition._kernels` (the resampled fits of the
CORP reliability bands) push their groups with it. The PAV of sorted rows
that the isotonic and grouped fits share is here too: tie pooling
(:func:`push_group`), the fits of sorted scores (:func:`pav_sorted`) and of
two sorted classes (:func:`pav_binary`), the pooling of two stacks
(:func:`push_blocks`) and scikit-learn's knots (:func:`thresholds`). Like
:mod:`fastcal._core.math_kernels`, a helper module that kernels may import:
:mod:`fastcal._core.jit` adds its text to their cache keys.
"""

from __future__ import annotations

import numpy as np

from .jit import kernel


@kernel
def push_block(sw, swy, xf, xl, top, w, wy, first, last):
    """Push a block (weight ``w``, weighted sum ``wy``, scores ``first .. last``) on the PAV stack.

    The stack holds blocks of pooled groups: total weight ``sw``, weighted
    sum ``swy``, first and last score ``xf``/``xl``. While the block below has
    a mean at least the new one's (compared as ``swy[t]·w >= wy·sw[t]``, which
    weights > 0 make equivalent to comparing the means, and which is exact for
    counts), the two are pooled. Returns the new height. This is the classic
    stack form of pool adjacent violators: every group is pushed once and
    popped at most once, so a pass is O(n).
    """
    while top > 0 and swy[top - 1] * w >= wy * sw[top - 1]:
        top -= 1
        w += sw[top]
        wy += swy[top]
        first = xf[top]
    sw[top] = w
    swy[top] = wy
    xf[top] = first
    xl[top] = last
    return top + 1


# --------------------------------------------------------------------------
# The PAV of sorted rows: tie pooling, the fit, the knots (the isotonic fit and the grouped fits)
# --------------------------------------------------------------------------


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
