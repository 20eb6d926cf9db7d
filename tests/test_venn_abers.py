"""Venn-Abers predictors: against the venn-abers package, a naive refit per test point, and the invariants."""

import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
with np.errstate():  # the package sets NumPy's error handling for the whole process when imported: not here
    from venn_abers import VennAbers as PeerVennAbers

from fastcal import NotFittedError, VennAbers, load
from fastcal.venn_abers import _kernels as kernels
from fastcal.venn_abers import merge_intervals

from . import naive_isotonic as naive
from .strategies import scores_and_labels
from .threads import in_pieces, serial_and_parallel

HYPO = settings(max_examples=60, deadline=None)


def peer(x, y, t):
    """``(p0, p1, p)`` of the venn-abers package (it takes (n, 2) probabilities and uses column 1)."""
    x = np.asarray(x, dtype=np.float64)
    t = np.asarray(t, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the package's own nanmin of all-NaN slices
        va = PeerVennAbers().fit(np.column_stack([1 - x, x]), np.asarray(y, dtype=np.float64))
        proba, p01 = va.predict_proba(np.column_stack([1 - t, t]))
    return p01[:, 0], p01[:, 1], proba[:, 1]


def probe_points(x, rng):
    """Every calibration score, every midpoint between neighbours, beyond both ends, and random points."""
    c = np.unique(np.asarray(x, dtype=np.float64))
    mids = (c[:-1] + c[1:]) / 2
    span = c[-1] - c[0] + 1
    return np.concatenate([c, mids, [c[0] - span, c[-1] + span], rng.uniform(c[0] - 1, c[-1] + 1, 20)])


# Unit weights: every cumulative sum and every slope's numerator and denominator are integers below
# 2^53, so both implementations divide the same exact integers and agree to the last bit; the issue
# asks for 1e-12, which we check, together with bit equality.
@HYPO
@given(scores_and_labels(max_size=150, dtype=np.float64))
def test_matches_peer_package(data):
    x, y, _ = data
    y = y.astype(np.float64)
    t = probe_points(x, np.random.default_rng(len(x)))
    p0, p1, p = peer(x, y, t)
    va = VennAbers().fit(x, y)
    q0, q1 = va.predict_interval(t)
    assert_allclose(q0, p0, rtol=0, atol=1e-12)
    assert_allclose(q1, p1, rtol=0, atol=1e-12)
    assert_array_equal(q0, p0)
    assert_array_equal(q1, p1)
    assert_allclose(va.predict_proba(t)[:, 1], p, rtol=0, atol=1e-12)


def test_matches_peer_on_random_data_with_ties():
    rng = np.random.default_rng(7)
    x = np.round(rng.random(3000), 2)  # about 100 distinct scores: heavy ties
    y = (rng.random(3000) < x).astype(int)
    t = np.concatenate([probe_points(x, rng), np.round(rng.random(500), 3)])
    p0, p1, p = peer(x, y, t)
    va = VennAbers().fit(x, y)
    q0, q1 = va.predict_interval(t)
    assert_allclose(q0, p0, rtol=0, atol=1e-12)
    assert_allclose(q1, p1, rtol=0, atol=1e-12)
    assert_allclose(va.predict_proba(t), np.column_stack([1 - p, p]), rtol=0, atol=1e-12)


# Weighted: the CSD sums are float sums of the normalised weights, in another order than the naive
# reference's, so each sum is within n eps of the other (relative to the total weight n); a slope
# (difference of two sums over a difference of two sums, the denominators at least the test weight 1)
# then differs by at most about 4 n^2 eps.
@HYPO
@given(scores_and_labels(max_size=60), st.sampled_from([False, True, "zeros"]))
def test_matches_naive_refit(data, weighted):
    x, y, _ = data
    rng = np.random.default_rng(len(x) + 1)
    w = None
    if weighted:
        w = rng.uniform(0.1, 3.0, len(x))
        if weighted == "zeros" and len(x) > 1:
            w[rng.random(len(x)) < 0.3] = 0.0
            w[0] = 1.0
    t = probe_points(x, rng).astype(x.dtype)
    want0, want1 = naive.venn_abers(x, y, t, w)
    va = VennAbers().fit(x, y, sample_weight=w)
    q0, q1 = va.predict_interval(t)
    n = len(x)
    atol = 4 * (n + 2) ** 2 * np.finfo(np.float64).eps
    if x.dtype == np.float32:
        atol = max(atol, 2 * float(np.finfo(np.float32).eps))  # results rounded to float32
    assert q0.dtype == q1.dtype == x.dtype
    assert_allclose(q0, want0, rtol=0, atol=atol)
    assert_allclose(q1, want1, rtol=0, atol=atol)


@HYPO
@given(scores_and_labels(max_size=200))
def test_invariants(data):
    x, y, _ = data
    va = VennAbers().fit(x, y)
    k = va.c_.shape[0]
    assert_array_equal(va.c_, np.unique(x))
    assert va.p0_.shape == va.p1_.shape == (k + 1,)
    assert va.p0_[0] == 0 and va.p1_[-1] == 1
    assert np.all(va.p0_ <= va.p1_)
    assert np.all(np.diff(va.p0_) >= 0) and np.all(np.diff(va.p1_) >= 0)  # isotonic in the score
    t = np.sort(probe_points(x, np.random.default_rng(0)).astype(x.dtype))
    q0, q1 = va.predict_interval(t)
    assert np.all(q0 <= q1) and np.all(np.diff(q0) >= 0) and np.all(np.diff(q1) >= 0)
    p = va.predict(t)
    assert np.all((q0 <= p + 1e-6) & (p <= q1 + 1e-6))  # the merge lies in the interval


def test_weights_scale_and_unit_weights():
    rng = np.random.default_rng(3)
    x = np.round(rng.normal(size=400), 1)
    y = (rng.random(400) < 0.4).astype(int)
    t = probe_points(x, rng)
    a = VennAbers().fit(x, y).predict_interval(t)
    b = VennAbers().fit(x, y, sample_weight=np.full(400, 3.5)).predict_interval(t)
    assert_allclose(a, b, rtol=0, atol=1e-13)
    w = rng.uniform(0.5, 2, 400)
    c = VennAbers().fit(x, y, sample_weight=w).predict_interval(t)
    d = VennAbers().fit(x, y, sample_weight=1e6 * w).predict_interval(t)
    assert_allclose(c, d, rtol=0, atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("decimals", [3, None], ids=["ties", "distinct"])
def test_fit_over_many_score_ranges_equals_grouping_of_the_sorted_scores(dtype, decimals):
    # Enough rows for several score ranges (fastcal.isotonic._pav.chunk_count), with ties within and at the
    # range bounds: the unweighted fit groups each range on its own. Oracle: np.unique's groups and counts,
    # and the weighted path (argsort + one grouping pass) with unit weights.
    rng = np.random.default_rng(11)
    n = 5 * (1 << 17) + 123
    x = rng.normal(size=n)
    x = (x if decimals is None else np.round(x, decimals)).astype(dtype)
    y = (rng.random(n) < 0.3).astype(np.int8)
    c, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    positives = np.bincount(inverse, weights=y, minlength=c.shape[0])
    va = VennAbers().fit(x, y)
    assert va.c_.dtype == dtype
    assert_array_equal(va.c_, c)
    w, wy = np.concatenate([[0], np.cumsum(counts)]), np.concatenate([[0], np.cumsum(positives)])
    p0, p1 = np.empty(c.shape[0] + 1), np.empty(c.shape[0] + 1)
    kernels.tables(w.astype(np.float64), wy, 1.0, p0, p1)
    assert_array_equal(va.p0_, p0)
    assert_array_equal(va.p1_, p1)
    unit = VennAbers().fit(x, y, sample_weight=np.ones(n))
    assert_array_equal(unit.c_, va.c_)
    assert_array_equal(unit.p0_, va.p0_)
    assert_array_equal(unit.p1_, va.p1_)
    serial, parallel = serial_and_parallel(lambda: VennAbers().fit(x, y).p1_)
    assert_array_equal(serial, parallel)


def test_parallel_prediction_is_bit_identical():
    rng = np.random.default_rng(5)
    x = rng.random(3000)
    y = (rng.random(3000) < x).astype(np.uint8)
    va = VennAbers().fit(x, y)
    t = rng.random(5000)
    serial, parallel = serial_and_parallel(va.predict_interval, t)
    assert_array_equal(serial, parallel)
    serial, parallel = serial_and_parallel(va.predict_proba, t)
    assert_array_equal(serial, parallel)
    rec = kernels.records(va.c_, va.p0_, va.p1_)
    for stride in (1, 3, 64, 10_000):  # the two-level search gives searchsorted's index for any stride
        top = rec[: va.c_.shape[0] : stride, :1].copy()
        out = [np.empty(5000) for _ in range(3)]
        kernels.predict(t, rec, top, stride, *out, 0, 5000)
        pieces = [np.empty(5000) for _ in range(3)]
        in_pieces(kernels.predict, 5000, t, rec, top, stride, *pieces)
        assert_array_equal(out, pieces)
        assert_array_equal(out[0], va.p0_[np.searchsorted(va.c_, t, "right")])
        assert_array_equal(out[1], va.p1_[np.searchsorted(va.c_, t, "left")])


def test_float32_and_inputs_unchanged_readonly_strided():
    rng = np.random.default_rng(9)
    x = rng.random(200).astype(np.float32)
    y = (rng.random(200) < x).astype(np.int64)
    big = np.repeat(x, 2)[::2]
    big.flags.writeable = False
    xc, yc = x.copy(), y.copy()
    va = VennAbers().fit(big, y)
    assert va.c_.dtype == np.float32
    assert_array_equal(x, xc)
    assert_array_equal(y, yc)
    assert va.predict(x).dtype == np.float32
    assert_array_equal(VennAbers().fit(x.astype(np.float64), y).c_, np.unique(x.astype(np.float64)))


def test_merge_intervals():
    p0 = np.array([[0.1, 0.2], [0.3, 0.0]])
    p1 = np.array([[0.5, 0.4], [0.6, 0.9]])
    g1 = np.sqrt(p1[0] * p1[1])
    g0 = np.sqrt((1 - p0[0]) * (1 - p0[1]))
    assert_allclose(merge_intervals(p0, p1), g1 / (g0 + g1), rtol=1e-15)
    assert_array_equal(merge_intervals(p0[0], p1[0]), p1[0] / (1 - p0[0] + p1[0]))
    assert_array_equal(merge_intervals(p0[:1], p1[:1]), p1[0] / (1 - p0[0] + p1[0]))


@pytest.mark.parametrize(
    "X, y, w, match",
    [
        ([0.1, np.nan], [0, 1], None, "X"),
        ([0.1, 0.2], [0, 2], None, "y"),
        ([0.1, 0.2], [0, 1, 1], None, "Inconsistent"),
        ([0.1, 0.2], [0, 1], [1, -1], "sample_weight"),
        ([[0.1, 0.2]], [0], None, "X"),
        ([], [], None, "X"),
    ],
)
def test_bad_input(X, y, w, match):
    with pytest.raises(ValueError, match=match):
        VennAbers().fit(X, y, sample_weight=w)


def test_not_fitted_and_bad_test_scores():
    with pytest.raises(NotFittedError):
        VennAbers().predict([0.5])
    va = VennAbers().fit([0.1, 0.2], [0, 1])
    with pytest.raises(ValueError, match="T"):
        va.predict([np.inf])


def test_model_file_round_trip_and_validation(tmp_path):
    rng = np.random.default_rng(11)
    x = rng.random(300)
    y = (rng.random(300) < x).astype(int)
    va = VennAbers().fit(x, y)
    path = tmp_path / "va.json"
    va.save(path)
    back = load(path)
    t = rng.random(100)
    assert_array_equal(back.predict_proba(t), va.predict_proba(t))
    assert_array_equal(pickle.loads(pickle.dumps(va)).predict_proba(t), va.predict_proba(t))
    d = va.to_dict()
    for field, value, match in [
        ("c_", {"dtype": "float64", "shape": [2], "data": [0.5, 0.1]}, "strictly increasing"),
        ("p0_", {"dtype": "float64", "shape": [2], "data": [0.0, 0.5]}, "one more value"),
        ("p1_", dict(d["state"]["p1_"], data=[1.5] * len(d["state"]["p1_"]["data"])), r"\[0, 1\]"),
        ("p0_", dict(d["state"]["p0_"], data=[0.5] * len(d["state"]["p0_"]["data"])), "exceed|start at 0"),
    ]:
        bad = {**d, "state": {**d["state"], field: value}}
        with pytest.raises(ValueError, match=match):
            VennAbers.from_dict(bad)


# ---------------------------------------------------------------------------
# Cross-Venn-Abers in CalibratedClassifierCV, the CLI
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3])
def test_cvap_in_calibrated_classifier_cv(n_classes):
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression

    from fastcal import CalibratedClassifierCV

    X, y = make_classification(600, n_classes=n_classes, n_informative=5, random_state=0)
    clf = CalibratedClassifierCV(LogisticRegression(), method="venn_abers", cv=3).fit(X, y)
    proba = clf.predict_proba(X[:50])
    # by hand: each fold's IVAP pair per class, merged by the geometric-mean rule, renormalised
    merged = np.zeros((50, n_classes))
    for k in [1] if n_classes == 2 else range(n_classes):
        pairs = []
        for pair in clf.calibrated_classifiers_:
            scores = pair.estimator.decision_function(X[:50])
            scores = scores if scores.ndim == 1 else scores[:, k]
            pairs.append(pair.calibrators[0 if n_classes == 2 else k].predict_interval(scores))
        p0 = np.array([a for a, _ in pairs])
        p1 = np.array([b for _, b in pairs])
        g1 = np.exp(np.log(p1).mean(axis=0))
        merged[:, k] = g1 / (np.exp(np.log1p(-p0).mean(axis=0)) + g1)
    if n_classes == 2:
        merged[:, 0] = 1 - merged[:, 1]
    else:
        merged /= merged.sum(axis=1, keepdims=True)
    assert_allclose(proba, merged, rtol=1e-14)  # the same formula; log/exp and the means may differ by ulps
    single = CalibratedClassifierCV(LogisticRegression(), method="venn_abers", ensemble=False).fit(X, y)
    assert_allclose(single.predict_proba(X).sum(axis=1), 1.0, rtol=1e-14)


def test_cli_fit_and_apply(tmp_path):
    from fastcal.cli import main

    rng = np.random.default_rng(4)
    x = rng.random(2000)
    y = (rng.random(2000) < x).astype(np.int64)
    np.savez(tmp_path / "d.npz", score=x, label=y)
    assert main(["fit", "--method", "venn-abers", "--score-col", "score", "--label-col", "label", "-q",
                 str(tmp_path / "d.npz"), "-o", str(tmp_path / "va.json")]) == 0
    model = load(tmp_path / "va.json")
    assert_array_equal(model.p1_, VennAbers().fit(x, y).p1_)
    assert main(["apply", str(tmp_path / "va.json"), str(tmp_path / "d.npz"), "-o", str(tmp_path / "o.npz"),
                 "-q"]) == 0
    assert_array_equal(np.load(tmp_path / "o.npz")["calibrated"], model.predict(x))
    np.savez(tmp_path / "bad.npz", score=x, label=y * 2)
    assert main(["fit", "--method", "venn-abers", "--score-col", "score", "--label-col", "label", "-q",
                 str(tmp_path / "bad.npz"), "-o", str(tmp_path / "va2.json")]) == 1
    assert main(["fit", "--method", "venn-abers", "--score-col", "score", "--label-col", "label", "-q",
                 "--memory-budget", "1M", str(tmp_path / "d.npz"), "-o", str(tmp_path / "va3.json")]) == 2
