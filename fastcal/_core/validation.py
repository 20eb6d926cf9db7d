"""Input checks shared by every public function.

Public wrappers call these before any kernel runs; kernels never validate.
Each check raises ``ValueError`` (bad values or shapes) or ``TypeError`` (bad
types) with a message that names the offending argument. No check modifies
its input: arrays are copied only when a kernel needs a contiguous buffer of
a dtype the caller did not provide.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .jit import kernel
from .math_kernels import key_to_float, order_key
from .parallel import parallel_for

__all__ = [
    "as_float_array",
    "as_label_array",
    "check_binary_labels",
    "class_bytes",
    "check_consistent_length",
    "check_finite",
    "check_numeric",
    "check_object_labels",
    "check_probability_range",
    "check_sample_weight",
    "column_or_1d",
    "rescale_factor",
    "rescale_weights",
    "value_range",
    "weight_exponent",
]

#: Label dtypes the kernels are compiled for; other integer or bool labels are
#: viewed or cast to one of these by :func:`as_label_array`.
LABEL_DTYPES = (np.uint8, np.int8, np.int32, np.int64, np.float32, np.float64)


def column_or_1d(x, name, *, allow_column=True, min_size=1):
    """Return ``x`` as a 1-D ndarray (no copy where possible).

    Scalars are rejected, as are 2-D arrays other than a single column
    (``(n, 1)``, accepted when ``allow_column``), 0-D arrays and arrays with
    fewer than ``min_size`` elements; what NumPy reads as a 0-D object or
    string array (None, a dict, a set, a string) is named as what it is.
    """
    arr = np.asarray(x)
    not_array = _not_array_like(arr)
    if not_array:
        raise ValueError(f"{name} must be array-like, got {not_array}.")
    if arr.ndim == 2 and allow_column and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        shape = "a scalar" if arr.ndim == 0 else f"an array of shape {arr.shape}"
        want = "a 1-D array (or a single column)" if allow_column else "a 1-D array"
        raise ValueError(f"{name} must be {want}, got {shape}.")
    if arr.shape[0] < min_size:
        raise ValueError(
            f"{name} must have at least {min_size} element{'s' if min_size > 1 else ''}, got {arr.shape[0]}."
        )
    return arr


def _not_array_like(arr):
    """What the 0-D object or string array ``arr`` (``np.asarray`` of None, a dict, a set, a string) holds, for
    a message ("None", else the type's name); "" for anything else, numbers and arrays of them included."""
    if arr.ndim != 0 or arr.dtype.kind not in "OUSV":
        return ""
    value = arr.item()
    if isinstance(value, numbers.Number):
        return ""
    return "None" if value is None else type(value).__name__


def check_numeric(arr, name):
    """Raise ``TypeError`` unless ``arr`` has a real numeric (or bool) dtype."""
    not_array = _not_array_like(arr)
    if not_array:
        raise TypeError(f"{name} must be array-like, got {not_array}.")
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.bool_)
    ):
        raise TypeError(f"{name} must be a numeric array, got dtype {arr.dtype}.")
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise TypeError(f"{name} must be real, got dtype {arr.dtype}.")


def as_float_array(x, name, *, dtype=None):
    """Return ``x`` as a C-contiguous float32 or float64 array.

    float32 and float64 input keep their precision (no silent up-cast of big
    arrays); other numeric input (ints, bools, float16) becomes float64, as does
    everything when ``dtype=np.float64`` is asked for. Non-native byte order and
    non-contiguous input are copied; read-only input is used as it is.
    """
    arr = np.asarray(x)
    check_numeric(arr, name)
    if dtype is None:
        dtype = arr.dtype if arr.dtype in (np.float32, np.float64) else np.float64
    return np.ascontiguousarray(arr, dtype=np.dtype(dtype).newbyteorder("="))


@kernel
def count_nonfinite(x, lo, hi):
    x = x[lo:hi]  # indices from 0: no wraparound check, the loop vectorises
    bad = 0
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            bad += 1
    return bad


def check_finite(arr, name):
    """Raise ``ValueError`` if the contiguous float array ``arr`` holds NaN or infinity."""
    flat = arr.reshape(-1)
    if sum(parallel_for(count_nonfinite, flat.shape[0], flat)):
        what = "NaN" if np.isnan(flat).any() else "infinity"
        raise ValueError(f"{name} must be finite, but contains {what}.")
    return arr


#: Start values of the order-key min and max reductions of :func:`nonfinite_and_range`.
_KEY_MAX = 0x7FFFFFFFFFFFFFFF
_KEY_MIN = -0x8000000000000000


@kernel
def nonfinite_and_range(x, lo, hi):
    """The number of NaN and infinite values in ``x[lo:hi]``, and the order keys of its smallest and largest values.

    Order keys (:func:`fastcal._core.math_kernels.order_key`) make the min and max
    integer reductions, which vectorise; float ones must respect NaN and do not.
    """
    x = x[lo:hi]  # indices from 0: no wraparound check
    bad = 0
    kmin = _KEY_MAX
    kmax = _KEY_MIN
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        bad += 0 if np.isfinite(v) else 1
        key = order_key(v)
        kmin = min(kmin, key)
        kmax = max(kmax, key)
    return bad, kmin, kmax


def value_range(x, name):
    """``(min, max)`` of the float array ``x`` (any shape; ``(0.0, 0.0)`` if empty); ``ValueError`` naming
    ``name`` if it holds NaN or infinity.

    A C-contiguous float32 or float64 array is read once, in parallel, by
    :func:`nonfinite_and_range`. Otherwise NumPy's SIMD min and max, which
    propagate NaN (and without NaN an infinity is the min or the max), so
    the two reductions check finiteness too.
    """
    if x.size == 0:
        return 0.0, 0.0
    if x.flags.c_contiguous and x.dtype in (np.float32, np.float64) and x.dtype.isnative:
        flat = x.reshape(-1)
        parts = parallel_for(nonfinite_and_range, flat.shape[0], flat)
        if sum(part[0] for part in parts):
            what = "NaN" if np.isnan(flat).any() else "infinity"
            raise ValueError(f"{name} must be finite, but contains {what}.")
        return key_to_float(min(part[1] for part in parts)), key_to_float(max(part[2] for part in parts))
    lo = float(x.min())
    hi = float(x.max())
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{name} must be finite, but contains NaN.")
    if math.isinf(lo) or math.isinf(hi):
        raise ValueError(f"{name} must be finite, but contains infinity.")
    return lo, hi


def check_probability_range(x, name):
    """``(min, max)`` of the float array ``x`` (any shape); ``ValueError`` naming ``name`` unless finite and in [0, 1]."""
    lo, hi = value_range(x, name)
    if lo < 0 or hi > 1:
        raise ValueError(f"{name} has values outside [0, 1] (min {lo!r}, max {hi!r}); it must hold probabilities.")
    return lo, hi


def check_consistent_length(**arrays):
    """Raise ``ValueError`` unless all given (non-None) arrays have the same length."""
    lengths = {name: len(a) for name, a in arrays.items() if a is not None}
    if len(set(lengths.values())) > 1:
        detail = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise ValueError(f"Inconsistent numbers of samples: {detail}.")


def rescale_weights(w, exponent=None):
    """Weights ``w`` times an exact power of two, and that power's exponent ``e``.

    The factor :math:`2^{-e}` puts the largest weight in :math:`[1, 2)` (or
    is given as ``exponent``: the chunks of a chunked fit share the
    :func:`weight_exponent` of their largest weight), so that
    products and sums of weights neither overflow nor underflow, and unit
    weights are unchanged. Multiplying by a power of two is exact (barring
    subnormal results), so the rescaled weights, and every result computed
    from them, are bit-identical whatever the scale of ``w``: this is how
    every weighted function of fastcal is invariant to scaling all weights by
    a constant. A result in weight units is ``ldexp(result, e)``. ``w=None``
    gives ``(None, 0)``; ``w`` is not modified.
    """
    e = weight_exponent(w) if exponent is None else exponent
    if w is None or e == 0 or not np.size(w):
        return w, e
    return np.ldexp(w, -e).astype(w.dtype, copy=False), e


def rescale_factor(w, exponent):
    """The power of two :math:`2^{-e}` (``e = exponent``) as a scalar of ``w``'s dtype, for a kernel that rescales
    the weights as it copies them: ``w * factor`` in that dtype is ``rescale_weights(w, exponent)[0]``, bit for bit
    (a product by a normal power of two is correctly rounded, as ``ldexp`` is, subnormal results included). None if
    :math:`2^{-e}` is not a normal number of that dtype: rescale with :func:`rescale_weights` then."""
    info = np.finfo(w.dtype)
    if not info.minexp <= -exponent < info.maxexp:
        return None
    return w.dtype.type(2.0 ** -exponent)


def all_zero_weights(name: str = "sample_weight") -> ValueError:
    """The error of non-negative weights that are all zero, in scikit-learn's words, for every path and backend
    (the in-memory checks, and the drivers that add the weights' sums of many chunks)."""
    return ValueError(f"Sample weights must contain at least one non-zero number ({name} is all zeros).")


def weight_exponent(w, scale_max=None):
    """The exponent ``e`` of :func:`rescale_weights` for validated weights ``w`` (0 for ``None``), or for
    weights whose largest element is ``scale_max`` (the maximum over the chunks of a chunked fit)."""
    if scale_max is None and (w is None or not np.size(w)):
        return 0
    m = float(np.max(w)) if scale_max is None else float(scale_max)
    if not (m > 0 and np.isfinite(m)):
        return 0
    return int(np.frexp(m)[1]) - 1


def check_sample_weight(sample_weight, n, name="sample_weight", *, allow_zero=True, rescale=False, bounds=False):
    """Validate weights for ``n`` samples; ``None`` stays ``None`` (unit weights).

    Weights must be a finite, non-negative 1-D array of length ``n`` (strictly
    positive when ``allow_zero`` is False) with a positive sum. A scalar is
    broadcast to ``n`` samples as float64. Returns a contiguous float32 or
    float64 array; with ``rescale``, the weights times the power of two of
    :func:`rescale_weights` (for functions whose results do not carry
    weight units); with ``bounds``, the triple ``(w, min, max)`` (the
    smallest and largest weight before any rescaling, as floats; ``(None,
    None, None)`` for ``None``). The checks read the weights once, in
    parallel (:func:`value_range`).
    """
    if sample_weight is None:
        return (None, None, None) if bounds else None
    if isinstance(sample_weight, numbers.Number) and not isinstance(sample_weight, bool):
        w = np.full(n, float(sample_weight))
    else:
        w = as_float_array(column_or_1d(sample_weight, name, allow_column=False, min_size=0), name)
    if w.shape[0] != n:
        raise ValueError(f"{name} has {w.shape[0]} elements, expected {n} (one per sample).")
    lo, hi = value_range(w, name)
    if n and (lo < 0 or (lo == 0 and not allow_zero)):
        raise ValueError(f"{name} must be {'non-negative' if allow_zero else 'strictly positive'}.")
    if n and not hi > 0:  # non-negative weights: a positive sum is a positive maximum
        raise all_zero_weights(name)
    if rescale:
        w = rescale_weights(w, weight_exponent(None, hi) if n else 0)[0]
    return (w, lo, hi) if bounds else w


def _is_missing(value):
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, and NaT
    except (TypeError, ValueError):  # pandas' NA: its comparisons are NA, whose truth value raises
        return True


def _type_names(values):
    return " and ".join(sorted({type(v).__name__ for v in values}))


def check_object_labels(arr, name):
    """Raise ``ValueError`` naming ``name`` if the labels ``arr`` of dtype object hold a missing value (None,
    NaN, pandas' NA) or labels that cannot be sorted together (say ``1`` and ``"a"``); other dtypes pass.

    Returns ``np.unique(arr)`` for object arrays (None for other dtypes), which the check computes anyway.
    """
    if arr.dtype != object:
        return None
    values = arr.tolist()
    missing = [i for i, v in enumerate(values) if _is_missing(v)]
    if missing:
        rows = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        raise ValueError(f"{name} must not contain missing values (None, NaN or NA); found {len(missing)}, "
                         f"at row{'s' if len(missing) > 1 else ''} {rows}.")
    try:
        return np.unique(arr)
    except TypeError:
        raise ValueError(f"{name} mixes labels of types that cannot be compared ({_type_names(values)}); use "
                         "labels of one type.") from None


def as_label_array(y, name):
    """Return labels as a contiguous array of one of :data:`LABEL_DTYPES`, copying only if needed.

    Booleans are viewed as uint8, other integer widths are cast to int64 and
    float16 to float32; the values are not checked here.
    """
    arr = np.asarray(y)
    check_numeric(arr, name)
    if arr.dtype == np.bool_:
        return np.ascontiguousarray(arr).view(np.uint8)
    if arr.dtype == np.float16:
        return np.ascontiguousarray(arr, dtype=np.float32)
    target = arr.dtype.newbyteorder("=")
    if target not in LABEL_DTYPES:
        target = np.dtype(np.int64)
    return np.ascontiguousarray(arr, dtype=target)


def class_bytes(y):
    """0/1 labels as a writable uint8 array of 0s and 1s: ``y`` itself when it is one, else ``y > 0``.

    ``y`` must hold only 0 and 1 (checked before). The logistic fits' passes
    read their labels as these bytes: one byte a row, and one compiled
    signature of each kernel in place of one per label dtype.
    """
    if y.dtype == np.uint8 and y.flags.writeable and y.flags.c_contiguous:
        return y
    return np.greater(y, 0).view(np.uint8)


@kernel
def _count_nonbinary(y, lo, hi):
    y = y[lo:hi]
    bad = 0
    for i in range(y.shape[0]):
        if y[i] != 0 and y[i] != 1:
            bad += 1
    return bad


def is_binary(y):
    """True if every value of the contiguous 1-D label array ``y`` is 0 or 1."""
    return sum(parallel_for(_count_nonbinary, y.shape[0], y)) == 0


def check_binary_labels(y, name="y"):
    """Return ``y`` as a label array (see :func:`as_label_array`) whose values are all 0 or 1."""
    arr = as_label_array(y, name)
    if not is_binary(arr):
        values = np.unique(arr)
        shown = ", ".join(map(str, values[:5])) + (", ..." if values.size > 5 else "")
        raise ValueError(f"{name} must contain only the labels 0 and 1; found {shown}.")
    return arr
