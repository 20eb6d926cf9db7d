r"""Calibration diagnostics: reliability curves, Brier score and its decomposition, ECE, log loss, AUC.

Every binned quantity comes from one parallel pass over the data
(:func:`fastcal._binning.bin_stats`): each row is put in its bin and the
bin's weight, positives, sum of predictions (and, where asked for, centred
moments, squared errors and log losses) are accumulated in per-chunk buffers
that are merged in a fixed order, so the result does not depend on the number
of threads. The log loss and Brier score of an (n, k) probability matrix are
one such pass over its rows (:func:`fastcal._binning.class_rows`). The AUC is
in :mod:`fastcal._auc`.

Binning follows :func:`sklearn.calibration.calibration_curve` exactly: the
``n_bins + 1`` edges are ``np.linspace(0, 1, n_bins + 1)`` ("uniform") or
``np.percentile(y_prob, np.linspace(0, 1, n_bins + 1) * 100)`` ("quantile"),
and a prediction ``p`` goes to bin ``np.searchsorted(edges[1:-1], p)``, i.e.
bins are ``[e_0, e_1], (e_1, e_2], ..., (e_{K-1}, e_K]``. Quantile edges are
computed from selected order statistics (bucket histogram + selection, no
full sort), with NumPy's "linear" interpolation formula reproduced operation
by operation, so they are bit-identical to ``np.percentile``'s.

Labels of binary predictions: ``y_true`` in {0, 1} (any numeric or boolean
dtype) is used as is; {-1, 1} counts 1 as positive; any other pair of labels
needs ``pos_label``, except in :func:`log_loss` and :func:`roc_auc_score`,
whose 1-D predictions are, as in scikit-learn, those of the greater of the
two labels. No positive label is guessed elsewhere (scikit-learn's
``brier_score_loss`` falls back on the greater of two numeric labels).
The columns of an (n, k) matrix are the classes in sorted order, those of
``labels`` or of ``y_true``, as scikit-learn's ``LabelBinarizer`` orders them.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np

from ._auc import class_mann_whitney, ovr_weighted, roc_auc
from ._binning import (
    RBRIER,
    RLOG,
    ROFF,
    RW,
    SBRIER,
    SLOG,
    SP,
    SY,
    W,
    bin_edges,
    bin_stats,
    brier_terms_from_table,
    check_binning,
    check_params,
    check_row_sums,
    class_rows,
    column_mean,
    curve_from_table,
    ece_from_table,
    order_statistics,
    row_sum_atol,
    top_label,
    warn_rows_off,
)
from ._errors import InvalidParameterError
from ._labels import check_labels, class_codes, matrix_codes, shown
from ._results import Result
from .decomposition import decompose, shared_sort
from ._validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_object_labels,
    check_probability_range,
    check_sample_weight,
    column_or_1d,
    is_binary,
    rescale_weights,
    value_range,
    weight_exponent,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "BrierDecomposition",
    "CalibrationReport",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "calibration_report",
    "expected_calibration_error",
    "log_loss",
    "roc_auc_score",
]


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


def check_probabilities(y_prob, name="y_prob"):
    """``y_prob`` as a contiguous float32/float64 1-D array in [0, 1]; returns ``(p, min, max)``."""
    p = as_float_array(column_or_1d(y_prob, name), name)
    lo, hi = check_probability_range(p, name)
    return p, lo, hi


def _check_scores(y_score, name="y_score"):
    x = as_float_array(column_or_1d(y_score, name), name)
    value_range(x, name)
    return x


def _same_label(a, b):
    try:
        return bool(a == b) and not isinstance(a, str) and not isinstance(b, str)
    except Exception:  # noqa: BLE001 - uncomparable labels are different
        return False


def binary_labels(y_true, pos_label, name="y_true", *, greater=False, many=None):
    """Labels as a contiguous array whose nonzero entries are the positives.

    {0, 1} labels of any numeric/boolean dtype are returned without a copy
    (one parallel check, no sort); everything else goes through
    ``np.unique`` (a sort) with scikit-learn's ``calibration_curve`` rules:
    without ``pos_label``, {0, 1} and {-1, 1} count 1 as positive and other
    labels are an error, unless ``greater`` (the rule of scikit-learn's
    ``log_loss`` and ``roc_auc_score``, whose 1-D scores belong to the
    greater of two labels), where the greater of two labels is positive.
    ``many`` ends the message for more than two labels.
    """
    check_params(pos_label=pos_label)
    arr = column_or_1d(y_true, name)
    if arr.dtype.kind in "biuf":
        lab = as_label_array(arr, name)
        if is_binary(lab):
            if pos_label is None or _same_label(pos_label, 1):
                return lab
            if _same_label(pos_label, 0):
                return np.ascontiguousarray(lab == 0).view(np.uint8)
    classes = check_object_labels(arr, name)
    classes = np.unique(arr) if classes is None else classes
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError(f"{name} must not contain NaN.")
    if classes.size > 2:
        raise ValueError(
            f"{name} must hold binary labels; {many or 'only binary classification is supported'}, "
            f"found {classes.size} labels: {{{shown(classes)}}}."
        )
    if pos_label is None:
        ok = classes.dtype.kind in "biuf" and set(classes.tolist()) <= {0, 1} or set(classes.tolist()) <= {-1, 1}
        if greater and not ok and classes.size == 2:
            return np.ascontiguousarray(arr == classes[1]).view(np.uint8)
        if classes.dtype.kind in "OUS" or not ok:
            raise ValueError(
                f"{name} takes values in {{{shown(classes)}}} and pos_label is not specified: either make "
                f"{name} take values in {{0, 1}} or {{-1, 1}} or pass pos_label explicitly."
            )
        pos_label = 1
    return np.ascontiguousarray(arr == pos_label).view(np.uint8)


def _check_inputs(y_true, y_prob, sample_weight, pos_label, *, prob=True, score_name="y_prob", greater=False,
                  many=None):
    """Validated ``(y, p, w, lo, hi)``: labels (nonzero = positive), predictions, weights or None."""
    y_arr = column_or_1d(y_true, "y_true")
    p_arr = column_or_1d(y_prob, score_name)
    check_consistent_length(y_true=y_arr, **{score_name: p_arr})
    y = binary_labels(y_arr, pos_label, greater=greater, many=many)
    if prob:
        p, lo, hi = check_probabilities(p_arr, score_name)
    else:
        p = _check_scores(p_arr, score_name)
        lo = hi = None
    w = check_sample_weight(sample_weight, p.shape[0], rescale=True)
    return y, p, w, lo, hi


def _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, *, score_name="y_prob", greater=False,
            **flags):
    """Validated input, binned: ``(table, edges, (y, p, w))`` (see :func:`fastcal._binning.bin_stats`)."""
    n_bins = check_binning(n_bins, strategy)
    y, p, w, lo, hi = _check_inputs(y_true, y_prob, sample_weight, pos_label, score_name=score_name, greater=greater,
                                    many=f"{score_name} is 1-D: pass the (n_samples, n_classes) matrix of their "
                                    "probabilities" if greater else None)
    edges = bin_edges(n_bins, strategy, p.shape[0], lambda ranks: order_statistics(p, ranks, lo, hi))
    return bin_stats(p, y, w, edges, **flags), edges, (y, p, w)


# ---------------------------------------------------------------------------
# scikit-learn's drop-ins: argument names, class labels, (n, k) matrices
# ---------------------------------------------------------------------------
def _proba_argument(func, y_proba, y_prob, y_pred="deprecated"):
    """``(values, name)`` of the predicted probabilities, passed as ``y_proba`` (scikit-learn's name), ``y_prob``
    (fastcal's) or ``y_pred`` (scikit-learn's name before 1.9, deprecated there: a ``FutureWarning``)."""
    given = {name: v for name, v in (("y_proba", y_proba), ("y_prob", y_prob)) if v is not None}
    if not (isinstance(y_pred, str) and y_pred == "deprecated"):
        if given:
            raise InvalidParameterError(f"{func}() got y_pred and {next(iter(given))}; y_pred is the deprecated "
                                        "name of y_proba: pass y_proba only.")
        warnings.warn("y_pred was renamed y_proba in scikit-learn 1.9 and will be removed in 1.11; pass y_proba.",
                      FutureWarning, stacklevel=3)
        given = {"y_pred": y_pred}
    if len(given) > 1:
        raise InvalidParameterError(f"{func}() got y_proba and y_prob, two names of one argument (scikit-learn's "
                                    "and fastcal's); pass one of them.")
    if not given:
        raise TypeError(f"{func}() missing required argument: 'y_proba'")
    name, values = given.popitem()
    return values, name


def _is_matrix(x):
    """True if the array ``x`` has the shape (n, k) of a matrix of class probabilities or scores, k >= 2."""
    return x.ndim == 2 and x.shape[1] > 1


def _class_matrix(y_true, y_matrix, sample_weight, labels, score_name, *, proba, stacklevel):
    """Validated ``(codes, classes, P, w)`` of an (n, k) matrix: the column of each row's class, the classes of the
    columns (``labels`` sorted, or those of ``y_true``), the matrix (C-contiguous float32/float64, finite) and the
    weights or None.

    ``proba``: the probabilities of scikit-learn's ``log_loss`` and
    ``brier_score_loss`` (values in [0, 1]; unsorted ``labels`` warn), else
    the scores of its ``roc_auc_score`` (unsorted ``labels`` raise).
    ``stacklevel`` is counted from the caller.
    """
    P = as_float_array(y_matrix, score_name)
    y = column_or_1d(y_true, "y_true")
    check_consistent_length(y_true=y, **{score_name: P})
    if proba:
        check_probability_range(P, score_name)
    else:
        value_range(P, score_name)
    codes, classes = matrix_codes(y, P.shape[1], labels, score_name, ordered=not proba, stacklevel=stacklevel + 1)
    return codes, classes, P, check_sample_weight(sample_weight, P.shape[0], rescale=True)


def _class_sums(y_true, y_matrix, sample_weight, labels, score_name, *, stacklevel, **flags):
    """:func:`fastcal._binning.class_rows` of a validated probability matrix; warns, as scikit-learn 1.9, if rows do
    not sum to 1 (:func:`fastcal._binning.warn_rows_off`). ``stacklevel`` is counted from the caller."""
    codes, _, P, w = _class_matrix(y_true, y_matrix, sample_weight, labels, score_name, proba=True,
                                   stacklevel=stacklevel + 1)
    sums = class_rows(P, codes, w, atol=row_sum_atol(P.dtype), **flags)
    warn_rows_off(sums, P.shape[0], score_name, stacklevel=stacklevel + 1)
    return sums


def label_set(y_true, name="y_true"):
    """The sorted labels of one chunk of ``y_true`` (``ValueError`` for missing or incomparable labels, NaN)."""
    y = column_or_1d(y_true, name, min_size=0)
    classes = check_object_labels(y, name)
    classes = np.unique(y) if classes is None else classes
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError(f"{name} must not contain NaN.")
    return classes


def class_sums_chunk(y_true, y_proba, sample_weight, classes, exponent, score_name, **flags):
    """:func:`fastcal._binning.class_rows` of one chunk of an (n, k) probability matrix whose column classes are
    known (see :func:`matrix_classes`), the weights rescaled by ``2**-exponent`` (one exponent for all chunks, see
    :func:`fastcal._validation.rescale_weights`). No warning: the caller adds ``ROFF`` (:func:`warn_rows_off`)."""
    P = as_float_array(y_proba, score_name)
    y = column_or_1d(y_true, "y_true", min_size=0)
    check_consistent_length(y_true=y, **{score_name: P})
    if P.shape[0]:
        check_probability_range(P, score_name)
    codes, _ = class_codes(y, classes)
    w = rescale_weights(check_sample_weight(sample_weight, P.shape[0]), exponent)[0]
    return class_rows(P, codes, w, atol=row_sum_atol(P.dtype), **flags)


def _in_weight_units(value, sample_weight):
    """``value``, computed from the weights rescaled by :func:`fastcal._validation.rescale_weights`, in the units of
    the (validated) ``sample_weight`` again."""
    if sample_weight is None:
        return value
    return np.ldexp(value, weight_exponent(np.asarray(sample_weight, dtype=np.float64)))


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - uncomparable labels are different
        return False


def _binary_codes(y_true, labels, pos_label, score_name, *, stacklevel):
    """The labels of a 1-D ``score_name`` as 0/1 codes, given ``labels``: two of them, the greater (or
    ``pos_label``) positive. ``stacklevel`` is counted from the caller."""
    lab = np.asarray(labels)
    if lab.shape != (2,):
        raise ValueError(f"labels must hold the two labels of a 1-D {score_name} (the probability of the greater), "
                         f"got {{{shown(lab.reshape(-1))}}}; for more classes pass the (n_samples, n_classes) matrix "
                         "of their probabilities.")
    classes = check_labels(lab, 2, score_name, ordered=False, stacklevel=stacklevel + 1)
    check_params(pos_label=pos_label)
    codes, _ = class_codes(column_or_1d(y_true, "y_true"), classes)
    if pos_label is None or _equal(pos_label, classes[1]):
        return codes
    if _equal(pos_label, classes[0]):
        return np.ascontiguousarray(codes == 0).view(np.uint8)
    raise ValueError(f"pos_label={pos_label!r} is not one of labels {{{shown(classes)}}}.")


def _multiclass_problems(y_true, y_prob, sample_weight, labels, pos_label, multiclass, *, stacklevel):
    """The binary problems of an (n, k) probability matrix: ``(problems, w)``, ``problems`` an iterator of
    ``(y, p)`` (0/1 labels, contiguous predictions).

    "top_label": one problem, the largest probability of each row against
    whether its column is the row's class; "classwise": one per column
    ``j``, ``P[:, j]`` against ``y_true == classes[j]`` (made one at a time).
    """
    if pos_label is not None:
        raise ValueError("pos_label is for 1-D y_prob; the columns of an (n, k) y_prob are the classes in sorted "
                         "order (labels, else those of y_true).")
    codes, _, P, w = _class_matrix(y_true, y_prob, sample_weight, labels, "y_prob", proba=True,
                                   stacklevel=stacklevel + 1)
    check_row_sums(P, "y_prob", stacklevel=stacklevel + 1)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    if multiclass == "top_label":
        return iter([top_label(P, codes)]), w
    return ((np.ascontiguousarray(codes == j).view(np.uint8), np.ascontiguousarray(P[:, j]))
            for j in range(P.shape[1])), w


def _problem_table(y, p, w, n_bins, strategy):
    """:func:`fastcal._binning.bin_stats` of one validated binary problem, on the bins of ``strategy``."""
    lo, hi = (float(p.min()), float(p.max())) if p.shape[0] else (0.0, 0.0)
    edges = bin_edges(n_bins, strategy, p.shape[0], lambda ranks: order_statistics(p, ranks, lo, hi))
    return bin_stats(p, y, w, edges)


def _matrix_tables(y_true, y_prob, sample_weight, labels, pos_label, n_bins, strategy, multiclass, *, stacklevel):
    """``(tables, w)``: one bin table per binary problem of an (n, k) ``y_prob`` (see :func:`_multiclass_problems`)."""
    problems, w = _multiclass_problems(y_true, y_prob, sample_weight, labels, pos_label, multiclass,
                                       stacklevel=stacklevel + 1)
    return [_problem_table(y, p, w, n_bins, strategy) for y, p in problems], w


def _check_multiclass(y_prob, multiclass, labels):
    """True if ``y_prob`` is an (n, k) matrix (k >= 2); checks ``multiclass``, and that ``labels`` comes with one."""
    check_params(multiclass=multiclass)
    matrix = _is_matrix(np.asarray(y_prob))
    if labels is not None and not matrix:
        raise ValueError("labels is for an (n, k) y_prob, the classes of its columns; a 1-D y_prob needs none.")
    return matrix


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------
@overload
def calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    return_counts: Literal[False] = False,
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
@overload
def calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    return_counts: Literal[True],
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]: ...
@overload
def calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    return_counts: bool = False,
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]: ...
@overload
def calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    return_counts: Literal[False] = False,
    multiclass: Literal["classwise"],
    labels: ArrayLike | None = None,
) -> list[tuple[NDArray[np.float64], NDArray[np.float64]]]: ...
@overload
def calibration_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    return_counts: Literal[True],
    multiclass: Literal["classwise"],
    labels: ArrayLike | None = None,
) -> list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]]: ...
@overload
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
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]] | list[tuple[NDArray[np.float64], NDArray[np.float64]]] | list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]]: ...
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
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]] | list[tuple[NDArray[np.float64], NDArray[np.float64]]] | list[tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]]:
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
        Number of bins, 1 to 2**20 (:data:`fastcal._binning.MAX_BINS`). Empty
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
    if _check_multiclass(y_prob, multiclass, labels):
        n_bins = check_binning(n_bins, strategy)
        tables, w = _matrix_tables(y_true, y_prob, sample_weight, labels, pos_label, n_bins, strategy, multiclass,
                                   stacklevel=2)
        curves = [curve_from_table(t, w is not None, return_counts) for t in tables]
        if return_counts and w is not None:
            curves = [(*c[:2], _in_weight_units(c[2], sample_weight)) for c in curves]
        return curves[0] if multiclass == "top_label" else curves
    table, _, (_, _, w) = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    curve = curve_from_table(table, w is not None, return_counts)
    if return_counts and w is not None:
        return (*curve[:2], _in_weight_units(curve[2], sample_weight))
    return curve


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
    parallel pass of the binning engine; an (n, k) matrix is one parallel
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
    y_proba, name = _proba_argument("brier_score_loss", y_proba, y_prob)
    scale_by_half = check_params(scale_by_half=scale_by_half, pos_label=pos_label)["scale_by_half"]
    arr = np.asarray(y_proba)
    if _is_matrix(arr):
        sums = _class_sums(y_true, arr, sample_weight, labels, name, brier=True, stacklevel=2)
        score = float(sums[RBRIER] / sums[RW])
        half = arr.shape[1] < 3 if scale_by_half == "auto" else scale_by_half
        return 0.5 * score if half else score
    table, _, _ = _binned(y_true, arr, sample_weight, pos_label, 1, "uniform", score_name=name, brier=True)
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
    input is one parallel pass of the binning engine; an (n, k) matrix is one
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
    y_proba, name = _proba_argument("log_loss", y_proba, y_prob, y_pred)
    check_params(normalize=normalize, pos_label=pos_label)
    arr = np.asarray(y_proba)
    if _is_matrix(arr):
        sums = _class_sums(y_true, arr, sample_weight, labels, name, logloss=True, stacklevel=2)
        return float(sums[RLOG] / sums[RW]) if normalize else float(_in_weight_units(sums[RLOG], sample_weight))
    if labels is not None:
        y_true, pos_label = _binary_codes(y_true, labels, pos_label, name, stacklevel=2), None
    table, _, _ = _binned(y_true, arr, sample_weight, pos_label, 1, "uniform", score_name=name, greater=True,
                          logloss=True)
    return column_mean(table, SLOG) if normalize else float(_in_weight_units(table[:, SLOG].sum(), sample_weight))


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
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True, brier=True)
    return BrierDecomposition(*brier_terms_from_table(table))


@overload
def expected_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    sample_weight: ArrayLike | None = None,
    pos_label: float | str | None = None,
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> float: ...
@overload
def expected_calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    sample_weight: ArrayLike | None = None,
    pos_label: float | str | None = None,
    multiclass: Literal["classwise"],
    labels: ArrayLike | None = None,
) -> float | NDArray[np.float64]: ...
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
    if _check_multiclass(y_prob, multiclass, labels):
        n_bins = check_binning(n_bins, strategy)
        tables, _ = _matrix_tables(y_true, y_prob, sample_weight, labels, pos_label, n_bins, strategy, multiclass,
                                   stacklevel=2)
        errors = [ece_from_table(t)[norm] for t in tables]
        return errors[0] if multiclass == "top_label" else np.array(errors)
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    return ece_from_table(table)[norm]


@overload
def roc_auc_score(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    average: Literal["macro", "weighted", "micro", "samples"] = "macro",
    sample_weight: ArrayLike | None = None,
    max_fpr: float | None = None,
    multi_class: Literal["raise", "ovr", "ovo"] = "raise",
    labels: ArrayLike | None = None,
    pos_label: float | str | None = None,
) -> float: ...
@overload
def roc_auc_score(
    y_true: ArrayLike,
    y_score: ArrayLike,
    *,
    average: None,
    sample_weight: ArrayLike | None = None,
    max_fpr: float | None = None,
    multi_class: Literal["raise", "ovr", "ovo"] = "raise",
    labels: ArrayLike | None = None,
    pos_label: float | str | None = None,
) -> float | NDArray[np.float64]: ...
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
    y, x, w, _, _ = _check_inputs(y_true, arr, sample_weight, pos_label, prob=False, score_name="y_score",
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
    codes, classes, P, w = _class_matrix(y_true, y_score, sample_weight, labels, "y_score", proba=False, stacklevel=3)
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


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
_REPORT_ROWS = (
    # (field, label, format)
    ("n", "samples", "{:,}"),
    ("weight_sum", "total weight", "{:,.6g}"),
    ("base_rate", "base rate (observed)", "{:.6f}"),
    ("mean_prediction", "mean prediction", "{:.6f}"),
    ("auc", "ROC AUC", "{:.6f}"),
    ("brier", "Brier score", "{:.6f}"),
    ("log_loss", "log loss", "{:.6f}"),
    ("ece", "ECE (l1)", "{:.6f}"),
    ("rmsce", "RMS calibration error (l2)", "{:.6f}"),
    ("mce", "max calibration error", "{:.6f}"),
    ("reliability", "reliability", "{:.6f}"),
    ("resolution", "resolution", "{:.6f}"),
    ("uncertainty", "uncertainty", "{:.6f}"),
    ("within_bin_variance", "within-bin variance", "{:.6f}"),
    ("within_bin_covariance", "within-bin covariance", "{:.6f}"),
    ("slope", "calibration slope", "{:.6f}"),
    ("intercept", "calibration intercept", "{:.6f}"),
    ("calibration_in_the_large", "calibration-in-the-large", "{:.6f}"),
    ("brier_miscalibration", "CORP miscalibration (Brier)", "{:.6f}"),
    ("brier_discrimination", "CORP discrimination (Brier)", "{:.6f}"),
    ("log_loss_miscalibration", "CORP miscalibration (log loss)", "{:.6f}"),
    ("log_loss_discrimination", "CORP discrimination (log loss)", "{:.6f}"),
    ("log_loss_uncertainty", "CORP uncertainty (log loss)", "{:.6f}"),
)


@dataclass(frozen=True, eq=False, repr=False)
class CalibrationReport(Result):
    """All of fastcal's diagnostics of one set of predictions (see :func:`calibration_report`).

    Scalars are Python floats/ints; ``bin_edges`` has ``n_bins + 1`` entries,
    ``bin_weights`` one per bin (0 for an empty bin), ``prob_true``,
    ``prob_pred`` one per non-empty bin, as :func:`calibration_curve` returns
    them. ``slope_se``, ``intercept_se``, ``slope_ci``, ``intercept_ci`` (Wald
    95%) and ``slope_converged`` come from
    :func:`fastcal.platt.calibration_slope_intercept`; the ``brier_*`` and
    ``log_loss_*`` terms from :func:`fastcal.score_decomposition` (the Brier
    uncertainty is ``uncertainty``; the log-loss score, unclipped, is
    ``log_loss_miscalibration - log_loss_discrimination + log_loss_uncertainty``). ``str(report)`` is a
    readable table; :meth:`to_dict` gives plain Python types
    (JSON-serialisable).
    """

    n: int
    weight_sum: float
    base_rate: float
    mean_prediction: float
    auc: float
    brier: float
    log_loss: float
    ece: float
    rmsce: float
    mce: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float
    slope: float
    intercept: float
    calibration_in_the_large: float
    brier_miscalibration: float
    brier_discrimination: float
    log_loss_miscalibration: float
    log_loss_discrimination: float
    log_loss_uncertainty: float
    n_bins: int
    strategy: Literal["uniform", "quantile"]
    bin_edges: NDArray[np.float64] = field(repr=False)
    bin_weights: NDArray[np.float64] = field(repr=False)
    prob_true: NDArray[np.float64] = field(repr=False)
    prob_pred: NDArray[np.float64] = field(repr=False)
    slope_se: float | None = None
    intercept_se: float | None = None
    slope_ci: tuple[float, float] | None = None
    intercept_ci: tuple[float, float] | None = None
    slope_converged: bool | None = None

    def __str__(self) -> str:
        title = f"Calibration report ({self.n_bins} {self.strategy} bins)"
        rows = []
        for name, label, fmt in _REPORT_ROWS:
            value = getattr(self, name)
            if name == "weight_sum" and value == self.n:
                continue
            rows.append((label, fmt.format(value)))
            ci = getattr(self, f"{name}_ci", None) if name in ("slope", "intercept") else None
            if ci is not None:
                rows.append(("  95% CI", f"[{ci[0]:.4f}, {ci[1]:.4f}]"))
        if self.slope_converged is False:
            rows.append(("slope fit converged", "NO"))
        width = max(len(label) for label, _ in rows)
        vwidth = max(len(v) for _, v in rows)
        rule = "-" * (width + 2 + vwidth)
        lines = [title, rule]
        lines += [f"{label:<{width}}  {v:>{vwidth}}" for label, v in rows]
        lines.append(rule)
        lines.append("bin  range            weight    mean pred  frac pos")
        nz = np.flatnonzero(self.bin_weights > 0)
        j = 0
        for k in range(self.n_bins):
            lo, hi = self.bin_edges[k], self.bin_edges[k + 1]
            rng = f"{'[' if k == 0 else '('}{lo:.3f}, {hi:.3f}]"
            if j < nz.size and nz[j] == k:
                weight, pred, true = self.bin_weights[k], self.prob_pred[j], self.prob_true[j]
                lines.append(f"{k:>3}  {rng:<15} {weight:>8.6g}  {pred:>9.4f}  {true:>8.4f}")
                j += 1
            else:
                lines.append(f"{k:>3}  {rng:<15} {0:>8}  {'(empty)':>9}  {'':>8}")
        return "\n".join(lines)


def calibration_report(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | str | None = None,
) -> CalibrationReport:
    r"""Every calibration diagnostic of a set of binary predictions, in one call.

    One parallel pass over the data gives the binned quantities (calibration
    curve, ECE/RMSCE/MCE, Brier decomposition), the Brier score and the log
    loss; the AUC comes from sorting the scores of each class
    (:func:`roc_auc_score`); the calibration slope, intercept and
    calibration-in-the-large come from the logistic recalibration
    :math:`\operatorname{logit} P(y=1) = \alpha + \beta \operatorname{logit}(p)`
    of :func:`fastcal.platt.calibration_slope_intercept`; the CORP score decompositions
    (:func:`fastcal.score_decomposition`) from one isotonic fit.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`; both classes must be present.
    n_bins : int, default=10
        Bins of the curve, the ECE and the Brier decomposition.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.

    Returns
    -------
    CalibrationReport
        ``n``, ``weight_sum``, ``base_rate``, ``mean_prediction``, ``auc``,
        ``brier``, ``log_loss``, ``ece`` (l1), ``rmsce`` (l2), ``mce`` (max),
        ``reliability``, ``resolution``, ``uncertainty``,
        ``within_bin_variance``, ``within_bin_covariance``, ``slope``,
        ``intercept``, ``calibration_in_the_large``, the CORP score
        decompositions (``brier_miscalibration``, ``brier_discrimination``,
        ``log_loss_miscalibration``, ``log_loss_discrimination``,
        ``log_loss_uncertainty``, see :func:`fastcal.score_decomposition`),
        the standard errors and
        95% confidence intervals of slope and intercept, and the bins
        (``bin_edges``, ``bin_weights``, ``prob_true``, ``prob_pred``).
        Prints as a table; ``to_dict()`` converts it.

    References
    ----------
    Van Calster, B., McLernon, D. J., van Smeden, M., Wynants, L. and
    Steyerberg, E. W. (2019). Calibration: the Achilles heel of predictive
    analytics. BMC Medicine 17, 230.
    Cox, D. R. (1958). Two further applications of a model for binary
    regression. Biometrika 45(3/4), 562-565.
    """
    from .platt import slope_intercept_fit

    table, edges, (y, p, w) = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True,
                                      brier=True, logloss=True)
    positives = float(table[:, SY].sum())
    both = 0 < positives < float(table[:, W].sum())
    # One sort of the scores per class for the AUC and the CORP decomposition's isotonic fit.
    by_label = shared_sort(y, p, w) if both else None
    auc = roc_auc(y, p, w, by_label=by_label) if both else math.nan
    corp = decompose(y, p, w, ("brier", "log_loss"), by_label=by_label)
    del by_label  # the slope fit's logits would otherwise sit beside the sorted copy: 2x the scores at the peak
    # The standard errors are those of frequency weights, in the caller's units.
    slope_fit, missing = slope_intercept_fit(y, p, None if w is None else _in_weight_units(w, sample_weight),
                                             strict=False)
    return report_from_parts(table, edges, strategy, int(p.shape[0]), w is not None,
                             lambda v: _in_weight_units(v, sample_weight), auc, corp, slope_fit, missing, 3)


def report_from_parts(table, edges, strategy, n, weighted, in_weight_units, auc, corp, slope_fit, missing, stacklevel):
    """The :class:`CalibrationReport` of binary data from its parts: what :func:`calibration_report` and the
    engine's driver (:func:`fastcal._engine.decomposition.calibration_report`) both computed.

    Parameters
    ----------
    table : ndarray
        The bin table (``fastcal._binning``'s columns, with moments, Brier and log-loss sums).
    edges : ndarray
        The bin edges.
    strategy : str
        How they were chosen.
    n : int
        The number of rows.
    weighted : bool
        Whether the rows were weighted.
    in_weight_units : callable
        A sum of the table's weights in the units of ``sample_weight``.
    auc : float
        The ROC AUC (NaN unless both classes are present).
    corp : tuple
        The CORP decompositions of the Brier score and of the log loss.
    slope_fit, missing
        :func:`fastcal.platt.slope_intercept_fit`'s result (``strict=False``): the fit, and why the
        maximum-likelihood slope does not exist (or None); warned about here, at ``stacklevel``.
    """
    weight = table[:, W]
    total = float(weight.sum())
    positives = float(table[:, SY].sum())
    both = 0 < positives < total
    if missing is not None:
        what = ("the ROC AUC and the calibration slope and intercept are NaN, the calibration-in-the-large "
                f"{slope_fit.calibration_in_the_large:+}" if not both else
                f"the calibration slope is {slope_fit.slope:+} and the intercept NaN" if math.isinf(slope_fit.slope)
                else "the calibration slope and intercept are NaN")
        warnings.warn(f"calibration_report: {missing}, so the maximum-likelihood calibration slope does not exist: "
                      f"{what} (with their standard errors).", UserWarning, stacklevel=stacklevel)
    decomposition = BrierDecomposition(*brier_terms_from_table(table))
    ece = ece_from_table(table)
    prob_true, prob_pred = curve_from_table(table, weighted, False)
    corp_brier, corp_log = corp
    optional: dict[str, Any] = {}
    for name, attr in (
        ("slope_se", "slope_se"),
        ("intercept_se", "intercept_se"),
        ("slope_ci", "slope_ci"),
        ("intercept_ci", "intercept_ci"),
        ("slope_converged", "converged"),
    ):
        value = getattr(slope_fit, attr, None)
        if value is None:
            continue
        if name.endswith("_ci"):
            value = tuple(float(v) for v in np.ravel(value))
        elif name == "slope_converged":
            value = bool(value)
        else:
            value = float(value)
        optional[name] = value
    return CalibrationReport(
        n=n,
        weight_sum=float(in_weight_units(total)),
        base_rate=positives / total,
        mean_prediction=column_mean(table, SP),
        auc=auc,
        brier=decomposition.brier,
        log_loss=column_mean(table, SLOG),
        ece=ece["l1"],
        rmsce=ece["l2"],
        mce=ece["max"],
        reliability=decomposition.reliability,
        resolution=decomposition.resolution,
        uncertainty=decomposition.uncertainty,
        within_bin_variance=decomposition.within_bin_variance,
        within_bin_covariance=decomposition.within_bin_covariance,
        slope=float(slope_fit.slope),
        intercept=float(slope_fit.intercept),
        calibration_in_the_large=float(slope_fit.calibration_in_the_large),
        brier_miscalibration=corp_brier.miscalibration,
        brier_discrimination=corp_brier.discrimination,
        log_loss_miscalibration=corp_log.miscalibration,
        log_loss_discrimination=corp_log.discrimination,
        log_loss_uncertainty=corp_log.uncertainty,
        n_bins=edges.shape[0] - 1,
        strategy=strategy,
        bin_edges=edges,
        bin_weights=np.asarray(in_weight_units(weight), dtype=np.float64),
        prob_true=prob_true,
        prob_pred=prob_pred,
        **optional,
    )
