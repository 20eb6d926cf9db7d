"""fastcal._binning, the engine of the metrics and the Dask diagnostics, against naive NumPy references.

Order statistics against ``np.sort``, percentiles against ``np.percentile``
(bit for bit), bucket counts against ``np.bincount``, bin tables against
per-bin masked sums; each in memory, in chunks merged as Dask merges them,
and on one thread or many.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from fastcal import _binning as B
from fastcal._binning import _kernels as K

from . import naive_metrics as naive
from .strategies import probabilities
from .threads import in_pieces, serial_and_parallel

SETTINGS = settings(max_examples=60, deadline=None)
EPS = np.finfo(np.float64).eps


@st.composite
def values(draw, max_size=3000):
    """Values in [0, 1] of float32 or float64 with ties, edges, extremes and narrow ranges (see ``probabilities``)."""
    _, p, _ = draw(probabilities(max_size=max_size))
    kind = draw(st.sampled_from(["as drawn", "subnormal range", "constant", "two neighbours"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    if kind == "subnormal range":  # hi - lo too small to scale to the buckets
        p = rng.choice(np.array([0.0, 5e-324, 1e-323]), p.size).astype(p.dtype)
    elif kind == "constant":
        p = np.full(p.size, p[0])
    elif kind == "two neighbours":
        p = np.where(rng.random(p.size) < 0.3, p.dtype.type(0.5), np.nextafter(p.dtype.type(0.5), p.dtype.type(1)))
    return p


@st.composite
def ranks_of(draw, n):
    """Sorted, unique 0-based ranks of ``n`` values: always the first and the last, some others."""
    some = draw(st.lists(st.integers(0, n - 1), max_size=12))
    return np.unique(np.array([0, n - 1, *some], dtype=np.intp))


@st.composite
def chunk_bounds(draw, n):
    """Bounds of consecutive chunks covering ``[0, n)``, some of them empty."""
    cuts = draw(st.lists(st.integers(0, n), max_size=6))
    return [0, *sorted(cuts), n]


def spread(n, dtype=np.float64, seed=0):
    """``(y, p)``: predictions of an over-confident model, spread over [0, 1]."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-s / 2))).astype(np.uint8)
    return y, (1 / (1 + np.exp(-s))).astype(dtype)


def quantile_edges(p, n_bins):
    """The "quantile" edges of ``p`` as the metrics compute them (bucket selection from ``SELECT_MIN_SIZE`` on)."""
    lo, hi = float(p.min()), float(p.max())
    return B.bin_edges(n_bins, "quantile", p.shape[0], lambda ranks: B.order_statistics(p, ranks, lo, hi))


def naive_buckets(x, lo, scale):
    """The bucket of each value, from the definition (float64 arithmetic)."""
    return np.clip(np.floor((x.astype(np.float64) - lo) * scale), 0, B.NBUCKETS - 1).astype(np.int64)


def scale_of(x):
    lo, hi = float(x.min()), float(x.max())
    scale = B.NBUCKETS / (hi - lo) if hi > lo else 0.0
    return lo, scale if math.isfinite(scale) else 0.0


# ---------------------------------------------------------------------------
# parameters and chunks
# ---------------------------------------------------------------------------
def test_check_binning():
    assert B.check_binning(np.int64(7), "quantile") == 7 and type(B.check_binning(np.int64(7), "uniform")) is int
    for n_bins in (0, -3, 2.5, True, np.bool_(True), "5", None):
        with pytest.raises(ValueError, match=r"n_bins must be an integer in \[1, 1048576\]"):
            B.check_binning(n_bins, "uniform")
    with pytest.raises(ValueError, match="strategy"):
        B.check_binning(5, "kmeans")


@given(n=st.integers(0, 2**40), floats=st.integers(1, 2**24))
def test_n_chunks(n, floats):
    c = B.n_chunks(n, floats)
    assert type(c) is int
    assert c == max(1, min(4096, n // 2**16, 2**22 // floats))
    assert c * floats <= max(floats, 2**22)  # the partial buffers stay within the budget (one chunk at least)


@given(counts=st.lists(st.lists(st.integers(0, 5), min_size=3, max_size=3), min_size=1, max_size=6))
def test_chunk_offsets(counts):
    counts = np.array(counts, dtype=np.int64)
    sizes, starts, offsets = B.chunk_offsets(counts)
    # naive: one item per value, chunk by chunk; grouped by a stable sort on the group
    chunk, group = np.nonzero(counts > 0)
    items = np.repeat(np.stack([chunk, group], axis=1), counts[chunk, group], axis=0)
    order = np.argsort(items[:, 1], kind="stable")
    laid_out = items[order]
    assert_array_equal(sizes, np.bincount(items[:, 1], minlength=3))
    assert_array_equal(starts, np.searchsorted(laid_out[:, 1], np.arange(3)))
    assert offsets.dtype == np.int64 and offsets.flags.c_contiguous
    for c, g in zip(chunk, group):
        first = np.flatnonzero((laid_out[:, 0] == c) & (laid_out[:, 1] == g))[0]
        assert offsets[c, g] == first


# ---------------------------------------------------------------------------
# order statistics
# ---------------------------------------------------------------------------
@SETTINGS
@given(x=values())
def test_bucket_histograms(x):
    lo, scale = scale_of(x)
    hist = B.bucket_histograms(x, lo, scale)
    assert hist.dtype == np.int64 and hist.ndim == 2 and hist.shape[1] == B.NBUCKETS
    assert_array_equal(hist.sum(axis=0), np.bincount(naive_buckets(x, lo, scale), minlength=B.NBUCKETS))


def test_bucket_histograms_many_chunks_serial_and_parallel():
    x = np.random.default_rng(1).random(300_000).astype(np.float32) ** 3
    lo, scale = scale_of(x)
    serial, parallel = serial_and_parallel(B.bucket_histograms, x, lo, scale)
    assert serial.shape[0] == 1 and parallel.shape[0] > 1  # one buffer per thread that took part
    assert_array_equal(serial.sum(axis=0), parallel.sum(axis=0))
    assert_array_equal(serial.sum(axis=0), np.bincount(naive_buckets(x, lo, scale), minlength=B.NBUCKETS))


@SETTINGS
@given(data=st.data(), x=values())
def test_gather_buckets(data, x):
    lo, scale = scale_of(x)
    b = naive_buckets(x, lo, scale)
    present = np.unique(b)
    marked = np.unique(data.draw(st.lists(st.sampled_from(present.tolist() + [0, B.NBUCKETS - 1]), min_size=1)))
    expected = [x[b == m] for m in marked]  # input order inside each bucket
    got, sizes = B.gather_buckets(x, lo, scale, marked)
    assert got.dtype == x.dtype
    assert_array_equal(sizes, [e.size for e in expected])
    assert_array_equal(got, np.concatenate(expected))
    # Dask's merge: the chunks' gathers, concatenated in chunk order and gathered again
    bounds = data.draw(chunk_bounds(x.size))
    pieces = [B.gather_buckets(x[a:z], lo, scale, marked)[0] for a, z in zip(bounds[:-1], bounds[1:])]
    merged, merged_sizes = B.gather_buckets(np.concatenate(pieces), lo, scale, marked)
    assert_array_equal(merged, got)
    assert_array_equal(merged_sizes, sizes)


@SETTINGS
@given(data=st.data(), x=values(), small=st.booleans())
def test_order_statistics(data, x, small):
    ranks = data.draw(ranks_of(x.size))
    before = x.copy()
    old = B.SELECT_MIN_SIZE
    if small:  # the bucket path on small arrays
        B.SELECT_MIN_SIZE = 1
    try:
        got = B.order_statistics(x, ranks, float(x.min()), float(x.max()))
    finally:
        B.SELECT_MIN_SIZE = old
    assert got.dtype == x.dtype
    assert_array_equal(got, np.sort(x)[ranks])
    assert_array_equal(x, before)


@SETTINGS
@given(data=st.data(), x=values())
def test_select_order_statistics_from_chunks(data, x):
    """As fastcal.dask calls it: counts of every chunk added, the chunks' gathers joined."""
    ranks = data.draw(ranks_of(x.size))
    bounds = data.draw(chunk_bounds(x.size))
    chunks = [x[a:z] for a, z in zip(bounds[:-1], bounds[1:])]
    lo, hi = float(x.min()), float(x.max())
    rounds = []

    def count(scale):
        rounds.append("count")
        return sum(B.bucket_histograms(c, lo, scale).sum(axis=0) for c in chunks)

    def gather(scale, marked):
        rounds.append("gather")
        pieces = [B.gather_buckets(c, lo, scale, marked)[0] for c in chunks]
        return B.gather_buckets(np.concatenate(pieces), lo, scale, marked)

    got = B.select_order_statistics(ranks, lo, hi, x.dtype, count, gather)
    assert got.dtype == x.dtype
    assert_array_equal(got, np.sort(x)[ranks])
    assert rounds == ([] if lo == hi else ["count", "gather"])  # constant data: no pass at all


def test_order_statistics_large_concentrated():
    """Almost every value in one bucket, an outlier stretching the range; float32 and float64, one thread or many."""
    rng = np.random.default_rng(2)
    for dtype in (np.float32, np.float64):
        x = (0.5 + rng.random(200_001) * 1e-6).astype(dtype)
        x[123] = 1.0
        ranks = np.array([0, 1, 77_777, 100_000, 199_999, 200_000])
        serial, parallel = serial_and_parallel(B.order_statistics, x, ranks, float(x.min()), float(x.max()))
        assert_array_equal(serial, np.sort(x)[ranks])
        assert_array_equal(parallel, serial)


def test_bucket_kernels_whole_equals_pieces():
    """The kernels on all rows at once and on uneven ranges, last first: the same counts, and the same values in order."""
    rng = np.random.default_rng(5)
    x = rng.random(200_000) ** 3
    lo, hi = float(x.min()), float(x.max())
    scale = B.NBUCKETS / (hi - lo)
    n = x.size
    h_s = np.zeros(B.NBUCKETS, dtype=np.int64)
    h_p = np.zeros(B.NBUCKETS, dtype=np.int64)
    K.bucket_counts(x, lo, scale, h_s, 0, n)
    in_pieces(K.bucket_counts, n, x, lo, scale, h_p)
    assert_array_equal(h_s, h_p)
    assert h_s.sum() == x.size
    slot = np.full(B.NBUCKETS, -1, dtype=np.int64)
    marked = np.array([0, 3, 500, B.NBUCKETS - 1])
    slot[marked] = np.arange(4)
    whole_v, whole_s = K.gather_marked(x, lo, scale, slot, 1, 0, n)  # a guess of 1: the output grows many times
    pieces = in_pieces(K.gather_marked, n, x, lo, scale, slot, 1)
    assert_array_equal(whole_v, np.concatenate([v for v, _ in pieces]))
    assert_array_equal(whole_s, np.concatenate([s for _, s in pieces]))
    sizes = np.zeros(4, dtype=np.int64)
    out = np.empty(whole_v.size)
    K.group_by_slot(whole_v, whole_s, sizes, out)
    expected = [x[naive_buckets(x, lo, scale) == m] for m in marked]
    assert_array_equal(sizes, [e.size for e in expected])
    assert_array_equal(out, np.concatenate(expected))



# ---------------------------------------------------------------------------
# bin edges
# ---------------------------------------------------------------------------
@SETTINGS
@given(x=values(), n_bins=st.integers(1, 60))
def test_percentiles_from_order_statistics(x, n_bins):
    asked = []

    def select(ranks):
        asked.append(ranks)
        return np.sort(x)[ranks]

    got = B.percentiles_from_order_statistics(x.size, n_bins, select)
    expected = np.percentile(x, np.linspace(0, 1, n_bins + 1) * 100)
    assert got.dtype == expected.dtype
    assert_array_equal(got, expected)
    (ranks,) = asked
    assert np.all(np.diff(ranks) > 0) and ranks[0] >= 0 and ranks[-1] < x.size
    assert ranks.size <= 2 * (n_bins + 1)


@SETTINGS
@given(x=values(), n_bins=st.integers(1, 60), strategy=st.sampled_from(B.STRATEGIES), small=st.booleans())
def test_bin_edges(x, n_bins, strategy, small):
    old = B.SELECT_MIN_SIZE
    if small:  # the bucket path on small arrays
        B.SELECT_MIN_SIZE = 1
    try:
        got = quantile_edges(x, n_bins) if strategy == "quantile" else B.bin_edges(n_bins, strategy)
    finally:
        B.SELECT_MIN_SIZE = old
    assert got.dtype == np.float64 and got.shape == (n_bins + 1,)
    assert_array_equal(got, naive.edges(x, n_bins, strategy))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kind", ["spread", "ties", "concentrated", "adjacent", "subnormal"])
def test_quantile_edges_large(dtype, kind):
    rng = np.random.default_rng(11)
    n = 300_001
    if kind == "spread":
        _, p = spread(n, dtype)
    elif kind == "ties":
        p = rng.choice(rng.random(30), n).astype(dtype)
    elif kind == "concentrated":  # almost everything in one bucket, plus an outlier
        p = (0.5 + rng.random(n) * 1e-9).astype(dtype)
        p[7] = 1.0
    elif kind == "adjacent":  # two neighbouring floats
        p = np.where(rng.random(n) < 0.3, dtype(0.5), np.nextafter(dtype(0.5), dtype(1)))
    else:  # a subnormal range: hi - lo cannot be scaled to the buckets
        p = rng.choice(np.array([0.0, 5e-324, 1e-323]), n).astype(np.float64)
    x = p.copy()
    for n_bins in (1, 2, 10, 37, 1000):
        expected = np.percentile(p, np.linspace(0, 1, n_bins + 1) * 100)
        assert_array_equal(quantile_edges(p, n_bins), expected)
    assert_array_equal(p, x)  # input untouched


# ---------------------------------------------------------------------------
# the bin table and what it gives
# ---------------------------------------------------------------------------
def naive_table(y, p, w, edges):
    """Every column of the bin table, from masked sums per bin (float64)."""
    nb = edges.size - 1
    y = (np.asarray(y) != 0).astype(np.float64)
    pf = p.astype(np.float64)
    w = np.ones(p.size) if w is None else np.asarray(w, dtype=np.float64)
    ids = naive.bin_ids(p, edges)
    ref = 0.5 * (edges[:-1] + edges[1:])
    eps = np.finfo(p.dtype).eps
    q = np.clip(np.where(y > 0, p, 1 - p), eps, 1 - eps)  # in the dtype of p, as scikit-learn
    out = np.zeros((nb, B.NSTAT))
    for k in range(nb):
        m = ids == k
        d = pf[m] - ref[k]
        out[k, B.W] = w[m].sum()
        out[k, B.SY] = np.sum(w[m] * y[m])
        out[k, B.SP] = np.sum(w[m] * pf[m])
        out[k, B.SD] = np.sum(w[m] * d)
        out[k, B.SDD] = np.sum(w[m] * d * d)
        out[k, B.SDY] = np.sum(w[m] * d * y[m])
        out[k, B.SBRIER] = np.sum(w[m] * (pf[m] - y[m]) ** 2)
        out[k, B.SLOG] = -np.sum(w[m] * np.log(q[m].astype(np.float64)))
    return out


def test_bin_lookup_table_falls_back_to_search():
    """A coarse lookup grid forces the binary search between table bounds; same bins."""
    rng = np.random.default_rng(0)
    p = np.sort(rng.random(5000))
    for n_bins in (2, 9, 64):
        e = np.sort(np.concatenate([[0.0], rng.random(n_bins - 1), [1.0]]))
        for grid in (1, 2, 8, None):
            lut, g = K.bin_lookup_table(e, grid)
            ids = np.array([K.bin_of(x, e, lut, g) for x in p[::10]])
            assert_array_equal(ids, np.searchsorted(e[1:-1], p[::10]))


@SETTINGS
@given(data=probabilities(max_size=2000, weighted="zeros"), use_weights=st.booleans(), n_bins=st.integers(1, 25),
       strategy=st.sampled_from(B.STRATEGIES), flags=st.sampled_from([(), ("moments",), ("brier", "logloss"),
                                                                       ("moments", "brier", "logloss")]))
def test_bin_stats(data, use_weights, n_bins, strategy, flags):
    y, p, w = data
    w = w if use_weights else None
    edges = naive.edges(p, n_bins, strategy).astype(np.float64)  # float64, as bin_edges gives them
    got = B.bin_stats(p, y, w, edges, **{f: True for f in flags})
    want = naive_table(y, p, w, edges)
    assert got.shape == (n_bins, B.NSTAT) and got.dtype == np.float64
    columns = [B.W, B.SY, B.SP]
    columns += [B.SD, B.SDD, B.SDY] if "moments" in flags else []
    columns += [B.SBRIER] if "brier" in flags else []
    columns += [B.SLOG] if "logloss" in flags else []
    # sums of <= n terms in another order: within 4 n eps of the largest sum of magnitudes (<= n * 36 * max weight)
    scale = np.max(np.abs(want)) + 1.0
    assert_allclose(got[:, columns], want[:, columns], rtol=0, atol=4 * p.size * EPS * scale)
    assert_array_equal(got[:, B.W] > 0, want[:, B.W] > 0)  # sums of non-negative weights: zero exactly when empty
    others = np.setdiff1d(np.arange(B.NSTAT), columns)
    assert_array_equal(got[:, others], 0)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bin_stats_whole_equals_pieces(weighted, dtype):
    """The kernel on all chunks at once, on uneven ranges of chunks, and on one thread or many: bit for bit."""
    y, p = spread(150_001, dtype, seed=2)
    w = np.random.default_rng(0).random(p.size).astype(dtype) if weighted else None
    for edges in (np.linspace(0, 1, 11), quantile_edges(p, 20)):
        lut, grid = K.bin_lookup_table(edges)
        ref = 0.5 * (edges[1:] + edges[:-1])
        one = p.dtype.type(1)
        eps = p.dtype.type(np.finfo(p.dtype).eps)
        for nchunks in (1, 5, 64):
            args = (p, y, w, edges, lut, grid, ref, True, True, True, one, eps, one - eps)
            part_a, part_b = (np.zeros((nchunks, edges.size - 1, B.NSTAT)) for _ in range(2))
            K.bin_stats(*args, part_a, 0, nchunks)
            in_pieces(K.bin_stats, nchunks, *args, part_b)
            assert_array_equal(B.merge_tables(part_a), B.merge_tables(part_b))
        flags = dict(moments=True, brier=True, logloss=True)
        serial, parallel = serial_and_parallel(B.bin_stats, p, y, w, edges, **flags)
        assert_array_equal(serial, parallel)
        want = naive_table(y, p, w, edges)  # sums in another order (see test_bin_stats)
        assert_allclose(serial, want, rtol=0, atol=4 * p.size * EPS * (np.max(np.abs(want)) + 1))


def test_bin_stats_empty():
    edges = np.linspace(0, 1, 5)
    for dtype in (np.float32, np.float64):
        empty = B.bin_stats(np.empty(0, dtype), np.empty(0, np.uint8), None, edges, moments=True)
        assert_array_equal(empty, np.zeros((4, B.NSTAT)))


@given(tables=st.lists(st.lists(st.floats(-1e3, 1e3), min_size=2 * B.NSTAT, max_size=2 * B.NSTAT), min_size=1,
                       max_size=6))
def test_merge_tables_adds_in_order(tables):
    tables = [np.array(t).reshape(2, B.NSTAT) for t in tables]
    expected = np.zeros((2, B.NSTAT))
    for t in tables:
        expected += t
    for given_as in (tables, tuple(tables), np.array(tables)):
        got = B.merge_tables(given_as)
        assert got.tobytes() == expected.tobytes()  # bit for bit, signed zeros included


@SETTINGS
@given(data=probabilities(max_size=2000, weighted="zeros"), use_weights=st.booleans(), n_bins=st.integers(1, 25),
       strategy=st.sampled_from(B.STRATEGIES))
def test_from_table(data, use_weights, n_bins, strategy):
    y, p, w = data
    w = w if use_weights else None
    table = B.bin_stats(p, y, w, naive.edges(p, n_bins, strategy).astype(np.float64), moments=True, brier=True, logloss=True)
    n = p.size
    # curve: means of <= n terms, in [0, 1]
    e_true, e_pred, e_counts = naive.calibration_curve(y, p, n_bins, strategy, w)
    prob_true, prob_pred, counts = B.curve_from_table(table, w is not None, True)
    assert_allclose(prob_true, e_true, rtol=0, atol=4 * n * EPS)
    assert_allclose(prob_pred, e_pred, rtol=0, atol=4 * n * EPS)
    assert_allclose(counts, e_counts, rtol=4 * n * EPS)
    assert counts.dtype == (np.float64 if w is not None else np.int64)
    assert len(B.curve_from_table(table, w is not None, False)) == 2
    ece = B.ece_from_table(table)
    assert set(ece) == set(B.NORMS)
    for norm in B.NORMS:
        assert math.isclose(ece[norm], naive.ece(y, p, n_bins, strategy, norm, w), rel_tol=1e-9, abs_tol=1e-12)
    terms = B.brier_terms_from_table(table)
    ref = naive.brier_decomposition(y, p, n_bins, strategy, w)
    names = ("brier", "reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance")
    assert len(terms) == 6 and all(type(t) is float for t in terms)
    for name, value in zip(names, terms):
        assert math.isclose(value, ref[name], rel_tol=1e-9, abs_tol=20 * n * EPS), name
    assert math.isclose(B.column_mean(table, B.SBRIER), naive.brier(y, p, w), rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(B.column_mean(table, B.SLOG), naive.log_loss(y, p, w), rel_tol=1e-12, abs_tol=1e-15)
    ww = np.ones(n) if w is None else w
    assert math.isclose(B.column_mean(table, B.SP), np.average(p.astype(np.float64), weights=ww), rel_tol=4 * n * EPS)
