"""fastcal.dask: fits, predictions and diagnostics on a real distributed.LocalCluster.

Every result is compared with the single-machine API on the same (computed)
arrays: isotonic thresholds and diagnostics to the rounding of their sums in
another grouping (a few n eps), Platt's a and b to 1e-8. The cluster has two
worker processes (so data really travels between processes); a hypothesis
test drives the partition-and-merge logic through many tiny partitions on the
synchronous scheduler, where it is fast.
"""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import dask  # noqa: E402 - the dask extra is a test dependency: a missing one fails, never skips
import dask.array as da  # noqa: E402
import dask.dataframe as dd  # noqa: E402
import distributed  # noqa: E402
import pandas as pd  # noqa: E402

import fastcal  # noqa: E402
import fastcal.dask as fd  # noqa: E402
from fastcal import IsotonicRegression, PlattScaling  # noqa: E402
from fastcal.isotonic import rows as engine_isotonic  # noqa: E402

from .strategies import probabilities, scores_and_labels  # noqa: E402

EPS = np.finfo(np.float64).eps


# Once per `make test`, not again on one thread: Dask's tasks run the in-memory kernels, which the other tests run
# on one thread; Dask adds its own threads.
pytestmark = pytest.mark.slow


def _chunked(*arrays, chunks):
    return [None if a is None else da.from_array(a, chunks=chunks) for a in arrays]


def assert_same_fit(got, ref, atol=1e-10, rtol=0.0):
    assert type(got) is IsotonicRegression
    assert got.increasing_ == ref.increasing_
    assert_array_equal(got.X_thresholds_, ref.X_thresholds_)
    assert got.X_thresholds_.dtype == ref.X_thresholds_.dtype
    assert_allclose(got.y_thresholds_, ref.y_thresholds_, rtol=rtol, atol=atol)
    assert (got.X_min_, got.X_max_) == (ref.X_min_, ref.X_max_)
    assert got.get_params() == ref.get_params()


# ---------------------------------------------------------------------------
# Isotonic regression on the cluster.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "weights", "increasing"), [
    (np.float64, None, True),
    (np.float64, "zeros", "auto"),
    (np.float32, None, "auto"),
    (np.float32, "zeros", True),
    (np.float64, "zeros", False),
])
def test_fit_isotonic_equals_in_memory(dask_client, dtype, weights, increasing):
    rng = np.random.default_rng(0)
    n = 60_000
    x = rng.random(n).astype(dtype)
    if dtype == np.float32:
        x *= np.float32(0.02)  # denser than float32's resolution: boundaries inside tie chains
    y = (rng.random(n) < 0.3 + 10 * x.astype(np.float64)).astype(np.uint8)
    w = None
    if weights:
        w = rng.uniform(0, 2, n)
        w[rng.random(n) < 0.1] = 0
    X, Y, W = _chunked(x, y, w, chunks=9_000)
    with distributed.get_task_stream(dask_client) as ts:
        got = fd.fit_isotonic(X, Y, W, increasing=increasing, out_of_bounds="clip", n_partitions=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = IsotonicRegression(increasing=increasing, out_of_bounds="clip").fit(x, y, sample_weight=w)
    # Fitted values: weighted means of 0/1 labels over <= n rows (terms of one sign), summed in other
    # groupings: 4 n eps apart. float32 models round them to float32, which can still differ by one ulp.
    assert_same_fit(got, ref, atol=0, rtol=4 * n * EPS + (np.finfo(np.float32).eps if dtype == np.float32 else 0))
    assert {t["worker"] for t in ts.data} == set(dask_client.scheduler_info()["workers"])  # both processes worked


def test_fit_isotonic_dataframe_columns(dask_client):
    rng = np.random.default_rng(1)
    n = 30_000
    df = pd.DataFrame({"score": np.round(rng.random(n), 3), "label": rng.integers(0, 2, n),
                       "w": rng.uniform(0.5, 2, n)})
    ddf = dd.from_pandas(df, npartitions=4)
    got = fd.fit_isotonic(ddf["score"], ddf["label"], ddf["w"], y_min=0.1)
    ref = IsotonicRegression(y_min=0.1).fit(df["score"], df["label"], sample_weight=df["w"])
    assert_same_fit(got, ref)
    # A Series with a dask array, and NumPy weights.
    got = fd.fit_isotonic(ddf["score"], da.from_array(df["label"].to_numpy(), chunks=5000), df["w"].to_numpy())
    assert_same_fit(got, IsotonicRegression().fit(df["score"], df["label"], sample_weight=df["w"]))


def test_fit_isotonic_spearman_warning_and_direction(dask_client):
    rng = np.random.default_rng(2)
    x = rng.random(2000)
    y = (rng.random(2000) < 0.5).astype(np.uint8)  # no relation: the CI of rho spans zero
    X, Y = _chunked(x, y, chunks=500)
    with pytest.warns(UserWarning, match="Confidence interval of the Spearman"):
        got = fd.fit_isotonic(X, Y, increasing="auto")
    with pytest.warns(UserWarning, match="Confidence interval of the Spearman"):
        ref = IsotonicRegression(increasing="auto").fit(x, y)
    assert_same_fit(got, ref)
    y_dec = (rng.random(2000) < 1 - x).astype(np.uint8)
    got = fd.fit_isotonic(X, da.from_array(y_dec, chunks=500), increasing="auto")
    assert got.increasing_ is False
    assert_same_fit(got, IsotonicRegression(increasing="auto").fit(x, y_dec))


def test_fit_isotonic_errors(dask_client):
    x = np.linspace(0, 1, 1000)
    y = (x > 0.5).astype(np.uint8)
    X, Y = _chunked(x, y, chunks=300)
    x_nan = x.copy()
    x_nan[700] = np.nan
    with pytest.raises(ValueError, match="X must be finite, but contains NaN"):
        fd.fit_isotonic(da.from_array(x_nan, chunks=300), Y)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples: X has 1000, y has 999"):
        fd.fit_isotonic(X, Y[:999])
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        fd.fit_isotonic(X, Y, da.from_array(-np.ones(1000), chunks=300))
    with pytest.raises(ValueError, match="at least one non-zero number"):
        fd.fit_isotonic(X, Y, np.zeros(1000))
    with pytest.raises(ValueError, match='increasing="auto"'):
        fd.fit_isotonic(X, Y * 2, increasing="auto")
    with pytest.raises(ValueError, match="y_min must not exceed y_max"):
        fd.fit_isotonic(X, Y, y_min=1, y_max=0)
    with pytest.raises(ValueError, match="X must be a 1-D array"):
        fd.fit_isotonic(da.ones((10, 2), chunks=5), Y[:10])


@given(st.sampled_from([False, True, "zeros"]).flatmap(lambda wt: scores_and_labels(max_size=300, weighted=wt)),
       st.sampled_from([True, False, "auto"]), st.integers(1, 12), st.integers(1, 80))
@settings(max_examples=50, deadline=None)
def test_fit_isotonic_many_partitions_sync(data, increasing, n_partitions, chunk):
    # The partition/merge logic over many tiny partitions and chunks, ties and weights.
    x, y, w = data
    with dask.config.set(scheduler="sync"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = IsotonicRegression(increasing=increasing).fit(x, y, sample_weight=w)
        X, Y, W = _chunked(x, y, w, chunks=chunk)
        got = fd.fit_isotonic(X, Y, W, increasing=increasing, n_partitions=n_partitions)
    assert_same_fit(got, ref, atol=1e-10 if x.dtype == np.float64 else 1e-6)


@pytest.mark.parametrize("step", [0.3, 0.5, 0.9])
def test_fit_isotonic_tie_chains_across_every_boundary_sync(step, monkeypatch):
    # Scores on a lattice finer than the resolution: every boundary lies in a chain.
    rng = np.random.default_rng(3)
    eps = float(np.float32(np.finfo(np.float32).resolution))
    x = (np.float32(0.25) + (rng.integers(0, 400, 20_000) * step * eps)).astype(np.float32)
    y = (rng.random(20_000) < 0.5).astype(np.uint8)
    calls = []
    original = engine_isotonic.partition_exits  # the isotonic driver's chain-following step
    monkeypatch.setattr(engine_isotonic, "partition_exits", lambda *a: calls.append(1) or original(*a))
    with dask.config.set(scheduler="sync"):
        got = fd.fit_isotonic(*_chunked(x, y, chunks=2000), n_partitions=10)
    assert calls
    assert_same_fit(got, IsotonicRegression().fit(x, y))


# ---------------------------------------------------------------------------
# Platt scaling on the cluster.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_platt_equals_in_memory(dask_client, dtype, weighted):
    rng = np.random.default_rng(4)
    n = 300_000  # above the warm-start threshold: a subsample starts the iterations
    s = rng.normal(0, 2, n).astype(dtype)
    y = (rng.random(n) < 1 / (1 + np.exp(-s / 2 + 0.3))).astype(np.uint8)
    w = rng.uniform(0, 2, n) if weighted else None
    S, Y, W = _chunked(s, y, w, chunks=60_000)
    got = fd.fit_platt(S, Y, W)
    ref = PlattScaling().fit(s, y, sample_weight=w)
    assert type(got) is PlattScaling and got.converged_
    assert got.a_ == pytest.approx(ref.a_, rel=1e-8, abs=1e-8)
    assert got.b_ == pytest.approx(ref.b_, rel=1e-8, abs=1e-8)


def test_fit_platt_small_degenerate_and_errors(dask_client):
    rng = np.random.default_rng(5)
    s = rng.normal(size=5000)
    y = (rng.random(5000) < 0.2).astype(np.uint8)
    for ss, yy in [(s, y), (s, np.ones(5000, np.uint8)), (np.full(5000, 2.0), y)]:
        got = fd.fit_platt(*_chunked(ss, yy, chunks=1200))
        ref = PlattScaling().fit(ss, yy)
        assert (got.a_, got.b_) == pytest.approx((ref.a_, ref.b_), rel=1e-8, abs=1e-8)
    with pytest.raises(ValueError, match="y must contain only the labels 0 and 1"):
        fd.fit_platt(*_chunked(s, np.arange(5000) % 3, chunks=1200))
    with pytest.raises(ValueError, match="max_iter"):
        fd.fit_platt(*_chunked(s, y, chunks=1200), max_iter=0)


# ---------------------------------------------------------------------------
# Lazy predictions and prior corrections; diagnostics.
# ---------------------------------------------------------------------------


def test_predict_and_prior_corrections_are_lazy_and_equal(dask_client):
    rng = np.random.default_rng(6)
    n = 50_000
    p = rng.random(n)
    y = (rng.random(n) < p ** 2).astype(np.uint8)
    P = da.from_array(p, chunks=7_000)
    iso = IsotonicRegression(out_of_bounds="clip").fit(p, y)
    platt = PlattScaling().fit(p, y)
    for est in (iso, platt):
        lazy = fd.predict(est, P)
        assert isinstance(lazy, da.Array) and lazy.chunks == P.chunks
        assert_array_equal(lazy.compute(), est.predict(p))
    lazy32 = fd.predict(platt, P.astype(np.float32))
    assert lazy32.dtype == np.float32 and lazy32.compute().dtype == np.float32
    cns = fd.correct_negative_sampling(P, 0.1)
    assert cns.chunks == P.chunks
    assert_array_equal(cns.compute(), fastcal.correct_negative_sampling(p, 0.1))
    assert_array_equal(fd.adjust_priors(P, 0.5, 0.2).compute(), fastcal.adjust_priors(p, 0.5, 0.2))
    q = rng.dirichlet([1, 2, 3], 9000)
    Q = da.from_array(q, chunks=(2000, 1))
    got = fd.adjust_priors(Q, [0.2, 0.3, 0.5], [0.3, 0.3, 0.4])
    assert got.chunks[0] == Q.chunks[0]
    assert_array_equal(got.compute(), fastcal.adjust_priors(q, [0.2, 0.3, 0.5], [0.3, 0.3, 0.4]))
    with pytest.raises(ValueError, match="rate"):
        fd.correct_negative_sampling(P, 1.5)  # checked eagerly
    with pytest.raises(ValueError):
        fd.adjust_priors(P, 0.5, 1.5)


def test_predict_dataframe_series(dask_client):
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"p": rng.random(10_000)})
    df["y"] = (rng.random(10_000) < df["p"]).astype(int)
    ddf = dd.from_pandas(df, npartitions=3)
    iso = fd.fit_isotonic(ddf["p"], ddf["y"], out_of_bounds="clip")
    out = fd.predict(iso, ddf["p"]).compute()
    assert_array_equal(out.to_numpy(), iso.predict(df["p"].to_numpy()))
    assert_array_equal(out.index, df.index)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("weighted", [False, True])
def test_diagnostics_equal_in_memory(dask_client, strategy, weighted):
    rng = np.random.default_rng(8)
    n = 80_000
    p = rng.random(n)
    y = (rng.random(n) < p ** 1.5).astype(np.uint8)
    w = rng.uniform(0, 2, n) if weighted else None
    Y, P, W = _chunked(y, p, w, chunks=11_000)
    Y, P, W = dask.persist(Y, P, W)
    cases = [
        (fd.calibration_curve(Y, P, n_bins=7, strategy=strategy, sample_weight=W, return_counts=True),
         fastcal.calibration_curve(y, p, n_bins=7, strategy=strategy, sample_weight=w, return_counts=True)),
        ((fd.expected_calibration_error(Y, P, strategy=strategy, sample_weight=W, norm="l2"),),
         (fastcal.expected_calibration_error(y, p, strategy=strategy, sample_weight=w, norm="l2"),)),
    ]
    if strategy == "uniform":
        cases += [
            (list(fd.brier_decomposition(Y, P, sample_weight=W).to_dict().values()),
             list(fastcal.brier_decomposition(y, p, sample_weight=w).to_dict().values())),
            ((fd.brier_score_loss(Y, P, sample_weight=W), fd.log_loss(Y, P, sample_weight=W)),
             (fastcal.brier_score_loss(y, p, sample_weight=w), fastcal.log_loss(y, p, sample_weight=w))),
        ]
    # Per-chunk bin sums merged, against sums over all n rows at once: sums and ratios of sums of positive
    # terms agree to 4 n eps relative; the ECE and the decomposition terms (<= 1, with cancellation) are
    # built from such ratios and agree to ~10 n eps each, absolute.
    for got, want in cases:
        for a, b in zip(got, want):
            assert_allclose(a, b, rtol=4 * n * EPS, atol=2 * 10 * n * EPS)
    if not weighted:
        # Bin edges (for "quantile", NumPy's percentiles) are exact: the counts per bin match.
        assert_array_equal(cases[0][0][2], cases[0][1][2])


@pytest.mark.parametrize("weighted", [False, True])
def test_smooth_ece_equals_in_memory(dask_client, weighted):
    rng = np.random.default_rng(9)
    n = 60_000
    p = rng.beta(2, 3, n)
    y = np.where(rng.random(n) < p ** 1.3, 1, -1)  # {-1, 1} labels, as in memory
    w = rng.uniform(0, 2, n) if weighted else None
    Y, P, W = _chunked(y, p, w, chunks=13_000)
    got = fd.smooth_ece(Y, P, sample_weight=W)
    want = fastcal.smooth_ece(y, p, sample_weight=w)
    # The grid sums of chunks added on the client, against one pass: each node's sum in another order (4 n eps
    # relative); both fixed points are roots to 1e-10 of two functions that close.
    assert got.ece == pytest.approx(want.ece, rel=4 * n * EPS, abs=1e-9)
    assert got.bandwidth == pytest.approx(want.bandwidth, abs=1e-9)
    assert_allclose(got.y, want.y, rtol=1e-9, atol=1e-12)
    fixed = fd.smooth_ece(Y, P, sample_weight=W, bandwidth=0.05)
    assert fixed.ece == pytest.approx(fastcal.smooth_ece(y, p, sample_weight=w, bandwidth=0.05).ece, rel=4 * n * EPS)
    with pytest.raises(ValueError, match="binary only"):
        fd.smooth_ece(y, np.stack([1 - p, p], axis=1))
    with pytest.raises(fastcal.InvalidParameterError, match="bandwidth"):
        fd.smooth_ece(Y, P, bandwidth=-1)


def test_diagnostics_label_rules(dask_client):
    p = np.linspace(0, 1, 1000)
    y = np.where(np.arange(1000) % 3 == 0, 1, -1)  # {-1, 1}: 1 is positive
    Y, P = _chunked(y, p, chunks=250)
    assert fd.brier_score_loss(Y, P) == pytest.approx(fastcal.brier_score_loss(y, p), rel=1e-12)
    # {-1, 0} over the whole array is ambiguous even if every chunk alone is not.
    y2 = np.where(np.arange(1000) < 500, -1, 0)
    with pytest.raises(ValueError, match="pos_label is not specified"):
        fd.brier_score_loss(*_chunked(y2, p, chunks=250))
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        fd.brier_score_loss(Y, P * 2)


def test_losses_take_class_matrices():
    """The Dask losses take an (n, k) matrix as the in-memory ones (issue 12), in any of the input kinds."""
    rng = np.random.default_rng(0)
    P = rng.dirichlet(np.ones(3), 100)
    y = rng.integers(0, 3, 100)
    for func in (fd.log_loss, fd.brier_score_loss):
        expected = getattr(fastcal, func.__name__)(y, P)
        for probs in (da.from_array(P, chunks=(25, 3)), P, P.tolist(), dd.from_pandas(pd.DataFrame(P), npartitions=2)):
            # The same 100 terms added in another order: n eps relative.
            assert func(da.from_array(y, chunks=25), probs) == pytest.approx(expected, rel=100 * EPS)


@given(probabilities(max_size=400, weighted="zeros"), st.booleans(), st.integers(1, 25),
       st.lists(st.integers(0, 400), max_size=6))
@settings(max_examples=40, deadline=None)
def test_diagnostics_quantile_bins_exact_sync(data, use_weights, n_bins, cuts):
    """Quantile edges from the chunks' bucket counts and gathers: the in-memory bins exactly, empty chunks too."""
    y, p, w = data
    w = w if use_weights else None
    bounds = sorted({0, len(p), *(c for c in cuts if c <= len(p))})
    chunks = (tuple(np.diff(bounds)),)
    Y, P, W = (None if a is None else da.from_array(a, chunks=chunks) for a in (y, p, w))
    with dask.config.set(scheduler="sync"):
        got = fd.calibration_curve(Y, P, n_bins=n_bins, strategy="quantile", sample_weight=W, return_counts=True)
        ece = fd.expected_calibration_error(Y, P, n_bins=n_bins, strategy="quantile", sample_weight=W, norm="max")
    want = fastcal.calibration_curve(y, p, n_bins=n_bins, strategy="quantile", sample_weight=w, return_counts=True)
    if w is None:  # the same bins: the same counts
        assert_array_equal(got[2], want[2])
    else:
        assert_array_equal(got[2] > 0, want[2] > 0)
    n = len(p)  # sums of <= n terms in another grouping
    for a, b in zip(got, want):
        assert_allclose(a, b, rtol=4 * n * EPS, atol=4 * n * EPS)
    assert ece == pytest.approx(fastcal.expected_calibration_error(y, p, n_bins=n_bins, strategy="quantile",
                                                                   sample_weight=w, norm="max"), abs=8 * n * EPS)


def test_diagnostics_quantile_narrow_and_constant_sync():
    """A range too narrow to scale to the buckets (subnormal), and constant scores, on several chunks."""
    rng = np.random.default_rng(4)
    y = (rng.random(5000) < 0.4).astype(np.uint8)
    for p in (rng.choice(np.array([0.0, 5e-324, 1e-323]), 5000), np.full(5000, 0.25)):
        with dask.config.set(scheduler="sync"):
            got = fd.calibration_curve(*_chunked(y, p, chunks=700), n_bins=6, strategy="quantile", return_counts=True)
        want = fastcal.calibration_curve(y, p, n_bins=6, strategy="quantile", return_counts=True)
        for a, b in zip(got, want):
            assert_array_equal(a, b)


def test_import_fastcal_does_not_import_dask():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys, fastcal; print('dask' in sys.modules)"],
                         capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == "False"


# ---------------------------------------------------------------------------
# CORP score decomposition through the distributed isotonic fit.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "weighted"), [(np.float64, False), (np.float32, True)])
def test_score_decomposition_equals_in_memory(dask_client, dtype, weighted):
    rng = np.random.default_rng(11)
    n = 60_000
    p = np.round(rng.random(n), 3).astype(dtype)  # ties, across chunk and partition boundaries
    y = (rng.random(n) < p.astype(np.float64) ** 1.5).astype(np.uint8)
    w = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0, 2, n)) if weighted else None
    Y, P, W = _chunked(y, p, w, chunks=9_000)
    for scoring in ("brier", "log_loss"):
        got = fd.score_decomposition(Y, P, scoring=scoring, sample_weight=W)
        want = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w)
        # Sums of n non-negative terms grouped by chunk against all at once: within 4 n eps (score + UNC) of each
        # other (see tests/test_decomposition.py atol); the PAV blocks are the same (fit_isotonic is exact).
        tol = 4 * n * EPS * (want.score + want.uncertainty)
        for name in ("score", "miscalibration", "discrimination", "uncertainty"):
            assert getattr(got, name) == pytest.approx(getattr(want, name), abs=tol), name


@given(probabilities(min_size=2, max_size=300, weighted="zeros"), st.lists(st.integers(0, 300), max_size=5))
@settings(max_examples=25, deadline=None)
def test_score_decomposition_small_chunks_sync(data, cuts):
    y, p, w = data
    bounds = sorted({0, len(p), *(c for c in cuts if c <= len(p))})
    chunks = (tuple(np.diff(bounds)),)
    Y, P, W = (None if a is None else da.from_array(a, chunks=chunks) for a in (y, p, w))
    with dask.config.set(scheduler="sync"):
        got = fd.score_decomposition(Y, P, sample_weight=W)
    want = fastcal.score_decomposition(y, p, sample_weight=w)
    tol = 1e-12 + 4 * len(p) * EPS * (want.score + want.uncertainty)
    assert [got.score, got.miscalibration, got.discrimination, got.uncertainty] == pytest.approx(
        [want.score, want.miscalibration, want.discrimination, want.uncertainty], abs=tol)


def test_score_decomposition_errors():
    p = da.from_array(np.linspace(0, 1, 100), chunks=25)
    with pytest.raises(ValueError, match="binary only"):
        fd.score_decomposition(da.from_array(np.zeros(100, int), chunks=25), np.full((100, 3), 1 / 3))
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        with dask.config.set(scheduler="sync"):
            fd.score_decomposition(da.from_array(np.arange(100) % 2, chunks=25), p * 2)
    with pytest.raises(fastcal.InvalidParameterError, match="scoring"):
        fd.score_decomposition(da.from_array(np.arange(100) % 2, chunks=25), p, scoring="auc")


def _em_data():
    """P(y=1) of a binary problem and (n, 3) posteriors, from logistic and softmax scores (not exact posteriors:
    the EM still has one fixed point to find)."""
    rng = np.random.default_rng(12)
    n = 3 * 4096 + 100
    p = 1.0 / (1.0 + np.exp(-rng.normal(-1.0, 2.0, n)))
    z = rng.normal(0.0, 1.5, (n, 3)) + np.array([0.5, 0.0, -0.5])
    P = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    return [(p, 0.5), (P, [1 / 3] * 3)]


@pytest.mark.parametrize("accelerate", [True, False])
def test_estimate_priors_em(accelerate):
    for proba, train in _em_data():
        ref = fastcal.estimate_priors_em(proba, train, tol=1e-12, accelerate=accelerate)
        # chunks of the kernels' 4096 rows (the last shorter): the in-memory sums, bit for bit
        got = fd.estimate_priors_em(da.from_array(proba, chunks=(4096,) + proba.shape[1:]), train, tol=1e-12,
                                    accelerate=accelerate)
        assert got.priors.tobytes() == ref.priors.tobytes() and got.n_iter == ref.n_iter and got.converged
        assert_array_equal(got.proba.compute(), ref.proba)
        # other cuts: each chunk's sums rounded first; EM may stop a step apart, each within tol / (1 - rate) of
        # the fixed point (these problems' rate is below 0.9, as in tests/test_prior.py)
        other = fd.estimate_priors_em(da.from_array(proba, chunks=(1000,) + proba.shape[1:]), train, tol=1e-12,
                                      accelerate=accelerate)
        assert other.converged
        assert_allclose(other.priors, ref.priors, rtol=0, atol=2 * 1e-12 / (1 - 0.9))
    with pytest.raises(ValueError, match="proba must be 1-D or 2-D"):
        fd.estimate_priors_em(da.zeros((4, 2, 2)), 0.5)
