"""MCGrad's segments and bins: numerical features cut at MCGrad's quantile bins in memory, on Dask and on Spark;
infinities in a binned feature refused on every backend; MCGrad's proportional ECE; and ``multicalibration_error``
against MCGrad's ``MulticalibrationError`` on random cases of every size modulo 3.

A binned feature's edges are pandas' ``Series.quantile`` at ``linspace(0, 1, 4)`` (``np.quantile``), which puts an
edge exactly on a value whenever ``(n - 1) * k / 3`` is an integer, i.e. ``n % 3 == 1``; ``np.percentile`` of ``q *
100`` puts some of those edges an ulp below the value, and the value in the next bin. MCGrad (``mcgrad`` 0.1.5,
see tests/test_multicalibration.py) computes ``Series.quantile`` with pandas 3, whose quantiles are
``np.quantile``'s (pandas 2 took ``np.percentile`` of ``q * 100``: its bins are the ulp off, as fastcal's were).
"""

import os
import warnings

import dask
import dask.array as da
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import dask as fd
from fastcal import multicalibration_error, proportional_ece
from fastcal._coding import quantile_edges

from .test_multicalibration import mcgrad_metrics

EPS = np.finfo(np.float64).eps
#: fastcal against MCGrad (precision_dtype="float64"). A row in another bin or segment changes segment_n, compared
#: exactly: RTOL covers rounding alone. Both add the same float64 terms t = w (y - p), MCGrad divided by W first,
#: fastcal in other orders (score ranges, prefix offsets) and divided at the end. |t| <= w, so a running sum D_k is off
#: by at most k eps sum|t| / W <= n eps (6.7e-12 at 30000 rows), and by about sqrt(n) eps (4e-14) when the roundings'
#: signs are random, as here. A segment's ECCE here is at least 1e-4 (asserted: p in [0.01, 0.99] moves D by at least
#: 0.01 w / W a row, and the segments are random walks), so about 4e-10 relative; the worst case, 7e-8, is far from
#: reached (1.7e-14 measured at 30000 rows). 1e-9 is the issue's bound.
RTOL = 1e-9
SCALARS = ("mce", "mce_sigma", "mce_relative", "mde", "mde_relative", "global_ecce", "global_ecce_sigma")
Q3 = np.linspace(0, 1, 4)


@pytest.fixture(scope="module")
def mcgrad():
    metrics = mcgrad_metrics()
    if pd.Series([0.0, 0.1, 0.2, 0.3]).quantile(Q3).tolist() != np.quantile([0.0, 0.1, 0.2, 0.3], Q3).tolist():
        reason = (f"pandas {pd.__version__} computes Series.quantile as np.percentile: MCGrad's bins are the "
                  f"percentiles' (pandas 3's are np.quantile's, which fastcal follows)")
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; the test extra installs pandas 3")
        pytest.skip(reason)
    return metrics


def _quiet(func, *args, **kwargs):
    """Call MCGrad with the warnings of its pandas calls silenced (only here, not globally)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


# ---------------------------------------------------------------------------
# the edges: np.quantile, bit for bit
# ---------------------------------------------------------------------------
def _edges(x, max_values):
    """fastcal's edges of the values ``x`` (no NaN) by order statistics selected in memory."""
    lo, hi = float(x.min()), float(x.max())
    return quantile_edges(x.shape[0], lo, hi, max_values, "x", lambda ranks: np.partition(x, ranks)[ranks])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(-1e6, 1e6, allow_nan=False), st.integers(-5, 5).map(float)), min_size=2,
                max_size=60), st.integers(1, 7))
def test_quantile_edges_are_numpys_quantiles(values, max_values):
    x = np.array(values)
    expected = np.unique(np.quantile(x, np.linspace(0, 1, max_values + 1)))
    assert_array_equal(_edges(x, max_values), expected)


@pytest.mark.parametrize("n", [4, 7, 10, 301, 1000])
def test_quantile_edges_on_values_where_percentiles_are_an_ulp_below(n):
    """The case of the issue, n % 3 == 1: the 1/3 and 2/3 quantiles of 0, 0.1, 0.2, ... are values themselves,
    which np.percentile of q * 100 misses by an ulp for some n (n = 4: 0.1 and 0.2)."""
    x = np.arange(n) * 0.1
    edges = _edges(x, 3)
    assert_array_equal(edges, np.quantile(x, Q3))
    assert np.isin(edges[1:-1], x).all()
    if n == 4:
        assert not np.array_equal(edges, np.percentile(x, Q3 * 100))


# ---------------------------------------------------------------------------
# the bins: MCGrad's, in memory, on Dask and on Spark
# ---------------------------------------------------------------------------
#: Sizes of every residue modulo 3 (the bins differ from np.percentile's only for n % 3 == 1, at about every n).
SIZES = [4, 5, 6, 7, 100, 101, 102, 1000, 1001, 1002]


def _bin_data(n, seed):
    """Untied predictions, labels, weights and three numerical features: tenths (edges on values), normal draws,
    and small integers with NaN (ties, a NaN bin)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.uniform(size=n) < p).astype(np.uint8)
    w = rng.exponential(size=n)
    tenths = rng.permutation(n) * 0.1
    normal = rng.normal(size=n)
    ints = rng.integers(0, 8, n).astype(np.float64)
    ints[rng.uniform(size=n) < 0.1] = np.nan
    return y, p, w, {"t": tenths, "z": normal, "i": ints}


def _bin_sizes(result):
    """``{(feature, bin): rows}`` of the depth-1 segments of a result (NaN written "nan")."""
    out = {}
    for values, count in zip(result.segment_values, result.segment_n):
        if len(values) == 1:
            (name, value), = values.items()
            out[(name, "nan" if value != value else value)] = int(count)
    return out


def _mcgrad_bin_sizes(segments):
    from mcgrad._segmentation import collapse_numeric_values

    out = {}
    for name, x in segments.items():
        binned = _quiet(collapse_numeric_values, pd.Series(x), 3)
        for value, count in binned.value_counts(dropna=False).items():
            out[(name, "nan" if value != value else value)] = int(count)
    return out


def _depth_one(y, p, w, segments, func=multicalibration_error, **kwargs):
    return func(y, p, segments, sample_weight=w, numerical=list(segments), max_depth=1, min_samples_per_segment=1,
                **kwargs)


@pytest.mark.parametrize("n", [*SIZES, 70_000])  # 70000: order statistics selected by buckets, not np.partition
def test_numerical_bins_are_mcgrads(mcgrad, n):
    y, p, w, segments = _bin_data(n, seed=n)
    expected = _mcgrad_bin_sizes(segments)
    for weights in (None, w):
        assert _bin_sizes(_depth_one(y, p, weights, segments)) == expected


@pytest.mark.parametrize("n", SIZES)
def test_numerical_bins_on_dask_are_mcgrads(mcgrad, n):
    y, p, w, segments = _bin_data(n, seed=n)
    expected = _mcgrad_bin_sizes(segments)
    chunks = (max(n // 3, 1), n - max(n // 3, 1))
    arr = lambda a: da.from_array(a, chunks=(chunks,))  # noqa: E731
    with dask.config.set(scheduler="sync"):
        for weights in (None, w):
            ref = _depth_one(y, p, weights, segments)
            got = _depth_one(arr(y), arr(p), None if weights is None else arr(weights),
                             {k: arr(v) for k, v in segments.items()}, fd.multicalibration_error)
            assert _bin_sizes(got) == _bin_sizes(ref) == expected
            assert_array_equal(got.segment_n, ref.segment_n)
            assert_allclose(got.segment_ecce, ref.segment_ecce, rtol=1e-12)  # as tests/test_dask_segments.py


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning")
def test_numerical_bins_on_spark_are_the_in_memory_ones(spark):
    """One frame of 1000 rows (a Spark job takes seconds here): features whose values other than NaN number 1000,
    999 and 998, every residue modulo 3, their edges on values (tenths), weighted and not."""
    import pyarrow as pa

    import fastcal.spark as fs

    n = 1000
    rng = np.random.default_rng(3)
    p = rng.uniform(0.01, 0.99, n)
    columns = {"p": p, "y": (rng.uniform(size=n) < p).astype(np.int64), "w": rng.exponential(size=n)}
    for name, missing in (("r1", 0), ("r0", 1), ("r2", 2)):
        x = rng.permutation(n) * 0.1
        x[rng.choice(n, missing, replace=False)] = np.nan
        columns[name] = x
    df = spark.createDataFrame(pa.table(columns)).repartition(3)
    table = df.toArrow()
    got_cols = {c: table.column(c).to_numpy() for c in columns}
    segments = {name: got_cols[name] for name in ("r1", "r0", "r2")}
    for weight_col in ("w", None):
        w = None if weight_col is None else got_cols["w"]
        ref = _depth_one(got_cols["y"], got_cols["p"], w, segments)
        got = fs.multicalibration_error(df, "y", "p", list(segments), weight_col=weight_col, numerical=list(segments),
                                        max_depth=1, min_samples_per_segment=1)
        assert _bin_sizes(got) == _bin_sizes(ref)
        assert_array_equal(got.segment_n, ref.segment_n)
        assert_allclose(got.segment_ecce, ref.segment_ecce, rtol=1e-12)  # as tests/test_spark_segments.py
    # the in-memory bins are np.quantile's: on tenths, sizes 333, 333, 334 (not 334, 333, 333) for 1000 values
    assert [_bin_sizes(ref)[("r1", b)] for b in range(3)] == [334, 333, 333]
    x = spark.createDataFrame(pa.table({"p": p[:12], "y": columns["y"][:12],
                                        "x": np.r_[-np.inf, np.arange(1.0, 11.0), np.inf]}))
    with pytest.raises(ValueError, match=r"segments\['x'\] must be finite to be cut into 3 quantile bins"):
        fs.multicalibration_error(x, "y", "p", ["x"], numerical=["x"])


def test_numeric_categorical_feature_with_missing_values_collapses_into_other(mcgrad):
    """MCGrad fills a categorical feature's missing values with "__NA" before collapsing it, which makes a numeric
    column one of objects: its collapsed values are "__OTHER", not the least value less 1 (in memory and on Dask,
    whose driver numbers the values alike)."""
    n = 300
    rng = np.random.default_rng(5)
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.uniform(size=n) < p).astype(np.uint8)
    k = rng.choice([0.0, 1.0, 2.0, 3.0, np.nan], n, p=[0.4, 0.3, 0.1, 0.1, 0.1])
    r = multicalibration_error(y, p, {"k": k}, min_samples_per_segment=1)
    assert [v.get("k") for v in r.segment_values[1:]].count("__OTHER") == 1
    _assert_equals_mcgrad(r, _mcgrad_mce(mcgrad, y, p, None, {"k": k}, (), min_samples_per_segment=1), n)
    with dask.config.set(scheduler="sync"):
        got = fd.multicalibration_error(da.from_array(y, chunks=100), da.from_array(p, chunks=100),
                                        {"k": da.from_array(k, chunks=100)}, min_samples_per_segment=1)
    assert got.segment_values == r.segment_values
    assert_array_equal(got.segment_n, r.segment_n)
    # no missing value: a numeric column, its collapsed values the least value less 1, as in MCGrad
    filled = np.where(np.isnan(k), 4.0, k)
    r = multicalibration_error(y, p, {"k": filled}, min_samples_per_segment=1)
    assert [v.get("k") for v in r.segment_values[1:]].count(-1.0) == 1
    _assert_equals_mcgrad(r, _mcgrad_mce(mcgrad, y, p, None, {"k": filled}, (), min_samples_per_segment=1), n)


# ---------------------------------------------------------------------------
# infinities
# ---------------------------------------------------------------------------
INFINITE = {
    "both": np.r_[-np.inf, np.arange(1.0, 11.0), np.inf],
    "top": np.r_[np.arange(1.0, 11.0), np.inf, np.nan],
    "bottom": np.r_[-np.inf, np.arange(1.0, 11.0), np.nan],
}


@pytest.mark.parametrize("kind", list(INFINITE))
def test_infinity_in_a_binned_feature_raises(mcgrad, kind):
    """MCGrad's pd.cut raises on the NaN edges of an infinity; fastcal names the feature, on every backend, and
    leaks no NumPy warning (filterwarnings=error)."""
    from mcgrad._segmentation import collapse_numeric_values

    x = INFINITE[kind]
    n = x.shape[0]
    y, p = np.arange(n) % 2, np.linspace(0.1, 0.9, n)
    with pytest.raises(ValueError):
        _quiet(collapse_numeric_values, pd.Series(x), 3)
    message = r"segments\['x'\] must be finite to be cut into 3 quantile bins, but contains infinity"
    with pytest.raises(ValueError, match=message):
        multicalibration_error(y, p, {"x": x}, numerical=["x"])
    with dask.config.set(scheduler="sync"), pytest.raises(ValueError, match=message):
        fd.multicalibration_error(da.from_array(y, chunks=5), da.from_array(p, chunks=5),
                                  {"x": da.from_array(x, chunks=5)}, numerical=["x"])


def test_infinity_in_a_feature_of_few_values_is_a_value(mcgrad):
    """Not binned (at most max_values_per_segment_feature values): an infinity is a value, as in MCGrad."""
    x = np.tile([1.0, 2.0, np.inf], 5)
    y, p = np.arange(15) % 2, np.linspace(0.1, 0.9, 15)
    r = multicalibration_error(y, p, {"x": x}, numerical=["x"], min_samples_per_segment=1)
    assert {v["x"] for v in r.segment_values[1:]} == {1.0, 2.0, np.inf}
    assert_array_equal(r.segment_n[1:], [5, 5, 5])


# ---------------------------------------------------------------------------
# proportional ECE: MCGrad's bins, closed on the left
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("decimals", [2, 3])
def test_proportional_ece_of_rounded_scores_against_mcgrad(mcgrad, weighted, decimals):
    """Scores rounded to 2 decimals lie on the edges k/40 (0.05, 0.1, ...), which MCGrad's np.digitize puts in the
    bin above. Tolerance: float64 sums of 5000 terms in another order (MCGrad's pandas groupby sums), a few n eps."""
    rng = np.random.default_rng(decimals)
    p = np.round(rng.uniform(0.01, 0.99, 5000), decimals)
    y = (rng.uniform(size=5000) < p ** 1.2).astype(np.uint8)
    w = rng.exponential(size=5000) if weighted else None
    expected = _quiet(mcgrad.proportional_expected_calibration_error, y, p, w)
    assert proportional_ece(y, p, sample_weight=w) == pytest.approx(expected, rel=1e-12)
    # float32 scores on the float64 edges, as np.digitize compares them; MCGrad's products p * w and p * 1 are float32
    # (2^-24 relative each, and so its means), fastcal's float64: 4 * 2^-24; a row in another bin moves it ~1e-4
    assert proportional_ece(y, p.astype(np.float32), sample_weight=w) == pytest.approx(
        _quiet(mcgrad.proportional_expected_calibration_error, y, p.astype(np.float32), w), rel=4 * 2.0**-24)


def test_proportional_ece_bins_are_closed_on_the_left():
    # bins [0, 0.5) and [0.5, 1]: 0.5 with the upper one (0.5 * 0.3 / 0.3 + 0.5 * 0.35 / 0.65)
    assert proportional_ece([0, 1, 1, 0], [0.2, 0.5, 0.8, 0.4], n_bins=2) == pytest.approx(0.5 + 0.5 * 0.35 / 0.65)
    # 0.5 and 1 in [0.5, 1]: mean label 0.5, mean prediction 0.75 (right-closed bins would give 0.5 * 1 + 0.5 * 0)
    assert proportional_ece([0, 1], [0.5, 1.0], n_bins=2) == pytest.approx(1 / 3)


# MCGrad's own expected values (its tests/test_metrics.py, mcgrad 0.1.5), printed to 6 decimals: its tolerances.
# The scores 0.2 and 0.8 lie on the edges of 5 bins, which MCGrad's bins put above them.
@pytest.mark.parametrize(("labels", "scores", "weights", "n_bins", "expected"), [
    ([0, 1, 1, 0, 1], [0.1, 0.9, 0.8, 0.2, 0.7], [1, 1, 1, 1, 1], 5, 0.556303),
    ([0, 1, 1, 0, 1], [0.1, 0.9, 0.8, 0.2, 0.7], [2, 1, 1, 1, 1], 5, 0.630252),
    ([0, 1, 1, 0, 1], [0.1, 0.9, 0.8, 0.2, 0.7], [2, 1, 2, 1, 1], 5, 0.575510),
    ([0, 1, 0, 0, 1], [0.2, 0.8, 0.3, 0.1, 0.9], [1, 1, 1, 1, 1], 5, 0.670588),
])
def test_proportional_ece_mcgrads_expected_values(labels, scores, weights, n_bins, expected):
    assert proportional_ece(labels, scores, sample_weight=weights, n_bins=n_bins) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("scores", "labels", "weights", "ecce", "sigma"), [
    ([0.6, 0.8, 0.2, 0.4], [0, 1, 0, 1], None, 0.15, 0.67082),
    ([0.6, 0.8, 0.2, 0.4], [1, 1, 1, 1], None, 0.5, 2.23607),
    ([0.6, 0.8, 0.2, 0.4], [0, 1, 0, 0], None, 0.3, 1.34164),
    ([0.6, 0.8, 0.2, 0.4], [0, 1, 0, 0], [0.4, 0.3, 0.2, 0.1], 0.32, 1.289317),
    ([0.0] * 4, [0, 1, 0, 0], None, 0.25, np.inf),  # sigma 0: inf (MCGrad's rule), and 0 for an ECCE of 0
    ([1.0] * 4, [0, 1, 0, 0], None, 0.75, np.inf),
    ([0.0] * 4, [0, 0, 0, 0], None, 0.0, 0.0),
    ([1.0] * 4, [1, 1, 1, 1], None, 0.0, 0.0),
    ([0.0] * 4, [1, 1, 1, 1], None, 1.0, np.inf),
    ([1.0] * 4, [0, 0, 0, 0], None, 1.0, np.inf),
])
def test_ecce_mcgrads_expected_values(scores, labels, weights, ecce, sigma):
    r = fastcal.ecce(labels, scores, sample_weight=weights)
    assert r.ecce == pytest.approx(ecce, abs=1e-12)
    assert r.ecce_sigma == pytest.approx(sigma, abs=1e-5)


# ---------------------------------------------------------------------------
# multicalibration_error against MCGrad: every residue modulo 3, weights or not, both kinds of features
# ---------------------------------------------------------------------------
def _mce_data(n, seed, weighted):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)  # untied: MCGrad's ECCE takes tied rows one by one, fastcal pools them
    a = rng.choice(["fr", "de", "it", "nl"], n, p=[0.4, 0.3, 0.2, 0.1])  # collapsed past 3 values
    b = rng.integers(0, 3, n)
    c = rng.normal(size=n)
    d = np.round(rng.normal(size=n) * 2)  # ties
    d[rng.uniform(size=n) < 0.05] = np.nan
    y = (rng.uniform(size=n) < np.where(a == "fr", p ** 1.5, p)).astype(np.uint8)
    w = rng.exponential(size=n) if weighted else None
    return y, p, w, {"a": a, "b": b, "c": c, "d": d}


def _mcgrad_mce(mcgrad, y, p, w, segments, numerical, **kwargs):
    df = pd.DataFrame({"label": y, "score": p, **segments})
    if w is not None:
        df["weight"] = w
    categorical = [name for name in segments if name not in numerical]
    m = _quiet(mcgrad.MulticalibrationError, df, "label", "score", None if w is None else "weight",
               categorical or None, list(numerical) or None, precision_dtype="float64", **kwargs)
    _quiet(lambda: m.segments_ecce)
    return m


def _assert_equals_mcgrad(r, m, n):
    # MCGrad's properties divide by a prevalence of 0 (no positive label in 3 rows) with NumPy's warning
    theirs = _quiet(lambda: {name: float(getattr(m, name)) for name in (*SCALARS, "mce_pvalue", "global_ecce_pvalue")})
    for name in SCALARS:
        assert getattr(r, name) == pytest.approx(theirs[name], rel=RTOL, nan_ok=True), name
    # MCGrad's p-values are 1 - F (an absolute rounding of ~eps), fastcal's the tail series
    assert r.mce_pvalue == pytest.approx(theirs["mce_pvalue"], rel=RTOL, abs=4 * EPS)
    assert r.global_ecce_pvalue == pytest.approx(theirs["global_ecce_pvalue"], rel=RTOL, abs=4 * EPS)
    masks = m._segments[0].reshape(-1, n)[: m.total_number_segments]
    assert_array_equal(r.segment_n, masks.sum(axis=1))
    expected = [{} for _ in range(m.total_number_segments)]
    for column, value, index in m._segments[1].itertuples(index=False):
        expected[index][column] = value
    assert len(r.segment_values) == len(expected)
    for ours, theirs in zip(r.segment_values, expected):
        assert ours.keys() == theirs.keys()
        for key in ours:
            assert ours[key] == theirs[key] or (ours[key] != ours[key] and theirs[key] != theirs[key])
    assert r.segment_ecce.min() >= 1e-4 or r.segment_ecce.size == 0  # the floor RTOL relies on
    assert_allclose(r.segment_ecce, m.segments_ecce, rtol=RTOL)
    assert_allclose(r.segment_ecce_sigma, m.segments_ecce_sigma, rtol=RTOL)
    assert_allclose(r.segment_pvalue, m.segments_ecce_pvalue, rtol=RTOL, atol=4 * EPS)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("n", [3, 4, 5, 99, 100, 101, 29998, 29999, 30000])
def test_multicalibration_error_against_mcgrad_every_residue(mcgrad, n, weighted):
    y, p, w, segments = _mce_data(n, seed=n, weighted=weighted)
    kwargs = {"min_samples_per_segment": 1} if n < 10 else {}
    m = _mcgrad_mce(mcgrad, y, p, w, segments, ("c", "d"), **kwargs)
    r = multicalibration_error(y, p, segments, numerical=["c", "d"], sample_weight=w, **kwargs)
    _assert_equals_mcgrad(r, m, n)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(3, 400), seed=st.integers(0, 2**32 - 1), weighted=st.booleans(),
       numerical=st.sampled_from([("c",), ("c", "d"), ("d", "b")]), max_values=st.integers(2, 4),
       min_samples=st.integers(1, 12))
def test_multicalibration_error_against_mcgrad_random(mcgrad, n, seed, weighted, numerical, max_values, min_samples):
    y, p, w, segments = _mce_data(n, seed, weighted)
    # min_samples_per_segment above n leaves MCGrad no segment at all, not even all rows: it raises
    kwargs = {"max_values_per_segment_feature": max_values, "min_samples_per_segment": min(min_samples, n)}
    m = _mcgrad_mce(mcgrad, y, p, w, segments, numerical, **kwargs)
    r = multicalibration_error(y, p, segments, numerical=list(numerical), sample_weight=w, **kwargs)
    _assert_equals_mcgrad(r, m, n)
