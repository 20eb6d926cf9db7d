r"""Inductive Venn-Abers predictors (Vovk, Petej & Fedorova 2015).

:class:`VennAbers` calibrates a binary classifier's scores into a pair of
probabilities ``(p0, p1)`` per test object, one of which is guaranteed
well calibrated under exchangeability, and their merge
``p = p1 / (1 - p0 + p1)``. The fit sorts the calibration scores once (the
isotonic module's per-class sort, no argsort, for unweighted 0/1 labels) and
precomputes ``p0`` and ``p1`` for every gap between distinct calibration
scores in O(k log k) (:mod:`fastcal.venn_abers._kernels`); a prediction is two
binary searches. Cross-Venn-Abers (CVAP) is
``fastcal.CalibratedClassifierCV(method="venn_abers")``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Self

import numpy as np

from . import _kernels as _k
from .._base import BaseCalibrator, check_is_fitted
from .._core.parallel import parallel_for, run
from .._persist import register
from ..isotonic import chunk_count
from .._engine.sort import argsort, sort_by_label
from .._core.validation import (
    as_float_array,
    check_binary_labels,
    check_consistent_length,
    check_finite,
    check_sample_weight,
    column_or_1d,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["VennAbers", "merge_intervals"]

#: Prediction bisects every 2nd calibration score first, 16 test scores in lockstep (see
#: ``_kernels.predict``); measured at 10^6 scores: as fast as every score (which would copy
#: all of them), 20% faster than every 8th, 35% faster than every 64th.
_STRIDE = 2


def _class_groups(x, labels):
    """The distinct scores of unweighted 0/1 labels and their CSD: ``(c, W, Y)`` (see :func:`_csd`).

    The scores are sorted per class by score range (:func:`fastcal._engine.sort.sort_by_label`, as the isotonic fit
    sorts them). A range holds every copy of its scores, so the ranges are grouped independently
    (:func:`~fastcal.venn_abers._kernels.group_class_runs`), on whichever threads take them, each into its
    rows' place; the distinct scores are then packed and the CSD summed over the pieces in order. The sums
    are counts, exact in any order.
    """
    n = x.shape[0]
    by = sort_by_label(x, labels, chunk_count(n))
    r = by.ranges
    offsets = by.starts[:r + 1] + (by.starts[r:] - by.starts[r])  # rows of both classes before each range
    c, cw, cy = np.empty(n, dtype=x.dtype), np.empty(n), np.empty(n)
    ks = np.array(run([(_k.group_class_runs, (by.slot(s), by.slot(r + s), c[offsets[s]:], cw[offsets[s]:],
                                               cy[offsets[s]:])) for s in range(r)]), dtype=np.int64)
    del by
    at = np.zeros(r + 1, dtype=np.int64)
    np.cumsum(ks, out=at[1:])
    packed = np.empty(int(at[-1]), dtype=x.dtype)
    run([(_pack, (c, packed, int(offsets[s]), int(at[s]), int(ks[s]))) for s in range(r)])
    return (packed, *_csd(cw, cy, np.ascontiguousarray(offsets[:r]), ks))


def _pack(src, dst, lo, at, k):
    dst[at:at + k] = src[lo:lo + k]


def _csd(cw, cy, starts, counts):
    """The cumulative sum diagram ``W``, ``Y`` (length ``k + 1``) of groups stored in pieces (:func:`~fastcal.venn_abers._kernels.cumulate`)."""
    k = int(counts.sum())
    W, Y = np.empty(k + 1), np.empty(k + 1)
    _k.cumulate(cw, cy, starts, counts, W, Y)
    return W, Y


@register
class VennAbers(BaseCalibrator):
    r"""Inductive Venn-Abers predictor (IVAP) for binary classification.

    For a test score ``s``, isotonic regression is fitted to the calibration
    scores and labels with ``(s, 0)`` added, and again with ``(s, 1)`` added;
    the fitted values at ``s`` are ``p0 <= p1``. Under exchangeability one of
    the two is a perfectly calibrated probability (Vovk, Petej & Fedorova
    2015). The merged probability, minimising the worst log loss, is

    .. math:: p = \frac{p_1}{1 - p_0 + p_1}.

    Attributes
    ----------
    c_ : ndarray of shape (k,)
        The distinct calibration scores, sorted (dtype of the scores).
    p0_, p1_ : ndarray of shape (k + 1,)
        ``p0_[i]``, ``p1_[i]``: the probabilities of a test score that falls
        in gap ``i``, after ``c_[i-1]`` and before ``c_[i]`` (float64).

    Notes
    -----
    **Ties** are handled as the ``venn-abers`` package handles them (the
    same intervals as the package's): a test score equal to a calibration score
    is placed after its ties when labelled 0 and before them when labelled 1,
    that is ``p0 = p0_[searchsorted(c_, s, "right")]`` and
    ``p1 = p1_[searchsorted(c_, s, "left")]``. Calibration scores tie only
    when exactly equal (isotonic regression's pooling of scores closer than
    the dtype's resolution is not applied).

    **Weights.** ``sample_weight`` are frequency weights, rescaled to mean 1
    over the rows of positive weight, so that the test object weighs as much
    as an average calibration object and the result does not depend on the
    weights' scale. Unit weights give the standard IVAP; other weights lose
    its exact validity guarantee, which rests on exchangeable, equally
    weighted objects.

    **Algorithm.** The calibration scores are sorted (per class, without an
    argsort, as :class:`fastcal.IsotonicRegression` does), grouped into
    distinct values, and ``p0``/``p1`` are precomputed for every gap from the
    cumulative sum diagram by the corner sweeps of the paper's Algorithms
    1-4, the tangent to the convex hull of one side found by binary search:
    O(n log n) for the sort, O(k log k) for the tables. Prediction is two
    binary searches per score, in parallel.

    Out-of-core and Dask fits are not offered: every test score needs the
    whole calibration set's hull sweep, which does not split into partitions
    the way a PAV fit does (the tables need all ``k`` distinct scores in memory;
    at 10^8 distinct scores that is 2.4 GB).

    References
    ----------
    Vovk, V., Petej, I. and Fedorova, V. (2015). Large-scale probabilistic
    predictors with and without guarantees of validity. NeurIPS 28.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import VennAbers
    >>> scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    >>> labels = np.array([0, 1, 0, 0, 1, 1])
    >>> va = VennAbers().fit(scores, labels)
    >>> p0, p1 = va.predict_interval([0.35])
    >>> print(p0, p1)
    [0.25] [0.5]
    >>> va.predict_proba([0.35])
    array([[0.6, 0.4]])
    """

    c_: NDArray[np.floating]
    p0_: NDArray[np.float64]
    p1_: NDArray[np.float64]

    _state_schema = {"c_": "array", "p0_": "array", "p1_": "array"}

    def __init__(self) -> None:
        pass

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit on calibration scores and 0/1 labels.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Calibration scores, finite (any real scores: probabilities,
            logits, decision values). float32 stays float32.
        y : array-like of shape (n_samples,) or (n_samples, 1)
            Labels, 0 or 1.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative frequency weights (see Notes); zero weights drop a row.

        Returns
        -------
        self : VennAbers
        """
        self._validate_params()
        x = as_float_array(column_or_1d(X, "X"), "X")
        check_finite(x, "X")
        y_arr = column_or_1d(y, "y", min_size=0)  # (n, 1) too, as the other calibrators
        check_consistent_length(X=x, y=y_arr)
        labels = check_binary_labels(y_arr, "y")
        w = check_sample_weight(sample_weight, x.shape[0], rescale=True)  # the mean below cannot overflow
        if w is None:
            c, W, Y = _class_groups(x, labels)
        else:
            keep = w > 0
            if not keep.all():
                x, labels, w = x[keep], labels[keep], w[keep]
            w = np.asarray(w, dtype=np.float64)
            w = w / (w.sum() / w.shape[0])
            order = argsort(x)
            c, cw, cy = np.empty(x.shape[0], dtype=x.dtype), np.empty(x.shape[0]), np.empty(x.shape[0])
            k = _k.group_sorted(x[order], labels[order], w[order], c, cw, cy)
            del order
            c = c[:k].copy()
            W, Y = _csd(cw, cy, np.zeros(1, dtype=np.int64), np.array([k], dtype=np.int64))
        p0 = np.empty(W.shape[0])
        p1 = np.empty(W.shape[0])
        _k.tables(W, Y, 1.0, p0, p1)
        self.c_ = c
        self.p0_ = p0
        self.p1_ = p1
        return self

    def _check_loaded_state(self):
        super()._check_loaded_state()
        c, p0, p1 = self.c_, self.p0_, self.p1_
        if c.ndim != 1 or c.shape[0] == 0 or c.dtype.kind != "f":
            raise ValueError("invalid fastcal model: c_ must be a non-empty 1-D float array")
        if np.any(np.diff(c) <= 0):
            raise ValueError("invalid fastcal model: c_ must be strictly increasing")
        for name, p in (("p0_", p0), ("p1_", p1)):
            if p.dtype != np.float64 or p.shape != (c.shape[0] + 1,):
                raise ValueError(f"invalid fastcal model: {name} must be float64 with one more value than c_")
            if np.any((p < 0) | (p > 1)):
                raise ValueError(f"invalid fastcal model: {name} must lie in [0, 1]")
        if np.any(p0 > p1):
            raise ValueError("invalid fastcal model: p0_ must not exceed p1_")
        if p0[0] != 0 or p1[-1] != 1:
            raise ValueError("invalid fastcal model: p0_ must start at 0 and p1_ end at 1")

    def _prediction_table(self):
        """``(c_, p0_, p1_)`` interleaved by row, and every ``_STRIDE``-th score (built once per fit)."""
        table = getattr(self, "_table", None)
        if table is None or table[0] is not self.c_:
            rec = _k.records(self.c_, self.p0_, self.p1_)
            table = (self.c_, rec, rec[: self.c_.shape[0] : _STRIDE, :1].copy())
            self._table = table
        return table[1], table[2]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_table", None)
        return state

    def _run(self, T, merged):
        check_is_fitted(self, "c_")
        c = self.c_
        t = as_float_array(column_or_1d(T, "T", min_size=0), "T", dtype=c.dtype)
        check_finite(t, "T")
        n = t.shape[0]
        out0 = np.empty(n, dtype=c.dtype)
        out1 = np.empty(n, dtype=c.dtype)
        out = np.empty(n if merged else 0)
        rec, top = self._prediction_table()
        parallel_for(_k.predict, n, t, rec, top, _STRIDE, out0, out1, out)
        return out0, out1, out

    def predict_interval(self, T: ArrayLike) -> tuple[NDArray[np.floating], NDArray[np.floating]]:
        """The Venn-Abers pair ``(p0, p1)`` of each test score.

        Parameters
        ----------
        T : array-like of shape (n_samples,) or (n_samples, 1)
            Scores, finite; cast to the dtype of ``c_``.

        Returns
        -------
        p0, p1 : ndarray of shape (n_samples,)
            ``p0 <= p1``, in the dtype of ``c_``.
        """
        p0, p1, _ = self._run(T, False)
        return p0, p1

    def predict(self, T: ArrayLike) -> NDArray[np.floating]:
        """The merged probability of class 1, ``p1 / (1 - p0 + p1)``, in the dtype of ``c_``."""
        return self._run(T, True)[2].astype(self.c_.dtype, copy=False)

    def predict_proba(self, T: ArrayLike) -> NDArray[np.floating]:
        """Merged probabilities in scikit-learn's layout: column 0 is ``1 - p``, column 1 is ``p``."""
        p = self.predict(T)
        return np.column_stack([1 - p, p])


def merge_intervals(p0: ArrayLike, p1: ArrayLike) -> NDArray[np.float64]:
    r"""Merge the Venn-Abers pairs of several predictors (the folds of a CVAP) into one probability.

    With ``p0``, ``p1`` of shape ``(n_folds, n)``, the cross-Venn-Abers merge of
    Vovk, Petej & Fedorova (2015) is

    .. math:: p = \frac{G(p_1)}{G(1 - p_0) + G(p_1)}

    with :math:`G` the geometric mean over the folds; with one fold it is
    ``p1 / (1 - p0 + p1)``. Returns float64 of shape ``(n,)``.
    """
    a = np.asarray(p0, dtype=np.float64)
    b = np.asarray(p1, dtype=np.float64)
    if a.ndim == 2 and a.shape[0] == 1:
        a, b = a[0], b[0]
    if a.ndim == 1:
        return b / (1.0 - a + b)
    with np.errstate(divide="ignore"):
        g1 = np.exp(np.mean(np.log(b), axis=0))
        g0 = np.exp(np.mean(np.log1p(-a), axis=0))
    return g1 / (g0 + g1)
