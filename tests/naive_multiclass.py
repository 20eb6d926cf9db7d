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
