r"""The smooth ECE (:mod:`fastcal.smooth`): grid sums, their DCT, the fixed point.

See the package's docstring for the method and its references.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import scipy.fft

from . import _kernels as _k
from .._matrices import top_label_problem
from .._core.parallel import get_num_threads, n_chunks, parallel_for, run
from .._core.params import Options, Real, check
from .._core.results import Result
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_probability_range,
    check_sample_weight,
    column_or_1d,
    is_binary,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["SmoothECEResult", "smooth_ece"]

#: Cells of the grid the sums are binned onto (width h = 1 / GRID).
GRID = 1 << 17
#: The smallest bandwidth: 64 grid cells. A fixed point below it is reported as SIGMA_MIN.
SIGMA_MIN = 64.0 / GRID
#: Rows per chunk of the binning pass, and the fewest chunks binned at once (the slots of partial grids).
CHUNK_ROWS = 1 << 19
_SLOTS = 8
#: Chunks binned at once per thread, when there are more threads: a round's tasks outnumber the threads, so a
#: thread that finishes early takes another chunk instead of waiting at the round's end (measured at 8 threads,
#: 2·10^7 rows: the work spreads 2.9-3.5 ways with one chunk a thread, 5.1-5.7 with four).
_SLOTS_PER_THREAD = 4
#: Pyramid level of a bandwidth: spacing at most sigma / _LEVEL_PER_SIGMA (at least _MIN_CELLS cells).
_LEVEL_PER_SIGMA = 256
_MIN_CELLS = 256
#: Evaluation grid: at least this many points per bandwidth.
_EVAL_PER_SIGMA = 128
#: (level, evaluation) points per bandwidth of the search's first, coarse phase, and its bracket.
_COARSE_ACCURACY = (32, 16)
_COARSE_TOL = 1e-7
#: Pyramid level of the smoothed curve: spacing at most sigma / _CURVE_PER_SIGMA.
_CURVE_PER_SIGMA = 4096
#: The root finder stops within this distance of the fixed point (|g| or the bracket below it).
_TOL = 1e-10
#: Points of the smoothed reliability curve.
_CURVE_POINTS = 501
#: The constant of the error bound: sup_s int_0^1 |d^2 K/ds^2| dt <= int |phi''| = 4 e^{-1/2} / (sqrt(2 pi) sigma^2),
#: times 1/8 (the Peano kernel of linear interpolation).
_BOUND_C = math.exp(-0.5) / (2.0 * math.sqrt(2.0 * math.pi))


@dataclass(frozen=True, eq=False, repr=False)
class SmoothECEResult(Result):
    """The smooth ECE and its smoothed reliability curve (see :func:`smooth_ece`).

    ``x``: points in [0, 1]; ``y``: the kernel-smoothed frequency of
    positives at ``x`` (NaN where ``density`` is below 1e-9 of its maximum:
    no predictions within many bandwidths); ``density``: the smoothed
    density of the predictions (it integrates to 1 over [0, 1]).
    """

    ece: float
    bandwidth: float
    error_bound: float
    x: NDArray[np.float64] = field(repr=False)
    y: NDArray[np.float64] = field(repr=False)
    density: NDArray[np.float64] = field(repr=False)


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def check_inputs(y_true, y_prob, sample_weight, labels=None, stacklevel=1):
    """Validated ``(y, p, w)`` of :func:`smooth_ece`: 0/1 labels (``correct`` for a matrix), predictions, weights.

    A 1-D ``y_prob`` (or one column) holds probabilities of the positive
    class, with labels {0, 1} (any numeric or boolean dtype) or {-1, 1}. An
    (n, k) matrix, k >= 2, is reduced to its top-label problem: the largest
    probability of each row, and whether its column (the first, on ties) is
    the class of ``y_true``, the columns being the classes in sorted order
    (``labels``, else those of ``y_true``: :func:`fastcal._core.labels.matrix_codes`).
    Rows of the matrix that do not sum to 1 warn as in ``brier_score_loss``
    (:func:`fastcal._matrices.check_row_sums`).
    The weights are rescaled by :func:`fastcal._core.validation.rescale_weights`
    (no result carries weight units). ``stacklevel`` (of the warnings for
    rows off 1 and unsorted ``labels``) is counted from the caller.
    """
    arr = np.asarray(y_prob)
    y_arr = column_or_1d(y_true, "y_true")
    if arr.ndim == 2 and arr.shape[1] > 1:
        P = as_float_array(arr, "y_prob")
        check_consistent_length(y_true=y_arr, y_prob=P)
        if P.shape[0] == 0:
            raise ValueError("y_prob must not be empty.")
        correct, conf = top_label_problem(y_arr, P, labels, "y_prob", "y_true", stacklevel=stacklevel + 1)
        return correct, conf, check_sample_weight(sample_weight, P.shape[0], rescale=True)
    if labels is not None:
        raise ValueError("labels is for an (n, k) y_prob, whose columns are the classes; a 1-D y_prob is the "
                         "probability of the positive class.")
    p = as_float_array(column_or_1d(y_prob, "y_prob"), "y_prob")
    check_consistent_length(y_true=y_arr, y_prob=p)
    check_probability_range(p, "y_prob")
    y = as_label_array(y_arr, "y_true")
    if not is_binary(y):
        values = np.unique(y)
        if not set(values.tolist()) <= {-1, 1}:
            shown = ", ".join(map(str, values[:5])) + (", ..." if values.size > 5 else "")
            raise ValueError(f"y_true must hold binary labels, {{0, 1}} or {{-1, 1}}; found {{{shown}}}.")
        y = np.ascontiguousarray(y == 1).view(np.uint8)
    return y, p, check_sample_weight(sample_weight, p.shape[0], rescale=True)


# ---------------------------------------------------------------------------
# the grid sums
# ---------------------------------------------------------------------------
def grid_sums(p, y, w):
    r"""Sums of :math:`w`, :math:`w y` and :math:`w (p - y)` linearly binned onto :data:`GRID` cells, in one parallel pass.

    Returns
    -------
    ndarray of shape (GRID, 3), float64
        Columns: weight, weight of positives, weighted residual. Fixed
        chunks of rows, merged in chunk order: the same on any number of
        threads.
    """
    n = p.shape[0]
    nchunks = n_chunks(n, CHUNK_ROWS)
    # A round deposits as many chunks as there are slots, one chunk per task, then merges them into the total
    # (in parallel over the grid nodes). The merge is a left fold over the chunks in chunk order whatever the
    # rounds, so the slots may follow the thread count.
    slots = np.empty((round_chunks(nchunks, get_num_threads()), GRID, _k.NCHAN))
    ends = np.empty((slots.shape[0], 2))
    below = above = 0.0
    total = slots[0]  # not read before a first round is merged into it
    for first in range(0, nchunks, slots.shape[0]):
        used = min(slots.shape[0], nchunks - first)
        run([(_k.deposit, (p, y, w, CHUNK_ROWS, first, slots, ends, c, c + 1)) for c in range(used)])
        for c in range(used):
            below += ends[c, 0]
            above += ends[c, 1]
        work = GRID * used * _k.NCHAN
        if first + used < nchunks:
            if first == 0:
                total = np.empty((GRID, _k.NCHAN))
            parallel_for(_k.merge, GRID, slots, used, total, first > 0, False, 0.0, 0.0, total, rows=work)
    out = np.empty((GRID, _k.NCHAN))
    parallel_for(_k.merge, GRID, slots, used, total, first > 0, True, below, above, out, rows=work)
    return out


def round_chunks(nchunks, threads):
    """Chunks :func:`grid_sums` bins in one round (its slots of partial grids), of ``nchunks`` on ``threads`` threads.

    :data:`_SLOTS_PER_THREAD` a thread, at least :data:`_SLOTS`; and, unless
    that is only ``_SLOTS``, slots whose memory (3 MiB each) stays under 3/4
    of the scores' (4 MiB a chunk). At most ``nchunks``.
    """
    return min(nchunks, max(_SLOTS, _SLOTS_PER_THREAD * threads), max(_SLOTS, 3 * nchunks // 4))


def merge_grids(grids):
    """The sum of grid sums (:func:`grid_sums` of chunks), added in order."""
    total = np.zeros((GRID, _k.NCHAN))
    for g in grids:
        total += g
    return total


# ---------------------------------------------------------------------------
# from the grid to the smooth ECE
# ---------------------------------------------------------------------------
def _pow2_at_least(x):
    return 1 << max(0, int(math.ceil(x)) - 1).bit_length()


def _modes(sigma):
    """Cosine modes of K_sigma above 1e-17 relative: exp(-pi^2 k^2 sigma^2 / 2) >= 1e-17 for k < 2.82 / sigma."""
    return min(GRID, int(math.ceil(2.82 / sigma)) + 1)


def _level(sigma, per_sigma):
    """Cells of the coarsest grid of the pyramid with spacing at most sigma / per_sigma (at least 256, at most GRID)."""
    return min(GRID, max(_MIN_CELLS, _pow2_at_least(per_sigma / sigma)))


class Pyramid:
    """The grid sums of each channel and their restrictions to halved grids (:func:`fastcal.smooth._kernels.restrict`),
    built on demand, with their cosine spectra."""

    def __init__(self, sums):
        self.sums = sums
        self.grids = {}
        self.spectra = {}

    def grid(self, cells, channel):
        key = (cells, channel)
        if cells == GRID:
            return self.sums[:, channel]
        if key not in self.grids:
            fine = self.grid(2 * cells, channel)
            coarse = np.empty(cells)
            _k.restrict(fine, coarse)
            self.grids[key] = coarse
        return self.grids[key]

    def spectrum(self, cells, channel):
        """a_k = sum_b v_b cos(pi k (b + 1/2) / cells): the cosine coefficients of a channel's sums."""
        key = (cells, channel)
        if key not in self.spectra:
            self.spectra[key] = 0.5 * scipy.fft.dct(self.grid(cells, channel), type=2)
        return self.spectra[key]


def _damped(spectrum, sigma):
    k = min(spectrum.shape[0], _modes(sigma))
    ks = np.arange(k, dtype=np.float64)
    return spectrum[:k] * np.exp(-0.5 * (math.pi * sigma * ks) ** 2)


def _smece_at(pyramid, total_w, sigma, accuracy=(_LEVEL_PER_SIGMA, _EVAL_PER_SIGMA)):
    """(smECE_sigma, its error bound) from the residual sums on the pyramid level of sigma.

    ``accuracy``: (cells per sigma of the level, points per sigma of the
    evaluation). The smoothed residual is evaluated on cell centres of
    spacing h_e <= sigma / points, where int |.| of its piecewise-linear
    interpolant is taken exactly.
    """
    level_per_sigma, eval_per_sigma = accuracy
    cells = _level(sigma, level_per_sigma)
    n_eval = max(_MIN_CELLS, _pow2_at_least(max(_modes(sigma), eval_per_sigma / sigma)))
    c = np.zeros(n_eval)
    d = _damped(pyramid.spectrum(cells, _k.GR), sigma)
    c[: d.shape[0]] = d
    values = scipy.fft.dct(c, type=3)
    h_eval = 1.0 / n_eval
    return _k.abs_integral(values, h_eval) / total_w, _error_bound(sigma, 1.0 / cells, h_eval)


def _error_bound(sigma, h_level, h_eval):
    """Bound on |computed - exact| smECE_sigma: binning and restriction down to spacing h_level, quadrature h_eval."""
    return _BOUND_C * (h_level**2 + h_eval**2) / sigma**2


def _curve(pyramid, total_w, sigma):
    """The smoothed density and frequency of positives at the _CURVE_POINTS points j / (_CURVE_POINTS - 1).

    f(x) = d_0 + 2 sum_{k>=1} d_k cos(pi k x), d the damped spectrum, at
    x = j / N is a type-I DCT of d zero-padded to N + 1 terms; N is a multiple
    of the number of intervals, so every (N / intervals)-th value is a point.
    """
    cells = _level(sigma, _CURVE_PER_SIGMA)
    dw = _damped(pyramid.spectrum(cells, _k.GW), sigma)
    dy = _damped(pyramid.spectrum(cells, _k.GY), sigma)
    intervals = _CURVE_POINTS - 1
    step = -(-dw.shape[0] // intervals)
    c = np.zeros((2, step * intervals + 1))
    c[0, : dw.shape[0]] = dw
    c[1, : dy.shape[0]] = dy
    fw, fy = scipy.fft.dct(c, type=1, axis=1)[:, ::step]
    x = np.linspace(0.0, 1.0, _CURVE_POINTS)
    density = fw / total_w
    keep = density > 1e-9 * density.max()
    y = np.full(x.shape[0], np.nan)
    y[keep] = np.clip(fy[keep] / fw[keep], 0.0, 1.0)
    return x, y, density


def find_root(g, lo, hi, tol):
    """A root of the increasing ``g`` in ``[lo, hi]`` (``g(lo) <= 0 <= g(hi)``): Illinois regula falsi.

    Stops at a point with ``|g| <= tol`` (the slope of sigma - smECE_sigma is
    at least 1, so the root is within ``tol`` of it; an end of the bracket
    first) or when the bracket is narrower than ``tol``, and returns an
    evaluated point.
    """
    glo, ghi = g(lo), g(hi)
    if glo >= -tol:
        return lo
    if ghi <= tol:
        return hi
    flo, fhi, side = glo, ghi, 0
    while hi - lo > tol:
        x = (lo * fhi - hi * flo) / (fhi - flo)
        if not lo < x < hi:
            x = 0.5 * (lo + hi)
        gx = g(x)
        if abs(gx) <= tol:
            return x
        if gx < 0:
            lo, glo, flo = x, gx, gx
            if side == -1:
                fhi *= 0.5
            side = -1
        else:
            hi, ghi, fhi = x, gx, gx
            if side == 1:
                flo *= 0.5
            side = 1
    return lo if -glo <= ghi else hi


def _fixed_point(pyramid, total_w):
    """The bandwidth sigma = smECE_sigma in [SIGMA_MIN, 1] (SIGMA_MIN if the fixed point is below it), and
    the accurate evaluation there, ``(smECE_sigma, error bound)``.

    g(sigma) = sigma - smECE_sigma is increasing (slope >= 1), so the root
    is unique. It is first located on a coarse pyramid level (32 cells and 16
    evaluation points per sigma, cheap), halving sigma from 1 for a bracket;
    the root of the accurate g is then bracketed around that guess (its signs
    checked, the bracket widened until they differ) and closed by regula
    falsi (:func:`find_root`) to 1e-10. The answer is the accurate function's
    root: the coarse one only saves evaluations, which cost a DCT of a few
    thousand points at the usual bandwidths (up to 2^18 at the smallest),
    whatever the number of rows.
    """
    def g_at(accuracy, memo):
        def g(sigma):
            if sigma not in memo:
                memo[sigma] = _smece_at(pyramid, total_w, sigma, accuracy)
            return sigma - memo[sigma][0]
        return g

    accurate = {}
    coarse, fine = g_at(_COARSE_ACCURACY, {}), g_at((_LEVEL_PER_SIGMA, _EVAL_PER_SIGMA), accurate)
    hi, lo = 1.0, 0.5
    while lo > SIGMA_MIN and coarse(lo) > 0:
        hi, lo = lo, max(0.5 * lo, SIGMA_MIN)
    if coarse(lo) > 0:
        guess = lo
    elif coarse(hi) < 0:
        guess = hi
    else:
        guess = find_root(coarse, lo, hi, _COARSE_TOL)
    width = 1e-3 * guess
    lo, hi = max(SIGMA_MIN, guess - width), min(1.0, guess + width)
    while fine(hi) < 0:
        if hi == 1.0:
            return hi, accurate[hi]
        width *= 4.0
        lo, hi = hi, min(1.0, hi + width)
    while fine(lo) > 0:
        if lo == SIGMA_MIN:
            return lo, accurate[lo]
        width *= 4.0
        lo, hi = max(SIGMA_MIN, lo - width), lo
    sigma = find_root(fine, lo, hi, _TOL)
    return sigma, accurate[sigma]


def smooth_ece_from_grid(sums, bandwidth=None):
    """:class:`SmoothECEResult` from :func:`grid_sums` (of all the data): the fixed point unless ``bandwidth`` is given."""
    total_w = float(sums[:, _k.GW].sum())
    pyramid = Pyramid(sums)
    if bandwidth is None:
        sigma, (ece, bound) = _fixed_point(pyramid, total_w)
    else:
        sigma = float(bandwidth)
        ece, bound = _smece_at(pyramid, total_w, sigma)
    x, y, density = _curve(pyramid, total_w, sigma)
    return SmoothECEResult(ece=ece, bandwidth=sigma, error_bound=bound, x=x, y=y, density=density)


def check_bandwidth(bandwidth):
    """``bandwidth`` checked: None, or a real number >= :data:`SIGMA_MIN`."""
    return check("bandwidth", bandwidth, [Real(SIGMA_MIN, None), None])


def smooth_ece(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    bandwidth: float | None = None,
    sample_weight: ArrayLike | None = None,
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> SmoothECEResult:
    r"""Smooth ECE: the calibration error of Błasiok & Nakkiran (2023), with its smoothed reliability curve.

    .. math::

        \mathrm{smECE}_\sigma = \frac{1}{W} \int_0^1 \Big| \sum_i w_i K_\sigma(t, f_i) (f_i - y_i) \Big| \, dt,
        \qquad \sigma^* = \mathrm{smECE}_{\sigma^*},

    with :math:`K_\sigma` the Gaussian kernel of width :math:`\sigma`
    reflected at 0 and 1 and :math:`W = \sum_i w_i`. Unlike the binned ECE it
    has no bins to choose, and it is a consistent calibration measure: it is
    within constant factors of the distance to the nearest calibrated
    predictor. Without ``bandwidth`` it is taken at the fixed point
    :math:`\sigma^*`, found by a bracketing root finder on :math:`[\sigma_{min}, 1]`
    (:math:`\mathrm{smECE}_\sigma` is non-increasing in :math:`\sigma`, so the
    fixed point is unique), as ``relplot.smECE`` does.

    **Accuracy.** Sums are linearly binned onto :math:`2^{17}` cells
    (:math:`h = 2^{-17}`), then restricted down a pyramid of halved grids to
    the level of spacing :math:`h_c \le \sigma / 256` (or :math:`h_c = h` at
    :math:`\sigma < 256 h \approx 0.002`), and :math:`\int|\cdot|` is taken
    exactly on the piecewise-linear interpolant of the smoothed residual on
    an evaluation grid of spacing :math:`h_e \le \sigma / 128`; the kernel
    itself is exact (its cosine series, not truncated in space). Every step
    spreads a prediction over nearby nodes without moving its mean; linear
    binning at spacing :math:`h` has variance at most :math:`h^2/4`, and each
    halving adds :math:`(3/16) H^2` at its spacing :math:`H`, so the total is
    at most :math:`h_c^2/4`, as for binning onto the level directly.
    Replacing a unit mass at :math:`s` by a spread of the same mean and
    variance :math:`v` moves :math:`K_\sigma(\cdot, s)` by at most
    :math:`(v/2) \sup_s \int_0^1 |\partial_s^2 K_\sigma| \le (v/2) \int|\varphi_\sigma''|
    = 2 v e^{-1/2} / (\sqrt{2\pi}\sigma^2)` in :math:`L^1`, and the
    quadrature error is the Peano bound of linear interpolation
    (:math:`h_e^2/8` times the same integral):

    .. math::

        |\mathrm{smECE}_\sigma^{\text{computed}} - \mathrm{smECE}_\sigma|
        \le \frac{e^{-1/2}}{2\sqrt{2\pi}} \, \bar r \, \frac{h_c^2 + h_e^2}{\sigma^2}
        \approx 0.121 \, \bar r \, \frac{h_c^2 + h_e^2}{\sigma^2},

    with :math:`\bar r = \sum_i w_i |f_i - y_i| / W \le 1`. ``error_bound``
    reports it with :math:`\bar r = 1`: at most :math:`0.121 (2^{-16} +
    2^{-14}) \approx 9.2 \times 10^{-6}` for :math:`\sigma \ge 0.002`
    (:math:`3.6 \times 10^{-6}` at :math:`\sigma = 0.05`), and
    :math:`3.7 \times 10^{-5}` at the smallest bandwidth
    :math:`\sigma_{min} = 64 h \approx 4.9 \times 10^{-4}`. At the
    fixed point the same bound holds for the smooth ECE (the map
    :math:`\sigma \mapsto \sigma - \mathrm{smECE}_\sigma` has slope
    :math:`\ge 1`, so an error :math:`\delta` in the function moves the fixed
    point by at most :math:`\delta`), plus the root finder's :math:`10^{-10}`.
    The tests check the bound against an exact O(n m) evaluation. The curve
    is taken on the level of spacing :math:`h_c \le \sigma / 4096`: each
    prediction's kernel moves by at most :math:`h_c^2/(8\sigma^2) \approx
    7.5 \times 10^{-9}` of its peak value (for :math:`\sigma \lesssim 0.3`,
    where the kernel's reflections are negligible).

    **Against relplot.** ``relplot.smECE(p, y)`` agrees to about 1e-3 where
    the smooth ECE is about 0.1 or less (at 0.186, it gives 0.190): it
    stops its bisection at a bracket of :math:`2^{-10}`, truncates its kernel
    at :math:`\pm 0.5` with one reflection on each side (exact only for small
    :math:`\sigma`), counts a prediction exactly at 0 or 1 once instead of
    with its reflection, and sums over 200 points; its own answer moves by
    about 2e-4 when its grid is refined.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels, {0, 1} or {-1, 1}; with an (n, k) ``y_prob``, class
        labels: the columns are the classes in sorted order, those of
        ``labels``, else the distinct labels of ``y_true`` (which must then
        number k), as in :func:`fastcal.score_decomposition` and
        :func:`fastcal.log_loss`.
    y_prob : array-like of shape (n_samples,) or (n_samples, n_classes)
        Probabilities of the positive class; or class probabilities, whose
        top-label (confidence) calibration is measured: the largest
        probability of each row against whether its class is the true one.
    bandwidth : float, optional
        :math:`\sigma`, at least :data:`SIGMA_MIN`; the fixed point when None.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights.
    multiclass : {"top_label"}, default="top_label"
        What an (n, k) ``y_prob`` is measured as: its top-label problem (as
        :func:`fastcal.score_decomposition` and
        :func:`fastcal.calibration_curve`).
    labels : array-like of shape (n_classes,), optional
        The classes of the columns of an (n, k) ``y_prob``, when ``y_true``
        lacks some (e.g. ``range(k)`` for class indices).

    Returns
    -------
    SmoothECEResult
        ``ece``, ``bandwidth``, ``error_bound``, and the smoothed reliability
        curve ``x``, ``y`` with the smoothed ``density`` of the predictions
        (Nadaraya-Watson with the same kernel, 501 points).

    References
    ----------
    Błasiok, J. and Nakkiran, P. (2023). Smooth ECE: principled reliability
    diagrams via kernel smoothing. arXiv:2309.12236.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import smooth_ece
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(10_000)
    >>> y = rng.random(10_000) < p ** 1.5          # the truth is p^1.5: predictions too high
    >>> r = smooth_ece(y, p)
    >>> round(r.ece, 3), round(r.bandwidth, 3), r.error_bound < 1e-5
    (0.109, 0.109, True)
    """
    bandwidth = check_bandwidth(bandwidth)
    check("multiclass", multiclass, [Options("top_label")])
    y, p, w = check_inputs(y_true, y_prob, sample_weight, labels, stacklevel=2)
    return smooth_ece_from_grid(grid_sums(p, y, w), bandwidth)
