"""Numba kernels of the grouped calibrators: the rows laid out by buckets of consecutive groups, in one counting
pass and one scatter, for the per-group fits that follow.

A row's *slot*: its group's bucket ``bucket_of[g]`` (``g = group_of[code]``; -1 leaves the row out), or twice it
plus the row's 0/1 label when ``by_label``; a row of weight zero is left out (``weights`` empty: unit weights).

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.grouped._fits` give it, and checks nothing.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel


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
    :func:`fastcal._parallel.parallel_accumulate`: integer counts, the same sums on any number of threads)."""
    for i in range(lo, hi):
        counts[codes[i]] += np.int64(weights[i] > 0)
