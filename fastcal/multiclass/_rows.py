r"""The multiclass calibrators' fits over a :class:`~fastcal._engine.Rows`: temperature, vector and matrix scaling,
BCTS and Dirichlet calibration on any backend.

Chunks are ``(X, y, w)``, raw: ``X`` an (m, d) block of scores (d columns, one per class) or the m binary decision
values of one column, ``y`` class indices, ``w`` weights or None (a backend of 1-D columns makes them with
:func:`stack_columns`). The fit is the estimator's own
(:meth:`fastcal.multiclass._scaling.SoftmaxCalibration.fit_data`,
:meth:`fastcal.TemperatureScaling.fit_data`: the start from temperature scaling, the Newton fit of the family's
objective, the warnings), given a :class:`RowsData` instead of the arrays in memory:

1. one :meth:`Rows.convert` checks and converts the chunks (the in-memory errors: scores, class indices,
   weights), and returns each chunk's rows, class weights, largest weight, and whether its scores look like
   probabilities (a backend that converts rows in each pass, :meth:`Rows.convert_later`, makes a
   :meth:`Rows.map` of these facts, and converts both steps in every later pass: nothing is written back);
2. the caller decides, as the in-memory fit does for all the rows at once, whether the scores are read as
   probabilities (``input_type``); a second :meth:`Rows.convert` turns them into logits (the same
   :func:`fastcal.temperature.log_probabilities`), rescales the weights by the power of two of the largest
   (:func:`fastcal._core.validation.rescale_weights`), and returns each chunk's logit bounds and its rows of the
   two warm-start subsamples: every row whose global position is a multiple of the in-memory stride
   (:func:`fastcal.temperature.subsample_stride` for temperature scaling's start; 16 for the Newton start from
   65536 rows, or more to hold at most 2^20 rows), so that the subsamples are the in-memory ones;
3. every pass of temperature scaling's Halley steps and of the Newton driver is one :meth:`Rows.map` of the
   in-memory pass over a chunk (:func:`fastcal.temperature.loss_derivatives`,
   :func:`fastcal.multiclass._model.sum_pass`, :func:`fastcal.multiclass._model.linear_sum_pass`), added on the
   caller's side: exactly (the temperature derivatives' sums, :func:`math.fsum`), or in chunk order.

Exactness
---------
Deterministic for given chunks. The warm starts are the in-memory ones (the same subsample rows) up to
2^24 rows; the passes' sums round differently from the in-memory kernels' fixed chunks, so the parameters agree
with the in-memory fit to the Newton tolerance's accuracy (about 1e-10 relative on well-conditioned fits).
"""

from __future__ import annotations

import math

import numpy as np

from .._core.validation import (
    all_zero_weights,
    as_float_array,
    check_finite,
    rescale_weights,
    weight_exponent,
)
from .._engine import CHUNK_NUMBER, flat_column, user_stacklevel
from .._engine.chunked import merge_in_order
from ..temperature import (
    class_indices,
    log_probabilities,
    loss_derivatives,
    probability_facts,
    reads_probabilities,
    subsample_start,
    subsample_stride,
)
from . import _kernels as _k
from . import _model

__all__ = ["RowsData", "fit_softmax", "stack_columns"]

#: The Newton warm start's subsample holds at most this many rows (a stride above 16 from 2^24 rows).
_MAX_SUBSAMPLE_ROWS = 1 << 20


def stack_columns(chunk, d):
    """A chunk of columns ``(x_0, ..., x_{d-1}, y, w)`` as the driver's ``(X, y, w)``: a backend whose chunks hold
    1-D columns (Spark) gives the driver its rows through ``convert_later(stack_columns, d)``."""
    return np.column_stack(chunk[:d]) if d > 1 else chunk[0], chunk[d], chunk[d + 1]


def _scores(X, d, input_type):
    """A chunk's scores as float logits or probabilities, and whether they look like probabilities
    (:func:`fastcal.temperature.probability_facts`); one column of decision values x becomes (-x, x)."""
    arr = np.asarray(X)
    if d == 1:
        col = as_float_array(flat_column(arr.reshape(-1) if arr.ndim == 2 else arr, "X"), "X")
        check_finite(col, "X")
        return np.ascontiguousarray(np.stack([-col, col], axis=1)), (False, False)
    z = as_float_array(arr.reshape(0, d) if arr.size == 0 else arr, "X")
    if z.ndim != 2 or z.shape[1] != d:
        raise ValueError(f"X: a chunk of shape {z.shape}, expected (rows, {d}).")
    if input_type == "logits":
        check_finite(z, "X")
        return np.ascontiguousarray(z), (False, False)
    return np.ascontiguousarray(z), probability_facts(z, "X")


def _weights(w, m):
    if w is None:
        return None
    ws = as_float_array(flat_column(w, "sample_weight"), "sample_weight")
    if ws.shape[0] != m:
        raise ValueError(f"sample_weight has {ws.shape[0]} elements, expected {m} (one per sample).")
    check_finite(ws, "sample_weight")
    if m and ws.min() < 0:
        raise ValueError("sample_weight must be non-negative.")
    return np.ascontiguousarray(ws, dtype=np.float64)


def _check(chunk, d, input_type):
    """Step 1 of a raw chunk: ``((z, labels, w), (rows, class weights, largest weight, probability facts))``."""
    X, y, w = chunk
    z, facts = _scores(X, d, input_type)
    m, k = z.shape
    if m == 0:
        labels = np.empty(0, dtype=np.int64)
    else:
        labels = class_indices(y, z, d)
    ws = _weights(w, m)
    if labels.shape[0] != m:
        raise ValueError(f"Inconsistent numbers of samples: X has {m}, y has {labels.shape[0]}.")
    counts = np.bincount(labels, weights=ws, minlength=k).astype(np.float64)
    return (z, labels, ws), (m, counts, float(ws.max()) if ws is not None and m else 0.0, facts)


def _check_facts(chunk, d, input_type):
    """Step 1's facts of a raw chunk, without keeping the converted rows (backends that convert in each pass)."""
    return _check(chunk, d, input_type)[1]


def _take(arrays, start, stride):
    """The rows of ``arrays`` (a chunk's, starting at global row ``start``) whose global position is a multiple
    of ``stride``."""
    first = -start % stride
    return tuple(None if a is None else np.ascontiguousarray(a[first::stride]) for a in arrays)


def _to_logits(chunk, probabilities, centre, exponent):
    """Step 2 of a checked chunk: ``(z, labels, w)`` as the kernels read them, ``w`` rescaled by ``2**-exponent``
    or an empty array for unit weights."""
    z, labels, w = chunk
    if probabilities:
        z = np.ascontiguousarray(log_probabilities(z, centre))
    return z, labels, np.empty(0) if w is None else rescale_weights(w, exponent)[0]


def _logit_facts(chunk, number, starts, strides, weighted):
    """Step 2's facts of a chunk of logits: ``(colmax, spread, weight sum, subsamples)``."""
    z, labels, w = chunk
    m, k = z.shape
    colmax, spread = _model.logit_bounds(z) if m else ([0.0] * k, 0.0)
    total = float(w.sum(dtype=np.float64)) if weighted else float(m)
    subs = [None if s is None else _take((z, labels, w if weighted else None), starts[number], s) for s in strides]
    return colmax, spread, total, subs


def _converted(chunk, number, starts, probabilities, centre, exponent, strides, weighted):
    """Step 2 of a checked chunk, and its facts (backends that keep converted rows)."""
    new = _to_logits(chunk, probabilities, centre, exponent)
    return new, _logit_facts(new, number, starts, strides, weighted)


def _raw_to_logits(chunk, d, input_type, probabilities, centre, exponent):
    """Steps 1 and 2 of a raw chunk (backends that convert in each pass)."""
    return _to_logits(_check(chunk, d, input_type)[0], probabilities, centre, exponent)


def _derivatives(chunk, beta):
    z, labels, w = chunk
    if z.shape[0] == 0:
        return (0.0,) * 5
    return loss_derivatives(z, labels, w, beta)


def _affine_sums(chunk, a, b):
    z, labels, w = chunk
    if z.shape[0] == 0:
        return np.zeros(_k.n_sums(z.shape[1]))
    return _model.sum_pass(z, labels, w)(a, b)


def _linear_sums(chunk, first, k, W, b):
    z, labels, w = chunk
    x = np.ascontiguousarray(z[:, first:]) if first else z
    if x.shape[0] == 0:
        return np.zeros(_k.linear_n_sums(k, x.shape[1]))
    return _model.linear_sum_pass(x, labels, w, k)(W, b)


def _joined(parts):
    """One subsample from the chunks' pieces (None where a chunk had no such subsample)."""
    parts = [p for p in parts if p is not None]
    z = np.ascontiguousarray(np.concatenate([p[0] for p in parts]))
    labels = np.concatenate([p[1] for p in parts])
    w = np.empty(0) if parts[0][2] is None else np.concatenate([p[2] for p in parts])
    return z, labels, w


class RowsData:
    """The rows of a fit over a :class:`~fastcal._engine.Rows`: what :class:`fastcal.multiclass._model.ArrayData`
    is in memory (the same attributes and methods), over converted chunks ``conv`` (see the module docstring)."""

    def __init__(self, conv, n, k, total, bounds, counts, temperature_rows, newton_rows):
        self.conv, self.n, self.k, self.total, self.bounds, self.counts = conv, n, k, total, bounds, counts
        self._temperature_rows, self._newton_rows = temperature_rows, newton_rows

    def temperature_derivatives(self, beta):
        sums = self.conv.map(_derivatives, beta)
        return tuple(math.fsum(column) for column in zip(*sums))

    def temperature_start(self, max_iter):
        if self._temperature_rows is None:
            return 1.0
        return subsample_start(*self._temperature_rows, max_iter)

    def _sub(self, make):
        if self._newton_rows is None:
            return None
        zs, ls, ws = self._newton_rows
        total = float(ws.sum(dtype=np.float64)) if ws.shape[0] else float(zs.shape[0])
        return (lambda: make(_model.ArrayData(zs, ls, ws), total)) if total > 0.0 else None

    def affine(self, family, penalty=None):
        colmax, spread = self.bounds

        def run_pass(a, b):
            return merge_in_order(np.stack(self.conv.map(_affine_sums, a, b)))

        def sub_objective(data, total):
            return _model.affine_objective(data.z, data.labels, data.w, family, total, self.bounds, penalty)

        return _model.AffineObjective(run_pass, self.n, self.k, family, colmax, spread, self.total, penalty,
                                      self._sub(sub_objective))

    def linear(self, first, penalty=None):
        k = self.k
        colmax = self.bounds[0][first:]

        def run_pass(W, b):
            return merge_in_order(np.stack(self.conv.map(_linear_sums, first, k, W, b)))

        def sub_objective(data, total):
            x = np.ascontiguousarray(data.z[:, first:]) if first else data.z
            return _model.linear_objective(x, data.labels, data.w, k, total, colmax, penalty=penalty)

        return _model.LinearObjective(run_pass, self.n, k, k - first, colmax, self.total, None, penalty,
                                      self._sub(sub_objective))


def _newton_stride(n):
    if n < _model.WARM_START_MIN:
        return None
    return max(_model.SUBSAMPLE_STRIDE, -(-n // _MAX_SUBSAMPLE_ROWS))


def fit_softmax(rows, *, n_columns, calibrator, weighted=True):
    """Fit ``calibrator`` (an unfitted fastcal multiclass calibrator: :class:`fastcal.TemperatureScaling`,
    :class:`fastcal.VectorScaling`, :class:`fastcal.BiasCorrectedTemperatureScaling`,
    :class:`fastcal.MatrixScaling` or :class:`fastcal.DirichletCalibration`, whose parameters are used; it is not
    modified) on ``rows`` of ``(X, y, w)`` with ``n_columns`` columns of scores: a fitted copy.

    See the module docstring. Two conversions, then one :meth:`Rows.map` a pass (temperature scaling's start:
    two to four; the Newton fit: about three to ten).
    """
    est = type(calibrator)(**calibrator.get_params())
    input_type, centre = est.reading()
    d = int(n_columns)
    if d < 1:
        raise ValueError(f"X needs at least one column of scores, got {d}.")
    if d == 1 and input_type == "probabilities":
        raise ValueError("X holds one column; probabilities need one column per class (n, k).")
    later = hasattr(rows, "convert_later")  # converted in each pass (Spark): nothing written back
    if later:
        facts = rows.map(_check_facts, d, input_type)
        checked = None
    else:
        checked, facts = rows.convert(_check, d, input_type)
    try:
        sizes = [f[0] for f in facts]
        n = sum(sizes)
        if n == 0:
            raise ValueError("X must have at least 1 sample, got 0.")
        counts = np.sum([f[1] for f in facts], axis=0)
        if weighted and not counts.sum() > 0:
            raise all_zero_weights()
        probabilities = d > 1 and input_type != "logits" and reads_probabilities(
            input_type, all(f[3][0] for f in facts), all(f[3][1] for f in facts))
        exponent = weight_exponent(None, max(f[2] for f in facts)) if weighted else 0
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64).tolist()
        strides = (subsample_stride(n), _newton_stride(n))
        if later:
            conv = rows.convert_later(_raw_to_logits, d, input_type, probabilities, centre, exponent)
            try:
                more = conv.map(_logit_facts, CHUNK_NUMBER, starts, strides, weighted)
            except BaseException:
                conv.release()
                raise
        else:
            conv, more = checked.convert(_converted, CHUNK_NUMBER, starts, probabilities, centre, exponent, strides,
                                         weighted)
    finally:
        if checked is not None:
            checked.release()
    try:
        k = 2 if d == 1 else d
        colmax = np.max([m[0] for m in more], axis=0).tolist()
        spread = max(m[1] for m in more)
        total = math.fsum(m[2] for m in more)
        subs = [None if s is None else _joined([m[3][i] for m in more]) for i, s in enumerate(strides)]
        data = RowsData(conv, n, k, total, (colmax, spread), counts, subs[0], subs[1])
        return est.fit_data(data, d, "probabilities" if probabilities else "logits",
                            stacklevel=user_stacklevel() + 1)  # counted from fit_data
    finally:
        conv.release()
