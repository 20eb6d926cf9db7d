r"""Label shift: the class priors of a target population from a model's predictions on it.

Under label shift, :math:`p_t(x \mid y) = p_s(x \mid y)` while the priors move from
:math:`\pi_s` to :math:`\pi_t`. Three estimators of :math:`\pi_t` from a labelled
source sample (the model's probabilities and the true classes) and an unlabelled
target sample (the model's probabilities):

``"em"``
    The maximum-likelihood estimate of Saerens, Latinne and Decaestecker
    (2002), :func:`fastcal.estimate_priors_em`, run on posteriors calibrated
    on the source sample first. Alexandari, Kundaje and Shrikumar (2020)
    show that with a calibration that has a bias per class (BCTS, vector
    scaling) it is hard to beat, and that without one it loses to the
    confusion-matrix methods: the default calibrator is therefore
    :class:`fastcal.BiasCorrectedTemperatureScaling`.
``"bbse"``, ``"bbse-soft"``
    Black-box shift estimation (Lipton, Wang and Smola 2018): with
    :math:`C_{ij} = P_s(\hat y = i, y = j)` and :math:`\mu_i = P_t(\hat y = i)`,
    :math:`\mu = C w` for the weights :math:`w_j = \pi_{t,j} / \pi_{s,j}`, so
    :math:`w = C^{-1} \mu`. Hard: :math:`\hat y` the most probable class;
    soft: the probabilities themselves in place of the indicator. Negative
    weights are set to 0 (as Lipton et al. and ``abstention`` do), then the
    priors :math:`w_j \pi_{s,j}` are normalised.
``"rlls"``, ``"rlls-soft"``
    Regularised learning under label shift (Azizzadenesheli et al. 2019):
    :math:`w = 1 + \theta` for the :math:`\theta \ge -1` that minimises
    :math:`\lVert C \theta - (\mu - C \mathbf{1}) \rVert + \Delta \lVert \theta \rVert`
    (:mod:`fastcal.label_shift._rlls`): BBSE shrunk towards no shift, by
    as much as the source sample's size leaves :math:`C` uncertain.

The condition number of the conditional confusion matrix
:math:`P_s(\hat y = i \mid y = j)` says how much sampling noise in the
predictions' frequencies is amplified into the priors; a warning is issued
above ``condition_warning``. Bootstrap intervals resample the source and
target rows (refitting the calibrator each time); for hard BBSE without a
calibrator (and RLLS) they resample the sufficient statistics instead: the source's
(prediction, class) counts and the target's prediction counts, multinomial
draws of k^2 and k cells.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import warnings
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._core.params import Integer, Options, Real, check
from .._core.results import Result
from .._core.validation import as_float_array, check_finite
from ..multiclass import BiasCorrectedTemperatureScaling, VectorScaling
from ..prior import SUM_TOL, estimate_priors_em
from ..temperature import TemperatureScaling, class_indices
from ._rlls import rlls_delta, rlls_theta

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["LabelShiftResult", "estimate_label_shift"]

METHODS = ("em", "bbse", "bbse-soft", "rlls", "rlls-soft")
#: The calibrators named by a string.
CALIBRATORS = {"bcts": BiasCorrectedTemperatureScaling, "vector": VectorScaling, "temperature": TemperatureScaling}


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class LabelShiftResult(Result):
    """Result of :func:`estimate_label_shift`.

    Attributes
    ----------
    priors : ndarray of shape (k,)
        The estimated class priors of the target population (float64, non-negative, sum 1).
    weights : ndarray of shape (k,)
        ``priors / source_priors``: the importance weight of a source row of each class, and the factors
        by which :func:`fastcal.adjust_priors` moves the calibrated posteriors to the target.
    source_priors : ndarray of shape (k,)
        The class frequencies of the source sample.
    condition_number : float
        The 2-norm condition number of the conditional confusion matrix ``P_s(yhat = i | y = j)`` (hard
        predictions for ``"em"``, ``"bbse"`` and ``"rlls"``, probabilities for the soft methods).
    confusion_matrix : ndarray of shape (k, k)
        ``C[i, j] = P_s(yhat = i, y = j)``, the joint frequencies on the source sample (as above).
    method : str
    calibrator : estimator or None
        The calibrator fitted on the source sample (None if none).
    n_iter : int
        EM passes over the target rows (0 for BBSE and RLLS).
    converged : bool
    priors_low, priors_high : ndarray of shape (k,) or None
        The bootstrap percentile interval of each prior at ``confidence`` (None without ``n_bootstrap``).
    """

    priors: NDArray[np.float64]
    weights: NDArray[np.float64]
    source_priors: NDArray[np.float64]
    condition_number: float
    confusion_matrix: NDArray[np.float64]
    method: str
    calibrator: Any
    n_iter: int
    converged: bool
    priors_low: NDArray[np.float64] | None = None
    priors_high: NDArray[np.float64] | None = None


def _probabilities(x, name):
    """(n, k) float64 probabilities, k >= 2, rows summing to 1 within ``fastcal.prior.SUM_TOL``, renormalised (a
    new array: the input is never modified)."""
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array of probabilities (n_samples, n_classes), got shape {arr.shape}.")
    check_classes(arr.shape[1], name)
    if arr.shape[0] == 0:
        raise ValueError(f"{name} must have at least 1 row.")
    p, bad = checked_probabilities(arr, name)
    check_row_sums(bad, name)
    return p


def check_classes(k, name):
    """Refuse fewer than two columns of probabilities, naming ``name``."""
    if k < 2:
        raise ValueError(f"{name} has {k} column: label shift needs at least 2 classes (k >= 2).")


def checked_probabilities(arr, name):
    """``(p, bad)``: (m, k) scores as float64 probabilities renormalised to sum 1 (a new array), and how many rows
    do not sum to 1 within ``SUM_TOL`` (:func:`check_row_sums` raises for them); non-finite values or values
    outside [0, 1] raise here, naming ``name``. A chunk's share of :func:`_probabilities`."""
    p = as_float_array(arr, name, dtype=np.float64)
    if p.shape[0] == 0:
        return np.empty(p.shape), 0
    check_finite(p, name)
    if p.min() < 0.0 or p.max() > 1.0:
        raise ValueError(f"{name} must hold probabilities in [0, 1].")
    sums = p.sum(axis=1)
    bad = int(np.count_nonzero(np.abs(sums - 1.0) > SUM_TOL))
    return p / sums[:, None], bad  # exactly the probabilities the calibrators and the EM read as such


def check_row_sums(bad, name):
    """Raise for ``bad`` rows of ``name`` that do not sum to 1 (none: nothing)."""
    if bad:
        raise ValueError(f"The rows of {name} must sum to 1 (within {SUM_TOL:g}); {bad} row{'s do' if bad > 1 else ' does'} not.")


def _calibrator(calibrator, method):
    if isinstance(calibrator, str):
        check("calibrator", calibrator, [Options("auto", *CALIBRATORS)])
        if calibrator == "auto":
            calibrator = "bcts" if method == "em" else None
        return None if calibrator is None else CALIBRATORS[calibrator](input_type="probabilities")
    if calibrator is None:
        return None
    if not (hasattr(calibrator, "fit") and hasattr(calibrator, "predict_proba")):
        raise TypeError("calibrator must be 'auto', 'bcts', 'vector', 'temperature', None, or an estimator with fit "
                        f"and predict_proba; got {type(calibrator).__name__}.")
    return copy.deepcopy(calibrator)  # the caller's is never fitted (a pipeline's steps are copied too)


def _joint(pred, y, k, soft):
    """C[i, j] = mean over the rows of [yhat = i] [y = j] (hard: ``pred`` the predicted classes) or p_i [y = j]."""
    n = y.shape[0]
    if soft:
        C = np.zeros((k, k))
        for j in range(k):
            C[:, j] = pred[y == j].sum(axis=0)
        return C / n
    return np.bincount(pred * k + y, minlength=k * k).reshape(k, k) / n


def _condition(C, source):
    with np.errstate(divide="ignore", invalid="ignore"):
        return float(np.linalg.cond(C / source))


def _bbse(C, mu, source):
    """The BBSE priors from the joint source matrix ``C`` and the target's prediction frequencies ``mu``."""
    try:
        w = np.linalg.solve(C, mu)
    except np.linalg.LinAlgError:
        raise ValueError("the confusion matrix of the source sample is singular: some class is never predicted, or "
                         "two classes are predicted alike; BBSE cannot tell their priors apart (use method='em').") from None
    priors = np.maximum(w, 0.0) * source
    total = priors.sum()
    if not total > 0.0:
        raise ValueError("BBSE found no class with a positive weight: the target's predictions are not a mixture of "
                         "the source's classes.")
    return priors / total


def _rlls(C, mu, source, n_source, alpha):
    """The RLLS priors (:func:`fastcal.label_shift._rlls.rlls_theta`): w = 1 + theta >= 0, normalised."""
    w = 1.0 + rlls_theta(C, mu - C.sum(axis=1), rlls_delta(C.shape[0], n_source, alpha))
    priors = np.maximum(w, 0.0) * source
    total = priors.sum()
    if not total > 0.0:
        raise ValueError("RLLS found no class with a positive weight.")
    return priors / total


class ArraySamples:
    """The source and target samples in memory, as :func:`estimate_from` reads them (a backend's rows give the
    same methods: :class:`fastcal.label_shift.rows.RowsSamples`).

    ``ps`` (n_source, k) and ``pt`` (n_target, k) renormalised float64 probabilities, ``ys`` the source's int64
    class indices. ``source_counts()``: each class's rows in the source; ``calibrated(cal)``: ``cal`` fitted on
    the source, and the samples of its probabilities, ``(samples, fitted)``; ``joint(soft)``: C of
    :func:`_joint`; ``target_means(soft)``: the target's prediction frequencies (or mean probabilities);
    ``em(source, max_iter, tol)``: :func:`fastcal.estimate_priors_em` on the target, ``(priors, n_iter,
    converged)``; ``resampled(rng)``: the samples of one bootstrap replicate (rows drawn with replacement).
    """

    def __init__(self, ps, ys, pt, k):
        self.ps, self.ys, self.pt, self.k = ps, ys, pt, k
        self.n_source, self.n_target = ys.shape[0], pt.shape[0]

    def source_counts(self):
        return np.bincount(self.ys, minlength=self.k).astype(np.float64)

    def calibrated(self, cal):
        cal.fit(self.ps, self.ys)
        return ArraySamples(np.asarray(cal.predict_proba(self.ps), dtype=np.float64), self.ys,
                            np.asarray(cal.predict_proba(self.pt), dtype=np.float64), self.k), cal

    def joint(self, soft):
        return _joint(self.ps if soft else self.ps.argmax(axis=1), self.ys, self.k, soft)

    def target_means(self, soft):
        if soft:
            return self.pt.mean(axis=0)
        return np.bincount(self.pt.argmax(axis=1), minlength=self.k) / self.n_target

    def em(self, source, max_iter, tol):
        res = estimate_priors_em(self.pt, source, max_iter=max_iter, tol=tol)
        return res.priors, res.n_iter, res.converged

    def resampled(self, rng):
        i = rng.integers(0, self.n_source, self.n_source)
        j = rng.integers(0, self.n_target, self.n_target)
        return ArraySamples(self.ps[i], self.ys[i], self.pt[j], self.k)


def _estimate(method, cal, data, max_iter, tol, with_details, rlls_alpha=0.01):
    """One estimate from the samples: (priors, source priors, C, n_iter, converged, fitted calibrator)."""
    source = data.source_counts() / data.n_source
    if np.any(source == 0.0):
        missing = np.flatnonzero(source == 0.0).tolist()
        raise ValueError(f"y_source has no row of class {missing[0] if len(missing) == 1 else missing}: the shift of "
                         "its prior cannot be estimated.")
    if cal is not None:
        data, cal = data.calibrated(cal)
    soft = method.endswith("-soft")
    C = data.joint(soft) if (with_details or method != "em") else None
    if method == "em":
        priors, n_iter, converged = data.em(source, max_iter, tol)
        return priors, source, C, n_iter, converged, cal
    mu = data.target_means(soft)
    if method.startswith("rlls"):
        return _rlls(C, mu, source, data.n_source, rlls_alpha), source, C, 0, True, cal
    return _bbse(C, mu, source), source, C, 0, True, cal


def check_parameters(method, n_bootstrap, confidence, max_iter, tol, condition_warning, rlls_alpha):
    """The checks of :func:`estimate_label_shift`'s parameters (every backend's)."""
    check("method", method, [Options(*METHODS)])
    check("n_bootstrap", n_bootstrap, [Integer(0)])
    check("confidence", confidence, [Real(0, 1, open_low=True, open_high=True)])
    check("max_iter", max_iter, [Integer(1)])
    check("tol", tol, [Real(0, open_low=True)])
    check("condition_warning", condition_warning, [Real(1)])
    check("rlls_alpha", rlls_alpha, [Real(0)])


def resamples_statistics(method, calibrator):
    """Whether the bootstrap of ``method`` with ``calibrator`` (as given) resamples the sufficient statistics
    (hard BBSE and RLLS without a calibrator) rather than the rows."""
    return method in ("bbse", "rlls") and _calibrator(calibrator, method) is None


def estimate_from(data, *, method, calibrator, n_bootstrap, confidence, random_state, max_iter, tol,
                  condition_warning, rlls_alpha, stacklevel=2):
    """:func:`estimate_label_shift` on ``data`` (an :class:`ArraySamples`, or a backend's samples), the parameters
    checked: the one orchestration of every backend's estimate; its warnings at ``stacklevel`` as its caller
    counts it (2: the caller's caller)."""
    cal = _calibrator(calibrator, method)
    priors, source, C, n_iter, converged, cal = _estimate(method, cal, data, max_iter, tol, True, rlls_alpha)
    cond = _condition(C, source)
    if not cond <= condition_warning:
        warnings.warn(f"the source sample's confusion matrix P(yhat | y) has condition number {cond:.3g} (above "
                      f"condition_warning={condition_warning:g}): the classes are hard to tell apart, and the "
                      "estimated priors may be far off.", UserWarning, stacklevel=stacklevel + 1)
    low = high = None
    if n_bootstrap:
        draws = _bootstrap(method, cal is not None, calibrator, C, data, max_iter, tol, n_bootstrap,
                           np.random.default_rng(random_state), rlls_alpha)
        failed = int(np.count_nonzero(np.isnan(draws[:, 0])))
        if failed == n_bootstrap:
            raise ValueError(f"none of the {n_bootstrap} bootstrap replicates has an estimate (each lacks a class "
                             "in the resampled source sample, or its confusion matrix is singular).")
        if failed:
            warnings.warn(f"{failed} of {n_bootstrap} bootstrap replicates have no estimate (a class missing from "
                          "the resampled source sample, or a singular confusion matrix): the intervals are those "
                          "of the others.", UserWarning, stacklevel=stacklevel + 1)
        alpha = (1.0 - confidence) / 2.0
        low, high = np.quantile(draws[~np.isnan(draws[:, 0])], [alpha, 1.0 - alpha], axis=0)
    return LabelShiftResult(priors=priors, weights=priors / source, source_priors=source, condition_number=cond,
                            confusion_matrix=C, method=method, calibrator=cal, n_iter=n_iter, converged=converged,
                            priors_low=low, priors_high=high)


def estimate_label_shift(
    y_source: ArrayLike,
    proba_source: ArrayLike,
    proba_target: ArrayLike,
    *,
    method: Literal["em", "bbse", "bbse-soft", "rlls", "rlls-soft"] = "em",
    calibrator: Any = "auto",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    max_iter: int = 1000,
    tol: float = 1e-8,
    condition_warning: float = 100.0,
    rlls_alpha: float = 0.01,
) -> LabelShiftResult:
    r"""Estimate the class priors of a target population under label shift.

    Parameters
    ----------
    y_source : array-like of shape (n_source,)
        The true classes of a labelled source sample (held out from the
        model's training), as column indices ``0 .. k - 1`` of the probabilities.
    proba_source : array-like of shape (n_source, k)
        The model's probabilities on the source sample (rows summing to 1).
    proba_target : array-like of shape (n_target, k)
        The model's probabilities on the unlabelled target sample.
    method : {"em", "bbse", "bbse-soft", "rlls", "rlls-soft"}
        EM on calibrated posteriors (Saerens et al. 2002; Alexandari et al.
        2020), black-box shift estimation with hard or soft predictions
        (Lipton et al. 2018), or its regularised form RLLS (Azizzadenesheli
        et al. 2019). See the module docstring.
    calibrator : {"auto", "bcts", "vector", "temperature"}, None or estimator
        Fitted on the source sample, then applied to both samples before the
        estimate. "auto": :class:`fastcal.BiasCorrectedTemperatureScaling` for
        "em", none for BBSE and RLLS; the named ones read the input as
        probabilities (``input_type="probabilities"``). An estimator with
        ``fit(X, y)`` and ``predict_proba(X)`` is copied (``copy.deepcopy``),
        never fitted itself; it gets the renormalised probabilities.
    n_bootstrap : int
        Bootstrap replicates for the intervals ``priors_low``, ``priors_high`` (0: none).
    confidence : float
        The intervals' nominal coverage, in (0, 1).
    random_state : int, Generator or None
        The bootstrap's random numbers.
    max_iter, tol : int, float
        The EM's (:func:`fastcal.estimate_priors_em`).
    condition_warning : float
        Warn when the condition number of the conditional confusion matrix exceeds it.
    rlls_alpha : float
        RLLS's regularisation: the factor of the paper's bound on the error of
        the confusion matrix (0.01, as in the authors' code).

    Returns
    -------
    LabelShiftResult

    References
    ----------
    Saerens, M., Latinne, P. and Decaestecker, C. (2002). Adjusting the outputs of a classifier to new a priori
    probabilities: a simple procedure. Neural Computation 14(1).

    Azizzadenesheli, K., Liu, A., Yang, F. and Anandkumar, A. (2019). Regularized Learning for Domain Adaptation
    under Label Shifts. ICLR.

    Lipton, Z. C., Wang, Y.-X. and Smola, A. (2018). Detecting and Correcting for Label Shift with Black Box
    Predictors. ICML.

    Alexandari, A., Kundaje, A. and Shrikumar, A. (2020). Maximum Likelihood with Bias-Corrected Calibration is
    Hard-To-Beat at Label Shift Adaptation. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> import fastcal
    >>> rng = np.random.default_rng(0)
    >>> def sample(priors, n):
    ...     y = rng.choice(3, size=n, p=priors)
    ...     z = rng.normal(size=(n, 3)) + 2.0 * np.eye(3)[y]
    ...     p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    ...     return y, p
    >>> ys, ps = sample([1 / 3, 1 / 3, 1 / 3], 20000)
    >>> _, pt = sample([0.6, 0.3, 0.1], 20000)
    >>> fastcal.estimate_label_shift(ys, ps, pt).priors.round(2)
    array([0.6, 0.3, 0.1])
    """
    check_parameters(method, n_bootstrap, confidence, max_iter, tol, condition_warning, rlls_alpha)
    ps = _probabilities(proba_source, "proba_source")
    pt = _probabilities(proba_target, "proba_target")
    k = ps.shape[1]
    if pt.shape[1] != k:
        raise ValueError(f"proba_target has {pt.shape[1]} classes (columns), proba_source {k}.")
    ys = class_indices(y_source, ps, k, "y_source", "proba_source")
    return estimate_from(ArraySamples(ps, ys, pt, k), method=method, calibrator=calibrator, n_bootstrap=n_bootstrap,
                         confidence=confidence, random_state=random_state, max_iter=max_iter, tol=tol,
                         condition_warning=condition_warning, rlls_alpha=rlls_alpha, stacklevel=2)


def _bootstrap(method, calibrated, calibrator, C, data, max_iter, tol, n_bootstrap, rng, rlls_alpha):
    """``n_bootstrap`` estimates from resampled data: (n_bootstrap, k) priors."""
    k = data.k
    draws = np.empty((n_bootstrap, k))
    ns, nt = data.n_source, data.n_target
    if method in ("bbse", "rlls") and not calibrated:
        # the sufficient statistics: the source's (prediction, class) counts and the target's prediction counts
        mu = data.target_means(False)
        joint = C.reshape(-1)
        for b in range(n_bootstrap):
            Cb = rng.multinomial(ns, joint / joint.sum()).reshape(k, k) / ns
            mub = rng.multinomial(nt, mu / mu.sum()) / nt
            source = Cb.sum(axis=0)
            draws[b] = _bbse_or_nan(Cb, mub, source, ns, rlls_alpha if method == "rlls" else None)
        return draws
    # no warning filter here (it is process-wide): a replicate whose fit or EM warns is reported as such
    for b in range(n_bootstrap):
        try:
            draws[b] = _estimate(method, _calibrator(calibrator, method), data.resampled(rng), max_iter, tol, False,
                                 rlls_alpha)[0]
        except ValueError:  # a replicate without some class, or singular: no estimate
            draws[b] = math.nan
    return draws


def _bbse_or_nan(C, mu, source, n_source, rlls_alpha):
    """BBSE's priors (RLLS's with ``rlls_alpha``) of resampled statistics, or NaN where there are none."""
    if np.any(source == 0.0):
        return np.full(mu.shape[0], math.nan)
    try:
        return _bbse(C, mu, source) if rlls_alpha is None else _rlls(C, mu, source, n_source, rlls_alpha)
    except ValueError:
        return np.full(mu.shape[0], math.nan)
