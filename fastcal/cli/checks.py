"""Checks of label, probability and weight columns, raising a DataError that names the file, column and row; of a
grouped model's columns against the command's, and the warning when no row has one of its groups (``apply``, with
and without ``--spark``)."""

from __future__ import annotations

import sys

import numpy as np

from .._coding import group_kinds, kind_names, shown
from .._io import DataError, UsageError

#: The multinomial methods of ``fit --method``: one score column per class, labels class indices.
MULTINOMIAL = ("temperature", "vector", "bcts", "matrix", "dirichlet")


def check_labels(y, path, column, method, n_classes=None, offset=0):
    """0/1 labels for sigmoid, beta and histogram (and for report), class indices for the :data:`MULTINOMIAL` methods;
    DataError naming the row.

    Parameters
    ----------
    y : ndarray
        Numeric labels (checked by :func:`fastcal._io.check_numeric_column`).
    path, column : str
        For the message.
    method : {"isotonic", "centered-isotonic", "sigmoid", "beta", "histogram", "venn-abers", "temperature", "vector",
              "bcts", "matrix", "dirichlet", "binary"}
        Calibration labels are 0/1 for every method but the multinomial ones (the library's
        ``IsotonicRegression`` fits any real targets; the command line
        calibrates classifiers, and a label 2 or 0.5 there is bad data).
    n_classes : int, optional
        For the multinomial methods.
    offset : int, optional
        Rows of the file before ``y`` (``y`` a batch): rows in messages count from ``offset + 1``.
    """
    if method not in MULTINOMIAL:
        bad = (y != 0) & (y != 1)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{path}: column {column!r}, row {offset + i + 1}: label {y[i].item()!r} is not 0 or 1")
    else:
        bad = (y != np.round(y)) | (y < 0) | (y >= n_classes)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"{path}: column {column!r}, row {offset + i + 1}: label {y[i].item()!r} is not a "
                            f"class index in 0 .. {n_classes - 1}")


def check_probabilities(p, path, column, offset=0):
    """Scores that must be probabilities in [0, 1] (report; fit --method beta or histogram); DataError naming the row.

    ``offset`` as in :func:`check_labels`.
    """
    bad = (p < 0) | (p > 1)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: column {column!r}, row {offset + i + 1}: {p[i].item()!r} is not a probability "
                        "in [0, 1]")


def check_weights(w, path, column, offset=0, *, positive_sum=True):
    """Sample weights: non-negative and, with ``positive_sum``, of positive sum; DataError naming the row.

    ``offset`` as in :func:`check_labels`; a batch of a larger file is checked
    with ``positive_sum=False`` (the fit checks the total).
    """
    bad = w < 0
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{path}: column {column!r}, row {offset + i + 1}: weight {w[i].item()!r} is negative")
    if positive_sum and not w.sum() > 0:
        raise DataError(f"{path}: column {column!r}: the weights must have a positive sum")


def numerical_values(values, path, column, offset=0):
    """A numerical segment feature (``fit --numerical-col``) as float64: ``values`` typed as a group column
    (:meth:`fastcal._io.Reader.group_column`), a missing value NaN; DataError naming the first row of text.

    ``offset`` as in :func:`check_labels`.
    """
    if values.dtype.kind in "biuf":
        return values.astype(np.float64)
    text = np.array([isinstance(v, (str, bytes)) for v in values.tolist()], dtype=bool)
    if text.any():
        i = int(np.flatnonzero(text)[0])
        raise DataError(f"{path}: column {column!r}, row {offset + i + 1}: {values[i]!r} is not a number (the "
                        f"column is a numerical segment feature)")
    return np.array([np.nan if v is None else v for v in values.tolist()], dtype=np.float64)


def segment_features(columns, numerical, path, offset=0):
    """Segment features as :class:`fastcal.MulticalibrationCalibrator` takes them: ``columns`` (name -> a column
    typed as a group column, of a file or of one piece of it, rows from ``offset + 1``), those in ``numerical`` as
    float64 (:func:`numerical_values`)."""
    return {name: numerical_values(values, path, name, offset) if name in numerical else values
            for name, values in columns.items()}


def check_group_columns(est, names, model):
    """A :class:`UsageError` when the grouped model ``est`` was fitted on another number of group columns than
    ``names`` (its groups tuples of that many values; one column's groups are not tuples)."""
    fitted = {len(g) if isinstance(g, tuple) else 1 for g in est.groups_}
    if len(fitted) == 1 and fitted != {len(names)}:
        k = fitted.pop()
        raise UsageError(f"{model}: the model was fitted on {k} group column{'s' if k > 1 else ''}, but --group-col "
                         f"names {len(names)} ({', '.join(names)}); give the columns of the fit")


def warn_unmatched(path, column, fitted, seen, noun="groups", consequence="every row got the global calibrator"):
    """Write on stderr that no row of ``path`` has in ``column`` one of the model's ``fitted`` groups (or a
    feature's values: ``noun``), which means ``consequence`` (``seen``: a few of the column's values)."""
    sys.stderr.write(f"fastcal: warning: {path}: no row's {column!r} is one of the model's {len(fitted)} {noun}: "
                     f"{consequence} (the model's {noun}: {shown(fitted)}; the column's "
                     f"values: {shown(seen)}{describe_kinds(fitted, seen)})\n")


def describe_kinds(fitted, values):
    """``"; numbers in the model, text in the column"`` when the groups of a model and the values of a column are
    of other kinds (numbers, text); else ``""``."""
    a, b = group_kinds(fitted), group_kinds(values)
    if a and b and not a & b:
        return f"; {kind_names(a)} in the model, {kind_names(b)} in the column"
    return ""
