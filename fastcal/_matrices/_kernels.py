"""Numba kernels behind :mod:`fastcal._matrices`: sums over the rows of an (n, k) probability matrix, the top label.

The callers validate; these kernels assume clean, contiguous input and never
check. Every reduction splits the rows into chunks whose bounds depend only
on ``n`` and the number of chunks (chosen from the problem size), each
chunk summing into its own row of a partial buffer, merged in chunk order:
the results are bit-identical on any number of threads.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel

# Columns of the sums over the rows of an (n, k) probability matrix returned by ``class_rows``.
RW = 0  # total weight
RLOG = 1  # sum of w * (-log q), q the clipped probability of the true class
RBRIER = 2  # sum of w * sum_j (P_ij - [j is the true class])^2
ROFF = 3  # number of rows whose sum is not 1 within the tolerance
NROW = 4


# --------------------------------------------------------------------------
# rows of an (n, k) probability matrix: multiclass log loss and Brier score
# --------------------------------------------------------------------------
@kernel
def _rows_chunk(P, codes, w, logloss, brier, clip_lo, clip_hi, atol, rtol, start, stop, acc):
    k = P.shape[1]
    weight = 0.0
    log_sum = 0.0
    brier_sum = 0.0
    off = 0
    for i in range(start, stop):
        s = 0.0
        for j in range(k):
            s += np.float64(P[i, j])
        off += abs(s - 1.0) > atol + rtol * abs(s)
        if codes is None:
            continue
        if w is None:
            wi = 1.0
        else:
            wi = np.float64(w[i])
        weight += wi
        c = codes[i]
        if logloss:
            # scikit-learn's clipping, in the dtype of P
            q = P[i, c]
            if q < clip_lo:
                q = clip_lo
            elif q > clip_hi:
                q = clip_hi
            log_sum -= wi * np.log(np.float64(q))
        if brier:
            b = 0.0
            for j in range(k):
                d = np.float64(P[i, j]) - (1.0 if j == c else 0.0)
                b += d * d
            brier_sum += wi * b
    acc[RW] = weight
    acc[RLOG] = log_sum
    acc[RBRIER] = brier_sum
    acc[ROFF] = off


@kernel
def class_rows(P, codes, w, logloss, brier, clip_lo, clip_hi, atol, rtol, part, lo, hi):
    """Sums over the rows of chunks ``[lo, hi)`` of the probability matrix ``P`` into ``part[c]`` (columns ``RW, RLOG, RBRIER, ROFF``).

    ``P``: (n, k) probabilities, C-contiguous; ``codes``: the column of each
    row's true class (in ``[0, k)``), or None to count the rows off 1 only;
    ``w``: weights or None; ``logloss``/``brier``: which sums to fill;
    ``clip_lo``, ``clip_hi``: eps and 1 - eps in the dtype of ``P``; a row is
    off 1 when ``|s - 1| > atol + rtol |s|`` for its float64 sum ``s``.
    """
    n = P.shape[0]
    nchunks = part.shape[0]
    for c in range(lo, hi):
        # chunk c holds rows (c n) // nchunks .. ((c + 1) n) // nchunks - 1: bounds of n and nchunks alone
        _rows_chunk(P, codes, w, logloss, brier, clip_lo, clip_hi, atol, rtol, (c * n) // nchunks,
                    ((c + 1) * n) // nchunks, part[c])


# --------------------------------------------------------------------------
# the top-label problem of an (n, k) probability matrix
# --------------------------------------------------------------------------
@kernel
def top_label(P, codes, conf, correct, lo, hi):
    """Rows ``[lo, hi)`` of an (n, k) probability matrix: the largest probability and whether its column is the row's class.

    The first column of the largest value wins ties (``np.argmax``).
    """
    k = P.shape[1]
    for i in range(lo, hi):
        best = P[i, 0]
        arg = 0
        for j in range(1, k):
            v = P[i, j]
            if v > best:
                best = v
                arg = j
        conf[i] = best
        correct[i] = 1 if arg == codes[i] else 0
