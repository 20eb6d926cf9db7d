r"""Score decomposition (CORP) over a :class:`~fastcal._engine.Rows`: the exact isotonic fit, then score sums.

Chunks are ``(y_prob, y_true, w)``, raw, validated as by the binned
diagnostics (:class:`fastcal._engine.binned.Metrics`: binary labels {0, 1} or
{-1, 1}, probabilities in [0, 1]). The recalibration is
:func:`fastcal._engine.isotonic.fit_isotonic` on the float64 predictions and
0/1 labels (its own range partition); one more :meth:`Rows.map` sums, per
chunk, the scores of ``p`` and of the fit's predictions
(:func:`fastcal.decomposition.score_sums`), added in chunk order.

Exactness
---------
The recalibration's blocks are the in-memory PAV fit's (thresholds
bit-identical, see :mod:`fastcal._engine.isotonic`); the sums are float64
per chunk added in chunk order, so the decomposition equals the in-memory
one to the rounding of those sums (about ``n`` eps relative; deterministic
for given chunks).
"""

from __future__ import annotations

import numpy as np

from .. import decomposition
from .._params import Options, check
from .._validation import rescale_weights
from . import isotonic
from .binned import Metrics

__all__ = ["score_decomposition"]


def _fit_columns(chunk):
    """A validated metrics chunk as the isotonic fit's columns: float64 predictions, 0/1 labels (uint8), weights."""
    p, labels, w = chunk
    return (p.astype(np.float64), (labels != 0).view(np.uint8), w), None


def _sums(chunk, estimator, scoring, exponent):
    p, labels, w = chunk
    w = rescale_weights(w, exponent)[0]
    p64 = p.astype(np.float64)
    recal = estimator.predict(p64) if p.shape[0] else p64
    return (*decomposition.score_sums(labels, p, w, scoring), decomposition.score_sums(labels, recal, w, scoring)[0])


def score_decomposition(rows, *, x_dtype, weighted, scoring="brier"):
    """:func:`fastcal.score_decomposition` of binary rows ``(y_prob, y_true, w)``: see the module docstring."""
    scoring = check("scoring", scoring, [Options("brier", "log_loss")])
    data = Metrics(rows, x_dtype, weighted, None)
    try:
        fit_rows, _ = data.rows.convert(_fit_columns)
        try:
            iso = isotonic.fit_isotonic(fit_rows, x_dtype=np.float64, weighted=weighted, out_of_bounds="clip")
        finally:
            fit_rows.release()
        parts = data.rows.map(_sums, iso, scoring, data.exponent)
    finally:
        data.release()
    score_sum, weight, positives, recal_sum = (float(v) for v in np.sum(np.array(parts, dtype=np.float64), axis=0))
    return decomposition.decomposition_from_sums(score_sum, recal_sum, weight, positives, scoring)
