"""GroupedCalibrator against per-group fits of its calibrator (the oracle: the calibrator itself, on each group's rows).

scikit-learn's estimator checks call ``fit(X, y)``; a GroupedCalibrator needs
its groups (``fit(scores, y, groups)``), so they do not apply: the
conventions they check (parameters, clone, fitted attributes, not fitted,
inputs not modified, read-only input) are tested here.
"""

import json

import numpy as np
import pytest

import fastcal
from fastcal import (
    BetaCalibration,
    GroupedCalibrator,
    HistogramBinning,
    IsotonicRegression,
    NotFittedError,
    PlattScaling,
    VennAbers,
)

from .threads import serial_and_parallel

CALIBRATORS = [IsotonicRegression(out_of_bounds="clip"), PlattScaling(), BetaCalibration(), HistogramBinning(n_bins=5),
               VennAbers()]


def _data(n=6000, seed=0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    groups = rng.choice(np.arange(7), n, p=[0.3, 0.25, 0.2, 0.15, 0.07, 0.02, 0.01])
    p = rng.uniform(0.02, 0.98, n)
    truth = np.where(groups % 2 == 0, p**2, np.sqrt(p))
    y = (rng.uniform(size=n) < truth).astype(np.int64)
    w = rng.exponential(size=n)
    return p.astype(dtype), y, groups, w


def _per_group(template, p, y, groups, w, minimum, p_new, g_new):
    """Predictions of a clone of ``template`` fitted on each group's rows alone, the global fit for the others."""
    clone = lambda: type(template)(**template.get_params())  # noqa: E731
    glob = clone().fit(p, y, sample_weight=w)
    out = np.asarray(glob.predict(p_new)).copy()
    for g in np.unique(groups):
        mask = groups == g
        if mask.sum() >= minimum:
            fitted = clone().fit(p[mask], y[mask], sample_weight=None if w is None else w[mask])
            at = g_new == g
            out[at] = fitted.predict(p_new[at])
    return out


@pytest.mark.parametrize("calibrator", CALIBRATORS, ids=lambda c: type(c).__name__)
@pytest.mark.parametrize("weighted", [False, True])
def test_equals_per_group_fits(calibrator, weighted):
    p, y, groups, w = _data()
    w = w if weighted else None
    cal = GroupedCalibrator(calibrator, min_samples_per_group=200).fit(p, y, groups, sample_weight=w)
    sizes = np.bincount(groups)
    assert cal.groups_ == [g for g in range(7) if sizes[g] >= 200]
    np.testing.assert_array_equal(cal.group_counts_, sizes[sizes >= 200])
    rng = np.random.default_rng(1)
    p_new = rng.uniform(0, 1, 3000).astype(p.dtype)
    g_new = rng.integers(0, 9, 3000)  # 7 and 8 unseen, 5 and 6 too small: the global fit
    expected = _per_group(calibrator, p, y, groups, w, 200, p_new, g_new)
    np.testing.assert_array_equal(cal.predict(p_new, g_new), expected)
    small = np.isin(g_new, [5, 6, 7, 8])
    np.testing.assert_array_equal(cal.predict(p_new, g_new)[small], cal.global_calibrator_.predict(p_new[small]))


def test_float32_scores():
    p, y, groups, _ = _data(dtype=np.float32)
    cal = GroupedCalibrator(PlattScaling(), min_samples_per_group=50).fit(p, y, groups)
    out = cal.predict(p, groups)
    assert out.dtype == np.float32  # PlattScaling keeps float32
    np.testing.assert_array_equal(out, _per_group(PlattScaling(), p, y, groups, None, 50, p, groups))


@pytest.mark.parametrize("kind", ["str", "object", "float", "categorical", "bool"])
def test_groups_of_any_hashable_dtype(kind):
    p, y, groups, w = _data(seed=3)
    if kind == "bool":
        groups = groups % 2
    names = np.array(["fr", "de", "us", "uk", "it", "es", "pl"])
    as_kind = {
        "str": lambda g: names[g],
        "object": lambda g: np.array([None if x == 3 else names[x] for x in g], dtype=object),
        "float": lambda g: np.where(g == 3, np.nan, g * 1.5),
        "categorical": lambda g: __import__("pandas").Categorical(names[g]),
        "bool": lambda g: g.astype(bool),
    }[kind]
    cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=30).fit(p, y, as_kind(groups), sample_weight=w)
    by_int = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=30).fit(p, y, groups, sample_weight=w)
    assert len(cal.groups_) == len(by_int.groups_)
    np.testing.assert_array_equal(cal.predict(p, as_kind(groups)), by_int.predict(p, groups))
    if kind == "object":
        assert None in cal.groups_  # missing values are one group


@pytest.mark.parametrize("values", [
    np.array([True, True, True]),  # one value, not the least of its dtype: its own label
    np.array([False, True, False]),
    np.array([7, -3, 7, 2**40], dtype=np.int64),  # a range too wide to count: np.unique
    np.array([200, 3, 200, 9], dtype=np.uint8),
    np.array([5, -128, 5], dtype=np.int8),
    np.array(["de", "fr", "de"]),
    np.array([2.5, np.nan, 2.5, -1.0]),
    np.array([2, 0, 1, 2, 0], dtype=np.int64),  # already 0..k-1, each present: the values are the codes
    np.array([2, 0, 2, 0], dtype=np.int64),  # 1 missing: renumbered
])
def test_group_sizes_codes_against_numpy(values):
    """Codes number the distinct values in the order of ``uniques``, sizes count them: checked against
    ``np.unique``, whatever the path (counted in a small range, or numbered by ``np.unique``)."""
    from fastcal._coding import group_codes, group_sizes_codes

    codes, uniques, sizes = group_sizes_codes(values, "groups")
    assert codes.dtype == np.int64 and sizes.dtype == np.int64
    as_values = [np.nan if u is None else u for u in uniques]
    np.testing.assert_array_equal(np.array(as_values, dtype=values.dtype)[codes], values)
    np.testing.assert_array_equal(sizes, np.bincount(codes, minlength=len(uniques)))
    assert sorted(map(str, as_values)) == sorted(map(str, np.unique(values).tolist()))
    assert all(type(u) is type(values[:1].tolist()[0]) for u in uniques if u is not None)
    c2, u2 = group_codes(values, "groups")
    np.testing.assert_array_equal(c2, codes)
    assert u2 == uniques
    assert (codes is values) == (values.dtype == np.int64 and np.array_equal(np.unique(values), np.arange(len(uniques))))


def test_group_sizes_codes_same_at_any_thread_count():
    from fastcal._coding import group_sizes_codes

    values = np.random.default_rng(0).integers(-50, 5000, 700_000)
    (c1, u1, s1), (c2, u2, s2) = serial_and_parallel(lambda: group_sizes_codes(values, "groups"))
    np.testing.assert_array_equal(c1, c2)
    np.testing.assert_array_equal(s1, s2)
    assert u1 == u2
    np.testing.assert_array_equal(s1, np.unique(values, return_counts=True)[1])


def test_threads_do_not_change_the_models():
    p, y, groups, w = _data(n=20_000, seed=4)
    groups = np.random.default_rng(5).integers(0, 300, p.shape[0])

    def fit():
        cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=20).fit(p, y, groups, sample_weight=w)
        return cal.predict(p, groups), cal.to_dict()

    (serial, d1), (parallel, d2) = serial_and_parallel(fit)
    np.testing.assert_array_equal(serial, parallel)
    assert d1 == d2


def test_model_file_round_trip_and_tampering(tmp_path):
    p, y, groups, w = _data(seed=6)
    names = np.array(["fr", "de", "us", "uk", "it", "es", "pl"])[groups]
    cal = GroupedCalibrator(BetaCalibration(parameters="ab"), min_samples_per_group=100).fit(p, y, names, w)
    path = tmp_path / "m.json"
    cal.save(path)
    back = fastcal.load(path)
    assert isinstance(back, GroupedCalibrator) and back.get_params()["min_samples_per_group"] == 100
    assert back.calibrator.get_params() == BetaCalibration(parameters="ab").get_params()
    np.testing.assert_array_equal(back.predict(p, names), cal.predict(p, names))
    good = json.loads(path.read_text())

    def refused(edit, match):
        data = json.loads(json.dumps(good))
        edit(data)
        with pytest.raises(ValueError, match=match):
            fastcal._persist.from_dict(data)

    refused(lambda d: d["state"]["groups_"].append("xx"), "differ in length")
    refused(lambda d: d["state"]["groups_"].__setitem__(1, d["state"]["groups_"][0]), "twice")
    refused(lambda d: d["state"]["groups_"].__setitem__(0, {"a": 1}), "list of strings")
    refused(lambda d: d["state"]["calibrators_"][0].__setitem__("type", "Pickle"), "known types")
    refused(lambda d: d["state"]["calibrators_"][0]["state"].__setitem__("a_", float("nan")), "finite")
    refused(lambda d: d["state"].__setitem__("calibrators_", {}), "list of models")
    refused(lambda d: d["params"]["calibrator"].__setitem__("type", "os.system"), "known types")
    refused(lambda d: d["params"]["calibrator"]["params"].__setitem__("extra", 1), "must be exactly")
    refused(lambda d: d["params"].__setitem__("min_samples_per_group", 0), "min_samples_per_group")
    refused(lambda d: d["state"].__setitem__("global_calibrator_", good), "not a 1-D calibrator")


def test_scikit_learn_conventions():
    from sklearn.base import clone

    p, y, groups, w = _data(seed=7)
    cal = GroupedCalibrator(PlattScaling(max_iter=50), min_samples_per_group=10)
    assert cal.get_params() == {"calibrator": cal.calibrator, "min_samples_per_group": 10}
    copy = clone(cal)
    assert copy.get_params()["calibrator"] is not cal.calibrator
    assert copy.get_params()["calibrator"].get_params() == {"max_iter": 50, "tol": None}
    assert cal.set_params(min_samples_per_group=20) is cal and cal.min_samples_per_group == 20
    with pytest.raises(NotFittedError):
        cal.predict(p, groups)
    before = p.copy(), y.copy(), groups.copy(), w.copy()
    ro = [a.copy() for a in (p, y, groups, w)]
    for a in ro:
        a.flags.writeable = False
    fitted = cal.fit(*ro[:3], sample_weight=ro[3])
    assert fitted is cal and not hasattr(GroupedCalibrator(), "groups_")
    for a, b in zip(before, (p, y, groups, w)):
        np.testing.assert_array_equal(a, b)
    strided = np.repeat(p, 2)[::2]
    np.testing.assert_array_equal(cal.predict(strided, groups), cal.predict(p, groups))
    assert cal.predict(p[:0], groups[:0]).shape == (0,)


def test_validation():
    p, y, groups, _ = _data(n=500)
    with pytest.raises(TypeError, match="calibrator must be"):
        GroupedCalibrator(fastcal.TemperatureScaling()).fit(p, y, groups)
    with pytest.raises(TypeError, match="calibrator must be"):
        GroupedCalibrator(GroupedCalibrator()).fit(p, y, groups)
    with pytest.raises(ValueError, match="min_samples_per_group"):
        GroupedCalibrator(min_samples_per_group=0).fit(p, y, groups)
    with pytest.raises(ValueError, match="Inconsistent"):
        GroupedCalibrator().fit(p, y, groups[:-1])
    cal = GroupedCalibrator().fit(p, y, groups)
    with pytest.raises(ValueError, match="Inconsistent"):
        cal.predict(p, groups[:-1])
    with pytest.raises(ValueError, match="y"):
        GroupedCalibrator(PlattScaling()).fit(p, y + 2, groups)


# --------------------------------------------------------------------------
# Batched isotonic fits (one pass over all groups): the bits of each group's own fit
# --------------------------------------------------------------------------

ISO_PARAMS = [{}, {"out_of_bounds": "clip"}, {"increasing": False, "out_of_bounds": "clip"},
              {"y_min": 0.1, "y_max": 0.8}]
FITTED = ("X_thresholds_", "y_thresholds_", "X_min_", "X_max_", "increasing_")


def _tied_data(n, k, seed, dtype, weights):
    """Scores with many ties (a fifth rounded to 2 decimals), ``k`` groups of uneven sizes, groups of one row
    (groups ``k`` and ``k + 1``), and weights with zeros (``weights="zeros"``) or none."""
    rng = np.random.default_rng(seed)
    s = rng.uniform(size=n).astype(dtype)
    s[::5] = np.round(s[::5], 2)
    g = rng.choice(k, n, p=np.arange(1, k + 1) / (k * (k + 1) / 2))
    g[:2] = [k, k + 1]
    y = (rng.uniform(size=n) < s).astype(np.int64)
    w = None
    if weights:
        w = rng.exponential(size=n)
        w[::4] = 0.0
        w[:2] = [0.7, 3.0]
    return s, y, g, w


def _assert_same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), (a, b)


def _assert_own_fits(cal, params, s, y, g, w):
    """Every group's model has the bits of IsotonicRegression(**params) fitted on the group's rows alone, and
    predicts as it does (out of range, at ties and between knots); unseen groups predict as the global fit."""
    rng = np.random.default_rng(9)
    assert len(cal.calibrators_) == len(cal.groups_) > 0
    for group, model in zip(cal.groups_, cal.calibrators_):
        rows = g == group
        own = IsotonicRegression(**params).fit(s[rows], y[rows], sample_weight=None if w is None else w[rows])
        for name in FITTED:
            _assert_same_bits(getattr(model, name), getattr(own, name))
        t = np.concatenate([rng.uniform(-0.2, 1.2, 50), s[rows][:20]]).astype(s.dtype)
        _assert_same_bits(cal.predict(t, np.full(t.shape[0], group)), own.predict(t))
    t = rng.uniform(-0.2, 1.2, 50).astype(s.dtype)
    _assert_same_bits(cal.predict(t, np.full(50, -5)), cal.global_calibrator_.predict(t))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("params", ISO_PARAMS, ids=str)
def test_batched_isotonic_fits_are_the_groups_own_fits_bit_for_bit(dtype, weights, params):
    s, y, g, w = _tied_data(6000, 12, 11, dtype, weights)
    cal = GroupedCalibrator(IsotonicRegression(**params), min_samples_per_group=1).fit(s, y, g, sample_weight=w)
    assert {g[0], g[1]} <= set(cal.groups_)  # groups of one row get a model of their own (one knot)
    _assert_own_fits(cal, params, s, y, g, w)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("ulps, per", [(5, 60), (3000, 300)])
def test_batched_weighted_isotonic_orders_scores_ulps_apart_and_signed_zeros(dtype, ulps, per):
    """The weighted batched fit orders each group's rows by one sort of distinct keys (group, score cut to the
    bits left, position), then an insertion sort by score where the cut scores are equal, or a merge sort of the
    group past 16 moves a row (3000 ulps in groups of 300: the float64 scores of a group all cut alike). Scores
    a few ulps apart, ties and signed zeros come in each group's own stable order: every model has the bits of
    its own fit."""
    rng = np.random.default_rng(11)
    n_groups = 40
    g = np.repeat(np.arange(n_groups), per)
    uint = np.uint64 if dtype == np.float64 else np.uint32
    base = np.where(g % 2 == 0, dtype(0.5), dtype(0.0)).astype(dtype)
    s = (base.view(uint) + rng.integers(0, ulps + 1, g.size).astype(uint)).view(dtype)  # up to `ulps` above
    s[rng.uniform(size=g.size) < 0.2] = base[0]  # ties
    s = np.where((g % 2 == 1) & (rng.uniform(size=g.size) < 0.5), -s, s).astype(dtype)  # -0.0 among them
    s[(g % 2 == 1) & (rng.uniform(size=g.size) < 0.2)] = 0.0
    assert np.signbit(s[s == 0]).any() and (~np.signbit(s[s == 0])).any()
    order = rng.permutation(g.size)
    s, g = s[order], g[order]
    y = (rng.uniform(size=g.size) < 0.5).astype(np.int64)
    w = rng.uniform(0.1, 3.0, g.size)
    params = {"out_of_bounds": "clip"}
    cal = GroupedCalibrator(IsotonicRegression(**params), min_samples_per_group=1).fit(s, y, g, sample_weight=w)
    _assert_own_fits(cal, params, s, y, g, w)


@pytest.mark.parametrize("out_of_bounds", ["clip", "nan"])
def test_isotonic_predict_of_mixed_models_in_one_block(out_of_bounds):
    # The knot searches of consecutive rows advance in lockstep: rows of models of 1 to about 60 knots, in and out
    # of their ranges and on their knots, interleaved at random, each predicts as its model's own predict.
    rng = np.random.default_rng(21)
    s_parts, y_parts, g_parts = [], [], []
    for k in range(60):
        m = 30 + 5 * k
        s_parts.append(rng.integers(0, k + 1, m) / (k + 1) + 0.01 * (k % 7))
        y_parts.append(rng.random(m) < s_parts[-1])
        g_parts.append(np.full(m, k))
    s, y, g = np.concatenate(s_parts), np.concatenate(y_parts), np.concatenate(g_parts)
    params = {"out_of_bounds": out_of_bounds}
    cal = GroupedCalibrator(IsotonicRegression(**params), min_samples_per_group=1).fit(s, y, g)
    sizes = [m.X_thresholds_.shape[0] for m in cal.calibrators_]
    assert min(sizes) == 1 and max(sizes) > 20
    n = 5000
    g_new = rng.integers(-3, 63, n)  # unseen groups: the global model
    t = np.where(rng.random(n) < 0.3, s[rng.integers(0, s.size, n)], rng.uniform(-0.2, 1.3, n))
    expected = np.empty(n)
    for group in np.unique(g_new).tolist():
        at = g_new == group
        model = cal.calibrators_[cal.groups_.index(group)] if group in cal.groups_ else cal.global_calibrator_
        expected[at] = model.predict(t[at])
    _assert_same_bits(cal.predict(t, g_new), expected)


def test_batched_isotonic_with_min_samples_and_mixed_predict_rows():
    s, y, g, w = _tied_data(5000, 10, 12, np.float64, True)
    cal = GroupedCalibrator(IsotonicRegression(out_of_bounds="clip"), min_samples_per_group=300).fit(s, y, g, w)
    sizes = np.bincount(g)
    assert cal.groups_ == [i for i in range(sizes.size) if sizes[i] >= 300]
    rng = np.random.default_rng(2)
    p_new, g_new = rng.uniform(-0.1, 1.1, 4000), rng.integers(-2, 14, 4000)  # small, unseen and fitted groups
    expected = _per_group(IsotonicRegression(out_of_bounds="clip"), s, y, g, w, 300, p_new, g_new)
    _assert_same_bits(cal.predict(p_new, g_new), expected)


@pytest.mark.parametrize("params", [{"increasing": "auto"}, {"centered": True}], ids=str)
def test_isotonic_parameters_that_are_not_batched_keep_the_own_fits(params):
    s, y, g, w = _tied_data(3000, 5, 13, np.float64, True)
    cal = GroupedCalibrator(IsotonicRegression(**params), min_samples_per_group=1).fit(s, y, g, w)
    _assert_own_fits(cal, params, s, y, g, w)


def test_real_valued_targets_and_weighted_fall_back_to_own_fits():
    s, _, g, w = _tied_data(3000, 5, 14, np.float64, True)
    target = np.random.default_rng(3).uniform(size=s.shape[0])
    for weights in (None, w):
        cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=1).fit(s, target, g, weights)
        _assert_own_fits(cal, {}, s, target, g, weights)


def _one_big_group(big, rest, seed):
    """Weighted data whose group 0 has ``big`` rows, and ``rest`` more rows in groups 1 to 3."""
    rng = np.random.default_rng(seed)
    n = big + rest
    s = rng.uniform(size=n)
    g = np.concatenate([np.zeros(big, dtype=np.int64), rng.integers(1, 4, rest)])
    y = (rng.uniform(size=n) < s).astype(np.int64)
    return s, y, g, rng.exponential(size=n)


def test_a_group_too_big_for_one_engine_chunk_gets_its_own_fit():
    from fastcal.isotonic import _pav

    big = 2 * _pav.CHUNK_ROWS + 5  # the engine cuts its own fit into chunks: weighted sums differ by cut
    s, y, g, w = _one_big_group(big, 3000, 15)
    cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=1).fit(s, y, g, w)
    _assert_own_fits(cal, {}, s, y, g, w)


def test_a_group_of_zero_weights_takes_the_global_model():
    s, y, g, w = _tied_data(2000, 4, 16, np.float64, True)
    w[g == 2] = 0.0
    with pytest.raises(ValueError, match="non-zero"):  # its own fit has nothing to fit
        IsotonicRegression().fit(s[g == 2], y[g == 2], sample_weight=w[g == 2])
    cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=1).fit(s, y, g, w)
    assert 2 not in cal.groups_ and len(cal.groups_) == len(np.unique(g)) - 1
    np.testing.assert_array_equal(cal.predict(s[g == 2], g[g == 2]), cal.global_calibrator_.predict(s[g == 2]))


@pytest.mark.parametrize("weights", [False, True])
def test_batched_isotonic_same_bits_at_1_2_3_8_threads(weights, monkeypatch):
    from fastcal._core import parallel as _parallel

    from .threads import num_threads

    # Small thresholds: test-sized input is cut into many row chunks and buckets of groups, as 10^7 rows are.
    monkeypatch.setattr(_parallel, "PARALLEL_MIN_SIZE", 1 << 10)
    monkeypatch.setattr(_parallel, "TASK_ROWS", 1 << 9)
    s, y, g, w = _tied_data(30_000, 200, 17, np.float32, weights)
    results = []
    for t in (1, 2, 3, 8):
        with num_threads(t):
            cal = GroupedCalibrator(IsotonicRegression(out_of_bounds="clip"), min_samples_per_group=5).fit(
                s, y, g, sample_weight=w)
            results.append((json.dumps(cal.to_dict()), cal.predict(s, g).tobytes()))
    assert all(r == results[0] for r in results[1:])
    with num_threads(1):
        _assert_own_fits(cal, {"out_of_bounds": "clip"}, s, y, g, w)


@pytest.mark.parametrize("scale", [2.0**-60, 2.0**40, 3.0])
def test_batched_isotonic_weight_scale(scale):
    s, y, g, w = _tied_data(4000, 8, 18, np.float64, True)
    cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=1)
    base = cal.fit(s, y, g, w).to_dict()
    scaled = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=1).fit(s, y, g, w * scale)
    if scale != 3.0:  # powers of two: the same bits
        assert scaled.to_dict() == base
    _assert_own_fits(scaled, {}, s, y, g, w * scale)  # any scale: each group's own fit at that scale


def _one_fit_per_group(template, minimum, s, y, g, w):
    """The GroupedCalibrator(template, min_samples_per_group=minimum) that fits a clone of ``template`` on the
    rows of each group of at least ``minimum`` rows and one on all rows: its fitted state set from the public API
    (integer groups, numbered in sorted order)."""
    def fit(rows):
        return type(template)(**template.get_params()).fit(s[rows], y[rows], sample_weight=w[rows])

    groups, counts = np.unique(g, return_counts=True)
    model = GroupedCalibrator(template, min_samples_per_group=minimum)
    model.groups_ = [int(k) for k in groups[counts >= minimum]]
    model.calibrators_ = [fit(g == k) for k in model.groups_]
    model.global_calibrator_ = fit(np.ones(g.shape[0], dtype=bool))
    model.group_counts_ = counts[counts >= minimum].astype(np.int64)
    return model


def test_batched_fit_writes_the_model_file_of_per_group_fits(tmp_path):
    """The stored state did not change: a model made of fits of one group at a time (what the calibrators not
    batched get) and the batched one write the same file, and each loads into the other's model."""
    s, y, g, w = _tied_data(3000, 6, 19, np.float32, True)
    template = IsotonicRegression(out_of_bounds="clip")
    batched = GroupedCalibrator(template, min_samples_per_group=20).fit(s, y, g, w)
    one_by_one = _one_fit_per_group(template, 20, s, y, g, w)
    assert json.dumps(batched.to_dict()) == json.dumps(one_by_one.to_dict())
    one_by_one.save(tmp_path / "old.json")
    back = fastcal.load(tmp_path / "old.json")
    _assert_same_bits(back.predict(s, g), batched.predict(s, g))


def test_isotonic_predict_checks_scores_and_keeps_float32():
    s, y, g, _ = _tied_data(2000, 4, 20, np.float32, False)
    cal = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=1).fit(s, y, g)
    assert cal.predict(s, g).dtype == np.float32
    bad = s.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="scores"):
        cal.predict(bad, g)
    raising = GroupedCalibrator(IsotonicRegression(out_of_bounds="raise"), min_samples_per_group=1).fit(s, y, g)
    with pytest.raises(ValueError, match="interpolation range"):  # the calibrator's own rule, per group
        raising.predict(np.full(3, 2.0, dtype=np.float32), g[:3])


# --------------------------------------------------------------------------
# Batched histogram binning (one pass of bin sums keyed by group) and Platt / beta groups fitted on rows checked
# once: each group's model has the bits of its calibrator's own fit on the group's rows
# --------------------------------------------------------------------------

OTHER = [HistogramBinning(n_bins=7), HistogramBinning(n_bins=7, strategy="quantile"), PlattScaling(),
         BetaCalibration(), BetaCalibration(parameters="am", tol=1e-6)]


def _assert_own_models(cal, template, s, y, g, w):
    """Every group's model has the fitted state (``to_dict``) of a clone of ``template`` fitted on its rows alone,
    and predicts its bits; unseen groups predict as the global fit."""
    assert len(cal.calibrators_) == len(cal.groups_) > 0
    t = np.linspace(0.0, 1.0, 101).astype(s.dtype)
    for group, model in zip(cal.groups_, cal.calibrators_):
        rows = g == group
        own = type(template)(**template.get_params()).fit(s[rows], y[rows],
                                                         sample_weight=None if w is None else w[rows])
        assert json.dumps(model.to_dict()) == json.dumps(own.to_dict())
        _assert_same_bits(cal.predict(t, np.full(t.shape[0], group)), own.predict(t))
    _assert_same_bits(cal.predict(t, np.full(t.shape[0], -5)), cal.global_calibrator_.predict(t))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", [False, True])
@pytest.mark.parametrize("template", OTHER, ids=lambda c: f"{type(c).__name__}{c.get_params()}")
def test_other_calibrators_fits_are_the_groups_own_fits_bit_for_bit(dtype, weights, template):
    s, y, g, w = _tied_data(3000, 6, 21, dtype, weights)
    inner = HistogramBinning(n_bins=7).fit([0.5], [1]).bin_edges_[1:-1]
    s[np.flatnonzero(g == 2)[::3]] = np.resize(inner, np.count_nonzero(g == 2)).astype(dtype)[::3]  # scores on
    # the inner edges of 7 uniform bins (float64): in the left bin, as the own fit bins them
    keep = g < 6  # groups of one row have a single class: Platt's and beta's special cases are tested apart
    s, y, g, w = s[keep], y[keep], g[keep], None if w is None else w[keep]
    cal = GroupedCalibrator(template, min_samples_per_group=50).fit(s, y, g, sample_weight=w)
    assert cal.groups_ == [i for i, c in enumerate(np.bincount(g)) if c >= 50]
    _assert_own_models(cal, template, s, y, g, w)


@pytest.mark.parametrize("template", [HistogramBinning(n_bins=4), PlattScaling(), BetaCalibration()],
                         ids=lambda c: type(c).__name__)
def test_other_calibrators_same_bits_at_1_2_3_8_16_threads(template, monkeypatch):
    from fastcal._core import parallel as _parallel

    from .threads import num_threads

    monkeypatch.setattr(_parallel, "PARALLEL_MIN_SIZE", 1 << 10)
    monkeypatch.setattr(_parallel, "TASK_ROWS", 1 << 9)
    s, y, g, w = _tied_data(20_000, 60, 22, np.float64, True)
    s = np.clip(s, 0.01, 0.99)
    results = []
    for t in (1, 2, 3, 8, 16):
        with num_threads(t):
            cal = GroupedCalibrator(template, min_samples_per_group=100).fit(s, y, g, sample_weight=w)
            results.append((json.dumps(cal.to_dict()), cal.predict(s, g).tobytes()))
    assert all(r == results[0] for r in results[1:])


@pytest.mark.parametrize("template", [HistogramBinning(n_bins=6), PlattScaling(), BetaCalibration()],
                         ids=lambda c: type(c).__name__)
def test_other_calibrators_weight_scale(template):
    s, y, g, w = _tied_data(3000, 5, 23, np.float64, True)
    s, y, g, w = s[2:], y[2:], g[2:], w[2:]
    base = GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g, w)
    for scale in (2.0**-60, 2.0**40, 3.0):
        scaled = GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g, w * scale)
        if scale != 3.0 and type(template) is not PlattScaling:  # powers of two: the same bits (Platt's
            _assert_same_bits(scaled.predict(s, g), base.predict(s, g))  # targets are pseudo-counts in weight units)
        _assert_own_models(scaled, template, s, y, g, w * scale)  # any scale: each group's own fit at that scale


def test_histogram_groups_left_to_their_own_fit():
    """A group whose own fit cuts its rows into several chunks (other sums), and tables bigger than the rows,
    go through the calibrator's own fit: still the bits of the groups' own fits."""
    from fastcal import _binning

    template = HistogramBinning(n_bins=3)
    big = 2 * 65536 + 7
    assert _binning.n_chunks(big, 3 * _binning.NSTAT) > 1
    s, y, g, w = _one_big_group(big, 2000, 24)
    cal = GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g, w)
    _assert_own_models(cal, template, s, y, g, w)
    many_bins = HistogramBinning(n_bins=1 << 18)  # 4 groups' sums (2 floats a bin): more memory than the rows
    s, y, g, w = s[big:], y[big:], g[big:], w[big:]
    _assert_own_models(GroupedCalibrator(many_bins, min_samples_per_group=1).fit(s, y, g), many_bins, s, y, g, None)


@pytest.mark.parametrize("template", [HistogramBinning(), PlattScaling(), BetaCalibration()],
                         ids=lambda c: type(c).__name__)
def test_a_group_of_zero_weights_takes_the_global_model_for_other_calibrators(template):
    s, y, g, w = _tied_data(2000, 4, 25, np.float64, True)
    w[g == 2] = 0.0
    with pytest.raises(ValueError, match="non-zero"):  # its own fit has nothing to fit
        type(template)().fit(s[g == 2], y[g == 2], sample_weight=w[g == 2])
    cal = GroupedCalibrator(template, min_samples_per_group=2).fit(s, y, g, w)  # not the groups of one row
    assert cal.groups_ == [0, 1, 3]
    np.testing.assert_array_equal(cal.predict(s[g == 2], g[g == 2]), cal.global_calibrator_.predict(s[g == 2]))


def test_scalar_weight_and_single_class_groups_as_their_own_fits():
    s, y, g, _ = _tied_data(2000, 4, 26, np.float64, False)
    for template in (HistogramBinning(n_bins=5), PlattScaling()):  # the groups of one row: one class, Platt's rule
        for weight in (2.5, 1.5):  # weights rescaled by 2**-1, and left as they are (every group's largest in [1, 2))
            _assert_own_models(GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g, weight), template,
                               s, y, g, np.full(s.shape[0], weight))


@pytest.mark.parametrize("dtype", [np.float16, ">f8", np.int32], ids=str)
def test_scores_of_other_dtypes_fit_one_clone_per_group(dtype):
    """Rows moved by group by the scatter kernel (int32), or through the counting order (float16, big-endian):
    every group's model is its own fit on the rows as given."""
    s, y, g, w = _tied_data(2000, 4, 27, np.float64, True)
    s = (s * 100).astype(dtype) if dtype is np.int32 else s.astype(dtype)
    template = VennAbers()
    cal = GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g, w)
    for group, model in zip(cal.groups_, cal.calibrators_):
        own = VennAbers().fit(s[g == group], y[g == group], sample_weight=w[g == group])
        assert json.dumps(model.to_dict()) == json.dumps(own.to_dict())


@pytest.mark.parametrize("template", [HistogramBinning(n_bins=6), PlattScaling(), BetaCalibration()],
                         ids=lambda c: type(c).__name__)
def test_other_calibrators_model_file_round_trip(template, tmp_path):
    """The batched and the per-call fits write the same model file, which loads into a model of the same bits."""
    s, y, g, w = _tied_data(3000, 5, 28, np.float64, True)
    s, y, g, w = s[2:], y[2:], g[2:], w[2:]
    cal = GroupedCalibrator(template, min_samples_per_group=10).fit(s, y, g, w)
    cal.save(tmp_path / "m.json")
    back = fastcal.load(tmp_path / "m.json")
    assert json.dumps(back.to_dict()) == json.dumps(cal.to_dict())
    _assert_same_bits(back.predict(s, g), cal.predict(s, g))
    one_by_one = _one_fit_per_group(template, 10, s, y, g, w)  # one clone's fit per group
    assert json.dumps(one_by_one.to_dict()) == json.dumps(cal.to_dict())


def _platt_groups_data(dtype, weights):
    """Rows ordered by group, with each group's bounds: a group of more rows than one chunk of Platt's passes
    (2**14, so that its sums merge several chunks), groups of offset, wide and tied scores, one class only,
    constant scores, and five separable rows; weights spanning powers of two by group."""
    rng = np.random.default_rng(31)
    sizes = [20_000, 700, 50, 300, 40, 30, 5, 900]
    parts = []
    for k, m in enumerate(sizes):
        s = rng.normal(size=m) * [1, 3, 0.1, 1e-3, 1, 1, 1, 2][k] + [0, 0, 0, 1e6, 0, 0, 0, -4][k]
        y = (rng.uniform(size=m) < 1 / (1 + np.exp(-(k % 3 + 0.5) * (s - s.mean())))).astype(np.int64)
        if k == 4:
            y[:] = 1  # one class: a = 0, Platt's b0
        if k == 5:
            s[:] = 0.25  # constant scores: a = 0, the mean target
        if k == 7:
            s = np.round(s, 1)  # ties
        parts.append((s, y, rng.uniform(0.0, 2.0, m) * 2.0 ** (10 * k - 30)))
    s, y, w = (np.concatenate(c) for c in zip(*parts))
    starts = np.concatenate([[0], np.cumsum(sizes)])
    return s.astype(dtype), y, (w if weights else None), starts


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", [False, True])
def test_platt_fit_groups_are_each_groups_fit_arrays_bit_for_bit(dtype, weights):
    """fastcal.platt.fit_groups (the batched Newton fits of the grouped Platt scaling) does every group here
    itself, with the bits of fit_arrays on the group's rows alone (a, b, n_iter), weights rescaled as the fit
    rescales them."""
    from fastcal import platt
    from fastcal._core.validation import rescale_weights

    s, y, w, starts = _platt_groups_data(dtype, weights)
    lo, hi = starts[:-1], starts[1:]
    exponent, scaled = None, None
    if weights:
        exponent = np.array([rescale_weights(w[a:b])[1] for a, b in zip(lo, hi)])
        scaled = np.concatenate([rescale_weights(w[a:b])[0] for a, b in zip(lo, hi)])
    a, b, n_iter, done = platt.fit_groups(s, y, scaled, lo, hi, exponent, 100, 1e-10)
    assert done[[0, 1, 2, 3, 4, 5, 7]].all()  # the five separable rows of group 6 may backtrack: their own fit
    for k in np.flatnonzero(done):
        i, j = lo[k], hi[k]
        own = platt.fit_arrays(s[i:j], y[i:j], None if w is None else w[i:j], 100, 1e-10)
        assert own.converged
        assert (a[k].tobytes(), b[k].tobytes(), int(n_iter[k])) == (
            np.float64(own.a).tobytes(), np.float64(own.b).tobytes(), own.n_iter), k
    assert n_iter[4] == n_iter[5] == 0 and a[4] == a[5] == 0.0  # the closed forms


def test_platt_groups_off_the_common_path_keep_their_own_fit():
    """Fits that stop at max_iter are left to their own fit (fit_groups: not done), which warns as it does alone;
    the grouped models are still the groups' own fits."""
    from fastcal import platt

    s, y, _, starts = _platt_groups_data(np.float64, False)
    done = platt.fit_groups(s, y, None, starts[:-1], starts[1:], None, 1, 1e-10)[3]
    converged = [platt.fit_arrays(s[i:j], y[i:j], None, 1, 1e-10).converged for i, j in zip(starts, starts[1:])]
    assert done[[4, 5]].all() and not all(converged)  # the closed forms; fits that one Newton step does not end
    assert not (done & ~np.array(converged)).any()
    g = np.repeat(np.arange(starts.size - 1), np.diff(starts))
    template = PlattScaling(max_iter=1)
    with pytest.warns(fastcal.ConvergenceWarning):
        cal = GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g)
    with pytest.warns(fastcal.ConvergenceWarning):
        _assert_own_models(cal, template, s, y, g, None)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weights", [False, True])
def test_beta_fit_groups_are_each_groups_fit_arrays_bit_for_bit(dtype, weights):
    """fastcal.beta.fit_groups (the batched Newton fits of the grouped beta calibration) does the groups on the
    driver's common path itself, with the bits of fit_arrays on the group's rows alone (a, b, c, m, n_iter), and
    leaves the others to it: a fit that drops a term (a < 0), separated classes, constant p, one class."""
    from fastcal import beta
    from fastcal._core.validation import rescale_weights

    s, y, w, starts = _platt_groups_data(dtype, weights)
    p = (1.0 / (1.0 + np.exp(-(s - np.repeat([0, 0, 0, 1e6, 0, 0, 0, -4], np.diff(starts)))))).astype(dtype)
    y[starts[2]:starts[3]] = (p[starts[2]:starts[3]] < 0.5)  # decreasing in p: separated
    lo, hi = starts[:-1], starts[1:]
    scaled = None if w is None else np.concatenate([rescale_weights(w[i:j])[0] for i, j in zip(lo, hi)])
    a, b, c, m, n_iter, done = beta.fit_groups(p, y, scaled, lo, hi, "abm", 100, 1e-10)
    assert done[[0, 1, 7]].all() and not done[2:7].any()  # 2, 6: separated; 3: a < 0 (float32: constant); 4, 5
    for k in np.flatnonzero(done):
        i, j = lo[k], hi[k]
        own = beta.fit_arrays(p[i:j], y[i:j], scaled if w is None else scaled[i:j], "abm", 100, 1e-10)
        assert own.converged
        assert np.array([a[k], b[k], c[k], m[k]]).tobytes() == np.array([own.a, own.b, own.c, own.m]).tobytes(), k
        assert n_iter[k] == own.n_iter
    assert not beta.fit_groups(p, y, scaled, lo, hi, "ab", 100, 1e-10)[-1].any()  # other models: their own fit


@pytest.mark.parametrize("template", [PlattScaling(), BetaCalibration()], ids=lambda c: type(c).__name__)
def test_a_group_big_enough_for_a_warm_start_keeps_its_own_fit(template):
    """A group of 2**18 rows or more starts its own fit from a subsample (fastcal.platt.WARM_START_MIN), which the
    batched fits do not run: it keeps its own fit, the other groups are batched; all have their own fits' bits."""
    from fastcal import platt

    big = platt.WARM_START_MIN + 3
    s, y, g, w = _one_big_group(big, 1500, 32)
    assert platt.fit_groups(s, y, None, [0], [big], None, 100, 1e-10)[3].tolist() == [False]
    _assert_own_models(GroupedCalibrator(template, min_samples_per_group=1).fit(s, y, g, w), template, s, y, g, w)
