"""Proper scoring rules: the Brier score, the log loss and the Brier score's binned decomposition.

Scikit-learn's drop-ins: a 1-D ``y_proba`` is one bin table
(:func:`fastcal._binning.bin_stats`), an (n, k) matrix one pass over its rows
(:func:`fastcal._matrices.class_rows`), both accumulated in float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from .._binning import SBRIER, SLOG, brier_terms_from_table, check_params, column_mean
from .._matrices import RBRIER, RLOG, RW
from .._core.results import Result
from ._inputs import binary_codes, binned, class_sums, in_weight_units, is_matrix, proba_argument

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def brier_score_loss(
    y_true: ArrayLike,
    y_proba: ArrayLike | None = None,
    *,
    sample_weight: ArrayLike | None = None,
    pos_label: float | str | None = None,
    labels: ArrayLike | None = None,
    scale_by_half: bool | Literal["auto"] = "auto",
    y_prob: ArrayLike | None = None,
) -> float:
    r"""Brier score: the mean squared error of probabilistic predictions, binary or multiclass.

    With :math:`k` classes, :math:`y_{ic} = 1` if sample :math:`i` is of
    class :math:`c` (else 0) and :math:`P_{ic}` its predicted probability:

    .. math::

        \mathrm{BS} = \frac{\sum_i w_i \sum_{c=1}^{k} (P_{ic} - y_{ic})^2}{\sum_i w_i} \in [0, 2],
        \qquad \text{binary: } \tfrac12 \mathrm{BS} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i} \in [0, 1].

    A drop-in for :func:`sklearn.metrics.brier_score_loss` (scikit-learn
    1.9's arguments and results, to a few ``n * eps`` relative; float32 input
    is summed in float64 here, in float32 there). Binary 1-D input is one
    parallel pass of :mod:`fastcal._binning`; an (n, k) matrix is one parallel
    pass over its rows.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities, in [0, 1]. 1-D (or one column): of the
        positive class, with ``y_true`` binary (labels {0, 1} or {-1, 1}, or
        any two with ``pos_label``). (n, k): of each class, the columns in
        the sorted order of ``labels`` (or of the labels of ``y_true``); a
        warning if rows do not sum to 1 (within ``sqrt(eps) + 1e-8``), as
        scikit-learn.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum.
    pos_label : int, float, bool or str, default=None
        The positive label of a 1-D ``y_proba``, required unless labels are
        {0, 1} or {-1, 1} (scikit-learn then takes the greater label for
        numbers; fastcal does not guess). Unused with a matrix.
    labels : array-like of shape (n_classes,), default=None
        The classes of the columns of an (n, k) ``y_proba`` (a warning if not
        sorted: the columns are taken in sorted order); needed when
        ``y_true`` lacks some. Unused with a 1-D ``y_proba``.
    scale_by_half : bool or "auto", default="auto"
        Halve the score; "auto" halves it for 1-D and two-column ``y_proba``
        (the binary Brier score in [0, 1]), not for three or more columns.
    y_prob : array-like, default=None
        ``y_proba`` under fastcal's earlier name (pass one of the two).

    Returns
    -------
    float

    References
    ----------
    Brier, G. W. (1950). Verification of forecasts expressed in terms of
    probability. Monthly Weather Review 78(1), 1-3.

    Examples
    --------
    >>> from fastcal import brier_score_loss
    >>> round(brier_score_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 6)
    0.0375
    >>> round(brier_score_loss(["eggs", "ham", "spam"], [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.2, 0.2, 0.6]]), 6)
    0.146667
    """
    y_proba, name = proba_argument("brier_score_loss", y_proba, y_prob)
    scale_by_half = check_params(scale_by_half=scale_by_half, pos_label=pos_label)["scale_by_half"]
    arr = np.asarray(y_proba)
    if is_matrix(arr):
        sums = class_sums(y_true, arr, sample_weight, labels, name, brier=True, stacklevel=2)
        score = float(sums[RBRIER] / sums[RW])
        half = arr.shape[1] < 3 if scale_by_half == "auto" else scale_by_half
        return 0.5 * score if half else score
    table, _, _ = binned(y_true, arr, sample_weight, pos_label, 1, "uniform", score_name=name, brier=True)
    score = column_mean(table, SBRIER)
    return 2.0 * score if scale_by_half is False else score


def log_loss(
    y_true: ArrayLike,
    y_proba: ArrayLike | None = None,
    *,
    normalize: bool = True,
    sample_weight: ArrayLike | None = None,
    labels: ArrayLike | None = None,
    pos_label: float | str | None = None,
    y_prob: ArrayLike | None = None,
    y_pred: ArrayLike = "deprecated",
) -> float:
    r"""Logistic loss (cross-entropy) of probabilistic predictions, binary or multiclass.

    With :math:`c_i` the class of sample :math:`i` and :math:`q_i` its
    predicted probability :math:`P_{i c_i}` (binary: :math:`p_i` or
    :math:`1 - p_i`) clipped to :math:`[\epsilon, 1 - \epsilon]`:

    .. math::

        \mathrm{LL} = -\frac{\sum_i w_i \log q_i}{\sum_i w_i}, \qquad
        q_i = \mathrm{clip}(P_{i c_i}, \epsilon, 1 - \epsilon).

    A drop-in for :func:`sklearn.metrics.log_loss` (scikit-learn 1.9's
    arguments and results, to a few ``n * eps`` relative). Clipping is
    scikit-learn 1.9's: ``eps = np.finfo(y_proba.dtype).eps`` (2.2e-16 for
    float64, 1.2e-7 for float32), ``1 - p`` and the clip computed in the
    dtype of ``y_proba``; so a prediction of exactly 0 or 1 costs at most
    ``-log(eps)`` (36.04 for float64). The logarithms and the sums are
    float64 (scikit-learn's are in the dtype of ``y_proba``). Binary 1-D
    input is one parallel pass of :mod:`fastcal._binning`; an (n, k) matrix is one
    parallel pass over its rows, one logarithm per row.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels.
    y_proba : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities, in [0, 1]. 1-D (or one column): of the
        positive class, the greater of two labels unless ``pos_label`` says
        otherwise ({0, 1} and {-1, 1}: 1); unlike scikit-learn, ``y_true``
        may then hold one class, if its labels are in {0, 1} or {-1, 1}.
        (n, k): of each class, the columns in the sorted order of ``labels``
        (or of the labels of ``y_true``); a warning if rows do not sum to 1
        (within ``sqrt(eps) + 1e-8``), as scikit-learn.
    normalize : bool, default=True
        Return the (weighted) mean loss; if False, the (weighted) sum.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum.
    labels : array-like, default=None
        The classes: of the columns of an (n, k) ``y_proba`` (a warning if
        not sorted: the columns are taken in sorted order), or the two
        classes of a 1-D one; needed when ``y_true`` lacks some.
    pos_label : int, float, bool or str, default=None
        The positive label of a 1-D ``y_proba`` (fastcal's; scikit-learn has
        none). Unused with a matrix.
    y_prob : array-like, default=None
        ``y_proba`` under fastcal's earlier name (pass one of the two).
    y_pred : array-like, default="deprecated"
        ``y_proba`` under scikit-learn's name before 1.9: accepted with
        scikit-learn's ``FutureWarning``.

    Returns
    -------
    float

    Examples
    --------
    >>> from fastcal import log_loss
    >>> round(log_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 6)
    0.197635
    >>> round(log_loss(["spam", "ham", "ham", "spam"], [[.1, .9], [.9, .1], [.8, .2], [.35, .65]]), 6)
    0.216162
    """
    y_proba, name = proba_argument("log_loss", y_proba, y_prob, y_pred)
    check_params(normalize=normalize, pos_label=pos_label)
    arr = np.asarray(y_proba)
    if is_matrix(arr):
        sums = class_sums(y_true, arr, sample_weight, labels, name, logloss=True, stacklevel=2)
        return float(sums[RLOG] / sums[RW]) if normalize else float(in_weight_units(sums[RLOG], sample_weight))
    if labels is not None:
        y_true, pos_label = binary_codes(y_true, labels, pos_label, name, stacklevel=2), None
    table, _, _ = binned(y_true, arr, sample_weight, pos_label, 1, "uniform", score_name=name, greater=True,
                          logloss=True)
    return column_mean(table, SLOG) if normalize else float(in_weight_units(table[:, SLOG].sum(), sample_weight))


@dataclass(frozen=True, eq=False, repr=False)
class BrierDecomposition(Result):
    """Terms of the Brier score: ``brier == reliability - resolution + uncertainty
    + within_bin_variance - within_bin_covariance`` (up to rounding)."""

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float


def brier_decomposition(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: float | str | None = None,
) -> BrierDecomposition:
    r"""Murphy's decomposition of the Brier score, with the two within-bin terms that make it exact.

    With bins :math:`B_k` (as in :func:`calibration_curve`), total weight
    :math:`N = \sum_i w_i`, bin weight :math:`W_k`, mean prediction
    :math:`\bar p_k`, observed frequency :math:`\bar o_k` and base rate
    :math:`\bar o`:

    .. math::

        \mathrm{BS} = \underbrace{\tfrac1N\sum_k W_k(\bar p_k-\bar o_k)^2}_{\text{reliability}}
        - \underbrace{\tfrac1N\sum_k W_k(\bar o_k-\bar o)^2}_{\text{resolution}}
        + \underbrace{\bar o(1-\bar o)}_{\text{uncertainty}}
        + \underbrace{\tfrac1N\sum_k\sum_{i\in B_k} w_i(p_i-\bar p_k)^2}_{\text{within-bin variance}}
        - \underbrace{\tfrac2N\sum_k\sum_{i\in B_k} w_i(p_i-\bar p_k)(y_i-\bar o_k)}_{\text{within-bin covariance}}

    This is the variant of Stephenson, Coelho and Jolliffe (2008): Murphy's
    three terms (reliability, resolution, uncertainty) are computed from the
    bin means of the predictions, and the two extra terms account for the
    spread of the predictions inside each bin, so the five terms add up to
    the Brier score exactly (in exact arithmetic; to ~1e-15 in floating
    point), for any binning. Murphy's original identity
    (``BS = REL - RES + UNC``) holds only when all predictions in a bin are
    equal, where the extra terms vanish. The within-bin moments are
    accumulated about a point inside each bin, which keeps them free of
    cancellation, in the same single pass that bins the data.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`.
    n_bins : int, default=10
        Number of bins (at most 2**20, as in :func:`calibration_curve`).
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.

    Returns
    -------
    BrierDecomposition
        Named tuple ``(brier, reliability, resolution, uncertainty,
        within_bin_variance, within_bin_covariance)`` of floats.

    References
    ----------
    Murphy, A. H. (1973). A new vector partition of the probability score.
    Journal of Applied Meteorology 12(4), 595-600.
    Stephenson, D. B., Coelho, C. A. S. and Jolliffe, I. T. (2008). Two extra
    components in the Brier score decomposition. Weather and Forecasting
    23(4), 752-757.

    Examples
    --------
    >>> from fastcal import brier_decomposition
    >>> d = brier_decomposition([0, 0, 1, 1, 1], [0.1, 0.3, 0.35, 0.8, 0.9], n_bins=2)
    >>> round(d.brier, 6), round(d.reliability - d.resolution + d.uncertainty
    ...                          + d.within_bin_variance - d.within_bin_covariance, 6)
    (0.1145, 0.1145)
    """
    table, _, _ = binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True, brier=True)
    return BrierDecomposition(*brier_terms_from_table(table))


