"""The Dask adapter: aligned chunks of Dask columns, and :class:`DaskRows`, the engine's ``Rows`` over them.

Internal API of the modules of :mod:`fastcal.dask`:

- :func:`call_driver` and :func:`metric` (build the rows of a function's
  columns and call its driver: the whole of most public functions);
- :class:`DaskRows`; :func:`aligned_columns`, :func:`metric_columns`,
  :func:`matrix_rows`, :func:`with_columns` and :func:`group_columns` (chunks of scores, labels,
  weights and more columns, aligned as every function aligns them: the
  partitions of one DataFrame zipped, anything else by position, cut into
  the scores' chunks); :func:`driver_args` (a driver's ``rows``,
  ``x_dtype`` and ``weighted``);
- input checks: :func:`binary_only`, :func:`length_may_be`, :func:`is_class_matrix`,
  :func:`as_dask_1d`, :func:`is_series`, :func:`as_series`,
  :func:`is_dataframe`, :func:`dtype_of`.
"""

from __future__ import annotations

import math
import numbers
import os

import dask
import dask.array as da
import numpy as np
from dask import delayed

from .._engine import bind_chunk, split_chunk

# ---------------------------------------------------------------------------
# Inputs: aligned chunks of scores, labels and weights.
# ---------------------------------------------------------------------------


def is_series(obj):
    if isinstance(obj, da.Array) or not dask.is_dask_collection(obj) or not hasattr(obj, "npartitions"):
        return False
    import dask.dataframe as dd

    if isinstance(obj, dd.DataFrame):
        if len(obj.columns) != 1:
            raise ValueError("a Dask DataFrame argument must have exactly one column; pass df[column].")
        return True
    return isinstance(obj, dd.Series)


def as_series(obj):
    import dask.dataframe as dd

    return obj[obj.columns[0]] if isinstance(obj, dd.DataFrame) else obj


def _known_chunks(arr):
    if any(math.isnan(c) for c in arr.chunks[0]):
        arr = arr.compute_chunk_sizes()
    return arr


def as_dask_1d(obj, name, chunks=None, allow_column=False):
    """``obj`` as a 1-D dask array with known chunk sizes (rechunked to ``chunks`` if given)."""
    if is_series(obj):
        arr = as_series(obj).to_dask_array(lengths=True)
    elif isinstance(obj, da.Array):
        arr = obj
    else:
        values = np.asarray(obj)
        flat = chunks[0] if chunks and isinstance(chunks[0], tuple) else chunks  # ((sizes,),) or (sizes,)
        fits = chunks is not None and values.ndim == 1 and values.shape[0] == sum(flat)
        arr = da.from_array(values, chunks=chunks if fits else "auto")  # another length: the caller's error
    if arr.ndim == 2 and allow_column and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        want = "a 1-D array (or a single column)" if allow_column else "a 1-D array"
        raise ValueError(f"{name} must be {want}, got an array of shape {arr.shape}.")
    arr = _known_chunks(arr)
    return arr


def length_may_be(values, n):
    """Whether ``values`` may have ``n`` rows (a Dask collection may; an array of another length cannot be cut
    into chunks of ``n`` rows, and its length is named in the caller's error instead)."""
    return dask.is_dask_collection(values) or np.shape(values)[:1] == (n,)


def dtype_of(obj):
    try:
        return np.dtype(obj.dtype)
    except TypeError:
        return np.dtype(np.float64)


class _Chunks:
    """Aligned chunks ``(x, y, w)`` as Delayed objects, and what is known of them up front."""

    def __init__(self, triples, n, x_dtype, weighted, chunks=None):
        self.triples = triples
        self.n = n  # None when the lengths of dataframe partitions are not known
        self.x_dtype = x_dtype
        self.weighted = weighted
        self.chunks = chunks  # the dask array chunks of x when known (None: zipped dataframe partitions)


def aligned_columns(scores, y, sample_weight, score_name, y_name="y", weight_name="sample_weight"):
    """Align scores, labels and weights chunk by chunk; lengths are checked here when known."""
    scalar_w = isinstance(sample_weight, numbers.Number) and not isinstance(sample_weight, bool)
    series = [is_series(v) for v in (scores, y, None if scalar_w else sample_weight)]
    if series[0] and series[1] and (sample_weight is None or scalar_w or series[2]):
        parts = [as_series(v) for v in (scores, y) + (() if sample_weight is None or scalar_w else (sample_weight,))]
        if len({p.npartitions for p in parts}) == 1:
            # Partitions of one DataFrame: zip them (lengths are checked per partition).
            xs, ys = parts[0].to_delayed(), parts[1].to_delayed()
            ws = parts[2].to_delayed() if len(parts) == 3 else [sample_weight] * len(xs)
            return _Chunks(list(zip(xs, ys, ws)), None, dtype_of(parts[0]),
                           sample_weight is not None)
    x = as_dask_1d(scores, score_name, allow_column=True)
    if x.shape[0] == 0:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")
    arrays = {score_name: x}
    yy = as_dask_1d(y, y_name, chunks=x.chunks)
    arrays[y_name] = yy
    w = None
    if sample_weight is not None and not scalar_w:
        w = as_dask_1d(sample_weight, weight_name, chunks=x.chunks)
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
    return _Chunks(list(zip(xs, ys, ws)), int(x.shape[0]), np.dtype(x.dtype), sample_weight is not None, x.chunks)


def _pick(pair, i):
    return pair[i]


def chunk_of(*columns):
    """The columns as one chunk of :class:`DaskRows` (a tuple), delayed by whoever builds the rows."""
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
        return cls([delayed(chunk_of)(x, y, w) for x, y, w in cols.triples], n_rows=cols.n)

    def map(self, fn, *args):
        return list(dask.compute(*[delayed(fn)(c, *bind_chunk(args, i)) for i, c in enumerate(self.chunks)]))

    def convert(self, fn, *args):
        pairs = dask.persist(*[delayed(fn)(c, *bind_chunk(args, i)) for i, c in enumerate(self.chunks)])
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


def driver_args(cols):
    """A driver's ``rows``, ``x_dtype`` and ``weighted`` for the aligned chunks ``cols``."""
    return {"rows": DaskRows.from_columns(cols), "x_dtype": cols.x_dtype, "weighted": cols.weighted}


def _n_threads():
    try:
        from distributed import get_client

        client = get_client()
    except (ImportError, ValueError):
        return os.cpu_count() or 1
    return max(1, sum(client.nthreads().values()))


def metric_columns(y_true, y_prob, sample_weight):
    return aligned_columns(y_prob, y_true, sample_weight, "y_prob", y_name="y_true")


def call_driver(driver, scores, y, sample_weight, score_name, y_name, /, **kwargs):
    """``driver(rows, x_dtype=..., weighted=..., **kwargs)`` of the aligned chunks of ``scores``, ``y`` and
    ``sample_weight`` (named ``score_name`` and ``y_name`` in messages): the whole of most public functions."""
    return driver(**driver_args(aligned_columns(scores, y, sample_weight, score_name, y_name=y_name)), **kwargs)


def metric(driver, y_true, y_prob, sample_weight, *, binary=False, **kwargs):
    """:func:`call_driver` with the diagnostics' arguments; ``binary``: refuse an (n, k) ``y_prob`` first, as
    ``fastcal.dask.<the driver's name>``."""
    if binary:
        binary_only(driver.__name__, y_prob)
    return call_driver(driver, y_prob, y_true, sample_weight, "y_prob", "y_true", **kwargs)


def _shape(y_prob):
    shape = getattr(y_prob, "shape", None)
    if shape is None and not dask.is_dask_collection(y_prob):
        shape = np.shape(y_prob)
    return shape


def is_class_matrix(y_prob):
    """Whether ``y_prob`` is an (n, k >= 2) matrix of class probabilities (a Dask DataFrame of k >= 2 columns too)."""
    if is_dataframe(y_prob):
        return len(y_prob.columns) >= 2
    shape = _shape(y_prob)
    return shape is not None and len(shape) == 2 and shape[1] != 1


def binary_only(func, y_prob):
    """``ValueError`` if ``y_prob`` is an (n, k >= 2) matrix: ``func`` is binary only on Dask."""
    if is_class_matrix(y_prob):
        raise ValueError(f"fastcal.dask.{func} is binary only: y_prob must be 1-D, the probability of the positive "
                         f"class, got shape {_shape(y_prob)}; for an (n, k) matrix of class probabilities use "
                         f"fastcal.{func} in memory.")


def is_dataframe(obj):
    if not dask.is_dask_collection(obj) or isinstance(obj, da.Array):
        return False
    import dask.dataframe as dd

    return isinstance(obj, dd.DataFrame)


def matrix_rows(y_true, y_prob, sample_weight, x_name="y_prob", y_name="y_true"):
    """:class:`DaskRows` of an (n, k) matrix ``y_prob``: chunks ``(P, y, w)`` of whole rows, and ``k``; a 1-D
    ``y_prob`` is one column (k = 1). The arguments are named ``x_name`` and ``y_name`` in messages."""
    P = y_prob.to_dask_array(lengths=True) if is_dataframe(y_prob) or is_series(y_prob) else y_prob
    P = P if isinstance(P, da.Array) else da.from_array(np.asarray(P))
    if P.ndim == 1:
        P = P[:, None]
    elif P.ndim != 2:
        raise ValueError(f"{x_name} must be 1-D or 2-D (n_samples, n_classes), got {P.ndim} dimensions.")
    P = _known_chunks(P.rechunk({1: -1}))
    k = int(P.shape[1])
    y = as_dask_1d(y_true, y_name, chunks=P.chunks[0])
    if y.shape[0] != P.shape[0]:
        raise ValueError(f"Inconsistent numbers of samples: {y_name} has {y.shape[0]}, {x_name} has {P.shape[0]}.")
    y = y.rechunk((P.chunks[0],))
    scalar_w = isinstance(sample_weight, numbers.Number) and not isinstance(sample_weight, bool)
    if sample_weight is None or scalar_w:
        ws = [None if sample_weight is None else np.full(c, float(sample_weight)) for c in P.chunks[0]]
    else:
        w = as_dask_1d(sample_weight, "sample_weight", chunks=P.chunks[0])
        if w.shape[0] != P.shape[0]:
            raise ValueError(f"sample_weight has {w.shape[0]} elements, expected {P.shape[0]} (one per sample).")
        ws = list(w.rechunk((P.chunks[0],)).to_delayed())
    triples = zip(P.to_delayed().reshape(-1), y.to_delayed(), ws)
    return DaskRows([delayed(chunk_of)(p, yc, wc) for p, yc, wc in triples]), k


def group_columns(groups):
    """The driver's extra columns of ``groups``: ``{"groups": groups}`` for one column, ``{"groups (column j)":
    column j}`` for several (each row's group the tuple of its values, as in memory): a list or tuple of 1-D
    Dask or NumPy arrays or Series, a mapping of names to them, or a Dask DataFrame of several columns."""
    from collections.abc import Mapping

    columns = None
    if is_dataframe(groups) and len(groups.columns) > 1:
        columns = [groups[c] for c in groups.columns]
    elif isinstance(groups, Mapping):
        columns = list(groups.values())
    elif isinstance(groups, (list, tuple)) and groups and all(
            dask.is_dask_collection(c) or getattr(c, "ndim", 0) >= 1 for c in groups):
        columns = list(groups)
    if columns is None:
        return {"groups": groups}
    if not columns:
        raise ValueError("groups must hold at least one column, got none.")
    if len(columns) == 1:
        return {"groups": columns[0]}
    return {f"groups (column {j})": c for j, c in enumerate(columns)}


def with_columns(cols, y_prob, extra, name="y_prob"):
    """The driver's ``rows`` of the aligned chunks ``cols`` of ``y_prob`` with more columns ``extra`` (name:
    values; each chunk ``(p, y, w, *extra)``), aligned with ``y_prob``'s chunks as :func:`aligned_columns` aligns
    its columns: zipped with the partitions of ``cols`` when they are a DataFrame's and every extra column is a
    Series of as many partitions (lengths checked per partition), otherwise by position (each column cut into
    ``y_prob``'s chunks). ``name``: ``y_prob``'s in messages."""
    parts = [as_series(v) for v in extra.values() if is_series(v)]
    if cols.chunks is None and len(parts) == len(extra) and all(
            p.npartitions == len(cols.triples) for p in parts):
        others = [p.to_delayed() for p in parts]
    else:
        chunks = cols.chunks if cols.chunks is not None else as_dask_1d(y_prob, name, allow_column=True).chunks
        n = sum(chunks[0])
        others = []
        for column, values in extra.items():
            arr = as_dask_1d(values, column, chunks=chunks if length_may_be(values, n) else None)
            if arr.shape[0] != n:
                raise ValueError(f"Inconsistent numbers of samples: {name} has {n}, {column} has {arr.shape[0]}.")
            others.append(arr.rechunk(chunks).to_delayed().ravel().tolist())
    chunks = [delayed(chunk_of)(x, y, w, *more) for (x, y, w), *more in zip(cols.triples, *others)]
    return {"rows": DaskRows(chunks, n_rows=cols.n), "x_dtype": cols.x_dtype, "weighted": cols.weighted}


def segment_features(segments):
    """The segment features of a mapping of names to columns, or of a Dask DataFrame (each column a feature), as a
    dict; a TypeError otherwise."""
    if is_dataframe(segments):
        return {str(c): segments[c] for c in segments.columns}
    if hasattr(segments, "items"):
        return dict(segments.items())
    raise TypeError(f"segments must be a mapping of feature names to arrays, or a Dask DataFrame; got "
                    f"{type(segments).__name__}.")
