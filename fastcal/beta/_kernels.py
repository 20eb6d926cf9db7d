"""Numba kernels behind :mod:`fastcal.beta` (beta calibration, logit q = a log p - b log(1 - p) + c, fitted by
Newton's method).

The wrappers in :mod:`fastcal.beta` validate and normalise; these kernels
assume clean, C-contiguous input and never check anything. They follow the
kernels of Platt scaling (:mod:`fastcal.platt._kernels`): the same
vectorisable exp and log of :mod:`fastcal._core.math_kernels`, the same sign
branch of the logistic loss, the same chunked reductions (blocks of
:data:`CHUNK` rows, each block's float64 sums in its own row of a buffer,
merged in order by the caller: the same bits on any number of threads) and
the same compile-time switches (``w=None``, ``want_loss=None``).
"""

from __future__ import annotations

import math

import numpy as np

from .._core.jit import kernel
from .._core.math_kernels import exp_neg, log1p_unit, log_normal


#: Rows per block of the chunked reductions: Platt's (:data:`fastcal.platt._kernels.CHUNK`), which the batched
#: fits of many groups (:func:`fastcal.beta.fit_groups`) cut each group's rows by (``fastcal.platt.Blocks``), so
#: that a group's sums are those of its own fit bit for bit.
CHUNK = 1 << 14

#: Sums returned by the beta pass: objective, gradient (3), Hessian's upper triangle (6), and the weight of the
#: rows the model does not classify strictly right (:data:`BETA_WRONG`).
N_BETA_STATS = 11
#: Column of the beta pass's sums: the weight of the rows with y = 1 and eta <= 0 or y = 0 and eta >= 0. Zero
#: means that the model separates the classes, so that the maximum-likelihood fit does not exist.
BETA_WRONG = 10


@kernel
def _beta_clip(p, eps, one_minus_eps):
    """p' = clip(p, eps, 1 - eps) in float64 (betacal's clipping). The logarithms of p' and
    1 - p' are taken inline by the callers: a helper returning both as a tuple stops the loop from vectorising (25x slower)."""
    pi = np.float64(p)
    pi = eps if pi < eps else pi
    return one_minus_eps if pi > one_minus_eps else pi


@kernel(fastmath=True)
def _beta_chunk(p, y, w, eps, one_minus_eps, c1, s1, c2, s2, t1, t2, t3, want_loss, lo, hi, out):
    """Sums over rows lo <= i < hi of the cross-entropy of q = 1 / (1 + exp(-eta)),
    eta = t1 x1 + t2 x2 + t3, x1 = (log p' - c1) s1, x2 = (-log(1 - p') - c2) s2,
    against the labels: F, its gradient in (t1, t2, t3) and the upper triangle of its Hessian.

    Per row: F_i = log(1 + e^eta) - y eta, dF_i/deta = q - y, d2F_i/deta2 = q (1 - q),
    with min(q, 1 - q) = e / (1 + e), e = exp(-|eta|), as in Platt's :func:`fastcal.platt._kernels.newton_pass`; and
    ``out[BETA_WRONG]``, the weight of the rows on the wrong side of eta = 0 (or on it).
    """
    f = 0.0
    wrong = 0.0
    g1 = 0.0
    g2 = 0.0
    g3 = 0.0
    h11 = 0.0
    h12 = 0.0
    h13 = 0.0
    h22 = 0.0
    h23 = 0.0
    h33 = 0.0
    for i in range(np.uint64(lo), np.uint64(hi)):
        pc = _beta_clip(p[i], eps, one_minus_eps)
        x1 = (log_normal(pc) - c1) * s1
        x2 = (-log_normal(1.0 - pc) - c2) * s2
        eta = t1 * x1 + t2 * x2 + t3
        e = exp_neg(-abs(eta))
        d = 1.0 / (1.0 + e)
        small = e * d  # min(q, 1 - q)
        pos = y[i] > 0
        if eta >= 0.0:
            r = -small if pos else d  # q - y with 1 - q = small
            lz = 0.0 if pos else eta
        else:
            r = -d if pos else small  # q - y with q = small
            lz = -eta if pos else 0.0
        v = small * d
        if w is not None:
            wi = np.float64(w[i])
            r *= wi
            v *= wi
            lz *= wi
        else:
            wi = 1.0
        wrong += wi if (eta <= 0.0 if pos else eta >= 0.0) else 0.0
        g1 += r * x1
        g2 += r * x2
        g3 += r
        v1 = v * x1
        v2 = v * x2
        h11 += v1 * x1
        h12 += v1 * x2
        h13 += v1
        h22 += v2 * x2
        h23 += v2
        h33 += v
        if want_loss is not None:
            f += wi * log1p_unit(e) + lz
    out[0] = f
    out[1] = g1
    out[2] = g2
    out[3] = g3
    out[4] = h11
    out[5] = h12
    out[6] = h13
    out[7] = h22
    out[8] = h23
    out[9] = h33
    out[10] = wrong


@kernel
def beta_pass(p, y, w, eps, one_minus_eps, c1, s1, c2, s2, t1, t2, t3, want_loss, buf, lo, hi):
    """Beta's fused pass over the blocks ``[lo, hi)``: block ``c`` writes its
    :data:`N_BETA_STATS` sums (:func:`_beta_chunk`) into ``buf[c]``; the caller merges the rows in order."""
    n = p.shape[0]
    for c in range(lo, hi):
        start = c * CHUNK
        _beta_chunk(p, y, w, eps, one_minus_eps, c1, s1, c2, s2, t1, t2, t3, want_loss,
                    start, min(start + CHUNK, n), buf[c])


@kernel
def beta_features(p, eps):
    """The features of a probability p: log p' and -log(1 - p'), p' = clip(p, eps, 1 - eps) (libm's log, as
    Python's math module calls it)."""
    p = min(max(p, eps), 1.0 - eps)
    return math.log(p), -math.log(1.0 - p)


@kernel
def _power_of_two_scale(bound):
    """A power of two s with bound * s in [0.5, 1) (1 for bound 0)."""
    if not bound > 0.0:
        return 1.0
    return math.ldexp(1.0, -math.frexp(bound)[1])


@kernel
def beta_frame(lo, hi, eps, ab, log2):
    """``(c1, s1, c2, s2, xmax1, xmax2)`` of :func:`fastcal.beta._model.make_frame` for probabilities in ``[lo, hi]``
    (``ab``: the model "ab", whose features are centred at -log 2 and log 2)."""
    u1_lo, u2_lo = beta_features(lo, eps)
    u1_hi, u2_hi = beta_features(hi, eps)
    if ab:
        c1, c2 = -log2, log2
    else:
        c1, c2 = 0.5 * (u1_lo + u1_hi), 0.5 * (u2_lo + u2_hi)
    # The kernel's logarithms are within 2 ulp of libm's: a relative slack of 1e-12 covers them.
    b1 = max(abs(u1_lo - c1), abs(u1_hi - c1)) * (1.0 + 1e-12) + 1e-12
    b2 = max(abs(u2_lo - c2), abs(u2_hi - c2)) * (1.0 + 1e-12) + 1e-12
    s1, s2 = _power_of_two_scale(b1), _power_of_two_scale(b2)
    return c1, s1, c2, s2, b1 * s1, b2 * s2


@kernel
def beta_frames(lo, hi, eps, ab, log2, out):
    """``out[i]``: :func:`beta_frame` of ``(lo[i], hi[i])``."""
    for i in range(lo.shape[0]):
        out[i, 0], out[i, 1], out[i, 2], out[i, 3], out[i, 4], out[i, 5] = beta_frame(lo[i], hi[i], eps, ab, log2)


@kernel
def _beta_logit_gap(a, b, c, t):
    """a log m - b log(1 - m) + c at m = 1 / (1 + exp(-t)), from log m = -(max(-t, 0) + log1p(exp(-|t|))) and
    log(1 - m) = -(max(t, 0) + log1p(exp(-|t|))) (libm's exp and log1p, as Python's math module calls them)."""
    tail = math.log1p(math.exp(-abs(t)))
    return -a * (max(-t, 0.0) + tail) + b * (max(t, 0.0) + tail) + c


@kernel
def beta_midpoint(a, b, c):
    """The root m in (0, 1) of a log m - b log(1 - m) + c for a, b >= 0 (not both 0): bisection on logit m over
    [-800, 800], 128 halvings (1600 / 2**128: far below the resolution of m); 0 or 1 where the expression has no
    root, at the end of [0, 1] where it is smallest in magnitude (see :func:`fastcal.beta._model.midpoint`)."""
    lo, hi = -800.0, 800.0
    if _beta_logit_gap(a, b, c, lo) >= 0.0:
        return 0.0
    if _beta_logit_gap(a, b, c, hi) <= 0.0:
        return 1.0
    for _ in range(128):
        mid = 0.5 * (lo + hi)
        if _beta_logit_gap(a, b, c, mid) < 0.0:
            lo = mid
        else:
            hi = mid
    t = 0.5 * (lo + hi)
    return 1.0 / (1.0 + math.exp(-t))


@kernel
def beta_midpoints(a, b, c, out, lo, hi):
    """``out[i]``: :func:`beta_midpoint` of ``(a[i], b[i], c[i])`` (a, b >= 0), or 1/2 where a = b = 0, for
    ``lo <= i < hi``."""
    for i in range(lo, hi):
        out[i] = 0.5 if (a[i] == 0.0 and b[i] == 0.0) else beta_midpoint(a[i], b[i], c[i])


@kernel
def beta_blocks(p, y, w, block_lo, block_hi, block_fit, active, eps, one_minus_eps, c1, s1, c2, s2, t1, t2, t3,
                buf, lo, hi):
    """:func:`_beta_chunk` (without the objective) of rows ``block_lo[j] .. block_hi[j] - 1`` into ``buf[j]``, in
    the frame and at the parameters of its fit ``f = block_fit[j]``, for the blocks ``lo <= j < hi`` of the fits
    with ``active[f]`` (see :func:`fastcal.platt._kernels.newton_blocks`)."""
    for j in range(lo, hi):
        f = block_fit[j]
        if active[f]:
            _beta_chunk(p, y, w, eps, one_minus_eps, c1[f], s1[f], c2[f], s2[f], t1[f], t2[f], t3[f], None,
                        block_lo[j], block_hi[j], buf[j])


@kernel
def beta_predict(p, eps, one_minus_eps, a, b, c, out, lo, hi):
    """out[i] = 1 / (1 + exp(-(a log p' - b log(1 - p') + c))) for lo <= i < hi;
    returns the number of p[i] outside [0, 1] or NaN (their output is meaningless)."""
    bad = 0
    for i in range(np.uint64(lo), np.uint64(hi)):
        pi = p[i]
        bad += 0 if (pi >= 0.0 and pi <= 1.0) else 1
        pc = _beta_clip(pi, eps, one_minus_eps)
        eta = a * log_normal(pc) - b * log_normal(1.0 - pc) + c
        e = exp_neg(-abs(eta))
        d = 1.0 / (1.0 + e)
        out[i] = d if eta >= 0.0 else e * d
    return bad
