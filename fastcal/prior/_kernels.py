"""Numba kernels for prior correction (see :mod:`fastcal.prior`).

The kernels assume clean input: C-contiguous float32/float64 arrays, scalars
already in the right dtype, weights already scaled so that none exceeds 1 and
none is zero. They never raise; instead each counts what is invalid (values
that are NaN or outside [0, 1], rows whose sum is not 1) in the same pass, so
that validation costs no extra pass over the data; the public wrapper raises
afterwards.

Each public kernel works on a range ``lo, hi`` of items (rows, groups of 4
rows, or chunks of ``EM_CHUNK`` rows) and is run on contiguous ranges by
:func:`fastcal._core.parallel.parallel_for`. The EM's reductions are fixed-chunk
reductions (:mod:`fastcal._engine.chunked`): each chunk of ``EM_CHUNK`` rows writes
its sums into its own row of the partial buffers (the last arguments before
``lo, hi``), which the caller merges in chunk order, so results are bitwise
identical whatever the number of threads.
"""

from __future__ import annotations

import math

from .._core.jit import kernel

__all__ = [
    "EM_CHUNK",
    "binary_down",
    "binary_copy",
    "binary_em",
    "binary_up",
    "multi_adjust",
    "multi_em",
]

#: Rows per partial sum in the EM reductions (fixed, so results do not depend
#: on the number of threads).
EM_CHUNK = 4096


# --------------------------------------------------------------------------
# binary: q = p / (p + c (1 - p)), c > 0, computed in the input's precision
#
# Two monotone evaluations, one for c > 1 (the odds of the positive class go
# down, as when undoing negative undersampling) and one for c < 1. Each is a
# chain of operations that are each monotone in p, and IEEE rounding is
# monotone, so the computed q never decreases when p increases: the
# correction cannot swap the order of two scores, even one ulp apart (scores
# that close may become equal). All the intermediate quantities are
# non-negative, so there is no cancellation: q is within a few ulp of the
# exact value (or within the smallest normal number when the exact value is
# that small). p = 0 gives 0 and p = 1 gives 1 exactly; no NaN for p in
# [0, 1] with 0 < c < inf (the wrapper clamps c); q is in [0, 1].
# --------------------------------------------------------------------------


@kernel
def _binary_down(x, cm1, one):
    # c >= 1: q = x / (1 + (c - 1)(1 - x)); the denominator decreases in x and is >= 1.
    return x / (one + cm1 * (one - x))


@kernel
def _binary_up(x, c, omc, one):
    # c < 1: q = 1 / (c / x + (1 - c)); c / x decreases in x (x = 0: inf, q = 0);
    # omc = one - c computed in the input's dtype, so that c + omc == 1 exactly and x = 1 gives 1.
    return one / (c / x + omc)


@kernel
def _outside_unit(x, zero, one):
    # True for NaN as well (every comparison with NaN is False).
    return not (x >= zero and x <= one)


@kernel
def binary_down(src, dst, cm1, zero, one, lo, hi):
    """dst[i] = src[i] / (1 + cm1 (1 - src[i])) (c = 1 + cm1 >= 1), i in [lo, hi); returns the number of invalid src[i].

    ``dst=None`` writes into ``src``: one array, so the loop vectorises without
    the runtime overlap check that sends an aliased ``dst is src`` to the scalar loop.
    """
    s = src[lo:hi]  # indices from 0: no wraparound check, the loop vectorises
    d = s if dst is None else dst[lo:hi]
    bad = 0
    for i in range(s.shape[0]):
        x = s[i]
        bad += _outside_unit(x, zero, one)
        d[i] = _binary_down(x, cm1, one)
    return bad


@kernel
def binary_up(src, dst, c, omc, zero, one, lo, hi):
    """dst[i] = 1 / (c / src[i] + omc) (c < 1, omc = 1 - c), i in [lo, hi); returns the number of invalid src[i].

    ``dst=None`` writes into ``src`` (see :func:`binary_down`)."""
    s = src[lo:hi]
    d = s if dst is None else dst[lo:hi]
    bad = 0
    for i in range(s.shape[0]):
        x = s[i]
        bad += _outside_unit(x, zero, one)
        d[i] = _binary_up(x, c, omc, one)
    return bad


@kernel
def binary_copy(src, dst, zero, one, lo, hi):
    """The identity (c = 1): dst[i] = src[i] exactly, i in [lo, hi); returns the number of invalid src[i].

    ``dst=None`` writes into ``src`` (see :func:`binary_down`)."""
    s = src[lo:hi]
    d = s if dst is None else dst[lo:hi]
    bad = 0
    for i in range(s.shape[0]):
        x = s[i]
        bad += _outside_unit(x, zero, one)
        d[i] = x
    return bad


# --------------------------------------------------------------------------
# multiclass: q[i, j] = w[j] p[i, j] / sum_l w[l] p[i, l]
# --------------------------------------------------------------------------


@kernel
def _multi_row(src, dst, i, w, tol):
    # One row: returns (row has a value outside [0, 1] or NaN, row sum is off).
    # Sums are accumulated in float64 (w is float64), the outputs rounded to
    # the dtype of dst. One division per row; the products are clipped at 1 so
    # that the rounding of 1/s can never push a value above 1. A NaN makes the
    # raw sum NaN, which is how it is detected.
    k = src.shape[1]
    lo = 1.0
    hi = 0.0
    raw = 0.0
    s = 0.0
    for j in range(k):
        x = src[i, j]
        lo = min(lo, x)
        hi = max(hi, x)
        raw += x
        s += w[j] * x
    bad_value = 0 if (lo >= 0.0 and hi <= 1.0 and raw == raw) else 1
    bad_sum = 0 if abs(raw - 1.0) <= tol else 1
    inv = 1.0 / s
    for j in range(k):
        dst[i, j] = min(w[j] * src[i, j] * inv, 1.0)
    return bad_value, bad_sum


@kernel
def _multi_rows4(src, dst, i, w, tol):
    # Rows i .. i+3 together: four independent dependency chains for the row
    # sums and the stores (about twice as fast as one row at a time for small
    # k). Returns (the group has a value outside [0, 1] or NaN, number of rows
    # whose sum is off).
    k = src.shape[1]
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    s3 = 0.0
    r0 = 0.0
    r1 = 0.0
    r2 = 0.0
    r3 = 0.0
    lo = 1.0
    hi = 0.0
    for j in range(k):
        wj = w[j]
        x0 = src[i, j]
        x1 = src[i + 1, j]
        x2 = src[i + 2, j]
        x3 = src[i + 3, j]
        lo = min(lo, min(min(x0, x1), min(x2, x3)))
        hi = max(hi, max(max(x0, x1), max(x2, x3)))
        r0 += x0
        r1 += x1
        r2 += x2
        r3 += x3
        s0 += wj * x0
        s1 += wj * x1
        s2 += wj * x2
        s3 += wj * x3
    rr = (r0 + r1) + (r2 + r3)
    bad_value = 0 if (lo >= 0.0 and hi <= 1.0 and rr == rr) else 1
    bad_sum = (
        (0 if abs(r0 - 1.0) <= tol else 1)
        + (0 if abs(r1 - 1.0) <= tol else 1)
        + (0 if abs(r2 - 1.0) <= tol else 1)
        + (0 if abs(r3 - 1.0) <= tol else 1)
    )
    v0 = 1.0 / s0
    v1 = 1.0 / s1
    v2 = 1.0 / s2
    v3 = 1.0 / s3
    for j in range(k):
        wj = w[j]
        dst[i, j] = min(wj * src[i, j] * v0, 1.0)
        dst[i + 1, j] = min(wj * src[i + 1, j] * v1, 1.0)
        dst[i + 2, j] = min(wj * src[i + 2, j] * v2, 1.0)
        dst[i + 3, j] = min(wj * src[i + 3, j] * v3, 1.0)
    return bad_value, bad_sum


@kernel
def multi_adjust(src, dst, w, tol, lo, hi):
    """Renormalised reweighting of the rows of ``src`` into ``dst`` (may be ``src``), by groups of 4 rows.

    Group ``g`` (of ``ceil(n / 4)``) is rows ``[4g, 4g + 4)``; this does the
    groups in [lo, hi). Returns (number of groups of rows holding a value
    outside [0, 1] or NaN, number of rows whose sum is not within ``tol`` of 1).
    """
    n = src.shape[0]
    bad_values = 0
    bad_rows = 0
    for g in range(lo, hi):
        i = 4 * g
        if i + 4 <= n:
            bv, br = _multi_rows4(src, dst, i, w, tol)
            bad_values += bv
            bad_rows += br
        else:
            for r in range(i, n):
                bv, br = _multi_row(src, dst, r, w, tol)
                bad_values += bv
                bad_rows += br
    return bad_values, bad_rows


# --------------------------------------------------------------------------
# EM (Saerens, Latinne & Decaestecker 2002): one fused pass per iteration
# computes the E-step posteriors under the current priors and their column
# sums (the M-step), without writing the posteriors anywhere.
# --------------------------------------------------------------------------


@kernel
def _multi_em_chunk(p, w, c, tol, check, want_ll, partial, ll):
    # Column sums of w_j p_ij / s_i over the chunk's rows, s_i = sum_j w_j p_ij,
    # accumulated as w_j * sum_i p_ij / s_i. ``check``: also count invalid
    # values and rows (the first iteration only; later passes read the same
    # data). Without checks, four rows are processed together: their row sums
    # and the updates of the accumulators form independent dependency chains,
    # which doubles the speed for small k. Unless ``want_ll`` is None (a
    # compile-time switch), ``ll[c]`` gets the chunk's log-likelihood sum_i log s_i.
    n, k = p.shape
    want = want_ll is not None
    lsum = 0.0
    start = c * EM_CHUNK
    stop = min(start + EM_CHUNK, n)
    acc = partial[c]
    for j in range(k):
        acc[j] = 0.0
    bad_values = 0
    bad_rows = 0
    i = start
    if check:
        while i < stop:
            raw = 0.0
            s = 0.0
            for j in range(k):
                x = p[i, j]
                if not (x >= 0.0 and x <= 1.0):
                    bad_values += 1
                raw += x
                s += w[j] * x
            if not abs(raw - 1.0) <= tol:
                bad_rows += 1
            inv = 1.0 / s
            if want:
                lsum += math.log(s)
            for j in range(k):
                acc[j] += p[i, j] * inv
            i += 1
    while i + 3 < stop:
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for j in range(k):
            wj = w[j]
            s0 += wj * p[i, j]
            s1 += wj * p[i + 1, j]
            s2 += wj * p[i + 2, j]
            s3 += wj * p[i + 3, j]
        v0 = 1.0 / s0
        v1 = 1.0 / s1
        v2 = 1.0 / s2
        v3 = 1.0 / s3
        if want:
            lsum += (math.log(s0) + math.log(s1)) + (math.log(s2) + math.log(s3))
        for j in range(k):
            acc[j] += (p[i, j] * v0 + p[i + 1, j] * v1) + (p[i + 2, j] * v2 + p[i + 3, j] * v3)
        i += 4
    while i < stop:
        s = 0.0
        for j in range(k):
            s += w[j] * p[i, j]
        inv = 1.0 / s
        if want:
            lsum += math.log(s)
        for j in range(k):
            acc[j] += p[i, j] * inv
        i += 1
    for j in range(k):
        acc[j] *= w[j]
    if want:
        ll[c] = lsum
    return bad_values, bad_rows


@kernel
def multi_em(p, w, tol, check, want_ll, partial, ll, lo, hi):
    """Column sums of the E-step posteriors into ``partial[c]`` (``(n_chunks, k)``), for the chunks ``c`` of rows in [lo, hi).

    Unless ``want_ll`` is None, ``ll[c]`` receives each chunk's log-likelihood ``sum_i log(sum_j w_j p_ij)``.

    Returns (bad values, bad rows), counted only if ``check``.
    """
    bad_values = 0
    bad_rows = 0
    for c in range(lo, hi):
        bv, br = _multi_em_chunk(p, w, c, tol, check, want_ll, partial, ll)
        bad_values += bv
        bad_rows += br
    return bad_values, bad_rows


# Not fastmath: LLVM reassociated these sums one way when compiling in the process and another in the object code
# the cache keeps (one ulp apart); tests/test_jit_cache.py checks that compiled and loaded kernels agree.
@kernel
def _binary_em_chunk(p, w0, w1, c, check, want_ll, partial, ll):
    n = p.shape[0]
    start = c * EM_CHUNK
    stop = min(start + EM_CHUNK, n)
    acc = 0.0
    bad = 0
    if check:
        for i in range(start, stop):
            x = p[i]
            if not (x >= 0.0 and x <= 1.0):
                bad += 1
    if want_ll is not None:
        lsum = 0.0
        for i in range(start, stop):
            x = p[i]
            t1 = w1 * x
            s = t1 + w0 * (1.0 - x)
            acc += t1 / s
            lsum += math.log(s)
        ll[c] = lsum
    else:
        for i in range(start, stop):
            x = p[i]
            t1 = w1 * x
            acc += t1 / (t1 + w0 * (1.0 - x))
    partial[c] = acc
    return bad


@kernel
def binary_em(p, w0, w1, check, want_ll, partial, ll, lo, hi):
    """Sums of the E-step P(y=1 | x) into ``partial[c]`` (``(n_chunks,)``), for the chunks ``c`` in [lo, hi); returns the number of invalid p if ``check``.

    Unless ``want_ll`` is None, ``ll[c]`` receives each chunk's log-likelihood ``sum_i log(w0 (1 - p_i) + w1 p_i)``.
    """
    bad = 0
    for c in range(lo, hi):
        bad += _binary_em_chunk(p, w0, w1, c, check, want_ll, partial, ll)
    return bad
