"""Naive NumPy references for :mod:`fastcal.metrics`: short, obviously right, slow.

Each function recomputes a quantity from its definition with explicit masks,
two passes and float64 arithmetic, independent of fastcal's kernels.
"""

import numpy as np


def edges(p, n_bins, strategy):
    """scikit-learn's bin edges."""
    if strategy == "quantile":
        return np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
    return np.linspace(0.0, 1.0, n_bins + 1)


def bin_ids(p, e):
    """Bin of each prediction: bins [e0, e1], (e1, e2], ..., as scikit-learn."""
    return np.searchsorted(e[1:-1], p)


def _weights(p, w):
    return np.ones(len(p)) if w is None else np.asarray(w, dtype=np.float64)


def bins(y, p, n_bins=5, strategy="uniform", w=None):
    """Per-bin ``(weight, mean prediction, observed frequency)`` for every bin (NaN means if empty)."""
    y = np.asarray(y, dtype=np.float64)
    w = _weights(p, w)
    e = edges(p, n_bins, strategy)
    ids = bin_ids(p, e)
    out = []
    for k in range(n_bins):
        m = ids == k
        wk = w[m].sum()
        if wk > 0:
            out.append((wk, np.sum(w[m] * p[m].astype(np.float64)) / wk, np.sum(w[m] * y[m]) / wk))
        else:
            out.append((wk, np.nan, np.nan))
    return np.array(out).reshape(n_bins, 3)


def calibration_curve(y, p, n_bins=5, strategy="uniform", w=None):
    """``(prob_true, prob_pred, counts)`` over the non-empty bins."""
    b = bins(y, p, n_bins, strategy, w)
    nz = b[:, 0] > 0
    return b[nz, 2], b[nz, 1], b[nz, 0]


def brier(y, p, w=None):
    w = _weights(p, w)
    d = p.astype(np.float64) - np.asarray(y, dtype=np.float64)
    return np.sum(w * d * d) / w.sum()


def log_loss(y, p, w=None):
    """Log loss with scikit-learn 1.9's clipping: ``1 - p`` and the clip in the dtype of ``p``."""
    w = _weights(p, w)
    eps = np.finfo(p.dtype).eps
    q1 = np.clip(p, eps, 1 - eps)
    q0 = np.clip(1 - p, eps, 1 - eps)
    y = np.asarray(y) != 0
    loss = -np.where(y, np.log(q1.astype(np.float64)), np.log(q0.astype(np.float64)))
    return np.sum(w * loss) / w.sum()


def brier_decomposition(y, p, n_bins=10, strategy="uniform", w=None):
    """The five terms of Stephenson et al. (2008), two passes per bin, from the definitions."""
    y = np.asarray(y, dtype=np.float64)
    pf = p.astype(np.float64)
    w = _weights(p, w)
    ids = bin_ids(p, edges(p, n_bins, strategy))
    total = w.sum()
    base = np.sum(w * y) / total
    rel = res = wbv = wbc = 0.0
    for k in range(n_bins):
        m = ids == k
        wk = w[m].sum()
        if wk == 0:
            continue
        pk = np.sum(w[m] * pf[m]) / wk
        ok = np.sum(w[m] * y[m]) / wk
        rel += wk * (pk - ok) ** 2
        res += wk * (ok - base) ** 2
        wbv += np.sum(w[m] * (pf[m] - pk) ** 2)
        wbc += 2 * np.sum(w[m] * (pf[m] - pk) * (y[m] - ok))
    return {
        "brier": brier(y, p, w),
        "reliability": rel / total,
        "resolution": res / total,
        "uncertainty": base * (1 - base),
        "within_bin_variance": wbv / total,
        "within_bin_covariance": wbc / total,
    }


def ece(y, p, n_bins=15, strategy="uniform", norm="l1", w=None):
    b = bins(y, p, n_bins, strategy, w)
    b = b[b[:, 0] > 0]
    mass = b[:, 0] / b[:, 0].sum()
    gap = np.abs(b[:, 2] - b[:, 1])
    if norm == "l1":
        return np.sum(mass * gap)
    if norm == "l2":
        return np.sqrt(np.sum(mass * gap**2))
    return gap.max()


def auc(y, s, w=None):
    """Pairwise AUC: sum over (positive, negative) pairs of w_i w_j ([s_i > s_j] + [s_i == s_j] / 2)."""
    y = np.asarray(y) != 0
    w = _weights(s, w)
    sp, sn = s[y].astype(np.float64), s[~y].astype(np.float64)
    wp, wn = w[y], w[~y]
    gt = (sp[:, None] > sn[None, :]) + 0.5 * (sp[:, None] == sn[None, :])
    return np.sum(wp[:, None] * wn[None, :] * gt) / (wp.sum() * wn.sum())


def auc_sweep(x, y, w):
    """``(u, w_pos, w_neg)`` of the weighted AUC (``auc`` is ``u / (w_pos * w_neg)``) by a sweep over the stable
    argsort, tie groups at once, in Python floats: the order of additions fastcal's kernel promises."""
    order = np.argsort(x, kind="stable")
    u = w_pos = w_neg = 0.0
    i, n = 0, len(order)
    while i < n:
        v = x[order[i]]
        g_pos = g_neg = 0.0
        while i < n and x[order[i]] == v:
            if y[order[i]] != 0:
                g_pos += float(w[order[i]])
            else:
                g_neg += float(w[order[i]])
            i += 1
        u += g_pos * (w_neg + 0.5 * g_neg)
        w_pos += g_pos
        w_neg += g_neg
    return u, w_pos, w_neg


def class_losses(codes, P, w=None):
    """Multiclass ``(log loss, Brier score)`` from the definitions: one-hot targets, every column, float64."""
    Pf = P.astype(np.float64)
    T = np.eye(P.shape[1])[codes]
    eps = np.finfo(P.dtype).eps
    q = np.clip(P, eps, 1 - eps).astype(np.float64)
    w = _weights(codes, w)
    log_loss = -np.sum(w * np.sum(T * np.log(q), axis=1)) / w.sum()
    brier = np.sum(w * np.sum((Pf - T) ** 2, axis=1)) / w.sum()
    return log_loss, brier


def ovr_auc(codes, P, w=None):
    """One-vs-rest AUC of each class: column c, class c positive, pairwise (see :func:`auc`); NaN if undefined."""
    out = []
    for c in range(P.shape[1]):
        y = codes == c
        out.append(auc(y, P[:, c], w) if 0 < y.sum() < len(y) else np.nan)
    return np.array(out)


def ovo_auc(codes, P, average="macro"):
    """Hand and Till's one-vs-one AUC over the pairs of classes present, pairwise (see :func:`auc`)."""
    present = np.unique(codes)
    scores, prevalence = [], []
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            m = (codes == a) | (codes == b)
            scores.append((auc(codes[m] == a, P[m, a]) + auc(codes[m] == b, P[m, b])) / 2)
            prevalence.append(m.mean())
    return np.average(scores, weights=prevalence if average == "weighted" else None)


def partial_auc(y, s, w, max_fpr):
    """McClish-standardised partial AUC from the ROC curve drawn point by point (thresholds descending)."""
    y = np.asarray(y) != 0
    w = _weights(s, w)
    thresholds = np.unique(s)[::-1]
    tpr = [0.0] + [w[y & (s >= t)].sum() / w[y].sum() for t in thresholds]
    fpr = [0.0] + [w[~y & (s >= t)].sum() / w[~y].sum() for t in thresholds]
    area = 0.0
    for (x0, y0), (x1, y1) in zip(zip(fpr, tpr), zip(fpr[1:], tpr[1:])):
        if x0 >= max_fpr:
            break
        if x1 > max_fpr:
            y1 = y0 + (y1 - y0) * (max_fpr - x0) / (x1 - x0)
            x1 = max_fpr
        area += (x1 - x0) * (y0 + y1) / 2
    lo = max_fpr**2 / 2
    return 0.5 * (1 + (area - lo) / (max_fpr - lo))
