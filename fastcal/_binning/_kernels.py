"""Numba kernels behind :mod:`fastcal._binning`: per-bin sums, bucket histograms and gathers.

The callers (:mod:`fastcal.metrics`, the drivers over rows) validate and
normalise; these kernels assume clean, contiguous input (probabilities in
[0, 1], finite, labels 0/1, non-negative weights) and never check.

Determinism. Every reduction splits the rows into ``nchunks`` contiguous
chunks whose bounds depend only on ``n`` and ``nchunks`` (chosen by the
wrapper from the problem size, never from the thread count). Each chunk
accumulates into its own slice of a partial buffer allocated by the wrapper,
and a kernel call handles the chunks ``c`` in ``[lo, hi)``, so
:func:`fastcal._core.parallel.parallel_for` can run ranges of chunks on separate
threads. The partials are merged serially in chunk order, so the results are
bit-identical on any number of threads.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel

# Columns of the per-bin statistics table returned by ``bin_stats``.
# Sums are weighted (weight 1 without sample_weight) and in float64.
W = 0  # total weight (the count, without weights)
SY = 1  # sum of w * y                      (positives)
SP = 2  # sum of w * p                      (for the mean prediction)
SD = 3  # sum of w * (p - ref)              (ref: a reference point inside the bin)
SDD = 4  # sum of w * (p - ref)^2
SDY = 5  # sum of w * (p - ref) * y
SBRIER = 6  # sum of w * (p - y)^2
SLOG = 7  # sum of w * (-log q), q the clipped probability of the observed class
NSTAT = 8



# --------------------------------------------------------------------------
# chunking
# --------------------------------------------------------------------------
@kernel
def _chunk_start(n, nchunks, c):
    return (c * n) // nchunks


# --------------------------------------------------------------------------
# binning: bin index, per-bin sums, one pass
# --------------------------------------------------------------------------
def bin_lookup_table(edges, grid=None):
    """``(lut, grid)`` for :func:`bin_of`: the bin of each point ``c / grid``, ``c = 0 .. grid + 1``.

    ``grid`` is a power of two (about 64 cells per bin, between 2**12 and
    2**16, so the table stays in cache); ``lut`` is int32 (int64 for more
    than 2**31 bins).
    """
    nb = edges.shape[0] - 1
    if grid is None:
        grid = 1 << min(16, max(12, int(64 * nb - 1).bit_length()))
    points = np.arange(grid + 2, dtype=np.float64) / grid
    lut = np.searchsorted(edges[1:-1], points, side="left")
    return lut.astype(np.int32 if nb < 2**31 else np.int64), grid


@kernel
def bin_of(x, edges, lut, grid):
    """Index of the bin of ``x``: the number of inner edges ``edges[1:-1]`` strictly below ``x``.

    This is ``np.searchsorted(edges[1:-1], x, side="left")``, i.e. bins are
    ``[e0, e1], (e1, e2], ..., (e_{K-1}, e_K]`` as in scikit-learn's
    ``calibration_curve``, found without a full binary search: ``grid`` is a
    power of two, so ``c = floor(x * grid)`` is exact and
    ``c / grid <= x < (c + 1) / grid``; ``lut[c]`` is the bin of ``c / grid``
    (a lower bound of the answer) and ``lut[c + 1]`` an upper bound. Those
    are almost always equal; otherwise a binary search between them decides.
    """
    # unsigned indices: no negative-index wraparound code in the hot loop
    c = np.uint64(x * grid)
    lo = lut[c]
    hi = lut[c + np.uint64(1)]
    while lo < hi:
        mid = (lo + hi) >> 1
        if edges[mid + 1] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@kernel
def _bin_chunk(p, y, w, edges, lut, grid, ref, moments, brier, logloss, one, clip_lo, clip_hi, start, stop, acc):
    for i in range(start, stop):
        x = p[i]
        k = bin_of(x, edges, lut, grid)
        if w is None:
            wi = 1.0
        else:
            wi = np.float64(w[i])
        pos = y[i] != 0
        yf = 1.0 if pos else 0.0
        xf = np.float64(x)
        acc[k, W] += wi
        acc[k, SY] += wi * yf
        acc[k, SP] += wi * xf
        if moments:
            d = xf - ref[k]
            wd = wi * d
            acc[k, SD] += wd
            acc[k, SDD] += wd * d
            acc[k, SDY] += wd * yf
        if brier:
            e = xf - yf
            acc[k, SBRIER] += wi * e * e
        if logloss:
            # scikit-learn's clipping, in the dtype of p: q = clip(p or 1 - p, eps, 1 - eps)
            q = x if pos else one - x
            if q < clip_lo:
                q = clip_lo
            elif q > clip_hi:
                q = clip_hi
            acc[k, SLOG] -= wi * np.log(np.float64(q))


@kernel
def merge_partials(part):
    """Sum of ``part`` over its first axis, in order."""
    out = np.zeros(part.shape[1:])
    for c in range(part.shape[0]):
        for k in range(part.shape[1]):
            for j in range(part.shape[2]):
                out[k, j] += part[c, k, j]
    return out


@kernel
def bin_stats(p, y, w, edges, lut, grid, ref, moments, brier, logloss, one, clip_lo, clip_hi, part, lo, hi):
    """Per-bin weighted sums (columns ``W, SY, SP, SD, SDD, SDY, SBRIER, SLOG``) of chunks ``[lo, hi)``, in one pass.

    ``part``: zeros of shape ``(nchunks, nb, NSTAT)``; chunk ``c`` adds its
    sums into ``part[c]`` (merge them with :func:`merge_partials`).

    ``p``: probabilities in [0, 1]; ``y``: labels (nonzero = positive); ``w``:
    weights or None; ``edges``: ``nb + 1`` non-decreasing float64 bin edges;
    ``lut``, ``grid``: the lookup table of :func:`bin_lookup_table`; ``ref``:
    float64 reference point of each bin (moments are taken about it, which
    keeps the within-bin variance free of cancellation);
    ``moments``/``brier``/``logloss``: which optional columns to fill (the
    others stay 0); ``one``, ``clip_lo``, ``clip_hi``: 1, eps and 1 - eps in
    the dtype of ``p`` for the log loss.
    """
    n = p.shape[0]
    nchunks = part.shape[0]
    for c in range(lo, hi):
        _bin_chunk(p, y, w, edges, lut, grid, ref, moments, brier, logloss, one, clip_lo, clip_hi,
                   _chunk_start(n, nchunks, c), _chunk_start(n, nchunks, c + 1), part[c])


# --------------------------------------------------------------------------
# selection of order statistics without a sort: bucket histogram + gather
# --------------------------------------------------------------------------
@kernel
def _bucket(x, xmin, scale, nbuckets):
    """Bucket of ``x``: floor((x - xmin) * scale) clipped to [0, nbuckets - 1]; non-decreasing in x."""
    b = int((np.float64(x) - xmin) * scale)
    if b > nbuckets - 1:
        b = nbuckets - 1
    elif b < 0:
        b = 0
    return b


@kernel
def bucket_counts(x, xmin, scale, hist, lo, hi):
    """Add the bucket counts of rows ``[lo, hi)`` of ``x`` into ``hist`` (``(nbuckets,)``, int64)."""
    nbuckets = hist.shape[0]
    for i in range(lo, hi):
        hist[_bucket(x[i], xmin, scale, nbuckets)] += 1


@kernel
def _gather_until_full(x, xmin, scale, slot, i, hi, values, slots, m):
    """Copy marked values of rows ``i .. hi - 1`` into ``values[m:]`` until the rows or the room run out; the next row
    and the new ``m``."""
    nbuckets = slot.shape[0]
    cap = values.shape[0]
    while i < hi and m < cap:
        s = slot[_bucket(x[i], xmin, scale, nbuckets)]
        if s >= 0:
            values[m] = x[i]
            slots[m] = s
            m += 1
        i += 1
    return i, m


@kernel
def gather_marked(x, xmin, scale, slot, expected, lo, hi):
    """The values of rows ``[lo, hi)`` of ``x`` in the marked buckets (``slot[b] >= 0``), in input order, and their slots.

    ``expected`` is a first guess of how many there are; the output grows
    (doubling) past it. Returns ``(values, slots)``, both of the same length.
    """
    cap = max(16, min(hi - lo, expected))
    values = np.empty(cap, dtype=x.dtype)
    slots = np.empty(cap, dtype=np.int64)
    i, m = _gather_until_full(x, xmin, scale, slot, lo, hi, values, slots, 0)
    while i < hi:
        cap = min(hi - lo, 2 * cap)
        grown = np.empty(cap, dtype=x.dtype)
        grown[:m] = values[:m]
        grown_slots = np.empty(cap, dtype=np.int64)
        grown_slots[:m] = slots[:m]
        values = grown
        slots = grown_slots
        i, m = _gather_until_full(x, xmin, scale, slot, i, hi, values, slots, m)
    return values[:m], slots[:m]


@kernel
def group_by_slot(values, slots, sizes, out):
    """Counting sort of ``values`` by ``slots`` into ``out``, input order kept in each slot; ``sizes`` (zeros) gets the counts."""
    for i in range(slots.shape[0]):
        sizes[slots[i]] += 1
    pos = np.empty(sizes.shape[0], dtype=np.int64)
    at = 0
    for s in range(sizes.shape[0]):
        pos[s] = at
        at += sizes[s]
    for i in range(slots.shape[0]):
        s = slots[i]
        out[pos[s]] = values[i]
        pos[s] += 1
