"""Spark SQL text: identifiers, exact literals and literal arrays, for expressions parsed by ``F.expr``.

fastcal.spark writes its predictions' expressions as Spark SQL text, parsed
once per projection (``pyspark.sql.functions.expr``): PySpark's public API,
the same on a classic session and on Spark Connect, and one call where
building the same expression from ``Column`` operators makes one call per
operator (each records a call site: 0.3-1 ms on a classic session).

Numbers are exact: a double is written as ``repr`` of the float (the
shortest text that reads back as the same double) with the ``D`` suffix,
which Spark's parser reads with Java's correctly rounded
``Double.parseDouble``; a literal array is one string of such texts, split
and cast (:func:`array`), which the optimizer folds into one literal.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["array", "double", "ident", "integer", "string"]


def ident(name: str) -> str:
    """A column name as a quoted identifier (any characters: backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def string(text: str) -> str:
    """A SQL string literal of ``text`` (quotes and backslashes escaped)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def double(value) -> str:
    """The double literal of ``value``, exact to the bit (signed zeros, subnormals, infinities, NaN)."""
    v = float(value)
    if math.isnan(v):
        return "CAST('NaN' AS DOUBLE)"
    if math.isinf(v):
        return "CAST('Infinity' AS DOUBLE)" if v > 0 else "CAST('-Infinity' AS DOUBLE)"
    text = repr(v) + "D"
    return f"({text})" if text.startswith("-") else text


def integer(value) -> str:
    """The int (or, past an int, bigint) literal of ``value``."""
    v = int(value)
    return f"({v})" if v < 0 else str(v)


#: The Spark SQL element type of each NumPy dtype :func:`array` writes, and how it writes one value.
TEXT_OF = {np.dtype(np.float64): ("double", lambda v: repr(float(v))),
           np.dtype(np.float32): ("float", lambda v: repr(float(v))),
           np.dtype(np.int32): ("int", lambda v: str(int(v))),
           np.dtype(np.int64): ("bigint", lambda v: str(int(v)))}


def split_text(values) -> tuple[str, str]:
    """``(text, element)``: the values' decimal texts joined by commas, and their Spark SQL type (see :func:`array`)."""
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype not in TEXT_OF:
        raise TypeError(f"internal: no literal array of {values.dtype} values of shape {values.shape}")
    element, text = TEXT_OF[values.dtype]
    if values.dtype.kind == "f" and not np.all(np.isfinite(values)):
        raise ValueError("internal: a literal array must be finite")
    return ",".join(map(text, values.tolist())), element


def array(values) -> str:
    """The literal array of the 1-D NumPy array ``values`` (float64, float32, int32 or int64; floats finite),
    exact to the bit: ``CAST(split('v0,v1,...', ',') AS ARRAY<type>)``, folded into one literal by the optimizer
    (Java's correctly rounded parse reads each ``repr`` back as the same number)."""
    text, element = split_text(values)
    if not text:
        return f"CAST(array() AS ARRAY<{element.upper()}>)"
    return f"CAST(split({string(text)}, ',') AS ARRAY<{element.upper()}>)"
