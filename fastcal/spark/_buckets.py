"""Spark SQL expressions made with PySpark's public API alone (a classic session or Spark Connect): literal arrays,
binary searches over sorted values, and the hash keys that send bucket ``j`` to partition ``j``."""

from __future__ import annotations

import uuid

import numpy as np
from pyspark.sql import functions as F

from . import _expr as sql


# ---------------------------------------------------------------------------
# Expressions: binary search over sorted values, partition keys.
# ---------------------------------------------------------------------------


def temp_name(what):
    return f"__fastcal_{what}_{uuid.uuid4().hex[:12]}"


def array_column(values):
    """A literal array ``Column`` of the 1-D NumPy array ``values`` (float64, float32, int32 or int64; floats
    finite), exact to the bit, made with PySpark's public functions alone: one string literal of the values'
    decimal texts, split and cast to ``array<double>`` (``float``, ``int``, ``bigint``), which Spark's optimizer
    folds into one literal array of the plan, on a classic session and on Spark Connect alike.

    Exact: ``repr`` of a float is the shortest text that reads back as the same double, and Spark's cast of a
    string to a double (a float) is Java's correctly rounded parse (``Double.parseDouble``, ``Float.parseFloat``:
    a float32's double text lies within a double's half ulp of it, so it reads back as that float). The folded
    literal holds boxed values (``GenericArrayData``), as ``lit`` of a Java array does.
    """
    text, element = sql.split_text(values)
    if not text:
        return F.array().cast(f"array<{element}>")
    return F.split(F.lit(text), ",").cast(f"array<{element}>")


#: Grid cells per searched value of :func:`with_count_below`'s grid.
GRID_CELLS_PER_VALUE = 4
#: Most halvings :func:`with_count_below` writes into one expression (the codegen computes their shared parts
#: once); past it, one projection a halving.
INLINE_HALVINGS = 3


def grid_counts(sorted_values):
    """``(x0, scale, first, most)`` of :func:`with_count_below`'s grid over ``sorted_values``: ``first[c]`` the
    values in the cells below cell ``c``, ``most`` the most values in one cell; None if the values span no interval
    or more than a double."""
    a = np.asarray(sorted_values, dtype=np.float64)
    n = a.shape[0]
    with np.errstate(over="ignore"):
        span = float(a[-1] - a[0])
    g = GRID_CELLS_PER_VALUE * n
    if not 0 < span < np.inf or not g / span < np.inf:  # one value (no scale: -inf * 0 is NaN), or too wide
        return None
    scale = g / span
    with np.errstate(invalid="ignore", over="ignore"):
        cells = np.clip(np.floor((a - a[0]) * scale), 0, g).astype(np.int64)  # Spark's arithmetic, in float64
    first = np.searchsorted(cells, np.arange(g + 2), side="left")  # values in cells below cell c
    return float(a[0]), scale, first.astype(np.int32), int(np.max(np.diff(first)))


def with_count_below(df, value: str, sorted_values, out):
    """``df`` with an int column ``out``: how many of ``sorted_values`` (strictly increasing, finite, at least one)
    are ``< value`` (Spark SQL text of a number; null stays null, NaN gives a number the caller must not use).

    A grid in Spark SQL, compiled into the plan's generated code: cell
    ``c = floor((v - x0) s)`` of ``4 n`` equal cells (clipped to the grid),
    the count of values in the cells below ``c`` from a literal array, then
    a binary search over the values of cell ``c`` (``bit_length`` of the
    most values in a cell halvings: ``i += 2^k`` while the value at
    ``i + 2^k`` is ``< v``). Exact: the cell map is non-decreasing in ``v``
    and computed in the same IEEE float64 operations as the values' cells
    here, so a value in a cell below ``c`` is ``< v`` and one in a cell
    above is not. Values crowded in a few cells take more halvings, each a
    projection of its own past :data:`INLINE_HALVINGS`; values spanning no
    interval or more than a double, a binary search over all of them.
    """
    a = np.asarray(sorted_values, dtype=np.float64)
    n = int(a.shape[0])
    v = f"CAST({value} AS DOUBLE)"
    grid = grid_counts(a)
    if grid is None:
        start, steps = "0", n.bit_length()
    else:
        x0, scale, first, most = grid
        # clipped to the grid before the floor (NaN and infinities too: the floor of those fails under ANSI SQL)
        cell = f"CAST(floor(least(greatest(({v} - {sql.double(x0)}) * {sql.double(scale)}, 0.0D), " \
               f"{sql.double(first.shape[0] - 2)})) AS INT)"
        start, steps = f"element_at({sql.array(first)}, {cell} + 1)", most.bit_length()
    padded = sql.array(np.concatenate([a, np.full((1 << steps) - 1, a[-1])]))
    # least and greatest skip nulls: a null value would count from cell 0; nvl2 keeps it null outside any CASE, so
    # that the codegen computes the repeated parts of the halvings once.
    keep_null = f"nvl2({v}, 0, NULL)"
    if steps <= INLINE_HALVINGS:
        count = start
        for k in reversed(range(steps)):
            count = f"({count} + CAST(element_at({padded}, {count} + {1 << k}) < {v} AS INT) * {1 << k})"
        return df.withColumn(out, F.expr(f"least({count}, {n}) + {keep_null}"))
    o = sql.ident(out)
    df = df.withColumn(out, F.expr(f"{start} + {keep_null}"))
    for k in reversed(range(steps)):
        df = df.withColumn(out, F.expr(f"{o} + CAST(element_at({padded}, {o} + {1 << k}) < {v} AS INT) * {1 << k}"))
    return df.withColumn(out, F.expr(f"least({o}, {n}) + nvl2({o}, 0, NULL)"))


def with_first_not_less(df, flat: str, size: int, lo: str, hi: str, value: str, steps: int, out: str):
    """``df`` with an int column ``out``: the first index ``i`` in ``lo .. hi`` (0-based, ``hi`` excluded) of the
    sorted slice ``flat[lo:hi]`` of a literal array (Spark SQL text, :func:`fastcal.spark._expr.array`) of ``size``
    values with ``flat[i] >= value`` (``hi`` if none), each row on its own slice; null where ``lo`` is null.
    ``lo``, ``hi`` and ``value`` are Spark SQL text.

    ``steps`` halvings (enough for the longest slice), each a projection of
    plain SQL compiled into the plan's generated code: ``i += 2^k`` while the
    value before ``i + 2^k`` is ``< value`` and within the slice: the grouped
    predictions' search of each row's model.
    """
    o = sql.ident(out)
    df = df.withColumn(out, F.expr(f"CAST({lo} AS INT)"))
    for k in reversed(range(max(1, steps))):
        probe = f"({o} + {1 << k})"  # element_at counts from 1: the value at index probe - 1
        inside = f"({probe} <= {hi} AND element_at({flat}, least({probe}, {max(size, 1)})) < {value})"
        df = df.withColumn(out, F.expr(f"CASE WHEN {inside} THEN {probe} ELSE {o} END"))
    return df

def with_bound_count(df, value, bounds, out):
    """``df`` with an int column ``out``: how many of ``bounds`` (ascending, maybe repeated) are ``<= value`` (a
    ``Column``, compared as a double), made with PySpark's public functions (a classic session or Spark Connect).

    ``-inf`` bounds count below every value, ``+inf`` ones never; a null value gives null, NaN one more than every
    bound that counts (a caller's last bucket). The finite bounds are one literal array (:func:`array_column`),
    searched by ``bit_length`` halvings, each a projection of plain SQL: ``i += 2^k`` while the bound at ``i + 2^k``
    is ``<= value``. Spark SQL compares doubles as IEEE does (``-0.0 == 0.0``), as NumPy does.
    """
    bounds = np.asarray(bounds, dtype=np.float64)
    below = int(np.sum(bounds == -np.inf))
    finite = bounds[np.isfinite(bounds)]
    m = int(finite.shape[0])
    v = value.cast("double")
    df = df.withColumn(out, F.when(v.isNotNull(), F.lit(0)))
    if m:
        array = array_column(np.ascontiguousarray(finite))
        for k in reversed(range(m.bit_length())):
            probe = F.col(out) + F.lit(1 << k)
            inside = (probe <= F.lit(m)) & (F.element_at(array, F.least(probe, F.lit(m))) <= v)
            df = df.withColumn(out, F.when(inside, probe).otherwise(F.col(out)))
    return df.withColumn(out, F.when(F.isnan(v), F.lit(below + m + 1)).otherwise(F.col(out) + F.lit(below)))


def _murmur3_int(value, seed=42):
    """Spark's ``hash`` of an int column (Murmur3 x86_32 of 4 bytes, seed 42), as a signed 32-bit int."""
    m = 0xFFFFFFFF

    def rotl(x, r):
        return ((x << r) | (x >> (32 - r))) & m

    k1 = (value & m) * 0xCC9E2D51 & m
    k1 = rotl(k1, 15) * 0x1B873593 & m
    h1 = seed ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & m
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & m
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & m
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_keys(n):
    """``keys[j]``: an int whose Spark hash partition among ``n`` is ``j`` (``pmod(hash(key), n) == j``)."""
    keys = [None] * n
    missing, k = n, 0
    while missing:
        j = _murmur3_int(k) % n
        if keys[j] is None:
            keys[j] = k
            missing -= 1
        k += 1
    return keys
