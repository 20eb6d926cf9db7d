"""ECCE, its null standard deviation and p-value (Kuiper's distribution), and the aggregate calibration metrics
(calibration ratio, proportional ECE, normalized entropy); the checks of the segment tools' inputs."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .. import _binning
from . import _kuiper_kernels as _k
from .._core.results import Result
from .._core.validation import (
    as_float_array,
    check_binary_labels,
    check_consistent_length,
    check_probability_range,
    check_sample_weight,
    column_or_1d,
    rescale_factor,
    rescale_weights,
    weight_exponent,
)
from .._coding import cell_type
from ._sums import segment_sums

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


@dataclass(frozen=True, eq=False, repr=False)
class ECCEResult(Result):
    """The ECCE, its standard deviation under calibration, their ratio and the p-value (see :func:`ecce`)."""

    ecce: float
    std: float
    ecce_sigma: float
    pvalue: float


# ---------------------------------------------------------------------------
# Kuiper's distribution
# ---------------------------------------------------------------------------
def kuiper_cdf(x: float) -> float:
    r"""CDF of the range of a standard Brownian motion on [0, 1] (Kuiper's distribution).

    Two series, each used where it converges in a few terms (Feller 1951):
    for :math:`x < 2`

    .. math:: F(x) = \sum_{k \ge 0} \Big(\frac{8}{x^2} + \frac{2}{(k + \frac12)^2 \pi^2}\Big)
              e^{-2 (k + \frac12)^2 \pi^2 / x^2},

    and for :math:`x \ge 2` the survival function
    :math:`1 - F(x) = 8 \sum_{k \ge 1} (-1)^{k-1} k\, Q(kx)`, :math:`Q` the
    standard normal upper tail, so :func:`kuiper_sf` keeps its relative
    accuracy far in the tail.

    Examples
    --------
    >>> from fastcal.multicalibration import kuiper_cdf
    >>> round(kuiper_cdf(2.0), 6)
    0.818506
    """
    return float(_k.kuiper_cdf(float(x)))


def kuiper_sf(x: float) -> float:
    """``1 - kuiper_cdf(x)``, accurate to rounding relative to itself (see :func:`kuiper_cdf`)."""
    return float(_k.kuiper_sf(float(x)))


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------
def check_inputs(y_true, y_prob, sample_weight, *, rescale=True):
    """Validated ``(y, p, w)``: 0/1 labels, probabilities (float32/float64), weights or None; the weights
    rescaled (:func:`fastcal._core.validation.rescale_weights`) unless ``rescale`` is False."""
    y_arr = column_or_1d(y_true, "y_true")
    p = as_float_array(column_or_1d(y_prob, "y_prob"), "y_prob")
    check_consistent_length(y_true=y_arr, y_prob=p)
    check_probability_range(p, "y_prob")
    y = check_binary_labels(y_arr, "y_true")
    return y, p, check_sample_weight(sample_weight, p.shape[0], rescale=rescale)


def check_scaled_inputs(y_true, y_prob, sample_weight):
    """Validated ``(y, p, w, factor, e)``: as :func:`check_inputs`, but the weights are rescaled by the kernel that
    copies them: ``w * factor`` (in ``w``'s dtype, :func:`fastcal._core.validation.rescale_factor`) are the rescaled
    weights, ``e`` the exponent of :func:`fastcal._core.validation.rescale_weights`; ``w`` is None (``factor`` 1.0, ``e``
    0) without weights: no pass over the weights to rescale them."""
    y, p, _ = check_inputs(y_true, y_prob, None)
    w, _, hi = check_sample_weight(sample_weight, p.shape[0], bounds=True)
    if w is None:
        return y, p, None, np.float64(1.0), 0
    e = weight_exponent(None, hi) if p.shape[0] else 0
    factor = rescale_factor(w, e)
    if factor is None:
        return y, p, rescale_weights(w, e)[0], w.dtype.type(1.0), e
    return y, p, w, factor, e


def check_int(value, name, minimum, *, allow_none=False):
    """``value`` as an int of at least ``minimum`` (None if ``allow_none``), else the TypeError/ValueError naming
    ``name``: the integer parameters' check of this module and of its engine drivers."""
    if value is None and allow_none:
        return None
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int{' or None' if allow_none else ''}, got {value!r}.")
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}.")
    return int(value)


def sigma_of(ecce_value, std):
    """``ecce / std``, with MCGrad's rule for ``std == 0``: inf if the ECCE is not 0, else 0."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(std > 0, ecce_value / np.where(std > 0, std, 1.0), np.where(ecce_value != 0, np.inf, 0.0))


# ---------------------------------------------------------------------------
# ECCE and the aggregate metrics
# ---------------------------------------------------------------------------
def ecce(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None) -> ECCEResult:
    r"""Estimated cumulative calibration error (ECCE, the Kuiper range of cumulative differences) and its p-value.

    With rows sorted by ``y_prob`` and :math:`D_k = \sum_{i \le k} w_i (y_i - p_i) / W`
    (:math:`D_0 = 0`; all rows of one prediction are one step):
    :math:`\mathrm{ECCE} = \max_k D_k - \min_k D_k`,
    :math:`\sigma = \sqrt{\sum_i w_i^2 p_i (1 - p_i)} / W` (the standard
    deviation of :math:`D_n` if the labels are Bernoulli(:math:`p_i`)),
    ``ecce_sigma`` :math:`= \mathrm{ECCE}/\sigma` (inf if :math:`\sigma = 0 <
    \mathrm{ECCE}`, 0 if both are 0) and ``pvalue`` :math:`= 1 - F(\mathrm{ECCE}/\sigma)`,
    :math:`F` Kuiper's distribution (:func:`kuiper_cdf`).

    The one-segment case of :func:`multicalibration_error`'s passes (scores moved to ranges, each sorted in the
    cache, then scanned); sums in float64 for float32 and float64 input. Unlike MCGrad's ``ecce``, tied predictions
    are pooled, and the rows of one prediction are added in an order of their
    own, so the result does not depend on the order of the rows, to the last
    bit; on untied predictions the two agree to the rounding of the sums.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights (scaling them all by a constant changes nothing).

    Returns
    -------
    ECCEResult
        ``ecce``, ``std`` (:math:`\sigma`), ``ecce_sigma`` and ``pvalue``.

    References
    ----------
    Arrieta-Ibarra, I., Gujral, P., Tannen, J., Tygert, M. and Xu, C. (2022).
    Metrics of calibration for probabilistic predictions. JMLR 23(351).

    Examples
    --------
    >>> from fastcal import ecce
    >>> ecce([1, 1, 0, 0], [0.5] * 4).ecce
    0.0
    >>> r = ecce([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.9])
    >>> round(r.ecce, 6), round(r.std, 6)
    (0.125, 0.203101)
    """
    y, p, w, factor, _ = check_scaled_inputs(y_true, y_prob, sample_weight)
    n = p.shape[0]
    _, total, var, lo, hi, _ = segment_sums(y, p, w, np.zeros(n, dtype=cell_type(1)), np.zeros((1, 0), dtype=np.int64),
                                            np.array([n], dtype=np.int64), [], 1, factor)
    return ecce_result(float((hi[0] - lo[0]) / total[0]), math.sqrt(var[0]) / float(total[0]))


def ecce_result(value, std):
    """The :class:`ECCEResult` of an ECCE ``value`` and its null standard deviation ``std`` (floats)."""
    sigma = float(sigma_of(np.array([value]), np.array([std]))[0])
    return ECCEResult(ecce=value, std=std, ecce_sigma=sigma, pvalue=kuiper_sf(sigma))


def calibration_ratio(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None,
                      adjust_unjoined: bool = False) -> float:
    r"""Predicted over observed positives: :math:`\sum_i w_i p_i / \sum_i w_i y_i` (1 when calibrated in aggregate).

    With ``adjust_unjoined`` the data are "unjoined" (MCGrad's term): every
    instance has a row labelled 0, and a positive one a second row labelled 1
    with the same prediction; only the predictions of the rows labelled 0
    are summed, :math:`\sum_i w_i (1 - y_i) p_i / \sum_i w_i y_i`.
    Sums in float64. ``ValueError`` if no row of positive weight is labelled 1.

    Examples
    --------
    >>> from fastcal import calibration_ratio
    >>> calibration_ratio([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.3])
    1.0
    """
    y, p, w = check_inputs(y_true, y_prob, sample_weight)
    return ratio_from_sums(ratio_sums(p, y, w, adjust_unjoined))


def ratio_sums(p, y, w, adjust_unjoined):
    """``(sum w y, sum w p)`` of validated rows (``sum w (1 - y) p`` with ``adjust_unjoined``), float64: the
    calibration ratio's sums."""
    yf = np.not_equal(y, 0).astype(np.float64)
    pf = p.astype(np.float64)
    wf = np.ones_like(pf) if w is None else w.astype(np.float64)
    predicted = float(np.dot(wf * (1.0 - yf), pf)) if adjust_unjoined else float(np.dot(wf, pf))
    return float(np.dot(wf, yf)), predicted


def ratio_from_sums(sums):
    """The calibration ratio from its sums ``(positives, predicted)`` (:func:`ratio_sums`)."""
    positives, predicted = sums
    if not positives > 0:
        raise ValueError("y_true has no positive label of positive weight: the calibration ratio is undefined.")
    return predicted / positives


def proportional_ece(y_true: ArrayLike, y_prob: ArrayLike, *, n_bins: int = 40,
                     sample_weight: ArrayLike | None = None) -> float:
    r"""Proportional expected calibration error: the binned ECE with each bin's gap relative to its mean prediction.

    MCGrad's ``proportional_expected_calibration_error``, which defines this
    metric, bins included. With :math:`K` bins of equal width closed on the
    left, :math:`[0, \frac1K), [\frac1K, \frac2K), \ldots, [1 - \frac1K, 1]`
    (edges ``np.linspace(0, 1, K + 1)``, where ``np.digitize`` places the
    predictions), bin weight :math:`W_k`, mean label :math:`\bar o_k` and
    mean prediction :math:`\bar p_k`:

    .. math:: \sum_k \frac{W_k}{W} \frac{|\bar o_k - \bar p_k|}{\bar p_k}

    over the bins of positive weight, sums in float64. The bins of
    :func:`fastcal.calibration_curve` and :func:`fastcal.expected_calibration_error`
    are closed on the right instead (scikit-learn's); a prediction on an edge,
    as rounded scores often are, counts here in the bin above it.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    n_bins : int, default=40
        :math:`K`, MCGrad's default.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights.

    Returns
    -------
    float
        ``ValueError`` if a bin of positive weight has mean prediction 0
        (where MCGrad returns NaN or inf).

    Examples
    --------
    >>> from fastcal import proportional_ece
    >>> round(proportional_ece([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4], n_bins=2), 6)  # 0.5 * 0.3 / 0.3 + 0.5 * 0.25 / 0.75
    0.666667
    >>> round(proportional_ece([0, 1, 1, 0], [0.2, 0.5, 0.8, 0.4], n_bins=2), 6)  # 0.5 * 0.3 / 0.3 + 0.5 * 0.35 / 0.65
    0.769231
    """
    edges = proportional_edges(n_bins)
    y, p, w = check_inputs(y_true, y_prob, sample_weight)
    return proportional_from_table(_binning.bin_stats(p, y, w, edges))


def proportional_edges(n_bins):
    """The bin table's edges of :func:`proportional_ece` with ``n_bins`` bins (checked)."""
    n_bins = _binning.check_binning(n_bins, "uniform")
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    # [e_{k-1}, e_k) is (e'_{k-1}, e'_k] with e' the float below e: the table's bins, closed on the right
    edges[1:-1] = np.nextafter(edges[1:-1], -np.inf)
    return edges


def proportional_from_table(table):
    """:func:`proportional_ece` from the bin table (:func:`fastcal._binning.bin_stats`) of its edges."""
    prob_true, prob_pred, weights = _binning.curve_from_table(table, True, True)
    if np.any(prob_pred == 0):
        raise ValueError("y_prob has a bin whose mean prediction is 0: its proportional error is undefined.")
    return float(np.sum(weights / weights.sum() * np.abs(prob_true - prob_pred) / prob_pred))


def normalized_entropy(y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None) -> float:
    r"""Normalized entropy: the log loss over that of always predicting the base rate.

    :math:`\mathrm{NE} = \mathrm{LL}(y, p) / H(\pi)`, with
    :math:`\pi = \sum_i w_i y_i / W` and
    :math:`H(\pi) = -\pi \log \pi - (1 - \pi) \log (1 - \pi)` (the log loss
    of the constant prediction :math:`\pi`), ``LL`` :func:`fastcal.log_loss`
    (scikit-learn's clipping). Below 1, the predictions beat the base rate.
    MCGrad's ``normalized_entropy`` rounds :math:`\pi` to float32 first;
    here :math:`\pi` is float64. ``ValueError`` if all labels are one class.

    References
    ----------
    He, X. et al. (2014). Practical lessons from predicting clicks on ads at Facebook. ADKDD.

    Examples
    --------
    >>> from fastcal import normalized_entropy
    >>> round(normalized_entropy([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4]), 6)
    0.473849
    """
    y, p, w = check_inputs(y_true, y_prob, sample_weight)
    return entropy_from_table(_binning.bin_stats(p, y, w, ENTROPY_EDGES, logloss=True))


#: The bin table of :func:`normalized_entropy`: one bin, with the log loss column.
ENTROPY_EDGES = _binning.bin_edges(1, "uniform")


def entropy_from_table(table):
    """:func:`normalized_entropy` from the one-bin table of :data:`ENTROPY_EDGES` with ``logloss=True``: the mean
    log loss over the entropy of the base rate."""
    weight = float(table[:, _binning.W].sum())
    rate = float(table[:, _binning.SY].sum()) / weight
    if not 0 < rate < 1:
        raise ValueError("y_true holds one class only: the normalized entropy is undefined.")
    baseline = -(rate * math.log(rate) + (1 - rate) * math.log1p(-rate))
    return _binning.column_mean(table, _binning.SLOG) / baseline
