r"""The multicalibration error over a :class:`~fastcal._engine.Rows`: global feature statistics, cells, per-segment
running extremes over score ranges.

Chunks are ``(y_prob, y_true, w, *features)``, validated as the segment
tools' rows are (:class:`fastcal.multicalibration._rows.Data`).

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
from dataclasses import dataclass

import numpy as np

from .._coding import (
    appearance_rank,
    collapse_categories,
    distinct_values,
    folded_values,
    group_codes,
    labels_by_appearance,
    numbered,
    quantile_edges,
)
from .._core.validation import as_float_array
from ._ecce import check_int
from ._mce import choose_segments, mce_result
from ._rows import METRIC_NAMES, Data, convert_chunk, float64_terms, score_ranges

__all__ = ["CodedRows", "check_features", "code_features", "multicalibration_error", "order_select"]


# ---------------------------------------------------------------------------
# Multicalibration error: global feature statistics, cells, per-segment running extremes over score ranges.
# ---------------------------------------------------------------------------



def _convert_features(chunk, dtype, names, order, columns):
    """:func:`convert_chunk` of a chunk ``(p, y, w, *features)`` (``columns``: the names of ``p`` and ``y``), the
    features put in the ``order`` given."""
    new, facts = convert_chunk(chunk, dtype, names, columns)
    return (*new[:3], *(new[3 + i] for i in order)), facts


def _feature_values(chunk, f, numerical, name, edges):
    """Feature ``f``'s values in a validated chunk (column ``3 + f``): as they are (categorical), or float64
    (numerical), binned at ``edges`` when given (bin numbers as floats, NaN kept) as in memory."""
    values = chunk[3 + f]
    if not numerical:
        return values
    x = _float64(values, f"segments[{name!r}]")
    if edges is None:
        return x
    missing = np.isnan(x)
    bins = np.searchsorted(edges, x, side="left") - 1
    bins[x == edges[0]] = 0
    return np.where(missing, np.nan, bins.astype(np.float64))


def _numerical_facts(chunk, f, name, limit):
    """``(distinct values up to limit + 1, or None past it; rows not NaN; least; greatest)`` of a numerical
    feature in a chunk."""
    x = _float_values(chunk, 3 + f, f"segments[{name!r}]")
    if not x.shape[0]:
        return np.empty(0), 0, math.inf, -math.inf
    distinct = np.unique(x)
    return (distinct if distinct.shape[0] <= limit else None), x.shape[0], float(x.min()), float(x.max())


def _float64(values, label):
    """``values`` as a contiguous float64 array (``label`` names them in errors)."""
    return np.ascontiguousarray(as_float_array(values, label), dtype=np.float64)


def _float_values(chunk, column, label):
    """Column ``column`` of a chunk as float64 (``label`` names it in errors), NaN left out."""
    x = _float64(chunk[column], label)
    return x[~np.isnan(x)]


def _column_counts(chunk, column, label, lo, scale):
    from .. import _binning

    return _binning.bucket_histograms(_float_values(chunk, column, label), lo, scale).sum(axis=0)


def _column_gather(chunk, column, label, lo, scale, marked):
    from .. import _binning

    return _binning.gather_buckets(_float_values(chunk, column, label), lo, scale, marked)[0]


def order_select(rows, column, label, lo, hi):
    """``select(ranks)``: the order statistics of the float64 values of column ``column`` of ``rows`` (NaN left out,
    all in ``[lo, hi]``), exactly (:func:`fastcal._binning.select_order_statistics`: passes of bucket counts, then
    of the values gathered from the marked buckets)."""
    from .. import _binning

    def select(ranks):
        def count(scale):
            return sum(rows.map(_column_counts, column, label, lo, scale))

        def gather(scale, marked):
            pieces = rows.map(_column_gather, column, label, lo, scale, marked)
            return _binning.gather_buckets(np.concatenate(pieces), lo, scale, marked)

        return _binning.select_order_statistics(ranks, lo, hi, np.dtype(np.float64), count, gather)

    return select


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
    w64, p64, _ = float64_terms(p, labels, w, exponent)
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
    _, _, terms = float64_terms(ps, labels[order], None if w is None else w[order], exponent)
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
    values other than NaN, exactly (:func:`order_select`); its ``ValueError`` if the feature holds an infinity."""
    count_all = sum(c for _, c, _, _ in facts)
    lo = min(c[2] for c in facts)
    hi = max(c[3] for c in facts)
    return quantile_edges(count_all, lo, hi, max_values, name,
                          order_select(feats, 3 + f, f"segments[{name!r}]", lo, hi))


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


@dataclass
class CodedRows:
    """Rows of segment features numbered as the in-memory functions number them (:func:`code_features`).

    ``data``: the validated rows (:class:`~fastcal.multicalibration._rows.Data`, released by :func:`code_features`
    once converted); ``rows``: the converted chunks ``(p, labels, w, *digits)``, each feature's digit per row
    (int64), features in MCGrad's order (release them); ``specs``: per feature ``(name, numerical, bin edges or
    None)``; ``distinct``/``uniques``: each feature's distinct values and their numbering by ``group_codes``;
    ``tables``: each value number's digit; ``labels``: the digits' labels; ``folded``: name -> the values folded
    into ``"__OTHER"``; ``cells``: per chunk, its cells (the distinct rows of digits, their rows, ``sum w``,
    ``sum w^2 p (1 - p)``, ``sum w y``).
    """

    data: Data
    rows: object
    specs: list
    distinct: list
    uniques: list
    tables: list
    labels: list
    folded: dict
    cells: list

    def merged_cells(self):
        """``(digits, counts, sums)``: the distinct cells of all chunks (rows of digits, ascending), their rows
        (int64) and their three sums (added in chunk order)."""
        cells, n_features = self.cells, len(self.specs)
        cell_digits = np.concatenate([c[0] for c in cells]) if cells else np.zeros((0, n_features), np.int64)
        if n_features:
            digits, inverse = np.unique(cell_digits, axis=0, return_inverse=True)
        else:  # no features: one cell
            digits, inverse = cell_digits[:1], np.zeros(cell_digits.shape[0], dtype=np.int64)
        inverse = inverse.reshape(-1)
        m = digits.shape[0]
        counts = np.bincount(inverse, weights=np.concatenate([c[1] for c in cells]), minlength=m).astype(np.int64)
        sums = [np.zeros(m) for _ in range(3)]
        start = 0
        for c in cells:  # in chunk order
            k = c[0].shape[0]
            for j in range(3):
                np.add.at(sums[j], inverse[start:start + k], c[2 + j])
            start += k
        return digits, counts, sums


def check_features(names, numerical):
    """``(names, numerical, order)``: the features' names as strings, the numerical ones (checked to be among
    them) and MCGrad's order of the features (categorical ones, then the numerical ones in the order of
    ``numerical``)."""
    names = [str(n) if not isinstance(n, str) else n for n in names]
    numerical = [numerical] if isinstance(numerical, str) else list(numerical)
    unknown = [name for name in numerical if name not in names]
    if unknown:
        raise ValueError(f"numerical names {unknown} that are not features of segments ({names}).")
    order = [i for i, name in enumerate(names) if name not in numerical] + [names.index(n) for n in numerical]
    return names, numerical, order


def code_features(rows, x_dtype, weighted, names, numerical, order, max_values, columns=METRIC_NAMES,
                  empty_name="y_true"):
    """:class:`CodedRows` of rows ``(y_prob, y_true, w, *features)``: the validation (``columns``: the names of the
    first two in errors; ``empty_name`` the column the error of no rows names), then each feature's values
    numbered as in memory (the numerical features' distinct values and ranges; for a binned one, the quantile
    edges of all its values, exactly; each feature's distinct values with their rows and first row along the
    sorted probabilities), and a conversion giving each row its digits and each chunk its cells."""
    data = Data(rows, x_dtype, weighted, _convert_features, tuple(f"segments[{n!r}]" for n in names), order,
                columns, empty_name=empty_name)
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
        distinct, uniques, tables, labels, folded = [], [], [], [], {}
        for f, (name, is_num, edges) in enumerate(specs):
            values, value_uniques, counts, first_p, first_row = _global_values(stats, offsets, f)
            table, value_labels, fold = _value_table(value_uniques, counts, first_p, first_row, is_num,
                                                     edges is not None, max_values, values.dtype.kind)
            if fold is not None:
                folded[name] = fold
            distinct.append(values)
            uniques.append(value_uniques)
            tables.append(table)
            labels.append(value_labels)
        conv, cells = feats.convert(_digits_and_cells, specs, distinct, tables, data.exponent)
    except BaseException:
        if conv is not None:
            conv.release()
        raise
    finally:
        data.release()
    return CodedRows(data, conv, specs, distinct, uniques, tables, labels, folded, cells)


def multicalibration_error(rows, *, x_dtype, weighted, names, numerical=(), max_depth=3,
                           max_values_per_segment_feature=3, min_samples_per_segment=10, max_n_segments=1000,
                           n_partitions=None):
    """:func:`fastcal.multicalibration_error` of rows ``(y_prob, y_true, w, *features)``.

    ``names`` are the features' names, one per extra column, in the order of the chunks' columns; the other
    parameters are the in-memory function's.

    Passes: those of :func:`code_features` (the conversion, the features' values and bins, each row's digits
    and each chunk's cells); then the range partition by probability, and per range and segment the sum and the
    running extremes after each tie group, merged per segment by prefix offsets.

    Exactness: the features' value orders, the collapsed categories, the quantile bins, the segments and
    their ``n`` are the in-memory ones, exactly; ECCE, sigma and p-values to the rounding of float64 sums
    in another order (1e-12 relative at the sizes tested).
    """
    max_depth = check_int(max_depth, "max_depth", 0, allow_none=True)
    max_values = check_int(max_values_per_segment_feature, "max_values_per_segment_feature", 1)
    min_samples = check_int(min_samples_per_segment, "min_samples_per_segment", 0)
    max_n_segments = check_int(max_n_segments, "max_n_segments", 1, allow_none=True)
    names, numerical, order = check_features(names, numerical)
    coded = code_features(rows, x_dtype, weighted, names, numerical, order, max_values)
    conv, data, specs, labels = coded.rows, coded.data, coded.specs, coded.labels
    try:
        digits, cell_counts, cell_sums = coded.merged_cells()
        n_features = len(specs)
        depth = n_features if max_depth is None else min(max_depth, n_features)
        limit = math.inf if max_n_segments is None else max_n_segments
        combos, segment_values, n_segments = choose_segments(
            [(specs[f][0], labels[f]) for f in range(n_features)], digits, cell_counts, depth, min_samples, limit)
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
    return mce_result(segment_values, count, total, var, lo, hi, positive, coded.folded)
