"""Groups numbered over a :class:`~fastcal._engine.Rows`, as :mod:`fastcal._coding` numbers a whole column.

The segment drivers (the report by segment, the multicalibration error) and
the grouped fit number the groups of rows they never hold whole:

:func:`number_groups`
    one :meth:`Rows.map` gathers each chunk's distinct values (in order of
    first appearance) and their rows; :func:`fastcal._coding.group_codes` of
    those, in chunk order, orders them as it orders the whole column (sorted
    numbers and strings; objects in order of first appearance; the missing
    value last). Several group columns: each column numbered as one column
    is, the tuples that occur ordered column by column (:class:`Crossed`),
    as :func:`fastcal._coding.group_sizes_codes` orders them.
:func:`number_chunk`
    a :meth:`Rows.convert` function giving every row its group's number.
:func:`group_bounds`
    bounds that cut the numbered rows into partitions of whole groups
    (:meth:`Rows.partition` on the numbers' column).

Also :func:`distinct_values`, :func:`numbered` and :func:`chunk_numbers`, the
steps the multicalibration error's feature values reuse, and
:data:`GROUP_PARTITION_ROWS`.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.validation import column_or_1d
from ._values import group_codes

__all__ = ["CHANGED", "GROUP_PARTITION_ROWS", "Crossed", "chunk_numbers", "distinct_values", "group_bounds",
           "group_columns", "number_chunk", "number_groups", "numbered"]

#: Rows per partition of whole groups (the default of the report by segment and of the grouped fit).
GROUP_PARTITION_ROWS = 1 << 22


def distinct_values(values):
    """The distinct values of ``values`` (an array of its dtype, in order of first appearance) and their rows."""

    codes, uniques = group_codes(values, "groups")
    if not codes.shape[0]:
        return values[:0], np.zeros(0, dtype=np.int64)
    _, first = np.unique(codes, return_index=True)
    order = np.argsort(first, kind="stable")
    return values[first[order]], np.bincount(codes, minlength=len(uniques))[order]


def _group_values(chunk):
    """:func:`distinct_values` of a raw chunk's groups (column 3); with several group columns (columns 3 on),
    :func:`_crossed_values`."""
    if len(chunk) > 4:
        return _crossed_values(chunk[3:])
    return distinct_values(column_or_1d(chunk[3], "groups", allow_column=False, min_size=0))


def group_columns(columns):
    """The group columns of a chunk as 1-D arrays, named ``groups (column j)`` as in memory."""
    return [column_or_1d(c, f"groups (column {j})", allow_column=False, min_size=0) for j, c in enumerate(columns)]


def _crossed_values(columns):
    """``(per column (its distinct values, numbered as group_codes numbers them), the distinct tuples of each
    row's numbers (k x m, int64), their rows)`` of a chunk's group columns."""

    columns = group_columns(columns)
    values, codes = [], []
    for c in columns:
        code, uniques = group_codes(c, "groups")
        _, first = np.unique(code, return_index=True)
        values.append(c[first])
        codes.append(np.asarray(code, dtype=np.int64))
    if not columns[0].shape[0]:
        return values, np.zeros((0, len(columns)), dtype=np.int64), np.zeros(0, dtype=np.int64)
    tuples, counts = np.unique(np.stack(codes, axis=1), axis=0, return_counts=True)
    return values, tuples, counts


class Crossed:
    """The groups of several columns, numbered by :func:`number_groups` (internal API, for
    :func:`number_chunk`): each column's distinct values (``columns``, numbered as
    :func:`fastcal._coding.group_codes` numbers the whole column) and the tuples of their numbers that
    occur (``table``, k x m, sorted: the groups' order, as :func:`fastcal._coding.group_sizes_codes`
    orders the tuples: by the first column's order, then the second's...)."""

    def __init__(self, columns, table):
        self.columns, self.table = columns, table
        self.sizes = [c.shape[0] for c in columns]
        # one int64 key per tuple (mixed radix: sorted as the tuples) while the combinations fit; else a dict
        self.radix = math.prod(self.sizes) < (1 << 62)
        self.keys = self._keys(table) if self.radix else {tuple(t): i for i, t in enumerate(table.tolist())}

    def _keys(self, codes):
        key = np.zeros(codes.shape[0], dtype=np.int64)
        for j, k in enumerate(self.sizes):
            key = key * k + codes[:, j]
        return key

    def numbers(self, columns):
        """The group number of each row of the group ``columns`` of a chunk (1-D arrays)."""
        n = columns[0].shape[0]
        if not n:
            return np.zeros(0, dtype=np.int64)
        codes = np.stack([numbered(d, c)[0] for d, c in zip(self.columns, columns)], axis=1).astype(np.int64)
        if self.radix:
            key = self._keys(codes)
            at = np.minimum(np.searchsorted(self.keys, key), self.keys.shape[0] - 1)
            if not np.array_equal(self.keys[at], key):
                raise ValueError(CHANGED)
            return at.astype(np.int64)
        try:
            return np.fromiter((self.keys[t] for t in map(tuple, codes.tolist())), dtype=np.int64, count=n)
        except KeyError:
            raise ValueError(CHANGED) from None


CHANGED = ("groups: a chunk holds a value that no chunk held when the groups were numbered (do the chunks change "
            "between passes?).")


def numbered(distinct, values):
    """The numbers of ``values`` among the ``k`` values of ``distinct`` (all of them there), in the order
    :func:`fastcal._coding.group_codes` gives the ``k`` values: ``(numbers of values, k values in that
    order)``."""

    k = distinct.shape[0]
    codes, uniques = group_codes(np.concatenate([distinct, values]), "groups")
    if len(uniques) != k:
        raise ValueError(CHANGED)
    return codes[k:], uniques


def number_groups(rows):
    """The groups of rows ``(..., groups)`` (column 3) numbered as :func:`fastcal._coding.group_codes`
    numbers the whole column, in one :meth:`Rows.map`: ``(distinct, uniques, counts)``, ``distinct`` the values
    (an array of the column's dtype, for :func:`number_chunk`), ``uniques`` the groups in their order,
    ``counts`` the rows of each (int64).

    Rows of several group columns (columns 3 on) are numbered as
    :func:`fastcal._coding.group_sizes_codes` numbers a list of them: each column's values numbered
    as one column's, the tuples that occur ordered column by column (tuples in ``uniques``; ``distinct`` a
    :class:`Crossed`)."""
    found = rows.map(_group_values)
    if found and isinstance(found[0][0], list):
        return _number_crossed(found)
    pieces = [values for values, _ in found]
    distinct_all = np.concatenate(pieces) if pieces else np.empty(0)
    distinct_all, _ = distinct_values(distinct_all) if distinct_all.shape[0] else (distinct_all, None)
    uniques = numbered(distinct_all, distinct_all)[1] if distinct_all.shape[0] else []
    counts = np.zeros(len(uniques), dtype=np.int64)
    for values, c in found:
        if values.shape[0]:
            np.add.at(counts, numbered(distinct_all, values)[0], c)
    return distinct_all, uniques, counts


def _number_crossed(found):
    """:func:`number_groups` of the chunks' :func:`_crossed_values`."""
    m = len(found[0][0])
    columns, uniques = [], []
    for j in range(m):
        pieces = [f[0][j] for f in found]
        distinct = np.concatenate(pieces)
        distinct = distinct_values(distinct)[0] if distinct.shape[0] else distinct
        columns.append(distinct)
        uniques.append(numbered(distinct, distinct)[1] if distinct.shape[0] else [])
    # each chunk's tuples of its own numbers as tuples of the global numbers
    tuples = [np.stack([numbered(columns[j], values[j])[0][t[:, j]] for j in range(m)], axis=1)
              for values, t, _ in found if t.shape[0]]
    if not tuples:
        return Crossed(columns, np.zeros((0, m), dtype=np.int64)), [], np.zeros(0, dtype=np.int64)
    table, inverse = np.unique(np.concatenate(tuples).astype(np.int64), axis=0, return_inverse=True)
    counts = np.zeros(table.shape[0], dtype=np.int64)
    np.add.at(counts, inverse.reshape(-1), np.concatenate([c for _, t, c in found if t.shape[0]]))
    keys = [tuple(uniques[j][v] for j, v in enumerate(row)) for row in table.tolist()]
    return Crossed(columns, table), keys, counts


def chunk_numbers(distinct, columns):
    """The group numbers of the rows of a chunk's group ``columns`` (validated 1-D arrays) among ``distinct``
    (of :func:`number_groups`)."""
    if isinstance(distinct, Crossed):
        return distinct.numbers(columns)
    g = columns[0]
    return numbered(distinct, g)[0] if g.shape[0] else np.zeros(0, dtype=np.int64)


def number_chunk(chunk, distinct):
    """A :meth:`Rows.convert` function: the raw chunk ``(x, y, w, groups)`` (or ``(x, y, w, *group columns)``)
    with its groups replaced by their numbers among ``distinct`` (of :func:`number_groups`, int64), a scalar
    weight by an array of it, every column a NumPy array; its fact is its number of rows. The other columns are
    not validated (the caller's fits do)."""
    x, y, w, *groups = chunk
    columns = (group_columns(groups) if len(groups) > 1
               else [column_or_1d(groups[0], "groups", allow_column=False, min_size=0)])
    n = columns[0].shape[0]
    for j, g in enumerate(columns):
        if np.shape(x)[0] != g.shape[0]:
            name = "groups" if len(columns) == 1 else f"groups (column {j})"
            raise ValueError(f"Inconsistent numbers of samples: scores has {np.shape(x)[0]}, {name} has "
                             f"{g.shape[0]}.")
    codes = chunk_numbers(distinct, columns)
    if w is not None:
        w = np.full(n, float(w)) if np.ndim(w) == 0 else np.asarray(w)
    return (np.asarray(x), np.asarray(y), w, codes), int(n)


def group_bounds(counts, n_parts):
    """Bounds (group numbers, int64) that cut groups ``0..k-1`` with these row ``counts`` into at most
    ``n_parts`` ranges of whole groups of about equal rows."""
    k = counts.shape[0]
    if n_parts <= 1 or k <= 1:
        return np.empty(0, dtype=np.int64)
    cum = np.cumsum(counts)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, n_parts) / n_parts, side="left") + 1
    return np.unique(cuts[(cuts > 0) & (cuts < k)]).astype(np.int64)
