"""Parameter checks declared as data: one wording and one exception for every bad parameter.

Each public function and estimator declares what its parameters accept as a
small table, ``{"max_iter": [Integer(1)], "tol": [Real(0, open_low=True), None]}``,
in the manner of scikit-learn's ``_parameter_constraints``, and :func:`check`
enforces it. A bad value raises :class:`InvalidParameterError` (a
``ValueError`` and a ``TypeError``, as scikit-learn's) with one wording::

    max_iter must be an integer >= 1; got 0.
    strategy must be 'uniform' or 'quantile'; got 'median'.
    tol must be a real number > 0 and finite or None; got -1.

Checks of the *data* (arrays, labels, weights) live in :mod:`fastcal._core.validation`.
Checks that tie several parameters together stay with their function.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .errors import InvalidParameterError

__all__ = ["Boolean", "Constraint", "InstanceOf", "Integer", "InvalidParameterError", "Options", "Real", "check", "check_all"]


class Constraint:
    """What a parameter may be: ``accepts(value)``, ``normalize(value)`` (the value to use; by default
    the value itself) and ``phrases()`` (its description, words joined into the error message)."""

    def accepts(self, value):
        raise NotImplementedError

    def normalize(self, value):
        return value

    def phrases(self):
        return [str(self)]


class Integer(Constraint):
    """An integer (not a bool) in ``[low, high]``; either bound may be None."""

    def __init__(self, low=None, high=None):
        self.low, self.high = low, high

    def accepts(self, value):
        return (isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))
                and (self.low is None or value >= self.low) and (self.high is None or value <= self.high))

    def normalize(self, value):
        return int(value)

    def __str__(self):
        if self.low is not None and self.high is not None:
            return f"an integer in [{self.low}, {self.high}]"
        if self.low is not None:
            return f"an integer >= {self.low}"
        return "an integer" if self.high is None else f"an integer <= {self.high}"


class Real(Constraint):
    """A real number (not a bool) between ``low`` and ``high`` (closed unless ``open_*``);
    never NaN, and finite unless ``finite=False``."""

    def __init__(self, low=None, high=None, *, open_low=False, open_high=False, finite=True):
        self.low, self.high, self.open_low, self.open_high = low, high, open_low, open_high
        self.finite = finite

    def accepts(self, value):
        if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
            return False
        try:
            v = float(value)
        except OverflowError:  # an integer beyond float64's range
            return False
        if math.isnan(v) or (self.finite and not math.isfinite(v)):
            return False
        if self.low is not None and (v <= self.low if self.open_low else v < self.low):
            return False
        return self.high is None or (v < self.high if self.open_high else v <= self.high)

    def normalize(self, value):
        return float(value)

    def __str__(self):
        if self.low is not None and self.high is not None:
            return (f"a real number in {'(' if self.open_low else '['}{self.low}, "
                    f"{self.high}{')' if self.open_high else ']'}")
        finite = " and finite" if self.finite else ""
        if self.low is not None:
            return f"a real number {'>' if self.open_low else '>='} {self.low}{finite}"
        if self.high is not None:
            return f"a real number {'<' if self.open_high else '<='} {self.high}{finite}"
        return "a finite real number" if self.finite else "a real number (not NaN)"


class Boolean(Constraint):
    """True or False (Python or NumPy bools)."""

    def accepts(self, value):
        return isinstance(value, (bool, np.bool_))

    def normalize(self, value):
        return bool(value)

    def phrases(self):
        return ["True", "False"]


class Options(Constraint):
    """One of a few constants (strings, numbers, bools) of the same type as ``value``, compared with ``==``."""

    def __init__(self, *values):
        self.values = values

    def accepts(self, value):
        for v in self.values:
            if isinstance(v, bool):
                if isinstance(value, (bool, np.bool_)) and value == v:
                    return True
            elif type(value) is type(v) and value == v:
                return True
        return False

    def phrases(self):
        return [repr(v) for v in self.values]


class InstanceOf(Constraint):
    """An instance of one of ``types``, described in words as ``description``."""

    def __init__(self, types, description):
        self.types, self.description = types, description

    def accepts(self, value):
        return isinstance(value, self.types)

    def phrases(self):
        return [self.description]


def _describe(allowed):
    parts = [p for a in allowed for p in (["None"] if a is None else a.phrases())]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " or " + parts[-1]


def check(name, value, allowed):
    """``value`` normalised (``int``, ``float``, ``bool``) if one of ``allowed`` accepts it,
    else :class:`InvalidParameterError` naming ``name``. ``None`` in ``allowed`` accepts None."""
    for a in allowed:
        if a is None:
            if value is None:
                return None
        elif a.accepts(value):
            return a.normalize(value)
    shown = value.item() if isinstance(value, np.generic) else value  # 2.0, not np.float64(2.0)
    raise InvalidParameterError(f"{name} must be {_describe(allowed)}; got {shown!r}.")


def check_all(constraints, values):
    """:func:`check` every parameter of the table ``constraints`` (name -> allowed) found in the
    mapping ``values``; returns a dict of the normalised values."""
    return {name: check(name, values[name], allowed) for name, allowed in constraints.items()}
