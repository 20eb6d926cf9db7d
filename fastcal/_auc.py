r"""The ROC AUC behind :func:`fastcal.metrics.roc_auc_score` and the report: the Mann-Whitney count.

.. math:: \mathrm{AUC} = \frac{\sum_{i:y_i=1}\sum_{j:y_j=0} w_i w_j
          \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right)}{\sum_{i:y_i=1} w_i \sum_{j:y_j=0} w_j}

Internal API: :func:`roc_auc` (validated input), :data:`THREADED_SORT_MIN_SIZE`.
The kernels are in :mod:`fastcal._auc_kernels`.
"""

from __future__ import annotations

import numpy as np

from . import _auc_kernels as _k
from ._binning import chunk_offsets, n_chunks
from ._parallel import get_num_threads, parallel_for, run

__all__ = ["THREADED_SORT_MIN_SIZE", "roc_auc"]

#: Without weights, the sorting is split over value ranges on parallel threads above this size.
THREADED_SORT_MIN_SIZE = 1 << 17


def _pivots(x, n_ranges):
    """Up to ``n_ranges - 1`` sorted pivots splitting ``x`` into value ranges of similar size (from a sample)."""
    if n_ranges <= 1:
        return np.empty(0, dtype=np.float64)
    step = max(1, x.shape[0] // (1 << 16))
    sample = np.asarray(x[::step], dtype=np.float64)
    return np.unique(np.quantile(sample, np.arange(1, n_ranges) / n_ranges))


def _unweighted(x, y):
    """AUC from the Mann-Whitney count: value ranges x labels, each sorted and merged on its own.

    The scores are scattered (one counting pass, one branch-free copy) into
    regions by label and by value range (ranges split at sample quantiles,
    ties never split); pairs in different ranges are counted from the region
    sizes, pairs in the same range by sorting its two classes (NumPy's sort,
    which releases the GIL, so ranges run on parallel threads) and one merge
    sweep. Exact: integer counts, one division at the end.
    """
    n = x.shape[0]
    n_ranges = 1 if n < THREADED_SORT_MIN_SIZE else max(2, get_num_threads())
    pivots = _pivots(x, n_ranges)
    n_ranges = pivots.shape[0] + 1
    nchunks = n_chunks(n, 2 * n_ranges)
    counts = np.zeros((nchunks, 2 * n_ranges), dtype=np.int64)
    parallel_for(_k.region_counts, nchunks, x, y, pivots, counts, rows=n)
    sizes, start, offsets = chunk_offsets(counts)
    n_neg = int(sizes[:n_ranges].sum())
    n_pos = n - n_neg
    if n_pos == 0 or n_neg == 0:
        raise ValueError("Only one class present in y_true. ROC AUC score is not defined in that case.")
    buf = np.empty(n, dtype=x.dtype)
    parallel_for(_k.scatter_regions, nchunks, x, y, pivots, offsets, buf, rows=n)

    def count_range(r):
        neg = buf[start[r] : start[r] + sizes[r]]
        pos = buf[start[n_ranges + r] : start[n_ranges + r] + sizes[n_ranges + r]]
        neg.sort()
        pos.sort()
        return int(_k.mann_whitney_twice(pos, neg))

    u2 = sum(run([(count_range, (r,)) for r in range(n_ranges)]))
    neg_below = np.concatenate(([0], np.cumsum(sizes[:n_ranges])[:-1]))
    u2 += 2 * sum(int(sizes[n_ranges + r]) * int(neg_below[r]) for r in range(n_ranges))
    return float(u2) / (2.0 * n_pos * n_neg)


def roc_auc(y, x, w):
    """The AUC of scores ``x`` against labels ``y`` (nonzero = positive), weights ``w`` or None; ties count half.

    Without weights, exact (see :func:`_unweighted`); with weights, one
    argsort and one sweep over tied groups. ``ValueError`` if a class is
    missing (or has no weight).
    """
    if w is None:
        return _unweighted(x, y)
    order = np.argsort(x)
    u, w_pos, w_neg = _k.weighted_auc_sorted(x, y, w, order)
    if not (w_pos > 0 and w_neg > 0):
        raise ValueError(
            "Only one class present in y_true (with positive weight). ROC AUC score is not defined in that case."
        )
    return float(u / (w_pos * w_neg))
