"""The multicalibration error: MCGrad's segments, and every segment's ECCE from one pass over score ranges."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _multicalibration_kernels as _k
from .. import _parallel
from .._parallel import run, task_bounds
from .._results import Result
from .._sort import range_map
from ._coding import Sizes, categorical_codes, cell_numbers, cell_type, feature_columns, numerical_codes
from ._ecce import check_inputs, check_int, sigma_of

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from numpy.typing import ArrayLike, NDArray


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


def _row_chunks(n):
    """Bounds of the chunks of rows in input order (:func:`fastcal._parallel.task_bounds`: by the size alone)."""
    return np.array(task_bounds(n), dtype=np.int64)


def _n_ranges(n, width, n_chunks):
    """Score ranges of ``n`` rows: about :attr:`Sizes.RANGE_ROWS` rows each, fewer if ranges x ``width`` (the
    partial results per range) would pass :attr:`Sizes.CHUNK_ENTRIES`, or ranges x ``n_chunks`` (the rows of each
    range in each chunk of rows) :attr:`Sizes.COUNT_ENTRIES`. A function of the size of the problem alone."""
    return max(1, min(n // Sizes.RANGE_ROWS, Sizes.CHUNK_ENTRIES // max(width, 1),
                      Sizes.COUNT_ENTRIES // max(n_chunks, 1)))


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

    1. chunks of rows in input order: each row's score range, kept for
       pass 2 (:func:`fastcal._sort.range_map`, a non-decreasing map cut at
       quantiles of a sample, so every score of a range is below every
       score of the next), the rows of each range and the sums per cell,
       which need no order
       (:func:`fastcal._multicalibration_kernels.range_cell_sums`); a
       segment's count and sums are then those of its cells;
    2. the same chunks: each row's score, cell and label (and weight)
       moved to its range, in row order (``range_scatter``);
    3. the ranges, about :attr:`Sizes.RANGE_ROWS` rows each: each sorted stably
       in the cache (``sort_rows``), then one pass over its rows moves the
       float64 running sum of every segment of each row's cell, through a
       table of the segments of each cell (``range_extremes``); the ranges'
       extremes are merged in range order (``merge_extremes``).

    Combinations of features whose table would pass :attr:`Sizes.TABLE_CELLS`
    entries are split into blocks, one pass 3 each (the first sorts).
    """
    n = p.shape[0]
    m = digits.shape[0]
    weights = np.empty(0) if w is None else w
    columns = [(0, np.zeros(m, dtype=np.int64))]  # segment 0: every cell
    for subset, mult, local, start, _ in combos:
        columns.append((start, local[digits[:, list(subset)] @ np.array(mult, dtype=np.int64)]))
    per_block = max(1, Sizes.TABLE_CELLS // max(m, 1))
    blocks = [columns[b:b + per_block] for b in range(0, len(columns), per_block)]
    ends = [blocks[i + 1][0][0] if i + 1 < len(blocks) else n_segments for i in range(len(blocks))]
    widest = max(end - block[0][0] for block, end in zip(blocks, ends))

    bounds = _row_chunks(n)
    n_chunks = bounds.size - 1
    x0, scale, cell_range = range_map(p, _n_ranges(n, 3 * widest, n_chunks))
    n_ranges = int(cell_range[-1]) + 1
    counts = np.zeros((n_chunks, n_ranges), dtype=np.int64)
    parts = np.zeros((3, n_chunks, m))
    ranges = np.empty(n, dtype=np.uint16 if n_ranges <= 1 << 16 else np.int64)
    _run_chunks(_k.range_cell_sums, n, (cells, p, y, weights, x0, scale, cell_range, bounds, ranges, counts, *parts),
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
    # unsigned: indices that cannot be negative compile without a wrap-around (the scan: a quarter faster)
    xs, qs = np.empty(n), np.empty(n, dtype=np.uint32 if cell_type(m) == np.int32 else np.uint64)
    ws = np.empty(0) if w is None else np.empty(n)
    _run_chunks(_k.range_scatter, n, (cells, p, y, weights, ranges, bounds, offsets, xs, qs, ws), n_chunks)
    del offsets, ranges
    lo, hi = np.zeros(n_segments), np.zeros(n_segments)
    for i, (block, last) in enumerate(zip(blocks, ends)):
        first = block[0][0]
        table = np.empty((m, len(block)), dtype=np.uint32)
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

        \mathrm{mce\sigma_of} = \max_s z_s,\quad \mathrm{mce} = \mathrm{mce\sigma_of}\,\sigma_0,\quad
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
    y, p, w = check_inputs(y_true, y_prob, sample_weight)
    n = p.shape[0]
    max_depth = check_int(max_depth, "max_depth", 0, allow_none=True)
    max_values = check_int(max_values_per_segment_feature, "max_values_per_segment_feature", 1)
    min_samples = check_int(min_samples_per_segment, "min_samples_per_segment", 0)
    max_n_segments = check_int(max_n_segments, "max_n_segments", 1, allow_none=True)
    features = feature_columns(segments, n, numerical)
    features = [(name, *(numerical_codes if is_numerical else categorical_codes)(column, name, p, max_values))
                for name, column, is_numerical in features]
    n_features = len(features)
    depth = n_features if max_depth is None else min(max_depth, n_features)
    limit = math.inf if max_n_segments is None else max_n_segments
    cells, digits, cell_counts = cell_numbers(features, n)
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
    sigma = sigma_of(value, std)
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
