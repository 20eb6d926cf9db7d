"""Platt's logistic model for the Newton driver: the passes over the rows, the objective, the warm start's
subsample and the parameter checks.

What both fits of this package share (:mod:`fastcal.platt._scaling`, Platt
scaling; :mod:`fastcal.platt._slope`, the calibration slope and intercept),
and what :mod:`fastcal.beta` and the engine's drivers
(:mod:`fastcal.platt._rows`) use through :mod:`fastcal.platt`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _kernels as _k
from .._engine.chunked import Partials, merge_in_order
from .._core.parallel import parallel_for
from .._core.params import Integer, Real, check
from .._core.validation import class_bytes

#: Default stopping tolerance on the Newton decrement per unit weight.
DEFAULT_TOL = 1e-10
#: Warm start from a subsample from this many rows on.
WARM_START_MIN = 1 << 18
#: The warm-start subsample has 1/_SUBSAMPLE_FACTOR of the rows ...
_SUBSAMPLE_FACTOR = 16
#: ... and at most this many (it is solved in memory, also for out-of-core and Dask fits).
SUBSAMPLE_MAX = 1 << 20


def newton_partials(n):
    """The partial buffers of :func:`fastcal.platt._kernels.newton_pass` over ``n`` rows (reused across passes)."""
    return Partials(n, _k.CHUNK, _k.N_STATS)


def _run_newton_pass(s, y, w, center, scale, a, b, targets, want_loss, part=None):
    """The :data:`fastcal.platt._kernels.N_STATS` sums of :func:`fastcal.platt._kernels.newton_pass` over all rows at (a, b).

    ``targets`` is ``(t+, 1 - t+, t-, 1 - t-)``; ``part`` optional
    :func:`newton_partials`, reused across iterations. The chunks' sums are
    added in chunk order (:func:`fastcal._engine.chunked.merge_in_order`).
    """
    if part is None:
        part = newton_partials(s.shape[0])
    tpos, tnpos, tneg, tnneg = targets
    part.run(_k.newton_pass, s, y, w, center, scale, a, b, tpos, tnpos, tneg, tnneg, True if want_loss else None)
    return merge_in_order(part.bufs[0])


def merge_prep(ibuf, fbuf):
    """Merge the per-chunk results ``(ibuf, fbuf)`` of the Platt preparation and logit passes, in chunk order.

    Columns 0-2 of ``ibuf`` are counts (summed), 3/5 minima and 4/6 maxima of
    order keys (exact in any order); the columns of ``fbuf`` are weights,
    added in chunk order (:func:`fastcal._engine.chunked.merge_in_order`).
    """
    ibuf = np.asarray(ibuf, dtype=np.int64).reshape(-1, _k.N_PREP_INT)
    iout = np.empty(_k.N_PREP_INT, dtype=np.int64)
    iout[:3] = ibuf[:, :3].sum(axis=0)
    iout[3::2] = ibuf[:, 3::2].min(axis=0, initial=np.iinfo(np.int64).max)
    iout[4::2] = ibuf[:, 4::2].max(axis=0, initial=np.iinfo(np.int64).min)
    fbuf = np.asarray(fbuf, dtype=np.float64).reshape(-1, _k.N_PREP_FLOAT)
    fout = merge_in_order(fbuf) if fbuf.shape[0] else np.zeros(_k.N_PREP_FLOAT)
    return iout, fout


# ---------------------------------------------------------------------------
# Platt's model for the Newton driver (fastcal._engine.newton), from any source of passes.
# ---------------------------------------------------------------------------


class PlattObjective:
    r"""Platt's objective F(a, b) in the solver's coordinates, for :func:`fastcal._engine.newton.solve`.

    The solver works in centred and scaled coordinates, z = a' x + b' with
    x = (s - center) * scale, ``scale`` a power of two chosen so that |x| <= 1;
    ``xmax`` bounds |x| over the rows of positive weight. The sums come from
    ``run_pass(center, scale, a', b', targets, want_loss)``: the 6 sums of
    :func:`_run_newton_pass` over all rows, wherever
    they are (arrays, file chunks, Dask partitions). ``subsample`` is a
    callable returning the objective on a subsample, or None. ``run_passes``
    (optional) takes a list of ``run_pass`` arguments and returns their sums
    from one pass over the rows (:meth:`stats_many`).
    """

    k = 2

    def __init__(self, run_pass, n, center, scale, xmax, targets, total_weight, subsample=None, run_passes=None):
        self.run_pass = run_pass
        self.run_passes = run_passes
        self.n = n
        self.center = center
        self.scale = scale
        self.bounds = (xmax, 1.0)
        self.targets = targets  # (t+, 1 - t+, t-, 1 - t-)
        self.total_weight = total_weight
        self._subsample = subsample

    def stats(self, theta, want_loss=False):
        """(F, dF/da, dF/db, d2F/da2, d2F/dadb, d2F/db2) at ``theta``; F only if ``want_loss`` (else 0)."""
        return self.run_pass(self.center, self.scale, theta[0], theta[1], self.targets, want_loss)

    def stats_many(self, requests):
        """:meth:`stats` at each ``(theta, want_loss)`` of ``requests``: one pass for all with ``run_passes`` (the
        list of ``run_pass`` arguments in, the list of their sums out: the same sums), else one each."""
        args = [(self.center, self.scale, theta[0], theta[1], self.targets, want) for theta, want in requests]
        if self.run_passes is None:
            return [self.run_pass(*a) for a in args]
        return self.run_passes(args)

    def subsample(self):
        return None if self._subsample is None else self._subsample()

    def to_internal(self, a, b):
        """(a, b) of z = a*s + b to the solver's (a', b')."""
        return a / self.scale, b + a * self.center

    def to_public(self, a, b):
        """The solver's (a', b') to (a, b) of z = a*s + b."""
        a_pub = a * self.scale
        return a_pub, b - a_pub * self.center


def subsample_fraction(n):
    """The share of rows in the warm-start subsample of an n-row fit: 1/16, at most :data:`SUBSAMPLE_MAX` rows."""
    return min(1.0 / _SUBSAMPLE_FACTOR, SUBSAMPLE_MAX / max(n, 1))


def subsample(s, y, w, fraction):
    """About ``fraction`` of the rows ``(s, y, w)``: evenly spaced contiguous blocks of 64 to 4096 rows.

    Contiguous blocks read memory sequentially; spreading them over the whole
    input keeps the subsample representative of sorted or clustered data.
    The blocks are copied on fastcal's threads (a serial copy of a million
    rows was a tenth of a 10^7-row fit's work on 8 threads). The labels come
    out as :func:`fastcal._core.validation.class_bytes`.
    """
    y = class_bytes(y)
    n = s.shape[0]
    m = int(round(n * fraction))
    if m <= 0:
        return s[:0], y[:0], None if w is None else w[:0]
    length = min(4096, max(64, m // 256), n)
    n_blocks = max(1, m // length)
    starts = np.linspace(0, n - length, n_blocks).astype(np.int64)
    out = tuple(None if a is None else np.empty(n_blocks * length, dtype=a.dtype) for a in (s, y, w))
    parallel_for(_k.gather_blocks, n_blocks, s, y, w, starts, length, *out, rows=n_blocks * length)
    return out


def array_pass(s, y, w):
    """The ``run_pass`` of rows in memory: one fused kernel pass, into a scratch buffer reused across calls.

    ``y``: validated 0/1 labels, read as :func:`fastcal._core.validation.class_bytes` (converted here unless they are).
    """
    part = newton_partials(s.shape[0])
    y = class_bytes(y)

    def run_pass(center, scale, a, b, targets, want_loss):
        return _run_newton_pass(s, y, w, center, scale, a, b, targets, want_loss, part)

    return run_pass


def warm_start(subsample_rows, n, objective):
    """The warm start of a Newton fit of ``n`` rows (the ``sub`` of :class:`PlattObjective` and of
    :class:`fastcal.beta._model.BetaObjective`): a function that returns the objective of a subsample, or None.

    ``subsample_rows(fraction)`` gives about that share of the rows as
    ``(s, y, w)`` (:func:`subsample`; None: no warm start),
    ``objective(s, y, w, total_weight)`` their objective. None under
    :data:`WARM_START_MIN` rows, or when the subsample has no weight.
    """

    def sub():
        if subsample_rows is None or n < WARM_START_MIN:
            return None
        s, y, w = subsample_rows(subsample_fraction(n))
        total = float(w.sum(dtype=np.float64)) if w is not None else float(s.shape[0])
        return objective(s, y, w, total) if total > 0.0 else None

    return sub


def array_objective(s, y, w, center, scale, xmax, targets, total_weight):
    """:class:`PlattObjective` over rows in memory, warm-started from subsamples of them (recursively)."""
    sub = warm_start(lambda fraction: subsample(s, y, w, fraction), s.shape[0],
                     lambda ss, ys, ws, total: array_objective(ss, ys, ws, center, scale, xmax, targets, total))
    return PlattObjective(array_pass(s, y, w), s.shape[0], center, scale, xmax, targets, total_weight, sub)


def center_and_scale(lo, hi):
    """Centre (lo + hi) / 2 and a power of two ``scale`` with (hi - lo) / 2 * scale in [0.5, 1)
    (computed without overflow; the exponent is clamped so that ``scale`` stays finite),
    and the bound on |x| = |s - centre| * scale for lo <= s <= hi. Floats, or arrays element by element
    (many fits at once, :func:`fastcal.platt.fit_groups`)."""
    center = 0.5 * lo + 0.5 * hi
    half = 0.5 * hi - 0.5 * lo
    wide = half > 0.0
    exponent = np.frexp(np.where(wide, half, 1.0))[1]
    scale = np.where(wide, np.ldexp(1.0, -np.clip(exponent, -1000, 1024)), 1.0)
    # s - centre rounds to at most half * (1 + 2**-52) in magnitude.
    xmax = np.where(wide, half * scale * (1.0 + 1e-15), 0.0)
    if np.ndim(center) == 0:
        return float(center), float(scale), float(xmax)
    return center, scale, xmax


# ---------------------------------------------------------------------------
# Input checks.
# ---------------------------------------------------------------------------


#: What Platt scaling's parameters accept (see :mod:`fastcal._core.params`).
PARAMETERS: dict[str, list[Any]] = {"max_iter": [Integer(1)], "tol": [Real(0, open_low=True), None]}


def check_max_iter(max_iter):
    """``max_iter`` as an int, or the parameter error."""
    return check("max_iter", max_iter, PARAMETERS["max_iter"])


def check_tol(tol):
    """``tol`` as a float (``None``: :data:`DEFAULT_TOL`), or the parameter error."""
    tol = check("tol", tol, PARAMETERS["tol"])
    return DEFAULT_TOL if tol is None else tol


def check_total_weight(wpos, wneg):
    """The total weight ``wpos + wneg``, or a ``ValueError`` if it is not finite and positive."""
    total = wpos + wneg
    if not math.isfinite(total):
        raise ValueError("sample_weight: the total weight overflows float64.")
    return total
