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
