"""Group values from text: the type of a CSV group or segment column, as Parquet, pandas and Spark infer it.

A CSV column of groups is read as typed values, so that the same data gives
the same groups from CSV, Parquet, Spark and memory: when every non-empty
cell is an integer (ASCII digits, an optional sign, within int64's range),
the column holds integers (int64; Python ints with None when a cell is
empty); else when every non-empty cell is a number (what ``float`` reads,
without spaces, underscores or non-ASCII digits), float64 (NaN for an empty
cell); else text. An empty cell is the missing group (None, or NaN among
floats), whatever the type.

The type is a *kind*: None (no value yet), ``"int"``, ``"float"`` or
``"str"``, each later one taking in the ones before (:func:`join`); it is
decided by the distinct texts of the whole column (:func:`kind_of`).
"""

from __future__ import annotations

import re

import numpy as np

from .base import optional_pyarrow

__all__ = ["KINDS", "join", "kind_of", "text_codes", "typed"]

#: The kinds, each taking in the ones before it.
KINDS = (None, "int", "float", "str")

_INT = re.compile(r"[+-]?[0-9]+")
_INT64 = (-(1 << 63), (1 << 63) - 1)


def join(a, b):
    """The kind that takes in both kinds ``a`` and ``b``."""
    return a if KINDS.index(a) >= KINDS.index(b) else b


def _int(text):
    if _INT.fullmatch(text) is None:
        return None
    value = int(text)
    return value if _INT64[0] <= value <= _INT64[1] else None


def _float(text):
    if text != text.strip() or "_" in text or not text.isascii():
        return None
    try:
        return float(text)
    except ValueError:
        return None


def kind_of(texts):
    """The kind of the distinct texts ``texts`` (None and ``""``: empty cells, of no kind)."""
    kind = None
    for t in texts:
        if t is None or t == "":
            continue
        if _int(t) is not None:
            kind = join(kind, "int")
        elif _float(t) is not None:
            kind = join(kind, "float")
        else:
            return "str"
    return kind


def text_codes(values):
    """``(uniques, codes)``: the distinct texts of ``values`` (a pyarrow string array, or an ndarray of str and
    None) in order of first appearance (None: a null), and each value's number among them (int64)."""
    pa = optional_pyarrow()
    if pa is not None:
        if isinstance(values, np.ndarray):
            values = pa.array(values, type=pa.string(), from_pandas=False)
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        encoded = values.dictionary_encode(null_encoding="encode")
        uniques = encoded.dictionary.to_pylist()
        codes = np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)
        return uniques, codes
    index: dict = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()), dtype=np.int64,
                        count=len(values))
    return list(index), codes


def typed(uniques, codes, kind):
    """The values of the column whose distinct texts are ``uniques`` (``codes``: each row's) read as ``kind``
    (at least :func:`kind_of` ``uniques``): an ndarray of group values (see the module docstring)."""
    missing = [t is None or t == "" for t in uniques]
    if kind == "float":
        values = np.array([np.nan if m else float(t) for t, m in zip(uniques, missing)], dtype=np.float64)
        return values[codes]
    if kind == "int" and not any(missing):
        return np.array([int(t) for t in uniques], dtype=np.int64)[codes]
    if kind == "int":
        values = [None if m else int(t) for t, m in zip(uniques, missing)]
    else:  # text, or no value at all
        values = [None if m else t for t, m in zip(uniques, missing)]
    table = np.empty(len(values), dtype=object)
    table[:] = values
    return table[codes]
