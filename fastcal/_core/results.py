"""The one convention for what fastcal's functions return.

A function that returns one array returns the array. A function that mirrors
a peer returns what the peer returns: :func:`fastcal.isotonic_regression`
SciPy's ``OptimizeResult``, :func:`fastcal.calibration_curve` scikit-learn's
``(prob_true, prob_pred)``, the losses and scores a float. Every other
function returns a :class:`Result`: a frozen dataclass whose fields are the
named quantities, with

- attribute access and keyword construction, and nothing else (no tuple
  unpacking, so adding a field later breaks no caller);
- ``to_dict()``, the fields as plain Python values (arrays become lists,
  tuples lists, NumPy scalars Python numbers, a fitted fastcal calibrator
  its model file's dict, another library's estimator its repr): JSON-ready;
- a ``repr`` that shows scalars and summarises arrays by shape and dtype;
- equality of type and of ``to_dict()`` (arrays compare by value), and a hash
  when every field is hashable;
- pickling.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

__all__ = ["Result", "worst_first"]


def _plain(value):
    if isinstance(value, Result) or hasattr(value, "_state_schema"):  # a result, or a fastcal model's file
        return value.to_dict()
    if hasattr(value, "get_params") and hasattr(value, "fit"):  # another library's estimator: its repr
        return repr(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _short(value):
    if isinstance(value, np.ndarray):
        if value.size <= 6:
            return np.array2string(value, precision=6, separator=", ")
        return f"<array {value.shape} {value.dtype}>"
    return repr(value)


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class Result:
    """Base of fastcal's result objects (see the module docstring); subclasses are
    ``@dataclasses.dataclass(frozen=True, eq=False, repr=False)``."""

    def to_dict(self) -> dict[str, Any]:
        """The fields as a dict of plain Python values (arrays and tuples become lists)."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def __repr__(self) -> str:
        shown = (f"{f.name}={_short(getattr(self, f.name))}" for f in dataclasses.fields(self) if f.repr)
        return f"{type(self).__name__}({', '.join(shown)})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash((type(self), *(getattr(self, f.name) for f in dataclasses.fields(self))))


def worst_first(key: Any, k: Any) -> np.ndarray:
    """The places of the ``k`` greatest values of ``key`` (all if ``k`` is None), greatest first, NaN last, ties in
    the order of ``key``: the order of the results' ``worst`` methods. ``k`` must be a non-negative integer."""
    if k is not None and (isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0):
        raise ValueError(f"k must be a non-negative integer or None, got {k!r}.")
    key = np.asarray(key, dtype=np.float64)
    return np.argsort(np.where(np.isnan(key), np.inf, -key), kind="stable")[:k]
