r"""Cumulative calibration error (ECCE) with its p-value, and the multicalibration error over segments.

With rows sorted by prediction :math:`p`, labels :math:`y \in \{0, 1\}`,
weights :math:`w` (default 1) and :math:`W = \sum_i w_i`, the cumulative
differences are :math:`D_0 = 0`, :math:`D_k = \sum_{i \le k} w_i (y_i - p_i) / W`
and (Arrieta-Ibarra et al. 2022)

.. math::

    \mathrm{ECCE} = \max_k D_k - \min_k D_k, \qquad
    \sigma = \frac{\sqrt{\sum_i w_i^2 p_i (1 - p_i)}}{W}, \qquad
    \text{p-value} = 1 - F(\mathrm{ECCE} / \sigma),

where :math:`F` is the CDF of the range of a standard Brownian motion on
[0, 1] (Kuiper's distribution): :math:`\mathrm{ECCE}/\sigma` is
asymptotically distributed as that range when the predictions are
calibrated. Rows of equal prediction are one step of :math:`D` (ties are
pooled), so the result does not depend on the order of the rows.

:func:`multicalibration_error` measures the ECCE of many segments at once
(Guy et al. 2025), with the segments of MCGrad's ``MulticalibrationError``:
the rows moved to ranges of scores, each sorted in the cache, and one pass
that updates, for each row, the running sums of every segment it belongs to
(:mod:`fastcal._multicalibration_kernels`).

References
----------
Arrieta-Ibarra, I., Gujral, P., Tannen, J., Tygert, M. and Xu, C. (2022).
Metrics of calibration for probabilistic predictions. JMLR 23(351).
Guy, I., Haimovich, D., Linder, F., Okati, N., Perini, L., Tax, N. and
Tygert, M. (2025). Measuring multi-calibration. arXiv:2506.11251.
Feller, W. (1951). The asymptotic distribution of the range of sums of
independent random variables. Ann. Math. Statist. 22(3).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _multicalibration_kernels as _k
from ._results import Result
from . import _parallel
from ._parallel import parallel_for, run, task_bounds
from ._sort import argsort, range_map, sort_pairs
from ._validation import (
    as_float_array,
    check_binary_labels,
    check_consistent_length,
    check_probability_range,
    check_sample_weight,
    column_or_1d,
    rescale_weights,
)
from .metrics import calibration_curve, log_loss

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ECCEResult",
    "MulticalibrationResult",
    "SegmentReport",
    "calibration_ratio",
    "ecce",
    "kuiper_cdf",
    "kuiper_sf",
    "multicalibration_error",
    "normalized_entropy",
    "proportional_ece",
    "segment_report",
]

#: The value that stands for the collapsed, least frequent values of a categorical feature (MCGrad's).
OTHER = "__OTHER"
#: The value that stands for a missing value of a categorical feature (MCGrad's).
MISSING = "__NA"
#: Cells per row up to which every combination of feature values gets a cell number, seen or not (see ``_cells``).
DENSE_CELLS = 4
#: Entries of the table of segments of each cell used by one pass over the rows (int32: 16 MB).
TABLE_CELLS = 1 << 22
#: Score ranges times numbers of the per-range partial results merged in range order (float64: 16 MB), at most.
CHUNK_ENTRIES = 1 << 21
#: Chunks of rows times score ranges counted (int64: 64 MB), at most.
COUNT_ENTRIES = 1 << 23
#: Rows per score range, each sorted on one thread (about 400 kB of scores, cells, labels and weights: the L2 cache).
RANGE_ROWS = 1 << 14


@dataclass(frozen=True, eq=False, repr=False)
class ECCEResult(Result):
    """The ECCE, its standard deviation under calibration, their ratio and the p-value (see :func:`ecce`)."""

    ecce: float
    std: float
    ecce_sigma: float
    pvalue: float


@dataclass(frozen=True, eq=False, repr=False)
class MulticalibrationResult(Result):
    """The multicalibration error and the per-segment table (see :func:`multicalibration_error`).

    The table has one entry per segment, segment 0 being all rows:
    ``segment_values[s]`` maps each feature defining segment ``s`` to its
    value (a quantile bin number for a binned numerical feature, ``"__OTHER"``
    for collapsed categories, ``"__NA"`` for a missing category);
    ``segment_n``, ``segment_ecce``, ``segment_ecce_sigma`` and
    ``segment_pvalue`` are its rows, ECCE, ECCE in sigmas and p-value.
    """

    mce: float
    mce_sigma: float
    mce_pvalue: float
    mce_relative: float
    mde: float
    mde_relative: float
    global_ecce: float
    global_ecce_sigma: float
    global_ecce_pvalue: float
    segment_values: list[dict[str, Any]] = field(repr=False)
    segment_n: NDArray[np.int64] = field(repr=False)
    segment_ecce: NDArray[np.float64] = field(repr=False)
    segment_ecce_sigma: NDArray[np.float64] = field(repr=False)
    segment_pvalue: NDArray[np.float64] = field(repr=False)


# ---------------------------------------------------------------------------
# Kuiper's distribution
# ---------------------------------------------------------------------------
def kuiper_cdf(x: float) -> float:
    r"""CDF of the range of a standard Brownian motion on [0, 1] (Kuiper's distribution).

    Two series, each used where it converges in a few terms (Feller 1951):
    for :math:`x < 2`

    .. math:: F(x) = \sum_{k \ge 0} \Big(\frac{8}{x^2} + \frac{2}{(k + \frac12)^2 \pi^2}\Big)
              e^{-2 (k + \frac12)^2 \pi^2 / x^2},

    and for :math:`x \ge 2` the survival function
    :math:`1 - F(x) = 8 \sum_{k \ge 1} (-1)^{k-1} k\, Q(kx)`, :math:`Q` the
    standard normal upper tail, so :func:`kuiper_sf` keeps its relative
    accuracy far in the tail.

    Examples
    --------
    >>> from fastcal.multicalibration import kuiper_cdf
    >>> round(kuiper_cdf(2.0), 6)
    0.818506
    """
    return float(_k.kuiper_cdf(float(x)))


def kuiper_sf(x: float) -> float:
    """``1 - kuiper_cdf(x)``, accurate to rounding relative to itself (see :func:`kuiper_cdf`)."""
    return float(_k.kuiper_sf(float(x)))


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
def _check_inputs(y_true, y_prob, sample_weight):
    """Validated ``(y, p, w)``: 0/1 labels, probabilities (float32/float64), weights (rescaled) or None."""
    y_arr = column_or_1d(y_true, "y_true")
    p = as_float_array(column_or_1d(y_prob, "y_prob"), "y_prob")
    check_consistent_length(y_true=y_arr, y_prob=p)
    check_probability_range(p, "y_prob")
    y = check_binary_labels(y_arr, "y_true")
    return y, p, check_sample_weight(sample_weight, p.shape[0], rescale=True)


def check_int(value, name, minimum, *, allow_none=False):
    """``value`` as an int of at least ``minimum`` (None if ``allow_none``), else the TypeError/ValueError naming
    ``name``: the integer parameters' check of this module and of its engine drivers."""
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int{' or None' if allow_none else ''}, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}.")
    return int(value)


def _sigma(ecce_value, std):
    """``ecce / std``, with MCGrad's rule for ``std == 0``: inf if the ECCE is not 0, else 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(std > 0, ecce_value / np.where(std > 0, std, 1.0), np.where(ecce_value != 0, np.inf, 0.0))


# ---------------------------------------------------------------------------
# ECCE and the aggregate metrics
# ---------------------------------------------------------------------------
def ecce(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None) -> ECCEResult:
    r"""Estimated cumulative calibration error (ECCE, the Kuiper range of cumulative differences) and its p-value.

    With rows sorted by ``y_prob`` and :math:`D_k = \sum_{i \le k} w_i (y_i - p_i) / W`
    (:math:`D_0 = 0`; all rows of one prediction are one step):
    :math:`\mathrm{ECCE} = \max_k D_k - \min_k D_k`,
    :math:`\sigma = \sqrt{\sum_i w_i^2 p_i (1 - p_i)} / W` (the standard
    deviation of :math:`D_n` if the labels are Bernoulli(:math:`p_i`)),
    ``ecce_sigma`` :math:`= \mathrm{ECCE}/\sigma` (inf if :math:`\sigma = 0 <
    \mathrm{ECCE}`, 0 if both are 0) and ``pvalue`` :math:`= 1 - F(\mathrm{ECCE}/\sigma)`,
    :math:`F` Kuiper's distribution (:func:`kuiper_cdf`).

    One sort (fastcal's radix sort, the terms carried with the scores) and one pass; sums in float64 for
    float32 and float64 input. Unlike MCGrad's ``ecce``, tied predictions
    are pooled, so the result does not depend on the order of the rows; on
    untied predictions the two agree.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights (scaling them all by a constant changes nothing).

    Returns
    -------
    ECCEResult
        ``ecce``, ``std`` (:math:`\sigma`), ``ecce_sigma`` and ``pvalue``.

    References
    ----------
    Arrieta-Ibarra, I., Gujral, P., Tannen, J., Tygert, M. and Xu, C. (2022).
    Metrics of calibration for probabilistic predictions. JMLR 23(351).

    Examples
    --------
    >>> from fastcal import ecce
    >>> ecce([1, 1, 0, 0], [0.5] * 4).ecce
    0.0
    >>> r = ecce([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.9])
    >>> round(r.ecce, 6), round(r.std, 6)
    (0.125, 0.203101)
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight)
    # One segment: the terms w (y - p) travel with their scores through the sort (no gather after it).
    p64 = p.astype(np.float64)
    w64 = np.ones_like(p64) if w is None else w.astype(np.float64)
    terms = w64 * (np.not_equal(y, 0) - p64)
    total = float(w64.sum())
    ps, rs = sort_pairs(p, terms)
    lo, hi = _k.tied_range(ps, rs)
    value = (hi - lo) / total
    std = math.sqrt(float(np.dot(w64 * w64, p64 * (1.0 - p64)))) / total
    return ecce_result(value, std)


def ecce_result(value, std):
    """The :class:`ECCEResult` of an ECCE ``value`` and its null standard deviation ``std`` (floats)."""
    sigma = float(_sigma(np.array([value]), np.array([std]))[0])
    return ECCEResult(ecce=value, std=std, ecce_sigma=sigma, pvalue=kuiper_sf(sigma))


def calibration_ratio(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None,
                      adjust_unjoined: bool = False) -> float:
    r"""Predicted over observed positives: :math:`\sum_i w_i p_i / \sum_i w_i y_i` (1 when calibrated in aggregate).

    With ``adjust_unjoined`` the data are "unjoined" (MCGrad's term): every
    instance has a row labelled 0, and a positive one a second row labelled 1
    with the same prediction; only the predictions of the rows labelled 0
    are summed, :math:`\sum_i w_i (1 - y_i) p_i / \sum_i w_i y_i`.
    Sums in float64. ``ValueError`` if no row of positive weight is labelled 1.

    Examples
    --------
    >>> from fastcal import calibration_ratio
    >>> calibration_ratio([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.3])
    1.0
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight)
    yf = y.astype(np.float64)
    pf = p.astype(np.float64)
    wf = np.ones_like(pf) if w is None else w.astype(np.float64)
    positives = float(np.dot(wf, yf))
    if not positives > 0:
        raise ValueError("y_true has no positive label of positive weight: the calibration ratio is undefined.")
    predicted = float(np.dot(wf * (1.0 - yf), pf)) if adjust_unjoined else float(np.dot(wf, pf))
    return predicted / positives


def proportional_ece(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 40,
                     sample_weight: ArrayLike | None = None) -> float:
    r"""Proportional expected calibration error: the binned ECE with each bin's gap relative to its mean prediction.

    With the uniform bins of :func:`fastcal.calibration_curve` (bin weight
    :math:`W_k`, mean label :math:`\bar o_k`, mean prediction :math:`\bar p_k`):
    :math:`\sum_k \frac{W_k}{W} \frac{|\bar o_k - \bar p_k|}{\bar p_k}` over the non-empty bins.
    MCGrad's ``proportional_expected_calibration_error`` (40 bins by default);
    its bins are closed on the left, these on the right, which differs only
    for predictions exactly on a bin edge. ``ValueError`` if a non-empty bin
    has mean prediction 0.

    Examples
    --------
    >>> from fastcal import proportional_ece
    >>> round(proportional_ece([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4], n_bins=2), 6)  # 0.5 * 0.3 / 0.3 + 0.5 * 0.25 / 0.75
    0.666667
    """
    prob_true, prob_pred, weights = calibration_curve(y_true, y_prob, n_bins=n_bins, sample_weight=sample_weight,
                                                      return_counts=True)
    if np.any(prob_pred == 0):
        raise ValueError("y_prob has a bin whose mean prediction is 0: its proportional error is undefined.")
    mass = np.asarray(weights, dtype=np.float64)
    return float(np.sum(mass / mass.sum() * np.abs(prob_true - prob_pred) / prob_pred))


def normalized_entropy(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    r"""Normalized entropy: the log loss over that of always predicting the base rate.

    :math:`\mathrm{NE} = \mathrm{LL}(y, p) / H(\pi)`, with
    :math:`\pi = \sum_i w_i y_i / W` and
    :math:`H(\pi) = -\pi \log \pi - (1 - \pi) \log (1 - \pi)` (the log loss
    of the constant prediction :math:`\pi`), ``LL`` :func:`fastcal.log_loss`
    (scikit-learn's clipping). Below 1, the predictions beat the base rate.
    MCGrad's ``normalized_entropy`` rounds :math:`\pi` to float32 first;
    here :math:`\pi` is float64. ``ValueError`` if all labels are one class.

    References
    ----------
    He, X. et al. (2014). Practical lessons from predicting clicks on ads at Facebook. ADKDD.

    Examples
    --------
    >>> from fastcal import normalized_entropy
    >>> round(normalized_entropy([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4]), 6)
    0.473849
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight)
    wf = np.ones(p.shape[0]) if w is None else w.astype(np.float64)
    rate = float(np.dot(wf, y.astype(np.float64)) / wf.sum())
    if not 0 < rate < 1:
        raise ValueError("y_true holds one class only: the normalized entropy is undefined.")
    baseline = -(rate * math.log(rate) + (1 - rate) * math.log1p(-rate))
    return log_loss(y, p, sample_weight=w) / baseline


# ---------------------------------------------------------------------------
# segments
# ---------------------------------------------------------------------------
def _factorize(values, name):
    """``(codes, uniques)``: integer codes of ``values`` into ``uniques``; NaN (floats) and None (objects) are the
    value ``None`` at the end of ``uniques``."""
    if values.dtype.kind in "biu":
        uniques, codes = np.unique(values, return_inverse=True)
        return codes.reshape(-1), uniques.tolist()
    if values.dtype.kind == "f":
        missing = np.isnan(values)
        uniques, codes = np.unique(np.where(missing, 0.0, values), return_inverse=True)
        uniques = uniques.tolist()
        if missing.any():
            present = np.unique(codes[~missing])
            index = np.full(len(uniques), -1, dtype=np.int64)
            index[present] = np.arange(present.size)
            codes = np.where(missing, present.size, index[codes])
            uniques = [uniques[i] for i in present] + [None]
        return codes, uniques
    if values.dtype.kind in "US" and values.dtype.itemsize in (1, 2, 4, 8):  # short strings: their bits as integers
        as_int = np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")
        codes, uniques = _factorize(as_int, name)
        return codes, np.array(uniques, dtype=as_int.dtype).view(values.dtype).tolist()
    # Anything else: a dict of the values in order of appearance (hashing, no sort), then the missing ones merged.
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()), dtype=np.int64,
                        count=values.shape[0])
    uniques = list(index)
    missing = [_is_missing(u) for u in uniques]
    if any(missing):
        keep = [i for i, m in enumerate(missing) if not m]
        remap = np.full(len(uniques), len(keep), dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        codes = remap[codes]
        uniques = [uniques[i] for i in keep] + [None]
    return codes, uniques


def _is_missing(value):
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN
    except (TypeError, ValueError):  # pandas' NA, whose truth value raises
        return True


def _coded(values, name, p):
    """``(codes, offset, index, uniques, counts, rank)``: a feature's values as integer codes, ``index[codes - offset]``
    numbering its ``k`` distinct values ``uniques`` (None: missing), with each value's rows and its rank of first
    appearance along the rows sorted (stably) by ``p``.

    Integers (and short strings, as the integers of their bits) of a range
    under 4 per row are their own codes, less their minimum: one pass counts
    them (:func:`fastcal._multicalibration_kernels.code_stats`), no sort.
    Other values are numbered by :func:`_factorize` first.
    """
    raw = values
    if values.dtype.kind in "US" and values.dtype.itemsize in (1, 2, 4, 8):
        values = np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")
    n = values.shape[0]
    if values.dtype.kind in "biu" and n:
        lo, hi = int(values.min()), int(values.max())
        if hi - lo < 4 * n and hi < 2**63:
            codes = np.ascontiguousarray(values)
            counts, first_p, first_row = _k.code_stats(codes, lo, p, hi - lo + 1)
            present = np.flatnonzero(counts)
            index = np.zeros(hi - lo + 1, dtype=np.int64)
            index[present] = np.arange(present.size)
            if raw.dtype.kind in "US":
                uniques = (present + lo).astype(values.dtype).view(raw.dtype).tolist()
            elif raw.dtype.kind == "b":
                uniques = present.astype(bool).tolist()
            else:
                uniques = (present + lo).tolist()
            return codes, lo, index, uniques, counts[present], _rank(first_p[present], first_row[present])
    codes, uniques = _factorize(raw, name)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    counts, first_p, first_row = _k.code_stats(codes, 0, p, len(uniques))
    return codes, 0, np.arange(len(uniques)), uniques, counts, _rank(first_p, first_row)


def group_codes(values: Any, name: str) -> tuple[NDArray[np.int64], list[Any]]:
    """``(codes, uniques)``: the values of the 1-D array ``values`` numbered ``0..k-1`` (int64), and the ``k``
    distinct values as Python objects (None for a missing value: NaN, None, pandas' NA).

    The internal API of the grouped estimators and reports (:mod:`fastcal.grouped`): integers and short strings
    of a small range are counted in one pass, other values numbered by ``np.unique`` or a dict. The order of
    ``uniques`` is the values' order for numbers and strings, of first appearance for other objects.
    """
    values = np.asarray(values)
    zeros = np.zeros(values.shape[0])
    codes, offset, index, uniques, _, _ = _coded(values, name, zeros)
    codes = index[codes.astype(np.int64, copy=False) - offset]  # a new array, never the input
    return codes, [None if _is_missing(u) else u for u in uniques]


def _rank(first_p, first_row):
    rank = np.empty(first_p.shape[0], dtype=np.int64)
    rank[np.lexsort((first_row, first_p))] = np.arange(first_p.shape[0])
    return rank


def _categorical(values, name, p, max_values):
    """``(codes, offset, remap, labels)`` of a categorical feature: ``remap[codes - offset]`` numbers its values in
    order of first appearance along the sorted predictions, the ``max_values - 1`` most frequent kept, the others
    one value."""
    codes, offset, index, uniques, counts, first = _coded(values, name, p)
    group, labels, first = collapse_categories(uniques, counts, first, max_values, values.dtype.kind in "biuf")
    return _by_appearance(codes, offset, group[index], labels, first)


def collapse_categories(uniques, counts, first, max_values, numeric):
    """A categorical feature's values kept: ``(group, labels, first)``.

    ``uniques`` are its distinct values (None: missing), ``counts`` their
    rows and ``first`` their ranks of first appearance along the sorted
    predictions. Past ``max_values`` values, the ``max_values - 1`` most
    frequent are kept (ties: the first to appear) and the others are one
    value, labelled ``"__OTHER"`` (the least value less 1 if ``numeric``).
    ``group[j]`` is value ``j``'s kept number, ``labels`` and ``first`` are
    those of the kept values (missing: ``"__NA"``).
    """
    labels = [MISSING if u is None else u for u in uniques]
    k = len(labels)
    group = np.arange(k)
    if k > max_values:
        by_appearance = np.argsort(first, kind="stable")
        by_count = by_appearance[np.argsort(-counts[by_appearance], kind="stable")]
        collapsed = by_count[max_values - 1:]
        kept = np.sort(by_count[:max_values - 1])
        finite = [u for u in uniques if u is not None]
        other = (min(finite) - 1 if finite else -1) if numeric else OTHER
        group = np.full(k, len(kept), dtype=np.int64)
        group[kept] = np.arange(len(kept))
        labels = [labels[i] for i in kept] + [other]
        first = np.append(first[kept], first[collapsed].min())
    return group, labels, first


def _numerical(values, name, p, max_values):
    """``(codes, offset, remap, labels)`` of a numerical feature: its values if at most ``max_values``, else quantile
    bin numbers (``max_values`` bins ``(e_{k-1}, e_k]``, the first closed, pandas' ``cut`` of its quantiles); NaN
    its own value (``nan``)."""
    x = np.ascontiguousarray(as_float_array(values, f"segments[{name!r}]"), dtype=np.float64)
    if _k.count_distinct(x, max_values) <= max_values:
        codes, offset, index, uniques, _, first = _coded(x, name, p)
        labels = [float("nan") if u is None else u for u in uniques]
        return _by_appearance(codes, offset, index, labels, first)
    missing = np.isnan(x)
    present = x[~missing] if missing.any() else x  # np.percentile sorts a copy of its own: no mask copy if no NaN
    edges = np.unique(np.percentile(present, np.linspace(0, 1, max_values + 1) * 100))
    # NaN: a number past the bins' 0..edges.size - 2 (integers: counted, not sorted)
    bins = _k.bin_numbers(x, edges, edges.size)
    codes, offset, index, uniques, _, first = _coded(bins, name, p)
    labels = [float("nan") if u == edges.size else int(u) for u in uniques]
    return _by_appearance(codes, offset, index, labels, first)


def _by_appearance(codes, offset, index, labels, first):
    """``(codes, offset, remap, labels)``, ``remap`` the value numbers ``index`` renumbered so that value ``j`` is
    the ``j``-th to appear along the sorted predictions (``first``: each value's rank of appearance)."""
    rank = np.argsort(first, kind="stable")
    renumber = np.empty(len(labels), dtype=np.int64)
    renumber[rank] = np.arange(len(labels))
    return codes, offset, renumber[index], [labels[i] for i in rank]


def _columns(segments, n, numerical):
    """The segment features as ``{name: 1-D array}``: categorical ones first, then numerical ones (MCGrad's order)."""
    if hasattr(segments, "columns") and hasattr(segments, "__getitem__"):  # a DataFrame, without importing pandas
        columns = {str(c) if not isinstance(c, str) else c: np.asarray(segments[c]) for c in segments.columns}
    elif hasattr(segments, "items"):
        columns = {name: column_or_1d(values, f"segments[{name!r}]", allow_column=False) for name, values in
                   segments.items()}
    else:
        raise TypeError(f"segments must be a mapping of feature names to arrays, or a DataFrame; got "
                        f"{type(segments).__name__}.")
    numerical = [numerical] if isinstance(numerical, str) else list(numerical)
    unknown = [name for name in numerical if name not in columns]
    if unknown:
        raise ValueError(f"numerical names {unknown} that are not features of segments ({list(columns)}).")
    for name, values in columns.items():
        if values.ndim != 1:
            raise ValueError(f"segments[{name!r}] must be 1-D, got shape {values.shape}.")
        if values.shape[0] != n:
            raise ValueError(f"segments[{name!r}] has {values.shape[0]} rows, expected {n} (one per sample).")
    categorical = [name for name in columns if name not in numerical]
    return [(name, columns[name], False) for name in categorical] + [(name, columns[name], True) for name in numerical]


def _cells(features, n):
    """``(cells, digits, counts)``: each row's cell (its combination of values of every feature, numbered
    ``0..m-1``), each cell's value of each feature (``digits``, ``m`` x features) and its rows.

    Mixed-radix numbers of the values while they stay few (:data:`DENSE_CELLS` per row, per 2^14 rows at least),
    with a cell for every combination, seen or not; past that, the cells seen, numbered by ``np.unique``.
    """
    sizes = [len(labels) for _, _, _, _, labels in features]
    dense = DENSE_CELLS * max(n, 1 << 14)
    kind = _cell_type(dense)
    cells = np.zeros(n, dtype=kind)
    span, compacted = 1, False
    for (_, codes, offset, remap, _), size in zip(features, sizes):
        if span * size > dense:
            uniques, inverse = np.unique(cells, return_inverse=True)
            cells, span, compacted = inverse.astype(kind).reshape(-1), uniques.size, True
        _k.add_digit(cells, codes, offset, remap, size)
        span *= size
    if not compacted:
        digits = np.empty((span, len(features)), dtype=np.int64)
        place = np.arange(span)
        for f in range(len(features) - 1, -1, -1):
            place, digits[:, f] = np.divmod(place, sizes[f])
        return cells, digits, np.bincount(cells, minlength=span)
    uniques, first, inverse, counts = np.unique(cells, return_index=True, return_inverse=True, return_counts=True)
    digits = np.empty((uniques.size, len(features)), dtype=np.int64)
    for f, (_, codes, offset, remap, _) in enumerate(features):
        digits[:, f] = remap[codes[first].astype(np.int64) - offset]
    return inverse.astype(kind).reshape(-1), digits, counts


def _cell_type(most):
    """The integer type of cell numbers below ``most``: int32 if twice the number still fits (the sort's rows
    carry ``cell << 1 | label``), halving the memory the passes over the rows read and write; else int64."""
    return np.int32 if 2 * most <= np.iinfo(np.int32).max else np.int64


def _row_chunks(n):
    """Bounds of the chunks of rows in input order (:func:`fastcal._parallel.task_bounds`: by the size alone)."""
    return np.array(task_bounds(n), dtype=np.int64)


def _n_ranges(n, width, n_chunks):
    """Score ranges of ``n`` rows: about :data:`RANGE_ROWS` rows each, fewer if ranges x ``width`` (the partial
    results per range) would pass :data:`CHUNK_ENTRIES`, or ranges x ``n_chunks`` (the rows of each range in each
    chunk of rows) :data:`COUNT_ENTRIES`. A function of the size of the problem alone."""
    return max(1, min(n // RANGE_ROWS, CHUNK_ENTRIES // max(width, 1), COUNT_ENTRIES // max(n_chunks, 1)))


def _run_chunks(kernel, n, args, n_chunks):
    """``kernel(*args, k, k + 1)`` for every chunk ``k < n_chunks``, each a task on fastcal's threads (in this
    thread under :data:`fastcal._parallel.PARALLEL_MIN_SIZE` rows)."""
    calls = [(kernel, (*args, k, k + 1)) for k in range(n_chunks)]
    if n < _parallel.PARALLEL_MIN_SIZE:  # read at each call: tests lower it
        for func, call_args in calls:
            func(*call_args)
    else:
        run(calls)


def _segment_sums(y, p, w, cells, digits, cell_counts, combos, n_segments):
    """Per segment ``(count, W, V, lo, hi)``: rows, ``W = sum w``, ``V = sum w^2 p (1 - p)`` and the extremes of
    the running sum of ``w (y - p)`` along the sorted scores, after each group of equal scores; and the
    weight of the positive rows, ``sum w y``.

    Three passes, each in tasks on fastcal's threads cut by the size of
    the problem alone and merged in order, so the same at any thread count:

    1. chunks of rows in input order: the rows of each score range
       (:func:`fastcal._sort.range_map`, a non-decreasing map cut at
       quantiles of a sample, so every score of a range is below every
       score of the next) and the sums per cell, which need no order
       (:func:`fastcal._multicalibration_kernels.range_cell_sums`); a
       segment's count and sums are then those of its cells;
    2. the same chunks: each row's score, cell and label (and weight)
       moved to its range, in row order (``range_scatter``);
    3. the ranges, about :data:`RANGE_ROWS` rows each: each sorted stably
       in the cache (``sort_rows``), then one pass over its rows moves the
       float64 running sum of every segment of each row's cell, through a
       table of the segments of each cell (``range_extremes``); the ranges'
       extremes are merged in range order (``merge_extremes``).

    Combinations of features whose table would pass :data:`TABLE_CELLS`
    entries are split into blocks, one pass 3 each (the first sorts).
    """
    n = p.shape[0]
    m = digits.shape[0]
    weights = np.empty(0) if w is None else w
    columns = [(0, np.zeros(m, dtype=np.int64))]  # segment 0: every cell
    for subset, mult, local, start, _ in combos:
        columns.append((start, local[digits[:, list(subset)] @ np.array(mult, dtype=np.int64)]))
    per_block = max(1, TABLE_CELLS // max(m, 1))
    blocks = [columns[b:b + per_block] for b in range(0, len(columns), per_block)]
    ends = [blocks[i + 1][0][0] if i + 1 < len(blocks) else n_segments for i in range(len(blocks))]
    widest = max(end - block[0][0] for block, end in zip(blocks, ends))

    bounds = _row_chunks(n)
    n_chunks = bounds.size - 1
    x0, scale, cell_range = range_map(p, _n_ranges(n, 3 * widest, n_chunks))
    n_ranges = int(cell_range[-1]) + 1
    counts = np.zeros((n_chunks, n_ranges), dtype=np.int64)
    parts = np.zeros((3, n_chunks, m))
    _run_chunks(_k.range_cell_sums, n, (cells, p, y, weights, x0, scale, cell_range, bounds, counts, *parts),
                n_chunks)
    cell_total, cell_var, cell_positive = np.zeros(m), np.zeros(m), np.zeros(m)
    for k in range(n_chunks):  # in chunk order
        cell_total += parts[0, k]
        cell_var += parts[1, k]
        cell_positive += parts[2, k]
    del parts
    count = np.zeros(n_segments, dtype=np.int64)
    total, var = np.zeros(n_segments), np.zeros(n_segments)
    for start, col in columns:
        keep = col >= 0
        size = int(col.max()) + 1 if keep.any() else 0
        at = slice(start, start + size)
        count[at] = np.bincount(col[keep], weights=cell_counts[keep], minlength=size)
        total[at] = np.bincount(col[keep], weights=cell_total[keep], minlength=size)
        var[at] = np.bincount(col[keep], weights=cell_var[keep], minlength=size)

    starts = np.zeros(n_ranges + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(counts, axis=0) - counts
    del counts
    xs, qs = np.empty(n), np.empty(n, dtype=_cell_type(m))
    ws = np.empty(0) if w is None else np.empty(n)
    _run_chunks(_k.range_scatter, n, (cells, p, y, weights, x0, scale, cell_range, bounds, offsets, xs, qs, ws),
                n_chunks)
    del offsets
    lo, hi = np.zeros(n_segments), np.zeros(n_segments)
    for i, (block, last) in enumerate(zip(blocks, ends)):
        first = block[0][0]
        table = np.empty((m, len(block)), dtype=np.int32)
        for c, (start, col) in enumerate(block):
            table[:, c] = np.where(col >= 0, col + (start - first), last - first)  # last - first: no segment
        parts = np.zeros((3, n_ranges, last - first))
        _run_chunks(_k.range_extremes, n, (xs, qs, ws, starts, table, i == 0, *parts), n_ranges)
        lo[first:last], hi[first:last] = _k.merge_extremes(*parts)
    return count, total, var, lo, hi, float(cell_positive.sum())


def multicalibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    segments: Mapping[str, ArrayLike] | Any,
    *,
    sample_weight: ArrayLike | None = None,
    numerical: Iterable[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 3,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
) -> MulticalibrationResult:
    r"""Multicalibration error (MCE): the largest ECCE, in sigmas, over segments of the data.

    The segments are MCGrad's (``MulticalibrationError``): segment 0 is all
    rows; then, for each depth from 1 to ``max_depth``, each combination of
    that many features (categorical features first, then ``numerical``
    ones, each in the order given), and each combination of their values
    (in order of first appearance along the sorted predictions) that
    holds at least ``min_samples_per_segment`` rows, until there are
    ``max_n_segments`` segments. A categorical feature keeps its
    ``max_values_per_segment_feature - 1`` most frequent values and
    collapses the others into one (``"__OTHER"``, or the minimum less 1 for a
    numeric feature; ties of frequency go to the first to appear); a missing
    value (None, NaN) is the value ``"__NA"``. A numerical feature with more
    distinct values than ``max_values_per_segment_feature`` is cut at its
    quantiles into that many bins, numbered from 0; NaN is a value of its
    own.

    For segment :math:`s`: :math:`\mathrm{ECCE}_s` and :math:`\sigma_s` as in
    :func:`ecce` on its rows, :math:`z_s = \mathrm{ECCE}_s / \sigma_s` and
    :math:`p_s = 1 - F(z_s)`. With :math:`\sigma_0` the global one and the
    prevalence :math:`\pi = \min(\bar y, 1 - \bar y)` (weighted):

    .. math::

        \mathrm{mce\_sigma} = \max_s z_s,\quad \mathrm{mce} = \mathrm{mce\_sigma}\,\sigma_0,\quad
        \mathrm{mce\_pvalue} = \min_s p_s,\quad \mathrm{mde} = 5 \sigma_0,

    and the relative forms are ``100 * mce / pi`` and ``100 * mde / pi``
    (percent of the prevalence; inf if :math:`\pi = 0`).

    Each row's cell (its values of every feature) is numbered; weights and
    variances are summed per cell; the rows (score, cell, label, weight) are
    moved to ranges of scores of about 16k rows, each sorted in the cache,
    then one pass over each range's rows moves the float64 running sum of
    every segment each row is in (tie groups pooled per segment), the ranges'
    extremes merged in order: O(n (number of feature combinations)) after
    the sort, not one pass per segment, and the same at any thread count. Differences from MCGrad: ties are pooled; segment 0 is kept
    even with fewer rows than ``min_samples_per_segment``; exactly
    ``max_n_segments`` segments are kept (MCGrad keeps whole chunks of 50);
    the p-values are not clamped (MCGrad's are at least 2.2e-16).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    segments : mapping of str to array-like of shape (n_samples,), or DataFrame
        The segment features.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights.
    numerical : iterable of str, default=()
        The features of ``segments`` that are numerical (binned at quantiles).
    max_depth : int or None, default=3
        Most features in a segment's definition (None: all).
    max_values_per_segment_feature : int, default=3
        Values (bins) kept per feature.
    min_samples_per_segment : int, default=10
        Fewest rows (unweighted) of a segment.
    max_n_segments : int or None, default=1000
        Most segments, segment 0 included (None: no limit).

    Returns
    -------
    MulticalibrationResult

    References
    ----------
    Guy, I., Haimovich, D., Linder, F., Okati, N., Perini, L., Tax, N. and
    Tygert, M. (2025). Measuring multi-calibration. arXiv:2506.11251.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import multicalibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.9, 10_000)
    >>> country = rng.choice(["fr", "de", "us"], 10_000)
    >>> y = rng.uniform(size=10_000) < np.where(country == "fr", p ** 2, p)  # miscalibrated in "fr"
    >>> r = multicalibration_error(y, p, {"country": country})
    >>> r.segment_values[int(np.argmax(r.segment_ecce_sigma))], r.mce_pvalue < 1e-6
    ({'country': 'fr'}, True)
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight)
    n = p.shape[0]
    max_depth = check_int(max_depth, "max_depth", 0, allow_none=True)
    max_values = check_int(max_values_per_segment_feature, "max_values_per_segment_feature", 1)
    min_samples = check_int(min_samples_per_segment, "min_samples_per_segment", 0)
    max_n_segments = check_int(max_n_segments, "max_n_segments", 1, allow_none=True)
    features = _columns(segments, n, numerical)
    features = [(name, *(_numerical if is_numerical else _categorical)(column, name, p, max_values))
                for name, column, is_numerical in features]
    n_features = len(features)
    depth = n_features if max_depth is None else min(max_depth, n_features)
    limit = math.inf if max_n_segments is None else max_n_segments
    cells, digits, cell_counts = _cells(features, n)
    combos, segment_values, n_segments = choose_segments([(f[0], f[4]) for f in features], digits, cell_counts,
                                                         depth, min_samples, limit)
    count, total, var, lo, hi, positive = _segment_sums(y, p, w, cells, digits, cell_counts, combos, n_segments)
    return mce_result(segment_values, count, total, var, lo, hi, positive)


def choose_segments(features, digits, cell_counts, depth, min_samples, limit):
    """MCGrad's segments of the cells: ``(combos, segment_values, n_segments)``.

    ``features`` are ``(name, labels)`` pairs, ``digits`` (cells x features)
    each cell's value number of each feature, ``cell_counts`` its rows.
    Segment 0 is all rows; then each combination of 1 to ``depth`` features,
    and each combination of their values holding at least ``min_samples``
    rows, until there are ``limit`` segments. ``combos`` holds, per feature
    combination, ``(subset, mult, local, first segment, segments)``: a cell's
    key ``digits[:, subset] @ mult`` and its segment ``local[key]`` (-1: none)
    counted from the first.
    """
    sizes = [len(labels) for _, labels in features]
    combos, segment_values = [], [{}]
    n_segments = 1
    for subset in (s for d in range(1, depth + 1) for s in itertools.combinations(range(len(features)), d)):
        if n_segments >= limit:
            break
        size = [sizes[f] for f in subset]
        mult = [math.prod(size[i + 1:]) for i in range(len(subset))]
        keys = digits[:, list(subset)] @ np.array(mult, dtype=np.int64)
        counts = np.bincount(keys, weights=cell_counts, minlength=math.prod(size))
        chosen = np.flatnonzero(counts >= min_samples)[:max(0, min(limit - n_segments, counts.size))]
        if not chosen.size:
            continue
        local = np.full(counts.size, -1, dtype=np.int64)
        local[chosen] = np.arange(chosen.size)
        for k in chosen.tolist():
            place = [(k // m) % z for m, z in zip(mult, size)]
            segment_values.append({features[f][0]: features[f][1][j] for f, j in zip(subset, place)})
        combos.append((subset, mult, local, n_segments, chosen.size))
        n_segments += chosen.size
    return combos, segment_values, n_segments


def mce_result(segment_values, count, total, var, lo, hi, positive):
    """The :class:`MulticalibrationResult` of the segments' rows ``count``, weights ``total``, variance sums ``var``
    (of :math:`w^2 p (1 - p)`), least and greatest running sums ``lo <= 0 <= hi``, and the weight of the positives
    ``positive`` (all rescaled alike)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(total > 0, (hi - lo) / np.where(total > 0, total, 1.0), 0.0)
        std = np.where(total > 0, np.sqrt(var) / np.where(total > 0, total, 1.0), 0.0)
    sigma = _sigma(value, std)
    pvalues = _k.kuiper_sf_many(sigma)

    rate = positive / total[0] if total[0] > 0 else math.nan
    prevalence = min(rate, 1 - rate)
    mce_sigma = float(sigma.max())
    mce = mce_sigma * float(std[0])
    mde = 5 * float(std[0])

    def relative(x):
        return 100 * x / prevalence if prevalence > 0 else math.inf

    return MulticalibrationResult(
        mce=mce, mce_sigma=mce_sigma, mce_pvalue=float(pvalues.min()), mce_relative=relative(mce), mde=mde,
        mde_relative=relative(mde), global_ecce=float(value[0]), global_ecce_sigma=float(sigma[0]),
        global_ecce_pvalue=float(pvalues[0]), segment_values=segment_values, segment_n=count,
        segment_ecce=value, segment_ecce_sigma=sigma, segment_pvalue=pvalues,
    )


# ---------------------------------------------------------------------------
# the report by segment
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class SegmentReport(Result):
    """One row of calibration diagnostics per group (see :func:`segment_report`); ``to_pandas()`` gives a DataFrame."""

    groups: list[Any]
    n: NDArray[np.int64]
    weight_sum: NDArray[np.float64]
    base_rate: NDArray[np.float64]
    mean_prediction: NDArray[np.float64]
    calibration_ratio: NDArray[np.float64]
    ece: NDArray[np.float64]
    ecce: NDArray[np.float64]
    ecce_sigma: NDArray[np.float64]
    pvalue: NDArray[np.float64]
    brier: NDArray[np.float64]
    log_loss: NDArray[np.float64]
    auc: NDArray[np.float64]

    def to_pandas(self) -> Any:
        """The report as a pandas DataFrame, one row per group (needs pandas)."""
        import pandas as pd

        columns = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "groups"}
        return pd.DataFrame({"group": pd.Series(self.groups, dtype=object), **columns})

    def __str__(self) -> str:
        names = ("n", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce_sigma", "pvalue", "auc")
        head = f"{'group':>16}" + "".join(f"{name[:10]:>11}" for name in names)
        lines = [head]
        for i, g in enumerate(self.groups):
            cells = "".join(f"{int(getattr(self, name)[i]):>11d}" if name == "n" else f"{getattr(self, name)[i]:>11.4g}"
                            for name in names)
            lines.append(f"{str(g)[:16]:>16}{cells}")
        return "\n".join(lines)


def segment_report(y_true: ArrayLike, y_prob: ArrayLike, groups: ArrayLike, *,
                   sample_weight: ArrayLike | None = None, n_bins: int = 10) -> SegmentReport:
    r"""Calibration diagnostics of each group of rows, in one pass: one row per group.

    For the rows of each group (weights :math:`w`, default 1, :math:`W = \sum w`):
    ``n``, ``weight_sum`` :math:`W`, ``base_rate`` :math:`\sum w y / W`,
    ``mean_prediction`` :math:`\sum w p / W`, ``calibration_ratio``
    :math:`\sum w p / \sum w y` (:func:`calibration_ratio`; NaN without a
    positive), ``ece`` (:func:`fastcal.expected_calibration_error` with
    ``n_bins`` uniform bins), ``ecce``, ``ecce_sigma`` and ``pvalue``
    (:func:`ecce`), ``brier`` (:func:`fastcal.brier_score_loss`),
    ``log_loss`` (:func:`fastcal.log_loss`, scikit-learn's clipping) and ``auc``
    (:func:`fastcal.roc_auc_score`, ties counting half; NaN unless both
    classes are present). Each equals the single metric on the group's rows,
    up to the order of the float64 sums.

    One stable sort of the predictions, one counting sort of the groups (the
    rows of each group then follow in order of prediction), one gather, and
    one pass over the groups (:func:`fastcal._multicalibration_kernels.group_report`),
    in tasks of groups cut by the number of groups and rows alone: the same
    at any thread count.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    groups : array-like of shape (n_samples,)
        The group of each row: any hashable values (ints, strings, a pandas
        categorical; NaN and None are one group).
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights.
    n_bins : int, default=10
        Uniform bins of the ECE.

    Returns
    -------
    SegmentReport
        ``groups`` (in the order of :func:`group_codes`) and one array per column.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import segment_report
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.9, 10_000)
    >>> country = rng.choice(["fr", "de"], 10_000)
    >>> y = rng.uniform(size=10_000) < np.where(country == "fr", p ** 2, p)
    >>> r = segment_report(y, p, country)
    >>> r.groups, r.pvalue < 1e-6
    (['de', 'fr'], array([False,  True]))
    """
    y_arr = column_or_1d(y_true, "y_true")
    p = as_float_array(column_or_1d(y_prob, "y_prob"), "y_prob")
    g = column_or_1d(groups, "groups")
    check_consistent_length(y_true=y_arr, y_prob=p, groups=g)
    check_probability_range(p, "y_prob")
    y = check_binary_labels(y_arr, "y_true")
    w = check_sample_weight(sample_weight, p.shape[0])
    n_bins = check_int(n_bins, "n_bins", 1)
    codes, uniques = group_codes(g, "groups")
    k = len(uniques)
    order = argsort(p)
    perm, starts = _k.counting_order(np.take(codes, order), k)
    rows = np.take(order, perm)
    del order, perm
    ps, ys = np.take(p, rows), np.take(y, rows)
    # weights times a power of two (rescale_weights): the same bits at any scale of sample_weight
    ws, exponent = (np.empty(0), 0) if w is None else rescale_weights(np.take(w, rows))
    del rows
    dt = p.dtype.type
    clip_lo = dt(np.finfo(p.dtype).eps)
    out = np.empty((k, _k.G_COLUMNS))
    parallel_for(_k.group_report, k, ps, ys, ws, starts, np.linspace(0.0, 1.0, n_bins + 1), dt(1), clip_lo,
                 dt(1) - clip_lo, out, rows=p.shape[0])
    total = out[:, _k.G_W]
    with np.errstate(divide="ignore", invalid="ignore"):
        ecce_value = (out[:, _k.G_HI] - out[:, _k.G_LO]) / total
        std = np.sqrt(out[:, _k.G_VAR]) / total
        positives = out[:, _k.G_SY]
        both = (out[:, _k.G_WPOS] > 0) & (out[:, _k.G_WNEG] > 0)
        sigma = _sigma(ecce_value, std)
        return SegmentReport(
            groups=uniques, n=out[:, _k.G_N].astype(np.int64), weight_sum=np.ldexp(total, exponent),
            base_rate=positives / total,
            mean_prediction=out[:, _k.G_SP] / total,
            calibration_ratio=np.where(positives > 0, out[:, _k.G_SP] / np.where(positives > 0, positives, 1), np.nan),
            ece=out[:, _k.G_ECE] / total, ecce=ecce_value, ecce_sigma=sigma, pvalue=_k.kuiper_sf_many(sigma),
            brier=out[:, _k.G_BRIER] / total, log_loss=out[:, _k.G_LOG] / total,
            auc=np.where(both, out[:, _k.G_U] / (out[:, _k.G_WPOS] * out[:, _k.G_WNEG]), np.nan),
        )
