r"""Calibration by group: one clone of a 1-D calibrator per group, and a global fit for the small and unseen ones.

:class:`GroupedCalibrator` wraps any of fastcal's 1-D calibrators
(:class:`~fastcal.IsotonicRegression`, :class:`~fastcal.PlattScaling`,
:class:`~fastcal.BetaCalibration`, :class:`~fastcal.HistogramBinning`,
:class:`~fastcal.VennAbers`). ``fit`` numbers the groups
(:func:`fastcal.multicalibration.group_codes`) and fits the calibrator on all
rows and on each group's rows; a group's model is exactly the model its
calibrator fits on that group's rows alone.

Isotonic step fits of 0/1 labels (the default calibrator) are batched
(:func:`_fit_isotonic_groups`): one counting pass and one scatter lay the rows
out by buckets of consecutive groups, and each bucket (a task of about
:data:`fastcal._parallel.TASK_ROWS` rows, cut by the group sizes alone, taken
by fastcal's threads) is ordered by group and score and fitted group by group
by the PAV engine's kernels, in the arithmetic of each group's own fit (the
same bits). Their predictions run in one pass over the rows
(:func:`_predict_isotonic`). Histogram binning with uniform bins is batched
too (:func:`_fit_histogram_groups`): one pass adds every group's bin sums in
the order of its own fit. Platt scaling and beta calibration check the rows
once, order them by group with one counting sort (:func:`_by_group`) and fit
all groups at once (:func:`_fit_logistic_groups`): each group's Newton
iterations run in lockstep, one pass over the rows per iteration, with the
bits of its own fit. Other calibrators, and the fits that are not batched,
fit a clone per group on those rows, the groups cut into tasks of about
``TASK_ROWS`` rows that fastcal's threads take in turn (Platt scaling and
beta calibration with their ``fit_arrays``, :func:`_group_fit`).
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from . import _grouped_kernels as _gk
from . import _isotonic_kernels as _ik
from . import _segment_coding_kernels as _k
from . import _binning, _parallel
from ._base import BaseCalibrator, check_is_fitted
from ._pav_engine import chunk_count, resolution
from ._persist import register
from ._validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_finite,
    check_sample_weight,
    column_or_1d,
    is_binary,
    rescale_weights,
)
from .beta import BetaCalibration
from .beta import check_model as check_beta_model
from .beta import fit_arrays as beta_fit_arrays
from .beta import fit_groups as beta_fit_groups
from .beta import fitted_estimator as beta_estimator
from .beta import fitted_estimators as beta_estimators
from .histogram import HistogramBinning
from .histogram import bin_edges as histogram_bin_edges
from .histogram import check_params as check_histogram_params
from .histogram import fitted_estimators as histogram_estimators
from .isotonic import IsotonicRegression
from .multicalibration import group_codes
from .platt import PlattScaling
from .platt import check_max_iter as check_platt_max_iter
from .platt import check_tol as check_platt_tol
from .platt import fit_arrays as platt_fit_arrays
from .platt import fit_groups as platt_fit_groups
from .platt import fitted_estimators as platt_estimators
from .platt import fitted_estimator as platt_estimator
from .venn_abers import VennAbers

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["GroupedCalibrator"]  # internal API: fit_group_models, ONE_D, check_calibrator


def _clone(calibrator):
    """An unfitted copy of ``calibrator`` with the same parameters (scikit-learn's ``clone``, for fastcal's own)."""
    return type(calibrator)(**calibrator.get_params())


#: The calibrators a GroupedCalibrator clones: fastcal's calibrators of one column of scores.
ONE_D = (IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning, VennAbers)


def check_calibrator(calibrator):
    if calibrator is None:
        return IsotonicRegression(out_of_bounds="clip")
    if type(calibrator) not in ONE_D:
        raise TypeError(f"calibrator must be one of fastcal's 1-D calibrators (IsotonicRegression, PlattScaling, "
                        f"BetaCalibration, HistogramBinning, VennAbers), got {calibrator!r}.")
    return calibrator


def _group_sizes(codes, k):
    """``np.bincount(codes, minlength=k)`` on fastcal's threads (:func:`~fastcal._grouped_kernels.count_codes`)."""
    bufs = _parallel.parallel_accumulate(_gk.count_codes, codes.shape[0], codes,
                                         buffer=lambda: np.zeros(k, dtype=np.int64))
    return bufs[0] if len(bufs) == 1 else np.sum(bufs, axis=0)


def _tasks(starts, groups):
    """The groups ``groups`` cut into runs of consecutive groups of about ``TASK_ROWS`` rows each (by size)."""
    tasks, current, rows = [], [], 0
    for g in groups:
        current.append(g)
        rows += int(starts[g + 1] - starts[g])
        if rows >= _parallel.TASK_ROWS:
            tasks.append(current)
            current, rows = [], 0
    if current:
        tasks.append(current)
    return tasks


def _batched_fit(template):
    """The batched fit of the groups' clones of ``template``, or None (a clone's ``fit`` per group):
    :func:`_fit_isotonic_groups` for isotonic step fits of a given direction (``increasing="auto"`` and centered
    fits are not batched), :func:`_fit_histogram_groups` for uniform histogram binning."""
    kind = type(template)
    if kind is IsotonicRegression:
        params = template.get_params()
        batchable = not isinstance(params["increasing"], str) and not params["centered"]
        return _fit_isotonic_groups if batchable else None
    if kind is HistogramBinning:
        return _fit_histogram_groups if template.strategy == "uniform" else None
    return None


def _fit_isotonic_groups(template, s, yv, weights, codes, sizes, fitted, models):
    """Fit an ``IsotonicRegression`` like ``template`` on the rows of each group ``fitted[i]`` (of the group
    ``codes``; ``sizes``: the rows of each group), all in one pass; set ``models[i]``; return the positions ``i``
    left to the calibrator's own ``fit``.

    The groups are cut into buckets of consecutive groups of about
    ``TASK_ROWS`` rows (by their sizes alone). One counting pass and one
    scatter (:mod:`fastcal._grouped_kernels`, by row chunks fixed by the row
    count) lay the rows out bucket by bucket (and by label, without weights),
    in input order; rows of weight zero are dropped. Each bucket, taken by
    one of fastcal's threads, is then ordered by group and fitted group by
    group (:func:`~fastcal._isotonic_kernels.pav_groups`), each group's
    weights rescaled by its own power of two as its own fit does
    (:func:`~fastcal._validation.rescale_weights`). Left to the calibrator:
    fits of labels other than 0/1, groups without a row of positive weight
    (whose fit raises) and groups of so many rows that their own fit is cut
    into several chunks (:func:`fastcal._pav_engine.chunk_count`).
    """
    params = template.get_params()
    x = as_float_array(s, "scores")  # the fit's own conversions: float32 stays float32
    labels = as_label_array(yv, "y")
    if not is_binary(labels):
        return list(range(fitted.size))
    n = x.shape[0]
    w = check_sample_weight(weights, n)  # a scalar weight: the same weight on every row, as in each fit
    weighted = w is not None
    sizes = np.bincount(codes[w > 0], minlength=sizes.size) if weighted else sizes
    counts = sizes[fitted]  # a copy
    own = np.flatnonzero([r == 0 or chunk_count(int(r)) > 1 for r in counts]) if (
        counts.min() == 0 or chunk_count(int(counts.max())) > 1) else np.empty(0, dtype=np.int64)
    counts[own] = 0
    group_starts = np.concatenate([[0], np.cumsum(counts)])
    buckets = _tasks(group_starts, range(fitted.size))
    first = np.array([b[0] for b in buckets] + [fitted.size], dtype=np.int64)
    bucket_of = np.repeat(np.arange(len(buckets)), np.diff(first))
    group_of = np.full(sizes.size, -1, dtype=np.int64)
    group_of[fitted] = np.arange(fitted.size)
    group_of[fitted[own]] = -1
    slots = len(buckets) * (1 if weighted else 2)
    bounds = _parallel.task_bounds(n)
    chunks = len(bounds) - 1
    per_chunk = np.zeros((chunks, slots), dtype=np.int64)
    wmax = np.zeros((chunks if weighted else 1, fitted.size), dtype=w.dtype if weighted else np.float64)
    wv = w if weighted else np.empty(0)
    _parallel.run([(_gk.count_slots, (codes, group_of, bucket_of, labels, wv, not weighted, per_chunk[c],
                                      wmax[min(c, wmax.shape[0] - 1)], bounds[c], bounds[c + 1]))
                   for c in range(chunks)])
    starts = np.zeros(slots + 1, dtype=np.int64)
    np.cumsum(per_chunk.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(per_chunk, axis=0) - per_chunk
    if weighted:  # each group's own rescaling (rescale_weights), on the rows, before they move
        wv = _rescale_by_group(wv, codes, fitted, group_of.size, wmax.max(axis=0))[1]
    xs = np.empty(starts[-1], dtype=x.dtype)
    gs = np.empty(starts[-1], dtype=np.int32)
    ws = np.empty(starts[-1] if weighted else 0, dtype=wv.dtype)
    _parallel.run([(_gk.scatter_slots, (codes, group_of, bucket_of, labels, wv, not weighted, x, offsets[c], xs, gs,
                                        ws, bounds[c], bounds[c + 1])) for c in range(chunks)])
    increasing = bool(params["increasing"])
    sign = 1.0 if increasing else -1.0
    y_lo = -np.inf if params["y_min"] is None else float(params["y_min"])
    y_hi = np.inf if params["y_max"] is None else float(params["y_max"])
    eps = resolution(x.dtype)
    n_knots = np.zeros(fitted.size, dtype=np.int64)
    step = 1 if weighted else 2

    def fit_bucket(k):
        a, c, b = starts[step * k], starts[step * k + step - 1], starts[step * (k + 1)]
        knots_x, knots_y = np.empty(b - a, dtype=x.dtype), np.empty(b - a, dtype=x.dtype)
        g0, ng = first[k], first[k + 1] - first[k]
        if weighted:
            z, zw, s0 = _ik.by_group(xs[a:b], ws[a:b], gs[a:b], g0, ng)
            order = np.empty(b - a, dtype=np.int64)
            bounds = s0.tolist()
            for lo, hi in zip(bounds[:-1], bounds[1:]):
                order[lo:hi] = np.argsort(z[lo:hi], kind="stable")  # NumPy's stable sort: each group's own order
            m = _ik.pav_groups_weighted(z, zw, order, s0, g0, eps, sign, y_lo, y_hi, knots_x, knots_y, n_knots)
        else:
            none = ws[:0]
            z, _, s0 = _ik.by_group(xs[a:c], none, gs[a:c], g0, ng)
            o, _, s1 = _ik.by_group(xs[c:b], none, gs[c:b], g0, ng)
            for run, bounds in ((z, s0.tolist()), (o, s1.tolist())):
                for lo, hi in zip(bounds[:-1], bounds[1:]):
                    run[lo:hi].sort()  # NumPy's sort: several times Numba's, and the order of ties cannot matter
            m = _ik.pav_groups(z, s0, o, s1, g0, eps, sign, y_lo, y_hi, knots_x, knots_y, n_knots)
        return knots_x[:m], knots_y[:m]

    results = _parallel.run([(fit_bucket, (k,)) for k in range(len(buckets))])
    for k, (knots_x, knots_y) in enumerate(results):
        start = 0
        for i, t in zip(range(first[k], first[k + 1]), n_knots[first[k]:first[k + 1]].tolist()):
            if t:
                est = IsotonicRegression(**params)
                est.increasing_ = increasing
                est.X_thresholds_, est.y_thresholds_ = knots_x[start:start + t], knots_y[start:start + t]
                est.X_min_, est.X_max_ = knots_x[start], knots_x[start + t - 1]
                models[i] = est
                start += t
    return own.tolist()


def _group_exponents(codes, w, fitted, n_groups):
    """:func:`_rescale_by_group` of the weights ``w`` of the groups ``fitted`` (of ``n_groups`` numbered by
    ``codes``), their largest weights found in one pass."""
    group_of = np.full(n_groups, -1, dtype=np.int64)
    group_of[fitted] = np.arange(fitted.size)
    wmax = np.zeros(fitted.size, dtype=np.float64)
    _gk.group_max(codes, group_of, w, wmax)
    return _rescale_by_group(w, codes, fitted, n_groups, wmax)


def _rescale_by_group(w, codes, fitted, n_groups, wmax):
    """The exponent of :func:`~fastcal._validation.rescale_weights` of each group ``fitted[i]`` (of ``n_groups``
    numbered by ``codes``; ``wmax[i]``: its largest weight), and the weights ``w`` rescaled by their group's power
    of two, as each group's own fit rescales its rows (the same bits); the rows of the other groups unchanged."""
    exponent = np.zeros(n_groups, dtype=np.int64)
    usable = (wmax > 0) & np.isfinite(wmax)  # weight_exponent(None, scale_max=m) of each m, on the array
    exponent[fitted] = np.where(usable, np.frexp(np.where(usable, wmax, 1.0))[1] - 1, 0)
    if not exponent.any():  # every group's largest weight in [1, 2): its weights as they are, as rescale_weights
        return exponent, w
    return exponent, np.ldexp(w, -exponent[codes]).astype(w.dtype, copy=False)


def _fit_histogram_groups(template, s, yv, weights, codes, sizes, fitted, models):
    """Fit a ``HistogramBinning`` like ``template`` (uniform bins) on the rows of each group ``fitted[i]``; set
    ``models[i]``; return the positions ``i`` left to the calibrator's own ``fit``.

    Uniform edges do not depend on the rows, so one sequential pass in input order
    (:func:`~fastcal._grouped_kernels.bin_sums`) adds every group's bin table in the order and arithmetic of its
    own fit (:func:`fastcal._binning.bin_stats`, one chunk; weights rescaled by the group's own power of two).
    Left to the calibrator: groups whose own fit cuts the rows into several chunks
    (:func:`fastcal._binning.n_chunks`), groups without weight (whose fit raises), and all groups when their
    tables would take more memory than the rows.
    """
    n_bins, strategy = check_histogram_params(template.n_bins, template.strategy)
    p = as_float_array(s, "p")
    labels = as_label_array(yv, "y")
    n = p.shape[0]
    w = check_sample_weight(weights, n)
    if fitted.size * n_bins * 2 > max(n, 1 << 20):  # the groups' sums: two float64 a bin
        return list(range(fitted.size))
    floats = n_bins * _binning.NSTAT  # a bin table of the own fit
    own = np.flatnonzero([_binning.n_chunks(int(r), floats) > 1 for r in sizes[fitted].tolist()])
    group_of = np.full(sizes.size, -1, dtype=np.int64)
    group_of[fitted] = np.arange(fitted.size)
    group_of[fitted[own]] = -1
    exponent = np.zeros(sizes.size, dtype=np.int64)
    if w is not None:
        exponent, w = _group_exponents(codes, w, fitted, sizes.size)
    edges = histogram_bin_edges(n_bins, strategy, n, None)
    table = np.zeros((fitted.size, n_bins, 2))
    _gk.bin_sums(p, labels, w if w is not None else np.empty(0), codes, group_of, np.ascontiguousarray(edges[1:-1]),
                 table)
    done = np.flatnonzero((group_of[fitted] >= 0) & (table[:, :, 0].sum(axis=1) > 0))
    fits = histogram_estimators(n_bins, strategy, edges, table[done, :, 0], table[done, :, 1], exponent[fitted[done]])
    for i, est in zip(done.tolist(), fits):
        models[i] = est
    return [i for i in range(fitted.size) if models[i] is None]


def _by_group(codes, sizes, s, y, w):
    """``(s, y, w, starts)``: the rows ordered by group, stably (group ``g``: rows ``starts[g]:starts[g + 1]``;
    ``w`` None stays None); ``sizes`` the rows of each group.

    Numbers are moved in one counting pass and one scatter by row chunks fixed by the numbers of rows and groups
    (at most one per ``k`` rows, ``k`` groups, so that the per-chunk counts take no more memory than the rows;
    :func:`~fastcal._grouped_kernels.count_codes`, :func:`~fastcal._grouped_kernels.scatter_rows`), not gathered
    through an order; other dtypes (object, float16, non-native byte order) are taken through the counting order.
    """
    n, k = codes.shape[0], sizes.size
    starts = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    if not all(a.dtype.isnative and (a.dtype.kind in "biu" or a.dtype.char in "fd") for a in (s, y, w)
               if a is not None):
        order = _k.counting_order(codes, k)[0]
        return np.take(s, order), np.take(y, order), (None if w is None else np.take(w, order)), starts
    bounds = _parallel.task_bounds(n, rows=min(n, _parallel.TASK_ROWS * max(1, n // k)))  # at most n / k chunks:
    chunks = len(bounds) - 1  # their counts per group take no more memory than the rows
    none = np.empty(0)
    per_chunk = np.zeros((chunks, k), dtype=np.int64)
    _parallel.run([(_gk.count_codes, (codes, per_chunk[c], bounds[c], bounds[c + 1])) for c in range(chunks)])
    offsets = starts[:-1] + np.cumsum(per_chunk, axis=0) - per_chunk
    so, yo = np.empty_like(s), np.empty_like(y)
    wo = np.empty_like(w) if w is not None else none
    _parallel.run([(_gk.scatter_rows, (codes, s, y, w if w is not None else none, offsets[c], so, yo, wo, bounds[c],
                                       bounds[c + 1])) for c in range(chunks)])
    return so, yo, (wo if w is not None else None), starts


def _group_fit(template, s, yv, weights):
    """``(fit_one, s, y, w)``: ``fit_one(s_g, y_g, w_g)`` returns the fit of a clone of ``template`` on the rows
    of one group (``w_g`` a slice of ``w``, or the scalar or None of ``weights``), taking slices of ``s``, ``y``
    and ``w``.

    Platt scaling and beta calibration check all rows once (as the global fit did: the
    conversions of their ``fit``, elementwise) and fit each group's slices with their ``fit_arrays`` (the fit
    their ``fit`` runs after its checks: the same bits, without the checks' fixed cost per group); a group
    without weight goes through ``fit``, which raises. Other calibrators: their ``fit``.
    """
    kind, params = type(template), template.get_params()

    def own(sg, yg, wg):
        return kind(**params).fit(sg, yg, sample_weight=wg)

    if kind not in (PlattScaling, BetaCalibration):
        w = weights if weights is not None and not isinstance(weights, numbers.Real) else None
        return own, s, yv, w
    x = as_float_array(s, "p" if kind is BetaCalibration else "scores")
    labels = as_label_array(yv, "y")
    with np.errstate(over="ignore"):
        w = check_sample_weight(weights, x.shape[0])
    max_iter, tol = check_platt_max_iter(params["max_iter"]), check_platt_tol(params["tol"])
    if kind is PlattScaling:
        def fit(sg, yg, wg):
            return platt_estimator(platt_fit_arrays(sg, yg, wg, max_iter, tol), params["max_iter"], params["tol"])
    else:
        model = check_beta_model(params["parameters"])

        def fit(sg, yg, wg):  # the weights rescaled as BetaCalibration.fit's check rescales them
            fitted = beta_fit_arrays(sg, yg, rescale_weights(wg)[0], model, max_iter, tol)
            return beta_estimator(fitted, params["parameters"], params["max_iter"], params["tol"])

    def fit_one(sg, yg, wg):
        with np.errstate(over="ignore"):
            weightless = wg is not None and not wg.sum(dtype=np.float64) > 0
        return own(sg, yg, wg) if weightless else fit(sg, yg, wg)

    return fit_one, x, labels, w


def _group_rows(starts, fitted, positions, w):
    """The positions ``positions`` (of ``fitted``) as an array, the bounds ``lo``, ``hi`` of their groups' rows in
    rows ordered by group (group ``g``: rows ``starts[g]:starts[g + 1]``), and the weights ``w`` of the rows
    ordered by group with each of these groups' rows rescaled by its own power of two, with its exponent, as the
    group's own fit rescales them (:func:`_rescale_by_group`; None, None without weights)."""
    positions = np.asarray(positions, dtype=np.int64)
    groups = fitted[positions]
    lo, hi = starts[groups], starts[groups + 1]
    if w is None:
        return positions, lo, hi, None, None
    sizes = np.diff(starts)
    nonempty = np.flatnonzero(sizes)
    wmax = np.zeros(sizes.size)
    wmax[nonempty] = np.maximum.reduceat(w, starts[nonempty])
    exponent, w = _rescale_by_group(w, np.repeat(np.arange(sizes.size), sizes), groups, sizes.size, wmax[groups])
    return positions, lo, hi, w, exponent[groups]


def _fit_logistic_groups(template, s, y, w, starts, fitted, positions, models):
    """Fit a ``PlattScaling`` or a ``BetaCalibration`` like ``template`` on the rows of each group ``fitted[i]``
    (``i`` in ``positions``) of the validated rows ``s``, ``y``, ``w`` ordered by group (group ``g``: rows
    ``starts[g]:starts[g + 1]``), all at once (:func:`fastcal.platt.fit_groups`, :func:`fastcal.beta.fit_groups`:
    each group's own Newton iterations, in lockstep, with the bits of its own fit); set ``models[i]``; return the
    positions left to the calibrator's own fit (those functions say which)."""
    params = template.get_params()
    max_iter, tol = check_platt_max_iter(params["max_iter"]), check_platt_tol(params["tol"])
    positions, lo, hi, w, exponent = _group_rows(starts, fitted, positions, w)
    if type(template) is PlattScaling:
        a, b, n_iter, done = platt_fit_groups(s, y, w, lo, hi, exponent, max_iter, tol)
        ok = np.flatnonzero(done)
        fits = platt_estimators(a[ok], b[ok], n_iter[ok], params["max_iter"], params["tol"])
    else:
        a, b, c, m, n_iter, done = beta_fit_groups(s, y, w, lo, hi, check_beta_model(params["parameters"]), max_iter,
                                                   tol)
        ok = np.flatnonzero(done)
        fits = beta_estimators(a[ok], b[ok], c[ok], m[ok], n_iter[ok], params["parameters"], params["max_iter"],
                               params["tol"])
    for i, est in zip(positions[ok].tolist(), fits):
        models[i] = est
    return positions[~done]


def fit_group_models(calibrator, scores, y, codes, sizes, fitted, sample_weight=None):
    """The fits of clones of ``calibrator`` on the rows of each group ``fitted[i]`` (internal API of
    :class:`GroupedCalibrator` and of the engine's :func:`fastcal._engine.grouped.fit_grouped`).

    ``codes``: each row's group number (int64, ``0 <= code < sizes.size``); ``sizes``: the rows of each group;
    ``fitted``: the numbers of the groups to fit (ascending); ``scores``, ``y``: 1-D, of equal length;
    ``sample_weight``: None, a scalar or a 1-D array. A group's model is the calibrator's fit on that group's
    rows alone, in their order (batched where :func:`_batched_fit` allows, with the same bits).
    """
    models: list[Any] = [None] * fitted.size
    generic: Any = range(fitted.size)
    batched = _batched_fit(calibrator)
    if batched is not None and fitted.size:
        generic = batched(calibrator, scores, y, sample_weight, codes, sizes, fitted, models)
    if not len(generic):
        return models
    fit_one, s, yv, w = _group_fit(calibrator, scores, y, sample_weight)
    s_sorted, y_sorted, w_sorted, starts = _by_group(codes, sizes, s, yv, w)
    if type(calibrator) in (PlattScaling, BetaCalibration):
        generic = _fit_logistic_groups(calibrator, s_sorted, y_sorted, w_sorted, starts, fitted, generic, models)

    def fit_groups(positions):
        for i in positions:
            a, b = starts[fitted[i]], starts[fitted[i] + 1]
            weight = w_sorted[a:b] if w_sorted is not None else sample_weight
            models[i] = fit_one(s_sorted[a:b], y_sorted[a:b], weight)

    generic = np.asarray(generic, dtype=np.int64)
    tasks = _tasks(np.concatenate([[0], np.cumsum(sizes[fitted[generic]])]), range(generic.size))
    _parallel.run([(fit_groups, (generic[task],)) for task in tasks])
    return models


@register
class GroupedCalibrator(BaseCalibrator):
    r"""One calibrator per group, the global one for groups too small or unseen.

    Parameters
    ----------
    calibrator : fastcal 1-D calibrator, default=None
        The calibrator cloned for each group and for all rows
        (None: ``IsotonicRegression(out_of_bounds="clip")``); it is not fitted itself.
    min_samples_per_group : int, default=100
        Fewest rows of a group that gets a calibrator of its own; the rows of
        smaller groups (and of groups unseen at fit) are calibrated by the global fit.

    Attributes
    ----------
    groups_ : list
        The groups with a calibrator of their own, in their order of :func:`fastcal.multicalibration.group_codes`.
    calibrators_ : list
        Their fitted calibrators.
    global_calibrator_ : calibrator
        The calibrator fitted on every row.
    group_counts_ : ndarray of int64
        Rows of each group of ``groups_`` at fit.

    Notes
    -----
    ``fit(scores, y, groups)`` and ``predict(scores, groups)`` take the
    groups as an extra argument (a 1-D array of any hashable values: ints,
    strings, a pandas categorical; NaN and None are one group), so
    scikit-learn's estimator checks, which call ``fit(X, y)``, do not apply;
    the conventions they check are tested in ``tests/test_grouped.py``.

    With an :class:`~fastcal.IsotonicRegression` of a given direction
    (``increasing`` True or False, not centered) and 0/1 labels, all groups
    are fitted in one batched pass (see :mod:`fastcal.grouped`) with the bits
    of their own fits, and ``predict`` runs in one pass over the rows; so are
    the fits of :class:`~fastcal.HistogramBinning` with uniform bins, of
    :class:`~fastcal.PlattScaling` and of :class:`~fastcal.BetaCalibration`
    (``"abm"``; each group's Newton iterations in lockstep, one pass over the
    rows per iteration). Other calibrators and parameters, and the groups
    whose fit leaves the Newton driver's common path, fit one clone per group,
    with the same bits.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import GroupedCalibrator, PlattScaling
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=2000)
    >>> g = rng.choice(["fr", "de"], 2000)
    >>> y = (rng.uniform(size=2000) < 1 / (1 + np.exp(np.where(g == "fr", -2 * s, -s)))).astype(int)
    >>> cal = GroupedCalibrator(PlattScaling()).fit(s, y, g)
    >>> cal.groups_, [round(c.a_, 1) for c in cal.calibrators_]
    (['de', 'fr'], [-1.0, -2.2])
    >>> cal.predict([0.0, 1.0], ["fr", "us"]).round(2)  # "us": the global fit
    array([0.48, 0.81])
    """

    groups_: list[Any]
    calibrators_: list[Any]
    global_calibrator_: Any
    group_counts_: NDArray[np.int64]

    _one_d_input = True
    _state_schema: ClassVar[dict[str, str]] = {
        "groups_": "values", "calibrators_": "models", "global_calibrator_": "model", "group_counts_": "array",
    }

    def __init__(self, calibrator: Any = None, *, min_samples_per_group: int = 100) -> None:
        self.calibrator = calibrator
        self.min_samples_per_group = min_samples_per_group

    def _validate_params(self):
        minimum = self.min_samples_per_group
        if not isinstance(minimum, numbers.Integral) or isinstance(minimum, bool) or minimum < 1:
            raise ValueError(f"min_samples_per_group must be an integer >= 1; got {minimum!r}.")
        return {"calibrator": check_calibrator(self.calibrator), "min_samples_per_group": int(minimum)}

    def fit(self, scores: ArrayLike, y: ArrayLike, groups: ArrayLike,
            sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the global calibrator and one per group of at least ``min_samples_per_group`` rows; returns ``self``."""
        params = self._validate_params()
        template, minimum = params["calibrator"], params["min_samples_per_group"]
        s = column_or_1d(scores, "scores")
        yv = column_or_1d(y, "y")
        g = column_or_1d(groups, "groups")
        w = None
        if sample_weight is not None and not isinstance(sample_weight, numbers.Real):
            w = column_or_1d(sample_weight, "sample_weight")
        check_consistent_length(scores=s, y=yv, groups=g, sample_weight=w)
        weights = w if w is not None else sample_weight
        global_fit = _clone(template).fit(s, yv, sample_weight=weights)  # validates scores, labels and weights
        codes, uniques = group_codes(g, "groups")
        sizes = _group_sizes(codes, len(uniques))
        fitted = np.flatnonzero(sizes >= minimum)
        models = fit_group_models(template, s, yv, codes, sizes, fitted, weights)
        return self._set_fits([uniques[i] for i in fitted], models, global_fit, sizes[fitted])

    @classmethod
    def from_fits(cls, calibrator: Any, groups: list[Any], models: list[Any], global_model: Any,
                  counts: ArrayLike, *, min_samples_per_group: int = 100) -> GroupedCalibrator:
        """A fitted ``GroupedCalibrator`` from models fitted elsewhere (internal API of the engine's
        :func:`fastcal._engine.grouped.fit_grouped`; ``fit`` assembles its own fits through it too).

        ``groups``: the groups with a model of their own, in the order of
        :func:`fastcal.multicalibration.group_codes` of all groups; ``models``: their fitted clones of
        ``calibrator``; ``global_model``: the clone fitted on all rows; ``counts``: the rows of each group.
        """
        est = cls(calibrator, min_samples_per_group=min_samples_per_group)
        est._validate_params()
        counts = np.asarray(counts, dtype=np.int64)
        if not len(groups) == len(models) == counts.shape[0]:
            raise ValueError(f"groups, models and counts differ in length: {len(groups)}, {len(models)}, "
                             f"{counts.shape[0]}.")
        return est._set_fits(list(groups), list(models), global_model, counts)

    def _set_fits(self, groups, models, global_model, counts):
        self.groups_ = groups
        self.calibrators_ = models
        self.global_calibrator_ = global_model
        self.group_counts_ = np.asarray(counts).astype(np.int64)
        return self

    def predict(self, scores: ArrayLike, groups: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities: each row by its group's calibrator, or the global one (small or unseen group)."""
        check_is_fitted(self, "global_calibrator_")
        s = column_or_1d(scores, "scores", min_size=0)
        g = column_or_1d(groups, "groups", min_size=0)
        check_consistent_length(scores=s, groups=g)
        flat = self._flat_isotonic()
        if flat is not None:
            return _predict_isotonic(flat, s, g, self.groups_)
        out = np.asarray(self.global_calibrator_.predict(s))
        if not s.shape[0] or not self.calibrators_:
            return out
        codes, uniques = group_codes(g, "groups")
        index = {u: i for i, u in enumerate(self.groups_)}
        model = np.array([index.get(u, -1) for u in uniques], dtype=np.int64)
        rows = model[codes]
        known = np.flatnonzero(rows >= 0)
        order, starts = _k.counting_order(rows[known], len(self.groups_))
        for i in np.flatnonzero(np.diff(starts)):
            at = known[order[starts[i]:starts[i + 1]]]
            out[at] = self.calibrators_[i].predict(s[at])
        return out

    def _flat_isotonic(self):
        """The isotonic models of the groups and the global one (last) as flat arrays, for :func:`_predict_isotonic`
        (made once per fit): None unless every model is an ``IsotonicRegression`` of one dtype predicting
        NaN or the nearest bound out of its range."""
        models = [*self.calibrators_, self.global_calibrator_]
        cached = self.__dict__.get("_flat")
        if cached is not None and cached[0] is self.global_calibrator_ and len(cached[1]) == len(models):
            return cached[2]
        flat = None
        if all(type(m) is IsotonicRegression for m in models):
            bounds = {m.out_of_bounds for m in models}
            dtypes = {m.X_thresholds_.dtype for m in models}
            if len(bounds) == 1 and bounds <= {"nan", "clip"} and len(dtypes) == 1:
                counts = np.array([m.X_thresholds_.shape[0] for m in models], dtype=np.int64)
                flat = (np.concatenate([[0], np.cumsum(counts)]),
                        np.concatenate([m.X_thresholds_ for m in models]),
                        np.concatenate([m.y_thresholds_ for m in models]), bounds == {"clip"})
        self.__dict__["_flat"] = (self.global_calibrator_, models, flat)
        return flat

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_flat", None)
        return state

    def _check_loaded_state(self):
        self._validate_params()
        if len(self.groups_) != len(self.calibrators_) or self.group_counts_.shape != (len(self.groups_),):
            raise ValueError("invalid fastcal model: groups_, calibrators_ and group_counts_ differ in length")
        for model in [self.global_calibrator_, *self.calibrators_]:
            if type(model) not in ONE_D:
                raise ValueError(f"invalid fastcal model: {type(model).__name__} is not a 1-D calibrator")
        if len(set(map(_key, self.groups_))) != len(self.groups_):
            raise ValueError("invalid fastcal model: groups_ has a group twice")


def _predict_isotonic(flat, s, g, groups):
    """Predictions of isotonic models by group in one pass over the rows
    (:func:`~fastcal._isotonic_kernels.predict_groups`): each row by its group's model, or the global one (the
    last of ``flat``, :meth:`GroupedCalibrator._flat_isotonic`); the bits of each model's ``predict``."""
    offsets, knots_x, knots_y, clip = flat
    t = as_float_array(s, "scores", dtype=knots_x.dtype)  # as IsotonicRegression.predict casts its input
    check_finite(t, "scores")
    n = t.shape[0]
    out = np.empty(n, dtype=t.dtype)
    if not n:
        return out
    codes, uniques = group_codes(g, "groups")
    index = {u: i for i, u in enumerate(groups)}
    model = np.array([index.get(u, len(groups)) for u in uniques], dtype=np.int64)[codes]
    _parallel.parallel_for(_ik.predict_groups, n, t, model, offsets, knots_x, knots_y, clip, out)
    return out


def _key(value):
    return (type(value) is str, value)
