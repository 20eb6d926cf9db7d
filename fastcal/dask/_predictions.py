"""Predictions and prior corrections on Dask data: lazy ``map_blocks`` of the Numba kernels."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Literal, overload

import dask.array as da
import numpy as np

from .._core.errors import not_fitted
from dask import delayed

from ._rows import (DaskRows, as_dask_1d, as_series, chunk_of, dtype_of, group_columns, is_dataframe, is_series,
                    length_may_be, matrix_rows, segment_features)

if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import TypeAlias

    import dask.dataframe as dd
    from numpy.typing import ArrayLike

    from .._typing import DaskArrayInput, DaskData, DaskSeriesInput
    from ..beta import BetaCalibration
    from ..grouped import GroupedCalibrator
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicRegression
    from ..multicalibration import MulticalibrationCalibrator
    from ..platt import PlattScaling
    from ..prior import PriorEMResult
    from ..label_shift import LabelShiftResult

    #: The fitted 1-D calibrators :func:`predict` applies.
    OneD: TypeAlias = IsotonicRegression | PlattScaling | BetaCalibration | HistogramBinning

    from ..multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
    from ..temperature import TemperatureScaling

    #: The fitted multiclass calibrators :func:`predict_proba` applies.
    Multiclass: TypeAlias = (TemperatureScaling | VectorScaling | BiasCorrectedTemperatureScaling | MatrixScaling
                             | DirichletCalibration)

# ---------------------------------------------------------------------------
# Predictions and prior corrections: lazy map_blocks of the Numba kernels.
# ---------------------------------------------------------------------------


def _predict_block(block, estimator):
    return estimator.predict(block)


def _on_partition(part, block_function, *args):
    """``block_function(values, *args)`` of a dataframe partition, as a Series of the same index and name."""
    import pandas as pd

    return pd.Series(block_function(part.to_numpy(), *args), index=part.index, name=part.name)


def _prediction_dtype(estimator, dtype):
    from ..isotonic import IsotonicRegression

    if isinstance(estimator, IsotonicRegression):
        return estimator.X_thresholds_.dtype
    if hasattr(estimator, "bin_values_"):  # HistogramBinning: float64
        return np.dtype(np.float64)
    return np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)


def _predict_grouped_block(block, *args):
    """A GroupedCalibrator's ``predict`` of a block: ``args`` the group columns' blocks (one: the column; several: a
    list of them), then the estimator."""
    groups = args[0] if len(args) == 2 else list(args[:-1])
    return args[-1].predict(block, groups)


def _grouped_dtype(estimator, dtype):
    """The dtype of a GroupedCalibrator's predictions: its global model's (its ``predict`` starts from them)."""
    return _prediction_dtype(estimator.global_calibrator_, dtype)


def _predict_segments_block(block, *args, names):
    """A MulticalibrationCalibrator's ``predict`` of a block: ``args`` the blocks of the features ``names``, then
    the estimator."""
    return args[-1].predict(block, dict(zip(names, args[:-1])))


def _on_column_partitions(part, block_function, payload, names, *columns):
    """``block_function(values, *column values, payload)`` of aligned dataframe partitions, as a Series."""
    import pandas as pd

    for name, c in zip(names, columns):
        if len(part) != len(c):
            raise ValueError(f"Inconsistent numbers of samples in a partition: scores has {len(part)}, {name} has "
                             f"{len(c)}.")
    return pd.Series(block_function(part.to_numpy(), *(c.to_numpy() for c in columns), payload), index=part.index,
                     name=part.name)


def _by_columns(scores, columns, result_dtype, block_function, payload, what):
    """Lazy ``block_function(scores block, *blocks of columns, payload)`` (the result's dtype
    ``result_dtype(scores' dtype)``) of aligned columns (name -> values): partition by partition for a Series
    ``scores`` and Series columns of as many partitions, else block by block (each column a dask or NumPy array
    of the scores' length, cut into their chunks). ``what``: the columns' argument, for messages."""
    names = list(columns)
    if is_series(scores):
        s = as_series(scores)
        if all(is_series(c) and as_series(c).npartitions == s.npartitions for c in columns.values()):
            return s.map_partitions(_on_column_partitions, block_function, payload, names,
                                    *(as_series(c) for c in columns.values()), meta=(s.name, result_dtype(dtype_of(s))),
                                    align_dataframes=False)
        raise ValueError(f"{what} must be Dask Series of as many partitions as scores when scores is a Series "
                         "(columns of one DataFrame); pass dask arrays to align by position.")
    arr = as_dask_1d(scores, "scores", allow_column=True)
    blocks = []
    for name, values in columns.items():
        c = as_dask_1d(values, name, chunks=arr.chunks if length_may_be(values, arr.shape[0]) else None)
        if c.shape[0] != arr.shape[0]:
            raise ValueError(f"Inconsistent numbers of samples: scores has {arr.shape[0]}, {name} has {c.shape[0]}.")
        blocks.append(c.rechunk(arr.chunks))
    return da.map_blocks(block_function, arr, *blocks, payload, dtype=result_dtype(arr.dtype))


def _predict_grouped(estimator, scores, groups):
    from ..grouped import GroupedCalibrator

    if not isinstance(estimator, GroupedCalibrator):
        raise TypeError(f"groups is only for a GroupedCalibrator; {type(estimator).__name__} predicts from the "
                        "scores alone.")
    if not hasattr(estimator, "global_calibrator_"):
        raise not_fitted("This GroupedCalibrator instance is not fitted yet. Call 'fit' first.")
    return _by_columns(scores, group_columns(groups), lambda dtype: _grouped_dtype(estimator, dtype),
                       _predict_grouped_block, estimator, "groups")


def _predict_segments(estimator, scores, segments):
    from ..multicalibration import MulticalibrationCalibrator

    if not isinstance(estimator, MulticalibrationCalibrator):
        raise TypeError(f"segments is only for a MulticalibrationCalibrator; {type(estimator).__name__} does not "
                        "take segment features.")
    if not hasattr(estimator, "offsets_"):
        raise not_fitted("This MulticalibrationCalibrator instance is not fitted yet. Call 'fit' first.")
    given = segment_features(segments)
    names = estimator.feature_names_in_
    missing = [name for name in names if name not in given]
    if missing:
        raise ValueError(f"segments lacks the features {missing} of the fit (it has {list(given)}).")
    return _by_columns(scores, {f"segments[{name!r}]": given[name] for name in names}, _result_dtype,
                       functools.partial(_predict_segments_block, names=tuple(names)), estimator, "segments")


def _predict_proba_block(block, estimator):
    return estimator.predict_proba(block)


def predict_proba(estimator: Multiclass, X: da.Array | dd.DataFrame | dd.Series) -> da.Array:
    """Lazy calibrated probabilities of a fitted multiclass calibrator (``TemperatureScaling``, ``VectorScaling``,
    ``BiasCorrectedTemperatureScaling``, ``MatrixScaling``, ``DirichletCalibration``) on Dask data.

    ``X`` is an (n, k) dask array (or a Dask DataFrame of k columns) of the
    scores the calibrator was fitted on, or one column of binary decision
    values (1-D, or a Series). Returns an (n, n_classes) dask array, row
    chunks preserved: each chunk is ``estimator.predict_proba`` of its rows
    (its parallel Numba kernel) on a worker, the in-memory probabilities bit
    for bit.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import fastcal, fastcal.dask
    >>> ts = fastcal.TemperatureScaling().fit(np.array([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0]]), [0, 1, 1])
    >>> fastcal.dask.predict_proba(ts, da.from_array(np.array([[2.0, 0.0]]), chunks=1)).compute().round(3)
    array([[0.667, 0.333]])
    """
    k = getattr(estimator, "n_classes_", None)
    if not hasattr(estimator, "predict_proba") or k is None:
        raise not_fitted(f"{type(estimator).__name__} is not a fitted fastcal multiclass calibrator.")
    arr = X.to_dask_array(lengths=True) if is_dataframe(X) or is_series(X) else X
    if not isinstance(arr, da.Array):
        raise TypeError(f"X must be a dask array or a Dask DataFrame, got {type(X).__name__}; for NumPy data use "
                        f"{type(estimator).__name__}.predict_proba.")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2:
        raise ValueError(f"X must be 1-D or 2-D (n_samples, n_classes), got {arr.ndim} dimensions.")
    arr = arr.rechunk({1: -1})
    dtype = np.dtype(np.float32) if arr.dtype == np.float32 else np.dtype(np.float64)
    return arr.map_blocks(_predict_proba_block, estimator, dtype=dtype, chunks=(arr.chunks[0], (k,)))


@overload
def predict(estimator: OneD | GroupedCalibrator | MulticalibrationCalibrator, scores: DaskSeriesInput, *,
            groups: DaskData | ArrayLike | None = None,
            segments: Mapping[str, DaskData | ArrayLike] | dd.DataFrame | None = None) -> dd.Series: ...
@overload
def predict(estimator: OneD | GroupedCalibrator | MulticalibrationCalibrator, scores: DaskArrayInput, *,
            groups: DaskData | ArrayLike | None = None,
            segments: Mapping[str, DaskData | ArrayLike] | dd.DataFrame | None = None) -> da.Array: ...
def predict(estimator: OneD | GroupedCalibrator | MulticalibrationCalibrator, scores: DaskData, *,
            groups: DaskData | ArrayLike | None = None,
            segments: Mapping[str, DaskData | ArrayLike] | dd.DataFrame | None = None) -> da.Array | dd.Series:
    """Lazy predictions of a fitted 1-D calibrator (``IsotonicRegression``, ``PlattScaling``,
    ``BetaCalibration``, ``HistogramBinning``), of a fitted ``GroupedCalibrator`` or of a fitted
    ``MulticalibrationCalibrator`` on Dask data.

    ``scores`` is a 1-D dask array (chunks preserved; an ``(n, 1)`` column is
    read as 1-D) or a dask Series (partitions and index preserved). Each
    chunk is the estimator's ``predict`` (its parallel Numba kernel) on a
    worker; the estimator travels with the tasks (a few kB, a GroupedCalibrator
    with all its group models).

    ``groups`` (required for a ``GroupedCalibrator``, refused otherwise):
    each row's group. With a Series ``scores``, a Series of as many
    partitions (columns of one DataFrame), zipped partition by partition;
    with a dask array, a dask or NumPy array of the same length, cut into
    the chunks of ``scores``. Several columns (a list or tuple of them, a
    dict, a Dask DataFrame of several columns: each row's group the tuple of
    its values) for a model fitted on several columns. Each chunk is ``GroupedCalibrator.predict(scores, groups)``
    of its rows: the in-memory predictions, bit for bit.

    ``segments`` (required for a ``MulticalibrationCalibrator``, refused
    otherwise): its segment features, a mapping of names to columns (or a
    Dask DataFrame), aligned with ``scores`` as ``groups`` are; every feature
    of the fit (others are ignored). Each chunk is
    ``MulticalibrationCalibrator.predict(scores, segments)`` of its rows: the
    in-memory predictions, bit for bit.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import fastcal, fastcal.dask
    >>> iso = fastcal.IsotonicRegression(out_of_bounds="clip").fit([0.1, 0.4, 0.8], [0, 1, 1])
    >>> fastcal.dask.predict(iso, da.from_array(np.array([0.25, 0.9]), chunks=1)).compute()
    array([0.5, 1. ])
    """
    from ..grouped import GroupedCalibrator
    from ..multicalibration import MulticalibrationCalibrator

    if groups is not None and segments is not None:
        raise TypeError("give groups (a GroupedCalibrator) or segments (a MulticalibrationCalibrator), not both.")
    if groups is not None:
        return _predict_grouped(estimator, scores, groups)
    if segments is not None:
        return _predict_segments(estimator, scores, segments)
    if isinstance(estimator, GroupedCalibrator):
        raise TypeError("groups is required to predict with a GroupedCalibrator: each row's group.")
    if isinstance(estimator, MulticalibrationCalibrator):
        raise TypeError("segments is required to predict with a MulticalibrationCalibrator: the rows' segment "
                        "features.")
    if not (hasattr(estimator, "predict")
            and any(hasattr(estimator, a) for a in ("X_thresholds_", "a_", "bin_values_"))):
        raise not_fitted(f"{type(estimator).__name__} is not a fitted 1-D fastcal calibrator.")
    if is_series(scores):
        s = as_series(scores)
        dtype = _prediction_dtype(estimator, dtype_of(s))
        return s.map_partitions(_on_partition, _predict_block, estimator, meta=(s.name, dtype))
    arr = as_dask_1d(scores, "scores", allow_column=True)
    dtype = _prediction_dtype(estimator, arr.dtype)
    return arr.map_blocks(_predict_block, estimator, dtype=dtype)


def _result_dtype(dtype):
    return np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)


def _as_dask_any(obj):
    if is_series(obj):
        return as_series(obj)
    if isinstance(obj, da.Array):
        return obj
    return da.from_array(np.asarray(obj))


def _cns_block(block, rate):
    from ..prior import correct_negative_sampling as f

    return f(block, rate)


@overload
def correct_negative_sampling(p: DaskSeriesInput, rate: float) -> dd.Series: ...
@overload
def correct_negative_sampling(p: DaskArrayInput, rate: float) -> da.Array: ...
def correct_negative_sampling(p: DaskData, rate: float) -> da.Array | dd.Series:
    """Lazy :func:`fastcal.correct_negative_sampling` of a dask array (any shape) or Series.

    ``rate`` is checked now; the values of ``p`` when the result is computed.
    """
    from ..prior import correct_negative_sampling as f

    arr = _as_dask_any(p)
    dtype = _result_dtype(dtype_of(arr))
    f(np.zeros(0, dtype=dtype), rate)  # validates the rate eagerly
    if is_series(arr):
        return arr.map_partitions(_on_partition, _cns_block, rate, meta=(arr.name, dtype))
    return arr.map_blocks(_cns_block, rate, dtype=dtype)


def _adjust_block(block, train_priors, new_priors):
    from ..prior import adjust_priors as f

    return f(block, train_priors, new_priors)


def adjust_priors(proba: DaskData, train_priors: float | ArrayLike, new_priors: float | ArrayLike) -> da.Array:
    """Lazy :func:`fastcal.adjust_priors` of a dask array: 1-D P(y=1 | x) or ``(n, k)`` rows.

    A 2-D array is rechunked to whole rows (all k classes in one chunk); row
    chunks are preserved. The priors are checked now.
    """
    from ..prior import adjust_priors as f

    arr = _as_dask_any(proba)
    if is_series(arr):
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


def estimate_priors_em(proba: DaskData, train_priors: float | ArrayLike, *, max_iter: int = 1000,
                       tol: float = 1e-8, accelerate: bool = True) -> PriorEMResult:
    """:func:`fastcal.estimate_priors_em` of a dask array: 1-D P(y=1 | x) or ``(n, k)`` rows (a Dask DataFrame of
    k columns too).

    The EM driver of every backend (one pass to check and convert the chunks,
    persisted, then one a map, each chunk's sums merged in chunk order):
    the in-memory estimate bit for bit when every chunk but the last holds
    4096 rows (the kernels' fixed chunks), else to about ``tol``.
    ``proba`` of the result is the lazy :func:`adjust_priors` of ``proba`` to
    the estimate. Warns as in memory when the iterations do not converge.
    """
    from ..prior import rows as _prior
    from ..prior import PriorEMResult

    arr = _as_dask_any(proba)
    if is_series(arr) or is_dataframe(arr):
        arr = arr.to_dask_array(lengths=True)
    if arr.ndim == 2:
        arr = arr.rechunk({1: -1})
    elif arr.ndim != 1:
        raise ValueError(f"proba must be 1-D or 2-D, got {arr.ndim} dimensions.")
    rows = DaskRows([delayed(chunk_of)(block) for block in arr.to_delayed().reshape(-1)])
    pi, n_iter, converged = _prior.estimate_priors_em(rows, x_dtype=arr.dtype, train_priors=train_priors,
                                                      max_iter=max_iter, tol=tol, accelerate=accelerate)
    return PriorEMResult(priors=pi, proba=adjust_priors(arr, train_priors, pi), n_iter=n_iter, converged=converged)


def estimate_label_shift(
    y_source: DaskData | ArrayLike,
    proba_source: DaskData,
    proba_target: DaskData,
    *,
    method: Literal["em", "bbse", "bbse-soft", "rlls", "rlls-soft"] = "em",
    calibrator: Any = "auto",
    n_bootstrap: int = 0,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
    max_iter: int = 1000,
    tol: float = 1e-8,
    condition_warning: float = 100.0,
    rlls_alpha: float = 0.01,
) -> LabelShiftResult:
    """:func:`fastcal.estimate_label_shift` of Dask data: ``proba_source`` and ``proba_target`` (n, k) dask arrays
    (or Dask DataFrames of k columns), ``y_source`` the source's class indices aligned with ``proba_source``.

    The label-shift driver of every backend (:func:`fastcal.label_shift.rows.estimate_label_shift`): the chunks
    checked and renormalised once (persisted), the calibrator fitted by the multiclass driver
    (:func:`fit_multiclass`'s) and applied by a conversion, the confusion matrix and the target's prediction
    frequencies one reduction each, the EM :func:`estimate_priors_em`'s. The parameters are the in-memory
    function's; ``calibrator`` is a name or one of fastcal's multiclass calibrators, and ``n_bootstrap`` is for
    hard BBSE and RLLS without a calibrator (their sufficient statistics are resampled; the other estimates
    would refit over all the rows per replicate). Equal to the in-memory estimate to about ``tol`` (the
    counts exactly, the other sums to their rounding).
    """
    from ..label_shift import rows as _label_shift

    source, k = matrix_rows(y_source, proba_source, None, x_name="proba_source", y_name="y_source")
    target = _as_dask_any(proba_target)
    if is_series(target) or is_dataframe(target):
        target = target.to_dask_array(lengths=True)
    if target.ndim != 2:
        raise ValueError(f"proba_target must be a 2-D array of probabilities (n_samples, n_classes), got "
                         f"{target.ndim} dimension(s).")
    if target.shape[1] != k:
        raise ValueError(f"proba_target has {target.shape[1]} classes (columns), proba_source {k}.")
    target = target.rechunk({1: -1})
    rows = DaskRows([delayed(chunk_of)(block) for block in target.to_delayed().reshape(-1)])
    return _label_shift.estimate_label_shift(source, rows, n_classes=k, method=method, calibrator=calibrator,
                                             n_bootstrap=n_bootstrap, confidence=confidence,
                                             random_state=random_state, max_iter=max_iter, tol=tol,
                                             condition_warning=condition_warning, rlls_alpha=rlls_alpha)
