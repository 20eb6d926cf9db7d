"""Numba kernels behind :mod:`fastcal.platt` (logistic models fitted by Newton's method; beta calibration's, on the
same pattern, are :mod:`fastcal.beta._kernels`).

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
:func:`~fastcal._core.math_kernels.exp_neg`, :func:`~fastcal._core.math_kernels.log1p_unit`
and :func:`~fastcal._core.math_kernels.log_normal` of :mod:`fastcal._core.math_kernels`
(libm's scalar ``exp`` would stop the loops from vectorising). Only the
reduction loops opt in to reassociation (``@kernel(fastmath=True)``), which is
what lets the sums vectorise.

Reductions are *chunked* (:mod:`fastcal._engine.chunked`): rows are cut into blocks
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

import numpy as np

from .._core.jit import kernel
from .._core.math_kernels import exp_neg, float64_bits_as_int64, log1p_unit, log_normal, order_key


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
