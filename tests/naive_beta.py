"""Naive references for beta calibration and histogram binning: NumPy, float64, no shortcuts."""

import math

import numpy as np


def features(p, eps):
    """(log p', -log(1 - p')) with p' = clip(p, eps, 1 - eps), as betacal computes them."""
    q = np.clip(np.asarray(p, dtype=np.float64), eps, 1 - eps)
    return np.log(q), -np.log(1 - q)


def design(p, model, eps, drop=None):
    """The columns of the logistic regression of each model (betacal's), and how to read (a, b, c) from its
    coefficients."""
    u1, u2 = features(p, eps)
    one = np.ones_like(u1)
    if model == "abm":
        cols = [u1, u2, one]
        if drop is not None:
            del cols[drop]
        return np.column_stack(cols)
    if model == "ab":
        return np.column_stack([u1 + math.log(2), u2 - math.log(2)])
    return np.column_stack([u1 + u2, one])


def loss(X, y, w, beta):
    eta = X @ beta
    return float(np.sum(w * (np.logaddexp(0, eta) - y * eta)))


def logistic_newton(X, y, w, max_iter=200):
    """Maximum-likelihood logistic regression by plain Newton with step halving, to rounding level."""
    beta = np.zeros(X.shape[1])
    f = loss(X, y, w, beta)
    for _ in range(max_iter):
        q = 1 / (1 + np.exp(-(X @ beta)))
        g = X.T @ (w * (q - y))
        H = (X * (w * q * (1 - q))[:, None]).T @ X
        step = np.linalg.lstsq(H, -g, rcond=None)[0]
        t = 1.0
        while True:
            new = beta + t * step
            fn = loss(X, y, w, new)
            if fn <= f + 1e-13 * abs(f) or t < 1e-12:  # near the optimum, F moves by rounding only
                break
            t /= 2
        done = np.max(np.abs(new - beta)) <= 1e-13 * (1 + np.max(np.abs(beta)))
        beta, f = new, min(f, fn)
        if done:
            break
    return beta


def beta_fit(p, y, w=None, model="abm"):
    """(a, b, c) of betacal's procedure, each logistic regression solved exactly."""
    p = np.asarray(p)
    eps = float(np.finfo(p.dtype).eps) if p.dtype in (np.float32, np.float64) else float(np.finfo(np.float64).eps)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    coef = logistic_newton(design(p, model, eps), y, w)
    if model == "ab":
        a, b = coef
        return a, b, (a - b) * math.log(2)
    if model == "am":
        return coef[0], coef[0], coef[1]
    a, b, c = coef
    if a < 0:
        b, c = logistic_newton(design(p, model, eps, drop=0), y, w)
        a = 0.0
    elif b < 0:
        a, c = logistic_newton(design(p, model, eps, drop=1), y, w)
        b = 0.0
    return a, b, c


def beta_predict(p, a, b, c):
    p = np.asarray(p)
    eps = float(np.finfo(p.dtype).eps)
    u1, u2 = features(p, eps)
    return 1 / (1 + np.exp(-(a * u1 + b * u2 + c)))


def beta_loss(p, y, w, a, b, c):
    """The weighted cross-entropy of the beta map (a, b, c) on (p, y)."""
    p = np.asarray(p)
    u1, u2 = features(p, float(np.finfo(p.dtype).eps))
    eta = a * u1 + b * u2 + c
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    return float(np.sum(w * (np.logaddexp(0, eta) - y * eta)))


def histogram_binning(p, y, w, n_bins, strategy):
    """(edges, values) of histogram binning, bin by bin in Python."""
    p_in = np.asarray(p)
    p = p_in.astype(np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    if strategy == "uniform":
        edges = np.linspace(0, 1, n_bins + 1)
    else:
        edges = np.percentile(p_in, np.linspace(0, 1, n_bins + 1) * 100).astype(np.float64)  # as calibration_curve
        edges[0], edges[-1] = 0.0, 1.0
    values = np.empty(n_bins)
    for k in range(n_bins):
        inside = (p > edges[k]) & (p <= edges[k + 1]) if k else (p >= edges[0]) & (p <= edges[1])
        # a point on an edge shared by an earlier (possibly empty, zero-width) bin belongs to the first such bin
        inside &= ~np.isin(np.arange(len(p)), np.flatnonzero(_in_earlier(p, edges, k)))
        wk = w[inside].sum()
        values[k] = (w[inside] * y[inside]).sum() / wk if wk > 0 else 0.5 * (edges[k] + edges[k + 1])
    return edges, values


def _in_earlier(p, edges, k):
    out = np.zeros(len(p), dtype=bool)
    for j in range(k):
        out |= (p > edges[j]) & (p <= edges[j + 1]) if j else (p >= edges[0]) & (p <= edges[1])
    return out
