r"""Calibration diagnostics: reliability curves, Brier score and its decomposition, ECE, AUC.

Every binned quantity comes from one parallel pass over the data
(:mod:`fastcal._metrics_kernels`): each row is put in its bin and the bin's
weight, positives, sum of predictions (and, where asked for, centred moments,
squared errors and log losses) are accumulated in per-chunk buffers that are
merged in a fixed order, so the result does not depend on the number of
threads.

Binning follows :func:`sklearn.calibration.calibration_curve` exactly: the
``n_bins + 1`` edges are ``np.linspace(0, 1, n_bins + 1)`` ("uniform") or
``np.percentile(y_prob, np.linspace(0, 1, n_bins + 1) * 100)`` ("quantile"),
and a prediction ``p`` goes to bin ``np.searchsorted(edges[1:-1], p)``, i.e.
bins are ``[e_0, e_1], (e_1, e_2], ..., (e_{K-1}, e_K]``. Quantile edges are
computed from selected order statistics (bucket histogram + selection, no
full sort), with NumPy's "linear" interpolation formula reproduced operation
by operation, so they are bit-identical to ``np.percentile``'s.

Labels: ``y_true`` in {0, 1} (any numeric or boolean dtype) is used as is;
{-1, 1} counts 1 as positive; any other pair of labels needs ``pos_label``.
Unlike some scikit-learn metrics, no positive label is ever guessed from the
order of the labels.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, fields
from typing import NamedTuple

import numpy as np

from . import _metrics_kernels as _k
from ._parallel import get_num_threads, parallel_for, run
from ._validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_in,
    check_sample_weight,
    column_or_1d,
    is_binary,
)

__all__ = [
    "BrierDecomposition",
    "CalibrationReport",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "calibration_report",
    "expected_calibration_error",
    "log_loss",
    "roc_auc_score",
]

STRATEGIES = ("uniform", "quantile")
NORMS = ("l1", "l2", "max")

#: Rows per chunk of the deterministic chunked reductions, and the most chunks.
_CHUNK_ROWS = 1 << 16
_MAX_CHUNKS = 64
#: Cap on the float64 partial buffers of one reduction (elements): 32 MB.
_PARTIAL_BUDGET = 1 << 22
#: Quantile edges: below this size a plain ``np.partition`` of a copy is used.
_SELECT_MIN_SIZE = 1 << 16
_NBUCKETS = 1 << 15
#: Sorting for the AUC is done in two threads above this size.
_THREADED_SORT_MIN_SIZE = 1 << 17


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------
def _n_chunks(n, floats_per_chunk=1):
    """Number of chunks of a reduction over ``n`` rows: a function of the sizes only."""
    by_rows = n // _CHUNK_ROWS
    by_memory = _PARTIAL_BUDGET // max(1, floats_per_chunk)
    return int(max(1, min(_MAX_CHUNKS, by_rows, by_memory)))


def _value_range(x, name):
    """``(min, max)`` of the float array ``x``; ``ValueError`` naming ``name`` if it holds NaN or infinity.

    NumPy's SIMD min/max propagate NaN, and without NaN an infinity is the
    min or the max, so two reductions check finiteness too.
    """
    if x.shape[0] == 0:
        return 0.0, 0.0
    lo = float(x.min())
    hi = float(x.max())
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{name} must be finite, but contains NaN.")
    if math.isinf(lo) or math.isinf(hi):
        raise ValueError(f"{name} must be finite, but contains infinity.")
    return lo, hi


def check_probabilities(y_prob, name="y_prob"):
    """``y_prob`` as a contiguous float32/float64 1-D array in [0, 1]; returns ``(p, min, max)``."""
    p = as_float_array(column_or_1d(y_prob, name), name)
    lo, hi = _value_range(p, name)
    if lo < 0 or hi > 1:
        raise ValueError(f"{name} has values outside [0, 1] (min {lo!r}, max {hi!r}); it must hold probabilities.")
    return p, lo, hi


def _check_scores(y_score, name="y_score"):
    x = as_float_array(column_or_1d(y_score, name), name)
    _value_range(x, name)
    return x


def _same_label(a, b):
    try:
        return bool(a == b) and not isinstance(a, str) and not isinstance(b, str)
    except Exception:  # noqa: BLE001 - uncomparable labels are different
        return False


def binary_labels(y_true, pos_label, name="y_true"):
    """Labels as a contiguous array whose nonzero entries are the positives.

    {0, 1} labels of any numeric/boolean dtype are returned without a copy
    (one parallel check, no sort); everything else goes through
    ``np.unique`` (a sort) with scikit-learn's ``calibration_curve`` rules.
    """
    if pos_label is not None and not isinstance(pos_label, (numbers.Real, str, np.bool_)):
        raise ValueError(f"pos_label must be None, a number, a bool or a str; got {pos_label!r}.")
    arr = column_or_1d(y_true, name)
    if arr.dtype.kind in "biuf":
        lab = as_label_array(arr, name)
        if is_binary(lab):
            if pos_label is None or _same_label(pos_label, 1):
                return lab
            if _same_label(pos_label, 0):
                return np.ascontiguousarray(lab == 0).view(np.uint8)
    classes = np.unique(arr)
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError(f"{name} must not contain NaN.")
    shown = ", ".join(repr(c) for c in classes[:5].tolist()) + (", ..." if classes.size > 5 else "")
    if classes.size > 2:
        raise ValueError(
            f"{name} must hold binary labels; only binary classification is supported, "
            f"found {classes.size} labels: {{{shown}}}."
        )
    if pos_label is None:
        ok = classes.dtype.kind in "biuf" and set(classes.tolist()) <= {0, 1} or set(classes.tolist()) <= {-1, 1}
        if classes.dtype.kind in "OUS" or not ok:
            raise ValueError(
                f"{name} takes values in {{{shown}}} and pos_label is not specified: either make "
                f"{name} take values in {{0, 1}} or {{-1, 1}} or pass pos_label explicitly."
            )
        pos_label = 1
    return np.ascontiguousarray(arr == pos_label).view(np.uint8)


def check_n_bins(n_bins, name="n_bins"):
    if isinstance(n_bins, (bool, np.bool_)) or not isinstance(n_bins, numbers.Integral):
        raise ValueError(f"{name} must be an integer >= 1; got {n_bins!r}.")
    if n_bins < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {n_bins!r}.")
    return int(n_bins)


def _check_inputs(y_true, y_prob, sample_weight, pos_label, *, prob=True, score_name="y_prob"):
    """Validated ``(y, p, w, lo, hi)``: labels (nonzero = positive), predictions, weights or None."""
    y_arr = column_or_1d(y_true, "y_true")
    p_arr = column_or_1d(y_prob, score_name)
    check_consistent_length(y_true=y_arr, **{score_name: p_arr})
    y = binary_labels(y_arr, pos_label)
    if prob:
        p, lo, hi = check_probabilities(p_arr, score_name)
    else:
        p = _check_scores(p_arr, score_name)
        lo = hi = None
    w = check_sample_weight(sample_weight, p.shape[0])
    return y, p, w, lo, hi


# ---------------------------------------------------------------------------
# bin edges
# ---------------------------------------------------------------------------
def _order_statistics(x, ranks, lo, hi):
    """Values of rank ``ranks`` (sorted, unique, 0-based) in ascending ``x``, without sorting ``x``.

    A parallel pass counts the values in ``_NBUCKETS`` equal-width buckets
    between ``lo = min(x)`` and ``hi = max(x)`` (the bucket is a
    non-decreasing function of the value, so bucket order is value order);
    a second pass copies out only the buckets that hold a wanted rank, and
    ``np.partition`` selects inside them. O(n) work; the values are exact.
    """
    n = x.shape[0]
    if lo == hi:
        return np.full(ranks.shape[0], x[0], dtype=x.dtype)
    nbuckets = _NBUCKETS
    scale = nbuckets / (hi - lo)
    if n < _SELECT_MIN_SIZE or not math.isfinite(scale):
        # small input, or a range too narrow to scale (hi - lo subnormal)
        part = np.partition(x, ranks)
        return part[ranks]
    nchunks = _n_chunks(n, 8 * nbuckets)  # at most 16 histograms (4 MB)
    hist = np.zeros((nchunks, nbuckets), dtype=np.int64)
    parallel_for(_k.bucket_hist, nchunks, x, lo, scale, hist, rows=n)
    counts = hist.sum(axis=0)
    cum = np.cumsum(counts)
    bucket_of_rank = np.searchsorted(cum, ranks, side="right")
    marked = np.unique(bucket_of_rank)
    sizes = counts[marked]
    region_start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    slot = np.full(nbuckets, -1, dtype=np.int64)
    slot[marked] = np.arange(marked.shape[0])
    # where chunk c writes its first value of marked bucket s
    per_chunk = hist[:, marked]
    pos = region_start[None, :] + np.cumsum(per_chunk, axis=0) - per_chunk
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    out = np.empty(int(sizes.sum()), dtype=x.dtype)
    parallel_for(_k.gather_buckets, nchunks, x, lo, scale, slot, pos, out, rows=n)
    values = np.empty(ranks.shape[0], dtype=x.dtype)
    bucket_start = cum - counts
    for s, b in enumerate(marked):
        seg = out[region_start[s] : region_start[s] + sizes[s]]
        which = np.nonzero(bucket_of_rank == b)[0]
        local = ranks[which] - bucket_start[b]
        seg.partition(local)
        values[which] = seg[local]
    return values


def _percentile_edges(x, n_bins, lo, hi):
    """``np.percentile(x, np.linspace(0, 1, n_bins + 1) * 100)``, bit for bit, by selection."""
    return percentiles_from_order_statistics(x.shape[0], n_bins, lambda ranks: _order_statistics(x, ranks, lo, hi))


def percentiles_from_order_statistics(n, n_bins, order_statistics):
    """NumPy's "linear" percentiles at ``linspace(0, 100, n_bins + 1)`` of ``n`` values, bit for bit.

    ``order_statistics(ranks)`` returns the values of the given (sorted,
    unique) ranks: by selection in memory, or from Dask chunks. NumPy's
    method: virtual index ``(n - 1) * q``, neighbours ``floor`` and
    ``floor + 1`` (both the last element at the top), and ``_lerp``:
    ``a + (b - a) * g``, or ``b - (b - a) * (1 - g)`` where ``g >= 0.5``,
    with ``b - a`` in the dtype of the values.
    """
    q = np.true_divide(np.linspace(0, 1, n_bins + 1) * 100, 100)
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above] = -1
    nxt[above] = -1
    below = virtual < 0
    prev[below] = 0
    nxt[below] = 0
    prev = prev.astype(np.intp)
    nxt = nxt.astype(np.intp)
    gamma = np.asanyarray(virtual - prev, dtype=virtual.dtype)
    prev_rank = np.where(prev < 0, n + prev, prev)
    next_rank = np.where(nxt < 0, n + nxt, nxt)
    ranks = np.unique(np.concatenate((prev_rank, next_rank)))
    values = order_statistics(ranks)
    a = values[np.searchsorted(ranks, prev_rank)]
    b = values[np.searchsorted(ranks, next_rank)]
    diff_b_a = b - a
    result = np.add(a, diff_b_a * gamma)
    np.subtract(b, diff_b_a * (1 - gamma), out=result, where=gamma >= 0.5, casting="unsafe", dtype=result.dtype)
    return result


def _bin_edges(p, n_bins, strategy, lo, hi):
    """The ``n_bins + 1`` float64 bin edges, as scikit-learn's ``calibration_curve`` computes them."""
    if strategy == "quantile":
        return np.asarray(_percentile_edges(p, n_bins, lo, hi), dtype=np.float64)
    return np.linspace(0.0, 1.0, n_bins + 1)


def bin_stats(p, y, w, edges, *, moments=False, brier=False, logloss=False):
    """The per-bin table ``(n_bins, NSTAT)`` of :func:`fastcal._metrics_kernels.bin_stats`."""
    n = p.shape[0]
    nb = edges.shape[0] - 1
    ref = 0.5 * (edges[:-1] + edges[1:])
    dt = p.dtype.type
    one = dt(1)
    clip_lo = dt(np.finfo(p.dtype).eps)
    clip_hi = one - clip_lo
    lut, grid = _k.bin_lookup_table(edges)
    part = np.zeros((_n_chunks(n, nb * _k.NSTAT), nb, _k.NSTAT))
    parallel_for(_k.bin_stats, part.shape[0], p, y, w, edges, lut, grid, ref, moments, brier, logloss, one,
                 clip_lo, clip_hi, part, rows=n)
    return _k.merge_partials(part)


def _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, **flags):
    n_bins = check_n_bins(n_bins)
    check_in(strategy, "strategy", STRATEGIES)
    y, p, w, lo, hi = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    edges = _bin_edges(p, n_bins, strategy, lo, hi)
    return bin_stats(p, y, w, edges, **flags), edges, (y, p, w)


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------
def calibration_curve(
    y_true,
    y_prob,
    *,
    pos_label=None,
    n_bins=5,
    strategy="uniform",
    sample_weight=None,
    return_counts=False,
):
    r"""True and predicted probabilities of a calibration (reliability) curve.

    A drop-in for :func:`sklearn.calibration.calibration_curve` (same
    arguments, bins, return values and label rules), computed in one parallel
    pass, with optional sample weights and bin counts. For each non-empty bin
    :math:`B_k` (total weight :math:`W_k = \sum_{i \in B_k} w_i`):

    .. math::

        \text{prob\_true}_k = \frac{1}{W_k}\sum_{i \in B_k} w_i y_i, \qquad
        \text{prob\_pred}_k = \frac{1}{W_k}\sum_{i \in B_k} w_i p_i.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels: {0, 1}, {-1, 1} (1 positive), or any two labels
        with ``pos_label``.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    pos_label : int, float, bool or str, default=None
        The label of the positive class (required unless the labels are
        {0, 1} or {-1, 1}).
    n_bins : int, default=5
        Number of bins (>= 1). Empty bins are dropped from the output, so the
        arrays may be shorter.
    strategy : {"uniform", "quantile"}, default="uniform"
        "uniform": bins of equal width on [0, 1]; "quantile": edges at the
        percentiles of ``y_prob`` (``np.percentile``'s linear interpolation,
        bit-identical; repeated edges give empty, dropped bins). With
        ``sample_weight``, quantile edges are still the unweighted
        percentiles of ``y_prob``: weights change the averages, not the bins.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights. A bin whose samples all have weight 0 counts as
        empty.
    return_counts : bool, default=False
        Also return the number of samples (int64), or the total weight
        (float64) with ``sample_weight``, of each returned bin.

    Returns
    -------
    prob_true : ndarray of shape (n_nonempty_bins,)
        Fraction of positives in each non-empty bin.
    prob_pred : ndarray of shape (n_nonempty_bins,)
        Mean predicted probability in each non-empty bin.
    counts : ndarray of shape (n_nonempty_bins,)
        Only with ``return_counts=True``.

    References
    ----------
    Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good probabilities
    with supervised learning. ICML, section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import calibration_curve
    >>> y_true = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    >>> y_pred = np.array([0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0])
    >>> prob_true, prob_pred, counts = calibration_curve(y_true, y_pred, n_bins=3, return_counts=True)
    >>> prob_true
    array([0. , 0.5, 1. ])
    >>> prob_pred
    array([0.2  , 0.525, 0.85 ])
    >>> counts
    array([3, 2, 4])
    """
    if not isinstance(return_counts, (bool, np.bool_)):
        raise ValueError(f"return_counts must be a bool; got {return_counts!r}.")
    table, _, (_, _, w) = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    return curve_from_table(table, w is not None, return_counts)


def curve_from_table(table, weighted, return_counts):
    """``calibration_curve``'s result from a bin table: non-empty bins only, counts as int64 unless weighted."""
    weight = table[:, _k.W]
    nonzero = weight > 0
    total = weight[nonzero]
    prob_true = table[nonzero, _k.SY] / total
    prob_pred = table[nonzero, _k.SP] / total
    if not return_counts:
        return prob_true, prob_pred
    return prob_true, prob_pred, (total if weighted else total.astype(np.int64))


def brier_score_loss(y_true, y_prob, *, sample_weight=None, pos_label=None):
    r"""Brier score of binary probabilistic predictions (mean squared error of the probabilities).

    .. math:: \mathrm{BS} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i}

    Equal to :func:`sklearn.metrics.brier_score_loss` for 1-D binary input
    (to 1e-12 for float64; for float32 input fastcal accumulates in float64,
    scikit-learn in float32). One parallel pass.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`calibration_curve`).
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum.
    pos_label : int, float, bool or str, default=None
        The positive label, required unless labels are {0, 1} or {-1, 1}.

    Returns
    -------
    float

    References
    ----------
    Brier, G. W. (1950). Verification of forecasts expressed in terms of
    probability. Monthly Weather Review 78(1), 1-3.

    Examples
    --------
    >>> from fastcal import brier_score_loss
    >>> round(brier_score_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 6)
    0.0375
    """
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, 1, "uniform", brier=True)
    return float(table[0, _k.SBRIER] / table[0, _k.W])


def log_loss(y_true, y_prob, *, sample_weight=None, pos_label=None, normalize=True):
    r"""Logistic loss (cross-entropy) of binary probabilistic predictions.

    .. math::

        \mathrm{LL} = -\frac{\sum_i w_i \left[y_i \log q_i^{(1)} + (1-y_i)\log q_i^{(0)}\right]}{\sum_i w_i},
        \quad q^{(1)} = \mathrm{clip}(p, \epsilon, 1-\epsilon),\ q^{(0)} = \mathrm{clip}(1-p, \epsilon, 1-\epsilon)

    Clipping is scikit-learn 1.9's: ``eps = np.finfo(y_prob.dtype).eps``
    (2.2e-16 for float64, 1.2e-7 for float32) and ``1 - p`` and the clip are
    computed in the dtype of ``y_prob``; so a prediction of exactly 0 or 1
    costs at most ``-log(eps)`` (36.04 for float64). The logarithms and the
    sum are float64. Equal to :func:`sklearn.metrics.log_loss` to 1e-12 for
    float64 input; unlike it, ``y_true`` may hold a single class.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`calibration_curve`).
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum.
    pos_label : int, float, bool or str, default=None
        The positive label, required unless labels are {0, 1} or {-1, 1}.
    normalize : bool, default=True
        Return the (weighted) mean loss; if False, the (weighted) sum.

    Returns
    -------
    float

    Examples
    --------
    >>> from fastcal import log_loss
    >>> round(log_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 6)
    0.197635
    """
    if not isinstance(normalize, (bool, np.bool_)):
        raise ValueError(f"normalize must be a bool; got {normalize!r}.")
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, 1, "uniform", logloss=True)
    total = table[0, _k.SLOG]
    return float(total / table[0, _k.W]) if normalize else float(total)


class BrierDecomposition(NamedTuple):
    """Terms of the Brier score: ``brier == reliability - resolution + uncertainty
    + within_bin_variance - within_bin_covariance`` (up to rounding)."""

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float


def decomposition_from_table(table):
    weight = table[:, _k.W]
    nz = weight > 0
    t = table[nz]
    wk = t[:, _k.W]
    total = wk.sum()
    base_rate = t[:, _k.SY].sum() / total
    obs = t[:, _k.SY] / wk
    pred = t[:, _k.SP] / wk
    mean_d = t[:, _k.SD] / wk
    reliability = float(np.sum(wk * (pred - obs) ** 2) / total)
    resolution = float(np.sum(wk * (obs - base_rate) ** 2) / total)
    uncertainty = float(base_rate * (1.0 - base_rate))
    wbv = float(np.sum(np.maximum(t[:, _k.SDD] - mean_d * t[:, _k.SD], 0.0)) / total)
    wbc = float(2.0 * np.sum(t[:, _k.SDY] - mean_d * t[:, _k.SY]) / total)
    brier = float(t[:, _k.SBRIER].sum() / total)
    return BrierDecomposition(brier, reliability, resolution, uncertainty, wbv, wbc)


def brier_decomposition(y_true, y_prob, *, n_bins=10, strategy="uniform", sample_weight=None, pos_label=None):
    r"""Murphy's decomposition of the Brier score, with the two within-bin terms that make it exact.

    With bins :math:`B_k` (as in :func:`calibration_curve`), total weight
    :math:`N = \sum_i w_i`, bin weight :math:`W_k`, mean prediction
    :math:`\bar p_k`, observed frequency :math:`\bar o_k` and base rate
    :math:`\bar o`:

    .. math::

        \mathrm{BS} = \underbrace{\tfrac1N\sum_k W_k(\bar p_k-\bar o_k)^2}_{\text{reliability}}
        - \underbrace{\tfrac1N\sum_k W_k(\bar o_k-\bar o)^2}_{\text{resolution}}
        + \underbrace{\bar o(1-\bar o)}_{\text{uncertainty}}
        + \underbrace{\tfrac1N\sum_k\sum_{i\in B_k} w_i(p_i-\bar p_k)^2}_{\text{within-bin variance}}
        - \underbrace{\tfrac2N\sum_k\sum_{i\in B_k} w_i(p_i-\bar p_k)(y_i-\bar o_k)}_{\text{within-bin covariance}}

    This is the variant of Stephenson, Coelho and Jolliffe (2008): Murphy's
    three terms (reliability, resolution, uncertainty) are computed from the
    bin means of the predictions, and the two extra terms account for the
    spread of the predictions inside each bin, so the five terms add up to
    the Brier score exactly (in exact arithmetic; to ~1e-15 in floating
    point), for any binning. Murphy's original identity
    (``BS = REL - RES + UNC``) holds only when all predictions in a bin are
    equal, where the extra terms vanish. The within-bin moments are
    accumulated about a point inside each bin, which keeps them free of
    cancellation, in the same single pass that bins the data.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`.
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.

    Returns
    -------
    BrierDecomposition
        Named tuple ``(brier, reliability, resolution, uncertainty,
        within_bin_variance, within_bin_covariance)`` of floats.

    References
    ----------
    Murphy, A. H. (1973). A new vector partition of the probability score.
    Journal of Applied Meteorology 12(4), 595-600.
    Stephenson, D. B., Coelho, C. A. S. and Jolliffe, I. T. (2008). Two extra
    components in the Brier score decomposition. Weather and Forecasting
    23(4), 752-757.

    Examples
    --------
    >>> from fastcal import brier_decomposition
    >>> d = brier_decomposition([0, 0, 1, 1, 1], [0.1, 0.3, 0.35, 0.8, 0.9], n_bins=2)
    >>> round(d.brier, 6), round(d.reliability - d.resolution + d.uncertainty
    ...                          + d.within_bin_variance - d.within_bin_covariance, 6)
    (0.1145, 0.1145)
    """
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True, brier=True)
    return decomposition_from_table(table)


def ece_from_table(table):
    weight = table[:, _k.W]
    nz = weight > 0
    wk = weight[nz]
    mass = wk / wk.sum()
    gap = np.abs(table[nz, _k.SY] / wk - table[nz, _k.SP] / wk)
    return {
        "l1": float(np.sum(mass * gap)),
        "l2": float(math.sqrt(np.sum(mass * gap * gap))),
        "max": float(gap.max()),
    }


def expected_calibration_error(
    y_true, y_prob, *, n_bins=15, strategy="uniform", norm="l1", sample_weight=None, pos_label=None
):
    r"""Binned expected calibration error (ECE), its RMS (``norm="l2"``) and maximum (``"max"``) variants.

    With bins as in :func:`calibration_curve`, bin mass :math:`m_k = W_k / N`
    and gap :math:`g_k = |\bar o_k - \bar p_k|` over the non-empty bins:

    .. math::

        \mathrm{ECE} = \sum_k m_k g_k,\qquad
        \mathrm{RMSCE} = \sqrt{\textstyle\sum_k m_k g_k^2},\qquad
        \mathrm{MCE} = \max_{k:\,W_k>0} g_k.

    Empty bins carry no mass and are left out of the maximum (they never
    produce NaN). ``RMSCE**2`` is the reliability term of
    :func:`brier_decomposition` on the same bins.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges ("quantile" gives the equal-mass ECE).
    norm : {"l1", "l2", "max"}, default="l1"
        ECE, RMS calibration error or maximum calibration error.

    Returns
    -------
    float

    References
    ----------
    Naeini, M. P., Cooper, G. F. and Hauskrecht, M. (2015). Obtaining well
    calibrated probabilities using Bayesian binning. AAAI.
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration
    of modern neural networks. ICML.

    Examples
    --------
    >>> from fastcal import expected_calibration_error
    >>> expected_calibration_error([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4], n_bins=2)
    0.275
    """
    check_in(norm, "norm", NORMS)
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    return ece_from_table(table)[norm]


def _auc_pivots(x, n_ranges):
    """Up to ``n_ranges - 1`` sorted pivots splitting ``x`` into value ranges of similar size (from a sample)."""
    if n_ranges <= 1:
        return np.empty(0, dtype=np.float64)
    step = max(1, x.shape[0] // (1 << 16))
    sample = np.asarray(x[::step], dtype=np.float64)
    return np.unique(np.quantile(sample, np.arange(1, n_ranges) / n_ranges))


def _auc_unweighted(x, y):
    """AUC from the Mann-Whitney count: value ranges x labels, each sorted and merged on its own.

    The scores are scattered (one counting pass, one branch-free copy) into
    regions by label and by value range (ranges split at sample quantiles,
    ties never split); pairs in different ranges are counted from the region
    sizes, pairs in the same range by sorting its two classes (NumPy's sort,
    which releases the GIL, so ranges run on parallel threads) and one merge
    sweep. Exact: integer counts, one division at the end.
    """
    n = x.shape[0]
    n_ranges = 1 if n < _THREADED_SORT_MIN_SIZE else max(2, get_num_threads())
    pivots = _auc_pivots(x, n_ranges)
    n_ranges = pivots.shape[0] + 1
    nchunks = _n_chunks(n, 2 * n_ranges)
    counts = np.zeros((nchunks, 2 * n_ranges), dtype=np.int64)
    parallel_for(_k.region_counts, nchunks, x, y, pivots, counts, rows=n)
    sizes = counts.sum(axis=0)
    n_neg = int(sizes[:n_ranges].sum())
    n_pos = n - n_neg
    if n_pos == 0 or n_neg == 0:
        raise ValueError("Only one class present in y_true. ROC AUC score is not defined in that case.")
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    offsets = np.ascontiguousarray(start[None, :] + np.cumsum(counts, axis=0) - counts, dtype=np.int64)
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


def _auc(y, x, w):
    if w is None:
        return _auc_unweighted(x, y)
    order = np.argsort(x)
    u, w_pos, w_neg = _k.weighted_auc_sorted(x, y, w, order)
    if not (w_pos > 0 and w_neg > 0):
        raise ValueError(
            "Only one class present in y_true (with positive weight). ROC AUC score is not defined in that case."
        )
    return float(u / (w_pos * w_neg))


def roc_auc_score(y_true, y_score, *, sample_weight=None, pos_label=None):
    r"""Area under the ROC curve of a binary problem, ties counted half.

    .. math:: \mathrm{AUC} = \frac{\sum_{i:y_i=1}\sum_{j:y_j=0} w_i w_j
              \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right)}{\sum_{i:y_i=1} w_i \sum_{j:y_j=0} w_j}

    the Mann-Whitney statistic, equal to the trapezoidal area under the ROC
    curve and to :func:`sklearn.metrics.roc_auc_score` (binary case, to
    1e-12). O(n log n): without weights, the scores are split by label and
    value range, each range's two classes are sorted by value (ranges on
    parallel threads) and counted in one merge sweep with exact integer
    arithmetic; with weights, one argsort and one sweep over tied groups.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`calibration_curve`); both classes
        must be present.
    y_score : array-like of shape (n_samples,)
        Scores (any finite real values; higher means more likely positive).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, required unless labels are {0, 1} or {-1, 1}.

    Returns
    -------
    float

    References
    ----------
    Hanley, J. A. and McNeil, B. J. (1982). The meaning and use of the area
    under a receiver operating characteristic (ROC) curve. Radiology 143(1),
    29-36.

    Examples
    --------
    >>> from fastcal import roc_auc_score
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y, x, w, _, _ = _check_inputs(y_true, y_score, sample_weight, pos_label, prob=False, score_name="y_score")
    return _auc(y, x, w)


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
_REPORT_ROWS = (
    # (field, label, format)
    ("n", "samples", "{:,}"),
    ("weight_sum", "total weight", "{:,.6g}"),
    ("base_rate", "base rate (observed)", "{:.6f}"),
    ("mean_prediction", "mean prediction", "{:.6f}"),
    ("auc", "ROC AUC", "{:.6f}"),
    ("brier", "Brier score", "{:.6f}"),
    ("log_loss", "log loss", "{:.6f}"),
    ("ece", "ECE (l1)", "{:.6f}"),
    ("rmsce", "RMS calibration error (l2)", "{:.6f}"),
    ("mce", "max calibration error", "{:.6f}"),
    ("reliability", "reliability", "{:.6f}"),
    ("resolution", "resolution", "{:.6f}"),
    ("uncertainty", "uncertainty", "{:.6f}"),
    ("within_bin_variance", "within-bin variance", "{:.6f}"),
    ("within_bin_covariance", "within-bin covariance", "{:.6f}"),
    ("slope", "calibration slope", "{:.6f}"),
    ("intercept", "calibration intercept", "{:.6f}"),
    ("calibration_in_the_large", "calibration-in-the-large", "{:.6f}"),
)


@dataclass(frozen=True, eq=False)
class CalibrationReport:
    """All of fastcal's diagnostics of one set of predictions (see :func:`calibration_report`).

    Scalars are Python floats/ints; ``bin_edges`` has ``n_bins + 1`` entries,
    ``bin_weights`` one per bin (0 for an empty bin), ``prob_true``,
    ``prob_pred`` one per non-empty bin, as :func:`calibration_curve` returns
    them. ``slope_se``, ``intercept_se``, ``slope_ci``, ``intercept_ci`` (Wald
    95%) and ``slope_converged`` come from
    :func:`fastcal.platt.calibration_slope_intercept`. ``str(report)`` is a
    readable table; :meth:`to_dict` gives plain Python types
    (JSON-serialisable).
    """

    n: int
    weight_sum: float
    base_rate: float
    mean_prediction: float
    auc: float
    brier: float
    log_loss: float
    ece: float
    rmsce: float
    mce: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float
    slope: float
    intercept: float
    calibration_in_the_large: float
    n_bins: int
    strategy: str
    bin_edges: np.ndarray = field(repr=False)
    bin_weights: np.ndarray = field(repr=False)
    prob_true: np.ndarray = field(repr=False)
    prob_pred: np.ndarray = field(repr=False)
    slope_se: float | None = None
    intercept_se: float | None = None
    slope_ci: tuple | None = None
    intercept_ci: tuple | None = None
    slope_converged: bool | None = None

    def to_dict(self):
        """The report as a dict of plain Python values (arrays become lists)."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    def __str__(self):
        title = f"Calibration report ({self.n_bins} {self.strategy} bins)"
        rows = []
        for name, label, fmt in _REPORT_ROWS:
            value = getattr(self, name)
            if name == "weight_sum" and value == self.n:
                continue
            rows.append((label, fmt.format(value)))
            ci = getattr(self, f"{name}_ci", None) if name in ("slope", "intercept") else None
            if ci is not None:
                rows.append(("  95% CI", f"[{ci[0]:.4f}, {ci[1]:.4f}]"))
        if self.slope_converged is False:
            rows.append(("slope fit converged", "NO"))
        width = max(len(label) for label, _ in rows)
        vwidth = max(len(v) for _, v in rows)
        rule = "-" * (width + 2 + vwidth)
        lines = [title, rule]
        lines += [f"{label:<{width}}  {v:>{vwidth}}" for label, v in rows]
        lines.append(rule)
        lines.append("bin  range            weight    mean pred  frac pos")
        nz = np.flatnonzero(self.bin_weights > 0)
        j = 0
        for k in range(self.n_bins):
            lo, hi = self.bin_edges[k], self.bin_edges[k + 1]
            rng = f"{'[' if k == 0 else '('}{lo:.3f}, {hi:.3f}]"
            if j < nz.size and nz[j] == k:
                weight, pred, true = self.bin_weights[k], self.prob_pred[j], self.prob_true[j]
                lines.append(f"{k:>3}  {rng:<15} {weight:>8.6g}  {pred:>9.4f}  {true:>8.4f}")
                j += 1
            else:
                lines.append(f"{k:>3}  {rng:<15} {0:>8}  {'(empty)':>9}  {'':>8}")
        return "\n".join(lines)


def calibration_report(y_true, y_prob, *, sample_weight=None, n_bins=10, strategy="uniform", pos_label=None):
    r"""Every calibration diagnostic of a set of binary predictions, in one call.

    One parallel pass over the data gives the binned quantities (calibration
    curve, ECE/RMSCE/MCE, Brier decomposition), the Brier score and the log
    loss; the AUC comes from sorting the scores of each class
    (:func:`roc_auc_score`); the calibration slope, intercept and
    calibration-in-the-large come from the logistic recalibration
    :math:`\operatorname{logit} P(y=1) = \alpha + \beta \operatorname{logit}(p)`
    of :func:`fastcal.platt.calibration_slope_intercept`.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`; both classes must be present.
    n_bins : int, default=10
        Bins of the curve, the ECE and the Brier decomposition.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.

    Returns
    -------
    CalibrationReport
        ``n``, ``weight_sum``, ``base_rate``, ``mean_prediction``, ``auc``,
        ``brier``, ``log_loss``, ``ece`` (l1), ``rmsce`` (l2), ``mce`` (max),
        ``reliability``, ``resolution``, ``uncertainty``,
        ``within_bin_variance``, ``within_bin_covariance``, ``slope``,
        ``intercept``, ``calibration_in_the_large``, the standard errors and
        95% confidence intervals of slope and intercept, and the bins
        (``bin_edges``, ``bin_weights``, ``prob_true``, ``prob_pred``).
        Prints as a table; ``to_dict()`` converts it.

    References
    ----------
    Van Calster, B., McLernon, D. J., van Smeden, M., Wynants, L. and
    Steyerberg, E. W. (2019). Calibration: the Achilles heel of predictive
    analytics. BMC Medicine 17, 230.
    Cox, D. R. (1958). Two further applications of a model for binary
    regression. Biometrika 45(3/4), 562-565.
    """
    from .platt import calibration_slope_intercept

    n_bins = check_n_bins(n_bins)
    check_in(strategy, "strategy", STRATEGIES)
    y, p, w, lo, hi = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    edges = _bin_edges(p, n_bins, strategy, lo, hi)
    table = bin_stats(p, y, w, edges, moments=True, brier=True, logloss=True)
    weight = table[:, _k.W]
    total = float(weight.sum())
    positives = float(table[:, _k.SY].sum())
    if not (0 < positives < total):
        raise ValueError("calibration_report needs both classes in y_true (with positive weight).")
    decomposition = decomposition_from_table(table)
    ece = ece_from_table(table)
    auc = _auc(y, p, w)
    slope_fit = calibration_slope_intercept(y, p, sample_weight=w)
    optional = {}
    for name, attr in (
        ("slope_se", "slope_se"),
        ("intercept_se", "intercept_se"),
        ("slope_ci", "slope_ci"),
        ("intercept_ci", "intercept_ci"),
        ("slope_converged", "converged"),
    ):
        value = getattr(slope_fit, attr, None)
        if value is None:
            continue
        if name.endswith("_ci"):
            value = tuple(float(v) for v in np.ravel(value))
        elif name == "slope_converged":
            value = bool(value)
        else:
            value = float(value)
        optional[name] = value
    nz = weight > 0
    return CalibrationReport(
        n=int(p.shape[0]),
        weight_sum=total,
        base_rate=positives / total,
        mean_prediction=float(table[:, _k.SP].sum() / total),
        auc=auc,
        brier=decomposition.brier,
        log_loss=float(table[:, _k.SLOG].sum() / total),
        ece=ece["l1"],
        rmsce=ece["l2"],
        mce=ece["max"],
        reliability=decomposition.reliability,
        resolution=decomposition.resolution,
        uncertainty=decomposition.uncertainty,
        within_bin_variance=decomposition.within_bin_variance,
        within_bin_covariance=decomposition.within_bin_covariance,
        slope=float(slope_fit.slope),
        intercept=float(slope_fit.intercept),
        calibration_in_the_large=float(slope_fit.calibration_in_the_large),
        n_bins=n_bins,
        strategy=strategy,
        bin_edges=edges,
        bin_weights=weight.copy(),
        prob_true=table[nz, _k.SY] / weight[nz],
        prob_pred=table[nz, _k.SP] / weight[nz],
        **optional,
    )
