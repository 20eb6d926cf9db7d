"""Diagnostics: against scikit-learn, a naive reference (tests/naive_metrics.py) and the invariants."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve as sk_calibration_curve

import fastcal
from fastcal import _binning
from fastcal import _auc as A
from fastcal._auc import _kernels as AK
from fastcal._engine.sort import sort_by_label
from fastcal import metrics as M

from . import naive_metrics as naive
from ._reports import assert_same_but_the_slope
from .strategies import LABEL_KINDS, class_labels, class_probabilities, probabilities
from .threads import MANY, in_pieces, num_threads

SETTINGS = settings(max_examples=60, deadline=None)
EPS = np.finfo(np.float64).eps


def sum_rtol(n):
    """Relative difference of two evaluations, in other orders, of a sum (or a ratio of sums) of n terms of one sign.

    Each sum is within (n - 1) eps of its exact value whatever the order (Higham, recursive summation), so two
    evaluations of a sum or of sum / sum differ by less than 4 n eps.
    """
    return 4 * n * EPS


def auc_atol(n):
    """|fastcal - scikit-learn| for the AUC of n scores.

    fastcal's weighted sweep is three sums of <= n positive terms (<= 3 n eps relative; exact without weights);
    scikit-learn's trapezoid over <= n + 1 ROC points rounds every step of the curve (<= ~3 eps each).
    """
    return 6 * n * EPS


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def miscalibrated(n, dtype=np.float64, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-s / 2))).astype(np.uint8)
    return y, (1 / (1 + np.exp(-s))).astype(dtype)


def both_classes(y):
    """0/1 labels as int64, the first flipped if they hold one class only."""
    y = np.asarray(y).astype(np.int64)
    if y.min() == y.max():
        y[0] = 1 - y[0]
    return y


n_bins_st = st.integers(1, 25)
strategy_st = st.sampled_from(["uniform", "quantile"])


# ---------------------------------------------------------------------------
# calibration_curve
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=probabilities(), n_bins=n_bins_st, strategy=strategy_st)
def test_calibration_curve_equals_sklearn(data, n_bins, strategy):
    y, p, _ = data
    expected = sk_calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    got = M.calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
    assert len(got) == 2
    for e, g in zip(expected, got):
        assert g.shape == e.shape and g.dtype == np.float64
        assert_allclose(g, e, rtol=0, atol=1e-12)


@SETTINGS
@given(data=probabilities(weighted="zeros"), n_bins=n_bins_st, strategy=strategy_st)
def test_calibration_curve_equals_naive_weighted(data, n_bins, strategy):
    y, p, w = data
    prob_true, prob_pred, counts = M.calibration_curve(
        y, p, n_bins=n_bins, strategy=strategy, sample_weight=w, return_counts=True
    )
    e_true, e_pred, e_counts = naive.calibration_curve(y, p, n_bins, strategy, w)
    assert_allclose(prob_true, e_true, rtol=0, atol=1e-12)
    assert_allclose(prob_pred, e_pred, rtol=0, atol=1e-12)
    assert_allclose(counts, e_counts, rtol=1e-12)
    assert counts.dtype == np.float64
    assert math.isclose(counts.sum(), w.sum(), rel_tol=1e-12)
    # invariants: averages stay inside [0, 1], predictions inside their bins
    assert np.all((prob_true >= 0) & (prob_true <= 1))
    e = naive.edges(p, n_bins, strategy)
    nonempty = np.flatnonzero(naive.bins(y, p, n_bins, strategy, w)[:, 0] > 0)
    assert np.all(prob_pred >= e[nonempty] - 1e-12) and np.all(prob_pred <= e[nonempty + 1] + 1e-12)


@SETTINGS
@given(data=probabilities(), n_bins=n_bins_st, strategy=strategy_st)
def test_counts_and_unit_weights(data, n_bins, strategy):
    y, p, _ = data
    prob_true, prob_pred, counts = M.calibration_curve(y, p, n_bins=n_bins, strategy=strategy, return_counts=True)
    assert counts.dtype == np.int64 and counts.sum() == len(p) and np.all(counts > 0)
    ids = naive.bin_ids(p, naive.edges(p, n_bins, strategy))
    expected = np.bincount(ids, minlength=n_bins)
    assert_array_equal(counts, expected[expected > 0])
    w_true, w_pred, w_counts = M.calibration_curve(
        y, p, n_bins=n_bins, strategy=strategy, sample_weight=np.ones(len(p)), return_counts=True
    )
    assert_array_equal(w_true, prob_true)
    assert_array_equal(w_pred, prob_pred)
    assert_array_equal(w_counts, counts)


def test_integer_weights_equal_repeated_rows():
    rng = np.random.default_rng(3)
    y, p = miscalibrated(500)
    w = rng.integers(0, 4, 500)
    a = M.calibration_curve(y, p, n_bins=7, sample_weight=w, return_counts=True)
    b = M.calibration_curve(np.repeat(y, w), np.repeat(p, w), n_bins=7, return_counts=True)
    for u, v in zip(a, b):
        assert_allclose(u, v, rtol=sum_rtol(w.sum()))  # sums over 500 weighted or w.sum() repeated rows


def test_calibration_curve_docstring_example_and_big_float32():
    y_true = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    y_pred = np.array([0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0])
    for strategy in ("uniform", "quantile"):
        for n_bins in (1, 3, 5, 9, 20):
            e = sk_calibration_curve(y_true, y_pred, n_bins=n_bins, strategy=strategy)
            g = M.calibration_curve(y_true, y_pred, n_bins=n_bins, strategy=strategy)
            assert_allclose(g[0], e[0], atol=1e-12)
            assert_allclose(g[1], e[1], atol=1e-12)
    # parallel path, float32 and ties, against scikit-learn
    y, p = miscalibrated(200_003, np.float32, seed=1)
    p[::7] = np.round(p[::7], 2)
    for strategy in ("uniform", "quantile"):
        e = sk_calibration_curve(y, p, n_bins=13, strategy=strategy)
        g = M.calibration_curve(y, p, n_bins=13, strategy=strategy)
        assert_allclose(g[0], e[0], rtol=0, atol=sum_rtol(p.size))  # means in [0, 1] of up to n rows
        assert_allclose(g[1], e[1], rtol=0, atol=sum_rtol(p.size))


def test_values_on_and_next_to_edges():
    """Every uniform edge, and its float neighbours, lands in scikit-learn's bin."""
    for n_bins in (1, 2, 3, 7, 10, 15, 100, 1000, 4097):
        e = np.linspace(0, 1, n_bins + 1)
        p = np.concatenate([e, np.nextafter(e, 0), np.nextafter(e, 1)])
        p = np.clip(p, 0, 1)
        for dtype in (np.float64, np.float32):
            q = p.astype(dtype)
            y = np.arange(len(q)) % 2
            _, _, counts = M.calibration_curve(y, q, n_bins=n_bins, return_counts=True)
            expected = np.bincount(np.searchsorted(e[1:-1], q), minlength=n_bins)
            assert_array_equal(counts, expected[expected > 0])


def test_empty_bins_dropped_not_nan():
    p = np.array([0.05, 0.06, 0.95, 0.97])
    y = np.array([0, 0, 1, 1])
    prob_true, prob_pred, counts = M.calibration_curve(y, p, n_bins=10, return_counts=True)
    assert_array_equal(counts, [2, 2])
    assert not np.isnan(prob_true).any() and not np.isnan(prob_pred).any()
    # a bin whose samples all have weight 0 is empty
    prob_true, _, counts = M.calibration_curve(y, p, n_bins=10, sample_weight=[0, 0, 1, 1], return_counts=True)
    assert_array_equal(counts, [2.0])
    assert_array_equal(prob_true, [1.0])


# ---------------------------------------------------------------------------
# labels
# ---------------------------------------------------------------------------
def test_labels_like_sklearn():
    p = np.array([0.1, 0.6, 0.8, 0.3, 0.9])
    y01 = np.array([0, 1, 1, 0, 1])
    ref = sk_calibration_curve(y01, p, n_bins=3)
    cases = [
        (y01.astype(bool), None),
        (y01.astype(np.float32), None),
        (np.where(y01 == 1, 1, -1), None),
        (np.where(y01 == 1, "spam", "ham"), "spam"),
        (np.where(y01 == 1, 2, 7), 2),
        (np.where(y01 == 1, 0, 1), 0),
        (y01, 1),
        (y01, True),
    ]
    for y, pos_label in cases:
        got = M.calibration_curve(y, p, n_bins=3, pos_label=pos_label)
        assert_allclose(got[0], ref[0])
        assert_allclose(got[1], ref[1])
        assert math.isclose(M.brier_score_loss(y, p, pos_label=pos_label), skm.brier_score_loss(y01, p))
    # a single class is allowed (as in scikit-learn's calibration_curve)
    assert_allclose(M.calibration_curve(np.zeros(5), p, n_bins=2)[0], [0.0, 0.0])
    assert_allclose(M.calibration_curve(-np.ones(5), p, n_bins=2)[0], [0.0, 0.0])
    with pytest.raises(ValueError, match="y_true.*pos_label"):
        M.calibration_curve(np.where(y01 == 1, 2, 7), p)
    with pytest.raises(ValueError, match="y_true.*pos_label"):
        M.calibration_curve(np.where(y01 == 1, "a", "b"), p)
    with pytest.raises(ValueError, match="y_true must hold binary labels"):
        M.calibration_curve([0, 1, 2, 1, 0], p)
    with pytest.raises(ValueError, match="y_true must hold binary labels"):
        M.calibration_curve([0, 1, 2, 1, 0], p, pos_label=1)
    with pytest.raises(ValueError, match="y_true must not contain NaN"):
        M.calibration_curve([0, 1, np.nan, 1, 0], p)
    with pytest.raises(ValueError, match="pos_label"):
        M.calibration_curve(y01, p, pos_label=[1])


@pytest.mark.parametrize("y", [np.array([2, 7, 2, 7]), np.array(list("abab")), np.array(list("abab"), dtype=object),
                               np.array([0.5, 1.5, 0.5, 1.5])], ids=["int", "str", "object", "float"])
def test_missing_pos_label_message_is_sklearns(y):
    """Labels other than {0, 1} or {-1, 1} without pos_label: scikit-learn's message, word for word."""
    p = np.array([0.1, 0.4, 0.6, 0.9])
    with pytest.raises(ValueError) as ours:
        M.calibration_curve(y, p)
    with pytest.raises(ValueError) as theirs:
        sk_calibration_curve(y, p)
    assert str(ours.value) == str(theirs.value)


# ---------------------------------------------------------------------------
# large inputs: the parallel paths, on any number of threads
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_calibration_curve_large_quantile(weighted, dtype):
    """At this size the edges come from bucket selection and the table from the parallel kernel."""
    y, p = miscalibrated(150_001, dtype, seed=2)
    w = np.random.default_rng(0).random(p.size).astype(dtype) if weighted else None
    e_true, e_pred, e_counts = naive.calibration_curve(y, p, 11, "quantile", w)
    got = M.calibration_curve(y, p, n_bins=11, strategy="quantile", sample_weight=w, return_counts=True)
    assert_allclose(got[0], e_true, atol=sum_rtol(p.size))  # means in [0, 1] of up to n rows
    assert_allclose(got[1], e_pred, atol=sum_rtol(p.size))
    assert_allclose(got[2], e_counts, rtol=sum_rtol(p.size))


def test_result_does_not_depend_on_thread_count():
    y, p = miscalibrated(300_000)
    w = np.random.default_rng(3).random(p.size)
    results = []
    for threads in (1, 2, 3, MANY):
        with num_threads(threads):
            results.append((
                M.brier_decomposition(y, p, n_bins=12),
                M.calibration_report(y, p, sample_weight=w).to_dict(),
                M.roc_auc_score(y, p),
                M.expected_calibration_error(y, p, strategy="quantile"),
            ))
    assert all(r == results[0] for r in results)


# ---------------------------------------------------------------------------
# Brier score and log loss
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=probabilities(weighted=True), use_weights=st.booleans())
def test_brier_and_log_loss(data, use_weights):
    y, p, w = data
    w = w if use_weights else None
    brier = M.brier_score_loss(y, p, sample_weight=w)
    ll = M.log_loss(y, p, sample_weight=w)
    assert math.isclose(brier, naive.brier(y, p, w), rel_tol=1e-12, abs_tol=1e-15)
    assert math.isclose(ll, naive.log_loss(y, p, w), rel_tol=1e-12, abs_tol=1e-15)
    assert 0 <= brier <= 1 and ll >= 0
    classes = np.unique(np.asarray(y))
    if p.dtype == np.float64:
        assert math.isclose(brier, skm.brier_score_loss(y, p, sample_weight=w), rel_tol=1e-12, abs_tol=1e-15)
        if classes.size == 2:
            assert math.isclose(ll, skm.log_loss(y, p, sample_weight=w), rel_tol=1e-12, abs_tol=1e-15)
    else:  # scikit-learn sums float32 in float32; fastcal in float64
        assert math.isclose(brier, skm.brier_score_loss(y, p, sample_weight=w), rel_tol=1e-5, abs_tol=1e-6)
        if classes.size == 2:
            assert math.isclose(ll, skm.log_loss(y, p, sample_weight=w), rel_tol=1e-5, abs_tol=1e-6)


def test_log_loss_clipping_like_sklearn():
    y = np.array([1, 0, 1, 0, 1, 0])
    p = np.array([0.0, 1.0, 1.0, 0.0, 1e-20, 1 - 1e-17])
    for dtype in (np.float64, np.float32):
        q = p.astype(dtype)
        eps = np.finfo(dtype).eps
        expected = -np.mean(np.log([eps, eps, 1 - eps, 1 - eps, eps, eps]).astype(np.float64))
        assert math.isclose(M.log_loss(y, q), naive.log_loss(y, q), rel_tol=1e-12)
        assert math.isclose(M.log_loss(y, q), skm.log_loss(y, q), rel_tol=1e-6)
        assert math.isclose(M.log_loss(y, q), expected, rel_tol=1e-6)
    assert math.isclose(M.log_loss(y, p), skm.log_loss(y, p), rel_tol=1e-12)
    assert math.isclose(M.log_loss(y, p, normalize=False), skm.log_loss(y, p, normalize=False), rel_tol=1e-12)


def test_losses_large_parallel():
    y, p = miscalibrated(300_000)
    w = np.random.default_rng(1).random(p.size)
    for sw in (None, w):
        ours = M.brier_score_loss(y, p, sample_weight=sw)
        assert math.isclose(ours, skm.brier_score_loss(y, p, sample_weight=sw), rel_tol=sum_rtol(p.size))
        ours = M.log_loss(y, p, sample_weight=sw)
        assert math.isclose(ours, skm.log_loss(y, p, sample_weight=sw), rel_tol=sum_rtol(p.size))


# ---------------------------------------------------------------------------
# Brier decomposition and ECE
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=probabilities(weighted="zeros"), n_bins=n_bins_st, strategy=strategy_st, use_weights=st.booleans())
def test_brier_decomposition(data, n_bins, strategy, use_weights):
    y, p, w = data
    w = w if use_weights else None
    d = M.brier_decomposition(y, p, n_bins=n_bins, strategy=strategy, sample_weight=w)
    # Each term is at most 1 and is made of squares and ratios of bin sums of <= n rows (each within n eps
    # relative): it is off by at most ~10 n eps, whatever the order of the sums.
    term_atol = 10 * len(p) * EPS
    total = d.reliability - d.resolution + d.uncertainty + d.within_bin_variance - d.within_bin_covariance
    assert abs(total - d.brier) <= 6 * term_atol
    assert math.isclose(d.brier, M.brier_score_loss(y, p, sample_weight=w), rel_tol=1e-12, abs_tol=1e-15)
    ref = naive.brier_decomposition(y, p, n_bins, strategy, w)
    for name, value in d.to_dict().items():
        assert math.isclose(value, ref[name], rel_tol=1e-9, abs_tol=2 * term_atol), name
    assert d.reliability >= 0 and d.resolution >= 0 and d.within_bin_variance >= 0
    assert 0 <= d.uncertainty <= 0.25
    rmsce = M.expected_calibration_error(y, p, n_bins=n_bins, strategy=strategy, norm="l2", sample_weight=w)
    assert math.isclose(rmsce**2, d.reliability, rel_tol=1e-9, abs_tol=1e-15)


def test_murphy_identity_when_bins_are_constant():
    """With one prediction value per bin the extra terms vanish: BS = REL - RES + UNC."""
    rng = np.random.default_rng(4)
    p = rng.choice(np.linspace(0.05, 0.95, 10), 10_000)
    y = (rng.random(p.size) < p**1.3).astype(np.int8)
    d = M.brier_decomposition(y, p, n_bins=10)
    assert d.within_bin_variance == pytest.approx(0, abs=1e-15)
    assert d.within_bin_covariance == pytest.approx(0, abs=1e-15)
    # four terms, each within 10 n eps (see test_brier_decomposition)
    assert d.brier == pytest.approx(d.reliability - d.resolution + d.uncertainty, abs=4 * 10 * p.size * EPS)


@SETTINGS
@given(data=probabilities(weighted="zeros"), n_bins=n_bins_st, strategy=strategy_st, use_weights=st.booleans())
def test_ece(data, n_bins, strategy, use_weights):
    y, p, w = data
    w = w if use_weights else None
    values = {}
    for norm in _binning.NORMS:
        values[norm] = M.expected_calibration_error(y, p, n_bins=n_bins, strategy=strategy, norm=norm, sample_weight=w)
        assert math.isclose(values[norm], naive.ece(y, p, n_bins, strategy, norm, w), rel_tol=1e-9, abs_tol=1e-12)
        assert not math.isnan(values[norm])
    # l1 <= l2 <= max <= 1 exactly; the computed sums over <= n_bins bins may overshoot by ~n_bins eps
    slack = (n_bins + 2) * EPS
    assert 0 <= values["l1"] <= values["l2"] + slack <= values["max"] + 2 * slack <= 1 + 2 * slack


def test_ece_defaults_and_perfect_calibration():
    assert M.expected_calibration_error([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4], n_bins=2) == pytest.approx(0.275)
    # in each bin the frequency equals the prediction
    p = np.repeat([0.25, 0.75], 4)
    y = np.array([1, 0, 0, 0, 1, 1, 1, 0])
    for norm in _binning.NORMS:
        assert M.expected_calibration_error(y, p, norm=norm) == pytest.approx(0, abs=1e-15)


# ---------------------------------------------------------------------------
# ROC AUC
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=probabilities(min_size=2, weighted=True), use_weights=st.booleans(), flip=st.booleans())
def test_roc_auc(data, use_weights, flip):
    y, p, w = data
    y = both_classes(y)
    w = w if use_weights else None
    s = -p if flip else p  # scores need not be probabilities
    auc = M.roc_auc_score(y, s, sample_weight=w)
    assert math.isclose(auc, skm.roc_auc_score(y, s, sample_weight=w), rel_tol=0, abs_tol=auc_atol(len(y)))
    assert math.isclose(auc, naive.auc(y, s, w), rel_tol=1e-12, abs_tol=1e-15)
    # invariants: reversing the scores, or the labels, gives 1 - AUC
    assert math.isclose(M.roc_auc_score(y, -s, sample_weight=w), 1 - auc, abs_tol=1e-12)
    assert math.isclose(M.roc_auc_score(1 - y, s, sample_weight=w), 1 - auc, abs_tol=1e-12)


def test_roc_auc_threaded_and_parallel_paths(monkeypatch):
    y, p = miscalibrated(70_001, np.float32, seed=9)
    p[::3] = np.round(p[::3], 3)  # ties, also across classes and at the range bounds
    expected = skm.roc_auc_score(y, p)
    tol = dict(rel_tol=0, abs_tol=auc_atol(y.size))
    assert math.isclose(M.roc_auc_score(y, p), expected, **tol)
    monkeypatch.setattr(A, "THREADED_SORT_MIN_SIZE", 1)
    q = np.round(p, 1)  # heavy ties: few distinct scores, ranges merge
    crowded = p.astype(np.float64) ** 40  # scores crowd near 0: most fall in the lowest cells
    first = None
    for range_rows in (1 << 20, 5000, 300):  # 2, 14 and 233 value ranges
        monkeypatch.setattr(A, "RANGE_ROWS", range_rows)
        for threads in (1, 2, 3, MANY):
            with num_threads(threads):
                got = M.roc_auc_score(y, p)
                assert math.isclose(got, expected, **tol)
                first = got if first is None else first
                assert got == first  # exact integer counts: the same bits however the work is cut
                assert math.isclose(M.roc_auc_score(y[:11], p[:11]), skm.roc_auc_score(y[:11], p[:11]), **tol)
                assert math.isclose(M.roc_auc_score(y, q), skm.roc_auc_score(y, q), **tol)
                assert math.isclose(M.roc_auc_score(y, crowded), skm.roc_auc_score(y, crowded), **tol)
    # the shared sort: each class's scores ascending, every range's scores below the next range's
    for x in (p, q, crowded):
        view = sort_by_label(x, y, 233)
        assert_array_equal(view.neg, np.sort(x[y == 0]))
        assert_array_equal(view.pos, np.sort(x[y == 1]))
        assert view.ranges > 1
        for r in range(view.ranges - 1):
            below = np.concatenate([view.slot(r), view.slot(view.ranges + r)])
            above = np.concatenate([view.slot(s) for s in (r + 1, view.ranges + r + 1)])
            if below.size and above.size:
                assert below.max() < above.min()
        # the AUC from a sort made for another statistic (any number of ranges) is the same
        assert A.roc_auc(y, x, None, by_label=view) == A.roc_auc(y, x, None)


def test_roc_auc_one_class():
    with pytest.raises(ValueError, match="Only one class"):
        M.roc_auc_score([1, 1, 1], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="Only one class"):
        M.roc_auc_score([1, 0, 1], [0.1, 0.2, 0.3], sample_weight=[1, 0, 1])


# ---------------------------------------------------------------------------
# bad input, input handling
# ---------------------------------------------------------------------------
PUBLIC = [
    M.calibration_curve,
    M.brier_score_loss,
    M.log_loss,
    M.brier_decomposition,
    M.expected_calibration_error,
]


@pytest.mark.parametrize("func", PUBLIC + [M.roc_auc_score])
def test_bad_input_names_the_argument(func):
    y = np.array([0, 1, 1, 0])
    p = np.array([0.1, 0.9, 0.6, 0.4])
    # scikit-learn's names: y_proba for the drop-in losses, y_prob for calibration_curve and fastcal's own
    name = {M.roc_auc_score: "y_score", M.brier_score_loss: "y_proba", M.log_loss: "y_proba"}.get(func, "y_prob")
    with pytest.raises(ValueError, match=f"{name} must be finite.*NaN"):
        func(y, np.array([0.1, np.nan, 0.2, 0.3]))
    with pytest.raises(ValueError, match=f"{name} must be finite.*infinity"):
        func(y, np.array([0.1, np.inf, 0.2, 0.3]))
    with pytest.raises(ValueError, match="y_true.*y_prob|y_true.*y_score"):
        func(y, p[:3])
    with pytest.raises(ValueError, match="y_true"):
        func(np.array([0, 1, 2, 0]), p)
    with pytest.raises(ValueError, match="sample_weight"):
        func(y, p, sample_weight=[1, -1, 1, 1])
    with pytest.raises(ValueError, match="sample_weight"):
        func(y, p, sample_weight=[1, 1, 1])
    with pytest.raises(ValueError, match="y_true must have at least 1 element"):
        func(np.empty(0), np.empty(0))
    with pytest.raises(ValueError, match=name):
        func(y, p.reshape(2, 2))
    if func is not M.roc_auc_score:
        with pytest.raises(ValueError, match=f"{name} has values outside \\[0, 1\\]"):
            func(y, np.array([0.1, 1.2, 0.2, 0.3]))
        with pytest.raises(ValueError, match=f"{name} has values outside \\[0, 1\\]"):
            func(y, np.array([0.1, -1e-9, 0.2, 0.3]))
    else:
        assert M.roc_auc_score(y, p * 100 - 7) == M.roc_auc_score(y, p)


@pytest.mark.parametrize("func", [M.calibration_curve, M.brier_decomposition, M.expected_calibration_error])
def test_bad_parameters(func):
    y = np.array([0, 1, 1, 0])
    p = np.array([0.1, 0.9, 0.6, 0.4])
    for n_bins in (0, -3, 2.5, True, "5", None):
        with pytest.raises(ValueError, match="n_bins"):
            func(y, p, n_bins=n_bins)
    with pytest.raises(ValueError, match="strategy"):
        func(y, p, strategy="kmeans")
    if func is M.expected_calibration_error:
        with pytest.raises(ValueError, match="norm"):
            func(y, p, norm="l3")
    if func is M.calibration_curve:
        with pytest.raises(ValueError, match="return_counts"):
            func(y, p, return_counts="yes")


def test_input_handling():
    y, p = miscalibrated(1000)
    w = np.random.default_rng(0).random(1000)
    expected = M.calibration_curve(y, p, n_bins=8, strategy="quantile", sample_weight=w)
    ro = [a.copy() for a in (y, p, w)]
    for a in ro:
        a.flags.writeable = False
    got = M.calibration_curve(*ro[:2], n_bins=8, strategy="quantile", sample_weight=ro[2])
    assert_array_equal(got[0], expected[0])
    # strided and column input, lists, big-endian
    big = np.empty((2000, 2))
    big[::2, 0] = p
    strided = big[::2, 0]
    got = M.calibration_curve(y.reshape(-1, 1), strided, n_bins=8, strategy="quantile", sample_weight=w)
    assert_array_equal(got[1], expected[1])
    got = M.calibration_curve(y.tolist(), p.astype(">f8"), n_bins=8, strategy="quantile", sample_weight=list(w))
    assert_array_equal(got[1], expected[1])
    # inputs are never modified
    copies = [a.copy() for a in (y, p, w)]
    M.calibration_curve(y, p, n_bins=8, strategy="quantile", sample_weight=w)
    M.roc_auc_score(y, p)
    M.roc_auc_score(y, p, sample_weight=w)
    for a, b in zip(copies, (y, p, w)):
        assert_array_equal(a, b)


def test_exported():
    for name in (
        "calibration_curve",
        "brier_score_loss",
        "log_loss",
        "brier_decomposition",
        "expected_calibration_error",
        "roc_auc_score",
        "calibration_report",
        "CalibrationReport",
        "BrierDecomposition",
    ):
        assert getattr(fastcal, name) is getattr(M, name)


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_calibration_report(weighted, strategy):
    from fastcal.platt import calibration_slope_intercept

    y, p = miscalibrated(5000, seed=7)
    w = np.random.default_rng(2).uniform(0.5, 2, p.size) if weighted else None
    r = M.calibration_report(y, p, sample_weight=w, n_bins=12, strategy=strategy)
    kw = dict(sample_weight=w)
    assert r.n == 5000 and r.n_bins == 12 and r.strategy == strategy
    assert math.isclose(r.auc, skm.roc_auc_score(y, p, **kw), rel_tol=0, abs_tol=auc_atol(p.size))
    assert math.isclose(r.brier, skm.brier_score_loss(y, p, **kw), rel_tol=sum_rtol(p.size))
    assert math.isclose(r.log_loss, skm.log_loss(y, p, **kw), rel_tol=sum_rtol(p.size))
    ece_kw = dict(n_bins=12, strategy=strategy, sample_weight=w)
    assert r.ece == M.expected_calibration_error(y, p, norm="l1", **ece_kw)
    assert r.rmsce == M.expected_calibration_error(y, p, norm="l2", **ece_kw)
    assert r.mce == M.expected_calibration_error(y, p, norm="max", **ece_kw)
    d = M.brier_decomposition(y, p, n_bins=12, strategy=strategy, sample_weight=w)
    for name in ("reliability", "resolution", "uncertainty", "within_bin_variance", "within_bin_covariance"):
        assert getattr(r, name) == getattr(d, name)
    fit = calibration_slope_intercept(y, p, sample_weight=w)
    assert r.slope == float(fit.slope) and r.intercept == float(fit.intercept)
    assert r.calibration_in_the_large == float(fit.calibration_in_the_large)
    # the model is over-confident: slope well below 1
    assert 0.3 < r.slope < 0.7
    ww = np.ones(p.size) if w is None else w
    assert math.isclose(r.base_rate, np.average(y, weights=ww), rel_tol=sum_rtol(p.size))
    assert math.isclose(r.mean_prediction, np.average(p, weights=ww), rel_tol=sum_rtol(p.size))
    assert math.isclose(r.weight_sum, ww.sum(), rel_tol=sum_rtol(p.size))
    curve = M.calibration_curve(y, p, n_bins=12, strategy=strategy, sample_weight=w, return_counts=True)
    assert_array_equal(r.prob_true, curve[0])
    assert_array_equal(r.prob_pred, curve[1])
    assert_allclose(r.bin_weights[r.bin_weights > 0], curve[2])
    assert r.bin_edges.shape == (13,)
    d = r.to_dict()
    assert json.loads(json.dumps(d))["auc"] == r.auc
    assert set(d) >= {"n", "auc", "brier", "log_loss", "ece", "slope", "intercept", "calibration_in_the_large"}
    text = str(r)
    for label in ("ROC AUC", "Brier score", "log loss", "ECE", "calibration slope", "calibration-in-the-large"):
        assert label in text
    assert f"{r.auc:.6f}" in text and text.count("\n") > 25


def test_calibration_report_empty_bins_and_one_class():
    p = np.array([0.05, 0.06, 0.95, 0.97, 0.1, 0.9])
    y = np.array([0, 1, 1, 1, 0, 0])
    r = M.calibration_report(y, p, n_bins=10)
    assert r.bin_weights.tolist().count(0.0) == 7
    assert "(empty)" in str(r)
    assert not any(isinstance(v, float) and math.isnan(v) for v in r.to_dict().values())
    # One class is valid input: the report warns and gives NaN where a statistic does not exist (issue 11).
    with pytest.warns(UserWarning, match="y holds one class only"):
        one = M.calibration_report(np.ones(6), p)
    assert math.isnan(one.auc) and math.isnan(one.slope) and one.calibration_in_the_large == math.inf



@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_report_without_the_slope(weighted):
    rng = np.random.default_rng(3)
    p = rng.random(3000)
    y = (rng.random(3000) < p).astype(np.int8)
    w = rng.uniform(0.5, 2.0, 3000) if weighted else None
    assert_same_but_the_slope(M.calibration_report(y, p, sample_weight=w, slope=False),
                               M.calibration_report(y, p, sample_weight=w))
    # separable rows: the slope does not exist; without its fit, no warning (warnings are errors here)
    sep_p, sep_y = np.array([0.1, 0.2, 0.3, 0.7, 0.8]), np.array([0, 0, 0, 1, 1])
    with pytest.warns(UserWarning, match="does not exist"):
        full = M.calibration_report(sep_y, sep_p)
    assert_same_but_the_slope(M.calibration_report(sep_y, sep_p, slope=False), full)
    with pytest.raises(TypeError, match="slope"):
        M.calibration_report(y, p, slope="no")


# ---------------------------------------------------------------------------
# scikit-learn's drop-ins: (n, k) matrices, labels, argument names
# ---------------------------------------------------------------------------
EPS32 = float(np.finfo(np.float32).eps)


def loss_rtol(n, k, dtype):
    """Relative difference from scikit-learn of a loss summed over n rows of k terms each (all of one sign).

    fastcal sums in float64, scikit-learn in the dtype of the probabilities, its logarithms and squares each within
    an eps of the dtype: two evaluations of a sum of n rows of k terms (or of a ratio of two sums) differ by at most
    4 (n + k) eps of the coarser dtype (recursive summation, as :func:`sum_rtol`).
    """
    return 4 * (n + k) * (EPS if dtype == np.float64 else EPS32)


def outcome(func, *args, **kwargs):
    """``(result or the exception's type, messages of the warnings other than deprecations)``."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = func(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - the type is what is compared
            result = type(e)
    return result, [str(w.message) for w in caught if not issubclass(w.category, DeprecationWarning)]


def class_codes(y, labels):
    """The column of each label: its rank among the sorted classes (``labels``, else those of ``y``)."""
    return np.searchsorted(np.unique(np.asarray(y if labels is None else labels)), y)


def sums_to_one_warning(messages):
    return any("sum to one" in m for m in messages)


@SETTINGS
@given(data=class_probabilities(), normalize=st.booleans(), scale_by_half=st.sampled_from(["auto", True, False]))
def test_multiclass_losses_equal_sklearn(data, normalize, scale_by_half):
    y, P, w, labels = data
    n, k = P.shape
    codes = class_codes(y, labels)
    naive_log, naive_brier = naive.class_losses(codes, P, w)
    total = n if w is None else w.sum()
    half = scale_by_half is True or (scale_by_half == "auto" and k < 3)
    for ours, theirs, kw, reference in (
        (M.log_loss, skm.log_loss, dict(normalize=normalize), naive_log * (1 if normalize else total)),
        (M.brier_score_loss, skm.brier_score_loss, dict(scale_by_half=scale_by_half),
         naive_brier / 2 if half else naive_brier),
    ):
        expected, sk_warnings = outcome(theirs, y, P, sample_weight=w, labels=labels, **kw)
        got, our_warnings = outcome(ours, y, P, sample_weight=w, labels=labels, **kw)
        assert isinstance(expected, float) and isinstance(got, float), (expected, got)
        # scikit-learn squares in the probabilities' dtype: a term below its smallest subnormal flushes to 0
        # (float32: (2e-24)**2), each an absolute error of at most that.
        flush = n * k * float(np.finfo(P.dtype).smallest_subnormal)
        assert math.isclose(got, expected, rel_tol=loss_rtol(n, k, P.dtype), abs_tol=flush), ours
        assert math.isclose(got, reference, rel_tol=sum_rtol(n * k)), ours
        # the same warning for rows that do not sum to 1 (the strategy's rows are off by 0.1 or by rounding only)
        assert sums_to_one_warning(our_warnings) == sums_to_one_warning(sk_warnings), (our_warnings, sk_warnings)
        assert all("sum to one" in m for m in our_warnings), our_warnings


@SETTINGS
@given(data=probabilities(weighted=True), use_weights=st.booleans())
def test_two_column_matrix_is_the_binary_problem(data, use_weights):
    """[1 - p, p] scores as the 1-D p, like scikit-learn's.

    The log losses have the same terms (1 - p is computed alike); the Brier score of the matrix also squares
    fl(1 - p) - (1 - y), whose rounding (half an eps of the dtype) moves a row's term d^2 by at most eps |d| <= eps.
    """
    y, p, w = data
    w = w if use_weights else None
    two = np.stack([1 - p, p], axis=1)
    n = len(p)
    rtol = loss_rtol(n, 2, p.dtype)
    for ours, theirs, atol in ((M.log_loss, skm.log_loss, 0.0),
                               (M.brier_score_loss, skm.brier_score_loss, float(np.finfo(p.dtype).eps))):
        got = ours(y, two, sample_weight=w, labels=[0, 1])
        assert math.isclose(got, ours(y, p, sample_weight=w), rel_tol=sum_rtol(2 * n), abs_tol=atol)
        assert math.isclose(got, theirs(y, two, sample_weight=w, labels=[0, 1]), rel_tol=rtol)
    # a 1-D binary problem is the two-column one: 2 Brier scores when not halved (scikit-learn squares fl(1 - p))
    assert math.isclose(M.brier_score_loss(y, p, sample_weight=w, scale_by_half=False),
                        skm.brier_score_loss(y, p, sample_weight=w, scale_by_half=False), rel_tol=rtol,
                        abs_tol=float(np.finfo(p.dtype).eps))
    assert math.isclose(M.brier_score_loss(y, p, sample_weight=w, scale_by_half=True),
                        M.brier_score_loss(y, p, sample_weight=w), rel_tol=0)


AVERAGE_ST = st.sampled_from(["macro", "weighted", "micro", "samples", None])


@settings(max_examples=150, deadline=None)
@given(data=class_probabilities(min_classes=3, normalised=True), multi_class=st.sampled_from(["ovr", "ovo"]),
       average=AVERAGE_ST)
def test_multiclass_roc_auc_equals_sklearn(data, multi_class, average):
    """Every (multi_class, average) pair, weighted or not: scikit-learn's value, or an error where it has one.

    Deliberate differences: an AUC that is not defined (a class absent from y_true, or all of it) raises here where
    scikit-learn returns NaN with a warning; average=None with "ovo" raises InvalidParameterError (a ValueError)
    where scikit-learn raises NotImplementedError.
    """
    y, P, w, labels = data
    n, k = P.shape
    kw = dict(multi_class=multi_class, average=average, sample_weight=w, labels=labels)
    expected, _ = outcome(skm.roc_auc_score, y, P, **kw)
    got, our_warnings = outcome(M.roc_auc_score, y, P, **kw)
    assert our_warnings == []
    if isinstance(expected, type) or np.isnan(expected).any():
        assert isinstance(got, type) and issubclass(got, ValueError), (expected, got)
        return
    assert not isinstance(got, type), (expected, got)
    assert np.shape(got) == np.shape(expected) and (average is None) == isinstance(got, np.ndarray)
    assert_allclose(got, expected, rtol=0, atol=auc_atol(n * k))  # averages of AUCs of up to n k scores
    codes = class_codes(y, labels)
    if multi_class == "ovo":
        assert math.isclose(got, naive.ovo_auc(codes, P, average), rel_tol=0, abs_tol=auc_atol(n * k))
    elif average is None:
        assert_allclose(got, naive.ovr_auc(codes, P, w), rtol=0, atol=auc_atol(n))


@SETTINGS
@given(data=probabilities(min_size=2, weighted=True), use_weights=st.booleans(),
       max_fpr=st.sampled_from([1e-3, 0.1, 0.2, 0.25, 0.5, 0.9, 1.0]) | st.floats(1e-3, 1.0))
def test_partial_roc_auc_equals_sklearn(data, use_weights, max_fpr):
    y, p, w = data
    y = both_classes(y)
    w = w if use_weights else None
    got = M.roc_auc_score(y, p, sample_weight=w, max_fpr=max_fpr)
    # The area is sums of <= n terms within auc_atol(n) of each other; McClish's scale multiplies by 1 / (2 (m - m^2/2)).
    atol = auc_atol(len(y)) / (2 * (max_fpr - max_fpr**2 / 2))
    assert math.isclose(got, skm.roc_auc_score(y, p, sample_weight=w, max_fpr=max_fpr), rel_tol=0, abs_tol=atol)
    assert math.isclose(got, naive.partial_auc(y, p, w, max_fpr), rel_tol=0, abs_tol=atol)
    assert 0 <= got <= 1 + atol
    if max_fpr == 1:
        assert got == M.roc_auc_score(y, p, sample_weight=w)


def test_partial_roc_auc_cases():
    y = np.array([0, 0, 1, 1, 0, 1])
    perfect = np.array([0.1, 0.2, 0.8, 0.9, 0.3, 0.7])
    for m in (0.01, 1 / 3, 0.5, 0.99):
        assert M.roc_auc_score(y, perfect, max_fpr=m) == pytest.approx(1.0, abs=1e-15)
        assert M.roc_auc_score(y, -perfect, max_fpr=m) == pytest.approx(skm.roc_auc_score(y, -perfect, max_fpr=m))
        assert M.roc_auc_score(y, np.ones(6), max_fpr=m) == pytest.approx(0.5, abs=1e-15)  # no discrimination
    with pytest.raises(ValueError, match="Only one class"):
        M.roc_auc_score([1, 1, 1], [0.1, 0.2, 0.3], max_fpr=0.5)
    for bad in (0, -0.1, 1.5, "0.5", True, math.nan):
        with pytest.raises(fastcal.InvalidParameterError, match=r"^max_fpr must be a real number in \(0, 1\] or None"):
            M.roc_auc_score(y, perfect, max_fpr=bad)


def test_partial_roc_auc_sorts_on_threads(monkeypatch):
    """Above THREADED_SORT_MIN_SIZE the two classes are sorted on two threads: the same sorted arrays, the same bits."""
    y, p = miscalibrated(20_001, seed=4)
    p[::4] = np.round(p[::4], 3)  # ties across the classes
    w = np.random.default_rng(4).uniform(0.5, 2, p.size)
    serial = [M.roc_auc_score(y, p, max_fpr=0.3, sample_weight=sw) for sw in (None, w)]
    monkeypatch.setattr(A, "THREADED_SORT_MIN_SIZE", 1)
    with num_threads(2):
        assert [M.roc_auc_score(y, p, max_fpr=0.3, sample_weight=sw) for sw in (None, w)] == serial
    atol = auc_atol(p.size) / (2 * (0.3 - 0.3**2 / 2))
    assert_allclose(serial, [skm.roc_auc_score(y, p, max_fpr=0.3, sample_weight=sw) for sw in (None, w)], rtol=0,
                    atol=atol)


def test_binary_label_rules_like_sklearn():
    """log_loss and roc_auc_score score the greater of two labels, as scikit-learn; brier_score_loss guesses none."""
    p = np.array([0.1, 0.6, 0.8, 0.3, 0.9, 0.4])
    y01 = np.array([0, 1, 1, 0, 1, 1])
    for y in (np.where(y01 == 1, 7, 2), np.where(y01 == 1, "spam", "ham"), np.where(y01 == 1, 0, -1),
              np.where(y01 == 1, 3.0, -1.0)):
        assert M.log_loss(y, p) == pytest.approx(skm.log_loss(y, p), rel=1e-15)
        assert M.log_loss(y, p) == M.log_loss(y01, p)
        assert M.roc_auc_score(y, p) == skm.roc_auc_score(y, p) == M.roc_auc_score(y01, p)
        assert M.log_loss(y, p, pos_label=y[0]) == M.log_loss(1 - y01, p)
        assert M.roc_auc_score(y, p, pos_label=y[0]) == M.roc_auc_score(1 - y01, p)
        # labels name the two classes of a 1-D y_proba: the greater is positive, or pos_label
        labels = sorted(set(y.tolist()))
        assert M.log_loss(y, p, labels=labels) == M.log_loss(y01, p)
        assert M.log_loss(y, p, labels=labels, pos_label=labels[0]) == M.log_loss(1 - y01, p)
        assert M.log_loss(y[y01 == 1], p[y01 == 1], labels=labels) == pytest.approx(
            skm.log_loss(y[y01 == 1], p[y01 == 1], labels=labels), rel=1e-15)
        with pytest.raises(ValueError, match="pos_label"):
            M.brier_score_loss(y, p)
        assert M.brier_score_loss(y, p, pos_label=y[1]) == pytest.approx(skm.brier_score_loss(y, p, pos_label=y[1]))
    with pytest.raises(ValueError, match="y_true contains labels not in labels"):
        M.log_loss(y01, p, labels=[1, 2])
    with pytest.raises(ValueError, match="labels must hold the two labels"):
        M.log_loss(y01, p, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="pos_label=5 is not one of labels"):
        M.log_loss(y01, p, labels=[0, 1], pos_label=5)
    # one class: fine with {0, 1} labels (as before), an error otherwise, as in scikit-learn
    assert M.log_loss(np.zeros(6), p) == pytest.approx(-np.mean(np.log(1 - p)), rel=1e-15)
    with pytest.raises(ValueError, match="pos_label"):
        M.log_loss(np.full(6, 7), p)
    with pytest.raises(ValueError, match="y_true must hold binary labels; y_proba is 1-D"):
        M.log_loss([0, 1, 2, 0, 1, 2], p)
    with pytest.raises(ValueError, match="y_true must hold binary labels; a multiclass ROC AUC needs"):
        M.roc_auc_score([0, 1, 2, 0, 1, 2], p, multi_class="ovr")


def test_argument_names_and_signatures():
    """scikit-learn's names work by keyword, fastcal's earlier y_prob too; every scikit-learn parameter exists."""
    import inspect
    import warnings

    y, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3])
    for ours, theirs in ((M.log_loss, skm.log_loss), (M.brier_score_loss, skm.brier_score_loss),
                         (M.roc_auc_score, skm.roc_auc_score)):
        mine = inspect.signature(ours).parameters
        sk = inspect.signature(theirs).parameters
        assert set(sk) <= set(mine), set(sk) - set(mine)
        assert list(mine)[:2] == list(sk)[:2]
        for name in sk:
            if sk[name].default is not inspect.Parameter.empty and name != "y_proba":
                assert mine[name].default == sk[name].default, name
                assert mine[name].kind == sk[name].kind, name
    for f in (M.log_loss, M.brier_score_loss):
        expected = f(y, p)
        assert f(y_true=y, y_proba=p) == f(y, y_prob=p) == expected
        with pytest.raises(fastcal.InvalidParameterError, match="y_proba and y_prob"):
            f(y, p, y_prob=p)
        with pytest.raises(TypeError, match="missing required argument: 'y_proba'"):
            f(y)
        # data errors name the argument as it was passed
        with pytest.raises(ValueError, match="^y_prob has values outside"):
            f(y, y_prob=p * 2)
        with pytest.raises(ValueError, match="^y_proba has values outside"):
            f(y, p * 2)
    with pytest.warns(FutureWarning, match="y_pred was renamed y_proba"):
        assert M.log_loss(y, y_pred=p) == M.log_loss(y, p)
    with pytest.raises(fastcal.InvalidParameterError, match="y_pred and y_proba"):
        M.log_loss(y, p, y_pred=p)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        M.log_loss(y, p)  # no FutureWarning unless y_pred is passed


MATRIX_Y = np.array([0, 1, 2, 2, 1, 0, 2, 1])
MATRIX_P = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.3, 0.3, 0.4],
                     [0.2, 0.6, 0.2], [0.5, 0.25, 0.25], [0.25, 0.25, 0.5], [0.1, 0.8, 0.1]])


@pytest.mark.parametrize("func, kwargs, y, P, message", [
    # scikit-learn's roc_auc_score errors
    ("roc_auc_score", {}, MATRIX_Y, MATRIX_P, "^multi_class must be 'ovr' or 'ovo'"),
    ("roc_auc_score", dict(multi_class="ovr", max_fpr=0.5), MATRIX_Y, MATRIX_P, "^max_fpr must be None or 1"),
    ("roc_auc_score", dict(multi_class="ovr", average="samples"), MATRIX_Y, MATRIX_P, "^average must be 'micro'"),
    ("roc_auc_score", dict(multi_class="ovo", average="micro"), MATRIX_Y, MATRIX_P, "^average must be 'macro' or"),
    ("roc_auc_score", dict(multi_class="ovo", average=None), MATRIX_Y, MATRIX_P, "^average must be 'macro' or"),
    ("roc_auc_score", dict(multi_class="ovo", sample_weight=np.ones(8)), MATRIX_Y, MATRIX_P, "sample_weight must be"),
    ("roc_auc_score", dict(multi_class="ovr"), MATRIX_Y, MATRIX_P * 0.9, "rows summing to 1, but 8 of 8"),
    ("roc_auc_score", dict(multi_class="ovr", labels=[0, 1, 1]), MATRIX_Y, MATRIX_P, "labels must not repeat"),
    ("roc_auc_score", dict(multi_class="ovr", labels=[0, 2, 1]), MATRIX_Y, MATRIX_P, "labels are not sorted"),
    ("roc_auc_score", dict(multi_class="ovr", labels=[0, 1]), MATRIX_Y, MATRIX_P, "labels has 2 labels but y_score"),
    ("roc_auc_score", dict(multi_class="ovr", labels=[0, 1, 3]), MATRIX_Y, MATRIX_P, r"labels not in labels: \{2\}"),
    ("roc_auc_score", dict(multi_class="ovr"), MATRIX_Y % 2, MATRIX_P, "y_true has 2 classes .* y_score has 3"),
    ("roc_auc_score", dict(multi_class="ovr"), MATRIX_Y, MATRIX_P[:, 0], "binary labels; a multiclass ROC AUC"),
    ("roc_auc_score", dict(multi_class="ovr", labels=[0, 1, 2, 3]), MATRIX_Y, np.c_[MATRIX_P, np.zeros(8)],
     r"ROC AUC of class \{3\} against the rest is not defined"),
    ("roc_auc_score", dict(multi_class="ovr"), MATRIX_Y, np.where(MATRIX_P == 0.7, np.nan, MATRIX_P),
     "y_score must be finite"),
    # scikit-learn's log_loss and brier_score_loss errors
    ("log_loss", {}, MATRIX_Y % 2, MATRIX_P, "y_true has 2 classes .* y_proba has 3"),
    ("log_loss", {}, np.zeros(8), MATRIX_P[:, :2], r"y_true contains only one label \(0.0\)"),
    ("log_loss", dict(labels=[0, 1]), MATRIX_Y, MATRIX_P, "labels has 2 labels but y_proba has 3"),
    ("log_loss", dict(labels=[0, 1, 3]), MATRIX_Y, MATRIX_P, r"labels not in labels: \{2\}"),
    ("log_loss", dict(labels=[1]), MATRIX_Y % 2, MATRIX_P[:, :2], "labels must hold at least two labels"),
    ("log_loss", {}, MATRIX_Y, MATRIX_P * 1.5, "y_proba has values outside"),
    ("log_loss", {}, MATRIX_Y[:7], MATRIX_P, "Inconsistent numbers of samples"),
    ("brier_score_loss", {}, MATRIX_Y % 2, MATRIX_P, "y_true has 2 classes .* y_proba has 3"),
    ("brier_score_loss", dict(labels=[0, 1, 2, 3]), MATRIX_Y, MATRIX_P, "labels has 4 labels but y_proba has 3"),
    ("brier_score_loss", {}, MATRIX_Y, MATRIX_P - 0.2, "y_proba has values outside"),
])
def test_multiclass_errors_like_sklearn(func, kwargs, y, P, message):
    """Where scikit-learn refuses, fastcal raises a ValueError (InvalidParameterError for parameters) naming why."""
    expected, _ = outcome(getattr(skm, func), y, P, **kwargs)
    assert isinstance(expected, type) or np.isnan(expected).any(), expected
    with pytest.raises(ValueError, match=message):
        getattr(M, func)(y, P, **kwargs)


def test_multilabel_targets_are_refused():
    """scikit-learn scores a multilabel indicator y_true column by column; fastcal does not (yet), and says so."""
    indicator = (MATRIX_P > 0.25).astype(int)
    assert 0 < skm.roc_auc_score(indicator, MATRIX_P) <= 1
    with pytest.raises(ValueError, match="multilabel indicator targets are not supported"):
        M.roc_auc_score(indicator, MATRIX_P)


def test_multiclass_warnings_like_sklearn():
    with pytest.warns(UserWarning, match="y_proba values do not sum to one: 8 of 8 rows"):
        got = M.log_loss(MATRIX_Y, MATRIX_P * 0.9)
    expected, sk_warnings = outcome(skm.log_loss, MATRIX_Y, MATRIX_P * 0.9)
    assert got == pytest.approx(expected, rel=1e-15) and sums_to_one_warning(sk_warnings)
    with pytest.warns(UserWarning, match="labels are not sorted"):
        got = M.brier_score_loss(MATRIX_Y, MATRIX_P, labels=[2, 0, 1])
    expected, sk_warnings = outcome(skm.brier_score_loss, MATRIX_Y, MATRIX_P, labels=[2, 0, 1])
    assert got == pytest.approx(expected, rel=1e-15) and any("ordered lexicographically" in m for m in sk_warnings)
    # an absent class is fine with labels, and it weighs nothing in the weighted one-vs-rest average
    P4 = np.c_[MATRIX_P, np.zeros(8)]
    for kw in (dict(multi_class="ovr", average="weighted"), dict(multi_class="ovr", average="micro"),
               dict(multi_class="ovo")):
        expected, _ = outcome(skm.roc_auc_score, MATRIX_Y, P4, labels=[0, 1, 2, 3], **kw)
        assert M.roc_auc_score(MATRIX_Y, P4, labels=[0, 1, 2, 3], **kw) == pytest.approx(expected, abs=1e-15)
    assert M.log_loss(MATRIX_Y, P4, labels=[0, 1, 2, 3]) == pytest.approx(
        skm.log_loss(MATRIX_Y, P4, labels=[0, 1, 2, 3]), rel=1e-15)


@SETTINGS
@given(data=class_probabilities(min_classes=3, normalised=True), kind=st.sampled_from(LABEL_KINDS + ("halves",)))
def test_results_depend_on_the_order_of_labels_only(data, kind):
    """Any sorted relabelling of the classes (counted integers, gapped, wide, strings, floats) gives the same bits."""
    y, P, w, labels = data
    k = P.shape[1]
    codes = class_codes(y, labels)
    names = np.arange(k) / 2 + 0.25 if kind == "halves" else class_labels(kind, k, np.random.default_rng(0))
    relabelled = names[codes]
    new_labels = None if labels is None else names.tolist()
    for f, kw in ((M.log_loss, {}), (M.brier_score_loss, {}),
                  (M.roc_auc_score, dict(multi_class="ovr", average="weighted"))):
        a, _ = outcome(f, y, P, sample_weight=w, labels=labels, **kw)
        b, _ = outcome(f, relabelled, P, sample_weight=w, labels=new_labels, **kw)
        assert a == b, f


def test_class_codes():
    from fastcal._core.labels import class_codes

    rng = np.random.default_rng(5)
    for y in (rng.integers(0, 5, 1000), rng.integers(-3, 9, 1000).astype(np.int8), rng.integers(0, 3, 10) * 10**12,
              rng.integers(0, 4, 100).astype(np.float32), rng.random(50).round(1), rng.integers(0, 2, 30).astype(bool),
              np.array(["b", "a", "c", "a"])):
        codes, classes = class_codes(y)
        e_classes, e_codes = np.unique(y, return_inverse=True)
        assert_array_equal(classes, e_classes)
        assert classes.dtype == y.dtype
        assert_array_equal(codes, e_codes)
        wider = np.unique(np.concatenate([e_classes, e_classes[:1].astype(y.dtype)]))
        codes, _ = class_codes(y, wider)
        assert_array_equal(codes, e_codes)
    y = np.array([0, 1, 1, 0], dtype=np.int64)
    assert class_codes(y)[0] is y  # 0 .. k-1: the labels are their own codes, no copy
    with pytest.raises(ValueError, match="must not contain NaN"):
        class_codes(np.array([0.0, np.nan, 1.0]))
    with pytest.raises(ValueError, match=r"labels not in labels: \{5\}"):
        class_codes(np.array([0, 5, 1]), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"labels not in labels: \{'x'\}"):
        class_codes(np.array(["a", "x"]), np.array(["a", "b"]))
    with pytest.raises(ValueError, match="labels not in labels"):
        class_codes(np.array([0, 1]), np.array(["a", "b"]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_multiclass_large_parallel_and_thread_independent(dtype):
    """At this size every multiclass pass is cut into chunks and runs on threads; results do not depend on them."""
    rng = np.random.default_rng(11)
    n, k = 150_001, 4
    P = rng.dirichlet(np.ones(k) * 0.7, n).astype(dtype)
    P[::5] = np.round(P[::5], 2)  # ties
    P /= P.sum(axis=1, keepdims=True)
    cum = P.astype(np.float64).cumsum(axis=1)
    y = np.minimum((rng.random((n, 1)) * cum[:, -1:] > cum).sum(axis=1), k - 1)  # drawn from the rows
    w = rng.uniform(0.5, 2.0, n)
    calls = [
        (lambda m: m.log_loss(y, P), loss_rtol(n, k, dtype)),
        (lambda m: m.log_loss(y, P, sample_weight=w, normalize=False), loss_rtol(n, k, dtype)),
        (lambda m: m.brier_score_loss(y, P, sample_weight=w), loss_rtol(n, k, dtype)),
    ]
    for call, rtol in calls:
        results = []
        for threads in (1, 2, MANY):
            with num_threads(threads):
                results.append(call(M))
        assert all(r == results[0] for r in results)
        assert math.isclose(results[0], call(skm), rel_tol=rtol)
    for kw in (dict(multi_class="ovr"), dict(multi_class="ovo", average="weighted"),
               dict(multi_class="ovr", average=None, sample_weight=w), dict(multi_class="ovr", average="micro")):
        results = []
        for threads in (1, 2, MANY):
            with num_threads(threads):
                results.append(M.roc_auc_score(y, P, **kw))
        assert all(np.array_equal(r, results[0]) for r in results)
        assert_allclose(results[0], skm.roc_auc_score(y, P, **kw), rtol=0, atol=auc_atol(n * k))


def test_multiclass_kernels_in_pieces():
    """The chunked kernels give the same output whatever the ranges of chunks, run in any order."""
    from fastcal._matrices import _kernels as BK

    rng = np.random.default_rng(2)
    n, k = 10_007, 5
    P = rng.dirichlet(np.ones(k), n)
    codes = rng.integers(0, k, n)
    w = rng.random(n)
    counts, counts2 = (np.zeros((9, k), dtype=np.int64) for _ in range(2))
    AK.class_counts(codes, counts, 0, 9)
    in_pieces(AK.class_counts, 9, codes, counts2)
    assert_array_equal(counts, counts2)
    assert_array_equal(counts.sum(axis=0), np.bincount(codes, minlength=k))
    sizes, starts, offsets = _binning.chunk_offsets(counts)
    outs = []
    for run in (lambda *a: AK.scatter_by_class(*a, 0, 9), lambda *a: in_pieces(AK.scatter_by_class, 9, *a)):
        out = np.empty((k, n))
        run(P, codes, offsets.copy(), out)
        outs.append(out)
    assert_array_equal(outs[0], outs[1])
    for g in range(k):
        assert_array_equal(outs[0][:, starts[g] : starts[g] + sizes[g]], P[codes == g].T)
    part, part2 = (np.zeros((9, BK.NROW)) for _ in range(2))
    args = (P, codes, w, True, True, np.float64(EPS), np.float64(1 - EPS), 1e-8, 0.0)
    BK.class_rows(*args, part, 0, 9)
    in_pieces(BK.class_rows, 9, *args, part2)
    assert_array_equal(part, part2)
    log, brier = naive.class_losses(codes, P, w)
    total = part.sum(axis=0)
    assert math.isclose(total[BK.RLOG] / total[BK.RW], log, rel_tol=sum_rtol(n * k))
    assert math.isclose(total[BK.RBRIER] / total[BK.RW], brier, rel_tol=sum_rtol(n * k))
    assert total[BK.ROFF] == 0
    # the pairwise counts: every class against every other, on its own column, as the pairwise definition
    u2, sizes = A.class_mann_whitney(P[:300], codes[:300], k)
    for a in range(k):
        for b in range(k):
            if a != b:
                pos, neg = P[:300][codes[:300] == a, a], P[:300][codes[:300] == b, a]
                expected = 2 * (pos[:, None] > neg[None, :]).sum() + (pos[:, None] == neg[None, :]).sum()
                assert u2[a, b] == expected
    assert_array_equal(np.diag(u2), 0)


@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_report_shares_one_sort_with_the_same_bits(weighted):
    # Enough rows for several score ranges: the report sorts the scores once (per class without weights,
    # carrying signed weights with them) for its AUC and its CORP fit; each equals its own function's,
    # which sorts on its own, bit for bit. Ties included (scores rounded), zero weights excluded (they
    # take the unshared path).
    y, p = miscalibrated(5 * (1 << 17) + 77, seed=19)
    p = np.round(p, 4)
    w = np.random.default_rng(4).uniform(0.25, 3, p.size) if weighted else None
    r = M.calibration_report(y, p, sample_weight=w)
    assert r.auc == M.roc_auc_score(y, p, sample_weight=w)
    for scoring in ("brier", "log_loss"):
        d = fastcal.score_decomposition(y, p, sample_weight=w, scoring=scoring)
        assert getattr(r, f"{scoring}_miscalibration") == d.miscalibration
        assert getattr(r, f"{scoring}_discrimination") == d.discrimination
