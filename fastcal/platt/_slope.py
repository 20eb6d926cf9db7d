"""The calibration slope and intercept: the logistic recalibration logit P(y = 1) = alpha + beta * logit(p).

Platt's model with hard targets on the logits of ``p`` (Cox 1958; Van
Calster et al. 2016), fitted by the Newton driver of :mod:`fastcal._engine.newton`
over the passes of :mod:`fastcal.platt._model`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._engine import newton as _newton
from . import _kernels as _k
from .._core.errors import warn_not_converged
from .._core.math_kernels import key_to_float
from .._engine.chunked import Partials
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
    DEFAULT_TOL,
    PlattObjective,
    array_objective,
    array_pass,
    center_and_scale,
    check_total_weight,
    merge_prep,
    subsample,
    warm_start,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


#: 97.5% quantile of the standard normal (Wald 95% intervals).
_Z975 = 1.959963984540054


@dataclass(frozen=True, eq=False, repr=False)
class SlopeInterceptResult(Result):
    """Result of :func:`calibration_slope_intercept`.

    Attributes
    ----------
    slope, intercept : float
        beta and alpha of logit P(y = 1) = alpha + beta * logit(p).
    slope_se, intercept_se : float
        Their standard errors, square roots of the diagonal of the inverse
        Hessian of the negative log-likelihood at the optimum.
    slope_ci, intercept_ci : tuple of float
        Wald 95% confidence intervals, estimate -/+ 1.96 standard errors.
    calibration_in_the_large : float
        alpha when beta is fixed at 1 (logit(p) used as an offset).
    n_iter : int
        Newton iterations of the (alpha, beta) fit over the full data.
    converged : bool
        Whether both the (alpha, beta) fit and the calibration-in-the-large
        fit met the stopping rule.
    """

    slope: float
    intercept: float
    slope_se: float
    intercept_se: float
    slope_ci: tuple[float, float]
    intercept_ci: tuple[float, float]
    calibration_in_the_large: float
    n_iter: int
    converged: bool




def _run_logit(y, p, w, eps, x):
    """Fill ``x`` with the clipped logits of ``p``; the merged ``(iout, fout)`` of :func:`fastcal.platt._kernels.logit`."""
    part = Partials(p.shape[0], _k.CHUNK, _k.N_LOGIT_INT, _k.N_LOGIT_FLOAT, dtypes=(np.int64, np.float64))
    part.run(_k.logit, y, p, w, eps, x)
    return merge_prep(*part.bufs)


def calibration_slope_intercept(
    y: ArrayLike, p: ArrayLike, *, sample_weight: ArrayLike | float | None = None
) -> SlopeInterceptResult:
    r"""Calibration slope and intercept: the logistic recalibration of predicted probabilities.

    Fits by maximum likelihood

    .. math:: \operatorname{logit} P(y = 1) = \alpha + \beta \operatorname{logit}(p)

    and reports the slope :math:`\beta` (1 when the predictions are neither
    over- nor under-confident; below 1 means too extreme), the intercept
    :math:`\alpha`, their standard errors and Wald 95% confidence intervals
    from the inverse Hessian (observed = expected Fisher information) at the
    optimum, and the calibration in the large: :math:`\alpha` with
    :math:`\beta` fixed at 1, i.e. logit(p) used as an offset (0 when the mean
    prediction matches the event rate). Same solver as :func:`platt_scaling`.

    Parameters
    ----------
    y : (N,) array_like
        Observed outcomes, 0 or 1; both classes must be present.
    p : (N,) array_like
        Predicted probabilities in [0, 1].
    sample_weight : (N,) array_like or float, optional
        Non-negative frequency weights (a weight of k is k copies of the row,
        for the estimates and for the standard errors).

    Returns
    -------
    SlopeInterceptResult
        ``slope``, ``intercept``, ``slope_se``, ``intercept_se``,
        ``slope_ci``, ``intercept_ci``, ``calibration_in_the_large``,
        ``n_iter``, ``converged``.

    Raises
    ------
    ValueError
        For bad input (NaN or infinite p, p outside [0, 1], labels other than
        0/1, negative weights, mismatched lengths, empty input), and when the
        maximum-likelihood estimate does not exist: only one class (by
        weight), constant p (the slope is not identified), or logit(p)
        separating the classes perfectly (the slope is infinite).

    Notes
    -----
    Probabilities are clipped to [eps, 1 - eps] before the logit, with eps the
    machine epsilon of their dtype (``np.finfo(p.dtype).eps``: 2.2e-16 for
    float64, so logits lie within +-36.04; 1.2e-7 for float32), the convention
    of scikit-learn's ``log_loss``; only probabilities below eps or above
    1 - eps (in practice exact 0s and 1s) are affected. Integer or boolean p
    count as float64. The stopping rule is the one of :func:`platt_scaling`
    with ``tol = 1e-10``, at most 100 iterations; big inputs are warm-started
    from a subsample in the same way. The logits are computed once into a
    float64 scratch array (8 bytes per row).

    References
    ----------
    Cox, D. R. (1958). Two further applications of a model for binary
    regression. Biometrika 45(3/4).

    Van Calster, B. et al. (2016). A calibration hierarchy for risk models was
    defined: from utopia to empirical data. Journal of Clinical Epidemiology 74.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import calibration_slope_intercept
    >>> rng = np.random.default_rng(0)
    >>> logit = rng.normal(0, 2, 100_000)
    >>> y = rng.random(logit.size) < 1 / (1 + np.exp(-logit / 2))  # truth: half the logit
    >>> res = calibration_slope_intercept(y, 1 / (1 + np.exp(-logit)))
    >>> round(res.slope, 1), res.slope_ci[0] < 0.5 < res.slope_ci[1]
    (0.5, True)
    """
    return slope_intercept_fit(y, p, sample_weight)[0]


def slope_intercept_fit(y, p, sample_weight, *, strict=True, exponent=None):
    """:func:`calibration_slope_intercept`, and why the estimate does not exist (None if it does).

    ``exponent``: if given, ``sample_weight`` are validated weights already
    rescaled by ``2 ** -exponent`` (:func:`fastcal._core.validation.rescale_weights`),
    used as they are (a caller that holds them makes no copy in the weights' units).

    With ``strict``, raises where the public function does. Otherwise (the
    diagnostics reports, which never raise on valid input) returns the limits:
    with one class the slope and intercept are NaN and the calibration in the
    large is +-inf; with constant p the slope and intercept are NaN (not
    identified); when logit(p) separates the classes the slope is +-inf (its
    limit) and the intercept NaN. The calibration in the large exists in the
    last two cases and is fitted. Standard errors and intervals are then NaN.
    """
    yv = as_label_array(column_or_1d(y, "y"), "y")
    pv = as_float_array(column_or_1d(p, "p"), "p")
    check_consistent_length(y=yv, p=pv)
    if exponent is None:
        with np.errstate(over="ignore"):
            w, exponent = rescale_weights(check_sample_weight(sample_weight, pv.shape[0]))
    else:
        w = sample_weight
    x, prepared = logit_rows(yv, pv, w)
    yv = class_bytes(yv)  # the passes' labels, converted once
    return slope_intercept_passes(prepared, x.shape[0], w is not None, exponent, array_pass(x, yv, w),
                                  lambda fraction: subsample(x, yv, w, fraction), strict=strict)


def logit_rows(y, p, w):
    """The clipped logits ``x`` of validated-shape rows ``(y, p, w)`` (weights rescaled, or None) and their
    preparation results (merge chunks' with :func:`merge_prepared`, weight exponent 0); raises the errors of
    :func:`calibration_slope_intercept` for bad ``p`` or ``y``."""
    eps = float(np.finfo(p.dtype).eps)
    x = np.empty(p.shape[0])
    prepared = _run_logit(y, p, w, eps, x)
    bad_p, bad_y = prepared[0][:2]
    if bad_p:
        check_finite(p, "p")
        raise ValueError("p must contain probabilities in [0, 1].")
    if bad_y:
        check_binary_labels(y, "y")
    return x, (np.asarray(prepared[0]), np.asarray(prepared[1]))


def slope_intercept_passes(prepared, n, weighted, exponent, run_pass, subsample_rows, *, strict=True,
                           run_passes=None):
    """:func:`slope_intercept_fit` of rows a caller can pass over: the fit of every backend.

    ``prepared`` is the merged :func:`logit_rows` of all ``n`` rows (weights
    rescaled by ``2**-exponent``), ``run_pass`` one pass of
    :func:`array_pass` over their logits, ``subsample_rows(fraction)`` about
    that share of the rows ``(x, y, w)`` for the warm start (see
    :func:`fit_passes`), ``run_passes`` (optional) several passes' sums from
    one pass over the rows (:class:`PlattObjective`). The slope's fit and the
    calibration in the large's advance together
    (:func:`fastcal._engine.newton.run_together`), the slope's Hessian at its
    optimum asked with the other's next point: with ``run_passes``, three or
    four passes over the rows where they were five or six, the same sums.
    """
    (_, _, npos, *keys), (wpos, wneg) = prepared
    npos = int(npos)
    wpos, wneg = float(wpos), float(wneg)
    if not weighted:
        wpos, wneg = float(npos), float(n - npos)
    total = check_total_weight(wpos, wneg)
    lo_pos, hi_pos, lo_neg, hi_neg = (key_to_float(int(k)) for k in keys)
    nan = math.nan
    if wpos == 0.0 or wneg == 0.0:
        if strict:
            raise ValueError(
                "y must contain both classes (with positive weight): with one class the "
                "calibration intercept is infinite."
            )
        return _limits(nan, math.copysign(math.inf, wpos - wneg)), "y holds one class only"
    if min(lo_pos, lo_neg) == max(hi_pos, hi_neg):
        if strict:
            raise ValueError("p is constant (over rows of positive weight): the calibration slope is not identified.")
        # logit P(y=1) = alpha + x0: alpha is the logit of the event rate, less x0.
        return _limits(nan, math.log(wpos / wneg) - lo_pos), "p is constant"
    separated = hi_neg <= lo_pos or hi_pos <= lo_neg
    if separated and strict:
        raise ValueError(
            "logit(p) separates the classes of y perfectly: the maximum-likelihood "
            "calibration slope is infinite."
        )

    # logit P(y=1) = alpha + beta x is Platt's model with hard targets and
    # a = -beta, b = -alpha. The logits of the rows of weight 0, which may lie
    # outside [lo, hi], are bounded by 37 in magnitude and cannot overflow.
    center, scale, xmax = center_and_scale(min(lo_pos, lo_neg), max(hi_pos, hi_neg))
    targets = (1.0, 0.0, 0.0, 1.0)

    sub = warm_start(subsample_rows, n,
                     lambda xs, ys, ws, total_sub: array_objective(xs, ys, ws, center, scale, xmax, targets, total_sub))
    obj = PlattObjective(run_pass, n, center, scale, xmax, targets, total, sub, run_passes)
    tol, max_iter = DEFAULT_TOL, 100
    # Start at perfect calibration: beta = 1, alpha = 0.
    start = obj.to_internal(-1.0, 0.0)
    if separated:
        citl = _newton.solve(obj, start, tol, max_iter, free=(1,))
        if not citl.converged:
            warn_not_converged("calibration_slope_intercept", max_iter, "Newton iterations")
        slope = math.inf if hi_neg <= lo_pos else -math.inf
        return (_limits(slope, -obj.to_public(*citl.theta)[1], citl.n_iter, citl.converged),
                "logit(p) separates the classes")
    # Calibration in the large: a' stays at the start (beta = 1), only b' moves.
    (res, at_optimum), citl = _newton.run_together(
        [_with_sums_at_optimum(_newton.minimize_steps(obj, _newton.warm_start(obj, start, tol, max_iter), tol,
                                                      max_iter)),
         _newton.minimize_steps(obj, _newton.warm_start(obj, start, tol, max_iter, (1,)), tol, max_iter, (1,))],
        obj.stats_many)
    # Covariance of (a', b') is the inverse Hessian at the optimum; (beta, alpha)
    # = (-a, -b) = J (a', b') + const with J = [[-scale, 0], [scale*center, -1]].
    _, _, _, haa, hab, hbb = at_optimum
    det = haa * hbb - hab * hab
    cov = np.array([[hbb, -hab], [-hab, haa]]) / det if det > 0 else np.full((2, 2), np.nan)
    jac = np.array([[-scale, 0.0], [scale * center, -1.0]])
    cov = jac @ cov @ jac.T
    a_pub, b_pub = obj.to_public(*res.theta)
    slope, intercept = -a_pub, -b_pub
    # Frequency weights: the information is in the units of the caller's weights, 2**exponent times ours.
    slope_se, intercept_se = (math.ldexp(math.sqrt(v) * (math.sqrt(2.0) if exponent % 2 else 1.0), -exponent // 2)
                              for v in (cov[0, 0], cov[1, 1]))

    b_citl = obj.to_public(*citl.theta)[1]
    converged = bool(res.converged and citl.converged)
    if not converged:
        warn_not_converged("calibration_slope_intercept", max_iter, "Newton iterations")
    n_iter = res.n_iter
    return SlopeInterceptResult(
        slope=float(slope),
        intercept=float(intercept),
        slope_se=float(slope_se),
        intercept_se=float(intercept_se),
        slope_ci=(float(slope - _Z975 * slope_se), float(slope + _Z975 * slope_se)),
        intercept_ci=(float(intercept - _Z975 * intercept_se), float(intercept + _Z975 * intercept_se)),
        calibration_in_the_large=float(-b_citl),
        n_iter=int(n_iter),
        converged=converged,
    ), None


def _with_sums_at_optimum(steps):
    """The Newton solve ``steps`` (:func:`fastcal._engine.newton.minimize_steps`), then the sums at its optimum:
    ``(result, sums)``."""
    res = yield from steps
    return res, (yield res.theta, False)


def _limits(slope, citl, n_iter=0, converged=True):
    """The :class:`SlopeInterceptResult` of data where the estimate does not exist (see :func:`slope_intercept_fit`)."""
    nan = math.nan
    return SlopeInterceptResult(slope=float(slope), intercept=nan, slope_se=nan, intercept_se=nan, slope_ci=(nan, nan),
                                intercept_ci=(nan, nan), calibration_in_the_large=float(citl), n_iter=int(n_iter),
                                converged=bool(converged))
