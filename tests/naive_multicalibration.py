"""Naive ECCE: ``np.unique`` groups the tied predictions, ``np.cumsum`` of the groups' sums, float64 throughout.

Each group of equal predictions is one step of the cumulative differences
``D`` (``D_0 = 0``); the ECCE is ``max D - min D`` and its standard deviation
``sqrt(sum w^2 p (1 - p)) / W``. A segment's values are the same on its rows.
"""

import numpy as np


def naive_ecce(y, p, w=None):
    """``(ecce, std)`` of labels ``y``, predictions ``p`` and weights ``w`` (None: ones); ``(0, 0)`` if ``W == 0``."""
    y = np.asarray(y, dtype=np.float64)
    p64 = np.asarray(p).astype(np.float64)
    w = np.ones_like(p64) if w is None else np.asarray(w, dtype=np.float64)
    total = w.sum()
    if total == 0:
        return 0.0, 0.0
    _, group = np.unique(np.asarray(p), return_inverse=True)
    steps = np.bincount(group, weights=w * (y - p64))
    d = np.concatenate([[0.0], np.cumsum(steps)]) / total
    std = np.sqrt(np.sum(w * w * p64 * (1 - p64))) / total
    return float(d.max() - d.min()), float(std)
