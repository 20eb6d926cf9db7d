"""The Bayes map of a prior shift over arrays, on the kernels of :mod:`fastcal.prior._kernels`.

Binary: p -> p / (p + c (1 - p)) with the exact odds factor ``c``; (n, k): reweight each row and renormalise.
Internal API of :mod:`fastcal.prior`: :func:`class_weights`, :func:`odds_constants`, :func:`binary_odds_factor`,
:func:`run_binary` (and :func:`binary_map`, what it computes, as data), :func:`run_multi`, :func:`sum_pairs`.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from . import _kernels as _k
from .._core.parallel import parallel_for
from ._inputs import SUM_TOL, TINY64


def _positive_in(value, dtype):
    """``value`` (> 0, possibly inf) rounded to ``dtype`` and clamped to its positive finite range."""
    info = np.finfo(dtype)
    return dtype.type(min(max(float(value), float(info.smallest_subnormal)), float(info.max)))


def _flat(a):
    """1-D view of a C- or F-contiguous array (in memory order)."""
    return a.reshape(-1) if a.flags.c_contiguous else a.T.reshape(-1)


def class_weights(new, train):
    """w = new / train, computed in log space and scaled so that max(w) == 1 (float64, >= tiny)."""
    lw = np.log(np.maximum(new, TINY64)) - np.log(train)
    lw -= lw.max()
    return np.maximum(np.exp(lw), TINY64)


def _to_float(q):
    """A Fraction rounded to the nearest float64 (inf if it is too large)."""
    try:
        return float(q)
    except OverflowError:
        return math.inf


def odds_constants(c):
    """(c, c - 1) as float64 from the exact rational ``c`` (each correctly rounded)."""
    return _to_float(c), _to_float(c - 1)


def binary_odds_factor(new, train):
    """(c, c - 1) with c = w0 / w1 and p_new = p / (p + c (1 - p)).

    Computed exactly in rational arithmetic from the float64 priors (two
    numbers: no overflow or underflow, c is exactly 1 if new == train), then
    rounded once.
    """
    new0, new1 = (Fraction(max(float(v), TINY64)) for v in new[:2])
    train0, train1 = (Fraction(float(v)) for v in train[:2])
    return odds_constants((new0 * train1) / (train0 * new1))


def run_binary(src, dst, c, cm1):
    """Apply p -> p / (p + c (1 - p)) from src to dst (contiguous, same layout); returns the count of invalid values.

    ``c`` is a float64 in [0, inf] and ``cm1 = c - 1`` computed accurately by
    the caller. ``c == 1`` is the identity (the values are copied exactly, and
    still checked); ``c > 1`` and ``c < 1`` use the two monotone evaluations
    of :mod:`fastcal.prior._kernels`, with their constants rounded to the
    input's dtype and kept positive and finite.
    """
    s, d = _flat(src), _flat(dst)
    if s.__array_interface__["data"][0] == d.__array_interface__["data"][0]:
        d = None  # in place: the kernels' one-array form (see _kernels.binary_down)
    elif not s.flags.writeable:
        # Numba cannot unify a read-only src with a writable dst (the kernels' `s if dst is None else dst`):
        # copy into dst and run in place there.
        np.copyto(d, s)
        s, d = d, None
    dtype = s.dtype
    zero, one = dtype.type(0), dtype.type(1)
    kind, constants = binary_map(c, cm1, dtype)
    kernel = {"copy": _k.binary_copy, "down": _k.binary_down, "up": _k.binary_up}[kind]
    return sum(parallel_for(kernel, s.shape[0], s, d, *constants, zero, one))


def binary_map(c, cm1, dtype):
    """How :func:`run_binary` maps ``p`` in ``dtype``: ``(kind, constants)``, the kernel's evaluation and its
    constants in ``dtype`` (positive and finite), for a backend that writes the same operations in its own
    language.

    - ``("copy", ())``: ``c == 1``, ``q = p``;
    - ``("down", (cm1,))``: ``c > 1``, ``q = p / (1 + cm1 (1 - p))``;
    - ``("up", (c, omc))``: ``c < 1``, ``q = 1 / (c / p + omc)``, ``omc = 1 - c`` in ``dtype``.
    """
    dtype = np.dtype(dtype)
    if c == 1.0:
        return "copy", ()
    if c > 1.0:
        return "down", (_positive_in(cm1, dtype),)
    c_d = _positive_in(c, dtype)
    return "up", (c_d, dtype.type(1) - c_d)


def sum_pairs(pairs):
    """Element-wise sum of the ``(bad values, bad rows)`` counts of a kernel's ranges."""
    return tuple(int(sum(column)) for column in zip(*pairs))


def run_multi(src, dst, w):
    """Reweight and renormalise the rows of ``src`` into ``dst``; returns (bad values, bad rows)."""
    groups = -(-src.shape[0] // 4)
    return sum_pairs(parallel_for(_k.multi_adjust, groups, src, dst, w, SUM_TOL, rows=src.size))
