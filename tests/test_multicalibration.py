"""ECCE, the Kuiper distribution and the multicalibration error against MCGrad, a naive reference and invariants.

MCGrad (``mcgrad`` 0.1.5, installed by ``make venv`` without its declared
torch/lightgbm dependencies, which its metrics do not use) is the oracle on
untied data with ``precision_dtype="float64"``: both sum the same float64
terms in the same order up to the per-segment normalisation (MCGrad divides
each term by W, fastcal the extremes), so they agree to a few ``n * eps``;
1e-9 relative is far above that at these sizes. MCGrad's p-values are
``1 - F`` (an absolute rounding of ~eps), fastcal's the tail series (relative
rounding): they are compared with ``atol=4 * eps`` besides ``rtol``.
"""

import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate

from fastcal import calibration_ratio, ecce, log_loss, multicalibration_error, normalized_entropy, proportional_ece
from fastcal.multicalibration import kuiper_cdf, kuiper_sf

from .naive_multicalibration import naive_ecce

EPS = np.finfo(np.float64).eps
RTOL = 1e-9  # the brief's agreement with MCGrad; the observed differences are ~1e-14


def mcgrad_metrics():
    """MCGrad's metrics module, the oracle: a failure in CI if it is missing (the Makefile installs it), a skip
    elsewhere."""
    try:
        from mcgrad import metrics
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("mcgrad is not installed in CI: `make venv` installs it (pip install --no-deps mcgrad==0.1.5).")
        pytest.skip("mcgrad is not installed: .venv/bin/pip install --no-deps mcgrad==0.1.5")
    return metrics


@pytest.fixture(scope="module")
def mcgrad():
    return mcgrad_metrics()


def _quiet(func, *args, **kwargs):
    """Call MCGrad with the deprecation warnings of its pandas calls silenced (only here, not globally)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _data(n, seed=0, ties=False):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    if ties:
        p = np.round(p, 1)
    y = (rng.uniform(size=n) < p ** 1.2).astype(np.uint8)
    w = rng.exponential(size=n)
    return y, p, w


# ---------------------------------------------------------------------------
# Kuiper's distribution
# ---------------------------------------------------------------------------
def _theta_reference(x, terms=200):
    h = (np.arange(terms) + 0.5) * math.pi
    return math.fsum(((8 / x**2 + 2 / h**2) * np.exp(-2 * h**2 / x**2)).tolist())


def _alternating_reference(x, terms=200):
    k = np.arange(1, terms + 1)
    tails = np.array([math.erfc(kk * x / math.sqrt(2)) for kk in k])
    return math.fsum((4 * (-1.0) ** (k - 1) * k * tails).tolist())


def test_kuiper_series_agree_where_both_converge():
    # The two closed forms of Feller (1951) are independent formulas: their agreement checks both.
    for x in np.linspace(1.0, 3.5, 26):
        assert _theta_reference(x) == pytest.approx(1 - _alternating_reference(x), rel=1e-14, abs=1e-15)


def test_kuiper_cdf_and_sf_against_long_series():
    for x in np.geomspace(0.25, 2.0, 40, endpoint=False):
        assert kuiper_cdf(x) == pytest.approx(_theta_reference(x), rel=4 * EPS)
    for x in np.geomspace(2.0, 35.0, 60):
        assert kuiper_sf(x) == pytest.approx(_alternating_reference(x), rel=8 * EPS)
        assert kuiper_cdf(x) == pytest.approx(1 - _alternating_reference(x), rel=2 * EPS)
    assert kuiper_cdf(0.0) == 0.0 and kuiper_sf(0.0) == 1.0 and kuiper_sf(math.inf) == 0.0
    assert 0 < kuiper_sf(30.0) < 1e-180  # the tail keeps its relative accuracy (MCGrad clamps at 2.2e-16)


def test_kuiper_moments():
    # E[R] = 2 sqrt(2 / pi) and E[R^2] = 4 log 2 for the range R of a standard Brownian motion on [0, 1] (Feller 1951).
    mean = integrate.quad(kuiper_sf, 0, 2)[0] + integrate.quad(kuiper_sf, 2, np.inf)[0]
    square = integrate.quad(lambda x: 2 * x * kuiper_sf(x), 0, 2)[0] + integrate.quad(
        lambda x: 2 * x * kuiper_sf(x), 2, np.inf)[0]
    assert mean == pytest.approx(2 * math.sqrt(2 / math.pi), rel=1e-10)
    assert square == pytest.approx(4 * math.log(2), rel=1e-10)


def test_kuiper_cdf_against_mcgrad(mcgrad):
    x = np.geomspace(0.2, 8.2, 80)
    ours = np.array([kuiper_cdf(v) for v in x])
    np.testing.assert_allclose(ours, mcgrad._ecce_cdf(x), rtol=1e-13, atol=4 * EPS)


# ---------------------------------------------------------------------------
# ECCE
# ---------------------------------------------------------------------------
@pytest.mark.nojit
def test_ecce_small_example():
    r = ecce([0, 0, 1, 1], [0.1, 0.4, 0.6, 0.9])
    # D = 0, -0.025, -0.125, -0.025, 0
    assert r.ecce == pytest.approx(0.125, rel=1e-15)
    assert r.std == pytest.approx(math.sqrt(0.66) / 4, rel=1e-15)
    assert r.ecce_sigma == pytest.approx(r.ecce / r.std, rel=1e-15)
    assert r.pvalue == pytest.approx(kuiper_sf(r.ecce_sigma), rel=1e-15)


@pytest.mark.nojit
def test_ecce_pools_ties():
    # MCGrad gives 0.25 and 0.125 here (its order of tied rows); pooled, one step of sum 0.
    assert ecce([1, 1, 0, 0], [0.5] * 4).ecce == 0.0
    assert ecce([1, 0, 1, 0], [0.5] * 4).ecce == 0.0
    assert ecce([1, 1, 0, 0], [0.5] * 4).pvalue == 1.0


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n", [50, 1000, 20_000])
def test_ecce_against_mcgrad(mcgrad, weighted, n):
    y, p, w = _data(n, seed=n)
    w = w if weighted else None
    r = ecce(y, p, sample_weight=w)
    assert r.ecce == pytest.approx(mcgrad.ecce(y, p, w), rel=RTOL)
    assert r.ecce_sigma == pytest.approx(mcgrad.ecce_sigma(y, p, w), rel=RTOL)
    assert r.pvalue == pytest.approx(mcgrad.ecce_pvalue(y, p, w), rel=RTOL, abs=4 * EPS)
    assert r.std == pytest.approx(mcgrad._ecce_standard_deviation(p, y, w), rel=RTOL)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 300), seed=st.integers(0, 2**31), ties=st.booleans(), weighted=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]), wdtype=st.sampled_from([np.float32, np.float64]))
def test_ecce_against_naive(n, seed, ties, weighted, dtype, wdtype):
    y, p, w = _data(n, seed, ties)
    p = p.astype(dtype)
    w = w.astype(wdtype) if weighted else None
    r = ecce(y, p, sample_weight=w)
    expected, std = naive_ecce(y, p, w)
    # The same float64 terms summed in the same order but for the grouping of ties: a few n eps of the sum of |terms|.
    scale = np.sum(np.abs(y - p.astype(np.float64)) * (1 if w is None else w)) / (n if w is None else np.sum(w, dtype=np.float64))
    assert r.ecce == pytest.approx(expected, rel=1e-12, abs=4 * n * EPS * scale)
    assert r.std == pytest.approx(std, rel=1e-12)


def test_ecce_tie_permutation_invariance():
    rng = np.random.default_rng(3)
    y, p, w = _data(5000, seed=3, ties=True)
    r = ecce(y, p, sample_weight=w)
    for _ in range(3):
        perm = rng.permutation(p.shape[0])
        permuted = ecce(y[perm], p[perm], sample_weight=w[perm])
        # Equal up to the rounding of the sums, whose terms come in another order: n eps relative.
        for name in ("ecce", "std", "ecce_sigma", "pvalue"):
            assert getattr(permuted, name) == pytest.approx(getattr(r, name), rel=p.shape[0] * EPS)
    # Unpooled, the order of the tied rows would move the ECCE by a whole step (MCGrad's 0.25 against 0.125).
    assert r.ecce == pytest.approx(naive_ecce(y, p, w)[0], rel=p.shape[0] * EPS)


def test_ecce_weight_scaling():
    y, p, w = _data(3000, seed=4)
    r = ecce(y, p, sample_weight=w)
    assert ecce(y, p, sample_weight=w * 1024.0) == r  # a power of two: exactly
    scaled = ecce(y, p, sample_weight=w * 3.7)
    for name in ("ecce", "std", "ecce_sigma", "pvalue"):
        assert getattr(scaled, name) == pytest.approx(getattr(r, name), rel=1e-12)
    assert ecce(y, p, sample_weight=np.ones_like(p)) == ecce(y, p)


def test_ecce_float32_sums_in_float64():
    y, p, w = _data(200_000, seed=5)
    p32 = p.astype(np.float32)
    r = ecce(y, p32, sample_weight=w.astype(np.float32))
    expected, std = naive_ecce(y, p32, w.astype(np.float32))
    assert r.ecce == pytest.approx(expected, rel=1e-10)
    assert r.std == pytest.approx(std, rel=1e-12)
    assert isinstance(r.ecce, float)


@pytest.mark.nojit
def test_ecce_validation():
    with pytest.raises(ValueError, match="y_true"):
        ecce([0, 2, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="y_prob"):
        ecce([0, 1, 1], [0.1, 1.2, 0.3])
    with pytest.raises(ValueError, match="y_prob"):
        ecce([0, 1, 1], [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="Inconsistent"):
        ecce([0, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="sample_weight"):
        ecce([0, 1, 1], [0.1, 0.2, 0.3], sample_weight=[1, -1, 1])
    y, p = np.array([0, 1, 1]), np.array([0.1, 0.2, 0.3])
    ecce(y, p)
    np.testing.assert_array_equal(p, [0.1, 0.2, 0.3])  # inputs not modified


# ---------------------------------------------------------------------------
# calibration ratio, proportional ECE, normalized entropy
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("adjust_unjoined", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_ratio_against_mcgrad(mcgrad, adjust_unjoined, weighted):
    y, p, w = _data(5000, seed=6)
    w = w if weighted else None
    ours = calibration_ratio(y, p, sample_weight=w, adjust_unjoined=adjust_unjoined)
    assert ours == pytest.approx(mcgrad.calibration_ratio(y, p, w, adjust_unjoined=adjust_unjoined), rel=1e-12)
    with pytest.raises(ValueError, match="no positive"):
        calibration_ratio([0, 0], [0.1, 0.2])


@pytest.mark.parametrize("weighted", [False, True])
def test_proportional_ece_against_mcgrad(mcgrad, weighted):
    y, p, w = _data(5000, seed=7)  # continuous scores; rounded ones, on the bins' edges: tests/test_segment_binning.py
    w = w if weighted else None
    expected = _quiet(mcgrad.proportional_expected_calibration_error, y, p, w)
    assert proportional_ece(y, p, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="mean prediction is 0"):
        proportional_ece([0, 1], [0.0, 0.9])


@pytest.mark.parametrize("weighted", [False, True])
def test_normalized_entropy(mcgrad, weighted):
    y, p, w = _data(5000, seed=8)
    w = w if weighted else None
    wf = np.ones_like(p) if w is None else w
    rate = np.dot(wf, y) / wf.sum()
    expected = log_loss(y, p, sample_weight=w) / log_loss(y, np.full_like(p, rate), sample_weight=w)
    ne = normalized_entropy(y, p, sample_weight=w)
    assert ne == pytest.approx(expected, rel=1e-12)
    # MCGrad's baseline is the log loss of a float32 array of the base rate: float32 logarithms and float32 pairwise
    # sums, each a few 2^-24 relative (log2(5000) < 13 levels of pairwise sums): at most 16 * 2^-24 together.
    assert ne == pytest.approx(mcgrad.normalized_entropy(y, p, w), rel=16 * 2.0**-24)
    with pytest.raises(ValueError, match="one class"):
        normalized_entropy([1, 1], [0.2, 0.3])


# ---------------------------------------------------------------------------
# multicalibration error
# ---------------------------------------------------------------------------
def _segment_data(n, seed, ties=False):
    y, p, w = _data(n, seed, ties)
    rng = np.random.default_rng(seed + 1)
    a = rng.choice(["x", "y", "z", "u", "v"], n, p=[0.4, 0.25, 0.15, 0.12, 0.08])
    b = rng.choice([3, 0, 7, 5], n, p=[0.45, 0.3, 0.15, 0.1])
    c = rng.normal(size=n)
    y = np.where(a == "x", rng.uniform(size=n) < p ** 1.5, y).astype(np.uint8)
    return y, p, w, {"a": a, "b": b, "c": c}


def _mcgrad_mce(mcgrad, y, p, w, segments, numerical, **kwargs):
    import pandas as pd

    df = pd.DataFrame({"label": y, "score": p, **segments})
    if w is not None:
        df["weight"] = w
    categorical = [name for name in segments if name not in numerical]
    m = _quiet(mcgrad.MulticalibrationError, df, "label", "score", None if w is None else "weight", categorical or None,
                                     list(numerical) or None, precision_dtype="float64", **kwargs)
    _quiet(lambda: m.segments_ecce)
    return m


SCALARS = ("mce", "mce_sigma", "mce_relative", "mde", "mde_relative", "global_ecce", "global_ecce_sigma")


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(("numerical", "kwargs"), [
    ((), {}),
    (("c",), {}),
    (("c",), {"max_depth": 2, "max_values_per_segment_feature": 4, "min_samples_per_segment": 200}),
    (("c", "b"), {"max_n_segments": 50}),
])
def test_multicalibration_against_mcgrad(mcgrad, weighted, numerical, kwargs):
    y, p, w, segments = _segment_data(20_000, seed=11)
    w = w if weighted else None
    if not numerical:
        segments.pop("c")
    m = _mcgrad_mce(mcgrad, y, p, w, segments, numerical, **kwargs)
    r = multicalibration_error(y, p, segments, numerical=numerical, sample_weight=w, **kwargs)
    for name in SCALARS:
        assert getattr(r, name) == pytest.approx(float(getattr(m, name)), rel=RTOL), name
    assert r.mce_pvalue == pytest.approx(float(m.mce_pvalue), rel=RTOL, abs=4 * EPS)
    assert r.global_ecce_pvalue == pytest.approx(float(m.global_ecce_pvalue), rel=RTOL, abs=4 * EPS)
    np.testing.assert_allclose(r.segment_ecce, m.segments_ecce, rtol=RTOL)
    np.testing.assert_allclose(r.segment_ecce_sigma, m.segments_ecce_sigma, rtol=RTOL)
    np.testing.assert_allclose(r.segment_pvalue, m.segments_ecce_pvalue, rtol=RTOL, atol=4 * EPS)
    masks = m._segments[0].reshape(-1, p.shape[0])[: m.total_number_segments]
    np.testing.assert_array_equal(r.segment_n, masks.sum(axis=1))
    table = m._segments[1]
    expected = [{} for _ in range(m.total_number_segments)]
    for column, value, index in table.itertuples(index=False):
        expected[index][column] = value
    assert len(r.segment_values) == len(expected)
    for ours, theirs in zip(r.segment_values, expected):
        assert ours.keys() == theirs.keys()
        for key in ours:
            assert ours[key] == theirs[key] or (ours[key] != ours[key] and theirs[key] != theirs[key])


def test_multicalibration_segments_against_naive_with_ties():
    y, p, w, segments = _segment_data(5000, seed=12, ties=True)
    segments.pop("c")
    r = multicalibration_error(y, p, segments, sample_weight=w, max_values_per_segment_feature=5,
                               min_samples_per_segment=1)
    assert r.segment_values[0] == {} and r.segment_n[0] == 5000
    assert len(r.segment_values) == 1 + 5 + 4 + 20
    for values, n, value, sigma in zip(r.segment_values, r.segment_n, r.segment_ecce, r.segment_ecce_sigma):
        mask = np.ones(p.shape[0], dtype=bool)
        for name, v in values.items():
            mask &= segments[name] == v
        expected, std = naive_ecce(y[mask], p[mask], w[mask])
        assert n == mask.sum()
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert sigma == pytest.approx(expected / std, rel=1e-12, abs=1e-12)


def test_multicalibration_invariants():
    y, p, w, segments = _segment_data(8000, seed=13, ties=True)
    r = multicalibration_error(y, p, segments, numerical=["c"], sample_weight=w)
    perm = np.random.default_rng(0).permutation(p.shape[0])
    permuted = multicalibration_error(y[perm], p[perm], {k: v[perm] for k, v in segments.items()}, numerical=["c"],
                                      sample_weight=w[perm])
    # Same segments (their value order is first appearance along the sorted predictions: tied rows may reorder it).
    ours = dict(zip(map(lambda d: tuple(sorted(d.items())), r.segment_values), r.segment_ecce))
    theirs = dict(zip(map(lambda d: tuple(sorted(d.items())), permuted.segment_values), permuted.segment_ecce))
    assert ours.keys() == theirs.keys()
    for key in ours:
        assert theirs[key] == pytest.approx(ours[key], rel=1e-12, abs=1e-15)
    assert permuted.mce_sigma == pytest.approx(r.mce_sigma, rel=1e-12)
    assert multicalibration_error(y, p, segments, numerical=["c"], sample_weight=w * 64.0) == r
    r32 = multicalibration_error(y, p.astype(np.float32), segments, numerical=["c"], sample_weight=w)
    r64 = multicalibration_error(y, p.astype(np.float32).astype(np.float64), segments, numerical=["c"],
                                 sample_weight=w)
    assert r32 == r64  # float32 scores are summed in float64: the same bits as their float64 copies
    assert isinstance(r32.mce, float) and r32.segment_ecce.dtype == np.float64


def test_multicalibration_dataframe_and_options():
    pd = pytest.importorskip("pandas", reason="pandas is part of the test extra: pip install -e '.[all]'")
    y, p, w, segments = _segment_data(3000, seed=14)
    r = multicalibration_error(y, p, segments, numerical=["c"])
    assert multicalibration_error(y, p, pd.DataFrame(segments), numerical=["c"]) == r
    only = multicalibration_error(y, p, {})
    assert len(only.segment_values) == 1 and only.global_ecce == pytest.approx(ecce(y, p).ecce, rel=1e-15)
    assert only.mce_sigma == only.global_ecce_sigma
    assert len(multicalibration_error(y, p, segments, max_n_segments=7).segment_values) == 7
    assert len(multicalibration_error(y, p, segments, max_depth=0).segment_values) == 1
    assert r.to_dict()["segment_values"][0] == {}


@pytest.mark.nojit
def test_multicalibration_validation():
    y, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.2, 0.3, 0.4])
    with pytest.raises(ValueError, match=r"segments\['a'\] has 3 rows"):
        multicalibration_error(y, p, {"a": [1, 2, 3]})
    with pytest.raises(ValueError, match="numerical"):
        multicalibration_error(y, p, {"a": [1, 2, 3, 4]}, numerical=["b"])
    with pytest.raises(ValueError, match="max_depth"):
        multicalibration_error(y, p, {"a": [1, 2, 3, 4]}, max_depth=-1)
    with pytest.raises(TypeError, match="min_samples_per_segment"):
        multicalibration_error(y, p, {"a": [1, 2, 3, 4]}, min_samples_per_segment=2.5)
    with pytest.raises(TypeError, match="segments must be"):
        multicalibration_error(y, p, [1, 2, 3, 4])
    with pytest.raises(ValueError, match="y_prob"):
        multicalibration_error(y, p + 1, {"a": [1, 2, 3, 4]})


def _chunked(monkeypatch):
    """Test-sized inputs cut into many chunks of rows and many score ranges, as 10^7 rows are."""
    from fastcal._core import parallel as _parallel
    from fastcal._coding import Sizes

    monkeypatch.setattr(_parallel, "PARALLEL_MIN_SIZE", 1 << 10)
    monkeypatch.setattr(_parallel, "TASK_ROWS", 1 << 8)
    monkeypatch.setattr(Sizes, "RANGE_ROWS", 1 << 7)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("path", ["default", "blocks", "sparse_cells", "one_range", "few_entries"])
def test_multicalibration_chunks_threads_and_paths(monkeypatch, weighted, path):
    """Chunks of rows and score ranges (merged in order), blocks of the cell table, cells numbered by np.unique,
    all rows in one score range, and values counted in one task: each equals the naive ECCE of every segment, and the result is the same bits
    on 1 and 7 threads."""
    from fastcal._coding import Sizes

    from .threads import MANY, num_threads

    y, p, w, segments = _segment_data(6000, seed=15, ties=True)
    w = w if weighted else None
    kwargs = dict(numerical=["c"], sample_weight=w, min_samples_per_segment=1, max_values_per_segment_feature=5)
    _chunked(monkeypatch)
    if path == "blocks":
        monkeypatch.setattr(Sizes, "TABLE_CELLS", 300)  # 3 columns of the 100-cell table per pass
    elif path == "sparse_cells":
        monkeypatch.setattr(Sizes, "DENSE_CELLS", 0)  # numbered by np.unique from the first feature on
    elif path == "one_range":
        monkeypatch.setattr(Sizes, "RANGE_ROWS", 1 << 20)  # all rows sorted by one task
    elif path == "few_entries":  # each feature's values counted in one task (as an id-like feature's), one range
        monkeypatch.setattr(Sizes, "COUNT_ENTRIES", 1)
    with num_threads(1):
        r = multicalibration_error(y, p, segments, **kwargs)
    with num_threads(MANY):
        assert multicalibration_error(y, p, segments, **kwargs) == r
    assert len(r.segment_values) == 1 + 5 + 4 + 5 + 20 + 25 + 20 + 100
    wf = np.ones_like(p) if w is None else w
    for values, n, value, sigma in zip(r.segment_values, r.segment_n, r.segment_ecce, r.segment_ecce_sigma):
        mask = np.ones(p.shape[0], dtype=bool)
        for name, v in values.items():
            column = segments[name]
            if name == "c":  # a quantile bin: the bin numbers of the numerical feature
                edges = np.unique(np.percentile(column, np.linspace(0, 100, 6)))
                bins = np.searchsorted(edges, column, side="left") - 1
                bins[column == edges[0]] = 0
                column = bins
            mask &= column == v
        expected, std = naive_ecce(y[mask], p[mask], wf[mask])
        assert n == mask.sum()
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert sigma == pytest.approx(expected / std, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize(("sizes", "kind"), [((8, 16), np.uint8), ((3, 43), np.uint16), ((182, 181), np.int32)])
@pytest.mark.parametrize("sparse", [False, True])
def test_multicalibration_cell_types(monkeypatch, sizes, kind, sparse):
    """Cells numbered in the narrowest type (128 cells in uint8, 129 in uint16, 32,942 in int32) give the bits of
    cells in int64; segments of every size class against the naive ECCE."""
    from fastcal._coding import Sizes, cell_type

    n = 60_000
    rng = np.random.default_rng(31)
    y, p, w = _data(n, 32, ties=True)
    segments = {"a": rng.integers(0, sizes[0], n), "b": rng.integers(0, sizes[1], n)}
    segments["a"][:sizes[0]] = np.arange(sizes[0])  # every value present
    segments["b"][:sizes[1]] = np.arange(sizes[1])
    kwargs = dict(sample_weight=w, min_samples_per_segment=1, max_values_per_segment_feature=max(sizes),
                  max_n_segments=None)
    if sparse:
        monkeypatch.setattr(Sizes, "DENSE_CELLS", 0)  # numbered by np.unique
    assert cell_type(sizes[0] * sizes[1]) is kind
    r = multicalibration_error(y, p, segments, **kwargs)
    monkeypatch.setattr(Sizes, "CELL_TYPES", (np.int64,))
    assert cell_type(1) is np.int64
    assert multicalibration_error(y, p, segments, **kwargs) == r
    seen = np.unique(segments["a"] * sizes[1] + segments["b"]).shape[0]  # the cells with rows
    assert len(r.segment_values) == 1 + sizes[0] + sizes[1] + seen  # depth 2: the cells with rows
    picked = np.random.default_rng(0).choice(len(r.segment_values), 40, replace=False)
    for s in picked:
        mask = np.ones(n, dtype=bool)
        for name, v in r.segment_values[s].items():
            mask &= segments[name] == v
        expected, std = naive_ecce(y[mask], p[mask], w[mask])
        assert r.segment_n[s] == mask.sum()
        assert r.segment_ecce[s] == pytest.approx(expected, rel=1e-12, abs=1e-15)


def _naive_collapse(uniques, counts, first_p, first_row, max_values, numeric):
    """The kept values by full sorts: by first appearance, then (stably) by count, the first max_values - 1."""
    k = len(uniques)
    labels = ["__NA" if u is None else u for u in uniques]
    appearance = sorted(range(k), key=lambda j: (first_p[j], first_row[j]))
    if k <= max_values:
        rank = np.empty(k, dtype=np.int64)
        rank[appearance] = np.arange(k)
        return list(range(k)), labels, rank.tolist()
    by_count = sorted(appearance, key=lambda j: -counts[j])
    kept, rest = sorted(by_count[:max_values - 1]), by_count[max_values - 1:]
    other = min(uniques) - 1 if numeric and None not in uniques else "__OTHER"  # "__NA" makes MCGrad's column objects
    group = [kept.index(j) if j in kept else len(kept) for j in range(k)]
    firsts = [(first_p[j], first_row[j]) for j in kept] + [min((first_p[j], first_row[j]) for j in rest)]
    order = sorted(range(len(firsts)), key=firsts.__getitem__)
    rank = np.empty(len(firsts), dtype=np.int64)
    rank[order] = np.arange(len(firsts))
    return group, [labels[j] for j in kept] + [other], rank.tolist()


@given(st.integers(1, 40).flatmap(lambda k: st.tuples(
    st.lists(st.integers(1, 4), min_size=k, max_size=k),
    st.lists(st.sampled_from([0.1, 0.2, 0.5, 0.7]), min_size=k, max_size=k),
    st.permutations(range(k)))), st.integers(1, 45), st.booleans(), st.booleans())
@settings(max_examples=300, deadline=None)
def test_collapse_categories_selects_as_the_sorts_do(data, max_values, numeric, missing):
    # Many ties of counts and of first p: the selection by partitions (no sort of every value) keeps the values
    # the full sorts keep, labels them and ranks their appearances alike.
    from fastcal._coding import collapse_categories

    counts, first_p, first_row = (np.array(v) for v in data)
    k = counts.size
    uniques = [None if missing and j == k - 1 else j * 3 - 5 for j in range(k)]
    got = collapse_categories(uniques, counts, first_p.astype(float), first_row, max_values, numeric)
    want = _naive_collapse(uniques, counts.tolist(), first_p.tolist(), first_row.tolist(), max_values, numeric)
    assert got[0].tolist() == want[0] and got[1] == want[1] and got[2].tolist() == want[2]


def test_multicalibration_id_like_feature_against_naive():
    # A categorical feature of nearly one value a row (an id): its 2 most frequent values kept, every other one
    # collapsed; against MCGrad's rule written out (counts, then first appearance along the sorted predictions).
    n = 20_000
    rng = np.random.default_rng(41)
    y, p, w = _data(n, 42, ties=True)
    uid = rng.integers(0, 3 * n, n)
    uid[:40] = 7  # the most frequent
    uid[40:55] = 11
    uid[55:70] = 13  # as frequent as 11: the first of them to appear is kept
    with pytest.warns(UserWarning, match=r"the worst segment, \{'uid': -?\d+\}, pools \d+ values of 'uid'"):
        r = multicalibration_error(y, p, {"uid": uid}, min_samples_per_segment=1)
    order = np.lexsort((np.arange(n), p))
    first_seen = {}
    for i in order.tolist():
        first_seen.setdefault(int(uid[i]), len(first_seen))
    second = min((11, 13), key=first_seen.__getitem__)
    kept = [7, second]
    other = int(uid.min()) - 1  # the label of the collapsed values of a numeric feature
    first_other = min(first_seen[u] for u in first_seen if u not in kept)
    expected_order = sorted(kept + [other], key=lambda v: first_other if v == other else first_seen[v])
    assert r.segment_values[1:] == [{"uid": v} for v in expected_order]
    for values, count, value in zip(r.segment_values, r.segment_n, r.segment_ecce):
        mask = np.ones(n, dtype=bool)
        for v in values.values():
            mask = ~np.isin(uid, kept) if v == other else uid == v
        expected, _ = naive_ecce(y[mask], p[mask], np.ones(n)[mask])
        assert count == mask.sum()
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_multicalibration_values_merged_over_tasks(monkeypatch):
    """Each feature's least and greatest values, value counts and first appearances are merged over tasks
    exactly: in 47 tasks of rows the segments (values, their order, rows) are those of one task, with collapsed
    values whose counts tie (the first to appear kept) and tied scores (first appearance by row number); and
    each segment's rows are those of its values."""
    from fastcal._core import parallel as _parallel

    rng = np.random.default_rng(16)
    n = 3000
    p = np.round(rng.uniform(size=n), 2)
    y = (rng.uniform(size=n) < p).astype(np.uint8)
    segments = {"i": np.repeat(np.arange(-4, 8), n // 12)[rng.permutation(n)],  # 12 values of equal counts
                "s": rng.choice(["u", "v", "w", "x", "z"], n, p=[0.3, 0.3, 0.2, 0.1, 0.1]),
                "o": rng.choice(np.array(["aa", None, "bbb", 7], dtype=object), n)}
    kwargs = dict(max_values_per_segment_feature=4, min_samples_per_segment=1)
    one = multicalibration_error(y, p, segments, **kwargs)
    monkeypatch.setattr(_parallel, "PARALLEL_MIN_SIZE", 1 << 8)
    monkeypatch.setattr(_parallel, "TASK_ROWS", 1 << 6)
    many = multicalibration_error(y, p, segments, **kwargs)
    assert many.segment_values == one.segment_values
    np.testing.assert_array_equal(many.segment_n, one.segment_n)
    kept = {name: [v[name] for v in one.segment_values if list(v) == [name]] for name in segments}
    assert len(kept["i"]) == 4 and -5 in kept["i"]  # 3 of the 12 tied values kept, the rest collapsed to min - 1
    assert "__OTHER" in kept["s"] and "__NA" in kept["o"]
    for values, count in zip(one.segment_values, one.segment_n):
        mask = np.ones(n, dtype=bool)
        for name, v in values.items():
            column = segments[name]
            if v in ("__OTHER", -5):  # the collapsed values: none of the others kept
                mask &= ~np.isin(column, [u for u in kept[name] if u != v])
            elif v == "__NA":
                mask &= np.array([c is None for c in column])
            else:
                mask &= np.array([c == v for c in column]) if column.dtype == object else column == v
        assert count == mask.sum()


def test_multicalibration_unit_weights_are_no_weights(monkeypatch):
    """Without weights the cells' rows and positives are counted as integers: the same bits as weights of one,
    summed in float64 (mce_relative reads the positives), in one task and in many."""
    y, p, _, segments = _segment_data(4000, seed=17)
    ones = np.ones_like(p)
    assert multicalibration_error(y, p, segments, numerical=["c"]) == multicalibration_error(
        y, p, segments, numerical=["c"], sample_weight=ones)
    _chunked(monkeypatch)
    assert multicalibration_error(y, p, segments, numerical=["c"]) == multicalibration_error(
        y, p, segments, numerical=["c"], sample_weight=ones)


@pytest.mark.parametrize("dtype", [np.int64, np.uint32, np.int8])
def test_coding_kernels_against_numpy(dtype):
    """``int_range``, ``code_stats`` and ``add_digit`` on ranges of rows, merged as their callers merge them,
    against NumPy: min and max, ``bincount``, the first row of each code along a stable argsort of ``p``, and the
    mixed-radix numbers with their ``bincount``."""
    from fastcal._coding import _kernels as _k

    rng = np.random.default_rng(int(np.dtype(dtype).itemsize))
    n, k = 5000, 7
    codes = (rng.integers(0, k, n) + 3).astype(dtype)
    p = np.round(rng.uniform(size=n), 2)
    cuts = [0, 1, 1200, 2500, n]  # an empty range and a one-row range too
    ranges = [_k.int_range(codes, a, b) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    assert (min(r[0] for r in ranges), max(r[1] for r in ranges)) == (codes.min(), codes.max())

    parts = [_k.code_stats(codes, 3, p, k, a, b) for a, b in zip(cuts[:-1], cuts[1:])]
    counts = np.sum([c for c, _, _ in parts], axis=0)
    first = [min((fp[c], fr[c]) for _, fp, fr in parts) for c in range(k)]
    np.testing.assert_array_equal(counts, np.bincount(codes.astype(np.int64) - 3, minlength=k))
    order = np.argsort(p, kind="stable")
    for c in range(k):
        row = order[np.flatnonzero(codes[order] == c + 3)[0]]
        assert first[c] == (p[row], row)

    cells = rng.integers(0, 5, n).astype(np.int32)
    remap = rng.permutation(k)
    expected = cells * k + remap[codes.astype(np.int64) - 3]
    total = np.zeros(5 * k, dtype=np.int64)
    for a, b in zip(cuts[:-1], cuts[1:]):
        counted = np.zeros(5 * k, dtype=np.int64)
        _k.add_digit(cells, codes, 3, remap, k, counted, a, b)
        total += counted
    np.testing.assert_array_equal(cells, expected)
    np.testing.assert_array_equal(total, np.bincount(expected, minlength=5 * k))
    _k.add_digit(cells, codes, 3, remap, k, np.zeros(0, dtype=np.int64), 0, n)  # no counts
    np.testing.assert_array_equal(cells, expected * k + remap[codes.astype(np.int64) - 3])


def _scores(kind, n, rng):
    if kind == "uniform":
        return rng.uniform(size=n)
    if kind == "ties":  # few values: buckets of equal scores
        return np.round(rng.uniform(size=n), 2)
    if kind == "clusters":  # most rows in a few narrow clusters: buckets of many distinct scores (the merge sort)
        return np.where(rng.uniform(size=n) < 0.9, 0.5 + 1e-9 * rng.integers(0, 50, n), rng.uniform(size=n))
    if kind == "tiny":  # scores 1 ulp apart: the bucket width would overflow
        return np.nextafter(0.0, 1.0) * rng.integers(0, 3, n)
    if kind == "zeros":  # -0.0 and +0.0 are one score
        return np.where(rng.uniform(size=n) < 0.5, -0.0, 0.0) + (rng.uniform(size=n) < 0.1) * 0.25
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["uniform", "ties", "clusters", "tiny", "zeros"])
@pytest.mark.parametrize("weighted", [False, True])
def test_sort_rows_sorts_by_score_then_tie_key(kind, weighted):
    """Each range's sort against NumPy's stable argsort: the same scores in the same order, each row's cell and
    weight moved with it, and within each group of equal scores the rows in order of their key (the label,
    or the signed weight ``(2 y - 1) w``)."""
    from fastcal.multicalibration import _kernels as _k

    rng = np.random.default_rng(hash((kind, weighted)) % 2**32)
    for n in (0, 1, 2, 17, 1000, 5000):
        x = _scores(kind, n, rng) + 0.0
        q = np.arange(n, dtype=np.int64)  # the row number; its low bit is the label
        w = rng.uniform(size=n) * (rng.uniform(size=n) < 0.9) if weighted else np.empty(0)
        a = min(3, n)
        xs, qs, ws = x.copy(), q.copy(), w.copy()
        _k.sort_rows(xs, qs, ws, a, n, n)
        order = np.concatenate([np.arange(a), a + np.argsort(x[a:], kind="stable")]).astype(np.int64)
        np.testing.assert_array_equal(xs, x[order])
        np.testing.assert_array_equal(qs[:a], q[:a])
        np.testing.assert_array_equal(np.sort(qs), q)  # a permutation of the rows
        np.testing.assert_array_equal(x[qs], xs)  # each row's cell and score together
        if weighted:
            np.testing.assert_array_equal(ws, w[qs])
        key = np.where(qs & 1, ws, -ws) if weighted else (qs & 1).astype(np.float64)
        same = xs[a + 1:] == xs[a:-1] if n > a else np.zeros(0, dtype=bool)
        assert np.all(key[a + 1:][same] >= key[a:-1][same])


@pytest.mark.parametrize("n", [10, 1000, 50_000])
def test_bin_numbers_against_searchsorted(n):
    """The quantile bins of a numerical feature: NumPy's searchsorted, the first bin closed, NaN its own number;
    with few edges (counted) and many (a binary search), on ranges of rows."""
    from fastcal._coding import _kernels as _k

    rng = np.random.default_rng(n)
    for x in (rng.normal(size=n), np.round(rng.normal(size=n), 1), rng.integers(0, 7, n).astype(np.float64)):
        x[::17] = np.nan
        for k in (2, 3, 5, 15, 16, 40):
            edges = np.unique(np.percentile(x[~np.isnan(x)], np.linspace(0, 100, k + 1)))
            expected = np.searchsorted(edges, x, side="left") - 1
            expected[x == edges[0]] = 0
            expected[np.isnan(x)] = edges.size
            bins = np.full(n, -7, dtype=np.int64)
            for a, b in ((0, n // 3), (n // 3, n)):
                _k.bin_numbers(x, edges, edges.size, bins, a, b)
            np.testing.assert_array_equal(bins, expected)


@pytest.mark.parametrize("kind", ["ties", "clusters", "tiny", "zeros"])
def test_multicalibration_awkward_scores_against_naive(monkeypatch, kind):
    """Scores that are all tied, clustered, 1 ulp apart or signed zeros, in many score ranges: the naive ECCE."""
    rng = np.random.default_rng(16)
    n = 4000
    p = _scores(kind, n, rng)
    y = (rng.uniform(size=n) < 0.3).astype(np.int64)
    w = rng.uniform(0.5, 2.0, n)
    g = rng.integers(0, 3, n)
    _chunked(monkeypatch)
    r = multicalibration_error(y, p, {"g": g}, sample_weight=w, min_samples_per_segment=1)
    for values, value, sigma in zip(r.segment_values, r.segment_ecce, r.segment_ecce_sigma):
        mask = g == values["g"] if values else np.ones(n, dtype=bool)
        expected, std = naive_ecce(y[mask], p[mask], w[mask])
        assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)
        assert sigma == pytest.approx(expected / std if std > 0 else (np.inf if expected else 0), rel=1e-12)


# ---------------------------------------------------------------------------
# segment_report
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("ties", [False, True])
def test_segment_report_equals_per_group_metrics(weighted, dtype, ties):
    from fastcal import brier_score_loss, expected_calibration_error, roc_auc_score, segment_report

    y, p, w, segments = _segment_data(6000, seed=21, ties=ties)
    p = p.astype(dtype)
    p[:3] = [0.0, 1.0, 0.3]  # log loss clipping; a prediction on a bin edge
    w = w if weighted else None
    groups = segments["a"]
    y[groups == "v"] = 1  # a group of one class: AUC NaN
    r = segment_report(y, p, groups, sample_weight=w)
    assert r.groups == ["u", "v", "x", "y", "z"]
    for i, g in enumerate(r.groups):
        m = groups == g
        yg, pg, wg = y[m], p[m], None if w is None else w[m]
        wf = np.ones(m.sum()) if wg is None else wg
        assert r.n[i] == m.sum()
        assert r.weight_sum[i] == pytest.approx(wf.sum(), rel=1e-13)
        assert r.base_rate[i] == pytest.approx(np.dot(wf, yg) / wf.sum(), rel=1e-13)
        assert r.mean_prediction[i] == pytest.approx(np.dot(wf, pg.astype(np.float64)) / wf.sum(), rel=1e-13)
        assert r.calibration_ratio[i] == pytest.approx(calibration_ratio(yg, pg, sample_weight=wg), rel=1e-13)
        assert r.ece[i] == pytest.approx(expected_calibration_error(yg, pg, n_bins=10, sample_weight=wg),
                                         rel=1e-12, abs=1e-15)
        e = ecce(yg, pg, sample_weight=wg)
        assert r.ecce[i] == pytest.approx(e.ecce, rel=1e-12, abs=1e-15)
        assert r.ecce_sigma[i] == pytest.approx(e.ecce_sigma, rel=1e-12, abs=1e-15)
        assert r.pvalue[i] == pytest.approx(e.pvalue, rel=1e-9, abs=4 * EPS)
        assert r.brier[i] == pytest.approx(brier_score_loss(yg, pg, sample_weight=wg), rel=1e-12)
        if g == "v":
            assert np.isnan(r.auc[i])
            continue
        assert r.log_loss[i] == pytest.approx(log_loss(yg, pg, sample_weight=wg), rel=1e-12)
        assert r.auc[i] == pytest.approx(roc_auc_score(yg, pg, sample_weight=wg), rel=1e-12)


def test_segment_report_threads_types_and_output(monkeypatch):
    from fastcal import segment_report

    from .threads import MANY, num_threads

    y, p, w, segments = _segment_data(20_000, seed=22, ties=True)
    groups = np.random.default_rng(3).integers(0, 500, p.shape[0])
    _chunked(monkeypatch)
    with num_threads(1):
        r = segment_report(y, p, groups, sample_weight=w)
    with num_threads(MANY):
        assert segment_report(y, p, groups, sample_weight=w) == r
    assert segment_report(y, p, groups, sample_weight=w * 64.0).ecce_sigma.tolist() == r.ecce_sigma.tolist()
    as_str = segment_report(y, p, np.char.add("g", groups.astype(str)), sample_weight=w)
    order = np.argsort([int(g[1:]) for g in as_str.groups])
    np.testing.assert_array_equal(as_str.ecce[order], r.ecce)
    pd = pytest.importorskip("pandas", reason="pandas is part of the test extra: pip install -e '.[all]'")
    frame = r.to_pandas()
    assert list(frame["group"]) == r.groups and frame["ecce"].tolist() == r.ecce.tolist()
    assert r.to_dict()["groups"] == r.groups and "ecce_sigma" in str(r)
    cat = segment_report(y, p, pd.Categorical(np.array(["a", "b"])[groups % 2]))
    assert sorted(cat.groups) == ["a", "b"] and cat.n.sum() == p.shape[0]  # objects: in order of appearance
    with pytest.raises(ValueError, match="Inconsistent"):
        segment_report(y, p, groups[:-1])


def test_segment_sigmas_plot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fastcal import segment_report
    from fastcal.plot import segment_sigmas

    y, p, w, segments = _segment_data(6000, seed=23)
    r = segment_report(y, p, segments["a"], sample_weight=w)
    fig, ax = segment_sigmas(r, alpha=0.01, top=3)
    labels = [t.get_text() for t in ax.get_yticklabels()]
    biggest = [r.groups[i] for i in np.argsort(-r.ecce_sigma)[:3]][::-1]
    assert labels == biggest  # the largest sigma at the top
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == sorted(widths) and widths[-1] == pytest.approx(r.ecce_sigma.max())
    line = ax.get_lines()[0].get_xdata()[0]
    assert kuiper_sf(line) == pytest.approx(0.01, rel=1e-9)  # the significance line
    plt.close(fig)
    m = multicalibration_error(y, p, segments, numerical=["c"])
    fig, ax = segment_sigmas(m, top=1)
    worst = m.segment_values[int(np.argmax(m.segment_ecce_sigma))]
    assert ax.get_yticklabels()[0].get_text() == (", ".join(f"{k}={v}" for k, v in worst.items()) or "all")
    plt.close(fig)
    with pytest.raises(TypeError, match="SegmentReport"):
        segment_sigmas({"a": 1})
    with pytest.raises(ValueError, match="alpha"):
        segment_sigmas(r, alpha=1.5)
