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

The *range partition* sorts by score range first: :func:`range_map` maps
scores to ranges (a non-decreasing function of the score, so every score of
a range is below every score of the next), one parallel pass counts the rows
per range (and label), a second scatters them, and each range is then sorted
on whichever thread takes it. :func:`sort_by_label` gives the scores of 0/1
labels as :class:`ByLabel` (each class's scores ascending, no argsort): the
one sort that the AUC and the PAV fit of one call share.
:func:`range_sorted_pairs` is :func:`sort_pairs` made by ranges. The number
of ranges is the caller's (a function of the size alone), so the results do
not depend on the thread count.
"""

from __future__ import annotations

import queue
from typing import NamedTuple

import numpy as np

from . import _kernels as _k
from ..._core import parallel as _parallel
from ..._core.parallel import get_num_threads, parallel_for, run, split

__all__ = ["ByLabel", "SortedPairs", "argsort", "range_map", "range_sorted_pairs", "sort_by_label", "sort_pairs"]

#: Bits per digit of 32-bit keys: 256 buckets per pass keep every pass's write targets in the L1 cache
#: (11-bit digits save passes but measured slower: 2048 scattered write streams).
DIGIT_BITS = 8

#: Bits per digit of 64-bit keys moved as (key, value) rows: 7 passes instead of 8. A pass of 10-bit
#: digits measured as fast as one of 8-bit digits (21 ms against 20 ms for 10^7 rows, one thread), one
#: of 11 bits 2.3x slower; with keys and indices in two arrays (argsort), 10-bit digits measured 1.5x slower.
WIDE_DIGIT_BITS = 10

#: Most bits per digit of the in-cache sort of one score range's rows (:func:`range_sorted_pairs`), by key width.
#: Measured at 10^7 rows in ranges of 2^17, one thread, fixed digits: float32 keys 8 bits 70 ms, 10 bits 64, 11
#: bits 57, 12 bits 57, 13 bits 61; float64 keys 10 bits 109 ms, 11 bits 107, 12 bits 107, 13 bits 101 (but 85
#: against 82.5 ms at 2 threads).
ROW_DIGIT_BITS = {32: 12, 64: 13}

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


# ---------------------------------------------------------------------------
# range partition
# ---------------------------------------------------------------------------

#: Cells per range of :func:`range_map`: the ranges are balanced to a 64th of a range.
CELLS_PER_RANGE = 64


def range_map(X, n_ranges):
    """A non-decreasing map from scores to at most ``n_ranges`` ranges: ``(x0, scale, cell_range)``.

    A score ``v`` falls in the cell ``(v - x0) * scale`` (clipped to the
    cells) of equal width, between the 1st and 99th percentiles of a strided
    sample of ``64 * n_ranges`` scores, and in the range ``cell_range`` of
    that cell (:func:`fastcal._core.math_kernels.range_of_score`); consecutive
    cells are grouped into ranges of about equal counts of the sample. Scores
    packed into a few cells make fewer, larger ranges.
    """
    one = (0.0, 0.0, np.zeros(1, dtype=np.int64))
    if n_ranges <= 1 or X.shape[0] == 0:
        return one
    step = max(1, X.shape[0] // (64 * n_ranges))
    sample = np.sort(X[::step]).astype(np.float64)
    m = sample.shape[0]
    lo, hi = float(sample[m // 100]), float(sample[m - 1 - m // 100])
    if not hi > lo:
        lo, hi = float(sample[0]), float(sample[-1])
    n_cells = CELLS_PER_RANGE * n_ranges
    scale = n_cells / (hi - lo) if hi > lo else 0.0
    if not (0.0 < scale < np.inf):
        return one
    cells = np.minimum(np.maximum((sample - lo) * scale, 0.0), n_cells - 1).astype(np.int64)
    below = np.cumsum(np.bincount(cells, minlength=n_cells)) - np.bincount(cells, minlength=n_cells)
    cell_range = (below * n_ranges) // m  # the range of a cell: the share of the sample below it
    _, cell_range = np.unique(cell_range, return_inverse=True)  # no empty ranges in between
    return lo, scale, np.ascontiguousarray(cell_range, dtype=np.int64)


class ByLabel:
    """The scores of 0/1 labels grouped by (label, score range), each group sorted (:func:`sort_by_label`).

    ``buf[starts[s]:starts[s + 1]]`` holds the scores of slot ``s``, ascending:
    range ``s`` of label 0 for ``s < ranges``, range ``s - ranges`` of label
    1 after. Every score of a range is below every score of the next range,
    so :attr:`neg` (``buf[:n_neg]``) and :attr:`pos` (the rest) are the
    scores of each class in ascending order.
    """

    __slots__ = ("buf", "starts", "ranges")

    def __init__(self, buf, starts, ranges):
        self.buf, self.starts, self.ranges = buf, starts, ranges

    @property
    def n_neg(self):
        """Rows of label 0."""
        return int(self.starts[self.ranges])

    @property
    def neg(self):
        """The scores of label 0, ascending."""
        return self.buf[:self.n_neg]

    @property
    def pos(self):
        """The scores of label 1 (non-zero), ascending."""
        return self.buf[self.n_neg:]

    def slot(self, s):
        """The scores of slot ``s`` (ascending)."""
        return self.buf[self.starts[s]:self.starts[s + 1]]


def sort_by_label(X, labels, n_ranges):
    """The scores ``X`` (contiguous float32/float64, not modified) of 0/1 ``labels`` sorted per class: :class:`ByLabel`.

    Range partition into about ``n_ranges`` score ranges (:func:`range_map`),
    rows counted and scattered by row-chunks (as many as the ranges, in
    parallel; the chunks' counts per slot give each (chunk, slot) its place,
    so the layout does not depend on the thread count), then each range's two
    classes sorted by value in the cache (:func:`~fastcal._engine.sort._kernels.sort_keys`, a radix sort: -0.0 comes
    out as +0.0, as from :func:`range_sorted_pairs`) on whichever thread takes the range, with one spare
    range per working thread (measured at 10^7 float64 rows, 2 threads: the whole call 0.34 s with NumPy's
    sort per range, the first version, against 0.09 s).
    """
    n = X.shape[0]
    x0, scale, cell_range = range_map(X, n_ranges)
    ranges = int(cell_range[-1]) + 1
    chunks = split(n, n_ranges)
    counts = np.zeros((n_ranges, 2 * ranges), dtype=np.int64)
    run([(_k.range_counts, (X, labels, x0, scale, cell_range, ranges, counts[c], chunks[c], chunks[c + 1]))
         for c in range(n_ranges)])
    starts = np.zeros(2 * ranges + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(counts, axis=0) - counts
    buf = np.empty(n, dtype=X.dtype)
    run([(_k.range_scatter, (X, labels, x0, scale, cell_range, ranges, offsets[c], buf, chunks[c], chunks[c + 1]))
         for c in range(n_ranges)])
    bits = buf.view(_UNSIGNED[buf.dtype.itemsize])
    sign = bits.dtype.type(1 << (8 * buf.dtype.itemsize - 1))
    digit_bits = ROW_DIGIT_BITS[8 * buf.dtype.itemsize]
    _sort_in_ranges([[(int(starts[s]), int(starts[s + 1])) for s in (r, ranges + r)] for r in range(ranges)],
                    lambda lo, hi, spare: _k.sort_keys(bits[lo:hi], spare, sign, digit_bits), bits[:0])
    return ByLabel(buf, starts, ranges)


def _sort_in_ranges(tasks, sort, empty):
    """``sort(lo, hi, spare)`` of every range ``(lo, hi)`` of ``tasks`` (lists of ranges), one task a call of
    :func:`~fastcal._core.parallel.run`'s, each with a spare array of at least ``hi - lo`` rows shaped as ``empty``
    (its rows of zero length): one spare per working thread, reused, since ``run`` runs that many tasks at once."""
    spares = queue.SimpleQueue()

    def task(ranges):
        try:
            spare = spares.get_nowait()
        except queue.Empty:
            spare = empty
        for lo, hi in ranges:
            if spare.shape[0] < hi - lo:
                spare = np.empty((hi - lo, *empty.shape[1:]), dtype=empty.dtype)
            sort(lo, hi, spare)
        spares.put(spare)

    run([(task, (ranges,)) for ranges in tasks])


class SortedPairs(NamedTuple):
    """Scores sorted ascending, ``xs``, and the float64 carried with each, ``ps`` (:func:`range_sorted_pairs`).

    With weights signed by 0/1 labels (``flip`` = the labels), the sort that the
    weighted isotonic fit and the weighted AUC both make; one statistic of a
    call can pass it to another.
    """

    xs: np.ndarray
    ps: np.ndarray


def range_sorted_pairs(X, p, flip, n_ranges, exponent=0):
    """:func:`sort_pairs` ``(X, ldexp(p, -exponent), flip)`` made by about ``n_ranges`` score ranges: the same
    ``(xs, ps)``, bit for bit.

    One parallel pass counts the rows per (row-chunk, score range)
    (:func:`range_map`), a second writes them by range, in row order within a
    range, as the radix sort's rows ``(key, value)``
    (:func:`~fastcal._engine.sort._kernels.range_scatter_rows`: the value scaled by
    the exact power of two, and signed by ``flip``, as it is written), and
    each range is then radix-sorted in place by whichever thread takes it
    (:func:`~fastcal._engine.sort._kernels.sort_rows`; stable, so the rows end in the
    order of a stable sort of the whole). ``flip`` may be empty (no flips).
    ``xs`` and ``ps`` are strided views of the columns of that one array of
    rows. Extra memory: that array (two float64 arrays' worth) and one spare
    range per working thread (measured at 10^7 rows, against a first version
    that scattered scores and values to two arrays and sorted each range with
    :func:`sort_pairs`: 0.89x the time at one thread, float64 scores, 0.85x
    float32; 2.5 input arrays of memory).
    """
    n = X.shape[0]
    x0, scale, cell_range = range_map(X, n_ranges)
    ranges = int(cell_range[-1]) + 1
    chunks = split(n, n_ranges)
    counts = np.zeros((n_ranges, ranges), dtype=np.int64)
    no_labels = np.empty(0, dtype=np.uint8)
    run([(_k.range_counts, (X, no_labels, x0, scale, cell_range, ranges, counts[c], chunks[c], chunks[c + 1]))
         for c in range(n_ranges)])
    starts = np.zeros(ranges + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(counts, axis=0) - counts
    utype = _UNSIGNED[X.dtype.itemsize]
    width = 8 * X.dtype.itemsize
    exact = -1022 <= -exponent <= 1023  # 2^-e is a normal double: scaling by it rounds as ldexp does
    factor = 2.0 ** -exponent if exact else 1.0
    rows = np.empty((n, 2), dtype=np.uint64)
    run([(_k.range_scatter_rows, (X, X.view(utype), utype(1 << (width - 1)), p, flip, factor, x0, scale,
                                  cell_range, offsets[c], rows, chunks[c], chunks[c + 1]))
         for c in range(n_ranges)])
    digit_bits = ROW_DIGIT_BITS[width]
    _sort_in_ranges([[(int(starts[r]), int(starts[r + 1]))] for r in range(ranges)],
                    lambda lo, hi, spare: _k.sort_rows(rows[lo:hi], spare, width, digit_bits), rows[:0])
    xs, ps = rows.view(X.dtype)[:, 0], rows.view(np.float64)[:, 1]
    if not exact:
        np.ldexp(ps, -exponent, out=ps)
    return SortedPairs(xs, ps)
