"""The public surface: names, lazy optional imports, shared warning class, model files of every calibrator."""

import json
import pickle
import re
import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fastcal
import fastcal.platt
import fastcal.prior
from fastcal._core.results import Result

pytestmark = pytest.mark.nojit  # also run with NUMBA_DISABLE_JIT=1 (make test)


def test_every_public_name_resolves():
    for name in fastcal.__all__:
        assert getattr(fastcal, name) is not None, name


def test_import_needs_only_the_core_dependencies():
    code = (
        "import sys, fastcal; "
        "heavy = [m for m in ('sklearn', 'matplotlib', 'dask', 'distributed', 'pyarrow', 'pyspark') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_convergence_warning_class():
    assert fastcal.platt.ConvergenceWarning is fastcal.ConvergenceWarning
    assert fastcal.prior.ConvergenceWarning is fastcal.ConvergenceWarning
    assert issubclass(fastcal.ConvergenceWarning, UserWarning)


def _not_converging_fits():
    """Every iterative public fit, stopped after one iteration."""
    import fastcal.outofcore

    rng = np.random.default_rng(1)
    s = rng.normal(0, 3, 4000)
    y = (rng.random(4000) < 1 / (1 + np.exp(-s / 2))).astype(np.uint8)
    z = np.stack([s, -s, 0.5 * s], axis=1)
    post = np.stack([1 / (1 + np.exp(-s)), 1 / (1 + np.exp(s))], axis=1)
    return {
        "platt_scaling": lambda: fastcal.platt_scaling(s, y, max_iter=1),
        "PlattScaling": lambda: fastcal.PlattScaling(max_iter=1).fit(s, y),
        "outofcore.fit_platt": lambda: fastcal.outofcore.fit_platt(s, y, max_iter=1),
        "BetaCalibration": lambda: fastcal.BetaCalibration(max_iter=1).fit(1 / (1 + np.exp(-s)), y),
        "outofcore.fit_beta": lambda: fastcal.outofcore.fit_beta(1 / (1 + np.exp(-s)), y, max_iter=1),
        "TemperatureScaling": lambda: fastcal.TemperatureScaling(max_iter=1).fit(z, y),
        "estimate_priors_em": lambda: fastcal.estimate_priors_em(post, [0.9, 0.1], max_iter=1),
    }


@pytest.mark.parametrize("name", sorted(_not_converging_fits()))
def test_one_non_convergence_warning(name):
    # One wording, and the warning points at the caller's line.
    with pytest.warns(fastcal.ConvergenceWarning) as record:
        _not_converging_fits()[name]()
    (w,) = record
    assert re.fullmatch(r"[\w. ]+ did not converge in 1 (Newton|EM) iterations( \(.+ > tol=\S+\))?; "
                        r"the result may be inaccurate\. Increase max_iter or tol\.", str(w.message)), str(w.message)
    assert w.filename == __file__


def _results():
    """One result object of every public function that returns one, built twice the same way."""
    rng = np.random.default_rng(2)
    s = rng.normal(0, 2, 3000)
    y = (rng.random(3000) < 1 / (1 + np.exp(-s / 2))).astype(np.uint8)
    p = 1 / (1 + np.exp(-s))
    post = np.stack([1 - p, p], axis=1)
    return {
        "PlattResult": lambda: fastcal.platt_scaling(s, y),
        "SlopeInterceptResult": lambda: fastcal.calibration_slope_intercept(y, p),
        "PriorEMResult": lambda: fastcal.estimate_priors_em(post, [0.5, 0.5]),
        "LabelShiftResult": lambda: fastcal.estimate_label_shift(y, post, post[::-1], n_bootstrap=3, random_state=0),
        "BrierDecomposition": lambda: fastcal.brier_decomposition(y, p),
        "CalibrationReport": lambda: fastcal.calibration_report(y, p),
        "ScoreDecomposition": lambda: fastcal.score_decomposition(y, p),
        "CorpReliabilityResult": lambda: fastcal.corp_reliability(y, p, n_resamples=20, random_state=0),
        "SmoothECEResult": lambda: fastcal.smooth_ece(y, p),
        "ECCEResult": lambda: fastcal.ecce(y, p),
        "MulticalibrationResult": lambda: fastcal.multicalibration_error(y, p, {"g": (s > 0).astype(int)}),
        "SegmentReport": lambda: fastcal.segment_report(y, p, (s > 0).astype(int)),
    }


def test_every_result_class_is_listed():
    listed = {name for name in fastcal.__all__ if name.endswith(("Result", "Report", "Decomposition"))}
    assert listed == set(_results()) | {"CrossValCalibrationReport"}
    assert all(issubclass(getattr(fastcal, name), Result) for name in listed)


@pytest.mark.parametrize("name", sorted(_results()))
def test_one_result_convention(name):
    make = _results()[name]
    res = make()
    assert type(res).__name__ == name and isinstance(res, Result)
    plain = res.to_dict()
    assert json.loads(json.dumps(plain)) == plain  # plain Python values only
    assert res == make() and res == pickle.loads(pickle.dumps(res))
    assert repr(res).startswith(f"{name}(") and "array(" not in repr(res)
    with pytest.raises(TypeError):
        iter(res)  # attribute access only: no tuple unpacking
    with pytest.raises(AttributeError):
        res.extra = 1


def test_platt_model_file_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    s = rng.normal(size=5000)
    y = (rng.random(5000) < 1 / (1 + np.exp(-s))).astype(int)
    cal = fastcal.PlattScaling().fit(s, y)
    cal.save(tmp_path / "platt.json")
    loaded = fastcal.load(tmp_path / "platt.json")
    assert type(loaded) is fastcal.PlattScaling
    assert (loaded.a_, loaded.b_) == (cal.a_, cal.b_)
    assert_array_equal(loaded.predict(s), cal.predict(s))


def test_num_threads_setting_is_per_thread_and_checked():
    import threading

    import numba

    default = fastcal.get_num_threads()
    assert default == max(1, numba.config.NUMBA_NUM_THREADS)
    seen = []
    try:
        fastcal.set_num_threads(3)
        assert fastcal.get_num_threads() == 3
        t = threading.Thread(target=lambda: seen.append(fastcal.get_num_threads()))
        t.start()
        t.join()
        assert seen == [default]  # another thread keeps the default
    finally:
        fastcal.set_num_threads(None)
    assert fastcal.get_num_threads() == default
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="^n must be an integer >= 1 or None; got"):
            fastcal.set_num_threads(bad)


def test_not_fitted_error_is_sklearns_when_sklearn_is_loaded():
    # Code written for scikit-learn catches fastcal's NotFittedError; import fastcal still loads no scikit-learn.
    code = """
import sys
import fastcal
try:
    fastcal.PlattScaling().predict([0.0])
except fastcal.NotFittedError as e:
    assert "sklearn" not in sys.modules and isinstance(e, (ValueError, AttributeError))
import sklearn.exceptions
for est in (fastcal.IsotonicRegression(), fastcal.PlattScaling(), fastcal.TemperatureScaling()):
    try:
        est.predict([0.0]) if not isinstance(est, fastcal.TemperatureScaling) else est.predict_proba([[0.0, 1.0]])
    except sklearn.exceptions.NotFittedError as e:
        assert isinstance(e, fastcal.NotFittedError) and type(e).__name__ == "NotFittedError"
    else:
        raise AssertionError("not raised")
"""
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def _evaluate(data, t):
    """What ``data`` (a calibrator's ``prediction_data()``) says its ``predict`` computes, in NumPy."""
    from fastcal._prediction import Knots, Logistic, Steps

    if isinstance(data, Knots):
        t = np.asarray(t, dtype=data.dtype).astype(np.float64)
        x, y = data.x.astype(np.float64), data.y.astype(np.float64)
        if x.shape[0] == 1:
            return np.full(t.shape, y[0]).astype(data.dtype)
        tc = np.clip(t, x[0], x[-1])
        j = np.clip(np.searchsorted(x, tc, side="left"), 1, x.shape[0] - 1)
        out = y[j - 1] + (tc - x[j - 1]) / (x[j] - x[j - 1]) * (y[j] - y[j - 1])
        if data.out_of_bounds == "nan":
            out[(t < x[0]) | (t > x[-1])] = np.nan
        return out.astype(data.dtype)
    if isinstance(data, Steps):
        return data.values[np.searchsorted(data.edges, t, side="left")]
    assert isinstance(data, Logistic)
    eps = np.finfo(np.asarray(t).dtype).eps
    x = np.asarray(t, dtype=np.float64)
    pc = np.clip(x, eps, 1 - eps)
    features = {"x": x, "log_p": np.log(pc), "log_1mp": np.log(1.0 - pc)}
    u = data.coef[0] * features[data.features[0]]
    for c, f in zip(data.coef[1:], data.features[1:]):
        u = u + c * features[f]
    u = u + data.intercept
    e = np.exp(-np.abs(u))
    d = 1.0 / (1.0 + e)
    return np.where(u >= 0.0, d, e * d)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_prediction_data_says_what_predict_computes(dtype):
    # The data backends compute predictions from (fastcal.spark.predict): evaluated as documented, in NumPy, it gives
    # predict's results, bit for bit for the knots and steps, and for the logistic models within NumPy's exp and log
    # against fastcal's (below).
    rng = np.random.default_rng(4)
    s = rng.random(2000).astype(dtype)
    y = (rng.random(2000) < s).astype(np.int64)
    t = np.concatenate([s, [0.0, 1.0], rng.random(500)]).astype(dtype)
    for est in (fastcal.IsotonicRegression(out_of_bounds="clip").fit(s, y),
                fastcal.IsotonicRegression(out_of_bounds="nan").fit(s[s > 0.2], y[s > 0.2]),
                fastcal.IsotonicRegression().fit(np.array([0.3, 0.3], dtype), [0, 1]),
                fastcal.HistogramBinning(n_bins=7, strategy="quantile").fit(np.round(s, 1), y)):
        assert_array_equal(_evaluate(est.prediction_data(), t).view(np.uint8), est.predict(t).view(np.uint8))
    eps = np.finfo(dtype).eps
    pc = np.clip(t.astype(np.float64), eps, 1 - eps)
    for est in (fastcal.PlattScaling().fit(s, y), fastcal.BetaCalibration().fit(s, y)):
        data = est.prediction_data()
        got, want = _evaluate(data, t).astype(dtype), est.predict(t)
        # NumPy's and fastcal's exp and log are each within 2 ulp: u differs by up to 4 eps of the sum of its terms'
        # magnitudes, which the logistic function turns into the same relative difference of its result, plus
        # the exp's and the rounding's few ulp.
        f = {"x": t.astype(np.float64), "log_p": np.log(pc), "log_1mp": np.log1p(-pc)}
        terms = sum(abs(c) * np.abs(f[name]) for c, name in zip(data.coef, data.features)) + abs(data.intercept)
        rel = np.abs(got.astype(np.float64) - want) / np.abs(want.astype(np.float64))
        assert np.all(rel <= (4 * terms + 3) * eps), np.max(rel / ((4 * terms + 3) * eps))
    with pytest.raises(fastcal.NotFittedError):
        fastcal.PlattScaling().prediction_data()
