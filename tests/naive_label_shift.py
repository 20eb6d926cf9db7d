"""A naive reference of RLLS: its second-order cone program in epigraph form, solved by SciPy's SLSQP."""

import math

import numpy as np
from scipy.optimize import minimize


def rlls_objective(C, b, delta, theta):
    return float(np.linalg.norm(C @ theta - b) + delta * np.linalg.norm(theta))


def _slsqp(C, b, delta, theta0):
    k = len(b)
    constraints = [{"type": "ineq", "fun": lambda x: x[k] ** 2 - np.sum((C @ x[:k] - b) ** 2)},
                   {"type": "ineq", "fun": lambda x: x[k + 1] ** 2 - np.sum(x[:k] ** 2)}]
    x0 = np.r_[theta0, np.linalg.norm(C @ theta0 - b) + 1e-3, np.linalg.norm(theta0) + 1e-3]
    res = minimize(lambda x: x[k] + delta * x[k + 1], x0, method="SLSQP", constraints=constraints,
                   bounds=[(-1.0, None)] * k + [(0.0, None)] * 2, options={"ftol": 1e-15, "maxiter": 2000})
    return res.x[:k], bool(res.success)


def rlls_theta(C, b, delta):
    """``(theta, success)``: min over theta >= -1 of ||C theta - b|| + delta ||theta||, as
    min t1 + delta t2 subject to t1^2 >= ||C theta - b||^2, t2^2 >= ||theta||^2, t >= 0; SLSQP from three
    starts (no shift, BBSE's solution clipped to the bound, all weights 2), the best that converged."""
    k = len(b)
    starts = [np.zeros(k), np.maximum(np.linalg.lstsq(C, b, rcond=None)[0], -1.0), np.ones(k)]
    found = [_slsqp(C, b, delta, s) for s in starts]
    good = [t for t, ok in found if ok] or [t for t, _ in found]
    best = min(good, key=lambda t: rlls_objective(C, b, delta, t))
    return best, any(ok for _, ok in found)


def rlls_delta(k, n, alpha=0.01, delta=0.05):
    """The paper's 3 Delta_C (Azizzadenesheli et al. 2019, the authors' code), times alpha."""
    return alpha * 3 * (2 * math.log(2 * k / delta) / (3 * n) + math.sqrt(2 * math.log(2 * k / delta) / n))
