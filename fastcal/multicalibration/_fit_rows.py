r"""The multicalibration fit over a :class:`~fastcal._engine.Rows`: the in-memory model, each Newton step one pass.

Chunks are ``(scores, y, w, *features)``, raw, as for the multicalibration error
(:func:`fastcal.multicalibration._mce_rows.multicalibration_error`): ``names`` name the features in the order of
the columns, ``numerical`` those cut at quantiles. The result is the :class:`fastcal.MulticalibrationCalibrator`
that ``fit`` gives on the same rows in memory (:func:`~._fit.fit_segment_model`), with the same steps:

1. :func:`~._mce_rows.code_features`: the validation (the in-memory errors), each feature's values numbered and
   binned as in memory (exactly), each row's digits and each chunk's cells;
2. the segments chosen on the merged cells (:func:`~._mce.choose_segments`, the multicalibration error's choice),
   the feature tables (:class:`~._fit.FeatureTable`) from the value numbering;
3. the score buckets: the quantile edges of all the scores, exactly (:func:`~._mce_rows.order_select`: passes of
   bucket counts and gathered values);
4. one :meth:`Rows.convert` to what the passes read: each row's *pattern* (its cell among the merged cells, ascending,
   times the buckets, plus its bucket; those of all the rows, from each chunk's, are the in-memory patterns in the
   in-memory order), its fold (a hash of its global position:
   :data:`fastcal._engine.CHUNK_NUMBER` and the chunks' sizes) and its label, in one int64 key; its logit and its
   rescaled weight; each chunk's weight, sum of squared weights and weight per fold;
5. the penalty's path and the final fit (:func:`~._fit.fit_offsets`), each Newton step one :meth:`Rows.map` of the
   in-memory pass (:class:`~._fit.Passes`) over each chunk's rows and patterns, each pattern's sums added in chunk
   order.

Exactness
---------
The feature tables, the segments, the bucket edges and the patterns are the in-memory ones exactly. The pattern
sums are float64 sums of the same terms grouped by chunk (in memory, by fixed chunks of the whole column): the
offsets and the slope agree to the rounding of those sums carried through the Newton path (1e-12 relative at the
sizes tested), and the discrete choices (the penalty, the offsets at exactly 0) are the same but on exact ties.
Only the per-pattern sums (patterns x splits x 3 float64 a chunk) and per-feature summaries reach the caller.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._core.validation import rescale_weights
from .._engine import CHUNK_NUMBER
from .._engine.chunked import merge_in_order
from ._calibrator import MulticalibrationCalibrator, fit_parameters, fitted
from ._fit import (
    KEY_LIMIT,
    FeatureTable,
    Passes,
    SegmentModel,
    bucket_edges,
    feature_key,
    fit_offsets,
    folds_of,
    logits_of,
    pattern_cells,
    score_buckets,
    segment_table,
)
from ._mce import choose_segments
from ._mce_rows import check_features, code_features, order_select

__all__ = ["fit_multicalibration"]


def _feature_table(coded, f, numbered):
    """Feature ``f``'s :class:`~._fit.FeatureTable` from the numbering of :func:`~._mce_rows.code_features`; the
    values of a feature in ``numbered`` (name -> the value of each number) are those the numbers stand for."""
    name, is_numerical, edges = coded.specs[f]
    labels, table = coded.labels[f], np.asarray(coded.tables[f], dtype=np.int64)
    if edges is not None:  # binned: the values are the bin numbers (NaN is edges.size), in the digits' order
        values = [int(v) if v == v else edges.size for v in labels]
        return FeatureTable(name, "bins", values, np.arange(len(labels), dtype=np.int64), -1, edges, len(labels))
    values = [feature_key(u) for u in coded.uniques[f]]
    if name in numbered:
        values = [feature_key(numbered[name][int(u)]) for u in values]
    if is_numerical:
        return FeatureTable(name, "values", values, table, -1, np.zeros(0), len(labels))
    other = labels.index(coded.folded[name][1]) if name in coded.folded else -1  # "__OTHER", or a number
    return FeatureTable(name, "categorical", values, table, other, np.zeros(0), len(labels))


def _score_range(chunk):
    """The least and greatest score of a chunk, as float64 (``inf, -inf`` without rows)."""
    p = chunk[0]
    return (float(p.min()), float(p.max())) if p.shape[0] else (math.inf, -math.inf)


def _cells_of(digits, cell_keys, radix):
    """Each row's number among the merged cells: by the mixed-radix keys ``cell_keys`` (ascending), or, past 2^62
    combinations (``radix`` None), by the rows of digits ``cell_keys`` themselves."""
    n = digits[0].shape[0] if digits else 0
    if radix is not None:
        key = np.zeros(n, dtype=np.int64)
        for d, r in zip(digits, radix):
            key += d * r
        return np.searchsorted(cell_keys, key)
    local, inverse = np.unique(np.stack(digits, axis=1), axis=0, return_inverse=True)
    lookup = {tuple(r): i for i, r in enumerate(cell_keys.tolist())}
    return np.array([lookup[tuple(r)] for r in local.tolist()], dtype=np.int64)[inverse.reshape(-1)]


class _ChunkFacts(NamedTuple):
    """What :func:`_pass_rows` learns of a chunk: its weight, sum of squared weights, weight per fold and patterns
    (ascending)."""

    weight: float
    squares: float
    fold_weight: np.ndarray
    patterns: np.ndarray


def _pass_rows(chunk, number, starts, cell_keys, radix, edges, n_folds, exponent):
    """A coded chunk ``(p, labels, w, *digits)`` as the passes read it, ``(key, logit, w)``, and its facts ``(sum w,
    sum w^2, weight per fold, its patterns)`` (:class:`_ChunkFacts`; weights rescaled by ``2**-exponent``).
    ``key`` is ``(pattern * n_folds + fold) * 2 + y``: one int64 column where three would be, since a backend that
    moves columns on every pass (Spark: from its cache to the Python task) pays per column."""
    p, labels, w = chunk[:3]
    n = p.shape[0]
    n_b = max(edges.size - 1, 1)
    pattern = _cells_of(list(chunk[3:]), cell_keys, radix) * n_b + score_buckets(p, edges)
    w64 = None if w is None else np.ascontiguousarray(rescale_weights(w, exponent)[0], dtype=np.float64)
    fold = folds_of(n, n_folds, starts[number])
    if w64 is None:
        sums = (float(n), float(n), np.bincount(fold, minlength=n_folds).astype(np.float64))
    else:
        sums = (float(np.sum(w64)), float(np.dot(w64, w64)), np.bincount(fold, weights=w64, minlength=n_folds))
    key = (pattern * n_folds + fold) * 2 + np.not_equal(labels, 0)
    return (key, logits_of(p), w64), _ChunkFacts(*sums, np.unique(pattern))


def _pass_sums(chunk, held, span, present, slope, beta):
    """One chunk's sums at ``slope`` and ``beta`` (splits x the ``present`` patterns, ascending numbers below
    ``span``): ``(the chunk's patterns' places in present, their sums, totals)``, the in-memory pass on its rows over
    the patterns it holds (sums patterns x splits x 3), so that what a chunk allocates and returns grows with its
    rows, not with the patterns of all the rows."""
    key, lg, w = chunk
    pattern, fold = np.divmod(key >> 1, held.shape[1])
    seen = np.zeros(span, dtype=np.bool_)
    seen[pattern] = True
    ids = np.flatnonzero(seen)
    local = np.empty(span, dtype=np.int64)
    local[ids] = np.arange(ids.shape[0])
    places = np.searchsorted(present, ids)
    sums, totals = Passes(local[pattern], lg, (key & 1).astype(np.uint8), w, fold.astype(np.uint8), held,
                          ids.shape[0]).run(slope, np.ascontiguousarray(beta[:, places]))
    return places, sums, totals.ravel()


class _RowsPasses:
    """The passes of :func:`~._fit.fit_offsets` over converted rows: a map of :func:`_pass_sums`, each pattern's sums
    added in chunk order over the chunks that hold it (a chunk without it would add exact zeros: the same bits)."""

    def __init__(self, rows, held, span, present):
        self.rows, self.held, self.span, self.present = rows, held, span, present
        self.n_splits, self.n_patterns = held.shape[0], present.shape[0]

    def run(self, slope, beta):
        parts = self.rows.map(_pass_sums, self.held, self.span, self.present, slope, beta)
        sums = np.zeros((self.n_patterns, *parts[0][1].shape[1:]))
        for places, chunk_sums, _ in parts:  # in chunk order; each pattern once a chunk
            sums[places] += chunk_sums
        totals = merge_in_order(np.stack([t for _, _, t in parts]))
        return sums + 0.0, totals.reshape(self.n_splits, -1)


def fit_multicalibration(rows, *, x_dtype, weighted, names, numerical=(), calibrator=None, numbered=None):
    """A fitted :class:`fastcal.MulticalibrationCalibrator` of rows ``(scores, y, w, *features)``: see the module
    docstring.

    ``names``: the features' names, one per extra column, in the columns' order; ``numerical``: those cut at
    quantiles; ``calibrator``: an unfitted :class:`~fastcal.MulticalibrationCalibrator` whose parameters are used
    (None: the defaults); ``numbered``: the categorical features the backend numbered itself (name -> the value
    each number stands for, None for missing: Spark's strings), whose model holds the values.
    """
    numbered = {} if numbered is None else numbered
    template = MulticalibrationCalibrator() if calibrator is None else calibrator
    if not isinstance(template, MulticalibrationCalibrator):
        raise TypeError(f"calibrator must be a MulticalibrationCalibrator or None, got {type(template).__name__}.")
    params = fit_parameters(template)
    names, numerical, order = check_features(names, numerical)
    if not names:
        raise ValueError("segments must hold at least one feature, got none.")
    coded = code_features(rows, x_dtype, weighted, names, numerical, order, params["max_values"], ("scores", "y"),
                          "scores")
    conv, passes = coded.rows, None
    try:
        sizes = [s.n for s in coded.data.summaries]
        n = sum(sizes)
        tables = [_feature_table(coded, f, numbered) for f in range(len(coded.specs))]
        digits, cell_counts, _ = coded.merged_cells()
        depth = len(tables) if params["max_depth"] is None else min(params["max_depth"], len(tables))
        limit = math.inf if params["max_n_segments"] is None else params["max_n_segments"]
        combos, _, n_segments = choose_segments([(t.name, coded.labels[f]) for f, t in enumerate(tables)], digits,
                                                cell_counts, depth, params["min_samples"], limit)
        seg_features, seg_digits = segment_table(combos, n_segments, depth, [t.size for t in tables])
        ranges = conv.map(_score_range)
        lo, hi = min(lo for lo, _ in ranges), max(hi for _, hi in ranges)
        edges = bucket_edges(n, lo, hi, params["n_buckets"], order_select(conv, 0, "y_prob", lo, hi))
        model = SegmentModel(tables, seg_features, seg_digits, edges, 1.0, np.zeros(0), math.nan, np.zeros(0))
        n_b, n_cells = model.n_buckets, digits.shape[0]
        span = math.prod(t.size for t in tables)
        if span < KEY_LIMIT:
            radix = [math.prod(t.size for t in tables[f + 1:]) for f in range(len(tables))]
            cell_keys = digits @ np.array(radix, dtype=np.int64)
        else:
            radix, cell_keys = None, digits
        starts = np.concatenate(([0], np.cumsum(sizes)))[:-1].tolist()
        passes, facts = conv.convert(_pass_rows, CHUNK_NUMBER, starts, cell_keys, radix, edges,
                                     params["n_folds"], coded.data.exponent)
    finally:
        conv.release()
    try:
        weight = merge_in_order(np.array([f.weight for f in facts]))
        squares = merge_in_order(np.array([f.squares for f in facts]))
        fold_weight = merge_in_order(np.stack([f.fold_weight for f in facts]))
        present = np.unique(np.concatenate([f.patterns for f in facts]))  # the patterns of the rows, as in memory
        pcells = pattern_cells(model, digits[present // n_b], present % n_b)
        result = fit_offsets(model, pcells, lambda held: _RowsPasses(passes, held, n_cells * n_b, present),
                             params["n_folds"], float(weight) ** 2 / float(squares), fold_weight)
    finally:
        passes.release()
    return fitted(template, result)
