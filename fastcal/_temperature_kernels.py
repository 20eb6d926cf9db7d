"""Numba kernels of temperature scaling: one fused pass for loss, gradient and curvature, and softmax.

Private: inputs are clean C-contiguous (n, k) logits (float32/float64), int64
labels in [0, k) and float64 weights (empty for unit weights).
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import kernel


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


#: Rows per chunk of the loss/gradient/curvature reduction. Chunk bounds depend
#: only on the number of rows, so the sums do not depend on the thread count.
CHUNK = 1 << 12


def n_chunks(n):
    """Number of :data:`CHUNK`-row chunks covering ``n`` rows (at least one)."""
    return max(1, -(-n // CHUNK))


@kernel
def loss_grad_hess_chunks(logits, labels, weights, beta, out, lo, hi):
    """Sums of loss, gradient and curvature of chunks ``lo .. hi - 1`` into rows of ``out`` (``(n_chunks, 3)``)."""
    n = logits.shape[0]
    weighted = weights.shape[0] > 0
    for c in range(lo, hi):
        start = c * CHUNK
        stop = min(start + CHUNK, n)
        z = logits[start:stop]  # indices from 0: no wraparound check
        t = labels[start:stop]
        loss = 0.0
        grad = 0.0
        hess = 0.0
        for i in range(z.shape[0]):
            w = weights[start + i] if weighted else 1.0
            f, g, h = row_terms(z, i, t[i], beta)
            loss += w * f
            grad += w * g
            hess += w * h
        out[c, 0] = loss
        out[c, 1] = grad
        out[c, 2] = hess


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
def softmax(logits, beta, out, lo, hi):
    """``out[i] = softmax(beta * logits[i])`` for rows ``lo .. hi - 1``."""
    z, o = logits[lo:hi], out[lo:hi]  # indices from 0: no wraparound check
    for i in range(z.shape[0]):
        softmax_row(z, i, beta, o)
