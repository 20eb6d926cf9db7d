r"""The label-shift estimate over a backend's rows (:class:`~fastcal._engine.Rows`): :func:`estimate_label_shift`,
the in-memory orchestration (:func:`fastcal.label_shift._estimate.estimate_from`) given a :class:`RowsSamples`.

Source chunks are ``(P, y)``, target chunks ``(P,)``, raw: ``P`` an (m, k) block of a model's probabilities,
``y`` class indices. One :meth:`Rows.convert` of each checks and renormalises them (the in-memory errors, the
rows that do not sum to 1 counted over all chunks) and counts the source's classes. The calibrator is fitted by
the multiclass driver (:func:`fastcal.multiclass.rows.fit_softmax`) on the source rows, and applied to both
samples by another conversion (a backend that converts rows in each pass, :meth:`Rows.convert_later`: Spark,
maps the facts and converts later, as the EM's conversion then does); C (the joint frequencies of prediction and class on the source) and the target's
prediction frequencies are one :meth:`Rows.map` each (sums added in chunk order); the EM is the prior driver
(:func:`fastcal.prior.rows.estimate_priors_em`) on the target rows.

The bootstrap resamples the sufficient statistics (hard BBSE and RLLS without a calibrator), as in memory: the
same draws from the same C and frequencies. Resampling rows (the other methods) is refused: each replicate would
refit the calibrator over all the rows.

Exactness
---------
C, the frequencies and the source priors are sums of the rows' values, added in another order than in memory
(the counts exactly; soft sums to a few ulp); the calibrator's fit and the EM agree with the in-memory ones to
their tolerances. So the priors agree with the in-memory estimate to about the EM's ``tol`` (BBSE and RLLS: to
the rounding of the sums, amplified by the condition number of C).
"""

from __future__ import annotations

import numpy as np

from .._engine import convert as _convert
from .._engine import user_stacklevel
from .._engine.chunked import merge_in_order
from ..multiclass import rows as _multiclass_rows
from ..prior import rows as _prior_rows
from ..temperature import class_indices
from ._estimate import (
    check_classes,
    check_parameters,
    check_row_sums,
    checked_probabilities,
    estimate_from,
    resamples_statistics,
)

__all__ = ["RowsSamples", "estimate_label_shift"]


def _source(chunk, k):
    """A raw source chunk checked: ``((p, labels, None), (rows, bad rows, class counts))`` (the multiclass driver's
    chunk layout, unweighted)."""
    P, y = chunk[0], chunk[1]  # (a weight column, as the Dask adapter's matrices have, is None)
    p, bad = checked_probabilities(np.asarray(P).reshape(-1, k), "proba_source")
    labels = (class_indices(y, p, k, "y_source", "proba_source") if p.shape[0]
              else np.empty(0, dtype=np.int64))
    return (p, labels, None), (p.shape[0], bad, np.bincount(labels, minlength=k).astype(np.float64))


def _target(chunk, k):
    """A raw target chunk checked: ``((p,), (rows, bad rows))``."""
    p, bad = checked_probabilities(np.asarray(chunk[0]).reshape(-1, k), "proba_target")
    return (p,), (p.shape[0], bad)


def _calibrated(chunk, cal):
    """A checked chunk with its probabilities calibrated by the fitted ``cal`` (the same layout), and its rows."""
    p = chunk[0]
    q = np.asarray(cal.predict_proba(p), dtype=np.float64) if p.shape[0] else p
    return (q, *chunk[1:]), p.shape[0]


def _joint(chunk, k, soft):
    """The chunk's sums of C: the (prediction, class) counts, or the probabilities summed by class."""
    p, labels, _ = chunk
    if soft:
        C = np.zeros((k, k))
        for j in range(k):
            C[:, j] = p[labels == j].sum(axis=0)
        return C.ravel()
    return np.bincount(p.argmax(axis=1) * k + labels, minlength=k * k).astype(np.float64) if p.shape[0] else \
        np.zeros(k * k)


def _prediction_sums(chunk, k, soft):
    p = chunk[0]
    if not p.shape[0]:
        return np.zeros(k)
    return p.sum(axis=0) if soft else np.bincount(p.argmax(axis=1), minlength=k).astype(np.float64)


class _ConvertingLater:
    """``rows`` whose :meth:`convert` is :func:`fastcal._engine.convert` (the EM driver's (n, k) blocks on a
    backend that keeps only 1-D columns); the rest of the Rows protocol is ``rows``'."""

    def __init__(self, rows):
        self._rows = rows
        self.parallelism = rows.parallelism

    def map(self, fn, *args):
        return self._rows.map(fn, *args)

    def convert(self, fn, *args):
        return _convert(self._rows, fn, *args)

    def release(self):
        """Nothing of its own: ``rows`` is released by its owner."""


class RowsSamples:
    """The source and target samples over converted rows: what
    :class:`fastcal.label_shift._estimate.ArraySamples` is in memory (the same attributes and methods, but no
    ``resampled``). ``release()`` frees the backend's converted rows."""

    def __init__(self, source, target, k, n_source, n_target, counts, owned):
        self.source, self.target, self.k = source, target, k
        self.n_source, self.n_target, self._counts, self._owned = n_source, n_target, counts, owned

    def source_counts(self):
        return self._counts

    def calibrated(self, cal):
        fitted = _multiclass_rows.fit_softmax(self.source, n_columns=self.k, calibrator=cal, weighted=False)
        source, _ = _convert(self.source, _calibrated, fitted)
        self._owned.append(source)
        target, _ = _convert(self.target, _calibrated, fitted)
        self._owned.append(target)
        return RowsSamples(source, target, self.k, self.n_source, self.n_target, self._counts, self._owned), fitted

    def joint(self, soft):
        return merge_in_order(np.stack(self.source.map(_joint, self.k, soft))).reshape(self.k, self.k) / self.n_source

    def target_means(self, soft):
        return merge_in_order(np.stack(self.target.map(_prediction_sums, self.k, soft))) / self.n_target

    def em(self, source, max_iter, tol):
        target = _ConvertingLater(self.target) if hasattr(self.target, "convert_later") else self.target
        return _prior_rows.estimate_priors_em(target, x_dtype=np.float64, train_priors=source,
                                              max_iter=max_iter, tol=tol)

    def release(self):
        for rows in self._owned:
            rows.release()
        self._owned.clear()


def estimate_label_shift(source_rows, target_rows, *, n_classes, method="em", calibrator="auto", n_bootstrap=0,
                         confidence=0.95, random_state=None, max_iter=1000, tol=1e-8, condition_warning=100.0,
                         rlls_alpha=0.01):
    """:func:`fastcal.estimate_label_shift` over ``source_rows`` of ``(P, y)`` and ``target_rows`` of ``(P,)``
    (``n_classes`` columns of probabilities): the same :class:`fastcal.LabelShiftResult` (see the module
    docstring). ``calibrator`` is a name or one of fastcal's multiclass calibrators (it is not modified);
    ``n_bootstrap`` is for hard BBSE and RLLS without a calibrator."""
    check_parameters(method, n_bootstrap, confidence, max_iter, tol, condition_warning, rlls_alpha)
    k = int(n_classes)
    check_classes(k, "proba_source")
    if n_bootstrap and not resamples_statistics(method, calibrator):
        raise ValueError("n_bootstrap: over a backend's rows the bootstrap resamples the sufficient statistics, "
                         "which hard BBSE and RLLS without a calibrator have (method='bbse' or 'rlls', "
                         "calibrator=None or 'auto'); the other estimates would refit the calibrator over all the "
                         "rows per replicate.")
    if not (isinstance(calibrator, str) or calibrator is None or hasattr(calibrator, "fit_data")):
        raise TypeError("calibrator must be 'auto', 'bcts', 'vector', 'temperature', None, or one of fastcal's "
                        f"multiclass calibrators over a backend's rows; got {type(calibrator).__name__}.")
    owned = []
    try:
        source, facts = _convert(source_rows, _source, k)
        owned.append(source)
        target, tfacts = _convert(target_rows, _target, k)
        owned.append(target)
        n_source, n_target = sum(f[0] for f in facts), sum(f[0] for f in tfacts)
        for n, name in ((n_source, "proba_source"), (n_target, "proba_target")):
            if n == 0:
                raise ValueError(f"{name} must have at least 1 row.")
        check_row_sums(sum(f[1] for f in facts), "proba_source")
        check_row_sums(sum(f[1] for f in tfacts), "proba_target")
        counts = np.sum([f[2] for f in facts], axis=0)
        data = RowsSamples(source, target, k, n_source, n_target, counts, owned)
        return estimate_from(data, method=method, calibrator=calibrator, n_bootstrap=n_bootstrap,
                             confidence=confidence, random_state=random_state, max_iter=max_iter, tol=tol,
                             condition_warning=condition_warning, rlls_alpha=rlls_alpha, stacklevel=user_stacklevel())
    finally:
        for rows in owned:
            rows.release()
