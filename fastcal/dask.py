r"""fastcal on Dask: the same fits, predictions and diagnostics on ``dask.array`` and ``dask.dataframe`` data.

``import fastcal.dask`` needs the ``dask`` extra (dask and distributed);
``import fastcal`` never imports it. Every function takes 1-D ``dask.array``
arrays or ``dask.dataframe`` columns (``Series``), and also NumPy arrays for
small arguments such as weights, and works with any Dask scheduler: the
threaded default, or a ``distributed.Client`` connected to a
``LocalCluster`` or to a cluster of many machines (create the client; nothing
else changes).

Fits return the classes of the single-machine API, equal to an in-memory fit
on the same data:

- :func:`fit_isotonic` returns a fitted :class:`fastcal.IsotonicRegression`:
  exact (thresholds equal to the in-memory fit; block means to ~1e-15). The
  data is range-partitioned by score with a shuffle between workers
  (boundaries at quantiles of a sample), the pool-adjacent-violators kernel
  runs inside each partition on the workers, and the client pools the
  partitions' block summaries (a few thousand numbers each) with a final PAV
  pass, as Spark MLlib parallelises PAV. Pooling is exact because the
  partitions are contiguous in score order and each begins at the start of
  one of the fit's tie groups (a boundary inside a run of scores closer than
  the dtype's resolution is moved; see :mod:`fastcal.outofcore`).
- :func:`fit_platt` returns a fitted :class:`fastcal.PlattScaling`: Newton
  iterations on the client, each one reduction of the per-chunk fused
  objective/gradient/Hessian Numba kernel over the (persisted) chunks; a, b
  equal to the in-memory fit to ~1e-10.
- :func:`fit_beta` returns a fitted :class:`fastcal.BetaCalibration` in the
  same way (3x3 Newton steps on the client); :func:`fit_histogram` a fitted
  :class:`fastcal.HistogramBinning` from the diagnostics' per-chunk bin tables.

Predictions and prior corrections (:func:`predict`,
:func:`correct_negative_sampling`, :func:`adjust_priors`) are lazy
``map_blocks`` of the Numba kernels, chunk shapes preserved. The diagnostics
(:func:`calibration_curve`, :func:`brier_score_loss`, :func:`log_loss`,
:func:`expected_calibration_error`, :func:`brier_decomposition`) reduce
per-chunk partial sums of the same kernel as :mod:`fastcal.metrics` and
return the same numbers; :func:`score_decomposition` adds the exact
isotonic fit of :func:`fit_isotonic` to them; :func:`smooth_ece` adds up the
chunks' grid sums (:func:`fastcal.smooth.grid_sums`) and smooths them as the
in-memory function.
"""

from __future__ import annotations

import math
import numbers
import os
from typing import TYPE_CHECKING, Literal, overload

import dask
import dask.array as da
import numpy as np
from dask import delayed

from . import _binning, _partition, _pav_engine, beta, histogram, platt, smooth
from ._errors import not_fitted
from ._labels import matrix_classes
from ._params import Integer, Options, check
from ._validation import rescale_weights, weight_exponent

if TYPE_CHECKING:
    from typing import TypeAlias, Unpack

    import dask.dataframe as dd
    from numpy.typing import ArrayLike, NDArray

    from .beta import BetaCalibration
    from .histogram import HistogramBinning
    from .isotonic import IsotonicParams, IsotonicRegression
    from .decomposition import ScoreDecomposition
    from .metrics import BrierDecomposition
    from .platt import PlattScaling
    from .smooth import SmoothECEResult

    #: The fitted 1-D calibrators :func:`predict` applies.
    OneD: TypeAlias = IsotonicRegression | PlattScaling | BetaCalibration | HistogramBinning
    #: A column of Dask data: a 1-D dask array, a dask Series, or a dask DataFrame of one column.
    Column: TypeAlias = da.Array | dd.Series | dd.DataFrame
    #: What the functions take for their columns: Dask data, or (small arguments such as weights) NumPy arrays.
    Data: TypeAlias = Column | ArrayLike

__all__ = [
    "adjust_priors",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "correct_negative_sampling",
    "expected_calibration_error",
    "fit_beta",
    "fit_histogram",
    "fit_isotonic",
    "fit_platt",
    "log_loss",
    "predict",
    "score_decomposition",
    "smooth_ece",
]

#: Default rows per partition of the isotonic shuffle (about 150 MB of
#: float64 scores, labels and weights with the fit's working memory).
_PARTITION_ROWS = 1 << 23


# ---------------------------------------------------------------------------
# Inputs: aligned chunks of scores, labels and weights.
# ---------------------------------------------------------------------------


def _is_series(obj):
    if isinstance(obj, da.Array) or not dask.is_dask_collection(obj) or not hasattr(obj, "npartitions"):
        return False
    import dask.dataframe as dd

    if isinstance(obj, dd.DataFrame):
        if len(obj.columns) != 1:
            raise ValueError("a Dask DataFrame argument must have exactly one column; pass df[column].")
        return True
    return isinstance(obj, dd.Series)


def _series(obj):
    import dask.dataframe as dd

    return obj[obj.columns[0]] if isinstance(obj, dd.DataFrame) else obj


def _known_chunks(arr):
    if any(math.isnan(c) for c in arr.chunks[0]):
        arr = arr.compute_chunk_sizes()
    return arr


def _as_dask_1d(obj, name, chunks=None, allow_column=False):
    """``obj`` as a 1-D dask array with known chunk sizes (rechunked to ``chunks`` if given)."""
    if _is_series(obj):
        arr = _series(obj).to_dask_array(lengths=True)
    elif isinstance(obj, da.Array):
        arr = obj
    else:
        values = np.asarray(obj)
        arr = da.from_array(values, chunks=chunks if chunks is not None and values.ndim == 1 else "auto")
    if arr.ndim == 2 and allow_column and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        want = "a 1-D array (or a single column)" if allow_column else "a 1-D array"
        raise ValueError(f"{name} must be {want}, got an array of shape {arr.shape}.")
    arr = _known_chunks(arr)
    return arr


def _dtype_of(obj):
    try:
        return np.dtype(obj.dtype)
    except TypeError:
        return np.dtype(np.float64)


class _Chunks:
    """Aligned chunks ``(x, y, w)`` as Delayed objects, and what is known of them up front."""

    def __init__(self, triples, n, x_dtype, weighted):
        self.triples = triples
        self.n = n  # None when the lengths of dataframe partitions are not known
        self.x_dtype = x_dtype
        self.weighted = weighted


def _columns(scores, y, sample_weight, score_name, y_name="y", weight_name="sample_weight"):
    """Align scores, labels and weights chunk by chunk; lengths are checked here when known."""
    scalar_w = isinstance(sample_weight, numbers.Number) and not isinstance(sample_weight, bool)
    series = [_is_series(v) for v in (scores, y, None if scalar_w else sample_weight)]
    if series[0] and series[1] and (sample_weight is None or scalar_w or series[2]):
        parts = [_series(v) for v in (scores, y) + (() if sample_weight is None or scalar_w else (sample_weight,))]
        if len({p.npartitions for p in parts}) == 1:
            # Partitions of one DataFrame: zip them (lengths are checked per partition).
            xs, ys = parts[0].to_delayed(), parts[1].to_delayed()
            ws = parts[2].to_delayed() if len(parts) == 3 else [sample_weight] * len(xs)
            return _Chunks(list(zip(xs, ys, ws)), None, _partition.fit_dtype(_dtype_of(parts[0])),
                           sample_weight is not None)
    x = _as_dask_1d(scores, score_name, allow_column=True)
    if x.shape[0] == 0:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")
    arrays = {score_name: x}
    yy = _as_dask_1d(y, y_name, chunks=x.chunks)
    arrays[y_name] = yy
    w = None
    if sample_weight is not None and not scalar_w:
        w = _as_dask_1d(sample_weight, weight_name, chunks=x.chunks)
        arrays[weight_name] = w
    lengths = {k: v.shape[0] for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        if weight_name in lengths and lengths[weight_name] != lengths[score_name] and lengths[y_name] == lengths[
                score_name]:
            raise ValueError(f"{weight_name} has {lengths[weight_name]} elements, expected {lengths[score_name]} "
                             "(one per sample).")
        detail = ", ".join(f"{k} has {v}" for k, v in lengths.items() if k != weight_name)
        raise ValueError(f"Inconsistent numbers of samples: {detail}.")
    yy = yy.rechunk(x.chunks)
    xs = x.to_delayed().ravel().tolist()
    ys = yy.to_delayed().ravel().tolist()
    if w is not None:
        ws = w.rechunk(x.chunks).to_delayed().ravel().tolist()
    else:
        ws = [sample_weight if scalar_w else None] * len(xs)
    return _Chunks(list(zip(xs, ys, ws)), int(x.shape[0]), _partition.fit_dtype(x.dtype), sample_weight is not None)


def _pick(pair, i):
    return pair[i]


def _first_pass(first, cols, *args):
    """Run ``first(x, y, w, x_dtype, *args)`` on every chunk: it returns ``(converted chunk, facts)``.

    The pairs are persisted (on the workers, with distributed): later rounds
    start from the converted chunks without recomputing the inputs' graph.
    Returns the persisted pairs and the facts, fetched to the client.
    """
    pairs = list(dask.persist(*[delayed(first)(x, y, w, cols.x_dtype, *args) for x, y, w in cols.triples]))
    return pairs, dask.compute(*[delayed(_pick)(p, 1) for p in pairs])


def _n_threads():
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


# ---------------------------------------------------------------------------
# Isotonic regression.
# ---------------------------------------------------------------------------


def _isotonic_first(x, y, w, x_dtype, auto, sample_size):
    chunk = _partition.prepare_chunk(x, y, w, x_dtype, score_name="X")
    return chunk, _partition.summarize_chunk(*chunk, sample_size=sample_size, binary=auto)


def _split(pair, bounds, drop_zero):
    return _partition.split_by_bounds(*pair[0], bounds, drop_zero=drop_zero)


def _assemble(*pieces):
    return tuple(None if p[0] is None else np.concatenate(p) for p in zip(*pieces))


def _assemble_head(eps, keep_zero, auto, *pieces):
    """A partition from its pieces, with its summary (see :func:`_head`)."""
    part = _assemble(*pieces)
    return part, _head(part, eps, keep_zero, auto)


def _positive(part, keep_zero):
    x, y, w = part
    if keep_zero and w is not None:
        keep = w > 0
        return x[keep], y[keep], w[keep]
    return x, y, w


def _head(part, eps, keep_zero, auto):
    """Summary of a partition ``(x, y, w)``: rows, min, max, the distinct scores within
    eps of the min and the first score beyond (entry candidates), Spearman sums."""
    sp = _partition.spearman_partial(part[0], part[1]) if auto else None
    x, _, w = part
    return (*_partition.head_summary(x, w if keep_zero else None, eps), sp)


def _exits(pair, eps, cands, keep_zero):
    x = _positive(pair[0], keep_zero)[0]
    return _partition.chain_exits(np.sort(x), eps, cands)


def _take_below(pair, limit, keep_zero):
    x, y, w = _positive(pair[0], keep_zero)
    if limit == math.inf:
        return x, y, w
    keep = x < x.dtype.type(limit)
    return x[keep], y[keep], None if w is None else w[keep]


def _fit_unit(pair, entry, lo, sign, keep_zero, exponent, centered, *extra):
    x, y, w = _positive(pair[0], keep_zero)
    if entry > lo:
        keep = x >= x.dtype.type(entry)
        x, y, w = x[keep], y[keep], None if w is None else w[keep]
    if extra:
        x, y, w = _assemble((x, y, w), *extra)
    w = rescale_weights(w, exponent)[0]  # one exponent for all units: merge adds them
    return _pav_engine.summarise(x, y, w, sign, centered=centered)


def fit_isotonic(
    scores: Data,
    y: Data,
    sample_weight: Data | float | None = None,
    *,
    n_partitions: int | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """Fit :class:`fastcal.IsotonicRegression` on Dask data: exactly the in-memory fit.

    Parameters
    ----------
    scores : dask.array.Array or dask.dataframe.Series
        Scores (1-D, or one column), finite; float32 stays float32.
    y : dask.array.Array, dask.dataframe.Series or array-like
        Targets (0/1 labels for calibration), same length.
    sample_weight : dask or NumPy array, float, or None
        Non-negative weights; rows of weight zero are dropped, as in ``fit``.
    n_partitions : int, optional
        Score ranges the data is shuffled into, each fitted on one worker.
        Default: one per 2^23 rows (at least one per worker thread, at most
        one per input chunk).
    **params
        ``IsotonicRegression`` parameters (``y_min``, ``y_max``,
        ``increasing``, ``out_of_bounds``, ``centered``).

    Returns
    -------
    IsotonicRegression
        Fitted, with the same thresholds as ``IsotonicRegression(**params).fit``
        on the computed arrays (block means equal to ~1e-15: sums are added
        in another order).

    Notes
    -----
    Passes: the chunks are validated and converted (and persisted), a strided
    sample of each (up to 4096 scores) gives the partition boundaries; each chunk is
    split by score range and the pieces are shuffled to the partitions
    (persisted); a small summary of each partition finds boundaries that fall
    inside a run of scores closer than the dtype's resolution (then a second
    small round follows the tie groups across them); each partition is fitted
    where it lives and only its PAV blocks travel to the client. Memory: the
    data is held once as chunks and once as partitions during the shuffle.

    ``increasing="auto"`` computes Spearman's rho exactly from the range
    partitions (average ranks of the scores; the ranks of 0/1 labels are
    affine in the labels), so it is supported for 0/1 labels only; pass the
    direction explicitly for other targets.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import fastcal, fastcal.dask
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random(100_000); y = (rng.random(100_000) < x).astype(np.uint8)
    >>> iso = fastcal.dask.fit_isotonic(da.from_array(x, chunks=25_000), da.from_array(y, chunks=25_000))
    >>> ref = fastcal.IsotonicRegression().fit(x, y)
    >>> bool(np.array_equal(iso.X_thresholds_, ref.X_thresholds_))
    True
    """
    from .isotonic import new_estimator, set_fitted_blocks

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    est = new_estimator(params)
    auto = est.increasing == "auto"
    cols = _columns(scores, y, sample_weight, "X")
    dtype = cols.x_dtype
    eps = _partition.resolution(dtype)

    sample_size = max(64, min(_partition.SAMPLE_PER_CHUNK, (1 << 20) // len(cols.triples)))  # 2^20 at most in all
    conv, summaries = _first_pass(_isotonic_first, cols, auto, sample_size)
    n = sum(s.n for s in summaries)
    if n == 0:
        raise ValueError("X must have at least 1 element, got 0.")
    _partition.check_total_weight(summaries, cols.weighted)
    exponent = _partition.global_weight_exponent(summaries)
    if auto:
        _partition.auto_needs_binary(summaries)
    n_fit = sum(s.n_fit for s in summaries)
    if n_partitions is None:
        n_partitions = min(len(conv), max(_n_threads(), -(-n_fit // _PARTITION_ROWS)))
    bounds = _partition.choose_bounds(summaries, int(n_partitions), dtype)
    n_parts = bounds.shape[0] + 1
    keep_zero = auto and any(s.has_zero for s in summaries)

    # Shuffle: every chunk is split by score range; partition j gathers the j-th pieces.
    splits = [delayed(_split, nout=n_parts)(c, bounds, not keep_zero) for c in conv]
    parts = list(dask.persist(*[delayed(_assemble_head)(eps, keep_zero, auto, *[s[j] for s in splits])
                                for j in range(n_parts)]))
    del conv, splits
    heads = dask.compute(*[delayed(_pick)(p, 1) for p in parts])
    if auto:
        rho = _partition.spearman_from_partials([h[4] for h in heads])
        est.increasing_ = _partition.increasing_from_rho(rho, n, stacklevel=3)
    else:
        est.increasing_ = bool(est.increasing)
    sign = 1.0 if est.increasing_ else -1.0

    # Tie groups across boundaries: the entry score of each partition.
    need = _partition.unclean_boundaries(heads, eps)
    exits = dict(zip(need, dask.compute(*[delayed(_exits)(parts[j], eps, heads[j][3], keep_zero) for j in need])))
    entries = dict(_partition.tie_entries(heads, eps, exits.__getitem__))
    live = list(entries)

    # Fit each unit (a partition from its entry on, plus the rows of the next
    # partitions that belong to its last tie group) where it lives.
    entered = [j for j in live if entries[j] is not None]
    units = []
    for a, j in enumerate(entered):
        stop = entered[a + 1] if a + 1 < len(entered) else None
        following = live[live.index(j) + 1: live.index(stop) if stop is not None else len(live)]
        extra = [delayed(_take_below)(parts[k], math.inf, keep_zero) for k in following]
        if stop is not None and entries[stop] > heads[stop][1]:
            extra.append(delayed(_take_below)(parts[stop], entries[stop], keep_zero))
        units.append(delayed(_fit_unit)(parts[j], entries[j], heads[j][1], sign, keep_zero, exponent, est.centered,
                                        *extra))
    blocks = dask.compute(*units)
    del parts
    return set_fitted_blocks(est, _pav_engine.merge(blocks))


# ---------------------------------------------------------------------------
# Platt scaling and beta calibration: one first round, then rounds of sums.
# ---------------------------------------------------------------------------


def _logistic_first(x, y, w, x_dtype, name):
    """Convert a chunk and run the Platt preparation pass, which also finds bad values
    (then the in-memory checks raise their errors, naming the scores ``name``)."""
    s, labels, w = _partition.convert_chunk(x, y, w, x_dtype, score_name=name)
    iout, fout = platt.prepare(s, labels, w, name=name)
    return (s, labels, w), (iout, fout, s.shape[0], float(w.max()) if w is not None and w.shape[0] else 0.0)


def _logistic_sub(pair, fraction, exponent):
    s, y, w = platt.subsample(*pair[0], fraction)
    return s, y, rescale_weights(w, exponent)[0]


def _logistic_pass(pair, array_pass, exponent, *args):
    s, y, w = pair[0]
    return array_pass(s, y, rescale_weights(w, exponent)[0])(*args)


def _logistic_rounds(cols, name, array_pass):
    """The first round of a Platt or beta fit, and the rounds that follow it.

    Converts and checks every chunk (scores called ``name``), persists them,
    and merges their preparation sums. Returns ``(prepared, n, exponent,
    run_pass, rows)`` for ``platt.fit_passes`` / ``beta.fit_passes``: the
    passes see the weights rescaled by ``2**-exponent``
    (:func:`fastcal._validation.weight_exponent` of the largest weight), as
    the in-memory fit does; ``run_pass(*args)`` is one round of
    ``array_pass(s, y, w)(*args)`` on every chunk, added on the client in
    chunk order (deterministic); ``rows(fraction)`` the warm-start subsample.
    """
    conv, preps = _first_pass(_logistic_first, cols, name)
    n = sum(p[2] for p in preps)
    if n == 0:
        raise ValueError(f"{name} must have at least 1 element, got 0.")
    if cols.weighted and not sum(float(p[1].sum()) for p in preps) > 0:
        raise ValueError("sample_weight must have a positive sum.")
    exponent = weight_exponent(None, max(p[3] for p in preps))

    def rows(fraction):
        subs = dask.compute(*[delayed(_logistic_sub)(c, fraction, exponent) for c in conv])
        return tuple(None if parts[0] is None else np.concatenate(parts) for parts in zip(*subs))

    def run_pass(*args):
        sums = dask.compute(*[delayed(_logistic_pass)(c, array_pass, exponent, *args) for c in conv])
        acc = np.zeros(len(sums[0]))
        for s in sums:
            acc += s
        return acc

    prepared = platt.merge_prepared([(p[0], p[1]) for p in preps], exponent)
    return prepared, n, exponent, run_pass, rows


def fit_platt(
    scores: Data,
    y: Data,
    sample_weight: Data | float | None = None,
    *,
    max_iter: int = 100,
    tol: float | None = None,
) -> PlattScaling:
    """Fit :class:`fastcal.PlattScaling` on Dask data: a, b equal to the in-memory fit (to ~1e-10).

    Parameters
    ----------
    scores : dask.array.Array or dask.dataframe.Series
        Scores, finite.
    y : dask.array.Array, dask.dataframe.Series or array-like
        0/1 labels.
    sample_weight : dask or NumPy array, float, or None
        Non-negative weights with a positive sum.
    max_iter, tol
        As in :class:`fastcal.PlattScaling`.

    Returns
    -------
    PlattScaling
        Fitted (``a_``, ``b_``, ``n_iter_``, ``converged_``).

    Notes
    -----
    The validated chunks are persisted (held in the workers' memory for the
    passes). One round computes the class weights and the score range of
    every chunk and collects a subsample (1/16 of the rows, at most 2^20, in
    evenly spaced blocks) from which the Newton iterations start, solved on
    the client. Each Newton iteration is then one round: every chunk's
    objective, gradient and Hessian sums from the fused Numba kernel, added
    on the client; the 2x2 Newton step, line search and stopping rule are
    those of :func:`fastcal.platt_scaling` (about two to three rounds).
    """
    max_iter_c, tol_c = platt.check_max_iter(max_iter), platt.check_tol(tol)
    cols = _columns(scores, y, sample_weight, "scores")
    prepared, n, exponent, run_pass, rows = _logistic_rounds(cols, "scores", platt.array_pass)
    fit = platt.fit_passes(prepared, n, cols.weighted, run_pass, rows, max_iter_c, tol_c, exponent)
    return platt.fitted_estimator(fit, max_iter, tol)


def fit_beta(
    p: Data,
    y: Data,
    sample_weight: Data | float | None = None,
    *,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
) -> BetaCalibration:
    """Fit :class:`fastcal.BetaCalibration` on Dask data: a, b, c equal to the in-memory fit (to ~1e-10).

    ``p`` holds probabilities in [0, 1]; the rest as in :func:`fit_platt`,
    whose rounds this follows: one round of preparation and subsample, then
    one round per Newton iteration, each chunk's fused objective, gradient
    and 3x3 Hessian sums added on the client in chunk order (and, for "abm"
    with a negative a or b, the rounds of the refit).
    """
    model = beta.check_model(parameters)
    max_iter_c, tol_c = platt.check_max_iter(max_iter), platt.check_tol(tol)
    cols = _columns(p, y, sample_weight, "p")
    prepared, n, _, run_pass, rows = _logistic_rounds(cols, "p", beta.array_pass)
    eps = float(np.finfo(cols.x_dtype).eps)
    fit = beta.fit_passes(prepared, n, cols.weighted, run_pass, rows, model, eps, max_iter_c, tol_c)
    return beta.fitted_estimator(fit, parameters, max_iter, tol)


# ---------------------------------------------------------------------------
# Predictions and prior corrections: lazy map_blocks of the Numba kernels.
# ---------------------------------------------------------------------------


def _predict_block(block, estimator):
    return estimator.predict(block)


def _predict_series(part, estimator, name):
    import pandas as pd

    return pd.Series(estimator.predict(part.to_numpy()), index=part.index, name=name)


def _prediction_dtype(estimator, dtype):
    from .isotonic import IsotonicRegression

    if isinstance(estimator, IsotonicRegression):
        return estimator.X_thresholds_.dtype
    if hasattr(estimator, "bin_values_"):  # HistogramBinning: float64
        return np.dtype(np.float64)
    return np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)


@overload
def predict(estimator: OneD, scores: dd.Series | dd.DataFrame) -> dd.Series: ...
@overload
def predict(estimator: OneD, scores: da.Array | ArrayLike) -> da.Array: ...
def predict(estimator: OneD, scores: Data) -> da.Array | dd.Series:
    """Lazy predictions of a fitted 1-D calibrator (``IsotonicRegression``, ``PlattScaling``,
    ``BetaCalibration``, ``HistogramBinning``) on Dask data.

    ``scores`` is a 1-D dask array (chunks preserved; an ``(n, 1)`` column is
    read as 1-D) or a dask Series (partitions and index preserved). Each
    chunk is the estimator's ``predict`` (its parallel Numba kernel) on a
    worker; the estimator travels with the tasks (a few kB).

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import fastcal, fastcal.dask
    >>> iso = fastcal.IsotonicRegression(out_of_bounds="clip").fit([0.1, 0.4, 0.8], [0, 1, 1])
    >>> fastcal.dask.predict(iso, da.from_array(np.array([0.25, 0.9]), chunks=1)).compute()
    array([0.5, 1. ])
    """
    if not (hasattr(estimator, "predict")
            and any(hasattr(estimator, a) for a in ("X_thresholds_", "a_", "bin_values_"))):
        raise not_fitted(f"{type(estimator).__name__} is not a fitted 1-D fastcal calibrator.")
    if _is_series(scores):
        s = _series(scores)
        dtype = _prediction_dtype(estimator, _dtype_of(s))
        return s.map_partitions(_predict_series, estimator, s.name, meta=(s.name, dtype))
    arr = _as_dask_1d(scores, "scores", allow_column=True)
    dtype = _prediction_dtype(estimator, arr.dtype)
    return arr.map_blocks(_predict_block, estimator, dtype=dtype)


def _result_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)


def _as_dask_any(obj):
    if _is_series(obj):
        return _series(obj)
    if isinstance(obj, da.Array):
        return obj
    return da.from_array(np.asarray(obj))


def _cns_block(block, rate):
    from .prior import correct_negative_sampling as f

    return f(block, rate)


def _cns_series(part, rate):
    import pandas as pd

    return pd.Series(_cns_block(part.to_numpy(), rate), index=part.index, name=part.name)


@overload
def correct_negative_sampling(p: dd.Series | dd.DataFrame, rate: float) -> dd.Series: ...
@overload
def correct_negative_sampling(p: da.Array | ArrayLike, rate: float) -> da.Array: ...
def correct_negative_sampling(p: Data, rate: float) -> da.Array | dd.Series:
    """Lazy :func:`fastcal.correct_negative_sampling` of a dask array (any shape) or Series.

    ``rate`` is checked now; the values of ``p`` when the result is computed.
    """
    from .prior import correct_negative_sampling as f

    arr = _as_dask_any(p)
    dtype = _result_dtype(_dtype_of(arr))
    f(np.zeros(0, dtype=dtype), rate)  # validates the rate eagerly
    if _is_series(arr):
        return arr.map_partitions(_cns_series, rate, meta=(arr.name, dtype))
    return arr.map_blocks(_cns_block, rate, dtype=dtype)


def _adjust_block(block, train_priors, new_priors):
    from .prior import adjust_priors as f

    return f(block, train_priors, new_priors)


def adjust_priors(proba: Data, train_priors: float | ArrayLike, new_priors: float | ArrayLike) -> da.Array:
    """Lazy :func:`fastcal.adjust_priors` of a dask array: 1-D P(y=1 | x) or ``(n, k)`` rows.

    A 2-D array is rechunked to whole rows (all k classes in one chunk); row
    chunks are preserved. The priors are checked now.
    """
    from .prior import adjust_priors as f

    arr = _as_dask_any(proba)
    if _is_series(arr):
        arr = arr.to_dask_array(lengths=True)
    dtype = _result_dtype(arr.dtype)
    if arr.ndim == 2:
        k = arr.shape[1]
        f(np.full((1, k), 1.0 / k, dtype=dtype), train_priors, new_priors)
        arr = arr.rechunk({1: -1})
    elif arr.ndim <= 1:
        f(np.full(1, 0.5, dtype=dtype), train_priors, new_priors)
    else:
        raise ValueError(f"proba must be 1-D or 2-D, got {arr.ndim} dimensions.")
    return arr.map_blocks(_adjust_block, train_priors, new_priors, dtype=dtype)


# ---------------------------------------------------------------------------
# Diagnostics: fastcal.metrics' binning engine (fastcal._binning) on every chunk, results merged in chunk order.
# ---------------------------------------------------------------------------


def _metric_first(p, y, w, x_dtype, pos_label):
    """A validated metrics chunk ``(labels, p, w)`` and its facts ``(n, lo, hi, classes, weight sum or None,
    largest weight)``."""
    from . import metrics as _m
    from ._validation import as_float_array, as_label_array, column_or_1d, is_binary

    y_arr = column_or_1d(np.asarray(y), "y_true", min_size=0)
    p_arr = column_or_1d(np.asarray(p), "y_prob", min_size=0)
    if y_arr.shape[0] != p_arr.shape[0]:
        raise ValueError(f"Inconsistent numbers of samples: y_true has {y_arr.shape[0]}, y_prob has {p_arr.shape[0]}.")
    n = y_arr.shape[0]
    lab = as_label_array(y_arr, "y_true") if y_arr.dtype.kind in "biuf" else None
    if lab is not None and is_binary(lab):
        npos = int(np.count_nonzero(lab))
        classes = np.array([c for c, present in ((0, npos < n), (1, npos > 0)) if present], dtype=y_arr.dtype)
    else:
        classes = np.unique(y_arr)
    labels = _m.binary_labels(y_arr, pos_label) if n else as_label_array(y_arr, "y_true")
    if p_arr.shape[0]:
        pv, lo, hi = _m.check_probabilities(p_arr, "y_prob")
    else:
        pv, lo, hi = as_float_array(p_arr, "y_prob"), math.inf, -math.inf
    if w is not None:
        w = _partition.prepare_chunk(pv, labels, w, pv.dtype, score_name="y_prob")[2]
    return (labels, pv, w), (pv.shape[0], lo, hi, classes, None if w is None else float(w.sum()),
                             float(w.max()) if w is not None and w.shape[0] else 0.0)


def _metric_table(chunk, edges, flags, exponent):
    y, p, w = chunk[0]
    return _binning.bin_stats(p, y, rescale_weights(w, exponent)[0], edges, **flags)


def _metric_counts(chunk, lo, scale):
    return _binning.bucket_histograms(chunk[0][1], lo, scale).sum(axis=0)


def _metric_gather(chunk, lo, scale, marked):
    return _binning.gather_buckets(chunk[0][1], lo, scale, marked)[0]


class _MetricData:
    """Validated metrics chunks (persisted) and what the client knows of all of them."""

    def __init__(self, y_true, y_prob, sample_weight, pos_label):
        from . import metrics as _m

        _binning.check_params(pos_label=pos_label)
        cols = _columns(y_prob, y_true, sample_weight, "y_prob", y_name="y_true")
        self.chunks, facts = _first_pass(_metric_first, cols, pos_label)
        self.n = sum(f[0] for f in facts)
        if self.n == 0:
            raise ValueError("y_prob must have at least 1 element, got 0.")
        self.lo = min(f[1] for f in facts)
        self.hi = max(f[2] for f in facts)
        self.dtype = np.dtype(cols.x_dtype)
        # The in-memory label rules, applied to the set of all labels.
        _m.binary_labels(np.unique(np.concatenate([f[3] for f in facts])), pos_label)
        if cols.weighted and not sum(f[4] for f in facts if f[4] is not None) > 0:
            raise ValueError("sample_weight must have a positive sum.")
        self.weighted = cols.weighted
        # The weights of every chunk are rescaled by one power of two, as in memory (see rescale_weights).
        self.exponent = weight_exponent(None, max(f[5] for f in facts))

    def in_weight_units(self, value):
        """A sum of rescaled weights (see :meth:`table`) in the units of ``sample_weight``."""
        return np.ldexp(value, self.exponent)

    def edges(self, n_bins, strategy):
        n_bins = _binning.check_binning(n_bins, strategy)
        return _binning.bin_edges(n_bins, strategy, self.n, self.order_statistics)

    def order_statistics(self, ranks):
        """Exact values of the given ranks: the chunks' bucket counts, added; the chunks' values of the marked buckets."""
        lo = self.lo

        def count(scale):
            return sum(dask.compute(*[delayed(_metric_counts)(c, lo, scale) for c in self.chunks]))

        def gather(scale, marked):
            pieces = dask.compute(*[delayed(_metric_gather)(c, lo, scale, marked) for c in self.chunks])
            return _binning.gather_buckets(np.concatenate(pieces), lo, scale, marked)

        return _binning.select_order_statistics(ranks, lo, self.hi, self.dtype, count, gather)

    def table(self, edges, **flags):
        """The bin table of all the rows: the chunks' tables, added in chunk order (weights rescaled by
        ``2**-exponent``)."""
        return _binning.merge_tables(dask.compute(*[delayed(_metric_table)(c, edges, flags, self.exponent)
                                                    for c in self.chunks]))


def fit_histogram(
    p: Data,
    y: Data,
    sample_weight: Data | float | None = None,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> HistogramBinning:
    """Fit :class:`fastcal.HistogramBinning` on Dask data: equal to the in-memory fit.

    The bins are those of :func:`calibration_curve` (the "quantile" edges
    exactly NumPy's percentiles of all of ``p``, the outer ones moved to 0
    and 1), the bin table the chunks' tables added in chunk order, so the
    values equal the in-memory fit's up to the order of the sums. ``p`` holds
    probabilities in [0, 1]; labels as in the Dask diagnostics ({0, 1} or
    {-1, 1}), whose checks (and messages, naming ``y_prob`` and ``y_true``)
    it shares.
    """
    n_bins, strategy = histogram.check_params(n_bins, strategy)
    data = _MetricData(y, p, sample_weight, None)
    edges = histogram.bin_edges(n_bins, strategy, data.n, data.order_statistics)
    return histogram.fitted_estimator(n_bins, strategy, edges, data.table(edges), data.exponent)


@overload
def calibration_curve(
    y_true: Data,
    y_prob: Data,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    return_counts: Literal[False] = False,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]: ...
@overload
def calibration_curve(
    y_true: Data,
    y_prob: Data,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    return_counts: Literal[True],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]: ...
@overload
def calibration_curve(
    y_true: Data,
    y_prob: Data,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    return_counts: bool = False,
) -> (tuple[NDArray[np.float64], NDArray[np.float64]]
      | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]): ...
def calibration_curve(
    y_true: Data,
    y_prob: Data,
    *,
    pos_label: float | str | None = None,
    n_bins: int = 5,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    return_counts: bool = False,
) -> (tuple[NDArray[np.float64], NDArray[np.float64]]
      | tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]):
    """:func:`fastcal.calibration_curve` of Dask data: per-chunk bin sums, added on the client.

    Same arguments, bins and results as the in-memory function. ``"quantile"``
    edges are NumPy's percentiles of all of ``y_prob``, exactly: two more
    rounds select the order statistics (a histogram of 2^15 buckets, then
    the values of the few buckets that hold them).
    """
    _binning.check_params(return_counts=return_counts)
    n_bins = _binning.check_binning(n_bins, strategy)  # before any pass over the data
    data = _MetricData(y_true, y_prob, sample_weight, pos_label)
    curve = _binning.curve_from_table(data.table(data.edges(n_bins, strategy)), data.weighted, return_counts)
    if return_counts and data.weighted:
        return (*curve[:2], data.in_weight_units(curve[2]))
    return curve


def _is_class_matrix(y_prob):
    """Whether ``y_prob`` is an (n, k >= 2) matrix of class probabilities (a Dask DataFrame of k >= 2 columns too)."""
    if _is_dataframe(y_prob):
        return len(y_prob.columns) >= 2
    shape = getattr(y_prob, "shape", None)
    if shape is None and not dask.is_dask_collection(y_prob):
        shape = np.shape(y_prob)
    return shape is not None and len(shape) == 2 and shape[1] != 1


def _is_dataframe(obj):
    if not dask.is_dask_collection(obj) or isinstance(obj, da.Array):
        return False
    import dask.dataframe as dd

    return isinstance(obj, dd.DataFrame)


def _matrix_first(P, y, w):
    """A chunk of an (n, k) probability matrix: its labels and largest weight (the weights checked)."""
    from . import metrics as _m
    from ._validation import check_sample_weight

    y = np.asarray(y)
    w = check_sample_weight(w, y.shape[0]) if w is not None else None
    return _m.label_set(y), (float(w.max()) if w is not None and w.shape[0] else 0.0)


def _matrix_sums(P, y, w, classes, exponent, flags):
    from . import metrics as _m

    return _m.class_sums_chunk(np.asarray(y), np.asarray(P), w, classes, exponent, "y_prob", **flags)


def _class_sums(y_true, y_prob, sample_weight, labels, **flags):
    """:func:`fastcal._binning.class_rows` of all the rows of an (n, k) matrix ``y_prob``: per-chunk sums added in
    chunk order, the weights rescaled by one power of two (see ``rescale_weights``), as in memory."""
    from . import metrics as _m

    P = y_prob.to_dask_array(lengths=True) if _is_dataframe(y_prob) else y_prob
    P = P if isinstance(P, da.Array) else da.from_array(np.asarray(P))
    P = _known_chunks(P.rechunk({1: -1}))
    k = int(P.shape[1])
    y = _as_dask_1d(y_true, "y_true", chunks=P.chunks[0])
    if y.shape[0] != P.shape[0]:
        raise ValueError(f"Inconsistent numbers of samples: y_true has {y.shape[0]}, y_prob has {P.shape[0]}.")
    y = y.rechunk((P.chunks[0],))
    scalar_w = isinstance(sample_weight, numbers.Number) and not isinstance(sample_weight, bool)
    if sample_weight is None or scalar_w:
        ws = [None if sample_weight is None else np.full(c, float(sample_weight)) for c in P.chunks[0]]
    else:
        w = _as_dask_1d(sample_weight, "sample_weight", chunks=P.chunks[0])
        if w.shape[0] != P.shape[0]:
            raise ValueError(f"sample_weight has {w.shape[0]} elements, expected {P.shape[0]} (one per sample).")
        ws = list(w.rechunk((P.chunks[0],)).to_delayed())
    triples = list(zip(P.to_delayed().reshape(-1), y.to_delayed(), ws))
    facts = dask.compute(*[delayed(_matrix_first)(p, yc, wc) for p, yc, wc in triples])
    found = np.unique(np.concatenate([f[0] for f in facts])) if facts else np.empty(0)
    classes = matrix_classes(found, labels, k, "y_prob", stacklevel=3)
    exponent = weight_exponent(None, max((f[1] for f in facts), default=0.0))
    parts = dask.compute(*[delayed(_matrix_sums)(p, yc, wc, classes, exponent, flags) for p, yc, wc in triples])
    sums = np.zeros_like(parts[0])
    for part in parts:  # in chunk order: deterministic
        sums += part
    _binning.warn_rows_off(sums, int(P.shape[0]), "y_prob", stacklevel=3)
    return sums, exponent, k


def brier_score_loss(
    y_true: Data,
    y_prob: Data,
    *,
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
    labels: ArrayLike | None = None,
) -> float:
    """:func:`fastcal.brier_score_loss` of Dask data (per-chunk sums).

    ``y_prob`` 1-D: binary, the labels {0, 1}, {-1, 1} or any two with
    ``pos_label``. An (n, k) matrix (a Dask array or DataFrame of k columns):
    one column per class, the classes of ``y_true`` or ``labels`` in sorted
    order, as in memory (halved for k = 2, scikit-learn's "auto").
    """
    if _is_class_matrix(y_prob):
        sums, _, k = _class_sums(y_true, y_prob, sample_weight, labels, brier=True)
        score = float(sums[_binning.RBRIER] / sums[_binning.RW])
        return 0.5 * score if k < 3 else score
    data = _MetricData(y_true, y_prob, sample_weight, pos_label)
    return _binning.column_mean(data.table(_binning.bin_edges(1, "uniform"), brier=True), _binning.SBRIER)


def log_loss(
    y_true: Data,
    y_prob: Data,
    *,
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
    normalize: bool = True,
    labels: ArrayLike | None = None,
) -> float:
    """:func:`fastcal.log_loss` of Dask data (per-chunk sums).

    ``y_prob`` 1-D: binary, the labels {0, 1}, {-1, 1} or any two with
    ``pos_label`` (the in-memory function also takes the greater of two
    other labels as positive). An (n, k) matrix (a Dask array or DataFrame
    of k columns): one column per class, the classes of ``y_true`` or
    ``labels`` in sorted order, as in memory.
    """
    _binning.check_params(normalize=normalize)
    if _is_class_matrix(y_prob):
        sums, exponent, _ = _class_sums(y_true, y_prob, sample_weight, labels, logloss=True)
        loss = sums[_binning.RLOG]
        return float(loss / sums[_binning.RW]) if normalize else float(np.ldexp(loss, exponent))
    data = _MetricData(y_true, y_prob, sample_weight, pos_label)
    table = data.table(_binning.bin_edges(1, "uniform"), logloss=True)
    return (_binning.column_mean(table, _binning.SLOG) if normalize
            else float(data.in_weight_units(table[:, _binning.SLOG].sum())))


def expected_calibration_error(
    y_true: Data,
    y_prob: Data,
    *,
    n_bins: int = 15,
    strategy: Literal["uniform", "quantile"] = "uniform",
    norm: Literal["l1", "l2", "max"] = "l1",
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
) -> float:
    """:func:`fastcal.expected_calibration_error` of Dask data (per-chunk bin sums)."""
    _binning.check_params(norm=norm)
    n_bins = _binning.check_binning(n_bins, strategy)  # before any pass over the data
    data = _MetricData(y_true, y_prob, sample_weight, pos_label)
    return _binning.ece_from_table(data.table(data.edges(n_bins, strategy)))[norm]


def _grid_sums(chunk, exponent):
    y, p, w = chunk[0]
    return smooth.grid_sums(p, y, rescale_weights(w, exponent)[0])


def smooth_ece(
    y_true: Data,
    y_prob: Data,
    *,
    bandwidth: float | None = None,
    sample_weight: Data | float | None = None,
) -> SmoothECEResult:
    """:func:`fastcal.smooth_ece` of Dask data: each chunk's sums binned onto the grid, added on the client in chunk
    order, then smoothed as in memory (the same grid, kernel and fixed point; equal up to the order of the sums).
    Binary only; labels {0, 1} or {-1, 1}."""
    bandwidth = smooth.check_bandwidth(bandwidth)
    _binary_only("smooth_ece", y_prob)
    data = _MetricData(y_true, y_prob, sample_weight, None)
    grids = dask.compute(*[delayed(_grid_sums)(c, data.exponent) for c in data.chunks])
    return smooth.smooth_ece_from_grid(smooth.merge_grids(grids), bandwidth)


def brier_decomposition(
    y_true: Data,
    y_prob: Data,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
) -> BrierDecomposition:
    """:func:`fastcal.brier_decomposition` of Dask data (per-chunk bin sums and moments)."""
    from .metrics import BrierDecomposition

    n_bins = _binning.check_binning(n_bins, strategy)  # before any pass over the data
    data = _MetricData(y_true, y_prob, sample_weight, pos_label)
    table = data.table(data.edges(n_bins, strategy), moments=True, brier=True)
    return BrierDecomposition(*_binning.brier_terms_from_table(table))


def _binary_only(func, y_prob):
    """``ValueError`` if ``y_prob`` is an (n, k >= 2) matrix: ``func`` is binary only on Dask."""
    shape = getattr(y_prob, "shape", None)
    if shape is None and not dask.is_dask_collection(y_prob):
        shape = np.shape(y_prob)
    if shape is not None and len(shape) == 2 and shape[1] != 1:
        raise ValueError(f"fastcal.dask.{func} is binary only: y_prob must be 1-D, the probability of the positive "
                         f"class, got shape {shape}; for an (n, k) matrix of class probabilities use fastcal.{func} "
                         "in memory.")


# ---------------------------------------------------------------------------
# CORP score decomposition: the exact distributed isotonic fit, then per-chunk score sums.
# ---------------------------------------------------------------------------


def _fit_columns(chunk):
    """A validated metrics chunk as the isotonic fit's columns: 0/1 labels (uint8), float64 predictions, weights."""
    labels, p, w = chunk[0]
    return (labels != 0).view(np.uint8), p.astype(np.float64), w


def _length(columns):
    return columns[0].shape[0]


def _column(chunks, sizes, i, dtype):
    return da.concatenate([da.from_delayed(delayed(_pick)(c, i), (n,), dtype=dtype) for c, n in zip(chunks, sizes)])


def _decomposition_sums(chunk, estimator, scoring, exponent):
    from .decomposition import score_sums

    labels, p, w = chunk[0]
    w = rescale_weights(w, exponent)[0]
    recal = estimator.predict(p.astype(np.float64)) if p.shape[0] else p.astype(np.float64)
    return (*score_sums(labels, p, w, scoring), score_sums(labels, recal, w, scoring)[0])


def score_decomposition(
    y: Data,
    p: Data,
    *,
    scoring: Literal["brier", "log_loss"] = "brier",
    sample_weight: Data | float | None = None,
) -> ScoreDecomposition:
    """:func:`fastcal.score_decomposition` of binary Dask data, through the exact distributed isotonic fit.

    The chunks are validated as by the Dask metrics (0/1 labels, or
    {-1, 1}; probabilities in [0, 1]); :func:`fit_isotonic` fits the
    recalibration on the float64 predictions (exactly the in-memory PAV
    fit); one more pass sums, per chunk, the scores of ``p`` and of the
    fit's predictions, merged in chunk order. Equal to the in-memory result
    to ~1e-15 (sums in another order). Binary only: ``p`` is 1-D.
    """
    from .decomposition import decomposition_from_sums

    scoring = check("scoring", scoring, [Options("brier", "log_loss")])
    _binary_only("score_decomposition", p)
    data = _MetricData(y, p, sample_weight, None)
    cols = [delayed(_fit_columns)(c) for c in data.chunks]
    sizes = dask.compute(*[delayed(_length)(c) for c in cols])
    labels = _column(cols, sizes, 0, np.uint8)
    scores = _column(cols, sizes, 1, np.float64)
    weights = _column(cols, sizes, 2, np.float64) if data.weighted else None
    iso = fit_isotonic(scores, labels, weights, out_of_bounds="clip")
    parts = dask.compute(*[delayed(_decomposition_sums)(c, iso, scoring, data.exponent) for c in data.chunks])
    score_sum, weight, positives, recal_sum = (float(v) for v in np.sum(np.array(parts, dtype=np.float64), axis=0))
    return decomposition_from_sums(score_sum, recal_sum, weight, positives, scoring)
