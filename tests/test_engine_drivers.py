"""The engine's drivers (fastcal._engine.*) on ListRows, the reference adapter, against the in-memory functions.

Every driver runs over several cuts of the same rows into chunks (empty
chunks, one row, many small chunks) and must equal the in-memory function:
bit for bit where its module's exactness rule says so (isotonic thresholds,
integer counts, bin edges), elsewhere within a tolerance derived from float64
summation in another order (a few n eps relative) or the solver's tolerance
(Newton fits). Errors are the in-memory ones.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import BetaCalibration, IsotonicRegression, PlattScaling
from fastcal._engine import ListRows, bind_chunk
from fastcal.beta import rows as ebeta
from fastcal.isotonic import rows as eiso
from fastcal.platt import rows as eplatt

from .strategies import scores_and_labels

EPS = np.finfo(np.float64).eps


def _cuts(n, kind, rng):
    """Chunk bounds of n rows: one chunk, equal chunks, random cuts with empty and one-row chunks."""
    if kind == "one":
        return [0, n]
    if kind == "equal":
        return list(range(0, n, max(1, n // 7))) + [n]
    inner = rng.integers(0, n + 1, 9).tolist()
    return sorted([0, 0, *inner, min(1, n), n, n])  # empty chunks first and last, a one-row chunk


def _rows(cols, cuts, kind=ListRows):
    """ListRows (or ``kind``) of the columns cut at ``cuts`` (a column None stays None in every chunk)."""
    return kind([tuple(None if c is None else c[a:b] for c in cols) for a, b in zip(cuts[:-1], cuts[1:])])


class RawCut(ListRows):
    """ListRows with the engine's optional ``convert_later`` and ``describe``, as Spark has them: the drivers cut
    the raw rows (by the key as float64, NaN last) and convert them in every later pass.

    ``largest_shift`` adds to the largest value ``describe`` reports (a backend whose raw maximum is not the
    converted rows' one: the driver must notice)."""

    largest_shift = 0.0

    def __init__(self, chunks, prepare=()):
        super().__init__(chunks)
        self.prepare = prepare  # the conversions later: (fn, args) in turn

    def _chunk(self, c):
        for fn, args in self.prepare:
            c = fn(c, *args)
        return c

    def map(self, fn, *args):
        return [fn(self._chunk(c), *bind_chunk(args, i)) for i, c in enumerate(self.chunks)]

    def convert(self, fn, *args):
        pairs = self.map(fn, *args)
        return type(self)([p[0] for p in pairs]), [p[1] for p in pairs]

    def convert_later(self, fn, *args):
        return type(self)(self.chunks, (*self.prepare, (fn, args)))

    def describe(self, key, size, largest=None):
        n = sum(c[key].shape[0] for c in self.chunks)
        keys = np.concatenate([c[key] for c in self.chunks]) if self.chunks else np.empty(0)
        most = None
        if largest is not None and n:
            most = float(np.max(np.concatenate([c[largest] for c in self.chunks]))) + self.largest_shift
        return n, len(self.chunks), keys[::max(1, n // size)], most

    def partition(self, bounds, key=0):
        bounds = np.asarray(bounds, dtype=np.float64)
        pieces = [[] for _ in range(len(bounds) + 1)]
        for c in self.chunks:
            v = np.asarray(c[key], dtype=np.float64)
            j = np.where(np.isnan(v), len(bounds), np.searchsorted(bounds, v, side="right"))
            for part in range(len(bounds) + 1):
                rows = np.flatnonzero(j == part)
                pieces[part].append(tuple(None if col is None else col[rows] for col in c))
        out = [tuple(None if ps[0][i] is None else np.concatenate([p[i] for p in ps]) for i in range(len(ps[0])))
               for ps in pieces] if self.chunks else []
        return type(self)(out, self.prepare)


CUTS = ["one", "equal", "random"]


def _assert_same_isotonic(got, ref, y_rtol):
    assert type(got) is IsotonicRegression
    assert got.increasing_ == ref.increasing_
    assert_array_equal(got.X_thresholds_, ref.X_thresholds_)
    assert got.X_thresholds_.dtype == ref.X_thresholds_.dtype
    assert (got.X_min_, got.X_max_) == (ref.X_min_, ref.X_max_)
    # Block means: weighted sums of at most n rows added in another order.
    assert_allclose(got.y_thresholds_, ref.y_thresholds_, rtol=y_rtol, atol=y_rtol)
    assert got.get_params() == ref.get_params()


# ---------------------------------------------------------------------------
# Isotonic regression.
# ---------------------------------------------------------------------------


@given(st.sampled_from([False, True, "zeros"]).flatmap(lambda wt: scores_and_labels(max_size=300, weighted=wt)),
       st.sampled_from([True, False, "auto"]), st.integers(1, 12), st.sampled_from(CUTS), st.integers(0, 2**31),
       st.sampled_from([ListRows, RawCut]))
@settings(max_examples=200, deadline=None)
def test_fit_isotonic_equals_in_memory(data, increasing, n_partitions, cuts, seed, kind):
    x, y, w = data
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the Spearman warning of "auto", checked below
        ref = IsotonicRegression(increasing=increasing).fit(x, y, sample_weight=w)
        got = eiso.fit_isotonic(_rows((x, y, w), _cuts(x.shape[0], cuts, rng), kind), x_dtype=x.dtype,
                                weighted=w is not None, n_partitions=n_partitions, increasing=increasing)
    # float64 sums of <= 300 rows; y up to 1e3 for real targets (none here: 0/1 labels).
    _assert_same_isotonic(got, ref, 300 * EPS)  # float64 sums of at most 300 0/1 labels and weights


@pytest.mark.parametrize("step", [0.3, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", [ListRows, RawCut])
def test_fit_isotonic_tie_chains_across_every_bound(step, weighted, kind, monkeypatch):
    # float32 scores on a lattice finer than the resolution: every bound lies inside a chain of tie groups,
    # chains cross several bounds (n_partitions=40 over 400 lattice points).
    rng = np.random.default_rng(3)
    eps = float(np.float32(np.finfo(np.float32).resolution))
    n = 20_000
    x = (np.float32(0.25) + (rng.integers(0, 400, n) * step * eps)).astype(np.float32)
    y = (rng.random(n) < 0.5).astype(np.uint8)
    w = rng.uniform(0.5, 2.0, n) if weighted else None
    calls = []
    original = eiso.partition_exits
    monkeypatch.setattr(eiso, "partition_exits", lambda *a: calls.append(1) or original(*a))
    got = eiso.fit_isotonic(_rows((x, y, w), list(range(0, n + 1, 2000)), kind), x_dtype=np.float32,
                            weighted=weighted, n_partitions=40)
    assert calls  # the chains were followed
    _assert_same_isotonic(got, IsotonicRegression().fit(x, y, sample_weight=w), n * EPS)


def test_moved_bounds_follow_the_entries():
    # Partitions 0..4: 1 entered at 0.55, 2 wholly in the part before (None), 3 empty, 4 entered at its minimum.
    heads = [(3, 0.0, 0.4, None), (2, 0.5, 0.6, None), (1, 0.65, 0.65, None), (0, np.nan, np.nan, None),
             (4, 0.9, 1.0, None)]
    entries = {0: 0.0, 1: 0.55, 2: None, 4: 0.9}
    assert eiso.moved_bounds(heads, entries, np.float64).tolist() == [0.55, 0.9, 0.9, 0.9]
    assert eiso.moved_bounds(heads[:3], {0: 0.0, 1: 0.55, 2: None}, np.float64).tolist() == [0.55, np.inf]
    assert eiso.moved_bounds(heads[:1], {0: 0.0}, np.float64).shape == (0,)


def test_fit_isotonic_crafted_chain_over_three_bounds():
    # Groups start at 0, then each score is < eps above the one before: one chain through partitions
    # cut at every distinct score, so the whole data is one tie group ... but the in-memory fit's groups
    # start every >= eps. Bounds cut between every pair of distinct scores.
    eps = float(np.float32(np.finfo(np.float32).resolution))
    base = np.float32(0.5)
    vals = np.array([base + np.float32(k * 0.4 * eps) for k in range(12)], dtype=np.float32)
    x = np.repeat(vals, 5)
    y = np.tile(np.array([0, 1, 1, 0, 1], dtype=np.uint8), 12)
    ref = IsotonicRegression().fit(x, y)
    for n_partitions in (2, 5, 12, 60):
        got = eiso.fit_isotonic(_rows((x, y, None), [0, 7, 7, 30, 59, 60]), x_dtype=np.float32, weighted=False,
                                n_partitions=n_partitions)
        _assert_same_isotonic(got, ref, 100 * EPS)


def test_fit_isotonic_one_row_and_float32_weights():
    got = eiso.fit_isotonic(ListRows([(np.array([0.3], np.float32), np.array([1]), None), (np.empty(0, np.float32),
                                      np.empty(0, np.int64), None)]), x_dtype=np.float32, weighted=False)
    _assert_same_isotonic(got, IsotonicRegression().fit(np.array([0.3], np.float32), [1]), 0)
    rng = np.random.default_rng(0)
    x = rng.random(5000).astype(np.float32)
    y = (rng.random(5000) < x).astype(np.float64)
    w = rng.random(5000).astype(np.float32)
    got = eiso.fit_isotonic(_rows((x, y, w), [0, 1000, 1000, 4999, 5000]), x_dtype=np.float32, weighted=True,
                            n_partitions=3, centered=True)
    _assert_same_isotonic(got, IsotonicRegression(centered=True).fit(x, y, sample_weight=w), 5000 * EPS)


@pytest.mark.parametrize("kind", [ListRows, RawCut])
def test_fit_isotonic_errors(kind):
    x = np.linspace(0, 1, 100)
    y = (x > 0.5).astype(np.uint8)
    for where in (0, 70):  # a NaN score is cut into the last range raw: the first chunk's too
        bad = x.copy()
        bad[where] = np.nan
        with pytest.raises(ValueError, match="X must be finite, but contains NaN"):
            eiso.fit_isotonic(_rows((bad, y, None), [0, 50, 100], kind), x_dtype=np.float64, weighted=False)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        eiso.fit_isotonic(_rows((x, y, -np.ones(100)), [0, 50, 100], kind), x_dtype=np.float64, weighted=True)
    with pytest.raises(ValueError, match="at least one non-zero number"):
        eiso.fit_isotonic(_rows((x, y, np.zeros(100)), [0, 50, 100], kind), x_dtype=np.float64, weighted=True)
    with pytest.raises(ValueError, match='increasing="auto"'):
        eiso.fit_isotonic(_rows((x, y * 2, None), [0, 50, 100], kind), x_dtype=np.float64, weighted=False,
                          increasing="auto")
    with pytest.raises(ValueError, match="X must have at least 1 element"):
        eiso.fit_isotonic(kind([(x[:0], y[:0], None)]), x_dtype=np.float64, weighted=False)
    with pytest.raises(ValueError, match="y_min must not exceed y_max"):
        eiso.fit_isotonic(_rows((x, y, None), [0, 100]), x_dtype=np.float64, weighted=False, y_min=1, y_max=0)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples: X has 50, y has 49"):
        eiso.fit_isotonic(ListRows([(x[:50], y[:49], None)]), x_dtype=np.float64, weighted=False)


class _Recording(RawCut):
    """RawCut that records the arguments of every ``map`` (the drivers' per-partition calls)."""

    calls: list = []

    def map(self, fn, *args):
        self.calls.append(args)
        return super().map(fn, *args)


@pytest.mark.parametrize("shift", [0.0, 8.0, -3.0])
def test_fit_isotonic_cut_raw_refits_when_the_raw_largest_weight_misleads(shift, monkeypatch):
    # The raw cut's first visit fits with the exponent of the largest raw weight; if the converted rows' own
    # largest weight gives another (a backend's raw maximum off: never for valid weights), the fits are made again.
    rng = np.random.default_rng(4)
    x = rng.random(3000)
    y = (rng.random(3000) < x).astype(np.uint8)
    w = rng.uniform(0.5, 1.5, 3000) * 3.0
    assert 4 <= w.max() < 8
    monkeypatch.setattr(RawCut, "largest_shift", shift)
    monkeypatch.setattr(_Recording, "calls", [])
    got = eiso.fit_isotonic(_rows((x, y, w), [0, 1000, 3000], _Recording), x_dtype=np.float64, weighted=True,
                            n_partitions=4)
    _assert_same_isotonic(got, IsotonicRegression().fit(x, y, sample_weight=w), 3000 * EPS)
    # the first visit (eps, auto, sign, exponent, centered), then the fits again (sign, keep_zero, exponent, centered)
    first = _Recording.calls[0][3]
    assert first == int(np.frexp(w.max() + shift)[1]) - 1
    assert len(_Recording.calls) == (1 if shift == 0 else 2)
    assert (first if shift == 0 else _Recording.calls[1][2]) == 2  # the exponent of the largest weight, in [4, 8)


class _Counting(ListRows):
    """ListRows that counts what it holds and releases, for the drivers' clean-up."""

    live = 0

    def __init__(self, chunks):
        super().__init__(chunks)
        _Counting.live += 1
        self.released = False

    def convert(self, fn, *args):
        pairs = [fn(c, *args) for c in self.chunks]
        return _Counting([p[0] for p in pairs]), [p[1] for p in pairs]

    def partition(self, bounds, key=0):
        return _Counting(super().partition(bounds, key).chunks)

    def release(self):
        if not self.released:
            _Counting.live -= 1
        self.released = True
        super().release()


class _CountingRaw(RawCut):
    """RawCut that counts what it holds and releases (with :class:`_Counting`'s count; RawCut's new rows are of
    its own type)."""

    def __init__(self, chunks, prepare=()):
        super().__init__(chunks, prepare)
        _Counting.live += 1
        self.released = False

    def release(self):
        if not self.released:
            _Counting.live -= 1
        self.released = True
        super().release()


@pytest.mark.parametrize("fit", ["isotonic", "isotonic raw", "platt", "platt raw", "beta"])
def test_drivers_release_what_they_create(fit):
    rng = np.random.default_rng(1)
    x = rng.random(3000)
    y = (rng.random(3000) < x).astype(np.uint8)
    eps = float(np.finfo(np.float64).resolution)
    x[1500:] = 0.5 + eps * 0.3 * np.arange(1500)  # tie chains: the re-cut too
    _Counting.live = 0
    kind = _CountingRaw if fit.endswith(" raw") else _Counting
    rows = kind([(x[a:a + 500], y[a:a + 500], None) for a in range(0, 3000, 500)])
    kw = dict(x_dtype=np.float64, weighted=False)
    iso = lambda r: eiso.fit_isotonic(r, n_partitions=6, increasing="auto", **kw)  # noqa: E731
    fits = {"isotonic": iso, "isotonic raw": iso, "platt": lambda r: eplatt.fit_platt(r, **kw),
            "platt raw": lambda r: eplatt.fit_platt(r, **kw), "beta": lambda r: ebeta.fit_beta(r, **kw)}
    fits[fit](rows)
    assert _Counting.live == 1  # the caller's rows only
    # errors in the first pass, and (isotonic: labels not 0/1 with "auto") after it
    for bad in ([(np.full(3, np.nan), np.zeros(3), None)], [(x, y, None), (x[:3], np.full(3, 2.0), None)]):
        with pytest.raises(ValueError):
            fits[fit](kind(bad))
        assert _Counting.live == 2
        _Counting.live = 1


# ---------------------------------------------------------------------------
# Platt scaling and beta calibration.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("n", [50, 300, 70_000])
@pytest.mark.parametrize("kind", [ListRows, RawCut])
def test_fit_platt_and_beta_equal_in_memory(dtype, weighted, cuts, n, kind):
    # RawCut: rows converted in each pass (as Spark's), their sums from a map, nothing written back.
    rng = np.random.default_rng(n)
    p = rng.random(n).astype(dtype)
    y = (rng.random(n) < p).astype(np.uint8)
    if n > 1:
        y[:2] = (0, 1)
    w = rng.uniform(0.0, 3.0, n) if weighted else None
    if weighted:
        w[0] = 1.0
    s = (np.log(p) - np.log1p(-p)).astype(dtype)
    rows_s = _rows((s, y, w), _cuts(n, cuts, rng), kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tiny n: separated classes warn the same in both
        got = eplatt.fit_platt(rows_s, x_dtype=dtype, weighted=weighted)
        ref = PlattScaling().fit(s, y, sample_weight=w)
        got_b = ebeta.fit_beta(_rows((p, y, w), _cuts(n, cuts, rng), kind), x_dtype=dtype, weighted=weighted)
        ref_b = BetaCalibration().fit(p, y, sample_weight=w)
    # Newton to the solver's tolerance: parameters to 1e-8 relative (the in-memory tests' bound across backends).
    assert_allclose([got.a_, got.b_], [ref.a_, ref.b_], rtol=1e-8, atol=1e-8)
    assert got.converged_ == ref.converged_
    assert_allclose([got_b.a_, got_b.b_, got_b.c_], [ref_b.a_, ref_b.b_, ref_b.c_], rtol=1e-7, atol=1e-7)


def test_fit_platt_is_deterministic_for_given_chunks():
    rng = np.random.default_rng(5)
    s = rng.normal(size=50_000)
    y = (rng.random(50_000) < 1 / (1 + np.exp(-s))).astype(np.uint8)
    cuts = [0, 10_000, 10_000, 33_333, 50_000]
    a = eplatt.fit_platt(_rows((s, y, None), cuts), x_dtype=np.float64, weighted=False)
    b = eplatt.fit_platt(_rows((s, y, None), cuts), x_dtype=np.float64, weighted=False)
    assert (a.a_, a.b_) == (b.a_, b.b_)


@pytest.mark.parametrize("kind", [ListRows, RawCut])
def test_logistic_errors(kind):
    def rows(cols, cuts):
        return _rows(cols, cuts, kind)

    s = np.linspace(-2, 2, 100)
    y = (s > 0).astype(np.uint8)
    bad = s.copy()
    bad[60] = np.inf
    kw = dict(x_dtype=np.float64, weighted=False)
    with pytest.raises(ValueError, match="scores must be finite"):
        eplatt.fit_platt(rows((bad, y, None), [0, 50, 100]), **kw)
    with pytest.raises(ValueError, match="p must be finite|p must contain probabilities"):
        ebeta.fit_beta(rows((np.where(s > 1, np.nan, 0.5), y, None), [0, 50, 100]), **kw)
    with pytest.raises(ValueError, match="p must contain probabilities in"):
        ebeta.fit_beta(rows((s, y, None), [0, 50, 100]), **kw)
    with pytest.raises(ValueError, match="binary|labels"):
        eplatt.fit_platt(rows((s, y * 3, None), [0, 50, 100]), **kw)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        eplatt.fit_platt(rows((s, y, -np.ones(100)), [0, 50, 100]), x_dtype=np.float64, weighted=True)
    with pytest.raises(ValueError, match="at least one non-zero number"):
        eplatt.fit_platt(rows((s, y, np.zeros(100)), [0, 50, 100]), x_dtype=np.float64, weighted=True)
    with pytest.raises(ValueError, match="scores must have at least 1 element"):
        eplatt.fit_platt(kind([]), **kw)
    with pytest.raises(ValueError, match="max_iter"):
        eplatt.fit_platt(rows((s, y, None), [0, 100]), max_iter=0, **kw)
    # The same messages as in memory.
    for fit, est, x in ((eplatt.fit_platt, PlattScaling(), bad), (ebeta.fit_beta, BetaCalibration(), s)):
        with pytest.raises(ValueError) as mem:
            est.fit(x, y)
        with pytest.raises(ValueError) as eng:
            fit(rows((x, y, None), [0, 30, 100]), **kw)
        assert str(eng.value) == str(mem.value)
    assert fastcal  # the public package imports


# ---------------------------------------------------------------------------
# Binned diagnostics, smooth ECE, histogram binning, score decomposition.
# ---------------------------------------------------------------------------

from fastcal.metrics import report_rows as edec  # noqa: E402
from fastcal.metrics import rows as ebin  # noqa: E402

from .strategies import probabilities  # noqa: E402


def _metric_rows(y, p, w, cuts, kind=ListRows):
    return _rows((p, y, w), cuts, kind)


def _assert_close_sums(got, want, n):
    # Per-chunk float64 sums added in chunk order against one pass over the n rows: sums and ratios of sums of
    # positive terms agree to 4 n eps relative; terms built from them with cancellation (ECE, decomposition
    # terms, all <= 1) to 20 n eps absolute.
    for a, b in zip(got, want):
        assert_allclose(a, b, rtol=4 * n * EPS, atol=20 * n * EPS)


@given(probabilities(max_size=400, weighted="zeros"), st.booleans(), st.integers(1, 25),
       st.sampled_from(["uniform", "quantile"]), st.sampled_from(CUTS), st.integers(0, 2**31))
@settings(max_examples=80, deadline=None)
def test_binned_drivers_equal_in_memory(data, use_weights, n_bins, strategy, cuts, seed):
    y, p, w = data
    w = w if use_weights else None
    n = len(p)
    cut = _cuts(n, cuts, np.random.default_rng(seed))
    kw = dict(x_dtype=p.dtype, weighted=w is not None)
    got = ebin.calibration_curve(_metric_rows(y, p, w, cut), n_bins=n_bins, strategy=strategy, return_counts=True,
                                 **kw)
    want = fastcal.calibration_curve(y, p, n_bins=n_bins, strategy=strategy, sample_weight=w, return_counts=True)
    if w is None:  # the same bins (quantile edges exact): the same counts, bit for bit
        assert_array_equal(got[2], want[2])
    _assert_close_sums(got, want, n)
    for norm in ("l1", "l2", "max"):
        assert ebin.expected_calibration_error(_metric_rows(y, p, w, cut), n_bins=n_bins, strategy=strategy,
                                               norm=norm, **kw) == pytest.approx(
            fastcal.expected_calibration_error(y, p, n_bins=n_bins, strategy=strategy, norm=norm, sample_weight=w),
            abs=20 * n * EPS)
    _assert_close_sums(ebin.brier_decomposition(_metric_rows(y, p, w, cut), n_bins=n_bins, strategy=strategy,
                                                **kw).to_dict().values(),
                       fastcal.brier_decomposition(y, p, n_bins=n_bins, strategy=strategy,
                                                   sample_weight=w).to_dict().values(), n)
    _assert_close_sums([ebin.brier_score_loss(_metric_rows(y, p, w, cut), **kw),
                        ebin.log_loss(_metric_rows(y, p, w, cut), **kw),
                        ebin.log_loss(_metric_rows(y, p, w, cut), normalize=False, **kw)],
                       [fastcal.brier_score_loss(y, p, sample_weight=w), fastcal.log_loss(y, p, sample_weight=w),
                        fastcal.log_loss(y, p, sample_weight=w, normalize=False)], n)
    hist = ebin.fit_histogram(_metric_rows(y, p, w, cut), n_bins=n_bins, strategy=strategy, **kw)
    ref = fastcal.HistogramBinning(n_bins=n_bins, strategy=strategy).fit(p, y, sample_weight=w)
    assert_array_equal(hist.bin_edges_, ref.bin_edges_)
    assert_allclose(hist.bin_values_, ref.bin_values_, rtol=4 * n * EPS, atol=4 * n * EPS)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("cuts", CUTS)
def test_smooth_ece_and_decomposition_equal_in_memory(weighted, cuts):
    rng = np.random.default_rng(9)
    n = 20_000
    p = np.round(rng.beta(2, 3, n), 3)  # ties, across chunk and partition bounds
    y = np.where(rng.random(n) < p ** 1.3, 1, -1)  # {-1, 1} labels, as in memory
    w = rng.uniform(0, 2, n) if weighted else None
    cut = _cuts(n, cuts, rng)
    kw = dict(x_dtype=p.dtype, weighted=weighted)
    got = ebin.smooth_ece(_metric_rows(y, p, w, cut), **kw)
    want = fastcal.smooth_ece(y, p, sample_weight=w)
    # Grid sums in another order (4 n eps relative); both fixed points are roots to 1e-10 of two functions that close.
    assert got.ece == pytest.approx(want.ece, rel=4 * n * EPS, abs=1e-9)
    assert got.bandwidth == pytest.approx(want.bandwidth, abs=1e-9)
    fixed = ebin.smooth_ece(_metric_rows(y, p, w, cut), bandwidth=0.05, **kw)
    assert fixed.ece == pytest.approx(fastcal.smooth_ece(y, p, sample_weight=w, bandwidth=0.05).ece, rel=4 * n * EPS)
    for scoring in ("brier", "log_loss"):
        got = edec.score_decomposition(_metric_rows(y, p, w, cut), scoring=scoring, **kw)
        want = fastcal.score_decomposition((y > 0).astype(np.uint8), p, scoring=scoring, sample_weight=w)
        _assert_close_sums(list(got.to_dict().values())[:4], list(want.to_dict().values())[:4], n)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", [ListRows, RawCut])
@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_corp_band_equals_in_memory(weighted, kind, cuts, dtype, monkeypatch):
    """The consistency band from range partitions: each range draws the numbers of its rows' places in the whole.

    Scores on lattices finer than the tie resolution (tie chains across partition bounds, which must be
    followed; in float32 the one near 1e-12, grouped by its float64 values as in memory), ties of equal scores
    with other weights, rows of weight zero, 40 partitions. Without weights the resamples' block sums are
    counts: the in-memory band bit for bit. With weights, block sums of at most n rows added in another order.
    """
    rng = np.random.default_rng(17)
    n = 6000
    r, k = rng.random(n), rng.integers(0, 300, n) * 0.7e-15
    p = np.where(r < 0.4, np.round(rng.random(n), 2), np.where(r < 0.7, 0.5 + k, 1e-12 + k)).astype(dtype)
    y = (rng.random(n) < p).astype(np.uint8)
    w = rng.choice([0.0, 0.5, 1.0, 3.0], n) if weighted else None
    monkeypatch.setattr(ListRows, "parallelism", 40)
    calls = []
    original = eiso.partition_exits
    monkeypatch.setattr(eiso, "partition_exits", lambda *a: calls.append(1) or original(*a))
    got = edec.corp_reliability(_metric_rows(y, p, w, _cuts(n, cuts, rng), kind), x_dtype=p.dtype,
                                weighted=weighted, n_resamples=25, level=0.8, random_state=11)
    want = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=25, level=0.8, random_state=11)
    assert bool(calls) == (cuts != "one")  # the chains were followed (one chunk: one partition)
    assert_array_equal(got.x, want.x)
    assert (got.level, got.band, got.n_resamples) == (0.8, "consistency", 25)
    for a, b in ((got.y, want.y), (got.lower, want.lower), (got.upper, want.upper)):
        if weighted:
            assert_allclose(a, b, rtol=4 * n * EPS, atol=0)
        else:
            assert_array_equal(a, b)
    with pytest.raises(ValueError, match="band='confidence'.*use band='consistency'"):
        edec.corp_reliability(_metric_rows(y, p, w, [0, n], kind), x_dtype=p.dtype, weighted=weighted,
                              n_resamples=2, band="confidence")
    with pytest.raises(ValueError, match="level"):
        edec.corp_reliability(_metric_rows(y, p, w, [0, n], kind), x_dtype=p.dtype, weighted=weighted,
                              n_resamples=2, level=1.5)


def test_losses_of_class_matrices():
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 100)
    y = rng.integers(0, 3, 100)
    w = rng.random(100)
    for f, ref in ((ebin.log_loss, fastcal.log_loss), (ebin.brier_score_loss, fastcal.brier_score_loss)):
        for weights in (None, w):
            got = f(_rows((P, y, weights), [0, 0, 30, 31, 100]), x_dtype=np.float64, weighted=weights is not None,
                    n_classes=3)
            assert got == pytest.approx(ref(y, P, sample_weight=weights), rel=100 * EPS)  # 100 terms, other order


def test_metrics_errors():
    # fastcal.dask's messages (tests/test_dask.py), the in-memory ones where the check is the same.
    p = np.linspace(0, 1, 100)
    y = (p > 0.5).astype(np.uint8)
    kw = dict(x_dtype=np.float64, weighted=False)
    cases = [((p * 2, y, None), "outside \\[0, 1\\]"), ((np.where(p > 0.9, np.nan, p), y, None), "y_prob"),
             ((p, y, -np.ones(100)), "sample_weight must be non-negative"),
             ((p, y, np.zeros(100)), "at least one non-zero number"), ((p, np.where(np.arange(100) % 2, 2, 5), None), "pos_label is not specified")]
    for cols, match in cases:
        weighted = cols[2] is not None
        with pytest.raises(ValueError, match=match) as eng:
            ebin.brier_score_loss(_rows(cols, [0, 50, 50, 100]), x_dtype=np.float64, weighted=weighted)
        if not weighted:  # the same check fails (the chunked message reports the failing chunk's range)
            with pytest.raises(ValueError) as mem:
                fastcal.brier_score_loss(cols[1], cols[0], sample_weight=cols[2])
            assert str(eng.value).split(" (")[0] == str(mem.value).split(" (")[0].replace("y_proba", "y_prob")
    # {-1, 0} over all rows is ambiguous even if every chunk alone is not.
    y2 = np.where(np.arange(100) < 50, -1, 0)
    with pytest.raises(ValueError, match="pos_label is not specified"):
        ebin.brier_score_loss(_rows((p, y2, None), [0, 50, 100]), **kw)
    with pytest.raises(ValueError, match="y_prob must have at least 1 element"):
        ebin.log_loss(ListRows([(p[:0], y[:0], None)]), **kw)
    with pytest.raises(fastcal.InvalidParameterError, match="bandwidth"):
        ebin.smooth_ece(_rows((p, y, None), [0, 100]), bandwidth=-1, **kw)


# ---------------------------------------------------------------------------
# The adapters stay adapters.
# ---------------------------------------------------------------------------

ENGINE_INTERNALS = {"_partition", "_binning", "_matrices", "_pav", "_newton", "_auc", "_sort", "_labels", "_validation"}


@pytest.mark.parametrize("module", ["fastcal.dask", "fastcal.outofcore", "fastcal.spark"])
def test_adapters_import_no_engine_internals(module):
    """What pyproject's import-linter contract says, also for an adapter the contract cannot list yet (it must
    exist there): imports of fastcal's modules are fastcal._engine's, the subjects' drivers (``rows``) and public
    modules, never the shared internals or kernels, even inside functions."""
    import ast
    import importlib.util
    import pathlib

    spec = importlib.util.find_spec(module)
    if spec is None:
        assert module == "fastcal.spark"  # the only adapter still being written
        return
    package = spec.submodule_search_locations is not None  # fastcal.dask: every module of the package
    paths = sorted(pathlib.Path(spec.origin).parent.glob("*.py")) if package else [pathlib.Path(spec.origin)]
    top = 2 if package else 1  # the level of a relative import from fastcal's own modules
    nodes = [node for path in paths for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))]
    found = set()
    for node in nodes:  # the dotted names below fastcal that each import names (fastcal.isotonic._pav: isotonic, _pav)
        if isinstance(node, ast.ImportFrom) and node.level == top:
            found |= {f"{node.module}.{a.name}" if node.module else a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("fastcal."):
            found |= {f"{node.module[len('fastcal.'):]}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name[len("fastcal."):] for a in node.names if a.name.startswith("fastcal.")}
    parts = {part for name in found for part in name.split(".")}
    bad = {m for m in parts if m in ENGINE_INTERNALS or m.endswith("_kernels")}
    assert not bad, f"{module} imports engine internals {sorted(bad)}: call a subject's driver (its package's rows)"
    assert "rows" in parts  # it drives the subjects' drivers


# ---------------------------------------------------------------------------
# ROC AUC.
# ---------------------------------------------------------------------------


@given(st.sampled_from([False, True, "zeros"]).flatmap(lambda wt: scores_and_labels(min_size=2, max_size=300,
                                                                                    weighted=wt)),
       st.integers(1, 12), st.sampled_from(CUTS), st.integers(0, 2**31), st.sampled_from([ListRows, RawCut]))
@settings(max_examples=150, deadline=None)
def test_roc_auc_equals_in_memory(data, n_partitions, cuts, seed, kind):
    # RawCut: the bounds from the backend's describe (as Spark), not a pass of fastcal's over the chunks.
    x, y, w = data
    rng = np.random.default_rng(seed)
    y = y.astype(np.int64)
    y[0], y[-1] = 0, 1  # both classes
    if w is not None:
        w[0] = w[-1] = 1.0
    got = edec.roc_auc_score(_rows((x, y, w), _cuts(x.shape[0], cuts, rng), kind), x_dtype=x.dtype,
                             weighted=w is not None, n_partitions=n_partitions)
    want = fastcal.roc_auc_score(y, x, sample_weight=w)
    if w is None:
        assert got == want  # integer counts, the same division: bit for bit
    else:  # float64 sums of <= n products of weights, in another order
        assert got == pytest.approx(want, rel=8 * x.shape[0] * EPS, abs=8 * x.shape[0] * EPS)


def test_roc_auc_labels_and_errors():
    rng = np.random.default_rng(0)
    x = np.round(rng.random(1000), 2)  # heavy ties across partition bounds
    y = np.where(rng.random(1000) < x, 7, 3)  # the greater label is positive, as in memory
    rows = _rows((x, y, None), [0, 400, 400, 999, 1000])
    assert edec.roc_auc_score(rows, x_dtype=np.float64, weighted=False, n_partitions=9) == \
        fastcal.roc_auc_score(y, x)
    assert edec.roc_auc_score(_rows((x, y, None), [0, 1000]), x_dtype=np.float64, weighted=False, pos_label=3) == \
        fastcal.roc_auc_score(y, x, pos_label=3)
    kw = dict(x_dtype=np.float64, weighted=False)
    with pytest.raises(ValueError, match="Only one class present in y_true"):
        edec.roc_auc_score(_rows((x, np.ones(1000), None), [0, 500, 1000]), **kw)
    with pytest.raises(ValueError, match="Only one class present in y_true \\(with positive weight\\)"):
        edec.roc_auc_score(_rows((x, (x > 0.5).astype(int), (x > 0.5) * 1.0), [0, 500, 1000]), x_dtype=np.float64,
                           weighted=True)
    bad = x.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="y_score must be finite"):
        edec.roc_auc_score(_rows((bad, y, None), [0, 500, 1000]), **kw)
    with pytest.raises(ValueError, match="multiclass ROC AUC"):
        edec.roc_auc_score(_rows((x, np.arange(1000) % 3, None), [0, 500, 1000]), **kw)
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        edec.roc_auc_score(_rows((x, y, -np.ones(1000)), [0, 1000]), x_dtype=np.float64, weighted=True)


# ---------------------------------------------------------------------------
# Calibration report.
# ---------------------------------------------------------------------------


def _assert_same_report(got, want, n):
    g, w = got.to_dict(), want.to_dict()
    assert g.keys() == w.keys()
    for key in g:
        a, b = g[key], w[key]
        if key in ("n", "n_bins", "strategy", "slope_converged"):
            assert a == b, key
        elif key in ("slope", "intercept", "calibration_in_the_large", "slope_se", "intercept_se", "slope_ci",
                     "intercept_ci"):
            # Newton to the solver's tolerance (1e-10 on the decrement): parameters and their errors to 1e-7.
            assert_allclose(a, b, rtol=1e-7, atol=1e-7, err_msg=key)
        else:  # sums in another order: 4 n eps relative, 20 n eps absolute for terms with cancellation
            assert_allclose(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), rtol=4 * n * EPS,
                            atol=20 * n * EPS, err_msg=key)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("cuts", CUTS)
@pytest.mark.parametrize("kind", [ListRows, RawCut])
def test_calibration_report_equals_in_memory(weighted, strategy, cuts, kind):
    rng = np.random.default_rng(11)
    n = 30_000
    p = np.round(rng.beta(2, 3, n), 3)  # ties
    y = (rng.random(n) < p ** 1.2).astype(np.uint8)
    w = rng.uniform(0, 2, n) if weighted else None
    got = edec.calibration_report(_metric_rows(y, p, w, _cuts(n, cuts, rng), kind), x_dtype=p.dtype,
                                  weighted=weighted, n_bins=7, strategy=strategy)
    want = fastcal.calibration_report(y, p, sample_weight=w, n_bins=7, strategy=strategy)
    _assert_same_report(got, want, n)
    if not weighted:
        assert got.auc == want.auc  # integer counts: bit for bit
        assert_array_equal(got.bin_edges, want.bin_edges)


class _MapNames(ListRows):
    """ListRows that records the name of every function it maps (its converted rows of its own type)."""

    names: list = []

    def map(self, fn, *args):
        self.names.append(fn.__name__)
        return super().map(fn, *args)

    def convert(self, fn, *args):
        self.names.append(fn.__name__)
        pairs = [fn(c, *args) for c in self.chunks]
        return _MapNames([p[0] for p in pairs]), [p[1] for p in pairs]


class _RawMapNames(RawCut):
    """RawCut (rows converted later, as Spark's) that records the name of every function it maps, in
    :attr:`_MapNames.names`."""

    def map(self, fn, *args):
        _MapNames.names.append(fn.__name__)
        return super().map(fn, *args)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("kind", [_MapNames, _RawMapNames])
def test_calibration_report_takes_the_slope_subsample_in_the_conversion(weighted, kind, monkeypatch):
    # Above the warm-start threshold the slope's Newton fits start from a subsample of the logits, taken in the
    # pass that converts them (no pass of its own); the slope's fit and the calibration in the large share their
    # passes (and the slope's Hessian at its optimum rides on one of them): at most four, none alone. The report
    # equals the in-memory one. Rows converted later (Spark's) make the logits in each pass and their facts and
    # subsample in the bin table's pass: no conversion of their own.
    rng = np.random.default_rng(12)
    n = 300_000  # above platt.WARM_START_MIN (2^18)
    p = rng.beta(2, 3, n)
    y = (rng.random(n) < p ** 1.2).astype(np.uint8)
    w = rng.uniform(0, 2, n) if weighted else None
    monkeypatch.setattr(_MapNames, "names", [])
    cuts = list(range(0, n, 30_000)) + [n]
    got = edec.calibration_report(kind([(p[a:b], y[a:b], None if w is None else w[a:b])
                                        for a, b in zip(cuts[:-1], cuts[1:])]),
                                  x_dtype=p.dtype, weighted=weighted)
    assert "_subsample" not in _MapNames.names
    if kind is _MapNames:
        assert "_logits" in _MapNames.names
    else:
        assert "_logits" not in _MapNames.names and "_table_and" in _MapNames.names
    assert "_pass" not in _MapNames.names and 2 <= _MapNames.names.count("_passes") <= 4
    _assert_same_report(got, fastcal.calibration_report(y, p, sample_weight=w), n)


def test_calibration_report_degenerate_data_warns_as_in_memory():
    p = np.linspace(0.01, 0.99, 200).astype(np.float32)
    for y in ((p > 0.5).astype(np.uint8), np.ones(200, dtype=np.uint8)):  # separated; one class
        with pytest.warns(UserWarning, match="calibration_report: ") as eng:
            got = edec.calibration_report(_metric_rows(y, p, None, [0, 50, 50, 200]), x_dtype=np.float32,
                                          weighted=False)
        with pytest.warns(UserWarning, match="calibration_report: ") as mem:
            want = fastcal.calibration_report(y, p)
        assert [str(r.message) for r in eng] == [str(r.message) for r in mem]
        assert eng[0].filename == __file__
        _assert_same_report(got, want, 200)


class _NoCount(ListRows):
    """ListRows that does not know its number of rows (as a Dask dataframe of unknown partition lengths)."""

    n_rows = None

    def convert(self, fn, *args):
        pairs = [fn(c, *args) for c in self.chunks]
        return _NoCount([p[0] for p in pairs]), [p[1] for p in pairs]


def test_n_rows_hint_never_changes_a_result():
    rng = np.random.default_rng(4)
    n = 200_000  # above the warm-start threshold: the subsample is used
    s = rng.normal(size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-2 * s))).astype(np.uint8)
    w = rng.uniform(0, 3, n)
    chunks = [(s[a:a + 30_000], y[a:a + 30_000], w[a:a + 30_000]) for a in range(0, n, 30_000)]
    assert ListRows(chunks).n_rows == n and ListRows([]).n_rows == 0
    kw = dict(x_dtype=np.float64, weighted=True)
    with_hint, without = eplatt.fit_platt(ListRows(chunks), **kw), eplatt.fit_platt(_NoCount(chunks), **kw)
    assert (with_hint.a_, with_hint.b_, with_hint.n_iter_) == (without.a_, without.b_, without.n_iter_)
    p = 1 / (1 + np.exp(-s))
    chunks = [(p[a:a + 30_000], y[a:a + 30_000], w[a:a + 30_000]) for a in range(0, n, 30_000)]
    with_hint, without = ebeta.fit_beta(ListRows(chunks), **kw), ebeta.fit_beta(_NoCount(chunks), **kw)
    assert (with_hint.a_, with_hint.b_, with_hint.c_) == (without.a_, without.b_, without.c_)
