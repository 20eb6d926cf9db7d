r"""The affine softmax model for the Newton driver: the passes over the rows, the objective, its families and the
warm start's subsample.

The model is :math:`p_i = \mathrm{softmax}(u_i)`, :math:`u_{ij} = a_j z_{ij} + b_j`, fitted by minimising the
weighted log loss

.. math:: F = \sum_i w_i \left(\log \sum_j e^{u_{ij}} - u_{i y_i}\right),

which is convex in (a, b). Its gradient and Hessian are sums over the rows
(:func:`fastcal.multiclass._kernels.chunk_sums`); a *family* ties or fixes
some of the 2k parameters, so its gradient and Hessian are :math:`P^\top g`
and :math:`P^\top H P` for the 2k x m matrix :math:`P` that maps its m
parameters to (a, b):

``"vector"``
    Vector scaling (Guo et al. 2017): a scale and a bias per class;
    ``theta = (a_0 .. a_{k-1}, b_0 .. b_{k-1})``.
``"vector_no_bias"``
    A scale per class, no biases: ``theta = a``.
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

import math

import numpy as np

from . import _kernels as _k
from .._core.parallel import parallel_for
from .._engine.chunked import Partials, merge_in_order

#: The families of the affine model (see the module docstring).
FAMILIES = ("vector", "vector_no_bias", "bcts", "temperature")
#: Default stopping tolerance on the Newton decrement per unit weight (as Platt scaling's).
DEFAULT_TOL = 1e-10
#: Warm start from a subsample from this many rows on ...
WARM_START_MIN = 1 << 16
#: ... of every _SUBSAMPLE_STRIDE-th row.
_SUBSAMPLE_STRIDE = 16


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
    if family == "vector_no_bias":
        return np.vstack([eye, zeros_kk])
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


class AffineObjective:
    """The log loss of a family of the affine softmax model, for :func:`fastcal._engine.newton.solve`.

    ``run_pass(a, b)`` gives the sums of
    :func:`fastcal.multiclass._kernels.chunk_sums` over all the rows, wherever they
    are; ``colmax`` and ``spread`` bound the logits (:func:`logit_bounds`);
    ``subsample`` returns the objective on a subsample of the rows, or None.
    """

    def __init__(self, run_pass, n, k, family, colmax, spread, total_weight, subsample=None):
        self.run_pass = run_pass
        self.n = n
        self.n_classes = k
        self.family = family
        self.P = family_matrix(family, k)
        self.k = self.P.shape[1]
        full = np.r_[np.asarray(colmax, dtype=np.float64), np.ones(k)]
        bounds = np.abs(self.P).T @ full
        if family in ("bcts", "temperature"):
            bounds[0] = spread
        self.bounds = tuple(float(v) for v in bounds)
        self.total_weight = total_weight
        self._subsample = subsample
        self._upper = np.triu_indices(self.k)

    def expand(self, theta):
        """(a, b) from the family's parameters."""
        ab = self.P @ np.asarray(theta, dtype=np.float64)
        k = self.n_classes
        return np.ascontiguousarray(ab[:k]), np.ascontiguousarray(ab[k:])

    def stats(self, theta, want_loss=False):
        """F, the gradient, then the Hessian's upper triangle row by row, at ``theta`` (F is always computed: one
        logarithm a row beside the k^2 terms of the Hessian; ``want_loss`` is the driver's protocol)."""
        k = self.n_classes
        a, b = self.expand(theta)
        sums = self.run_pass(a, b)
        g = sums[1:1 + 2 * k]
        blocks = sums[1 + 2 * k:].reshape(3, k, k)
        aa = np.triu(blocks[0]) + np.triu(blocks[0], 1).T
        bb = np.triu(blocks[2]) + np.triu(blocks[2], 1).T
        h = np.block([[aa, blocks[1]], [blocks[1].T, bb]])
        P = self.P
        return [float(sums[0]), *(P.T @ g).tolist(), *(P.T @ h @ P)[self._upper].tolist()]

    def subsample(self):
        return None if self._subsample is None else self._subsample()


def array_objective(z, labels, w, family, total_weight, bounds=None):
    """:class:`AffineObjective` over rows in memory, warm-started from every 16th row (recursively) from
    :data:`WARM_START_MIN` rows on. ``bounds``: :func:`logit_bounds` of ``z`` if known."""
    n, k = z.shape
    colmax, spread = logit_bounds(z) if bounds is None else bounds

    def sub():
        if n < WARM_START_MIN:
            return None
        zs = np.ascontiguousarray(z[::_SUBSAMPLE_STRIDE])
        ls = np.ascontiguousarray(labels[::_SUBSAMPLE_STRIDE])
        ws = np.ascontiguousarray(w[::_SUBSAMPLE_STRIDE]) if w.shape[0] else w
        total = float(ws.sum(dtype=np.float64)) if ws.shape[0] else float(zs.shape[0])
        return array_objective(zs, ls, ws, family, total, (colmax, spread)) if total > 0.0 else None

    return AffineObjective(sum_pass(z, labels, w), n, k, family, colmax, spread, total_weight, sub)


def centred(a, b):
    """(a, b) with the biases shifted to mean 0 (the same probabilities)."""
    return a, b - math.fsum(b.tolist()) / b.shape[0]


def predict(z, a, b):
    """``softmax(a * z + b)`` row by row, in ``z``'s dtype (computed in float64), on fastcal's threads."""
    out = np.empty(z.shape, dtype=z.dtype)
    parallel_for(_k.affine_softmax, z.shape[0], z, a, b, out, rows=z.size)
    return out
