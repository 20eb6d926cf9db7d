"""Beta calibration's fits and estimator: the fit from any source of passes (every backend's), of validated arrays
and of many groups' rows at once, the estimator :class:`BetaCalibration` and the fitted estimators made from fits.

Over the model of :mod:`fastcal.beta._model` (the frame, the objective, the passes over rows in memory), on the
kernels of :mod:`fastcal.beta._kernels`.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Literal, NamedTuple, Self

import numpy as np

from .. import platt
from .._engine import newton as _newton
from . import _kernels as _k
from .._base import BaseCalibrator, check_is_fitted
from .._core.errors import ConvergenceWarning, warn_not_converged
from .._core.math_kernels import key_to_float
from .._core.parallel import parallel_for
from .._persist import register
from .._prediction import Logistic
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_finite,
    check_sample_weight,
    class_bytes,
    column_or_1d,
)
from ._model import (
    LOG2,
    PARAMETERS,
    BetaObjective,
    Frame,
    array_objective,
    array_pass,
    basis,
    check_model,
    constant_fit,
    make_frame,
    midpoint,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["BetaCalibration"]

# ---------------------------------------------------------------------------
# The fit, from any source of passes.
# ---------------------------------------------------------------------------


class BetaFit(NamedTuple):
    """What :func:`fit_passes` returns: the parameters and how the solver got there."""

    a: float
    b: float
    c: float
    m: float
    n_iter: int
    converged: bool
    #: Newton decrement per unit weight at the last point evaluated.
    decrement: float
    #: Passes over the full data.
    n_passes: int
    #: Whether p separates the classes (the maximum-likelihood fit does not exist; ``converged`` is then False).
    separated: bool = False


def fit_passes(prepared, n, weighted, run_pass, subsample_rows, model, eps, max_iter, tol):
    """Beta calibration of rows that a caller can pass over: the fit of every backend.

    ``prepared`` is the merged :func:`fastcal.platt.prepare` of all ``n`` rows
    (probabilities in the place of scores, weights rescaled as the passes
    see them: the fit is invariant to the weight scale, and every backend
    rescales the weights by one power of two, see
    :func:`fastcal._core.validation.rescale_weights` and
    :func:`fastcal.platt.merge_prepared`), ``run_pass`` one pass over them
    (see :class:`BetaObjective`), ``eps`` the clipping threshold (the machine
    epsilon of the probabilities' dtype), and ``subsample_rows(fraction)``
    returns about that share of the rows in memory as ``(p, y, w)``; it is
    called only for a warm start, or it is None. Checks the range of p and
    the classes, handles constant p, runs :func:`fastcal._engine.newton.solve`, and for
    "abm" refits with a term dropped when a or b is negative (as ``betacal``).
    Returns a :class:`BetaFit`.
    """
    iout, (wpos, wneg) = prepared
    npos, lo, hi, lo_all, hi_all = (int(v) for v in iout[2:7])
    lo_all, hi_all = key_to_float(lo_all), key_to_float(hi_all)
    if lo_all < 0.0 or hi_all > 1.0:
        raise ValueError("p must contain probabilities in [0, 1].")
    if not weighted:
        wpos, wneg = float(npos), float(n - npos)
    total = platt.check_total_weight(float(wpos), float(wneg))
    if wpos == 0.0 or wneg == 0.0:
        raise ValueError("y must contain both classes (with positive weight): with one class the "
                         "maximum-likelihood beta calibration does not exist.")
    p_lo, p_hi = (min(max(key_to_float(k), eps), 1.0 - eps) for k in (lo, hi))
    if p_lo == p_hi:
        a, b, c = constant_fit(model, p_lo, eps, float(wpos), float(wneg))
        return BetaFit(a, b, c, midpoint(model, a, b, c), 0, True, 0.0, 0)

    frame = make_frame(model, lo_all, hi_all, eps)

    sub = platt.warm_start(subsample_rows, n,
                           lambda ps, ys, ws, total_sub: array_objective(ps, ys, ws, model, frame, total_sub))
    obj = BetaObjective(run_pass, n, model, frame, total, sub)
    start = obj.to_internal(0.0, 0.0, math.log(wpos / wneg) if model != "ab" else 0.0)
    res = _newton.solve(obj, start, tol, max_iter)
    n_iter, n_passes = res.n_iter, res.n_passes
    a, b, c = obj.to_public(res.theta)
    if model == "abm" and (a < 0.0 or b < 0.0):
        # betacal: a < 0 drops the log p term, else b < 0 drops the log(1 - p) term; one refit, no further check.
        drop = 0 if a < 0.0 else 1
        # From the unconstrained optimum; if there is none (p separates the classes, e.g. the positives in the
        # middle of its range) the parameters ran off to infinity: from the start point instead.
        theta = list(res.theta if res.converged and obj.wrong > 0.0 else start)
        theta[drop] = 0.0
        res = _newton.solve(obj, tuple(theta), tol, max_iter, free=(1 - drop, 2))
        n_iter, n_passes = n_iter + res.n_iter, n_passes + res.n_passes
        a, b, c = obj.to_public(res.theta)
        a, b = (0.0, b) if drop == 0 else (a, 0.0)
    if not all(math.isfinite(v) for v in (a, b, c)):
        raise ValueError("p: the fitted beta calibration's parameters overflow float64.")
    # The last point evaluated classifies every row of positive weight strictly right: so does any multiple of
    # it, whose loss falls to 0 as the multiple grows. The optimum does not exist; the solver stopped where the
    # loss is flat to tol (or at max_iter).
    separated = obj.wrong == 0.0
    return BetaFit(a, b, c, midpoint(model, a, b, c), n_iter, bool(res.converged) and not separated, res.decrement,
                   n_passes, separated)


def warn_if_not_converged(fit, max_iter, tol, stacklevel=2):
    """The ConvergenceWarning of a beta fit that stopped at ``max_iter``, or whose optimum does not exist (p
    separates the classes); ``stacklevel`` from the caller."""
    if fit.separated:
        warnings.warn("Beta calibration: p separates the classes of y, so the maximum-likelihood fit does not exist "
                      "(its parameters grow without bound); the fit returned stopped where the loss is flat to "
                      f"tol={tol:g} or at max_iter={max_iter}, predicts almost 0 and 1, and has converged_=False.",
                      ConvergenceWarning, stacklevel=stacklevel + 1)
    elif not fit.converged:
        warn_not_converged("Beta calibration", max_iter, "Newton iterations",
                           f"Newton decrement per unit weight {fit.decrement:.3g} > tol={tol:g}",
                           stacklevel=stacklevel + 1)


def _check_arrays(p, y, sample_weight):
    p = as_float_array(column_or_1d(p, "p"), "p")
    y = as_label_array(column_or_1d(y, "y"), "y")
    check_consistent_length(p=p, y=y)
    with np.errstate(over="ignore"):  # the sum of huge weights may overflow; the rescaled ones do not
        w = check_sample_weight(sample_weight, p.shape[0], rescale=True)
    return p, y, w


def _fit_beta(p, y, w, model, max_iter, tol):
    """Validated arrays in, a :class:`BetaFit` out."""
    eps = float(np.finfo(p.dtype).eps)
    prepared = platt.prepare(p, y, w, name="p")
    y = class_bytes(y)  # the passes' labels, converted once
    return fit_passes(prepared, p.shape[0], w is not None, array_pass(p, y, w),
                      lambda fraction: platt.subsample(p, y, w, fraction), model, eps, max_iter, tol)


def fit_arrays(p, y, w, model, max_iter, tol):
    """Beta calibration of validated arrays (probabilities ``p``, labels ``y``, weights ``w`` or None; ``model``
    of :func:`check_model`, ``max_iter`` and ``tol`` checked): the :class:`BetaFit` that
    :meth:`BetaCalibration.fit` makes after its checks. For callers that check many fits' rows at once
    (:class:`fastcal.GroupedCalibrator`)."""
    return _fit_beta(p, y, w, model, max_iter, tol)


def fit_groups(p, y, w, lo, hi, model, max_iter, tol):
    """Beta calibration of the rows ``lo[f]:hi[f]`` of ``p``, ``y``, ``w`` for each fit ``f``, as
    :func:`fit_arrays` fits them alone, all at once (for :class:`fastcal.GroupedCalibrator`).

    ``p``, ``y``: validated rows; ``w``: None, or the weights, each fit's rows rescaled as its fit's check
    rescales them. The Newton iterations of every fit run in lockstep, one pass over all rows per iteration
    (:func:`fastcal.platt.minimize_lockstep`, :func:`fastcal.beta._kernels.beta_blocks`), with the bits of
    each fit's own. Only "abm" fits on the driver's common path are done here: where ``done`` (the last of
    the returned ``(a, b, c, m, n_iter, done)``) is False, the fit is left to :func:`fit_arrays` (one class,
    constant p, a warm start, a refit with a term dropped, separated classes, another path of the driver).
    """
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    n_fits = lo.size
    done = np.zeros(n_fits, dtype=bool)
    nothing = np.zeros(n_fits)
    if model != "abm" or not n_fits:
        return nothing, nothing, nothing, nothing, np.zeros(n_fits, dtype=np.int64), done
    blocks = platt.Blocks(lo, hi)
    npos, p_lo, p_hi, lo_all, hi_all, wpos, wneg = blocks.prepare(p, y, w)
    y = class_bytes(y)  # the passes' labels
    if w is None:
        wpos, wneg = npos.astype(np.float64), (blocks.size - npos).astype(np.float64)
    eps = float(np.finfo(p.dtype).eps)
    with np.errstate(over="ignore", invalid="ignore"):
        total = wpos + wneg
    clip = [np.minimum(np.maximum(v, eps), 1.0 - eps) for v in (p_lo, p_hi)]
    done = (np.isfinite(total) & (wpos > 0.0) & (wneg > 0.0) & (lo_all >= 0.0) & (hi_all <= 1.0)
            & (clip[0] != clip[1]) & (blocks.size < platt.WARM_START_MIN))
    # The frame and the start of each fit (fit_passes, BetaObjective.to_internal), as its own fit makes them.
    frames = np.ones((n_fits, len(Frame._fields) - 1))
    starts = np.zeros(n_fits)
    idx = np.flatnonzero(done)
    fitted_frames = np.empty((idx.size, frames.shape[1]))
    _k.beta_frames(lo_all[idx], hi_all[idx], eps, model == "ab", LOG2, fitted_frames)
    frames[idx] = fitted_frames
    starts[idx] = [math.log(v) for v in (wpos[idx] / wneg[idx]).tolist()]
    c1, s1, c2, s2, xmax1, xmax2 = frames.T
    theta = np.stack([0.0 / s1, 0.0 / s2, (starts + 0.0 * c1) + 0.0 * c2], axis=1)
    T = basis(model, None)
    bounds = np.stack([((0.0 + abs(T[0][m]) * xmax1) + abs(T[1][m]) * xmax2) + abs(T[2][m]) * 1.0
                       for m in range(3)], axis=1)

    def kernel_theta(th):  # BetaObjective.kernel_theta, on arrays of fits
        return [((0.0 + row[0] * th[:, 0]) + row[1] * th[:, 1]) + row[2] * th[:, 2] for row in T]

    st = np.zeros((n_fits, _k.N_BETA_STATS))
    buf = np.zeros((blocks.n, _k.N_BETA_STATS))

    def run_pass(trial, which):
        t1, t2, t3 = kernel_theta(trial)
        parallel_for(_k.beta_blocks, blocks.n, p, y, w, blocks.block_lo, blocks.block_hi, blocks.block_fit, which,
                     eps, 1.0 - eps, c1, s1, c2, s2, t1, t2, t3, buf, rows=blocks.rows)
        st[which] = blocks.merge(buf, which)
        return st

    n_iter = platt.minimize_lockstep(run_pass, theta, bounds, total, done.copy(), done, max_iter, tol)
    t1, t2, t3 = kernel_theta(theta)
    with np.errstate(all="ignore"):
        a, b = t1 * s1, t2 * s2
        c = (t3 - a * c1) - b * c2
    # Left to the own fit: betacal's refit with a term dropped, separated classes (the warning), overflow.
    done &= (a >= 0.0) & (b >= 0.0) & (st[:, _k.BETA_WRONG] != 0.0) & np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    m = np.full(n_fits, 0.5)
    ok = np.flatnonzero(done)
    out = np.empty(ok.size)
    parallel_for(_k.beta_midpoints, ok.size, a[ok], b[ok], c[ok], out, rows=130 * ok.size)  # 130 exp, log1p each
    m[ok] = out
    return a, b, c, m, n_iter, done


def fitted_estimators(a, b, c, m, n_iter, parameters, max_iter, tol):
    """Fitted :class:`BetaCalibration` models (parameters ``parameters``, ``max_iter``, ``tol``) of converged fits:
    what :func:`fitted_estimator` makes of each (``a[f]``, ``b[f]``, ``c[f]``, ``m[f]``, ``n_iter[f]``)."""
    params = BetaCalibration(parameters=parameters, max_iter=max_iter, tol=tol).__dict__
    models = []
    for fit in zip(a.tolist(), b.tolist(), c.tolist(), m.tolist(), n_iter.tolist()):
        est = BetaCalibration.__new__(BetaCalibration)
        est.__dict__.update(params, **dict(zip(("a_", "b_", "c_", "m_", "n_iter_"), fit)), converged_=True)
        models.append(est)
    return models


def _set_fitted(est, fit):
    est.a_, est.b_, est.c_, est.m_ = float(fit.a), float(fit.b), float(fit.c), float(fit.m)
    est.n_iter_, est.converged_ = int(fit.n_iter), bool(fit.converged)
    return est


def fitted_estimator(fit, parameters, max_iter, tol, stacklevel=2):
    """A fitted :class:`BetaCalibration` from a :class:`BetaFit`, warning if it did not converge;
    ``stacklevel`` from the caller."""
    warn_if_not_converged(fit, max_iter, platt.check_tol(tol), stacklevel + 1)
    return _set_fitted(BetaCalibration(parameters=parameters, max_iter=max_iter, tol=tol), fit)


@register
class BetaCalibration(BaseCalibrator):
    r"""Beta calibration: ``logit q = a log p - b log(1 - p) + c``.

    A fast, exact counterpart of ``betacal.BetaCalibration`` (Kull, Silva Filho
    & Flach 2017), for probabilities ``p`` of the positive class.

    Parameters
    ----------
    parameters : {"abm", "ab", "am"}, default "abm"
        Which parameters are fitted, as in ``betacal``: "abm" a, b and c;
        "ab" a and b with the midpoint fixed at m = 1/2, i.e.
        c = (a - b) log 2; "am" a = b and c, i.e. logistic regression on
        logit p.
    max_iter : int, default 100
        Maximum number of Newton iterations over the full data (per fit).
    tol : float or None, default None
        Stopping tolerance on the Newton decrement per unit weight
        (``None``: 1e-10), as in :class:`fastcal.PlattScaling`.

    Attributes
    ----------
    a_, b_, c_ : float
        The fitted parameters (for "am", ``b_ == a_``; for "ab",
        ``c_ == (a_ - b_) log 2``).
    m_ : float
        The midpoint as ``betacal`` reports it: the probability that is
        mapped to 1/2 (see Notes).
    n_iter_ : int
        Newton iterations over the full data (both fits where "abm" refits).
    converged_ : bool
        Whether the stopping rule was met at an optimum: False (with a
        ``ConvergenceWarning``) at ``max_iter``, and when p separates the
        classes (no optimum exists, see Notes).

    Notes
    -----
    **Objective.** The weighted cross-entropy
    :math:`\sum_i w_i [\log(1 + e^{\eta_i}) - y_i \eta_i]`,
    :math:`\eta_i = a \log p'_i - b \log(1 - p'_i) + c`, with p clipped to
    :math:`p' \in [\epsilon, 1 - \epsilon]`, :math:`\epsilon` the machine
    epsilon of p's dtype, as ``betacal`` clips (float32 p are read as they
    are; the logarithms and sums are computed in float64). ``betacal`` fits
    the same objective with scikit-learn's ``LogisticRegression`` (L-BFGS,
    ``C = 1e11``); fastcal minimises it with the Newton driver of
    :func:`fastcal.platt_scaling` (3x3 Cholesky solve, certified Armijo
    steps, the same stopping rule, a warm start from a subsample from 2**18
    rows on), one fused parallel pass per iteration, the same bits on any
    number of threads.

    **The constraints a, b >= 0** ("abm") are handled as ``betacal`` does: if
    the unconstrained optimum has a < 0, the model is refitted without the
    log p term (a = 0); else if b < 0, without the log(1 - p) term (b = 0).
    The refit's remaining coefficient is not checked again (as in
    ``betacal``). "ab" and "am" are not constrained (as in ``betacal``).

    **Midpoint.** "ab": 1/2. "am": :math:`1 / (1 + e^{c/a})`. "abm": the
    root of :math:`a \log m - b \log(1 - m) + c = 0` in (0, 1), or, where a
    term was dropped and there is none, the end of [0, 1] nearest to one
    (``betacal`` searches [0, 1] for the smallest absolute value); 1/2 when
    a = b = 0.

    **Degenerate input.** Only one class (by weight): ``ValueError`` (the
    maximum-likelihood c is infinite; ``betacal`` fails there too). p constant
    over the rows of positive weight (after clipping): a and b are not
    identified; the fit is a = b = 0 and c = log(W+ / W-) (for "ab", the
    minimum-norm (a, b) that gives that probability). p separating the
    classes (the model classifies every row right at the point where the
    solver stops, e.g. all positives above all negatives): the
    maximum-likelihood fit does not exist, as for logistic regression; the
    fit stops where its loss is flat to ``tol`` (parameters that depend on
    ``tol``, predictions near 0 and 1), and says so: ``converged_`` False
    and a ``ConvergenceWarning``. (Platt scaling has no such case: its
    smoothed targets keep its optimum finite.)

    References
    ----------
    Kull, M., Silva Filho, T. M. and Flach, P. (2017). Beta calibration: a
    well-founded and easily implemented improvement on logistic calibration
    for binary classifiers. AISTATS 2017, PMLR 54.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import BetaCalibration
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(100_000)
    >>> y = rng.random(p.size) < p  # p is calibrated: beta recovers the identity map
    >>> cal = BetaCalibration().fit(p, y)
    >>> round(cal.a_, 1), round(cal.b_, 1), abs(round(cal.c_, 1)), round(cal.m_, 1)
    (1.0, 1.0, 0.0, 0.5)
    >>> cal.predict([0.1, 0.5, 0.9]).round(1)
    array([0.1, 0.5, 0.9])
    """

    a_: float
    b_: float
    c_: float
    m_: float
    n_iter_: int
    converged_: bool

    _one_d_input = True  # 1-D probabilities in, as IsotonicRegression
    _state_schema = {"a_": "float", "b_": "float", "c_": "float", "m_": "float", "n_iter_": "int",
                     "converged_": "bool"}
    _parameter_constraints = PARAMETERS

    def __init__(self, parameters: Literal["abm", "ab", "am"] = "abm", max_iter: int = 100,
                 tol: float | None = None) -> None:
        self.parameters = parameters
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, p: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit ``a_``, ``b_``, ``c_`` (and ``m_``) to probabilities ``p`` and binary labels ``y``; returns ``self``."""
        model = check_model(self.parameters)
        max_iter, tol = platt.check_max_iter(self.max_iter), platt.check_tol(self.tol)
        pv, yv, w = _check_arrays(p, y, sample_weight)
        fit = _fit_beta(pv, yv, w, model, max_iter, tol)
        warn_if_not_converged(fit, max_iter, tol)
        return _set_fitted(self, fit)

    def predict(self, p: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities, in the dtype of ``p`` (float32 stays float32; anything else gives float64)."""
        check_is_fitted(self, "a_")
        pv = as_float_array(column_or_1d(p, "p", min_size=0), "p")
        eps = float(np.finfo(pv.dtype).eps)
        out = np.empty(pv.shape[0], dtype=pv.dtype)
        bad = sum(parallel_for(_k.beta_predict, pv.shape[0], pv, eps, 1.0 - eps, self.a_, self.b_, self.c_, out))
        if bad:
            check_finite(pv, "p")
            raise ValueError("p must contain probabilities in [0, 1].")
        return out

    def prediction_data(self) -> Logistic:
        """What :meth:`predict` computes, as data (:class:`fastcal._prediction.Logistic`): ``a log p' - b log(1 - p')
        + c`` as ``a log p' + (-b) log(1 - p') + c`` (the same float64 operations: ``x - y`` is ``x + (-y)``);
        for backends that compute the prediction elsewhere (``fastcal.spark.predict``)."""
        check_is_fitted(self, "a_")
        return Logistic((float(self.a_), -float(self.b_)), float(self.c_), ("log_p", "log_1mp"), "probability")

    def _check_loaded_state(self):
        super()._check_loaded_state()
        model = check_model(self.parameters)
        if not 0.0 <= self.m_ <= 1.0:
            raise ValueError(f"invalid fastcal model: m_ = {self.m_!r} is not in [0, 1]")
        if model == "am" and self.a_ != self.b_:
            raise ValueError("invalid fastcal model: a 'am' beta calibration has a_ == b_")
        if model == "ab" and (self.m_ != 0.5 or abs(self.c_ - (self.a_ - self.b_) * LOG2)
                              > 1e-12 * (abs(self.a_) + abs(self.b_) + abs(self.c_))):
            raise ValueError("invalid fastcal model: a 'ab' beta calibration has m_ == 0.5 and c_ == (a_ - b_) log 2")
        if model == "abm" and (self.a_ < 0.0 and self.b_ != 0.0 or self.b_ < 0.0 and self.a_ != 0.0):
            raise ValueError("invalid fastcal model: a 'abm' beta calibration has a_, b_ >= 0 unless one is 0")
        if self.n_iter_ < 0:
            raise ValueError("invalid fastcal model: n_iter_ is negative")
