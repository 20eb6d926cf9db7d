r"""Bins and order statistics: the passes behind :mod:`fastcal.metrics` and the backends' diagnostics.

Every binned diagnostic (calibration curve, ECE, Brier score and its
decomposition, log loss) is read off one table of per-bin weighted sums
(:func:`bin_stats`), over the bins of scikit-learn's ``calibration_curve``
(:func:`bin_edges`). "quantile" edges are NumPy's percentiles, computed from
exact order statistics selected without a sort (:func:`select_order_statistics`).
The multiclass log loss and Brier score of an (n, k) probability matrix are
sums over its rows: :mod:`fastcal._matrices`.

Each step takes the data one array at a time and returns something that
merges in a fixed order: bin tables are added up in chunk order
(:func:`merge_tables`), bucket counts are integers, gathered values are
regrouped by the same kernel. So :mod:`fastcal.metrics` calls these functions
on the whole array, and :mod:`fastcal.dask` on each chunk, adding only the
delayed calls and the merge of the chunks' results.

Internal API:

- parameters: :data:`PARAMETERS`, :func:`check_params`, :data:`MAX_BINS`, :data:`STRATEGIES`,
  :data:`NORMS`, :data:`AVERAGES`, :data:`MULTI_CLASS`, :func:`check_binning`;
- deterministic chunked reductions: :func:`n_chunks` (how many fixed chunks),
  :func:`chunk_offsets` (where each chunk writes grouped values);
- order statistics: :data:`NBUCKETS`, :func:`bucket_histograms`,
  :func:`gather_buckets`, :func:`select_order_statistics` (from histograms
  and gathers of any number of chunks), :func:`order_statistics` (of an
  array in memory), :data:`SELECT_MIN_SIZE`;
- bin edges: :func:`percentiles_from_order_statistics`, :func:`bin_edges`;
- the bin table: its columns :data:`W`, :data:`SY`, :data:`SP`, :data:`SD`,
  :data:`SDD`, :data:`SDY`, :data:`SBRIER`, :data:`SLOG` (:data:`NSTAT` of
  them), :func:`bin_stats`, :func:`merge_tables`;
- what a table gives: :func:`column_mean`, :func:`curve_from_table`,
  :func:`ece_from_table`, :func:`brier_terms_from_table`;

The kernels are in :mod:`fastcal._binning._kernels`.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import _kernels as _k
from ._kernels import NSTAT, SBRIER, SD, SDD, SDY, SLOG, SP, SY, W
from .._core.parallel import TASK_ROWS, capped_chunks, parallel_accumulate, parallel_for
from .._core.params import Boolean, InstanceOf, Integer, Options, Real, check_all

__all__ = [
    "AVERAGES",
    "MULTICLASS",
    "MAX_BINS",
    "MULTI_CLASS",
    "NBUCKETS",
    "NORMS",
    "NSTAT",
    "PARAMETERS",
    "SBRIER",
    "SD",
    "SDD",
    "SDY",
    "SELECT_MIN_SIZE",
    "SLOG",
    "SP",
    "STRATEGIES",
    "SY",
    "W",
    "bin_edges",
    "bin_stats",
    "brier_terms_from_table",
    "bucket_histograms",
    "check_binning",
    "check_params",
    "chunk_offsets",
    "column_mean",
    "curve_from_table",
    "ece_from_table",
    "gather_buckets",
    "merge_tables",
    "n_chunks",
    "order_statistics",
    "percentiles_from_order_statistics",
    "select_order_statistics",
]

#: Ways to place the bin edges (see :func:`bin_edges`).
STRATEGIES = ("uniform", "quantile")
#: Norms of the binned calibration error (see :func:`ece_from_table`).
NORMS = ("l1", "l2", "max")
#: Averages of a ROC AUC over classes that scikit-learn's ``roc_auc_score`` accepts (None too).
AVERAGES = ("micro", "macro", "samples", "weighted")
#: Multiclass schemes of the ROC AUC.
MULTI_CLASS = ("raise", "ovr", "ovo")
#: What the calibration diagnostics make of an (n, k) probability matrix (see :func:`top_label`).
MULTICLASS = ("top_label", "classwise")

#: The most bins of a binned diagnostic or histogram binning, 2**20: its bin table (:data:`NSTAT` float64 per
#: bin, 64 MiB) and edges stay small, and a larger ``n_bins`` fails before anything is allocated, by name
#: (``n_bins=10**8`` would take gigabytes and a minute to fill bins that are nearly all empty).
MAX_BINS = 1 << 20
#: Rows per chunk of the deterministic chunked reductions, and the most chunks (enough for dynamic
#: tasks on 64 threads and more; the partial buffers stay under _PARTIAL_BUDGET).
_CHUNK_ROWS = 1 << 16
_MAX_CHUNKS = 1 << 12
#: Cap on the partial buffers of one reduction (8-byte elements): 32 MB.
_PARTIAL_BUDGET = 1 << 22
#: Buckets of the histogram that locates order statistics.
NBUCKETS = 1 << 15
#: Below this size :func:`order_statistics` uses ``np.partition`` of a copy.
SELECT_MIN_SIZE = 1 << 16


# ---------------------------------------------------------------------------
# parameters, chunks
# ---------------------------------------------------------------------------
#: What the diagnostics' parameters accept (see :mod:`fastcal._core.params`): metrics and Dask check them with it.
PARAMETERS = {
    "n_bins": [Integer(1, MAX_BINS)],
    "strategy": [Options(*STRATEGIES)],
    "norm": [Options(*NORMS)],
    "return_counts": [Boolean()],
    "normalize": [Boolean()],
    "pos_label": [None, InstanceOf((numbers.Real, str, np.bool_), "a number, a bool or a str")],
    "scale_by_half": [Boolean(), Options("auto")],
    "average": [Options(*AVERAGES), None],
    "multi_class": [Options(*MULTI_CLASS)],
    "multiclass": [Options(*MULTICLASS)],
    "max_fpr": [Real(0, 1, open_low=True), None],
}


def check_params(**values):
    """The diagnostics' parameters given by name, checked against :data:`PARAMETERS` (a dict of normalised values)."""
    return check_all({name: PARAMETERS[name] for name in values}, values)


def check_binning(n_bins, strategy):
    """``n_bins`` as an int, after checking it and ``strategy`` against :data:`PARAMETERS`."""
    return check_params(n_bins=n_bins, strategy=strategy)["n_bins"]


def n_chunks(n, floats_per_chunk=1):
    """Number of fixed chunks of a reduction over ``n`` rows whose partial result per chunk has ``floats_per_chunk`` elements.

    ``min(4096, n // 2**16, 2**22 // floats_per_chunk)``, at least 1: a
    function of the sizes only, never of the thread count, so that partial
    results merged in chunk order are the same on any number of threads.
    """
    return capped_chunks(n, _CHUNK_ROWS, min(_MAX_CHUNKS, _PARTIAL_BUDGET // max(1, floats_per_chunk)))


def chunk_offsets(counts):
    r"""Where chunks write their values when the values are laid out group after group, chunk order kept in each group.

    Parameters
    ----------
    counts : ndarray of shape (nchunks, ngroups), int64
        ``counts[c, g]``: the values of chunk ``c`` in group ``g``.

    Returns
    -------
    sizes : ndarray of shape (ngroups,)
        :math:`s_g = \sum_c n_{cg}`.
    starts : ndarray of shape (ngroups,)
        Where group ``g`` begins: :math:`\sum_{g' < g} s_{g'}`.
    offsets : ndarray of shape (nchunks, ngroups), int64, C-contiguous
        Where chunk ``c`` writes its first value of group ``g``:
        :math:`\mathrm{start}_g + \sum_{c' < c} n_{c'g}` (kernels advance
        it in place).
    """
    sizes = counts.sum(axis=0)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    offsets = np.ascontiguousarray(starts[None, :] + np.cumsum(counts, axis=0) - counts, dtype=np.int64)
    return sizes, starts, offsets


# ---------------------------------------------------------------------------
# order statistics: bucket histogram, gather, select
# ---------------------------------------------------------------------------
def bucket_histograms(x, lo, scale):
    r"""Counts of the values of ``x`` in :data:`NBUCKETS` buckets, in one parallel pass.

    Value :math:`v` is in bucket :math:`\min(B - 1, \lfloor (v - lo)\,
    \mathit{scale} \rfloor)` (float64 arithmetic, :math:`B` =
    :data:`NBUCKETS`), a non-decreasing function of :math:`v`, so bucket
    order is value order. ``lo`` is at most ``min(x)`` and ``scale`` is
    what :func:`select_order_statistics` passes.

    Returns
    -------
    ndarray of shape (k, NBUCKETS), int64
        ``.sum(axis=0)`` is the histogram of ``x``. The rows are partial
        counts, one per thread that took part (at most
        :func:`fastcal._core.parallel.get_num_threads`; integer counts, so the
        sum does not depend on how the rows were shared out).
    """
    bufs = parallel_accumulate(_k.bucket_counts, x.shape[0], x, lo, scale,
                               buffer=lambda: np.zeros(NBUCKETS, dtype=np.int64))
    return np.stack(bufs)


def gather_buckets(x, lo, scale, marked):
    """The values of ``x`` in the buckets ``marked``, grouped by bucket, in one parallel pass.

    Each task of rows gathers its marked values in input order; the tasks'
    values are joined in task order and grouped by bucket by a counting sort
    (stable), so the result is the same on any number of threads.

    Parameters
    ----------
    x, lo, scale
        As in :func:`bucket_histograms`.
    marked : ndarray of int
        Bucket numbers, ascending, unique.

    Returns
    -------
    values : ndarray of the dtype of ``x``
        The values of bucket ``marked[0]``, then those of ``marked[1]``, ...,
        each group in input order.
    sizes : ndarray of int64
        The size of each group.
    """
    n = x.shape[0]
    slot = np.full(NBUCKETS, -1, dtype=np.int64)
    slot[marked] = np.arange(marked.shape[0])
    # a first guess at a task's share: the marked buckets' share of the buckets, doubled (the output grows past it)
    expected = int(2 * min(n, TASK_ROWS) * marked.shape[0] / NBUCKETS) + 64
    parts = parallel_for(_k.gather_marked, n, x, lo, scale, slot, expected)
    values = parts[0][0] if len(parts) == 1 else np.concatenate([v for v, _ in parts])
    slots = parts[0][1] if len(parts) == 1 else np.concatenate([s for _, s in parts])
    sizes = np.zeros(marked.shape[0], dtype=np.int64)
    out = np.empty(values.shape[0], dtype=x.dtype)
    _k.group_by_slot(values, slots, sizes, out)
    return out, sizes


def select_order_statistics(ranks, lo, hi, dtype, count, gather):
    r"""Values of the given ranks among values in ``[lo, hi]`` held anywhere, in two rounds over the data, exactly.

    A histogram of :data:`NBUCKETS` equal-width buckets between ``lo`` and
    ``hi`` (the least and greatest value) tells which buckets hold the
    wanted ranks; only their values are gathered, and ``np.partition``
    selects in each. O(n) work; the values are exact, whatever the
    distribution (a range too narrow to scale uses one bucket).

    Parameters
    ----------
    ranks : ndarray of int
        0-based ranks in the ascending order of all the values, sorted, unique.
    lo, hi : float
        The least and the greatest value.
    dtype : dtype
        The dtype of the values.
    count : callable
        ``count(scale)``: the bucket counts of all the values, int64 of
        shape (NBUCKETS,) (summed :func:`bucket_histograms` of the chunks).
    gather : callable
        ``gather(scale, marked)``: ``(values, sizes)``, the values of all
        the data in the buckets ``marked`` grouped by bucket
        (:func:`gather_buckets`).

    Returns
    -------
    ndarray of shape ranks.shape, of ``dtype``
    """
    if lo == hi:
        return np.full(ranks.shape[0], lo, dtype=dtype)
    scale = NBUCKETS / (hi - lo)
    if not math.isfinite(scale):  # hi - lo subnormal
        scale = 0.0
    counts = count(scale)
    cum = np.cumsum(counts)
    bucket_of_rank = np.searchsorted(cum, ranks, side="right")
    marked = np.unique(bucket_of_rank)
    values, sizes = gather(scale, marked)
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    first_rank = cum - counts
    out = np.empty(ranks.shape[0], dtype=dtype)
    for s, b in enumerate(marked):
        group = values[starts[s] : starts[s] + sizes[s]]
        which = np.flatnonzero(bucket_of_rank == b)
        local = ranks[which] - first_rank[b]
        group.partition(local)
        out[which] = group[local]
    return out


def order_statistics(x, ranks, lo, hi):
    """Values of rank ``ranks`` (sorted, unique, 0-based) in ascending ``x``, without sorting ``x``.

    :func:`select_order_statistics` over the whole array, with
    ``lo = min(x)`` and ``hi = max(x)``; below :data:`SELECT_MIN_SIZE`
    values, ``np.partition`` of a copy. ``x`` is not modified.
    """
    if x.shape[0] < SELECT_MIN_SIZE:
        return np.partition(x, ranks)[ranks]
    def count(scale):
        return bucket_histograms(x, lo, scale).sum(axis=0)

    def gather(scale, marked):
        return gather_buckets(x, lo, scale, marked)

    return select_order_statistics(ranks, lo, hi, x.dtype, count, gather)


# ---------------------------------------------------------------------------
# bin edges
# ---------------------------------------------------------------------------
def percentiles_from_order_statistics(n, n_bins, select, *, percent=True):
    """NumPy's "linear" percentiles at ``linspace(0, 100, n_bins + 1)`` of ``n`` values, bit for bit; with
    ``percent=False``, its quantiles at ``linspace(0, 1, n_bins + 1)`` (``np.quantile``, pandas'
    ``Series.quantile``), bit for bit.

    They differ where ``q * 100 / 100`` is not ``q`` (``np.percentile``
    divides its argument by 100), an ulp that moves an edge onto or off a
    value. ``select(ranks)`` returns the values of the given (sorted,
    unique) ranks: by selection in memory, or from Dask chunks. NumPy's
    method: virtual index ``(n - 1) * q``, neighbours ``floor`` and ``floor +
    1`` (both the last element at the top), and ``_lerp``: ``a + (b - a) *
    g``, or ``b - (b - a) * (1 - g)`` where ``g >= 0.5``, with ``b - a`` in
    the dtype of the values.
    """
    q = np.linspace(0, 1, n_bins + 1)
    if percent:
        q = np.true_divide(q * 100, 100)
    virtual = (n - 1) * q
    prev = np.floor(virtual)
    nxt = prev + 1
    above = virtual >= n - 1
    prev[above] = -1
    nxt[above] = -1
    below = virtual < 0
    prev[below] = 0
    nxt[below] = 0
    prev = prev.astype(np.intp)
    nxt = nxt.astype(np.intp)
    gamma = np.asanyarray(virtual - prev, dtype=virtual.dtype)
    prev_rank = np.where(prev < 0, n + prev, prev)
    next_rank = np.where(nxt < 0, n + nxt, nxt)
    ranks = np.unique(np.concatenate((prev_rank, next_rank)))
    values = select(ranks)
    a = values[np.searchsorted(ranks, prev_rank)]
    b = values[np.searchsorted(ranks, next_rank)]
    diff_b_a = b - a
    result = np.add(a, diff_b_a * gamma)
    np.subtract(b, diff_b_a * (1 - gamma), out=result, where=gamma >= 0.5, casting="unsafe", dtype=result.dtype)
    return result


def bin_edges(n_bins, strategy, n=None, select=None):
    """The ``n_bins + 1`` float64 bin edges of scikit-learn's ``calibration_curve``.

    "uniform": ``np.linspace(0, 1, n_bins + 1)``; "quantile":
    ``np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)`` of the ``n``
    predictions ``p`` whose order statistics ``select(ranks)`` returns (see
    :func:`percentiles_from_order_statistics`).
    """
    if strategy == "quantile":
        return np.asarray(percentiles_from_order_statistics(n, n_bins, select), dtype=np.float64)
    return np.linspace(0.0, 1.0, n_bins + 1)


# ---------------------------------------------------------------------------
# the bin table
# ---------------------------------------------------------------------------
def bin_stats(p, y, w, edges, *, moments=False, brier=False, logloss=False):
    r"""The table of per-bin weighted sums of the predictions ``p``, in one parallel pass.

    Row :math:`k` sums over the predictions in bin :math:`k`, that is the
    number of inner edges ``edges[1:-1]`` strictly below them (bins
    :math:`[e_0, e_1], (e_1, e_2], \ldots` as in scikit-learn), with weights
    :math:`w_i` (1 without ``w``), in float64. Columns: :data:`W`
    :math:`\sum w_i`, :data:`SY` :math:`\sum w_i y_i`, :data:`SP`
    :math:`\sum w_i p_i`; with ``moments``, about the bin's midpoint
    :math:`r_k` (which keeps them free of cancellation), :data:`SD`
    :math:`\sum w_i d_i`, :data:`SDD` :math:`\sum w_i d_i^2`, :data:`SDY`
    :math:`\sum w_i d_i y_i` with :math:`d_i = p_i - r_k`; with ``brier``,
    :data:`SBRIER` :math:`\sum w_i (p_i - y_i)^2`; with ``logloss``,
    :data:`SLOG` :math:`-\sum w_i \log q_i`, :math:`q_i` the probability of
    the observed class clipped to :math:`[\epsilon, 1 - \epsilon]` in the
    dtype of ``p`` (scikit-learn's clipping). Unrequested columns are 0.

    Parameters
    ----------
    p : ndarray of float32 or float64
        Probabilities in [0, 1], finite, C-contiguous.
    y : ndarray
        Labels, nonzero for the positives.
    w : ndarray or None
        Non-negative weights.
    edges : ndarray of float64
        ``n_bins + 1`` non-decreasing bin edges.

    Returns
    -------
    ndarray of shape (n_bins, NSTAT), float64
        Per-chunk partial tables merged in chunk order: the same on any
        number of threads.
    """
    n = p.shape[0]
    nb = edges.shape[0] - 1
    if n == 0:
        return np.zeros((nb, NSTAT))
    ref = 0.5 * (edges[:-1] + edges[1:])
    dt = p.dtype.type
    one = dt(1)
    clip_lo = dt(np.finfo(p.dtype).eps)
    clip_hi = one - clip_lo
    lut, grid = _k.bin_lookup_table(edges)
    part = np.zeros((n_chunks(n, nb * NSTAT), nb, NSTAT))
    parallel_for(_k.bin_stats, part.shape[0], p, y, w, edges, lut, grid, ref, moments, brier, logloss, one,
                 clip_lo, clip_hi, part, rows=n)
    return merge_tables(part)


def merge_tables(tables):
    """The sum of bin tables (a sequence of them, or an array ``(nchunks, n_bins, NSTAT)``), added in order."""
    return _k.merge_partials(np.asarray(tables, dtype=np.float64))


# ---------------------------------------------------------------------------
# what a table gives
# ---------------------------------------------------------------------------
def column_mean(table, column):
    r"""The weighted mean over all rows of what ``column`` sums: :math:`\sum_k T_{k,c} / \sum_k T_{k,W}`, a float."""
    return float(table[:, column].sum() / table[:, W].sum())


def curve_from_table(table, weighted, return_counts):
    r"""``calibration_curve``'s result from a bin table: over the bins of weight :math:`W_k > 0`.

    ``prob_true`` :math:`= \mathrm{SY}_k / W_k`, ``prob_pred``
    :math:`= \mathrm{SP}_k / W_k`, and with ``return_counts`` the
    :math:`W_k` (as int64 unless ``weighted``).
    """
    weight = table[:, W]
    nonzero = weight > 0
    total = weight[nonzero]
    prob_true = table[nonzero, SY] / total
    prob_pred = table[nonzero, SP] / total
    if not return_counts:
        return prob_true, prob_pred
    return prob_true, prob_pred, (total if weighted else total.astype(np.int64))


def ece_from_table(table):
    r"""The binned calibration errors of a table, as a dict keyed by :data:`NORMS`.

    Over the bins of weight :math:`W_k > 0`, with mass :math:`m_k = W_k /
    \sum_j W_j` and gap :math:`g_k = |\mathrm{SY}_k - \mathrm{SP}_k| / W_k`:
    "l1" :math:`\sum_k m_k g_k`, "l2" :math:`\sqrt{\sum_k m_k g_k^2}`, "max"
    :math:`\max_k g_k`.
    """
    weight = table[:, W]
    nz = weight > 0
    wk = weight[nz]
    mass = wk / wk.sum()
    gap = np.abs(table[nz, SY] / wk - table[nz, SP] / wk)
    return {
        "l1": float(np.sum(mass * gap)),
        "l2": float(math.sqrt(np.sum(mass * gap * gap))),
        "max": float(gap.max()),
    }


def brier_terms_from_table(table):
    r"""The Brier score and the five terms of its decomposition, from a table with moments and Brier sums.

    Over the bins of weight :math:`W_k > 0`, with :math:`N = \sum_k W_k`,
    :math:`\bar o_k = \mathrm{SY}_k / W_k`, :math:`\bar p_k =
    \mathrm{SP}_k / W_k`, :math:`\bar o = \sum_k \mathrm{SY}_k / N` and
    :math:`\bar d_k = \mathrm{SD}_k / W_k`:

    .. math::

        \mathrm{REL} = \tfrac1N \textstyle\sum_k W_k (\bar p_k - \bar o_k)^2,\quad
        \mathrm{RES} = \tfrac1N \textstyle\sum_k W_k (\bar o_k - \bar o)^2,\quad
        \mathrm{UNC} = \bar o (1 - \bar o),

        \mathrm{WBV} = \tfrac1N \textstyle\sum_k \max(0, \mathrm{SDD}_k - \bar d_k \mathrm{SD}_k),\quad
        \mathrm{WBC} = \tfrac2N \textstyle\sum_k (\mathrm{SDY}_k - \bar d_k \mathrm{SY}_k),\quad
        \mathrm{BS} = \tfrac1N \textstyle\sum_k \mathrm{SBRIER}_k.

    Returns
    -------
    tuple of float
        ``(brier, reliability, resolution, uncertainty, within_bin_variance,
        within_bin_covariance)``, the fields of
        :class:`fastcal.metrics.BrierDecomposition`.
    """
    weight = table[:, W]
    nz = weight > 0
    t = table[nz]
    wk = t[:, W]
    total = wk.sum()
    base_rate = t[:, SY].sum() / total
    obs = t[:, SY] / wk
    pred = t[:, SP] / wk
    mean_d = t[:, SD] / wk
    reliability = float(np.sum(wk * (pred - obs) ** 2) / total)
    resolution = float(np.sum(wk * (obs - base_rate) ** 2) / total)
    uncertainty = float(base_rate * (1.0 - base_rate))
    wbv = float(np.sum(np.maximum(t[:, SDD] - mean_d * t[:, SD], 0.0)) / total)
    wbc = float(2.0 * np.sum(t[:, SDY] - mean_d * t[:, SY]) / total)
    brier = float(t[:, SBRIER].sum() / total)
    return brier, reliability, resolution, uncertainty, wbv, wbc
