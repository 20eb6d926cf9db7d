"""Numba kernels of a stable LSD radix argsort of floats.

Private: the wrapper (:mod:`fastcal._engine.sort`) hands them the float array viewed
as unsigned integers of its width (``bits``), and checks nothing.

A float's bits map to an unsigned key in the order of the values: a positive
float gets its sign bit set, a negative one has all its bits flipped. -0.0 is
mapped to the key of +0.0 first, so the two compare equal (a tie, as in
``np.argsort``). NaN never reaches these kernels.
"""

from __future__ import annotations

import numpy as np

from ..._core.jit import kernel
from ..._core.math_kernels import float64_bits_as_int64, range_of_score


@kernel
def _key(b, sign, zero):
    if b == sign:  # -0.0 sorts as +0.0
        b = zero
    return ~b if b & sign else b | sign


@kernel
def keys_histograms(bits, sign, keys, digit_bits, counts, lo, hi):
    """Order-preserving keys of ``bits[lo:hi]`` into ``keys[lo:hi]``; the counts of every digit of them.

    ``counts[d, v]`` (zeroed by the caller) counts the keys in the range whose
    digit ``d`` (bits ``d * digit_bits`` and up) is ``v``.
    """
    n_digits = counts.shape[0]
    mask = (1 << digit_bits) - 1
    zero = bits.dtype.type(0)
    for i in range(lo, hi):
        k = _key(bits[i], sign, zero)
        keys[i] = k
        kk = np.uint64(k)
        for d in range(n_digits):
            counts[d, np.int64((kk >> np.uint64(d * digit_bits)) & np.uint64(mask))] += 1


@kernel
def pairs_histograms(bits, sign, carried, flip, pairs, digit_bits, counts, lo, hi):
    """As :func:`keys_histograms`, writing rows ``pairs[i] = (key, carried[i])`` of uint64 (``carried`` as uint64).

    Where ``flip[i] != 0`` (``flip`` empty: nowhere) the value's top bit is
    flipped: a float's sign.
    """
    n_digits = counts.shape[0]
    mask = (1 << digit_bits) - 1
    zero = bits.dtype.type(0)
    flipping = flip.shape[0] > 0
    for i in range(lo, hi):
        k = _key(bits[i], sign, zero)
        pairs[i, 0] = k
        v = carried[i]
        if flipping:
            v ^= np.uint64(flip[i] != 0) << np.uint64(63)
        pairs[i, 1] = v
        kk = np.uint64(k)
        for d in range(n_digits):
            counts[d, np.int64((kk >> np.uint64(d * digit_bits)) & np.uint64(mask))] += 1


@kernel
def scatter_pairs(pairs, shift, digit_bits, offsets, pairs_out, lo, hi):
    """As :func:`scatter`, moving rows ``(key, value)`` of ``pairs``: one write stream per digit value, not two."""
    mask = np.uint64((1 << digit_bits) - 1)
    s = np.uint64(shift)
    for i in range(lo, hi):
        k = pairs[i, 0]
        v = np.int64((np.uint64(k) >> s) & mask)
        j = offsets[v]
        offsets[v] = j + 1
        pairs_out[j, 0] = k
        pairs_out[j, 1] = pairs[i, 1]


@kernel
def scatter(keys, index, shift, digit_bits, offsets, keys_out, index_out, lo, hi):
    """One stable counting-sort pass of rows ``lo .. hi - 1`` by the digit at bit ``shift``.

    Row ``i`` goes to ``offsets[v]`` (then incremented) where ``v`` is its
    digit; ``offsets`` are where this range's rows of each digit start in the
    output. An empty ``index`` stands for ``index[i] = i`` (the first pass).
    """
    mask = np.uint64((1 << digit_bits) - 1)
    s = np.uint64(shift)
    identity = index.shape[0] == 0
    for i in range(lo, hi):
        k = keys[i]
        v = np.int64((np.uint64(k) >> s) & mask)
        j = offsets[v]
        offsets[v] = j + 1
        keys_out[j] = k
        index_out[j] = i if identity else index[i]


@kernel
def digit_counts(keys, shift, digit_bits, counts, lo, hi):
    """``counts[v]`` (zeroed by the caller): the keys of ``keys[lo:hi]`` whose digit at bit ``shift`` is ``v``.

    A pass of its own over the keys a pass wrote (measured: counting in the
    scatter loop, by the output range each row lands in, doubled its time;
    this read costs a fifth of a pass).
    """
    mask = np.uint64((1 << digit_bits) - 1)
    s = np.uint64(shift)
    for i in range(lo, hi):
        counts[np.int64((np.uint64(keys[i]) >> s) & mask)] += 1


@kernel
def scatter_index(keys, index, shift, digit_bits, offsets, index_out, lo, hi):
    """The last pass of an argsort: as :func:`scatter`, writing only the index."""
    mask = np.uint64((1 << digit_bits) - 1)
    s = np.uint64(shift)
    identity = index.shape[0] == 0
    for i in range(lo, hi):
        v = np.int64((np.uint64(keys[i]) >> s) & mask)
        j = offsets[v]
        offsets[v] = j + 1
        index_out[j] = i if identity else index[i]


@kernel
def scatter_pairs_last(pairs, shift, digit_bits, offsets, sign, out, lo, hi):
    """The last pass over rows ``(key, value)``: as :func:`scatter_pairs`, each row's key written back as the bits of its float.

    A 32-bit key's float comes back in the low half of the first uint64 (its
    upper half is garbage).

    Rows, not two arrays: two write streams per digit value made this pass
    measure 4x slower than the others at 10-bit digits.
    """
    mask = np.uint64((1 << digit_bits) - 1)
    s = np.uint64(shift)
    for i in range(lo, hi):
        k = pairs[i, 0]
        v = np.int64((np.uint64(k) >> s) & mask)
        j = offsets[v]
        offsets[v] = j + 1
        out[j, 0] = k ^ sign if k & sign else ~k
        out[j, 1] = pairs[i, 1]


@kernel
def gather(x, y, w, order, xs, ys, ws, lo, hi):
    """``xs, ys, ws = x[order], y[order], w[order]`` for rows ``lo .. hi - 1`` (``w`` empty: none); -0.0 becomes +0.0.

    Independent random reads: run on ranges in several threads, the cores' memory requests overlap.
    """
    weighted = w.shape[0] > 0
    for i in range(lo, hi):
        r = order[i]
        xs[i] = x[r] + 0.0  # -0.0 + 0.0 == +0.0
        ys[i] = y[r]
        if weighted:
            ws[i] = w[r]


# --------------------------------------------------------------------------
# range partition: rows grouped by score range (and label) before per-range sorts
# --------------------------------------------------------------------------
@kernel
def range_counts(x, labels, x0, scale, cell_range, n_ranges, counts, lo, hi):
    """``counts[s]`` (zeroed by the caller): rows ``lo .. hi - 1`` of slot ``s``.

    A row's slot is its score range
    (:func:`~fastcal._core.math_kernels.range_of_score`), plus
    ``n_ranges`` when its label is non-zero (``labels`` empty: no labels,
    one class).
    """
    labelled = labels.shape[0] > 0
    for i in range(lo, hi):
        s = range_of_score(x[i], x0, scale, cell_range)
        if labelled:
            s += n_ranges * np.int64(labels[i] != 0)
        counts[s] += 1


@kernel
def range_scatter(x, labels, x0, scale, cell_range, n_ranges, offsets, out, lo, hi):
    """Copy rows ``lo .. hi - 1`` of ``x`` to ``out`` by slot (as :func:`range_counts`), in row order.

    ``offsets[s]`` is where this range's rows of slot ``s`` start (advanced as they are written).
    """
    labelled = labels.shape[0] > 0
    for i in range(lo, hi):
        v = x[i]
        s = range_of_score(v, x0, scale, cell_range)
        if labelled:
            s += n_ranges * np.int64(labels[i] != 0)
        j = offsets[s]
        offsets[s] = j + 1
        out[j] = v


@kernel
def range_scatter_rows(x, bits, sign, p, flip, factor, x0, scale, cell_range, offsets, rows, lo, hi):
    """Rows ``lo .. hi - 1`` written by score range (as :func:`range_scatter`, no labels) as radix rows ``(key, value)``.

    ``bits`` is ``x`` viewed as unsigned integers of its width, ``sign`` that
    width's top bit. Row ``i`` becomes ``(key of x[i], bits of p[i] * factor)``
    (uint64; ``factor`` an exact power of two), the value negated where
    ``flip[i] != 0`` (``flip`` empty: nowhere): a weight carrying its 0/1 label
    as its sign (see :func:`~fastcal._core.pav_kernels.pav_sorted`). The
    keys are those of :func:`keys_histograms`, so :func:`sort_rows` sorts
    each range without a pass of its own to make them.
    """
    flipping = flip.shape[0] > 0
    zero = bits.dtype.type(0)
    top = np.uint64(1) << np.uint64(63)
    for i in range(lo, hi):
        s = range_of_score(x[i], x0, scale, cell_range)
        j = offsets[s]
        offsets[s] = j + 1
        rows[j, 0] = np.uint64(_key(bits[i], sign, zero))
        v = np.uint64(float64_bits_as_int64(np.float64(p[i]) * factor))
        if flipping and flip[i] != 0:
            v ^= top
        rows[j, 1] = v


@kernel
def sort_keys(bits, spare, sign, max_digit_bits):
    """Sort in place the floats whose bits are ``bits`` (unsigned, of the floats' width), by value.

    :func:`sort_rows` without the carried values, a deliberate twin (one
    array of keys moved per pass instead of rows of two words: half the
    memory traffic, and no spare rows): the keys are made in place
    (:func:`_key`, ``sign`` the width's top bit), sorted by an LSD radix sort
    over the bits in which they differ (digits of at most ``max_digit_bits``,
    between ``bits`` and ``spare``, at least as long), and written back as
    float bits by the last pass. -0.0 comes out as +0.0 (one key for both),
    as from :func:`sort_rows`. Meant for one score range that fits in the
    cache, sorted by one thread.
    """
    n = bits.shape[0]
    if n == 0:
        return
    zero = bits.dtype.type(0)
    kmin = _key(bits[0], sign, zero)
    kmax = kmin
    for i in range(n):
        k = _key(bits[i], sign, zero)
        bits[i] = k
        kmin = min(kmin, k)
        kmax = max(kmax, k)
    b = 0
    diff = np.uint64(kmin ^ kmax)
    while diff:
        diff >>= np.uint64(1)
        b += 1
    passes = (b + max_digit_bits - 1) // max_digit_bits
    if passes == 0:  # one key: nothing to order
        for i in range(n):
            k = bits[i]
            bits[i] = k ^ sign if k & sign else ~k
        return
    digit_bits = (b + passes - 1) // passes
    buckets = 1 << digit_bits
    mask = np.uint64(buckets - 1)
    counts = np.zeros((passes, buckets), dtype=np.int64)
    for i in range(n):
        k = np.uint64(bits[i])
        for d in range(passes):
            counts[d, np.int64((k >> np.uint64(d * digit_bits)) & mask)] += 1
    src = bits
    dst = spare[:n]
    offsets = np.empty(buckets, dtype=np.int64)
    for d in range(passes):
        acc = 0
        for v in range(buckets):
            offsets[v] = acc
            acc += counts[d, v]
        s = np.uint64(d * digit_bits)
        last = d == passes - 1
        for i in range(n):
            k = src[i]
            v = np.int64((np.uint64(k) >> s) & mask)
            j = offsets[v]
            offsets[v] = j + 1
            if last:
                dst[j] = k ^ sign if k & sign else ~k
            else:
                dst[j] = k
        src, dst = dst, src
    if passes % 2:  # the keys ended in spare
        bits[:] = src


@kernel
def sort_rows(rows, spare, width, max_digit_bits):
    """Sort the radix rows ``(key, value)`` of ``rows`` by key, stably, in place; keys back to float bits.

    An LSD radix sort over the bits in which the keys differ: with ``b`` the
    bit length of (smallest key XOR largest key), ``ceil(b / max_digit_bits)``
    counting-sort passes by digits of equal width (at most
    ``max_digit_bits``), between ``rows`` and ``spare`` (at least as long),
    after one pass that counts every digit. The last pass writes each key as
    the bits of its float, in the low ``width`` bits (the upper half of a
    32-bit key's uint64 is garbage), as :func:`scatter_pairs_last` leaves
    them. Meant for a range of rows that fits in the cache, sorted by one
    thread (the range partition leaves few varying bits: 48-57 of float64
    scores at 10^7 rows in ranges of 2^17, 18-28 of float32).
    """
    n = rows.shape[0]
    sign = np.uint64(1) << np.uint64(width - 1)
    if n == 0:
        return
    kmin = rows[0, 0]
    kmax = kmin
    for i in range(n):
        k = rows[i, 0]
        kmin = min(kmin, k)
        kmax = max(kmax, k)
    b = 0
    diff = kmin ^ kmax
    while diff:
        diff >>= np.uint64(1)
        b += 1
    passes = (b + max_digit_bits - 1) // max_digit_bits
    if passes == 0:  # one key: nothing to order
        for i in range(n):
            k = rows[i, 0]
            rows[i, 0] = k ^ sign if k & sign else ~k
        return
    digit_bits = (b + passes - 1) // passes
    buckets = 1 << digit_bits
    mask = np.uint64(buckets - 1)
    counts = np.zeros((passes, buckets), dtype=np.int64)
    for i in range(n):
        k = rows[i, 0]
        for d in range(passes):
            counts[d, np.int64((k >> np.uint64(d * digit_bits)) & mask)] += 1
    src = rows
    dst = spare[:n]
    offsets = np.empty(buckets, dtype=np.int64)
    for d in range(passes):
        acc = 0
        for v in range(buckets):
            offsets[v] = acc
            acc += counts[d, v]
        s = np.uint64(d * digit_bits)
        if d < passes - 1:
            for i in range(n):
                k = src[i, 0]
                v = np.int64((k >> s) & mask)
                j = offsets[v]
                offsets[v] = j + 1
                dst[j, 0] = k
                dst[j, 1] = src[i, 1]
        else:
            for i in range(n):
                k = src[i, 0]
                v = np.int64((k >> s) & mask)
                j = offsets[v]
                offsets[v] = j + 1
                dst[j, 0] = k ^ sign if k & sign else ~k
                dst[j, 1] = src[i, 1]
        src, dst = dst, src
    if passes % 2:  # the rows ended in spare
        rows[:, :] = src
