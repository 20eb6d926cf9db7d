r"""RLLS: the regularised inversion of the confusion matrix (Azizzadenesheli, Liu, Yang and Anandkumar 2019).

.. math:: \hat\theta = \operatorname*{arg\,min}_{\theta \ge -1} \lVert C \theta - b \rVert_2 + \Delta \lVert \theta \rVert_2,
          \qquad w = 1 + \hat\theta,

with :math:`C_{ij} = P_s(\hat y = i, y = j)`, :math:`b = \mu_t - C \mathbf{1}` (the target's prediction
frequencies less the source's) and :math:`\Delta = \alpha \cdot 3 \left(\frac{2 \log(2k/\delta)}{3 n_s} +
\sqrt{\frac{2 \log(2k/\delta)}{n_s}}\right)`, the paper's bound on the error of :math:`C` times
``alpha`` (0.01 by default, as in the authors' code). The norms are not squared, so the problem is a
second-order cone program: for a small :math:`\Delta` its solution is often exactly BBSE's
:math:`C^{-1} b`, a kink of the objective.

Solved here without a cone solver: the norms are smoothed,
:math:`\sqrt{\lVert\cdot\rVert^2 + \varepsilon^2}`, and the smoothed problem is minimised by projected
Newton steps on the bound :math:`\theta \ge -1` (Bertsekas 1982: the bound's active set fixed, Newton's
step on the rest, a projected Armijo search), for :math:`\varepsilon` from :math:`10^{-2}` down to
:math:`10^{-14}` times the scale of the problem, each stage started from the last. The smoothed minimiser
is within :math:`O(\varepsilon)` of the exact one. A k x k problem: O(k^3) a step.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["rlls_delta", "rlls_theta"]

#: The stages' smoothing, relative to the problem's scale.
_EPSILONS = tuple(10.0 ** -e for e in range(2, 15))
_ARMIJO = 1e-4


def rlls_delta(k, n_source, alpha=0.01, delta=0.05):
    """The regularisation :math:`\\Delta` of RLLS for k classes and ``n_source`` labelled source rows."""
    c = 2.0 * math.log(2.0 * k / delta)
    return alpha * 3.0 * (c / (3.0 * n_source) + math.sqrt(c / n_source))


def _smoothed(C, b, delta, eps):
    def f(theta):
        r = C @ theta - b
        return math.sqrt(r @ r + eps * eps) + delta * math.sqrt(theta @ theta + eps * eps)

    def derivatives(theta):
        r = C @ theta - b
        s1 = math.sqrt(r @ r + eps * eps)
        s2 = math.sqrt(theta @ theta + eps * eps)
        Cr = C.T @ r
        g = Cr / s1 + delta * theta / s2
        H = (C.T @ C) / s1 - np.outer(Cr, Cr) / s1**3
        H += delta * (np.eye(theta.shape[0]) / s2 - np.outer(theta, theta) / s2**3)
        return g, H

    return f, derivatives


def _projected_newton(f, derivatives, theta, max_iter=200):
    """Minimise the smooth convex ``f`` on theta >= -1 from ``theta`` (feasible)."""
    fx = f(theta)
    for _ in range(max_iter):
        g, H = derivatives(theta)
        active = (theta <= -1.0 + 1e-12) & (g > 0.0)
        free = ~active
        d = np.zeros_like(theta)
        if free.any():
            Hf = H[np.ix_(free, free)]
            ridge = 1e-14 * max(float(np.abs(np.diag(Hf)).max()), 1e-300)
            try:
                d[free] = -np.linalg.solve(Hf + ridge * np.eye(Hf.shape[0]), g[free])
            except np.linalg.LinAlgError:
                d[free] = -g[free]
        t = 1.0
        while True:
            new = np.maximum(theta + t * d, -1.0)
            fn = f(new)
            if fn <= fx + _ARMIJO * (g @ (new - theta)) or t < 1e-20:
                break
            t *= 0.5
        step = new - theta
        theta, improved = new, fx - fn
        fx = fn
        if np.abs(step).max() <= 1e-15 * (1.0 + np.abs(theta).max()) or improved <= 0.0:
            break
    return theta


def rlls_theta(C, b, delta):
    """:math:`\\hat\\theta` of RLLS for the joint source matrix ``C``, the target-less-source prediction
    frequencies ``b`` and the regularisation ``delta`` (see the module docstring)."""
    C = np.asarray(C, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    scale = max(float(np.abs(C).max()), float(np.abs(b).max()), 1e-300)
    theta = np.zeros(b.shape[0])
    for eps in _EPSILONS:
        theta = _projected_newton(*_smoothed(C, b, delta, eps * scale), theta)
    return theta
