r"""The ECCE, the calibration ratio and the report by segment over a :class:`~fastcal._engine.Rows`.

Chunks are ``(y_prob, y_true, w)`` (``w`` None in every chunk when
``weighted`` is False), and ``(y_prob, y_true, w, groups)`` for
:func:`segment_report`. One :meth:`Rows.convert` validates every chunk with
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
:func:`fastcal.multicalibration.group_codes` numbers the whole column: each
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

Exactness: every column of a group is computed from that group's rows
alone, by the in-memory kernel, from the same rescaled weights (a power of
two apart, an exact scaling): ``n`` is exact, the other columns equal the
in-memory ones to the rounding of float64 sums of a group's tied rows taken
in another order (a few eps; bit-identical without ties).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _partition
from .._validation import (
    as_float_array,
    check_binary_labels,
    check_finite,
    check_probability_range,
    column_or_1d,
    rescale_weights,
    weight_exponent,
)
from . import isotonic

__all__ = ["calibration_ratio", "ecce", "segment_report"]

#: Score ranges of :func:`ecce` (its default): one per this many rows, at least ``rows.parallelism``.
PARTITION_ROWS = isotonic.PARTITION_ROWS
#: Rows per partition of :func:`segment_report` (its default), whole groups each.
GROUP_PARTITION_ROWS = 1 << 22


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
                raise ValueError("Sample weights must contain at least one non-zero number (sample_weight is all "
                                 "zeros).")
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


def _sigma(value, std):
    """``value / std`` with MCGrad's rule for ``std == 0`` (inf if ``value`` is not 0, else 0): the in-memory
    :func:`fastcal.ecce`'s ``ecce_sigma``."""
    if std > 0:
        return value / std
    return math.inf if value != 0 else 0.0


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


def score_ranges(data, n_partitions, parallelism):
    """The validated rows of ``data`` range-partitioned by probability (column 0): the isotonic driver's step
    (bounds at quantiles of the chunks' samples); equal probabilities always share a range."""
    if n_partitions is None:
        n_partitions = min(len(data.summaries), max(int(parallelism), -(-data.n // PARTITION_ROWS)))
    bounds = _partition.choose_bounds(data.summaries, int(n_partitions), data.dtype)
    return data.rows.partition(bounds)


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
    from ..multicalibration import ECCEResult, kuiper_sf

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    data = _Data(rows, x_dtype, weighted)
    try:
        parts = score_ranges(data, n_partitions, rows.parallelism)
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
    sigma = _sigma(value, std)
    return ECCEResult(ecce=value, std=std, ecce_sigma=sigma, pvalue=kuiper_sf(sigma))


# ---------------------------------------------------------------------------
# Calibration ratio: one reduction.
# ---------------------------------------------------------------------------


def _ratio_sums(chunk, exponent, adjust_unjoined):
    """``(sum w y, sum w p)`` of one chunk (``sum w (1 - y) p`` with ``adjust_unjoined``), float64."""
    p, labels, w = chunk[:3]
    yf = np.not_equal(labels, 0).astype(np.float64)
    pf = p.astype(np.float64)
    wf = np.ones_like(pf) if w is None else rescale_weights(w, exponent)[0].astype(np.float64)
    predicted = float(np.dot(wf * (1.0 - yf), pf)) if adjust_unjoined else float(np.dot(wf, pf))
    return float(np.dot(wf, yf)), predicted


def calibration_ratio(rows, *, x_dtype, weighted, adjust_unjoined=False):
    """:func:`fastcal.calibration_ratio` of rows ``(y_prob, y_true, w)``: see the module docstring."""
    data = _Data(rows, x_dtype, weighted)
    try:
        sums = data.rows.map(_ratio_sums, data.exponent, bool(adjust_unjoined))
    finally:
        data.release()
    positives = float(sum(s[0] for s in sums))
    if not positives > 0:
        raise ValueError("y_true has no positive label of positive weight: the calibration ratio is undefined.")
    return float(sum(s[1] for s in sums)) / positives


# ---------------------------------------------------------------------------
# Report by segment: groups numbered as in memory, partitions of whole groups, the in-memory report per partition.
# ---------------------------------------------------------------------------


def _distinct(values):
    """The distinct values of ``values`` (an array of its dtype, in order of first appearance) and their rows."""
    from ..multicalibration import group_codes

    codes, uniques = group_codes(values, "groups")
    if not codes.shape[0]:
        return values[:0], np.zeros(0, dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    order = np.argsort(first, kind="stable")
    return values[first[order]], np.bincount(codes, minlength=len(uniques))[order]


def _group_values(chunk):
    """:func:`_distinct` of a raw chunk's groups (column 3)."""
    return _distinct(column_or_1d(chunk[3], "groups", allow_column=False, min_size=0))


def _numbered(distinct, values):
    """The numbers of ``values`` among the ``k`` values of ``distinct`` (all of them there), in the order
    :func:`fastcal.multicalibration.group_codes` gives the ``k`` values: ``(numbers of values, k values in that
    order)``."""
    from ..multicalibration import group_codes

    k = distinct.shape[0]
    codes, uniques = group_codes(np.concatenate([distinct, values]), "groups")
    if len(uniques) != k:
        raise ValueError("groups: a chunk holds a value that no chunk held when the groups were numbered (do the "
                         "chunks change between passes?).")
    return codes[k:], uniques


def _convert_groups(chunk, dtype, distinct):
    """:func:`_convert` of a chunk ``(p, y, w, groups)``, the groups replaced by their global numbers (int64)."""
    (p, labels, w, g), facts = _convert(chunk, dtype, ("groups",))
    return (p, labels, w, _numbered(distinct, g)[0] if g.shape[0] else np.zeros(0, dtype=np.int64)), facts


def _report_part(chunk, exponent, n_bins):
    """The in-memory :func:`fastcal.segment_report` of one partition of whole groups (None if it has no rows):
    its groups' numbers, and its columns with ``weight_sum`` in units of ``2**exponent``."""
    from ..multicalibration import segment_report

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


def group_bounds(counts, n_parts):
    """Bounds (group numbers, int64) that cut groups ``0..k-1`` with these row ``counts`` into at most
    ``n_parts`` ranges of whole groups of about equal rows."""
    k = counts.shape[0]
    if n_parts <= 1 or k <= 1:
        return np.empty(0, dtype=np.int64)
    cum = np.cumsum(counts)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_parts) / n_parts, side="left") + 1
    return np.unique(cuts[(cuts > 0) & (cuts < k)]).astype(np.int64)


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
    from ..multicalibration import SegmentReport

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    n_bins = check("n_bins", n_bins, [Integer(1)])
    found = rows.map(_group_values)
    pieces = [values for values, _ in found]
    distinct_all = np.concatenate(pieces) if pieces else np.empty(0)
    distinct_all, _ = _distinct(distinct_all) if distinct_all.shape[0] else (distinct_all, None)
    uniques = _numbered(distinct_all, distinct_all)[1] if distinct_all.shape[0] else []
    counts = np.zeros(len(uniques), dtype=np.int64)
    for values, c in found:
        if values.shape[0]:
            np.add.at(counts, _numbered(distinct_all, values)[0], c)
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
