r"""Score decomposition (CORP) and the ROC AUC over a :class:`~fastcal._engine.Rows`.

ROC AUC
-------
:func:`roc_auc_score` (binary) validates the chunks ``(y_score, y_true, w)``
as :func:`fastcal.roc_auc_score` does (finite scores; the positive label
from the set of all labels, the greater of two unless ``pos_label``),
samples the scores (the backend's own sample where it has one,
:meth:`Rows.describe`: Spark's, in the JVM), and range-partitions the rows by score
(:meth:`Rows.partition`): equal scores never straddle a bound. Each
partition sorts its scores and returns its positive and negative weights
and its within-partition Mann-Whitney sum (ties count half), by the
in-memory AUC's own sort and count (:func:`fastcal._auc.mann_whitney_parts`); merged in score
order, a partition's positives also beat every negative of the partitions
before it. Without weights the counts are integers, added exactly, and the
AUC is the in-memory one bit for bit (``u2 / (2 n_pos n_neg)``, the same
division). With weights, the float64 sums (weights rescaled by one power of
two) agree with the in-memory sweep to their rounding (about ``n`` eps
relative).

Calibration report
------------------
:func:`calibration_report` is :func:`fastcal.calibration_report` of binary
rows from the drivers above and the binned tables: one conversion
(:class:`fastcal.metrics._rows.Metrics`), one bin table, the AUC, the two
CORP decompositions from one isotonic fit, and the calibration slope,
intercept and calibration-in-the-large from the logits of ``p``
(:func:`fastcal.platt.logit_rows` per chunk, then
:func:`fastcal.platt.slope_intercept_passes`: one pass per Newton step of
both fits, which advance together).
Exactness: each field as its driver's rule says (``n``, the bin edges and
counts and the unweighted AUC bit-identical; sums to their rounding; slope
and intercept to the solver's tolerance, about 1e-10 relative).

Score decomposition
-------------------

Chunks are ``(y_prob, y_true, w)``, raw, validated as by the binned
diagnostics (:class:`fastcal.metrics._rows.Metrics`: binary labels {0, 1} or
{-1, 1}, probabilities in [0, 1]). The recalibration is
:func:`fastcal.isotonic._rows.fit_isotonic` on the float64 predictions and
0/1 labels (its own range partition); one more :meth:`Rows.map` sums, per
chunk, the scores of ``p`` and of the fit's predictions
(:func:`fastcal.decomposition.score_sums`), added in chunk order.

Exactness
---------
The recalibration's blocks are the in-memory PAV fit's (thresholds
bit-identical, see :mod:`fastcal.isotonic._rows`); the sums are float64
per chunk added in chunk order, so the decomposition equals the in-memory
one to the rounding of those sums (about ``n`` eps relative; deterministic
for given chunks).
"""

from __future__ import annotations

import math

import numpy as np

from .. import decomposition, platt
from .._auc import mann_whitney_parts
from .._engine import partition as _partition, partition_count, user_stacklevel
from .._core.params import Options, check
from .._core.validation import class_bytes, rescale_weights
from ..isotonic import merge_blocks
from ..isotonic import rows as isotonic_rows
from ._report import report_from_parts
from ._rows import Metrics

__all__ = [
    "calibration_report", "calibration_slope_intercept", "corp_reliability", "roc_auc_score", "score_decomposition",
]

#: Rows per partition of the AUC (each is sorted in memory where it lives).
AUC_PARTITION_ROWS = 1 << 23


def _fit_columns(chunk):
    """A validated metrics chunk as the isotonic fit's columns: float64 predictions, 0/1 labels (uint8), weights
    (row by row: :meth:`Rows.convert_later` may run it)."""
    p, labels, w = chunk
    return p.astype(np.float64), (labels != 0).view(np.uint8), w


def _fit_columns_fact(chunk):
    """:func:`_fit_columns` for :meth:`Rows.convert`: no fact."""
    return _fit_columns(chunk), None


def _sums(chunk, estimator, scorings, exponent):
    """Per scoring: ``(score sum, weight, positives, score sum of the recalibration)`` of one chunk."""
    p, labels, w = chunk
    w = rescale_weights(w, exponent)[0]
    p64 = p.astype(np.float64)
    recal = estimator.predict(p64) if p.shape[0] else p64
    return [(*decomposition.score_sums(labels, p, w, scoring), decomposition.score_sums(labels, recal, w, scoring)[0])
            for scoring in scorings]


def _recalibration(data):
    """The CORP recalibration of validated :class:`Metrics` rows: the exact isotonic fit of the labels on the
    float64 predictions (``out_of_bounds="clip"``)."""
    if hasattr(data.rows, "convert_later"):  # converted in the isotonic fit's own pass
        fit_rows = data.rows.convert_later(_fit_columns)
    else:
        fit_rows, _ = data.rows.convert(_fit_columns_fact)
    try:
        return isotonic_rows.fit_isotonic(fit_rows, x_dtype=np.float64, weighted=data.weighted, out_of_bounds="clip")
    finally:
        fit_rows.release()


def corp_reliability(rows, *, x_dtype, weighted, n_resamples=0, level=0.9, band="consistency",
                     random_state=None):
    """:func:`fastcal.corp_reliability` of binary rows ``(y_prob, y_true, w)``: the CORP curve and its
    consistency band (see the module docstring)."""
    n_resamples, level, band, key = decomposition.check_band(n_resamples, level, band, random_state)
    if n_resamples and band != "consistency":
        raise ValueError(
            "band='confidence' draws rows with replacement from all the rows at once, which fastcal.dask and "
            "fastcal.spark do not do; use band='consistency' (the CORP paper's band)."
        )
    data = Metrics(rows, x_dtype, weighted, None)
    try:
        iso = _recalibration(data)
        x = np.asarray(iso.X_thresholds_, dtype=np.float64)
        lower = upper = None
        if n_resamples:
            lower, upper = decomposition.band_quantiles(_consistency_draws(data, x, n_resamples, key), level)
    finally:
        data.release()
    return decomposition.CorpReliabilityResult(
        x=x, y=np.asarray(iso.y_thresholds_, dtype=np.float64), lower=lower, upper=upper, level=float(level),
        band=band, n_resamples=int(n_resamples))


def _float64_chunk(chunk):
    """A validated metrics chunk with float64 predictions (no fact)."""
    p, labels, w = chunk
    return (p.astype(np.float64), labels, w), None


def _band_sample(chunk):
    """The :class:`fastcal._engine.partition.ChunkSummary` of a validated metrics chunk's rows of positive weight (the
    rows the band draws, as in memory), for the partition bounds."""
    p, _, w = chunk
    return _partition.summarize_chunk(p, None, w, sample_size=isotonic_rows.sample_size(p.shape[0]), binary=False)


def _band_head(part, eps):
    """A partition's :func:`fastcal._engine.partition.head_summary`, of its rows of positive weight: ``(rows, smallest
    prediction, ...)`` give its place in the whole order."""
    return _partition.head_summary(part[0], part[2], eps)


def _band_part(part, offsets, key, n_resamples, exponent):
    """:func:`fastcal.decomposition.band_blocks` of a partition's rows of positive weight, its first row's place
    found by its smallest prediction in ``offsets``."""
    p, _, w = part
    if w is not None:
        keep = w > 0
        p, w = p[keep], rescale_weights(w[keep], exponent)[0].astype(np.float64, copy=False)
    if not p.shape[0]:
        return []
    return decomposition.band_blocks(p, w, offsets[float(p.min())], key, n_resamples)


def _consistency_draws(data, x, n_resamples, key):
    """``(n_resamples, len(x))``: the consistency resamples' curves at ``x``, those of the in-memory band.

    The rows are cut by prediction into ranges that each begin at a tie
    group of the whole (:func:`fastcal.isotonic._rows.clean_parts`, rows
    of weight zero left out, as in memory); the ranges' row counts place each
    range's first row in the whole's order; one pass then makes each range's
    blocks for every resample (:func:`fastcal.decomposition.band_blocks`),
    merged per resample in score order and evaluated at ``x``.
    """
    dtype = np.dtype(np.float64)
    eps = _partition.resolution(dtype)
    # float32 predictions are grouped by their float64 values, as in memory (their float32 differences may round)
    rows = data.rows if data.dtype == dtype else data.rows.convert(_float64_chunk)[0]
    try:
        samples = rows.map(_band_sample)
        n_parts = partition_count(data.n, len(samples), rows.parallelism, isotonic_rows.PARTITION_ROWS)
        parts = rows.partition(_partition.choose_bounds(samples, n_parts, dtype))
    finally:
        if rows is not data.rows:
            rows.release()
    try:
        heads = parts.map(_band_head, eps)
        parts, recut = isotonic_rows.clean_parts(parts, heads, eps, dtype, keep_zero=True)
        if recut:
            heads = parts.map(_band_head, eps)
        offsets, total = {}, 0
        for head in heads:
            if head[0]:
                offsets[float(head[1])] = total
                total += head[0]
        blocks = [b for b in parts.map(_band_part, offsets, key, n_resamples, data.exponent) if b]
    finally:
        parts.release()
    merged = [merge_blocks([b[r] for b in blocks if b[r][0].shape[0]]) for r in range(n_resamples)]
    return decomposition.band_from_blocks(merged, x)


def _decompositions(data, scorings):
    """:class:`fastcal.decomposition.ScoreDecomposition` of validated :class:`Metrics` rows for each of
    ``scorings``, from one isotonic fit."""
    iso = _recalibration(data)
    parts = data.rows.map(_sums, iso, scorings, data.exponent)
    out = []
    for k, scoring in enumerate(scorings):
        score_sum, weight, positives, recal_sum = (
            float(v) for v in np.sum(np.array([p[k] for p in parts], dtype=np.float64), axis=0))
        out.append(decomposition.decomposition_from_sums(score_sum, recal_sum, weight, positives, scoring))
    return out


def score_decomposition(rows, *, x_dtype, weighted, scoring="brier"):
    """:func:`fastcal.score_decomposition` of binary rows ``(y_prob, y_true, w)``: see the module docstring."""
    scoring = check("scoring", scoring, [Options("brier", "log_loss")])
    data = Metrics(rows, x_dtype, weighted, None)
    try:
        return _decompositions(data, (scoring,))[0]
    finally:
        data.release()

def _auc_sample(chunk, size):
    x = chunk[0]
    step = max(1, x.shape[0] // max(1, size))
    return np.sort(x[::step]).astype(np.float64), x.shape[0]


def _auc_part(chunk, positive, exponent):
    """``(pos, neg, u)`` of one score range: positive and negative weights (counts without weights) and the sum
    over its positives of the negatives below plus half those tied (twice that, an integer, without weights):
    :func:`fastcal._auc.mann_whitney_parts`, the in-memory AUC's sort and count."""
    x, y, w = chunk
    if not x.shape[0]:
        return 0, 0, 0
    pos = ((y != 0) if positive is None else np.isin(y, positive)).view(np.uint8)
    return mann_whitney_parts(pos, np.ascontiguousarray(x), None if w is None else rescale_weights(w, exponent)[0])


def roc_auc_score(rows, *, x_dtype, weighted, pos_label=None, n_partitions=None):
    """:func:`fastcal.roc_auc_score` of binary rows ``(y_score, y_true, w)``: see the module docstring.

    ``n_partitions`` score ranges (default: one per :data:`AUC_PARTITION_ROWS`
    rows, at least ``rows.parallelism``, at most one per chunk); the result
    does not depend on it.
    """
    from .._core.params import Integer

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    many = ("a multiclass ROC AUC needs y_score of shape (n_samples, n_classes), the probabilities of the classes, "
            "and multi_class='ovr' or 'ovo'")
    data = Metrics(rows, x_dtype, weighted, pos_label, prob=False, greater=True, many=many)
    try:
        return _auc(data, data.positive, rows.parallelism, n_partitions)
    finally:
        data.release()


def _auc(data, positive, parallelism, n_partitions=None):
    """The AUC of validated :class:`Metrics` rows (``positive`` the positive labels, None: nonzero)."""
    from .._core.validation import weight_exponent

    if hasattr(data.rows, "describe"):  # the backend's own sample (Spark: in the JVM, no pass of fastcal's)
        _, n_chunks, values, _ = data.rows.describe(0, 1024 * max(1, int(parallelism)))
        values = np.asarray(values, dtype=data.dtype)
        strides = np.ones(values.shape[0])
    else:
        samples = data.rows.map(_auc_sample, 1024)
        n_chunks = len(samples)
        values = np.concatenate([s for s, _ in samples])
        strides = np.concatenate([np.full(s.shape[0], m / max(1, s.shape[0])) for s, m in samples])
    if n_partitions is None:
        n_partitions = partition_count(data.n, n_chunks, parallelism, AUC_PARTITION_ROWS)
    bounds = _partition.quantile_bounds(values, strides, int(n_partitions), data.dtype)
    parts = data.rows.partition(bounds)
    try:
        sums = parts.map(_auc_part, positive, weight_exponent(None, data.weight_max))
    finally:
        parts.release()
    if data.weighted:
        u, w_pos, w_neg = 0.0, 0.0, 0.0
        for p_j, n_j, u_j in sums:  # in score order
            u += u_j + p_j * w_neg
            w_pos += p_j
            w_neg += n_j
        if not (w_pos > 0 and w_neg > 0):
            raise ValueError("Only one class present in y_true (with positive weight). ROC AUC score is not defined "
                             "in that case.")
        return float(u / (w_pos * w_neg))
    u2, n_pos, n_neg = 0, 0, 0
    for p_j, n_j, u_j in sums:
        u2 += u_j + 2 * p_j * n_neg
        n_pos += p_j
        n_neg += n_j
    if n_pos == 0 or n_neg == 0:
        raise ValueError("Only one class present in y_true. ROC AUC score is not defined in that case.")
    return float(u2) / (2.0 * n_pos * n_neg)


def _logits(chunk, exponent, fraction=None):
    """The logits of a validated metrics chunk, ``(x, labels, w)`` (``w`` as given), their preparation results
    (the weights rescaled by ``2**-exponent``) and, with ``fraction``, their warm-start subsample (weights as
    given, as :func:`fastcal.platt._rows.Passes` takes it)."""
    p, labels, w = chunk
    x, prepared = platt.logit_rows(labels, p, rescale_weights(w, exponent)[0])
    labels = class_bytes(labels)  # as the passes read them
    return (x, labels, w), (prepared, None if fraction is None else platt.subsample(x, labels, w, fraction))


def _logit_facts(chunk, exponent, fraction):
    """:func:`_logits`' facts alone (the logits made again in each pass: :func:`_logit_chunk`)."""
    return _logits(chunk, exponent, fraction)[1]


def _logit_chunk(chunk, exponent):
    """:func:`_logits`' chunk alone."""
    return _logits(chunk, exponent)[0]


def _slope_fit(data, fraction, facts, strict=False):
    """The calibration slope's fit for :func:`calibration_report` and :func:`calibration_slope_intercept`:
    ``(fit, missing)`` of :func:`fastcal.platt.slope_intercept_passes` (``strict`` as there), over logits made
    in each pass (``facts`` from the table's pass: a backend that converts later) or kept (``facts`` None:
    made here)."""

    if facts is not None:
        logit_rows = data.rows.convert_later(_logit_chunk, data.exponent)
    else:
        logit_rows, facts = data.rows.convert(_logits, data.exponent, fraction)
    try:
        passes = platt.RowPasses.of(logit_rows, data.n, data.exponent, platt.array_pass, fraction,
                                    [f[1] for f in facts])
        return platt.slope_intercept_passes(
            platt.merge_prepared([f[0] for f in facts]), data.n, data.weighted, data.exponent, passes.run_pass,
            passes.rows, strict=strict, run_passes=passes.run_passes)
    finally:
        logit_rows.release()


def calibration_slope_intercept(rows, *, x_dtype, weighted):
    """:func:`fastcal.calibration_slope_intercept` of binary rows ``(p, y, w)``: the Newton passes of
    :func:`calibration_report`'s slope over the kept logits, raising where the in-memory function raises
    (one class, constant ``p``, separable classes)."""
    data = Metrics(rows, x_dtype, weighted, None)
    try:
        fraction = platt.subsample_fraction(data.n) if data.n >= platt.WARM_START_MIN else None
        return _slope_fit(data, fraction, None, strict=True)[0]
    finally:
        data.release()


def calibration_report(rows, *, x_dtype, weighted, n_bins=10, strategy="uniform", pos_label=None, slope=True):
    """:func:`fastcal.calibration_report` of binary rows ``(y_prob, y_true, w)``: see the module docstring
    (``slope=False``: no logits, no Newton passes)."""
    from .. import _binning
    from .._core.params import Boolean, check

    n_bins = _binning.check_binning(n_bins, strategy)  # before any pass over the data
    slope = check("slope", slope, [Boolean()])
    data = Metrics(rows, x_dtype, weighted, pos_label)
    try:
        edges = data.edges(n_bins, strategy)
        # the slope's Newton fits warm-start from one subsample, taken where the logits are made
        fraction = platt.subsample_fraction(data.n) if data.n >= platt.WARM_START_MIN else None
        # A backend that converts rows in each pass (convert_later: Spark) makes the logits there, their facts
        # in the table's pass: no pass of their own. Others keep them (convert), facts and all.
        lazy = slope and hasattr(data.rows, "convert_later")
        flags = {"moments": True, "brier": True, "logloss": True}
        if lazy:
            table, facts = data.table_and(edges, _logit_facts, (data.exponent, fraction), **flags)
        else:
            table = data.table(edges, **flags)
        positives = float(table[:, _binning.SY].sum())
        both = 0 < positives < float(table[:, _binning.W].sum())
        auc = _auc(data, None, rows.parallelism) if both else math.nan
        corp = _decompositions(data, ("brier", "log_loss"))
        slope_fit, missing = _slope_fit(data, fraction, facts if lazy else None) if slope else (None, None)
    finally:
        data.release()
    units = data.in_weight_units if weighted else (lambda v: v)
    return report_from_parts(table, edges, strategy, int(data.n), weighted, units, auc, corp, slope_fit,
                                     missing, user_stacklevel() + 1)  # it warns one frame below this one
