"""Naive references for the CORP score decomposition and reliability curve: short, obviously right, slow.

Built on the plain PAV of :mod:`tests.naive_isotonic`; used only by the tests.
"""

import numpy as np
from scipy.special import xlogy

from .naive_isotonic import pav


def recalibrate(y, p, w=None):
    """``(y, p, w, fitted, groups)`` of the rows of positive weight, sorted by ``p``: the PAV recalibration.

    Predictions closer than float64's resolution to the first of their tie
    group are pooled with it (scikit-learn's rule); ``groups`` lists each
    group's first prediction.
    """
    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p).astype(np.float64)
    w = np.ones(len(p)) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    y, p, w = y[keep], p[keep], w[keep]
    order = np.argsort(p, kind="stable")
    y, p, w = y[order], p[order], w[order]
    eps = np.finfo(np.float64).resolution
    group = np.zeros(len(p), dtype=int)
    firsts = [p[0]]
    for i in range(1, len(p)):
        if p[i] - firsts[-1] >= eps:
            firsts.append(p[i])
        group[i] = len(firsts) - 1
    gw = np.bincount(group, w)
    gy = np.bincount(group, w * y) / gw
    fitted = pav(gy, gw)[group]
    return y, p, w, fitted, np.array(firsts)


def score(y, q, w, scoring):
    """Weighted mean score of the predictions ``q`` of the 0/1 outcomes ``y`` (unclipped log loss)."""
    if scoring == "brier":
        per_row = (q - y) ** 2
    else:
        with np.errstate(divide="ignore"):
            per_row = -xlogy(y, q) - xlogy(1 - y, 1 - q)
    return np.sum(w * per_row) / np.sum(w)


def decompose(y, p, w=None, scoring="brier"):
    """``(score, miscalibration, discrimination, uncertainty)`` by the definitions."""
    y, p, w, fitted, _ = recalibrate(y, p, w)
    base = np.full(len(y), np.sum(w * y) / np.sum(w))
    s, s_rc, s_mg = (score(y, q, w, scoring) for q in (p, fitted, base))
    return s, s - s_rc, s_mg - s_rc, s_mg


def corp_curve(y, p, w=None):
    """``(x, y)``: each PAV block's first and last tie-group prediction (once if equal) and its value."""
    _, p, _, fitted, firsts = recalibrate(y, p, w)
    group_fit = np.array([fitted[np.searchsorted(p, f)] for f in firsts])
    xs, ys = [], []
    start = 0
    for g in range(1, len(firsts) + 1):
        if g == len(firsts) or group_fit[g] != group_fit[start]:
            xs.append(firsts[start])
            ys.append(group_fit[start])
            if g - 1 > start:
                xs.append(firsts[g - 1])
                ys.append(group_fit[start])
            start = g
    return np.array(xs), np.array(ys)


def top_label(y_codes, P):
    """``(correct, confidence)`` of the top-label problem: first argmax against the class codes."""
    P = np.asarray(P)
    return (P.argmax(axis=1) == np.asarray(y_codes)).astype(np.uint8), P.max(axis=1)


_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def _mix(z):
    """SplitMix64's finaliser on Python ints (Steele, Lea & Flood 2014)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def consistency_band_draws(y, p, w, x, n_resamples, key):
    """``(n_resamples, len(x))``: the CORP consistency resamples' recalibrated values at the group scores ``x``.

    By the definition: the rows of positive weight, sorted by prediction and equal predictions by weight; row
    ``i`` of resample ``r`` is labelled 1 when the 53 high bits ``k`` of SplitMix64 draw ``i + 1`` of the stream
    ``mix(key ^ mix((r + 1) gamma))`` give ``k 2^-53 < p_i``; then the plain PAV of those labels.
    """
    p = np.asarray(p).astype(np.float64)
    w = np.ones(len(p)) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    p, w = p[keep], w[keep]
    order = np.lexsort((w, p))
    p, w = p[order], w[order]
    out = np.empty((n_resamples, len(x)))
    for r in range(n_resamples):
        base = _mix(int(key) ^ _mix(((r + 1) * _GAMMA) & _MASK))
        k = np.array([_mix((base + (i + 1) * _GAMMA) & _MASK) >> 11 for i in range(len(p))], dtype=np.float64)
        lab = (k * 2.0**-53 < p).astype(np.float64)
        _, ps, _, fitted, _ = recalibrate(lab, p, w)
        out[r] = fitted[np.searchsorted(ps, x)]
    return out
