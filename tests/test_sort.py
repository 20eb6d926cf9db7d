"""fastcal._engine.sort: the radix argsort against NumPy's stable argsort, exactly."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastcal._engine import sort as _sort

from .strategies import DTYPES
from .threads import serial_and_parallel


@pytest.fixture(autouse=True)
def radix_at_every_size(monkeypatch):
    # Below RADIX_MIN_SIZE the wrappers hand over to NumPy: test the radix sort itself.
    monkeypatch.setattr(_sort, "RADIX_MIN_SIZE", 0)


#: Values that stress the key mapping: signed zeros, subnormals, the extremes, infinities.
SPECIAL = [0.0, -0.0, 5e-324, -5e-324, 1e-310, -1e-310, 1.4e-45, -1.4e-45, 1e-40, -1e-40,
           1.0, -1.0, np.inf, -np.inf, 3.4e38, -3.4e38, 1.7e308, -1.7e308, 0.5, 0.5000000000000001]


@st.composite
def float_arrays(draw, max_size=300):
    dtype = draw(DTYPES)
    n = draw(st.integers(0, max_size))
    pool = draw(st.sampled_from(["special", "few", "any"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if pool == "special":  # ties everywhere, both zeros, subnormals (flushed to +-0 in float32 by the cast)
        with np.errstate(over="ignore"):
            x = rng.choice(np.array(SPECIAL), n).astype(dtype)
    elif pool == "few":
        x = rng.integers(-3, 4, n).astype(dtype) * dtype(0.25)
    else:
        bits = rng.integers(0, 2**63, n, dtype=np.uint64) * 2 + rng.integers(0, 2, n, dtype=np.uint64)
        x = bits.view(np.float64).astype(dtype) if dtype == np.float64 else bits.astype(np.uint32).view(np.float32)
        x = x[~np.isnan(x)]
    return x


@settings(max_examples=150, deadline=None)
@given(float_arrays())
def test_argsort_equals_numpy_stable(x):
    expected = np.argsort(x, kind="stable")
    serial, parallel = serial_and_parallel(_sort.argsort, x)
    assert serial.dtype == np.int32
    np.testing.assert_array_equal(serial, expected)
    np.testing.assert_array_equal(parallel, expected)


@settings(max_examples=60, deadline=None)
@given(float_arrays(max_size=3000), st.booleans())
def test_sort_with_carries_labels_and_weights(x, weighted):
    # Sizes above the lowered parallel threshold, so the ranges are cut between threads.
    n = x.shape[0]
    y = np.arange(n, dtype=np.int64) % 7
    w = np.linspace(0.5, 2.0, n) if weighted else np.empty(0)
    order = np.argsort(x, kind="stable")
    for xs, ys, ws in serial_and_parallel(_sort.sort_with, x, y, w):
        np.testing.assert_array_equal(xs, x[order])  # -0.0 == +0.0
        assert not np.signbit(xs[xs == 0]).any()  # zeros come back as +0.0
        np.testing.assert_array_equal(ys, y[order])
        np.testing.assert_array_equal(ws, w[order] if weighted else w)
        assert xs.dtype == x.dtype and ys.dtype == y.dtype


@settings(max_examples=80, deadline=None)
@given(float_arrays(max_size=3000), st.integers(0, 2**32 - 1), st.sampled_from([np.float64, np.float32]))
def test_sort_pairs_carries_values_bit_for_bit(x, seed, carried_dtype):
    # Sizes above the lowered parallel threshold, so the ranges are cut between threads. The carried
    # values include -0.0, NaNs with payloads and infinities: they must move as bits, untouched.
    # 8-byte values move in rows with the keys, 4-byte ones in an array of their own.
    n = x.shape[0]
    utype = np.uint64 if carried_dtype == np.float64 else np.uint32
    bits = np.random.default_rng(seed).integers(0, np.iinfo(utype).max, n, dtype=utype, endpoint=True)
    p = bits.view(carried_dtype)
    p_before = p.copy()
    order = np.argsort(x, kind="stable")
    for xs, ps in serial_and_parallel(_sort.sort_pairs, x, p):
        assert xs.dtype == x.dtype and ps.dtype == p.dtype
        np.testing.assert_array_equal(xs, x[order])  # -0.0 == +0.0
        assert not np.signbit(xs[xs == 0]).any()  # zeros come back as +0.0
        np.testing.assert_array_equal(ps.view(utype), bits[order])
    np.testing.assert_array_equal(p.view(utype), p_before.view(utype))
    # flip: the sign of the values where flip is non-zero (their top bit, NaN payloads kept).
    flip = np.random.default_rng(seed + 1).integers(0, 3, n).astype(np.uint8)
    top = utype(1) << utype(8 * np.dtype(utype).itemsize - 1)
    flipped = bits ^ np.where(flip != 0, top, utype(0))
    for xs, ps in serial_and_parallel(_sort.sort_pairs, x, p, flip=flip):
        np.testing.assert_array_equal(xs, x[order])
        np.testing.assert_array_equal(ps.view(utype), flipped[order])
    np.testing.assert_array_equal(p.view(utype), p_before.view(utype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_inputs_skipped_digits_and_threads(dtype):
    rng = np.random.default_rng(0)
    n = 50_000
    cases = {
        "constant": np.full(n, 0.25, dtype),  # every digit shared: one pass writes the identity
        "two values": rng.choice(np.array([-0.0, 0.0, 1.0], dtype), n),
        "scores": rng.random(n).astype(dtype),
        "wide": (rng.standard_normal(n) * 10.0 ** rng.integers(-30, 30, n)).astype(dtype),
    }
    for name, x in cases.items():
        expected = np.argsort(x, kind="stable")
        for got in serial_and_parallel(_sort.argsort, x):
            np.testing.assert_array_equal(got, expected, err_msg=name)
        # One pass (constant keys: only the last), two passes, and more: each swaps buffers differently.
        p = np.arange(n, dtype=np.float64) * 0.5
        for xs, ps in serial_and_parallel(_sort.sort_pairs, x, p):
            np.testing.assert_array_equal(xs, x[expected] + dtype(0.0), err_msg=name)
            np.testing.assert_array_equal(ps, p[expected], err_msg=name)


def test_input_untouched_readonly_and_strided():
    rng = np.random.default_rng(1)
    base = rng.random(2000)
    x = base[::2]
    x.flags.writeable = False
    copy = x.copy()
    np.testing.assert_array_equal(_sort.argsort(x), np.argsort(copy, kind="stable"))
    np.testing.assert_array_equal(x, copy)


def test_numpy_below_radix_min_size(monkeypatch):
    monkeypatch.setattr(_sort, "RADIX_MIN_SIZE", 100)
    x = np.array([0.5, -0.0, 0.0, -1.0])
    np.testing.assert_array_equal(_sort.argsort(x), [3, 1, 2, 0])
    xs, ys, ws = _sort.sort_with(x, np.arange(4), np.empty(0))
    assert not np.signbit(xs[xs == 0]).any()  # the same +0.0 as the radix path
    np.testing.assert_array_equal(ys, [3, 1, 2, 0])
    xs, ps = _sort.sort_pairs(x, np.arange(4.0))
    assert not np.signbit(xs[xs == 0]).any()
    np.testing.assert_array_equal(ps, [3, 1, 2, 0])


@settings(max_examples=40, deadline=None)
@given(float_arrays(max_size=3000))
def test_weighted_auc_on_radix_sort_same_bits_as_stable_argsort(x):
    # The sweep over sort_pairs' output adds the weights of a tie group in input order, as the
    # sweep over np.argsort(kind="stable") does: the same sums, bit for bit.
    from fastcal._auc import roc_auc

    from .naive_metrics import auc_sweep

    n = x.shape[0]
    if n < 2:
        return
    rng = np.random.default_rng(n)
    y = (rng.random(n) < 0.4).astype(np.uint8)
    y[:2] = [0, 1]
    w = rng.uniform(0.1, 2.0, n)
    w[2:][rng.random(n - 2) < 0.1] = 0.0  # zero weights: -0.0 carried for a positive, nothing added
    u, wp, wn = auc_sweep(x, y, w)
    for got in serial_and_parallel(roc_auc, y, x, w):
        assert got == float(u / (wp * wn))


def test_range_of_an_infinite_score_is_in_bounds():
    # One range (scale 0): an infinite score times 0 is NaN, which must land in a cell, not index past the table.
    # The one map of the range partitions of the sort and of multicalibration_error.
    from fastcal._core.math_kernels import range_of_score as kernel

    one = np.array([7], dtype=np.int64)
    assert [kernel(v, 0.0, 0.0, one) for v in (np.inf, -np.inf, 0.5)] == [7, 7, 7]
    cells = np.array([3, 4, 5], dtype=np.int64)
    assert [kernel(v, 0.0, 1.0, cells) for v in (-np.inf, 0.5, 1.5, np.inf)] == [3, 3, 4, 5]


@pytest.mark.parametrize("n", [50, 3 * (1 << 17) + 5])
def test_auc_of_infinite_scores_equals_the_sweep(n):
    from fastcal._auc import roc_auc

    from .naive_metrics import auc_sweep

    rng = np.random.default_rng(n)
    x = rng.normal(size=n)
    x[rng.random(n) < 0.05] = np.inf
    x[rng.random(n) < 0.05] = -np.inf
    y = (rng.random(n) < 0.4).astype(np.uint8)
    w = rng.uniform(0.1, 2.0, n)
    u, wp, wn = auc_sweep(x, y, w)
    assert roc_auc(y, x, w) == float(u / (wp * wn))
    u, wp, wn = auc_sweep(x, y, np.ones(n))
    assert roc_auc(y, x, None) == pytest.approx(float(u / (wp * wn)), rel=1e-15)


@settings(max_examples=80, deadline=None)
@given(float_arrays(max_size=3000), st.sampled_from([1, 3, 40]), st.sampled_from([0, 7, -9, 60, 1000, -1060]),
       st.booleans())
def test_range_sorted_pairs_equals_a_stable_sort(x, n_ranges, exponent, flipped):
    # Range partition, then each range's in-cache radix sort over its varying bits (0 to 64 of them, an odd or
    # an even number of passes): the order of one stable sort of the whole, the value scaled by 2^-exponent (a
    # multiplication where 2^-exponent is a normal double, NumPy's ldexp otherwise: the same rounding, subnormal
    # results included) and negated where flipped.
    n = x.shape[0]
    rng = np.random.default_rng([n, exponent % 4096])
    # Weights of exponent about `exponent` (as rescale_weights finds it), some far smaller: subnormal results.
    p = np.ldexp(rng.uniform(1.0, 2.0, n), exponent) * rng.choice([1.0, 2.0**-40, 2.0**-1000], n)
    flip = (rng.random(n) < 0.4).astype(np.uint8) if flipped else np.empty(0, dtype=np.uint8)
    order = np.argsort(x, kind="stable")
    expected = np.ldexp(np.where(flip != 0, -p, p) if flipped else p, -exponent)[order]
    for xs, ps in serial_and_parallel(_sort.range_sorted_pairs, x, p, flip, n_ranges, exponent=exponent):
        np.testing.assert_array_equal(xs, x[order] + x.dtype.type(0.0))
        assert xs.dtype == x.dtype and not np.signbit(xs[xs == 0]).any()
        np.testing.assert_array_equal(ps.view(np.uint64), expected.view(np.uint64))
