"""Numba kernels of temperature scaling: one fused pass for loss, gradient and curvature, and softmax.

Private: inputs are clean C-contiguous (n, k) logits (float32/float64), int64
labels in [0, k) and float64 weights (empty for unit weights).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel, parallel_kernel, prange


@kernel
def row_terms(logits, i, label, beta):
    """Loss, d/dbeta and d2/dbeta2 of one row's multinomial log loss at inverse temperature ``beta``.

    With ``l`` the row's logits shifted by their maximum and ``p = softmax(beta l)``:
    loss = log sum exp(beta l) - beta l_y, gradient = E_p[l] - l_y,
    curvature = Var_p[l] (so the loss is convex in beta).
    """
    k = logits.shape[1]
    m = np.float64(logits[i, 0])
    for j in range(1, k):
        m = max(m, np.float64(logits[i, j]))
    s0 = 0.0
    s1 = 0.0
    s2 = 0.0
    for j in range(k):
        d = np.float64(logits[i, j]) - m
        e = math.exp(beta * d)
        s0 += e
        s1 += e * d
        s2 += e * d * d
    mean = s1 / s0
    var = max(s2 / s0 - mean * mean, 0.0)
    d_label = np.float64(logits[i, label]) - m
    return math.log(s0) - beta * d_label, mean - d_label, var


@kernel
def loss_grad_hess_serial(logits, labels, weights, beta):
    weighted = weights.shape[0] > 0
    loss = 0.0
    grad = 0.0
    hess = 0.0
    for i in range(logits.shape[0]):
        w = weights[i] if weighted else 1.0
        f, g, h = row_terms(logits, i, labels[i], beta)
        loss += w * f
        grad += w * g
        hess += w * h
    return loss, grad, hess


@parallel_kernel
def loss_grad_hess_parallel(logits, labels, weights, beta):
    weighted = weights.shape[0] > 0
    loss = 0.0
    grad = 0.0
    hess = 0.0
    for i in prange(logits.shape[0]):
        w = weights[i] if weighted else 1.0
        f, g, h = row_terms(logits, i, labels[i], beta)
        loss += w * f
        grad += w * g
        hess += w * h
    return loss, grad, hess


@kernel
def softmax_row(logits, i, beta, out):
    k = logits.shape[1]
    m = np.float64(logits[i, 0])
    for j in range(1, k):
        m = max(m, np.float64(logits[i, j]))
    s = 0.0
    for j in range(k):
        e = math.exp(beta * (np.float64(logits[i, j]) - m))
        out[i, j] = e
        s += e
    for j in range(k):
        out[i, j] = out[i, j] / s


@kernel
def softmax_serial(logits, beta, out):
    for i in range(logits.shape[0]):
        softmax_row(logits, i, beta, out)


@parallel_kernel
def softmax_parallel(logits, beta, out):
    for i in prange(logits.shape[0]):
        softmax_row(logits, i, beta, out)
