"""Numba kernels of the grouped calibrators: the rows laid out by buckets of consecutive groups, in one counting
pass and one scatter, for the per-group fits that follow.

A row's *slot*: its group's bucket ``bucket_of[g]`` (``g = group_of[code]``; -1 leaves the row out), or twice it
plus the row's 0/1 label when ``by_label``; a row of weight zero is left out (``weights`` empty: unit weights).

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.grouped` give it, and checks nothing.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel


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

