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
weight of all chunks (:func:`fastcal._core.validation.rescale_weights`), as in
memory, so results do not change when every weight is scaled by a constant.

ECCE
----
:func:`ecce` needs the cumulative sums :math:`D_k = \sum_{i \le k} w_i (y_i -
p_i) / W` along the rows sorted by probability, one step per group of equal
probabilities. The rows are range-partitioned by probability with the
isotonic driver's partition step (a strided sample per chunk,
:func:`fastcal._engine.partition.summarize_chunk`; bounds at its quantiles,
:func:`fastcal._engine.partition.choose_bounds`; :meth:`Rows.partition`), which never
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

The multicalibration error's driver is :mod:`fastcal.multicalibration._mce_rows`, on this module's
validation (:class:`Data`) and score ranges (:func:`score_ranges`).
"""

from __future__ import annotations

import math

import numpy as np

from .._engine import partition as _partition
from .._core.validation import (
    all_zero_weights,
    as_float_array,
    check_binary_labels,
    check_finite,
    check_probability_range,
    column_or_1d,
    rescale_weights,
    weight_exponent,
)
from .._coding import GROUP_PARTITION_ROWS, chunk_numbers, group_bounds, number_groups
from .._engine import Reduction, partition_count, reduce
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

__all__ = ["METRIC_NAMES", "REDUCTIONS", "Data", "calibration_ratio", "convert_chunk", "ecce", "float64_terms",
           "normalized_entropy", "proportional_ece", "score_ranges", "segment_report"]

#: Score ranges of :func:`ecce` (its default): one per this many rows, at least ``rows.parallelism``.
PARTITION_ROWS = isotonic_rows.PARTITION_ROWS


# ---------------------------------------------------------------------------
# Validation: one conversion, the in-memory rules and messages.
# ---------------------------------------------------------------------------


#: The names of the probabilities and the labels in errors: the diagnostics' (a fit's are "scores" and "y").
METRIC_NAMES = ("y_prob", "y_true")


def convert_chunk(chunk, dtype, extra_names, names=METRIC_NAMES):
    """A validated chunk ``(p, labels, w, *extra)`` and its facts ``(n, weight sum, largest weight, summary)``.

    ``p`` of ``dtype``, labels 0/1 (:func:`fastcal._core.validation.check_binary_labels`), ``w`` finite and
    non-negative (or None); the extra columns 1-D of the same length, named ``extra_names`` in errors and
    returned as NumPy arrays; ``names``: those of ``p`` and the labels. ``summary`` is the
    :class:`fastcal._engine.partition.ChunkSummary` of the probabilities (their sample picks the range partition's
    bounds).
    """
    p, y, w, *extra = chunk
    p_name, y_name = names
    y_arr = column_or_1d(y, y_name, min_size=0)
    p_arr = column_or_1d(p, p_name, min_size=0)
    others = [column_or_1d(e, name, allow_column=False, min_size=0) for e, name in zip(extra, extra_names)]
    lengths = {y_name: y_arr.shape[0], p_name: p_arr.shape[0], **{
        name: e.shape[0] for e, name in zip(others, extra_names)}}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"Inconsistent numbers of samples: {detail}.")
    pv = as_float_array(p_arr, p_name, dtype=dtype)
    if pv.shape[0]:
        check_probability_range(pv, p_name)
    labels = check_binary_labels(y_arr, y_name)
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


class Data:
    """Validated rows (:attr:`rows`, released by :meth:`release`) and what is known of all of them."""

    def __init__(self, rows, x_dtype, weighted, convert=convert_chunk, *args, empty_name="y_true"):
        self.dtype = _partition.fit_dtype(x_dtype)
        self.weighted = weighted
        self.rows, facts = rows.convert(convert, self.dtype, *(args or ((),)))
        try:
            self.n = sum(f[0] for f in facts)
            if self.n == 0:
                column_or_1d(np.empty(0), empty_name)  # the in-memory error
            if weighted and not sum(f[1] for f in facts) > 0:
                raise all_zero_weights()
            self.exponent = weight_exponent(None, max(f[2] for f in facts)) if weighted else 0
            self.summaries = [f[3] for f in facts]
        except BaseException:
            self.rows.release()
            raise

    def release(self):
        self.rows.release()


def float64_terms(p, labels, w, exponent):
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
    w64, p64, terms = float64_terms(ps, labels[order], None if w is None else w[order], exponent)
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
    :func:`fastcal._engine.partition.choose_bounds`); equal probabilities always share a range."""
    if n_partitions is None:
        n_partitions = partition_count(data.n, len(data.summaries), parallelism, PARTITION_ROWS)
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
    from .._core.params import Integer, check

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    data = Data(rows, x_dtype, weighted)
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
    data = Data(rows, x_dtype, weighted)
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
    """:func:`convert_chunk` of a chunk ``(p, y, w, groups)`` (or ``(p, y, w, *group columns)``), the groups replaced
    by their global numbers (int64)."""
    m = len(chunk) - 3
    names = ("groups",) if m == 1 else tuple(f"groups (column {j})" for j in range(m))
    (p, labels, w, *groups), facts = convert_chunk(chunk, dtype, names)
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
    from .._core.params import Integer, check
    from ._report import SegmentReport

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    n_bins = check_int(n_bins, "n_bins", 1)  # the in-memory check and message
    distinct_all, uniques, counts = number_groups(rows)
    data = Data(rows, x_dtype, weighted, _convert_groups, distinct_all)
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
