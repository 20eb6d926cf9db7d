"""Vectorisable exp and log, order keys and the score-range map, shared by the kernel modules: the one copy.

Private, like every kernel module; the kernels of :mod:`fastcal.platt._kernels`,
:mod:`fastcal.beta._kernels` and :mod:`fastcal.temperature._kernels` call
the exp and log, those of :mod:`fastcal._engine.sort._kernels` and
:mod:`fastcal.multicalibration._kernels` the score-range map
(:func:`range_of_score`), and LLVM inlines them into their loops.

Why they exist. Numba compiles ``np.exp``/``math.log`` to calls of the scalar
libm functions, which stop a loop from vectorising; on this kind of machine
(no SVML) that costs 3-5x in a pass bound by one exponential per element. So
:func:`exp_neg`, :func:`log1p_unit` and :func:`log_normal` are written out
(Cody-Waite range reduction and a degree-13 Taylor polynomial; an atanh
series) in plain arithmetic that LLVM vectorises; each is within 2 ulp of libm
over its domain (``tests/test_math_kernels.py``). They are compiled *without*
fast-math so that their evaluation order is kept (only the callers'
reduction loops opt in to reassociation), but with contraction
(``@kernel(contract=True)``): each Horner step ``p * r + c`` is one fused
multiply-add, one rounding instead of two and half the instructions (a
temperature pass ran 1.48x faster with it). The Cody-Waite reduction stays
exact: ``n * _LN2_HI`` is exact whether fused or not.

Caching. A caller's cached machine code contains these functions inlined.
:mod:`fastcal._core.jit` keys the cache of every kernel on this file too (the
kernel's module imports it), so an edit here invalidates the callers' caches;
Numba alone would look at the caller's own file only.
"""

from __future__ import annotations

import numpy as np
from numba.core import types
from numba.extending import intrinsic, overload

from .jit import kernel

__all__ = ["exp_neg", "float64_bits_as_int64", "int64_bits_as_float64", "key_to_float", "log1p_unit", "log_normal",
           "order_key", "range_of_score"]


def int64_bits_as_float64(bits):
    """Reinterpret the 64 bits of an int64 as a float64 (an LLVM bitcast when compiled)."""
    return np.array(bits, dtype=np.int64).view(np.float64)[()]


def float64_bits_as_int64(x):
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


@overload(int64_bits_as_float64)
def _int64_bits_as_float64_jit(bits):
    return lambda bits: _bitcast_int64_float64(bits)


@overload(float64_bits_as_int64)
def _float64_bits_as_int64_jit(x):
    return lambda x: _bitcast_float64_int64(x)


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # 32 significant bits: n * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_LN2 = 0.6931471805599453
_SQRT2_M1 = 0.41421356237309503


@kernel(contract=True)
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
    return p * int64_bits_as_float64((k1 + 1023) << 52) * int64_bits_as_float64((k2 + 1023) << 52)


@kernel(contract=True)
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


@kernel(contract=True)
def log1p_unit(e):
    """log(1 + e) for 0 <= e <= 1, within 2 ulp of libm.

    log(u) = 2 atanh((u - 1) / (u + 1)) with u = 1 + e, or with u = (1 + e) / 2
    plus log 2 when e > sqrt(2) - 1, so that the atanh argument stays within
    +-0.172 (and e - 1 is exact there).
    """
    big = e > _SQRT2_M1
    r = _log_series((e - 1.0) if big else e, (e + 3.0) if big else (e + 2.0))
    return r + _LN2 if big else r


_MANTISSA_MASK = 0x000FFFFFFFFFFFFF
_EXPONENT_ZERO = 0x3FF0000000000000


@kernel(contract=True)
def log_normal(u):
    """log(u) for a positive normal float64 ``u``, within 2 ulp of libm.

    u = m * 2**k with m in (sqrt(1/2), sqrt(2)] read from the bits of u (no
    libm frexp), log m by the atanh series, k*ln2 added in two parts.
    """
    bits = float64_bits_as_int64(u)
    k = (bits >> 52) - 1023
    m = int64_bits_as_float64((bits & _MANTISSA_MASK) | _EXPONENT_ZERO)  # in [1, 2)
    big = m > 1.4142135623730951
    m = m * 0.5 if big else m
    k = k + 1 if big else k
    kf = np.float64(k)
    return kf * _LN2_HI + (_log_series(m - 1.0, m + 1.0) + kf * _LN2_LO)


# ---------------------------------------------------------------------------
# Order keys: min and max reductions that vectorise.
# ---------------------------------------------------------------------------

_ABS_MASK = 0x7FFFFFFFFFFFFFFF


@kernel
def order_key(x):
    """An int64 whose order is the order of the (non-NaN) float64 ``x``.

    The bits of x as an int64, with the magnitude bits flipped for negative
    numbers (-0.0 gets key -1, +0.0 key 0). Integer min/max reductions
    vectorise where floating-point ones (which must respect NaN) do not.
    """
    k = float64_bits_as_int64(x)
    return k ^ ((k >> 63) & _ABS_MASK)


def key_to_float(key):
    """Inverse of :func:`order_key` (in Python): a float for one key, a float64 array for an array of keys."""
    keys = np.asarray(key, dtype=np.int64)
    floats = (keys ^ ((keys >> 63) & np.int64(_ABS_MASK))).view(np.float64)
    return float(floats) if floats.ndim == 0 else floats


# ---------------------------------------------------------------------------
# Score ranges: the map of a range partition (:func:`fastcal._engine.sort.range_map`).
# ---------------------------------------------------------------------------


@kernel
def range_of_score(v, x0, scale, cell_range):
    """The score range of ``v``: ``cell_range`` of its cell ``(v - x0) * scale`` (clipped to the cells).

    The map of :func:`fastcal._engine.sort.range_map`. The cell is a non-decreasing
    function of ``v`` and so is ``cell_range``: every score of a range is
    below every score of the ranges above it, and equal scores share their
    range. Branch-free (a search among range bounds mispredicted its
    branches: 30 ns a row against 4).
    """
    c = (np.float64(v) - x0) * scale
    c = min(c if c > 0.0 else 0.0, np.float64(cell_range.shape[0] - 1))  # NaN (an infinite v, scale 0): cell 0
    return cell_range[np.int64(c)]
