"""Undoing negative undersampling: :func:`correct_negative_sampling` and :func:`negative_sampling_logit_offset`."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from ._inputs import check_rate, io_arrays, raise_bad_values
from ._maps import odds_constants, run_binary

if TYPE_CHECKING:
    from typing import Unpack

    from numpy.typing import ArrayLike, NDArray

    from .._typing import ArrayOutput, PyScalar, ScalarOutput


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
    c, cm1 = sampling_odds(rate)
    arr, src, dst, result, finish = io_arrays(p, out, "p", rows=False)
    bad = run_binary(src, dst, c, cm1)
    if bad:
        raise_bad_values("p", bad)
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
    return math.log(check_rate(rate))


def sampling_odds(rate):
    """``(c, c - 1)`` of :func:`correct_negative_sampling` (``c = 1 / rate``, each correctly rounded) after
    checking ``rate``: the odds factor of its map (:func:`fastcal.prior._maps.binary_map`)."""
    return odds_constants(1 / Fraction(check_rate(rate)))
