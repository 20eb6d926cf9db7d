"""A fitted 1-D calibrator's prediction as data, for backends that compute it elsewhere (Spark SQL).

Each calibrator's ``prediction_data()`` returns one of three shapes, which
say exactly what its ``predict`` computes, operation by operation, so a
backend that repeats the operations in IEEE float64 gets the same bits:

- :class:`Knots` (isotonic regression): linear interpolation between knots;
- :class:`Steps` (histogram binning): the value of each input's bin;
- :class:`Logistic` (Platt scaling, beta calibration): the logistic function of
  a linear combination of features of the input.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["Knots", "Logistic", "Steps"]


@dataclasses.dataclass(frozen=True, eq=False)
class Knots:
    """Linear interpolation between knots ``(x[i], y[i])``, ``x`` strictly increasing.

    For an input ``t`` (cast to ``dtype``, then computed in float64): with
    ``tc`` = ``t`` clipped to ``[x[0], x[-1]]`` and ``j`` the index of the
    first knot ``>= tc`` clipped to ``1 .. m - 1``,
    ``y[j-1] + (tc - x[j-1]) / (x[j] - x[j-1]) * (y[j] - y[j-1])``, rounded to
    ``dtype``; ``y[0]`` for a single knot. Outside ``[x[0], x[-1]]``:
    ``out_of_bounds`` ``"clip"`` keeps the clipped value, ``"nan"`` gives
    NaN, ``"raise"`` is an error. The input must be finite.
    """

    x: NDArray[np.floating]
    y: NDArray[np.floating]
    out_of_bounds: Literal["nan", "clip", "raise"]
    dtype: np.dtype


@dataclasses.dataclass(frozen=True, eq=False)
class Steps:
    """A step function of a probability ``p`` in [0, 1]: ``values[i]``, ``i`` the number of ``edges`` (ascending,
    maybe repeated) ``< p`` (``searchsorted(edges, p, side="left")``); float64."""

    edges: NDArray[np.float64]
    values: NDArray[np.float64]


#: The features :class:`Logistic` knows: the input itself, and the logs of a probability clipped to
#: ``[eps, 1 - eps]`` (``eps`` of the input's dtype) and of its complement.
Feature = Literal["x", "log_p", "log_1mp"]


@dataclasses.dataclass(frozen=True, eq=False)
class Logistic:
    """The logistic function of ``u = coef[0] f[0] + coef[1] f[1] + ... + intercept`` (added left to right), the
    features ``f`` named by ``features``; in the input's dtype (float32 stays float32, else float64).

    Computed as the kernels do: ``e = exp(-|u|)``, ``d = 1 / (1 + e)``, the
    result ``d`` where ``u >= 0`` and ``e d`` otherwise. ``domain``:
    ``"finite"`` (the input, named ``scores``, must be finite) or
    ``"probability"`` (the input, named ``p``, must be in [0, 1]).
    """

    coef: tuple[float, ...]
    intercept: float
    features: tuple[Feature, ...]
    domain: Literal["finite", "probability"]
