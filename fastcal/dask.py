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

This module is an adapter: :class:`DaskRows` gives the engine's drivers
(:mod:`fastcal._engine`) the chunks of Dask data, and every fit and
diagnostic above is one call of a driver (the algorithms, and their
exactness rules, are written there once for every backend).
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

from ._engine import binned as _binned
from ._engine import decomposition as _decomposition
from ._engine import isotonic as _isotonic
from ._engine import logistic as _logistic
from ._engine import segments as _segments
from ._engine import split_chunk
from ._errors import not_fitted

if TYPE_CHECKING:
    from typing import TypeAlias, Unpack

    import dask.dataframe as dd
    from numpy.typing import ArrayLike, NDArray

    from ._typing import BinOptions, Curve, CurveWithCounts
    from .beta import BetaCalibration
    from .histogram import HistogramBinning
    from .isotonic import IsotonicParams, IsotonicRegression
    from .decomposition import ScoreDecomposition
    from .metrics import BrierDecomposition, CalibrationReport
    from collections.abc import Iterable, Mapping

    from .multicalibration import ECCEResult, MulticalibrationResult, SegmentReport
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
    "calibration_ratio",
    "calibration_report",
    "correct_negative_sampling",
    "ecce",
    "expected_calibration_error",
    "fit_beta",
    "fit_histogram",
    "fit_isotonic",
    "fit_platt",
    "log_loss",
    "multicalibration_error",
    "predict",
    "roc_auc_score",
    "score_decomposition",
    "segment_report",
    "smooth_ece",
]

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
            return _Chunks(list(zip(xs, ys, ws)), None, _dtype_of(parts[0]),
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
    return _Chunks(list(zip(xs, ys, ws)), int(x.shape[0]), np.dtype(x.dtype), sample_weight is not None)


def _pick(pair, i):
    return pair[i]


def _chunk(*columns):
    return columns


def _empty_like(chunk):
    return tuple(None if c is None else c[:0] for c in chunk)


def _concat(*pieces):
    return tuple(None if p[0] is None else np.concatenate(p) for p in zip(*pieces))


class DaskRows:
    """The :class:`fastcal._engine.Rows` of Dask: chunks as Delayed tuples of NumPy arrays.

    ``map`` computes one task per chunk; ``convert`` persists the converted
    chunks (on the workers, with distributed) so that later passes start
    from them without recomputing the inputs' graph; ``partition`` is a
    shuffle: every chunk split by the key's ranges
    (:func:`fastcal._engine.split_chunk`), partition ``j`` the
    concatenation of the ``j``-th pieces (persisted). Re-cutting partitioned
    rows splits only the partitions a new bound falls in; the others are
    kept as they are. ``release`` drops the references (distributed then
    frees the persisted chunks).
    """

    def __init__(self, chunks, parallelism=None, bounds=None, n_rows=None):
        self.chunks = list(chunks)
        self.parallelism = _n_threads() if parallelism is None else parallelism
        self.bounds = bounds
        self.n_rows = n_rows

    @classmethod
    def from_columns(cls, cols):
        """The raw chunks ``(x, y, w)`` of a :class:`_Chunks` (their number of rows when known)."""
        return cls([delayed(_chunk)(x, y, w) for x, y, w in cols.triples], n_rows=cols.n)

    def map(self, fn, *args):
        return list(dask.compute(*[delayed(fn)(c, *args) for c in self.chunks]))

    def convert(self, fn, *args):
        pairs = dask.persist(*[delayed(fn)(c, *args) for c in self.chunks])
        facts = dask.compute(*[delayed(_pick)(p, 1) for p in pairs])
        return DaskRows([delayed(_pick)(p, 0) for p in pairs], self.parallelism), list(facts)

    def partition(self, bounds, key=0):
        bounds = np.asarray(bounds)
        n_parts = bounds.shape[0] + 1
        pieces = [[] for _ in range(n_parts)]
        old = self.bounds if self.bounds is not None and len(self.chunks) == self.bounds.shape[0] + 1 else None
        for i, c in enumerate(self.chunks):
            if old is not None:
                lo = old[i - 1] if i else -np.inf
                hi = old[i] if i < old.shape[0] else np.inf
                first = int(np.searchsorted(bounds, bounds.dtype.type(lo), side="right"))
                last = int(np.searchsorted(bounds, bounds.dtype.type(hi), side="left"))
                if first == last:  # every row of this partition stays together: moved as it is
                    pieces[first].append((c, True))
                    continue
            split = delayed(split_chunk, nout=n_parts)(c, bounds, key)
            for j in range(n_parts):
                pieces[j].append((split[j], False))
        parts = []
        for ps in pieces:
            if len(ps) == 1 and ps[0][1]:
                parts.append(ps[0][0])
            elif ps:
                parts.append(delayed(_concat)(*[p for p, _ in ps]))
            else:
                parts.append(delayed(_empty_like)(self.chunks[0]))
        return DaskRows(dask.persist(*parts), self.parallelism, bounds)

    def release(self):
        self.chunks = []


def _rows(cols):
    """A driver's ``rows``, ``x_dtype`` and ``weighted`` for the aligned chunks ``cols``."""
    return {"rows": DaskRows.from_columns(cols), "x_dtype": cols.x_dtype, "weighted": cols.weighted}


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
    The engine's :func:`fastcal._engine.isotonic.fit_isotonic` over
    :class:`DaskRows`. Passes: the chunks are validated and converted (and
    persisted), a strided sample of each (one score in 4096, 64 to 4096)
    gives the partition boundaries; each chunk is split by score range and
    the pieces are shuffled to the partitions (persisted); a small summary
    of each partition finds boundaries that fall inside a run of scores
    closer than the dtype's resolution (then a small round follows the tie
    groups across them, and only the partitions whose bounds move are split
    again); each partition is fitted where it lives and only its PAV blocks
    travel to the client. Memory: the data is held once as chunks and once
    as partitions during the shuffle.

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
    cols = _columns(scores, y, sample_weight, "X")
    return _isotonic.fit_isotonic(**_rows(cols), n_partitions=n_partitions, **params)


# ---------------------------------------------------------------------------
# Platt scaling and beta calibration: one first round, then rounds of sums.
# ---------------------------------------------------------------------------


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
    cols = _columns(scores, y, sample_weight, "scores")
    return _logistic.fit_platt(**_rows(cols), max_iter=max_iter, tol=tol)


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
    cols = _columns(p, y, sample_weight, "p")
    return _logistic.fit_beta(**_rows(cols), parameters=parameters, max_iter=max_iter, tol=tol)


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


def _metric_rows(y_true, y_prob, sample_weight):
    return _columns(y_prob, y_true, sample_weight, "y_prob", y_name="y_true")


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
    return _binned.fit_histogram(**_rows(_metric_rows(y, p, sample_weight)), n_bins=n_bins, strategy=strategy)


@overload
def calibration_curve(y_true: Data, y_prob: Data, *, return_counts: Literal[False] = False,
                      **options: Unpack[BinOptions[Data | float | None]]) -> Curve: ...
@overload
def calibration_curve(y_true: Data, y_prob: Data, *, return_counts: Literal[True],
                      **options: Unpack[BinOptions[Data | float | None]]) -> CurveWithCounts: ...
@overload
def calibration_curve(y_true: Data, y_prob: Data, *, return_counts: bool = False,
                      **options: Unpack[BinOptions[Data | float | None]]) -> Curve | CurveWithCounts: ...
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
    return _binned.calibration_curve(**_rows(_metric_rows(y_true, y_prob, sample_weight)), pos_label=pos_label,
                n_bins=n_bins, strategy=strategy, return_counts=return_counts)


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


def _matrix_rows(y_true, y_prob, sample_weight):
    """:class:`DaskRows` of an (n, k) matrix ``y_prob``: chunks ``(P, y, w)`` of whole rows, and ``k``."""
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
    triples = zip(P.to_delayed().reshape(-1), y.to_delayed(), ws)
    return DaskRows([delayed(_chunk)(p, yc, wc) for p, yc, wc in triples]), k


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
        rows, k = _matrix_rows(y_true, y_prob, sample_weight)
        return _binned.brier_score_loss(rows, x_dtype=np.float64, weighted=sample_weight is not None, labels=labels,
                                        n_classes=k)
    return _binned.brier_score_loss(**_rows(_metric_rows(y_true, y_prob, sample_weight)), pos_label=pos_label)


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
    if _is_class_matrix(y_prob):
        rows, k = _matrix_rows(y_true, y_prob, sample_weight)
        return _binned.log_loss(rows, x_dtype=np.float64, weighted=sample_weight is not None, normalize=normalize,
                                labels=labels, n_classes=k)
    return _binned.log_loss(**_rows(_metric_rows(y_true, y_prob, sample_weight)), pos_label=pos_label,
                            normalize=normalize)


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
    return _binned.expected_calibration_error(**_rows(_metric_rows(y_true, y_prob, sample_weight)), n_bins=n_bins,
                                              strategy=strategy, norm=norm, pos_label=pos_label)


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
    _binary_only("smooth_ece", y_prob)
    return _binned.smooth_ece(**_rows(_metric_rows(y_true, y_prob, sample_weight)), bandwidth=bandwidth)


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
    return _binned.brier_decomposition(**_rows(_metric_rows(y_true, y_prob, sample_weight)), n_bins=n_bins,
                                       strategy=strategy, pos_label=pos_label)


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
    _binary_only("score_decomposition", p)
    return _decomposition.score_decomposition(**_rows(_metric_rows(y, p, sample_weight)), scoring=scoring)


# ---------------------------------------------------------------------------
# ROC AUC and the calibration report: the drivers of fastcal._engine.decomposition.
# ---------------------------------------------------------------------------


def roc_auc_score(
    y_true: Data,
    y_score: Data,
    *,
    sample_weight: Data | float | None = None,
    pos_label: float | str | None = None,
    n_partitions: int | None = None,
) -> float:
    """:func:`fastcal.roc_auc_score` of binary Dask data, exact.

    The rows are range-partitioned by score with a shuffle (as
    :func:`fit_isotonic` does), each partition's Mann-Whitney counts are
    computed on the workers and merged in score order on the client
    (:mod:`fastcal._engine.decomposition`): equal to the in-memory AUC bit for
    bit without weights, to the rounding of the sums with them. Binary only
    (``y_score`` 1-D); ``n_partitions`` score ranges (the result does not
    depend on it).
    """
    _binary_only("roc_auc_score", y_score)
    return _decomposition.roc_auc_score(**_rows(_columns(y_score, y_true, sample_weight, "y_score",
                                                         y_name="y_true")),
                                        pos_label=pos_label, n_partitions=n_partitions)


def calibration_report(
    y_true: Data,
    y_prob: Data,
    *,
    sample_weight: Data | float | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | str | None = None,
) -> CalibrationReport:
    """:func:`fastcal.calibration_report` of binary Dask data.

    One validation pass, one bin table, the exact AUC of :func:`roc_auc_score`,
    both CORP decompositions from one exact isotonic fit, and the calibration
    slope and intercept from Newton passes over the persisted logits
    (:func:`fastcal._engine.decomposition.calibration_report`): the in-memory
    report, sums to their rounding and the slope to the solver's tolerance.
    """
    _binary_only("calibration_report", y_prob)
    return _decomposition.calibration_report(**_rows(_metric_rows(y_true, y_prob, sample_weight)), n_bins=n_bins,
                                             strategy=strategy, pos_label=pos_label)


# ---------------------------------------------------------------------------
# ECCE, calibration ratio, report by segment: the drivers of fastcal._engine.segments.
# ---------------------------------------------------------------------------


def _with_columns(cols, y_prob, extra):
    """The driver's ``rows`` of the aligned chunks ``cols`` of ``y_prob`` with more columns ``extra`` (name:
    values; each chunk ``(p, y, w, *extra)``), aligned with ``y_prob``'s chunks (zipped with its partitions when
    every column is a Series of a DataFrame of as many partitions)."""
    if all(_is_series(v) for v in extra.values()) and cols.n is None:
        parts = [_series(v) for v in extra.values()]
        if any(p.npartitions != len(cols.triples) for p in parts):
            raise ValueError("the columns must be Series of one Dask DataFrame (the same partitions).")
        others = [p.to_delayed() for p in parts]
    else:
        x = _as_dask_1d(y_prob, "y_prob", allow_column=True)
        others = []
        for name, values in extra.items():
            arr = _as_dask_1d(values, name, chunks=x.chunks)
            if arr.shape[0] != x.shape[0]:
                raise ValueError(f"Inconsistent numbers of samples: y_prob has {x.shape[0]}, {name} has "
                                 f"{arr.shape[0]}.")
            others.append(arr.rechunk(x.chunks).to_delayed().ravel().tolist())
    chunks = [delayed(_chunk)(x, y, w, *more) for (x, y, w), *more in zip(cols.triples, *others)]
    return {"rows": DaskRows(chunks, n_rows=cols.n), "x_dtype": cols.x_dtype, "weighted": cols.weighted}


def ecce(y_true: Data, y_prob: Data, *, sample_weight: Data | float | None = None,
         n_partitions: int | None = None) -> ECCEResult:
    """:func:`fastcal.ecce` of Dask data: the ECCE, its sigma and p-value.

    The rows are range-partitioned by probability with a shuffle (the
    isotonic fit's range partition: equal probabilities are never split),
    each partition returns its sum and the extremes of its running sums, and
    the client merges them in score order by prefix offsets
    (:mod:`fastcal._engine.segments`). Equal to the in-memory result to the
    rounding of the float64 sums (about 1e-12 relative or better).
    ``n_partitions``: probability ranges (the result does not depend on it).
    """
    return _segments.ecce(**_rows(_metric_rows(y_true, y_prob, sample_weight)), n_partitions=n_partitions)


def calibration_ratio(y_true: Data, y_prob: Data, *, sample_weight: Data | float | None = None,
                      adjust_unjoined: bool = False) -> float:
    """:func:`fastcal.calibration_ratio` of Dask data: per-chunk sums, added on the client in chunk order."""
    return _segments.calibration_ratio(**_rows(_metric_rows(y_true, y_prob, sample_weight)),
                                       adjust_unjoined=adjust_unjoined)


def segment_report(y_true: Data, y_prob: Data, groups: Data, *, sample_weight: Data | float | None = None,
                   n_bins: int = 10, n_partitions: int | None = None) -> SegmentReport:
    """:func:`fastcal.segment_report` of Dask data: one row per group, in the in-memory order.

    The groups are numbered as the in-memory function numbers the whole
    column (each chunk's distinct values, gathered on the client), the rows
    are shuffled so that each partition holds whole groups, and each
    partition runs the in-memory report on its rows
    (:mod:`fastcal._engine.segments`). Equal to the in-memory report (``n``
    exactly; the rest to the rounding of a group's sums). ``groups``: a Dask
    array or Series (any values; NaN and None are one group);
    ``n_partitions``: partitions of whole groups (the result does not depend
    on it).
    """
    cols = _metric_rows(y_true, y_prob, sample_weight)
    return _segments.segment_report(**_with_columns(cols, y_prob, {"groups": groups}), n_bins=n_bins,
                                    n_partitions=n_partitions)


def multicalibration_error(
    y_true: Data,
    y_prob: Data,
    segments: Mapping[str, Data] | dd.DataFrame,
    *,
    sample_weight: Data | float | None = None,
    numerical: Iterable[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 3,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
    n_partitions: int | None = None,
) -> MulticalibrationResult:
    """:func:`fastcal.multicalibration_error` of Dask data: the same segments, values and numbers.

    ``segments``: a mapping of names to Dask arrays or Series (or a Dask
    DataFrame of the features), aligned with ``y_prob``. The features' value
    orders, collapsed categories and quantile bins come from reductions on
    the client (the bins are NumPy's percentiles of the whole column,
    exactly); each chunk's cells are summed; the per-segment running sums
    come from a range partition by probability, merged per segment by prefix
    offsets (:mod:`fastcal._engine.segments`). Equal to the in-memory result
    (segments and counts exactly; the ECCEs to ~1e-12 relative).
    ``n_partitions``: probability ranges (the result does not depend on it).
    """
    if _is_dataframe(segments):
        features = {str(c): segments[c] for c in segments.columns}
    elif hasattr(segments, "items"):
        features = dict(segments.items())
    else:
        raise TypeError(f"segments must be a mapping of feature names to arrays, or a Dask DataFrame; got "
                        f"{type(segments).__name__}.")
    cols = _metric_rows(y_true, y_prob, sample_weight)
    rows = _with_columns(cols, y_prob, {f"segments[{name!r}]": v for name, v in features.items()}) if features else \
        _rows(cols)
    return _segments.multicalibration_error(
        **rows, names=list(features), numerical=numerical, max_depth=max_depth,
        max_values_per_segment_feature=max_values_per_segment_feature,
        min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments, n_partitions=n_partitions)
