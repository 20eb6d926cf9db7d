"""Binned calibration: the reliability curve and the expected calibration error (ECE, RMSCE, MCE).

Both are read off one bin table (:func:`fastcal._binning.bin_stats`), of the
binary problem, or of each binary problem of an (n, k) matrix ("top_label":
the largest probability of each row; "classwise": each column).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from .._binning import check_binning, check_params, curve_from_table, ece_from_table
from ._inputs import binned, check_multiclass, in_weight_units, matrix_tables

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike, NDArray

    from .._typing import Curve, CurveOptions, CurveWithCounts, ECEOptions


@overload
def calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, return_counts: Literal[False] = False,
                      multiclass: Literal["top_label"] = "top_label", **options: Unpack[CurveOptions]) -> Curve: ...
@overload
def calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, return_counts: Literal[True],
                      multiclass: Literal["top_label"] = "top_label",
                      **options: Unpack[CurveOptions]) -> CurveWithCounts: ...
@overload
def calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, return_counts: bool = False,
                      multiclass: Literal["top_label"] = "top_label",
                      **options: Unpack[CurveOptions]) -> Curve | CurveWithCounts: ...
@overload
def calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, return_counts: Literal[False] = False,
                      multiclass: Literal["classwise"], **options: Unpack[CurveOptions]) -> list[Curve]: ...
@overload
def calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, return_counts: Literal[True],
                      multiclass: Literal["classwise"], **options: Unpack[CurveOptions]) -> list[CurveWithCounts]: ...
@overload
def calibration_curve(y_true: ArrayLike, y_prob: ArrayLike, *, return_counts: bool = False,
                      multiclass: Literal["top_label", "classwise"] = "top_label",
                      **options: Unpack[CurveOptions]
                      ) -> Curve | CurveWithCounts | list[Curve] | list[CurveWithCounts]: ...
def calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    return_counts: bool = False,
    multiclass: Literal["top_label", "classwise"] = "top_label",
    labels: ArrayLike | None = None,
) -> Curve | CurveWithCounts | list[Curve] | list[CurveWithCounts]:
    r"""True and predicted probabilities of a calibration (reliability) curve.

    A drop-in for :func:`sklearn.calibration.calibration_curve` (same
    arguments, bins, return values and label rules), computed in one parallel
    pass, with optional sample weights and bin counts. For each non-empty bin
    :math:`B_k` (total weight :math:`W_k = \sum_{i \in B_k} w_i`):

    .. math::

        \text{prob\_true}_k = \frac{1}{W_k}\sum_{i \in B_k} w_i y_i, \qquad
        \text{prob\_pred}_k = \frac{1}{W_k}\sum_{i \in B_k} w_i p_i.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels: {0, 1}, {-1, 1} (1 positive), or any two labels
        with ``pos_label``.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    pos_label : int, float, bool or str, default=None
        The label of the positive class (required unless the labels are
        {0, 1} or {-1, 1}).
    n_bins : int, default=5
        Number of bins, 1 to 2**20. Empty
        bins are dropped from the output, so the arrays may be shorter.
    strategy : {"uniform", "quantile"}, default="uniform"
        "uniform": bins of equal width on [0, 1]; "quantile": edges at the
        percentiles of ``y_prob`` (``np.percentile``'s linear interpolation,
        bit-identical; repeated edges give empty, dropped bins). With
        ``sample_weight``, quantile edges are still the unweighted
        percentiles of ``y_prob``: weights change the averages, not the bins.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights. A bin whose samples all have weight 0 counts as
        empty.
    return_counts : bool, default=False
        Also return the number of samples (int64), or the total weight
        (float64) with ``sample_weight``, of each returned bin.
    multiclass : {"top_label", "classwise"}, default="top_label"
        What an (n, k) ``y_prob`` of class probabilities is binned as (no
        effect on 1-D input). "top_label" (confidence calibration, Guo et al.
        2017): the largest probability of each row against whether its
        column (the first of equal maxima) is the true class; one curve.
        "classwise" (Kull et al. 2019): column ``j`` against ``y_true ==
        classes[j]``, each on its own bins (quantile edges of its own
        column); a list of ``k`` curves, in column order.
    labels : array-like of shape (n_classes,), optional
        With an (n, k) ``y_prob``: the classes of its columns, in sorted
        order (needed when ``y_true`` lacks some), as in :func:`log_loss`.

    Returns
    -------
    prob_true : ndarray of shape (n_nonempty_bins,)
        Fraction of positives in each non-empty bin.
    prob_pred : ndarray of shape (n_nonempty_bins,)
        Mean predicted probability in each non-empty bin.
    counts : ndarray of shape (n_nonempty_bins,)
        Only with ``return_counts=True``.

    With ``multiclass="classwise"`` and an (n, k) ``y_prob``: a list of
    ``k`` such tuples, one per class.

    References
    ----------
    Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good probabilities
    with supervised learning. ICML, section 4.
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration
    of modern neural networks. ICML.
    Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song, H. and
    Flach, P. (2019). Beyond temperature scaling: obtaining well-calibrated
    multiclass probabilities with Dirichlet calibration. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import calibration_curve
    >>> y_true = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    >>> y_pred = np.array([0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0])
    >>> prob_true, prob_pred, counts = calibration_curve(y_true, y_pred, n_bins=3, return_counts=True)
    >>> prob_true
    array([0. , 0.5, 1. ])
    >>> prob_pred
    array([0.2  , 0.525, 0.85 ])
    >>> counts
    array([3, 2, 4])
    """
    check_params(return_counts=return_counts)
    if check_multiclass(y_prob, multiclass, labels):
        n_bins = check_binning(n_bins, strategy)
        tables, w = matrix_tables(y_true, y_prob, sample_weight, labels, pos_label, n_bins, strategy, multiclass,
                                   stacklevel=2)
        curves = [curve_from_table(t, w is not None, return_counts) for t in tables]
        if return_counts and w is not None:
            curves = [(*c[:2], in_weight_units(c[2], sample_weight)) for c in curves]
        return curves[0] if multiclass == "top_label" else curves
    table, _, (_, _, w) = binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    curve = curve_from_table(table, w is not None, return_counts)
    if return_counts and w is not None:
        return (*curve[:2], in_weight_units(curve[2], sample_weight))
    return curve


@overload
def expected_calibration_error(y_true: ArrayLike, y_prob: ArrayLike, *, multiclass: Literal["top_label"] = "top_label",
                               **options: Unpack[ECEOptions]) -> float: ...
@overload
def expected_calibration_error(y_true: ArrayLike, y_prob: ArrayLike, *, multiclass: Literal["classwise"],
                               **options: Unpack[ECEOptions]) -> float | NDArray[np.float64]: ...
def expected_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    sample_weight: ArrayLike | None = None,
    pos_label: float | str | None = None,
    multiclass: Literal["top_label", "classwise"] = "top_label",
    labels: ArrayLike | None = None,
) -> float | NDArray[np.float64]:
    r"""Binned expected calibration error (ECE), its RMS (``norm="l2"``) and maximum (``"max"``) variants.

    With bins as in :func:`calibration_curve`, bin mass :math:`m_k = W_k / N`
    and gap :math:`g_k = |\bar o_k - \bar p_k|` over the non-empty bins:

    .. math::

        \mathrm{ECE} = \sum_k m_k g_k,\qquad
        \mathrm{RMSCE} = \sqrt{\textstyle\sum_k m_k g_k^2},\qquad
        \mathrm{MCE} = \max_{k:\,W_k>0} g_k.

    Empty bins carry no mass and are left out of the maximum (they never
    produce NaN). ``RMSCE**2`` is the reliability term of
    :func:`brier_decomposition` on the same bins.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`.
    n_bins : int, default=15
        Number of bins (at most 2**20, as in :func:`calibration_curve`).
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges ("quantile" gives the equal-mass ECE).
    norm : {"l1", "l2", "max"}, default="l1"
        ECE, RMS calibration error or maximum calibration error.
    multiclass : {"top_label", "classwise"}, default="top_label"
        What an (n, k) ``y_prob`` is measured as (see
        :func:`calibration_curve`): "top_label", the ECE of the confidences
        (Guo et al.'s ECE of a neural network); "classwise", one ECE per
        class, each on its own bins: their mean is Kull et al.'s (2019)
        classwise-ECE.
    labels : array-like of shape (n_classes,), optional
        The classes of the columns of an (n, k) ``y_prob``, sorted.

    Returns
    -------
    float, or ndarray of shape (n_classes,) with ``multiclass="classwise"``
    and an (n, k) ``y_prob``

    References
    ----------
    Naeini, M. P., Cooper, G. F. and Hauskrecht, M. (2015). Obtaining well
    calibrated probabilities using Bayesian binning. AAAI.
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration
    of modern neural networks. ICML.

    Examples
    --------
    >>> from fastcal import expected_calibration_error
    >>> expected_calibration_error([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4], n_bins=2)
    0.275
    """
    check_params(norm=norm)
    if check_multiclass(y_prob, multiclass, labels):
        n_bins = check_binning(n_bins, strategy)
        tables, _ = matrix_tables(y_true, y_prob, sample_weight, labels, pos_label, n_bins, strategy, multiclass,
                                   stacklevel=2)
        errors = [ece_from_table(t)[norm] for t in tables]
        return errors[0] if multiclass == "top_label" else np.array(errors)
    table, _, _ = binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    return ece_from_table(table)[norm]


