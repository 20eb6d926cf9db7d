r"""Numba kernels of the multicalibration fit (:mod:`fastcal.multicalibration._fit`): the pass over the rows and the
Newton direction over the patterns.

The model: a row of score logit :math:`\ell` in *pattern* :math:`P` (its cell of every segment feature and its
score bucket) has the logit :math:`z = a \ell + \beta_P`, where :math:`\beta_P = \sum_{c \ni P} b_c` adds up the
offsets of the segment x bucket cells that hold the pattern (``pcells[P]``, -1: none). The caller validates;
these kernels assume clean, contiguous input and check nothing.

- :func:`logits`: :math:`\ell = \log(p / (1 - p))`, ``p`` clipped to ``[eps, 1 - eps]``.
- :func:`fit_pass`: chunks of rows, for each *split* ``s`` (a fit on some folds, the others held out): per pattern
  the sums :math:`G_P = \sum w (q - y)`, :math:`H_P = \sum w q (1 - q)`, :math:`HL_P = \sum w q (1 - q) \ell` over
  the split's training rows, and the totals (training log loss, held-out log loss, :math:`\sum w (q - y) \ell`,
  :math:`\sum w q (1 - q) \ell^2`). Each chunk writes its own row of the buffers (a fixed-chunk reduction).
- :func:`lasso_direction`: the minimiser of the quadratic model of the log loss at the current parameters plus
  the L1 penalty, by coordinate descent on the pattern sums alone (:func:`cell_patterns`: each cell's patterns).
- :func:`pattern_offsets`, :func:`predict_logits`: :math:`\beta_P`, and the rows' calibrated probabilities.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.jit import kernel
from .._core.math_kernels import exp_neg, log1p_unit

__all__ = ["cell_patterns", "fit_pass", "lasso_direction", "logits", "pattern_offsets", "predict_rows", "row_offsets",
           "segment_cells"]

#: Columns of :func:`fit_pass`'s totals, per split.
TRAIN_LOSS, HELD_LOSS, GL, HLL = 0, 1, 2, 3
N_TOTALS = 4
#: Columns of its pattern sums, per split and pattern.
N_SUMS = 3


@kernel
def logits(p, eps, out, lo, hi):
    """Rows ``lo..hi``: ``out = log(p / (1 - p))`` of ``p`` clipped to ``[eps, 1 - eps]``, in float64."""
    for i in range(lo, hi):
        v = min(max(np.float64(p[i]), eps), 1.0 - eps)
        out[i] = math.log(v) - math.log1p(-v)


@kernel
def fit_pass(pattern, lg, y, w, fold, held, slope, beta, chunk_rows, sums, totals, lo, hi):
    """Chunks ``lo..hi`` (chunk ``c``: rows ``c * chunk_rows`` up to ``n``): row ``c`` of ``sums`` (patterns x
    splits x :data:`N_SUMS`, flat) and of ``totals`` (splits x :data:`N_TOTALS`, flat).

    ``held[s, fold[i]]`` says whether row ``i`` is held out of split ``s``; split ``s`` has the parameters
    ``slope[s]`` and ``beta[:, s]`` (one offset per pattern: patterns x splits, so that a row reads one cache line).
    The sums are laid out patterns x splits x :data:`N_SUMS` likewise. ``w`` empty: unit weights.
    """
    n = pattern.shape[0]
    n_splits = slope.shape[0]
    for c in range(lo, hi):
        s_row = sums[c]
        t_row = totals[c]
        s_row[:] = 0.0
        t_row[:] = 0.0
        for i in range(c * chunk_rows, min(n, (c + 1) * chunk_rows)):
            wi = 1.0 if w.shape[0] == 0 else np.float64(w[i])
            if wi == 0.0:
                continue
            k = pattern[i]
            li = lg[i]
            yf = 1.0 if y[i] != 0 else 0.0
            nf = 1.0 - yf
            f = fold[i]
            for s in range(n_splits):
                z = slope[s] * li + beta[k, s]
                e = exp_neg(-abs(z))
                inv = 1.0 / (1.0 + e)
                ez = e * inv
                # q and 1 - q, each without cancellation; selects and products by the 0/1 label, no branches
                # (a score's side of 0 and a row's label are coin flips to a branch predictor)
                pos = z >= 0
                q = inv if pos else ez
                qc = ez if pos else inv
                loss = log1p_unit(e) + (max(z, 0.0) - yf * z)
                t = s * N_TOTALS
                if held[s, f]:
                    t_row[t + HELD_LOSS] += wi * loss
                else:
                    g = wi * (q * nf - qc * yf)
                    h = wi * q * qc
                    b = (k * n_splits + s) * N_SUMS
                    s_row[b] += g
                    s_row[b + 1] += h
                    s_row[b + 2] += h * li
                    t_row[t + TRAIN_LOSS] += wi * loss
                    t_row[t + GL] += g * li
                    t_row[t + HLL] += h * li * li


@kernel
def pattern_offsets(pcells, b, out):
    """``out[P] = sum of b[c]`` over the cells ``c = pcells[P, j] >= 0`` of each pattern (in the order of ``j``)."""
    for p in range(pcells.shape[0]):
        acc = 0.0
        for j in range(pcells.shape[1]):
            c = pcells[p, j]
            if c >= 0:
                acc += b[c]
        out[p] = acc


@kernel
def cell_patterns(pcells, n_cells):
    """``(start, patterns)``: the patterns of each cell (those of cell ``c`` are ``patterns[start[c]:start[c + 1]]``,
    ascending), from the cells of each pattern ``pcells`` (-1: none)."""
    start = np.zeros(n_cells + 1, dtype=np.int64)
    for p in range(pcells.shape[0]):
        for j in range(pcells.shape[1]):
            if pcells[p, j] >= 0:
                start[pcells[p, j] + 1] += 1
    for c in range(n_cells):
        start[c + 1] += start[c]
    fill = start[:-1].copy()
    patterns = np.empty(start[n_cells], dtype=np.int64)
    for p in range(pcells.shape[0]):
        for j in range(pcells.shape[1]):
            c = pcells[p, j]
            if c >= 0:
                patterns[fill[c]] = p
                fill[c] += 1
    return start, patterns


@kernel
def lasso_direction(start, patterns, G, H, HL, gl, hll, lam, b, tol, max_sweeps, target):
    r"""The parameters ``b + delta`` (into ``target``: cells, then the slope's step last) that minimise the quadratic
    model of the log loss at the current offsets ``b`` plus :math:`\lambda \lVert b + \delta \rVert_1`, by cyclic
    coordinate descent with soft thresholding (Friedman, Hastie and Tibshirani 2010), the slope unpenalised.

    With :math:`D_P = \sum_{c \ni P} \delta_c`, the model is :math:`\sum_P (G_P D_P + \tfrac12 H_P D_P^2 + HL_P D_P
    \delta_a) + gl\,\delta_a + \tfrac12 hll\,\delta_a^2` (``G, H, HL`` the pattern sums, ``start, patterns`` each
    cell's patterns). Sweeps (the slope, then the cells in order; between full sweeps, only the nonzero offsets)
    stop when a full sweep moves no coordinate by more than ``tol``, or after ``max_sweeps``. Returns the sweeps
    made.
    """
    n_patterns = G.shape[0]
    n_cells = b.shape[0]
    r = G.copy()  # the model's derivative in D_P
    d = np.zeros(n_patterns)
    hcell = np.zeros(n_cells)
    for c in range(n_cells):
        acc = 0.0
        for t in range(start[c], start[c + 1]):
            acc += H[patterns[t]]
        hcell[c] = acc
    delta = np.zeros(n_cells + 1)
    values = b.copy()
    sweeps = 0
    active_only = False  # glmnet's active set: sweeps over the nonzero offsets between full sweeps
    while sweeps < max_sweeps:
        sweeps += 1
        most = 0.0
        if hll > 0.0:
            g = gl + hll * delta[n_cells]
            for p in range(n_patterns):
                g += HL[p] * d[p]
            step = -g / hll
            delta[n_cells] += step
            for p in range(n_patterns):
                r[p] += HL[p] * step
            most = abs(step)
        for c in range(n_cells):
            h = hcell[c]
            if not h > 0.0 or (active_only and values[c] == 0.0):
                continue
            g = 0.0
            for t in range(start[c], start[c + 1]):
                g += r[patterns[t]]
            v = b[c] + delta[c]
            z = h * v - g
            new = (z - lam if z > lam else (z + lam if z < -lam else 0.0)) / h
            step = new - v
            if step != 0.0:
                delta[c] += step
                values[c] = new
                for t in range(start[c], start[c + 1]):
                    p = patterns[t]
                    r[p] += H[p] * step
                    d[p] += step
                most = max(most, abs(step))
        if most > tol:
            active_only = True
        elif active_only:  # converged on the active set: a full sweep to check the others
            active_only = False
        else:
            break
    for c in range(n_cells):  # the new offsets themselves: exact zeros where the thresholding put them
        target[c] = values[c]
    target[n_cells] = delta[n_cells]
    return sweeps


@kernel
def predict_rows(p, eps, slope, index, offsets, out, lo, hi):
    """Rows ``lo..hi``: ``out = 1 / (1 + exp(-(slope * logit(p) + offsets[index])))`` (in ``out``'s dtype), the logit
    as :func:`logits` computes it."""
    for i in range(lo, hi):
        v = min(max(np.float64(p[i]), eps), 1.0 - eps)
        z = slope * (math.log(v) - math.log1p(-v)) + offsets[index[i]]
        e = exp_neg(-abs(z))
        out[i] = 1.0 / (1.0 + e) if z >= 0 else e / (1.0 + e)


@kernel
def _segment_of(digits, r, j, combo_features, combo_mult, local, local_start, first_segment):
    """The segment of row ``r`` of ``digits`` (-1: no value) in combination ``j``, -1 if none."""
    key = 0
    for t in range(combo_features.shape[1]):
        f = combo_features[j, t]
        if f < 0:
            break
        d = digits[r, f]
        if d < 0:
            return -1
        key += d * combo_mult[j, t]
    seg = local[local_start[j] + key]
    return first_segment[j] + seg if seg >= 0 else -1


@kernel
def segment_cells(digits, bucket, combo_features, combo_mult, local, local_start, first_segment, n_buckets, out,
                  lo, hi):
    """Rows ``lo..hi`` of ``digits`` (rows x features, -1: no value) in score buckets ``bucket``: the cells of each
    row, two per segment that holds it (the segment's own cell, then its cell of the row's bucket), -1 for none.

    Segment ``s`` has the cells ``s * (n_buckets + 1)`` (all its rows) and ``s * (n_buckets + 1) + 1 + k`` (its
    rows of bucket ``k``). Columns 0 and 1 are segment 0's (all rows), columns ``2 + 2 j`` and ``3 + 2 j`` those of
    combination ``j`` of features: its features ``combo_features[j]`` (-1 padded) with the mixed-radix
    multipliers ``combo_mult[j]`` key the segment ``local[local_start[j] + key]`` (-1: none), counted from
    ``first_segment[j]``."""
    width = n_buckets + 1
    for r in range(lo, hi):
        kb = bucket[r]
        out[r, 0] = 0
        out[r, 1] = 1 + kb
        for j in range(combo_features.shape[0]):
            s = _segment_of(digits, r, j, combo_features, combo_mult, local, local_start, first_segment)
            out[r, 2 + 2 * j] = s * width if s >= 0 else -1
            out[r, 3 + 2 * j] = s * width + 1 + kb if s >= 0 else -1


@kernel
def row_offsets(digits, bucket, combo_features, combo_mult, local, local_start, first_segment, n_buckets, b, out,
                lo, hi):
    """Rows ``lo..hi``: ``out[r]`` the sum of the offsets ``b`` of the cells of row ``r`` (those of
    :func:`segment_cells`, added in its order)."""
    width = n_buckets + 1
    for r in range(lo, hi):
        kb = bucket[r]
        acc = b[0]
        acc += b[1 + kb]
        for j in range(combo_features.shape[0]):
            s = _segment_of(digits, r, j, combo_features, combo_mult, local, local_start, first_segment)
            if s >= 0:
                acc += b[s * width]
                acc += b[s * width + 1 + kb]
        out[r] = acc
