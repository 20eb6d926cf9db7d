"""The shared vectorisable exp and log (fastcal._core.math_kernels) against NumPy's libm, in ulp."""

import numba
import numpy as np
from numpy.testing import assert_allclose, assert_array_equal

from fastcal._core import math_kernels as math_kernels


@numba.njit
def _apply(f, x):
    out = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = f(x[i])
    return out


def ulps(got, ref):
    ref = np.asarray(ref)
    return np.max(np.abs(got - ref) / np.abs(ref)) / np.finfo(np.float64).eps


def test_exp_neg_within_about_one_ulp():
    rng = np.random.default_rng(0)
    x = np.concatenate([-np.abs(rng.normal(0, 30, 200_000)), -np.linspace(0, 708, 100_001), [0.0, -0.0]])
    assert ulps(_apply(math_kernels.exp_neg, x), np.exp(x)) < 1.5
    # Subnormal results and underflow.
    tail = np.array([-710.0, -740.0, -745.0, -745.2, -746.0, -1000.0, -np.inf])
    assert_allclose(_apply(math_kernels.exp_neg, tail), np.exp(tail), rtol=1e-2, atol=0)
    assert _apply(math_kernels.exp_neg, np.array([-1e300]))[0] == 0.0


def test_log1p_unit_within_two_ulp():
    e = np.concatenate([np.linspace(0, 1, 200_001)[1:], np.geomspace(1e-300, 1, 20_000), [0.41421356237309503]])
    assert ulps(_apply(math_kernels.log1p_unit, e), np.log1p(e)) < 2.5
    assert _apply(math_kernels.log1p_unit, np.array([0.0]))[0] == 0.0


def test_log_normal_within_two_ulp():
    rng = np.random.default_rng(1)
    u = np.concatenate([np.exp(rng.uniform(-700, 700, 200_000)), np.linspace(0.5, 2, 100_001), [np.finfo(np.float64).tiny, 1.7e308]])
    got = _apply(math_kernels.log_normal, u)
    ref = np.log(u)
    away = np.abs(ref) > 1e-3
    assert ulps(got[away], ref[away]) < 2.5
    assert np.max(np.abs(got - ref)) < 4 * np.finfo(np.float64).eps
    assert _apply(math_kernels.log_normal, np.array([1.0]))[0] == 0.0


@numba.njit
def _bits(x):
    out = np.empty(x.shape[0], dtype=np.int64)
    back = np.empty_like(x)
    for i in range(x.shape[0]):
        out[i] = math_kernels.float64_bits_as_int64(x[i])
        back[i] = math_kernels.int64_bits_as_float64(out[i])
    return out, back


def test_bit_casts_are_numpy_views():
    x = np.array([0.0, -0.0, 1.0, -2.5, np.inf, -np.inf, np.nan, 5e-324, np.finfo(np.float64).max])
    for f in (_bits, _bits.py_func):  # compiled (LLVM bitcasts) and pure Python (NUMBA_DISABLE_JIT=1)
        bits, back = f(x)
        assert_array_equal(bits, x.view(np.int64))
        assert_array_equal(back.view(np.int64), x.view(np.int64))


def test_order_key_is_monotone():
    values = np.array([-np.inf, -1e308, -1.0, -5e-324, -0.0, 0.0, 5e-324, 1e-300, 1.0, 1e308, np.inf])

    @numba.njit
    def keys(x):
        out = np.empty(x.shape[0], np.int64)
        for i in range(x.shape[0]):
            out[i] = math_kernels.order_key(x[i])
        return out

    k = keys(values)
    assert np.all(np.diff(k) > 0)
    assert [math_kernels.key_to_float(v) for v in k] == list(values)
