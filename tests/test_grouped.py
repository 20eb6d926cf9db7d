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
