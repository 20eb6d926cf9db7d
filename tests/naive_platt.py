"""Naive NumPy/SciPy twins of fastcal.platt, written for clarity, not speed.

Everything is float64 and vectorised over the whole array; the fits go
through ``scipy.optimize.minimize`` (Platt) and plain IRLS (slope/intercept).
"""

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit


def _weights(s, w):
    return np.ones(len(s)) if w is None else np.asarray(w, dtype=np.float64)


def platt_targets(y, w=None):
    """Platt's smoothed targets per row and the start b0."""
    y = np.asarray(y)
    w = _weights(y, w)
    npos = w[y > 0].sum()
    nneg = w[y <= 0].sum()
    t = np.where(y > 0, (npos + 1.0) / (npos + 2.0), 1.0 / (nneg + 2.0))
    return t, np.log((nneg + 1.0) / (npos + 1.0))


def _split(x):
    # Veltkamp's split: x = hi + lo exactly, each with at most 26 significant bits.
    c = 134217729.0 * x  # 2**27 + 1
    hi = c - (c - x)
    return hi, x - hi


def affine(a, s, b):
    """z = a * s + b rounded once (to within an ulp of z), by error-free transformations.

    ``a * s`` rounded to float64 loses up to half an ulp of ``a * s``, which is
    far more than an ulp of ``z`` when ``a * s`` and ``b`` nearly cancel (scores
    shifted by 1e6). Dekker's exact product and Knuth's exact sum keep it.
    Where the split overflows (|a s| > ~1e300) the plain expression is used.
    """
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        p = a * s
        ah, al = _split(np.float64(a))
        sh, sl = _split(s)
        e = ((ah * sh - p) + ah * sl + al * sh) + al * sl  # a * s = p + e exactly
        total = p + b
        bv = total - p
        err = (p - (total - bv)) + (b - bv)  # p + b = total + err exactly
        z = total + (err + e)
    plain = a * s + b
    return np.where(np.isfinite(z), z, plain)


def platt_objective_and_error(a, b, s, y, w=None):
    """``(F, bound)``: F(a, b) = sum_i w_i [log(1 + exp(z_i)) - (1 - t_i) z_i] and a bound on its error.

    z_i is rounded once (:func:`affine`) and the terms are summed exactly
    (``math.fsum``), so what remains is the rounding of each term: z_i within
    half an ulp, ``logaddexp`` within a few ulp, one product and one
    difference. Each is at most a few ``eps`` of |log(1 + exp(z_i))| + |z_i|;
    ``bound`` is 8 eps times their weighted sum.
    """
    import math

    s = np.asarray(s, dtype=np.float64)
    ww = _weights(s, w)
    t, _ = platt_targets(y, w)
    z = affine(a, s, b)
    soft = np.logaddexp(0.0, z)
    terms = ww * (soft - (1.0 - t) * z)
    bound = 8 * np.finfo(np.float64).eps * math.fsum(ww * (soft + np.abs(z)))
    return math.fsum(terms), bound


def platt_objective(a, b, s, y, w=None):
    """F(a, b) = sum_i w_i [log(1 + exp(z_i)) - (1 - t_i) z_i], z = a s + b (see :func:`platt_objective_and_error`)."""
    return platt_objective_and_error(a, b, s, y, w)[0]


def platt_gradient_hessian(a, b, s, y, w=None, loss=True):
    """The 6 sums of the fused pass: F, dF/da, dF/db, d2F/da2, d2F/dadb, d2F/db2 (t given by y, w)."""
    s = np.asarray(s, dtype=np.float64)
    w = _weights(s, w)
    t, _ = platt_targets(y, w)
    z = a * s + b
    p = expit(-z)
    r = w * (t - p)
    v = w * p * (1.0 - p)
    f = np.sum(w * (np.logaddexp(0.0, z) - (1.0 - t) * z)) if loss else 0.0
    return np.array([f, np.sum(r * s), np.sum(r), np.sum(v * s * s), np.sum(v * s), np.sum(v)])


def platt_fit_scipy(s, y, w=None):
    """Minimise Platt's objective with scipy's trust-region Newton on standardised scores.

    Returns (a, b) on the original scale.
    """
    s = np.asarray(s, dtype=np.float64)
    w = _weights(s, w)
    t, b0 = platt_targets(y, w)
    mu = np.average(s, weights=w)
    sd = np.sqrt(np.average((s - mu) ** 2, weights=w))
    sd = sd if sd > 0 else 1.0
    u = (s - mu) / sd
    W = w.sum()

    def fun(x):
        z = x[0] * u + x[1]
        return np.sum(w * (np.logaddexp(0.0, z) - (1.0 - t) * z)) / W

    def jac(x):
        z = x[0] * u + x[1]
        r = w * (t - expit(-z))
        return np.array([np.sum(r * u), np.sum(r)]) / W

    def hess(x):
        z = x[0] * u + x[1]
        p = expit(-z)
        v = w * p * (1.0 - p)
        return np.array([[np.sum(v * u * u), np.sum(v * u)], [np.sum(v * u), np.sum(v)]]) / W

    res = minimize(fun, np.array([0.0, b0]), jac=jac, hess=hess, method="trust-exact",
                   options={"gtol": 1e-13, "maxiter": 1000})
    a = res.x[0] / sd
    return a, res.x[1] - a * mu


def platt_predict(a, b, s):
    """1 / (1 + exp(a s + b)), overflow-free."""
    z = a * np.asarray(s, dtype=np.float64) + b
    return np.exp(-np.logaddexp(0.0, z))


def clipped_logit(p):
    """logit(clip(p, eps, 1 - eps)) with eps the machine epsilon of p's float dtype."""
    p = np.asarray(p)
    dtype = p.dtype if p.dtype in (np.float32, np.float64) else np.float64
    eps = np.finfo(dtype).eps
    q = np.clip(p.astype(np.float64), eps, 1.0 - eps)
    return np.log(q) - np.log1p(-q)


def slope_intercept_irls(y, p, w=None, offset_only=False, n_iter=100):
    """Logistic regression of y on [1, logit(p)] by IRLS (or on 1 with logit(p) as offset).

    Returns (params, cov): params = (alpha, beta) (or (alpha,) with the
    offset) and the inverse of the weighted Fisher information.
    """
    x = clipped_logit(p)
    y = np.asarray(y, dtype=np.float64)
    w = _weights(x, w)
    if offset_only:
        X, off = np.ones((len(x), 1)), x
        theta = np.zeros(1)
    else:
        X, off = np.column_stack([np.ones(len(x)), x]), np.zeros(len(x))
        theta = np.array([0.0, 1.0])

    def deviance(th):
        eta = X @ th + off
        return np.sum(w * (np.logaddexp(0.0, eta) - y * eta))

    for _ in range(n_iter):
        mu = expit(X @ theta + off)
        info = X.T @ (X * (w * mu * (1 - mu))[:, None])
        step = np.linalg.solve(info, X.T @ (w * (y - mu)))
        d0, t = deviance(theta), 1.0
        while deviance(theta + t * step) > d0 + 1e-12 * abs(d0) and t > 1e-10:  # step halving (beyond rounding)
            t /= 2
        theta = theta + t * step
        if np.max(np.abs(t * step)) < 1e-14 * (1 + np.max(np.abs(theta))):
            break
    mu = expit(X @ theta + off)
    info = X.T @ (X * (w * mu * (1 - mu))[:, None])
    return theta, np.linalg.inv(info)


def platt_fit_longdouble(s, y, w=None, n_iter=100):
    """Platt's optimum by plain Newton in extended precision (np.longdouble), started from scipy's.

    A reference for the last digits of a float64 solver: (a, b) rounded to float64.
    """
    L = np.longdouble
    a0, b0 = platt_fit_scipy(s, y, w)
    s = np.asarray(s, dtype=np.float64).astype(L)
    y = np.asarray(y)
    w = (np.ones(len(s)) if w is None else np.asarray(w, dtype=np.float64)).astype(L)
    npos, nneg = w[y > 0].sum(), w[y <= 0].sum()
    t = np.where(y > 0, (npos + 1) / (npos + 2), 1 / (nneg + 2))
    x = np.array([L(a0), L(b0)])
    for _ in range(n_iter):
        z = x[0] * s + x[1]
        p = 1 / (1 + np.exp(z))
        r, v = w * (t - p), w * p * (1 - p)
        g = np.array([np.sum(r * s), np.sum(r)])
        haa, hab, hbb = np.sum(v * s * s), np.sum(v * s), np.sum(v)
        det = haa * hbb - hab * hab
        step = -np.array([hbb * g[0] - hab * g[1], haa * g[1] - hab * g[0]]) / det
        x = x + step
        if np.all(np.abs(step) <= 1e-19 * np.abs(x)):
            break
    return float(x[0]), float(x[1])
