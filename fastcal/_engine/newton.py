r"""Damped Newton's method for logistic models whose sums come from passes over data.

One driver serves every fit of a logistic model z = sum_j theta_j f_j(s):
Platt scaling and the calibration slope (two parameters), in memory, in
chunks of a file and on Dask partitions. The driver never sees the rows. It
asks an *objective* for sums, and the objective decides where they come from
(one fused kernel pass over arrays, a loop over file chunks, a round of Dask
tasks). The objective is the cross-entropy

.. math:: F(\theta) = \sum_i w_i \left[\log(1 + e^{z_i}) - (1 - t_i) z_i\right]

against targets :math:`t_i`, whose curvature along any direction changes by
at most a factor :math:`e^{M}` over a step that moves each :math:`z_i` by at
most :math:`M` (because :math:`|d \log(p(1-p)) / dz| \le 1`). That bound
certifies most steps without evaluating F (see :func:`minimize`).

The objective protocol
----------------------
An objective has:

``k``
    The number of parameters.
``total_weight``
    :math:`W = \sum_i w_i` (positive, finite).
``bounds``
    ``k`` floats with :math:`|f_j(s_i)| \le` ``bounds[j]`` over the rows of
    positive weight.
``stats(theta, want_loss)``
    The sums at ``theta`` (a tuple of ``k`` floats), as one flat sequence:
    F (0.0 unless ``want_loss``), the gradient (``k``), then the Hessian's
    upper triangle row by row (``k (k + 1) / 2``).
``subsample()``
    The same objective on a subsample of the rows (same targets and
    coordinates), or None. :func:`solve` starts from the subsample's optimum.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from . import _kernels

__all__ = ["NewtonResult", "direction", "hessian_index", "line_search_steps", "minimize", "minimize_steps",
           "run_together", "solve", "solve_spd", "solve_spd_many", "warm_start"]

#: Armijo's sufficient-decrease constant (as in libsvm).
ARMIJO = 1e-4
#: A step whose largest change of a linear predictor, max_i |dz_i|, is at most
#: this is certified to satisfy Armijo's condition (see :func:`minimize`).
SAFE_STEP = math.log(2.0 * (1.0 - ARMIJO))
#: Relative ridge added to the diagonal of the Hessian.
RIDGE = 1e-12


class NewtonResult(NamedTuple):
    """What :func:`minimize` and :func:`solve` return."""

    #: The parameters, in the objective's coordinates.
    theta: tuple
    #: Newton steps taken on this objective (a subsample's are not counted).
    n_iter: int
    #: Whether the stopping rule was met.
    converged: bool
    #: The Newton decrement per unit weight, g'H^-1 g / W, at the last point evaluated.
    decrement: float
    #: Passes over the data (calls of ``stats``) on this objective.
    n_passes: int


#: Systems of more free parameters than this are solved in machine code (:func:`fastcal._engine._kernels.cholesky_solve`,
#: the same operations): a Cholesky of m parameters is m^3 / 6 steps, seconds in Python from m of a few hundred.
_PYTHON_SOLVE = 3


@functools.cache
def _index_array(k):
    """:func:`hessian_index` as a read-only int64 array."""
    arr = np.asarray(hessian_index(k), dtype=np.int64)
    arr.setflags(write=False)
    return arr


@functools.cache
def hessian_index(k):
    """``index[i][j]``: the position of H[i][j] in the flat sums of a ``k``-parameter objective."""
    index = [[0] * k for _ in range(k)]
    pos = 1 + k
    for i in range(k):
        for j in range(i, k):
            index[i][j] = index[j][i] = pos
            pos += 1
    return index


def solve_spd(h, g):
    """-H^-1 g for a symmetric positive definite H (lists of floats), or None if H is not (numerically) so:
    :func:`solve_spd_many` of one system."""
    try:
        d, spd = solve_spd_many(h, g, math.sqrt, math.isfinite)
    except (ZeroDivisionError, ValueError):  # a zero or negative pivot (then H is not positive definite)
        return None
    return d if spd else None


def solve_spd_many(h, g, sqrt=np.sqrt, isfinite=np.isfinite):
    """``(d, spd)``: ``d = -H^-1 g`` (a list over the parameters) elementwise over systems whose entries ``h[i][j]``
    and ``g[i]`` are arrays (one entry per system; the caller holds ``np.errstate(all="ignore")``), or floats
    (with ``math.sqrt`` and ``math.isfinite``), and ``spd`` where H is (numerically) symmetric positive definite;
    elsewhere ``d`` is meaningless.

    Closed forms for one and two parameters (as libsvm's 2x2 inverse),
    Cholesky beyond; the same positivity tests either way, and the same
    operations for one system as for many, so that the batched fits keep
    each fit's own bits.
    """
    m = len(g)
    if m == 1:
        a = h[0][0]
        return [-g[0] / a], (a > 0.0) & isfinite(a)
    if m == 2:
        a, b, c = h[0][0], h[0][1], h[1][1]
        det = a * c - b * b
        spd = (a > 0.0) & (c > 0.0) & (det > 0.0) & isfinite(det)
        return [-(c * g[0] - b * g[1]) / det, -(a * g[1] - b * g[0]) / det], spd
    spd = True
    chol = [[0.0] * m for _ in range(m)]
    for i in range(m):
        row = chol[i]
        for j in range(i + 1):
            acc = h[i][j]
            other = chol[j]
            for q in range(j):
                acc = acc - row[q] * other[q]
            if i == j:
                spd = spd & (acc > 0.0) & isfinite(acc)
                row[i] = sqrt(acc)
            else:
                row[j] = acc / other[j]
    u = [0.0] * m
    for i in range(m):
        acc = -g[i]
        for q in range(i):
            acc = acc - chol[i][q] * u[q]
        u[i] = acc / chol[i][i]
    d = [0.0] * m
    for i in reversed(range(m)):
        acc = u[i]
        for q in range(i + 1, m):
            acc = acc - chol[q][i] * d[q]
        d[i] = acc / chol[i][i]
    return d, spd


def direction(objective, st, free):
    r"""The Newton direction over the parameters ``free`` (indices), and what the step rules need.

    Solves :math:`(H + \text{ridge}) d = -g` on the free parameters (the
    others stay fixed), with a relative ridge of :data:`RIDGE` on the
    diagonal, in closed form or by Cholesky. Where that system is not positive definite or not
    finite, a gradient step with the trace of H (or its global bound
    :math:`W/4 \sum_j b_j^2`) as step length. Returns ``(d, lam2, M)``:
    ``d`` a tuple over all ``k`` parameters, the Newton decrement
    :math:`\lambda^2 = -g^\top d` and :math:`M = \sum_j |d_j| b_j \ge \max_i |\Delta z_i|`.
    """
    k = objective.k
    if len(free) > _PYTHON_SOLVE:
        flat = np.asarray(st, dtype=np.float64)
        hf = flat[_index_array(k)[np.ix_(free, free)]]
        hf[np.diag_indices(len(free))] *= 1.0 + RIDGE
        gf = flat[1 + np.asarray(free)]
        out = np.empty(len(free))
        df = out.tolist() if _kernels.cholesky_solve(hf, gf, out) else None
        gf = gf.tolist()
        g = flat[1:1 + k].tolist()
        diagonal = flat[np.diagonal(_index_array(k))].tolist()
    else:
        st = [float(v) for v in st]  # Python floats: a zero pivot raises ZeroDivisionError, not a NumPy warning
        index = hessian_index(k)
        gf = [st[1 + i] for i in free]
        hf = [[st[index[i][j]] * (1.0 + RIDGE) if i == j else st[index[i][j]] for j in free] for i in free]
        df = solve_spd(hf, gf)
        g = st[1:1 + k]
        diagonal = [st[index[i][i]] for i in range(k)]
    if df is None:
        curv = sum(diagonal[i] for i in free)
        if not (curv > 0.0 and math.isfinite(curv)):
            curv = 0.25 * objective.total_weight * sum(objective.bounds[i] ** 2 for i in free)
        # a zero bound: the free parameters move no logit (constant features), so g = 0 and any value is optimal
        df = [-gi / curv if curv > 0.0 else 0.0 for gi in gf]
    d = [0.0] * k
    lam2 = 0.0
    M = 0.0
    for i, di in zip(free, df):
        d[i] = di
        lam2 -= g[i] * di
        M += abs(di) * objective.bounds[i]
    return tuple(d), lam2, M


def _along(theta, d, t):
    return tuple(p + t * q for p, q in zip(theta, d))


def _slope(st, d):
    """The directional derivative g'd from flat sums."""
    acc = 0.0
    for i, di in enumerate(d):
        acc += float(st[1 + i]) * di
    return acc


def _ask(passes, theta, want_loss=False):
    """Ask the driver for the sums at ``theta`` (one pass over the data, counted in ``passes[0]``)."""
    passes[0] += 1
    return (yield theta, want_loss)


def line_search_steps(passes, theta, d, lam2, M):
    r"""Backtracking from the full step until Armijo's condition holds (a generator: see :func:`minimize_steps`).

    Along :math:`\theta + t d` the second derivative of F is
    :math:`\varphi''(t) = \sum_i w_i p_i (1 - p_i) \Delta z_i^2`, and since
    :math:`|d \log(p (1 - p)) / dz| \le 1`, :math:`\varphi''(t) \le \varphi''(0) e^{t M}`.
    With :math:`\varphi'(0) = -\lambda^2` and :math:`\varphi''(0) \le \lambda^2` this gives
    :math:`F(\theta + t d) \le F(\theta) - t\lambda^2 + t^2 \lambda^2 e^{tM} / 2`, so Armijo's
    condition :math:`F(\theta + t d) \le F(\theta) - \sigma t \lambda^2` holds whenever
    :math:`t e^{tM} / 2 \le 1 - \sigma`: such steps are taken without evaluating F.
    Otherwise the trial point's gradient is tried first (by convexity
    :math:`F(\theta + t d) \le F(\theta) + t\, g(\theta + t d)^\top d`), and only then F itself.
    """
    f0 = None
    t = 1.0
    while True:
        trial = _along(theta, d, t)
        if t * M < 1.0 and 0.5 * t * math.exp(t * M) <= 1.0 - ARMIJO:
            return trial, (yield from _ask(passes, trial))
        st = yield from _ask(passes, trial, f0 is not None)
        if _slope(st, d) <= -ARMIJO * lam2:
            return trial, st
        if f0 is None:
            f0 = float((yield from _ask(passes, theta, True))[0])
            st = yield from _ask(passes, trial, True)
        if float(st[0]) <= f0 - ARMIJO * t * lam2:
            return trial, st
        t *= 0.5


def minimize_steps(objective, theta, tol, max_iter, free=None):
    r""":func:`minimize` as a generator, for fits that share passes over the data (:func:`run_together`): it yields
    each point ``(theta, want_loss)`` at which it needs ``objective.stats``, is sent the sums there, and returns
    its :class:`NewtonResult`. The same steps as :func:`minimize`, so the same bits for the same sums.
    """
    free = tuple(range(objective.k)) if free is None else tuple(free)
    passes = [0]
    W = objective.total_weight
    theta = tuple(float(v) for v in theta)
    st = yield from _ask(passes, theta)
    n_iter = 0
    while True:
        d, lam2, M = direction(objective, st, free)
        if not (math.isfinite(lam2) and math.isfinite(M)):
            return NewtonResult(theta, n_iter, False, lam2 / W, passes[0])
        if lam2 <= tol * W:
            decrement = lam2 / W
            if n_iter < max_iter and 0.0 < lam2 and M <= SAFE_STEP:
                theta = _along(theta, d, 1.0)
                n_iter += 1
            return NewtonResult(theta, n_iter, True, decrement, passes[0])
        if n_iter >= max_iter:
            return NewtonResult(theta, n_iter, False, lam2 / W, passes[0])
        theta, st = yield from line_search_steps(passes, theta, d, lam2, M)
        n_iter += 1


def run_together(steps, stats_many):
    """Drive the generators ``steps`` (of :func:`minimize_steps`, or generators that ``yield from`` one) in
    lockstep and return what each returns, in order: each round, one call of ``stats_many(requests)`` (a list of
    ``(theta, want_loss)``; it returns the sums at each) answers every unfinished one's pending request. Fits of
    the same rows thus share each pass over them: a backend whose pass costs more than its arithmetic (Spark,
    Dask) makes one pass where they would make one each. Each generator sees the same sums as alone."""
    results = [None] * len(steps)
    pending = {}
    for i, g in enumerate(steps):
        try:
            pending[i] = next(g)
        except StopIteration as stop:
            results[i] = stop.value
    while pending:
        order = list(pending)
        for i, st in zip(order, stats_many([pending[i] for i in order])):
            try:
                pending[i] = steps[i].send(st)
            except StopIteration as stop:
                results[i] = stop.value
                del pending[i]
    return results


def minimize(objective, theta, tol, max_iter, free=None):
    r"""Damped Newton from ``theta``; the parameters not in ``free`` (indices; default all) stay fixed.

    **Stopping rule.** Stop when the Newton decrement
    :math:`\lambda^2 = g^\top H^{-1} g` is at most ``tol`` times the total
    weight W, and then take that last step without another pass: it is
    certified to decrease F when :math:`M \le` :data:`SAFE_STEP` and, Newton
    converging quadratically, takes the error from about :math:`\sqrt{tol}`
    to about ``tol``. :math:`\lambda^2 / W` does not grow with the number of
    rows or the scale of the weights, and being affine invariant it does not
    depend on the scale or offset of the features (libsvm's absolute
    gradient rule stops being reachable once the gradient, a sum over
    millions of rows, is dominated by rounding).

    **Steps** are found by backtracking (:func:`line_search_steps`). Returns a :class:`NewtonResult`.
    """
    return run_together([minimize_steps(objective, theta, tol, max_iter, free)],
                        lambda requests: [objective.stats(*r) for r in requests])[0]


def warm_start(objective, theta, tol, max_iter, free=None):
    """The start of :func:`solve`: the optimum of ``objective.subsample()`` (solved the same way, recursively, to a
    tolerance matched to its sampling error, ``max(tol, 1e-3 / n_sub)``) when there is one and it converged to
    finite values, else ``theta``."""
    sub = objective.subsample()
    if sub is not None:
        res = solve(sub, theta, max(tol, 1e-3 / sub.n), max_iter, free)
        if res.converged and all(math.isfinite(v) for v in res.theta):
            return res.theta
    return theta


def solve(objective, theta, tol, max_iter, free=None):
    """:func:`minimize`, started from the optimum of ``objective.subsample()`` when there is one
    (:func:`warm_start`).

    Newton's method converges to the same unique optimum from any start; a start
    within sampling error of it needs about two passes over the full data
    instead of five or six.
    """
    return minimize(objective, warm_start(objective, theta, tol, max_iter, free), tol, max_iter, free)
