"""Known prior shift: :func:`adjust_priors` (Saerens, Latinne & Decaestecker 2002)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ._inputs import io_arrays, prior_vector, raise_bad_rows, raise_bad_values
from ._maps import binary_odds_factor, class_weights, run_binary, run_multi

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike, NDArray

    from .._typing import ArrayOutput, Priors, PyScalar, ScalarOutput


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
    train, new = _priors(train_priors, new_priors)
    k = train.shape[0]
    ndim = np.ndim(proba)
    if ndim == 2:
        n_cols = np.shape(proba)[1]
        if n_cols != k:
            raise ValueError(
                f"proba has {n_cols} columns but the priors have {k} classes; a 2-D proba is read as (n, k)."
            )
        arr, src, dst, result, finish = io_arrays(proba, out, "proba", rows=True)
        bad_values, bad_rows = run_multi(src, dst, class_weights(new, train))
        if bad_values:
            raise_bad_values("proba")
        if bad_rows:
            raise_bad_rows("proba", bad_rows)
    elif ndim <= 1:
        if k != 2:
            raise ValueError(
                f"A {ndim}-D proba holds P(y=1) of a binary problem, but the priors have {k} classes; "
                "give multiclass probabilities as an (n, k) array."
            )
        arr, src, dst, result, finish = io_arrays(proba, out, "proba", rows=False)
        bad = run_binary(src, dst, *binary_odds_factor(new, train))
        if bad:
            raise_bad_values("proba", bad)
    else:
        raise ValueError(
            f"proba must be a 1-D array of P(y=1) or an (n, k) array of class probabilities, got {ndim} dimensions."
        )
    if finish is not None:
        finish()
    if out is None and arr.ndim == 0:
        return result[()]
    return result


def _priors(train_priors, new_priors):
    """The checked prior vectors ``(train, new)``, of as many classes."""
    train, _ = prior_vector(train_priors, "train_priors")
    new, _ = prior_vector(new_priors, "new_priors")
    if train.shape != new.shape:
        raise ValueError(
            f"train_priors and new_priors must have the same number of classes, got {train.shape[0]} and {new.shape[0]}."
        )
    return train, new


def shift_odds(train_priors, new_priors, where):
    """``(c, c - 1)`` of the binary :func:`adjust_priors` (``c = w0 / w1``, exactly rounded) after checking the
    priors, which must be of two classes (``where``: the caller, named in that error); the odds factor of its
    map (:func:`fastcal.prior._maps.binary_map`)."""
    train, new = _priors(train_priors, new_priors)
    if train.shape[0] != 2:
        raise ValueError(f"{where} adjusts P(y=1) of a binary problem, but the priors have {train.shape[0]} classes.")
    return binary_odds_factor(new, train)
