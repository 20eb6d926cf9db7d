"""Numba kernels of the range partitions (see :mod:`fastcal._engine.partition`): splitting rows by
score range, and following tie groups across a partition boundary."""

from __future__ import annotations

import numpy as np

from ..._core.jit import kernel

__all__ = ["buckets_linear", "buckets_search", "chain_exits", "near_min", "range_of",
           "split_scatter"]


@kernel
def _bucket_of(v, padded):
    """Number of boundaries <= ``v``; ``padded`` is the sorted boundaries padded
    with +inf to a power-of-two length (a branch-free binary search)."""
    pos = 0
    step = padded.shape[0] >> 1
    while step > 0:
        pos += step * np.int64(padded[pos + step - 1] <= v)  # no branch to mispredict
        step >>= 1
    return pos


@kernel
def buckets_search(x, padded, bucket):
    """Bucket of every row by binary search (many boundaries)."""
    for i in range(x.shape[0]):
        bucket[i] = _bucket_of(x[i], padded)


@kernel
def buckets_linear(x, bounds, bucket):
    """Bucket of every row as the number of boundaries <= it: one vectorised pass per
    boundary, faster than a search for a few boundaries (a search's loads depend on each other)."""
    for i in range(x.shape[0]):
        bucket[i] = 0
    for k in range(bounds.shape[0]):
        b = bounds[k]
        for i in range(x.shape[0]):
            bucket[i] += np.int32(x[i] >= b)


@kernel
def split_scatter(x, y, w, bucket, pos, xo, yo, wo):
    """Copy each row to the next free slot of its bucket (stable within a bucket)."""
    for i in range(x.shape[0]):
        b = bucket[i]
        k = pos[b]
        pos[b] = k + 1
        xo[k] = x[i]
        yo[k] = y[i]
        if w is not None:
            wo[k] = w[i]


@kernel
def chain_exits(v, eps, starts, exits):
    """Last tie-group start of the sorted scores ``v`` when the groups are chained from ``v[starts[c]]``.

    Tie groups are built as in the PAV kernels: a score starts a new group
    when it is at least ``eps`` above the current group's first score. For
    each start index (a first occurrence of its value), walk the chain of
    group starts to the end of ``v`` and store the last one in ``exits[c]``.
    Chains that reach a group start already visited by an earlier chain
    share its end, so walks stop there: chains from nearby starts merge after
    a few groups and the whole costs little more than one pass.
    """
    n = v.shape[0]
    mark = np.full(n, -1, dtype=np.int64)
    for c in range(starts.shape[0]):
        i = starts[c]
        if mark[i] >= 0:
            exits[c] = exits[mark[i]]
            continue
        mark[i] = c
        cur = np.float64(v[i])
        merged = -1
        for j in range(i + 1, n):
            vj = np.float64(v[j])
            if vj - cur >= eps:
                if mark[j] >= 0:
                    merged = mark[j]
                    break
                mark[j] = c
                cur = vj
        exits[c] = cur if merged < 0 else exits[merged]


@kernel
def range_of(x, w):
    """(rows, min, max) of the scores of positive weight (all rows when ``w`` is None)."""
    n = 0
    lo = np.inf
    hi = -np.inf
    for i in range(x.shape[0]):
        if w is not None and not w[i] > 0:
            continue
        v = np.float64(x[i])
        lo = min(lo, v)
        hi = max(hi, v)
        n += 1
    return n, lo, hi


@kernel
def near_min(x, w, lo, eps, out):
    """Copy the scores less than ``eps`` above ``lo`` to ``out``; return their count and the
    smallest score beyond them (inf if none). Rows of weight <= 0 are skipped when ``w`` is given."""
    k = 0
    far = np.inf
    for i in range(x.shape[0]):
        if w is not None and not w[i] > 0:
            continue
        v = np.float64(x[i])
        if v - lo < eps:
            out[k] = x[i]
            k += 1
        elif v < far:
            far = v
    return k, far
