"""Numba kernels of temperature scaling: one fused pass for loss, gradient and curvature, and softmax.

Private: inputs are clean C-contiguous (n, k) logits (float32/float64), int64
labels in [0, k) and float64 weights (empty for unit weights).

Speed. A pass costs one exponential per logit. The rows of a chunk are
transposed into a small ``(k, CHUNK)`` scratch array, so that every loop runs
along rows with no reduction across SIMD lanes, and the exponential and
logarithm are the vectorisable :func:`exp_neg` and :func:`log_normal`. Those
(and their bit casts) are *copies* of the ones in :mod:`fastcal._platt_kernels`
(``tests/test_temperature.py`` checks that the sources are identical): Numba
decides whether cached machine code is stale from the kernel's own source file
alone (:mod:`fastcal._jit`), so a kernel must not inline a helper from another file.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import intrinsic, overload

from ._jit import kernel

# ---------------------------------------------------------------------------
# Vectorisable exp and log: copies from fastcal._platt_kernels (see above).
# ---------------------------------------------------------------------------


def _int64_bits_as_float64(bits):
    """Reinterpret the 64 bits of an int64 as a float64 (an LLVM bitcast when compiled)."""
    return np.array(bits, dtype=np.int64).view(np.float64)[()]


def _float64_bits_as_int64(x):
    """Reinterpret the 64 bits of a float64 as an int64 (an LLVM bitcast when compiled)."""
    return np.array(x, dtype=np.float64).view(np.int64)[()]


# The Python bodies above run with NUMBA_DISABLE_JIT=1; compiled code uses these bitcasts.
@intrinsic
def _bitcast_int64_float64(typingctx, bits):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.float64))

    return types.float64(types.int64), codegen


@intrinsic
def _bitcast_float64_int64(typingctx, x):
    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], context.get_value_type(types.int64))

    return types.int64(types.float64), codegen


@overload(_int64_bits_as_float64)
def _int64_bits_as_float64_jit(bits):
    return lambda bits: _bitcast_int64_float64(bits)


@overload(_float64_bits_as_int64)
def _float64_bits_as_int64_jit(x):
    return lambda x: _bitcast_float64_int64(x)


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # 32 significant bits: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_LN2 = 0.6931471805599453
_SQRT2_M1 = 0.41421356237309503


@kernel
def exp_neg(x):
    """exp(x) for x <= 0, within 1.1 ulp of libm; 0 below -745.2 (underflow).

    x = n*ln2 + r with |r| <= ln2/2 (Cody-Waite, ln2 split in two parts),
    exp(r) by its Taylor polynomial of degree 13 (truncation < 1e-17), and
    2**n applied as two exact powers of two built from their bit patterns (two
    factors so that the subnormal range works).
    """
    x = max(x, -746.0)
    n = np.floor(x * _LOG2E + 0.5)
    r = (x - n * _LN2_HI) - n * _LN2_LO
    p = 1.0 / 6227020800.0
    p = p * r + 1.0 / 479001600.0
    p = p * r + 1.0 / 39916800.0
    p = p * r + 1.0 / 3628800.0
    p = p * r + 1.0 / 362880.0
    p = p * r + 1.0 / 40320.0
    p = p * r + 1.0 / 5040.0
    p = p * r + 1.0 / 720.0
    p = p * r + 1.0 / 120.0
    p = p * r + 1.0 / 24.0
    p = p * r + 1.0 / 6.0
    p = p * r + 0.5
    p = p * r + 1.0
    p = p * r + 1.0
    k = np.int64(n)
    k1 = k >> 1
    k2 = k - k1
    return p * _int64_bits_as_float64((k1 + 1023) << 52) * _int64_bits_as_float64((k2 + 1023) << 52)


@kernel
def _log_series(num, den):
    """log((1 + s) / (1 - s)) = 2 atanh(s) for s = num / den, |s| <= 0.1716:
    11 odd terms of the series (truncation below 1e-18 relative)."""
    s = num / den
    s2 = s * s
    p = 1.0 / 23.0
    p = p * s2 + 1.0 / 21.0
    p = p * s2 + 1.0 / 19.0
    p = p * s2 + 1.0 / 17.0
    p = p * s2 + 1.0 / 15.0
    p = p * s2 + 1.0 / 13.0
    p = p * s2 + 1.0 / 11.0
    p = p * s2 + 1.0 / 9.0
    p = p * s2 + 1.0 / 7.0
    p = p * s2 + 1.0 / 5.0
    p = p * s2 + 1.0 / 3.0
    return 2.0 * s + 2.0 * s * s2 * p


_MANTISSA_MASK = 0x000FFFFFFFFFFFFF
_EXPONENT_ZERO = 0x3FF0000000000000


@kernel
def log_normal(u):
    """log(u) for a positive normal float64 ``u``, within 2 ulp of libm.

    u = m * 2**k with m in (sqrt(1/2), sqrt(2)] read from the bits of u (no
    libm frexp), log m by the atanh series, k*ln2 added in two parts.
    """
    bits = _float64_bits_as_int64(u)
    k = (bits >> 52) - 1023
    m = _int64_bits_as_float64((bits & _MANTISSA_MASK) | _EXPONENT_ZERO)  # in [1, 2)
    big = m > 1.4142135623730951
    m = m * 0.5 if big else m
    k = k + 1 if big else k
    kf = np.float64(k)
    return kf * _LN2_HI + (_log_series(m - 1.0, m + 1.0) + kf * _LN2_LO)


# ---------------------------------------------------------------------------
# Loss, gradient and curvature in beta.
# ---------------------------------------------------------------------------


#: Rows per chunk of the loss/gradient/curvature reduction. Chunk bounds depend
#: only on the number of rows, so the sums do not depend on the thread count.
CHUNK = 1 << 12


def n_chunks(n):
    """Number of :data:`CHUNK`-row chunks covering ``n`` rows (at least one)."""
    return max(1, -(-n // CHUNK))


@kernel(fastmath=True)
def chunk_terms(z, t, weights, start, beta, zt, scratch, out):
    """Weighted sums over the rows of ``z`` (a chunk starting at row ``start``) of the loss, d/dbeta, d2/dbeta2.

    With ``l`` a row's logits shifted by their maximum and ``p = softmax(beta l)``:
    loss = log sum exp(beta l) - beta l_y, gradient = E_p[l] - l_y,
    curvature = Var_p[l] (so the loss is convex in beta). ``zt`` (``(k, CHUNK)``)
    and ``scratch`` (``(4, CHUNK)``) are work space.
    """
    nb, k = z.shape
    m = scratch[0]
    s0 = scratch[1]
    s1 = scratch[2]
    s2 = scratch[3]
    for r in range(nb):
        for j in range(k):
            zt[j, r] = np.float64(z[r, j])
    for r in range(nb):
        m[r] = zt[0, r]
        s0[r] = 0.0
        s1[r] = 0.0
        s2[r] = 0.0
    for j in range(1, k):
        for r in range(nb):
            m[r] = max(m[r], zt[j, r])
    for j in range(k):
        for r in range(nb):
            d = zt[j, r] - m[r]
            e = exp_neg(beta * d)
            s0[r] += e
            s1[r] += e * d
            s2[r] += e * d * d
    weighted = weights.shape[0] > 0
    loss = 0.0
    grad = 0.0
    hess = 0.0
    for r in range(nb):
        w = weights[start + r] if weighted else 1.0
        mean = s1[r] / s0[r]
        var = max(s2[r] / s0[r] - mean * mean, 0.0)
        d_label = zt[t[r], r] - m[r]
        loss += w * (log_normal(s0[r]) - beta * d_label)
        grad += w * (mean - d_label)
        hess += w * var
    out[0] = loss
    out[1] = grad
    out[2] = hess


@kernel
def loss_grad_hess_chunks(logits, labels, weights, beta, out, lo, hi):
    """Sums of loss, gradient and curvature of chunks ``lo .. hi - 1`` into rows of ``out`` (``(n_chunks, 3)``)."""
    n, k = logits.shape
    zt = np.empty((k, CHUNK))
    scratch = np.empty((4, CHUNK))
    for c in range(lo, hi):
        start = c * CHUNK
        stop = min(start + CHUNK, n)
        chunk_terms(logits[start:stop], labels[start:stop], weights, start, beta, zt, scratch, out[c])


@kernel
def softmax_row(logits, i, beta, out):
    k = logits.shape[1]
    m = np.float64(logits[i, 0])
    for j in range(1, k):
        m = max(m, np.float64(logits[i, j]))
    s = 0.0
    for j in range(k):
        e = exp_neg(beta * (np.float64(logits[i, j]) - m))
        out[i, j] = e
        s += e
    for j in range(k):
        out[i, j] = out[i, j] / s


@kernel
def softmax(logits, beta, out, lo, hi):
    """``out[i] = softmax(beta * logits[i])`` for rows ``lo .. hi - 1``."""
    z, o = logits[lo:hi], out[lo:hi]  # indices from 0: no wraparound check
    for i in range(z.shape[0]):
        softmax_row(z, i, beta, o)
