"""Naive references of the multiclass calibrators: the log loss of softmax(a * z + b) written with NumPy and
minimised by SciPy, in each family's own parameters (no code shared with fastcal)."""

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax


def unpack(theta, family, k):
    """(a, b) of a family's parameters (b_0 is held at 0 where there are biases)."""
    if family == "vector":
        return theta[:k], np.r_[0.0, theta[k:]]
    if family == "bcts":
        return np.full(k, theta[0]), np.r_[0.0, theta[1:]]
    raise ValueError(family)


def loss(theta, z, y, w, family):
    """Mean weighted log loss of softmax(a * z + b)."""
    a, b = unpack(theta, family, z.shape[1])
    u = z * a + b
    return float(np.sum(w * (logsumexp(u, axis=1) - u[np.arange(len(y)), y])) / np.sum(w))


def gradient(theta, z, y, w, family):
    k = z.shape[1]
    a, b = unpack(theta, family, k)
    r = softmax(z * a + b, axis=1)
    r[np.arange(len(y)), y] -= 1.0
    r *= (w / np.sum(w))[:, None]
    ga = (r * z).sum(axis=0)
    gb = r.sum(axis=0)
    if family == "vector":
        return np.r_[ga, gb[1:]]
    return np.r_[ga.sum(), gb[1:]]


def fit(z, y, w, family):
    """(a, b) minimising the loss, biases shifted to mean 0 (BFGS to a gradient of 1e-12)."""
    z = np.asarray(z, dtype=np.float64)
    k = z.shape[1]
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    x0 = np.r_[np.ones(k), np.zeros(k - 1)] if family == "vector" else np.r_[1.0, np.zeros(k - 1)]
    res = minimize(loss, x0, args=(z, y, w, family), jac=gradient, method="BFGS",
                   options={"gtol": 1e-12, "maxiter": 10000})
    a, b = unpack(res.x, family, k)
    return a, b - b.mean(), res


def predict(z, a, b):
    return softmax(np.asarray(z, dtype=np.float64) * a + b, axis=1)


def nearly_separable(proba, y, w=None):
    """Whether fitted probabilities ``proba`` leave a weighted mean log loss below 1e-3: the rows are (nearly)
    separable, the loss has no finite minimiser, and a fit stops wherever its convergence test first passes."""
    w = np.ones(len(y)) if w is None else np.asarray(w, dtype=np.float64)
    p = np.asarray(proba, dtype=np.float64)[np.arange(len(y)), y]
    kept = w > 0
    return bool(np.sum(w[kept] * -np.log(np.maximum(p[kept], 1e-300))) < 1e-3 * np.sum(w))


def softmax_features(data, X):
    """The k logits a :class:`fastcal._prediction.Softmax` reads from the scores ``X`` (float64): the scores, the
    decision values' ``(-x, x)``, or the log-probabilities (centred with ``data.centre``)."""
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        return np.column_stack([-X, X])
    if data.reading != "probabilities":
        return X
    f = np.log(X + 1e-12)
    return f - f.mean(axis=1, keepdims=True) if data.centre else f


def softmax_of_data(data, X):
    """``(q, a)``: what a :class:`fastcal._prediction.Softmax` says of the scores ``X``, in float64, and per row the
    magnitude ``max_j |b_j| + sum_l |W_jl f_l|`` of its logits' terms (the scale of their rounding errors)."""
    f = softmax_features(data, X)
    u = f @ data.coef.T + data.intercept
    e = np.exp(u - u.max(axis=1, keepdims=True))
    a = (np.abs(data.intercept)[None, :] + np.abs(f) @ np.abs(data.coef).T).max(axis=1, keepdims=True)
    return e / e.sum(axis=1, keepdims=True), a
