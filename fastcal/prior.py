r"""Prior correction: undo negative undersampling and adapt to new class priors.

A classifier trained on a sample whose class balance is not the deployment
population's predicts probabilities for the wrong population. If the
class-conditional distributions :math:`p(x \mid y)` are the same in both
(only the priors differ, "prior shift"), Bayes' rule gives the exact fix:

.. math::

    p_\text{new}(i \mid x) = \frac{w_i \, p_\text{train}(i \mid x)}{\sum_j w_j \, p_\text{train}(j \mid x)},
    \qquad w_i = \frac{\pi_\text{new}(i)}{\pi_\text{train}(i)}.

- :func:`correct_negative_sampling` is the binary special case for negatives
  kept at rate :math:`r`: :math:`p = p' / (p' + (1 - p') / r)`, which is
  :math:`\operatorname{sigmoid}(\operatorname{logit}(p') + \log r)`;
  :func:`negative_sampling_logit_offset` gives the equivalent shift
  :math:`\log r` of a logistic model's bias.
- :func:`adjust_priors` applies the formula for known priors.
- :func:`estimate_priors_em` estimates unknown new priors from unlabelled
  predictions with the EM algorithm of Saerens, Latinne & Decaestecker (2002).

In the binary case every correction is a strictly increasing function of the
score, so rankings, ROC curves and AUC are unchanged; only the calibration
moves. The kernels keep this in floating point: the binary map is evaluated
as a chain of monotone operations, so no two scores ever swap. With k > 2 classes the pairwise odds are rescaled by constants,
:math:`p_\text{new}(i \mid x) / p_\text{new}(j \mid x) = (w_i / w_j)\,
p(i \mid x) / p(j \mid x)`, so every ranking by a pairwise likelihood ratio is
unchanged.

The kernels are Numba loops (run on fastcal's threads above ``_parallel.PARALLEL_MIN_SIZE`` rows)
that read the input once and write the output once; the checks of the input
(NaN, values outside [0, 1], row sums) are counted in the same pass, and the
error is raised after it.

Internal API, the EM as an engine (summarise a chunk → merge in order →
finish, driven over any :class:`fastcal._engine.Rows` by
:mod:`fastcal._engine.prior`): :func:`check_em`, :func:`em_source`,
:func:`em_partials`, :func:`em_summarise` and its :class:`EMSummary`,
:func:`em_merge`, :func:`em_finish`, :func:`iterate_em`,
:func:`warn_em_not_converged`. The exactness rule: a summary is the
fixed-chunk reduction of :mod:`fastcal._chunked` (bit-identical at any
thread count); summaries merge in chunk order.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple, overload

import numpy as np

from . import _prior_kernels as _k
from ._chunked import Partials, merge_exact, merge_in_order
from ._errors import ConvergenceWarning, warn_not_converged
from ._parallel import parallel_for
from ._params import Boolean, Integer, Real, check
from ._results import Result
from ._validation import check_numeric

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike, NDArray

    from ._typing import ArrayOutput, Priors, PyScalar, ScalarOutput

__all__ = [
    "ConvergenceWarning",
    "PriorEMResult",
    "SUM_TOL",
    "adjust_priors",
    "correct_negative_sampling",
    "estimate_priors_em",
    "negative_sampling_logit_offset",
]

#: Absolute tolerance on the sum of a row of ``proba`` and of a prior vector:
#: ``abs(sum - 1) <= SUM_TOL``. Both are renormalised before use, so the check
#: only exists to catch inputs that are not distributions (scores, logits,
#: one-vs-rest outputs); it is loose enough for float32 softmax outputs and for
#: priors written with four decimals.
SUM_TOL = 1e-4

_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
# Smallest positive normal float64: weights are clamped to it so that no row
# can have a zero normaliser (the rows sum to 1, so some entry is >= 1/k).
_TINY64 = np.finfo(np.float64).tiny


@dataclass(frozen=True, eq=False, repr=False)
class PriorEMResult(Result):
    """Result of :func:`estimate_priors_em`.

    Attributes
    ----------
    priors : ndarray of shape (k,)
        Estimated class priors of the new population (float64, positive, sum 1).
        For binary input ``k = 2`` and ``priors[1]`` is the positive class.
    proba : ndarray
        The input probabilities adjusted to ``priors`` (same shape and dtype as
        the input: ``(n,)`` of P(y=1) for binary input, ``(n, k)`` otherwise).
    n_iter : int
        Number of passes over ``proba`` (EM maps, plain or within SQUAREM).
    converged : bool
        Whether the last pass's change of every prior was ``<= tol``.
    """

    priors: NDArray[np.float64]
    proba: NDArray[np.floating]
    n_iter: int
    converged: bool



# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------


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


def _check_rate(rate):
    r = _real_scalar(rate, "rate")
    if not 0.0 < r <= 1.0:
        raise ValueError(
            f"rate must be in (0, 1] (the fraction of negatives kept in the training sample), got {rate!r}."
        )
    return r


def _positive_in(value, dtype):
    """``value`` (> 0, possibly inf) rounded to ``dtype`` and clamped to its positive finite range."""
    info = np.finfo(dtype)
    return dtype.type(min(max(float(value), float(info.smallest_subnormal)), float(info.max)))


def _result_dtype(arr):
    if arr.dtype.kind == "f" and arr.dtype.itemsize in (4, 8):
        return arr.dtype.newbyteorder("=")
    return np.dtype(np.float64)


def _flat(a):
    """1-D view of a C- or F-contiguous array (in memory order)."""
    return a.reshape(-1) if a.flags.c_contiguous else a.T.reshape(-1)


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


def _io_arrays(p, out, name, *, rows):
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
    dtype = _result_dtype(arr)

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


def _raise_bad_values(name, bad=None):
    found = "found invalid values" if bad is None else f"found {bad} invalid value{'s' if bad > 1 else ''}"
    raise ValueError(f"{name} must hold probabilities in [0, 1] without NaN; {found}.")


def _raise_bad_rows(name, bad, tol=SUM_TOL):
    raise ValueError(
        f"The rows of {name} must sum to 1 (within {tol:g}); {bad} row{'s do' if bad > 1 else ' does'} not."
    )


def _prior_vector(value, name):
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


def _class_weights(new, train):
    """w = new / train, computed in log space and scaled so that max(w) == 1 (float64, >= tiny)."""
    lw = np.log(np.maximum(new, _TINY64)) - np.log(train)
    lw -= lw.max()
    return np.maximum(np.exp(lw), _TINY64)


def _to_float(q):
    """A Fraction rounded to the nearest float64 (inf if it is too large)."""
    try:
        return float(q)
    except OverflowError:
        return math.inf


def _odds_constants(c):
    """(c, c - 1) as float64 from the exact rational ``c`` (each correctly rounded)."""
    return _to_float(c), _to_float(c - 1)


def _binary_odds_factor(new, train):
    """(c, c - 1) with c = w0 / w1 and p_new = p / (p + c (1 - p)).

    Computed exactly in rational arithmetic from the float64 priors (two
    numbers: no overflow or underflow, c is exactly 1 if new == train), then
    rounded once.
    """
    new0, new1 = (Fraction(max(float(v), _TINY64)) for v in new[:2])
    train0, train1 = (Fraction(float(v)) for v in train[:2])
    return _odds_constants((new0 * train1) / (train0 * new1))


def _run_binary(src, dst, c, cm1):
    """Apply p -> p / (p + c (1 - p)) from src to dst (contiguous, same layout); returns the count of invalid values.

    ``c`` is a float64 in [0, inf] and ``cm1 = c - 1`` computed accurately by
    the caller. ``c == 1`` is the identity (the values are copied exactly, and
    still checked); ``c > 1`` and ``c < 1`` use the two monotone evaluations
    of :mod:`fastcal._prior_kernels`, with their constants rounded to the
    input's dtype and kept positive and finite.
    """
    s, d = _flat(src), _flat(dst)
    if s.__array_interface__["data"][0] == d.__array_interface__["data"][0]:
        d = None  # in place: the kernels' one-array form (see _prior_kernels.binary_down)
    elif not s.flags.writeable:
        # Numba cannot unify a read-only src with a writable dst (the kernels' `s if dst is None else dst`):
        # copy into dst and run in place there.
        np.copyto(d, s)
        s, d = d, None
    dtype = s.dtype
    zero, one = dtype.type(0), dtype.type(1)
    n = s.shape[0]
    if c == 1.0:
        return sum(parallel_for(_k.binary_copy, n, s, d, zero, one))
    if c > 1.0:
        return sum(parallel_for(_k.binary_down, n, s, d, _positive_in(cm1, dtype), zero, one))
    c_d = _positive_in(c, dtype)
    return sum(parallel_for(_k.binary_up, n, s, d, c_d, one - c_d, zero, one))


def _sum_pairs(pairs):
    """Element-wise sum of the ``(bad values, bad rows)`` counts of a kernel's ranges."""
    return tuple(int(sum(column)) for column in zip(*pairs))


def _run_multi(src, dst, w):
    """Reweight and renormalise the rows of ``src`` into ``dst``; returns (bad values, bad rows)."""
    groups = -(-src.shape[0] // 4)
    return _sum_pairs(parallel_for(_k.multi_adjust, groups, src, dst, w, SUM_TOL, rows=src.size))


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


@overload
def correct_negative_sampling(p: PyScalar, rate: float, **options: Unpack[ScalarOutput]) -> np.float64: ...
@overload
def correct_negative_sampling(p: np.floating[Any], rate: float, **options: Unpack[ScalarOutput]) -> np.floating[Any]: ...
@overload
def correct_negative_sampling(p: ArrayLike, rate: float, **options: Unpack[ArrayOutput]) -> NDArray[np.floating]: ...
def correct_negative_sampling(
    p: ArrayLike, rate: float, *, out: NDArray[np.floating] | None = None
) -> NDArray[np.floating] | np.floating[Any]:
    r"""Undo random undersampling of the negative class.

    A model trained on all positives and a fraction ``rate`` of the negatives
    (each negative kept with probability :math:`r`) overestimates
    :math:`P(y=1 \mid x)`. Its predictions :math:`p'` are corrected by

    .. math:: p = \frac{p'}{p' + (1 - p')/r} = \operatorname{sigmoid}\big(\operatorname{logit}(p') + \log r\big),

    computed as :math:`p = p' / (1 + c\,(1 - p'))` with :math:`c = (1 - r)/r`:

    - every step is monotone and IEEE rounding is monotone, so the computed
      map never decreases: no two scores change order, even one ulp apart
      (scores that close may become equal). Rankings and the ROC curve are
      kept, so AUC is unchanged (up to such new ties, which do not occur in
      practice in float64);
    - all intermediate quantities are non-negative (no cancellation): results are
      within a few ulp of the exact value, or within the smallest normal
      number (2.2e-308 in float64, 1.2e-38 in float32) of it when the exact
      value is that small;
    - :math:`p' = 0` gives 0 and :math:`p' = 1` gives 1 exactly, there is no
      NaN and every result is in [0, 1], also for :math:`p'` within 1e-300 of
      0 or 1 and for tiny rates; ``rate = 1`` returns ``p`` exactly (a copy).

    Parameters
    ----------
    p : scalar or array_like of any shape
        Predicted probabilities of the positive class, in [0, 1], no NaN.
        float32 and float64 are computed in their own precision (``(1 - rate)
        / rate`` is rounded to it, and capped at the largest finite number,
        so rates below about 1/max, 5.6e-309 in float64 and 2.9e-39 in
        float32, act as 1/max); other numeric types become float64.
    rate : float in (0, 1]
        Fraction of the negatives that was kept in the training sample
        (kept negatives / all negatives). Positives are assumed all kept; if
        they were subsampled too, at rate ``r_pos``, the correction is
        ``rate = r_neg / r_pos`` (or use :func:`adjust_priors`).
    out : ndarray, optional
        Where to write the result: same shape as ``p``, dtype float32 for
        float32 ``p`` and float64 otherwise. ``out=p`` works in place and
        allocates nothing. If ``p`` holds invalid values a ``ValueError`` is
        raised after the single pass, and the contents of ``out`` are then
        unspecified.

    Returns
    -------
    ndarray or NumPy scalar
        The corrected probabilities: ``out`` if given, otherwise a new array of
        the shape of ``p``; a NumPy scalar (``np.float64`` or ``np.float32``)
        for scalar input.

    Raises
    ------
    ValueError
        If ``rate`` is not in (0, 1], or ``p`` holds NaN or values outside [0, 1].

    See Also
    --------
    negative_sampling_logit_offset : the same correction as a bias shift.
    adjust_priors : the general correction for known class priors.

    References
    ----------
    Dal Pozzolo, A., Caelen, O., Johnson, R. A. & Bontempi, G. (2015).
    Calibrating probability with undersampling for unbalanced classification.
    IEEE Symposium on Computational Intelligence and Data Mining, 159-166.

    King, G. & Zeng, L. (2001). Logistic regression in rare events data.
    Political Analysis, 9(2), 137-163.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import correct_negative_sampling
    >>> correct_negative_sampling(0.5, 0.1)
    np.float64(0.09090909090909091)
    >>> p = np.array([0.0, 0.2, 0.5, 0.9, 1.0])
    >>> correct_negative_sampling(p, 0.1)
    array([0.        , 0.02439024, 0.09090909, 0.47368421, 1.        ])
    >>> _ = correct_negative_sampling(p, 0.1, out=p)  # in place
    """
    r = _check_rate(rate)
    arr, src, dst, result, finish = _io_arrays(p, out, "p", rows=False)
    bad = _run_binary(src, dst, *_odds_constants(1 / Fraction(r)))  # c = 1/r
    if bad:
        _raise_bad_values("p", bad)
    if finish is not None:
        finish()
    if out is None and arr.ndim == 0:
        return result[()]
    return result


def negative_sampling_logit_offset(rate: float) -> float:
    r"""The bias shift ``log r`` that undoes negative undersampling in a logistic model.

    A model :math:`p' = \operatorname{sigmoid}(f(x) + b)` trained on all
    positives and a fraction ``rate`` of the negatives is corrected by
    replacing its bias ``b`` with ``b + log(rate)``: this gives exactly the
    probabilities of :func:`correct_negative_sampling` (up to rounding), with
    no work at prediction time (King & Zeng 2001, "prior correction").

    Parameters
    ----------
    rate : float in (0, 1]
        Fraction of the negatives kept in the training sample.

    Returns
    -------
    float
        ``log(rate)`` (<= 0).

    Examples
    --------
    Shifting the intercept of a logistic model and correcting its outputs give
    the same probabilities:

    >>> import numpy as np
    >>> from fastcal import correct_negative_sampling, negative_sampling_logit_offset
    >>> rng = np.random.default_rng(0)
    >>> X, coef, intercept = rng.normal(size=(5, 3)), np.array([0.5, -1.0, 2.0]), 0.3
    >>> sigmoid = lambda z: 1.0 / (1.0 + np.exp(-z))
    >>> p_sample = sigmoid(X @ coef + intercept)            # model fitted on the undersample
    >>> shifted = sigmoid(X @ coef + intercept + negative_sampling_logit_offset(0.1))
    >>> np.allclose(shifted, correct_negative_sampling(p_sample, 0.1), rtol=1e-12, atol=0)
    True

    With scikit-learn: ``clf.intercept_ += negative_sampling_logit_offset(rate)``.
    """
    return math.log(_check_rate(rate))


@overload
def adjust_priors(
    proba: PyScalar, train_priors: Priors, new_priors: Priors, **options: Unpack[ScalarOutput]
) -> np.float64: ...
@overload
def adjust_priors(
    proba: np.floating[Any], train_priors: Priors, new_priors: Priors, **options: Unpack[ScalarOutput]
) -> np.floating[Any]: ...
@overload
def adjust_priors(
    proba: ArrayLike, train_priors: Priors, new_priors: Priors, **options: Unpack[ArrayOutput]
) -> NDArray[np.floating]: ...
def adjust_priors(
    proba: ArrayLike,
    train_priors: Priors,
    new_priors: Priors,
    *,
    out: NDArray[np.floating] | None = None,
) -> NDArray[np.floating] | np.floating[Any]:
    r"""Adapt predicted probabilities to new class priors (Saerens, Latinne & Decaestecker 2002).

    If only the class priors change between training and deployment (the
    class-conditional densities :math:`p(x \mid i)` stay the same),

    .. math:: p_\text{new}(i \mid x) = \frac{w_i\, p(i \mid x)}{\sum_j w_j\, p(j \mid x)},
        \qquad w_i = \frac{\pi_\text{new}(i)}{\pi_\text{train}(i)}.

    For binary input this is :math:`p_\text{new} = p / (p + c\,(1 - p))` with
    :math:`c = w_0 / w_1`, computed in the input's precision with the same
    guarantees as :func:`correct_negative_sampling` (as
    :math:`p / (1 + (c - 1)(1 - p))` when :math:`c > 1` and as
    :math:`1 / (c / p + (1 - c))` when :math:`c < 1`): monotone to the last
    ulp, so rankings and AUC are unchanged; a few ulp accurate; exact at 0
    and 1; no NaN; results in [0, 1]; equal priors return ``proba`` exactly. For k classes
    the row normaliser is accumulated in float64 and the pairwise odds
    :math:`p(i \mid x)/p(j \mid x)` are scaled by the constant
    :math:`w_i / w_j`, so every ranking by a pairwise odds ratio is unchanged
    (the ranking by a single column may change when k > 2); the rows of the
    result sum to 1 and its entries are in [0, 1].

    Parameters
    ----------
    proba : array_like
        Binary: a scalar or 1-D array of P(y=1 | x). Multiclass: an ``(n, k)``
        array whose rows are distributions (entries in [0, 1], rows summing to
        1 within :data:`SUM_TOL`; they are renormalised). A 2-D array is always
        read as ``(n, k)`` (for example ``predict_proba`` output).
    train_priors, new_priors : float or array_like of shape (k,)
        Class priors of the training sample and of the target population:
        strictly positive, summing to 1 within :data:`SUM_TOL`. For a binary
        problem a scalar is the positive-class prior (``0.3`` means
        ``[0.7, 0.3]``).
    out : ndarray, optional
        Output array of the shape of ``proba`` and the result dtype (float32
        for float32 input, float64 otherwise); ``out=proba`` works in place.
        On a ``ValueError`` about ``proba`` its contents are unspecified.

    Returns
    -------
    ndarray or NumPy scalar
        The adjusted probabilities (``out`` if given).

    Raises
    ------
    ValueError
        Priors not positive or not summing to 1, ``proba`` with NaN or values
        outside [0, 1] or rows not summing to 1, or shapes that do not match.

    References
    ----------
    Saerens, M., Latinne, P. & Decaestecker, C. (2002). Adjusting the outputs
    of a classifier to new a priori probabilities: a simple procedure.
    Neural Computation, 14(1), 21-41.

    Varadhan, R. & Roland, C. (2008). Simple and globally convergent methods
    for accelerating the convergence of any EM algorithm. Scandinavian Journal
    of Statistics, 35(2), 335-353.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import adjust_priors
    >>> adjust_priors(np.array([0.1, 0.5, 0.9]), train_priors=0.5, new_priors=0.1)
    array([0.01219512, 0.1       , 0.5       ])
    >>> proba = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    >>> adjust_priors(proba, [0.2, 0.3, 0.5], [0.4, 0.3, 0.3]).round(4)
    array([[0.4   , 0.3   , 0.3   ],
           [0.7692, 0.1923, 0.0385]])
    """
    train, _ = _prior_vector(train_priors, "train_priors")
    new, _ = _prior_vector(new_priors, "new_priors")
    if train.shape != new.shape:
        raise ValueError(
            f"train_priors and new_priors must have the same number of classes, got {train.shape[0]} and {new.shape[0]}."
        )
    k = train.shape[0]
    ndim = np.ndim(proba)
    if ndim == 2:
        n_cols = np.shape(proba)[1]
        if n_cols != k:
            raise ValueError(
                f"proba has {n_cols} columns but the priors have {k} classes; a 2-D proba is read as (n, k)."
            )
        arr, src, dst, result, finish = _io_arrays(proba, out, "proba", rows=True)
        bad_values, bad_rows = _run_multi(src, dst, _class_weights(new, train))
        if bad_values:
            _raise_bad_values("proba")
        if bad_rows:
            _raise_bad_rows("proba", bad_rows)
    elif ndim <= 1:
        if k != 2:
            raise ValueError(
                f"A {ndim}-D proba holds P(y=1) of a binary problem, but the priors have {k} classes; "
                "give multiclass probabilities as an (n, k) array."
            )
        arr, src, dst, result, finish = _io_arrays(proba, out, "proba", rows=False)
        bad = _run_binary(src, dst, *_binary_odds_factor(new, train))
        if bad:
            _raise_bad_values("proba", bad)
    else:
        raise ValueError(
            f"proba must be a 1-D array of P(y=1) or an (n, k) array of class probabilities, got {ndim} dimensions."
        )
    if finish is not None:
        finish()
    if out is None and arr.ndim == 0:
        return result[()]
    return result


# ---------------------------------------------------------------------------
# The EM engine: summarise a chunk -> merge in order -> finish
# ---------------------------------------------------------------------------


class EMSummary(NamedTuple):
    """What an EM map needs from some rows of ``proba`` at priors ``pi``: the summary of :func:`em_summarise`."""

    #: Binary rows: ``[sum_m P(y = 1 | x_m)]``; (n, k) rows: the column sums of the posteriors (float64).
    sums: np.ndarray
    #: ``sum_m log sum_i w_i p(i | x_m)`` with the weights scaled to ``max(w) == 1`` (NaN when not asked for).
    loglik: float
    #: Rows.
    n: int
    #: Invalid values (NaN, outside [0, 1]) and rows not summing to 1 (counted when asked for).
    bad_values: int
    bad_rows: int


def em_source(proba, k):
    """``proba`` as the EM kernels read it: C-contiguous, float32 or float64 (other types become float64), 1-D
    P(y = 1) when ``k == 2`` or ``(n, k)``; the errors of :func:`estimate_priors_em` for anything else."""
    arr = np.asarray(proba)
    check_numeric(arr, "proba")
    if arr.ndim == 2:
        if arr.shape[1] != k:
            raise ValueError(
                f"proba has {arr.shape[1]} columns but train_priors has {k} classes; a 2-D proba is read as (n, k)."
            )
    elif arr.ndim == 1:
        if k != 2:
            raise ValueError(
                f"A 1-D proba holds P(y=1) of a binary problem, but train_priors has {k} classes; "
                "give multiclass probabilities as an (n, k) array."
            )
    else:
        raise ValueError(
            f"proba must be a 1-D array of P(y=1) or an (n, k) array of class probabilities, got shape {arr.shape}."
        )
    return np.ascontiguousarray(arr, dtype=_result_dtype(arr))


def em_partials(n, k, binary):
    """The partial buffers of the EM kernels over ``n`` rows of ``k`` classes (reused by the passes of a fit)."""
    return Partials(n, _k.EM_CHUNK, None if binary else k, None)


def em_summarise(src, pi, train, check, want_ll, part=None):
    r"""Summarise rows at priors ``pi``: one fused pass of the E-step (its posteriors are not stored).

    ``src`` is C-contiguous float32 or float64: 1-D P(y = 1) (binary, ``k = 2``)
    or ``(n, k)``; ``train`` the training priors; ``check`` counts the invalid
    values and rows (once per fit is enough); ``want_ll`` sums the
    log-likelihood too; ``part`` optional :func:`em_partials`. The weights are
    :math:`w_i = \pi(i) / \pi_\text{train}(i)` scaled to ``max(w) == 1``. On
    fastcal's threads, over chunks of ``EM_CHUNK`` rows merged in chunk order
    (:mod:`fastcal._chunked`): the binary sums and the log-likelihood
    exactly (:func:`fastcal._chunked.merge_exact`), the (n, k) column sums in
    order. Returns an :class:`EMSummary`.
    """
    w = _class_weights(pi, train)
    binary = src.ndim == 1
    if part is None:
        part = em_partials(src.shape[0], 2 if binary else src.shape[1], binary)
    want = True if want_ll else None
    if binary:
        bad_values = sum(part.run(_k.binary_em, src, w[0], w[1], check, want))
        bad_rows = 0
        sums = np.array([merge_exact(part.bufs[0])])
    else:
        bad_values, bad_rows = _sum_pairs(part.run(_k.multi_em, src, w, SUM_TOL, check, want, work=src.size))
        sums = merge_in_order(part.bufs[0])
    loglik = merge_exact(part.bufs[1]) if want_ll else math.nan
    return EMSummary(sums, loglik, src.shape[0], int(bad_values), int(bad_rows))


def em_merge(summaries):
    """The :class:`EMSummary` of consecutive pieces of the rows, from theirs in order (the merges of
    :func:`em_summarise`: binary sums and log-likelihoods exactly, (n, k) column sums in order)."""
    sums = np.stack([s.sums for s in summaries])
    return EMSummary(
        np.array([merge_exact(sums[:, 0])]) if sums.shape[1] == 1 else merge_in_order(sums),
        merge_exact(np.array([s.loglik for s in summaries])),
        sum(s.n for s in summaries),
        sum(s.bad_values for s in summaries),
        sum(s.bad_rows for s in summaries),
    )


def em_finish(summary, pi, train, name="proba"):
    r"""The EM map and the log-likelihood at ``pi``, ``(F(pi), loglik)``, from the :class:`EMSummary` of all rows.

    :math:`F(\pi)(i) = \frac{1}{n} \sum_m p^{(\pi)}(i \mid x_m)` (renormalised to sum
    to 1); the log-likelihood :math:`\sum_m \log \sum_i w_i p(i \mid x_m)` with
    the unscaled weights (NaN if not summed). Raises the errors about
    ``name`` for the invalid values and rows counted.
    """
    if summary.bad_values:
        _raise_bad_values(name, summary.bad_values)
    if summary.bad_rows:
        _raise_bad_rows(name, summary.bad_rows)
    n = summary.n
    if summary.sums.shape[0] == 1:
        pos = min(max(float(summary.sums[0]) / n, 0.0), 1.0)
        new = np.array([1.0 - pos, pos])
    else:
        new = summary.sums / n
        new /= new.sum()
    # The kernels scale the weights so that max(w) == 1: add the scale back, n log(max pi / train).
    scale = float(np.max(np.log(np.maximum(pi, _TINY64)) - np.log(train)))
    return new, summary.loglik + n * scale


def iterate_em(em_step, train, max_iter, tol, accelerate):
    """EM from ``train`` (SQUAREM with ``accelerate``) over the map ``em_step(pi) -> (F(pi), loglik)``, which
    makes one pass a call: ``(pi, last change, converged, passes)``."""
    passes = 0

    def counted(pi):
        nonlocal passes
        passes += 1
        return em_step(pi)

    pi, delta, converged = (_squarem if accelerate else _plain_em)(counted, train.copy(), max_iter, tol,
                                                                    lambda: passes)
    return pi, delta, converged, passes


def warn_em_not_converged(max_iter, delta, tol):
    """The warning of an EM fit that stopped at ``max_iter`` passes with its last change ``delta`` > ``tol``."""
    warn_not_converged("estimate_priors_em", max_iter, "EM iterations",
                       f"last change of the priors {delta:.3g} > tol={tol:g}")


def check_em(train_priors, max_iter, tol, accelerate):
    """The parameters of :func:`estimate_priors_em`, checked: ``(max_iter, tol, accelerate, train)``, ``train``
    the training priors as a float64 vector summing to 1."""
    max_iter = check("max_iter", max_iter, [Integer(1)])
    tol = check("tol", tol, [Real(0, open_low=True)])
    accelerate = check("accelerate", accelerate, [Boolean()])
    return max_iter, tol, accelerate, _prior_vector(train_priors, "train_priors")[0]


def _plain_em(em_step, pi, max_iter, tol, passes):
    """Iterate ``pi = F(pi)`` until a step changes no prior by more than ``tol``: ``(pi, last step, converged)``."""
    delta = math.inf
    while passes() < max_iter:
        new, _ = em_step(pi)
        delta = float(np.max(np.abs(new - pi)))
        pi = new
        if delta <= tol:
            return pi, delta, True
    return pi, delta, False


def _squarem(em_step, theta, max_iter, tol, passes):
    """SQUAREM (Varadhan & Roland 2008, scheme S3) with monotone safeguards: ``(pi, last step, converged)``.

    From ``theta`` with ``t1 = F(theta)``, ``t2 = F(t1)``, ``r = t1 - theta``
    and ``v = t2 - t1 - r``, the extrapolated point is
    ``theta - 2 a r + a^2 v`` with ``a = -|r| / |v|`` (at most -1; ``a = -1``
    gives ``t2``). It is taken only if every prior stays in (0, 1) and the
    log-likelihood there is at least the one at ``t1`` (EM's own step never
    lowers it); otherwise the cycle falls back to the plain EM step ``t2``.
    Stops, like plain EM, when a pass's step ``|F(pi) - pi|`` is at most ``tol``
    in every prior, and returns ``F(pi)``. Each EM map costs a pass; ``passes()`` counts them.
    """
    t1, _ = em_step(theta)
    delta = float(np.max(np.abs(t1 - theta)))
    while delta > tol and passes() < max_iter:
        t2, ll1 = em_step(t1)
        step = float(np.max(np.abs(t2 - t1)))
        if step <= tol:
            return t2, step, True
        r = t1 - theta
        v = (t2 - t1) - r
        vv = float(v @ v)
        alpha = min(-math.sqrt(float(r @ r) / vv), -1.0) if vv > 0 else -1.0
        ext = theta - 2.0 * alpha * r + alpha * alpha * v
        ext /= ext.sum()
        accepted = False
        if alpha < -1.0 and np.all(ext > 0.0) and np.all(ext < 1.0) and passes() < max_iter:
            f_ext, ll_ext = em_step(ext)
            if ll_ext >= ll1:
                theta, t1, accepted = ext, f_ext, True
        if not accepted:
            if passes() >= max_iter:
                return t2, step, False
            theta = t2
            t1, _ = em_step(theta)
        delta = float(np.max(np.abs(t1 - theta)))
    return t1, delta, delta <= tol


def estimate_priors_em(
    proba: ArrayLike,
    train_priors: float | ArrayLike,
    *,
    max_iter: int = 1000,
    tol: float = 1e-8,
    accelerate: bool = True,
) -> PriorEMResult:
    r"""Estimate unknown new class priors by EM and adjust the probabilities to them.

    The procedure of Saerens, Latinne & Decaestecker (2002): starting from
    :math:`\pi^{(0)} = \pi_\text{train}`, alternate

    - E-step: :math:`p^{(s)}(i \mid x_m) = w_i p(i \mid x_m) / \sum_j w_j p(j \mid x_m)`
      with :math:`w_i = \pi^{(s)}(i) / \pi_\text{train}(i)`;
    - M-step: :math:`\pi^{(s+1)}(i) = \frac{1}{n} \sum_m p^{(s)}(i \mid x_m)`,

    a maximum-likelihood estimate of the new priors from unlabelled
    predictions (it assumes the model is calibrated on the training
    distribution and that only the priors changed). Each iteration is one
    fused parallel pass over ``proba`` that computes the E-step posteriors and
    their column sums together, in float64, without storing the posteriors;
    the adjusted probabilities are written once at the end (the input is never
    modified).

    Convergence: the iterations stop when a pass's step
    :math:`\max_i |F(\pi)(i) - \pi(i)| \le` ``tol``, where :math:`F` is the EM
    map above, and return :math:`F(\pi)`. If that does not happen within
    ``max_iter`` passes a :class:`ConvergenceWarning` is issued and
    ``converged`` is False; the last iterate is returned. Plain EM converges
    linearly, slowly when the classes overlap heavily or a class nearly
    vanishes from the new population. With ``accelerate=True`` (default) the
    iterations are SQUAREM's (Varadhan & Roland 2008, scheme S3): two EM maps
    :math:`\theta_1 = F(\theta)`, :math:`\theta_2 = F(\theta_1)`, then the
    extrapolated point :math:`\theta - 2\alpha r + \alpha^2 v` with
    :math:`r = \theta_1 - \theta`, :math:`v = \theta_2 - 2\theta_1 + \theta`,
    :math:`\alpha = \min(-\lVert r\rVert / \lVert v\rVert, -1)`. It is kept only
    if every prior stays in (0, 1) and the log-likelihood
    :math:`\sum_m \log \sum_i w_i p(i \mid x_m)` there is at least the one at
    :math:`\theta_1`; otherwise the plain EM step :math:`\theta_2` is taken.
    Same fixed point, typically several times fewer passes on overlapping
    classes; each pass also sums one logarithm per row.

    Parameters
    ----------
    proba : array_like
        Predicted probabilities on the new population, from a model trained
        with priors ``train_priors``: a 1-D array of P(y=1) (binary) or an
        ``(n, k)`` array whose rows sum to 1 within :data:`SUM_TOL`. At least
        one row, entries in [0, 1], no NaN.
    train_priors : float or array_like of shape (k,)
        Class priors of the training sample (positive, summing to 1); a scalar
        is the positive-class prior of a binary problem.
    max_iter : int, default 1000
        Maximum number of EM iterations (EM maps, one pass over ``proba`` each; >= 1).
    tol : float, default 1e-8
        Convergence tolerance on the change of the priors (> 0).
    accelerate : bool, default True
        SQUAREM acceleration; False runs the plain EM iteration.

    Returns
    -------
    PriorEMResult
        ``priors`` (shape (k,), float64; k = 2 for binary input with
        ``priors[1]`` the positive class), ``proba`` (adjusted to ``priors``,
        same shape and dtype as the input), ``n_iter``, ``converged``.

    Raises
    ------
    ValueError
        Bad priors, ``proba`` with NaN, values outside [0, 1], rows not summing
        to 1, no rows, or a number of columns that does not match the priors.

    References
    ----------
    Saerens, M., Latinne, P. & Decaestecker, C. (2002). Adjusting the outputs
    of a classifier to new a priori probabilities: a simple procedure.
    Neural Computation, 14(1), 21-41.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import estimate_priors_em
    >>> rng = np.random.default_rng(0)
    >>> y = rng.random(100_000) < 0.2                    # new population: 20% positives
    >>> x = rng.normal(np.where(y, 1.0, -1.0))           # x | y ~ N(+-1, 1)
    >>> p = 1.0 / (1.0 + np.exp(-2.0 * x))               # exact posterior for balanced training
    >>> res = estimate_priors_em(p, train_priors=0.5)
    >>> res.converged, bool(abs(res.priors[1] - 0.2) < 0.01)
    (True, True)
    """
    max_iter, tol, accelerate, train = check_em(train_priors, max_iter, tol, accelerate)
    k = train.shape[0]
    src = em_source(proba, k)
    binary = src.ndim == 1
    n = src.shape[0]
    if n == 0:
        raise ValueError("proba must have at least one row.")
    dtype = src.dtype

    part = em_partials(n, k, binary)
    first = [True]

    def em_step(pi):
        """One pass: the EM map ``F(pi)`` and the log-likelihood at ``pi`` (NaN without acceleration)."""
        check, first[0] = first[0], False
        return em_finish(em_summarise(src, pi, train, check, accelerate, part), pi, train)

    pi, delta, converged, n_iter = iterate_em(em_step, train, max_iter, tol, accelerate)

    # Final E-step with the last priors, written once in the input's dtype.
    # A prior that EM drove to 0 stays 0 in ``priors``; the weights are clamped
    # to a tiny positive value, so no row divides by zero.
    out = np.empty(src.shape, dtype=dtype)
    if binary:
        _run_binary(src, out, *_binary_odds_factor(pi, train))
    else:
        _run_multi(src, out, _class_weights(pi, train))
    if not converged:
        warn_em_not_converged(max_iter, delta, tol)
    return PriorEMResult(priors=pi, proba=out, n_iter=n_iter, converged=converged)
