r"""Binned diagnostics over a :class:`~fastcal._engine.Rows`: bin tables, order statistics, smooth-ECE grids.

Chunks are ``(y_prob, y_true, w)``, raw (``w`` None in every chunk when
``weighted`` is False). One :meth:`Rows.convert` validates every chunk with
the in-memory rules (probabilities in [0, 1], the label rules of
:func:`fastcal.metrics.binary_labels` applied to the set of all labels,
non-negative weights with a positive sum; messages naming ``y_prob``,
``y_true``, ``sample_weight``) and returns its facts (rows, range, labels,
weights). Then:

- the bin table (:func:`fastcal._binning.bin_stats` per chunk, weights
  rescaled by one power of two for all chunks, tables added in chunk order by
  :func:`fastcal._binning.merge_tables`) gives :func:`calibration_curve`,
  :func:`expected_calibration_error`, :func:`brier_score_loss`,
  :func:`log_loss`, :func:`brier_decomposition` and :func:`fit_histogram`;
- "quantile" edges are NumPy's percentiles of all of ``y_prob``, selected
  exactly in two more passes (:func:`fastcal._binning.select_order_statistics`:
  bucket counts added, then the values of the marked buckets gathered);
- :func:`smooth_ece` adds the chunks' grid sums (:func:`fastcal.smooth.grid_sums`)
  in chunk order and smooths them as in memory;
- an (n, k) matrix of class probabilities (``n_classes=k``; the chunks'
  first column then has k columns) gives the multiclass Brier score and log
  loss from per-chunk class sums (:func:`fastcal.metrics.class_sums_chunk`).

Exactness
---------
Counts, ranges and bin edges (uniform and quantile) are bit-identical to the
in-memory function's. Sums of weights, labels, probabilities and losses are
float64 per chunk, added in chunk order: deterministic for given chunks, and
equal to the in-memory results to the rounding of float64 sums in another
order (relative error about ``n`` eps of the sum of absolute terms; exact
for counts and for 0/1 labels unweighted).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _binning, _matrices, histogram, smooth
from .._engine import partition as _partition, user_stacklevel
from .._core.labels import matrix_classes
from .._core.validation import all_zero_weights, rescale_weights, weight_exponent
from ._inputs import binary_labels, check_probabilities, class_sums_chunk, label_set
from ._scores import BrierDecomposition

__all__ = [
    "Metrics",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "expected_calibration_error",
    "fit_histogram",
    "log_loss",
    "smooth_ece",
]


def _convert(chunk, pos_label, prob=True):
    """A validated chunk ``(p, labels, w)`` and its facts ``(n, lo, hi, classes, weight sum or None,
    largest weight)``. ``prob`` False: scores (finite, any range, called ``y_score``), labels as given (the
    caller decides the positive label from the set of all of them)."""
    from .._core.validation import as_float_array, as_label_array, check_finite, column_or_1d, is_binary

    p, y, w = chunk
    name = "y_prob" if prob else "y_score"
    y_arr = column_or_1d(np.asarray(y), "y_true", min_size=0)
    p_arr = column_or_1d(np.asarray(p), name, min_size=0)
    if y_arr.shape[0] != p_arr.shape[0]:
        raise ValueError(f"Inconsistent numbers of samples: y_true has {y_arr.shape[0]}, {name} has {p_arr.shape[0]}.")
    if not prob:
        x = as_float_array(p_arr, name)
        check_finite(x, name)
        if w is not None:
            w = _partition.prepare_chunk(x, np.zeros(x.shape[0], np.uint8), w, x.dtype, score_name=name)[2]
        classes = np.unique(y_arr)
        return (x, y_arr, w), (x.shape[0], math.inf, -math.inf, classes, None if w is None else float(w.sum()),
                               float(w.max()) if w is not None and w.shape[0] else 0.0)
    n = y_arr.shape[0]
    lab = as_label_array(y_arr, "y_true") if y_arr.dtype.kind in "biuf" else None
    if lab is not None and is_binary(lab):
        npos = int(np.count_nonzero(lab))
        classes = np.array([c for c, present in ((0, npos < n), (1, npos > 0)) if present], dtype=y_arr.dtype)
    else:
        classes = np.unique(y_arr)
    labels = binary_labels(y_arr, pos_label) if n else as_label_array(y_arr, "y_true")
    if p_arr.shape[0]:
        pv, lo, hi = check_probabilities(p_arr, "y_prob")
    else:
        pv, lo, hi = as_float_array(p_arr, "y_prob"), math.inf, -math.inf
    if w is not None:
        w = _partition.prepare_chunk(pv, labels, w, pv.dtype, score_name="y_prob")[2]
    return (pv, labels, w), (pv.shape[0], lo, hi, classes, None if w is None else float(w.sum()),
                             float(w.max()) if w is not None and w.shape[0] else 0.0)


def _table(chunk, edges, flags, exponent):
    p, y, w = chunk
    return _binning.bin_stats(p, y, rescale_weights(w, exponent)[0], edges, **flags)


def _table_and(chunk, edges, flags, exponent, fn, args):
    return _table(chunk, edges, flags, exponent), fn(chunk, *args)


def _counts(chunk, lo, scale):
    return _binning.bucket_histograms(chunk[0], lo, scale).sum(axis=0)


def _gather(chunk, lo, scale, marked):
    return _binning.gather_buckets(chunk[0], lo, scale, marked)[0]


def _grid(chunk, exponent):
    p, y, w = chunk
    return smooth.grid_sums(p, y, rescale_weights(w, exponent)[0])


class Metrics:
    """Validated metrics rows and what the caller knows of all of them (see the module docstring).

    ``Metrics(rows, x_dtype, weighted, pos_label)`` converts ``rows`` (one
    pass); :attr:`rows` are the converted chunks ``(p, labels, w)``, to be
    released with :meth:`release`.
    """

    def __init__(self, rows, x_dtype, weighted, pos_label, *, prob=True, greater=False, many=None):
        _binning.check_params(pos_label=pos_label)
        self.rows, facts = rows.convert(_convert, pos_label, prob)
        try:
            self.n = sum(f[0] for f in facts)
            if self.n == 0:
                raise ValueError("y_prob must have at least 1 element, got 0.")
            self.lo = min(f[1] for f in facts)
            self.hi = max(f[2] for f in facts)
            self.dtype = _partition.fit_dtype(x_dtype)
            # The in-memory label rules, applied to the set of all labels.
            self.classes = np.unique(np.concatenate([f[3] for f in facts]))
            positive = binary_labels(self.classes, pos_label, greater=greater, many=many) != 0
            self.positive = self.classes[positive]  # the labels that are positive
            if weighted and not sum(f[4] for f in facts if f[4] is not None) > 0:
                raise all_zero_weights()
        except BaseException:
            self.rows.release()
            raise
        self.weighted = weighted
        self.weight_max = max(f[5] for f in facts)
        # The weights of every chunk are rescaled by one power of two, as in memory (see rescale_weights).
        self.exponent = weight_exponent(None, max(f[5] for f in facts))

    def release(self):
        self.rows.release()

    def in_weight_units(self, value):
        """A sum of rescaled weights (see :meth:`table`) in the units of ``sample_weight``."""
        return np.ldexp(value, self.exponent)

    def edges(self, n_bins, strategy):
        n_bins = _binning.check_binning(n_bins, strategy)
        return _binning.bin_edges(n_bins, strategy, self.n, self.order_statistics)

    def order_statistics(self, ranks):
        """Exact values of the given ranks: the chunks' bucket counts, added; the chunks' values of the marked
        buckets."""
        lo = self.lo

        def count(scale):
            return sum(self.rows.map(_counts, lo, scale))

        def gather(scale, marked):
            pieces = self.rows.map(_gather, lo, scale, marked)
            return _binning.gather_buckets(np.concatenate(pieces), lo, scale, marked)

        return _binning.select_order_statistics(ranks, lo, self.hi, self.dtype, count, gather)

    def table(self, edges, **flags):
        """The bin table of all the rows: the chunks' tables, added in chunk order (weights rescaled by
        ``2**-exponent``)."""
        return _binning.merge_tables(self.rows.map(_table, edges, flags, self.exponent))

    def table_and(self, edges, fn, args, **flags):
        """``(table, results)``: :meth:`table`, and ``fn(chunk, *args)`` of every chunk (in chunk order), computed
        on the same visit of each chunk (``fn`` a module-level function, as for :meth:`Rows.map`)."""
        parts = self.rows.map(_table_and, edges, flags, self.exponent, fn, args)
        return _binning.merge_tables([t for t, _ in parts]), [r for _, r in parts]

    def grid(self):
        """The smooth-ECE grid sums of all the rows, added in chunk order."""
        return smooth.merge_grids(self.rows.map(_grid, self.exponent))


def _metrics_call(rows, x_dtype, weighted, pos_label, fn):
    data = Metrics(rows, x_dtype, weighted, pos_label)
    try:
        return fn(data)
    finally:
        data.release()


def fit_histogram(rows, *, x_dtype, weighted, n_bins=10, strategy="uniform"):
    """A fitted :class:`fastcal.HistogramBinning`: the bins of :func:`calibration_curve`, the chunks' bin tables."""
    n_bins, strategy = histogram.check_params(n_bins, strategy)

    def fit(data):
        edges = histogram.bin_edges(n_bins, strategy, data.n, data.order_statistics)
        return histogram.fitted_estimator(n_bins, strategy, edges, data.table(edges), data.exponent)

    return _metrics_call(rows, x_dtype, weighted, None, fit)


def calibration_curve(rows, *, x_dtype, weighted, pos_label=None, n_bins=5, strategy="uniform",
                      return_counts=False):
    """:func:`fastcal.calibration_curve` of the rows (``(prob_true, prob_pred[, counts])``)."""
    _binning.check_params(return_counts=return_counts)
    n_bins = _binning.check_binning(n_bins, strategy)  # before any pass over the data

    def curve(data):
        out = _binning.curve_from_table(data.table(data.edges(n_bins, strategy)), data.weighted, return_counts)
        if return_counts and data.weighted:
            return (*out[:2], data.in_weight_units(out[2]))
        return out

    return _metrics_call(rows, x_dtype, weighted, pos_label, curve)


def expected_calibration_error(rows, *, x_dtype, weighted, n_bins=15, strategy="uniform", norm="l1",
                               pos_label=None):
    """:func:`fastcal.expected_calibration_error` of the rows."""
    _binning.check_params(norm=norm)
    n_bins = _binning.check_binning(n_bins, strategy)
    return _metrics_call(rows, x_dtype, weighted, pos_label,
                         lambda data: _binning.ece_from_table(data.table(data.edges(n_bins, strategy)))[norm])


def brier_decomposition(rows, *, x_dtype, weighted, n_bins=10, strategy="uniform", pos_label=None):
    """:func:`fastcal.brier_decomposition` of the rows."""
    n_bins = _binning.check_binning(n_bins, strategy)

    def terms(data):
        table = data.table(data.edges(n_bins, strategy), moments=True, brier=True)
        return BrierDecomposition(*_binning.brier_terms_from_table(table))

    return _metrics_call(rows, x_dtype, weighted, pos_label, terms)


def smooth_ece(rows, *, x_dtype, weighted, bandwidth=None):
    """:func:`fastcal.smooth_ece` of binary rows: the chunks' grid sums added in chunk order, then smoothed."""
    bandwidth = smooth.check_bandwidth(bandwidth)
    return _metrics_call(rows, x_dtype, weighted, None,
                         lambda data: smooth.smooth_ece_from_grid(data.grid(), bandwidth))


# ---------------------------------------------------------------------------
# Losses, binary or of an (n, k) matrix of class probabilities.
# ---------------------------------------------------------------------------


def _matrix_convert(chunk):
    """A chunk of an (n, k) probability matrix: its labels and largest weight (the weights checked)."""
    from .._core.validation import check_sample_weight

    P, y, w = chunk
    y = np.asarray(y)
    if np.ndim(P) != 2 or np.shape(P)[0] != y.shape[0]:
        raise ValueError(f"Inconsistent numbers of samples: y_true has {y.shape[0]}, y_prob has "
                         f"{np.shape(P)[0] if np.ndim(P) else 0}.")
    w = check_sample_weight(w, y.shape[0]) if w is not None else None
    return (P, y, w), (label_set(y), (float(w.max()) if w is not None and w.shape[0] else 0.0),
                       y.shape[0])


def _matrix_sums(chunk, classes, exponent, flags):
    P, y, w = chunk
    return class_sums_chunk(y, np.asarray(P), w, classes, exponent, "y_prob", **flags)


def _class_sums(rows, n_classes, labels, **flags):
    """:func:`fastcal._matrices.class_rows` of all the rows of an (n, k) matrix: per-chunk sums added in chunk
    order, the weights rescaled by one power of two, as in memory. Returns ``(sums, exponent)``."""
    conv, facts = rows.convert(_matrix_convert)
    try:
        found = np.unique(np.concatenate([f[0] for f in facts])) if facts else np.empty(0)
        classes = matrix_classes(found, labels, n_classes, "y_prob", stacklevel=user_stacklevel())
        exponent = weight_exponent(None, max((f[1] for f in facts), default=0.0))
        parts = conv.map(_matrix_sums, classes, exponent, flags)
    finally:
        conv.release()
    sums = np.zeros_like(parts[0])
    for part in parts:  # in chunk order: deterministic
        sums += part
    _matrices.warn_rows_off(sums, sum(f[2] for f in facts), "y_prob", stacklevel=user_stacklevel())
    return sums, exponent


def brier_score_loss(rows, *, x_dtype, weighted, pos_label=None, labels=None, n_classes=None):
    """:func:`fastcal.brier_score_loss` of the rows: binary, or (``n_classes=k``) of an (n, k) matrix whose
    columns are the classes of ``y_true`` or ``labels`` in sorted order (halved for k = 2, as in memory)."""
    if n_classes is not None:
        sums, _ = _class_sums(rows, n_classes, labels, brier=True)
        score = float(sums[_matrices.RBRIER] / sums[_matrices.RW])
        return 0.5 * score if n_classes < 3 else score
    return _metrics_call(rows, x_dtype, weighted, pos_label, lambda data: _binning.column_mean(
        data.table(_binning.bin_edges(1, "uniform"), brier=True), _binning.SBRIER))


def log_loss(rows, *, x_dtype, weighted, pos_label=None, normalize=True, labels=None, n_classes=None):
    """:func:`fastcal.log_loss` of the rows: binary, or (``n_classes=k``) of an (n, k) matrix."""
    _binning.check_params(normalize=normalize)
    if n_classes is not None:
        sums, exponent = _class_sums(rows, n_classes, labels, logloss=True)
        loss = sums[_matrices.RLOG]
        return float(loss / sums[_matrices.RW]) if normalize else float(np.ldexp(loss, exponent))

    def loss(data):
        table = data.table(_binning.bin_edges(1, "uniform"), logloss=True)
        return (_binning.column_mean(table, _binning.SLOG) if normalize
                else float(data.in_weight_units(table[:, _binning.SLOG].sum())))

    return _metrics_call(rows, x_dtype, weighted, pos_label, loss)
