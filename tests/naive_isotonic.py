"""Naive references for isotonic regression: short, obviously right, slow.

Used only by the tests, as oracles independent of both fastcal's kernels and
the peer libraries.
"""

import numpy as np


def pav(y, w=None):
    """Weighted increasing isotonic fit by repeated pooling of the first violating pair of blocks."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones_like(y) if w is None else np.asarray(w, dtype=np.float64)
    blocks = [[float(v * wt), float(wt), 1] for v, wt in zip(y, w)]  # sum wy, sum w, size
    changed = True
    while changed:
        changed = False
        for i in range(len(blocks) - 1):
            a, b = blocks[i], blocks[i + 1]
            if a[0] / a[1] >= b[0] / b[1]:
                blocks[i : i + 2] = [[a[0] + b[0], a[1] + b[1], a[2] + b[2]]]
                changed = True
                break
    return np.concatenate([np.full(size, s / wt) for s, wt, size in blocks])


def isotonic_fit(x, y, w=None, increasing=True, y_min=None, y_max=None):
    """scikit-learn's ``IsotonicRegression.fit`` thresholds, step by step, in plain Python.

    Drop zero weights, sort by (x, y), pool x closer than the dtype's
    resolution into weighted means, PAV, clip, keep only the points that differ
    from a neighbour. Returns ``(X_thresholds, y_thresholds)``.
    """
    x = np.asarray(x)
    dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    x = x.astype(dtype)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(x)) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep]
    order = np.lexsort((y, x))
    x, y, w = x[order], y[order], w[order]
    eps = np.finfo(dtype).resolution
    ux, uy, uw = [], [], []
    for xi, yi, wi in zip(x, y, w):
        if ux and float(xi) - float(ux[-1]) < eps:
            uy[-1] += yi * wi
            uw[-1] += wi
        else:
            ux.append(xi)
            uy.append(yi * wi)
            uw.append(wi)
    ux = np.array(ux, dtype=dtype)
    means = np.array(uy) / np.array(uw)
    fit = pav(means, uw) if increasing else -pav(-means, uw)
    fit = fit.astype(dtype)
    if y_min is not None or y_max is not None:
        fit = np.clip(fit, -np.inf if y_min is None else y_min, np.inf if y_max is None else y_max)
    kept = np.ones(len(fit), dtype=bool)
    kept[1:-1] = (fit[1:-1] != fit[:-2]) | (fit[1:-1] != fit[2:])
    return ux[kept], fit[kept]


def interpolate(xs, ys, t, out_of_bounds="nan"):
    """Piecewise-linear interpolation through the knots (xs, ys), one point at a time."""
    out = np.empty(len(t))
    for i, ti in enumerate(np.asarray(t, dtype=np.float64)):
        if len(xs) == 1:
            out[i] = ys[0]
            continue
        if ti < xs[0] or ti > xs[-1]:
            if out_of_bounds == "nan":
                out[i] = np.nan
                continue
            ti = min(max(ti, float(xs[0])), float(xs[-1]))
        j = 1
        while j < len(xs) - 1 and xs[j] < ti:
            j += 1
        x0, x1, y0, y1 = (float(v) for v in (xs[j - 1], xs[j], ys[j - 1], ys[j]))
        out[i] = y0 + (ti - x0) / (x1 - x0) * (y1 - y0)
    return out


def venn_abers(x, y, t, w=None):
    """Inductive Venn-Abers ``(p0, p1)`` at each test score ``t``, by literally refitting isotonic regression.

    For each test score and each label ``l``, the test object (weight: the mean
    calibration weight) joins the calibration set and :func:`pav` is run on
    the distinct scores; the test object is its own point, placed after the
    calibration scores equal to it when ``l = 0`` and before them when
    ``l = 1`` (the ``venn-abers`` package's convention), and its fitted value
    is the answer. Weights are normalised to mean 1, as fastcal does.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(x)) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep] / w[keep].mean()
    c = np.unique(x)
    sw = np.array([w[x == v].sum() for v in c])
    swy = np.array([(w * y)[x == v].sum() for v in c])
    out = np.empty((len(t), 2))
    for i, s in enumerate(np.asarray(t, dtype=np.float64)):
        for label, side in ((0, "right"), (1, "left")):
            pos = int(np.searchsorted(c, s, side))
            means = np.insert(swy / sw, pos, label)
            weights = np.insert(sw, pos, 1.0)
            out[i, label] = pav(means, weights)[pos]
    return out[:, 0], out[:, 1]


def centered_isotonic_fit(x, y, w=None, increasing=True):
    """Centered isotonic regression's knots (Oron & Flournoy 2017), step by step, in plain Python.

    The step fit as in :func:`isotonic_fit` (ties closer than the dtype's
    resolution pooled); then each maximal run of equal fitted values (a PAV
    block) becomes one point: the weighted mean of its rows' scores, clipped
    to the block's first and last tie-group score, with the block's value;
    the data's first and last tie-group scores are added with the end
    blocks' values where they differ from the end centres.
    """
    x = np.asarray(x)
    dtype = x.dtype if x.dtype in (np.float32, np.float64) else np.dtype(np.float64)
    x = x.astype(dtype)
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(len(x)) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0
    x, y, w = x[keep], y[keep], w[keep]
    order = np.argsort(x, kind="stable")
    x, y, w = x[order], y[order], w[order]
    eps = np.finfo(dtype).resolution
    groups = []  # [first score, sum w, sum w y, sum w x]
    for xi, yi, wi in zip(x, y, w):
        if groups and float(xi) - float(groups[-1][0]) < eps:
            groups[-1][1:] = [groups[-1][1] + wi, groups[-1][2] + wi * yi, groups[-1][3] + wi * float(xi)]
        else:
            groups.append([xi, wi, wi * yi, wi * float(xi)])
    gw = np.array([g[1] for g in groups])
    means = np.array([float(dtype.type(g[2] / g[1])) for g in groups])
    fit = (pav(means, gw) if increasing else -pav(-means, gw)).astype(dtype)  # blocks: runs equal in dtype
    cx, cy = [], []
    start = 0
    for end in range(1, len(groups) + 1):
        if end == len(groups) or fit[end] != fit[start]:
            sw = sum(g[1] for g in groups[start:end])
            swx = sum(g[3] for g in groups[start:end])
            center = min(max(dtype.type(swx / sw), groups[start][0]), groups[end - 1][0])
            cx.append(center)
            cy.append(fit[start])
            start = end
    xs, ys = list(cx), list(cy)
    if groups[0][0] < cx[0]:
        xs.insert(0, groups[0][0])
        ys.insert(0, cy[0])
    if groups[-1][0] > cx[-1]:
        xs.append(groups[-1][0])
        ys.append(cy[-1])
    return np.array(xs, dtype=dtype), np.array(ys).astype(dtype)
