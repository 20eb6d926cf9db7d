"""Model files: round trips are exact; anything but a valid file raises ValueError."""

import json
import pickle

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fastcal
from fastcal import IsotonicRegression, NotFittedError

pytestmark = pytest.mark.nojit  # also run with NUMBA_DISABLE_JIT=1 (make test)


def fitted_isotonic(dtype=np.float64, **params):
    rng = np.random.default_rng(0)
    x = rng.random(2000).astype(dtype)
    y = (rng.random(2000) < x).astype(np.uint8)
    return IsotonicRegression(**params).fit(x, y), x


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("params", [dict(), dict(out_of_bounds="clip", y_min=0.1, y_max=0.9), dict(increasing=False)])
def test_isotonic_round_trip_is_exact(tmp_path, dtype, params):
    iso, x = fitted_isotonic(dtype, **params)
    path = tmp_path / "model.json"
    iso.save(path)
    loaded = fastcal.load(path)
    assert type(loaded) is IsotonicRegression
    assert loaded.get_params() == iso.get_params()
    T = np.concatenate([x, [-1.0, 2.0]]).astype(dtype)
    assert_array_equal(loaded.predict(T), iso.predict(T))
    assert loaded.predict(T).dtype == iso.predict(T).dtype
    assert_array_equal(IsotonicRegression.from_dict(iso.to_dict()).predict(T), iso.predict(T))
    assert json.loads(path.read_text())["format"] == "fastcal"


def test_save_unfitted_raises():
    with pytest.raises(NotFittedError):
        IsotonicRegression().to_dict()


def corrupt(change):
    iso, _ = fitted_isotonic()
    data = iso.to_dict()
    change(data)
    return data


def _set(path, value):
    def change(d):
        target = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _delete(path):
    def change(d):
        target = d
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


@pytest.mark.parametrize(
    "change, match",
    [
        (_set(["version"], 2), "reads version 1"),
        (_set(["format"], "other"), "expected 'fastcal'"),
        (_set(["type"], "os.system"), "known types"),
        (_delete(["state"]), "missing fields"),
        (_set(["extra"], 1), "unexpected fields"),
        (_delete(["state", "X_min_"]), "must have exactly the fields"),
        (_set(["params", "out_of_bounds"], "explode"), "out_of_bounds must be 'nan', 'clip' or 'raise'"),
        (_set(["params", "evil"], 1), "params must be exactly"),
        (_set(["state", "X_min_"], "0"), "must be a finite number"),
        (_set(["state", "increasing_"], 1), "must be true or false"),
        (_set(["state", "X_thresholds_", "dtype"], "object"), "has dtype 'object'"),
        (_set(["state", "X_thresholds_", "data"], "abc"), "not a list of numbers"),
        (_set(["state", "X_thresholds_", "data"], [1.0, "x"]), "not a list of numbers"),
        (_set(["state", "X_thresholds_", "shape"], [3]), "values for shape"),
        (_set(["state", "y_thresholds_", "data"], [0.5]), "values for shape"),
        (_set(["params", "y_min"], [[{}]]), "unsupported type"),
        (_set(["params", "y_min"], "0"), r"y_min must be a real number \(not NaN\) or None; got '0'"),
        (_set(["params", "y_min"], 10**400), "within float64's range"),
        (_set(["state", "X_min_"], -(10**400)), "must be a finite number"),
        (_set(["state", "X_max_"], 10**400), "must be a finite number"),
        (_set(["state", "X_thresholds_"], {"dtype": "float64", "shape": [1], "data": [10**400]}),
         "beyond float64's range"),
    ],
)
def test_invalid_model_dicts_raise_value_error(change, match):
    with pytest.raises(ValueError, match=match):
        fastcal._persist.from_dict(corrupt(change))


def test_inconsistent_thresholds_raise_value_error():
    data = corrupt(lambda d: None)
    xs = data["state"]["X_thresholds_"]["data"]
    xs[0], xs[1] = xs[1], xs[0]
    with pytest.raises(ValueError, match="strictly increasing"):
        fastcal._persist.from_dict(data)


def test_fitted_values_must_agree_with_the_direction_and_bounds():
    data = corrupt(lambda d: None)
    ys = data["state"]["y_thresholds_"]["data"]
    assert ys != sorted(ys, reverse=True)  # a non-constant increasing fit
    data["state"]["y_thresholds_"]["data"] = ys[::-1]
    with pytest.raises(ValueError, match=r"y_thresholds_ must be non-decreasing \(increasing_ is true\)"):
        fastcal._persist.from_dict(data)
    data["state"]["increasing_"] = False
    fastcal._persist.from_dict(data)  # consistent again: a decreasing fit
    data = corrupt(lambda d: None)
    data["params"]["y_max"] = min(data["state"]["y_thresholds_"]["data"]) / 2
    with pytest.raises(ValueError, match=r"within \[y_min, y_max\]"):
        fastcal._persist.from_dict(data)


def test_int64_state_out_of_range():
    data = fastcal.PlattScaling().fit([0.0, 1.0, 2.0, 3.0], [0, 1, 0, 1]).to_dict()
    data["state"]["n_iter_"] = 1 << 70
    with pytest.raises(ValueError, match="n_iter_' must be an integer in int64's range"):
        fastcal._persist.from_dict(data)


@pytest.mark.parametrize(
    "content, match",
    [
        (pickle.dumps(IsotonicRegression()), "not UTF-8|not JSON"),
        (b"not json at all", "not JSON"),
        (b"", "not JSON"),
        (b"[1, 2, 3]", "must hold a JSON object"),
        (b"[" * 100000, "nested too deeply|not JSON"),
        (b'{"format": NaN}', "NaN is not allowed"),
        (b"\xff\xfe\x00", "not UTF-8"),
    ],
)
def test_files_that_are_not_models_raise_value_error(tmp_path, content, match):
    path = tmp_path / "model.json"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match):
        fastcal.load(path)


def test_nan_in_arrays_rejected(tmp_path):
    iso, _ = fitted_isotonic()
    text = json.dumps(iso.to_dict()).replace('"data": [', '"data": [NaN, ', 1)
    path = tmp_path / "m.json"
    path.write_text(text)
    with pytest.raises(ValueError, match="NaN is not allowed"):
        fastcal.load(path)


def test_from_dict_checks_the_class():
    iso, _ = fitted_isotonic()
    data = iso.to_dict()
    assert isinstance(IsotonicRegression.from_dict(data), IsotonicRegression)
    with pytest.raises(ValueError, match="invalid fastcal model"):
        IsotonicRegression.from_dict("not a dict")
