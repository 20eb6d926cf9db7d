"""Beta calibration: against a naive Newton reference, statsmodels, betacal, and its invariants."""

import math
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import BetaCalibration, ConvergenceWarning, InvalidParameterError, NotFittedError
from fastcal import beta as beta_module

from . import naive_beta as naive
from .threads import serial_and_parallel

HYPO = settings(max_examples=40, deadline=None)
MODELS = ("abm", "ab", "am")


def make_data(n, kind, seed=0, dtype=np.float64, weighted=False):
    """Probabilities and labels whose calibration map is of a known shape; both labels at three
    probabilities, so that no line in (log p, log(1 - p)) separates the classes (the fit exists)."""
    rng = np.random.default_rng(seed)
    if kind == "logistic":  # a sigmoid of a normal score, labels from a flatter sigmoid
        s = rng.normal(size=n) * 1.5
        p = 1 / (1 + np.exp(-s))
        y = rng.random(n) < 1 / (1 + np.exp(-(0.5 * s + 0.3)))
    elif kind == "skewed":  # beta-distributed p, truth sqrt(p): a != b
        p = rng.beta(0.5, 2.0, size=n)
        y = rng.random(n) < np.sqrt(p)
    elif kind == "reversed":  # truth 1 - p: the unconstrained "abm" fit has a < 0 (betacal's refit)
        p = rng.random(n)
        y = rng.random(n) < 1 - p
    else:  # "calibrated"
        p = rng.random(n)
        y = rng.random(n) < p
    p = np.concatenate([p, np.repeat([p.min(), np.median(p), p.max()], 2)]).astype(dtype)
    y = np.concatenate([y, [0, 1, 0, 1, 0, 1]]).astype(np.uint8)
    w = rng.uniform(0.2, 3.0, p.shape[0]) if weighted else None
    return p, y, w


def quiet_betacal(model, p, y, w=None):
    """betacal's fit; it switches every warning off globally (warnings.filterwarnings("ignore")), so the
    filters are restored around it."""
    from betacal import BetaCalibration as PeerBeta

    with warnings.catch_warnings():
        return PeerBeta(model).fit(p, y, sample_weight=w)


# ---------------------------------------------------------------------------
# Oracles
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["logistic", "skewed", "reversed"])
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_the_naive_reference(model, kind, weighted):
    p, y, w = make_data(3000, kind, seed=1, weighted=weighted)
    cal = BetaCalibration(model).fit(p, y, w)
    a, b, c = naive.beta_fit(p, y, w, model)
    # Both solve the same strictly convex problem to rounding level (fastcal's stopping rule at
    # tol=1e-10 leaves ~1e-10 relative); the naive Newton is in float64 with NumPy's logs:
    # parameters of size ~1 agree to ~1e-8, far above rounding, far below any real difference.
    assert_allclose([cal.a_, cal.b_, cal.c_], [a, b, c], rtol=1e-7, atol=1e-8)
    assert_allclose(cal.predict(p), naive.beta_predict(p, a, b, c), rtol=0, atol=1e-9)
    if model == "abm" and kind == "reversed":
        assert cal.a_ == 0.0  # refitted without the log p term


@HYPO
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), model=st.sampled_from(MODELS),
       kind=st.sampled_from(["logistic", "skewed", "reversed", "calibrated"]), weighted=st.booleans(),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_hypothesis_objective_never_worse_than_the_naive_fit(seed, n, model, kind, weighted, dtype):
    p, y, w = make_data(n, kind, seed=seed, dtype=dtype, weighted=weighted)
    cal = BetaCalibration(model).fit(p, y, w)
    a, b, c = naive.beta_fit(p, y, w, model)
    ours = naive.beta_loss(p, y, w, cal.a_, cal.b_, cal.c_)
    ref = naive.beta_loss(p, y, w, a, b, c)
    total = float(np.sum(w)) if w is not None else float(len(y))
    # The same optimum: the objectives differ by rounding (a few ulp of each of the N terms) plus
    # fastcal's stopping rule (decrement <= 1e-10 per unit weight).
    assert ours <= ref + 1e-9 * total
    assert_allclose(cal.predict(p), naive.beta_predict(p, a, b, c), atol=1e-5)
    assert cal.predict(p).dtype == p.dtype


@pytest.mark.parametrize("kind", ["logistic", "skewed"])
def test_matches_statsmodels_glm(kind):
    import statsmodels.api as sm

    p, y, w = make_data(5000, kind, seed=2, weighted=True)
    u1, u2 = naive.features(p, np.finfo(np.float64).eps)
    X = np.column_stack([u1, u2, np.ones_like(u1)])
    res = sm.GLM(y, X, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-14, maxiter=100)
    cal = BetaCalibration().fit(p, y, w)
    assert min(res.params[:2]) > 0  # unconstrained optimum is feasible: the same problem
    # IRLS to 1e-14 and Newton to decrement 1e-10: both at the optimum to ~1e-9 (relative).
    assert_allclose([cal.a_, cal.b_, cal.c_], res.params, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["logistic", "skewed", "reversed"])
def test_never_worse_than_betacal(model, kind):
    p, y, w = make_data(20000, kind, seed=3)
    cal = BetaCalibration(model).fit(p, y)
    peer = quiet_betacal(model, p, y)
    q_ours, q_peer = cal.predict(p), peer.predict(p)

    def objective(q):
        return -float(np.sum(y * np.log(q) + (1 - y) * np.log1p(-q)))

    f_ours, f_peer = objective(q_ours), objective(q_peer)
    n = len(y)
    # Ours is the exact optimum of betacal's objective: never worse, up to the rounding of the sum.
    assert f_ours <= f_peer + 1e-12 * n
    # betacal stops L-BFGS early (scikit-learn's tol): where its objective is within 1e-9 per row of
    # ours, the two maps are within ~sqrt(2e-9 / curvature) ~ 1e-4 of each other.
    if f_peer - f_ours <= 1e-9 * n:
        assert np.max(np.abs(q_ours - q_peer)) <= 1e-4
        assert abs(cal.m_ - peer.calibrator_.map_[2]) <= 1e-4
    a_peer, b_peer = peer.calibrator_.map_[:2]
    assert (cal.a_ == 0.0) == (a_peer == 0) and (cal.b_ == 0.0) == (b_peer == 0)


# ---------------------------------------------------------------------------
# Invariants
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_recovers_the_identity_on_calibrated_data(model):
    p, y, _ = make_data(200_000, "calibrated", seed=4)
    cal = BetaCalibration(model).fit(p, y)
    # 2e5 rows: standard errors of a, b, c are ~0.01; 0.05 is 5 of them.
    assert_allclose([cal.a_, cal.b_, cal.c_], [1, 1, 0], atol=0.05)
    assert abs(cal.m_ - 0.5) < 0.02
    assert np.max(np.abs(cal.predict(p) - p)) < 0.05


@pytest.mark.parametrize("model", MODELS)
def test_weight_scale_invariance(model):
    p, y, w = make_data(4000, "skewed", seed=5, weighted=True)
    ref = BetaCalibration(model).fit(p, y, w)
    for scale in (1e-6, 1e6):
        cal = BetaCalibration(model).fit(p, y, w * scale)
        # Newton's iterates and its stopping rule are invariant to the weight scale; only the
        # rounding of the sums changes.
        assert_allclose([cal.a_, cal.b_, cal.c_], [ref.a_, ref.b_, ref.c_], rtol=1e-9, atol=1e-12)


def test_integer_weights_are_repeated_rows():
    p, y, _ = make_data(500, "skewed", seed=6)
    k = np.random.default_rng(6).integers(0, 4, p.shape[0])
    k[-6:] = 1
    a = BetaCalibration().fit(p, y, k.astype(float))
    b = BetaCalibration().fit(np.repeat(p, k), np.repeat(y, k))
    assert_allclose([a.a_, a.b_, a.c_], [b.a_, b.b_, b.c_], rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("model", MODELS)
def test_float32_and_float64_agree(model):
    p, y, _ = make_data(5000, "skewed", seed=7, dtype=np.float32)
    p = np.clip(p, 1e-3, 1 - 1e-3)  # away from float32's clipping threshold, the features are the same
    a = BetaCalibration(model).fit(p, y)
    b = BetaCalibration(model).fit(p.astype(np.float64), y)
    assert_allclose([a.a_, a.b_, a.c_], [b.a_, b.b_, b.c_], rtol=1e-9, atol=1e-12)
    q = a.predict(p)
    assert q.dtype == np.float32
    assert_allclose(q, b.predict(p.astype(np.float64)), rtol=2e-7)


def test_clipping_at_the_dtypes_eps():
    p, y, _ = make_data(2000, "skewed", seed=8)
    p[:50] = 0.0
    p[50:100] = 1.0
    cal = BetaCalibration().fit(p, y)
    eps = np.finfo(np.float64).eps
    q = cal.predict(np.array([0.0, eps / 2, eps, 1.0, 1 - eps / 4]))
    assert q[0] == q[1] == q[2] and q[3] == q[4]


def test_threads_do_not_change_the_result():
    p, y, w = make_data(300_000, "skewed", seed=9, weighted=True)
    serial, parallel = serial_and_parallel(lambda: BetaCalibration().fit(p, y, w))
    assert (serial.a_, serial.b_, serial.c_) == (parallel.a_, parallel.b_, parallel.c_)
    q1, q2 = serial_and_parallel(serial.predict, p)
    assert_array_equal(q1, q2)


def test_the_passes_blocks_are_platts():
    # fastcal.beta.fit_groups cuts each group's rows into Platt's blocks (fastcal.platt.Blocks): a group's sums are
    # those of its own fit (fastcal.beta.array_pass, blocks of beta's CHUNK) only if the two are one size.
    from fastcal.beta import _kernels as beta_kernels
    from fastcal.platt import _kernels as platt_kernels

    assert beta_kernels.CHUNK == platt_kernels.CHUNK


def test_warm_start_does_not_change_the_answer():
    p, y, _ = make_data(600_000, "logistic", seed=10)
    cal = BetaCalibration().fit(p, y)  # warm-started from a subsample (n >= 2**18)
    a, b, c = naive.beta_fit(p, y, None, "abm")
    assert_allclose([cal.a_, cal.b_, cal.c_], [a, b, c], rtol=1e-7, atol=1e-8)


def test_midpoint():
    assert beta_module.midpoint("ab", 2.0, 1.0, 0.3) == 0.5
    assert beta_module.midpoint("am", 2.0, 2.0, 0.0) == 0.5
    for a, b, c in [(1.0, 1.0, 0.0), (0.5, 2.0, 0.7), (3.0, 0.1, -2.0)]:
        m = beta_module.midpoint("abm", a, b, c)

        def g(x):
            return a * math.log(x) - b * math.log1p(-x) + c

        # the root to m's resolution: g changes sign between m's neighbours (g increases)
        assert g(math.nextafter(m, 0.0)) <= 0.0 <= g(math.nextafter(m, 1.0))
    assert beta_module.midpoint("abm", 1.0, 0.0, -1.0) == 1.0  # a log m - 1 < 0 on (0, 1]: nearest at m = 1
    assert beta_module.midpoint("abm", 0.0, 1.0, 1.0) == 0.0
    assert beta_module.midpoint("abm", 0.0, 0.0, 1.0) == 0.5
    assert beta_module.midpoint("abm", 1e-4, 9.6, 0.09) == 0.0  # a root below 1e-308: 0 (exp(800) overflowed once)


# ---------------------------------------------------------------------------
# Degenerate input and bad input
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_constant_p(model):
    p = np.full(10, 0.3)
    y = np.array([0, 1, 1, 0, 0, 0, 1, 0, 0, 0])
    cal = BetaCalibration(model).fit(p, y)
    assert_allclose(cal.predict([0.3]), [0.3], rtol=1e-12)  # the positive rate
    assert cal.converged_ and cal.n_iter_ == 0


def test_separable_data_warns():
    p = np.array([0.1, 0.2, 0.3, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 1, 1])
    with pytest.warns(ConvergenceWarning, match="Beta calibration"):
        cal = BetaCalibration(max_iter=20).fit(p, y)
    assert not cal.converged_


@pytest.mark.parametrize("p, y, w, exc, match", [
    ([0.1, 1.5], [0, 1], None, ValueError, r"p must contain probabilities in \[0, 1\]"),
    ([-0.1, 0.5], [0, 1], None, ValueError, r"p must contain probabilities in \[0, 1\]"),
    ([0.1, np.nan], [0, 1], None, ValueError, "p must be finite"),
    ([0.1, 0.5], [0, 2], None, ValueError, "y must contain only the labels 0 and 1"),
    ([0.1, 0.5], [1, 1], None, ValueError, "y must contain both classes"),
    ([0.1, 0.5], [0, 1], [1.0, 0.0], ValueError, "y must contain both classes"),
    ([0.1, 0.5, 0.7], [0, 1], None, ValueError, "Inconsistent numbers of samples"),
    ([0.1, 0.5], [0, 1], [1.0, -1.0], ValueError, "sample_weight"),
    ([], [], None, ValueError, "p must have at least 1 element"),
    (["a", "b"], [0, 1], None, TypeError, "p must be a numeric array"),
])
def test_bad_input_names_the_argument(p, y, w, exc, match):
    with pytest.raises(exc, match=match):
        BetaCalibration().fit(p, y, w)


def test_bad_predict_input():
    cal = BetaCalibration().fit(*make_data(100, "skewed")[:2])
    with pytest.raises(ValueError, match=r"p must contain probabilities in \[0, 1\]"):
        cal.predict([0.5, 2.0])
    with pytest.raises(ValueError, match="p must be finite"):
        cal.predict([0.5, np.inf])
    assert cal.predict([]).shape == (0,)


@pytest.mark.parametrize("params, match", [
    (dict(parameters="abc"), "parameters must be 'abm', 'ab' or 'am'"),
    (dict(max_iter=0), "max_iter must be an integer >= 1"),
    (dict(tol=-1.0), "tol must be a real number > 0"),
])
def test_bad_parameters(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        BetaCalibration(**params).fit([0.1, 0.5], [0, 1])


# ---------------------------------------------------------------------------
# The estimator API
# ---------------------------------------------------------------------------


def test_estimator_api():
    from sklearn.base import clone

    p, y, _ = make_data(500, "skewed", seed=11)
    cal = BetaCalibration("am", max_iter=50)
    assert repr(cal) == "BetaCalibration(max_iter=50, parameters='am')"
    assert cal.get_params() == {"parameters": "am", "max_iter": 50, "tol": None}
    assert clone(cal).get_params() == cal.get_params()
    with pytest.raises(NotFittedError):
        cal.predict([0.5])
    assert cal.set_params(parameters="ab") is cal and cal.parameters == "ab"
    cal.fit(p, y)
    again = pickle.loads(pickle.dumps(cal))
    assert_array_equal(again.predict(p), cal.predict(p))


def test_inputs_not_modified_read_only_and_strided():
    p, y, w = make_data(1000, "skewed", seed=12, weighted=True)
    copies = [p.copy(), y.copy(), w.copy()]
    for arr in (p, y, w):
        arr.flags.writeable = False
    ref = BetaCalibration().fit(p, y, w)
    for arr, copy in zip((p, y, w), copies):
        assert_array_equal(arr, copy)
    big = np.zeros((p.shape[0], 2))
    big[:, 0] = p
    strided = BetaCalibration().fit(big[:, 0], y, w)
    assert (strided.a_, strided.b_, strided.c_) == (ref.a_, ref.b_, ref.c_)


@pytest.mark.parametrize("model", MODELS)
def test_model_file_round_trip(tmp_path, model):
    p, y, _ = make_data(1000, "reversed" if model == "abm" else "skewed", seed=13)
    cal = BetaCalibration(model).fit(p, y)
    cal.save(tmp_path / "beta.json")
    loaded = fastcal.load(tmp_path / "beta.json")
    assert type(loaded) is BetaCalibration and loaded.get_params() == cal.get_params()
    assert (loaded.a_, loaded.b_, loaded.c_, loaded.m_) == (cal.a_, cal.b_, cal.c_, cal.m_)
    assert_array_equal(loaded.predict(p), cal.predict(p))


@pytest.mark.parametrize("model, field, value, match", [
    ("abm", "m_", 1.5, r"m_ = 1.5 is not in \[0, 1\]"),
    ("am", "b_", 7.0, "has a_ == b_"),
    ("abm", "a_", -1.0, "a_, b_ >= 0"),
    ("abm", "n_iter_", -1, "n_iter_ is negative"),
    ("abm", "c_", "x", "must be a finite number"),
    ("ab", "m_", 0.25, "has m_ == 0.5"),
    ("ab", "c_", 0.5, r"c_ == \(a_ - b_\) log 2"),
])
def test_invalid_model_files(model, field, value, match):
    p, y, _ = make_data(300, "skewed", seed=14)
    data = BetaCalibration(model).fit(p, y).to_dict()
    data["state"][field] = value
    with pytest.raises(ValueError, match=match):
        fastcal._persist.from_dict(data)
    data = BetaCalibration(model).fit(p, y).to_dict()
    data["params"]["parameters"] = "abc"
    with pytest.raises(ValueError, match="parameters must be"):
        fastcal._persist.from_dict(data)


# ---------------------------------------------------------------------------
# Every layer: CalibratedClassifierCV, out of core, Dask, the CLI
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("n_classes", [2, 3])
def test_calibrated_classifier_cv(n_classes):
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(2000, n_informative=5, n_classes=n_classes, random_state=0)
    clf = GaussianNB().fit(X[:1000], y[:1000])
    cal = fastcal.CalibratedClassifierCV(FrozenEstimator(clf), method="beta").fit(X[1000:], y[1000:])
    P = clf.predict_proba(X[1000:])
    columns = [1] if n_classes == 2 else range(n_classes)
    expected = np.column_stack([BetaCalibration().fit(P[:, j], y[1000:] == j).predict(P[:, j]) for j in columns])
    got = cal.predict_proba(X[1000:])
    if n_classes == 2:
        assert_allclose(got[:, 1], expected[:, 0], rtol=1e-12)
    else:
        assert_allclose(got, expected / expected.sum(axis=1, keepdims=True), rtol=1e-12)


def test_calibrated_classifier_cv_decision_values_go_through_the_logistic():
    from scipy.special import expit
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.svm import LinearSVC

    X, y = make_classification(1000, random_state=1)
    svc = LinearSVC().fit(X[:500], y[:500])
    cal = fastcal.CalibratedClassifierCV(FrozenEstimator(svc), method="beta").fit(X[500:], y[500:])
    s = expit(svc.decision_function(X[500:]))
    assert_allclose(cal.predict_proba(X[500:])[:, 1], BetaCalibration().fit(s, y[500:]).predict(s), rtol=1e-12)


@pytest.mark.parametrize("model", MODELS)
def test_out_of_core_and_dask_equal_in_memory(tmp_path, model):
    import dask.array as da

    import fastcal.dask
    from fastcal import outofcore

    p, y, w = make_data(20000, "reversed" if model == "abm" else "skewed", seed=15, weighted=True)
    ref = BetaCalibration(model).fit(p, y, w)
    np.save(tmp_path / "p.npy", p)
    fits = [outofcore.fit_beta(tmp_path / "p.npy", y, w, parameters=model, chunk_rows=3000),
            fastcal.dask.fit_beta(da.from_array(p, chunks=4000), da.from_array(y, chunks=4000),
                                  da.from_array(w, chunks=4000), parameters=model)]
    for fit in fits:
        assert type(fit) is BetaCalibration and fit.get_params() == ref.get_params()
        # the same Newton iterations on sums added in other groupings: equal to ~1e-10
        assert_allclose([fit.a_, fit.b_, fit.c_, fit.m_], [ref.a_, ref.b_, ref.c_, ref.m_], rtol=1e-8, atol=1e-10)
    q = fastcal.dask.predict(ref, da.from_array(p, chunks=4000)).compute()
    assert_array_equal(q, ref.predict(p))


def test_out_of_core_and_dask_warm_start_equal_in_memory():
    import dask.array as da

    import fastcal.dask
    from fastcal import outofcore

    # Above the warm-start threshold (2**18 rows): the chunked fits start from their subsample, whose weights
    # are rescaled as the passes see them.
    p, y, w = make_data(300_000, "skewed", seed=16, weighted=True)
    w *= 2.0**-600  # tiny weights: the rescaled subsample and passes still give the in-memory fit
    ref = BetaCalibration().fit(p, y, w)
    fits = [outofcore.fit_beta(p, y, w, chunk_rows=100_000),
            fastcal.dask.fit_beta(*(da.from_array(a, chunks=100_000) for a in (p, y, w)))]
    for fit in fits:
        assert fit.converged_
        # the same Newton iterations on sums added in other groupings: equal to ~1e-10
        assert_allclose([fit.a_, fit.b_, fit.c_], [ref.a_, ref.b_, ref.c_], rtol=1e-8, atol=1e-10)


def test_out_of_core_bad_input():
    from fastcal import outofcore

    with pytest.raises(ValueError, match=r"p must contain probabilities in \[0, 1\]"):
        outofcore.fit_beta(np.array([0.2, 1.2, 0.5]), np.array([0, 1, 1]), chunk_rows=2)
    with pytest.raises(InvalidParameterError, match="parameters must be"):
        outofcore.fit_beta(np.array([0.2, 0.5]), np.array([0, 1]), parameters="x")


def test_cli_fit_and_apply(tmp_path):
    from fastcal.cli import main

    p, y, w = make_data(3000, "skewed", seed=16, weighted=True)
    np.savez(tmp_path / "d.npz", p=p, y=y, w=w)
    for budget in ([], ["--memory-budget", "1M", "--batch-rows", "700"]):
        assert main(["fit", "-q", "--method", "beta", "--parameters", "ab", "--score-col", "p", "--label-col", "y",
                     "--weight-col", "w", *budget, str(tmp_path / "d.npz"), "-o", str(tmp_path / "m.json")]) == 0
        model = fastcal.load(tmp_path / "m.json")
        ref = BetaCalibration("ab").fit(p, y, w)
        assert_allclose([model.a_, model.b_, model.c_], [ref.a_, ref.b_, ref.c_], rtol=1e-8)
    assert main(["apply", "-q", str(tmp_path / "m.json"), str(tmp_path / "d.npz"), "--score-col", "p",
                 "-o", str(tmp_path / "out.npy")]) == 0
    assert_allclose(np.load(tmp_path / "out.npy"), model.predict(p), rtol=0, atol=0)
