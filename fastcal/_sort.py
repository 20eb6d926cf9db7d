"""A stable argsort of floats: a parallel LSD radix sort of (key, index) pairs.

:func:`argsort` returns what ``np.argsort(x, kind="stable")`` returns (ties,
-0.0 and +0.0 included, keep their input order), about 5-10x faster on large
arrays: NumPy's stable argsort is a comparison merge sort (timsort for floats).
:func:`sort_pairs` sorts (key, value) pairs the same way, the value moving
with its key through every pass, so that no gather follows.

The sort runs one counting pass per digit of the keys (8 bits at a time, 10
for 64-bit keys moved with a value as one row;
passes whose digit is the same for every key are skipped). Each pass cuts the
rows into one contiguous range per thread: the counts of each range's digits
give each (digit, range) pair its place in the output, and each range then
scatters its rows there in order; each range's counts of the next digit are
then read from the keys written. A stable sort has exactly one answer,
so the result is the same at any thread count.
"""

from __future__ import annotations

import numpy as np

from . import _sort_kernels as _k
from . import _parallel
from ._parallel import get_num_threads, parallel_for, run, split

__all__ = ["argsort", "sort_pairs"]

#: Bits per digit of 32-bit keys: 256 buckets per pass keep every pass's write targets in the L1 cache
#: (11-bit digits save passes but measured slower: 2048 scattered write streams).
DIGIT_BITS = 8

#: Bits per digit of 64-bit keys moved as (key, value) rows: 7 passes instead of 8. A pass of 10-bit
#: digits measured as fast as one of 8-bit digits (21 ms against 20 ms for 10^7 rows, one thread), one
#: of 11 bits 2.3x slower; with keys and indices in two arrays (argsort), 10-bit digits measured 1.5x slower.
WIDE_DIGIT_BITS = 10

#: Below this many rows NumPy's stable argsort is as fast (no key arrays to build).
RADIX_MIN_SIZE = 1 << 12

_UNSIGNED = {4: np.uint32, 8: np.uint64}


def argsort(x):
    """``np.argsort(x, kind="stable")`` for a 1-d float32/float64 array without NaN.

    Indices are int32 below 2^31 rows, else int64.
    """
    x = np.ascontiguousarray(x)
    n = x.shape[0]
    if n < RADIX_MIN_SIZE:
        return np.argsort(x, kind="stable")
    out = np.empty(n, dtype=_index_type(n))

    def last(keys, index, shift, digit_bits, offsets, ranges, free):
        run([(_k.scatter_index, (keys, index, shift, digit_bits, offsets[p], out, lo, hi))
             for p, (lo, hi) in enumerate(ranges)])

    _radix(x, last)
    return out


def sort_with(x, y, w):
    """``x``, ``y`` and ``w`` reordered by ``argsort(x)``, new arrays (``w`` empty: none, returned empty).

    -0.0 in ``x`` comes back as +0.0. The reordering is one parallel gather
    after the sort (measured: 1.4x faster than writing the three arrays from
    the sort's last pass, whose scattered writes and random reads compete).
    """
    x = np.ascontiguousarray(x)
    n = x.shape[0]
    order = argsort(x)
    xs = np.empty_like(x)
    ys = np.empty_like(y)
    ws = np.empty_like(w)
    parallel_for(_k.gather, n, x, y, w, order, xs, ys, ws)
    return xs, ys, ws


def sort_pairs(x, p, flip=None):
    """``x`` sorted as by ``argsort(x)`` and ``p`` reordered alike: ``(xs, ps)``.

    ``p`` is an array of the length of ``x``; with 8-byte items (float64 in
    fastcal's uses: a value carried with each score) the passes carry ``p``
    itself instead of a row index, as the second half of uint64 rows
    ``(key, value)``, so no pass reads at random (measured at 10^7 rows: the
    gather after an argsort costs as much as the argsort), and ``xs`` and
    ``ps`` are strided views of the columns of one new array of rows. Other
    item sizes, and big-endian machines, are argsorted and gathered. -0.0 in
    ``x`` comes back as +0.0. With ``flip`` (an array as long as ``x``, of
    floats ``p``), the value of row ``i`` is ``-p[i]`` where ``flip[i] != 0``
    (the radix passes flip the sign bit as they make the rows), so that one
    float64 can carry a weight and a 0/1 label (measured: building that array
    first took 13% of a weighted float32 isotonic fit).
    """
    x = np.ascontiguousarray(x)
    p = np.ascontiguousarray(p)
    n = x.shape[0]
    if n < RADIX_MIN_SIZE or p.dtype.itemsize != 8 or not np.little_endian:
        if flip is not None:
            p = np.where(np.asarray(flip) != 0, -p, p)
        order = argsort(x)
        return x[order] + x.dtype.type(0.0), p[order]  # -0.0 + 0.0 == +0.0
    flip = np.empty(0, dtype=np.uint8) if flip is None else np.ascontiguousarray(flip)
    sign = _UNSIGNED[x.dtype.itemsize](1 << (8 * x.dtype.itemsize - 1))
    result = []

    def last(rows, carried, shift, digit_bits, offsets, ranges, free):
        out = np.empty_like(rows) if free is None else free  # the buffer the passes no longer use
        run([(_k.scatter_pairs_last, (rows, shift, digit_bits, offsets[r], sign, out, lo, hi))
             for r, (lo, hi) in enumerate(ranges)])
        # A float32's bits are the first 4 bytes of the row (little-endian).
        result.extend([out.view(x.dtype)[:, 0], out.view(p.dtype)[:, 1]])

    _radix(x, last, p, flip)
    return tuple(result)


def _index_type(n):
    return np.int32 if n < 2**31 else np.int64


def _radix(x, last, carry=None, flip=None):
    """Every pass of the radix sort of ``x`` but the last, which ``last(keys, index, shift, digit_bits, offsets, ranges, free)`` runs.

    ``index`` is empty if the last pass is also the first (the identity);
    ``offsets[p]`` are range ``p``'s output starts per digit value; ``free``
    is a buffer like ``keys`` that the passes no longer use (None if there
    was a single pass). With ``carry`` (8-byte items, as many as ``x``, not
    modified; top bit flipped where ``flip[i] != 0``, see :func:`sort_pairs`),
    the passes move its values with the keys instead of the row index: ``keys`` are rows ``(key, value)`` of uint64 and ``index`` is
    unused (measured: 1.2x faster per pass than two arrays, whose two write
    streams per digit value compete for the cache, and 2.8x faster in the
    last pass of float32 keys, which writes the floats and the values).
    """
    n = x.shape[0]
    utype = _UNSIGNED[x.dtype.itemsize]
    width = 8 * x.dtype.itemsize
    bits = x.view(utype)
    sign = utype(1 << (width - 1))
    rows = carry is not None  # rows of two uint64: (key, value)
    digit_bits = WIDE_DIGIT_BITS if rows and width == 64 else DIGIT_BITS
    n_digits = -(-width // digit_bits)
    min_size = _parallel.PARALLEL_MIN_SIZE  # read at each call: tests lower it
    parts = 1 if n < min_size else max(1, min(get_num_threads(), n // (min_size // 2)))
    bounds = split(n, parts)
    ranges = [(bounds[p], bounds[p + 1]) for p in range(parts)]

    counts = np.zeros((parts, n_digits, 1 << digit_bits), dtype=np.int64)
    if rows:
        keys = np.empty((n, 2), dtype=np.uint64)
        run([(_k.pairs_histograms, (bits, sign, carry.view(np.uint64), flip, keys, digit_bits, counts[p], lo, hi))
             for p, (lo, hi) in enumerate(ranges)])
    else:
        keys = np.empty(n, dtype=utype)
        run([(_k.keys_histograms, (bits, sign, keys, digit_bits, counts[p], lo, hi))
             for p, (lo, hi) in enumerate(ranges)])
    total = counts.sum(axis=0)
    # A digit shared by every key orders nothing; one pass at least writes the output.
    active = [d for d in range(n_digits) if total[d].max() < n] or [0]

    index = np.empty(0, dtype=_index_type(n))  # empty: the identity, before the first pass
    if len(active) > 1:
        keys_out = np.empty_like(keys)
        if not rows:
            index_out = np.empty(n, dtype=index.dtype)
            spare = np.empty(n, dtype=index.dtype) if len(active) > 2 else None
    part_counts = np.ascontiguousarray(counts[:, active[0], :])
    for t, d in enumerate(active):
        shift = d * digit_bits
        # Rows of digit v from range p start after every row of a smaller digit,
        # and after the rows of digit v of the ranges before p.
        flat = part_counts.T.ravel()
        offsets = (np.cumsum(flat) - flat).reshape(1 << digit_bits, parts).T.copy()
        if t == len(active) - 1:
            last(keys, index, shift, digit_bits, offsets, ranges, keys_out if len(active) > 1 else None)
            return
        if rows:
            run([(_k.scatter_pairs, (keys, shift, digit_bits, offsets[p], keys_out, lo, hi))
                 for p, (lo, hi) in enumerate(ranges)])
        else:
            run([(_k.scatter, (keys, index, shift, digit_bits, offsets[p], keys_out, index_out, lo, hi))
                 for p, (lo, hi) in enumerate(ranges)])
            index, index_out = index_out, (spare if t == 0 else index)
        keys, keys_out = keys_out, keys
        # The next pass's counts per range: the last range's are those of all keys (known from the
        # start) less the other ranges'.
        next_digit = active[t + 1]
        part_counts = np.zeros((parts, 1 << digit_bits), dtype=np.int64)
        column = keys[:, 0] if rows else keys
        run([(_k.digit_counts, (column, next_digit * digit_bits, digit_bits, part_counts[p], lo, hi))
             for p, (lo, hi) in enumerate(ranges[:-1])])
        part_counts[-1] = total[next_digit] - part_counts[:-1].sum(axis=0)
