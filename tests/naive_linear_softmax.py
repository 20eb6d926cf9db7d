"""Naive reference of matrix scaling and Dirichlet calibration: the penalised mean log loss of softmax(W x + b)
written with NumPy and minimised by SciPy's BFGS over every entry of W and b (no code shared with fastcal)."""

import numpy as np
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax


def unpack(theta, k, d, matrix):
    if matrix == "full":
        wb = theta.reshape(k, d + 1)
        return wb[:, :d], wb[:, d]
    if matrix == "diagonal":
        return np.diag(theta[:k]), theta[k:]
    return theta[0] * np.eye(k), np.zeros(k)  # fixed_diagonal


def penalty(W, b, reg_lambda, reg_mu):
    k = W.shape[0]
    if reg_mu is None:
        return reg_lambda / (k * (W.shape[1] + 1)) * (np.sum(W ** 2) + np.sum(b ** 2))
    off = W[~np.eye(k, dtype=bool)]
    return reg_lambda / (k * (k - 1)) * np.sum(off ** 2) + reg_mu / k * np.sum(b ** 2)


def loss_and_grad(theta, x, y, w, matrix, reg_lambda, reg_mu):
    n, d = x.shape
    k = d if d > 1 else 2
    W, b = unpack(theta, k, d, matrix)
    u = x @ W.T + b
    wn = w / w.sum()
    f = float(np.sum(wn * (logsumexp(u, axis=1) - u[np.arange(n), y]))) + penalty(W, b, reg_lambda, reg_mu)
    r = softmax(u, axis=1)
    r[np.arange(n), y] -= 1.0
    r *= wn[:, None]
    gW = r.T @ x
    gb = r.sum(axis=0)
    # the penalty's gradient, by its definition
    if reg_mu is None:
        c = 2.0 * reg_lambda / (k * (d + 1))
        gW = gW + c * W
        gb = gb + c * b
    else:
        gW = gW + 2.0 * reg_lambda / (k * (k - 1)) * np.where(np.eye(k, dtype=bool), 0.0, W)
        gb = gb + 2.0 * reg_mu / k * b
    if matrix == "full":
        return f, np.c_[gW, gb].ravel()
    if matrix == "diagonal":
        return f, np.r_[np.diag(gW), gb]
    return f, np.array([np.trace(gW)])


def fit(x, y, w=None, matrix="full", reg_lambda=0.0, reg_mu=None):
    """(W, b) at the minimum (BFGS to a gradient of 1e-12), in the canonical form of fastcal's docs where the
    penalty leaves it free: W less 1 (column means of W - of the identity), biases less their mean."""
    x = np.asarray(x, dtype=np.float64)
    n, d = x.shape
    k = d if d > 1 else 2
    w = np.ones(n) if w is None else np.asarray(w, dtype=np.float64)
    ref = np.eye(k) if d == k else np.array([[-1.0], [1.0]])
    if matrix == "full":
        x0 = np.c_[ref, np.zeros(k)].ravel()
    elif matrix == "diagonal":
        x0 = np.r_[np.ones(k), np.zeros(k)]
    else:
        x0 = np.ones(1)
    res = minimize(loss_and_grad, x0, args=(x, y, w, matrix, reg_lambda, reg_mu), jac=True, method="BFGS",
                   options={"gtol": 1e-12, "maxiter": 20000})
    W, b = unpack(res.x, k, d, matrix)
    if matrix == "full" and reg_lambda == 0.0:
        W = W - (W.mean(axis=0) - ref.mean(axis=0))
    biases_free = matrix != "fixed_diagonal" and (reg_mu == 0.0 if reg_mu is not None else reg_lambda == 0.0)
    if biases_free:
        b = b - b.mean()
    return W, b, res


def predict(x, W, b):
    return softmax(np.asarray(x, dtype=np.float64) @ W.T + b, axis=1)
