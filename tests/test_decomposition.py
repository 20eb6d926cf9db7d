"""CORP score decomposition and reliability: against model-diagnostics, a naive reference
(tests/naive_decomposition.py, on the plain PAV of tests/naive_isotonic.py) and the invariants."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from model_diagnostics.scoring import LogLoss, SquaredError, decompose
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal.decomposition import _kernels as K
from fastcal.decomposition import resample_curves

from . import naive_decomposition as naive
from .strategies import class_probabilities, probabilities
from .threads import MANY, num_threads, serial_and_parallel

SETTINGS = settings(max_examples=60, deadline=None)
EPS = np.finfo(np.float64).eps
FIELDS = ("score", "miscalibration", "discrimination", "uncertainty")
PEER = {"brier": SquaredError(), "log_loss": LogLoss()}


def atol(n, d):
    """|fastcal - reference| for the terms of a decomposition of n rows.

    Each term is a weighted mean of n non-negative per-row scores or a difference of two; a sum of n terms of one
    sign is within (n - 1) eps of its exact value in any order (Higham), so two evaluations of a term differ by
    at most 4 n eps (score + uncertainty) (the recalibrated score is at most the uncertainty). The issue's
    contract, 1e-10, is added for scores of order one.
    """
    return 1e-10 + 4 * n * EPS * (abs(d[0]) + abs(d[3]))


def assert_terms(d, ref, n):
    got = [getattr(d, f) for f in FIELDS]
    for name, a, b in zip(FIELDS, got, ref):
        if math.isinf(b):
            assert a == b, name
        else:
            assert abs(a - b) <= atol(n, [x if math.isfinite(x) else 0.0 for x in ref]), (name, a, b)


def sub_resolution_ties(p):
    """True if two distinct predictions lie closer than float64's resolution (scikit-learn then interpolates
    inside the pooled group, where fastcal, as the PAV fit, gives the whole group its block value)."""
    u = np.unique(np.asarray(p, dtype=np.float64))
    return bool(np.any(np.diff(u) < np.finfo(np.float64).resolution))


# ---------------------------------------------------------------------------
# oracles
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=probabilities(),
       scoring=st.sampled_from(["brier", "log_loss"]), weighted=st.sampled_from([False, True, "zeros"]),
       seed=st.integers(0, 2**16))
def test_against_model_diagnostics(data, scoring, weighted, seed):
    y, p, _ = data
    w = None
    if weighted:
        w = np.random.default_rng(seed).uniform(0.1, 3.0, len(p))
        if weighted == "zeros" and len(p) > 1:
            w[1::3] = 0.0
    d = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w)
    keep = slice(None) if w is None else w > 0  # model-diagnostics predicts NaN at dropped rows outside the fit
    p64 = p.astype(np.float64)[keep]
    if sub_resolution_ties(p64) or p64.shape[0] < 2:  # model-diagnostics squeezes one row to a scalar, and fails
        return
    with np.errstate(divide="ignore"):
        ref = decompose(np.asarray(y, dtype=np.float64)[keep], p64, None if w is None else w[keep],
                        scoring_function=PEER[scoring]).row(0, named=True)
    assert_terms(d, [ref[f] for f in FIELDS], len(p))


@pytest.mark.parametrize("scoring", ["brier", "log_loss"])
def test_against_model_diagnostics_large_ties_weights(scoring):
    rng = np.random.default_rng(0)
    n = 200_000
    p = np.round(rng.beta(2, 3, n), 3)
    y = (rng.random(n) < p**1.2).astype(np.int64)
    w = rng.exponential(size=n)
    for weights in (None, w):
        d = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=weights)
        ref = decompose(y, p, weights, scoring_function=PEER[scoring]).row(0, named=True)
        assert_terms(d, [ref[f] for f in FIELDS], n)


@SETTINGS
@given(data=probabilities(weighted="zeros"), scoring=st.sampled_from(["brier", "log_loss"]))
def test_against_naive(data, scoring):
    y, p, w = data
    d = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w)
    assert_terms(d, naive.decompose(y, p, w, scoring), len(p))
    assert d.scoring == scoring
    if math.isfinite(d.score):
        assert d.score == pytest.approx(d.miscalibration - d.discrimination + d.uncertainty, abs=atol(len(p), [
            d.score, 0, 0, d.uncertainty]))


@SETTINGS
@given(data=class_probabilities(normalised=True), scoring=st.sampled_from(["brier", "log_loss"]))
def test_top_label_against_naive(data, scoring):
    y, P, w, labels = data  # labels: the classes of the columns, when y lacks some (else None)
    codes = np.searchsorted(np.unique(y) if labels is None else labels, y)
    correct, conf = naive.top_label(codes, P)
    d = fastcal.score_decomposition(y, P, scoring=scoring, sample_weight=w, multiclass="top_label", labels=labels)
    assert_terms(d, naive.decompose(correct, conf, w, scoring), len(conf))
    assert d == fastcal.score_decomposition(correct, conf, scoring=scoring, sample_weight=w)


@SETTINGS
@given(data=probabilities(weighted="zeros"))
def test_corp_curve_against_naive(data):
    y, p, w = data
    c = fastcal.corp_reliability(y, p, sample_weight=w)
    x_ref, y_ref = naive.corp_curve(y, p, w)
    assert np.all(np.diff(c.x) > 0) and c.lower is None and c.upper is None
    if w is None:  # counts: the block structure is exact
        assert_array_equal(c.x, x_ref)
        assert_allclose(c.y, y_ref, rtol=0, atol=4 * len(p) * EPS)
    else:  # weights: pooling of (nearly) equal means may differ; compare the curves as functions
        grid = np.union1d(c.x, x_ref)
        assert_allclose(np.interp(grid, c.x, c.y), np.interp(grid, x_ref, y_ref), rtol=0, atol=1e-12)


@SETTINGS
@given(data=probabilities(weighted="zeros"))
def test_resample_engine_refits_the_data(data):
    """Mode "none" of the resampling kernel (each refit on the data itself) gives the PAV engine's curve."""
    y, p, w = data
    c = fastcal.corp_reliability(y, p, sample_weight=w)
    labels, probs, ww = fastcal.decomposition.check_binary_problem(y, p, w)
    again = resample_curves(labels, probs.astype(np.float64), ww, c.x, 2, 0, "none")
    assert_allclose(again[0], c.y, rtol=0, atol=4 * len(p) * EPS)
    assert_array_equal(again[0], again[1])


# ---------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------
@SETTINGS
@given(data=probabilities(weighted=True), scoring=st.sampled_from(["brier", "log_loss"]))
def test_invariants(data, scoring):
    y, p, w = data
    d = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w)
    tol = atol(len(p), [0 if math.isinf(d.score) else d.score, 0, 0, d.uncertainty])
    assert d.miscalibration >= -tol and d.discrimination >= -tol
    # UNC depends on y (and w) only: the same bits for other predictions.
    other = fastcal.score_decomposition(y, np.full(len(p), 0.5), scoring=scoring, sample_weight=w)
    assert other.uncertainty == d.uncertainty
    assert other.discrimination == pytest.approx(0, abs=tol) and other.miscalibration >= -tol
    # Weights scaled by a power of two: every operation scales exactly.
    assert fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w * 0.125) == d
    scaled = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w * 3.7)
    assert_terms(scaled, [getattr(d, f) for f in FIELDS], len(p))


@SETTINGS
@given(data=probabilities(weighted=True), scoring=st.sampled_from(["brier", "log_loss"]))
def test_no_miscalibration_after_isotonic_recalibration(data, scoring):
    y, p, w = data
    recal = fastcal.IsotonicRegression(out_of_bounds="clip").fit(p.astype(np.float64), y, w).predict(
        p.astype(np.float64))
    d = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w)
    d2 = fastcal.score_decomposition(y, recal, scoring=scoring, sample_weight=w)
    tol = atol(len(p), [d2.score, 0, 0, d2.uncertainty])
    assert abs(d2.miscalibration) <= tol
    assert d2.discrimination == pytest.approx(d.discrimination, abs=tol)
    assert d2.uncertainty == d.uncertainty


def test_perfect_and_constant_predictions():
    y = np.array([0, 1, 1, 0, 1])
    d = fastcal.score_decomposition(y, y.astype(float))
    assert (d.score, d.miscalibration) == (0.0, 0.0) and d.discrimination == d.uncertainty == pytest.approx(0.24)
    d = fastcal.score_decomposition(y, np.full(5, 0.6), scoring="log_loss")
    assert d.miscalibration == pytest.approx(0, abs=1e-15) and d.discrimination == pytest.approx(0, abs=1e-15)
    # A confidently wrong prediction: infinite log loss and miscalibration, finite discrimination.
    d = fastcal.score_decomposition([0, 1], [1.0, 1.0], scoring="log_loss")
    assert d.score == d.miscalibration == math.inf and d.discrimination == 0.0


# ---------------------------------------------------------------------------
# bands
# ---------------------------------------------------------------------------
def test_consistency_band_coverage_on_calibrated_data():
    """At fixed predictions, the observed CORP value lies in the 90% consistency band about 90% of the time.

    Calibrated data (p ~ U(0, 1), y ~ Bernoulli(p)) is the band's null hypothesis, under which the observed curve
    is one more draw of what the band resamples. 100 data sets x 5 points (chosen without looking at y) make 500
    trials; their coverage has a binomial standard error sqrt(0.9 0.1 / 500) = 0.013, so +-0.047 is 3.5 standard
    errors; the recalibrated values are discrete, so an inclusive band covers a little more than nominal (up to
    +0.013 more allowed). Miscalibrated data (forecasts p^2 for Bernoulli(p) outcomes) must be caught: its
    coverage is far lower.
    """
    rng = np.random.default_rng(12345)
    hits = {"calibrated": [], "miscalibrated": []}
    for d in range(100):
        p = rng.random(400)
        y = (rng.random(400) < p).astype(np.uint8)
        for case, forecast in (("calibrated", p), ("miscalibrated", p**2)):
            ps = np.sort(forecast)
            x0 = ps[np.searchsorted(ps, [0.2, 0.35, 0.5, 0.65, 0.8])]
            obs = resample_curves(y, forecast, None, x0, 1, 0, "none")[0]
            draws = resample_curves(y, forecast, None, x0, 400, d, "consistency")
            lo, hi = np.quantile(draws, [0.05, 0.95], axis=0)
            hits[case].append((lo <= obs) & (obs <= hi))
    assert 0.853 <= np.mean(hits["calibrated"]) <= 0.96
    assert np.mean(hits["miscalibrated"]) < 0.5


@pytest.mark.parametrize("band", ["consistency", "confidence"])
def test_bands(band):
    rng = np.random.default_rng(3)
    p = rng.random(2000)
    y = (rng.random(2000) < p).astype(np.uint8)
    w = rng.uniform(0.5, 2, 2000)
    c = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=300, level=0.8, band=band, random_state=7)
    assert c.lower.shape == c.upper.shape == c.x.shape and np.all(c.lower <= c.upper)
    assert np.all((0 <= c.lower) & (c.upper <= 1)) and (c.level, c.band, c.n_resamples) == (0.8, band, 300)
    if band == "consistency":  # resampled under calibration: about the diagonal
        assert np.mean((c.lower <= c.x) & (c.x <= c.upper)) > 0.9
    else:  # bootstrap: about the curve
        assert np.mean((c.lower <= c.y) & (c.y <= c.upper)) > 0.8
    wider = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=300, level=0.98, band=band, random_state=7)
    assert np.all(wider.lower <= c.lower) and np.all(wider.upper >= c.upper)
    assert fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=300, level=0.8, band=band,
                                    random_state=7) == c
    other = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=300, level=0.8, band=band,
                                     random_state=np.random.default_rng(8))
    assert not np.array_equal(other.lower, c.lower)


@pytest.mark.parametrize("weighted", [False, True])
def test_consistency_band_equals_the_naive_draws(weighted):
    """The band's resamples, by the definition (tests/naive_decomposition.py): rows of positive weight in order
    of prediction, then weight, each drawing its place's SplitMix64 number. Ties of prediction with other weights
    (the order matters) and a chain of near-ties closer than the tie resolution."""
    rng = np.random.default_rng(21)
    n = 700
    p = np.round(rng.random(n), 2)
    p[:40] = 0.5 + rng.integers(0, 4, 40) * 4e-16  # tie groups by scikit-learn's rule, not by equality
    y = (rng.random(n) < p).astype(np.uint8)
    w = rng.choice([0.0, 0.5, 1.0, 3.0], n) if weighted else None
    c = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=9, level=0.8, random_state=5)
    draws = naive.consistency_band_draws(y, p, w, c.x, 9, fastcal.decomposition.check_band(9, 0.8, "consistency",
                                                                                          5)[3])
    lower, upper = np.quantile(draws, [0.1, 0.9], axis=0)
    # The naive PAV pools group means (weighted means of means), fastcal block sums: rounding of n terms.
    tol = 4 * n * np.finfo(np.float64).eps
    assert_allclose(c.lower, lower, rtol=tol, atol=0)
    assert_allclose(c.upper, upper, rtol=tol, atol=0)


@pytest.mark.parametrize("band", ["consistency", "confidence"])
def test_bands_do_not_depend_on_threads(band):
    rng = np.random.default_rng(4)
    p = np.round(rng.random(3000), 2)
    y = (rng.random(3000) < p).astype(np.uint8)
    serial, parallel = serial_and_parallel(fastcal.corp_reliability, y, p, n_resamples=2 * MANY + 1, band=band,
                                           random_state=1)
    assert serial == parallel


def test_decomposition_does_not_depend_on_threads():
    rng = np.random.default_rng(5)
    n = 3 * K.CHUNK + 17
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.uint8)
    w = rng.random(n)
    for scoring in ("brier", "log_loss"):
        serial, parallel = serial_and_parallel(fastcal.score_decomposition, y, p, scoring=scoring, sample_weight=w)
        assert serial == parallel


def test_bernoulli_thresholds_are_exact():
    """``k < ceil(p 2^53)`` is ``k 2^-53 < p`` for every 53-bit k: check at the boundary values."""
    p = np.array([0.0, 2.0**-53, 0.3, 0.5, 1 - 2.0**-53, 1.0, 1e-300])
    thr = np.empty(p.shape[0], dtype=np.uint64)
    K.bernoulli_thresholds(p, thr)
    for pi, t in zip(p, thr.tolist()):
        for k in {max(t - 1, 0), t, min(t, 2**53 - 1)}:
            assert (k < t) == (k * 2.0**-53 < pi)


# ---------------------------------------------------------------------------
# input handling
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("func", [fastcal.score_decomposition, fastcal.corp_reliability])
def test_bad_input_names_the_argument(func):
    y, p = [0, 1, 1], [0.2, 0.6, 0.9]
    with pytest.raises(ValueError, match="p must be finite.*NaN"):
        func(y, [0.2, np.nan, 0.9])
    with pytest.raises(ValueError, match="p must be finite.*infinity"):
        func(y, [0.2, np.inf, 0.9])
    with pytest.raises(ValueError, match=r"p has values outside \[0, 1\]"):
        func(y, [0.2, 1.5, 0.9])
    with pytest.raises(ValueError, match="y must hold binary labels"):
        func([0, 2, 1], p)
    with pytest.raises(ValueError, match="y must hold binary labels"):
        func([0, np.nan, 1], p)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples"):
        func([0, 1], p)
    with pytest.raises(ValueError, match="y must have at least 1 element"):
        func([], [])
    with pytest.raises(ValueError, match="sample_weight must be non-negative"):
        func(y, p, sample_weight=[1, -1, 1])
    with pytest.raises(ValueError, match="sample_weight is all zeros"):
        func(y, p, sample_weight=[0, 0, 0])
    with pytest.raises(ValueError, match="sample_weight has 2 elements"):
        func(y, p, sample_weight=[1, 1])
    with pytest.raises(ValueError, match="multiclass"):
        func(y, p, multiclass="class_wise")
    with pytest.raises(ValueError, match="y has 3 classes .* but p has 2 columns"):
        func([0, 1, 2], [[0.5, 0.5]] * 3)
    with pytest.raises(ValueError, match=r"y has 2 classes \(\{0, 2\}\) but p has 3 columns.*pass labels"):
        func([0, 2, 2], [[0.4, 0.3, 0.3]] * 3)
    with pytest.raises(ValueError, match="labels has 2 labels but p has 3 columns"):
        func([0, 2, 2], [[0.4, 0.3, 0.3]] * 3, labels=[0, 2])
    with pytest.raises(ValueError, match=r"y contains labels not in labels: \{5\}"):
        func([0, 5, 2], [[0.4, 0.3, 0.3]] * 3, labels=[0, 1, 2])
    with pytest.raises(ValueError, match="labels is for an \\(n, k\\) p"):
        func(y, p, labels=[0, 1])
    with pytest.raises(ValueError, match=r"p has values outside \[0, 1\]"):
        func([0, 1, 1], [[0.5, 1.5]] * 3)


def test_bad_parameters():
    y, p = [0, 1, 1], [0.2, 0.6, 0.9]
    with pytest.raises(fastcal.InvalidParameterError, match="scoring"):
        fastcal.score_decomposition(y, p, scoring="brier_score")
    for kwargs, name in (({"n_resamples": -1}, "n_resamples"), ({"n_resamples": 1.5}, "n_resamples"),
                         ({"level": 1.0}, "level"), ({"level": 0}, "level"), ({"band": "bootstrap"}, "band")):
        with pytest.raises(fastcal.InvalidParameterError, match=name):
            fastcal.corp_reliability(y, p, **kwargs)
    with pytest.raises(TypeError, match="random_state"):
        fastcal.corp_reliability(y, p, n_resamples=2, random_state="seed")


def test_inputs_untouched_read_only_strided_float32():
    rng = np.random.default_rng(6)
    p = rng.random(600)
    y = (rng.random(600) < p).astype(np.uint8)
    w = rng.random(600)
    ref = fastcal.score_decomposition(y, p, sample_weight=w)
    big = np.stack([p, p], axis=1)
    strided, ro = big[:, 0], p.copy()
    ro.setflags(write=False)
    copies = (p.copy(), y.copy(), w.copy())
    assert fastcal.score_decomposition(y, strided, sample_weight=w) == ref
    assert fastcal.score_decomposition(y, ro, sample_weight=w) == ref
    assert fastcal.score_decomposition(y.astype(bool), p, sample_weight=w) == ref
    assert_array_equal(p, copies[0]), assert_array_equal(y, copies[1]), assert_array_equal(w, copies[2])
    p32 = p.astype(np.float32)  # float32 read at its exact values
    assert fastcal.score_decomposition(y, p32, sample_weight=w) == fastcal.score_decomposition(
        y, p32.astype(np.float64), sample_weight=w)
    c = fastcal.corp_reliability(y, p32, n_resamples=5, random_state=0)
    assert c.x.dtype == c.y.dtype == c.lower.dtype == np.float64


def test_result_names_for_plots():
    """The fields the reliability diagram reads."""
    d = fastcal.score_decomposition([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3])
    c = fastcal.corp_reliability([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_resamples=3, random_state=0)
    for obj, names in ((d, ("miscalibration", "discrimination", "uncertainty", "score")),
                       (c, ("x", "y", "lower", "upper"))):
        assert all(hasattr(obj, name) for name in names)
    with num_threads(1):
        assert fastcal.corp_reliability([0, 1, 1, 0], [0.1, 0.8, 0.6, 0.3], n_resamples=3, random_state=0) == c


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_report_carries_the_decompositions(dtype, weighted):
    rng = np.random.default_rng(9)
    p = np.round(rng.random(3000), 2).astype(dtype)  # ties
    y = (rng.random(3000) < p).astype(np.uint8)
    w = np.where(rng.random(3000) < 0.2, 0.0, rng.uniform(0.1, 3, 3000)) if weighted else None
    report = fastcal.calibration_report(y, p, sample_weight=w)
    brier = fastcal.score_decomposition(y, p, sample_weight=w)
    log = fastcal.score_decomposition(y, p, scoring="log_loss", sample_weight=w)
    assert (report.brier_miscalibration, report.brier_discrimination) == (brier.miscalibration, brier.discrimination)
    assert (report.log_loss_miscalibration, report.log_loss_discrimination, report.log_loss_uncertainty) == (
        log.miscalibration, log.discrimination, log.uncertainty)
    # The Brier score and uncertainty of the binned report are the same quantities, summed another way.
    assert report.brier == pytest.approx(brier.score, abs=atol(len(p), [brier.score, 0, 0, brier.uncertainty]))
    assert report.uncertainty == pytest.approx(brier.uncertainty, abs=atol(len(p), [0, 0, 0, 1]))
    assert "CORP miscalibration (Brier)" in str(report)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_calibration_report_one_sort_same_bits(dtype, monkeypatch):
    # The report sorts the scores once for its AUC and its CORP fit (several score ranges here): every quantity of
    # that sort has the bits of roc_auc_score and score_decomposition, each sorting on its own, at every thread
    # count; the whole report is the same at every thread count.
    from fastcal.isotonic import _pav

    monkeypatch.setattr(_pav, "CHUNK_ROWS", 1 << 10)
    rng = np.random.default_rng(11)
    n = 40_000
    p = rng.random(n).astype(dtype)
    p[::3] = np.round(p[::3], 3)  # ties, across classes and ranges
    y = (rng.random(n) < p).astype(np.uint8)
    brier = fastcal.score_decomposition(y, p)
    log = fastcal.score_decomposition(y, p, scoring="log_loss")
    auc = fastcal.roc_auc_score(y, p)
    first = None
    for threads in (1, 2, 3, MANY):
        with num_threads(threads):
            report = fastcal.calibration_report(y, p)
        assert report.auc == auc
        assert (report.brier_miscalibration, report.brier_discrimination) == (brier.miscalibration,
                                                                              brier.discrimination)
        assert (report.log_loss_miscalibration, report.log_loss_discrimination, report.log_loss_uncertainty) == (
            log.miscalibration, log.discrimination, log.uncertainty)
        got = report.to_dict()
        first = got if first is None else first
        assert got.keys() == first.keys()
        for key, value in first.items():
            assert_array_equal(got[key], value)


@pytest.mark.parametrize("weighted", [False, True])
def test_corp_reliability_one_sort_same_curve(weighted, monkeypatch):
    # With bands, the fit runs on the rows the resamples sort (one sort); without, on its own range partition:
    # the same curve, bit for bit, with several score ranges and at every thread count.
    from fastcal.isotonic import _pav

    monkeypatch.setattr(_pav, "CHUNK_ROWS", 1 << 10)
    rng = np.random.default_rng(12)
    n = 30_000
    p = rng.random(n)
    p[::3] = np.round(p[::3], 3)
    y = (rng.random(n) < p).astype(np.uint8)
    w = np.where(rng.random(n) < 0.1, 0.0, rng.uniform(0.1, 3, n)) if weighted else None
    alone = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=0)
    for threads in (1, 2, MANY):
        with num_threads(threads):
            banded = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=4, random_state=0)
        assert_array_equal(banded.x, alone.x)
        assert_array_equal(banded.y, alone.y)
