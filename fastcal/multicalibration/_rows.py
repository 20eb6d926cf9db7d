r"""ECCE, calibration ratio, report by segment and multicalibration error over a :class:`~fastcal._engine.Rows`.

Chunks are ``(y_prob, y_true, w)`` (``w`` None in every chunk when
``weighted`` is False), and ``(y_prob, y_true, w, groups)`` for
:func:`segment_report` (or ``(y_prob, y_true, w, *group columns)``: each
row's group the tuple of its values, numbered by :func:`number_groups`). One :meth:`Rows.convert` validates every chunk with
the rules of :mod:`fastcal.multicalibration` (probabilities in [0, 1], labels
0 and 1, finite non-negative weights with a positive sum, equal lengths;
messages naming ``y_prob``, ``y_true``, ``sample_weight``, ``groups``) and
returns its facts (rows, weight sum, largest weight, a strided sample of the
probabilities). Weights are rescaled by the one power of two of the largest
weight of all chunks (:func:`fastcal._validation.rescale_weights`), as in
memory, so results do not change when every weight is scaled by a constant.

ECCE
----
:func:`ecce` needs the cumulative sums :math:`D_k = \sum_{i \le k} w_i (y_i -
p_i) / W` along the rows sorted by probability, one step per group of equal
probabilities. The rows are range-partitioned by probability with the
isotonic driver's partition step (a strided sample per chunk,
:func:`fastcal._partition.summarize_chunk`; bounds at its quantiles,
:func:`fastcal._partition.choose_bounds`; :meth:`Rows.partition`), which never
splits a group of equal probabilities (a row goes to the range of its
value). Each partition sorts its rows and returns the sum of its terms
:math:`S_j`, the least and greatest running sums after each of its tie
groups, counted from 0 at its start (:math:`m_j \le 0 \le M_j`), its weight
and its variance sum :math:`\sum w^2 p (1 - p)`. Merged in score order with
the prefix offsets :math:`O_j = \sum_{l < j} S_l`:
:math:`\max D = \max_j (O_j + M_j) / W`, :math:`\min D = \min_j (O_j + m_j) / W`.

Exactness: the tie groups are the in-memory ones and every running sum is a
float64 sum of the same terms, added in another order (a partition's offset
then its own terms), so the ECCE, its sigma and p-value equal the in-memory
ones to the rounding of those sums: about ``n`` eps of :math:`\sum |w (y -
p)|` relative to :math:`W \cdot \mathrm{ECCE}` (1e-12 relative up to 1e6
rows of untied, calibrated predictions, better otherwise).

Calibration ratio
-----------------
:func:`calibration_ratio` is one reduction: per chunk :math:`\sum w y` and
:math:`\sum w p` (or :math:`\sum w (1 - y) p`), added in chunk order.
Exactness: to the rounding of the float64 sums (a few ``n`` eps relative).

Report by segment
-----------------
:func:`segment_report` first numbers the groups as
:func:`fastcal._coding.group_codes` numbers the whole column: each
chunk returns its distinct values (an array of the column's dtype, in order
of first appearance) and their rows; ``group_codes`` of the concatenation
of those arrays, in chunk order, orders them as it orders the whole column
(sorted numbers and strings; objects in order of first appearance; the
missing value last). A second conversion gives every row its group's number
(the chunk's distinct values looked up in that order by ``group_codes``
again), the rows are partitioned by number (ranges of whole groups, cut at
the cumulative row counts; :meth:`Rows.partition` on that column), and each
partition runs the in-memory :func:`fastcal.segment_report` on its rows,
with the weights rescaled by the global power of two. The per-partition
tables, in partition order, are the table of all groups in the in-memory
order.

Several group columns: each chunk returns, per column, its distinct values
(numbered by ``group_codes``) and the distinct tuples of its rows' numbers
with their rows; each column is numbered as one column is, the chunks'
tuples are renumbered by those numbers and sorted (the order of
:func:`fastcal._coding.group_sizes_codes` on the whole columns:
the first column's order, then the second's), and :class:`Crossed` looks up
each row's tuple in the second conversion.

Exactness: every column of a group is computed from that group's rows
alone, by the in-memory kernel, from the same rescaled weights (a power of
two apart, an exact scaling), and the in-memory report does not depend on
the order of the rows: every column is the in-memory one, bit for bit (a
group of zero weight included: NaN but ``n`` and ``weight_sum``).

Multicalibration error
----------------------
:func:`multicalibration_error` takes chunks ``(y_prob, y_true, w,
*features)``. The segments need global statistics, all small reductions:
each numerical feature's distinct values (up to the limit) and range, then,
for a binned one, the quantile edges of all its values, exactly
(:func:`fastcal._coding.quantile_edges` of order statistics from
:func:`fastcal._binning.select_order_statistics`); each feature's distinct
values with their rows and first row along the rows sorted stably by
probability (chunk order gives the global row numbers), which gives the
in-memory value order and collapsed categories; each chunk's cells (distinct
rows of value numbers) with their rows, weight, variance and positives.
MCGrad's segments are chosen from the merged cells as in memory. Then the
rows are range-partitioned by probability (:func:`score_ranges`) and each
range returns, per segment, the sum of its terms and the extremes of its
running sums after each tie group of the segment's rows (from 0 at the
range's start): a segments x ranges table, merged per segment by prefix
offsets.

Exactness: value orders, labels, bins, segments and counts are the in-memory
ones exactly; weights, variances and running sums are float64 sums of the
same terms in another order (1e-12 relative to the ECCE at the sizes tested,
as for :func:`ecce`).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _partition
from .._validation import (
    all_zero_weights,
    as_float_array,
    check_binary_labels,
    check_finite,
    check_probability_range,
    column_or_1d,
    rescale_weights,
    weight_exponent,
)
from .._coding import (
    GROUP_PARTITION_ROWS,
    appearance_rank,
    chunk_numbers,
    collapse_categories,
    distinct_values,
    folded_values,
    group_bounds,
    group_codes,
    labels_by_appearance,
    number_groups,
    numbered,
    quantile_edges,
)
from .._engine import Reduction, reduce
from ..isotonic import rows as isotonic_rows
from ._ecce import (
    ENTROPY_EDGES,
    check_int,
    ecce_result,
    entropy_from_table,
    proportional_edges,
    proportional_from_table,
    ratio_from_sums,
    ratio_sums,
)
from ._mce import choose_segments, mce_result

__all__ = ["REDUCTIONS", "calibration_ratio", "ecce", "multicalibration_error", "normalized_entropy", "proportional_ece",
           "segment_report"]

#: Score ranges of :func:`ecce` (its default): one per this many rows, at least ``rows.parallelism``.
PARTITION_ROWS = isotonic_rows.PARTITION_ROWS


# ---------------------------------------------------------------------------
# Validation: one conversion, the in-memory rules and messages.
# ---------------------------------------------------------------------------


def _convert(chunk, dtype, extra_names):
    """A validated chunk ``(p, labels, w, *extra)`` and its facts ``(n, weight sum, largest weight, summary)``.

    ``p`` of ``dtype``, labels 0/1 (:func:`fastcal._validation.check_binary_labels`), ``w`` finite and
    non-negative (or None); the extra columns 1-D of the same length, named ``extra_names`` in errors and
    returned as NumPy arrays. ``summary`` is the :class:`fastcal._partition.ChunkSummary` of the probabilities
    (their sample picks the range partition's bounds).
    """
    p, y, w, *extra = chunk
    y_arr = column_or_1d(y, "y_true", min_size=0)
    p_arr = column_or_1d(p, "y_prob", min_size=0)
    others = [column_or_1d(e, name, allow_column=False, min_size=0) for e, name in zip(extra, extra_names)]
    lengths = {"y_true": y_arr.shape[0], "y_prob": p_arr.shape[0], **{
        name: e.shape[0] for e, name in zip(others, extra_names)}}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"Inconsistent numbers of samples: {detail}.")
    pv = as_float_array(p_arr, "y_prob", dtype=dtype)
    if pv.shape[0]:
        check_probability_range(pv, "y_prob")
    labels = check_binary_labels(y_arr, "y_true")
    n = pv.shape[0]
    if w is not None:
        if np.ndim(w) == 0:
            w = np.full(n, float(w))
        w = as_float_array(column_or_1d(w, "sample_weight", allow_column=False, min_size=0), "sample_weight")
        if w.shape[0] != n:
            raise ValueError(f"sample_weight has {w.shape[0]} elements, expected {n} (one per sample).")
        check_finite(w, "sample_weight")
        if n and w.min() < 0:
            raise ValueError("sample_weight must be non-negative.")
    summary = _partition.summarize_chunk(pv, labels, w, binary=False)
    return (pv, labels, w, *others), (n, summary.weight_sum, summary.weight_max, summary)


class _Data:
    """Validated rows (:attr:`rows`, released by :meth:`release`) and what is known of all of them."""

    def __init__(self, rows, x_dtype, weighted, convert=_convert, *args):
        self.dtype = _partition.fit_dtype(x_dtype)
        self.weighted = weighted
        self.rows, facts = rows.convert(convert, self.dtype, *(args or ((),)))
        try:
            self.n = sum(f[0] for f in facts)
            if self.n == 0:
                column_or_1d(np.empty(0), "y_true")  # the in-memory error
            if weighted and not sum(f[1] for f in facts) > 0:
                raise all_zero_weights()
            self.exponent = weight_exponent(None, max(f[2] for f in facts)) if weighted else 0
            self.summaries = [f[3] for f in facts]
        except BaseException:
            self.rows.release()
            raise

    def release(self):
        self.rows.release()


def _float64_terms(p, labels, w, exponent):
    """``(w64, p64, w64 (y - p))`` of validated rows, ``w64`` the rescaled weights in float64 (ones without)."""
    p64 = p.astype(np.float64)
    w64 = np.ones_like(p64) if w is None else rescale_weights(w, exponent)[0].astype(np.float64)
    return w64, p64, w64 * (np.not_equal(labels, 0) - p64)


# ---------------------------------------------------------------------------
# ECCE: range partition by probability, per-range running extremes, merged by prefix offsets.
# ---------------------------------------------------------------------------


def _ecce_part(chunk, exponent):
    """``(S, m, M, W, V)`` of one probability range: the sum of ``w (y - p)``, the least (<= 0) and greatest
    (>= 0) running sum after each group of equal probabilities, counted from 0 at the range's start, the weight
    and ``sum w^2 p (1 - p)`` (float64, weights rescaled by ``2**-exponent``)."""
    p, labels, w = chunk[:3]
    if not p.shape[0]:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    order = np.argsort(p, kind="stable")
    ps = p[order]
    w64, p64, terms = _float64_terms(ps, labels[order], None if w is None else w[order], exponent)
    running = np.cumsum(terms)  # sequential float64 sums, as in memory
    ends = np.flatnonzero(np.concatenate((ps[1:] != ps[:-1], [True])))  # the last row of each tie group
    at_ends = running[ends]
    return (float(running[-1]), min(0.0, float(at_ends.min())), max(0.0, float(at_ends.max())), float(w64.sum()),
            float(np.dot(w64 * w64, p64 * (1.0 - p64))))


def merge_ranges(parts):
    """``(lo, hi, S)``: the least and greatest running sum of all ranges ``(S_j, m_j, M_j, ...)`` taken in score
    order, each range's extremes shifted by the sum of the ranges before it (its prefix offset), and the total."""
    lo, hi, before = 0.0, 0.0, 0.0
    for s, m, big, *_ in parts:
        hi = max(hi, before + big)
        lo = min(lo, before + m)
        before += s
    return lo, hi, before


def score_ranges(rows, data, n_partitions, parallelism):
    """Validated ``rows`` (those of ``data``, or converted from them chunk for chunk) range-partitioned by
    probability (column 0): the isotonic driver's step (bounds at quantiles of the chunks' samples,
    :func:`fastcal._partition.choose_bounds`); equal probabilities always share a range."""
    if n_partitions is None:
        n_partitions = min(len(data.summaries), max(int(parallelism), -(-data.n // PARTITION_ROWS)))
    bounds = _partition.choose_bounds(data.summaries, int(n_partitions), data.dtype)
    return rows.partition(bounds)


def ecce(rows, *, x_dtype, weighted, n_partitions=None):
    """:func:`fastcal.ecce` of rows ``(y_prob, y_true, w)``: see the module docstring.

    Parameters
    ----------
    rows : Rows
        Chunks ``(y_prob, y_true, w)``, raw (validated here).
    x_dtype : dtype
        The declared dtype of ``y_prob`` (float32 stays float32, anything else is float64).
    weighted : bool
        Whether the chunks carry weights.
    n_partitions : int, optional
        Probability ranges (default: one per :data:`PARTITION_ROWS` rows, at
        least ``rows.parallelism``, at most one per chunk); the result does
        not depend on it beyond the rounding of its sums.

    Returns
    -------
    fastcal.multicalibration.ECCEResult
    """
    from .._params import Integer, check

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    data = _Data(rows, x_dtype, weighted)
    try:
        parts = score_ranges(data.rows, data, n_partitions, rows.parallelism)
        try:
            sums = parts.map(_ecce_part, data.exponent)
        finally:
            parts.release()
    finally:
        data.release()
    lo, hi, _ = merge_ranges(sums)
    total = float(sum(s[3] for s in sums))
    value = (hi - lo) / total
    std = math.sqrt(float(sum(s[4] for s in sums))) / total
    return ecce_result(value, std)


# ---------------------------------------------------------------------------
# Calibration ratio: one reduction.
# ---------------------------------------------------------------------------


def _ratio_sums(chunk, exponent, adjust_unjoined):
    """:func:`fastcal.multicalibration.ratio_sums` of one chunk."""
    p, labels, w = chunk[:3]
    return ratio_sums(p, labels, None if w is None else rescale_weights(w, exponent)[0], adjust_unjoined)


def _add_pairs(parts):
    """Pairs of float64 sums, added in chunk order."""
    return float(sum(s[0] for s in parts)), float(sum(s[1] for s in parts))


def _table(chunk, exponent, edges, flags):
    """The bin table (:func:`fastcal._binning.bin_stats`) of one chunk, its weights rescaled by ``2**-exponent``."""
    from .. import _binning

    p, labels, w = chunk[:3]
    return _binning.bin_stats(p, labels, None if w is None else rescale_weights(w, exponent)[0], edges, **flags)


def _merge_tables(tables):
    from .. import _binning

    return _binning.merge_tables(tables)


#: The single-pass metrics of validated rows ``(y_prob, y_true, w)``, one :class:`~fastcal._engine.Reduction` each:
#: ``summarise(chunk, exponent, *args)``, merged in chunk order, finished by the in-memory function's own last step.
#: A new one is a row here, a driver below, and a public function per backend.
REDUCTIONS = {
    "calibration_ratio": Reduction(_ratio_sums, _add_pairs, ratio_from_sums),
    "normalized_entropy": Reduction(_table, _merge_tables, entropy_from_table),
    "proportional_ece": Reduction(_table, _merge_tables, proportional_from_table),
}


def _single_pass(name, rows, x_dtype, weighted, *args):
    """``REDUCTIONS[name]`` over ``rows`` validated as by :mod:`fastcal.multicalibration`."""
    data = _Data(rows, x_dtype, weighted)
    try:
        return reduce(data.rows, REDUCTIONS[name], data.exponent, *args)
    finally:
        data.release()


def calibration_ratio(rows, *, x_dtype, weighted, adjust_unjoined=False):
    """:func:`fastcal.calibration_ratio` of rows ``(y_prob, y_true, w)``: see the module docstring."""
    return _single_pass("calibration_ratio", rows, x_dtype, weighted, bool(adjust_unjoined))


def normalized_entropy(rows, *, x_dtype, weighted):
    """:func:`fastcal.normalized_entropy` of rows ``(y_prob, y_true, w)``: the one-bin table with the log loss."""
    return _single_pass("normalized_entropy", rows, x_dtype, weighted, ENTROPY_EDGES, {"logloss": True})


def proportional_ece(rows, *, x_dtype, weighted, n_bins=40):
    """:func:`fastcal.proportional_ece` of rows ``(y_prob, y_true, w)``: the bin table of its edges."""
    return _single_pass("proportional_ece", rows, x_dtype, weighted, proportional_edges(n_bins), {})


# ---------------------------------------------------------------------------
# Report by segment: groups numbered as in memory, partitions of whole groups, the in-memory report per partition.
# ---------------------------------------------------------------------------


def _convert_groups(chunk, dtype, distinct):
    """:func:`_convert` of a chunk ``(p, y, w, groups)`` (or ``(p, y, w, *group columns)``), the groups replaced
    by their global numbers (int64)."""
    m = len(chunk) - 3
    names = ("groups",) if m == 1 else tuple(f"groups (column {j})" for j in range(m))
    (p, labels, w, *groups), facts = _convert(chunk, dtype, names)
    return (p, labels, w, chunk_numbers(distinct, groups)), facts


def _report_part(chunk, exponent, n_bins):
    """The in-memory :func:`fastcal.segment_report` of one partition of whole groups (None if it has no rows):
    its groups' numbers, and its columns with ``weight_sum`` in units of ``2**exponent``."""
    from ._report import segment_report

    p, labels, w, codes = chunk
    if not p.shape[0]:
        return None
    w = None if w is None else rescale_weights(w, exponent)[0]
    dummy = w is not None and not w.sum(dtype=np.float64) > 0
    if dummy:  # groups of zero weight only: one more group (number -1, first) of one row makes the weights valid
        p, labels, codes = np.append(p[:1], p), np.append(labels[:1], labels), np.append(np.int64(-1), codes)
        w = np.append(np.ones(1, dtype=w.dtype), w)
    report = segment_report(labels, p, codes, sample_weight=w, n_bins=n_bins)
    cut = 1 if dummy else 0
    columns = {name: np.asarray(getattr(report, name))[cut:] for name in _REPORT_COLUMNS}
    return np.asarray(report.groups[cut:], dtype=np.int64), columns


_REPORT_COLUMNS = ("n", "weight_sum", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce",
                   "ecce_sigma", "pvalue", "brier", "log_loss", "auc")


def segment_report(rows, *, x_dtype, weighted, n_bins=10, n_partitions=None):
    """:func:`fastcal.segment_report` of rows ``(y_prob, y_true, w, groups)``: see the module docstring.

    Parameters
    ----------
    rows : Rows
        Chunks ``(y_prob, y_true, w, groups)``, raw (validated here); ``groups`` any 1-D values.
    x_dtype : dtype
        The declared dtype of ``y_prob``.
    weighted : bool
        Whether the chunks carry weights.
    n_bins : int, default=10
        Uniform bins of the ECE.
    n_partitions : int, optional
        Partitions of whole groups (default: one per :data:`GROUP_PARTITION_ROWS`
        rows, at least ``rows.parallelism``); the result does not depend on it.

    Returns
    -------
    fastcal.multicalibration.SegmentReport
    """
    from .._params import Integer, check
    from ._report import SegmentReport

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    n_bins = check_int(n_bins, "n_bins", 1)  # the in-memory check and message
    distinct_all, uniques, counts = number_groups(rows)
    data = _Data(rows, x_dtype, weighted, _convert_groups, distinct_all)
    try:
        if n_partitions is None:
            n_partitions = max(int(rows.parallelism), -(-data.n // GROUP_PARTITION_ROWS))
        parts = data.rows.partition(group_bounds(counts, int(n_partitions)), key=3)
    finally:
        data.release()
    try:
        reports = [r for r in parts.map(_report_part, data.exponent, n_bins) if r is not None]
    finally:
        parts.release()
    numbers = np.concatenate([r[0] for r in reports])
    if not np.array_equal(numbers, np.arange(len(uniques))):
        raise RuntimeError("internal: the partitions of whole groups lost or repeated a group.")
    columns = {name: np.concatenate([r[1][name] for r in reports]) for name in _REPORT_COLUMNS}
    columns["weight_sum"] = np.ldexp(columns["weight_sum"], data.exponent)
    return SegmentReport(groups=list(uniques), **columns)


# ---------------------------------------------------------------------------
# Multicalibration error: global feature statistics, cells, per-segment running extremes over score ranges.
# ---------------------------------------------------------------------------



def _convert_features(chunk, dtype, names, order):
    """:func:`_convert` of a chunk ``(p, y, w, *features)``, the features put in the ``order`` given."""
    new, facts = _convert(chunk, dtype, names)
    return (*new[:3], *(new[3 + i] for i in order)), facts


def _feature_values(chunk, f, numerical, name, edges):
    """Feature ``f``'s values in a validated chunk (column ``3 + f``): as they are (categorical), or float64
    (numerical), binned at ``edges`` when given (bin numbers as floats, NaN kept) as in memory."""
    values = chunk[3 + f]
    if not numerical:
        return values
    x = np.ascontiguousarray(as_float_array(values, f"segments[{name!r}]"), dtype=np.float64)
    if edges is None:
        return x
    missing = np.isnan(x)
    bins = np.searchsorted(edges, x, side="left") - 1
    bins[x == edges[0]] = 0
    return np.where(missing, np.nan, bins.astype(np.float64))


def _numerical_facts(chunk, f, name, limit):
    """``(distinct values up to limit + 1, or None past it; rows not NaN; least; greatest)`` of a numerical
    feature in a chunk."""
    x = _feature_values(chunk, f, True, name, None)
    x = x[~np.isnan(x)]
    if not x.shape[0]:
        return np.empty(0), 0, math.inf, -math.inf
    distinct = np.unique(x)
    return (distinct if distinct.shape[0] <= limit else None), x.shape[0], float(x.min()), float(x.max())


def _numerical_counts(chunk, f, name, lo, scale):
    from .. import _binning

    x = _feature_values(chunk, f, True, name, None)
    return _binning.bucket_histograms(x[~np.isnan(x)], lo, scale).sum(axis=0)


def _numerical_gather(chunk, f, name, lo, scale, marked):
    from .. import _binning

    x = _feature_values(chunk, f, True, name, None)
    return _binning.gather_buckets(x[~np.isnan(x)], lo, scale, marked)[0]


def _value_stats(chunk, specs):
    """Per feature ``(values, counts, first p, first row)``: its distinct values in the chunk (an array of the
    feature's dtype, in order of first appearance), their rows, and each one's first row along the chunk's rows
    sorted stably by probability (its probability in float64 and its row in the chunk)."""

    p = chunk[0]
    order = np.argsort(p, kind="stable")
    out = []
    for f, (name, numerical, edges) in enumerate(specs):
        values = _feature_values(chunk, f, numerical, name, edges)
        codes, uniques = group_codes(values, f"segments[{name!r}]")
        if not codes.shape[0]:
            out.append((values[:0], np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)))
            continue
        _, first = np.unique(codes, return_index=True)
        seen = np.argsort(first, kind="stable")  # codes in order of first appearance
        _, along = np.unique(codes[order], return_index=True)
        rows = order[along]
        out.append((values[first[seen]], np.bincount(codes, minlength=len(uniques))[seen],
                    p[rows].astype(np.float64)[seen], rows[seen]))
    return out


def _digits_and_cells(chunk, specs, distinct, tables, exponent):
    """The chunk ``(p, labels, w, digits...)``: each feature's value number (int64) by the global ``tables``;
    and its cells: the distinct rows of digits, their rows, ``sum w``, ``sum w^2 p (1 - p)`` and ``sum w y``.

    A cell is numbered by the mixed-radix number of its digits (one ``bincount`` when there are few, under
    4 per row, else ``np.unique``), or by ``np.unique`` of the rows of digits past 2^62 combinations.
    """
    p, labels, w = chunk[:3]
    n = p.shape[0]
    digits = []
    for f, (name, numerical, edges) in enumerate(specs):
        values = _feature_values(chunk, f, numerical, name, edges)
        digits.append(tables[f][numbered(distinct[f], values)[0]] if n else np.zeros(0, dtype=np.int64))
    w64, p64, _ = _float64_terms(p, labels, w, exponent)
    sizes = [int(t.max()) + 1 if t.shape[0] else 1 for t in tables]
    span = math.prod(sizes)
    if not n:
        empty = np.zeros((0, len(specs)), dtype=np.int64)
        return (p, labels, w, *digits), (empty, np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0))
    if span < 1 << 62:
        key = np.zeros(n, dtype=np.int64)
        for d, size in zip(digits, sizes):
            key *= size
            key += d
        if span <= max(4 * n, 1 << 16):
            counts = np.bincount(key, minlength=span)
            present = np.flatnonzero(counts)
            slot = np.zeros(span, dtype=np.int64)
            slot[present] = np.arange(present.shape[0])
            inverse, counts, keys = slot[key], counts[present], present
        else:
            keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
        cells = np.empty((keys.shape[0], len(specs)), dtype=np.int64)
        rest = keys.copy()
        for f in range(len(specs) - 1, -1, -1):
            rest, cells[:, f] = np.divmod(rest, sizes[f])
    else:
        cells, inverse, counts = np.unique(np.stack(digits, axis=1), axis=0, return_inverse=True, return_counts=True)
    inverse = inverse.reshape(-1)
    m = cells.shape[0]
    sums = (np.bincount(inverse, weights=w64, minlength=m),
            np.bincount(inverse, weights=w64 * w64 * p64 * (1.0 - p64), minlength=m),
            np.bincount(inverse, weights=w64 * np.not_equal(labels, 0), minlength=m))
    return (p, labels, w, *digits), (cells, counts, *sums)


def _segment_extremes(chunk, columns, n_segments, exponent):
    """``(S, m, M)`` per segment of one probability range: the sum of ``w (y - p)`` of the segment's rows, the
    least (<= 0) and greatest (>= 0) running sum after each of its groups of equal probabilities, from 0 at the
    range's start. ``columns``: ``(first segment, features, radix multipliers, local numbers)`` per combination
    of features (segment 0, all rows: no features)."""
    p, labels, w = chunk[:3]
    end, lo, hi = np.zeros(n_segments), np.zeros(n_segments), np.zeros(n_segments)
    if not p.shape[0]:
        return end, lo, hi
    order = np.argsort(p, kind="stable")
    ps = p[order]
    _, _, terms = _float64_terms(ps, labels[order], None if w is None else w[order], exponent)
    digits = np.stack([chunk[3 + f][order] for f in range(len(chunk) - 3)], axis=1) if len(chunk) > 3 else None
    for start, subset, mult, local in columns:
        if subset:
            seg = local[digits[:, list(subset)] @ np.asarray(mult, dtype=np.int64)]
            idx = np.flatnonzero(seg >= 0)
            seg = seg[idx]
            small = seg.astype(np.int16) if n_segments < 1 << 15 else seg  # a radix sort for 16-bit keys
            by = np.argsort(small, kind="stable")  # by segment, in probability order within each
            idx, seg = idx[by], seg[by]
        else:
            idx, seg = np.arange(ps.shape[0]), np.zeros(ps.shape[0], dtype=np.int64)
        if not idx.shape[0]:
            continue
        pp, tt = ps[idx], terms[idx]
        cut = np.flatnonzero(seg[1:] != seg[:-1]) + 1
        bounds = np.concatenate(([0], cut, [idx.shape[0]]))
        is_end = np.concatenate(((pp[1:] != pp[:-1]) | (seg[1:] != seg[:-1]), [True]))
        for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            run = np.cumsum(tt[a:b])  # sequential, as the in-memory running sum
            at = run[is_end[a:b]]
            s = start + int(seg[a])
            end[s], lo[s], hi[s] = run[-1], min(0.0, float(at.min())), max(0.0, float(at.max()))
    return end, lo, hi


def _quantile_edges(feats, f, name, facts, max_values):
    """The in-memory bin edges of numerical feature ``f``: :func:`fastcal._coding.quantile_edges` of its
    values other than NaN, exactly (their order statistics from two passes of bucket counts and gathered values);
    its ``ValueError`` if the feature holds an infinity."""
    from .. import _binning

    count_all = sum(c for _, c, _, _ in facts)
    lo = min(c[2] for c in facts)
    hi = max(c[3] for c in facts)

    def select(ranks):
        def count(scale):
            return sum(feats.map(_numerical_counts, f, name, lo, scale))

        def gather(scale, marked):
            pieces = feats.map(_numerical_gather, f, name, lo, scale, marked)
            return _binning.gather_buckets(np.concatenate(pieces), lo, scale, marked)

        return _binning.select_order_statistics(ranks, lo, hi, np.dtype(np.float64), count, gather)

    return quantile_edges(count_all, lo, hi, max_values, name, select)


def _global_values(stats_per_chunk, offsets, f):
    """Feature ``f``'s distinct values in global order of first appearance, their numbering by ``group_codes``,
    and per number: rows, first probability, first row (global)."""
    pieces = [s[f] for s in stats_per_chunk]
    distinct = np.concatenate([v for v, *_ in pieces])
    distinct, _ = distinct_values(distinct)
    _, uniques = numbered(distinct, distinct)
    k = len(uniques)
    counts = np.zeros(k, dtype=np.int64)
    first_p = np.full(k, np.inf)
    first_row = np.full(k, np.iinfo(np.int64).max, dtype=np.int64)
    for (values, c, fp, fr), offset in zip(pieces, offsets):
        if not values.shape[0]:
            continue
        num = numbered(distinct, values)[0]
        counts[num] += c
        rows = fr + offset
        better = (fp < first_p[num]) | ((fp == first_p[num]) & (rows < first_row[num]))
        first_p[num[better]] = fp[better]
        first_row[num[better]] = rows[better]
    return distinct, uniques, counts, first_p, first_row


def _value_table(uniques, counts, first_p, first_row, numerical, binned, max_values, kind):
    """``(table, labels, folded)``: each value number's digit and the digits' labels, as the in-memory
    ``_categorical`` and ``_numerical`` number a feature's values (kept values in order of first appearance along
    the sorted probabilities; for a categorical feature past ``max_values`` values, the most frequent
    ``max_values - 1`` kept and the others one value: :func:`~fastcal.multicalibration.folded_values`)."""
    if numerical:
        labels = [float("nan") if u is None else int(u) if binned else u for u in uniques]
        return (*labels_by_appearance(labels, appearance_rank(first_p, first_row)), None)
    group, labels, rank = collapse_categories(uniques, counts, first_p, first_row, max_values, kind in "biuf")
    return (*labels_by_appearance(labels, rank, group), folded_values(len(uniques), max_values, labels))


def multicalibration_error(rows, *, x_dtype, weighted, names, numerical=(), max_depth=3,
                           max_values_per_segment_feature=3, min_samples_per_segment=10, max_n_segments=1000,
                           n_partitions=None):
    """:func:`fastcal.multicalibration_error` of rows ``(y_prob, y_true, w, *features)``.

    ``names`` are the features' names, one per extra column, in the order of the chunks' columns; the other
    parameters are the in-memory function's.

    Passes: the conversion (validation); the numerical features' distinct values (up to the limit) and
    ranges; for each binned one, the quantile edges of all its values, exactly (two passes of
    :func:`fastcal._binning.select_order_statistics`, then :func:`fastcal._coding.quantile_edges`);
    each feature's distinct values with their rows and first row along the sorted probabilities (the value
    order of the in-memory function: first appearance, ties of probability by row number); a conversion giving
    each row its digits and each chunk its cells (rows, weight, variance, positives); then the range partition
    by probability, and per range and segment the sum and the running extremes after each tie group, merged
    per segment by prefix offsets.

    Exactness: the features' value orders, the collapsed categories, the quantile bins, the segments and
    their ``n`` are the in-memory ones, exactly; ECCE, sigma and p-values to the rounding of float64 sums
    in another order (1e-12 relative at the sizes tested).
    """

    names = [str(n) if not isinstance(n, str) else n for n in names]
    max_depth = check_int(max_depth, "max_depth", 0, allow_none=True)
    max_values = check_int(max_values_per_segment_feature, "max_values_per_segment_feature", 1)
    min_samples = check_int(min_samples_per_segment, "min_samples_per_segment", 0)
    max_n_segments = check_int(max_n_segments, "max_n_segments", 1, allow_none=True)
    numerical = [numerical] if isinstance(numerical, str) else list(numerical)
    unknown = [name for name in numerical if name not in names]
    if unknown:
        raise ValueError(f"numerical names {unknown} that are not features of segments ({names}).")
    # MCGrad's order: categorical features, then the numerical ones in the order of `numerical`
    order = [i for i, name in enumerate(names) if name not in numerical] + [names.index(n) for n in numerical]

    data = _Data(rows, x_dtype, weighted, _convert_features, tuple(f"segments[{n!r}]" for n in names), order)
    conv = None
    try:
        feats = data.rows  # (p, y, w, features in MCGrad's order)
        specs = [(names[i], names[i] in numerical, None) for i in order]
        offsets = np.concatenate(([0], np.cumsum([s.n for s in data.summaries])))[:-1].tolist()
        for f, (name, is_num, _) in enumerate(specs):
            if not is_num:
                continue
            facts = feats.map(_numerical_facts, f, name, max_values)
            many = any(d is None for d, *_ in facts)
            if not many:
                union = np.unique(np.concatenate([d for d, *_ in facts]))
                many = union.shape[0] > max_values
            if many:
                specs[f] = (name, True, _quantile_edges(feats, f, name, facts, max_values))
        stats = feats.map(_value_stats, specs)
        distinct, tables, labels, folded = [], [], [], {}
        for f, (name, is_num, edges) in enumerate(specs):
            values, uniques, counts, first_p, first_row = _global_values(stats, offsets, f)
            table, value_labels, fold = _value_table(uniques, counts, first_p, first_row, is_num, edges is not None,
                                                     max_values, values.dtype.kind)
            if fold is not None:
                folded[name] = fold
            distinct.append(values)
            tables.append(table)
            labels.append(value_labels)
        conv, cells = feats.convert(_digits_and_cells, specs, distinct, tables, data.exponent)
    except BaseException:
        if conv is not None:
            conv.release()
        raise
    finally:
        data.release()
    try:
        cell_digits = np.concatenate([c[0] for c in cells]) if cells else np.zeros((0, len(specs)), np.int64)
        if specs:
            digits, inverse = np.unique(cell_digits, axis=0, return_inverse=True)
        else:  # no features: one cell
            digits, inverse = cell_digits[:1], np.zeros(cell_digits.shape[0], dtype=np.int64)
        inverse = inverse.reshape(-1)
        m = digits.shape[0]
        cell_counts = np.bincount(inverse, weights=np.concatenate([c[1] for c in cells]), minlength=m)
        cell_sums = [np.zeros(m) for _ in range(3)]
        start = 0
        for c in cells:  # in chunk order
            k = c[0].shape[0]
            for j in range(3):
                np.add.at(cell_sums[j], inverse[start:start + k], c[2 + j])
            start += k
        n_features = len(specs)
        depth = n_features if max_depth is None else min(max_depth, n_features)
        limit = math.inf if max_n_segments is None else max_n_segments
        combos, segment_values, n_segments = choose_segments(
            [(specs[f][0], labels[f]) for f in range(n_features)], digits, cell_counts.astype(np.int64),
            depth, min_samples, limit)
        columns = [(0, (), (), None)] + [(s, subset, mult, local) for subset, mult, local, s, _ in combos]
        count = np.zeros(n_segments, dtype=np.int64)
        total, var = np.zeros(n_segments), np.zeros(n_segments)
        count[0], total[0], var[0] = int(cell_counts.sum()), cell_sums[0].sum(), cell_sums[1].sum()
        for s0, subset, mult, local in columns[1:]:
            col = local[digits[:, list(subset)] @ np.asarray(mult, dtype=np.int64)]
            keep = col >= 0
            size = int(col.max()) + 1 if keep.any() else 0
            at = slice(s0, s0 + size)
            count[at] = np.bincount(col[keep], weights=cell_counts[keep], minlength=size).astype(np.int64)
            total[at] = np.bincount(col[keep], weights=cell_sums[0][keep], minlength=size)
            var[at] = np.bincount(col[keep], weights=cell_sums[1][keep], minlength=size)
        positive = float(cell_sums[2].sum())
        parts = score_ranges(conv, data, n_partitions, rows.parallelism)
        try:
            ranges = parts.map(_segment_extremes, columns, n_segments, data.exponent)
        finally:
            parts.release()
    finally:
        conv.release()
    ends = np.array([r[0] for r in ranges]).reshape(len(ranges), n_segments)
    before = np.cumsum(ends, axis=0) - ends
    lo = np.minimum(0.0, (before + np.array([r[1] for r in ranges]).reshape(ends.shape)).min(axis=0))
    hi = np.maximum(0.0, (before + np.array([r[2] for r in ranges]).reshape(ends.shape)).max(axis=0))
    return mce_result(segment_values, count, total, var, lo, hi, positive, folded)
