r"""Platt scaling and the calibration slope and intercept.

:func:`platt_scaling` fits Platt's sigmoid p = 1 / (1 + exp(a*s + b)) to
scores ``s`` and binary labels, the same model and objective as scikit-learn's
sigmoid calibration (``sklearn.calibration._SigmoidCalibration``);
:class:`PlattScaling` wraps it as an estimator. :func:`calibration_slope_intercept`
is the logistic recalibration logit P(y = 1) = alpha + beta * logit(p) used to
validate clinical prediction models (Cox 1958; Van Calster et al. 2016).

Both are fitted by the one Newton driver of :mod:`fastcal._newton`: a
closed-form 2x2 solve, a tiny ridge and a line search whose sufficient
decrease is certified without evaluating the objective where possible, over
one fused parallel pass per iteration (objective, gradient and Hessian
together, float64 accumulators). On big inputs it starts from the solution of
a subsample, which changes the number of passes, not the answer.
:func:`fit_passes` is that fit for any source of passes: arrays in memory
here, file chunks in :mod:`fastcal.outofcore`, partitions in :mod:`fastcal.dask`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Self

import numpy as np

from . import _newton
from . import _platt_kernels as _k
from ._math_kernels import key_to_float
from ._base import BaseCalibrator, ConvergenceWarning, check_is_fitted
from ._errors import warn_not_converged
from ._parallel import parallel_for
from ._params import Integer, Real, check
from ._persist import register
from ._results import Result
from ._validation import (
    as_float_array,
    as_label_array,
    check_binary_labels,
    check_consistent_length,
    check_finite,
    check_sample_weight,
    column_or_1d,
    rescale_weights,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "ConvergenceWarning",
    "PlattResult",
    "PlattScaling",
    "SlopeInterceptResult",
    "calibration_slope_intercept",
    "platt_scaling",
]

#: Default stopping tolerance on the Newton decrement per unit weight.
DEFAULT_TOL = 1e-10
#: Warm start from a subsample from this many rows on.
WARM_START_MIN = 1 << 18
#: The warm-start subsample has 1/_SUBSAMPLE_FACTOR of the rows ...
_SUBSAMPLE_FACTOR = 16
#: ... and at most this many (it is solved in memory, also for out-of-core and Dask fits).
SUBSAMPLE_MAX = 1 << 20
#: 97.5% quantile of the standard normal (Wald 95% intervals).
_Z975 = 1.959963984540054


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


# ---------------------------------------------------------------------------
# The kernels' passes over arrays in memory: ranges of blocks on fastcal's
# threads (fastcal._parallel), merged in block order.
# ---------------------------------------------------------------------------


def _run_newton_pass(s, y, w, center, scale, a, b, targets, want_loss, buf=None):
    """The :data:`fastcal._platt_kernels.N_STATS` sums of :func:`fastcal._platt_kernels.newton_pass` over all rows at (a, b).

    ``targets`` is ``(t+, 1 - t+, t-, 1 - t-)``; ``buf`` an optional scratch
    array of shape ``(n_chunks(len(s)), N_STATS)``, reused across iterations.
    """
    n = s.shape[0]
    if buf is None:
        buf = np.empty((_k.n_chunks(n), _k.N_STATS))
    tpos, tnpos, tneg, tnneg = targets
    parallel_for(_k.newton_pass, buf.shape[0], s, y, w, center, scale, a, b, tpos, tnpos, tneg, tnneg,
                 True if want_loss else None, buf, rows=n)
    return _k.merge_sums(buf)


def _run_prep(s, y, w):
    """The merged ``(iout, fout)`` of :func:`fastcal._platt_kernels.prep` over all rows."""
    nc = _k.n_chunks(s.shape[0])
    ibuf = np.empty((nc, _k.N_PREP_INT), dtype=np.int64)
    fbuf = np.empty((nc, _k.N_PREP_FLOAT))
    parallel_for(_k.prep, nc, s, y, w, ibuf, fbuf, rows=s.shape[0])
    return _k.merge_blocks(ibuf, fbuf)


def _run_logit(y, p, w, eps, x):
    """Fill ``x`` with the clipped logits of ``p``; the merged ``(iout, fout)`` of :func:`fastcal._platt_kernels.logit`."""
    nc = _k.n_chunks(p.shape[0])
    ibuf = np.empty((nc, _k.N_LOGIT_INT), dtype=np.int64)
    fbuf = np.empty((nc, _k.N_LOGIT_FLOAT))
    parallel_for(_k.logit, nc, y, p, w, eps, x, ibuf, fbuf, rows=p.shape[0])
    return _k.merge_blocks(ibuf, fbuf)


def _run_predict(s, a, b, out):
    """Fill ``out`` with the Platt probabilities of ``s``; the number of non-finite scores."""
    return sum(parallel_for(_k.predict, s.shape[0], s, a, b, out))


# ---------------------------------------------------------------------------
# Platt's model for the Newton driver (fastcal._newton), from any source of passes.
# ---------------------------------------------------------------------------


class PlattObjective:
    r"""Platt's objective F(a, b) in the solver's coordinates, for :func:`fastcal._newton.solve`.

    The solver works in centred and scaled coordinates, z = a' x + b' with
    x = (s - center) * scale, ``scale`` a power of two chosen so that |x| <= 1;
    ``xmax`` bounds |x| over the rows of positive weight. The sums come from
    ``run_pass(center, scale, a', b', targets, want_loss)``: the 6 sums of
    :func:`_run_newton_pass` over all rows, wherever
    they are (arrays, file chunks, Dask partitions). ``subsample`` is a
    callable returning the objective on a subsample, or None.
    """

    k = 2

    def __init__(self, run_pass, n, center, scale, xmax, targets, total_weight, subsample=None):
        self.run_pass = run_pass
        self.n = n
        self.center = center
        self.scale = scale
        self.bounds = (xmax, 1.0)
        self.targets = targets  # (t+, 1 - t+, t-, 1 - t-)
        self.total_weight = total_weight
        self._subsample = subsample

    def stats(self, theta, want_loss=False):
        """(F, dF/da, dF/db, d2F/da2, d2F/dadb, d2F/db2) at ``theta``; F only if ``want_loss`` (else 0)."""
        return self.run_pass(self.center, self.scale, theta[0], theta[1], self.targets, want_loss)

    def subsample(self):
        return None if self._subsample is None else self._subsample()

    def to_internal(self, a, b):
        """(a, b) of z = a*s + b to the solver's (a', b')."""
        return a / self.scale, b + a * self.center

    def to_public(self, a, b):
        """The solver's (a', b') to (a, b) of z = a*s + b."""
        a_pub = a * self.scale
        return a_pub, b - a_pub * self.center


def subsample_fraction(n):
    """The share of rows in the warm-start subsample of an n-row fit: 1/16, at most :data:`SUBSAMPLE_MAX` rows."""
    return min(1.0 / _SUBSAMPLE_FACTOR, SUBSAMPLE_MAX / max(n, 1))


def subsample(s, y, w, fraction):
    """About ``fraction`` of the rows ``(s, y, w)``: evenly spaced contiguous blocks of 64 to 4096 rows.

    Contiguous blocks read memory sequentially; spreading them over the whole
    input keeps the subsample representative of sorted or clustered data.
    """
    n = s.shape[0]
    m = int(round(n * fraction))
    if m <= 0:
        return s[:0], y[:0], None if w is None else w[:0]
    length = min(4096, max(64, m // 256), n)
    n_blocks = max(1, m // length)
    starts = np.linspace(0, n - length, n_blocks).astype(np.int64)

    def take(arr):
        return None if arr is None else np.concatenate([arr[i:i + length] for i in starts])

    return take(s), take(y), take(w)


def array_pass(s, y, w):
    """The ``run_pass`` of rows in memory: one fused kernel pass, into a scratch buffer reused across calls."""
    buf = np.empty((_k.n_chunks(s.shape[0]), _k.N_STATS))

    def run_pass(center, scale, a, b, targets, want_loss):
        return _run_newton_pass(s, y, w, center, scale, a, b, targets, want_loss, buf)

    return run_pass


def array_objective(s, y, w, center, scale, xmax, targets, total_weight, warm_start=True):
    """:class:`PlattObjective` over rows in memory, warm-started from subsamples of them (recursively)."""
    n = s.shape[0]

    def sub():
        if not warm_start or n < WARM_START_MIN:
            return None
        s_sub, y_sub, w_sub = subsample(s, y, w, subsample_fraction(n))
        total = float(w_sub.sum(dtype=np.float64)) if w_sub is not None else float(s_sub.shape[0])
        if not total > 0.0:
            return None
        return array_objective(s_sub, y_sub, w_sub, center, scale, xmax, targets, total)

    return PlattObjective(array_pass(s, y, w), n, center, scale, xmax, targets, total_weight, sub)


def center_and_scale(lo, hi):
    """Centre (lo + hi) / 2 and a power of two ``scale`` with (hi - lo) / 2 * scale in [0.5, 1)
    (computed without overflow; the exponent is clamped so that ``scale`` stays finite),
    and the bound on |x| = |s - centre| * scale for lo <= s <= hi."""
    center = 0.5 * lo + 0.5 * hi
    half = 0.5 * hi - 0.5 * lo
    if not half > 0.0:
        return center, 1.0, 0.0
    e = math.frexp(half)[1]
    scale = math.ldexp(1.0, -min(max(e, -1000), 1024))
    # s - centre rounds to at most half * (1 + 2**-52) in magnitude.
    return center, scale, half * scale * (1.0 + 1e-15)


# ---------------------------------------------------------------------------
# Input checks.
# ---------------------------------------------------------------------------


#: What Platt scaling's parameters accept (see :mod:`fastcal._params`).
PARAMETERS: dict[str, list[Any]] = {"max_iter": [Integer(1)], "tol": [Real(0, open_low=True), None]}


def check_max_iter(max_iter):
    """``max_iter`` as an int, or the parameter error."""
    return check("max_iter", max_iter, PARAMETERS["max_iter"])


def check_tol(tol):
    """``tol`` as a float (``None``: :data:`DEFAULT_TOL`), or the parameter error."""
    tol = check("tol", tol, PARAMETERS["tol"])
    return DEFAULT_TOL if tol is None else tol


def _check_arrays(values, values_name, y, sample_weight):
    values = as_float_array(column_or_1d(values, values_name), values_name)
    y = as_label_array(column_or_1d(y, "y"), "y")
    check_consistent_length(**{values_name: values, "y": y})
    with np.errstate(over="ignore"):  # an overflowing total weight is reported below, as a ValueError
        w = check_sample_weight(sample_weight, values.shape[0])
    return values, y, w


def check_total_weight(wpos, wneg):
    """The total weight ``wpos + wneg``, or a ``ValueError`` if it is not finite and positive."""
    total = wpos + wneg
    if not math.isfinite(total):
        raise ValueError("sample_weight: the total weight overflows float64.")
    return total


# ---------------------------------------------------------------------------
# Platt scaling.
# ---------------------------------------------------------------------------


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
    targets = ((wpos + 1.0) / (wpos + 2.0), 1.0 / (wpos + 2.0),
               1.0 / (wneg + 2.0), (wneg + 1.0) / (wneg + 2.0))
    b0 = math.log((wneg + 1.0) / (wpos + 1.0))
    if wpos == 0.0 or wneg == 0.0:
        return targets, b0, (0.0, b0)
    if constant_scores:
        mean_t = wpos * targets[0] + wneg * targets[2]
        mean_1mt = wpos * targets[1] + wneg * targets[3]
        return targets, b0, (0.0, math.log(mean_1mt / mean_t))
    return targets, b0, None


def prepare(s, y, w, name="scores"):
    """The preparation sums of validated rows, ``(iout, fout)`` (see ``_platt_kernels._prep_chunk``).

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
    iout, fout = _k.merge_blocks(np.array([p[0] for p in parts], dtype=np.int64),
                                 np.array([p[1] for p in parts], dtype=np.float64))
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
    runs :func:`fastcal._newton.solve`. Returns a :class:`PlattFit`.
    The weights of the passes may be rescaled by
    :func:`fastcal._validation.rescale_weights` (with ``weight_exponent``
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

    def sub():
        if subsample_rows is None or n < WARM_START_MIN:
            return None
        s, y, w = subsample_rows(subsample_fraction(n))
        total_sub = float(w.sum(dtype=np.float64)) if w is not None else float(s.shape[0])
        if not (s.shape[0] and total_sub > 0.0):
            return None
        return array_objective(s, y, w, center, scale, xmax, targets, total_sub)

    obj = PlattObjective(run_pass, n, center, scale, xmax, targets, total, sub)
    res = _newton.solve(obj, obj.to_internal(0.0, b0), tol, max_iter)
    a, b = obj.to_public(*res.theta)
    if res.converged and not (math.isfinite(a) and math.isfinite(b)):
        # The optimum exists in the solver's coordinates, but a = a' * scale does not fit in a float64.
        raise ValueError(
            f"scores: the fitted sigmoid's slope overflows float64 (scores span only "
            f"{key_to_float(hi_all) - key_to_float(lo_all):.3g}); multiply the scores by a constant first.")
    return PlattFit(a, b, res.n_iter, res.converged, res.decrement, res.n_passes)


def _fit_platt(s, y, w, max_iter, tol, warm_start=True):
    """Validated arrays in, a :class:`PlattFit` out."""
    w, e = rescale_weights(w)
    rows = (lambda fraction: subsample(s, y, w, fraction)) if warm_start else None
    return fit_passes(prepare(s, y, w), s.shape[0], w is not None, array_pass(s, y, w), rows, max_iter, tol, e)


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
    fit = _fit_platt(s, yv, w, max_iter, tol)
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
        fit = _fit_platt(s, yv, w, max_iter, tol)
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


# ---------------------------------------------------------------------------
# Calibration slope and intercept.
# ---------------------------------------------------------------------------


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


def slope_intercept_fit(y, p, sample_weight, *, strict=True):
    """:func:`calibration_slope_intercept`, and why the estimate does not exist (None if it does).

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
    with np.errstate(over="ignore"):
        w, exponent = rescale_weights(check_sample_weight(sample_weight, pv.shape[0]))
    x, prepared = logit_rows(yv, pv, w)
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


def slope_intercept_passes(prepared, n, weighted, exponent, run_pass, subsample_rows, *, strict=True):
    """:func:`slope_intercept_fit` of rows a caller can pass over: the fit of every backend.

    ``prepared`` is the merged :func:`logit_rows` of all ``n`` rows (weights
    rescaled by ``2**-exponent``), ``run_pass`` one pass of
    :func:`array_pass` over their logits, ``subsample_rows(fraction)`` about
    that share of the rows ``(x, y, w)`` for the warm start (see
    :func:`fit_passes`).
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

    def sub():
        if n < WARM_START_MIN:
            return None
        xs, ys, ws = subsample_rows(subsample_fraction(n))
        total_sub = float(ws.sum(dtype=np.float64)) if ws is not None else float(xs.shape[0])
        if not (xs.shape[0] and total_sub > 0.0):
            return None
        return array_objective(xs, ys, ws, center, scale, xmax, targets, total_sub)

    obj = PlattObjective(run_pass, n, center, scale, xmax, targets, total, sub)
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
    res = _newton.solve(obj, start, tol, max_iter)
    # Covariance of (a', b') is the inverse Hessian at the optimum; (beta, alpha)
    # = (-a, -b) = J (a', b') + const with J = [[-scale, 0], [scale*center, -1]].
    _, _, _, haa, hab, hbb = obj.stats(res.theta)
    det = haa * hbb - hab * hab
    cov = np.array([[hbb, -hab], [-hab, haa]]) / det if det > 0 else np.full((2, 2), np.nan)
    jac = np.array([[-scale, 0.0], [scale * center, -1.0]])
    cov = jac @ cov @ jac.T
    a_pub, b_pub = obj.to_public(*res.theta)
    slope, intercept = -a_pub, -b_pub
    # Frequency weights: the information is in the units of the caller's weights, 2**exponent times ours.
    slope_se, intercept_se = (math.ldexp(math.sqrt(v) * (math.sqrt(2.0) if exponent % 2 else 1.0), -exponent // 2)
                              for v in (cov[0, 0], cov[1, 1]))

    # Calibration in the large: a' stays at the start (beta = 1), only b' moves.
    citl = _newton.solve(obj, start, tol, max_iter, free=(1,))
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


def _limits(slope, citl, n_iter=0, converged=True):
    """The :class:`SlopeInterceptResult` of data where the estimate does not exist (see :func:`slope_intercept_fit`)."""
    nan = math.nan
    return SlopeInterceptResult(slope=float(slope), intercept=nan, slope_se=nan, intercept_se=nan, slope_ci=(nan, nan),
                                intercept_ci=(nan, nan), calibration_in_the_large=float(citl), n_iter=int(n_iter),
                                converged=bool(converged))
