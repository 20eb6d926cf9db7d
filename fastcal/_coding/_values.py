"""Numbering of segment values: groups, categorical features (collapsed past the values kept), numerical features
(quantile bins), and each row's cell (its value of every feature); :class:`Sizes`, the sizes that bound the work
and memory of :func:`~fastcal.multicalibration.multicalibration_error`.

Internal API (re-exported by :mod:`fastcal._coding`): :data:`OTHER`, :data:`MISSING`,
:func:`group_codes`, :func:`as_groups` and :class:`GroupColumns`, :func:`collapse_categories`, :func:`folded_values`, :func:`appearance_rank`, :func:`labels_by_appearance`,
:func:`quantile_edges`, :func:`numerical_edges`, :func:`binned_codes` and :func:`bin_numbers` (a numerical feature's
bins, for a fit that applies them to new rows), :func:`mixed_radix`, :func:`cell_type`, and :class:`Sizes`, the one hook of the tests (which lower its sizes so that test-sized inputs
are cut as 10^7 rows are, and narrow its cell types).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _binning
from .._core import parallel as _parallel
from . import _kernels as _k
from .._core.validation import as_float_array, column_or_1d

if TYPE_CHECKING:
    from numpy.typing import NDArray


#: The value that stands for the collapsed, least frequent values of a categorical feature (MCGrad's).
OTHER = "__OTHER"
#: The value that stands for a missing value of a categorical feature (MCGrad's).
MISSING = "__NA"


class Sizes:
    """The sizes that bound the work and memory of :func:`~fastcal.multicalibration.multicalibration_error`, read
    at each call (internal API: tests lower them so that test-sized inputs are cut into many score ranges, table
    blocks and sparse cells, as 10^7 rows are)."""

    #: Cells per row up to which every combination of feature values gets a cell number, seen or not
    #: (see :func:`cell_numbers`).
    DENSE_CELLS = 4
    #: Entries of the table of segments of each cell used by one pass over the rows (int32: 16 MB).
    TABLE_CELLS = 1 << 22
    #: Blocks of sorted rows times numbers of the per-block partial results merged in block order (float64: 16 MB),
    #: at most.
    CHUNK_ENTRIES = 1 << 21
    #: Entries of the per-task or per-chunk tables, at most (64 MB): chunks of rows times score ranges counted,
    #: tasks times values of a feature counted.
    COUNT_ENTRIES = 1 << 23
    #: Rows per score range, each sorted on one thread (about 400 kB of scores, cells, labels and weights: the L2
    #: cache), and per block of sorted rows scanned.
    RANGE_ROWS = 1 << 14
    #: Rows of a group of equal weighted scores above which its rows are ordered (by signed weight) in chunks on
    #: several threads, not by the one task that sorts its score range: a group of a quarter of the rows must not
    #: leave the other threads idle.
    TIE_ROWS = 1 << 18
    #: The integer types of cell numbers, narrowest first (:func:`cell_type`): the passes over the rows read and
    #: write a quarter of the memory with 27 cells in ``uint8`` as in ``int32``, and a fresh page costs a fault.
    #: Tests leave ``int64`` alone, the widest, to compare.
    CELL_TYPES = (np.uint8, np.uint16, np.int32, np.int64)


# ---------------------------------------------------------------------------
# segments
# ---------------------------------------------------------------------------
def _factorize(values, name):
    """``(codes, uniques)``: integer codes of ``values`` into ``uniques``; NaN (floats) and None (objects) are the
    value ``None`` at the end of ``uniques``."""
    if values.dtype.kind in "biu":
        uniques, codes = np.unique(values, return_inverse=True)
        return codes.reshape(-1), uniques.tolist()
    if values.dtype.kind == "f":
        missing = np.isnan(values)
        uniques, codes = np.unique(np.where(missing, 0.0, values), return_inverse=True)
        uniques = uniques.tolist()
        if missing.any():
            present = np.unique(codes[~missing])
            index = np.full(len(uniques), -1, dtype=np.int64)
            index[present] = np.arange(present.size)
            codes = np.where(missing, present.size, index[codes])
            uniques = [uniques[i] for i in present] + [None]
        return codes, uniques
    if values.dtype.kind in "US" and values.dtype.itemsize in (1, 2, 4, 8):  # short strings: their bits as integers
        as_int = np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")
        codes, uniques = _factorize(as_int, name)
        return codes, np.array(uniques, dtype=as_int.dtype).view(values.dtype).tolist()
    # Anything else: a dict of the values in order of appearance (hashing, no sort), then the missing ones merged.
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()), dtype=np.int64,
                        count=values.shape[0])
    uniques = list(index)
    missing = [_is_missing(u) for u in uniques]
    if any(missing):
        keep = [i for i, m in enumerate(missing) if not m]
        remap = np.full(len(uniques), len(keep), dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        codes = remap[codes]
        uniques = [uniques[i] for i in keep] + [None]
    return codes, uniques


def _is_missing(value):
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN
    except (TypeError, ValueError):  # pandas' NA, whose truth value raises
        return True


def _coded(values, name, p):
    """``(codes, offset, index, uniques, counts, first_p, first_row)``: a feature's values as integer codes,
    ``index[codes - offset]`` numbering its ``k`` distinct values ``uniques`` (None: missing), with each value's
    rows and its first appearance along the rows sorted (stably) by ``p``: the least ``(p, row)`` of its rows
    (:func:`appearance_rank` ranks them).

    Integers (and short strings, as the integers of their bits) of a range
    under 4 per row are their own codes, less their minimum: one pass for the
    range (``int_range``) and one that counts them
    (:func:`fastcal._segment_coding_kernels.code_stats`), both on fastcal's
    threads, no sort. Other values are numbered by :func:`_factorize` first.
    """
    raw, values = values, _as_integers(values)
    small = _small_range(values)
    if small is not None:
        lo, hi = small
        codes = values
        counts, first_p, first_row = _code_stats(codes, lo, p, hi - lo + 1)
        present, index = _numbered(counts)
        return (codes, lo, index, _values_of(raw, values, present + lo), counts[present], first_p[present],
                first_row[present])
    codes, uniques = _factorize(raw, name)
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    counts, first_p, first_row = _code_stats(codes, 0, p, len(uniques))
    return codes, 0, np.arange(len(uniques)), uniques, counts, first_p, first_row


def _as_integers(values):
    """``values`` as contiguous integers where they can be: integers, short strings (up to 8 bytes) as the
    integers of their bits, booleans as ``uint8``; other values unchanged."""
    if values.dtype.kind in "US" and values.dtype.itemsize in (1, 2, 4, 8):
        return np.ascontiguousarray(values).view(f"u{values.dtype.itemsize}")
    if values.dtype.kind == "b":
        return np.ascontiguousarray(values).view(np.uint8)
    return np.ascontiguousarray(values) if values.dtype.kind in "iu" else values


def _small_range(values):
    """``(lo, hi)`` of integer ``values`` (:func:`_as_integers`) if their range is under 4 per row (one pass on
    fastcal's threads, :func:`fastcal._segment_coding_kernels.int_range`), else None."""
    n = values.shape[0]
    if values.dtype.kind not in "iu" or not n:
        return None
    parts = _parallel.parallel_for(_k.int_range, n, values)
    lo, hi = min(int(least) for least, _ in parts), max(int(most) for _, most in parts)
    return (lo, hi) if hi - lo < 4 * n and hi < 2**63 else None


def _numbered(counts):
    """``(present, index)``: the integers of nonzero ``counts``, and ``index[j]`` the number of integer ``j``
    among them (0 for the absent ones)."""
    present = np.flatnonzero(counts)
    index = np.zeros(counts.shape[0], dtype=np.int64)
    index[present] = np.arange(present.size)
    return present, index


def _values_of(raw, values, present):
    """The integers ``present`` (of :func:`_as_integers` of ``raw``) as Python values of ``raw``'s kind."""
    if raw.dtype.kind in "US":
        return present.astype(values.dtype).view(raw.dtype).tolist()
    if raw.dtype.kind == "b":
        return present.astype(bool).tolist()
    return present.tolist()


def _code_stats(codes, offset, p, k):
    """``(counts, first_p, first_row)`` of :func:`fastcal._segment_coding_kernels.code_stats` over all rows, from
    its results on the tasks of :func:`fastcal._core.parallel.parallel_for` (exact: the counts added, the least
    ``(p, row)`` taken, the first task's on equal ``p``, whose rows come first). One task, in this thread, when
    tasks x ``k`` would pass :attr:`Sizes.COUNT_ENTRIES`: each task's results take ``k`` entries (an id-like
    feature, a range of 10^7 integers, took 10 GB and 20 s at 3 10^6 rows in 23 tasks)."""
    n = codes.shape[0]
    rows = n if k * (len(_parallel.task_bounds(n)) - 1) <= Sizes.COUNT_ENTRIES else 0
    parts = _parallel.parallel_for(_k.code_stats, n, codes, offset, p, k, rows=rows)
    if len(parts) == 1:
        return parts[0]
    counts = np.sum([c for c, _, _ in parts], axis=0)
    first_p = np.stack([f for _, f, _ in parts])
    best = np.argmin(first_p, axis=0)  # the first task holding the least p
    columns = np.arange(k)
    return counts, first_p[best, columns], np.stack([r for _, _, r in parts])[best, columns]


class GroupColumns:
    """Several group columns of one length: a row's group is the tuple of its values in the columns (internal
    API, made by :func:`as_groups`; :func:`group_sizes_codes` numbers the tuples)."""

    __slots__ = ("columns",)

    def __init__(self, columns: list[NDArray[Any]]) -> None:
        self.columns = columns

    def __len__(self) -> int:
        return self.columns[0].shape[0]

    def rows(self, index: Any) -> GroupColumns:
        """The groups of the rows ``index`` (an index array or a boolean mask)."""
        return GroupColumns([c[index] for c in self.columns])


def as_groups(groups: Any, name: str, *, min_size: int = 1) -> NDArray[Any] | GroupColumns:
    """``groups`` as one 1-D array, or as :class:`GroupColumns` when it holds several columns (internal API of
    the grouped estimators and reports).

    Several columns are a 2-D array of shape ``(n, m)`` with ``m > 1`` (rows of ``m`` values, as scikit-learn
    reads a 2-D array; a list of rows is an object array), a pandas DataFrame (its columns), a mapping of names
    to columns (its values, in order), or a list or tuple of 1-D arrays (pandas Series too); a row's group is
    then the tuple of its values. Each column keeps its dtype, and with it the order of :func:`group_codes`
    (numbers sorted, objects by first appearance). One column in any of these forms is that column.
    """
    columns = None
    if hasattr(groups, "iloc") and getattr(groups, "ndim", 1) == 2:  # a pandas DataFrame
        columns = [groups.iloc[:, j].to_numpy() for j in range(groups.shape[1])]
    elif isinstance(groups, Mapping):
        columns = list(groups.values())
    elif isinstance(groups, (list, tuple)) and groups and all(getattr(c, "ndim", 0) >= 1 for c in groups):
        columns = list(groups)
    elif getattr(groups, "ndim", 0) == 2 and groups.shape[1] > 1:
        arr = np.asarray(groups)
        columns = [arr[:, j] for j in range(arr.shape[1])]
    elif isinstance(groups, list) and groups and isinstance(groups[0], (list, tuple)):
        arr = np.asarray(groups, dtype=object)  # rows of values, kept as they are (numbered as objects)
        if arr.ndim == 2 and arr.shape[1] > 1:
            columns = [arr[:, j] for j in range(arr.shape[1])]
    if columns is None:
        return column_or_1d(groups, name, min_size=min_size)
    if not columns:
        raise ValueError(f"{name} must hold at least one column, got none.")
    columns = [column_or_1d(c, f"{name} (column {j})", min_size=min_size) for j, c in enumerate(columns)]
    lengths = {c.shape[0] for c in columns}
    if len(lengths) > 1:
        raise ValueError(f"the columns of {name} differ in length: {[c.shape[0] for c in columns]}.")
    return columns[0] if len(columns) == 1 else GroupColumns(columns)


def group_codes(values: Any, name: str) -> tuple[NDArray[np.int64], list[Any]]:
    """``(codes, uniques)``: the values of the 1-D array ``values`` numbered ``0..k-1`` (int64), and the ``k``
    distinct values as Python objects (None for a missing value: NaN, None, pandas' NA).

    The internal API of the grouped estimators and reports (:mod:`fastcal.grouped`); :func:`group_sizes_codes`
    gives the rows of each group too. Integers and short strings of a small range are counted and renumbered in
    two passes on fastcal's threads, other values numbered by ``np.unique`` or a dict. The order of ``uniques``
    is the values' order for numbers and booleans; for strings it is that of the integers of their bits (strings
    of up to 8 bytes, a small range of them), else of first appearance, as for other objects: the same for the
    same input, but not the strings' sorted order.
    """
    codes, uniques, _ = group_sizes_codes(values, name)
    return codes, uniques


def group_sizes_codes(values: Any, name: str) -> tuple[NDArray[np.int64], list[Any], NDArray[np.int64]]:
    """``(codes, uniques, sizes)``: :func:`group_codes` and the rows of each group (int64, ``k``).

    ``codes`` may be ``values`` itself (int64 values already ``0..k-1``, each present): the callers only read it.
    :class:`GroupColumns` are numbered by the tuples of their values, in the order of the first column's
    numbers, then the second's, and so on (:func:`_crossed_sizes_codes`).
    """
    if isinstance(values, GroupColumns):
        return _crossed_sizes_codes(values.columns, name)
    raw = np.asarray(values)
    values = _as_integers(raw)
    n = values.shape[0]
    small = _small_range(values)
    if small is not None:
        lo, hi = small
        span = hi - lo + 1
        # one count per thread if they take no more memory than the values (else one: the same counts)
        rows = n if span * _parallel.get_num_threads() <= n else 0
        counts = np.sum(_parallel.parallel_accumulate(_k.count_values, n, values, lo, rows=rows,
                                                      buffer=lambda: np.zeros(span, dtype=np.int64)), axis=0)
        present, index = _numbered(counts)
        if lo == 0 and present.size == span and values.dtype == np.int64:
            return values, present.tolist(), counts  # already 0..k-1, every one present (a factorized column)
        codes = np.empty(n, dtype=np.int64)
        _parallel.parallel_for(_k.renumber, n, values, lo, index, codes)
        return codes, _values_of(raw, values, present + lo), counts[present]
    codes, offset, index, uniques, counts, _, _ = _coded(raw, name, np.zeros(n))
    codes = index[codes.astype(np.int64, copy=False) - offset]  # a new array, never the input
    return codes, [None if _is_missing(u) else u for u in uniques], counts


def _crossed_sizes_codes(columns, name):
    """:func:`group_sizes_codes` of the rows' tuples of values in ``columns``: each column numbered alone, then
    the numbers crossed one column at a time (``code * k + code of the next column``, under ``n^2``) and
    numbered again, so that only the tuples that occur get a number."""
    codes, uniques, sizes = group_sizes_codes(columns[0], name)
    keys = [(u,) for u in uniques]
    for column in columns[1:]:
        c, u, _ = group_sizes_codes(column, name)
        k = len(u)
        codes, present, sizes = group_sizes_codes(codes * k + c, name)
        keys = [keys[v // k] + (u[v % k],) for v in present]
    return codes, keys, sizes


def appearance_rank(first_p, first_row):
    """Each value's rank of first appearance (0, 1, ...) from its least ``(p, row)`` (:func:`_coded`): by ``p``,
    then by row."""
    rank = np.empty(first_p.shape[0], dtype=np.int64)
    rank[np.lexsort((first_row, first_p))] = np.arange(first_p.shape[0])
    return rank


def categorical_codes(values, name, p, max_values, *, with_values=False):
    """``(codes, offset, remap, labels, folded)`` of a categorical feature: ``remap[codes - offset]`` numbers its
    values in order of first appearance along the sorted predictions, the ``max_values - 1`` most frequent kept,
    the others one value; ``folded`` is :func:`folded_values`. With ``with_values``, two more entries: the
    distinct values (Python objects, None for missing) and, for each, one of its rows."""
    codes, offset, index, uniques, counts, first_p, first_row = _coded(values, name, p)
    group, labels, rank = collapse_categories(uniques, counts, first_p, first_row, max_values,
                                              values.dtype.kind in "biuf")
    coded = (*_by_appearance(codes, offset, index, labels, rank, group),
             folded_values(len(uniques), max_values, labels))
    if not with_values:
        return coded
    return (*coded, [None if _is_missing(u) else u for u in uniques], first_row)


def folded_values(distinct, max_values, labels):
    """``(values folded, their label)`` of a categorical feature of ``distinct`` values, whose kept values'
    ``labels`` :func:`collapse_categories` gave, or None when it folds none."""
    return (distinct - (max_values - 1), labels[-1]) if distinct > max_values else None


def collapse_categories(uniques, counts, first_p, first_row, max_values, numeric):
    """A categorical feature's values kept: ``(group, labels, rank)``.

    ``uniques`` are its distinct values (None: missing), ``counts`` their
    rows and ``(first_p, first_row)`` their first appearances along the
    sorted predictions (:func:`_coded`). Past ``max_values`` values, the
    ``max_values - 1`` most frequent are kept (ties: the first to appear)
    and the others are one value, labelled ``"__OTHER"`` (the least value
    less 1 if ``numeric`` and no value is missing: MCGrad fills the missing
    values with ``"__NA"`` first, which leaves a column of objects), which
    appears where the first of them does.
    ``group[j]`` is value ``j``'s kept number, ``labels`` the kept values'
    labels (missing: ``"__NA"``) and ``rank`` their ranks of first
    appearance.

    The kept values are selected, not sorted: the count of the last one kept
    by a partition of the counts, the first to appear among the values of
    that count by a partition of their ``p`` (an id-like feature of millions
    of values: no sort of them).
    """
    k = len(uniques)
    if k <= max_values:
        return np.arange(k), [MISSING if u is None else u for u in uniques], appearance_rank(first_p, first_row)
    r = max_values - 1
    kept = np.empty(0, dtype=np.int64)
    if r:
        threshold = np.partition(counts, k - r)[k - r]  # the r-th largest count
        above = np.flatnonzero(counts > threshold)
        tied = np.flatnonzero(counts == threshold)
        need = r - above.size
        if tied.size > need:  # the first `need` of them to appear
            p_last = np.partition(first_p[tied], need - 1)[need - 1]
            tied = tied[first_p[tied] <= p_last]
            tied = tied[np.lexsort((first_row[tied], first_p[tied]))[:need]]
        kept = np.sort(np.concatenate([above, tied]))
    rest = np.ones(k, dtype=bool)
    rest[kept] = False
    rest_p = first_p[rest]
    p_other = rest_p.min()
    row_other = first_row[rest][rest_p == p_other].min()
    other = min(uniques) - 1 if numeric and all(u is not None for u in uniques) else OTHER
    group = np.full(k, kept.size, dtype=np.int64)
    group[kept] = np.arange(kept.size)
    labels = [MISSING if uniques[i] is None else uniques[i] for i in kept.tolist()] + [other]
    rank = appearance_rank(np.append(first_p[kept], p_other), np.append(first_row[kept], row_other))
    return group, labels, rank


def quantile_edges(n, lo, hi, max_values, name, select):
    """The edges of a numerical feature's quantile bins, MCGrad's: ``np.unique`` of its ``n`` values' (NaN left out)
    linear quantiles at ``linspace(0, 1, max_values + 1)``, bit for bit those of ``np.quantile`` and pandas'
    ``Series.quantile`` (:func:`fastcal._binning.percentiles_from_order_statistics`; ``select(ranks)`` gives the
    values' order statistics, ``lo`` and ``hi`` are the least and the greatest). In memory and on every backend.

    ``ValueError`` naming ``segments[name]`` if ``lo`` or ``hi`` is infinite: an edge would be NaN
    (``inf - inf``), and MCGrad's ``pd.cut`` raises on such edges.
    """
    if math.isinf(lo) or math.isinf(hi):
        raise ValueError(f"segments[{name!r}] must be finite to be cut into {max_values} quantile bins, but contains "
                         f"infinity.")
    return np.unique(_binning.percentiles_from_order_statistics(n, max_values, select, percent=False))


def numerical_edges(values, name, max_values):
    """``(x, edges)``: a numerical feature's values as contiguous float64, and the edges of its ``max_values``
    quantile bins (:func:`quantile_edges`), or None when it has at most ``max_values`` distinct values (each is then
    a value of its own)."""
    x = np.ascontiguousarray(as_float_array(values, f"segments[{name!r}]"), dtype=np.float64)
    if _k.count_distinct(x, max_values) <= max_values:
        return x, None
    missing = np.isnan(x)
    present = x[~missing] if missing.any() else x  # no mask copy if no NaN (the selection copies what it sorts)
    parts = _parallel.parallel_for(_k.int_range, present.shape[0], present)  # 2 values at least (not NaN)
    lo, hi = min(float(least) for least, _ in parts), max(float(most) for _, most in parts)
    return x, quantile_edges(present.shape[0], lo, hi, max_values, name,
                             lambda ranks: _binning.order_statistics(present, ranks, lo, hi))


def numerical_codes(values, name, p, max_values):
    """``(codes, offset, remap, labels, None)`` of a numerical feature: its values if at most ``max_values``, else
    quantile bin numbers (``max_values`` bins ``(e_{k-1}, e_k]``, the first closed, pandas' ``cut`` at
    :func:`quantile_edges`); NaN its own value (``nan``); nothing folded."""
    return binned_codes(*numerical_edges(values, name, max_values), name, p)


def binned_codes(x, edges, name, p):
    """:func:`numerical_codes` of the float64 values ``x`` and their bins' ``edges`` (None: the values themselves)
    (:func:`numerical_edges`)."""
    if edges is None:
        codes, offset, index, uniques, _, first_p, first_row = _coded(x, name, p)
        labels = [float("nan") if u is None else u for u in uniques]
        return (*_by_appearance(codes, offset, index, labels, appearance_rank(first_p, first_row)), None)
    bins = bin_numbers(x, edges)
    codes, offset, index, uniques, _, first_p, first_row = _coded(bins, name, p)
    labels = [float("nan") if u == edges.size else int(u) for u in uniques]
    return (*_by_appearance(codes, offset, index, labels, appearance_rank(first_p, first_row)), None)


def bin_numbers(x, edges):
    """The quantile bin of each float64 ``x`` (int64): ``0..edges.size - 2`` for the bins ``(e_{k-1}, e_k]`` (the first
    closed, the values beyond the edges in the first or the last), ``edges.size`` for NaN; on fastcal's threads."""
    bins = np.empty(x.shape[0], dtype=np.int64)
    _parallel.parallel_for(_k.bin_numbers, x.shape[0], x, edges, edges.size, bins)
    return bins


def labels_by_appearance(labels, rank, group=None):
    """``(renumber, labels)``: each value's number among ``labels`` (of the values kept, ``group[j]`` the label of
    value ``j``; None: value ``j`` is label ``j``) renumbered by the labels' ranks of appearance ``rank``, and the
    labels in that order."""
    order = np.empty(len(labels), dtype=np.int64)
    order[rank] = np.arange(len(labels))
    return rank if group is None else rank[group], [labels[i] for i in order]


def _by_appearance(codes, offset, index, labels, rank, group=None):
    """``(codes, offset, remap, labels)``: :func:`labels_by_appearance` of the values numbered ``index[codes -
    offset]``; one gather over ``index``, which spans the codes' range."""
    renumber, labels = labels_by_appearance(labels, rank, group)
    return codes, offset, renumber[index], labels


def feature_columns(segments, n, numerical):
    """The segment features as ``{name: 1-D array}``: categorical ones first, then numerical ones (MCGrad's order)."""
    if hasattr(segments, "columns") and hasattr(segments, "__getitem__"):  # a DataFrame, without importing pandas
        columns = {str(c) if not isinstance(c, str) else c: np.asarray(segments[c]) for c in segments.columns}
    elif hasattr(segments, "items"):
        columns = {name: column_or_1d(values, f"segments[{name!r}]", allow_column=False) for name, values in
                   segments.items()}
    else:
        raise TypeError(f"segments must be a mapping of feature names to arrays, or a DataFrame; got "
                        f"{type(segments).__name__}.")
    numerical = [numerical] if isinstance(numerical, str) else list(numerical)
    unknown = [name for name in numerical if name not in columns]
    if unknown:
        raise ValueError(f"numerical names {unknown} that are not features of segments ({list(columns)}).")
    for name, values in columns.items():
        if values.ndim != 1:
            raise ValueError(f"segments[{name!r}] must be 1-D, got shape {values.shape}.")
        if values.shape[0] != n:
            raise ValueError(f"segments[{name!r}] has {values.shape[0]} rows, expected {n} (one per sample).")
    categorical = [name for name in columns if name not in numerical]
    return [(name, columns[name], False) for name in categorical] + [(name, columns[name], True) for name in numerical]


def cell_numbers(features, n):
    """``(cells, digits, counts)``: each row's cell (its combination of values of every feature, numbered
    ``0..m-1``), each cell's value of each feature (``digits``, ``m`` x features) and its rows.

    Mixed-radix numbers of the values while they stay few (:attr:`Sizes.DENSE_CELLS` per row, per 2^14 rows at
    least), with a cell for every combination, seen or not; past that, the cells seen, numbered by ``np.unique``.
    One pass per feature on fastcal's threads (:func:`fastcal._segment_coding_kernels.add_digit`); the last
    also counts the cells while they are few (under a sixteenth of the rows: a buffer per thread).
    """
    sizes = [len(labels) for _, _, _, _, labels in features]
    dense = Sizes.DENSE_CELLS * max(n, 1 << 14)
    # Every combination while they fit (no renumbering), else cells renumbered below max(dense, n)
    kind = cell_type(min(math.prod(sizes), max(dense, n)))
    cells = np.zeros(n, dtype=kind)
    span, compacted = 1, False
    counts = None
    for f, ((_, codes, offset, remap, _), size) in enumerate(zip(features, sizes)):
        if span * size > dense:
            uniques, inverse = np.unique(cells, return_inverse=True)
            cells, span, compacted = inverse.astype(kind).reshape(-1), uniques.size, True
        span *= size
        if f == len(features) - 1 and not compacted and span <= max(n >> 4, 1 << 10):
            # the last digit counts the cells (a buffer per thread, so only while they are few)
            counts = np.sum(_parallel.parallel_accumulate(_k.add_digit, n, cells, codes, offset, remap, size,
                                                          buffer=lambda: np.zeros(span, dtype=np.int64)), axis=0)
        else:
            _parallel.parallel_for(_k.add_digit, n, cells, codes, offset, remap, size, np.zeros(0, dtype=np.int64))
    if not compacted:
        digits = np.empty((span, len(features)), dtype=np.int64)
        place = np.arange(span)
        for f in range(len(features) - 1, -1, -1):
            place, digits[:, f] = np.divmod(place, sizes[f])
        return cells, digits, np.bincount(cells, minlength=span) if counts is None else counts
    uniques, first, inverse, counts = np.unique(cells, return_index=True, return_inverse=True, return_counts=True)
    digits = np.empty((uniques.size, len(features)), dtype=np.int64)
    for f, (_, codes, offset, remap, _) in enumerate(features):
        digits[:, f] = remap[codes[first].astype(np.int64) - offset]
    return inverse.astype(kind).reshape(-1), digits, counts


def mixed_radix(digits):
    """Each row's mixed-radix number (int64) of the digits ``digits``: ``(codes, remap, size)`` triples, the row's
    digit ``remap[codes]`` (``0..size - 1``; ``codes`` int64 from 0), the first the most significant; one pass per
    digit on fastcal's threads (:func:`fastcal._coding._kernels.add_digit`). The product of the sizes must stay
    under 2^63."""
    n = digits[0][0].shape[0] if digits else 0
    cells = np.zeros(n, dtype=np.int64)
    for codes, remap, size in digits:
        _parallel.parallel_for(_k.add_digit, n, cells, codes, 0, np.ascontiguousarray(remap, dtype=np.int64), size,
                               np.zeros(0, dtype=np.int64))
    return cells


def cell_type(most):
    """The narrowest integer type of :attr:`Sizes.CELL_TYPES` for cell numbers below ``most`` in which twice the
    number still fits (the sort's rows carry ``cell << 1 | label``, :func:`row_type`); the last one past them."""
    return next((t for t in Sizes.CELL_TYPES if 2 * most <= np.iinfo(t).max + 1), Sizes.CELL_TYPES[-1])


def row_type(most):
    """The unsigned integer type of the sort's rows ``cell << 1 | label`` for cells below ``most``: that of
    :func:`cell_type`'s width."""
    return np.dtype(f"u{np.dtype(cell_type(most)).itemsize}").type


def group_kinds(values):
    """The kinds of the groups ``values`` that are not missing: "numbers" (booleans too), "text", or a type's name
    (values of other kinds never match: a model's groups or features against a column's values)."""
    kinds = set()
    for v in values:
        if v is None or (isinstance(v, float) and v != v):
            continue
        kinds.add("numbers" if isinstance(v, (numbers.Number, np.bool_)) else
                  "text" if isinstance(v, (str, bytes, np.str_)) else type(v).__name__)
    return kinds


def kind_names(kinds):
    """The kinds of :func:`group_kinds`, for messages."""
    return " and ".join(sorted(kinds))


def shown(values, k=5):
    """A few of ``values``, for messages."""
    values = list(values)
    head = ", ".join(repr(v) for v in values[:k])
    return head + (", ..." if len(values) > k else "")
