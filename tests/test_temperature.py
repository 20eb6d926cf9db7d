"""Temperature scaling against scikit-learn, a naive SciPy reference and its invariants."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp, softmax
from sklearn.calibration import _TemperatureScaling

import fastcal
from fastcal import TemperatureScaling
from fastcal import temperature
from fastcal.temperature import loss_derivatives

from .threads import serial_and_parallel


def make_logits(n, k, sharpness, seed):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3
    p = softmax(z * sharpness, axis=1)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return z, np.minimum(y, k - 1)


def naive_beta(z, y, w=None):
    w = np.ones(len(y)) if w is None else w

    def loss(log_beta):
        b = np.exp(log_beta)
        return np.sum(w * (logsumexp(b * z, axis=1) - b * z[np.arange(len(y)), y]))

    return np.exp(minimize_scalar(loss, bounds=(-10, 10), method="bounded", options={"xatol": 1e-12}).x)


@given(n=st.integers(20, 2000), k=st.integers(2, 12), sharpness=st.sampled_from([0.2, 0.5, 1.0, 2.0]),
       seed=st.integers(0, 2**32 - 1), weighted=st.booleans())
@settings(max_examples=40, deadline=None)
def test_matches_sklearn_and_naive(n, k, sharpness, seed, weighted):
    z, y = make_logits(n, k, sharpness, seed)
    w = np.random.default_rng(seed).uniform(0.1, 2, n) if weighted else None
    ours = TemperatureScaling(input_type="logits").fit(z, y, sample_weight=w)
    theirs = _TemperatureScaling().fit(z, y, sample_weight=w)
    assert ours.converged_
    assert_allclose(ours.predict_proba(z), theirs.predict(z), atol=1e-5)
    if np.all(z.argmax(axis=1) == y):
        # Separable: the loss falls towards 0 as beta grows, so the minimiser
        # is the upper bound; Brent's method stops anywhere on the flat loss.
        assert ours.beta_ == np.exp(10)
        return
    assert_allclose(ours.beta_, theirs.beta_, rtol=1e-5)
    assert_allclose(ours.beta_, naive_beta(z, y, w), rtol=1e-5)
    # Gradient ~ 0 at the optimum (unless the optimum is at a bound). Newton stops within 2 tol beta of the
    # minimiser, where g = h * distance; g is a sum of n row terms |g_i| <= ptp(z_i), each computed within
    # (k + 4) eps ptp(z_i), so rounding (at the end and in the last step) adds (n + k + 4) eps sum w ptp(z) twice.
    _, g, h, *_ = loss_derivatives(z, y.astype(np.int64), np.empty(0) if w is None else w, ours.beta_)
    if np.exp(-10) * 1.001 < ours.beta_ < np.exp(10) * 0.999:
        rounding = (n + k + 4) * np.finfo(np.float64).eps * np.sum((1.0 if w is None else w) * np.ptp(z, axis=1))
        assert abs(g) <= 2 * ours.tol * h * ours.beta_ + 2 * rounding


@pytest.mark.parametrize("k", [2, 4])
def test_probabilities_and_binary_decision_values_like_sklearn(k):
    z, y = make_logits(3000, k, 0.5, 1)
    p = softmax(z, axis=1)
    assert_allclose(TemperatureScaling().fit(p, y).beta_, _TemperatureScaling().fit(p, y).beta_, rtol=1e-5)
    assert_allclose(TemperatureScaling(input_type="probabilities").fit(p, y).beta_,
                    _TemperatureScaling().fit(p, y).beta_, rtol=1e-5)
    d = z[:, 0] - z[:, 1]
    yb = (y == 0).astype(int)
    ours = TemperatureScaling().fit(d, yb)
    theirs = _TemperatureScaling().fit(d, yb)
    assert_allclose(ours.beta_, theirs.beta_, rtol=1e-5)
    assert ours.predict_proba(d).shape == (3000, 2)
    assert_allclose(ours.predict_proba(d), theirs.predict(d), atol=1e-6)


def test_argmax_and_sharpness():
    z, y = make_logits(5000, 5, 0.3, 2)  # the logits are over-confident: true sharpness 0.3
    ts = TemperatureScaling().fit(z, y)
    assert 0.2 < ts.beta_ < 0.4 and abs(ts.temperature_ - 1 / ts.beta_) < 1e-15
    proba = ts.predict_proba(z)
    assert_array_equal(proba.argmax(axis=1), z.argmax(axis=1))
    assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)


def test_weights_equal_repeated_rows():
    z, y = make_logits(400, 3, 0.5, 3)
    reps = np.random.default_rng(3).integers(1, 4, 400)
    a = TemperatureScaling().fit(z, y, sample_weight=reps.astype(float))
    b = TemperatureScaling().fit(np.repeat(z, reps, axis=0), np.repeat(y, reps))
    assert_allclose(a.beta_, b.beta_, rtol=1e-10)


def test_float32_kept_and_parallel_equals_serial():
    z, y = make_logits(40_000, 4, 0.5, 4)
    z32 = z.astype(np.float32)
    ts = TemperatureScaling().fit(z32, y)
    assert ts.predict_proba(z32).dtype == np.float32
    assert_allclose(ts.beta_, TemperatureScaling().fit(z, y).beta_, rtol=1e-5)
    labels = y.astype(np.int64)
    for zz in (z, z32):
        for w in (np.empty(0), np.random.default_rng(5).random(z.shape[0])):
            serial, parallel = serial_and_parallel(loss_derivatives, zz, labels, w, 0.7)
            assert serial == parallel
        serial, parallel = serial_and_parallel(ts.predict_proba, zz)
        assert_array_equal(serial, parallel)


@pytest.mark.parametrize("k, sharpness, weighted, dtype", [(10, 0.5, False, np.float64), (3, 2.0, True, np.float64),
                                                        (20, 0.2, False, np.float32), (2, 1.0, True, np.float64)])
def test_large_fits_start_from_a_subsample_and_take_two_passes(k, sharpness, weighted, dtype):
    # Above SUBSAMPLE_MIN rows the full fit starts from a subsample's fit; Halley steps from there, and the
    # stop on the cubic model of the gradient, converge in two passes over the full data, to the same minimiser.
    n = 3 * temperature.SUBSAMPLE_MIN
    z, y = make_logits(n, k, sharpness, k)
    z = z.astype(dtype)
    w = np.random.default_rng(k).uniform(0.1, 2, n) if weighted else None
    ours = TemperatureScaling(input_type="logits").fit(z, y, sample_weight=w)
    assert ours.converged_ and ours.n_iter_ == 2
    # scikit-learn fits float32 logits in float32 (4e-4 off here); fastcal sums in float64: compare on the same values.
    assert_allclose(ours.beta_, _TemperatureScaling().fit(z.astype(np.float64), y, sample_weight=w).beta_, rtol=1e-5)
    labels, ww = y.astype(np.int64), (np.empty(0) if w is None else w)
    # The same minimiser as the fit from 1.0 on all rows, which stops on the step size alone: both stop within
    # tol relative of it (the model's stop at tol / 2), so they agree to 2 tol, plus the rounding floor of the
    # gradient as below (relative to beta: rounding / (h beta)).
    _, g, h, *_ = loss_derivatives(z, labels, ww, ours.beta_)
    spread = np.ptp(z.astype(np.float64), axis=1)
    rounding = (n + k + 4) * np.finfo(np.float64).eps * np.sum((1.0 if w is None else w) * spread)
    assert abs(g) <= 2 * ours.tol * h * ours.beta_ + 2 * rounding
    plain, _, converged = temperature.halley_minimize(lambda b: loss_derivatives(z, labels, ww, b), 100, ours.tol)
    assert converged
    assert abs(plain - ours.beta_) <= 2 * ours.tol * ours.beta_ + 4 * rounding / h


def test_subsample_at_a_bound_gives_no_start():
    # Separable rows: the subsample's fit ends at e^10, which is no start; the full fit ends there too.
    n = temperature.SUBSAMPLE_MIN
    z = np.tile(np.array([[2.0, 0.0], [0.0, 2.0]]), (n // 2, 1))
    y = np.tile([0, 1], n // 2)
    labels = y.astype(np.int64)
    assert temperature.warm_start(z, labels, np.empty(0), 100) == 1.0
    ts = TemperatureScaling().fit(z, y)
    assert ts.converged_ and abs(ts.beta_ - np.exp(10)) / np.exp(10) < 1e-6


def test_optimum_at_the_bound():
    # Separable data: the loss keeps decreasing as beta grows; beta stops at e^10.
    z = np.array([[1.0, 0.0], [0.0, 1.0]] * 10)
    y = np.array([0, 1] * 10)
    ts = TemperatureScaling().fit(z, y)
    assert ts.converged_ and abs(ts.beta_ - np.exp(10)) / np.exp(10) < 1e-6


def test_round_trip(tmp_path):
    z, y = make_logits(500, 3, 0.5, 5)
    ts = TemperatureScaling(input_type="logits").fit(z, y)
    ts.save(tmp_path / "t.json")
    loaded = fastcal.load(tmp_path / "t.json")
    assert_array_equal(loaded.predict_proba(z), ts.predict_proba(z))
    data = ts.to_dict()
    data["state"]["beta_"] = 1e9
    with pytest.raises(ValueError, match="beta_ is outside"):
        TemperatureScaling.from_dict(data)


@pytest.mark.parametrize(
    "kwargs, X, y, match",
    [
        (dict(input_type="probabilities"), [[0.5, 0.6], [0.2, 0.8]], [0, 1], "must sum to 1"),
        (dict(input_type="probabilities"), [[1.5, -0.5], [0.2, 0.8]], [0, 1], "probabilities in"),
        (dict(input_type="probabilities"), [0.3, 0.4], [0, 1], "one column per class"),
        ({}, [[0.0, np.nan], [1.0, 0.0]], [0, 1], "X must be finite"),
        ({}, [[0.0, 1.0], [1.0, 0.0]], [0, 2], "class indices in 0 .. 1"),
        ({}, [[0.0, 1.0], [1.0, 0.0]], [0, 0.5], "integer class indices"),
        ({}, [[0.0, 1.0], [1.0, 0.0]], [0, 1, 1], "Inconsistent numbers"),
        ({}, np.zeros((2, 2, 2)), [0, 1], "1-D or 2-D"),
        ({}, [[0.0, 1.0], [1.0, 0.0]], [0, 1], None),
        (dict(input_type="softmax"), [[0.0, 1.0]], [0], "input_type must be 'auto', 'logits' or 'probabilities'"),
        (dict(max_iter=0), [[0.0, 1.0]], [0], "max_iter"),
    ],
)
def test_errors(kwargs, X, y, match):
    if match is None:
        with pytest.raises(ValueError, match="sample_weight must be non-negative"):
            TemperatureScaling(**kwargs).fit(X, y, sample_weight=[1.0, -1.0])
        return
    with pytest.raises(ValueError, match=match):
        TemperatureScaling(**kwargs).fit(X, y)


def test_predict_errors():
    with pytest.raises(fastcal.NotFittedError):
        TemperatureScaling().predict_proba([[0.0, 1.0]])
    ts = TemperatureScaling().fit([[0.0, 1.0], [1.0, 0.0]], [0, 1])
    with pytest.raises(ValueError, match="fitted on 2"):
        ts.predict_proba([[0.0, 1.0, 2.0]])


def test_non_convergence_warns():
    z, y = make_logits(500, 3, 0.5, 6)
    with pytest.warns(fastcal.ConvergenceWarning, match="did not converge in 1 Newton iterations"):
        ts = TemperatureScaling(max_iter=1).fit(z, y)
    assert not ts.converged_


def test_logits_too_large_are_an_error_not_a_converged_start():
    # beta * X overflows: never the start value labelled converged.
    rng = np.random.default_rng(9)
    S = rng.uniform(-1, 1, (500, 3))
    y = rng.integers(0, 3, 500)
    with pytest.raises(ValueError, match="^X: the logits are too large in magnitude"):
        TemperatureScaling().fit(S * 1e308, y)
    # Large but workable logits: the minimiser on [e^-10, e^10] is the lower bound, as in scikit-learn.
    ts = TemperatureScaling().fit(S * 1e200, y)
    assert ts.converged_ and ts.beta_ == pytest.approx(np.exp(-10.0), rel=1e-12)


def test_loss_and_derivatives_against_naive():
    # Per row: lse = logsumexp(beta l); p = softmax(beta l); loss = lse - beta l_y,
    # gradient = E_p[l] - l_y, curvature = Var_p[l]. Each row's terms are within a few ulp of
    # the float64 reference (exp within 1.1 ulp, log within 2 ulp), the sums over 5000 rows of
    # magnitude up to ~50 add 5000 eps relative at most: rtol 1e-11.
    z, y = make_logits(5000, 7, 1.5, 11)
    w = np.random.default_rng(2).uniform(0.1, 2.0, z.shape[0])
    for beta in (0.3, 1.0, 4.0):
        for ww in (np.empty(0), w):
            weights = ww if ww.shape[0] else np.ones(z.shape[0])
            bz = beta * z
            p = softmax(bz, axis=1)
            rows = np.arange(z.shape[0])
            loss = logsumexp(bz, axis=1) - bz[rows, y]
            mean = (p * z).sum(axis=1)
            grad = mean - z[rows, y]
            hess = (p * (z - mean[:, None]) ** 2).sum(axis=1)
            expected = [(weights * v).sum() for v in (loss, grad)]
            with_loss = loss_derivatives(z, y.astype(np.int64), ww, beta, want_loss=True)
            assert_allclose(with_loss[0], expected[0], rtol=1e-11, atol=1e-11 * np.abs(weights * loss).sum())
            fit_pass = loss_derivatives(z, y.astype(np.int64), ww, beta)  # what the fit runs: no loss
            assert fit_pass[0] == 0.0
            for got in (with_loss, fit_pass):
                assert_allclose(got[1], expected[1], rtol=1e-11, atol=1e-11 * np.abs(weights * loss).sum())
                # The kernel's curvature is E[d^2] - E[d]^2: cancellation loses up to log10(E[d^2] / Var)
                # digits, under 3 for logits of spread ~3 with k = 7.
                assert_allclose(got[2], (weights * hess).sum(), rtol=1e-9)
                # Third and fourth derivatives: the cumulants kappa_3 = E[c^3], kappa_4 = E[c^4] - 3 Var^2 (c = l - E[l]),
                # which the kernel forms from raw moments of d = l - max(l): kappa_3 = m3 - 3 m2 m1 + 2 m1^3 and
                # kappa_4 = m4 - 4 m3 m1 - 3 m2^2 + 12 m2 m1^2 - 6 m1^4. Each m_j is within (k + 4) eps relative of
                # E|d|^j (k exps and additions, a division) and products of moments are bounded by E|d|^j, so a
                # row's error is below (1 + 3 + 2) (k + 4) eps E|d|^3, resp. 26 (k + 4) eps E|d|^4; the sum over
                # n rows adds n eps of the sum of those magnitudes.
                eps = np.finfo(np.float64).eps
                c = z - mean[:, None]
                d = np.abs(z - z.max(axis=1, keepdims=True))
                var = (p * c**2).sum(axis=1)
                k3 = (p * c**3).sum(axis=1)
                k4 = (p * c**4).sum(axis=1) - 3 * var**2
                for got_j, kappa, j, coef in ((got[3], k3, 3, 6), (got[4], k4, 4, 26)):
                    scale = (weights * (p * d**j).sum(axis=1)).sum()
                    assert abs(got_j - (weights * kappa).sum()) <= (coef * (z.shape[1] + 4) + z.shape[0]) * eps * scale
