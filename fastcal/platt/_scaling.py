"""Platt scaling: the fit of p = 1 / (1 + exp(a*s + b)), from arrays or any source of passes, and the estimator."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple, Self

import numpy as np

from .._engine import newton as _newton
from . import _kernels as _k
from .._base import BaseCalibrator, check_is_fitted
from .._engine.chunked import Partials
from .._core.errors import warn_not_converged
from .._core.math_kernels import key_to_float
from .._core.parallel import parallel_for
from .._persist import register
from .._prediction import Logistic
from .._core.results import Result
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_binary_labels,
    check_consistent_length,
    check_finite,
    check_sample_weight,
    class_bytes,
    column_or_1d,
    rescale_weights,
)
from ._model import (
    PARAMETERS,
    PlattObjective,
    array_objective,
    array_pass,
    center_and_scale,
    merge_prep,
    check_max_iter,
    check_tol,
    check_total_weight,
    subsample,
    warm_start,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True, eq=False, repr=False)
class PlattResult(Result):
    """Result of :func:`platt_scaling`.

    Attributes
    ----------
    a, b : float
        Parameters of p = 1 / (1 + exp(a*s + b)).
    n_iter : int
        Newton iterations over the full data (a warm start's iterations on
        subsamples are not counted).
    converged : bool
        Whether the stopping rule was met within ``max_iter`` iterations.
    """

    a: float
    b: float
    n_iter: int
    converged: bool



def _run_prep(s, y, w):
    """The merged ``(iout, fout)`` of :func:`fastcal.platt._kernels.prep` over all rows (:func:`merge_prep`)."""
    part = Partials(s.shape[0], _k.CHUNK, _k.N_PREP_INT, _k.N_PREP_FLOAT, dtypes=(np.int64, np.float64))
    part.run(_k.prep, s, y, w)
    return merge_prep(*part.bufs)


def _run_predict(s, a, b, out):
    """Fill ``out`` with the Platt probabilities of ``s``; the number of non-finite scores."""
    return sum(parallel_for(_k.predict, s.shape[0], s, a, b, out))


def _check_arrays(values, values_name, y, sample_weight):
    values = as_float_array(column_or_1d(values, values_name), values_name)
    y = as_label_array(column_or_1d(y, "y"), "y")
    check_consistent_length(**{values_name: values, "y": y})
    with np.errstate(over="ignore"):  # an overflowing total weight is reported below, as a ValueError
        w = check_sample_weight(sample_weight, values.shape[0])
    return values, y, w


def platt_targets(wpos, wneg):
    """Platt's smoothed targets ``(t+, 1 - t+, t-, 1 - t-)`` of class weights ``wpos``, ``wneg`` (floats, or
    arrays of many fits' weights)."""
    return ((wpos + 1.0) / (wpos + 2.0), 1.0 / (wpos + 2.0), 1.0 / (wneg + 2.0), (wneg + 1.0) / (wneg + 2.0))


def starting_point(wpos, wneg, constant_scores):
    """Platt's targets and start, or the exact solution of degenerate data.

    Returns ``(targets, b0, solved)``: the smoothed targets
    ``(t+, 1 - t+, t-, 1 - t-)``, the start ``b0 = log((N- + 1) / (N+ + 1))``
    (Platt 1999), and ``(a, b)`` when the optimum is known without solving
    (else None): with one class every target is the same t and p = t
    everywhere, i.e. a = 0 and b0; with constant scores F depends on a*s + b
    only, so a is not identified: a = 0 and the b with p equal to the
    weighted mean target.
    """
    targets = platt_targets(wpos, wneg)
    b0 = math.log((wneg + 1.0) / (wpos + 1.0))
    if wpos == 0.0 or wneg == 0.0:
        return targets, b0, (0.0, b0)
    if constant_scores:
        mean_t = wpos * targets[0] + wneg * targets[2]
        mean_1mt = wpos * targets[1] + wneg * targets[3]
        return targets, b0, (0.0, math.log(mean_1mt / mean_t))
    return targets, b0, None


def prepare(s, y, w, name="scores"):
    """The preparation sums of validated rows, ``(iout, fout)`` (see ``_kernels._prep_chunk``).

    Raises the in-memory fit's errors for the non-finite scores (called
    ``name`` in the message) or non-binary labels it counts. One call per
    array, file chunk or Dask partition; :func:`merge_prepared` adds them up.
    """
    iout, fout = _run_prep(s, y, w)
    if iout[0]:
        check_finite(s, name)
    if iout[1]:
        check_binary_labels(y, "y")
    return np.asarray(iout), np.asarray(fout)


def merge_prepared(parts, weight_exponent=0):
    """Merge the results of :func:`prepare` on consecutive pieces of the rows, in order; the class weights
    times ``2**-weight_exponent`` (for a chunked fit whose passes rescale the weights, see :func:`fit_passes`)."""
    iout, fout = merge_prep([p[0] for p in parts], [p[1] for p in parts])
    return iout, (fout if weight_exponent == 0 else np.ldexp(fout, -weight_exponent))


class PlattFit(NamedTuple):
    """What :func:`fit_passes` returns: the parameters and how the solver got there."""

    a: float
    b: float
    n_iter: int
    converged: bool
    #: Newton decrement per unit weight at the last point evaluated.
    decrement: float
    #: Passes over the full data.
    n_passes: int


def fit_passes(prepared, n, weighted, run_pass, subsample_rows, max_iter, tol, weight_exponent=0):
    """Platt scaling of rows that a caller can pass over: the fit of every backend.

    ``prepared`` is the merged :func:`prepare` of all ``n`` rows, ``run_pass``
    one pass over them (see :class:`PlattObjective`), and
    ``subsample_rows(fraction)`` returns about that share of the rows in
    memory as ``(s, y, w)`` (see :func:`subsample`); it is called only for a
    warm start (n >= :data:`WARM_START_MIN`), or it is None. Handles the
    degenerate cases, Platt's targets and start, centring and scaling, and
    runs :func:`fastcal._engine.newton.solve`. Returns a :class:`PlattFit`.
    The weights of the passes may be rescaled by
    :func:`fastcal._core.validation.rescale_weights` (with ``weight_exponent``
    its exponent): Platt's targets are pseudo-counts in the units of the
    caller's weights, the solver works with the rescaled ones.
    """
    iout, (wpos, wneg) = prepared
    npos, lo, hi, lo_all, hi_all = (int(v) for v in iout[2:7])
    if not weighted:
        wpos, wneg = float(npos), float(n - npos)
    total = check_total_weight(float(wpos), float(wneg))
    with np.errstate(over="ignore"):  # an overflowing total weight is reported below, as a ValueError
        wpos, wneg = (float(np.ldexp(v, weight_exponent)) for v in (wpos, wneg))
    check_total_weight(wpos, wneg)
    targets, b0, solved = starting_point(wpos, wneg, key_to_float(lo) == key_to_float(hi))
    if solved is not None:
        return PlattFit(*solved, 0, True, 0.0, 0)

    # Centre and scale from all rows, so that no row (even of weight 0) overflows.
    center, scale, xmax = center_and_scale(key_to_float(lo_all), key_to_float(hi_all))

    sub = warm_start(subsample_rows, n,
                     lambda s, y, w, total_sub: array_objective(s, y, w, center, scale, xmax, targets, total_sub))
    obj = PlattObjective(run_pass, n, center, scale, xmax, targets, total, sub)
    res = _newton.solve(obj, obj.to_internal(0.0, b0), tol, max_iter)
    a, b = obj.to_public(*res.theta)
    if res.converged and not (math.isfinite(a) and math.isfinite(b)):
        # The optimum exists in the solver's coordinates, but a = a' * scale does not fit in a float64.
        raise ValueError(
            f"scores: the fitted sigmoid's slope overflows float64 (scores span only "
            f"{key_to_float(hi_all) - key_to_float(lo_all):.3g}); multiply the scores by a constant first.")
    return PlattFit(a, b, res.n_iter, res.converged, res.decrement, res.n_passes)


def fit_arrays(s, y, w, max_iter, tol):
    """Platt scaling of validated arrays (scores ``s``, labels ``y``, weights ``w`` or None; ``max_iter`` and
    ``tol`` checked): the :class:`PlattFit` that :func:`platt_scaling` and :meth:`PlattScaling.fit` make after
    their checks, and callers that check many fits' rows at once (:class:`fastcal.GroupedCalibrator`)."""
    w, e = rescale_weights(w)
    prepared = prepare(s, y, w)
    y = class_bytes(y)  # the passes' labels, converted once
    return fit_passes(prepared, s.shape[0], w is not None, array_pass(s, y, w),
                      lambda fraction: subsample(s, y, w, fraction), max_iter, tol, e)


def warn_if_not_converged(fit, max_iter, tol, stacklevel=2):
    """The ConvergenceWarning of a Platt fit that stopped at ``max_iter``; ``stacklevel`` from the caller."""
    if not fit.converged:
        warn_not_converged("Platt scaling", max_iter, "Newton iterations",
                           f"Newton decrement per unit weight {fit.decrement:.3g} > tol={tol:g}",
                           stacklevel=stacklevel + 1)


def fitted_estimator(fit, max_iter, tol, stacklevel=2):
    """A fitted :class:`PlattScaling` (parameters ``max_iter``, ``tol``) from a :class:`PlattFit`,
    warning if it did not converge; ``stacklevel`` from the caller."""
    warn_if_not_converged(fit, max_iter, check_tol(tol), stacklevel + 1)
    est = PlattScaling(max_iter=max_iter, tol=tol)
    est.a_, est.b_, est.n_iter_, est.converged_ = float(fit.a), float(fit.b), int(fit.n_iter), bool(fit.converged)
    return est


def platt_scaling(
    scores: ArrayLike,
    y: ArrayLike,
    *,
    sample_weight: ArrayLike | float | None = None,
    max_iter: int = 100,
    tol: float | None = None,
) -> PlattResult:
    r"""Fit Platt's sigmoid p = 1 / (1 + exp(a*s + b)) to scores and binary labels.

    Minimises the cross-entropy against Platt's smoothed targets,

    .. math::

        F(a, b) = \sum_i w_i \left[\log\left(1 + e^{a s_i + b}\right)
                  - (1 - t_i)(a s_i + b)\right],
        \qquad t_i = \begin{cases} \frac{N_+ + 1}{N_+ + 2} & y_i = 1 \\
                                   \frac{1}{N_- + 2} & y_i = 0 \end{cases}

    with :math:`N_\pm` the (weighted) class counts, starting from
    :math:`a = 0`, :math:`b = \log\frac{N_- + 1}{N_+ + 1}` (Platt 1999). This is
    the objective of scikit-learn's sigmoid calibration, which minimises it with
    L-BFGS; fastcal minimises it with Newton's method (Lin, Lin & Weng 2007):
    a closed-form 2x2 solve with a relative ridge of 1e-12 on the diagonal,
    Armijo backtracking (constant 1e-4), and the objective, gradient and
    Hessian from one fused parallel pass over the data with float64
    accumulators.

    Parameters
    ----------
    scores : (N,) array_like
        Uncalibrated scores (decision values or probabilities), finite.
        float32 and float64 are read as they are (no float64 copy).
    y : (N,) array_like
        Labels, 0 or 1 (bool, integer or float).
    sample_weight : (N,) array_like or float, optional
        Non-negative weights with a positive sum; ``None`` means all ones.
        A weight of k is the same as k copies of the row.
    max_iter : int, default 100
        Maximum number of Newton iterations over the full data.
    tol : float or None, default None
        Tolerance of the stopping rule on the Newton decrement per unit
        weight; ``None`` means ``1e-10``.

    Returns
    -------
    PlattResult
        ``a``, ``b``, ``n_iter`` and ``converged``.

    Warns
    -----
    ConvergenceWarning
        If the stopping rule was not met within ``max_iter`` iterations.

    Notes
    -----
    **Stopping rule.** With g and H the gradient and Hessian of F, the
    solver stops when the Newton decrement :math:`\lambda^2 = g^\top H^{-1} g`
    (twice the decrease of F that the next Newton step predicts) is at most
    ``tol`` times the total weight :math:`W`, and then takes that last step
    without another pass (it is certified to decrease F, see below). Unlike
    libsvm's absolute rule :math:`|g| < 10^{-5}`, which stops being reachable
    once the gradient, a sum over millions of rows, is dominated by rounding
    (the solver then spins to ``max_iter``), :math:`\lambda^2 / W` does not
    grow with the number of rows or the scale of the weights, and being
    affine invariant it does not depend on the scale or offset of the scores.
    If the rule is met where the largest change of a linear predictor a*s + b
    in the last step is M, Newton's quadratic convergence leaves an error of
    about M**2 / 2 after that step. At the default ``tol = 1e-10`` this puts
    the parameters within about 1e-10 (relative) of the exact optimum, often
    at rounding level (the tests compare with an extended-precision Newton
    solution), far below their statistical uncertainty and below the
    differences between solvers; a smaller ``tol`` buys the remaining digits
    with one more pass.

    **Line search.** Along a step d the curvature of F changes by at most a
    factor exp(M), ``M = max_i |a_d s_i + b_d|`` (since ``|d log(p (1 - p)) / dz| <= 1``),
    which certifies Armijo's condition for every step with
    t exp(t M) / 2 <= 1 - 1e-4 (M t <= 0.69) without evaluating F; longer steps
    are checked through the gradient at the trial point (by convexity) and
    then through F itself, halving t until one test passes.

    **Big inputs.** From 2**18 rows on, the solver first solves the problem on
    1/16 of the rows (evenly spaced contiguous blocks, recursively) and starts
    the full Newton iterations from there: about two passes over the data
    instead of five or six. The optimum is unique and the stopping rule is
    the same, so the answer does not change (see above), only the time.

    **Degenerate input.** Only one class (by weight): the optimum is exactly
    ``a = 0``, ``b = log(N + 1)`` (all negative) or ``-log(N + 1)`` (all
    positive), the start point. Constant scores (over rows of positive
    weight): ``a`` is not identified; the result is ``a = 0`` and the ``b``
    whose probability is the weighted mean target. Perfectly separable
    scores: Platt's targets are not 0 and 1, so the optimum stays finite and
    is found as usual. Huge, tiny or offset scores (1e300, 1e-300, 1e6 + s):
    the solver works on the scores centred on the middle of their range and
    scaled by a power of two (exact) to [-1, 1], so nothing overflows and the
    2x2 system stays well conditioned; a and b are reported for the original
    scores.

    References
    ----------
    Platt, J. (1999). Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods. In Advances in Large Margin
    Classifiers, MIT Press.

    Lin, H.-T., Lin, C.-J. and Weng, R. C. (2007). A note on Platt's
    probabilistic outputs for support vector machines. Machine Learning 68(3).

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import platt_scaling
    >>> scores = np.array([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])
    >>> y = np.array([0, 0, 1, 0, 1, 1])
    >>> res = platt_scaling(scores, y)
    >>> bool(res.converged), res.a < 0
    (True, True)
    """
    s, yv, w = _check_arrays(scores, "scores", y, sample_weight)
    max_iter = check_max_iter(max_iter)
    tol = check_tol(tol)
    fit = fit_arrays(s, yv, w, max_iter, tol)
    warn_if_not_converged(fit, max_iter, tol)
    return PlattResult(float(fit.a), float(fit.b), int(fit.n_iter), bool(fit.converged))


def _predict(scores, a, b):
    s = as_float_array(column_or_1d(scores, "scores", min_size=0), "scores")
    out = np.empty(s.shape[0], dtype=s.dtype)
    if _run_predict(s, float(a), float(b), out):
        check_finite(s, "scores")
    return out


@register
class PlattScaling(BaseCalibrator):
    r"""Platt's sigmoid calibration, p = 1 / (1 + exp(a*s + b)).

    A fast, exact counterpart of scikit-learn's sigmoid calibration
    (``CalibratedClassifierCV(method="sigmoid")``): see :func:`platt_scaling`
    for the objective, the solver, its stopping rule and the handling of
    degenerate data.

    Parameters
    ----------
    max_iter : int, default 100
        Maximum number of Newton iterations over the full data.
    tol : float or None, default None
        Stopping tolerance on the Newton decrement per unit weight
        (``None``: 1e-10).

    Attributes
    ----------
    a_, b_ : float
        The fitted parameters.
    n_iter_ : int
        Newton iterations over the full data.
    converged_ : bool
        Whether the stopping rule was met.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import PlattScaling
    >>> scores = np.array([-2.0, -1.0, -0.5, 0.5, 1.0, 2.0])
    >>> y = np.array([0, 0, 1, 0, 1, 1])
    >>> cal = PlattScaling().fit(scores, y)
    >>> p = cal.predict([-3.0, 0.0, 3.0])
    >>> bool(np.all(np.diff(p) > 0)), p.dtype
    (True, dtype('float64'))
    """

    a_: float
    b_: float
    n_iter_: int
    converged_: bool

    _one_d_input = True  # 1-D scores in, as IsotonicRegression
    _state_schema = {"a_": "float", "b_": "float", "n_iter_": "int", "converged_": "bool"}
    _parameter_constraints = PARAMETERS

    def __init__(self, max_iter: int = 100, tol: float | None = None) -> None:
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, scores: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit ``a_`` and ``b_`` to ``scores`` and binary labels ``y``; returns ``self``."""
        max_iter, tol = check_max_iter(self.max_iter), check_tol(self.tol)
        s, yv, w = _check_arrays(scores, "scores", y, sample_weight)
        fit = fit_arrays(s, yv, w, max_iter, tol)
        warn_if_not_converged(fit, max_iter, tol)
        self.a_ = float(fit.a)
        self.b_ = float(fit.b)
        self.n_iter_ = int(fit.n_iter)
        self.converged_ = bool(fit.converged)
        return self

    def predict(self, scores: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities ``1 / (1 + exp(a_ * s + b_))``, in the dtype of ``scores``
        (float32 stays float32; anything else gives float64)."""
        check_is_fitted(self, "a_")
        return _predict(scores, self.a_, self.b_)

    def prediction_data(self) -> Logistic:
        """What :meth:`predict` computes, as data (:class:`fastcal._prediction.Logistic`): ``1 / (1 + exp(a s + b))``
        as the logistic function of ``u = (-a) s + (-b)``, which is ``-(a s + b)`` exactly (IEEE rounding is
        symmetric), so the same bits; for backends that compute the prediction elsewhere (``fastcal.spark.predict``)."""
        check_is_fitted(self, "a_")
        return Logistic((-float(self.a_),), -float(self.b_), ("x",), "finite")


