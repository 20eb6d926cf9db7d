"""Out-of-core fits (fastcal.outofcore): equal to the in-memory fits, within a memory limit.

Oracles: the in-memory estimators (``IsotonicRegression.fit``, ``PlattScaling.fit``),
SciPy's ``spearmanr``, naive references of the tie-group chain and of the
partition split written below, and the memory limit itself (a subprocess under
``RLIMIT_AS`` that cannot even load its inputs).
"""

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from fastcal import IsotonicRegression, PlattScaling
from fastcal._engine import partition as _partition
from fastcal import outofcore as oc
from fastcal.isotonic import rows as engine_isotonic

from .strategies import scores_and_labels

HYPO = settings(max_examples=60, deadline=None)
EPS = np.finfo(np.float64).eps


def label_fit_rtol(n, dtype):
    """Relative tolerance on fitted values of 0/1 labels, fitted whole and in pieces (other summation groupings).

    A fitted value is sum(w y) / sum(w) over at most n rows, terms of one sign: each sum is within (n - 1) eps
    of its exact value in any order (Higham), so two fits agree to 4 n eps. float32 models round the values
    to float32 at the end, where such a difference can still change the last bit (eps32).
    """
    return 4 * n * EPS + (float(np.finfo(np.float32).eps) if dtype == np.float32 else 0.0)


# ---------------------------------------------------------------------------
# Naive references.
# ---------------------------------------------------------------------------


def naive_chain_exit(sorted_x, eps, start):
    """Last tie-group start when groups are chained from ``start`` (a value of ``sorted_x``)."""
    cur = float(start)
    for v in sorted_x[sorted_x >= start].astype(np.float64):
        if v - cur >= eps:
            cur = float(v)
    return cur


def naive_split(x, bounds):
    b = np.searchsorted(bounds, x, side="right")
    return [np.flatnonzero(b == j) for j in range(len(bounds) + 1)]


def fit_chunked(x, y, w=None, *, part_rows=64, chunk_rows=97, **params):
    """The out-of-core isotonic fit with tiny chunks and partitions (many boundaries)."""
    src = oc.array_source(x, y, w, chunk_rows, "X")
    return oc.fit_isotonic_source(src, params, None, part_rows)


def assert_same_fit(got, ref, atol=1e-10, rtol=0.0):
    assert got.increasing_ == ref.increasing_
    assert_array_equal(got.X_thresholds_, ref.X_thresholds_)
    assert got.X_thresholds_.dtype == ref.X_thresholds_.dtype
    assert_allclose(got.y_thresholds_, ref.y_thresholds_, rtol=rtol, atol=atol)
    assert (got.X_min_, got.X_max_) == (ref.X_min_, ref.X_max_)


# ---------------------------------------------------------------------------
# Kernels.
# ---------------------------------------------------------------------------


@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float32, np.float64]), st.integers(1, 400))
@settings(max_examples=60, deadline=None)
def test_chain_exits_match_naive(seed, dtype, n):
    rng = np.random.default_rng(seed)
    eps = _partition.resolution(dtype)
    # Scores on a lattice finer than eps, with ties: long chains of close scores.
    step = eps * rng.choice([0.3, 0.5, 0.7, 1.0, 1.5])
    x = np.sort((1.0 + rng.integers(0, max(2, n // 2), n) * step).astype(dtype))
    starts = np.unique(x)[: 7]
    got = _partition.chain_exits(x, eps, starts)
    want = [naive_chain_exit(x, eps, s) for s in starts]
    assert_array_equal(got, want)


@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float32, np.float64]), st.integers(0, 300),
       st.integers(1, 6), st.booleans())
@settings(max_examples=80, deadline=None)
def test_heads_merge_from_pieces(seed, dtype, n, n_pieces, weighted):
    # The head of a partition summarised piece by piece (out of core) equals the head of the whole (Dask).
    rng = np.random.default_rng(seed)
    eps = _partition.resolution(dtype)
    x = (1.0 + rng.integers(0, max(2, n // 3), n) * eps * rng.choice([0.3, 0.7, 1.5])).astype(dtype)
    w = rng.choice([0.0, 0.5, 2.0], n) if weighted else None
    cuts = np.sort(rng.integers(0, n + 1, n_pieces - 1))
    pieces = [_partition.head_summary(xp, None if w is None else wp, eps)
              for xp, wp in zip(np.split(x, cuts), np.split(w if weighted else x, cuts))]
    got = _partition.merge_heads(pieces, eps)
    want = _partition.head_summary(x, w, eps)
    assert got[0] == want[0]
    if want[0]:
        assert got[1:3] == want[1:3]
        assert_array_equal(got[3], want[3])


@given(st.integers(0, 2**32 - 1), st.sampled_from([np.float32, np.float64]), st.sampled_from([0, 1, 2, 9, 33, 60]),
       st.booleans())
@settings(max_examples=60, deadline=None)
def test_split_by_bounds_matches_naive(seed, dtype, n_bounds, weighted):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 500))
    x = np.round(rng.random(n), 3).astype(dtype)  # ties with the boundaries
    y = rng.integers(0, 2, n).astype(np.uint8)
    w = rng.choice([0.0, 0.5, 2.0], n) if weighted else None
    bounds = np.unique(np.round(rng.random(n_bounds), 3)).astype(dtype)  # > 32: the binary search
    pieces = _partition.split_by_bounds(x, y, w, bounds)
    assert len(pieces) == bounds.shape[0] + 1
    for (px, py, pw), idx in zip(pieces, naive_split(x, bounds)):  # every row, weight zero too
        assert_array_equal(px, x[idx])  # stable: input order within a range
        assert_array_equal(py, y[idx])
        if w is not None:
            assert_array_equal(pw, w[idx])


@given(st.integers(0, 2**32 - 1), st.integers(2, 300), st.sampled_from([1, 3, 10, 1000]))
@settings(max_examples=60, deadline=None)
def test_spearman_from_range_partitions_equals_scipy(seed, n, n_distinct):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_distinct, n).astype(np.float64)
    y = (rng.random(n) < 0.5).astype(np.uint8)
    cuts = np.unique(rng.choice(x, 3))
    parts = [_partition.spearman_partial(x[m], y[m]) for m in
             [(x < cuts[0])] + [(x >= a) & (x < b) for a, b in zip(cuts[:-1], cuts[1:])] + [x >= cuts[-1]]]
    got = _partition.spearman_from_partials(parts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = scipy.stats.spearmanr(x, y)[0]
    if np.isnan(want):
        assert np.isnan(got)
    else:
        assert got == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------------
# Isotonic: equal to the in-memory fit.
# ---------------------------------------------------------------------------


@given(st.sampled_from([False, True, "zeros"]).flatmap(lambda wt: scores_and_labels(max_size=400, weighted=wt)),
       st.sampled_from([True, False, "auto"]), st.integers(1, 50), st.integers(1, 120))
@HYPO
def test_isotonic_equals_in_memory(data, increasing, part_rows, chunk_rows):
    x, y, w = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Spearman warning, when "auto" is uncertain
        ref = IsotonicRegression(increasing=increasing).fit(x, y, sample_weight=w)
        got = fit_chunked(x, y, w, part_rows=part_rows, chunk_rows=chunk_rows, increasing=increasing)
    assert_same_fit(got, ref, atol=1e-10 if x.dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("weights", [None, "zeros"])
@pytest.mark.parametrize("kind", ["dense_float32", "lattice_float64", "rounded"])
def test_isotonic_boundaries_inside_tie_chains(kind, weights, monkeypatch):
    # Scores closer than the dtype's resolution everywhere: every partition
    # boundary falls inside a chain of tie groups, which must be followed.
    rng = np.random.default_rng(7)
    n = 30_000
    if kind == "dense_float32":
        x = (rng.random(n) * 0.01).astype(np.float32)
    elif kind == "lattice_float64":
        x = 1.0 + rng.integers(0, 3000, n) * (0.4 * _partition.resolution(np.float64))
    else:
        x = np.round(rng.random(n), 3)
    y = (rng.random(n) < 0.5).astype(np.uint8)
    w = None
    if weights:
        w = rng.uniform(0, 2, n)
        w[rng.random(n) < 0.2] = 0
    calls = []
    original = engine_isotonic.partition_exits  # the isotonic driver's chain-following step
    monkeypatch.setattr(engine_isotonic, "partition_exits", lambda *a: calls.append(1) or original(*a))
    got = fit_chunked(x, y, w, part_rows=1000, chunk_rows=4096)
    ref = IsotonicRegression().fit(x, y, sample_weight=w)
    assert_same_fit(got, ref, atol=0, rtol=label_fit_rtol(n, x.dtype))
    if kind != "rounded":
        assert calls, "the tie-chain path was not exercised"
    else:
        assert not calls  # gaps of 1e-3 >> eps: every boundary is clean


def test_isotonic_from_npy_paths_memmap_and_arrays(tmp_path):
    rng = np.random.default_rng(0)
    n = 50_000
    x = rng.random(n).astype(np.float32)
    y = (rng.random(n) < x).astype(np.uint8)
    w = rng.uniform(0.5, 2, n)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "xcol.npy", x[:, None])
    ref = IsotonicRegression(out_of_bounds="clip").fit(x, y, sample_weight=w)
    kw = dict(memory_budget=1 << 20, out_of_bounds="clip")  # 16384-row partitions: several
    for xs, ys, ws in [
        (tmp_path / "x.npy", str(tmp_path / "y.npy"), tmp_path / "w.npy"),
        (np.load(tmp_path / "x.npy", mmap_mode="r"), np.load(tmp_path / "y.npy", mmap_mode="r"), w),
        (tmp_path / "xcol.npy", y, w),
        (x, y, w),
    ]:
        got = oc.fit_isotonic(xs, ys, ws, **kw)
        assert_same_fit(got, ref, atol=0, rtol=label_fit_rtol(n, x.dtype))
        assert got.out_of_bounds == "clip"
        assert_array_equal(got.predict(x[:1000]), ref.predict(x[:1000]))


def test_isotonic_from_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(1)
    n = 40_000
    x = rng.random(n)
    y = (rng.random(n) < x).astype(np.int64)
    w = rng.uniform(0, 2, n)
    pq.write_table(pa.table({"s": x, "label": y, "w": w}), tmp_path / "d.parquet", row_group_size=7000)
    got = oc.fit_isotonic_parquet(tmp_path / "d.parquet", "s", "label", "w", memory_budget=1 << 20,
                                  chunk_rows=3000, increasing="auto")
    ref = IsotonicRegression(increasing="auto").fit(x, y, sample_weight=w)
    assert_same_fit(got, ref)
    with pytest.raises(ValueError, match="no column 'nope'"):
        oc.fit_isotonic_parquet(tmp_path / "d.parquet", "nope", "label")
    t = pa.table({"s": pa.array([0.1, None, 0.3]), "label": [0, 1, 1]})
    pq.write_table(t, tmp_path / "null.parquet")
    with pytest.raises(ValueError, match="column 's', row 2: missing value"):
        oc.fit_isotonic_parquet(tmp_path / "null.parquet", "s", "label")


def test_isotonic_partition_files_are_removed(tmp_path):
    rng = np.random.default_rng(2)
    x = rng.random(20_000)
    y = (rng.random(20_000) < x).astype(np.uint8)
    work = tmp_path / "work"
    work.mkdir()
    src = oc.array_source(x, y, None, 1000, "X")
    oc.fit_isotonic_source(src, {}, str(work), 500)
    assert list(work.iterdir()) == []
    x_bad = x.copy()
    x_bad[15_000] = np.nan  # found in the first pass: nothing written
    with pytest.raises(ValueError, match="X must be finite"):
        oc.fit_isotonic_source(oc.array_source(x_bad, y, None, 1000, "X"), {}, str(work), 500)
    assert list(work.iterdir()) == []


def test_isotonic_errors():
    x = np.linspace(0, 1, 100)
    y = (x > 0.5).astype(float)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples: X has 100, y has 99"):
        oc.fit_isotonic(x, y[:99])
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        oc.fit_isotonic(x, y, -np.ones(100))
    with pytest.raises(ValueError, match="at least one non-zero number"):
        oc.fit_isotonic(x, y, np.zeros(100))
    with pytest.raises(ValueError, match="y must be finite"):
        oc.fit_isotonic(x, np.where(x > 0.9, np.inf, y))
    with pytest.raises(ValueError, match='increasing="auto" .* 0/1 labels only'):
        oc.fit_isotonic(x, y * 3, increasing="auto")
    with pytest.raises(ValueError, match="out_of_bounds must be 'nan', 'clip' or 'raise'"):
        oc.fit_isotonic(x, y, out_of_bounds="wrap")
    with pytest.raises(ValueError, match="memory_budget must be"):
        oc.fit_isotonic(x, y, memory_budget=1000)
    with pytest.raises(ValueError, match="at least 1 element"):
        oc.fit_isotonic(x[:0], y[:0])
    # Non-binary targets with an explicit direction are fine (isotonic regression).
    assert_same_fit(fit_chunked(x, np.sin(7 * x)), IsotonicRegression().fit(x, np.sin(7 * x)))


def test_truncated_npy_file(tmp_path):
    np.save(tmp_path / "x.npy", np.arange(1000.0))
    data = (tmp_path / "x.npy").read_bytes()
    (tmp_path / "short.npy").write_bytes(data[:-80])
    with pytest.raises(ValueError, match="truncated"):
        oc.fit_isotonic(tmp_path / "short.npy", np.zeros(1000))


def test_chunk_readers_stay_public(tmp_path):
    # They live in fastcal._io (tested in test_io.py), shared with the CLI; outofcore keeps them public.
    from fastcal import _io

    assert {"iter_npy", "iter_parquet"} <= set(oc.__all__)
    assert (oc.iter_npy, oc.iter_parquet, oc.npy_info) == (_io.iter_npy, _io.iter_parquet, _io.npy_info)
    rec = np.zeros(10, dtype=[("s", "f4"), ("y", "u1")])
    rec["s"] = np.arange(10)
    np.save(tmp_path / "r.npy", rec)
    assert oc.npy_info(tmp_path / "r.npy") == ((10,), rec.dtype, False)
    assert [c.tolist() for c in oc.iter_npy(tmp_path / "r.npy", 4, column="s")] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


# ---------------------------------------------------------------------------
# Platt: chunked passes, equal to the in-memory fit.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_platt_equals_in_memory(dtype, weighted, tmp_path):
    rng = np.random.default_rng(3)
    n = 400_000  # above the warm-start threshold
    s = rng.normal(0, 2, n).astype(dtype)
    y = (rng.random(n) < 1 / (1 + np.exp(-s / 2))).astype(np.uint8)
    w = rng.uniform(0, 2, n) if weighted else None
    np.save(tmp_path / "s.npy", s)
    ref = PlattScaling().fit(s, y, sample_weight=w)
    got = oc.fit_platt(tmp_path / "s.npy", y, w, chunk_rows=70_000)
    assert isinstance(got, PlattScaling) and got.converged_
    assert got.a_ == pytest.approx(ref.a_, rel=1e-8, abs=1e-8)
    assert got.b_ == pytest.approx(ref.b_, rel=1e-8, abs=1e-8)


def test_platt_small_and_degenerate():
    rng = np.random.default_rng(4)
    s = rng.normal(size=3000)
    y = (rng.random(3000) < 0.3).astype(int)
    for ys, ss in [(y, s), (np.zeros(3000, int), s), (y, np.full(3000, 0.5))]:
        ref = PlattScaling().fit(ss, ys)
        got = oc.fit_platt(ss, ys, chunk_rows=700)
        assert got.a_ == pytest.approx(ref.a_, abs=1e-8)
        assert got.b_ == pytest.approx(ref.b_, rel=1e-8, abs=1e-8)


def test_platt_errors():
    s = np.linspace(-1, 1, 100)
    with pytest.raises(ValueError, match="y must contain only the labels 0 and 1"):
        oc.fit_platt(s, np.arange(100) % 3, chunk_rows=30)
    with pytest.raises(ValueError, match="scores must be finite"):
        oc.fit_platt(np.where(s > 0.5, np.nan, s), s > 0, chunk_rows=30)
    with pytest.raises(ValueError, match="max_iter must be"):
        oc.fit_platt(s, s > 0, max_iter=0)
    with pytest.raises(ValueError, match="at least one non-zero number"):
        oc.fit_platt(s, s > 0, np.zeros(100))


def test_parquet_platt(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    rng = np.random.default_rng(5)
    s = rng.normal(size=30_000).astype(np.float32)
    y = rng.random(30_000) < 1 / (1 + np.exp(-s))
    pq.write_table(pa.table({"s": s, "y": y}), tmp_path / "d.parquet", row_group_size=4000)
    got = oc.fit_platt_parquet(tmp_path / "d.parquet", "s", "y", chunk_rows=5000)
    ref = PlattScaling().fit(s, y)
    assert (got.a_, got.b_) == pytest.approx((ref.a_, ref.b_), rel=1e-8, abs=1e-8)


# ---------------------------------------------------------------------------
# A fit whose inputs are larger than the memory the process may use.
# ---------------------------------------------------------------------------

_LIMITED = textwrap.dedent("""
    import gc, json, resource, sys
    import numpy as np
    import fastcal
    from fastcal import outofcore

    def vm_size():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024

    x_path, y_path, extra = sys.argv[1], sys.argv[2], int(sys.argv[3])
    # Load every compiled kernel and start Numba's threads first: they need
    # address space of their own, which is not the data's.
    rng = np.random.default_rng(0)
    x0 = rng.random(1 << 17)
    y0 = (rng.random(1 << 17) < x0).astype(np.uint8)
    fastcal.IsotonicRegression().fit(x0, y0)
    outofcore.fit_isotonic(x0, y0, memory_budget=2 << 20, chunk_rows=1 << 14)
    outofcore.fit_platt(x0, y0, chunk_rows=1 << 14)
    del x0, y0
    gc.collect()
    base = vm_size()
    resource.setrlimit(resource.RLIMIT_AS, (base + extra, resource.RLIM_INFINITY))
    try:
        np.load(x_path)  # the control: the scores alone do not fit
        control = "loaded"
    except MemoryError:
        control = "MemoryError"
    est = outofcore.fit_isotonic(x_path, y_path, memory_budget=2 << 20)
    platt = outofcore.fit_platt(x_path, y_path, memory_budget=2 << 20)
    print(json.dumps({"control": control, "base": base, "x": est.X_thresholds_.tolist(),
                      "y": est.y_thresholds_.tolist(), "a": platt.a_, "b": platt.b_}))
""")


def test_fit_larger_than_the_memory_limit(tmp_path):
    assert os.path.exists("/proc/self/status"), "this test measures the address space through /proc (Linux)"
    rng = np.random.default_rng(6)
    n = 2_000_000
    x = rng.random(n)
    y = (rng.random(n) < x ** 2).astype(np.uint8)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    data_bytes = x.nbytes + y.nbytes  # 18 MB
    extra = 12 << 20  # the process may grow by 12 MB of address space: 2/3 of its inputs
    assert extra < data_bytes
    script = tmp_path / "limited.py"
    script.write_text(_LIMITED)
    # One malloc arena: glibc otherwise reserves 64 MB of address space per thread arena.
    env = dict(os.environ, MALLOC_ARENA_MAX="1")
    out = subprocess.run([sys.executable, str(script), str(tmp_path / "x.npy"), str(tmp_path / "y.npy"),
                          str(extra)], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout)
    assert res["control"] == "MemoryError"  # the limit binds: the inputs cannot even be loaded
    ref = IsotonicRegression().fit(x, y)
    assert_array_equal(res["x"], ref.X_thresholds_)
    assert_allclose(res["y"], ref.y_thresholds_, rtol=label_fit_rtol(n, x.dtype), atol=0)
    ref = PlattScaling().fit(x, y)
    assert (res["a"], res["b"]) == pytest.approx((ref.a_, ref.b_), rel=1e-8, abs=1e-8)


def test_outofcore_is_importable_without_dask():
    out = subprocess.run([sys.executable, "-c", "import sys, fastcal, fastcal.outofcore, fastcal.cli; "
                          "print('dask' in sys.modules, 'pyarrow' in sys.modules)"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


# ---------------------------------------------------------------------------
# Parquet fits stay within the budget whatever the file's size (issue 11).
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_parquet(tmp_path_factory):
    """10^7 rows of float64 scores and uint8 labels (90 MB of columns), row groups of 2^18 rows; and 2^16 rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    d = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(11)
    for name, n in (("big.parquet", 10 ** 7), ("small.parquet", 1 << 16)):
        x = rng.random(n)
        y = (rng.random(n) < x).astype(np.uint8)
        pq.write_table(pa.table({"score": x, "label": y}), d / name, row_group_size=1 << 18)
    return d


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fit_isotonic_parquet", "fit_platt_parquet"])
def test_parquet_fit_memory_does_not_grow_with_the_file(big_parquet, tmp_path, kind):
    from .memory_limit import run_limited

    assert os.path.exists("/proc/self/status"), "this test measures memory through /proc (Linux)"
    budget = 16 << 20
    # Allowed: 5x the budget, beyond the process's own memory: the budgeted chunks and partitions, a decoded
    # row group (2.4 MB) with its pages. Reading through iter_batches grew by 120-150 MB here at 10^7 rows.
    extra = 5 * budget
    res = run_limited(kind, big_parquet / "big.parquet", big_parquet / "small.parquet", budget, extra,
                      tmp_path / "unused.json", tmp_path)
    assert res["control"] == "MemoryError"  # the limit binds: the score column alone does not fit
    assert res["growth"] < extra, res["growth"] / 1e6


def test_parquet_without_rows(tmp_path):
    # A Parquet file of zero rows: a ValueError, as for empty arrays (a TypeError or a Numba typing error before).
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"score": pa.array([], pa.float64()), "label": pa.array([], pa.int8())}),
                   tmp_path / "empty.parquet")
    for fit in (oc.fit_isotonic_parquet, oc.fit_platt_parquet):
        with pytest.raises(ValueError, match="no rows of data"):
            fit(tmp_path / "empty.parquet", "score", "label")
    src = oc.array_source(np.empty(3), np.empty(3), None, 16, "X")
    src.n = 0  # a source that says it is empty (the CLI's, from a header-only CSV file)
    with pytest.raises(ValueError, match="X must have at least 1 element"):
        oc.fit_isotonic_source(src, {}, None, 1 << 12)
    with pytest.raises(ValueError, match="scores must have at least 1 element"):
        oc.fit_platt_source(src, 100, None)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_histogram_equals_in_memory(strategy, weighted, tmp_path):
    """outofcore.fit_histogram (arrays, .npy paths, Parquet) and fastcal fit --memory-budget --method histogram: the
    in-memory edges exactly, the values to the rounding of the chunks' sums added in order."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import fastcal
    from fastcal import outofcore
    from fastcal.cli import main

    rng = np.random.default_rng(7)
    p = rng.beta(2, 3, 20_000)
    p[::97] = 0.25  # ties across chunk edges
    y = (rng.random(p.size) < p**1.3).astype(np.int8)
    w = rng.uniform(0.1, 3.0, p.size) if weighted else None
    ref = fastcal.HistogramBinning(n_bins=12, strategy=strategy).fit(p, y, sample_weight=w)
    np.save(tmp_path / "p.npy", p)
    np.save(tmp_path / "y.npy", y)
    table = {"p": p, "y": y} if w is None else {"p": p, "y": y, "w": w}
    pq.write_table(pa.table(table), tmp_path / "d.parquet", row_group_size=3000)
    fits = [outofcore.fit_histogram(p, y, w, n_bins=12, strategy=strategy, chunk_rows=1700),
            outofcore.fit_histogram(tmp_path / "p.npy", tmp_path / "y.npy", w, n_bins=12, strategy=strategy,
                                    chunk_rows=4096),
            outofcore.fit_histogram_parquet(tmp_path / "d.parquet", "p", "y", "w" if weighted else None, n_bins=12,
                                            strategy=strategy, chunk_rows=2500)]
    assert main(["fit", "-q", "--method", "histogram", "--n-bins", "12", "--strategy", strategy, "--score-col", "p",
                 "--label-col", "y", *(["--weight-col", "w"] if weighted else []), "--memory-budget", "1M",
                 "--batch-rows", "3000", str(tmp_path / "d.parquet"), "-o", str(tmp_path / "m.json")]) == 0
    fits.append(fastcal.load(tmp_path / "m.json"))
    for fit in fits:
        assert type(fit) is fastcal.HistogramBinning and fit.get_params() == ref.get_params()
        np.testing.assert_array_equal(fit.bin_edges_, ref.bin_edges_)
        # sums of at most 20_000 terms in another grouping: a few ulp
        np.testing.assert_allclose(fit.bin_values_, ref.bin_values_, rtol=1e-12, atol=0)
        np.testing.assert_allclose(fit.bin_weights_, ref.bin_weights_, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match=r"y_prob has values outside \[0, 1\]"):
        outofcore.fit_histogram(np.array([0.2, 1.2, 0.5]), np.array([0, 1, 1]), chunk_rows=2)
