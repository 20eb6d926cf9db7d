r"""(n, k) probability matrices: sums over their rows, the check that rows sum to 1, the top-label problem.

The multiclass log loss and Brier score are sums over the rows of the
matrix (:func:`class_rows`, one parallel pass, per-chunk sums added in chunk
order, its columns :data:`RW`, :data:`RLOG`, :data:`RBRIER`, :data:`ROFF`);
every diagnostic of an (n, k) matrix warns alike when rows do not sum to 1
(:func:`row_sum_atol`, :func:`warn_rows_off`, :func:`check_row_sums`); the
top-label problem is :func:`top_label` (:func:`top_label_problem` with the
checks of the matrix). The kernels are in :mod:`fastcal._matrices._kernels`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _kernels as _k
from .._binning import merge_tables, n_chunks
from ._kernels import NROW, RBRIER, RLOG, ROFF, RW
from .._core.labels import matrix_codes
from .._core.parallel import parallel_for
from .._core.validation import check_probability_range

__all__ = [
    "NROW",
    "RBRIER",
    "RLOG",
    "ROFF",
    "RW",
    "check_row_sums",
    "class_rows",
    "row_sum_atol",
    "top_label",
    "top_label_problem",
    "warn_rows_off",
]


def class_rows(P, codes, w, *, atol, rtol=0.0, logloss=False, brier=False):
    r"""Sums over the rows of an (n, k) probability matrix, in one parallel pass.

    With :math:`c_i` the column of row :math:`i`'s true class, weights
    :math:`w_i` (1 without ``w``) and float64 arithmetic: :data:`RW`
    :math:`\sum_i w_i`; with ``logloss``, :data:`RLOG` :math:`-\sum_i w_i
    \log q_i`, :math:`q_i = P_{i c_i}` clipped to :math:`[\epsilon, 1 -
    \epsilon]` in the dtype of ``P`` (scikit-learn's clipping); with
    ``brier``, :data:`RBRIER` :math:`\sum_i w_i \sum_j (P_{ij} - [j =
    c_i])^2`; and :data:`ROFF`, the number of rows whose sum :math:`s_i`
    has :math:`|s_i - 1| > \mathrm{atol} + \mathrm{rtol}\,|s_i|`.

    Parameters
    ----------
    P : ndarray of shape (n, k), float32 or float64
        Finite, C-contiguous.
    codes : ndarray of int, or None
        Column of each row's true class, in ``[0, k)``; None counts the rows
        off 1 only (``RW`` is then 0).
    w : ndarray or None
        Non-negative weights.

    Returns
    -------
    ndarray of shape (NROW,), float64
        Per-chunk sums added in chunk order: the same on any number of threads.
    """
    n, k = P.shape
    part = np.zeros((n_chunks(n, NROW), NROW))
    clip_lo = P.dtype.type(np.finfo(P.dtype).eps)
    clip_hi = P.dtype.type(1) - clip_lo
    parallel_for(_k.class_rows, part.shape[0], P, codes, w, logloss, brier, clip_lo, clip_hi, float(atol), float(rtol),
                 part, rows=n * k)
    return merge_tables(part[:, None, :])[0]


def row_sum_atol(dtype):
    r"""The absolute tolerance of a row sum of probabilities of ``dtype``: :math:`\sqrt{\epsilon} + 10^{-8}`,
    scikit-learn 1.9's (its ``log_loss`` and ``brier_score_loss``)."""
    return math.sqrt(np.finfo(dtype).eps) + 1e-8


def warn_rows_off(sums, n, score_name, *, stacklevel):
    """scikit-learn 1.9's warning when rows of probabilities do not sum to 1 (``sums[ROFF]`` of :func:`class_rows`,
    with ``atol=row_sum_atol(dtype)``, of ``n`` rows); ``stacklevel`` is counted from the caller."""
    if sums[ROFF]:
        warnings.warn(f"The {score_name} values do not sum to one: {int(sums[ROFF])} of {n} rows. Make sure "
                      "to pass probabilities.", UserWarning, stacklevel=stacklevel + 1)


def check_row_sums(P, score_name, *, stacklevel):
    """Warn (:func:`warn_rows_off`) if rows of the validated (n, k) probability matrix ``P`` do not sum to 1:
    one parallel pass of :func:`class_rows`, for the diagnostics that do not need its other sums (top-label and
    class-wise problems, the smooth ECE, the CORP decomposition). ``stacklevel`` is counted from the caller."""
    sums = class_rows(P, None, None, atol=row_sum_atol(P.dtype))
    warn_rows_off(sums, P.shape[0], score_name, stacklevel=stacklevel + 1)


def top_label(P, codes):
    r"""The top-label (confidence) problem of an (n, k) probability matrix, in one parallel pass.

    Returns ``(correct, confidence)``: :math:`\max_j P_{ij}` (in the dtype of
    ``P``) and, as uint8, whether its column (the first of equal maxima, as
    ``np.argmax``) is ``codes[i]``, the column of row ``i``'s class.
    """
    n = P.shape[0]
    conf = np.empty(n, dtype=P.dtype)
    correct = np.empty(n, dtype=np.uint8)
    parallel_for(_k.top_label, n, P, codes, conf, correct, rows=P.size)
    return correct, conf


def top_label_problem(y, P, labels, score_name, y_name, *, stacklevel):
    """:func:`top_label` of the labels ``y`` and the (n, k) probability matrix ``P`` (both of checked shapes and
    dtype): ``P`` checked to lie in [0, 1], rows off 1 warned about (:func:`check_row_sums`), the columns the
    classes in sorted order (``labels``, else those of ``y``: :func:`fastcal._core.labels.matrix_codes`).
    ``stacklevel`` (of the warnings) is counted from the caller."""
    check_probability_range(P, score_name)
    check_row_sums(P, score_name, stacklevel=stacklevel + 1)
    codes, _ = matrix_codes(y, P.shape[1], labels, score_name, y_name=y_name, stacklevel=stacklevel + 1)
    return top_label(P, np.ascontiguousarray(codes, dtype=np.int64))
