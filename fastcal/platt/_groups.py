r"""Platt scaling of many groups of rows at once, each group's fit the one :func:`fit_arrays` makes on its rows.

:func:`fit_groups` runs the Newton iterations of :func:`fastcal._engine.newton.minimize` for every group in lockstep:
one parallel pass over the rows per iteration
(:func:`fastcal.platt._kernels.newton_blocks`) gives every unconverged group's sums, each group's in its own
fit's chunks and merge order, and each group stops by its own rule (:math:`\lambda^2 \le tol\, W`). The
per-group steps are the driver's arithmetic, operation for operation, on arrays of groups (IEEE operations,
``math.exp`` and ``math.log`` where the driver calls them), so each group's ``(a, b, n_iter)`` has the bits of
its own fit. Only the driver's common path is run here: a group whose fit leaves it (a Hessian that is not
positive definite, a step that fails the gradient test of the line search, ``max_iter`` reached, a warm start
from :data:`WARM_START_MIN` rows on, degenerate weights) is reported as not done, for its caller to fit it
by :func:`fit_arrays`.
"""

from __future__ import annotations

import math

import numpy as np

from .._engine import newton as _newton
from . import _kernels as _k
from .._core.math_kernels import key_to_float
from .._core.parallel import parallel_for
from .._core.validation import class_bytes
from ._model import WARM_START_MIN, center_and_scale
from ._scaling import PlattScaling, platt_targets

def _merge_blocks(buf, first, count):
    """Each fit's rows of ``buf`` (blocks ``first[f] .. first[f] + count[f] - 1``) added in block order from the
    first, then +0.0: :func:`fastcal._engine.chunked.merge_in_order` of each fit's chunks."""
    out = buf[first].astype(np.float64)
    for k in range(1, int(count.max(initial=1))):
        more = np.flatnonzero(count > k)
        out[more] += buf[first[more] + k]
    return out + 0.0


def fit_groups(s, y, w, lo, hi, exponent, max_iter, tol):
    r"""Platt scaling of the rows ``lo[f]:hi[f]`` of ``s``, ``y``, ``w`` for each fit ``f``, as :func:`fit_arrays`
    fits them alone.

    ``s``, ``y``: validated rows (finite scores, 0/1 labels); ``w``: None, or the weights, each fit's rows
    already rescaled by its own power of two ``2**-exponent[f]`` (:func:`fastcal._core.validation.rescale_weights`,
    which each fit applies first; ``exponent`` None without weights); ``max_iter`` and ``tol`` checked.

    Returns ``(a, b, n_iter, done)``, arrays over the fits. Where ``done`` is False the fit is left to
    :func:`fit_arrays` (it takes a path of :func:`fastcal._engine.newton.minimize` not run here, or it raises or
    warns) and ``a``, ``b``, ``n_iter`` are meaningless; a done fit converged.
    """
    lo, hi = np.asarray(lo, dtype=np.int64), np.asarray(hi, dtype=np.int64)
    if not lo.size:
        return np.empty(0), np.empty(0), np.empty(0, dtype=np.int64), np.empty(0, dtype=bool)
    return _fit(s, y, w, lo, hi, None if exponent is None else np.asarray(exponent, dtype=np.int64), max_iter, tol)


class Blocks:
    """The fits' rows ``lo[f]:hi[f]`` cut into their own fits' chunks (``CHUNK`` rows from each fit's first row,
    :mod:`fastcal._engine.chunked`): block ``j`` holds rows ``block_lo[j]:block_hi[j]`` of fit ``block_fit[j]``; fit
    ``f`` has the blocks ``first[f] .. first[f] + count[f] - 1``."""

    def __init__(self, lo, hi):
        self.size = hi - lo
        self.count = np.maximum(1, -(-self.size // _k.CHUNK))  # fastcal._core.parallel.n_chunks of each fit
        self.first = np.zeros(lo.size, dtype=np.int64)
        np.cumsum(self.count[:-1], out=self.first[1:])
        self.block_fit = np.repeat(np.arange(lo.size, dtype=np.int64), self.count)
        self.block_lo = lo[self.block_fit] + (np.arange(self.block_fit.size) - self.first[self.block_fit]) * _k.CHUNK
        self.block_hi = np.minimum(self.block_lo + _k.CHUNK, hi[self.block_fit])
        self.n, self.rows = self.block_fit.size, int(self.size.sum())

    def merge(self, buf, which=None):
        """The rows of ``buf`` (one per block) merged per fit in block order (of the fits ``which``, a mask)."""
        if which is None:
            return _merge_blocks(buf, self.first, self.count)
        idx = np.flatnonzero(which)
        return _merge_blocks(buf, self.first[idx], self.count[idx])

    def prepare(self, s, y, w):
        """Each fit's merged :func:`fastcal.platt.prepare` as arrays: ``(npos, lo, hi, lo_all, hi_all, wpos, wneg)``
        (the score ranges as floats, over the rows of positive weight and over all rows; the class weights from
        ``w``, zeros without weights)."""
        ibuf = np.empty((self.n, _k.N_PREP_INT), dtype=np.int64)
        fbuf = np.zeros((self.n, _k.N_PREP_FLOAT), dtype=np.float64)
        parallel_for(_k.prep_blocks, self.n, s, y, w, self.block_lo, self.block_hi, ibuf, fbuf, rows=self.rows)
        first = self.first
        npos = np.add.reduceat(ibuf[:, 2], first)
        lo, hi, lo_all, hi_all = (key_to_float(f.reduceat(ibuf[:, c], first)) for f, c in (
            (np.minimum, 3), (np.maximum, 4), (np.minimum, 5), (np.maximum, 6)))
        wpos, wneg = self.merge(fbuf).T
        return npos, lo, hi, lo_all, hi_all, wpos, wneg


def _fit(s, y, w, lo, hi, exponent, max_iter, tol):
    n_fits = lo.size
    blocks = Blocks(lo, hi)
    size = blocks.size

    # fit_passes: the preparation sums, the class weights, Platt's targets and start (starting_point, with
    # math.log as there).
    npos, p_lo, p_hi, lo_all, hi_all, wpos, wneg = blocks.prepare(s, y, w)
    y = class_bytes(y)  # the passes' labels
    constant = p_lo == p_hi
    if w is None:
        wpos, wneg = npos.astype(np.float64), (size - npos).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        total = wpos + wneg
        if exponent is not None:
            wpos, wneg = np.ldexp(wpos, exponent), np.ldexp(wneg, exponent)
        done = np.isfinite(total) & np.isfinite(wpos + wneg) & (size < WARM_START_MIN) & (total > 0.0)
        tpos, tnpos, tneg, tnneg = platt_targets(wpos, wneg)
        b0 = np.array([math.log(v) if v > 0.0 else math.nan for v in ((wneg + 1.0) / (wpos + 1.0)).tolist()])
    a, b = np.zeros(n_fits), b0.copy()  # one class: a = 0 and b0
    one_class = done & ((wpos == 0.0) | (wneg == 0.0))
    flat = done & ~one_class & constant  # constant scores: a = 0, p the weighted mean target (starting_point)
    for f in np.flatnonzero(flat).tolist():
        mean_t = wpos[f] * tpos[f] + wneg[f] * tneg[f]
        mean_1mt = wpos[f] * tnpos[f] + wneg[f] * tnneg[f]
        b[f] = math.log(float(mean_1mt) / float(mean_t))
    active = done & ~one_class & ~flat

    # center_and_scale of each fit's score range, then Newton from to_internal(0, b0).
    center, scale, xmax = center_and_scale(lo_all, hi_all)
    theta = np.stack([a, b], axis=1)
    theta[active, 0] = 0.0 / scale[active]
    theta[active, 1] = b0[active] + 0.0 * center[active]
    st = np.zeros((n_fits, _k.N_STATS))
    buf = np.zeros((blocks.n, _k.N_STATS))

    def run_pass(trial, which):
        parallel_for(_k.newton_blocks, blocks.n, s, y, w, blocks.block_lo, blocks.block_hi, blocks.block_fit, which,
                     center, scale, trial[:, 0], trial[:, 1], tpos, tnpos, tneg, tnneg, buf, rows=blocks.rows)
        st[which] = blocks.merge(buf, which)
        return st

    n_iter = minimize_lockstep(run_pass, theta, np.stack([xmax, np.ones(n_fits)], axis=1), total, active, done,
                               max_iter, tol)
    a, b = theta[:, 0], theta[:, 1]

    # to_public, and the fit's check that the slope fits in a float64.
    solved = one_class | flat  # the start point or the closed form, in the public coordinates already
    with np.errstate(all="ignore"):
        a_pub = np.where(solved, a, a * scale)
        b_pub = np.where(solved, b, b - a_pub * center)
    done &= np.isfinite(a_pub) & np.isfinite(b_pub)
    return a_pub, b_pub, n_iter, done


def _direction(st, k, bounds):
    r""":func:`fastcal._engine.newton.direction` of each row of sums ``st`` (flat, as an objective's ``stats``) over all
    ``k`` parameters, with ``bounds`` (a row per fit), operation for operation on arrays of fits: the
    ridged Hessian's closed-form 2x2 solve or Cholesky factorisation (:func:`fastcal._engine.newton.solve_spd_many`).
    Returns ``(d, lam2, M, spd)``: ``spd`` False where the driver takes a gradient step instead."""
    index = _newton.hessian_index(k)
    ridge = 1.0 + _newton.RIDGE
    g = [st[:, 1 + i] for i in range(k)]
    h = [[st[:, index[i][j]] * ridge if i == j else st[:, index[i][j]] for j in range(k)] for i in range(k)]
    with np.errstate(all="ignore"):
        d, spd = _newton.solve_spd_many(h, g)
        lam2, M = 0.0, 0.0
        for i in range(k):
            lam2 = lam2 - g[i] * d[i]
            M = M + np.abs(d[i]) * bounds[:, i]
    return np.stack(d, axis=1), lam2, M, spd


def minimize_lockstep(run_pass, theta, bounds, total, active, done, max_iter, tol):
    r""":func:`fastcal._engine.newton.minimize` of many fits at once, each on its own: the driver's common path.

    ``theta`` (fits x k) holds the start points and receives the solutions; ``bounds`` (fits x k) are the
    objectives' ``bounds``, ``total`` their total weights; ``run_pass(trial, which)`` returns the sums
    (fits x :func:`stats` width) of the fits ``which`` at ``trial`` (the others' rows are not read), without
    the objective. The fits ``active`` iterate; each stops by its own rule (:math:`\lambda^2 \le tol\, W`,
    then the certified last step). A fit that leaves the common path (a gradient step, non-finite sums,
    ``max_iter``, a line search that backtracks) gets ``done[f] = False``, for its caller to fit it by its own
    driver. ``active`` is cleared. Returns each fit's Newton steps. The steps' arithmetic is the driver's,
    operation for operation (``math.exp`` where it calls it), so each done fit has its own fit's bits.
    """
    k = theta.shape[1]
    n_iter = np.zeros(theta.shape[0], dtype=np.int64)
    st = run_pass(theta, active)
    armijo = _newton.ARMIJO
    iteration = 0
    while active.any():
        idx = np.flatnonzero(active)
        d, lam2, M, spd = _direction(st[idx], k, bounds[idx])
        ok = spd & np.isfinite(lam2) & np.isfinite(M)
        stop = ok & (lam2 <= tol * total[idx])
        last = stop & (iteration < max_iter) & (0.0 < lam2) & (M <= _newton.SAFE_STEP)
        theta[idx[last]] += 1.0 * d[last]
        n_iter[idx] = iteration + last
        step = ok & ~stop & (iteration < max_iter)
        done[idx[~(stop | step)]] = False  # a gradient step, not finite, or max_iter: the fit's own path
        active[idx[~step]] = False
        if not step.any():
            break
        idx, d, lam2, M = idx[step], d[step], lam2[step], M[step]
        trial = theta.copy()
        trial[idx] = theta[idx] + 1.0 * d
        certified = np.array([m < 1.0 and 0.5 * 1.0 * math.exp(m) <= 1.0 - armijo for m in M.tolist()], dtype=bool)
        st = run_pass(trial, active)
        slope = 0.0
        for i in range(k):
            slope = slope + st[idx, 1 + i] * d[:, i]
        accepted = certified | (slope <= -armijo * lam2)
        done[idx[~accepted]] = False  # the line search backtracks: the fit's own path
        active[idx[~accepted]] = False
        theta[idx] = trial[idx]
        iteration += 1
    return n_iter


def fitted_estimators(a, b, n_iter, max_iter, tol):
    """Fitted :class:`PlattScaling` models (parameters ``max_iter``, ``tol``) of converged fits with parameters
    ``a[f]``, ``b[f]`` and ``n_iter[f]`` iterations: what :func:`fitted_estimator` makes of each."""
    params = PlattScaling(max_iter=max_iter, tol=tol).__dict__
    models = []
    for af, bf, nf in zip(a.tolist(), b.tolist(), n_iter.tolist()):
        est = PlattScaling.__new__(PlattScaling)
        est.__dict__.update(params, a_=af, b_=bf, n_iter_=nf, converged_=True)
        models.append(est)
    return models
