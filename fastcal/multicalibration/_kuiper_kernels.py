r"""Numba kernels of Kuiper's distribution: the law of the range of a standard Brownian motion on [0, 1], the
null distribution of the ECCE in sigmas (Arrieta-Ibarra et al. 2022).

Two series, each where it converges fast: Kuiper's theta-function series for the CDF below
:data:`KUIPER_SPLIT`, the alternating series of normal tails for the survival function above it, so that the
survival function keeps its relative accuracy far in the tail.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.jit import kernel

__all__ = ["KUIPER_SPLIT", "kuiper_cdf", "kuiper_sf", "kuiper_sf_many"]

#: Below this point the theta-function series gives the CDF, above it the alternating
#: series gives the survival function; both converge in a few terms there.
KUIPER_SPLIT = 2.0




@kernel
def _theta_cdf(x):
    # F(x) = sum_{k >= 0} (8 / x^2 + 2 / ((k + 1/2)^2 pi^2)) exp(-2 (k + 1/2)^2 pi^2 / x^2)
    total = 0.0
    k = 0
    while True:
        h = (k + 0.5) * math.pi
        term = (8.0 / (x * x) + 2.0 / (h * h)) * math.exp(-2.0 * h * h / (x * x))
        total += term
        if term <= 1e-17 * total or term == 0.0:
            return total
        k += 1


@kernel
def _alternating_sf(x):
    # 1 - F(x) = 8 sum_{k >= 1} (-1)^(k-1) k Q(k x), Q the standard normal upper tail
    total = 0.0
    k = 1
    sign = 1.0
    while True:
        term = 4.0 * k * math.erfc(k * x / math.sqrt(2.0))  # 8 k Q(k x)
        total += sign * term
        if term <= 1e-17 * total or term == 0.0:
            return total
        sign = -sign
        k += 1


@kernel
def kuiper_cdf(x):
    """CDF of the range of a standard Brownian motion on [0, 1] at ``x`` (0 for ``x <= 0``)."""
    if not x > 0.0:
        return 0.0
    if x < KUIPER_SPLIT:
        return _theta_cdf(x)
    return 1.0 - _alternating_sf(x)


@kernel
def kuiper_sf(x):
    """``1 - kuiper_cdf(x)``, accurate to relative rounding in the tail (0 only past underflow)."""
    if not x > 0.0:
        return 1.0
    if x < KUIPER_SPLIT:
        return 1.0 - _theta_cdf(x)
    if x == math.inf:
        return 0.0
    return _alternating_sf(x)


@kernel
def kuiper_sf_many(x):
    """:func:`kuiper_sf` of each element of the float64 array ``x``."""
    out = np.empty(x.shape[0])
    for i in range(x.shape[0]):
        out[i] = kuiper_sf(x[i])
    return out
