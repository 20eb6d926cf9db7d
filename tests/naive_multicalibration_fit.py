"""Naive multicalibration fit: a dense design matrix of segment masks, and the lasso by FISTA, float64 throughout.

Slow and obvious: each segment is a boolean mask built from its definition (a value of each of its features; for a
numerical feature, a quantile bin ``(e_{k-1}, e_k]`` of ``np.quantile``'s edges, the first closed), each score
bucket likewise, and the columns are the logit of the score, then per segment its mask and its masks per bucket.
The penalised log loss ``sum w logloss + lam * |b|_1`` (the logit's coefficient unpenalised) is minimised by
accelerated proximal gradient (Beck and Teboulle 2009) with a fixed step ``1 / L`` and adaptive restarts.
"""

import numpy as np

EPS = 2.0 ** -40


def quantile_bins(x, n_bins):
    """Bins ``(e_{k-1}, e_k]`` of ``np.quantile``'s edges (the first closed), clamped to the bins; None if at most
    ``n_bins`` distinct values (each value its own)."""
    x = np.asarray(x, dtype=np.float64)
    if np.unique(x).size <= n_bins:
        return None
    edges = np.unique(np.quantile(x, np.linspace(0, 1, n_bins + 1)))
    return np.clip(np.searchsorted(edges, x, side="left") - 1, 0, edges.size - 2)


def design(p, segments, segment_values, n_buckets, numerical, max_values):
    """The columns: logit p, then per segment (``segment_values``: dicts feature -> value or bin number) its mask
    and its masks per score bucket."""
    p = np.asarray(p, dtype=np.float64)
    lg = np.log(np.clip(p, EPS, 1 - EPS)) - np.log1p(-np.clip(p, EPS, 1 - EPS))
    bucket = quantile_bins(p, n_buckets)
    buckets = [np.ones(p.size, bool)] if bucket is None else [bucket == k for k in range(bucket.max() + 1)]
    binned = {name: quantile_bins(segments[name], max_values) for name in numerical}
    columns = [lg]
    for values in segment_values:
        mask = np.ones(p.size, bool)
        for name, value in values.items():
            column = binned[name] if binned.get(name) is not None else np.asarray(segments[name])
            mask &= column == value
        columns.append(mask.astype(float))
        columns.extend((mask & b).astype(float) for b in buckets)
    return np.column_stack(columns)


def loss(X, y, w, theta):
    z = X @ theta
    return float(np.sum(w * (np.logaddexp(0, z) - y * z)))


def lasso_fit(X, y, w, lam, iters=200_000, tol=1e-13):
    """``theta`` minimising ``loss + lam * sum |theta[1:]|`` from ``theta = (1, 0, ...)``, by FISTA."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(y.size) if w is None else np.asarray(w, dtype=np.float64)
    L = 0.25 * np.linalg.norm(X * np.sqrt(w)[:, None], 2) ** 2
    theta = np.zeros(X.shape[1])
    theta[0] = 1.0
    v, t = theta.copy(), 1.0
    for _ in range(iters):
        z = X @ v
        grad = X.T @ (w * (1 / (1 + np.exp(-z)) - y))
        new = v - grad / L
        new[1:] = np.sign(new[1:]) * np.maximum(np.abs(new[1:]) - lam / L, 0.0)
        if np.dot(v - new, new - theta) > 0:  # adaptive restart (O'Donoghue and Candes 2015): linear convergence
            t = 1.0
        t_new = (1 + np.sqrt(1 + 4 * t * t)) / 2
        v = new + (t - 1) / t_new * (new - theta)
        if np.max(np.abs(new - theta)) < tol:
            theta = new
            break
        theta, t = new, t_new
    return theta


def lambda_max(X, y, w):
    """The least ``lam`` at which every offset stays 0 at ``theta = (1, 0, ...)``: the largest gradient of an offset."""
    w = np.ones(X.shape[0]) if w is None else np.asarray(w, dtype=np.float64)
    q = 1 / (1 + np.exp(-X[:, 0]))
    return float(np.abs(X[:, 1:].T @ (w * (q - y))).max())
