"""Platt scaling and the calibration slope: against scikit-learn, statsmodels, SciPy, a naive reference and the invariants."""

import math
import pickle
import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import NotFittedError, PlattScaling, calibration_slope_intercept, platt_scaling
from fastcal._engine import newton as _newton
from fastcal._core import math_kernels as math_kernels
from fastcal.platt import _kernels as kernels
from fastcal.beta import _kernels as beta_kernels
from fastcal._core.parallel import n_chunks
from fastcal._engine.chunked import merge_in_order
from fastcal import outofcore
from fastcal import platt as platt_module
from fastcal.platt import ConvergenceWarning, PlattResult, SlopeInterceptResult, merge_prep

from . import naive_platt as naive
from .strategies import scores_and_labels
from .threads import in_pieces, serial_and_parallel

HYPO = settings(max_examples=60, deadline=None)


def sk_sigmoid(s, y, w=None):
    """scikit-learn's sigmoid calibration fit, (a, b), on float64 scores."""
    from sklearn.calibration import _SigmoidCalibration

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cal = _SigmoidCalibration().fit(np.asarray(s, dtype=np.float64), y, sample_weight=w)
    return float(cal.a_), float(cal.b_)


def overconfident(n, seed=0, dtype=np.float64, slope=0.5, shift=0.0):
    """Scores s ~ N(0, 2) with P(y = 1 | s) = sigmoid(slope * s + shift)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(slope * s + shift)))).astype(np.uint8)
    return s.astype(dtype), y


def not_worse(ours, peer, s, y, w=None):
    """Platt's objective at the parameters ``ours = (a, b)`` is at most that at ``peer``, within the
    error of evaluating the two (:func:`naive_platt.platt_objective_and_error`)."""
    f_ours, e_ours = naive.platt_objective_and_error(*ours, s, y, w)
    f_peer, e_peer = naive.platt_objective_and_error(*peer, s, y, w)
    return f_ours <= f_peer + e_ours + e_peer


def normalised_gradient(a, b, s, y, w=None):
    """|dF/da| / (rms(s) W) and |dF/db| / W at (a, b): the gradient in (a * rms(s), b) per unit
    weight, scale-free, ~0 at the optimum."""
    s64 = np.asarray(s, dtype=np.float64)
    ww = np.ones(len(s64)) if w is None else np.asarray(w, dtype=np.float64)
    _, ga, gb, *_ = naive.platt_gradient_hessian(a, b, s64, y, ww, loss=False)
    W = ww.sum()
    rms = np.sqrt(np.average(s64**2, weights=ww))
    return (abs(ga) / (rms * W) if rms > 0 else 0.0), abs(gb) / W


# ---------------------------------------------------------------------------
# Kernels: fused pass, serial == parallel (the elementary functions: tests/test_math_kernels.py)
# ---------------------------------------------------------------------------


def _pass(s, y, w, a, b, loss, center=0.0, scale=1.0, pieces=False):
    """The fused pass's sums, from one call on all blocks, or from :func:`in_pieces`."""
    buf = np.empty((n_chunks(len(s), kernels.CHUNK), kernels.N_STATS))
    args = (s, y, w, center, scale, a, b, 0.9, 0.1, 0.2, 0.8, True if loss else None, buf)
    if pieces:
        in_pieces(kernels.newton_pass, buf.shape[0], *args)
    else:
        kernels.newton_pass(*args, 0, buf.shape[0])
    return merge_in_order(buf)


def summation_bound(n, abs_sum, term_ulps=10):
    """Worst-case error of the kernels' blocked float64 sum of ``n`` terms whose magnitudes sum to ``abs_sum``.

    Each block of ``CHUNK`` terms is summed in some order (the order of the
    vectorised partial sums depends on the CPU's vector width), then the
    blocks in order: at most ``(CHUNK - 1) + (blocks - 1)`` roundings touch a
    term, each of relative size ``eps`` (Higham, *Accuracy and Stability of
    Numerical Algorithms*, 4.2), on top of each term's own error of a few ulp.
    """
    depth = min(n, kernels.CHUNK) + n_chunks(n, kernels.CHUNK) + term_ulps
    return depth * np.finfo(np.float64).eps * abs_sum


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_dtype", [np.uint8, np.int64, np.float64])
def test_fused_pass_matches_naive_and_pieces_equal_whole(dtype, weighted, label_dtype):
    rng = np.random.default_rng(2)
    n = 3 * kernels.CHUNK + 123
    s = rng.normal(0, 3, n).astype(dtype)
    y = (rng.random(n) < 0.4).astype(label_dtype)
    w = rng.uniform(0, 2, n).astype(dtype) if weighted else None
    t = np.where(y > 0, 0.9, 0.2)
    for a, b in [(-0.7, 0.3), (5.0, -40.0), (0.0, 0.0)]:
        serial = _pass(s, y, w, a, b, True)
        parallel = _pass(s, y, w, a, b, True, pieces=True)
        assert_array_equal(serial, parallel)
        no_loss = _pass(s, y, w, a, b, False, pieces=True)
        assert no_loss[0] == 0.0
        assert_array_equal(no_loss[1:], parallel[1:])
        # Naive sums with the same targets.
        s64 = s.astype(np.float64)
        ww = np.ones(n) if w is None else w.astype(np.float64)
        z = a * s64 + b
        p = np.exp(-np.logaddexp(0, z))
        r, v = ww * (t - p), ww * p * (1 - p)
        ref = [np.sum(ww * (np.logaddexp(0, z) - (1 - t) * z)), np.sum(r * s64), np.sum(r),
               np.sum(v * s64 * s64), np.sum(v * s64), np.sum(v)]
        scale = [np.sum(ww * (np.logaddexp(0, z) + np.abs((1 - t) * z))), np.sum(np.abs(r * s64)), np.sum(np.abs(r)),
                 ref[3], ref[4], ref[5]]
        assert np.all(np.abs(serial - ref) <= summation_bound(n, np.abs(scale)) + 1e-300)


def test_fused_pass_centre_and_scale():
    rng = np.random.default_rng(3)
    s = rng.normal(1e6, 3, 5000)
    y = (rng.random(5000) < 0.5).astype(np.uint8)
    got = _pass(s, y, None, -0.25, 0.1, True, center=1e6, scale=0.125)
    x = (s - 1e6) * 0.125
    z = -0.25 * x + 0.1
    p = 1 / (1 + np.exp(z))
    t = np.where(y > 0, 0.9, 0.2)
    ga, haa = (t - p) * x, p * (1 - p) * x * x
    assert abs(got[1] - np.sum(ga)) <= summation_bound(s.size, np.sum(np.abs(ga)))
    assert abs(got[3] - np.sum(haa)) <= summation_bound(s.size, np.sum(haa))


def test_one_sided_precision_of_t_minus_p():
    # z = 40: p = exp(-40) ~ 4e-18; t - p must keep p's contribution (no 1 - p cancellation).
    s = np.array([40.0, -40.0])
    y = np.array([0, 1], dtype=np.uint8)
    buf = np.empty((1, kernels.N_STATS))
    tiny = 1e-20
    kernels.newton_pass(s, y, None, 0.0, 1.0, 1.0, 0.0, 1.0 - tiny, tiny, tiny, 1.0 - tiny, True, buf, 0, 1)
    st_ = merge_in_order(buf)
    # Row 0: t = tiny, p = e^-40/(1+e^-40); row 1: 1 - t = tiny, 1 - p = e^-40/(1+e^-40).
    e = math.exp(-40) / (1 + math.exp(-40))
    assert_allclose(st_[2], (tiny - e) + (e - tiny), atol=1e-30)
    assert_allclose(st_[5], 2 * e * (1 - e), rtol=1e-14)
    assert_allclose(st_[0], 2 * (math.log1p(math.exp(-40)) + tiny * 40), rtol=1e-14)


@pytest.mark.parametrize("weighted", [False, True])
def test_warm_start_subsample_is_the_evenly_spaced_blocks(weighted):
    rng = np.random.default_rng(6)
    n = 300_000
    s = rng.normal(size=n).astype(np.float32)
    y = (rng.random(n) < 0.3).astype(np.uint8)
    w = rng.uniform(0, 2, n) if weighted else None
    fraction = 0.2
    m = round(n * fraction)
    length = min(4096, max(64, m // 256))
    starts = np.linspace(0, n - length, m // length).astype(np.int64)

    def blocks(a):
        return None if a is None else np.concatenate([a[i:i + length] for i in starts])

    serial, parallel = serial_and_parallel(platt_module.subsample, s, y, w, fraction)
    for got in (serial, parallel):
        for g, a in zip(got, (s, y, w)):
            if a is None:
                assert g is None
            else:
                assert g.dtype == a.dtype and g.tobytes() == blocks(a).tobytes()


@pytest.mark.parametrize("weighted", [False, True])
def test_prep_and_logit_passes_pieces_equal_whole(weighted):
    rng = np.random.default_rng(4)
    n = 2 * kernels.CHUNK + 7
    s = rng.normal(0, 1, n)
    y = (rng.random(n) < 0.3).astype(np.uint8)
    w = rng.uniform(0, 1, n) if weighted else None
    nc = n_chunks(n, kernels.CHUNK)

    def prep(pieces):
        ibuf, fbuf = np.empty((nc, kernels.N_PREP_INT), np.int64), np.empty((nc, kernels.N_PREP_FLOAT))
        if pieces:
            in_pieces(kernels.prep, nc, s, y, w, ibuf, fbuf)
        else:
            kernels.prep(s, y, w, ibuf, fbuf, 0, nc)
        return merge_prep(ibuf, fbuf)

    (i1, f1), (i2, f2) = prep(False), prep(True)
    assert_array_equal(i1, i2)
    assert_array_equal(f1, f2)
    assert math_kernels.key_to_float(i1[5]) == s.min() and math_kernels.key_to_float(i1[6]) == s.max()
    keep = slice(None) if w is None else w > 0
    assert math_kernels.key_to_float(i1[3]) == s[keep].min() and math_kernels.key_to_float(i1[4]) == s[keep].max()

    p = 1 / (1 + np.exp(-s))
    x1, x2 = np.empty(n), np.empty(n)
    args = (np.empty((nc, kernels.N_LOGIT_INT), np.int64), np.empty((nc, kernels.N_LOGIT_FLOAT)))
    kernels.logit(y, p, w, 2.2e-16, x1, *args, 0, nc)
    (j1, g1) = merge_prep(*args)
    args = (np.empty((nc, kernels.N_LOGIT_INT), np.int64), np.empty((nc, kernels.N_LOGIT_FLOAT)))
    in_pieces(kernels.logit, nc, y, p, w, 2.2e-16, x2, *args)
    (j2, g2) = merge_prep(*args)
    assert_array_equal(x1, x2)
    assert_array_equal(j1, j2)
    assert_array_equal(g1, g2)
    assert_allclose(x1, naive.clipped_logit(p), rtol=1e-14, atol=1e-15)


# ---------------------------------------------------------------------------
# platt_scaling: peers and the naive reference
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n", [100, 1000, 20_000])
@pytest.mark.parametrize("seed", [0, 1])
def test_matches_sklearn_sigmoid_calibration(n, seed):
    s, y = overconfident(n, seed, shift=0.4 * seed)
    res = platt_scaling(s, y)
    a_sk, b_sk = sk_sigmoid(s, y)
    assert res.converged
    assert_allclose([res.a, res.b], [a_sk, b_sk], rtol=1e-5)
    assert not_worse((res.a, res.b), (a_sk, b_sk), s, y)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weighted_matches_sklearn_and_repeated_rows(seed):
    s, y = overconfident(2000, seed)
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 4, s.size).astype(np.float64)
    res = platt_scaling(s, y, sample_weight=w)
    a_sk, b_sk = sk_sigmoid(s, y, w)
    assert_allclose([res.a, res.b], [a_sk, b_sk], rtol=1e-5)
    assert not_worse((res.a, res.b), (a_sk, b_sk), s, y, w)
    rep = platt_scaling(np.repeat(s, w.astype(int)), np.repeat(y, w.astype(int)))
    assert_allclose([res.a, res.b], [rep.a, rep.b], rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_matches_scipy_minimize(seed):
    s, y = overconfident(3000, seed, slope=1.3, shift=-1.0)
    w = np.random.default_rng(seed).uniform(0.1, 2, s.size)
    for weights in (None, w):
        res = platt_scaling(s, y, sample_weight=weights)
        a_ref, b_ref = naive.platt_fit_scipy(s, y, weights)
        assert_allclose([res.a, res.b], [a_ref, b_ref], rtol=1e-8)
        assert max(normalised_gradient(res.a, res.b, s, y, weights)) < 1e-10


@pytest.mark.parametrize("n, seed", [(3, 0), (100, 0), (1000, 1), (20_000, 2)])
def test_matches_extended_precision_newton(n, seed):
    s, y = overconfident(n, seed)
    w = np.random.default_rng(seed).uniform(0, 2, n)
    for weights in (None, w):
        a_ref, b_ref = naive.platt_fit_longdouble(s, y, weights)
        res = platt_scaling(s, y, sample_weight=weights)
        assert_allclose([res.a, res.b], [a_ref, b_ref], rtol=1e-9)
        tight = platt_scaling(s, y, sample_weight=weights, tol=1e-15)
        assert_allclose([tight.a, tight.b], [a_ref, b_ref], rtol=1e-12)


@pytest.mark.parametrize("weighted", [False, True, "zeros"])
@HYPO
@given(data=st.data())
def test_optimal_on_random_data(weighted, data):
    s, y, w = data.draw(scores_and_labels(min_size=1, max_size=300, weighted=weighted))
    res = platt_scaling(s, y, sample_weight=w)
    assert res.converged and math.isfinite(res.a) and math.isfinite(res.b)
    ours = (res.a, res.b)
    assert not_worse(ours, naive.platt_fit_scipy(s, y, w), s, y, w)
    if s.size > 1:
        assert not_worse(ours, sk_sigmoid(s, y, w), s, y, w)
    assert max(normalised_gradient(res.a, res.b, s, y, w)) < 1e-7


@pytest.mark.parametrize("seed", [0, 1])
def test_float32_reads_the_same_values(seed):
    s, y = overconfident(5000, seed, dtype=np.float32)
    r32 = platt_scaling(s, y)
    r64 = platt_scaling(s.astype(np.float64), y)
    assert (r32.a, r32.b, r32.n_iter) == (r64.a, r64.b, r64.n_iter)  # same float64 arithmetic
    a_sk, b_sk = sk_sigmoid(s, y)  # scikit-learn on the float64 values
    assert_allclose([r32.a, r32.b], [a_sk, b_sk], rtol=1e-5)


def test_float32_is_not_copied_to_float64():
    s, y = overconfident(1 << 20, 3, dtype=np.float32)
    ref = platt_scaling(s, y)  # compile and load kernels outside the measurement
    tracemalloc.start()
    try:
        res = platt_scaling(s, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert res == ref
    # A float64 copy would be 2 * s.nbytes; the warm start's 1/16 subsample is s.nbytes / 16 (+ labels).
    assert peak < s.nbytes // 4


def test_warm_start_does_not_change_the_answer():
    n = platt_module.WARM_START_MIN + 12_345
    s, y = overconfident(n, 5, shift=0.3)
    w = np.random.default_rng(5).uniform(0, 2, n)  # the largest weight in [1, 2): rescaled by 2**0, unchanged

    def fit(weights, warm_start):
        # The fit of every backend (fastcal.platt's internal API), with the warm start from a subsample or without.
        rows = (lambda fraction: platt_module.subsample(s, y, weights, fraction)) if warm_start else None
        return platt_module.fit_passes(platt_module.prepare(s, y, weights), n, weights is not None,
                                       platt_module.array_pass(s, y, weights), rows, 100, 1e-10)

    for weights in (None, w):
        a, b, n_iter, ok, dec, passes = fit(weights, warm_start=True)
        a0, b0, n_iter0, ok0, _, passes0 = fit(weights, warm_start=False)
        assert ok and ok0
        assert_allclose([a, b], [a0, b0], rtol=1e-12)
        assert n_iter < n_iter0 and passes < passes0  # fewer passes over the full data
        res = platt_scaling(s, y, sample_weight=weights)
        assert (res.a, res.b) == (a, b)


def test_big_input_stops_after_few_iterations():
    # libsvm's absolute gradient rule would never stop here; ours is relative to the total weight.
    s, y = overconfident(1 << 19, 6)
    w = np.full(s.size, 1e6)
    res = platt_scaling(s, y, sample_weight=w)
    assert res.converged and res.n_iter <= 4
    assert max(normalised_gradient(res.a, res.b, s, y, w)) < 1e-12
    assert_allclose([res.a, res.b], sk_sigmoid(s, y, w), rtol=1e-5)


def test_line_search_decreases_the_objective_monotonically(monkeypatch):
    # A hard start: separable, shifted scores (Newton's full step overshoots at first).
    rng = np.random.default_rng(7)
    s = np.concatenate([rng.normal(1e3 - 1, 0.3, 300), rng.normal(1e3 + 1, 0.3, 300)])
    y = np.repeat([0, 1], 300).astype(np.uint8)
    seen, objectives = [], []
    steps, search = _newton.minimize_steps, _newton.line_search_steps

    def spy_steps(objective, *args):
        objectives.append(objective)
        return steps(objective, *args)

    def spy_search(passes, theta, *args):
        out = yield from search(passes, theta, *args)
        seen.append((objectives[-1].to_public(*theta), objectives[-1].to_public(*out[0])))
        return out

    monkeypatch.setattr(_newton, "minimize_steps", spy_steps)
    monkeypatch.setattr(_newton, "line_search_steps", spy_search)
    res = platt_scaling(s, y)
    assert res.converged and len(seen) >= 3
    for before, after in seen:
        assert naive.platt_objective(*after, s, y) < naive.platt_objective(*before, s, y)


# ---------------------------------------------------------------------------
# Invariants and degenerate data
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("power", [-1000, -40, -3, 5, 60, 990])
def test_power_of_two_scaling_is_exact(power):
    s, y = overconfident(1500, 8)
    base = platt_scaling(s, y)
    scaled = platt_scaling(s * 2.0**power, y)
    assert scaled.b == base.b and scaled.a == base.a * 2.0**-power


def test_sign_flip():
    s, y = overconfident(1500, 9)
    r = platt_scaling(s, y)
    f = platt_scaling(-s, y)
    assert_allclose([f.a, f.b], [-r.a, r.b], rtol=1e-12)


def test_label_flip_mirrors_the_fit():
    # F(a, b; s, y) = F(-a, -b; s, 1 - y): the targets swap t -> 1 - t.
    s, y = overconfident(1500, 10)
    r = platt_scaling(s, y)
    f = platt_scaling(s, 1 - y)
    assert_allclose([f.a, f.b], [-r.a, -r.b], rtol=1e-10)


@pytest.mark.parametrize("factor", [1e6, 1e300, 1e-300])
def test_huge_and_tiny_scores(factor):
    s, y = overconfident(1000, 11)
    base = platt_scaling(s, y)
    r = platt_scaling(s * factor, y)
    assert r.converged and math.isfinite(r.a) and math.isfinite(r.b)
    assert_allclose([r.a * factor, r.b], [base.a, base.b], rtol=1e-12)


def test_shifted_scores_are_well_conditioned():
    s, y = overconfident(2000, 12)
    base = platt_scaling(s, y)
    r = platt_scaling(s + 1e6, y)
    assert r.converged and r.n_iter < 10
    assert_allclose(r.a, base.a, rtol=1e-8)
    assert_allclose(r.b + r.a * 1e6, base.b, atol=1e-5)
    a_sk, b_sk = sk_sigmoid(s + 1e6, y)
    assert not_worse((r.a, r.b), (a_sk, b_sk), s + 1e6, y)


def test_float32_extremes():
    s, y = overconfident(1000, 13)
    r = platt_scaling((s * 1e37).astype(np.float32), y)
    assert r.converged and math.isfinite(r.a)
    assert_allclose(r.a * 1e37, platt_scaling(s.astype(np.float32).astype(np.float64), y).a, rtol=1e-5)


@pytest.mark.parametrize("label", [0, 1])
def test_one_class_gives_the_constant_target(label):
    s = np.random.default_rng(14).normal(size=50)
    r = platt_scaling(s, np.full(50, label))
    assert (r.a, r.n_iter, r.converged) == (0.0, 0, True)
    assert r.b == (math.log(51) if label == 0 else -math.log(51))
    assert sk_sigmoid(s, np.full(50, label)) == (0.0, r.b)  # scikit-learn stays at its start too
    w = np.full(50, 2.5)
    assert platt_scaling(s, np.full(50, label), sample_weight=w).b == (math.log(126) if label == 0 else -math.log(126))


def test_constant_scores():
    y = np.array([0, 1, 1, 0, 1, 1, 1])
    s = np.full(7, 3.0)
    r = platt_scaling(s, y)
    # p must equal the mean target: (2 t- + 5 t+) / 7 with t+ = 6/7, t- = 1/4.
    mean_t = (2 / 4 + 5 * 6 / 7) / 7
    assert r.a == 0.0 and r.converged
    assert_allclose(1 / (1 + math.exp(r.b)), mean_t, rtol=1e-15)
    a_sk, b_sk = sk_sigmoid(s, y)
    assert not_worse((r.a, r.b), (a_sk, b_sk), s, y)
    # Rows of weight 0 do not count.
    r0 = platt_scaling(np.append(s, -100.0), np.append(y, 0), sample_weight=np.append(np.ones(7), 0.0))
    assert (r0.a, r0.b) == (r.a, r.b)


def test_single_row_and_two_rows():
    r = platt_scaling([0.3], [1])
    assert (r.a, r.b) == (0.0, -math.log(2))
    r = platt_scaling([1.0, 2.0], [0, 1])
    # Targets 1/3 and 2/3 are reached exactly: a = -2 log 2, b = 3 log 2.
    assert_allclose([r.a, r.b], [-2 * math.log(2), 3 * math.log(2)], rtol=1e-12)


def test_separable_scores_give_a_finite_optimum():
    rng = np.random.default_rng(15)
    s = rng.normal(0, 1, 400)
    y = (s > 0.1).astype(int)
    r = platt_scaling(s, y)
    assert r.converged and math.isfinite(r.a) and r.a < -5
    assert max(normalised_gradient(r.a, r.b, s, y)) < 1e-9
    a_sk, b_sk = sk_sigmoid(s, y)
    assert not_worse((r.a, r.b), (a_sk, b_sk), s, y)
    # Far apart: the same, scaled.
    r2 = platt_scaling(np.where(y > 0, s + 1e3, s - 1e3), y)
    assert r2.converged and math.isfinite(r2.a)


def test_input_types_and_layouts():
    s, y = overconfident(800, 16)
    ref = platt_scaling(s, y)
    ro = s.copy()
    ro.flags.writeable = False
    assert platt_scaling(ro, y) == ref
    strided = np.repeat(s, 2)[::2]
    assert platt_scaling(strided, y.astype(bool)) == ref
    assert platt_scaling(s.tolist(), y.tolist()) == ref
    assert platt_scaling(s[:, None], y.astype(np.float32)) == ref
    big_endian = s.astype(">f8")
    assert platt_scaling(big_endian, y.astype(np.int8)) == ref
    assert platt_scaling(s, y, sample_weight=1.0) == ref
    ints = platt_scaling(np.round(s * 10).astype(np.int64), y)
    assert ints == platt_scaling(np.round(s * 10), y)
    s_copy, y_copy = s.copy(), y.copy()
    w = np.ones(s.size)
    platt_scaling(s, y, sample_weight=w)
    assert_array_equal(s, s_copy) and assert_array_equal(y, y_copy)


def test_result_types():
    s, y = overconfident(300, 17)
    r = platt_scaling(s, y)
    assert isinstance(r, PlattResult)
    assert type(r.a) is float and type(r.b) is float and type(r.n_iter) is int and type(r.converged) is bool
    with pytest.raises(AttributeError):
        r.a = 1.0


def test_non_convergence_warns():
    s, y = overconfident(2000, 18)
    with pytest.warns(ConvergenceWarning, match="did not converge in 1 Newton iteration"):
        r = platt_scaling(s, y, max_iter=1)
    assert not r.converged and r.n_iter == 1
    assert issubclass(ConvergenceWarning, UserWarning)
    with pytest.warns(ConvergenceWarning):
        cal = PlattScaling(max_iter=1).fit(s, y)
    assert cal.converged_ is False
    # A loose tolerance converges at once.
    assert platt_scaling(s, y, tol=1.0).converged


def test_tolerance_controls_accuracy():
    s, y = overconfident(5000, 19)
    exact = platt_scaling(s, y, tol=1e-14)
    loose = platt_scaling(s, y, tol=1e-4)
    looser = platt_scaling(s, y, tol=1e-2)
    # A looser tolerance stops earlier, further from the optimum, but within it.
    assert looser.n_iter < loose.n_iter < exact.n_iter
    err = [max(abs(r.a - exact.a) / abs(exact.a), abs(r.b - exact.b) / abs(exact.b)) for r in (loose, looser)]
    assert 0 < err[0] < err[1] < 1e-1
    assert_allclose([loose.a, loose.b], [exact.a, exact.b], rtol=1e-3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(scores=[0.0, np.nan, 1.0]), "scores must be finite"),
        (dict(scores=[0.0, np.inf, 1.0]), "scores must be finite"),
        (dict(y=[0, 2, 1]), "y must contain only the labels 0 and 1"),
        (dict(y=[0, -1, 1]), "y must contain only the labels 0 and 1"),
        (dict(y=[0.0, 0.5, 1.0]), "y must contain only the labels 0 and 1"),
        (dict(y=[0, np.nan, 1]), "y must contain only the labels 0 and 1"),
        (dict(sample_weight=[1.0, -1.0, 1.0]), "sample_weight must be non-negative"),
        (dict(sample_weight=[1.0, np.nan, 1.0]), "sample_weight must be finite"),
        (dict(sample_weight=[0.0, 0.0, 0.0]), r"at least one non-zero number \(sample_weight is all zeros"),
        (dict(sample_weight=[1.0, 1.0]), "sample_weight"),
        (dict(sample_weight=[1e308, 1e308, 1e308]), "sample_weight"),
        (dict(y=[0, 1]), "Inconsistent numbers of samples"),
        (dict(scores=[], y=[]), "scores must have at least 1 element"),
        (dict(scores=[[0.0, 1.0], [1.0, 0.0]], y=[0, 1]), "scores must be a 1-D array"),
        (dict(max_iter=0), "max_iter"),
        (dict(max_iter=-3), "max_iter"),
        (dict(max_iter=2.5), "max_iter"),
        (dict(max_iter=True), "max_iter"),
        (dict(tol=0.0), "tol"),
        (dict(tol=-1e-3), "tol"),
        (dict(tol=np.nan), "tol"),
        (dict(tol="1e-3"), "tol"),
    ],
)
def test_bad_input_raises_value_error_naming_the_argument(kwargs, match):
    args = dict(scores=[0.0, 0.5, 1.0], y=[0, 1, 1])
    args.update(kwargs)
    scores, y = args.pop("scores"), args.pop("y")
    with pytest.raises(ValueError, match=match):
        platt_scaling(scores, y, **args)
    with pytest.raises(ValueError, match=match):
        PlattScaling(**{k: v for k, v in args.items() if k in ("max_iter", "tol")}).fit(
            scores, y, sample_weight=args.get("sample_weight"))


def test_non_numeric_scores_raise():
    with pytest.raises(TypeError, match="scores"):
        platt_scaling(["a", "b"], [0, 1])


# ---------------------------------------------------------------------------
# PlattScaling: the estimator
# ---------------------------------------------------------------------------


def test_estimator_fit_predict_matches_function_and_sklearn():
    from sklearn.calibration import _SigmoidCalibration

    s, y = overconfident(3000, 20)
    cal = PlattScaling().fit(s, y)
    r = platt_scaling(s, y)
    assert (cal.a_, cal.b_, cal.n_iter_, cal.converged_) == (r.a, r.b, r.n_iter, r.converged)
    sk = _SigmoidCalibration()
    sk.a_, sk.b_ = cal.a_, cal.b_
    grid = np.concatenate([np.linspace(-800, 800, 4001), s])
    assert_allclose(cal.predict(grid), sk.predict(grid), rtol=2e-15, atol=0)
    assert_allclose(cal.predict(grid), naive.platt_predict(cal.a_, cal.b_, grid), rtol=1e-13, atol=0)


def test_predict_tails_keep_relative_precision():
    cal = PlattScaling()
    cal.a_, cal.b_ = 1.0, 0.0
    p = cal.predict(np.array([-700.0, -40.0, 0.0, 40.0, 700.0]))
    assert_allclose(p[3:], np.exp([-40.0, -700.0]) / (1 + np.exp([-40.0, -700.0])), rtol=1e-15)
    assert p[2] == 0.5 and p[0] == 1.0
    assert np.all(np.isfinite(cal.predict(np.array([-1e308, 1e308]))))


def test_predict_dtype_layouts_and_parallel():
    s, y = overconfident(100_000, 21)
    cal = PlattScaling().fit(s, y)
    p64 = cal.predict(s)
    assert p64.dtype == np.float64
    p32 = cal.predict(s.astype(np.float32))
    assert p32.dtype == np.float32
    assert_allclose(p32, naive.platt_predict(cal.a_, cal.b_, s.astype(np.float32)), rtol=1e-6)
    assert_array_equal(cal.predict(s[:100]), p64[:100])  # one range == many
    serial, parallel = serial_and_parallel(cal.predict, s)
    assert_array_equal(serial, p64)
    assert_array_equal(parallel, p64)
    assert cal.predict(np.arange(3)).dtype == np.float64
    assert cal.predict(np.empty(0)).shape == (0,)
    assert_array_equal(cal.predict(s[:, None][:50]), p64[:50])
    with pytest.raises(ValueError, match="scores must be finite"):
        cal.predict([0.0, np.nan])
    with pytest.raises(ValueError, match="scores must be finite"):
        cal.predict(np.append(s, np.inf))


def test_estimator_conventions():
    from sklearn.base import clone

    cal = PlattScaling(max_iter=50, tol=1e-8)
    assert cal.get_params() == {"max_iter": 50, "tol": 1e-8}
    assert repr(cal) == "PlattScaling(max_iter=50, tol=1e-08)"
    assert repr(PlattScaling()) == "PlattScaling()"
    with pytest.raises(NotFittedError):
        cal.predict([0.0])
    cloned = clone(cal)
    assert cloned.get_params() == cal.get_params() and cloned is not cal
    s, y = overconfident(500, 22)
    cal.fit(s, y)
    again = pickle.loads(pickle.dumps(cal))
    assert_array_equal(again.predict(s), cal.predict(s))
    assert cal.set_params(max_iter=7) is cal and cal.max_iter == 7
    with pytest.raises(ValueError, match="Invalid parameter"):
        cal.set_params(bogus=1)
    assert not hasattr(PlattScaling(), "a_")


def test_fastcal_namespace():
    for name in ["platt_scaling", "PlattScaling", "PlattResult", "calibration_slope_intercept", "SlopeInterceptResult"]:
        assert getattr(fastcal, name) is getattr(platt_module, name)


# ---------------------------------------------------------------------------
# calibration_slope_intercept
# ---------------------------------------------------------------------------


def statsmodels_logit(y, p, w=None):
    import statsmodels.api as sm

    x = naive.clipped_logit(p)
    X = sm.add_constant(x, has_constant="add")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if w is None:
            fit = sm.Logit(np.asarray(y, dtype=float), X).fit(disp=0, method="newton", tol=1e-14, maxiter=200)
        else:
            fit = sm.GLM(np.asarray(y, dtype=float), X, family=sm.families.Binomial(),
                         freq_weights=np.asarray(w, dtype=float)).fit(tol=1e-14, maxiter=200)
    return fit.params, fit.bse


def statsmodels_citl(y, p, w=None):
    import statsmodels.api as sm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = sm.GLM(np.asarray(y, dtype=float), np.ones((len(y), 1)), family=sm.families.Binomial(),
                     offset=naive.clipped_logit(p),
                     freq_weights=None if w is None else np.asarray(w, dtype=float)).fit(tol=1e-14, maxiter=200)
    return fit.params[0]


def clinical(n, seed, slope=0.7, shift=0.3, dtype=np.float64):
    rng = np.random.default_rng(seed)
    logit = rng.normal(-1.0, 1.5, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-(shift + slope * logit)))).astype(np.int64)
    return y, (1 / (1 + np.exp(-logit))).astype(dtype)


@pytest.mark.parametrize("n, seed", [(60, 0), (1000, 1), (50_000, 2)])
def test_slope_intercept_matches_statsmodels(n, seed):
    y, p = clinical(n, seed)
    r = calibration_slope_intercept(y, p)
    params, bse = statsmodels_logit(y, p)
    assert r.converged
    assert_allclose([r.intercept, r.slope], params, rtol=1e-6)
    assert_allclose([r.intercept_se, r.slope_se], bse, rtol=1e-4)
    assert_allclose(r.calibration_in_the_large, statsmodels_citl(y, p), rtol=1e-6)
    z = 1.959963984540054
    assert_allclose(r.slope_ci, (r.slope - z * r.slope_se, r.slope + z * r.slope_se), rtol=1e-15)
    assert_allclose(r.intercept_ci, (r.intercept - z * r.intercept_se, r.intercept + z * r.intercept_se), rtol=1e-15)


def test_slope_intercept_matches_sklearn_logistic_regression():
    from sklearn.linear_model import LogisticRegression

    y, p = clinical(5000, 3, slope=1.4, shift=-0.5)
    r = calibration_slope_intercept(y, p)
    lr = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(naive.clipped_logit(p)[:, None], y)
    assert_allclose([r.intercept, r.slope], [lr.intercept_[0], lr.coef_[0, 0]], rtol=1e-6)


def test_slope_intercept_matches_naive_irls():
    y, p = clinical(3000, 4)
    w = np.random.default_rng(4).uniform(0, 3, y.size)
    for weights in (None, w):
        r = calibration_slope_intercept(y, p, sample_weight=weights)
        theta, cov = naive.slope_intercept_irls(y, p, weights)
        assert_allclose([r.intercept, r.slope], theta, rtol=1e-9)
        assert_allclose([r.intercept_se, r.slope_se], np.sqrt(np.diag(cov)), rtol=1e-7)
        (citl,), _ = naive.slope_intercept_irls(y, p, weights, offset_only=True)
        assert_allclose(r.calibration_in_the_large, citl, rtol=1e-9)


def test_slope_intercept_weights_are_frequency_weights():
    y, p = clinical(2000, 5)
    w = np.random.default_rng(5).integers(0, 4, y.size)
    r = calibration_slope_intercept(y, p, sample_weight=w)
    rep = calibration_slope_intercept(np.repeat(y, w), np.repeat(p, w))
    assert_allclose([r.slope, r.intercept, r.slope_se, r.intercept_se, r.calibration_in_the_large],
                    [rep.slope, rep.intercept, rep.slope_se, rep.intercept_se, rep.calibration_in_the_large],
                    rtol=1e-9)
    params, bse = statsmodels_logit(y, p, w)
    assert_allclose([r.intercept, r.slope], params, rtol=1e-6)
    assert_allclose([r.intercept_se, r.slope_se], bse, rtol=1e-4)
    assert_allclose(r.calibration_in_the_large, statsmodels_citl(y, p, w), rtol=1e-6)


def test_perfectly_calibrated_predictions():
    rng = np.random.default_rng(6)
    p = rng.uniform(0.02, 0.98, 200_000)
    y = (rng.random(p.size) < p).astype(np.uint8)
    r = calibration_slope_intercept(y, p)
    assert r.slope_ci[0] < 1 < r.slope_ci[1]
    assert r.intercept_ci[0] < 0 < r.intercept_ci[1]
    assert abs(r.calibration_in_the_large) < 3 * r.intercept_se


def test_slope_intercept_big_input_warm_start():
    y, p = clinical(platt_module.WARM_START_MIN + 999, 7)
    r = calibration_slope_intercept(y, p)
    theta, cov = naive.slope_intercept_irls(y, p)
    assert r.converged and r.n_iter <= 4
    assert_allclose([r.intercept, r.slope], theta, rtol=1e-9)
    assert_allclose([r.intercept_se, r.slope_se], np.sqrt(np.diag(cov)), rtol=1e-7)


def test_slope_intercept_clips_zero_and_one():
    y, p = clinical(3000, 8)
    p = p.copy()
    p[:20] = 0.0
    p[20:40] = 1.0
    r = calibration_slope_intercept(y, p)
    assert all(math.isfinite(v) for v in (r.slope, r.intercept, r.slope_se, r.intercept_se, r.calibration_in_the_large))
    eps = np.finfo(np.float64).eps
    clipped = calibration_slope_intercept(y, np.clip(p, eps, 1 - eps))
    assert (r.slope, r.intercept) == (clipped.slope, clipped.intercept)
    params, bse = statsmodels_logit(y, p)
    assert_allclose([r.intercept, r.slope], params, rtol=1e-6)
    # float32: clipped at float32's epsilon.
    r32 = calibration_slope_intercept(y, p.astype(np.float32))
    theta, _ = naive.slope_intercept_irls(y, p.astype(np.float32))
    assert_allclose([r32.intercept, r32.slope], theta, rtol=1e-8)


def test_slope_intercept_float32_and_layouts():
    y, p = clinical(4000, 9, dtype=np.float32)
    r = calibration_slope_intercept(y, p)
    params, bse = statsmodels_logit(y, p)
    assert_allclose([r.intercept, r.slope], params, rtol=1e-6)
    ro = p.copy()
    ro.flags.writeable = False
    assert calibration_slope_intercept(y.astype(bool), ro) == r
    assert calibration_slope_intercept(y.tolist(), np.repeat(p, 2)[::2]) == r
    assert isinstance(r, SlopeInterceptResult)


@pytest.mark.parametrize(
    "y, p, w, match",
    [
        ([0, 1, 1], [0.1, np.nan, 0.3], None, "p must be finite"),
        ([0, 1, 1], [0.1, np.inf, 0.3], None, "p must be finite"),
        ([0, 1, 1], [0.1, 1.5, 0.3], None, r"p must contain probabilities in \[0, 1\]"),
        ([0, 1, 1], [0.1, -0.1, 0.3], None, r"p must contain probabilities in \[0, 1\]"),
        ([0, 2, 1], [0.1, 0.2, 0.3], None, "y must contain only the labels 0 and 1"),
        ([0, 1, 1], [0.1, 0.2, 0.3], [1, -1, 1], "sample_weight must be non-negative"),
        ([0, 1], [0.1, 0.2, 0.3], None, "Inconsistent numbers of samples"),
        ([], [], None, "y must have at least 1 element"),
        ([1, 1, 1], [0.1, 0.2, 0.3], None, "y must contain both classes"),
        ([0, 1, 1], [0.1, 0.2, 0.3], [1, 0, 0], "y must contain both classes"),
        ([0, 1, 0, 1], [0.3, 0.3, 0.3, 0.3], None, "p is constant"),
        ([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], None, "separates the classes"),
        ([0, 0, 1, 1], [0.1, 0.3, 0.3, 0.4], None, "separates the classes"),
        ([1, 1, 0, 0], [0.1, 0.2, 0.3, 0.4], None, "separates the classes"),
        ([0, 0, 1, 1], [0.0, 0.0, 1.0, 1.0], None, "separates the classes"),
    ],
)
def test_slope_intercept_bad_input(y, p, w, match):
    with pytest.raises(ValueError, match=match):
        calibration_slope_intercept(y, p, sample_weight=w)


def test_slope_intercept_does_not_modify_input():
    y, p = clinical(500, 10)
    p[0] = 0.0
    p_copy, y_copy = p.copy(), y.copy()
    calibration_slope_intercept(y, p)
    assert_array_equal(p, p_copy)
    assert_array_equal(y, y_copy)


@HYPO
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(20, 400), weighted=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_slope_intercept_random(seed, n, weighted, dtype):
    rng = np.random.default_rng(seed)
    logit = rng.normal(0, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-0.5 * logit))).astype(np.uint8)
    p = (1 / (1 + np.exp(-logit))).astype(dtype)
    w = rng.uniform(0.1, 2, n) if weighted else None
    x = naive.clipped_logit(p)
    pos, neg = x[y > 0], x[y == 0]
    if pos.size == 0 or neg.size == 0 or neg.max() <= pos.min() or pos.max() <= neg.min():
        with pytest.raises(ValueError):
            calibration_slope_intercept(y, p, sample_weight=w)
        return
    r = calibration_slope_intercept(y, p, sample_weight=w)
    theta, cov = naive.slope_intercept_irls(y, p, w)
    assert r.converged
    assert_allclose([r.intercept, r.slope], theta, rtol=1e-7, atol=1e-9)
    assert_allclose([r.intercept_se, r.slope_se], np.sqrt(np.diag(cov)), rtol=1e-6)


@pytest.mark.parametrize("factor", [1e-310, 1e-320])
def test_slope_that_overflows_is_an_error_not_converged_infinity(factor):
    # The optimum's slope is about 1 / factor: not a float64. An error, never a=-inf labelled converged.
    rng = np.random.default_rng(31)
    s = rng.normal(size=1000)
    y = (rng.random(1000) < 1 / (1 + np.exp(-2 * s))).astype(np.uint8)
    with pytest.raises(ValueError, match="^scores: the fitted sigmoid's slope overflows float64"):
        platt_scaling(s * factor, y)
    with pytest.raises(ValueError, match="^scores: the fitted sigmoid's slope overflows float64"):
        PlattScaling().fit(s * factor, y)
    # Just inside the range: finite, and the scaled answer of the unscaled fit.
    ref = platt_scaling(s, y)
    res = platt_scaling(s * 1e-300, y)
    assert res.converged and math.isfinite(res.a)
    assert_allclose([res.a * 1e-300, res.b], [ref.a, ref.b], rtol=1e-9)


#: The Newton passes' kernels (Platt's and beta's modules, names) and where each takes its labels (the second
#: argument of each).
_LABEL_READERS = ((kernels, "newton_pass"), (kernels, "gather_blocks"), (beta_kernels, "beta_pass"),
                  (kernels, "newton_blocks"), (beta_kernels, "beta_blocks"))


@pytest.mark.parametrize("dtype", [np.int64, np.float32, np.int8, bool])
def test_newton_passes_read_labels_as_bytes(monkeypatch, dtype):
    # Labels of any dtype are checked, then read by the Newton passes as uint8 bytes (one compiled signature per
    # weight and score dtype): in memory, warm-started, per group, out of core, for Platt, beta and the slope.
    seen = []
    for module, name in _LABEL_READERS:
        def spy(*args, _kernel=getattr(module, name), _name=name):
            seen.append((_name, args[1].dtype, args[1].flags.writeable))
            return _kernel(*args)
        monkeypatch.setattr(module, name, spy)
    n = platt_module.WARM_START_MIN + 1000  # a warm start from a subsample
    s, y = overconfident(n, 3, shift=0.2)
    y = y.astype(dtype)
    y.setflags(write=False)
    w = np.random.default_rng(3).uniform(0.5, 2.0, n)
    p = 1.0 / (1.0 + np.exp(-s))
    ref = platt_scaling(s, y)
    assert platt_scaling(s.copy(), y.astype(np.uint8)).a == ref.a  # the same bits as byte labels
    platt_scaling(s, y, sample_weight=w)
    fastcal.BetaCalibration().fit(p, y, sample_weight=w)
    calibration_slope_intercept(y, p)
    groups = np.arange(n) % 3
    fastcal.GroupedCalibrator(PlattScaling()).fit(s[:3000], y[:3000], groups=groups[:3000])
    fastcal.GroupedCalibrator(fastcal.BetaCalibration()).fit(p[:3000], y[:3000], groups=groups[:3000])
    outofcore.fit_platt(s, y, chunk_rows=100_000)
    assert {name for name, *_ in seen} == {name for _, name in _LABEL_READERS}
    assert {(dt, writeable) for _, dt, writeable in seen} == {(np.dtype(np.uint8), True)}
