"""The Newton driver (fastcal._engine.newton) on objectives written here in NumPy: any number of parameters."""

import math

import numpy as np
import pytest
import statsmodels.api as sm
from numpy.testing import assert_allclose

from fastcal._engine import newton as _newton

pytestmark = pytest.mark.nojit  # plain Python: also run with NUMBA_DISABLE_JIT=1 (make test)


class LogisticObjective:
    """sum_i w_i [log(1 + e^z_i) - (1 - t_i) z_i], z = X theta, in NumPy (the protocol of fastcal._engine.newton)."""

    def __init__(self, X, t, w=None, sub=None):
        self.X, self.t = X, t
        self.w = np.ones(X.shape[0]) if w is None else w
        self.n, self.k = X.shape
        self.total_weight = float(self.w.sum())
        self.bounds = tuple(np.abs(X[self.w > 0]).max(axis=0))
        self.sub = sub
        self.calls = 0

    def stats(self, theta, want_loss=False):
        self.calls += 1
        z = self.X @ np.asarray(theta)
        p = 1 / (1 + np.exp(-z))  # P(target 0) in Platt's sign convention: d/dz log(1 + e^z) = p
        f = float(np.sum(self.w * (np.logaddexp(0, z) - (1 - self.t) * z))) if want_loss else 0.0
        g = self.X.T @ (self.w * (p - (1 - self.t)))
        h = (self.X * (self.w * p * (1 - p))[:, None]).T @ self.X
        return [f, *g, *h[np.triu_indices(self.k)]]

    def subsample(self):
        return self.sub


def beta_features(p):
    """Beta calibration's features (Kull et al. 2017): log p, -log(1 - p), 1."""
    return np.stack([np.log(p), -np.log1p(-p), np.ones_like(p)], axis=1)


def data(n, seed):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.random(n) < p ** 1.5).astype(float)
    return p, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_three_parameters_equal_statsmodels(seed):
    p, y = data(5000, seed)
    X = beta_features(p)
    w = np.random.default_rng(seed).uniform(0, 3, p.size)
    obj = LogisticObjective(X, y, w)
    res = _newton.solve(obj, (0.0, 0.0, 0.0), 1e-10, 100)
    assert res.converged and res.n_passes == obj.calls
    # Platt's sign: P(y = 1) = 1 / (1 + e^z), so statsmodels' coefficients are -theta.
    ref = sm.GLM(y, X, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-14).params
    # Both stop within ~sqrt(tol) relative of the optimum before their last step.
    assert_allclose(-np.array(res.theta), ref, rtol=1e-7, atol=1e-9)
    # The stopping rule: the decrement per unit weight at the last point evaluated is below tol.
    assert res.decrement <= 1e-10


def test_fixed_parameters_stay_fixed():
    p, y = data(3000, 3)
    obj = LogisticObjective(beta_features(p), y)
    res = _newton.minimize(obj, (1.0, 0.5, 0.0), 1e-12, 100, free=(2,))
    assert res.converged and res.theta[:2] == (1.0, 0.5)
    # Only the intercept moves: its gradient is zero at the result.
    st = obj.stats(res.theta)
    assert abs(st[3]) <= 1e-6 * obj.total_weight


def test_warm_start_from_a_subsample_changes_passes_not_the_answer():
    p, y = data(20_000, 4)
    X = beta_features(p)
    sub = LogisticObjective(X[::16], y[::16])
    warm = LogisticObjective(X, y, sub=sub)
    cold = LogisticObjective(X, y)
    r_warm = _newton.solve(warm, (0.0, 0.0, 0.0), 1e-12, 100)
    r_cold = _newton.solve(cold, (0.0, 0.0, 0.0), 1e-12, 100)
    assert sub.calls > 0
    assert r_warm.n_passes < r_cold.n_passes
    assert_allclose(r_warm.theta, r_cold.theta, rtol=1e-6)


def test_singular_hessian_falls_back_to_a_gradient_step():
    # A feature that is zero on every row: H is singular, and the direction is a
    # gradient step with the trace of H as step length (a safeguard, not fast).
    p, y = data(2000, 5)
    X = np.column_stack([beta_features(p)[:, :1], np.zeros(p.size), np.ones(p.size)])
    obj = LogisticObjective(X, y)
    obj.bounds = (obj.bounds[0], 1.0, 1.0)
    d, lam2, M = _newton.direction(obj, obj.stats((0.0, 0.0, 0.0)), (0, 1, 2))
    assert d[1] == 0.0 and lam2 > 0 and math.isfinite(M)
    # The step is a descent step along -g scaled by the trace: the objective decreases.
    st = obj.stats((0.0, 0.0, 0.0))
    assert_allclose(d, -np.array(st[1:4]) / (st[4] + st[7] + st[9]))
    res = _newton.minimize(obj, (0.0, 0.0, 0.0), 1e-10, 5)
    assert res.theta[1] == 0.0
    assert obj.stats(res.theta, True)[0] < obj.stats((0.0, 0.0, 0.0), True)[0]


def test_non_finite_sums_stop_without_converging():
    p, y = data(100, 6)
    obj = LogisticObjective(beta_features(p), y)
    obj.stats = lambda theta, want_loss=False: [0.0, math.nan, 0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0]
    res = _newton.minimize(obj, (0.0, 0.0, 0.0), 1e-10, 100)
    assert not res.converged and res.n_iter == 0


def test_max_iter_stops():
    p, y = data(3000, 7)
    obj = LogisticObjective(beta_features(p), y)
    res = _newton.minimize(obj, (5.0, -5.0, 3.0), 1e-14, 1)
    assert res.n_iter == 1 and not res.converged and res.decrement > 1e-14


@pytest.mark.parametrize("seed", [0, 1])
def test_fits_run_together_share_passes_and_keep_their_results(seed):
    # Three solves of one objective (all parameters, two of them fixed, a hard start) in lockstep: each gets the
    # result of its own minimize, bit for bit, and each round answers every unfinished one, so the rounds number
    # the most passes of any one, not their sum.
    p, y = data(4000, seed)
    obj = LogisticObjective(beta_features(p), y, np.random.default_rng(seed).uniform(0, 3, p.size))
    problems = [((0.0, 0.0, 0.0), None), ((1.0, 0.5, 0.0), (2,)), ((2.0, -2.0, 1.0), (0, 2))]
    alone = [_newton.minimize(obj, start, 1e-10, 100, free) for start, free in problems]
    rounds = []

    def stats_many(requests):
        rounds.append(len(requests))
        return [obj.stats(*r) for r in requests]

    together = _newton.run_together([_newton.minimize_steps(obj, start, 1e-10, 100, free)
                                     for start, free in problems], stats_many)
    assert together == alone
    assert len(rounds) == max(r.n_passes for r in alone) < sum(r.n_passes for r in alone)
    assert sum(rounds) == sum(r.n_passes for r in alone)


@pytest.mark.parametrize("m", [4, 7, 40])
def test_the_machine_code_cholesky_has_the_python_solves_bits(m):
    # Systems of more than three free parameters are solved by fastcal._engine._kernels.cholesky_solve: the
    # operations of solve_spd_many on Python floats in the same order, so the same bits; both refuse a matrix
    # that is not positive definite.
    from fastcal._engine import _kernels

    rng = np.random.default_rng(m)
    A = rng.normal(size=(m, m))
    H = A @ A.T + 1e-3 * np.eye(m)
    g = rng.normal(size=m)
    want = _newton.solve_spd(H.tolist(), g.tolist())
    out = np.empty(m)
    assert _kernels.cholesky_solve(H, g, out)
    assert out.tolist() == want
    assert_allclose(H @ out, -g, rtol=1e-8, atol=1e-8 * np.abs(g).max())
    H[m // 2, m // 2] = -1.0
    assert _newton.solve_spd(H.tolist(), g.tolist()) is None
    assert not _kernels.cholesky_solve(H, g, out)
