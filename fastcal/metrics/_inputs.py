"""The inputs of the diagnostics: labels, probabilities, (n, k) matrices and scikit-learn's argument names.

Every diagnostic of :mod:`fastcal.metrics` validates its input here and gets
back clean arrays: the binary labels as 0/1 (:func:`binary_labels`), the
predictions as a contiguous float32/float64 array in [0, 1]
(:func:`check_probabilities`), the weights rescaled by a power of two
(:func:`fastcal._core.validation.rescale_weights`, undone by
:func:`in_weight_units`), or, for an (n, k) matrix, the column of each row's
class (:func:`class_matrix`); :func:`binned` adds the bin table of
:func:`fastcal._binning.bin_stats`. :func:`label_set` and
:func:`class_sums_chunk` are the per-chunk steps of the engine's drivers
(:mod:`fastcal.metrics._rows`).
"""

from __future__ import annotations

import warnings

import numpy as np

from .._binning import bin_edges, bin_stats, check_binning, check_params, order_statistics
from .._matrices import check_row_sums, class_rows, row_sum_atol, top_label, warn_rows_off
from .._core.errors import InvalidParameterError
from .._core.labels import check_labels, class_codes, matrix_codes, shown
from .._core.validation import (
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
                f"{name} takes value in {{{shown(classes)}}} and pos_label is not specified: either make "
                f"{name} take value in {{0, 1}} or {{-1, 1}} or pass pos_label explicitly."
            )
        pos_label = 1
    return np.ascontiguousarray(arr == pos_label).view(np.uint8)


def check_inputs(y_true, y_prob, sample_weight, pos_label, *, prob=True, score_name="y_prob", greater=False,
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


def binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, *, score_name="y_prob", greater=False,
            **flags):
    """Validated input, binned: ``(table, edges, (y, p, w))`` (see :func:`fastcal._binning.bin_stats`)."""
    n_bins = check_binning(n_bins, strategy)
    y, p, w, lo, hi = check_inputs(y_true, y_prob, sample_weight, pos_label, score_name=score_name, greater=greater,
                                    many=f"{score_name} is 1-D: pass the (n_samples, n_classes) matrix of their "
                                    "probabilities" if greater else None)
    edges = bin_edges(n_bins, strategy, p.shape[0], lambda ranks: order_statistics(p, ranks, lo, hi))
    return bin_stats(p, y, w, edges, **flags), edges, (y, p, w)


# ---------------------------------------------------------------------------
# scikit-learn's drop-ins: argument names, class labels, (n, k) matrices
# ---------------------------------------------------------------------------
def proba_argument(func, y_proba, y_prob, y_pred="deprecated"):
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


def is_matrix(x):
    """True if the array ``x`` has the shape (n, k) of a matrix of class probabilities or scores, k >= 2."""
    return x.ndim == 2 and x.shape[1] > 1


def class_matrix(y_true, y_matrix, sample_weight, labels, score_name, *, proba, stacklevel):
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


def class_sums(y_true, y_matrix, sample_weight, labels, score_name, *, stacklevel, **flags):
    """:func:`fastcal._matrices.class_rows` of a validated probability matrix; warns, as scikit-learn 1.9, if rows do
    not sum to 1 (:func:`fastcal._matrices.warn_rows_off`). ``stacklevel`` is counted from the caller."""
    codes, _, P, w = class_matrix(y_true, y_matrix, sample_weight, labels, score_name, proba=True,
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
    """:func:`fastcal._matrices.class_rows` of one chunk of an (n, k) probability matrix whose column classes are
    known (see :func:`matrix_classes`), the weights rescaled by ``2**-exponent`` (one exponent for all chunks, see
    :func:`fastcal._core.validation.rescale_weights`). No warning: the caller adds ``ROFF`` (:func:`warn_rows_off`)."""
    P = as_float_array(y_proba, score_name)
    y = column_or_1d(y_true, "y_true", min_size=0)
    check_consistent_length(y_true=y, **{score_name: P})
    if P.shape[0]:
        check_probability_range(P, score_name)
    codes, _ = class_codes(y, classes)
    w = rescale_weights(check_sample_weight(sample_weight, P.shape[0]), exponent)[0]
    return class_rows(P, codes, w, atol=row_sum_atol(P.dtype), **flags)


def in_weight_units(value, sample_weight):
    """``value``, computed from the weights rescaled by :func:`fastcal._core.validation.rescale_weights`, in the units of
    the (validated) ``sample_weight`` again."""
    if sample_weight is None:
        return value
    return np.ldexp(value, units_exponent(sample_weight))


def units_exponent(sample_weight):
    """The exponent ``e`` of :func:`fastcal._core.validation.rescale_weights` of the (validated) ``sample_weight``: the
    rescaled weights times :math:`2^e` are in its units (0 for None)."""
    return 0 if sample_weight is None else weight_exponent(np.asarray(sample_weight, dtype=np.float64))


def _equal(a, b):
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - uncomparable labels are different
        return False


def binary_codes(y_true, labels, pos_label, score_name, *, stacklevel):
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
    codes, _, P, w = class_matrix(y_true, y_prob, sample_weight, labels, "y_prob", proba=True,
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


def matrix_tables(y_true, y_prob, sample_weight, labels, pos_label, n_bins, strategy, multiclass, *, stacklevel):
    """``(tables, w)``: one bin table per binary problem of an (n, k) ``y_prob`` (see :func:`_multiclass_problems`)."""
    problems, w = _multiclass_problems(y_true, y_prob, sample_weight, labels, pos_label, multiclass,
                                       stacklevel=stacklevel + 1)
    return [_problem_table(y, p, w, n_bins, strategy) for y, p in problems], w


def check_multiclass(y_prob, multiclass, labels):
    """True if ``y_prob`` is an (n, k) matrix (k >= 2); checks ``multiclass``, and that ``labels`` comes with one."""
    check_params(multiclass=multiclass)
    matrix = is_matrix(np.asarray(y_prob))
    if labels is not None and not matrix:
        raise ValueError("labels is for an (n, k) y_prob, the classes of its columns; a 1-D y_prob needs none.")
    return matrix


