"""The checks shared by the prior corrections: priors, rates, the ``out`` argument and the error messages.

Internal API of :mod:`fastcal.prior` (documented in the package): :data:`SUM_TOL`, :data:`TINY64`,
:func:`check_rate`, :func:`prior_vector`, :func:`result_dtype`, :func:`io_arrays`,
:func:`raise_bad_values`, :func:`raise_bad_rows`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._core.validation import check_numeric


#: Absolute tolerance on the sum of a row of ``proba`` and of a prior vector:
#: ``abs(sum - 1) <= SUM_TOL``. Both are renormalised before use, so the check
#: only exists to catch inputs that are not distributions (scores, logits,
#: one-vs-rest outputs); it is loose enough for float32 softmax outputs and for
#: priors written with four decimals.
SUM_TOL = 1e-4

# Smallest positive normal float64: weights are clamped to it so that no row
# can have a zero normaliser (the rows sum to 1, so some entry is >= 1/k).
TINY64 = np.finfo(np.float64).tiny


def _real_scalar(value, name):
    """Return ``value`` as a Python float, or raise TypeError if it is not a real scalar."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a real number, got a bool.")
    if isinstance(value, numbers.Real):
        return float(value)
    arr = np.asarray(value) if isinstance(value, np.ndarray) else None
    if arr is not None and arr.ndim == 0 and arr.dtype.kind in "iuf":
        return float(arr)
    raise TypeError(f"{name} must be a real number, got {type(value).__name__}.")


def check_rate(rate):
    r = _real_scalar(rate, "rate")
    if not 0.0 < r <= 1.0:
        raise ValueError(
            f"rate must be in (0, 1] (the fraction of negatives kept in the training sample), got {rate!r}."
        )
    return r


def result_dtype(arr):
    if arr.dtype.kind == "f" and arr.dtype.itemsize in (4, 8):
        return arr.dtype.newbyteorder("=")
    return np.dtype(np.float64)


def _check_out(out, shape, dtype):
    if not isinstance(out, np.ndarray):
        raise TypeError(f"out must be a NumPy array, got {type(out).__name__}.")
    if out.shape != shape:
        raise ValueError(f"out has shape {out.shape}, expected {shape} (the shape of the input).")
    if out.dtype != dtype:
        raise TypeError(f"out has dtype {out.dtype}, expected {dtype} (the dtype of the result).")
    if not out.flags.writeable:
        raise ValueError("out must be writeable.")


def _same_buffer(a, b):
    return (
        a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
        and a.strides == b.strides
        and a.shape == b.shape
    )


def io_arrays(p, out, name, *, rows):
    """Plan the kernel's source and destination for ``p`` and ``out``.

    Returns ``(arr, src, dst, result, finish)``: the kernel reads ``src`` and
    writes ``dst`` (same shape and layout, contiguous, in the result dtype;
    possibly the same array), ``result`` is what the caller returns and
    ``finish()`` copies ``dst`` into ``out`` when ``out`` is not contiguous.
    With ``rows`` the arrays must be C-contiguous (the kernels walk rows);
    otherwise F-contiguous pairs are used as they are.

    No memory is allocated beyond the result: input that the kernel cannot
    read directly (other dtype, non-contiguous, overlapping ``out``) is first
    copied into the result buffer, and the kernel then runs in place.
    """
    arr = np.asarray(p)
    check_numeric(arr, name)
    dtype = result_dtype(arr)

    def layout_ok(a):
        return a.flags.c_contiguous or (not rows and a.flags.f_contiguous)

    def same_layout(a, b):
        return (a.flags.c_contiguous and b.flags.c_contiguous) or (
            not rows and a.flags.f_contiguous and b.flags.f_contiguous
        )

    direct = arr.dtype == dtype and layout_ok(arr)
    if out is None:
        if direct:
            dst = np.empty_like(arr, dtype=dtype)  # same layout (C or F) as arr
            return arr, arr, dst, dst, None
        dst = np.array(arr, dtype=dtype, order="C")
        return arr, dst, dst, dst, None

    _check_out(out, arr.shape, dtype)
    if layout_ok(out):
        if direct and same_layout(arr, out) and (_same_buffer(arr, out) or not np.may_share_memory(arr, out)):
            return arr, arr, out, out, None
        np.copyto(out, arr)  # handles overlap and casting; the kernel then runs in place
        return arr, out, out, out, None
    # Strided out: compute into a contiguous buffer, then copy into out.
    tmp = np.array(arr, dtype=dtype, order="C")
    return arr, tmp, tmp, out, lambda: np.copyto(out, tmp)


def raise_bad_values(name, bad=None):
    found = "found invalid values" if bad is None else f"found {bad} invalid value{'s' if bad > 1 else ''}"
    raise ValueError(f"{name} must hold probabilities in [0, 1] without NaN; {found}.")


def raise_bad_rows(name, bad, tol=SUM_TOL):
    raise ValueError(
        f"The rows of {name} must sum to 1 (within {tol:g}); {bad} row{'s do' if bad > 1 else ' does'} not."
    )


def prior_vector(value, name):
    """Validate a prior: a scalar (positive-class prior of a binary problem) or a vector of k priors.

    Returns ``(vector, given_as_scalar)``; the vector is float64, positive and
    renormalised to sum exactly to 1 (after the check ``|sum - 1| <= SUM_TOL``).
    """
    arr = np.asarray(value)
    check_numeric(arr, name)
    if arr.ndim == 0:
        v = _real_scalar(value, name) if not isinstance(value, np.ndarray) else float(arr)
        if not 0.0 < v < 1.0:
            raise ValueError(
                f"{name} given as a scalar is the positive-class prior of a binary problem and must be in (0, 1); got {value!r}."
            )
        return np.array([1.0 - v, v]), True
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D array of class priors, got an array of shape {arr.shape}.")
    vec = np.asarray(arr, dtype=np.float64)
    if vec.shape[0] < 2:
        raise ValueError(f"{name} must have at least 2 classes, got {vec.shape[0]}.")
    if not np.all(np.isfinite(vec)):
        raise ValueError(f"{name} must be finite, but contains NaN or infinity.")
    if not np.all(vec > 0):
        raise ValueError(f"{name} must be strictly positive, got {vec.tolist()}.")
    total = math.fsum(vec.tolist())
    if not abs(total - 1.0) <= SUM_TOL:
        raise ValueError(f"{name} must sum to 1 (within {SUM_TOL:g}), but sums to {total!r}.")
    return vec / total, False
