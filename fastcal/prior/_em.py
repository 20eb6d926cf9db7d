"""Unknown new priors: :func:`estimate_priors_em`, the EM of Saerens, Latinne & Decaestecker (2002), as summarise, merge and finish steps.

Summarise a chunk (:func:`em_summarise`, an :class:`EMSummary`) -> merge in order (:func:`em_merge`) -> finish
(:func:`em_finish`), iterated by :func:`iterate_em` (plain EM or SQUAREM); driven over arrays here and over any
:class:`fastcal._engine.Rows` by :mod:`fastcal.prior._rows`. The exactness rule: a summary is the fixed-chunk
reduction of :mod:`fastcal._engine.chunked` (bit-identical at any thread count); summaries merge in chunk order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from . import _kernels as _k
from .._engine.chunked import Partials, merge_exact, merge_in_order
from .._core.errors import warn_not_converged
from .._core.params import Boolean, Integer, Real, check
from .._core.results import Result
from .._core.validation import check_numeric
from ._inputs import SUM_TOL, TINY64, prior_vector, raise_bad_rows, raise_bad_values, result_dtype
from ._maps import binary_odds_factor, class_weights, run_binary, run_multi, sum_pairs

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


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
    return np.ascontiguousarray(arr, dtype=result_dtype(arr))


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
    (:mod:`fastcal._engine.chunked`): the binary sums and the log-likelihood
    exactly (:func:`fastcal._engine.chunked.merge_exact`), the (n, k) column sums in
    order. Returns an :class:`EMSummary`.
    """
    w = class_weights(pi, train)
    binary = src.ndim == 1
    if part is None:
        part = em_partials(src.shape[0], 2 if binary else src.shape[1], binary)
    want = True if want_ll else None
    if binary:
        bad_values = sum(part.run(_k.binary_em, src, w[0], w[1], check, want))
        bad_rows = 0
        sums = np.array([merge_exact(part.bufs[0])])
    else:
        bad_values, bad_rows = sum_pairs(part.run(_k.multi_em, src, w, SUM_TOL, check, want, work=src.size))
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
        raise_bad_values(name, summary.bad_values)
    if summary.bad_rows:
        raise_bad_rows(name, summary.bad_rows)
    n = summary.n
    if summary.sums.shape[0] == 1:
        pos = min(max(float(summary.sums[0]) / n, 0.0), 1.0)
        new = np.array([1.0 - pos, pos])
    else:
        new = summary.sums / n
        new /= new.sum()
    # The kernels scale the weights so that max(w) == 1: add the scale back, n log(max pi / train).
    scale = float(np.max(np.log(np.maximum(pi, TINY64)) - np.log(train)))
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


def warn_em_not_converged(max_iter, delta, tol, stacklevel=2):
    """The warning of an EM fit that stopped at ``max_iter`` passes with its last change ``delta`` > ``tol``;
    ``stacklevel`` is counted from the caller of this function (2: the line that called the fit)."""
    warn_not_converged("estimate_priors_em", max_iter, "EM iterations",
                       f"last change of the priors {delta:.3g} > tol={tol:g}", stacklevel=stacklevel + 1)


def check_em(train_priors, max_iter, tol, accelerate):
    """The parameters of :func:`estimate_priors_em`, checked: ``(max_iter, tol, accelerate, train)``, ``train``
    the training priors as a float64 vector summing to 1."""
    max_iter = check("max_iter", max_iter, [Integer(1)])
    tol = check("tol", tol, [Real(0, open_low=True)])
    accelerate = check("accelerate", accelerate, [Boolean()])
    return max_iter, tol, accelerate, prior_vector(train_priors, "train_priors")[0]


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
        run_binary(src, out, *binary_odds_factor(pi, train))
    else:
        run_multi(src, out, class_weights(pi, train))
    if not converged:
        warn_em_not_converged(max_iter, delta, tol)
    return PriorEMResult(priors=pi, proba=out, n_iter=n_iter, converged=converged)
