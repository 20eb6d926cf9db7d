"""fastcal.smooth_ece: against an exact O(n m) evaluation (with its error bound), relplot, and invariants."""

import numpy as np
import pytest
import relplot
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

import fastcal
from fastcal.smooth import _ece as S

from . import naive_smooth as naive
from .strategies import probabilities
from .threads import MANY, num_threads


def miscalibrated(n, power=1.3, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    p = rng.beta(2, 3, n)
    y = (rng.random(n) < p**power).astype(np.uint8)
    return y, p.astype(dtype)


# ---------------------------------------------------------------------------
# the exact definition, and the documented error bound
# ---------------------------------------------------------------------------
@settings(max_examples=25, deadline=None)
@given(probabilities(min_size=1, max_size=120, weighted=True), st.sampled_from([0.03, 0.08, 0.2, 0.6]))
def test_fixed_bandwidth_within_the_documented_bound_of_the_exact_value(data, sigma):
    y, p, w = data
    got = fastcal.smooth_ece(y, p, bandwidth=sigma, sample_weight=w)
    exact = naive.smece(y, p, sigma, w)
    # the two discretisations' bounds, each derived in its docstring (rounding: n * eps, far below)
    tol = got.error_bound + naive.quadrature_bound(y, p, sigma, w) + 1e-12
    assert abs(got.ece - exact) <= tol
    assert got.bandwidth == sigma


def test_the_bound_is_not_vacuous():
    """An error of the size the bound allows is visible: a kernel off by one image or a grid off by half a
    cell moves the answer by far more than the bound."""
    y, p = miscalibrated(300, power=2.0, seed=3)
    r = fastcal.smooth_ece(y, p, bandwidth=0.05)
    exact = naive.smece(y, p, 0.05)
    assert r.error_bound < 5e-6
    assert abs(r.ece - exact) <= r.error_bound + naive.quadrature_bound(y, p, 0.05)
    shifted = naive.smece(y, np.clip(p + 0.5 / S.GRID, 0, 1), 0.05)
    assert abs(shifted - exact) > 1e-7
    one_sided = (p - y) @ (naive.reflected_kernel(np.linspace(0, 1, 4001), p, 0.05)
                            - naive.reflected_kernel(np.linspace(0, 1, 4001), -p, 0.05) / 2)
    assert abs(naive.abs_integral(one_sided, 1 / 4000) / p.size - exact) > 1e-3


@settings(max_examples=30, deadline=None)
@given(probabilities(min_size=1, max_size=300, weighted=True))
def test_grid_sums_are_linear_binning(data):
    """The residual channel is not binned but derived (x_b W_b - Y_b + h (D_b - D_{b-1})): it must equal the
    linear binning of w (p - y), rows at and beyond the end nodes included."""
    y, p, w = S.check_inputs(*data)
    got = S.grid_sums(p, y, w)
    x = p.astype(np.float64)
    yy = (y != 0).astype(np.float64)
    ww = np.ones_like(x) if w is None else w
    want = naive.linear_binning(x, np.stack([ww, ww * yy, ww * (x - yy)], axis=1), S.GRID)
    # Both add the same <= n terms per node (each at most w) in other orders, and R_b adds four products
    # of magnitude <= W_b + Y_b: |error| <= (2 n + 8) eps (W_b + Y_b).
    tol = (2 * x.size + 8) * np.finfo(float).eps * (want[:, 0] + want[:, 1])
    assert np.all(np.abs(got - want) <= tol[:, None])


@pytest.mark.parametrize("halvings", [1, 3])
def test_pyramid_levels_are_linear_binning_of_the_nodes(halvings):
    rng = np.random.default_rng(halvings)
    sums = rng.standard_normal((S.GRID, 3))
    pyramid = S.Pyramid(sums)
    want = sums[:, 2]
    for k in range(halvings):
        fine = S.GRID >> k
        want = naive.linear_binning((np.arange(fine) + 0.5) / fine, want, fine // 2)
    got = pyramid.grid(S.GRID >> halvings, 2)
    # four terms per node and level, weights 3/4 and 1/4 exact: rounding only
    assert_allclose(got, want, rtol=0, atol=1e-13)
    # mass kept at every level
    assert abs(got.sum() - sums[:, 2].sum()) < 1e-9


@pytest.mark.parametrize("root", [0.3, 1e-3, 1 - 1e-6, 1.0])
def test_root_finder_stops_within_its_tolerance(root):
    def g(s):  # increasing with slope >= 1, like sigma - smECE_sigma, and not linear
        calls.append(s)
        return s - root + 0.2 * np.tanh(5 * (s - root))

    calls = []
    x = S.find_root(g, 1e-4, 1.0, 1e-10)
    assert abs(x - root) <= 1e-10 and x in calls and len(calls) < 40


@pytest.mark.parametrize("power, seed", [(1.0, 0), (1.5, 1), (0.6, 2)])
def test_fixed_point_equals_naive_bisection(power, seed):
    y, p = miscalibrated(80, power, seed)
    w = np.random.default_rng(seed).uniform(0.2, 2.0, p.size)
    got = fastcal.smooth_ece(y, p, sample_weight=w)
    sigma = naive.fixed_point(y, p, w, m=2000, tol=1e-8)
    # both find the root of sigma - smECE_sigma, whose slope is >= 1: an error delta in the function moves the
    # root by at most delta (the two bounds), plus the bisection tolerances
    delta = got.error_bound + naive.quadrature_bound(y, p, sigma, w, m=2000) + 2e-8
    assert abs(got.bandwidth - sigma) <= delta
    assert abs(got.ece - got.bandwidth) <= 1e-9
    assert abs(got.ece - naive.smece(y, p, got.bandwidth, w, m=2000)) <= delta


def test_smoothed_curve_and_density():
    y, p = miscalibrated(200, 1.5, 4)
    r = fastcal.smooth_ece(y, p, bandwidth=0.07)
    curve, density = naive.smoothed_curve(y, p, 0.07, r.x)
    # linear binning moves each kernel by at most (h^2/8) max|phi''| = h^2 / (8 sqrt(2 pi) sigma^3) relative
    # to its peak 1/(sqrt(2 pi) sigma): ~1e-9 here
    assert_allclose(r.density, density, rtol=1e-7, atol=1e-9)
    assert_allclose(r.y, curve, rtol=1e-7, atol=1e-9)
    assert abs(np.trapezoid(r.density, r.x) - 1) < 1e-4  # a density on [0, 1] (trapezoid error ~ h^2)
    assert r.x[0] == 0 and r.x[-1] == 1


# ---------------------------------------------------------------------------
# relplot, the peer
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("power, seed, n", [(1.0, 0, 20_000), (1.3, 1, 20_000), (2.0, 2, 5_000), (0.8, 3, 50_000)])
def test_equals_relplot(power, seed, n):
    y, p = miscalibrated(n, power, seed)
    theirs, width = relplot.smECE(p, y.astype(np.float64), return_width=True)
    ours = fastcal.smooth_ece(y, p)
    # the tolerance: relplot stops its bisection at a 2^-10 bracket and discretises its kernel (its own
    # answer moves by ~2e-4 when its grid is refined)
    assert abs(ours.ece - theirs) < 1e-3
    assert abs(ours.bandwidth - width) < 2**-10 + 1e-3
    # at relplot's bandwidth, only its discretisation differs
    assert abs(fastcal.smooth_ece(y, p, bandwidth=width).ece - theirs) < 5e-4


# ---------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------
def test_monotone_in_bandwidth():
    y, p = miscalibrated(2000, 1.0, 5)
    values = [fastcal.smooth_ece(y, p, bandwidth=s) for s in (0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)]
    for a, b in zip(values, values[1:]):
        assert b.ece <= a.ece + a.error_bound + b.error_bound


def test_weights_repetition_scaling_and_symmetry():
    y, p = miscalibrated(500, 1.4, 6)
    k = np.random.default_rng(6).integers(0, 4, 500)
    r_w = fastcal.smooth_ece(y, p, sample_weight=k)
    r_rep = fastcal.smooth_ece(np.repeat(y, k), np.repeat(p, k))
    # the same sums in another order: rounding only
    assert_allclose([r_w.ece, r_w.bandwidth], [r_rep.ece, r_rep.bandwidth], rtol=1e-9)
    r_scaled = fastcal.smooth_ece(y, p, sample_weight=k * 0.37)
    assert_allclose(r_scaled.ece, r_w.ece, rtol=1e-9)
    # the kernel and the grid are symmetric about 1/2
    r = fastcal.smooth_ece(y, p)
    r_flip = fastcal.smooth_ece(1 - y, 1 - p)
    assert_allclose(r_flip.ece, r.ece, rtol=1e-9)
    assert_allclose(r_flip.y[::-1], 1 - r.y, atol=1e-9)


def test_labels_dtypes_and_input_handling():
    y, p = miscalibrated(1000, 1.2, 7)
    base = fastcal.smooth_ece(y, p)
    assert fastcal.smooth_ece(y.astype(bool), p) == base
    assert fastcal.smooth_ece(np.where(y == 1, 1, -1), p) == base
    assert fastcal.smooth_ece(y.astype(np.float64), p.reshape(-1, 1)) == base
    # float32 predictions are read as they are: the result is that of their float64 values
    p32 = p.astype(np.float32)
    assert fastcal.smooth_ece(y, p32) == fastcal.smooth_ece(y, p32.astype(np.float64))
    ro_y, ro_p = y.copy(), p.copy()
    ro_y.flags.writeable = ro_p.flags.writeable = False
    assert fastcal.smooth_ece(ro_y, ro_p) == base
    big = np.zeros((2000, 2))
    big[::2, 1] = p
    assert fastcal.smooth_ece(y.tolist(), big[::2, 1]) == base
    copies = y.copy(), p.copy()
    fastcal.smooth_ece(y, p)
    assert np.array_equal(copies[0], y) and np.array_equal(copies[1], p)


def test_perfect_and_worst_predictions():
    # every prediction equal to its group's frequency: the smoothed residual is 0 everywhere
    p = np.repeat([0.25, 0.75], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    r = fastcal.smooth_ece(y, p)
    assert r.ece < 1e-15 and r.bandwidth == S.SIGMA_MIN
    # always wrong with certainty, in one direction: a residual of 1 everywhere
    r = fastcal.smooth_ece([0, 0, 0], [1.0, 1.0, 1.0])
    assert r.ece == pytest.approx(1.0) and r.bandwidth == 1.0


def test_multiclass_top_label_is_the_binary_problem_of_confidences():
    rng = np.random.default_rng(8)
    logits = rng.normal(size=(3000, 4)) * 2
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(4, p=row ** 0.7 / (row ** 0.7).sum()) for row in P])
    got = fastcal.smooth_ece(y, P)
    conf, correct = P.max(axis=1), (P.argmax(axis=1) == y).astype(np.uint8)
    assert got == fastcal.smooth_ece(correct, conf)
    # relplot's own top-label reduction
    f, acc = relplot.metrics.multiclass_logits_to_confidences(P, y, probs=True)
    assert abs(got.ece - relplot.smECE(f, acc)) < 1e-3
    assert fastcal.smooth_ece(y, P.astype(np.float32)) == fastcal.smooth_ece(correct, conf.astype(np.float32))
    # labels of all classes, in sorted order, as score_decomposition reads them
    names = np.array(["ant", "bee", "cat", "dog"])
    assert fastcal.smooth_ece(names[y], P) == got
    assert fastcal.smooth_ece(y + 10, P) == got
    assert fastcal.smooth_ece(y.astype(np.float64), P) == got
    assert fastcal.score_decomposition(names[y], P) == fastcal.score_decomposition(y, P)


def test_same_bits_on_any_number_of_threads():
    # 20 chunks, the last one partial, binned in rounds of different sizes at different thread counts
    n = S.CHUNK_ROWS * 19 + 12345
    assert [S.round_chunks(20, t) for t in (1, 2, 3, 8, 16)] == [8, 8, 12, 15, 15]
    y, p = miscalibrated(n, 1.1, 9)
    w = np.random.default_rng(9).random(n).astype(np.float32)
    with num_threads(1):
        serial = S.grid_sums(p, y, w)
    for threads in (2, 3, MANY, 8, 16):
        with num_threads(threads):
            assert np.array_equal(S.grid_sums(p, y, w), serial)
    w64 = w.astype(np.float64)
    assert_allclose(serial.sum(axis=0), [w64.sum(), w64 @ y, w64 @ (p - y)], rtol=1e-9)


def test_bad_input():
    y = np.array([0, 1, 1, 0])
    p = np.array([0.1, 0.9, 0.6, 0.4])
    with pytest.raises(ValueError, match="y_prob must be finite.*NaN"):
        fastcal.smooth_ece(y, [0.1, np.nan, 0.2, 0.3])
    with pytest.raises(ValueError, match="y_prob must be finite.*infinity"):
        fastcal.smooth_ece(y, [0.1, np.inf, 0.2, 0.3])
    with pytest.raises(ValueError, match=r"y_prob has values outside \[0, 1\]"):
        fastcal.smooth_ece(y, [0.1, 1.5, 0.2, 0.3])
    with pytest.raises(ValueError, match="y_true.*y_prob"):
        fastcal.smooth_ece(y, p[:3])
    with pytest.raises(ValueError, match="y_true must hold binary labels"):
        fastcal.smooth_ece([0, 1, 2, 0], p)
    with pytest.raises(ValueError, match="sample_weight"):
        fastcal.smooth_ece(y, p, sample_weight=[1, -1, 1, 1])
    with pytest.raises(ValueError, match="y_true must have at least 1 element"):
        fastcal.smooth_ece([], [])
    with pytest.raises(ValueError, match="y_true has 3 classes .* but y_prob has 2 columns"):
        fastcal.smooth_ece([0, 2, 5], [[0.5, 0.5], [0.2, 0.8], [0.1, 0.9]])
    with pytest.raises(ValueError, match="y_true contains only one label .*pass labels"):
        fastcal.smooth_ece([0.5, 0.5], [[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(ValueError, match="labels is for an \\(n, k\\) y_prob"):
        fastcal.smooth_ece(y, p, labels=[0, 1])
    with pytest.raises(ValueError, match="y_true must not contain NaN"):
        fastcal.smooth_ece([np.nan, 0.0], [[0.5, 0.5], [0.2, 0.8]])
    with pytest.raises(TypeError, match="y_prob"):
        fastcal.smooth_ece(y, ["a", "b", "c", "d"])
    for bad in (0, -0.1, 1e-5, "0.1", True, float("nan")):
        with pytest.raises(fastcal.InvalidParameterError, match="bandwidth"):
            fastcal.smooth_ece(y, p, bandwidth=bad)


def test_result_object():
    y, p = miscalibrated(100)
    r = fastcal.smooth_ece(y, p)
    d = r.to_dict()
    assert set(d) == {"ece", "bandwidth", "error_bound", "x", "y", "density"}
    assert "ece=" in repr(r) and "x=" not in repr(r)
