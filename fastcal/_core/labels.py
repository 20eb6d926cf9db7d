"""Class labels of (n, k) matrices: which column is each row's class.

One reading for every function that takes a matrix of class probabilities or
scores with labels ``y`` (scikit-learn's rule): the columns are the classes in
sorted order, those of ``labels`` when given, else the distinct labels of
``y``, which must then number ``k``. Integer labels that are already
``0 .. k - 1`` are their own codes, without a copy. There is no fallback that
reads labels as column indices when some classes are absent: 1-based labels
without the last class would be misread silently; the caller passes
``labels`` instead.
"""

from __future__ import annotations

import warnings

import numpy as np

from .validation import check_object_labels

__all__ = ["as_integers", "check_labels", "class_codes", "matrix_classes", "matrix_codes", "not_in_labels", "shown"]


def shown(values):
    """Up to five values, as the braces of an error message show them."""
    values = np.asarray(values).tolist()
    return ", ".join(repr(v) for v in values[:5]) + (", ..." if len(values) > 5 else "")


def not_in_labels(missing, y_name="y_true"):
    """The ``ValueError`` for labels of ``y_name`` that ``labels`` lacks."""
    return ValueError(f"{y_name} contains labels not in labels: {{{shown(missing)}}}.")


def as_integers(y):
    """``y`` as an integer array if every label is an integer (no copy for integer dtypes; bool as uint8), else None."""
    kind = y.dtype.kind
    if kind == "b":
        return np.ascontiguousarray(y).view(np.uint8)
    if kind in "iu":
        return y
    if kind == "f":
        with np.errstate(invalid="ignore", over="ignore"):
            yi = y.astype(np.int64)
        if np.array_equal(yi, y):  # NaN, infinity and fractions compare unequal
            return yi
    return None


def class_codes(y, classes=None, y_name="y_true"):
    """``(codes, classes)``: every label of ``y`` as its index in ``classes`` (sorted, unique), by default the
    sorted labels of ``y``.

    Integer labels spanning no more values than there are samples (or 2^16)
    are counted (``np.bincount``, no sort) and, when they are ``0 .. k - 1``,
    used as their own codes without a copy; other labels go through
    ``np.unique`` or ``np.searchsorted``. ``ValueError`` for NaN labels and
    for labels not in ``classes``; messages name ``y_name``.
    """
    yi = as_integers(y)
    if yi is not None and yi.shape[0]:
        lo, hi = int(yi.min()), int(yi.max())
        span = hi - lo + 1
        ci = None if classes is None else as_integers(classes)
        if span <= max(yi.shape[0], 1 << 16) and (classes is None or ci is not None):
            shifted = yi if lo == 0 else np.subtract(yi, lo, dtype=np.int64)
            present = np.flatnonzero(np.bincount(shifted, minlength=span))
            if classes is None:
                found = (present + lo).astype(y.dtype)
                if present.shape[0] == span:
                    return shifted, found
                lut = np.zeros(span, dtype=np.int64)
                lut[present] = np.arange(present.shape[0])
                return lut[shifted], found
            lut = np.full(span, -1, dtype=np.int64)
            inside = (ci >= lo) & (ci <= hi)
            lut[ci[inside] - lo] = np.flatnonzero(inside)
            missing = present[lut[present] < 0]
            if missing.shape[0]:
                raise not_in_labels((missing + lo).astype(y.dtype), y_name)
            if ci[0] == lo and ci[-1] - lo + 1 == ci.shape[0]:  # classes lo, lo + 1, ...: codes y - lo
                return shifted, classes
            return lut[shifted], classes
    if classes is None:
        check_object_labels(y, y_name)
        try:
            classes, codes = np.unique(y, return_inverse=True)
        except TypeError:
            raise ValueError(f"{y_name} mixes labels of types that cannot be sorted.") from None
        if classes.dtype.kind == "f" and np.isnan(classes).any():
            raise ValueError(f"{y_name} must not contain NaN.")
        return codes.reshape(-1), classes
    try:
        codes = np.searchsorted(classes, y)
        found = np.asarray(classes[np.minimum(codes, classes.shape[0] - 1)] == y)
    except TypeError:
        found = np.zeros(0, dtype=bool)
    if found.shape != y.shape or not found.all():
        missing = y if found.shape != y.shape else y[~found]
        try:
            missing = np.unique(missing)
        except TypeError:
            pass
        raise not_in_labels(missing, y_name)
    return codes, classes


def check_labels(labels, k, score_name, *, ordered, stacklevel):
    """The ``labels`` argument as sorted unique classes, one per column of the (n, k) ``score_name``.

    Unsorted labels raise if ``ordered`` (scikit-learn's ``roc_auc_score``),
    else warn that the columns are taken in sorted order (its ``log_loss``
    and ``brier_score_loss``); ``stacklevel`` is counted from the caller.
    """
    lab = np.asarray(labels)
    if lab.ndim != 1 or lab.shape[0] == 0:
        raise ValueError(f"labels must be a non-empty 1-D array-like of class labels, got shape {lab.shape}.")
    try:
        classes = np.unique(lab)
    except TypeError:
        raise ValueError("labels mixes labels of types that cannot be sorted.") from None
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError("labels must not contain NaN.")
    if classes.shape[0] != lab.shape[0]:
        raise ValueError(f"labels must not repeat a label; got {{{shown(lab)}}}.")
    if not np.array_equal(classes, lab):
        message = (f"labels are not sorted: the columns of {score_name} are the classes in sorted order, "
                   f"{{{shown(classes)}}}")
        if ordered:
            raise ValueError(message + "; pass labels sorted.")
        warnings.warn(message + ".", UserWarning, stacklevel=stacklevel + 1)
    if classes.shape[0] < 2:
        raise ValueError(f"labels must hold at least two labels, got {{{shown(classes)}}}.")
    if classes.shape[0] != k:
        raise ValueError(f"labels has {classes.shape[0]} labels but {score_name} has {k} columns: one column per "
                         "label, in sorted order.")
    return classes


def matrix_classes(y_classes, labels, k, score_name, *, y_name="y_true", stacklevel):
    """The classes of the ``k`` columns of an (n, k) matrix: ``labels`` (checked, unsorted ones warn), or
    ``y_classes``, the sorted labels found in ``y_name``, which must number ``k``. :mod:`fastcal.dask` finds
    them chunk by chunk; ``stacklevel`` is counted from the caller."""
    if labels is not None:
        return check_labels(labels, k, score_name, ordered=False, stacklevel=stacklevel + 1)
    if y_classes.shape[0] == 1:
        raise ValueError(f"{y_name} contains only one label ({shown(y_classes)}): pass labels, the classes of the "
                         f"{k} columns of {score_name}.")
    if y_classes.shape[0] != k:
        raise ValueError(f"{y_name} has {y_classes.shape[0]} classes ({{{shown(y_classes)}}}) but {score_name} has "
                         f"{k} columns: one column per class, in sorted order; pass labels if {y_name} lacks some.")
    return y_classes


def matrix_codes(y, k, labels, score_name, *, y_name="y_true", ordered=False, stacklevel):
    """``(codes, classes)`` of the 1-D labels ``y`` for an (n, k) ``score_name``: the column of each row's class.

    The classes are ``labels`` (checked by :func:`check_labels`; unsorted
    ones raise if ``ordered``, else warn) or the distinct labels of ``y``,
    which must be ``k`` (:func:`matrix_classes`). ``stacklevel`` is counted
    from the caller.
    """
    classes = None if labels is None else check_labels(labels, k, score_name, ordered=ordered,
                                                       stacklevel=stacklevel + 1)
    codes, found = class_codes(y, classes, y_name)
    if labels is None:
        found = matrix_classes(found, None, k, score_name, y_name=y_name, stacklevel=stacklevel + 1)
    return codes, found

