"""Numba kernels of the affine softmax models: one fused pass for the loss, its gradient and its Hessian, and the
predictions.

Private: inputs are clean C-contiguous (n, k) logits (float32/float64), int64
labels in [0, k) and float64 weights (empty for unit weights); ``a`` and
``b`` float64 arrays of k scales and k biases.

The model is :math:`u_{ij} = a_j z_{ij} + b_j`, :math:`p_i = \\mathrm{softmax}(u_i)`.
Every multiclass calibrator of :mod:`fastcal.multiclass` is this model with
some parameters tied (one shared scale) or fixed (no biases): its sums are
linear images of the sums here (:mod:`fastcal.multiclass._model`).
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel
from .._core.math_kernels import exp_neg, log_normal

#: Rows per chunk of the reduction for up to 64 classes (:func:`fastcal.multiclass._model.chunk_rows`). Chunk bounds
#: depend only on the number of rows and classes, so the sums do not depend on the thread count.
CHUNK = 1 << 11


def n_sums(k):
    """The width of a chunk's sums for k classes: the loss, the gradients in a and b, and the Hessian's blocks
    aa, ab and bb (each k x k, row-major)."""
    return 1 + 2 * k + 3 * k * k


#: Rows a chunk's sums take at a time, transposed into the scratch space (``(3k + 3, BLOCK)`` floats).
BLOCK = 256


@kernel(fastmath=True)
def chunk_sums(z, t, weights, start, a, b, scratch, out):
    r"""The weighted sums over the rows of ``z`` (a chunk starting at row ``start``), into ``out``.

    With :math:`r_{ij} = p_{ij} - [y_i = j]` and :math:`S_i = \mathrm{diag}(p_i) - p_i p_i^\top`
    (the Hessian of the row's loss :math:`\log \sum_j e^{u_{ij}} - u_{i y_i}` in :math:`u_i`):

    - ``out[0]``: the loss (a logarithm a row: little beside the k^2 terms of the Hessian, so always);
    - ``out[1 : 1 + k]``: :math:`\sum_i w_i z_{ij} r_{ij}`; ``out[1 + k : 1 + 2k]``: :math:`\sum_i w_i r_{ij}`;
    - then three k x k blocks, row-major: :math:`\sum_i w_i z_{ij} z_{il} S_{i,jl}` (aa, upper triangle),
      :math:`\sum_i w_i z_{ij} S_{i,jl}` (ab), :math:`\sum_i w_i S_{i,jl}` (bb, upper triangle); the lower
      triangles of aa and bb are left at 0.

    With :math:`x_{ij} = z_{ij} p_{ij}`, the blocks are diagonal terms less the weighted sums of the outer
    products :math:`x_i x_i^\top`, :math:`x_i p_i^\top` and :math:`p_i p_i^\top`: the rows are taken
    :data:`BLOCK` at a time, transposed into ``scratch`` (``(3k + 3, BLOCK)``), so that every sum runs
    along rows.
    """
    nb, k = z.shape
    for q in range(out.shape[0]):
        out[q] = 0.0
    ga = out[1:1 + k]
    gb = out[1 + k:1 + 2 * k]
    kk = k * k
    aa = out[1 + 2 * k:1 + 2 * k + kk]
    ab = out[1 + 2 * k + kk:1 + 2 * k + 2 * kk]
    bb = out[1 + 2 * k + 2 * kk:1 + 2 * k + 3 * kk]
    zt = scratch[:k]
    pt = scratch[k:2 * k]
    xt = scratch[2 * k:3 * k]
    m = scratch[3 * k]
    s = scratch[3 * k + 1]
    wt = scratch[3 * k + 2]
    weighted = weights.shape[0] > 0
    loss = 0.0
    for lo in range(0, nb, BLOCK):
        hi = min(lo + BLOCK, nb)
        nr = hi - lo
        for r in range(nr):
            wt[r] = weights[start + lo + r] if weighted else 1.0
            m[r] = -np.inf
            s[r] = 0.0
        for r in range(nr):
            for j in range(k):
                zt[j, r] = np.float64(z[lo + r, j])
        for j in range(k):
            aj = a[j]
            bj = b[j]
            for r in range(nr):
                u = aj * zt[j, r] + bj
                pt[j, r] = u
                m[r] = max(m[r], u)
        for j in range(k):
            for r in range(nr):
                e = exp_neg(pt[j, r] - m[r])
                pt[j, r] = e
                s[r] += e
        for r in range(nr):
            y = t[lo + r]
            w = wt[r]
            loss += w * (log_normal(s[r]) + m[r] - (a[y] * zt[y, r] + b[y]))
            ga[y] -= w * zt[y, r]
            gb[y] -= w
            s[r] = 1.0 / s[r]
        for j in range(k):
            for r in range(nr):
                p = pt[j, r] * s[r]
                pt[j, r] = p
                xt[j, r] = zt[j, r] * p
        for j in range(k):
            sx = 0.0
            sp = 0.0
            szx = 0.0
            for r in range(nr):
                sx += wt[r] * xt[j, r]
                sp += wt[r] * pt[j, r]
                szx += wt[r] * zt[j, r] * xt[j, r]
            ga[j] += sx
            gb[j] += sp
            aa[j * k + j] += szx
            ab[j * k + j] += sx
            bb[j * k + j] += sp
            for q in range(k):
                sxp = 0.0
                for r in range(nr):
                    sxp += wt[r] * xt[j, r] * pt[q, r]
                ab[j * k + q] -= sxp
            for q in range(j, k):
                sxx = 0.0
                spp = 0.0
                for r in range(nr):
                    wx = wt[r] * xt[j, r]
                    sxx += wx * xt[q, r]
                    spp += wt[r] * pt[j, r] * pt[q, r]
                aa[j * k + q] -= sxx
                bb[j * k + q] -= spp
    out[0] = loss


@kernel
def sum_chunks(logits, labels, weights, a, b, rows, out, lo, hi):
    """The sums of :func:`chunk_sums` of chunks ``lo .. hi - 1`` (of ``rows`` rows each) into rows of ``out``
    (``(n_chunks, n_sums(k))``)."""
    n, k = logits.shape
    scratch = np.empty((3 * k + 3, BLOCK))
    for c in range(lo, hi):
        start = c * rows
        stop = min(start + rows, n)
        chunk_sums(logits[start:stop], labels[start:stop], weights, start, a, b, scratch, out[c])


@kernel
def column_bounds(logits, rows, out, lo, hi):
    """Per chunk ``c`` of ``lo .. hi - 1`` (of ``rows`` rows each): ``out[c, j]`` = max |z_ij| over its rows (j < k), ``out[c, k]`` = the
    largest spread max_j z_ij - min_j z_ij of a row."""
    n, k = logits.shape
    for c in range(lo, hi):
        row = out[c]
        for j in range(k + 1):
            row[j] = 0.0
        for i in range(c * rows, min((c + 1) * rows, n)):
            zmin = np.inf
            zmax = -np.inf
            for j in range(k):
                v = np.float64(logits[i, j])
                row[j] = max(row[j], abs(v))
                zmin = min(zmin, v)
                zmax = max(zmax, v)
            row[k] = max(row[k], zmax - zmin)


@kernel
def affine_softmax(logits, a, b, out, lo, hi):
    """``out[i] = softmax(a * logits[i] + b)`` for rows ``lo .. hi - 1``, computed in float64."""
    k = logits.shape[1]
    u = np.empty(k)
    for i in range(lo, hi):
        m = -np.inf
        for j in range(k):
            u[j] = a[j] * np.float64(logits[i, j]) + b[j]
            m = max(m, u[j])
        s = 0.0
        for j in range(k):
            u[j] = exp_neg(u[j] - m)
            s += u[j]
        inv = 1.0 / s
        for j in range(k):
            out[i, j] = u[j] * inv


def linear_n_sums(k, d):
    """The width of a chunk's sums of the linear model (k classes, d features, m = d + 1 with the bias): the loss,
    the gradient (k m) and the Hessian's blocks (k (k + 1) / 2 class pairs times m (m + 1) / 2 feature pairs)."""
    m = d + 1
    return 1 + k * m + (k * (k + 1) // 2) * (m * (m + 1) // 2)


@kernel(fastmath=True)
def linear_chunk_sums(x, t, weights, start, W, b, scratch, out):
    r"""The weighted sums of the linear softmax model over the rows of ``x`` (a chunk starting at row ``start``).

    The model is :math:`u_{ij} = \sum_l W_{jl} x_{il} + b_j`, :math:`p_i = \mathrm{softmax}(u_i)`, with
    parameters :math:`\theta_{jm + l} = W_{jl}` (:math:`l < d`) and :math:`\theta_{jm + d} = b_j`; write
    :math:`\tilde x_i = (x_i, 1)`. Into ``out``:

    - ``out[0]``: the loss :math:`\sum_i w_i (\log \sum_j e^{u_{ij}} - u_{i y_i})`;
    - ``out[1 : 1 + km]``: the gradient :math:`\sum_i w_i (p_{ij} - [y_i = j]) \tilde x_{il}`;
    - then, for each class pair :math:`j \le q` (in row-major order of the upper triangle) and each feature
      pair :math:`l \le s` (likewise), :math:`\sum_i w_i p_{ij} ([j = q] - p_{iq}) \tilde x_{il} \tilde x_{is}`:
      the Hessian's entry at :math:`(jm + l, qm + s)`, which is also its entry at :math:`(jm + s, qm + l)`.

    The rows are taken :data:`BLOCK` at a time, transposed into ``scratch``
    (``(m + k + m (m + 1) / 2 + 4, BLOCK)``): the features, the
    probabilities, the feature products :math:`\tilde x_{il} \tilde x_{is}`,
    then one row each for a class pair's weights, the maxima, the sums and
    the row weights. Every sum runs along rows.
    """
    nb, d = x.shape
    k = W.shape[0]
    m = d + 1
    mm = m * (m + 1) // 2
    for q in range(out.shape[0]):
        out[q] = 0.0
    g = out[1:1 + k * m]
    h = out[1 + k * m:]
    xt = scratch[:m]
    pt = scratch[m:m + k]
    xx = scratch[m + k:m + k + mm]
    cw = scratch[m + k + mm]
    mx = scratch[m + k + mm + 1]
    s = scratch[m + k + mm + 2]
    wt = scratch[m + k + mm + 3]
    weighted = weights.shape[0] > 0
    loss = 0.0
    for lo in range(0, nb, BLOCK):
        hi = min(lo + BLOCK, nb)
        nr = hi - lo
        for r in range(nr):
            wt[r] = weights[start + lo + r] if weighted else 1.0
            mx[r] = -np.inf
            s[r] = 0.0
            xt[d, r] = 1.0
        for r in range(nr):
            for l in range(d):
                xt[l, r] = np.float64(x[lo + r, l])
        for j in range(k):
            for r in range(nr):
                pt[j, r] = b[j]
            for l in range(d):
                wjl = W[j, l]
                for r in range(nr):
                    pt[j, r] += wjl * xt[l, r]
            for r in range(nr):
                mx[r] = max(mx[r], pt[j, r])
        for r in range(nr):
            y = t[lo + r]
            loss += wt[r] * (mx[r] - pt[y, r])
        for j in range(k):
            for r in range(nr):
                e = exp_neg(pt[j, r] - mx[r])
                pt[j, r] = e
                s[r] += e
        for r in range(nr):
            loss += wt[r] * log_normal(s[r])
            s[r] = 1.0 / s[r]
        for j in range(k):
            for r in range(nr):
                pt[j, r] *= s[r]
        for r in range(nr):
            y = t[lo + r]
            for l in range(m):
                g[y * m + l] -= wt[r] * xt[l, r]
        for j in range(k):
            for l in range(m):
                acc = 0.0
                for r in range(nr):
                    acc += wt[r] * pt[j, r] * xt[l, r]
                g[j * m + l] += acc
        e = 0
        for l in range(m):
            for q in range(l, m):
                for r in range(nr):
                    xx[e, r] = xt[l, r] * xt[q, r]
                e += 1
        c = 0
        for j in range(k):
            for q in range(j, k):
                if q == j:
                    for r in range(nr):
                        cw[r] = wt[r] * pt[j, r] * (1.0 - pt[j, r])
                else:
                    for r in range(nr):
                        cw[r] = -wt[r] * pt[j, r] * pt[q, r]
                base = c * mm
                for e in range(mm):
                    acc = 0.0
                    for r in range(nr):
                        acc += cw[r] * xx[e, r]
                    h[base + e] += acc
                c += 1
    out[0] = loss


@kernel
def linear_sum_chunks(x, labels, weights, W, b, rows, out, lo, hi):
    """The sums of :func:`linear_chunk_sums` of chunks ``lo .. hi - 1`` (of ``rows`` rows each) into rows of ``out``
    (``(n_chunks, linear_n_sums(k, d))``)."""
    n, d = x.shape
    k = W.shape[0]
    m = d + 1
    scratch = np.empty((m + k + m * (m + 1) // 2 + 4, BLOCK))
    for c in range(lo, hi):
        start = c * rows
        stop = min(start + rows, n)
        linear_chunk_sums(x[start:stop], labels[start:stop], weights, start, W, b, scratch, out[c])


@kernel
def linear_softmax(x, W, b, out, lo, hi):
    """``out[i] = softmax(W x_i + b)`` for rows ``lo .. hi - 1``, computed in float64."""
    k, d = W.shape
    u = np.empty(k)
    for i in range(lo, hi):
        m = -np.inf
        for j in range(k):
            acc = b[j]
            for l in range(d):
                acc += W[j, l] * np.float64(x[i, l])
            u[j] = acc
            m = max(m, acc)
        s = 0.0
        for j in range(k):
            u[j] = exp_neg(u[j] - m)
            s += u[j]
        inv = 1.0 / s
        for j in range(k):
            out[i, j] = u[j] * inv
