"""The ROC AUC: binary, partial (``max_fpr``), and multiclass one-vs-rest and one-vs-one.

The Mann-Whitney count is :mod:`fastcal._auc`'s; this module checks the
arguments as scikit-learn's :func:`sklearn.metrics.roc_auc_score` does and
averages the classes' areas.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from .._auc import class_mann_whitney, ovr_weighted, roc_auc
from .._binning import check_params
from .._matrices import ROFF, class_rows
from .._core.errors import InvalidParameterError
from .._core.labels import shown
from ._inputs import check_inputs, class_matrix

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike, NDArray

    from .._typing import AUCOptions


@overload
def roc_auc_score(y_true: ArrayLike, y_score: ArrayLike, *,
                  average: Literal["macro", "weighted", "micro", "samples"] = "macro",
                  **options: Unpack[AUCOptions]) -> float: ...
@overload
def roc_auc_score(y_true: ArrayLike, y_score: ArrayLike, *, average: None,
                  **options: Unpack[AUCOptions]) -> float | NDArray[np.float64]: ...
def roc_auc_score(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    average: Literal["macro", "weighted", "micro", "samples"] | None = "macro",
    sample_weight: ArrayLike | None = None,
    max_fpr: float | None = None,
    multi_class: Literal["raise", "ovr", "ovo"] = "raise",
    labels: ArrayLike | None = None,
    pos_label: float | str | None = None,
) -> float | NDArray[np.float64]:
    r"""Area under the ROC curve, ties counted half: binary, partial (``max_fpr``), or multiclass one-vs-rest and one-vs-one.

    Binary: the Mann-Whitney statistic

    .. math:: \mathrm{AUC} = \frac{\sum_{i:y_i=1}\sum_{j:y_j=0} w_i w_j
              \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right)}{\sum_{i:y_i=1} w_i \sum_{j:y_j=0} w_j},

    equal to the trapezoidal area under the ROC curve. With ``max_fpr``
    :math:`= m < 1`, the area :math:`A_m` under the curve for false-positive
    rates in :math:`[0, m]`, standardised as McClish (1989):
    :math:`\tfrac12\left(1 + \frac{A_m - m^2/2}{m - m^2/2}\right)`.
    Multiclass, from an (n, k) matrix of class probabilities: one-vs-rest
    ("ovr"), :math:`\mathrm{AUC}_c` of column :math:`c` with class :math:`c`
    positive and every other class negative, averaged over classes
    ("macro"), weighted by class weight ("weighted"), or the AUC of all
    :math:`n k` (indicator, probability) pairs at once ("micro"); one-vs-one
    ("ovo", Hand and Till 2001), over the pairs of classes present
    :math:`(a, b)`, :math:`\tfrac12(\mathrm{AUC}_{a|b} + \mathrm{AUC}_{b|a})`
    with :math:`\mathrm{AUC}_{a|b}` column :math:`a` on the samples of
    :math:`a` (positive) and :math:`b`, averaged ("macro") or weighted by
    the share of samples in :math:`a` or :math:`b` ("weighted").

    A drop-in for :func:`sklearn.metrics.roc_auc_score` on binary and
    multiclass targets (scikit-learn 1.9's arguments and results, to a few
    ``n * eps``). O(n log n). Without weights the counts are exact integers:
    binary scores are split by label and value range, each range's two
    classes sorted (ranges on parallel threads) and counted in one merge
    sweep; a multiclass matrix is copied once, grouped by class, each
    group of each column sorted, and every pair of groups counted in one
    merge sweep (one-vs-rest and one-vs-one alike). With weights, one argsort
    and one sweep over tied groups, per class. The partial AUC sorts the
    scores of the two classes apart (on two threads; argsorts with weights)
    and sweeps them from the top down to ``max_fpr``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True labels. With 1-D ``y_score``, binary: the greater of two labels
        is positive unless ``pos_label`` says otherwise, as scikit-learn;
        both classes must be present.
    y_score : array-like of shape (n_samples,) or (n_samples, n_classes)
        Binary: scores of the positive class (any finite real values; higher
        means more likely positive). Multiclass: probabilities of the
        classes, rows summing to 1 (as ``np.allclose``), columns in the
        sorted order of ``labels`` (or of the labels of ``y_true``).
    average : {"macro", "weighted", "micro", "samples"} or None, default="macro"
        Multiclass averaging: "ovr" takes "macro", "weighted", "micro" or
        None (the k per-class AUCs, an array); "ovo" takes "macro" or
        "weighted". Ignored for binary targets ("samples" too, as
        scikit-learn, which uses it for multilabel targets only).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights; not with ``multi_class="ovo"`` (as scikit-learn).
    max_fpr : float in (0, 1], default=None
        Binary only: the McClish-standardised partial AUC over false-positive
        rates up to ``max_fpr``; None or 1 give the full AUC.
    multi_class : {"raise", "ovr", "ovo"}, default="raise"
        How to score an (n, k) ``y_score`` with ``k > 2``; "raise" refuses
        it, as scikit-learn.
    labels : array-like of shape (n_classes,), default=None
        Multiclass only: the classes of the columns of ``y_score``, sorted
        and unique; needed when ``y_true`` lacks some.
    pos_label : int, float, bool or str, default=None
        Binary only: the positive label (fastcal's; scikit-learn has none).

    Returns
    -------
    float, or ndarray of shape (n_classes,) with ``multi_class="ovr", average=None``

    References
    ----------
    Hanley, J. A. and McNeil, B. J. (1982). The meaning and use of the area
    under a receiver operating characteristic (ROC) curve. Radiology 143(1),
    29-36.
    McClish, D. K. (1989). Analyzing a portion of the ROC curve. Medical
    Decision Making 9(3), 190-195.
    Hand, D. J. and Till, R. J. (2001). A simple generalisation of the area
    under the ROC curve for multiple class classification problems. Machine
    Learning 45(2), 171-186.

    Examples
    --------
    >>> from fastcal import roc_auc_score
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    >>> roc_auc_score([0, 1, 2, 2], [[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7], [0.3, 0.4, 0.3]],
    ...               multi_class="ovo")
    0.9583333333333334
    """
    max_fpr = check_params(average=average, max_fpr=max_fpr, multi_class=multi_class, pos_label=pos_label)["max_fpr"]
    arr = np.asarray(y_score)
    if arr.ndim == 2 and arr.shape[1] > 2:
        return _multiclass_roc_auc(y_true, arr, sample_weight, labels, average, max_fpr, multi_class)
    many = ("a multiclass ROC AUC needs y_score of shape (n_samples, n_classes), the probabilities of the classes, "
            "and multi_class='ovr' or 'ovo'")
    y, x, w, _, _ = check_inputs(y_true, arr, sample_weight, pos_label, prob=False, score_name="y_score",
                                  greater=True, many=many)
    return roc_auc(y, x, w, max_fpr)


def _multiclass_roc_auc(y_true, y_score, sample_weight, labels, average, max_fpr, multi_class):
    """:func:`roc_auc_score` of an (n, k > 2) ``y_score``: scikit-learn's checks, then one-vs-rest or one-vs-one."""
    k = y_score.shape[1]
    if np.ndim(y_true) == 2 and np.shape(y_true)[1] > 1:
        raise ValueError(f"y_true has shape {np.shape(y_true)}: multilabel indicator targets are not supported; pass "
                         "the class of each sample (a multiclass target) or score each column as a binary problem.")
    if max_fpr is not None and max_fpr != 1:
        raise InvalidParameterError(f"max_fpr must be None or 1 for a multiclass ROC AUC (y_score has {k} columns): "
                                    f"the partial AUC is for binary targets only; got {max_fpr!r}.")
    if multi_class == "raise":
        raise InvalidParameterError(f"multi_class must be 'ovr' or 'ovo' for a multiclass ROC AUC (y_score has {k} "
                                    "columns); got 'raise'.")
    if average not in (("micro", "macro", "weighted", None) if multi_class == "ovr" else ("macro", "weighted")):
        allowed = "'micro', 'macro', 'weighted' or None" if multi_class == "ovr" else "'macro' or 'weighted'"
        raise InvalidParameterError(f"average must be {allowed} for a multiclass ROC AUC with "
                                    f"multi_class={multi_class!r}; got {average!r}.")
    if multi_class == "ovo" and sample_weight is not None:
        raise InvalidParameterError("sample_weight must be None with multi_class='ovo': the one-vs-one AUC of "
                                    "scikit-learn takes no weights.")
    codes, classes, P, w = class_matrix(y_true, y_score, sample_weight, labels, "y_score", proba=False, stacklevel=3)
    n = P.shape[0]
    off = class_rows(P, None, None, atol=1e-8, rtol=1e-5)[ROFF]
    if off:
        raise ValueError(f"y_score must hold probabilities for a multiclass ROC AUC, rows summing to 1, but "
                         f"{int(off)} of {n} rows do not.")
    if average == "micro":
        indicator = np.zeros((n, k), dtype=np.uint8)
        indicator[np.arange(n), codes] = 1
        return roc_auc(indicator.reshape(-1), P.reshape(-1), None if w is None else np.repeat(w, k))
    if multi_class == "ovo":
        return _ovo(*class_mann_whitney(P, codes, k), classes, average)
    if w is None:
        u2, sizes = class_mann_whitney(P, codes, k)
        support = sizes.astype(np.float64)
        with np.errstate(invalid="ignore"):
            scores = u2.sum(axis=1) / (2.0 * support * (n - support))
    else:
        scores = ovr_weighted(P, codes, k, w)
        support = np.bincount(codes, weights=w, minlength=k)
    if average == "weighted":
        scores[support == 0] = 0.0  # as scikit-learn: a class without weight has no say
    undefined = np.isnan(scores)
    if undefined.any():
        raise ValueError(f"ROC AUC of class {{{shown(classes[undefined])}}} against the rest is not defined: y_true "
                         "has no sample of it, or only samples of it (with positive weight).")
    if average is None:
        return scores
    return float(np.average(scores, weights=support if average == "weighted" else None))


def _ovo(u2, sizes, classes, average):
    """Hand and Till's one-vs-one AUC from :func:`fastcal._auc.class_mann_whitney`, over the pairs of classes present."""
    present = np.flatnonzero(sizes)
    if present.shape[0] < 2:
        raise ValueError(f"y_true has one class ({shown(classes[present])}): the one-vs-one ROC AUC needs two.")
    pairs = list(itertools.combinations(present.tolist(), 2))
    scores = np.empty(len(pairs))
    prevalence = np.empty(len(pairs))
    for i, (a, b) in enumerate(pairs):
        pairs_ab = 2.0 * sizes[a] * sizes[b]
        scores[i] = (u2[a, b] / pairs_ab + u2[b, a] / pairs_ab) / 2
        prevalence[i] = (sizes[a] + sizes[b]) / sizes.sum()
    return float(np.average(scores, weights=prevalence if average == "weighted" else None))


