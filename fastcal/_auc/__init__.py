r"""The ROC AUC behind :func:`fastcal.metrics.roc_auc_score` and the report: the Mann-Whitney count.

.. math:: \mathrm{AUC} = \frac{\sum_{i:y_i=1}\sum_{j:y_j=0} w_i w_j
          \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right)}{\sum_{i:y_i=1} w_i \sum_{j:y_j=0} w_j}

Internal API: :func:`roc_auc` (validated binary input, optionally the
McClish-standardised partial AUC), :func:`mann_whitney_parts` (the sums of
one score range, for the engine), :func:`class_mann_whitney` (the counts of
every class against every other on every column of an (n, k) score matrix:
one-vs-rest and one-vs-one AUCs without weights), :func:`ovr_weighted` (each
class against the rest, with weights), :data:`THREADED_SORT_MIN_SIZE`,
:data:`RANGE_ROWS`, :data:`MAX_RANGES`, :func:`range_count`.
The kernels are in :mod:`fastcal._auc._kernels`.
"""

from __future__ import annotations

import math

import numpy as np

from . import _kernels as _k
from .._binning import chunk_offsets, n_chunks
from .._core.parallel import parallel_for, run
from .._engine.sort import SortedPairs, range_sorted_pairs, sort_by_label, sort_pairs

__all__ = ["MAX_RANGES", "RANGE_ROWS", "THREADED_SORT_MIN_SIZE", "class_mann_whitney", "mann_whitney_parts",
           "ovr_weighted", "range_count", "roc_auc"]

#: Above this many classes the groups of one column are sorted by one task, not one task each.
_TASK_PER_GROUP_MAX_CLASSES = 16

#: Without weights, the sorting is split over value ranges on parallel threads above this size.
THREADED_SORT_MIN_SIZE = 1 << 17
#: Rows per value range of the unweighted AUC (the number of ranges depends on the size alone).
RANGE_ROWS = 1 << 17


#: The most value ranges of the unweighted AUC (the partition's counts: 2 * ranges^2 int64, 16 MB).
MAX_RANGES = 1024


def range_count(n):
    """Value ranges of the unweighted AUC of ``n`` rows: a function of the size alone."""
    return 1 if n < THREADED_SORT_MIN_SIZE else max(2, min(MAX_RANGES, n // RANGE_ROWS))


def mann_whitney_parts(y, x, w):
    """The Mann-Whitney sums of scores ``x`` (contiguous float32/float64, finite) against 0/1 labels ``y``
    (nonzero = positive), with weights ``w`` (or None), whatever the classes present (internal API of the engine's
    AUC, one score range at a time): without weights ``(n_pos, n_neg, u2)``, integers, ``u2`` twice the count of
    (positive, negative) pairs ranked right plus half the tied ones (:func:`_unweighted`'s count); with weights
    ``(w_pos, w_neg, u)``, float64 sums, ``u`` the same pairs' weight products (:func:`roc_auc`'s sweep). The AUC
    is ``u2 / (2 n_pos n_neg)``, or ``u / (w_pos w_neg)``."""
    if w is None:
        view = sort_by_label(x, y, range_count(x.shape[0]))
        n_neg = int(view.starts[view.ranges])
        return int(view.starts[-1]) - n_neg, n_neg, _unweighted_u2(view)
    u, w_pos, w_neg = _k.weighted_auc_signed(*range_sorted_pairs(x, w, y, range_count(x.shape[0])))
    return float(w_pos), float(w_neg), float(u)


def _unweighted_u2(view):
    """Twice the Mann-Whitney count of the scores of :class:`fastcal._engine.sort.ByLabel` ``view``: pairs in different
    ranges from the group sizes, pairs in one range by a merge sweep of its two classes, range by range on
    parallel threads."""
    ranges, starts = view.ranges, view.starts
    sizes = np.diff(starts)
    u2 = sum(run([(_count_range, (view, r)) for r in range(ranges)]))
    neg_below = np.concatenate(([0], np.cumsum(sizes[:ranges])[:-1]))
    return u2 + 2 * sum(int(sizes[ranges + r]) * int(neg_below[r]) for r in range(ranges))


def _unweighted(x, y, by_label=None):
    """AUC from the Mann-Whitney count over the scores sorted per class and value range.

    The scores are grouped by label and value range, each group sorted
    (:func:`fastcal._engine.sort.sort_by_label`: ranges of about :data:`RANGE_ROWS`
    rows, a number fixed by the size, sorted on whichever thread takes them;
    or ``by_label``, the same sort made for another statistic of the call).
    Every value of a range is below every value of the next, so pairs in
    different ranges are counted from the group sizes, and pairs in the same
    range by one merge sweep of its two sorted classes
    (:func:`fastcal._auc._kernels.mann_whitney_twice`), range by range on
    parallel threads. Exact: integer counts, one division at the end.
    """
    view = sort_by_label(x, y, range_count(x.shape[0])) if by_label is None else by_label
    n_neg = int(view.starts[view.ranges])
    n_pos = int(view.starts[-1]) - n_neg
    if n_pos == 0 or n_neg == 0:
        raise _one_class(False)
    return float(_unweighted_u2(view)) / (2.0 * n_pos * n_neg)


def _count_range(view, r):
    return int(_k.mann_whitney_twice(view.slot(view.ranges + r), view.slot(r)))


def _one_class(weighted):
    what = " (with positive weight)" if weighted else ""
    return ValueError(f"Only one class present in y_true{what}. ROC AUC score is not defined in that case.")


def roc_auc(y, x, w, max_fpr=None, by_label=None):
    r"""The AUC of scores ``x`` against labels ``y`` (nonzero = positive), weights ``w`` or None; ties count half.

    Without weights, exact (see :func:`_unweighted`); with weights, one
    sort carrying each row's weight, negated for a positive, made by score
    ranges on every thread (:func:`fastcal._engine.sort.range_sorted_pairs`: no
    gather; the bits of one stable sort), and one sequential sweep over tied
    groups. With ``max_fpr`` in (0, 1) (see
    :func:`_partial`), the
    partial area :math:`A_m` under the ROC curve for false-positive rates in
    :math:`[0, m]` (tied scores joined by straight segments, the one that
    crosses :math:`m` interpolated), standardised as McClish (1989):
    :math:`\tfrac12\left(1 + \frac{A_m - m^2/2}{m - m^2/2}\right)`, 0.5 for
    a useless and 1 for a perfect ranking. ``ValueError`` if a class is
    missing (or has no weight). ``by_label``: the sort of the scores (those
    of ``x`` or of ``x`` as float64, any number of ranges) that another
    statistic of the call shares: :func:`fastcal._engine.sort.sort_by_label` without
    weights, :func:`fastcal._engine.sort.range_sorted_pairs` of the weights (times
    any power of two) signed by the labels with them.
    """
    if max_fpr is not None and max_fpr != 1:
        return _partial(y, x, w, max_fpr)
    if w is None:
        return _unweighted(x, y, by_label)
    pairs = by_label if isinstance(by_label, SortedPairs) else range_sorted_pairs(x, w, y, range_count(x.shape[0]))
    u, w_pos, w_neg = _k.weighted_auc_signed(*pairs)
    if not (w_pos > 0 and w_neg > 0):
        raise _one_class(True)
    return float(u / (w_pos * w_neg))


def _sorted_with_weights(x, w):
    """``x`` sorted (a new array), and ``w`` in the same order (None stays None)."""
    if w is None:
        return np.sort(x), None
    order = np.argsort(x)
    return x[order], w[order]


def _partial(y, x, w, max_fpr):
    """The McClish-standardised partial AUC: the classes' scores sorted apart (on two threads), then swept from the
    top down to ``max_fpr`` (:func:`fastcal._auc._kernels.partial_area`)."""
    positive = y != 0
    classes = [(x[positive], None if w is None else w[positive]), (x[~positive], None if w is None else w[~positive])]
    if x.shape[0] < THREADED_SORT_MIN_SIZE:
        (pos, w_pos), (neg, w_neg) = [_sorted_with_weights(*c) for c in classes]
    else:
        (pos, w_pos), (neg, w_neg) = run([(_sorted_with_weights, c) for c in classes])
    total_pos = float(pos.shape[0]) if w is None else float(w_pos.sum(dtype=np.float64))
    total_neg = float(neg.shape[0]) if w is None else float(w_neg.sum(dtype=np.float64))
    if not (total_pos > 0 and total_neg > 0):
        raise _one_class(w is not None)
    area = _k.partial_area(pos, w_pos, neg, w_neg, max_fpr * total_neg) / (total_pos * total_neg)
    min_area = 0.5 * max_fpr**2
    return float(0.5 * (1 + (area - min_area) / (max_fpr - min_area)))


def class_mann_whitney(P, codes, k):
    """Twice the Mann-Whitney U of every class against every other, each on its own column of ``P``, exactly.

    The rows of ``P`` (n, k) are copied column by column into groups by
    class (one counting pass, one scatter), each group of each column is
    sorted (NumPy's sort, on parallel threads) and every pair of groups of a
    column is counted in one merge sweep
    (:func:`fastcal._auc._kernels.mann_whitney_twice`). U counts add up over
    disjoint negatives, so class ``a`` against the rest is
    ``u2[a].sum()`` and against class ``b`` alone is ``u2[a, b]``.

    Parameters
    ----------
    P : ndarray of shape (n, k), float32 or float64, C-contiguous
        Finite scores; column ``a`` scores class ``a``.
    codes : ndarray of int
        The class of each row, in ``[0, k)``.

    Returns
    -------
    u2 : ndarray of shape (k, k), int64
        ``u2[a, b]``: twice the U of the scores of column ``a`` of class
        ``a`` (positives) against those of class ``b`` (negatives); ties count
        1, correct pairs 2. The diagonal is 0.
    sizes : ndarray of shape (k,), int64
        The number of rows of each class.
    """
    n = P.shape[0]
    nchunks = n_chunks(n, k)
    counts = np.zeros((nchunks, k), dtype=np.int64)
    parallel_for(_k.class_counts, nchunks, codes, counts, rows=n)
    sizes, starts, offsets = chunk_offsets(counts)
    columns = np.empty((k, n), dtype=P.dtype)
    parallel_for(_k.scatter_by_class, nchunks, P, codes, offsets, columns, rows=n * k)

    def sort_groups(j, groups):
        for g in groups:
            columns[j, starts[g] : starts[g] + sizes[g]].sort()

    if k <= _TASK_PER_GROUP_MAX_CLASSES:
        tasks = [(sort_groups, (j, (g,))) for g in np.argsort(-sizes, kind="stable") for j in range(k)]
    else:
        tasks = [(sort_groups, (j, range(k))) for j in range(k)]
    run(tasks)
    u2 = np.zeros((k, k), dtype=np.int64)
    run([(_k.class_pair_counts, (columns[a], starts, sizes, a, u2[a])) for a in range(k)])
    return u2, sizes


def ovr_weighted(P, codes, k, w):
    """The weighted AUC of each class against the rest: column ``a`` of ``P`` scores rows of class ``a`` as positives.

    One radix sort carrying signed weights and one sweep per class
    (:func:`roc_auc`'s weighted path), classes on parallel threads (each
    class's sort then runs in its thread). Returns an array of k floats, NaN for a
    class that has no weight, or all of it.
    """

    w64 = np.ascontiguousarray(w, dtype=np.float64)

    def one(a):
        x = np.ascontiguousarray(P[:, a])
        u, w_pos, w_neg = _k.weighted_auc_signed(*sort_pairs(x, w64, flip=(codes == a).view(np.uint8)))
        return u / (w_pos * w_neg) if w_pos > 0 and w_neg > 0 else math.nan

    return np.array(run([(one, (a,)) for a in range(k)]), dtype=np.float64)
