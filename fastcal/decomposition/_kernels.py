"""Numba kernels of the score decomposition and the CORP reliability bands.

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.decomposition._corp` give it, and checks nothing.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel
from .._core.pav_kernels import push_block

#: Rows per chunk of the score sums: chunk bounds depend on ``n`` alone, so
#: the sums do not depend on the number of threads.
CHUNK = 1 << 16


@kernel
def score_sums(y, p, w, log, out, lo, hi):
    """Per chunk ``c`` in ``[lo, hi)``: ``out[c] = (sum w s(p, y), sum w, sum w y)``.

    ``s`` is the squared error ``(p - y)^2`` or, with ``log``, the log loss
    ``-log p`` (``y = 1``) / ``-log(1 - p)`` (``y = 0``), infinite at a
    confidently wrong prediction. ``w`` empty: unit weights. Sums in float64.
    """
    n = p.shape[0]
    weighted = w.shape[0] > 0
    for c in range(lo, hi):
        s = 0.0
        sw = 0.0
        swy = 0.0
        for i in range(c * CHUNK, min(n, (c + 1) * CHUNK)):
            wi = np.float64(w[i]) if weighted else 1.0
            if wi == 0.0:  # a row of no weight adds nothing, even where its score is infinite
                continue
            pi = np.float64(p[i])
            yi = 1.0 if y[i] != 0 else 0.0
            if log:
                term = -np.log(pi) if yi == 1.0 else -np.log1p(-pi)
            else:
                term = (pi - yi) * (pi - yi)
            s += wi * term
            sw += wi
            swy += wi * yi
        out[c, 0] = s
        out[c, 1] = sw
        out[c, 2] = swy


@kernel
def block_score(sw, swy, log):
    """``sum_k`` of block ``k``'s total score at its mean ``r = swy / sw``.

    Squared error: ``swy (1 - r)^2 + (sw - swy) r^2``; log loss:
    ``-(swy log r + (sw - swy) log(1 - r))`` with ``0 log 0 = 0``.
    """
    total = 0.0
    for k in range(sw.shape[0]):
        pos = swy[k]
        neg = sw[k] - pos
        r = pos / sw[k]
        if log:
            if pos > 0.0:
                total -= pos * np.log(r)
            if neg > 0.0:
                total -= neg * np.log1p(-r)
        else:
            total += pos * (1.0 - r) * (1.0 - r) + neg * r * r
    return total


# --------------------------------------------------------------------------
# Resampled isotonic fits over pre-sorted rows
# --------------------------------------------------------------------------

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2^-53


@kernel
def _mix(z):
    """The SplitMix64 finaliser (Steele, Lea & Flood 2014): a bijection of 64-bit words."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@kernel
def _uniform(base, i):
    """The ``i``-th uniform in [0, 1) of the stream ``base``: a counter-based SplitMix64 draw."""
    z = _mix(base + (np.uint64(i) + np.uint64(1)) * _GAMMA)
    return np.float64(z >> _S11) * _TO_UNIT


@kernel
def stream(key, r):
    """The base word of resample ``r``'s stream under the seed ``key``."""
    return _mix(key ^ _mix(np.uint64(r) * _GAMMA + _GAMMA))


@kernel
def _fit_rows(lab, w, counts, starts, bw, bwy, bg, bl):
    """PAV over the tie groups of rows with labels ``lab``, weights ``w`` (empty: 1) times ``counts`` (empty: 1).

    Groups of zero weight are skipped; block ``k`` holds groups ``bg[k] .. bl[k]`` (see
    :func:`fastcal._core.pav_kernels.push_block`).
    Returns the number of blocks.
    """
    n = lab.shape[0]
    n_groups = starts.shape[0] - 1
    weighted = w.shape[0] > 0
    counted = counts.shape[0] > 0
    top = 0
    if n_groups == n:  # no ties: a group is a row
        for i in range(n):
            wi = np.float64(w[i]) if weighted else 1.0
            if counted:
                wi *= counts[i]
            if wi > 0.0:
                top = push_block(bw, bwy, bg, bl, top, wi, wi * lab[i], i, i)
        return top
    for g in range(n_groups):
        sw = 0.0
        swy = 0.0
        for i in range(starts[g], starts[g + 1]):
            wi = np.float64(w[i]) if weighted else 1.0
            if counted:
                wi *= counts[i]
            sw += wi
            swy += wi * lab[i]
        if sw > 0.0:
            top = push_block(bw, bwy, bg, bl, top, sw, swy, g, g)
    return top


@kernel
def _evaluate(bw, bwy, bg, nb, targets, row):
    """``row[j]``: the fitted value at group ``targets[j]`` (sorted): the mean of the last block starting at or
    before it (the first block for groups before every block)."""
    k = 0
    for j in range(targets.shape[0]):
        t = targets[j]
        while k + 1 < nb and bg[k + 1] <= t:
            k += 1
        row[j] = bwy[k] / bw[k]


@kernel
def bernoulli_thresholds(p, thr):
    """``thr[i] = ceil(p[i] 2^53)``: a 53-bit uniform ``k 2^-53`` is below ``p[i]`` exactly when ``k < thr[i]``."""
    for i in range(p.shape[0]):
        thr[i] = np.uint64(np.ceil(p[i] * 9007199254740992.0))


@kernel
def resample_fits(labels, w, thr, starts, targets, key, mode, out, lo, hi):
    """Isotonic fits of resamples ``lo .. hi - 1`` of rows sorted by prediction, evaluated at ``targets``.

    The rows are in increasing order of prediction, with 0/1 ``labels``
    (float64) and weights ``w`` (empty: unit weights); ``starts`` (length
    ``G + 1``) bounds the ``G`` tie groups. ``mode`` 1 (consistency): row
    ``i`` gets the label ``u_i < p_i``, tested as ``k_i < thr[i]`` (see
    :func:`bernoulli_thresholds`); mode 2 (confidence): ``n`` rows are drawn
    with replacement (row ``i`` weighs its number of draws times ``w_i``);
    mode 0: the data itself. The uniforms of resample ``r`` come from its
    own counter-based stream (:func:`stream`), so a resample's result does
    not depend on which thread computes it. ``out[r, j]`` is resample
    ``r``'s fitted value at group ``targets[j]``.
    """
    n = labels.shape[0]
    n_groups = starts.shape[0] - 1
    bw = np.empty(n_groups)
    bwy = np.empty(n_groups)
    bg = np.empty(n_groups, dtype=np.int64)
    bl = np.empty(n_groups, dtype=np.int64)
    lab = np.empty(n if mode == 1 else 0)
    counts = np.empty(n if mode == 2 else 0, dtype=np.int32)  # a row is drawn at most n < 2^31 times
    for r in range(lo, hi):
        if mode == 1:
            nb = consistency_blocks(w, thr, starts, 0, key, r, lab, bw, bwy, bg, bl)
        else:
            base = stream(key, r)
            if mode == 2:
                counts[:] = 0
                for i in range(n):
                    j = np.int64(_uniform(base, i) * n)
                    counts[min(j, n - 1)] += 1
            nb = _fit_rows(labels, w, counts, starts, bw, bwy, bg, bl)
        _evaluate(bw, bwy, bg, nb, targets, out[r])


@kernel
def _consistency_labels(base, thr, offset, lab):
    """``lab[i] = 1`` when the uniform number ``offset + i`` of the stream ``base`` is below ``p_i`` (tested as
    ``k < thr[i]``), else 0: the labels of a consistency resample of the rows ``offset ..`` of the sorted whole."""
    for i in range(lab.shape[0]):
        z = _mix(base + (np.uint64(offset + i) + np.uint64(1)) * _GAMMA)
        lab[i] = 1.0 if (z >> _S11) < thr[i] else 0.0


@kernel
def consistency_blocks(w, thr, starts, offset, key, r, lab, bw, bwy, bg, bl):
    """The PAV blocks of consistency resample ``r`` of a run of sorted rows: rows ``offset ..`` of the whole.

    The rows are a score range of the whole, sorted as :func:`resample_fits`
    sorts it (``thr`` from :func:`bernoulli_thresholds`, weights ``w``,
    empty: unit weights; ``starts`` its tie groups), and each row draws the
    uniform of its place in the whole, so that the blocks of the ranges,
    merged in order, are those of :func:`resample_fits` over the whole.
    Block ``k`` (of the returned number) weighs ``bw[k]``, sums ``bwy[k]``
    and spans the groups ``bg[k] .. bl[k]`` of the run; ``lab`` is scratch.
    """
    _consistency_labels(stream(key, r), thr, offset, lab)
    return _fit_rows(lab, w, np.empty(0, dtype=np.int32), starts, bw, bwy, bg, bl)


@kernel
def order_ties_by_weight(x, w):
    """Sort ``w`` within each run of equal values of the sorted ``x``: rows of equal score in order of weight,
    an order every backend can make without the rows' original positions."""
    n = x.shape[0]
    i = 0
    while i < n:
        j = i + 1
        while j < n and x[j] == x[i]:
            j += 1
        if j - i > 1:
            w[i:j] = np.sort(w[i:j])
        i = j


@kernel
def group_starts(x, eps, starts):
    """Tie groups of the sorted ``x``: a score starts a group when it exceeds the group's first score by at
    least ``eps`` (scikit-learn's rule). Writes the ``G + 1`` bounds into ``starts``; returns ``G``."""
    n = x.shape[0]
    g = 0
    starts[0] = 0
    first = x[0]
    for i in range(1, n):
        if x[i] - first >= eps:
            g += 1
            starts[g] = i
            first = x[i]
    starts[g + 1] = n
    return g + 1
