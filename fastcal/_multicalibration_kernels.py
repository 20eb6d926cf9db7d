r"""Numba kernels behind :mod:`fastcal.multicalibration`: per-segment cumulative differences, Kuiper's distribution.

The caller validates; these kernels assume clean, contiguous input (scores
sorted ascending without NaN, labels with nonzero = positive, non-negative
weights) and never check.

Segments. A row belongs to at most one segment per *combination* of segment
features (a combination of depth 0, with no feature, is the segment of all
rows). Combination ``c`` lists its features in ``feat[c, :]`` (``-1`` pads),
with radix multipliers ``mult[c, :]``; the row's key in that combination is
``base[c] + sum_d mult[c, d] * codes[row, feat[c, d]]`` and
``lookup[key]`` is its segment id, or ``-1`` (a value combination with too
few rows, or beyond the cap on segments). So one pass over the sorted rows
updates every segment the row is in: no mask per segment.

Ties. All rows of one score form one step of the cumulative sums: the
running sum of each segment a tie group touches is compared with the
segment's maximum and minimum only after the whole group, so the result does
not depend on the order of tied rows.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel

__all__ = ["KUIPER_SPLIT", "combo_counts", "first_rows", "kuiper_cdf", "kuiper_sf", "kuiper_sf_many", "segment_sums",
           "tied_range"]

#: Below this point the theta-function series gives the CDF, above it the alternating
#: series gives the survival function; both converge in a few terms there.
KUIPER_SPLIT = 2.0


@kernel
def segment_sums(p, y, w, codes, feat, mult, base, lookup, n_segments):
    """One pass over rows sorted by ``p``: per segment ``(count, W, V, lo, hi)``.

    ``count`` rows, total weight ``W = sum w``, ``V = sum w^2 p (1 - p)``, and
    the minimum ``lo <= 0`` and maximum ``hi >= 0`` of the running sum
    ``S_k = sum_{i <= k} w_i (y_i - p_i)`` taken after each tie group (with
    ``S_0 = 0``). ``w`` empty means unit weights. Everything in float64.
    """
    n = p.shape[0]
    n_combos = base.shape[0]
    depth = feat.shape[1]
    weighted = w.shape[0] > 0
    count = np.zeros(n_segments, dtype=np.int64)
    total = np.zeros(n_segments)
    var = np.zeros(n_segments)
    run = np.zeros(n_segments)
    lo = np.zeros(n_segments)
    hi = np.zeros(n_segments)
    touched = np.empty(n_segments, dtype=np.int64)
    mark = np.full(n_segments, -1, dtype=np.int64)
    i = 0
    while i < n:
        j = i
        n_touched = 0
        while j < n and p[j] == p[i]:
            row = j
            pj = np.float64(p[row])
            wj = np.float64(w[row]) if weighted else 1.0
            r = wj * ((1.0 if y[row] != 0 else 0.0) - pj)
            v = wj * wj * pj * (1.0 - pj)
            for c in range(n_combos):
                key = base[c]
                for d in range(depth):
                    f = feat[c, d]
                    if f < 0:
                        break
                    key += mult[c, d] * codes[row, f]
                s = lookup[key]
                if s < 0:
                    continue
                count[s] += 1
                total[s] += wj
                var[s] += v
                run[s] += r
                if mark[s] != i:
                    mark[s] = i
                    touched[n_touched] = s
                    n_touched += 1
            j += 1
        for t in range(n_touched):
            s = touched[t]
            if run[s] > hi[s]:
                hi[s] = run[s]
            elif run[s] < lo[s]:
                lo[s] = run[s]
        i = j
    return count, total, var, lo, hi


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
def combo_counts(codes, feat, mult, base, size):
    """Rows per key of every combination (keys as in :func:`segment_sums`, ``size`` keys in all), in one pass."""
    counts = np.zeros(size, dtype=np.int64)
    n_combos = base.shape[0]
    depth = feat.shape[1]
    for j in range(codes.shape[0]):
        for c in range(n_combos):
            key = base[c]
            for d in range(depth):
                f = feat[c, d]
                if f < 0:
                    break
                key += mult[c, d] * codes[j, f]
            counts[key] += 1
    return counts


@kernel
def first_rows(codes, order, k):
    """First position ``i`` along ``order`` of each code ``codes[order[i]]`` in ``0..k-1`` (``len(order)`` if absent)."""
    n = order.shape[0]
    first = np.full(k, n, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        first[codes[order[i]]] = i
    return first


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
