"""Tests for fastcal.prior: negative-sampling correction, known-prior adjustment, EM prior estimation.

Oracles: the naive NumPy formulas in ``naive_prior.py``, exact rational
arithmetic (``fractions``) at the extremes, SciPy's ``expit``/``logit``,
scikit-learn's ``roc_auc_score``, and the invariants (monotone, AUC unchanged,
identity at rate 1 / equal priors, rows sum to 1, composition, EM fixed point).
"""

from __future__ import annotations

import math
import pickle
import tracemalloc
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from scipy.special import expit, logit
from sklearn.metrics import roc_auc_score

import fastcal
from fastcal.prior import _kernels as K
from fastcal import adjust_priors, correct_negative_sampling, estimate_priors_em, negative_sampling_logit_offset
from fastcal._engine import ListRows
from fastcal.prior import rows as eprior
from fastcal._core.parallel import PARALLEL_MIN_SIZE
from fastcal.prior import SUM_TOL, ConvergenceWarning, PriorEMResult, iterate_em

from .naive_prior import naive_adjust_priors, naive_correct_negative_sampling, naive_estimate_priors_em
from .threads import in_pieces, serial_and_parallel

DTYPES = [np.float32, np.float64]
RTOL = {np.float32: 2e-6, np.float64: 4e-15}


def _probs(n, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    p[: min(n, 4)] = [0.0, 1.0, 0.5, 1e-12][: min(n, 4)]
    return p.astype(dtype)


def _dirichlet_rows(n, k, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.full(k, 0.7), size=n).astype(dtype)


# ---------------------------------------------------------------------------
# correct_negative_sampling
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7, 1000, PARALLEL_MIN_SIZE + 3])
@pytest.mark.parametrize("rate", [1e-6, 0.01, 0.1, 0.5, 0.999])
def test_correct_negative_sampling_matches_naive(dtype, n, rate):
    p = _probs(n, dtype)
    got = correct_negative_sampling(p, rate)
    assert got.dtype == dtype and got.shape == p.shape
    want = naive_correct_negative_sampling(p, rate)
    np.testing.assert_allclose(got, want, rtol=RTOL[dtype], atol=0 if dtype is np.float64 else 1e-37)
    # sigmoid(logit(p) + log r), away from 0 and 1 where logit is finite
    if n:
        inner = (p > 0) & (p < 1)
        via_logit = expit(logit(p[inner].astype(np.float64)) + np.log(rate))
        np.testing.assert_allclose(got[inner], via_logit, rtol=1e4 * RTOL[dtype])


def test_float32_is_computed_in_float32():
    p = _probs(10_000, np.float32, seed=3)
    got = correct_negative_sampling(p, 0.1)
    assert got.dtype == np.float32
    cm1, one = np.float32((1 - 0.1) / 0.1), np.float32(1)
    ref32 = p / (one + cm1 * (one - p))  # the same operations in float32
    assert ref32.dtype == np.float32
    np.testing.assert_array_equal(got, ref32)


def test_rate_one_is_exact_identity():
    p = np.concatenate([_probs(100_000, seed=1), np.geomspace(1e-300, 0.5, 1000), 1 - np.geomspace(1e-16, 0.5, 1000)])
    np.testing.assert_array_equal(correct_negative_sampling(p, 1.0), p)
    p32 = p.astype(np.float32)
    np.testing.assert_array_equal(correct_negative_sampling(p32, 1), p32)


def _exact(p, r):
    p, r = Fraction(float(p)), Fraction(float(r))
    return float(p * r / (p * r + 1 - p))


EXTREME_P = [0.0, 5e-324, 1e-310, 1e-300, 1e-200, 1e-17, 0.3, 0.5, 1 - 2**-53, 1 - 1e-15, 1.0]
EXTREME_R = [5e-324, 1e-300, 1e-100, 1e-10, 0.1, 0.5, 1.0]


@pytest.mark.parametrize("r", EXTREME_R)
def test_extremes_stable_and_accurate_float64(r):
    p = np.array(EXTREME_P)
    got = correct_negative_sampling(p, r)
    assert not np.isnan(got).any()
    assert ((got >= 0) & (got <= 1)).all()
    assert got[0] == 0.0 and got[-1] == 1.0
    r_eff = max(r, 1 / np.finfo(np.float64).max)  # documented: tinier rates are raised to 1/max
    for pi, gi in zip(EXTREME_P, got):
        want = _exact(pi, r_eff)
        if want >= 1e-305:
            assert abs(gi - want) <= 4 * np.spacing(want), (pi, r, gi, want)
        else:  # results near underflow: within the smallest normal number (documented)
            assert abs(gi - want) <= np.finfo(np.float64).tiny, (pi, r, gi, want)


@pytest.mark.parametrize("r", EXTREME_R)
def test_extremes_stable_float32(r):
    p = np.array(EXTREME_P, dtype=np.float32)  # 1e-300 etc. underflow to 0 in float32, 1-1e-15 is 1
    p = np.concatenate([p, np.array([1e-45, 1e-38, 1 - 2**-24], dtype=np.float32)])
    got = correct_negative_sampling(p, r)
    assert got.dtype == np.float32
    assert not np.isnan(got).any()
    assert ((got >= 0) & (got <= 1)).all()
    assert got[p == 0].max() == 0 and got[p == 1].min() == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_monotone_and_auc_unchanged(dtype):
    rng = np.random.default_rng(5)
    n = 20_000
    y = rng.random(n) < 0.1
    p = expit(rng.normal(size=n) + 1.5 * y).astype(dtype)
    p[:50] = p[50:100]  # ties stay ties
    for r in [0.5, 0.1, 0.01]:
        q = correct_negative_sampling(p, r)
        order = np.argsort(p, kind="stable")
        assert np.all(np.diff(q[order]) >= 0)
        np.testing.assert_array_equal(q[:50], q[50:100])
        assert abs(roc_auc_score(y, q) - roc_auc_score(y, p)) <= 1e-12


def _adjacent_floats(dtype, start, count):
    """``count`` consecutive representable numbers from ``start`` upwards, capped at 1."""
    x = np.asarray(start, dtype=dtype)
    bits = x.view(np.uint32 if dtype is np.float32 else np.uint64)
    seq = (bits + np.arange(count, dtype=bits.dtype)).view(dtype)
    return seq[seq <= 1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_monotone_to_the_last_ulp(dtype):
    # the odds form is a chain of monotone operations: no two scores swap, even 1 ulp apart
    starts = [0.0, 1e-30, 1e-6, 0.01, 0.3, 0.5 - 1e-7, 0.7, 0.999, 1 - 1e-5]
    p = np.concatenate([_adjacent_floats(dtype, s, 3000) for s in starts] + [np.sort(_probs(100_000, dtype, seed=3))])
    p = np.unique(p)
    for r in [0.999, 0.9, 0.5, 0.1, 1e-3, 1e-8, 1e-30]:
        q = correct_negative_sampling(p, r)
        assert np.all(np.diff(q) >= 0), (r, np.flatnonzero(np.diff(q) < 0)[:5])
    for train, new in [(0.5, 0.9), (0.1, 0.99), (0.9, 0.01)]:
        q = adjust_priors(p, train, new)
        assert np.all(np.diff(q) >= 0), (train, new)


def test_scalars():
    got = correct_negative_sampling(0.5, 0.1)
    assert type(got) is np.float64
    assert got == pytest.approx(1 / 11, rel=1e-15)
    got32 = correct_negative_sampling(np.float32(0.5), 0.1)
    assert type(got32) is np.float32
    assert type(correct_negative_sampling(1, 0.5)) is np.float64  # ints -> float64
    assert correct_negative_sampling(1, 0.5) == 1.0
    assert type(correct_negative_sampling(np.array(0.25), 0.5)) is np.float64
    out = np.empty(())
    assert correct_negative_sampling(0.5, 0.1, out=out) is out


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 5), (0, 3)])
@pytest.mark.parametrize("order", ["C", "F"])
def test_any_shape_and_layout(shape, order):
    p = np.asfortranarray(_probs(math.prod(shape)).reshape(shape)) if order == "F" else _probs(math.prod(shape)).reshape(shape)
    got = correct_negative_sampling(p, 0.2)
    assert got.shape == shape
    np.testing.assert_allclose(got, naive_correct_negative_sampling(p, 0.2), rtol=4e-15)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rate", [1.0, 0.3])
def test_contiguous_readonly_input(dtype, rate):
    # A read-only contiguous array goes to the kernels as it is: each branch (copy, c > 1; adjust_priors' c < 1)
    # must accept it, with or without out=, and give the writable array's result bit for bit.
    p = _probs(1001, seed=5).astype(dtype)
    ro = p.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(correct_negative_sampling(ro, rate), correct_negative_sampling(p, rate))
    out = np.empty_like(p)
    correct_negative_sampling(ro, rate, out=out)
    np.testing.assert_array_equal(out, correct_negative_sampling(p, rate))
    np.testing.assert_array_equal(adjust_priors(ro, 0.2, 0.6), adjust_priors(p, 0.2, 0.6))
    np.testing.assert_array_equal(ro, p)


def test_non_contiguous_readonly_big_endian_and_ints_not_modified():
    base = _probs(2001, seed=2)
    p = base[::3]
    p.flags.writeable = False
    keep = p.copy()
    np.testing.assert_allclose(correct_negative_sampling(p, 0.3), naive_correct_negative_sampling(keep, 0.3), rtol=4e-15)
    np.testing.assert_array_equal(p, keep)
    be = base.astype(">f8")
    got = correct_negative_sampling(be, 0.3)
    assert got.dtype == np.float64 and got.dtype.isnative
    np.testing.assert_allclose(got, naive_correct_negative_sampling(base, 0.3), rtol=4e-15)
    be32 = base.astype(">f4")
    assert correct_negative_sampling(be32, 0.3).dtype == np.float32
    ints = np.array([0, 1, 1, 0])
    got = correct_negative_sampling(ints, 0.5)
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [0, 1, 1, 0])
    assert correct_negative_sampling(np.array([True, False]), 0.5).dtype == np.float64
    assert correct_negative_sampling([0.5, 0.25], 0.5).shape == (2,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_out_and_in_place(dtype):
    p = _probs(50_000, dtype, seed=4)
    want = correct_negative_sampling(p, 0.05)
    out = np.empty_like(p)
    assert correct_negative_sampling(p, 0.05, out=out) is out
    np.testing.assert_array_equal(out, want)
    q = p.copy()
    assert correct_negative_sampling(q, 0.05, out=q) is q
    np.testing.assert_array_equal(q, want)
    # strided out, overlapping out, out for a non-contiguous input
    big = np.zeros(2 * p.size, dtype=dtype)
    assert correct_negative_sampling(p, 0.05, out=big[::2]) is not None
    np.testing.assert_array_equal(big[::2], want)
    np.testing.assert_array_equal(big[1::2], 0)
    buf = np.concatenate([p, [0.5]]).astype(dtype)
    correct_negative_sampling(buf[:-1], 0.05, out=buf[1:])
    np.testing.assert_array_equal(buf[1:], want)
    src = np.repeat(p, 2)[::2]
    out2 = np.empty_like(p)
    correct_negative_sampling(src, 0.05, out=out2)
    np.testing.assert_array_equal(out2, want)


def test_in_place_allocates_nothing():
    p = _probs(1_000_000, seed=6)
    correct_negative_sampling(p, 0.1, out=p)  # warm the JIT
    correct_negative_sampling(p[:10], 0.1)
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base, _ = tracemalloc.get_traced_memory()
        r = correct_negative_sampling(p, 0.1, out=p)
        _, peak_in_place = tracemalloc.get_traced_memory()
        del r
        tracemalloc.reset_peak()
        base2, _ = tracemalloc.get_traced_memory()
        r = correct_negative_sampling(p, 0.1)
        _, peak_new = tracemalloc.get_traced_memory()
        del r
    finally:
        tracemalloc.stop()
    assert peak_new - base2 >= p.nbytes  # the measurement sees NumPy's allocations
    assert peak_in_place - base < 20_000  # a few Python objects, no array


def test_adjust_priors_in_place_allocates_nothing():
    P = _dirichlet_rows(200_000, 5, seed=15)
    p = P[:, 0].copy()
    train, new = [0.1, 0.2, 0.3, 0.2, 0.2], [0.3, 0.3, 0.2, 0.1, 0.1]
    adjust_priors(P, train, new, out=P)  # warm the JIT
    adjust_priors(p, 0.3, 0.1, out=p)
    tracemalloc.start()
    try:
        for args in [(P, train, new), (p, 0.3, 0.1)]:
            tracemalloc.reset_peak()
            base, _ = tracemalloc.get_traced_memory()
            r = adjust_priors(*args, out=args[0])
            _, peak = tracemalloc.get_traced_memory()
            assert r is args[0]
            del r
            assert peak - base < 20_000
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("dtype", DTYPES)
def test_whole_equals_pieces_binary(dtype):
    p = _probs(PARALLEL_MIN_SIZE * 3 + 11, dtype, seed=7)
    p[5] = np.nan
    p[9] = 1.5
    n = p.shape[0]
    d1, d2 = np.empty_like(p), np.empty_like(p)
    c, z, o = dtype(30.0), dtype(0), dtype(1)
    assert K.binary_down(p, d1, c, z, o, 0, n) == sum(in_pieces(K.binary_down, n, p, d2, c, z, o)) == 2
    np.testing.assert_array_equal(d1, d2)
    c = dtype(0.03)
    assert K.binary_up(p, d1, c, o - c, z, o, 0, n) == sum(in_pieces(K.binary_up, n, p, d2, c, o - c, z, o)) == 2
    np.testing.assert_array_equal(d1, d2)
    assert K.binary_copy(p, d1, z, o, 0, n) == sum(in_pieces(K.binary_copy, n, p, d2, z, o)) == 2
    np.testing.assert_array_equal(d1, p)
    np.testing.assert_array_equal(d2, p)
    q = _probs(PARALLEL_MIN_SIZE * 3 + 11, dtype, seed=8)
    for new, train in ((0.3, 0.1), (0.1, 0.3), (0.2, 0.2)):  # c < 1, c > 1, c = 1
        serial, parallel = serial_and_parallel(adjust_priors, q, new, train)
        np.testing.assert_array_equal(serial, parallel)


@pytest.mark.parametrize("bad", [np.nan, -0.1, 1.0000001, np.inf, -np.inf])
@pytest.mark.parametrize("n", [5, PARALLEL_MIN_SIZE + 5])
def test_bad_p(bad, n):
    p = _probs(n)
    p[n // 2] = bad
    with pytest.raises(ValueError, match=r"^p must hold probabilities in \[0, 1\].*found 1 invalid value"):
        correct_negative_sampling(p, 0.5)
    with pytest.raises(ValueError, match="^p must"):
        correct_negative_sampling(bad, 0.5)


@pytest.mark.parametrize("rate", [0.0, -0.1, 1.0000001, 2, np.nan, np.inf])
def test_bad_rate(rate):
    with pytest.raises(ValueError, match=r"^rate must be in \(0, 1\]"):
        correct_negative_sampling(np.array([0.5]), rate)
    with pytest.raises(ValueError, match="^rate"):
        negative_sampling_logit_offset(rate)


@pytest.mark.parametrize("rate", [None, "0.1", [0.1], np.array([0.1, 0.2]), True, 1j])
def test_rate_type(rate):
    with pytest.raises(TypeError, match="^rate must be a real number"):
        correct_negative_sampling(np.array([0.5]), rate)


def test_bad_out_and_p_types():
    p = np.array([0.5, 0.2])
    with pytest.raises(TypeError, match="^out"):
        correct_negative_sampling(p, 0.5, out=[0.0, 0.0])
    with pytest.raises(ValueError, match="^out has shape"):
        correct_negative_sampling(p, 0.5, out=np.empty(3))
    with pytest.raises(TypeError, match="^out has dtype"):
        correct_negative_sampling(p, 0.5, out=np.empty(2, np.float32))
    ro = np.empty(2)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="^out must be writeable"):
        correct_negative_sampling(p, 0.5, out=ro)
    with pytest.raises(TypeError, match="^p"):
        correct_negative_sampling(np.array(["a"]), 0.5)
    with pytest.raises(TypeError, match="^p"):
        correct_negative_sampling(np.array([0.5 + 0j]), 0.5)


@settings(max_examples=60, deadline=None)
@given(
    p=hnp.arrays(
        dtype=st.sampled_from([np.dtype("<f4"), np.dtype(">f4"), np.dtype("<f8"), np.dtype(">f8")]),
        shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=40),
        elements=st.floats(0, 1, width=32),
    ),
    rate=st.floats(1e-30, 1.0, exclude_min=False),
)
def test_hypothesis_negative_sampling(p, rate):
    got = np.asarray(correct_negative_sampling(p, rate))
    dtype = p.dtype.newbyteorder("=")
    assert got.dtype == dtype and got.shape == p.shape
    assert not np.isnan(got).any() and ((got >= 0) & (got <= 1)).all()
    want = naive_correct_negative_sampling(p.astype(np.float64), float(dtype.type(rate)))
    tol = 1e-5 if dtype == np.float32 else 1e-14
    np.testing.assert_allclose(got, want, rtol=tol, atol=1e-37 if dtype == np.float32 else 0)


# ---------------------------------------------------------------------------
# negative_sampling_logit_offset
# ---------------------------------------------------------------------------


def test_logit_offset_equals_output_correction():
    assert negative_sampling_logit_offset(0.1) == math.log(0.1)
    assert negative_sampling_logit_offset(1) == 0.0
    assert isinstance(negative_sampling_logit_offset(np.float32(0.5)), float)
    rng = np.random.default_rng(8)
    z = rng.normal(0, 4, 10_000)
    for r in [0.5, 0.1, 1e-3]:
        shifted = expit(z + negative_sampling_logit_offset(r))
        np.testing.assert_allclose(correct_negative_sampling(expit(z), r), shifted, rtol=1e-12)


# ---------------------------------------------------------------------------
# adjust_priors
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [0, 1, 999, PARALLEL_MIN_SIZE + 1])
@pytest.mark.parametrize("priors", [(0.5, 0.1), (0.1, 0.5), (0.01, 0.3), (0.3, 0.3)])
def test_adjust_binary_matches_naive(dtype, n, priors):
    train, new = priors
    p = _probs(n, dtype, seed=9)
    got = adjust_priors(p, train, new)
    assert got.dtype == dtype and got.shape == p.shape
    want = naive_adjust_priors(p, train, new)
    np.testing.assert_allclose(got, want, rtol=2 * RTOL[dtype] + 1e-15, atol=0 if dtype is np.float64 else 1e-37)
    # priors as length-2 vectors give the same result
    np.testing.assert_array_equal(adjust_priors(p, [1 - train, train], np.array([1 - new, new])), got)
    if train == new:
        np.testing.assert_array_equal(got, p)


def test_adjust_binary_equals_negative_sampling():
    p = _probs(10_000, seed=10)
    pi = 0.02
    for r in [0.5, 0.1, 0.01]:
        pi_train = pi / (pi + r * (1 - pi))  # positive share of the undersample
        np.testing.assert_allclose(adjust_priors(p, pi_train, pi), correct_negative_sampling(p, r), rtol=1e-13)


def test_adjust_binary_auc_and_scalar():
    rng = np.random.default_rng(11)
    y = rng.random(30_000) < 0.3
    p = expit(rng.normal(size=y.size) + y)
    q = adjust_priors(p, 0.3, 0.01)
    assert abs(roc_auc_score(y, q) - roc_auc_score(y, p)) <= 1e-12
    s = adjust_priors(0.5, 0.5, 0.2)
    assert type(s) is np.float64 and s == pytest.approx(0.2, rel=1e-15)
    assert type(adjust_priors(np.float32(0.5), 0.5, 0.2)) is np.float32


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n,k", [(0, 3), (1, 2), (500, 3), (PARALLEL_MIN_SIZE // 4 + 3, 5), (300, 40)])
def test_adjust_multiclass_matches_naive(dtype, n, k):
    rng = np.random.default_rng(n + k)
    proba = _dirichlet_rows(n, k, seed=k, dtype=dtype)
    train = rng.dirichlet(np.ones(k)) * 0.9 + 0.1 / k
    new = rng.dirichlet(np.ones(k)) * 0.9 + 0.1 / k
    got = adjust_priors(proba, train, new)
    assert got.dtype == dtype and got.shape == (n, k)
    want = naive_adjust_priors(proba.astype(np.float64), train, new)
    # float64, u = eps / 2: each side sums a row of k terms ((k + 2) u), and fastcal takes the weights as
    # exp(log new - log train - max) with NumPy's log and exp: each within ~10 u max|log prior|, two per value
    log_priors = np.abs(np.log(np.concatenate([train, new]))).max()
    rtol = 4 * RTOL[dtype] if dtype is np.float32 else (k + 5 + 10 * log_priors) * np.finfo(np.float64).eps
    np.testing.assert_allclose(got, want, rtol=rtol, atol=1e-7 if dtype is np.float32 else 1e-16)
    assert ((got >= 0) & (got <= 1)).all()
    # |sum - 1| <= (2k + 2) u, u = eps / 2: the row sum s (k products, k u), 1 / s and the two products (3 u),
    # NumPy's sum of the k values ((k - 1) u); float32 adds one rounding of each value (k u)
    np.testing.assert_allclose(got.sum(axis=1, dtype=np.float64), 1.0, rtol=0, atol=(k + 1) * np.finfo(dtype).eps)
    if n:
        # pairwise odds are scaled by the constant w_i / w_j
        j = proba[:, 0] > 1e-3
        ratio = (got[j, 1] / got[j, 0]) / (proba[j, 1].astype(np.float64) / proba[j, 0])
        w = (new / train)
        np.testing.assert_allclose(ratio, w[1] / w[0], rtol=1e-5 if dtype is np.float32 else 1e-12)


def test_adjust_two_columns_equals_binary_and_auc():
    rng = np.random.default_rng(12)
    y = rng.random(20_000) < 0.2
    p = expit(rng.normal(size=y.size) + 2 * y)
    P = np.column_stack([1 - p, p])
    q2 = adjust_priors(P, [0.8, 0.2], [0.95, 0.05])
    q1 = adjust_priors(p, 0.2, 0.05)
    np.testing.assert_allclose(q2[:, 1], q1, rtol=1e-13, atol=1e-300)
    assert abs(roc_auc_score(y, q2[:, 1]) - roc_auc_score(y, p)) <= 1e-12
    # scalar priors with a two-column proba
    np.testing.assert_array_equal(adjust_priors(P, 0.2, 0.05), q2)


def test_adjust_multiclass_extremes():
    P = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [1e-300, 1 - 1e-16, 1e-17], [0.0, 1.0, 0.0]])
    got = adjust_priors(P, [1e-200, 0.5, 0.5 - 1e-200], [0.5, 0.5 - 1e-200, 1e-200])
    assert not np.isnan(got).any() and ((got >= 0) & (got <= 1)).all()
    np.testing.assert_array_equal(got[0], [1, 0, 0])
    np.testing.assert_array_equal(got[1], [0, 0, 1])
    np.testing.assert_array_equal(got[3], [0, 1, 0])
    got32 = adjust_priors(P.astype(np.float32), [1e-200, 0.5, 0.5 - 1e-200], [0.5, 0.5 - 1e-200, 1e-200])
    assert not np.isnan(got32).any() and ((got32 >= 0) & (got32 <= 1)).all()


@pytest.mark.parametrize("priors", [(0.5, 0.9), (0.01, 0.99), (1e-200, 0.5), (0.3, 0.3 + 1e-12), (0.5, 0.1), (0.5, 1e-250)])
def test_adjust_binary_accuracy_exact_rationals(priors):
    # both evaluations (c < 1 and c > 1) against exact rational arithmetic
    train, new = priors
    c = (Fraction(1 - new) / Fraction(new)) / (Fraction(1 - train) / Fraction(train))  # w0 / w1, exactly
    p = np.array(EXTREME_P + [0.1, 0.25, 0.75, 0.9])
    got = adjust_priors(p, train, new)
    for pi, gi in zip(p, got):
        x = Fraction(float(pi))
        want = float(x / (x + c * (1 - x))) if x else 0.0
        tol = 6 * np.spacing(want) if want >= 1e-305 else np.finfo(np.float64).tiny
        assert abs(gi - want) <= tol, (pi, gi, want)


def test_adjust_binary_extreme_priors():
    p = np.array(EXTREME_P)
    for train, new in [(1e-300, 0.5), (0.5, 1e-300), (1 - 1e-16, 1e-16)]:
        for dtype in DTYPES:
            got = adjust_priors(p.astype(dtype), train, new)
            assert not np.isnan(got).any() and ((got >= 0) & (got <= 1)).all()
            assert got[0] == 0 and got[-1] == 1


@pytest.mark.parametrize("dtype", DTYPES)
def test_adjust_out_in_place_and_layouts(dtype):
    proba = _dirichlet_rows(40_000, 4, seed=13, dtype=dtype)
    train, new = [0.1, 0.2, 0.3, 0.4], [0.4, 0.3, 0.2, 0.1]
    want = adjust_priors(proba, train, new)
    q = proba.copy()
    assert adjust_priors(q, train, new, out=q) is q
    np.testing.assert_array_equal(q, want)
    F = np.asfortranarray(proba)
    np.testing.assert_array_equal(adjust_priors(F, train, new), want)
    out = np.empty_like(F)  # F-ordered out
    assert adjust_priors(proba, train, new, out=out) is out
    np.testing.assert_array_equal(out, want)
    ro = proba.copy()
    ro.flags.writeable = False
    np.testing.assert_array_equal(adjust_priors(ro, train, new), want)
    np.testing.assert_array_equal(ro, proba)
    p1 = proba[:, 0].copy()
    q1 = p1.copy()
    assert adjust_priors(q1, 0.3, 0.1, out=q1) is q1
    np.testing.assert_array_equal(q1, adjust_priors(p1, 0.3, 0.1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_whole_equals_pieces_multi(dtype):
    proba = _dirichlet_rows(PARALLEL_MIN_SIZE + 7, 6, seed=14, dtype=dtype)
    proba[3, 2] = np.nan
    proba[10] *= 1.01  # one bad row
    w = np.array([1.0, 0.5, 0.25, 0.125, 1e-3, 0.9])
    d1, d2 = np.empty_like(proba), np.empty_like(proba)
    groups = -(-proba.shape[0] // 4)
    r1 = K.multi_adjust(proba, d1, w, SUM_TOL, 0, groups)
    r2 = tuple(map(sum, zip(*in_pieces(K.multi_adjust, groups, proba, d2, w, SUM_TOL))))
    assert r1 == r2 and r1[0] == 1 and r1[1] == 2  # the NaN row also fails its sum check
    np.testing.assert_array_equal(d1, d2)
    good = _dirichlet_rows(PARALLEL_MIN_SIZE + 7, 6, seed=15, dtype=dtype)
    serial, parallel = serial_and_parallel(adjust_priors, good, [0.1, 0.2, 0.3, 0.2, 0.1, 0.1], [1 / 6] * 6)
    np.testing.assert_array_equal(serial, parallel)


def test_adjust_bad_input():
    P = _dirichlet_rows(10, 3)
    good = [0.2, 0.3, 0.5]
    with pytest.raises(ValueError, match="^train_priors must be strictly positive"):
        adjust_priors(P, [0.0, 0.5, 0.5], good)
    with pytest.raises(ValueError, match="^new_priors must be strictly positive"):
        adjust_priors(P, good, [-0.1, 0.6, 0.5])
    with pytest.raises(ValueError, match="^new_priors must sum to 1"):
        adjust_priors(P, good, [0.2, 0.3, 0.6])
    with pytest.raises(ValueError, match="^train_priors must be finite"):
        adjust_priors(P, [np.nan, 0.5, 0.5], good)
    with pytest.raises(ValueError, match="^train_priors given as a scalar"):
        adjust_priors(P[:, :2] / P[:, :2].sum(1, keepdims=True), 1.0, 0.5)
    with pytest.raises(ValueError, match="^new_priors given as a scalar"):
        adjust_priors(np.array([0.5]), 0.5, np.nan)
    with pytest.raises(ValueError, match="^train_priors must have at least 2"):
        adjust_priors(np.array([0.5]), [1.0], [1.0])
    with pytest.raises(ValueError, match="^train_priors must be a scalar or a 1-D"):
        adjust_priors(P, [good], good)
    with pytest.raises(ValueError, match="^train_priors and new_priors must have the same number"):
        adjust_priors(P, good, [0.5, 0.5])
    with pytest.raises(ValueError, match="^proba has 3 columns but the priors have 2"):
        adjust_priors(P, [0.5, 0.5], [0.5, 0.5])
    with pytest.raises(ValueError, match="^A 1-D proba holds P\\(y=1\\)"):
        adjust_priors(P[:, 0], good, good)
    with pytest.raises(ValueError, match="^proba must be a 1-D array"):
        adjust_priors(P[None], good, good)
    bad = P.copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match=r"^proba must hold probabilities in \[0, 1\]"):
        adjust_priors(bad, good, good)
    bad = P.copy()
    bad[4] *= 1 + 2 * SUM_TOL
    with pytest.raises(ValueError, match="^The rows of proba must sum to 1.*1 row does not"):
        adjust_priors(bad, good, good)
    ok = P.copy()
    ok[4] *= 1 + SUM_TOL / 2  # within the tolerance: accepted and renormalised
    np.testing.assert_allclose(adjust_priors(ok, good, good).sum(axis=1), 1.0, atol=1e-15)
    with pytest.raises(ValueError, match=r"^proba must hold probabilities"):
        adjust_priors(np.array([0.2, 1.2]), 0.5, 0.3)
    with pytest.raises(TypeError, match="^train_priors"):
        adjust_priors(np.array([0.2]), "0.5", 0.3)


@settings(max_examples=50, deadline=None)
@given(
    n=st.integers(0, 300),
    k=st.integers(2, 8),
    dtype=st.sampled_from(DTYPES),
    seed=st.integers(0, 2**32 - 1),
    zeros=st.booleans(),
)
def test_hypothesis_adjust_multiclass(n, k, dtype, seed, zeros):
    rng = np.random.default_rng(seed)
    proba = rng.dirichlet(np.full(k, 0.5), size=n)
    if zeros and n:
        proba[rng.random((n, k)) < 0.3] = 0.0
        proba[proba.sum(axis=1) == 0, 0] = 1.0
        proba /= proba.sum(axis=1, keepdims=True)
    proba = proba.astype(dtype)
    train = rng.dirichlet(np.ones(k)) + 1e-3
    new = rng.dirichlet(np.ones(k)) + 1e-3
    train, new = train / train.sum(), new / new.sum()
    got = adjust_priors(proba, train, new)
    want = naive_adjust_priors(proba.astype(np.float64), train, new)
    np.testing.assert_allclose(got, want, rtol=1e-5 if dtype is np.float32 else 1e-13, atol=1e-7 if dtype is np.float32 else 1e-15)
    assert ((got >= 0) & (got <= 1)).all()


# ---------------------------------------------------------------------------
# estimate_priors_em
# ---------------------------------------------------------------------------


def _gaussian_prior_shift(n, new_priors, train_priors, seed=0, radius=2.0):
    """Exact posteriors under ``train_priors`` for samples drawn with ``new_priors``.

    Class i is a unit 2-D Gaussian centred at angle 2 pi i / k on a circle of
    the given radius; the posterior of a Bayes classifier trained with
    ``train_priors`` is exact, so only the priors differ between training and
    the sample. Returns ``(posteriors, labels)``.
    """
    rng = np.random.default_rng(seed)
    k = len(new_priors)
    angles = 2 * np.pi * np.arange(k) / k
    means = radius * np.column_stack([np.cos(angles), np.sin(angles)])
    y = rng.choice(k, size=n, p=new_priors)
    x = means[y] + rng.normal(size=(n, 2))
    loglik = -0.5 * ((x[:, None, :] - means[None]) ** 2).sum(axis=2)
    logpost = loglik + np.log(train_priors)
    logpost -= logpost.max(axis=1, keepdims=True)
    post = np.exp(logpost)
    post /= post.sum(axis=1, keepdims=True)
    return post, y


def _mle_standard_errors(post, train, priors):
    """Asymptotic standard errors of the prior MLE, from the observed information.

    The mixture log-likelihood is sum_m log sum_i pi_i L_mi with
    L_mi = p_train(i | x_m) / pi_train(i) (proportional to the class density);
    the free parameters are pi_1 .. pi_{k-1}.
    """
    L = post / train
    mix = L @ priors
    d = (L[:, :-1] - L[:, -1:]) / mix[:, None]  # score of each row
    cov = np.linalg.inv(d.T @ d)
    k = len(priors)
    full = np.zeros((k, k))
    full[:-1, :-1] = cov
    full[-1, :-1] = full[:-1, -1] = -cov.sum(axis=1)
    full[-1, -1] = cov.sum()
    return np.sqrt(np.diag(full))


def test_em_recovers_known_priors_multiclass():
    train = np.array([0.25, 0.25, 0.25, 0.25])
    new = np.array([0.5, 0.3, 0.15, 0.05])
    n = 60_000
    post, y = _gaussian_prior_shift(n, new, train, seed=1)
    res = estimate_priors_em(post, train)
    assert isinstance(res, PriorEMResult) and res.converged and 1 < res.n_iter < 1000
    se = _mle_standard_errors(post, train, res.priors)
    multinomial = np.sqrt(new * (1 - new) / n)
    assert np.all(se > multinomial) and np.all(se < 5 * multinomial)  # classes overlap, but not too much
    assert np.all(np.abs(res.priors - new) < 4 * se), (res.priors, new, se)
    # the unadjusted mean posterior is far off: the test is not vacuous
    assert np.abs(post.mean(axis=0) - new).max() > 20 * se.max()
    # fixed point: the adjusted probabilities average to the estimated priors
    np.testing.assert_allclose(res.proba.mean(axis=0), res.priors, atol=1e-7)
    np.testing.assert_allclose(res.proba.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(res.proba, adjust_priors(post, train, res.priors), rtol=1e-13, atol=1e-300)
    # the adjusted posteriors are better probabilities for the new population
    ll = lambda q: -np.mean(np.log(np.maximum(q[np.arange(n), y], 1e-300)))
    assert ll(res.proba) < ll(post) - 0.05


@pytest.mark.parametrize("seed", range(5))
def test_em_sampling_error_is_honest(seed):
    # over a few replications the estimate stays within 4 standard errors of the truth
    train = np.array([0.2, 0.5, 0.3])
    new = np.array([0.6, 0.1, 0.3])
    post, _ = _gaussian_prior_shift(20_000, new, train, seed=10 + seed)
    res = estimate_priors_em(post, train)
    assert res.converged
    se = _mle_standard_errors(post, train, res.priors)
    assert np.all(np.abs(res.priors - new) < 4 * se), (res.priors, se)


@pytest.mark.parametrize("dtype", DTYPES)
def test_em_matches_naive(dtype):
    train = np.array([0.5, 0.3, 0.2])
    post, _ = _gaussian_prior_shift(20_000, [0.2, 0.2, 0.6], train, seed=2)
    post = post.astype(dtype)
    res = estimate_priors_em(post, train, tol=1e-10, accelerate=False)
    pi, q, n_iter, conv = naive_estimate_priors_em(post, train, tol=1e-10)
    assert res.converged and conv
    assert abs(res.n_iter - n_iter) <= 1
    np.testing.assert_allclose(res.priors, pi, rtol=0, atol=1e-9)
    fast = estimate_priors_em(post, train, tol=1e-10)
    assert fast.converged and fast.n_iter < res.n_iter
    np.testing.assert_allclose(fast.priors, pi, rtol=0, atol=1e-9)
    assert res.proba.dtype == dtype
    np.testing.assert_allclose(res.proba, q, rtol=1e-5 if dtype is np.float32 else 1e-8, atol=1e-7)
    np.testing.assert_array_equal(post, post.copy())  # input untouched (smoke)


def test_em_binary_matches_multiclass_and_naive():
    rng = np.random.default_rng(3)
    y = rng.random(50_000) < 0.1
    x = rng.normal(np.where(y, 1.0, -1.0))
    p = expit(2 * x + np.log(0.4 / 0.6))  # exact posterior for train prior 0.4
    # EM stops after the first step of at most tol: runs that round differently (sums over 50,000 rows
    # in other orders, ~1e-13) may stop one step apart, so their priors agree to about tol
    tol = 1e-10
    res1 = estimate_priors_em(p, 0.4, tol=tol)
    res2 = estimate_priors_em(np.column_stack([1 - p, p]), [0.6, 0.4], tol=tol)
    pi, q, n_iter, conv = naive_estimate_priors_em(p, 0.4, tol=tol)
    assert res1.converged and res2.converged and conv
    assert res1.priors.shape == (2,) and res1.proba.shape == p.shape
    np.testing.assert_allclose(res1.priors, res2.priors, atol=2 * tol)
    np.testing.assert_allclose(res1.priors, pi, atol=2 * tol)
    np.testing.assert_allclose(res1.proba, res2.proba[:, 1], rtol=1e-7)
    np.testing.assert_allclose(res1.proba, q, rtol=1e-7)
    assert abs(res1.priors[1] - y.mean()) < 0.01
    assert abs(roc_auc_score(y, res1.proba) - roc_auc_score(y, p)) <= 1e-12
    res32 = estimate_priors_em(p.astype(np.float32), 0.4, tol=tol)
    assert res32.proba.dtype == np.float32
    np.testing.assert_allclose(res32.priors, res1.priors, atol=1e-6)


def test_em_whole_equals_pieces():
    post, _ = _gaussian_prior_shift(3 * K.EM_CHUNK + 17, [0.3, 0.3, 0.4], [1 / 3] * 3, seed=4)
    n_chunks = -(-post.shape[0] // K.EM_CHUNK)
    w = np.array([1.0, 0.7, 0.2])

    def counts(results):
        return tuple(map(sum, zip(*results)))

    a, b = np.empty((n_chunks, 3)), np.empty((n_chunks, 3))
    la, lb = np.empty(n_chunks), np.empty(n_chunks)
    assert K.multi_em(post, w, SUM_TOL, True, True, a, la, 0, n_chunks) == (0, 0)
    assert counts(in_pieces(K.multi_em, n_chunks, post, w, SUM_TOL, True, True, b, lb)) == (0, 0)
    np.testing.assert_array_equal(la, lb)
    a2, b2 = np.empty_like(a), np.empty_like(a)
    la2, lb2 = np.empty(n_chunks), np.empty(n_chunks)
    assert K.multi_em(post, w, SUM_TOL, False, True, a2, la2, 0, n_chunks) == (0, 0)
    assert counts(in_pieces(K.multi_em, n_chunks, post, w, SUM_TOL, False, True, b2, lb2)) == (0, 0)
    np.testing.assert_array_equal(a2, b2)
    np.testing.assert_array_equal(la2, lb2)
    a3 = np.empty_like(a)
    K.multi_em(post, w, SUM_TOL, False, None, a3, np.empty(0), 0, n_chunks)  # no log-likelihood: same sums
    np.testing.assert_array_equal(a3, a2)
    # Log-likelihood: sums of EM_CHUNK logs (each within an ulp or so), |log s| <= log 5 here.
    loglik = np.log(post @ w)
    rtol = (K.EM_CHUNK + n_chunks) * np.finfo(np.float64).eps
    np.testing.assert_allclose(la.sum(), loglik.sum(), rtol=rtol)
    np.testing.assert_allclose(la2, [loglik[c * K.EM_CHUNK:(c + 1) * K.EM_CHUNK].sum() for c in range(n_chunks)],
                               rtol=rtol)
    # Same sums in another order (four rows at a time): each of the ~EM_CHUNK terms
    # of a chunk's sum is rounded once more or less, so they differ by ~EM_CHUNK ulp.
    np.testing.assert_allclose(a2, a, rtol=K.EM_CHUNK * np.finfo(np.float64).eps)
    np.testing.assert_array_equal(a, b)
    p = post[:, 0].copy()
    a1, b1 = np.empty(n_chunks), np.empty(n_chunks)
    l1, m1 = np.empty(n_chunks), np.empty(n_chunks)
    p[5] = np.nan
    assert K.binary_em(p, 0.3, 1.0, True, True, a1, l1, 0, n_chunks) == sum(
        in_pieces(K.binary_em, n_chunks, p, 0.3, 1.0, True, True, b1, m1)) == 1
    assert K.binary_em(p, 0.3, 1.0, False, True, a1, l1, 0, n_chunks) == 0
    np.testing.assert_array_equal(a1, b1)
    p[5] = 0.5
    K.binary_em(p, 0.3, 1.0, False, True, a1, l1, 0, n_chunks)
    K.binary_em(p, 0.3, 1.0, False, None, b1, np.empty(0), 0, n_chunks)
    np.testing.assert_array_equal(a1, b1)
    np.testing.assert_allclose(l1.sum(), np.log(0.3 * (1 - p) + p).sum(), rtol=rtol)
    want = (post * w) / (post * w).sum(axis=1, keepdims=True)
    # positive terms: sums of EM_CHUNK rows, merged over the chunks (NumPy's pairwise sum is far better)
    rtol = (K.EM_CHUNK + n_chunks) * np.finfo(np.float64).eps
    np.testing.assert_allclose(a.sum(axis=0), want.sum(axis=0), rtol=rtol)


def test_em_results_do_not_depend_on_parallel_threshold():
    # big enough for the parallel path, compared with the serial kernels run by hand
    post, _ = _gaussian_prior_shift(PARALLEL_MIN_SIZE, [0.6, 0.4], [0.5, 0.5], seed=5)
    with pytest.warns(ConvergenceWarning):
        res = estimate_priors_em(post, [0.5, 0.5], max_iter=3, accelerate=False)
    pi = np.array([0.5, 0.5])
    n_chunks = -(-post.shape[0] // K.EM_CHUNK)
    part = np.empty((n_chunks, 2))
    for _ in range(3):
        w = pi / 0.5
        w = w / w.max()
        K.multi_em(post, w, SUM_TOL, True, None, part, np.empty(0), 0, n_chunks)
        pi = part.sum(axis=0) / post.shape[0]
        pi /= pi.sum()
    np.testing.assert_allclose(res.priors, pi, rtol=1e-14)


def test_em_non_convergence_warns():
    post, _ = _gaussian_prior_shift(5_000, [0.7, 0.2, 0.1], [1 / 3] * 3, seed=6)
    with pytest.warns(ConvergenceWarning, match="did not converge in 2 EM iterations"):
        res = estimate_priors_em(post, [1 / 3] * 3, max_iter=2)
    assert not res.converged and res.n_iter == 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = estimate_priors_em(post, [1 / 3] * 3)
    assert res.converged
    assert "PriorEMResult(priors=[" in repr(res) and "converged=True" in repr(res)
    assert pickle.loads(pickle.dumps(res)).n_iter == res.n_iter


def test_em_identity_when_priors_unchanged():
    train = np.array([0.2, 0.5, 0.3])
    post, _ = _gaussian_prior_shift(100_000, train, train, seed=7)
    res = estimate_priors_em(post, train)
    assert res.converged
    assert np.abs(res.priors - train).max() < 0.01


def test_em_vanishing_class():
    # a class absent from the new population: its prior goes towards 0, no NaN
    train = np.array([0.5, 0.5])
    post = np.column_stack([np.ones(1000), np.zeros(1000)])
    post[:10] = [0.5, 0.5]
    res = estimate_priors_em(post, train)  # pi_1 <- 0.01 pi_1 each iteration
    assert res.converged and res.n_iter < 10
    assert not np.isnan(res.priors).any() and not np.isnan(res.proba).any()
    assert res.priors[1] < 1e-8
    hard = estimate_priors_em(np.column_stack([np.ones(10), np.zeros(10)]), train)
    assert hard.converged and hard.priors[1] == 0.0 and not np.isnan(hard.proba).any()
    np.testing.assert_array_equal(hard.proba, [[1.0, 0.0]] * 10)


def test_em_bad_input():
    post = _dirichlet_rows(100, 3)
    tr = [0.2, 0.3, 0.5]
    with pytest.raises(ValueError, match="^max_iter must be an integer >= 1; got"):
        estimate_priors_em(post, tr, max_iter=0)
    with pytest.raises(TypeError, match="^max_iter must be an integer"):
        estimate_priors_em(post, tr, max_iter=10.5)
    with pytest.raises(ValueError, match="^tol must be a real number > 0 and finite; got"):
        estimate_priors_em(post, tr, tol=0)
    with pytest.raises(ValueError, match="^tol must be a real number > 0 and finite; got"):
        estimate_priors_em(post, tr, tol=np.nan)
    with pytest.raises(ValueError, match="^proba must have at least one row"):
        estimate_priors_em(np.empty((0, 3)), tr)
    with pytest.raises(ValueError, match="^proba has 3 columns but train_priors has 2"):
        estimate_priors_em(post, [0.5, 0.5])
    with pytest.raises(ValueError, match="^A 1-D proba holds"):
        estimate_priors_em(post[:, 0], tr)
    with pytest.raises(ValueError, match="^proba must be a 1-D array"):
        estimate_priors_em(np.float64(0.5), 0.5)
    with pytest.raises(ValueError, match="^train_priors must sum to 1"):
        estimate_priors_em(post, [0.2, 0.3, 0.4])
    bad = post.copy()
    bad[7, 0] = np.nan
    with pytest.raises(ValueError, match="^proba must hold probabilities"):
        estimate_priors_em(bad, tr)
    bad = post.copy()
    bad[7] = [0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match="^The rows of proba must sum to 1"):
        estimate_priors_em(bad, tr)
    with pytest.raises(ValueError, match="^proba must hold probabilities"):
        estimate_priors_em(np.array([0.2, -0.1]), 0.5)


# ---------------------------------------------------------------------------
# the worked example of issue 4, the public names, the benchmarks
# ---------------------------------------------------------------------------


def test_worked_example_undersampling():
    from fastcal.examples.undersampling import run

    fig = run(verbose=False)
    assert 0.030 < fig["true_rate"] < 0.040
    assert fig["mean_before"] > 4 * fig["true_rate"]  # several times the true rate
    assert abs(fig["mean_after"] / fig["true_rate"] - 1) < 0.10  # within 10% after correction
    assert abs(fig["auc_after"] - fig["auc_before"]) <= 1e-12
    assert 0.55 < fig["auc_before"] < 0.70
    assert fig["mean_bias_shift"] == pytest.approx(fig["mean_after"], rel=1e-9)


def test_public_names():
    for name in ["adjust_priors", "correct_negative_sampling", "estimate_priors_em", "negative_sampling_logit_offset"]:
        assert getattr(fastcal, name) is getattr(fastcal.prior, name)


def test_compare_rows_quick():
    from benchmarks import compare_prior

    rows = list(compare_prior.rows(quick=True))
    assert rows and all(r.subject == "prior" and r.ours > 0 and r.peers for r in rows)


def test_asv_suite_smoke(monkeypatch):
    from benchmarks import bench_prior

    for cls in [getattr(bench_prior, n) for n in dir(bench_prior) if n.startswith("Time")]:
        params = [p[0] for p in cls.params] if cls.params and isinstance(cls.params[0], list) else [cls.params[0]]
        obj = cls()
        obj.setup(*params)
        for meth in [m for m in dir(obj) if m.startswith("time_")]:
            getattr(obj, meth)(*params)
        if hasattr(obj, "teardown"):
            obj.teardown(*params)


def _overlapping(n, k, spread, seed):
    """Posteriors of heavily overlapping classes (unit-variance Gaussians with means in [-spread, spread]), uniform training priors."""
    rng = np.random.default_rng(seed)
    new = rng.dirichlet(np.ones(k) * 2)
    mu = np.linspace(-spread, spread, k)
    x = rng.normal(mu[rng.choice(k, n, p=new)])
    logits = -((x[:, None] - mu[None, :]) ** 2) / 2
    post = np.exp(logits - logits.max(axis=1, keepdims=True))
    return post / post.sum(axis=1, keepdims=True), np.full(k, 1 / k)


@pytest.mark.parametrize(("k", "spread"), [(2, 0.25), (3, 0.75)])
def test_squarem_same_fixed_point_in_far_fewer_passes(k, spread):
    # Measured: plain EM 476 and 1418 passes to tol=1e-14, SQUAREM 7 and 56.
    post, train = _overlapping(10_000, k, spread, seed=k)
    data, tr = (post[:, 1], train[1]) if k == 2 else (post, train)
    # Plain EM's linear rate is near 1 here: stopped on a step of 1e-14, it is within
    # 1e-14 / (1 - rate) of the fixed point, about 1e-12.
    plain = estimate_priors_em(data, tr, tol=1e-14, max_iter=100_000, accelerate=False)
    fast = estimate_priors_em(data, tr, tol=1e-14, max_iter=100_000)
    assert plain.converged and fast.converged
    np.testing.assert_allclose(fast.priors, plain.priors, rtol=0, atol=1e-10)
    assert 5 * fast.n_iter <= plain.n_iter, (fast.n_iter, plain.n_iter)
    default_plain = estimate_priors_em(data, tr, max_iter=100_000, accelerate=False)
    default_fast = estimate_priors_em(data, tr)
    assert default_fast.converged and 5 * default_fast.n_iter <= default_plain.n_iter
    # At the default tol, plain EM stops further from the fixed point than SQUAREM.
    assert np.abs(default_fast.priors - plain.priors).max() <= np.abs(default_plain.priors - plain.priors).max()


def _linear_em(fixed, rate, loglik=None):
    """A fake EM map F(pi) = fixed + rate (pi - fixed), recording where it is evaluated."""
    seen = []

    def step(pi):
        seen.append(pi.copy())
        ll = -float(np.abs(pi - fixed).sum()) if loglik is None else loglik(pi)
        return fixed + rate * (pi - fixed), ll

    return step, seen


def _iterate(step, start, max_iter, tol, accelerate=True):
    """:func:`fastcal.prior.iterate_em` from ``start``: ``(pi, last change, converged)``."""
    pi, delta, converged, _ = iterate_em(step, start, max_iter, tol, accelerate)
    return pi, delta, converged


def test_squarem_safeguards():
    fixed = np.array([0.3, 0.7])
    # A linear map: the S3 extrapolation lands on the fixed point (r and v are parallel), up to
    # rounding amplified by alpha^2 ~ 1e4; a stop on a step <= tol of a map of rate 0.99 is within
    # tol / (1 - 0.99) of the fixed point. Plain EM needs ~2700 passes.
    step, seen = _linear_em(fixed, 0.99)
    pi, delta, converged = _iterate(step, np.array([0.9, 0.1]), 1000, 1e-12)
    assert converged and np.abs(pi - fixed).max() <= 1e-10 and len(seen) <= 6
    # Extrapolations past the simplex are never evaluated: a map converging quadratically to
    # 0.01, whose first extrapolation from 0.5 lands at -0.43.
    seen = []

    def quadratic(pi):
        seen.append(pi.copy())
        f = 0.01 + (pi[0] - 0.01) ** 2
        return np.array([f, 1.0 - f]), -abs(pi[0] - 0.01)

    pi, _, converged = _iterate(quadratic, np.array([0.5, 0.5]), 1000, 1e-13)
    assert converged and abs(pi[0] - 0.01) <= 1e-13
    assert all((s > 0).all() and (s < 1).all() for s in seen)
    # A log-likelihood that punishes every point EM itself did not produce: every extrapolation
    # is rejected, and SQUAREM falls back to the plain EM iterates, to the same point.
    start = np.array([0.9, 0.1])
    produced = {start.tobytes()}

    def on_path(pi):
        return 0.0 if pi.tobytes() in produced else -1.0

    inner, seen = _linear_em(fixed, 0.9, loglik=on_path)

    def step(pi):
        new, ll = inner(pi)
        if ll == 0.0:  # the map of an EM iterate is the next one
            produced.add(new.tobytes())
        return new, ll

    pstep, pseen = _linear_em(fixed, 0.9)
    ref, _, _ = _iterate(pstep, start, 1000, 1e-10, accelerate=False)
    pi, _, converged = _iterate(step, start, 1000, 1e-10)
    assert converged
    np.testing.assert_array_equal(pi, ref)
    # Out of passes: not converged, no more passes than allowed.
    calls = []
    step, seen = _linear_em(fixed, 0.999, loglik=lambda pi: calls.append(1) or -float(len(calls)))  # always worse
    pi, delta, converged = _iterate(step, start, 7, 1e-14)
    assert not converged and len(seen) == 7 and delta > 1e-14


# ---------------------------------------------------------------------------
# The EM as an engine (fastcal.prior.rows over ListRows, the reference adapter)
# ---------------------------------------------------------------------------


def _em_rows(proba, cuts):
    cols = (proba,) if proba.ndim == 1 else tuple(proba.T)
    return ListRows([tuple(c[a:b] for c in cols) for a, b in zip(cuts[:-1], cuts[1:])])


def _em_cases():
    post, _ = _gaussian_prior_shift(3 * K.EM_CHUNK + 100, [0.5, 0.2, 0.3], [1 / 3] * 3, seed=8)
    p = expit(np.random.default_rng(8).normal(-1.0, 2.0, 3 * K.EM_CHUNK + 100))
    return [(post, [1 / 3] * 3), (p, 0.5)]


@pytest.mark.parametrize("accelerate", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_em_engine_equals_in_memory(accelerate, dtype):
    for proba, train in _em_cases():
        proba = proba.astype(dtype)
        ref = estimate_priors_em(proba, train, accelerate=accelerate, tol=1e-12)
        n = proba.shape[0]
        # One chunk, or chunks of EM_CHUNK rows: the same fixed chunks and merges, bit for bit.
        for cuts in ([0, n], [*range(0, n, K.EM_CHUNK), n]):
            pi, n_iter, converged = eprior.estimate_priors_em(
                _em_rows(proba, cuts), x_dtype=dtype, train_priors=train, accelerate=accelerate, tol=1e-12)
            assert pi.tobytes() == ref.priors.tobytes() and n_iter == ref.n_iter and converged
        # Other cuts (empty and one-row chunks) round the sums of each chunk first, a few ulp (about 1e-15
        # relative) from the in-memory merge: EM may stop a step apart, each within tol / (1 - rate) of the
        # fixed point; the rate of these problems is below 0.9 (plain EM's steps shrink at least tenfold in 20).
        cuts = [0, 0, 1, 1000, 5000, 5001, n - 7, n, n]
        pi, _, converged = eprior.estimate_priors_em(
            _em_rows(proba, cuts), x_dtype=dtype, train_priors=train, accelerate=accelerate, tol=1e-12)
        assert converged
        np.testing.assert_allclose(pi, ref.priors, rtol=0, atol=2 * 1e-12 / (1 - 0.9))


def test_em_engine_errors_and_warnings_are_the_in_memory_ones():
    proba, train = _em_cases()[0]
    bad = proba.copy()
    bad[5000, 1] = np.nan
    for args in ((bad, train), (proba[:, :2], train), (proba, [0.5, 0.5])):
        with pytest.raises(ValueError) as mem:
            estimate_priors_em(*args)
        with pytest.raises(ValueError) as eng:
            x = args[0]
            eprior.estimate_priors_em(_em_rows(x, [0, 100, x.shape[0]]), x_dtype=x.dtype, train_priors=args[1])
        assert str(eng.value) == str(mem.value)
    with pytest.raises(ValueError, match="at least one row"):
        eprior.estimate_priors_em(ListRows([(proba[:0, 0],)]), x_dtype=np.float64, train_priors=0.5)
    with pytest.raises(ValueError, match="max_iter"):
        eprior.estimate_priors_em(_em_rows(proba, [0, 10]), x_dtype=np.float64, train_priors=train, max_iter=0)
    with pytest.warns(ConvergenceWarning) as record:
        pi, n_iter, converged = eprior.estimate_priors_em(_em_rows(proba, [0, 10, 200]), x_dtype=np.float64,
                                                          train_priors=train, max_iter=2, accelerate=False)
    assert n_iter == 2 and not converged
    assert [w.filename for w in record] == [__file__]  # the line that called the driver, as in memory
