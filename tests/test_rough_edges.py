"""The last rough edges of the library that issue 27 lists, each with the neighbours of its case.

- Every diagnostic of an (n, k) probability matrix warns, as ``brier_score_loss`` does, when rows do not sum to 1.
- ``n_bins`` beyond :data:`fastcal._binning.MAX_BINS` fails by name before anything is allocated.
- None, a dict or a string passed as data is named as what it is, not "a scalar".
- ``IsotonicRegression`` (centered or not) and ``VennAbers`` take y of shape (n, 1), as the other calibrators.
- Model files: negative (or inconsistent) histogram weights, and isotonic ``X_min_``/``X_max_`` that are not the
  ends of the knots, are refused as other tampered files are.
- Beta calibration on separable data says that its maximum-likelihood fit does not exist; Platt scaling's does.
"""

import copy
import json
import resource
import warnings

import numpy as np
import pytest

import fastcal
from fastcal import _binning, _matrices, _persist

RNG = np.random.default_rng(27)
N = 300
Y3 = RNG.integers(0, 3, N)
P3 = RNG.dirichlet(np.ones(3), N)  # rows sum to 1 within rounding
P3_OFF = P3 * 0.9                  # no row sums to 1 (each sums to 0.9); entries still in [0, 1]
assert P3_OFF.max() <= 1.0

#: Every diagnostic that takes an (n, k) probability matrix, called on (y, P).
MATRIX_DIAGNOSTICS = {
    "brier_score_loss": lambda y, P: fastcal.brier_score_loss(y, P),
    "log_loss": lambda y, P: fastcal.log_loss(y, P),
    "expected_calibration_error": lambda y, P: fastcal.expected_calibration_error(y, P),
    "expected_calibration_error classwise": lambda y, P: fastcal.expected_calibration_error(
        y, P, multiclass="classwise"),
    "calibration_curve": lambda y, P: fastcal.calibration_curve(y, P),
    "calibration_curve classwise": lambda y, P: fastcal.calibration_curve(y, P, multiclass="classwise"),
    "smooth_ece": lambda y, P: fastcal.smooth_ece(y, P),
    "score_decomposition": lambda y, P: fastcal.score_decomposition(y, P),
    "corp_reliability": lambda y, P: fastcal.corp_reliability(y, P, n_resamples=0),
}


# ---------------------------------------------------------------------------
# 1. rows of probabilities that do not sum to 1
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(MATRIX_DIAGNOSTICS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rows_off_one_warn_as_brier_score_loss(name, dtype):
    func = MATRIX_DIAGNOSTICS[name]
    P = P3_OFF.astype(dtype)
    with pytest.warns(UserWarning, match=rf"values do not sum to one: {N} of {N} rows\. Make sure to pass "
                                         r"probabilities\.") as record:
        func(Y3, P)
    assert len([w for w in record if "do not sum to one" in str(w.message)]) == 1
    assert record[0].filename == __file__  # it points at the caller
    # The one check's tolerance: rows off 1 by less than sqrt(eps) + 1e-8 in their dtype do not warn.
    P_ok = P3.astype(dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        func(Y3, P_ok)


def test_rows_off_one_counts_only_the_rows_off():
    P = P3.copy()
    P[[3, 10, 20]] *= 0.5  # three rows sum to 1/2
    for name, func in MATRIX_DIAGNOSTICS.items():
        with pytest.warns(UserWarning, match=rf"do not sum to one: 3 of {N} rows"):
            func(Y3, P)


def test_row_sum_tolerance_is_scikit_learns():
    for dtype in (np.float32, np.float64):
        atol = _matrices.row_sum_atol(dtype)
        assert atol == np.sqrt(np.finfo(dtype).eps) + 1e-8
        P = np.array([[0.5, 0.5 + 0.5 * atol], [0.5, 0.5 + 2 * atol]], dtype=dtype)
        with pytest.warns(UserWarning, match="1 of 2 rows"):
            fastcal.smooth_ece([0, 1], P)


# ---------------------------------------------------------------------------
# 2. n_bins: fail by name before allocating
# ---------------------------------------------------------------------------
P_BIN = RNG.random(2000)
Y_BIN = (RNG.random(2000) < P_BIN).astype(int)
HUGE = 10**8
N_BINS_CALLS = {
    "calibration_curve": lambda n_bins: fastcal.calibration_curve(Y_BIN, P_BIN, n_bins=n_bins),
    "calibration_curve quantile": lambda n_bins: fastcal.calibration_curve(Y_BIN, P_BIN, n_bins=n_bins,
                                                                           strategy="quantile"),
    "expected_calibration_error": lambda n_bins: fastcal.expected_calibration_error(Y_BIN, P_BIN, n_bins=n_bins),
    "expected_calibration_error matrix": lambda n_bins: fastcal.expected_calibration_error(Y3, P3, n_bins=n_bins),
    "calibration_curve matrix": lambda n_bins: fastcal.calibration_curve(Y3, P3, n_bins=n_bins,
                                                                         multiclass="classwise"),
    "brier_decomposition": lambda n_bins: fastcal.brier_decomposition(Y_BIN, P_BIN, n_bins=n_bins),
    "calibration_report": lambda n_bins: fastcal.calibration_report(Y_BIN, P_BIN, n_bins=n_bins),
    "HistogramBinning": lambda n_bins: fastcal.HistogramBinning(n_bins=n_bins).fit(P_BIN, Y_BIN),
}


def _peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("name", list(N_BINS_CALLS))
def test_huge_n_bins_fails_by_name_before_allocating(name):
    call = N_BINS_CALLS[name]
    call(_binning.MAX_BINS)  # the largest accepted works (a 64 MiB table) ...
    before = _peak_rss_mb()
    with pytest.raises(ValueError, match=rf"n_bins must be an integer in \[1, {_binning.MAX_BINS}\]; got {HUGE}\."):
        call(HUGE)
    assert _peak_rss_mb() - before < 100  # ... and 10**8 bins (gigabytes) are refused before any table exists
    with pytest.raises(ValueError, match="n_bins must be an integer in"):
        call(_binning.MAX_BINS + 1)


def test_huge_bins_of_the_dask_diagnostics_and_the_plots_fail_by_name():
    import dask.array as da

    from fastcal import dask as fd

    y, p = da.from_array(Y_BIN, chunks=500), da.from_array(P_BIN, chunks=500)
    for call in (lambda: fd.calibration_curve(y, p, n_bins=HUGE), lambda: fd.expected_calibration_error(
            y, p, n_bins=HUGE), lambda: fd.brier_decomposition(y, p, n_bins=HUGE),
                 lambda: fd.fit_histogram(p, y, n_bins=HUGE)):
        with pytest.raises(ValueError, match="n_bins must be an integer in"):
            call()
    from fastcal.plot import probability_histogram, reliability_diagram

    with pytest.raises(ValueError, match="hist_bins must be an integer in"):
        reliability_diagram(Y_BIN, P_BIN, hist_bins=HUGE)
    with pytest.raises(ValueError, match="bins must be an integer in"):
        probability_histogram(P_BIN, bins=HUGE)


def test_cross_val_calibration_report_checks_n_bins_before_fitting():
    from sklearn.linear_model import LogisticRegression

    from fastcal.calibration import cross_val_calibration_report

    class Unfittable(LogisticRegression):
        def fit(self, *args, **kwargs):
            raise AssertionError("fitted before n_bins was checked")

    with pytest.raises(ValueError, match="n_bins must be an integer in"):
        cross_val_calibration_report(Unfittable(), P_BIN[:, None], Y_BIN, n_bins=HUGE)


# ---------------------------------------------------------------------------
# 3. None, a dict or a string as data
# ---------------------------------------------------------------------------
P4 = np.array([0.1, 0.4, 0.6, 0.9])
Y4 = np.array([0, 0, 1, 1])
DATA_CALLS = {
    "calibration_curve": (lambda a, b: fastcal.calibration_curve(a, b), ("y_true", "y_prob")),
    "expected_calibration_error": (lambda a, b: fastcal.expected_calibration_error(a, b), ("y_true", "y_prob")),
    "brier_score_loss": (lambda a, b: fastcal.brier_score_loss(a, y_proba=b), ("y_true", "y_proba")),
    "log_loss": (lambda a, b: fastcal.log_loss(a, y_proba=b), ("y_true", "y_proba")),
    "roc_auc_score": (lambda a, b: fastcal.roc_auc_score(a, b), ("y_true", "y_score")),
    "brier_decomposition": (lambda a, b: fastcal.brier_decomposition(a, b), ("y_true", "y_prob")),
    "calibration_report": (lambda a, b: fastcal.calibration_report(a, b), ("y_true", "y_prob")),
    "smooth_ece": (lambda a, b: fastcal.smooth_ece(a, b), ("y_true", "y_prob")),
    "score_decomposition": (lambda a, b: fastcal.score_decomposition(a, b), ("y", "p")),
    "corp_reliability": (lambda a, b: fastcal.corp_reliability(a, b), ("y", "p")),
    "calibration_slope_intercept": (lambda a, b: fastcal.calibration_slope_intercept(a, b), ("y", "p")),
    "IsotonicRegression": (lambda a, b: fastcal.IsotonicRegression().fit(b, a), ("y", "X")),
    "PlattScaling": (lambda a, b: fastcal.PlattScaling().fit(b, a), ("y", "scores")),
    "platt_scaling": (lambda a, b: fastcal.platt_scaling(b, a), ("y", "scores")),
    "BetaCalibration": (lambda a, b: fastcal.BetaCalibration().fit(b, a), ("y", "p")),
    "HistogramBinning": (lambda a, b: fastcal.HistogramBinning().fit(b, a), ("y", "p")),
    "VennAbers": (lambda a, b: fastcal.VennAbers().fit(b, a), ("y", "X")),
}


@pytest.mark.parametrize("bad, what", [(None, "None"), ({"a": 1}, "dict"), ("abc", "str"), ({1, 2}, "set")])
@pytest.mark.parametrize("name", list(DATA_CALLS))
def test_data_that_is_not_array_like_is_named(name, bad, what):
    call, names = DATA_CALLS[name]
    for position in (0, 1):
        args = [Y4, P4]
        args[position] = bad
        if bad is None and names[position] == "y_proba":  # None is its default: the argument is missing
            with pytest.raises(TypeError, match=r"missing required argument: 'y_proba'"):
                call(*args)
            continue
        with pytest.raises(ValueError, match=rf"^{names[position]} must be array-like, got {what}\.$"):
            call(*args)


def test_functions_reading_arrays_directly_name_none_too():
    with pytest.raises(TypeError, match=r"^y must be array-like, got None\.$"):
        fastcal.isotonic_regression(None)
    with pytest.raises(TypeError, match=r"^p must be array-like, got dict\.$"):
        fastcal.correct_negative_sampling({"a": 1}, 0.5)
    with pytest.raises(TypeError, match=r"^proba must be array-like, got None\.$"):
        fastcal.adjust_priors(None, [0.5, 0.5], [0.3, 0.7])


def test_numeric_scalars_are_still_scalars():
    for scalar in (3.0, np.float32(2), np.array(1.0), np.array(1, dtype=object)):
        with pytest.raises(ValueError, match=r"y_true must be a 1-D array \(or a single column\), got a scalar\."):
            fastcal.expected_calibration_error(scalar, P4)


# ---------------------------------------------------------------------------
# 4. y of shape (n, 1)
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda: fastcal.IsotonicRegression(),
    lambda: fastcal.IsotonicRegression(centered=True),
    lambda: fastcal.IsotonicRegression(centered=True, out_of_bounds="clip", increasing="auto"),
    lambda: fastcal.VennAbers(),
    lambda: fastcal.PlattScaling(),
    lambda: fastcal.BetaCalibration(),
    lambda: fastcal.HistogramBinning(),
], ids=["isotonic", "centered", "centered auto", "venn_abers", "platt", "beta", "histogram"])
def test_y_as_one_column_is_y(make):
    x = RNG.random(200)
    y = (RNG.random(200) < x).astype(int)
    ref = make().fit(x, y)
    got = make().fit(x, y[:, None])
    probe = np.linspace(0, 1, 11)
    predict = "predict_proba" if isinstance(ref, fastcal.VennAbers) else "predict"
    np.testing.assert_array_equal(getattr(got, predict)(probe), getattr(ref, predict)(probe))
    with pytest.raises(ValueError, match=r"y must be a 1-D array \(or a single column\), got an array of shape "
                                         r"\(200, 2\)"):
        make().fit(x, np.c_[y, y])


def test_corp_takes_y_as_one_column_with_a_matrix():
    ref = fastcal.score_decomposition(Y3, P3)
    got = fastcal.score_decomposition(Y3[:, None], P3)
    assert got.score == ref.score and got.miscalibration == ref.miscalibration


# ---------------------------------------------------------------------------
# 5. tampered model files
# ---------------------------------------------------------------------------
def _round_trip_dict(estimator):
    return json.loads(json.dumps(_persist.to_dict(estimator)))


def _hist_dict():
    return _round_trip_dict(fastcal.HistogramBinning(n_bins=12).fit(P_BIN, Y_BIN))


@pytest.mark.parametrize("tamper, match", [
    (lambda s: s["bin_weights_"]["data"].__setitem__(0, -1.0), "non-negative"),
    (lambda s: s["bin_weights_"]["data"].__setitem__(0, -1e-300), "non-negative"),
    (lambda s: s["bin_weights_"].__setitem__("data", [-0.0] * 12), "non-negative"),
    (lambda s: s["bin_weights_"].__setitem__("data", [0.0] * 12), "positive sum"),
    (lambda s: (s["bin_weights_"]["data"].__setitem__(3, 0.0), s["bin_values_"]["data"].__setitem__(3, 0.99)),
     "without weight must hold its midpoint"),
])
def test_tampered_histogram_weights_are_refused(tamper, match):
    data = _hist_dict()
    tamper(data["state"])
    with pytest.raises(ValueError, match=rf"^invalid fastcal model: .*{match}"):
        _persist.from_dict(data)


def test_histogram_with_empty_bins_round_trips():
    p = np.r_[RNG.random(50) * 0.3, 0.7 + RNG.random(50) * 0.3]  # bins in (0.3, 0.7] are empty
    model = fastcal.HistogramBinning(n_bins=10).fit(p, p > 0.5)
    assert np.any(model.bin_weights_ == 0)
    loaded = _persist.from_dict(_round_trip_dict(model))
    np.testing.assert_array_equal(loaded.predict(np.linspace(0, 1, 101)), model.predict(np.linspace(0, 1, 101)))


@pytest.mark.parametrize("centered", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_isotonic_ends_must_be_the_ends_of_the_knots(centered, dtype):
    x = RNG.random(400).astype(dtype)
    model = fastcal.IsotonicRegression(centered=centered).fit(x, (RNG.random(400) < x).astype(int))
    data = _round_trip_dict(model)
    _persist.from_dict(copy.deepcopy(data))  # as saved: loads
    xs = data["state"]["X_thresholds_"]["data"]
    for field, value in [("X_min_", xs[0] - 1.0), ("X_min_", xs[1]), ("X_max_", xs[-1] + 1.0), ("X_max_", xs[-2])]:
        bad = copy.deepcopy(data)
        bad["state"][field] = value
        with pytest.raises(ValueError, match=r"^invalid fastcal model: X_min_ and X_max_ must be the first and the "
                                             r"last of X_thresholds_"):
            _persist.from_dict(bad)


def test_every_fit_has_its_ends_at_the_knots():
    """The rule the loaded-state check enforces holds for fits of every kind (ties, weights with zeros, both
    directions, bounds, float32)."""
    rng = np.random.default_rng(5)
    for trial in range(120):
        n = int(rng.integers(1, 60))
        x = np.round(rng.normal(size=n), int(rng.integers(0, 3))).astype([np.float32, np.float64][trial % 2])
        y = (rng.random(n) < 0.5).astype(float) if trial % 3 else rng.normal(size=n)
        w = rng.choice([0.0, 1.0, 2.5], size=n) if trial % 4 == 0 else None
        if w is not None and not w.sum():
            continue
        params = dict(centered=trial % 5 < 2, increasing=bool(trial % 7), y_min=0.2 if trial % 6 == 0 else None)
        model = fastcal.IsotonicRegression(**params).fit(x, y, sample_weight=w)
        assert model.X_min_ == model.X_thresholds_[0] and model.X_max_ == model.X_thresholds_[-1]
        _persist.from_dict(_round_trip_dict(model))


# ---------------------------------------------------------------------------
# 6. separable data: beta calibration's optimum does not exist, Platt's does
# ---------------------------------------------------------------------------
P_SEP = np.random.default_rng(0).random(1000)
SEPARATING = {"p > 1/2": P_SEP > 0.5, "p < 1/2": P_SEP < 0.5, "p > 0.9": P_SEP > 0.9}


# "ab" maps p = 1/2 to 1/2 whatever a and b, so a threshold elsewhere does not separate within its family.
@pytest.mark.parametrize("parameters, labels", [(m, s) for m in ("abm", "ab", "am") for s in SEPARATING
                                                if not (m == "ab" and s == "p > 0.9")])
def test_beta_on_separable_data_says_that_no_fit_exists(parameters, labels):
    y = SEPARATING[labels]
    with pytest.warns(fastcal.ConvergenceWarning, match=r"^Beta calibration: p separates the classes of y, so the "
                                                         r"maximum-likelihood fit does not exist") as record:
        model = fastcal.BetaCalibration(parameters=parameters).fit(P_SEP, y)
    assert len(record) == 1 and record[0].filename == __file__
    assert not model.converged_
    # What it returns is the near-step function the solver stopped at: right on every row.
    assert np.array_equal(model.predict(P_SEP) > 0.5, y)
    # The loss keeps falling along the fitted direction: no optimum (the reason for the warning).
    from fastcal.metrics import log_loss

    bigger = fastcal.BetaCalibration(parameters=parameters)
    bigger.a_, bigger.b_, bigger.c_, bigger.m_ = 2 * model.a_, 2 * model.b_, 2 * model.c_, model.m_
    assert log_loss(y, bigger.predict(P_SEP)) <= log_loss(y, model.predict(P_SEP))


def test_beta_separation_ignores_rows_of_zero_weight_and_every_backend_warns():
    y = P_SEP > 0.5
    w = np.ones_like(P_SEP)
    y_noisy = y.copy()
    y_noisy[:10] = ~y_noisy[:10]  # rows on the wrong side, of weight 0
    w[:10] = 0.0
    with pytest.warns(fastcal.ConvergenceWarning, match="p separates the classes"):
        assert not fastcal.BetaCalibration().fit(P_SEP, y_noisy, sample_weight=w).converged_
    from fastcal import outofcore

    with pytest.warns(fastcal.ConvergenceWarning, match="p separates the classes"):
        assert not outofcore.fit_beta(P_SEP, y, chunk_rows=256).converged_


def test_beta_on_data_that_is_not_separable_converges_quietly():
    rng = np.random.default_rng(3)
    y = rng.random(1000) < P_SEP
    y_tie = P_SEP > 0.5
    y_tie[np.argmin(np.abs(P_SEP - 0.7))] = False  # one negative among the positives
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for labels in (y, y_tie):
            for parameters in ("abm", "ab", "am"):
                assert fastcal.BetaCalibration(parameters=parameters).fit(P_SEP, labels).converged_
        # A threshold away from 1/2 is not in the "ab" family (it maps 1/2 to 1/2): an optimum exists.
        assert fastcal.BetaCalibration(parameters="ab").fit(P_SEP, P_SEP > 0.9).converged_


@pytest.mark.parametrize("labels", ["middle", "ends"])
def test_beta_refit_after_an_unconstrained_fit_that_ran_off_starts_afresh(labels):
    """Positives in the middle of p's range (or at both ends) are separated by the unconstrained 'abm' model
    (a log p - b log(1 - p) + c has two roots when a and b differ in sign), so its parameters run off; betacal's
    refit with one term dropped has an optimum, which the refit must reach (not start from the runaway point)."""
    from sklearn.linear_model import LogisticRegression

    inside = (P_SEP > 0.3) & (P_SEP < 0.7)
    y = inside if labels == "middle" else ~inside
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = fastcal.BetaCalibration().fit(P_SEP, y)
    assert model.converged_
    kept, feature = ("a", np.log(P_SEP)) if model.b_ == 0.0 else ("b", -np.log1p(-P_SEP))
    assert (model.a_ == 0.0) != (model.b_ == 0.0)
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(feature[:, None], y)
    coef = model.a_ if kept == "a" else model.b_
    # Both minimise the same convex loss; L-BFGS's stopping leaves ~1e-6 of relative error.
    np.testing.assert_allclose([coef, model.c_], [ref.coef_[0, 0], ref.intercept_[0]], rtol=1e-4, atol=1e-6)


def test_platt_on_separable_data_has_an_optimum_as_scikit_learns_sigmoid():
    """Platt's smoothed targets keep the optimum finite on separable data: converged, no warning, the same fit
    as scikit-learn's _SigmoidCalibration (whose L-BFGS stops within ~1e-8 of it)."""
    from sklearn.calibration import _SigmoidCalibration

    for y in SEPARATING.values():
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours = fastcal.PlattScaling().fit(P_SEP, y)
        assert ours.converged_
        theirs = _SigmoidCalibration().fit(P_SEP, y)
        np.testing.assert_allclose([ours.a_, ours.b_], [theirs.a_, theirs.b_], rtol=1e-6)
