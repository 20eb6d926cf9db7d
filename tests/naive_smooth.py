"""Naive smooth ECE: the reflected Gaussian kernel summed over its images, O(n m) on a grid of m points.

The kernel is evaluated exactly (images until they are below 1e-20), at
``m + 1`` equally spaced points ``t``; the integral of ``|A|`` is that of the
piecewise-linear interpolant of ``A`` (exact where it changes sign). Its
error is at most ``C * rbar * (1/m)^2 / sigma^2`` with ``C = e^{-1/2} / (2
sqrt(2 pi))`` (:func:`quadrature_bound`), the Peano bound of linear
interpolation of a Gaussian.
"""

import math

import numpy as np

C = math.exp(-0.5) / (2.0 * math.sqrt(2.0 * math.pi))


def reflected_kernel(t, s, sigma):
    """K(t, s) = sum_j phi(t - s - 2j) + phi(t + s - 2j), for arrays t (m,) and s (n,): shape (n, m)."""
    images = int(math.ceil(10 * sigma)) + 2
    d = t[None, :] - s[:, None]
    e = t[None, :] + s[:, None]
    out = np.zeros(d.shape)
    norm = 1.0 / (math.sqrt(2 * math.pi) * sigma)
    for j in range(-images, images + 1):
        out += np.exp(-0.5 * ((d - 2 * j) / sigma) ** 2) + np.exp(-0.5 * ((e - 2 * j) / sigma) ** 2)
    return out * norm


def abs_integral(values, h):
    a, b = values[:-1], values[1:]
    same = a * b >= 0
    s = np.abs(a) + np.abs(b)
    seg = np.where(same, 0.5 * s, 0.5 * (a * a + b * b) / np.where(s > 0, s, 1.0))
    return h * seg.sum()


def smece(y, p, sigma, w=None, m=4000):
    """smECE_sigma = (1/W) int_0^1 |sum_i w_i K(t, p_i) (p_i - y_i)| dt."""
    p = np.asarray(p, dtype=np.float64)
    y = (np.asarray(y) != 0).astype(np.float64)
    w = np.ones_like(p) if w is None else np.asarray(w, dtype=np.float64)
    t = np.linspace(0.0, 1.0, m + 1)
    a = (w * (p - y)) @ reflected_kernel(t, p, sigma)
    return abs_integral(a, 1.0 / m) / w.sum()


def quadrature_bound(y, p, sigma, w=None, m=4000):
    p = np.asarray(p, dtype=np.float64)
    y = (np.asarray(y) != 0).astype(np.float64)
    w = np.ones_like(p) if w is None else np.asarray(w, dtype=np.float64)
    rbar = np.sum(w * np.abs(p - y)) / w.sum()
    return C * rbar * (1.0 / m) ** 2 / sigma**2


def fixed_point(y, p, w=None, m=4000, lo=1e-3, hi=1.0, tol=1e-9):
    """sigma = smECE_sigma by plain bisection."""
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if smece(y, p, mid, w, m) > mid:
            lo = mid
        else:
            hi = mid
    return hi


def smoothed_curve(y, p, sigma, x, w=None):
    """Nadaraya-Watson with the reflected kernel: sum w K y / sum w K at x, and the density sum w K / W."""
    p = np.asarray(p, dtype=np.float64)
    y = (np.asarray(y) != 0).astype(np.float64)
    w = np.ones_like(p) if w is None else np.asarray(w, dtype=np.float64)
    k = reflected_kernel(x, p, sigma)
    return (w * y) @ k / (w @ k), w @ k / w.sum()


def linear_binning(x, values, m):
    """Sums of the rows of ``values`` at points ``x`` linearly binned onto ``m`` cells (node b at (b + 1/2) / m):
    ``1 - theta`` to the node below, ``theta`` to the node above; at or beyond an end node, all on it."""
    x = np.asarray(x, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    u = x * m - 0.5
    j = np.clip(np.floor(u), 0, m - 2).astype(np.int64)
    t = np.where(u <= 0, 0.0, np.where(u >= m - 1, 1.0, u - j))
    shape = (-1,) + (1,) * (values.ndim - 1)
    out = np.zeros((m,) + values.shape[1:])
    np.add.at(out, j, (1 - t).reshape(shape) * values)
    np.add.at(out, j + 1, t.reshape(shape) * values)
    return out
