r"""Histogram binning (Zadrozny & Elkan 2001).

The calibrated probability of a score is the (weighted) rate of positives
among the calibration rows of its bin. The bins and the per-bin sums are
those of :mod:`fastcal._binning` (the engine of ``calibration_curve``): one
parallel pass over the rows, the same bits on any number of threads.
Internal API (for :mod:`fastcal.dask` and :mod:`fastcal.grouped`): :func:`check_params`,
:func:`bin_edges`, :func:`fitted_estimator`, :func:`fitted_estimators`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Self

import numpy as np

from . import _binning
from ._base import BaseCalibrator, check_is_fitted
from ._persist import register
from ._prediction import Steps
from ._core.validation import (
    as_float_array,
    as_label_array,
    check_binary_labels,
    check_consistent_length,
    check_sample_weight,
    column_or_1d,
    rescale_weights,
    value_range,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["HistogramBinning"]


def _check_probabilities(p, name):
    lo, hi = value_range(p, name)  # one pass: NaN and infinity raise there
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"{name} must contain probabilities in [0, 1].")
    return p


def check_params(n_bins, strategy):
    """``(n_bins, strategy)`` checked (as the diagnostics check them) and normalised."""
    return _binning.check_binning(n_bins, strategy), strategy


def bin_edges(n_bins, strategy, n, select):
    """The bin edges of a fit on ``n`` probabilities whose order statistics ``select(ranks)`` returns:
    ``calibration_curve``'s edges, with the outer "quantile" edges moved to 0 and 1."""
    edges = _binning.bin_edges(n_bins, strategy, n, select)
    edges[0], edges[-1] = 0.0, 1.0
    return edges


def _set_fitted(est, edges, table, weight_exponent):
    return _fitted_many([est], edges, table[None, :, _binning.W], table[None, :, _binning.SY],
                        np.array([weight_exponent]))[0]


def _fitted_many(ests, edges, weight, positive, weight_exponent):
    """Set the fitted state of each ``ests[g]`` from its bin weights ``weight[g]``, weights of positives
    ``positive[g]`` (float64, shape ``(len(ests), n_bins)``) and weight exponent ``weight_exponent[g]``; returns
    ``ests``."""
    mid = 0.5 * (edges[:-1] + edges[1:])
    values = np.divide(positive, weight, out=np.broadcast_to(mid, weight.shape).copy(), where=weight > 0)
    np.clip(values, 0.0, 1.0, out=values)
    weights = np.ldexp(weight, np.asarray(weight_exponent)[:, None])
    for est, v, bw in zip(ests, values, weights):
        est.bin_edges_ = edges.copy()
        est.bin_values_ = v
        est.bin_weights_ = bw
    return ests


def fitted_estimator(n_bins, strategy, edges, table, weight_exponent=0):
    """A fitted :class:`HistogramBinning` from its :func:`bin_edges` and the bin table
    (:func:`fastcal._binning.bin_stats`, or such tables merged) of all the rows: the fit of every backend.

    The table's weights may be rescaled by :func:`fastcal._core.validation.rescale_weights` (``weight_exponent``
    its exponent): the values do not depend on it, ``bin_weights_`` are in the caller's units.
    """
    return _set_fitted(HistogramBinning(n_bins=n_bins, strategy=strategy), edges, table, weight_exponent)


def fitted_estimators(n_bins, strategy, edges, weight, positive, weight_exponent):
    """:func:`fitted_estimator` of many fits on the same ``edges`` at once (for :mod:`fastcal.grouped`): fit ``g``
    has the bin weights ``weight[g]`` and weights of positives ``positive[g]`` (the :data:`~fastcal._binning.W`
    and :data:`~fastcal._binning.SY` columns of its table; arrays of shape ``(fits, n_bins)``) and the weight
    exponent ``weight_exponent[g]``. The same arithmetic, element by element, as :func:`fitted_estimator`."""
    ests = [HistogramBinning(n_bins=n_bins, strategy=strategy) for _ in range(weight.shape[0])]
    return _fitted_many(ests, edges, weight, positive, weight_exponent)


@register
class HistogramBinning(BaseCalibrator):
    r"""Histogram binning: the calibrated probability is the positive rate of the score's bin.

    Parameters
    ----------
    n_bins : int, default 10
        Number of bins, at most 2**20 (as the diagnostics' ``n_bins``).
    strategy : {"uniform", "quantile"}, default "uniform"
        "uniform": bins of equal width on [0, 1]; "quantile": inner edges at
        the quantiles of the calibration probabilities (NumPy's percentiles,
        as ``calibration_curve``), the outer edges set to 0 and 1 (as
        ``netcal``), so that every probability in [0, 1] has a bin.

    Attributes
    ----------
    bin_edges_ : ndarray of shape (n_bins + 1,)
        The bin edges; bin k is :math:`(e_k, e_{k+1}]`, the first
        :math:`[e_0, e_1]` (scikit-learn's ``calibration_curve`` bins).
        Quantile edges may repeat; a bin between equal edges is empty.
    bin_values_ : ndarray of shape (n_bins,)
        The calibrated probability of each bin: :math:`\sum_{i \in k} w_i y_i
        / \sum_{i \in k} w_i`, or, for a bin without weight in the calibration
        data, its midpoint :math:`(e_k + e_{k+1}) / 2` (``netcal``'s rule: an
        empty bin keeps the probabilities it covers roughly unchanged).
    bin_weights_ : ndarray of shape (n_bins,)
        The calibration weight of each bin (row counts without weights).

    Notes
    -----
    Takes probabilities of the positive class in [0, 1] (clip or squash
    other scores first; :class:`fastcal.CalibratedClassifierCV` maps decision
    values through the logistic function). The map is a step function, not
    necessarily monotone; predictions are float64.

    References
    ----------
    Zadrozny, B. and Elkan, C. (2001). Obtaining calibrated probability
    estimates from decision trees and naive Bayesian classifiers. ICML 2001.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import HistogramBinning
    >>> p = np.array([0.1, 0.15, 0.2, 0.6, 0.7, 0.9])
    >>> y = np.array([0, 0, 1, 1, 0, 1])
    >>> cal = HistogramBinning(n_bins=2).fit(p, y)
    >>> cal.bin_values_
    array([0.33333333, 0.66666667])
    >>> cal.predict([0.05, 0.95])
    array([0.33333333, 0.66666667])
    """

    bin_edges_: NDArray[np.float64]
    bin_values_: NDArray[np.float64]
    bin_weights_: NDArray[np.float64]

    _one_d_input = True  # 1-D probabilities in, as IsotonicRegression
    _state_schema = {"bin_edges_": "array", "bin_values_": "array", "bin_weights_": "array"}
    _parameter_constraints = {"n_bins": _binning.PARAMETERS["n_bins"], "strategy": _binning.PARAMETERS["strategy"]}

    def __init__(self, n_bins: int = 10, strategy: Literal["uniform", "quantile"] = "uniform") -> None:
        self.n_bins = n_bins
        self.strategy = strategy

    def fit(self, p: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the bins and their positive rates to probabilities ``p`` and binary labels ``y``; returns ``self``."""
        n_bins, strategy = check_params(self.n_bins, self.strategy)
        pv = _check_probabilities(as_float_array(column_or_1d(p, "p"), "p"), "p")
        yv = check_binary_labels(as_label_array(column_or_1d(y, "y"), "y"), "y")
        check_consistent_length(p=pv, y=yv)
        w, exponent = rescale_weights(check_sample_weight(sample_weight, pv.shape[0]))
        lo, hi = pv.min(), pv.max()
        edges = bin_edges(n_bins, strategy, pv.shape[0], lambda ranks: _binning.order_statistics(pv, ranks, lo, hi))
        return _set_fitted(self, edges, _binning.bin_stats(pv, yv, w, edges), exponent)

    def predict(self, p: ArrayLike) -> NDArray[np.floating]:
        """The calibrated probabilities: the value of each probability's bin (float64)."""
        check_is_fitted(self, "bin_values_")
        pv = _check_probabilities(as_float_array(column_or_1d(p, "p", min_size=0), "p"), "p")
        return self.bin_values_[np.searchsorted(self.bin_edges_[1:-1], pv, side="left")]

    def prediction_data(self) -> Steps:
        """What :meth:`predict` computes, as data (:class:`fastcal._prediction.Steps`): the inner bin edges and the
        bins' values; for backends that compute the prediction elsewhere (``fastcal.spark.predict``)."""
        check_is_fitted(self, "bin_values_")
        return Steps(self.bin_edges_[1:-1].copy(), self.bin_values_.copy())

    def _check_loaded_state(self):
        super()._check_loaded_state()
        n_bins = self._validate_params()["n_bins"]
        edges, values, weights = self.bin_edges_, self.bin_values_, self.bin_weights_
        if edges.dtype != np.float64 or values.dtype != np.float64 or weights.dtype != np.float64:
            raise ValueError("invalid fastcal model: the bin arrays must be float64")
        if edges.shape != (n_bins + 1,) or values.shape != (n_bins,) or weights.shape != (n_bins,):
            raise ValueError(f"invalid fastcal model: n_bins={n_bins} needs {n_bins + 1} bin_edges_ and "
                             f"{n_bins} bin_values_ and bin_weights_")
        if edges[0] != 0.0 or edges[-1] != 1.0 or np.any(np.diff(edges) < 0):
            raise ValueError("invalid fastcal model: bin_edges_ must rise from 0 to 1")
        if np.any(values < 0.0) or np.any(values > 1.0) or np.any(np.signbit(weights)):  # -0.0 is no weight a fit gives
            raise ValueError("invalid fastcal model: bin_values_ must be in [0, 1] and bin_weights_ non-negative")
        if not weights.sum() > 0.0:
            raise ValueError("invalid fastcal model: bin_weights_ must have a positive sum (a fit has data)")
        empty = weights == 0.0
        if np.any(values[empty] != (0.5 * (edges[:-1] + edges[1:]))[empty]):
            raise ValueError("invalid fastcal model: a bin without weight must hold its midpoint (the fit's rule)")
