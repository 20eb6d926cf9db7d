"""The per-group fits of :class:`fastcal.GroupedCalibrator`: :func:`fit_group_models`, the internal API that the
in-memory fit and the engine's driver (:mod:`fastcal.grouped._rows`) share.

Isotonic step fits of 0/1 labels are batched (:func:`_fit_isotonic_groups`):
one counting pass and one scatter lay the rows out by buckets of consecutive
groups, and each bucket (a task of about :data:`fastcal._core.parallel.TASK_ROWS`
rows, cut by the group sizes alone, taken by fastcal's threads) is ordered by
group and score and fitted group by group by the isotonic fit's kernels, in the
arithmetic of each group's own fit (the same bits). Histogram binning with
uniform bins is batched too (:func:`_fit_histogram_groups`): one pass adds
every group's bin sums in the order of its own fit. Platt scaling and beta
calibration fit every group's Newton steps in lockstep passes
(:func:`fastcal.platt.fit_groups`, :func:`fastcal.beta.fit_groups`), each
with the bits of its own fit. Other calibrators, and groups a batched fit
leaves to their own, fit a clone per group (:func:`_group_fit`): the rows
ordered by group with one counting sort, the groups cut into tasks of about
``TASK_ROWS`` rows that fastcal's threads take in turn.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from . import _kernels as _gk
from .. import _binning
from .._core import parallel as _parallel
from .._coding import count_values, counting_order
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_sample_weight,
    is_binary,
    rescale_weights,
)
from ..beta import BetaCalibration
from ..beta import check_model as check_beta_model
from ..beta import fit_arrays as beta_fit_arrays
from ..beta import fit_groups as beta_fit_groups
from ..beta import fitted_estimator as beta_estimator
from ..beta import fitted_estimators as beta_estimators
from ..histogram import HistogramBinning
from ..histogram import bin_edges as histogram_bin_edges
from ..histogram import check_params as check_histogram_params
from ..histogram import fitted_estimators as histogram_estimators
from ..isotonic import IsotonicRegression, chunk_count, resolution
from ..platt import PlattScaling
from ..platt import check_max_iter as check_platt_max_iter
from ..platt import check_tol as check_platt_tol
from ..platt import fit_arrays as platt_fit_arrays
from ..platt import fit_groups as platt_fit_groups
from ..platt import fitted_estimators as platt_estimators
from ..platt import fitted_estimator as platt_estimator

__all__ = ["fit_group_models"]


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
    scatter (:mod:`fastcal.grouped._kernels`, by row chunks fixed by the row
    count) lay the rows out bucket by bucket (and by label, without weights),
    in input order; rows of weight zero are dropped. Each bucket, taken by
    one of fastcal's threads, is then ordered by group and fitted group by
    group (:func:`~fastcal.grouped._kernels.pav_groups`), each group's
    weights rescaled by its own power of two as its own fit does
    (:func:`~fastcal._core.validation.rescale_weights`). Left to the calibrator:
    fits of labels other than 0/1, groups without a row of positive weight
    (whose fit raises) and groups of so many rows that their own fit is cut
    into several chunks (:func:`fastcal.isotonic._pav.chunk_count`).
    """
    params = template.get_params()
    x = as_float_array(s, "scores")  # the fit's own conversions: float32 stays float32
    labels = as_label_array(yv, "y")
    if not is_binary(labels):
        return list(range(fitted.size))
    n = x.shape[0]
    w = check_sample_weight(weights, n)  # a scalar weight: the same weight on every row, as in each fit
    weighted = w is not None
    if weighted:  # the rows of positive weight, the rows of each group's own fit
        sizes = np.sum(_parallel.parallel_accumulate(_gk.count_positive, n, codes, w,
                                                     buffer=lambda: np.zeros(sizes.size, dtype=np.int64)), axis=0)
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
            z, zw, s0 = _gk.by_group(xs[a:b], ws[a:b], gs[a:b], g0, ng)
            keys = np.empty(b - a, dtype=np.uint64)
            p = _gk.group_score_keys(z.view(np.uint64 if z.dtype.itemsize == 8 else np.uint32), s0, keys)
            keys.sort()  # NumPy's sort of distinct keys (no stable argsort: 3-8x slower); then each group's order
            order = np.empty(b - a, dtype=np.int64)
            _gk.order_in_groups(z, s0, keys, p, order)
            m = _gk.pav_groups_weighted(z, zw, order, s0, g0, eps, sign, y_lo, y_hi, knots_x, knots_y, n_knots)
        else:
            none = ws[:0]
            z, _, s0 = _gk.by_group(xs[a:c], none, gs[a:c], g0, ng)
            o, _, s1 = _gk.by_group(xs[c:b], none, gs[c:b], g0, ng)
            for run, bounds in ((z, s0.tolist()), (o, s1.tolist())):
                for lo, hi in zip(bounds[:-1], bounds[1:]):
                    run[lo:hi].sort()  # NumPy's sort: several times Numba's, and the order of ties cannot matter
            m = _gk.pav_groups(z, s0, o, s1, g0, eps, sign, y_lo, y_hi, knots_x, knots_y, n_knots)
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
    """The exponent of :func:`~fastcal._core.validation.rescale_weights` of each group ``fitted[i]`` (of ``n_groups``
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
    (:func:`~fastcal.grouped._kernels.bin_sums`) adds every group's bin table in the order and arithmetic of its
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
    :func:`~fastcal._coding._kernels.count_values`, :func:`~fastcal.grouped._kernels.scatter_rows`), not gathered
    through an order; other dtypes (object, float16, non-native byte order) are taken through the counting order.
    """
    n, k = codes.shape[0], sizes.size
    starts = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(sizes, out=starts[1:])
    if not all(a.dtype.isnative and (a.dtype.kind in "biu" or a.dtype.char in "fd") for a in (s, y, w)
               if a is not None):
        order = counting_order(codes, k)[0]
        return np.take(s, order), np.take(y, order), (None if w is None else np.take(w, order)), starts
    bounds = _parallel.task_bounds(n, rows=min(n, _parallel.TASK_ROWS * max(1, n // k)))  # at most n / k chunks:
    chunks = len(bounds) - 1  # their counts per group take no more memory than the rows
    none = np.empty(0)
    per_chunk = np.zeros((chunks, k), dtype=np.int64)
    _parallel.run([(count_values, (codes, 0, per_chunk[c], bounds[c], bounds[c + 1])) for c in range(chunks)])
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


def _weightless_groups(codes, n_groups, fitted, sample_weight):
    """The positions ``i`` of the groups ``fitted[i]`` (of ``n_groups`` numbered by ``codes``) without a row of
    positive weight in the 1-D array ``sample_weight`` (none for None or a scalar): one counting pass."""
    if sample_weight is None or isinstance(sample_weight, numbers.Real) or not fitted.size:
        return np.empty(0, dtype=np.int64)
    w = as_float_array(np.asarray(sample_weight), "sample_weight")
    positive = np.sum(_parallel.parallel_accumulate(_gk.count_positive, w.shape[0], codes, w,
                                                    buffer=lambda: np.zeros(n_groups, dtype=np.int64)), axis=0)
    return np.flatnonzero(positive[fitted] == 0)


def fit_group_models(calibrator, scores, y, codes, sizes, fitted, sample_weight=None):
    """The fits of clones of ``calibrator`` on the rows of each group ``fitted[i]`` (internal API of
    :class:`GroupedCalibrator` and of the engine's :func:`fastcal.grouped._rows.fit_grouped`).

    ``codes``: each row's group number (int64, ``0 <= code < sizes.size``); ``sizes``: the rows of each group;
    ``fitted``: the numbers of the groups to fit (ascending); ``scores``, ``y``: 1-D, of equal length;
    ``sample_weight``: None, a scalar or a 1-D array. A group's model is the calibrator's fit on that group's
    rows alone, in their order (batched where :func:`_batched_fit` allows, with the same bits). A group without
    a row of positive weight has no fit of its own (its calibrator's fit would raise): its model is None, and
    :meth:`GroupedCalibrator.from_fits` leaves it to the global model, as a small group.
    """
    weightless = _weightless_groups(codes, sizes.size, fitted, sample_weight)
    if weightless.size:
        keep = np.setdiff1d(np.arange(fitted.size), weightless)
        kept = fit_group_models(calibrator, scores, y, codes, sizes, fitted[keep], sample_weight)
        models_of: list[Any] = [None] * fitted.size
        for i, model in zip(keep.tolist(), kept):
            models_of[i] = model
        return models_of
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
