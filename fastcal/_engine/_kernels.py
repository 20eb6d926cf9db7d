"""Numba kernels of the Newton driver (:mod:`fastcal._engine.newton`): the Cholesky solve of a Newton system.

Private: the driver hands them a symmetric float64 matrix and checks nothing.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel


@kernel
def cholesky_solve(h, g, d):
    """``d = -H^-1 g`` for the symmetric (m, m) ``h``, by Cholesky; False (``d`` then meaningless) where a pivot is
    not positive and finite (H not numerically positive definite).

    The operations and their order are those of :func:`fastcal._engine.newton.solve_spd_many` on Python floats
    (row by row, each inner product accumulated left to right, no fused multiply-add), so the same bits; in
    machine code, for systems of hundreds of parameters (a linear softmax model's k(k + 1)).
    """
    m = g.shape[0]
    chol = np.zeros((m, m))
    for i in range(m):
        for j in range(i + 1):
            acc = h[i, j]
            for q in range(j):
                acc = acc - chol[i, q] * chol[j, q]
            if i == j:
                if not (acc > 0.0 and np.isfinite(acc)):
                    return False
                chol[i, i] = np.sqrt(acc)
            else:
                chol[i, j] = acc / chol[j, j]
    u = np.empty(m)
    for i in range(m):
        acc = -g[i]
        for q in range(i):
            acc = acc - chol[i, q] * u[q]
        u[i] = acc / chol[i, i]
    for i in range(m - 1, -1, -1):
        acc = u[i]
        for q in range(i + 1, m):
            acc = acc - chol[q, i] * d[q]
        d[i] = acc / chol[i, i]
    return True
