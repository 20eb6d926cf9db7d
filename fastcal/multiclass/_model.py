r"""The softmax models for the Newton driver: the passes over the rows, the objectives, their families and
penalties, and the warm start's subsample.

Two models, both :math:`p_i = \mathrm{softmax}(u_i)` fitted by minimising the weighted log loss

.. math:: F = \sum_i w_i \left(\log \sum_j e^{u_{ij}} - u_{i y_i}\right) + W_{tot}\, \mathrm{penalty},

convex in the parameters:

- the *affine* model, :math:`u_{ij} = a_j z_{ij} + b_j` (:class:`AffineObjective`; vector scaling, BCTS,
  temperature scaling and the diagonal Dirichlet maps), whose sums over the rows are
  :func:`fastcal.multiclass._kernels.chunk_sums`, O(k^2) a row;
- the *linear* model, :math:`u_i = W x_i + b` with W of shape (k, d) (:class:`LinearObjective`; matrix scaling
  and full Dirichlet calibration), whose sums are
  :func:`fastcal.multiclass._kernels.linear_chunk_sums`, the Hessian by class pair and feature pair,
  O(k^2 (d + 1)^2 / 4) a row.

The penalty is :math:`\sum_p c_p \phi_p^2` per unit weight on the full parameters (:func:`affine_penalty`,
:func:`linear_penalty`: L2, or Kull et al.'s ODIR). A *family* of the affine model ties or fixes some of the 2k
parameters, so its gradient and Hessian are :math:`P^\top g` and :math:`P^\top H P` for the 2k x m matrix
:math:`P` that maps its m parameters to (a, b):

``"vector"``
    Vector scaling (Guo et al. 2017): a scale and a bias per class;
    ``theta = (a_0 .. a_{k-1}, b_0 .. b_{k-1})``.
``"bcts"``
    Bias-corrected temperature scaling (Alexandari et al. 2020): one scale
    :math:`\beta = 1/T` for every class and a bias per class;
    ``theta = (beta, b_0 .. b_{k-1})``.
``"temperature"``
    Temperature scaling, ``theta = (beta,)`` (the oracle of the tests:
    :class:`fastcal.TemperatureScaling` minimises the same loss by other steps).

Adding the same constant to every bias changes no probability: the fits hold
``b_0 = 0`` (the driver's ``free`` leaves it out) and return the biases
shifted to mean 0, which is unique.

The driver's step certificate (:mod:`fastcal._engine.newton`) needs bounds with
:math:`\sum_p |d_p|\, \mathrm{bound}_p \ge \max_i (\max_j \Delta u_{ij} - \min_j \Delta u_{ij})`:
along a direction the curvature of a row's loss is the variance of
:math:`\Delta u_i` under :math:`p_i`, whose logarithm changes at most at the rate
of that spread (the third central moment is at most the spread times the
variance). Since the spread of :math:`\Delta u_i` is at most
:math:`\sum_j |\Delta u_{ij}|`, the bound of :math:`a_j` is :math:`\max_i |z_{ij}|`, of
:math:`b_j` 1, and of a shared scale the largest spread of a row's logits.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import _kernels as _k
from .._core.parallel import parallel_for
from .._engine.chunked import Partials, merge_in_order
from ..temperature import ArrayRows

#: The families of the affine model (see the module docstring).
FAMILIES = ("vector", "bcts", "temperature")
#: Default stopping tolerance on the Newton decrement per unit weight (as Platt scaling's).
DEFAULT_TOL = 1e-10
#: Warm start from a subsample from this many rows on ...
WARM_START_MIN = 1 << 16
#: ... of every SUBSAMPLE_STRIDE-th row.
SUBSAMPLE_STRIDE = 16


def chunk_rows(k):
    """Rows per chunk of the sums for k classes: 2048, times ceil(k / 64), so that the chunks' sums
    (3k^2 + 2k + 1 floats each) stay under a tenth of the rows they sum (k floats a row)."""
    return _k.CHUNK * max(1, -(-k // 64))


def sum_pass(z, labels, w):
    """The ``run_pass(a, b)`` of rows in memory: the :func:`fastcal.multiclass._kernels.n_sums` sums at (a, b), one
    fused pass over fixed chunks added in chunk order (the same bits at any thread count)."""
    n, k = z.shape
    part = Partials(n, chunk_rows(k), _k.n_sums(k))

    def run_pass(a, b):
        part.run(_k.sum_chunks, z, labels, w, a, b, chunk_rows(k), work=n * k * k)
        return merge_in_order(part.bufs[0])

    return run_pass


def logit_bounds(z):
    """``(colmax, spread)``: max_i |z_ij| per class, and the largest spread max_j z_ij - min_j z_ij of a row."""
    n, k = z.shape
    part = Partials(n, chunk_rows(k), k + 1)
    part.run(_k.column_bounds, z, chunk_rows(k), work=n * k)
    top = part.bufs[0].max(axis=0)
    return top[:k].tolist(), float(top[k])


def family_matrix(family, k):
    """P (2k x m): (a, b) = P theta for the family's m parameters."""
    eye = np.eye(k)
    ones = np.ones((k, 1))
    zeros_kk = np.zeros((k, k))
    if family == "vector":
        return np.block([[eye, zeros_kk], [zeros_kk, eye]])
    if family == "bcts":
        return np.block([[ones, zeros_kk], [np.zeros((k, 1)), eye]])
    if family == "temperature":
        return np.vstack([ones, np.zeros((k, 1))])
    raise ValueError(f"unknown family {family!r}")


def start(family, k, scale=1.0):
    """The fits' start: every scale ``scale`` (the fitted temperature scaling's; 1: the identity), every bias 0,
    in the family's parameters."""
    scales = (scale,) if family in ("bcts", "temperature") else (scale,) * k
    return scales + ((0.0,) * k if family in ("vector", "bcts") else ())


def free_parameters(family, k):
    """The parameters the fit moves: all but ``b_0`` where the family has biases (see the module docstring)."""
    m = family_matrix(family, k).shape[1]
    fixed = {"vector": k, "bcts": 1}.get(family)
    return tuple(i for i in range(m) if i != fixed)


class SoftmaxObjective:
    r"""The penalised log loss of a family of a softmax model, for :func:`fastcal._engine.newton.solve`.

    The model's *full* parameters ``phi`` (the affine model's (a, b), the
    linear model's (W, b) row by row) are ``P @ theta`` for the family's
    parameters ``theta``. A subclass's ``full_stats(phi)`` runs one pass and
    returns the loss, gradient and Hessian in ``phi``; the objective adds the
    penalty :math:`W \sum_p c_p \phi_p^2` (``penalty`` = c, per unit weight,
    so that scaling every weight changes no optimum) and maps them to
    ``theta``. ``full_bounds`` bound each full parameter's effect on a row's
    logit spread (the module docstring); ``subsample`` returns the objective on
    a subsample of the rows, or None.
    """

    def __init__(self, n, P, full_bounds, total_weight, penalty=None, subsample=None):
        self.n = n
        self.P = P
        self.k = P.shape[1]
        self.bounds = tuple(float(v) for v in np.abs(P).T @ np.asarray(full_bounds, dtype=np.float64))
        self.total_weight = total_weight
        self.penalty = None if penalty is None or not np.any(penalty) else np.asarray(penalty, dtype=np.float64)
        self._subsample = subsample
        self._upper = np.triu_indices(self.k)
        self._identity = P.shape[0] == P.shape[1] and np.array_equal(P, np.eye(P.shape[0]))

    def expand(self, theta):
        """The full parameters ``P @ theta``."""
        return self.P @ np.asarray(theta, dtype=np.float64)

    def stats(self, theta, want_loss=False):
        """F, the gradient, then the Hessian's upper triangle row by row, at ``theta`` (F is always computed: one
        logarithm a row beside the k^2 terms of the Hessian; ``want_loss`` is the driver's protocol)."""
        phi = self.expand(theta)
        loss, g, h = self.full_stats(phi)
        if self.penalty is not None:
            c = self.total_weight * self.penalty
            loss += float(np.dot(c * phi, phi))
            g = g + 2.0 * c * phi
            h = h + np.diag(2.0 * c)
        if self._identity:  # the linear model's full W: no family to map to (m^3 flops saved a step)
            return [float(loss), *g.tolist(), *h[self._upper].tolist()]
        P = self.P
        return [float(loss), *(P.T @ g).tolist(), *(P.T @ h @ P)[self._upper].tolist()]

    def subsample(self):
        return None if self._subsample is None else self._subsample()


class AffineObjective(SoftmaxObjective):
    """The affine model's objective: ``run_pass(a, b)`` gives the sums of
    :func:`fastcal.multiclass._kernels.chunk_sums` over all the rows, wherever they
    are; ``colmax`` and ``spread`` bound the logits (:func:`logit_bounds`)."""

    def __init__(self, run_pass, n, k, family, colmax, spread, total_weight, penalty=None, subsample=None):
        P = family_matrix(family, k)
        super().__init__(n, P, np.r_[np.asarray(colmax, dtype=np.float64), np.ones(k)], total_weight, penalty,
                         subsample)
        if family in ("bcts", "temperature"):
            self.bounds = (float(spread),) + self.bounds[1:]
        self.run_pass = run_pass
        self.n_classes = k
        self.family = family

    def split(self, phi):
        """(a, b) from the full parameters."""
        k = self.n_classes
        return np.ascontiguousarray(phi[:k]), np.ascontiguousarray(phi[k:])

    def full_stats(self, phi):
        k = self.n_classes
        sums = self.run_pass(*self.split(phi))
        blocks = sums[1 + 2 * k:].reshape(3, k, k)
        aa = np.triu(blocks[0]) + np.triu(blocks[0], 1).T
        bb = np.triu(blocks[2]) + np.triu(blocks[2], 1).T
        return float(sums[0]), sums[1:1 + 2 * k], np.block([[aa, blocks[1]], [blocks[1].T, bb]])


class LinearObjective(SoftmaxObjective):
    """The linear model's objective: ``run_pass(W, b)`` gives the sums of
    :func:`fastcal.multiclass._kernels.linear_chunk_sums` over all the rows; ``colmax`` bounds each feature
    (max_i |x_il|). The full parameters are (W_j0 .. W_j,d-1, b_j) for each class j in turn."""

    def __init__(self, run_pass, n, k, d, colmax, total_weight, P=None, penalty=None, subsample=None):
        full = np.tile(np.r_[np.asarray(colmax, dtype=np.float64), 1.0], k)
        super().__init__(n, np.eye(k * (d + 1)) if P is None else P, full, total_weight, penalty, subsample)
        self.run_pass = run_pass
        self.n_classes = k
        self.n_features = d
        self._index = linear_hessian_index(k, d)

    def split(self, phi):
        """(W, b) from the full parameters."""
        wb = np.asarray(phi, dtype=np.float64).reshape(self.n_classes, self.n_features + 1)
        return np.ascontiguousarray(wb[:, :-1]), np.ascontiguousarray(wb[:, -1])

    def full_stats(self, phi):
        km = self.n_classes * (self.n_features + 1)
        sums = self.run_pass(*self.split(phi))
        return float(sums[0]), sums[1:1 + km], sums[self._index]


@functools.cache
def linear_hessian_index(k, d):
    """``index[p, q]``: where the linear model's Hessian entry (p, q) is among the sums of
    :func:`fastcal.multiclass._kernels.linear_chunk_sums` (the class pair and the feature pair, each ordered)."""
    m = d + 1
    km = k * m
    j, l = np.divmod(np.arange(km), m)
    lo_c, hi_c = np.minimum.outer(j, j), np.maximum.outer(j, j)
    pair_c = lo_c * k - lo_c * (lo_c - 1) // 2 + (hi_c - lo_c)
    # (l, s) of entry (jm + l, qm + s) with j <= q; the other triangle is its transpose
    lf = np.where(j[:, None] <= j[None, :], l[:, None], l[None, :])
    sf = np.where(j[:, None] <= j[None, :], l[None, :], l[:, None])
    lo_f, hi_f = np.minimum(lf, sf), np.maximum(lf, sf)
    pair_f = lo_f * m - lo_f * (lo_f - 1) // 2 + (hi_f - lo_f)
    index = 1 + km + pair_c * (m * (m + 1) // 2) + pair_f
    index.setflags(write=False)
    return index


def linear_chunk_rows(k, d):
    """Rows per chunk of the linear model's sums: the smallest multiple of 2048 rows whose features (d floats a
    row) are ten times the chunk's :func:`fastcal.multiclass._kernels.linear_n_sums` floats."""
    need = -(-10 * _k.linear_n_sums(k, d) // d)
    return _k.CHUNK * max(1, -(-need // _k.CHUNK))


def linear_sum_pass(x, labels, w, k):
    """The ``run_pass(W, b)`` of rows in memory (fixed chunks added in chunk order)."""
    n, d = x.shape
    rows = linear_chunk_rows(k, d)
    part = Partials(n, rows, _k.linear_n_sums(k, d))
    m = d + 1

    def run_pass(W, b):
        part.run(_k.linear_sum_chunks, x, labels, w, W, b, rows, work=n * k * m * m)
        return merge_in_order(part.bufs[0])

    return run_pass


def array_objective(z, labels, w, total_weight, make):
    """``make(z, labels, w, total_weight, sub)``: an objective over rows in memory, whose ``sub`` is the same over
    every 16th row (recursively) from :data:`WARM_START_MIN` rows on."""
    n = z.shape[0]

    def sub():
        if n < WARM_START_MIN:
            return None
        zs = np.ascontiguousarray(z[::SUBSAMPLE_STRIDE])
        ls = np.ascontiguousarray(labels[::SUBSAMPLE_STRIDE])
        ws = np.ascontiguousarray(w[::SUBSAMPLE_STRIDE]) if w.shape[0] else w
        total = float(ws.sum(dtype=np.float64)) if ws.shape[0] else float(zs.shape[0])
        return array_objective(zs, ls, ws, total, make) if total > 0.0 else None

    return make(z, labels, w, total_weight, sub)


class ArrayData(ArrayRows):
    """The rows of a fit in memory, as the estimators' fit reads them (:class:`fastcal.multiclass.rows.RowsData` is
    the same over a :class:`~fastcal._engine.Rows`).

    Temperature scaling's :class:`fastcal.temperature.ArrayRows` (``z``, ``labels``, ``w``, ``n``, ``k`` and
    its two methods), and ``total`` (the weights' sum), ``bounds`` (:func:`logit_bounds`), ``counts`` (each
    class's weight), ``affine(family, penalty)`` and ``linear(first, penalty)`` (the objectives; ``first``: the
    column of z the linear model starts from, 1 for one column of decision values read as the logits (-x, x),
    whose column 1 is x).
    """

    def __init__(self, z, labels, w):
        super().__init__(z, labels, w)
        self.total = float(self.n) if w.shape[0] == 0 else float(w.sum(dtype=np.float64))
        self.bounds = logit_bounds(z)
        self.counts = np.bincount(labels, weights=w if w.shape[0] else None, minlength=self.k)

    def affine(self, family, penalty=None):
        return affine_objective(self.z, self.labels, self.w, family, self.total, self.bounds, penalty)

    def linear(self, first, penalty=None):
        x = np.ascontiguousarray(self.z[:, first:]) if first else self.z
        return linear_objective(x, self.labels, self.w, self.k, self.total, self.bounds[0][first:], penalty=penalty)


def affine_objective(z, labels, w, family, total_weight, bounds, penalty=None):
    """:class:`AffineObjective` over rows in memory (:func:`array_objective`); ``bounds`` = :func:`logit_bounds`."""
    colmax, spread = bounds
    k = z.shape[1]
    return array_objective(z, labels, w, total_weight, lambda zz, ll, ww, total, sub: AffineObjective(
        sum_pass(zz, ll, ww), zz.shape[0], k, family, colmax, spread, total, penalty, sub))


def linear_objective(x, labels, w, k, total_weight, colmax, P=None, penalty=None):
    """:class:`LinearObjective` over rows in memory (:func:`array_objective`)."""
    d = x.shape[1]
    return array_objective(x, labels, w, total_weight, lambda xx, ll, ww, total, sub: LinearObjective(
        linear_sum_pass(xx, ll, ww, k), xx.shape[0], k, d, colmax, total, P, penalty, sub))


def linear_penalty(k, d, reg_lambda, reg_mu):
    """The penalty's c (:class:`SoftmaxObjective`) on each full parameter of the linear model: with ``reg_mu``
    None, L2: ``reg_lambda / (k (d + 1))`` on every entry of W and b; else ODIR (Kull et al. 2019, needs d = k):
    ``reg_lambda / (k (k - 1))`` on each off-diagonal W_jl, ``reg_mu / k`` on each bias."""
    m = d + 1
    c = np.zeros((k, m))
    if reg_mu is None:
        c[:] = reg_lambda / (k * m)
    else:
        c[:, :d] = reg_lambda / (k * (k - 1))
        c[np.arange(k), np.arange(k)] = 0.0
        c[:, d] = reg_mu / k
    return c.ravel()


def affine_penalty(k, reg_lambda, reg_mu):
    """:func:`linear_penalty` of a diagonal W, on the affine model's (a, b): L2 puts ``reg_lambda / (k (k + 1))``
    on each a_j and b_j, ODIR ``reg_mu / k`` on each b_j (there are no off-diagonal entries)."""
    if reg_mu is None:
        return np.full(2 * k, reg_lambda / (k * (k + 1)))
    return np.r_[np.zeros(k), np.full(k, reg_mu / k)]


def centred(a, b):
    """(a, b) with the biases shifted to mean 0 (the same probabilities)."""
    return a, b - math.fsum(b.tolist()) / b.shape[0]


def predict(z, a, b):
    """``softmax(a * z + b)`` row by row, in ``z``'s dtype (computed in float64), on fastcal's threads."""
    out = np.empty(z.shape, dtype=z.dtype)
    parallel_for(_k.affine_softmax, z.shape[0], z, a, b, out, rows=z.size)
    return out


def linear_predict(x, W, b):
    """``softmax(W x + b)`` row by row, in ``x``'s dtype (computed in float64), on fastcal's threads."""
    out = np.empty((x.shape[0], W.shape[0]), dtype=x.dtype)
    parallel_for(_k.linear_softmax, x.shape[0], x, W, b, out, rows=x.shape[0] * W.size)
    return out
