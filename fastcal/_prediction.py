"""A fitted 1-D calibrator's prediction as data, for backends that compute it elsewhere (Spark SQL).

Each calibrator's ``prediction_data()`` returns one of three shapes, which
say exactly what its ``predict`` computes, operation by operation, so a
backend that repeats the operations in IEEE float64 gets the same bits:

- :class:`Knots` (isotonic regression): linear interpolation between knots;
- :class:`Steps` (histogram binning): the value of each input's bin;
- :class:`Logistic` (Platt scaling, beta calibration): the logistic function of
  a linear combination of features of the input;
- :class:`Softmax` (the multiclass calibrators): the softmax of an affine map
  of a row's logits, or of its log-probabilities;
- :class:`SegmentOffsets` (:class:`fastcal.MulticalibrationCalibrator`): the
  logistic function of the scaled logit of a probability plus the offsets of
  the row's segments (:class:`SegmentFeature` numbers the features' values,
  :class:`SegmentTerm` holds the offsets of the segments of one combination of
  features).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

import numpy as np
from numpy.typing import NDArray

__all__ = ["Knots", "Logistic", "SegmentFeature", "SegmentOffsets", "SegmentTerm", "Softmax", "Steps"]


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


@dataclasses.dataclass(frozen=True, eq=False)
class Softmax:
    """``q = softmax(u)``, ``u_j = intercept[j] + coef[j, 0] f_0 + coef[j, 1] f_1 + ...`` (added left to right;
    ``coef`` is k x k), of a row's scores ``x``, in float64 (rounded to float32 where the scores are float32).

    The features ``f``, the k logits the model reads: the scores themselves (``reading`` "logits"), or ``(-x, x)``
    for one score ``x`` of a two-class model (a binary decision value); or, for "probabilities" (k scores in
    [0, 1] summing to 1 within 1e-6), ``log(x + 1e-12)``, less their row mean with ``centre``.
    ``q_j = e_j / sum(e)`` with ``e_j = exp(u_j - max(u))``. The scores must be finite. ``reading`` "auto" (a
    model file of fastcal 0.1.0) decides per batch, which a row-by-row backend cannot do.
    """

    coef: NDArray[np.float64]
    intercept: NDArray[np.float64]
    reading: Literal["logits", "probabilities", "auto"]
    centre: bool


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentFeature:
    """How a row finds its *digit* of one segment feature, or none.

    A categorical feature (``numerical`` False) or a numerical one of few values (``edges`` empty): the row's
    value is looked up among ``values`` (None: missing, a null or NaN) and has the ``digits`` at its place; a
    value not among them has no digit. A binned numerical feature (``edges``: ascending, at least 2): the
    row's value (as float64) has the bin number ``min(max(b - 1, 0), edges.size - 2)``, ``b`` the number of
    edges ``< value``, or ``edges.size`` for NaN (and missing), which is looked up among ``values`` as above.
    """

    name: str
    numerical: bool
    values: list
    digits: NDArray[np.int64]
    edges: NDArray[np.float64]


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentTerm:
    """The segments of one combination of features with an offset: a row with a digit ``d[f]`` of every feature
    ``f`` of ``features`` has the key ``sum d[f] * mult[f]``; at ``keys[i]`` (ascending), its segment's own
    offset is ``own[i]`` and that of score bucket ``k`` ``by_bucket[i, k]``. A key not in ``keys``, or a row
    without a digit of one of the features: no segment of this term, no offset."""

    features: tuple[int, ...]
    mult: tuple[int, ...]
    keys: NDArray[np.int64]
    own: NDArray[np.float64]
    by_bucket: NDArray[np.float64]


@dataclasses.dataclass(frozen=True, eq=False)
class SegmentOffsets:
    """``q = logistic(slope * logit(p') + offset)`` of a probability ``p`` (float32 or float64, in [0, 1]), in
    ``p``'s dtype.

    ``p'`` is ``p`` as float64 clipped to ``[eps, 1 - eps]``, its logit ``log(p') - log1p(-p')``. The row's
    score bucket ``k`` is ``min(max(b - 1, 0), bucket_edges.size - 2)``, ``b`` the number of
    ``bucket_edges`` ``< p`` (``k = 0`` without edges). ``offset`` is added left to right: ``base_own``, then
    ``base_by_bucket[k]`` (the segment of all rows), then for each of ``terms`` in order whose segment holds the
    row, its ``own`` and then its ``by_bucket[k]`` (the segments without one add 0, which changes no sum).
    ``z = slope * logit + offset``; ``e = exp(-|z|)``; ``q = 1 / (1 + e)`` where ``z >= 0``, else
    ``e / (1 + e)``.
    """

    eps: float
    slope: float
    bucket_edges: NDArray[np.float64]
    base_own: float
    base_by_bucket: NDArray[np.float64]
    features: tuple[SegmentFeature, ...]
    terms: tuple[SegmentTerm, ...]
