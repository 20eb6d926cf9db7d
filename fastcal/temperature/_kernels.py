"""Numba kernels of temperature scaling: one fused pass for the loss and its derivatives, and softmax.

Private: inputs are clean C-contiguous (n, k) logits (float32/float64), int64
labels in [0, k) and float64 weights (empty for unit weights).

Speed. A pass costs one exponential per logit. The rows of a chunk are
transposed into a small ``(k, CHUNK)`` scratch array, so that every loop runs
along rows with no reduction across SIMD lanes, and the exponential and
logarithm are the vectorisable :func:`~fastcal._core.math_kernels.exp_neg` and
:func:`~fastcal._core.math_kernels.log_normal`, shared with the Platt kernels
(:mod:`fastcal._core.jit` keys the cache on that module too).
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel
from .._core.math_kernels import exp_neg, log_normal

# ---------------------------------------------------------------------------
# The loss and its first four derivatives in beta.
# ---------------------------------------------------------------------------


#: Rows per chunk of the reduction (:mod:`fastcal._engine.chunked`). Chunk bounds depend only on the number of
#: rows, so the sums do not depend on the thread count.
CHUNK = 1 << 12

#: Sums of a pass: the loss and its first four derivatives in beta.
N_SUMS = 5


@kernel(fastmath=True)
def chunk_terms(z, t, weights, start, beta, want_loss, zt, scratch, out):
    """Weighted sums over the rows of ``z`` (a chunk starting at row ``start``) of the loss and its derivatives.

    With ``l`` a row's logits shifted by their maximum and ``p = softmax(beta l)``,
    the loss log sum exp(beta l) - beta l_y is the cumulant generating function
    of ``l`` under the uniform weights, less beta l_y, so its derivatives in
    beta are the cumulants of ``l`` under ``p``: gradient E_p[l] - l_y,
    curvature Var_p[l] (so the loss is convex in beta), third derivative
    kappa_3 and fourth kappa_4 (from the raw moments E_p[l^j], j <= 4).
    Writes the five weighted sums into ``out``; the loss (a logarithm per
    row, about a tenth of the pass) only when ``want_loss`` is not None
    (a compile-time switch: the fit needs the derivatives only), else 0.
    ``zt`` (``(k, CHUNK)``) and ``scratch`` (``(6, CHUNK)``) are work space.
    """
    nb, k = z.shape
    m = scratch[0]
    s0 = scratch[1]
    s1 = scratch[2]
    s2 = scratch[3]
    s3 = scratch[4]
    s4 = scratch[5]
    for r in range(nb):
        for j in range(k):
            zt[j, r] = np.float64(z[r, j])
    for r in range(nb):
        m[r] = zt[0, r]
        s0[r] = 0.0
        s1[r] = 0.0
        s2[r] = 0.0
        s3[r] = 0.0
        s4[r] = 0.0
    for j in range(1, k):
        for r in range(nb):
            m[r] = max(m[r], zt[j, r])
    for j in range(k):
        for r in range(nb):
            d = zt[j, r] - m[r]
            e = exp_neg(beta * d)
            ed = e * d  # powers of d times e, from e up: 0 where e underflows, never 0 * inf
            ed2 = ed * d
            ed3 = ed2 * d
            s0[r] += e
            s1[r] += ed
            s2[r] += ed2
            s3[r] += ed3
            s4[r] += ed3 * d
    weighted = weights.shape[0] > 0
    loss = 0.0
    grad = 0.0
    hess = 0.0
    third = 0.0
    fourth = 0.0
    for r in range(nb):
        w = weights[start + r] if weighted else 1.0
        inv = 1.0 / s0[r]
        mean = s1[r] * inv
        mean2 = mean * mean
        m2 = s2[r] * inv
        m3 = s3[r] * inv
        var = max(m2 - mean2, 0.0)
        d_label = zt[t[r], r] - m[r]
        if want_loss is not None:
            loss += w * (log_normal(s0[r]) - beta * d_label)
        grad += w * (mean - d_label)
        hess += w * var
        third += w * (m3 - 3.0 * m2 * mean + 2.0 * mean2 * mean)
        fourth += w * (s4[r] * inv - 4.0 * m3 * mean - 3.0 * m2 * m2 + 12.0 * m2 * mean2 - 6.0 * mean2 * mean2)
    out[0] = loss
    out[1] = grad
    out[2] = hess
    out[3] = third
    out[4] = fourth


@kernel
def derivative_chunks(logits, labels, weights, beta, want_loss, out, lo, hi):
    """The :data:`N_SUMS` sums of chunks ``lo .. hi - 1`` into rows of ``out`` (``(n_chunks, N_SUMS)``)."""
    n, k = logits.shape
    zt = np.empty((k, CHUNK))
    scratch = np.empty((6, CHUNK))
    for c in range(lo, hi):
        start = c * CHUNK
        stop = min(start + CHUNK, n)
        chunk_terms(logits[start:stop], labels[start:stop], weights, start, beta, want_loss, zt, scratch, out[c])


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
