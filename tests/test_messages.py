"""Errors that name the argument and say what is wrong (issue 11), and the neighbours of each case we tried.

Each case was a raw NumPy or Python message on main ("zero-size array to
reduction operation", "'<' not supported between instances", "boolean value
of NA is ambiguous", "found -9223372036854775808 .. 0", reprs such as
``np.float64(-10.0)``).
"""

import re

import numpy as np
import pandas as pd
import pytest

import fastcal
from fastcal import metrics

P4 = np.array([0.1, 0.2, 0.3, 0.4])
_METRICS = [metrics.brier_score_loss, metrics.log_loss, metrics.roc_auc_score, metrics.expected_calibration_error,
            metrics.calibration_curve, metrics.brier_decomposition, metrics.calibration_report]
_NO_REPR = re.compile(r"np\.(float|int|bool|str)\w*\(")


def _no_reprs(excinfo):
    assert not _NO_REPR.search(str(excinfo.value)), str(excinfo.value)


@pytest.mark.parametrize("func", _METRICS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("y_true", [
    np.array([None, 1, 0, 1], dtype=object),
    [None, 1, 0, 1],
    np.array(["a", None, "b", "a"], dtype=object),
    pd.array([True, None, False, True], dtype="boolean"),
    pd.Series(["a", pd.NA, "b", "a"], dtype=object),
    np.array([1, 0, np.nan, 1], dtype=object),
], ids=["None", "None-list", "str-None", "boolean-NA", "object-NA", "object-NaN"])
def test_missing_labels_are_named(func, y_true):
    with pytest.raises(ValueError, match=r"y_true must not contain missing values \(None, NaN or NA\); found 1, "
                                         r"at row \d\."):
        func(y_true, P4)


@pytest.mark.parametrize("func", _METRICS, ids=lambda f: f.__name__)
def test_labels_of_mixed_types_are_named(func):
    with pytest.raises(ValueError, match=r"y_true mixes labels of types that cannot be compared \(int and str\)"):
        func(np.array(["a", 1, "b", "a"], dtype=object), P4)


@pytest.mark.parametrize("func", _METRICS, ids=lambda f: f.__name__)
def test_numeric_missing_labels(func):
    # Neighbours that were fine already: NaN in float labels, pandas' Int64 with NA (becomes float NaN).
    for y_true in (np.array([np.nan, 1, 0, 1]), pd.array([1, None, 0, 1], dtype="Int64")):
        with pytest.raises(ValueError, match="y_true must not contain NaN"):
            func(y_true, P4)


def test_temperature_empty_input_is_named():
    for X in (np.empty(0), np.empty((0, 1)), np.empty((0, 3))):
        with pytest.raises(ValueError, match=r"X must have at least 1 sample, got 0\."):
            fastcal.TemperatureScaling().fit(X, np.empty(0))


@pytest.mark.parametrize("bad", [1e308, -1e308, 2.0**63, -(2.0**63), 3.0, -1.0])
def test_temperature_labels_out_of_range_show_their_values(bad):
    with pytest.raises(ValueError, match=r"y must hold class indices in 0 \.\. 1") as excinfo:
        fastcal.TemperatureScaling().fit(np.zeros((3, 2)), np.array([bad, 0.0, 1.0]))
    assert "9223372036854775808" not in str(excinfo.value)
    assert f"{bad:g}" in str(excinfo.value)
    _no_reprs(excinfo)


def test_temperature_integer_labels_out_of_range():
    with pytest.raises(ValueError, match=r"found -1 \.\. 2\.") as excinfo:
        fastcal.TemperatureScaling().fit(np.zeros((3, 2)), np.array([-1, 0, 2], dtype=np.int8))
    _no_reprs(excinfo)


def test_temperature_class_labels_are_refused_with_the_mapping_named():
    # Labels 1..2 for two columns could be either classes or indices: fastcal refuses to guess, and says how to map.
    X, y = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0]]), np.array([1, 2, 1])
    with pytest.raises(ValueError, match=re.escape("np.searchsorted(model.classes_, y)")):
        fastcal.TemperatureScaling().fit(X, y)


def test_isotonic_out_of_bounds_message_is_scikit_learns():
    est = fastcal.IsotonicRegression(out_of_bounds="raise").fit([0.0, 1.0, 2.0], [0, 1, 1])
    with pytest.raises(ValueError, match=re.escape(
            "A value (-10.0) in x_new is below the interpolation range's minimum value (0.0).")) as excinfo:
        est.predict([-10.0])
    _no_reprs(excinfo)
    with pytest.raises(ValueError, match=re.escape(
            "A value (12.5) in x_new is above the interpolation range's maximum value (2.0).")) as excinfo:
        est.predict(np.float32([1.0, 12.5]))
    _no_reprs(excinfo)


def test_parameter_errors_show_plain_numbers():
    with pytest.raises(ValueError, match=r"max_iter must be an integer >= 1; got 0\.") as excinfo:
        fastcal.platt_scaling([0.1, 0.9], [0, 1], max_iter=np.int64(0))
    _no_reprs(excinfo)
    with pytest.raises(ValueError, match=r"got -1\.5\.") as excinfo:
        fastcal.TemperatureScaling(tol=np.float64(-1.5)).fit(np.zeros((2, 2)), [0, 1])
    _no_reprs(excinfo)


# ---------------------------------------------------------------------------
# calibration_report never raises on valid input (issue 11)
# ---------------------------------------------------------------------------
SEPARATED = ([0, 0, 1, 1], [0.1, 0.2, 0.8, 0.9])


@pytest.mark.parametrize("y, p, slope, auc, message", [
    (*SEPARATED, np.inf, 1.0, r"logit\(p\) separates the classes, .* the calibration slope is \+inf"),
    ([1, 1, 0, 0], [0.1, 0.2, 0.8, 0.9], -np.inf, 0.0, r"the calibration slope is -inf and the intercept NaN"),
    ([0, 1, 0, 1], [0.5] * 4, np.nan, 0.5, r"p is constant, .* the calibration slope and intercept are NaN"),
    ([0, 1, 1], [0.0, 1.0, 1.0], np.inf, 1.0, r"logit\(p\) separates the classes"),  # exact 0 and 1, clipped
    ([1, 1, 1], [0.1, 0.2, 0.3], np.nan, np.nan, r"y holds one class only, .* ROC AUC .* NaN, the "
                                                 r"calibration-in-the-large \+inf"),
])
def test_report_of_degenerate_data_warns_once_and_reports_limits(y, p, slope, auc, message):
    with pytest.warns(UserWarning, match=message) as record:
        r = fastcal.calibration_report(y, p)
    assert len(record) == 1
    np.testing.assert_array_equal([r.slope, r.auc], [slope, auc])
    assert np.isnan([r.intercept, r.slope_se, r.intercept_se, *r.slope_ci, *r.intercept_ci]).all()
    # Everything else is there and agrees with the metrics.
    assert r.brier == pytest.approx(metrics.brier_score_loss(y, p), rel=1e-12)
    assert r.log_loss == pytest.approx(metrics.log_loss(y, p, labels=[0, 1]), rel=1e-12)
    assert r.ece == pytest.approx(metrics.expected_calibration_error(y, p), rel=1e-12, abs=1e-15)


def test_report_calibration_in_the_large_exists_without_the_slope():
    # Separated: alpha with beta = 1 is the root of sum(sigmoid(alpha + logit p_i)) = sum(y_i).
    from scipy.optimize import brentq

    y, p = SEPARATED
    z = np.log(np.divide(p, np.subtract(1, p)))
    alpha = brentq(lambda a: np.sum(1 / (1 + np.exp(-(a + z)))) - np.sum(y), -10, 10, xtol=1e-14)
    with pytest.warns(UserWarning):
        r = fastcal.calibration_report(y, p)
    assert r.calibration_in_the_large == pytest.approx(alpha, abs=1e-8)  # Newton's stopping rule, tol 1e-10
    # Constant p: alpha = logit(event rate) - logit(p).
    with pytest.warns(UserWarning):
        r = fastcal.calibration_report([0, 1, 1, 1], [0.2] * 4)
    assert r.calibration_in_the_large == pytest.approx(np.log(3) - np.log(0.25), rel=1e-12)


def test_calibration_slope_intercept_still_raises():
    with pytest.raises(ValueError, match=r"logit\(p\) separates the classes of y perfectly"):
        fastcal.calibration_slope_intercept(*SEPARATED)
    with pytest.raises(ValueError, match="p is constant"):
        fastcal.calibration_slope_intercept([0, 1], [0.5, 0.5])


def test_cli_report_of_separated_data(tmp_path):
    import json

    from fastcal.cli import main

    np.savez(tmp_path / "d.npz", score=np.array(SEPARATED[1]), label=np.array(SEPARATED[0]))
    with pytest.warns(UserWarning, match="separates the classes"):
        assert main(["report", str(tmp_path / "d.npz"), "--score-col", "score", "--label-col", "label", "-q",
                     "-o", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())["report"]
    assert report["brier"] == pytest.approx(0.025) and report["auc"] == 1.0


def test_cross_val_report_of_separable_data():
    from sklearn.linear_model import LogisticRegression

    X = np.r_[np.linspace(-3, -1, 20), np.linspace(1, 3, 20)][:, None]
    y = np.r_[np.zeros(20, int), np.ones(20, int)]
    with pytest.warns(UserWarning, match="separates the classes"):
        res = fastcal.cross_val_calibration_report(LogisticRegression(), X, y, cv=2, inner_cv=2)
    assert res.before.auc == 1.0 and np.isnan(res.after.intercept)


def test_dask_diagnostics_of_separated_and_one_class_data():
    import dask.array as da

    from fastcal import dask as fd

    for y, p in (SEPARATED, ([1, 1, 1, 1], [0.1, 0.2, 0.3, 0.4])):
        yd, pd_ = da.from_array(np.array(y), chunks=2), da.from_array(np.array(p), chunks=2)
        assert fd.brier_score_loss(yd, pd_) == pytest.approx(metrics.brier_score_loss(y, p), rel=1e-12)
        assert fd.expected_calibration_error(yd, pd_) == pytest.approx(
            metrics.expected_calibration_error(y, p), rel=1e-12)
        assert fd.brier_decomposition(yd, pd_).brier == pytest.approx(metrics.brier_score_loss(y, p), rel=1e-12)


# ---------------------------------------------------------------------------
# TemperatureScaling: scikit-learn's exception types and words (issue 12)
# ---------------------------------------------------------------------------
LOGITS = np.array([[2.0, 0.0, -1.0], [0.0, 1.0, 0.5], [0.3, 0.2, 3.0], [1.0, 0.0, 0.0]])
CLASSES = np.array([0, 1, 2, 1])


@pytest.mark.parametrize("X, error, message", [
    (__import__("scipy.sparse").sparse.csr_matrix(LOGITS), TypeError, r"Sparse data was passed for X, but dense data "
                                                                      r"is required"),
    (LOGITS + 1j, ValueError, r"Complex data not supported: X has dtype complex128"),
    (np.empty((4, 0)), ValueError, r"Found array with 0 feature\(s\) \(shape=\(4, 0\)\) while a minimum of 1 is "
                                   r"required"),
    (np.array([[1.0, {"a": 1}, 0.0]] * 4, dtype=object), TypeError, r"X: float\(\) argument must be a string or a "
                                                                     r"(real )?number"),
    (None, ValueError, "X must be an array of scores, got None"),
])
def test_temperature_bad_X(X, error, message):
    with pytest.raises(error, match=message):
        fastcal.TemperatureScaling().fit(X, CLASSES)


def test_temperature_conventions():
    ts = fastcal.TemperatureScaling()
    with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
        ts.fit(LOGITS, None)
    with pytest.raises(ValueError, match=r"Unknown label type: y must hold integer class indices"):
        ts.fit(LOGITS, np.array(["a", "b", "c", "a"], dtype=object))
    # Numbers in object arrays are numbers (X and y), as scikit-learn's check_array reads them.
    ref = fastcal.TemperatureScaling().fit(LOGITS, CLASSES)
    assert ts.fit(LOGITS.astype(object), CLASSES.astype(object)).beta_ == ref.beta_
    assert ts.n_features_in_ == 3 and fastcal.TemperatureScaling().fit(LOGITS[:, 0], [0, 1, 1, 0]).n_features_in_ == 1
    with pytest.raises(ValueError, match=r"X has 2 features, but TemperatureScaling is expecting 3 features as input"):
        ts.predict_proba(LOGITS[:, :2])
    with pytest.raises(ValueError, match=r"X is 1-D \(binary decision values\), .* Reshape your data to "
                                         r"\(n_samples, 3\)"):
        ts.predict_proba(LOGITS[:, 0])
    with pytest.raises(ValueError, match=r"X has 1 feature\(s\): binary decision values, read as 2 classes\); "
                                         r"found 1 \.\. 2"):
        ts.fit(LOGITS[:, :1], [1, 2, 1, 2])


def test_cli_report_bad_probability_is_a_plain_number(tmp_path, capsys):
    from fastcal.cli import main

    np.savez(tmp_path / "d.npz", score=np.array([0.1, 2.0]), label=np.array([0, 1]))
    status = main(["report", str(tmp_path / "d.npz"), "--score-col", "score", "--label-col", "label", "-q",
                   "-o", str(tmp_path / "r.json")])
    err = capsys.readouterr().err
    assert status != 0 and "row 2: 2.0 is not a probability in [0, 1]" in err and "np.float64" not in err
