"""Numba kernels behind :mod:`fastcal.platt` and :mod:`fastcal.beta` (logistic models fitted by Newton's method).

The wrappers in :mod:`fastcal.platt` validate and normalise; these kernels
assume clean, C-contiguous input and never check anything.

The model is Platt's, p = 1 / (1 + exp(z)) with z = a*x + b, where
x = (s - center) * scale is the score centred on the middle of its range and
scaled by a power of two, so that |x| <= 1 (nothing overflows, even for scores
of 1e300, and the 2x2 Hessian is well conditioned, even for scores 1e6 +- 1). With targets t_i and weights w_i the
objective is the cross-entropy

    F(a, b) = sum_i w_i * [log(1 + exp(z_i)) - (1 - t_i) * z_i],

whose first and second derivatives in z are t_i - p_i and p_i * (1 - p_i).
With e = exp(-|z|) in (0, 1], the smaller of p and 1 - p is e / (1 + e), the
larger 1 / (1 + e), and log(1 + exp(z)) = max(z, 0) + log1p(e): the branch on
the sign of z of Lin, Lin & Weng (2007). Nothing overflows for any finite z,
and t - p keeps its precision on both sides (it is computed as t - p where p
is small and as (1 - p) - (1 - t) where 1 - p is small).

Speed. A pass is bound by one exponential per row: the vectorisable
:func:`~fastcal._math_kernels.exp_neg`, :func:`~fastcal._math_kernels.log1p_unit`
and :func:`~fastcal._math_kernels.log_normal` of :mod:`fastcal._math_kernels`
(libm's scalar ``exp`` would stop the loops from vectorising). Only the
reduction loops opt in to reassociation (``@kernel(fastmath=True)``), which is
what lets the sums vectorise.

Reductions are *chunked* (:mod:`fastcal._chunked`): rows are cut into blocks
of :data:`CHUNK`, each block accumulates its partial sums in float64 into its
own row of a ``(n_chunks, k)`` buffer, and the caller merges the rows in
order. A pass kernel takes a range ``lo, hi`` of blocks after its buffers.
Block boundaries do not depend on the number of threads, so the sums are the
same bit for bit on any number of threads, and blocked summation is more
accurate than one running sum.

Optional work is switched at compile time with ``None``: ``w=None`` (unit
weights) and ``want_loss=None`` (no objective) are pruned by Numba's dead-branch
elimination, so the common case carries neither a weight load nor a log.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import kernel
from .._math_kernels import exp_neg, float64_bits_as_int64, log1p_unit, log_normal, order_key


#: Rows per block of the chunked reductions. Large enough that a block's
#: bookkeeping is noise, small enough that ranges of blocks balance across threads.
CHUNK = 1 << 14

#: Sums returned by the fused Newton pass: objective, gradient (a, b),
#: Hessian (aa, ab, bb).
N_STATS = 6

#: Integer and float results of the Platt preparation pass (see :func:`_prep_chunk`).
N_PREP_INT = 7
N_PREP_FLOAT = 2

#: Integer and float results of the logit preparation pass (see :func:`_logit_chunk`).
N_LOGIT_INT = 7
N_LOGIT_FLOAT = 2


# ---------------------------------------------------------------------------
# The fused Newton pass: objective, gradient and Hessian in one sweep.
# ---------------------------------------------------------------------------


@kernel(fastmath=True)
def _newton_chunk(s, y, w, center, scale, a, b, tpos, tnpos, tneg, tnneg, want_loss, lo, hi, out):
    """Sums over rows lo <= i < hi of F, dF/da, dF/db, d2F/da2, d2F/dadb, d2F/db2.

    ``tpos``/``tnpos`` are the target of a positive row and one minus it,
    ``tneg``/``tnneg`` the same for a negative row (passed separately so that
    1 - t keeps its precision when t is close to 1). ``w`` is None for unit
    weights; the objective is accumulated only when ``want_loss`` is not None.
    """
    f = 0.0
    ga = 0.0
    gb = 0.0
    haa = 0.0
    hab = 0.0
    hbb = 0.0
    for i in range(np.uint64(lo), np.uint64(hi)):  # unsigned: no wraparound check
        x = (np.float64(s[i]) - center) * scale
        z = a * x + b
        e = exp_neg(-abs(z))
        d = 1.0 / (1.0 + e)
        small = e * d  # min(p, 1 - p), to full relative precision
        if y[i] > 0:
            t = tpos
            tn = tnpos
        else:
            t = tneg
            tn = tnneg
        if z >= 0.0:
            r = t - small  # t - p, where p = small
            lz = t * z
        else:
            r = small - tn  # (1 - p) - (1 - t), where 1 - p = small
            lz = -tn * z
        v = small * d  # p (1 - p)
        if w is not None:
            wi = np.float64(w[i])
            r *= wi
            v *= wi
            lz *= wi
        else:
            wi = 1.0
        ga += r * x
        gb += r
        vx = v * x
        haa += vx * x
        hab += vx
        hbb += v
        if want_loss is not None:
            f += wi * log1p_unit(e) + lz
    out[0] = f
    out[1] = ga
    out[2] = gb
    out[3] = haa
    out[4] = hab
    out[5] = hbb


@kernel
def newton_pass(s, y, w, center, scale, a, b, tpos, tnpos, tneg, tnneg, want_loss, buf, lo, hi):
    """Fused pass over the blocks ``[lo, hi)``: block ``c`` writes its :data:`N_STATS` sums into ``buf[c]``.

    ``buf`` has shape ``(n_chunks, N_STATS)``; the caller merges its rows in order.
    """
    n = s.shape[0]
    for c in range(lo, hi):
        start = c * CHUNK
        _newton_chunk(s, y, w, center, scale, a, b, tpos, tnpos, tneg, tnneg, want_loss,
                      start, min(start + CHUNK, n), buf[c])


# ---------------------------------------------------------------------------
# Preparation pass for Platt scaling: validation counts and class weights.
# ---------------------------------------------------------------------------

_INT64_MAX = 0x7FFFFFFFFFFFFFFF
_INT64_MIN = -0x8000000000000000


@kernel(fastmath=True)
def _prep_chunk(s, y, w, lo, hi, iout, fout):
    """Per block, into ``iout``: #non-finite scores, #labels not in {0, 1},
    #positive labels, the order keys (see :func:`order_key`) of the min and
    max score over rows of positive weight, and of the min and max score over
    all rows; into ``fout``: the weight of the positive and of the negative
    rows (when weighted)."""
    bad_s = 0
    bad_y = 0
    npos = 0
    lo_k = _INT64_MAX
    hi_k = _INT64_MIN
    lo_all = _INT64_MAX
    hi_all = _INT64_MIN
    wpos = 0.0
    wneg = 0.0
    for i in range(np.uint64(lo), np.uint64(hi)):
        bits = float64_bits_as_int64(np.float64(s[i]))
        bad_s += 1 if (bits >> 52) & 0x7FF == 0x7FF else 0  # exponent all ones: inf or NaN
        key = order_key(np.float64(s[i]))  # the same bits: one bitcast after inlining
        lo_all = min(lo_all, key)
        hi_all = max(hi_all, key)
        yi = y[i]
        bad_y += 0 if (yi == 0 or yi == 1) else 1
        pos = yi > 0
        if w is not None:
            wi = np.float64(w[i])
            wpos += wi if pos else 0.0
            wneg += 0.0 if pos else wi
            keep = wi > 0.0
            lo_k = min(lo_k, key if keep else _INT64_MAX)
            hi_k = max(hi_k, key if keep else _INT64_MIN)
        else:
            npos += 1 if pos else 0
    if w is None:
        lo_k = lo_all
        hi_k = hi_all
    iout[0] = bad_s
    iout[1] = bad_y
    iout[2] = npos
    iout[3] = lo_k
    iout[4] = hi_k
    iout[5] = lo_all
    iout[6] = hi_all
    fout[0] = wpos
    fout[1] = wneg


@kernel
def prep(s, y, w, ibuf, fbuf, lo, hi):
    """Preparation pass over the blocks ``[lo, hi)``: the results of :func:`_prep_chunk` into ``ibuf[c], fbuf[c]``.

    ``ibuf`` is int64 of shape ``(n_chunks, N_PREP_INT)``, ``fbuf`` float64
    ``(n_chunks, N_PREP_FLOAT)``; the caller merges them (integer columns 0-2 are counts, 3/5 minima and 4/6
    maxima of order keys; the float columns are weights).
    """
    n = s.shape[0]
    for c in range(lo, hi):
        start = c * CHUNK
        _prep_chunk(s, y, w, start, min(start + CHUNK, n), ibuf[c], fbuf[c])


# ---------------------------------------------------------------------------
# Preparation pass for the calibration slope: clipped logits of p.
# ---------------------------------------------------------------------------


@kernel(fastmath=True)
def _logit_chunk(y, p, w, eps, lo, hi, x, iout, fout):
    """Write x = logit(clip(p, eps, 1 - eps)) for rows lo..hi and, per block, into
    ``iout``: #p outside [0, 1] or NaN, #labels not in {0, 1}, #positive labels,
    and the order keys (:func:`order_key`) of the min and max of x over the
    positive and over the negative rows of positive weight; into ``fout``: the
    weight of the positive and of the negative rows (when weighted).

    logit(p) = log(p / (1 - p)): 1 - p is exact for p >= 1/2 and within half an
    ulp below, so x is within a few ulp (absolute, and relative away from p = 1/2).
    """
    bad_p = 0
    bad_y = 0
    npos = 0
    lo_pos = _INT64_MAX
    hi_pos = _INT64_MIN
    lo_neg = _INT64_MAX
    hi_neg = _INT64_MIN
    wpos = 0.0
    wneg = 0.0
    one_minus_eps = 1.0 - eps
    for i in range(np.uint64(lo), np.uint64(hi)):
        pi = np.float64(p[i])
        ok = pi >= 0.0 and pi <= 1.0  # False for NaN
        bad_p += 0 if ok else 1
        pi = pi if ok else 0.5
        pi = eps if pi < eps else pi
        pi = one_minus_eps if pi > one_minus_eps else pi
        xi = log_normal(pi / (1.0 - pi))
        x[i] = xi
        key = order_key(xi)
        yi = y[i]
        bad_y += 0 if (yi == 0 or yi == 1) else 1
        pos = yi > 0
        if w is not None:
            wi = np.float64(w[i])
            wpos += wi if pos else 0.0
            wneg += 0.0 if pos else wi
            keep = wi > 0.0
        else:
            npos += 1 if pos else 0
            keep = True
        lo_pos = min(lo_pos, key if (keep and pos) else _INT64_MAX)
        hi_pos = max(hi_pos, key if (keep and pos) else _INT64_MIN)
        lo_neg = min(lo_neg, key if (keep and not pos) else _INT64_MAX)
        hi_neg = max(hi_neg, key if (keep and not pos) else _INT64_MIN)
    iout[0] = bad_p
    iout[1] = bad_y
    iout[2] = npos
    iout[3] = lo_pos
    iout[4] = hi_pos
    iout[5] = lo_neg
    iout[6] = hi_neg
    fout[0] = wpos
    fout[1] = wneg


@kernel
def logit(y, p, w, eps, x, ibuf, fbuf, lo, hi):
    """Logit pass over the blocks ``[lo, hi)``: fills ``x``, and the results of :func:`_logit_chunk` into ``ibuf[c], fbuf[c]``."""
    n = p.shape[0]
    for c in range(lo, hi):
        start = c * CHUNK
        _logit_chunk(y, p, w, eps, start, min(start + CHUNK, n), x, ibuf[c], fbuf[c])


# ---------------------------------------------------------------------------
# The warm start's subsample: evenly spaced blocks of rows, gathered in parallel.
# ---------------------------------------------------------------------------


@kernel
def gather_blocks(s, y, w, starts, length, s_out, y_out, w_out, lo, hi):
    """Copy blocks ``lo <= j < hi``: rows ``starts[j] .. starts[j] + length - 1`` of ``s``, ``y`` and ``w``
    (unless None) into rows ``j * length ..`` of ``s_out``, ``y_out`` and ``w_out``."""
    for j in range(lo, hi):
        a = starts[j]
        o = j * length
        s_out[o:o + length] = s[a:a + length]
        y_out[o:o + length] = y[a:a + length]
        if w is not None:
            w_out[o:o + length] = w[a:a + length]


# ---------------------------------------------------------------------------
# Prediction: p = 1 / (1 + exp(a*s + b)).
# ---------------------------------------------------------------------------


@kernel
def _predict_chunk(s, a, b, out, lo, hi):
    """out[i] = 1 / (1 + exp(a*s[i] + b)) for lo <= i < hi; returns #non-finite s[i]."""
    bad = 0
    for i in range(np.uint64(lo), np.uint64(hi)):
        x = np.float64(s[i])
        bad += 0 if np.isfinite(x) else 1
        z = a * x + b
        e = exp_neg(-abs(z))
        d = 1.0 / (1.0 + e)
        out[i] = e * d if z >= 0.0 else d
    return bad


@kernel
def predict(s, a, b, out, lo, hi):
    """Fill ``out[lo:hi]`` with Platt probabilities of ``s[lo:hi]``; returns the number of non-finite scores."""
    return _predict_chunk(s, a, b, out, lo, hi)


# ---------------------------------------------------------------------------
# Beta calibration (fastcal.beta): logit q = a log p - b log(1 - p) + c.
# Here, beside Platt's, because it needs the same vectorisable exp and log.
# ---------------------------------------------------------------------------

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
    with min(q, 1 - q) = e / (1 + e), e = exp(-|eta|), as in :func:`_newton_chunk`; and
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
    """``(c1, s1, c2, s2, xmax1, xmax2)`` of :func:`fastcal.beta.make_frame` for probabilities in ``[lo, hi]``
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
    root, at the end of [0, 1] where it is smallest in magnitude (see :func:`fastcal.beta.midpoint`)."""
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
    with ``active[f]`` (see :func:`newton_blocks`)."""
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


# ---------------------------------------------------------------------------
# Many fits at once (fastcal.platt.fit_groups): the passes above, block by block, each block with its own fit's
# parameters. The blocks of a fit are its own fit's chunks (CHUNK rows from its first row), so that its sums,
# merged in block order, are those of its own passes bit for bit.
# ---------------------------------------------------------------------------


@kernel
def prep_blocks(s, y, w, block_lo, block_hi, ibuf, fbuf, lo, hi):
    """:func:`_prep_chunk` of rows ``block_lo[j] .. block_hi[j] - 1`` into ``ibuf[j], fbuf[j]``, for the blocks
    ``lo <= j < hi``."""
    for j in range(lo, hi):
        _prep_chunk(s, y, w, block_lo[j], block_hi[j], ibuf[j], fbuf[j])


@kernel
def newton_blocks(s, y, w, block_lo, block_hi, block_fit, active, center, scale, a, b, tpos, tnpos, tneg, tnneg,
                  buf, lo, hi):
    """:func:`_newton_chunk` (without the objective) of rows ``block_lo[j] .. block_hi[j] - 1`` into ``buf[j]``,
    at the parameters of its fit ``f = block_fit[j]`` (``center[f]``, ``a[f]``, ...), for the blocks
    ``lo <= j < hi`` of the fits with ``active[f]``; the others' rows of ``buf`` are left as they are."""
    for j in range(lo, hi):
        f = block_fit[j]
        if active[f]:
            _newton_chunk(s, y, w, center[f], scale[f], a[f], b[f], tpos[f], tnpos[f], tneg[f], tnneg[f], None,
                          block_lo[j], block_hi[j], buf[j])
