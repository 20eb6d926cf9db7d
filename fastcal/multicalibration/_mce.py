"""The multicalibration error: MCGrad's segments, and every segment's ECCE from one pass over score ranges."""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _kuiper_kernels as _k
from .._core.results import Result, worst_first
from .._coding import categorical_codes, cell_numbers, feature_columns, numerical_codes
from ._ecce import check_int, check_scaled_inputs, sigma_of
from ._sums import segment_sums

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from numpy.typing import ArrayLike, NDArray


@dataclass(frozen=True, eq=False, repr=False)
class MulticalibrationResult(Result):
    """The multicalibration error and the per-segment table (see :func:`multicalibration_error`).

    The table has one entry per segment, segment 0 being all rows:
    ``segment_values[s]`` maps each feature defining segment ``s`` to its
    value (a quantile bin number for a binned numerical feature, ``"__OTHER"``
    for collapsed categories, ``"__NA"`` for a missing category);
    ``segment_n``, ``segment_ecce``, ``segment_ecce_sigma`` and
    ``segment_pvalue`` are its rows, ECCE, ECCE in sigmas and p-value.
    ``folded`` maps each categorical feature that had more values than
    ``max_values_per_segment_feature`` to the number of its values folded
    into one (``"__OTHER"``); :meth:`worst` lists the segments worst first.
    """

    mce: float
    mce_sigma: float
    mce_pvalue: float
    mce_relative: float
    mde: float
    mde_relative: float
    global_ecce: float
    global_ecce_sigma: float
    global_ecce_pvalue: float
    segment_values: list[dict[str, Any]] = field(repr=False)
    segment_n: NDArray[np.int64] = field(repr=False)
    segment_ecce: NDArray[np.float64] = field(repr=False)
    segment_ecce_sigma: NDArray[np.float64] = field(repr=False)
    segment_pvalue: NDArray[np.float64] = field(repr=False)
    folded: dict[str, int] = field(default_factory=dict, repr=False)

    def worst(self, k: int | None = 10) -> list[dict[str, Any]]:
        """The ``k`` segments of greatest ``ecce_sigma`` (all if None), greatest first, NaN last, ties in table order.

        Each is a dict: ``values`` (the segment's feature values, ``{}`` for
        all rows), ``n``, ``ecce``, ``ecce_sigma``, ``pvalue`` and its place
        ``segment`` in the table (see the example of :func:`multicalibration_error`).
        """
        order = worst_first(self.segment_ecce_sigma, k)
        return [dict(segment=int(s), values=dict(self.segment_values[s]), n=int(self.segment_n[s]),
                     ecce=float(self.segment_ecce[s]), ecce_sigma=float(self.segment_ecce_sigma[s]),
                     pvalue=float(self.segment_pvalue[s])) for s in order.tolist()]

    def to_pandas(self) -> Any:
        """The segment table as a pandas DataFrame (needs pandas): one column per feature (its value in the
        segment, None where the segment does not restrict it), then ``n``, ``ecce``, ``ecce_sigma``, ``pvalue``."""
        import pandas as pd

        features = list(dict.fromkeys(name for values in self.segment_values for name in values))
        columns = {name: pd.Series([values.get(name) for values in self.segment_values], dtype=object)
                   for name in features}
        return pd.DataFrame({**columns, "n": self.segment_n, "ecce": self.segment_ecce,
                             "ecce_sigma": self.segment_ecce_sigma, "pvalue": self.segment_pvalue})


def multicalibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    segments: Mapping[str, ArrayLike] | Any,
    *,
    sample_weight: ArrayLike | None = None,
    numerical: Iterable[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 3,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
) -> MulticalibrationResult:
    r"""Multicalibration error (MCE): the largest ECCE, in sigmas, over segments of the data.

    The segments are MCGrad's (``MulticalibrationError``): segment 0 is all
    rows; then, for each depth from 1 to ``max_depth``, each combination of
    that many features (categorical features first, then ``numerical``
    ones, each in the order given), and each combination of their values
    (in order of first appearance along the sorted predictions) that
    holds at least ``min_samples_per_segment`` rows, until there are
    ``max_n_segments`` segments. A categorical feature keeps its
    ``max_values_per_segment_feature - 1`` most frequent values and
    collapses the others into one (``"__OTHER"``, or the minimum less 1 for a
    numeric feature without missing values; ties of frequency go to the first
    to appear); a missing value (None, NaN) is the value ``"__NA"``. A
    numerical feature with more distinct values than
    ``max_values_per_segment_feature`` is cut at its quantiles into that many
    bins (``np.quantile``, as MCGrad's ``Series.quantile``; the feature must
    then be finite), numbered from 0; NaN is a value of its own.

    For segment :math:`s`: :math:`\mathrm{ECCE}_s` and :math:`\sigma_s` as in
    :func:`ecce` on its rows, :math:`z_s = \mathrm{ECCE}_s / \sigma_s` and
    :math:`p_s = 1 - F(z_s)`. With :math:`\sigma_0` the global one and the
    prevalence :math:`\pi = \min(\bar y, 1 - \bar y)` (weighted):

    .. math::

        \mathrm{mce\sigma_of} = \max_s z_s,\quad \mathrm{mce} = \mathrm{mce\sigma_of}\,\sigma_0,\quad
        \mathrm{mce\_pvalue} = \min_s p_s,\quad \mathrm{mde} = 5 \sigma_0,

    and the relative forms are ``100 * mce / pi`` and ``100 * mde / pi``
    (percent of the prevalence; inf if :math:`\pi = 0`).

    Each row's cell (its values of every feature) is numbered; the rows
    (score, cell, label, weight) are moved to ranges of scores of about 16k
    rows, each sorted in the cache (the rows of one score in an order of
    their own), then one pass over blocks of the sorted rows moves the
    float64 running sum, weight and variance of every segment each row is in
    (tie groups pooled per segment), the blocks' results merged in order:
    O(n (number of feature combinations)) after the sort, not one pass per
    segment. The values are the same, to the last bit, at any thread count
    and for the rows in any order (the segments' order follows the rows', as
    MCGrad's does). Differences from MCGrad: ties are pooled; segment 0 is kept
    even with fewer rows than ``min_samples_per_segment``; exactly
    ``max_n_segments`` segments are kept (MCGrad keeps whole chunks of 50);
    the p-values are not clamped (MCGrad's are at least 2.2e-16).

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    segments : mapping of str to array-like of shape (n_samples,), or DataFrame
        The segment features.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights.
    numerical : iterable of str, default=()
        The features of ``segments`` that are numerical (binned at quantiles).
    max_depth : int or None, default=3
        Most features in a segment's definition (None: all).
    max_values_per_segment_feature : int, default=3
        Values (bins) kept per feature.
    min_samples_per_segment : int, default=10
        Fewest rows (unweighted) of a segment.
    max_n_segments : int or None, default=1000
        Most segments, segment 0 included (None: no limit).

    Returns
    -------
    MulticalibrationResult

    References
    ----------
    Guy, I., Haimovich, D., Linder, F., Okati, N., Perini, L., Tax, N. and
    Tygert, M. (2025). Measuring multi-calibration. arXiv:2506.11251.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import multicalibration_error
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.9, 10_000)
    >>> country = rng.choice(["fr", "de", "us"], 10_000)
    >>> y = rng.uniform(size=10_000) < np.where(country == "fr", p ** 2, p)  # miscalibrated in "fr"
    >>> r = multicalibration_error(y, p, {"country": country})
    >>> r.worst(1)[0]["values"], r.mce_pvalue < 1e-6  # the worst segment
    ({'country': 'fr'}, True)
    """
    y, p, w, factor, _ = check_scaled_inputs(y_true, y_prob, sample_weight)
    n = p.shape[0]
    max_depth = check_int(max_depth, "max_depth", 0, allow_none=True)
    max_values = check_int(max_values_per_segment_feature, "max_values_per_segment_feature", 1)
    min_samples = check_int(min_samples_per_segment, "min_samples_per_segment", 0)
    max_n_segments = check_int(max_n_segments, "max_n_segments", 1, allow_none=True)
    coded = [(name, (numerical_codes if is_numerical else categorical_codes)(column, name, p, max_values))
             for name, column, is_numerical in feature_columns(segments, n, numerical)]
    features = [(name, *codes[:4]) for name, codes in coded]
    folded = {name: codes[4] for name, codes in coded if codes[4] is not None}
    del coded
    n_features = len(features)
    depth = n_features if max_depth is None else min(max_depth, n_features)
    limit = math.inf if max_n_segments is None else max_n_segments
    cells, digits, cell_counts = cell_numbers(features, n)
    combos, segment_values, n_segments = choose_segments([(f[0], f[4]) for f in features], digits, cell_counts,
                                                         depth, min_samples, limit)
    count, total, var, lo, hi, positive = segment_sums(y, p, w, cells, digits, cell_counts, combos, n_segments,
                                                       factor)
    return mce_result(segment_values, count, total, var, lo, hi, positive, folded)


def choose_segments(features, digits, cell_counts, depth, min_samples, limit):
    """MCGrad's segments of the cells: ``(combos, segment_values, n_segments)``.

    ``features`` are ``(name, labels)`` pairs, ``digits`` (cells x features)
    each cell's value number of each feature, ``cell_counts`` its rows.
    Segment 0 is all rows; then each combination of 1 to ``depth`` features,
    and each combination of their values holding at least ``min_samples``
    rows, until there are ``limit`` segments. ``combos`` holds, per feature
    combination, ``(subset, mult, local, first segment, segments)``: a cell's
    key ``digits[:, subset] @ mult`` and its segment ``local[key]`` (-1: none)
    counted from the first.
    """
    sizes = [len(labels) for _, labels in features]
    combos, segment_values = [], [{}]
    n_segments = 1
    for subset in (s for d in range(1, depth + 1) for s in itertools.combinations(range(len(features)), d)):
        if n_segments >= limit:
            break
        size = [sizes[f] for f in subset]
        mult = [math.prod(size[i + 1:]) for i in range(len(subset))]
        keys = digits[:, list(subset)] @ np.array(mult, dtype=np.int64)
        counts = np.bincount(keys, weights=cell_counts, minlength=math.prod(size))
        chosen = np.flatnonzero(counts >= min_samples)[:max(0, min(limit - n_segments, counts.size))]
        if not chosen.size:
            continue
        local = np.full(counts.size, -1, dtype=np.int64)
        local[chosen] = np.arange(chosen.size)
        for k in chosen.tolist():
            place = [(k // m) % z for m, z in zip(mult, size)]
            segment_values.append({features[f][0]: features[f][1][j] for f, j in zip(subset, place)})
        combos.append((subset, mult, local, n_segments, chosen.size))
        n_segments += chosen.size
    return combos, segment_values, n_segments


def mce_result(segment_values, count, total, var, lo, hi, positive, folded):
    """The :class:`MulticalibrationResult` of the segments' rows ``count``, weights ``total``, variance sums ``var``
    (of :math:`w^2 p (1 - p)`), least and greatest running sums ``lo <= 0 <= hi``, and the weight of the positives
    ``positive`` (all rescaled alike); ``folded`` maps a feature to ``(values folded, their label)``.

    Warns (``UserWarning``) when the worst segment is defined by a folded value: the values folded together
    hide which of them is off."""
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(total > 0, (hi - lo) / np.where(total > 0, total, 1.0), 0.0)
        std = np.where(total > 0, np.sqrt(var) / np.where(total > 0, total, 1.0), 0.0)
    sigma = sigma_of(value, std)
    pvalues = _k.kuiper_sf_many(sigma)

    rate = positive / total[0] if total[0] > 0 else math.nan
    prevalence = min(rate, 1 - rate)
    mce_sigma = float(sigma.max())
    mce = mce_sigma * float(std[0])
    mde = 5 * float(std[0])

    def relative(x):
        return 100 * x / prevalence if prevalence > 0 else math.inf

    worst = segment_values[int(np.argmax(sigma))] if np.isfinite(sigma).any() else {}
    hidden = [f"{folded[name][0]} values of {name!r} (shown as {value!r})" for name, value in worst.items()
              if name in folded and _same(value, folded[name][1])]
    if hidden:
        warnings.warn(f"the worst segment, {worst}, pools {' and '.join(hidden)}: raise "
                      "max_values_per_segment_feature to see them apart.", UserWarning, stacklevel=3)
    return MulticalibrationResult(
        mce=mce, mce_sigma=mce_sigma, mce_pvalue=float(pvalues.min()), mce_relative=relative(mce), mde=mde,
        mde_relative=relative(mde), global_ecce=float(value[0]), global_ecce_sigma=float(sigma[0]),
        global_ecce_pvalue=float(pvalues[0]), segment_values=segment_values, segment_n=count,
        segment_ecce=value, segment_ecce_sigma=sigma, segment_pvalue=pvalues,
        folded={name: int(n) for name, (n, _) in folded.items()},
    )


def _same(value, label):
    """Whether a segment's ``value`` is the folded ``label`` (a string, or a number for a numeric feature)."""
    return value is label or (type(value) is type(label) and value == label)
