"""Numba kernels of isotonic regression: the PAV of unsorted rows, the PAV steps' cuts and sums, prediction.

The PAV of sorted rows, tie pooling and the knots are in :mod:`fastcal._core.pav_kernels` (shared with the grouped
fits).

Private: every kernel assumes clean, contiguous input of the dtypes the
wrappers in :mod:`fastcal.isotonic` give it, and checks nothing.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel

# --------------------------------------------------------------------------
# Pool adjacent violators
# --------------------------------------------------------------------------


@kernel
def pav_blocks(x, w, r):
    """Pool adjacent violators in place; return the number of blocks ``b``.

    On return ``x[:b]`` holds the block values, ``w[:b]`` the block weights and
    ``r[:b + 1]`` the block boundaries (block ``k`` is ``r[k]:r[k + 1]``).

    This is Algorithm 1 of Busing (2022), the O(n) single-pass form in which a
    new element first absorbs the following "up" violators and then pools
    backwards; equal neighbouring values are pooled (``>=``), so the blocks are
    the maximal runs of equal fitted values. The arithmetic follows the same
    order as SciPy's C++ ``pava`` so that both give the same bits.

    Busing, F. M. T. A. (2022). Monotone Regression: A Simple and Fast O(n)
    PAVA Implementation. Journal of Statistical Software, Code Snippets,
    102(1), 1-25. https://doi.org/10.18637/jss.v102.c01
    """
    n = x.shape[0]
    r[0] = 0
    r[1] = 1
    b = 0
    xb_prev = x[0]
    wb_prev = w[0]
    i = 1
    while i < n:
        b += 1
        xb = x[i]
        wb = w[i]
        if xb_prev >= xb:
            b -= 1
            sb = wb_prev * xb_prev + wb * xb
            wb += wb_prev
            xb = sb / wb
            while i < n - 1 and xb >= x[i + 1]:
                i += 1
                sb += w[i] * x[i]
                wb += w[i]
                xb = sb / wb
            while b > 0 and x[b - 1] >= xb:
                b -= 1
                sb += w[b] * x[b]
                wb += w[b]
                xb = sb / wb
        x[b] = xb
        xb_prev = xb
        w[b] = wb
        wb_prev = wb
        r[b + 1] = i + 1
        i += 1
    return b + 1


@kernel
def expand_blocks(x, r, nb):
    """Overwrite ``x`` with each block's value repeated over the block (backwards, in place)."""
    for k in range(nb - 1, -1, -1):
        v = x[k]
        for i in range(r[k], r[k + 1]):
            x[i] = v


# --------------------------------------------------------------------------
# Sorted order and tie pooling
# --------------------------------------------------------------------------


@kernel
def is_sorted(x):
    """True if ``x`` is non-decreasing."""
    for i in range(1, x.shape[0]):
        if x[i] < x[i - 1]:
            return False
    return True


# --------------------------------------------------------------------------
# Prediction: piecewise-linear interpolation between thresholds
# --------------------------------------------------------------------------


@kernel
def build_lookup(xs, n_cells):
    """Bucket table for :func:`interpolate_one` over the sorted thresholds ``xs``.

    The range ``[xs[0], xs[-1]]`` is cut into ``n_cells`` equal cells;
    ``table[c]`` counts the thresholds whose cell is below ``c``. Because the
    cell of a value is a monotone function of it, the first threshold ``>= t``
    lies in ``table[cell(t)] .. table[cell(t) + 1]``, usually a range of zero to
    two thresholds, so a prediction costs O(1) instead of a binary search.
    Returns ``(table, scale)``; ``scale`` is 0 when the range is too wide to cut.
    """
    m = xs.shape[0]
    x0 = np.float64(xs[0])
    width = np.float64(xs[m - 1]) - x0
    scale = n_cells / width if width > 0 else 0.0
    if not (scale > 0 and scale < np.inf):
        n_cells = 1
        scale = 0.0
    table = np.zeros(n_cells + 1, dtype=np.int64)
    for i in range(m):
        table[cell_of(np.float64(xs[i]), x0, scale, n_cells) + 1] += 1
    for c in range(n_cells):
        table[c + 1] += table[c]
    return table, scale


@kernel
def cell_of(t, x0, scale, n_cells):
    if n_cells == 1:
        return 0
    v = (t - x0) * scale
    if v >= n_cells - 1:
        return n_cells - 1
    if v <= 0:
        return 0
    return np.int64(v)


@kernel
def interpolate_one(t, xs, ys, table, scale):
    """Linear interpolation at ``x0 <= t <= xs[-1]`` (``t`` as float64).

    With ``j`` the first threshold ``>= t`` (clipped to ``1 .. m - 1``, the
    knot search of SciPy's ``interp1d``), the value is
    ``y[j-1] + (t - x[j-1]) / (x[j] - x[j-1]) * (y[j] - y[j-1])``: the fraction
    lies in [0, 1], so a steep slope cannot overflow into ``inf * 0``.
    """
    n_cells = table.shape[0] - 1
    c = cell_of(t, np.float64(xs[0]), scale, n_cells)
    lo = table[c]
    hi = table[c + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        if xs[mid] < t:
            lo = mid + 1
        else:
            hi = mid
    m = xs.shape[0]
    if lo < 1:
        lo = 1
    elif lo > m - 1:
        lo = m - 1
    x_lo = np.float64(xs[lo - 1])
    y_lo = np.float64(ys[lo - 1])
    frac = (t - x_lo) / (np.float64(xs[lo]) - x_lo)
    return y_lo + frac * (np.float64(ys[lo]) - y_lo)


@kernel
def predict_one(t, xs, ys, table, scale, clip):
    """Prediction at one point; NaN outside the thresholds unless ``clip``."""
    x_min = np.float64(xs[0])
    x_max = np.float64(xs[xs.shape[0] - 1])
    if t < x_min:
        if not clip:
            return np.nan
        t = x_min
    elif t > x_max:
        if not clip:
            return np.nan
        t = x_max
    return interpolate_one(t, xs, ys, table, scale)


@kernel
def predict(T, xs, ys, table, scale, clip, out, lo, hi):
    """``out[i]``: the fitted function at ``T[i]``, for ``i`` in ``lo .. hi - 1``."""
    T, out = T[lo:hi], out[lo:hi]  # indices from 0: no wraparound check
    for i in range(T.shape[0]):
        out[i] = predict_one(np.float64(T[i]), xs, ys, table, scale, clip)


# --------------------------------------------------------------------------
# The PAV steps' chunks (see fastcal.isotonic._pav): cuts at tie-group starts,
# and each block's sum of weight times score (the rows are grouped by score
# range in fastcal._engine.sort)
# --------------------------------------------------------------------------


@kernel
def clean_cuts(a, b, start_a, start_b, eps, tries, cut_a, cut_b):
    """Tie-group starts near given positions of the merged sorted runs ``a`` and ``b``.

    ``(start_a[c], start_b[c])`` is a position of the merge of ``a`` and
    ``b`` (``b`` may be empty): every row before it is ``<=`` every row from
    it on. From there the merge is walked for at most ``tries`` rows; the
    first row at least ``eps`` above the row before it starts a tie group
    whatever the groups before it (a group's first score is at most the row
    before), and its position is stored in ``(cut_a[c], cut_b[c])``;
    ``-1, -1`` when none is found.
    """
    na = a.shape[0]
    nb = b.shape[0]
    for c in range(start_a.shape[0]):
        ia = start_a[c]
        ib = start_b[c]
        cut_a[c] = -1
        cut_b[c] = -1
        prev = -np.inf
        if ia > 0:
            prev = np.float64(a[ia - 1])
        if ib > 0:
            prev = max(prev, np.float64(b[ib - 1]))
        for _ in range(tries):
            va = np.float64(a[ia]) if ia < na else np.inf
            vb = np.float64(b[ib]) if ib < nb else np.inf
            v = min(va, vb)
            if v == np.inf:
                break
            if v - prev >= eps:
                cut_a[c] = ia
                cut_b[c] = ib
                break
            prev = v
            if va <= vb:
                ia += 1
            else:
                ib += 1


@kernel
def score_sums(x, p, kind, xf, nb, swx):
    """Add each row's weight times score to its block's ``swx`` (the centered fit's block centres).

    ``x`` are sorted scores fitted into the blocks of first scores
    ``xf[:nb]``; a row belongs to the last block with ``xf[k] <= x`` (a tie
    group's rows lie between its first score and the next group's). The
    weight is 1 (``kind`` 0), ``p[i]`` (1) or ``|p[i]|`` (2, a weight carried
    with its label as sign, see :func:`pav_sorted`). Sums run in row order.
    """
    k = 0
    for i in range(x.shape[0]):
        v = x[i]
        while k + 1 < nb and xf[k + 1] <= v:
            k += 1
        if kind == 0:
            wk = 1.0
        elif kind == 1:
            wk = np.float64(p[i])
        else:
            wk = abs(np.float64(p[i]))
        swx[k] += wk * np.float64(v)
