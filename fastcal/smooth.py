r"""Smooth ECE (Błasiok & Nakkiran 2023): kernel-smoothed calibration error and reliability curve.

With predictions :math:`f_i \in [0, 1]`, outcomes :math:`y_i \in \{0, 1\}`,
weights :math:`w_i` (:math:`W = \sum_i w_i`) and the Gaussian kernel of width
:math:`\sigma` reflected at 0 and 1,

.. math::

    K_\sigma(t, s) = \sum_{j \in \mathbb{Z}} \varphi_\sigma(t - s - 2j) + \varphi_\sigma(t + s - 2j)
                   = 1 + 2 \sum_{k \ge 1} e^{-\pi^2 k^2 \sigma^2 / 2} \cos(\pi k t) \cos(\pi k s),

the smooth ECE at bandwidth :math:`\sigma` is

.. math::

    \mathrm{smECE}_\sigma = \frac{1}{W} \int_0^1 \Big| \sum_i w_i K_\sigma(t, f_i) (f_i - y_i) \Big| \, dt,

and the smooth ECE is :math:`\mathrm{smECE}_{\sigma^*}` at the bandwidth
:math:`\sigma^* = \mathrm{smECE}_{\sigma^*}`. :math:`K_\sigma` is the heat
kernel on [0, 1] with reflecting ends, so :math:`K_a K_b = K_{\sqrt{a^2+b^2}}`
and :math:`\mathrm{smECE}_\sigma` is non-increasing in :math:`\sigma`: the
fixed point is unique, and a bracketing root finder finds it.

How it is computed (:func:`grid_sums`, then :func:`smooth_ece_from_grid`):
one parallel pass bins the sums of :math:`w`, :math:`w y` and
:math:`w (f - y)` onto :data:`GRID` cells by linear binning (fixed chunks of
rows, merged in chunk order: the same bits on any number of threads); their
cosine spectrum (a DCT) is computed once; for each bandwidth the spectrum is
multiplied by :math:`e^{-\pi^2 k^2 \sigma^2/2}` (exact coefficients of
:math:`K_\sigma`, no truncation of the kernel) and transformed back onto an
evaluation grid fine enough for the bound below, where :math:`\int_0^1|\cdot|`
of the piecewise-linear interpolant is taken exactly. The bisection costs a
few small DCTs per step, independent of the number of rows.

This module sits below :mod:`fastcal.metrics` and validates its own input.
The Dask version (:func:`fastcal.dask.smooth_ece`) adds up :func:`grid_sums`
of each chunk and calls :func:`smooth_ece_from_grid`.

Internal API: :data:`GRID`, :data:`SIGMA_MIN`, :func:`grid_sums`,
:func:`merge_grids`, :func:`smooth_ece_from_grid`, :func:`check_inputs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
import scipy.fft
import scipy.optimize

from . import _smooth_kernels as _k
from ._binning import top_label
from ._labels import matrix_codes
from ._parallel import get_num_threads, parallel_for, run
from ._params import Options, Real, check
from ._results import Result
from ._validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
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
#: Rows per chunk of the binning pass, and chunks binned at once (the slots of partial grids).
_CHUNK_ROWS = 1 << 18
_SLOTS = 8
#: Evaluation grid: at least this many points per bandwidth.
_EVAL_PER_SIGMA = 128
_COARSE_PER_SIGMA = 16
#: The root finder closes the bracket of the fixed point to this width.
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
def _probabilities(p, name):
    flat = p.reshape(-1)
    lo, hi = float(flat.min()), float(flat.max())
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{name} must be finite, but contains NaN.")
    if math.isinf(lo) or math.isinf(hi):
        raise ValueError(f"{name} must be finite, but contains infinity.")
    if lo < 0 or hi > 1:
        raise ValueError(f"{name} has values outside [0, 1] (min {lo!r}, max {hi!r}); it must hold probabilities.")



def check_inputs(y_true, y_prob, sample_weight, labels=None, stacklevel=1):
    """Validated ``(y, p, w)`` of :func:`smooth_ece`: 0/1 labels (``correct`` for a matrix), predictions, weights.

    A 1-D ``y_prob`` (or one column) holds probabilities of the positive
    class, with labels {0, 1} (any numeric or boolean dtype) or {-1, 1}. An
    (n, k) matrix, k >= 2, is reduced to its top-label problem: the largest
    probability of each row, and whether its column (the first, on ties) is
    the class of ``y_true``, the columns being the classes in sorted order
    (``labels``, else those of ``y_true``: :func:`fastcal._labels.matrix_codes`).
    The weights are rescaled by :func:`fastcal._validation.rescale_weights`
    (no result carries weight units). ``stacklevel`` (of the warning for
    unsorted ``labels``) is counted from the caller.
    """
    arr = np.asarray(y_prob)
    y_arr = column_or_1d(y_true, "y_true")
    if arr.ndim == 2 and arr.shape[1] > 1:
        P = as_float_array(arr, "y_prob")
        check_consistent_length(y_true=y_arr, y_prob=P)
        if P.shape[0] == 0:
            raise ValueError("y_prob must not be empty.")
        _probabilities(P, "y_prob")
        codes, _ = matrix_codes(y_arr, P.shape[1], labels, "y_prob", stacklevel=stacklevel + 1)
        correct, conf = top_label(P, np.ascontiguousarray(codes, dtype=np.int64))
        return correct, conf, check_sample_weight(sample_weight, P.shape[0], rescale=True)
    if labels is not None:
        raise ValueError("labels is for an (n, k) y_prob, whose columns are the classes; a 1-D y_prob is the "
                         "probability of the positive class.")
    p = as_float_array(column_or_1d(y_prob, "y_prob"), "y_prob")
    check_consistent_length(y_true=y_arr, y_prob=p)
    _probabilities(p, "y_prob")
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
    nchunks = -(-n // _CHUNK_ROWS)
    if nchunks <= 1:  # one chunk: its sums are the total (adding them to zeros would change no bit)
        total = np.empty((1, GRID, _k.NCHAN))
        _k.deposit(p, y, w, _CHUNK_ROWS, 0, total, 0, 1)
        return total[0]
    total = np.zeros((GRID, _k.NCHAN))
    slots = np.empty((min(_SLOTS, nchunks), GRID, _k.NCHAN))
    for first in range(0, nchunks, slots.shape[0]):
        used = min(slots.shape[0], nchunks - first)
        threads = min(used, get_num_threads())
        bounds = [(i * used) // threads for i in range(threads + 1)]
        run([(_k.deposit, (p, y, w, _CHUNK_ROWS, first, slots, bounds[i], bounds[i + 1])) for i in range(threads)])
        parallel_for(_k.merge_slots, GRID, slots, used, total, rows=GRID * used * _k.NCHAN)
    return total


def merge_grids(grids):
    """The sum of grid sums (:func:`grid_sums` of chunks), added in order."""
    total = np.zeros((GRID, _k.NCHAN))
    for g in grids:
        total += g
    return total


# ---------------------------------------------------------------------------
# from the grid to the smooth ECE
# ---------------------------------------------------------------------------
def _modes(sigma):
    """Cosine modes of K_sigma above 1e-17 relative: exp(-pi^2 k^2 sigma^2 / 2) >= 1e-17 for k < 2.82 / sigma."""
    return min(GRID, int(math.ceil(2.82 / sigma)) + 1)


def _damped(spectrum, sigma):
    k = _modes(sigma)
    ks = np.arange(k, dtype=np.float64)
    return spectrum[:k] * np.exp(-0.5 * (math.pi * sigma * ks) ** 2)


def _eval_points(sigma, per_sigma):
    need = max(_modes(sigma), int(math.ceil(per_sigma / sigma)))
    return 1 << max(8, (need - 1).bit_length())


def _smece_at(spectrum_r, total_w, sigma, per_sigma=_EVAL_PER_SIGMA):
    """(smECE_sigma, evaluation spacing) from the cosine spectrum of the residual sums."""
    n_eval = _eval_points(sigma, per_sigma)
    c = np.zeros(n_eval)
    d = _damped(spectrum_r, sigma)
    c[: d.shape[0]] = d
    values = scipy.fft.dct(c, type=3)
    h = 1.0 / n_eval
    return _k.abs_integral(values, h) / total_w, h


def _error_bound(sigma, h_eval):
    """Bound on |computed - exact| smECE_sigma: linear binning (h = 1/GRID) and linear quadrature (h_eval)."""
    return _BOUND_C * ((1.0 / GRID) ** 2 + h_eval**2) / sigma**2


def _spectrum(column):
    """a_k = sum_b v_b cos(pi k (b + 1/2) / GRID): the cosine coefficients of the binned sums."""
    return 0.5 * scipy.fft.dct(column, type=2)


def _curve(spectrum_w, spectrum_y, total_w, sigma):
    x = np.linspace(0.0, 1.0, _CURVE_POINTS)
    dw = _damped(spectrum_w, sigma)
    dy = _damped(spectrum_y, sigma)
    k = np.arange(dw.shape[0], dtype=np.float64)
    basis = np.cos(np.pi * np.outer(x, k))
    basis[:, 1:] *= 2.0
    fw = basis @ dw
    fy = basis @ dy
    density = fw / total_w
    keep = density > 1e-9 * density.max()
    y = np.full(x.shape[0], np.nan)
    y[keep] = np.clip(fy[keep] / fw[keep], 0.0, 1.0)
    return x, y, density


def _root(g, lo, hi):
    if g(lo) == 0:
        return lo
    if g(hi) == 0:
        return hi
    return float(scipy.optimize.brentq(g, lo, hi, xtol=_TOL, rtol=4 * np.finfo(float).eps))


def _fixed_point(spectrum_r, total_w):
    """The bandwidth sigma = smECE_sigma in [SIGMA_MIN, 1] (SIGMA_MIN if the fixed point is below it).

    g(sigma) = sigma - smECE_sigma is increasing (slope >= 1), so the root
    is unique. It is first located with a coarse evaluation grid (16 points
    per sigma, cheap), halving sigma from 1 for a bracket; the root of the
    accurate g is then bracketed around that guess (its signs checked, the
    bracket widened until they differ) and closed by Brent's method to
    1e-10. The answer is the accurate function's root: the coarse one only
    saves evaluations.
    """
    def g_at(per_sigma):
        memo = {}

        def g(sigma):
            if sigma not in memo:
                memo[sigma] = sigma - _smece_at(spectrum_r, total_w, sigma, per_sigma)[0]
            return memo[sigma]
        return g

    coarse, fine = g_at(_COARSE_PER_SIGMA), g_at(_EVAL_PER_SIGMA)
    hi, lo = 1.0, 0.5
    while lo > SIGMA_MIN and coarse(lo) > 0:
        hi, lo = lo, max(0.5 * lo, SIGMA_MIN)
    if coarse(lo) > 0:
        guess = lo
    elif coarse(hi) < 0:
        guess = hi
    else:
        guess = _root(coarse, lo, hi)
    width = 1e-3 * guess
    lo, hi = max(SIGMA_MIN, guess - width), min(1.0, guess + width)
    while fine(hi) < 0:
        if hi == 1.0:
            return 1.0
        width *= 4.0
        lo, hi = hi, min(1.0, hi + width)
    while fine(lo) > 0:
        if lo == SIGMA_MIN:
            return SIGMA_MIN
        width *= 4.0
        lo, hi = max(SIGMA_MIN, lo - width), lo
    return _root(fine, lo, hi)


def smooth_ece_from_grid(sums, bandwidth=None):
    """:class:`SmoothECEResult` from :func:`grid_sums` (of all the data): the fixed point unless ``bandwidth`` is given."""
    total_w = float(sums[:, _k.GW].sum())
    spectrum_r = _spectrum(sums[:, _k.GR])
    if bandwidth is None:
        sigma = _fixed_point(spectrum_r, total_w)
    else:
        sigma = float(bandwidth)
    ece, h_eval = _smece_at(spectrum_r, total_w, sigma)
    x, y, density = _curve(_spectrum(sums[:, _k.GW]), _spectrum(sums[:, _k.GY]), total_w, sigma)
    return SmoothECEResult(ece=ece, bandwidth=sigma, error_bound=_error_bound(sigma, h_eval), x=x, y=y,
                           density=density)


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
    :math:`\sigma^*`, found by bisection on :math:`[\sigma_{min}, 1]`
    (:math:`\mathrm{smECE}_\sigma` is non-increasing in :math:`\sigma`, so the
    fixed point is unique), as ``relplot.smECE`` does.

    **Accuracy.** Sums are linearly binned onto :math:`2^{17}` cells
    (:math:`h = 2^{-17}`) and :math:`\int|\cdot|` is taken exactly on the
    piecewise-linear interpolant of the smoothed residual on an evaluation
    grid of spacing :math:`h_e \le \sigma / 128`; the kernel itself is exact
    (its cosine series, not truncated in space). Both discretisations are
    linear interpolations of a Gaussian, whose error is bounded by the
    Peano kernel of linear interpolation (:math:`\le h^2/8`) times
    :math:`\int|\varphi_\sigma''| = 4 e^{-1/2} / (\sqrt{2\pi}\sigma^2)`:

    .. math::

        |\mathrm{smECE}_\sigma^{\text{computed}} - \mathrm{smECE}_\sigma|
        \le \frac{e^{-1/2}}{2\sqrt{2\pi}} \, \bar r \, \frac{h^2 + h_e^2}{\sigma^2}
        \approx 0.121 \, \bar r \, \frac{h^2 + h_e^2}{\sigma^2},

    with :math:`\bar r = \sum_i w_i |f_i - y_i| / W \le 1`. ``error_bound``
    reports it with :math:`\bar r = 1`: below :math:`3 \times 10^{-6}` at
    :math:`\sigma = 0.05`, and at most :math:`3 \times 10^{-5}` at the smallest
    bandwidth :math:`\sigma_{min} = 64 h \approx 4.9 \times 10^{-4}`. At the
    fixed point the same bound holds for the smooth ECE (the map
    :math:`\sigma \mapsto \sigma - \mathrm{smECE}_\sigma` has slope
    :math:`\ge 1`, so an error :math:`\delta` in the function moves the fixed
    point by at most :math:`\delta`), plus the bisection's :math:`10^{-10}`.
    The tests check the bound against an exact O(n m) evaluation.

    **Against relplot.** ``relplot.smECE(p, y)`` agrees to about 1e-3: it
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
