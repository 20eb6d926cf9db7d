"""Top-label and class-wise calibration curves and ECE of (n, k) probabilities: against scikit-learn, the naive
binned reference and the binary functions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose
from sklearn.calibration import calibration_curve as sk_calibration_curve

import fastcal

from . import naive_metrics as naive
from .strategies import class_probabilities


def _codes(y, labels):
    classes = np.unique(y) if labels is None else np.asarray(labels)
    return np.searchsorted(classes, y)


def _top_label(y, P, labels):
    P64 = np.asarray(P)
    return (P64.argmax(axis=1) == _codes(y, labels)).astype(np.uint8), P64.max(axis=1)


@settings(max_examples=60, deadline=None)
@given(class_probabilities(normalised=True), st.sampled_from([1, 3, 10]), st.sampled_from(["uniform", "quantile"]))
def test_top_label_is_the_binary_problem_of_confidences(data, n_bins, strategy):
    y, P, w, labels = data
    correct, conf = _top_label(y, P, labels)
    got = fastcal.calibration_curve(y, P, n_bins=n_bins, strategy=strategy, sample_weight=w, labels=labels,
                                    return_counts=True)
    same = fastcal.calibration_curve(correct, conf, n_bins=n_bins, strategy=strategy, sample_weight=w,
                                     return_counts=True)
    for a, b in zip(got, same):
        assert np.array_equal(a, b)
    # the naive reference sums in another order: float64 rounding, n * eps relative
    ref = naive.calibration_curve(correct, conf, n_bins, strategy, w)
    assert_allclose(got[0], ref[0], rtol=1e-12, atol=1e-14)
    assert_allclose(got[1], ref[1], rtol=1e-12, atol=1e-14)
    ece = fastcal.expected_calibration_error(y, P, n_bins=n_bins, strategy=strategy, sample_weight=w, labels=labels)
    assert ece == pytest.approx(naive.ece(correct, conf, n_bins, strategy, "l1", w), rel=1e-12, abs=1e-14)


@settings(max_examples=60, deadline=None)
@given(class_probabilities(normalised=True), st.sampled_from([2, 5]), st.sampled_from(["uniform", "quantile"]),
       st.sampled_from(["l1", "l2", "max"]))
def test_classwise_is_one_binary_problem_per_column(data, n_bins, strategy, norm):
    y, P, w, labels = data
    codes = _codes(y, labels)
    curves = fastcal.calibration_curve(y, P, n_bins=n_bins, strategy=strategy, sample_weight=w, labels=labels,
                                       multiclass="classwise")
    errors = fastcal.expected_calibration_error(y, P, n_bins=n_bins, strategy=strategy, norm=norm, sample_weight=w,
                                                labels=labels, multiclass="classwise")
    assert len(curves) == P.shape[1] and errors.shape == (P.shape[1],)
    for j, (curve, err) in enumerate(zip(curves, errors)):
        yj, pj = (codes == j).astype(np.uint8), np.ascontiguousarray(P[:, j])
        if w is None and yj.any() and not yj.all():
            sk = sk_calibration_curve(yj, pj, n_bins=n_bins, strategy=strategy)
            assert_allclose(curve[0], sk[0], rtol=1e-12, atol=1e-14)
            assert_allclose(curve[1], sk[1], rtol=1e-12, atol=1e-14)
        ref = naive.calibration_curve(yj, pj, n_bins, strategy, w)
        assert_allclose(curve[0], ref[0], rtol=1e-12, atol=1e-14)
        assert_allclose(curve[1], ref[1], rtol=1e-12, atol=1e-14)
        assert err == pytest.approx(naive.ece(yj, pj, n_bins, strategy, norm, w), rel=1e-12, abs=1e-14)


def test_top_label_equals_sklearn_on_confidences():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(20_000, 10)) * 3
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = rng.integers(0, 10, 20_000)
    correct, conf = _top_label(y, P, None)
    for strategy in ("uniform", "quantile"):
        got = fastcal.calibration_curve(y, P, n_bins=15, strategy=strategy)
        sk = sk_calibration_curve(correct, conf, n_bins=15, strategy=strategy)
        assert_allclose(got, sk, rtol=1e-12)
    # float32 probabilities are binned in float32, as the binary function bins them
    P32 = P.astype(np.float32)
    assert np.array_equal(fastcal.calibration_curve(y, P32, n_bins=15)[1],
                          fastcal.calibration_curve(correct, P32.max(axis=1), n_bins=15)[1])


def test_string_labels_and_missing_classes():
    P = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4], [0.6, 0.3, 0.1]])
    y = np.array(["ant", "bee", "bee", "ant"])  # "cat" absent: labels say which column it is
    curves = fastcal.calibration_curve(y, P, n_bins=2, multiclass="classwise", labels=["ant", "bee", "cat"])
    assert_allclose(curves[2][0], [0.0])  # no row of class "cat"
    top = fastcal.calibration_curve(y, P, n_bins=2, labels=["ant", "bee", "cat"])
    assert_allclose(top[0], [0.0, 1.0])  # row 3: argmax "cat", class "bee"
    with pytest.raises(ValueError, match="y_true has 2 classes"):
        fastcal.calibration_curve(y, P)


def test_binary_behaviour_unchanged_and_errors():
    y = np.array([0, 1, 1, 0])
    p = np.array([0.1, 0.9, 0.6, 0.4])
    assert fastcal.expected_calibration_error(y, p, n_bins=2, multiclass="classwise") == \
        fastcal.expected_calibration_error(y, p, n_bins=2)
    P = np.stack([1 - p, p], axis=1)
    with pytest.raises(fastcal.InvalidParameterError, match="multiclass must be 'top_label' or 'classwise'"):
        fastcal.calibration_curve(y, P, multiclass="ovr")
    with pytest.raises(ValueError, match="pos_label is for 1-D y_prob"):
        fastcal.calibration_curve(y, P, pos_label=1)
    with pytest.raises(ValueError, match="labels is for an \\(n, k\\) y_prob"):
        fastcal.expected_calibration_error(y, p, labels=[0, 1])
    with pytest.raises(ValueError, match="y_prob has values outside"):
        fastcal.calibration_curve(y, P * 2)
    with pytest.raises(ValueError, match="y_true contains labels not in labels"):
        fastcal.calibration_curve([0, 1, 2, 0], P, labels=[0, 1])
    # two columns, classwise: column 1 is the binary problem of class 1
    assert_allclose(fastcal.calibration_curve(y, P, n_bins=3, multiclass="classwise")[1],
                    fastcal.calibration_curve(y, p, n_bins=3))
