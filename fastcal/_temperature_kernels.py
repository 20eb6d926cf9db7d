"""Numba kernels of temperature scaling: one fused pass for loss, gradient and curvature, and softmax.

Private: inputs are clean C-contiguous (n, k) logits (float32/float64), int64
labels in [0, k) and float64 weights (empty for unit weights).

Speed. A pass costs one exponential per logit. The rows of a chunk are
transposed into a small ``(k, CHUNK)`` scratch array, so that every loop runs
along rows with no reduction across SIMD lanes, and the exponential and
logarithm are the vectorisable :func:`~fastcal._math_kernels.exp_neg` and
:func:`~fastcal._math_kernels.log_normal`, shared with the Platt kernels
(:mod:`fastcal._jit` keys the cache on that module too).
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel
from ._math_kernels import exp_neg, log_normal

# ---------------------------------------------------------------------------
# Loss, gradient and curvature in beta.
# ---------------------------------------------------------------------------


#: Rows per chunk of the loss/gradient/curvature reduction. Chunk bounds depend
#: only on the number of rows, so the sums do not depend on the thread count.
CHUNK = 1 << 12


def n_chunks(n):
    """Number of :data:`CHUNK`-row chunks covering ``n`` rows (at least one)."""
    return max(1, -(-n // CHUNK))


@kernel(fastmath=True)
def chunk_terms(z, t, weights, start, beta, zt, scratch, out):
    """Weighted sums over the rows of ``z`` (a chunk starting at row ``start``) of the loss, d/dbeta, d2/dbeta2.

    With ``l`` a row's logits shifted by their maximum and ``p = softmax(beta l)``:
    loss = log sum exp(beta l) - beta l_y, gradient = E_p[l] - l_y,
    curvature = Var_p[l] (so the loss is convex in beta). ``zt`` (``(k, CHUNK)``)
    and ``scratch`` (``(4, CHUNK)``) are work space.
    """
    nb, k = z.shape
    m = scratch[0]
    s0 = scratch[1]
    s1 = scratch[2]
    s2 = scratch[3]
    for r in range(nb):
        for j in range(k):
            zt[j, r] = np.float64(z[r, j])
    for r in range(nb):
        m[r] = zt[0, r]
        s0[r] = 0.0
        s1[r] = 0.0
        s2[r] = 0.0
    for j in range(1, k):
        for r in range(nb):
            m[r] = max(m[r], zt[j, r])
    for j in range(k):
        for r in range(nb):
            d = zt[j, r] - m[r]
            e = exp_neg(beta * d)
            s0[r] += e
            s1[r] += e * d
            s2[r] += e * d * d
    weighted = weights.shape[0] > 0
    loss = 0.0
    grad = 0.0
    hess = 0.0
    for r in range(nb):
        w = weights[start + r] if weighted else 1.0
        mean = s1[r] / s0[r]
        var = max(s2[r] / s0[r] - mean * mean, 0.0)
        d_label = zt[t[r], r] - m[r]
        loss += w * (log_normal(s0[r]) - beta * d_label)
        grad += w * (mean - d_label)
        hess += w * var
    out[0] = loss
    out[1] = grad
    out[2] = hess


@kernel
def loss_grad_hess_chunks(logits, labels, weights, beta, out, lo, hi):
    """Sums of loss, gradient and curvature of chunks ``lo .. hi - 1`` into rows of ``out`` (``(n_chunks, 3)``)."""
    n, k = logits.shape
    zt = np.empty((k, CHUNK))
    scratch = np.empty((4, CHUNK))
    for c in range(lo, hi):
        start = c * CHUNK
        stop = min(start + CHUNK, n)
        chunk_terms(logits[start:stop], labels[start:stop], weights, start, beta, zt, scratch, out[c])


@kernel
def softmax_row(logits, i, beta, out):
    k = logits.shape[1]
    m = np.float64(logits[i, 0])
    for j in range(1, k):
        m = max(m, np.float64(logits[i, j]))
    s = 0.0
    for j in range(k):
        e = exp_neg(beta * (np.float64(logits[i, j]) - m))
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
