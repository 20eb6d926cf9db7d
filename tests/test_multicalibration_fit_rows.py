"""The multicalibration fit over rows (fastcal.multicalibration.fit_rows) against the in-memory fit.

Oracle: ``MulticalibrationCalibrator.fit`` on the concatenated chunks. What is exact in both (the feature tables,
the segments, the bucket edges, the chosen penalty) must be equal; the slope and offsets are float64 sums grouped
by chunk instead of by fixed chunks of the whole column, so they agree to the rounding of those sums (the issue's
1e-12), and the predictions within what that difference of the table can move them (in :func:`assert_same_model`:
the logit moves by at most ``|da| |logit p| + sum |db|`` over a row's cells, at most two per segment, the
probability by a quarter of that, plus a few roundings of each prediction).
"""

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fastcal
from fastcal._engine import CHUNK_NUMBER, ListRows, bind_chunk
from fastcal.multicalibration import fit_rows

NAMES = ["a", "b", "num", "few"]
NUMERICAL = ["num", "few"]


def _case(n, seed, dtype=np.float64, weighted=False, many=False):
    """Scores, labels, weights and four features: strings (with None; 9 values when ``many``, folded into
    "__OTHER"), integers (8 values when ``many``: folded into the least less 1), a binned numerical feature (NaN
    included) and a numerical one of three values (each its own)."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n).astype(dtype)
    letters = np.array(list("pqrstuvwx" if many else "pqr") + [None], dtype=object)
    a = rng.choice(letters, n)
    b = rng.integers(0, 8 if many else 3, n)
    num = rng.normal(size=n)
    num[::29] = np.nan
    few = rng.choice([0.5, 1.5, 2.5], n)
    lg = np.log(p.astype(np.float64)) - np.log1p(-p.astype(np.float64))
    bias = 0.6 * (a == "p") - 0.5 * (b == 2) + 0.7 * ((num > 0.8) & (b == 1))
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(lg + bias)))).astype(np.int64)
    w = rng.uniform(0.2, 3.0, n) if weighted else None
    return p, y, w, {"a": a, "b": b, "num": num, "few": few}


def _chunks(p, y, w, seg, cuts):
    bounds = [0, *cuts, p.size]
    return [(p[s:e], y[s:e], None if w is None else w[s:e], *(seg[k][s:e] for k in NAMES))
            for s, e in zip(bounds[:-1], bounds[1:])]


def assert_same_model(got, want, p, seg):
    """What is exact is equal, the rest to 1e-12, the predictions within what the table's difference allows."""
    assert got.feature_names_in_ == want.feature_names_in_
    assert got.feature_kinds_ == want.feature_kinds_
    np.testing.assert_array_equal(got.feature_sizes_, want.feature_sizes_)
    np.testing.assert_array_equal(got.feature_others_, want.feature_others_)
    np.testing.assert_array_equal(got.feature_edges_, want.feature_edges_)

    def tables(cal):
        out, start = [], 0
        for count in cal.feature_counts_.tolist():
            values = cal.feature_values_[start:start + count]
            digits = cal.feature_digits_[start:start + count].tolist()
            out.append({("nan" if v != v else v): d for v, d in zip(values, digits)})
            start += count
        return out

    assert tables(got) == tables(want)
    np.testing.assert_array_equal(got.segment_features_, want.segment_features_)
    np.testing.assert_array_equal(got.segment_digits_, want.segment_digits_)
    np.testing.assert_array_equal(got.bucket_edges_, want.bucket_edges_)
    assert got.n_rounds_ == want.n_rounds_
    assert str(got.segment_values_) == str(want.segment_values_)  # str: NaN labels compare equal
    np.testing.assert_allclose(got.cv_losses_, want.cv_losses_, rtol=1e-12, atol=0)
    scale = max(1.0, float(np.abs(want.offsets_).max(initial=0.0)))
    assert abs(got.slope_ - want.slope_) <= 1e-12 * max(1.0, abs(want.slope_))
    assert np.abs(got.offsets_ - want.offsets_).max(initial=0.0) <= 1e-12 * scale
    np.testing.assert_array_equal(got.offsets_ == 0, want.offsets_ == 0)  # the lasso's zeros are the same
    q_got, q_want = got.predict(p, seg), want.predict(p, seg)
    assert q_got.dtype == q_want.dtype == p.dtype
    lg = np.abs(np.log(p.astype(np.float64)) - np.log1p(-p.astype(np.float64)))
    dz = abs(got.slope_ - want.slope_) * lg + 2 * want.offsets_.shape[0] * np.abs(got.offsets_ - want.offsets_).max()
    bound = 0.25 * dz + 4 * np.spacing(q_want).astype(np.float64)
    assert np.all(np.abs(q_got.astype(np.float64) - q_want) <= bound)


def _fit_rows(chunks, dtype, weighted, **params):
    return fit_rows.fit_multicalibration(ListRows(chunks), x_dtype=np.dtype(dtype), weighted=weighted, names=NAMES,
                                         numerical=NUMERICAL,
                                         calibrator=fastcal.MulticalibrationCalibrator(**params))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("many", [False, True])
def test_equals_the_in_memory_fit(dtype, weighted, many):
    p, y, w, seg = _case(8000, 3, dtype, weighted, many)
    want = fastcal.MulticalibrationCalibrator(n_buckets=4).fit(p, y, seg, sample_weight=w, numerical=NUMERICAL)
    assert want.n_rounds_ > 0 and np.count_nonzero(want.offsets_) > 2  # a model that changes something
    if many:
        assert np.all(want.feature_others_[:2] >= 0)  # strings and integers both folded
    got = _fit_rows(_chunks(p, y, w, seg, [1000, 1000, 4500]), dtype, weighted, n_buckets=4)  # an empty chunk
    assert_same_model(got, want, p, seg)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(60, 1500), seed=st.integers(0, 2**16), n_cuts=st.integers(0, 5), weighted=st.booleans(),
       ties=st.booleans(), scale=st.sampled_from([1.0, 2.0**-30, 1e6]))
def test_any_cut_and_ties(n, seed, n_cuts, weighted, ties, scale):
    """Sizes, chunk cuts (empty chunks among them), tied scores, and weights scaled: the model does not change."""
    p, y, w, seg = _case(n, seed, weighted=weighted)
    if ties:
        p = np.round(p * 8) / 10 + 0.05
    if w is not None:
        w = w * scale
    cuts = sorted(np.random.default_rng(seed).integers(0, n + 1, n_cuts).tolist())
    want = fastcal.MulticalibrationCalibrator(n_buckets=3, min_samples_per_segment=5).fit(
        p, y, seg, sample_weight=w, numerical=NUMERICAL)
    got = _fit_rows(_chunks(p, y, w, seg, cuts), p.dtype, weighted, n_buckets=3, min_samples_per_segment=5)
    assert_same_model(got, want, p, seg)


def test_bad_input_raises_the_in_memory_errors():
    p, y, w, seg = _case(500, 1)
    with pytest.raises(ValueError, match="scores must have at least 1 element, got 0"):
        fit_rows.fit_multicalibration(ListRows([tuple(c[:0] for c in _chunks(p, y, w, seg, [])[0][:2]) + (None,)
                                                + tuple(seg[k][:0] for k in NAMES)]),
                                      x_dtype=np.dtype(np.float64), weighted=False, names=NAMES)
    with pytest.raises(ValueError, match="segments must hold at least one feature"):
        fit_rows.fit_multicalibration(ListRows([(p, y, None)]), x_dtype=p.dtype, weighted=False, names=[])
    with pytest.raises(TypeError, match="calibrator must be a MulticalibrationCalibrator"):
        fit_rows.fit_multicalibration(ListRows(_chunks(p, y, w, seg, [])), x_dtype=p.dtype, weighted=False,
                                      names=NAMES, calibrator=fastcal.PlattScaling())
    with pytest.raises(ValueError, match="n_folds"):
        _fit_rows(_chunks(p, y, w, seg, []), p.dtype, False, n_folds=1)
    bad = p.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match="scores must be finite, but contains NaN"):
        _fit_rows(_chunks(bad, y, w, seg, [100]), p.dtype, False)
    with pytest.raises(ValueError, match=r"numerical names \['zz'\]"):
        fit_rows.fit_multicalibration(ListRows(_chunks(p, y, w, seg, [])), x_dtype=p.dtype, weighted=False,
                                      names=NAMES, numerical=["zz"])


def _number(chunk, number, extra):
    return number, extra, chunk[0].shape[0]


def test_the_chunk_number_reaches_each_chunk():
    assert pickle.loads(pickle.dumps(CHUNK_NUMBER)) is CHUNK_NUMBER
    assert bind_chunk((1, CHUNK_NUMBER, "x"), 4) == (1, 4, "x")
    rows = ListRows([(np.zeros(k),) for k in (3, 0, 2)])
    assert rows.map(_number, CHUNK_NUMBER, "e") == [(0, "e", 3), (1, "e", 0), (2, "e", 2)]
    converted, facts = rows.convert(lambda c, i: (c, i), CHUNK_NUMBER)
    assert facts == [0, 1, 2]


def test_memory_follows_the_rows_patterns_not_every_combination():
    """Six features of seven values cross into 7^6 cells x 8 buckets, few of which hold a row: the fit over 40 chunks
    allocates what the in-memory fit does (the patterns of the rows, each chunk's own), not a table of every
    combination per chunk (measured by tracemalloc, which sees NumPy's allocations; the in-memory fit in the same
    process is the yardstick)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    n = 30_000
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    names = [f"f{i}" for i in range(6)]
    seg = {k: rng.integers(0, 7, n) for k in names}
    bounds = np.linspace(0, n, 41).astype(int)
    chunks = [(p[a:b], y[a:b], None, *(seg[f][a:b] for f in names)) for a, b in zip(bounds[:-1], bounds[1:])]
    params = {"max_values_per_segment_feature": 8}
    fastcal.MulticalibrationCalibrator(**params).fit(p[:500], y[:500], {k: v[:500] for k, v in seg.items()})
    tracemalloc.start()
    try:
        want = fastcal.MulticalibrationCalibrator(**params).fit(p, y, seg)
        in_memory = tracemalloc.get_traced_memory()[1]
        tracemalloc.reset_peak()
        got = fit_rows.fit_multicalibration(ListRows(chunks), x_dtype=p.dtype, weighted=False, names=names,
                                            calibrator=fastcal.MulticalibrationCalibrator(**params))
        over_rows = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert_same_model(got, want, p, seg)
    assert over_rows < 2 * in_memory, (over_rows, in_memory)
