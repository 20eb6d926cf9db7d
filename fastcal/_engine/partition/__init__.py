"""The range partitions behind the exact out-of-core and Dask isotonic fits.

Both :mod:`fastcal.outofcore` (partitions in temporary files, fitted one at a
time) and :mod:`fastcal.dask` (partitions on workers) fit isotonic regression
by cutting the score range into contiguous partitions, fitting each with the
PAV kernel and pooling the blocks. This module holds what they share:

- chunk validation and conversion (:func:`prepare_chunk`, :func:`convert_chunk`)
  and per-chunk summaries (:func:`summarize_chunk`) from which
  :func:`choose_bounds` picks partition boundaries (:func:`quantile_bounds`, from any sample);
- :func:`split_by_bounds`, which groups a chunk's rows by partition;
- tie groups across boundaries: :func:`head_summary` (where a partition's
  first tie group can begin; :func:`merge_heads` builds it from pieces),
  :func:`chain_exits` (where a chain of tie groups started at a given score
  ends) and :func:`tie_entries`, the walk over the partitions that says where
  each fitted unit begins, with the tie tolerance :func:`resolution` of the
  PAV kernels;
- the direction for ``increasing="auto"``: Spearman's rho from per-partition
  partial sums (:func:`spearman_partial`, :func:`spearman_from_partials`,
  :func:`increasing_from_rho`).

The kernels are in :mod:`fastcal._engine.partition._kernels`.
"""

from __future__ import annotations

import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np

from . import _kernels as _k
from ..._core.validation import (
    all_zero_weights,
    as_float_array,
    as_label_array,
    check_binary_labels,
    check_finite,
    is_binary,
    weight_exponent,
)

#: Scores sampled per chunk to choose the partition boundaries.
SAMPLE_PER_CHUNK = 4096


def fit_dtype(dtype):
    """The dtype scores are fitted in: float32 and float64 stay, anything else becomes float64."""
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float64)


def head_summary(x, w, eps):
    """``(rows, min, max, candidates)`` of a partition's scores (of positive weight when ``w`` is given).

    The candidates are where the partition's first tie group can begin,
    depending on the groups below it: the distinct scores less than ``eps``
    above the minimum, then the first score beyond them (float64, sorted).
    """
    n, lo, hi = _k.range_of(x, w)
    if not n:
        return 0, math.nan, math.nan, np.empty(0)
    buf = np.empty(n, dtype=x.dtype)  # pages beyond the few near scores are never touched
    k, far = _k.near_min(x, w, lo, eps, buf)
    cands = np.unique(buf[:k]).astype(np.float64)
    if far != np.inf:
        cands = np.append(cands, far)
    return n, lo, hi, cands


def resolution(dtype):
    """The tie tolerance of the PAV kernels for scores of ``dtype``, as a float64."""
    dtype = np.dtype(dtype)
    return float(dtype.type(np.finfo(dtype).resolution))


def split_by_bounds(x, y, w, bounds):
    """Rows of a chunk grouped by score range: a list of ``(x, y, w)`` per range.

    Range ``j`` holds the scores ``bounds[j-1] <= x < bounds[j]`` (the first
    range everything below ``bounds[0]``, the last everything from
    ``bounds[-1]`` on). Order within a range is the input order.
    """
    nb = bounds.shape[0]
    n = x.shape[0]
    bucket = np.empty(n, dtype=np.int32)
    bounds = np.ascontiguousarray(bounds, dtype=x.dtype)
    if nb <= 32:
        _k.buckets_linear(x, bounds, bucket)
    else:
        size = 1 << int(nb).bit_length()
        padded = np.full(size, np.inf, dtype=x.dtype)
        padded[:nb] = bounds
        _k.buckets_search(x, padded, bucket)
    counts = np.bincount(bucket, minlength=nb + 1)
    starts = np.zeros(nb + 2, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    m = int(starts[-1])
    xo = np.empty(m, dtype=x.dtype)
    yo = np.empty(m, dtype=y.dtype)
    wo = None if w is None else np.empty(m, dtype=w.dtype)
    _k.split_scatter(x, y, w, bucket, starts[:-1].copy(), xo, yo, wo)
    return [
        (xo[a:b], yo[a:b], None if wo is None else wo[a:b])
        for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())
    ]


def chain_exits(sorted_x, eps, start_values):
    """:func:`_k.chain_exits` for start *values* (first occurrences are looked up); float64 results."""
    starts = np.searchsorted(sorted_x, np.asarray(start_values, dtype=sorted_x.dtype), side="left")
    exits = np.empty(starts.shape[0], dtype=np.float64)
    _k.chain_exits(sorted_x, eps, starts.astype(np.int64), exits)
    return exits


def merge_heads(heads, eps):
    """The :func:`head_summary` of a partition from those of the pieces it is made of.

    Candidates merge exactly: a score less than ``eps`` above the partition's
    minimum is less than ``eps`` above its own piece's minimum, so it is among
    that piece's candidates; the partition's first score beyond them is its
    piece's first score beyond, or one of that piece's near scores.
    """
    live = [h for h in heads if h[0]]
    if not live:
        return 0, math.nan, math.nan, np.empty(0)
    lo = min(h[1] for h in live)
    values = np.unique(np.concatenate([h[3] for h in live]))
    near = values - lo < eps
    cands = values[near]
    if not near.all():
        cands = np.append(cands, values[~near][0])
    return sum(h[0] for h in live), lo, max(h[2] for h in live), cands


def tie_entries(heads, eps, exits_of):
    """Walk the partitions in score order; yield ``(j, entry)`` for each non-empty one.

    A partition's rows from ``entry`` on begin a *unit*, fitted on its own;
    its rows below ``entry`` belong to the last tie group of the unit before
    (``entry`` None: the whole partition does). ``heads`` are the
    :func:`head_summary` of every partition, in order. Entering a partition
    at one of its candidates, its tie groups chain to a last group start:
    ``exits_of(j)`` returns those (see :func:`chain_exits`) for the
    candidates of partition ``j``, and is called, right after ``(j, entry)``
    is consumed, only where the gap to the next non-empty partition is below
    ``eps`` (elsewhere the next partition starts a group whatever came before).
    """
    unclean = set(unclean_boundaries(heads, eps))
    carry = None
    for j in (j for j, h in enumerate(heads) if h[0]):
        _, lo, hi, cands = heads[j][:4]
        if carry is None or lo - carry >= eps:
            idx = 0
        else:
            hits = np.flatnonzero(cands - carry >= eps)
            if not hits.shape[0]:
                yield j, None
                continue
            idx = int(hits[0])
        yield j, float(cands[idx])
        carry = float(exits_of(j)[idx]) if j in unclean else hi


def unclean_boundaries(heads, eps):
    """The partitions for which :func:`tie_entries` will call ``exits_of`` (at most)."""
    live = [j for j, h in enumerate(heads) if h[0]]
    return [a for a, b in zip(live[:-1], live[1:]) if heads[b][1] - heads[a][2] < eps]


# ---------------------------------------------------------------------------
# Chunk validation and summaries (shared with fastcal.dask).
# ---------------------------------------------------------------------------


def flat_column(a, name):
    arr = np.asarray(a)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array (or a single column), got an array of shape {arr.shape}.")
    return arr


def prepare_chunk(x, y, w, x_dtype, *, score_name="X", binary=False, offset=None):
    """A validated chunk: contiguous scores of ``x_dtype``, labels, weights (or None).

    The same checks as the in-memory ``fit``: finite scores, finite labels,
    finite non-negative weights (a scalar weight is broadcast), equal lengths;
    0/1 labels when ``binary``. ``offset`` (the chunk's first row) is added to
    the error message for a length mismatch.
    """
    xs, labels, ws = convert_chunk(x, y, w, x_dtype, score_name=score_name, offset=offset)
    check_finite(xs, score_name)
    if labels.dtype.kind == "f":
        check_finite(labels, "y")
    if binary:
        check_binary_labels(labels, "y")
    return xs, labels, ws


def convert_chunk(x, y, w, x_dtype, *, score_name="X", offset=None):
    """:func:`prepare_chunk` without the checks of the values of scores and labels (weights are checked)."""
    xs = as_float_array(flat_column(x, score_name), score_name, dtype=x_dtype)
    labels = as_label_array(flat_column(y, "y"), "y")
    if labels.shape[0] != xs.shape[0]:
        where = "" if offset is None else f" in the chunk starting at row {offset}"
        raise ValueError(
            f"Inconsistent numbers of samples{where}: {score_name} has {xs.shape[0]}, y has {labels.shape[0]}."
        )
    if w is None:
        return xs, labels, None
    if isinstance(w, numbers.Number) and not isinstance(w, bool):
        ws = np.full(xs.shape[0], float(w))
    else:
        ws = as_float_array(flat_column(w, "sample_weight"), "sample_weight")
    if ws.shape[0] != xs.shape[0]:
        raise ValueError(f"sample_weight has {ws.shape[0]} elements, expected {xs.shape[0]} (one per sample).")
    check_finite(ws, "sample_weight")
    if ws.shape[0] and ws.min() < 0:
        raise ValueError("sample_weight must be non-negative.")
    return xs, labels, ws


@dataclass
class ChunkSummary:
    """What the first pass learns from a chunk."""

    n: int  # rows
    n_fit: int  # rows of positive weight
    weight_sum: float
    has_zero: bool
    binary: bool
    sample: np.ndarray  # sorted strided sample of the scores of positive weight (float64)
    stride: float  # rows represented by one sample value
    weight_max: float = 0.0  # the largest weight (0 without weights)


def summarize_chunk(x, labels, w, sample_size=SAMPLE_PER_CHUNK, binary=True):
    """:class:`ChunkSummary` of a validated chunk (``binary`` checks whether the labels are 0/1)."""
    n = x.shape[0]
    if w is not None:
        keep = w > 0
        has_zero = not bool(keep.all())
        xk = x[keep] if has_zero else x
        weight_sum = float(w.sum(dtype=np.float64))
        weight_max = float(w.max()) if n else 0.0
    else:
        weight_max = 0.0
        has_zero, xk, weight_sum = False, x, float(n)
    m = xk.shape[0]
    step = max(1, m // sample_size)
    sample = np.sort(xk[::step]).astype(np.float64)
    is01 = bool(is_binary(labels)) if binary else None
    return ChunkSummary(n, m, weight_sum, has_zero, is01, sample, m / max(1, sample.shape[0]), weight_max)


def choose_bounds(summaries, n_parts, dtype):
    """Partition boundaries (``n_parts - 1`` at most, sorted, distinct) at quantiles of the samples."""
    samples = [s.sample for s in summaries if s.sample.shape[0]]
    if n_parts <= 1 or not samples:
        return np.empty(0, dtype=dtype)
    values = np.concatenate(samples)
    weights = np.concatenate([np.full(s.sample.shape[0], s.stride) for s in summaries if s.sample.shape[0]])
    return quantile_bounds(values, weights, n_parts, dtype)


def quantile_bounds(values, weights, n_parts, dtype):
    """Partition boundaries (``n_parts - 1`` at most, sorted, distinct) at the weighted quantiles of the sample
    ``values`` (finite), each value standing for ``weights`` rows."""
    if n_parts <= 1 or not values.shape[0]:
        return np.empty(0, dtype=dtype)
    order = np.argsort(values, kind="stable")
    values, cum = values[order], np.cumsum(weights[order])
    targets = cum[-1] * np.arange(1, n_parts) / n_parts
    idx = np.minimum(np.searchsorted(cum, targets, side="left") + 1, values.shape[0] - 1)
    bounds = np.unique(values[idx])
    bounds = bounds[bounds > values[0]]  # no empty first partition
    return bounds.astype(dtype)


# ---------------------------------------------------------------------------
# Spearman's rho of scores and 0/1 labels from range partitions.
# ---------------------------------------------------------------------------


def spearman_partial(x, labels):
    """Sums of one score range for Spearman's rho against 0/1 labels.

    Returns ``(n, n_pos, rank_sum_pos, ties)``: rows, positive rows, the sum of
    the positives' average ranks within the range, and sum(t^3 - t) over the
    groups of equal scores. Equal scores never straddle two ranges, so ranks
    in the whole are these plus the number of rows in the ranges below.
    """
    xs = np.sort(x)
    pos = np.sort(x[labels > 0])
    left = np.searchsorted(xs, pos, side="left").astype(np.float64)
    right = np.searchsorted(xs, pos, side="right").astype(np.float64)
    rank_sum = float(((left + right + 1.0) * 0.5).sum())
    if xs.shape[0] > 1:
        starts = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1], [True])))
        t = np.diff(starts).astype(np.float64)
        ties = float((t * t * t - t).sum())
    else:
        ties = 0.0
    return xs.shape[0], pos.shape[0], rank_sum, ties


def spearman_from_partials(partials):
    r"""Spearman's rho of scores and 0/1 labels from :func:`spearman_partial` of consecutive score ranges.

    With average ranks :math:`r_i` of the scores (ties averaged, as
    :func:`scipy.stats.spearmanr`), the ranks of the labels are affine in the
    labels, so :math:`\rho` is Pearson's correlation of :math:`r` and :math:`y`:

    .. math:: \rho = \frac{\sum_{y_i = 1} r_i - n_1 (n + 1)/2}
              {\sqrt{\frac{n^3 - n - \sum_g (t_g^3 - t_g)}{12} \cdot \frac{n_1 n_0}{n}}}

    NaN when the scores or the labels are constant.
    """
    offset = 0
    n1 = 0
    rank_sum = 0.0
    ties = 0.0
    for n_j, n1_j, r_j, t_j in partials:
        rank_sum += r_j + offset * n1_j
        ties += t_j
        offset += n_j
        n1 += n1_j
    n = float(offset)
    n0 = n - n1
    sxx = (n * n * n - n - ties) / 12.0
    syy = n1 * n0 / n if n else 0.0
    if not (sxx > 0 and syy > 0):
        return math.nan
    rho = (rank_sum - n1 * (n + 1.0) / 2.0) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, rho))


def increasing_from_rho(rho, n, stacklevel=3):
    """scikit-learn's ``check_increasing`` given Spearman's rho: the direction, warning when uncertain."""
    increasing = bool(rho >= 0)
    if rho not in (-1.0, 1.0) and n > 3 and not math.isnan(rho):
        F = 0.5 * math.log((1.0 + rho) / (1.0 - rho))
        F_se = 1 / math.sqrt(n - 3)
        if np.sign(math.tanh(F - 1.96 * F_se)) != np.sign(math.tanh(F + 1.96 * F_se)):
            warnings.warn(
                "Confidence interval of the Spearman correlation coefficient spans zero. "
                "Determination of ``increasing`` may be suspect.",
                UserWarning,
                stacklevel=stacklevel,
            )
    return increasing


def check_total_weight(summaries, weighted):
    if weighted and not sum(s.weight_sum for s in summaries) > 0:
        raise all_zero_weights()


def global_weight_exponent(summaries):
    """The exponent of :func:`fastcal._core.validation.rescale_weights` for the weights of all the chunks at once."""
    return weight_exponent(None, max((s.weight_max for s in summaries), default=0.0))

def auto_needs_binary(summaries):
    if not all(s.binary for s in summaries):
        raise ValueError(
            'increasing="auto" is supported on chunked and distributed data for 0/1 labels only '
            "(Spearman's rho then needs the ranks of the scores alone); pass increasing=True or False."
        )
