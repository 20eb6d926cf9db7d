"""Matrix scaling and Dirichlet calibration against a naive SciPy reference, scikit-learn's multinomial logistic
regression (matrix scaling without a penalty is that model), and their invariants."""

import tracemalloc
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import DirichletCalibration, MatrixScaling

from . import naive_linear_softmax as naive
from . import naive_multiclass
from .threads import serial_and_parallel

#: (estimator factory, matrix type, penalty) cases: every form of W, without and with each penalty.
PENALTIES = [(0.0, None), (0.05, None), (0.05, 0.02), (0.05, 0.0)]
CASES = ([("matrix", "full", lam, mu) for lam, mu in PENALTIES]
         + [("dirichlet", m, lam, mu) for m in ("full", "diagonal", "fixed_diagonal") for lam, mu in PENALTIES])


def _est(kind, matrix, reg_lambda=0.0, reg_mu=None, **kw):
    if kind == "matrix":
        return MatrixScaling(input_type="logits", reg_lambda=reg_lambda, reg_mu=reg_mu, **kw)
    return DirichletCalibration(matrix_type=matrix, reg_lambda=reg_lambda, reg_mu=reg_mu, **kw)


def _case(seed, n=None, k=None, kind="matrix"):
    """Scores of a miscalibrated model: logits z whose true map is softmax(A z + c), or their softmax."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(400, 3000)) if n is None else n
    k = int(rng.integers(2, 6)) if k is None else k
    z = rng.normal(size=(n, k)) * rng.uniform(0.5, 2.0)
    A = np.eye(k) * rng.uniform(0.5, 2.0) + rng.normal(size=(k, k)) * 0.3
    u = z @ A.T + rng.normal(size=k) * 0.5
    p = np.exp(u - u.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    if kind == "dirichlet":
        q = np.exp(z - z.max(axis=1, keepdims=True))
        return q / q.sum(axis=1, keepdims=True), y, rng
    return z, y, rng


def _features(kind, X):
    return np.log(X + 1e-12) if kind == "dirichlet" else X


@pytest.mark.parametrize("kind, matrix, reg_lambda, reg_mu", CASES)
@pytest.mark.parametrize("seed", range(4))
def test_parameters_equal_the_naive_reference(kind, matrix, reg_lambda, reg_mu, seed):
    X, y, rng = _case(seed, kind=kind)
    w = rng.random(X.shape[0]) if seed % 2 else None
    ours = _est(kind, matrix, reg_lambda, reg_mu).fit(X, y, sample_weight=w)
    W, b, res = naive.fit(_features(kind, X), y, w, matrix, reg_lambda, reg_mu)
    assert res.success or np.abs(res.jac).max() < 1e-8  # BFGS ends on "precision loss" near 1e-9
    # BFGS to a gradient of 1e-12 of the mean loss against Newton's decrement of 1e-10 per unit weight: the
    # parameters agree to about 1e-8 (measured), asked 1e-6
    assert_allclose(ours.coef_, W, atol=1e-6, rtol=1e-6)
    assert_allclose(ours.intercept_, b, atol=1e-6, rtol=1e-6)
    assert_allclose(ours.predict_proba(X), naive.predict(_features(kind, X), ours.coef_, ours.intercept_),
                    rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(6))
def test_matrix_scaling_is_scikit_learns_multinomial_logistic_regression(seed):
    from sklearn.linear_model import LogisticRegression

    z, y, rng = _case(seed)
    w = rng.random(z.shape[0]) if seed % 2 else None
    ours = MatrixScaling().fit(z, y, sample_weight=w)
    lr = LogisticRegression(C=np.inf, tol=1e-14, max_iter=100000).fit(z, y, sample_weight=w)
    P, Q = ours.predict_proba(z), lr.predict_proba(z)
    ww = np.ones(len(y)) if w is None else w
    ours_loss = -np.sum(ww * np.log(P[np.arange(len(y)), y])) / ww.sum()
    lr_loss = -np.sum(ww * np.log(Q[np.arange(len(y)), y])) / ww.sum()
    # L-BFGS stops on its gradient (measured 1e-7 apart in probability): the same model, and never a lower loss
    assert_allclose(P, Q, atol=1e-5)
    assert ours_loss <= lr_loss + 1e-12


def test_dirichlet_full_is_matrix_scaling_of_log_probabilities():
    P, y, _ = _case(11, n=2000, k=4, kind="dirichlet")
    dc = DirichletCalibration().fit(P, y)
    ms = MatrixScaling(input_type="probabilities").fit(P, y)
    assert_array_equal(dc.coef_, ms.coef_)
    assert_array_equal(dc.predict_proba(P), ms.predict_proba(P))


def test_fixed_diagonal_is_temperature_scaling_of_log_probabilities():
    P, y, _ = _case(12, n=2000, k=4, kind="dirichlet")
    dc = DirichletCalibration(matrix_type="fixed_diagonal").fit(P, y)
    ts = fastcal.TemperatureScaling(input_type="probabilities").fit(P, y)
    assert_allclose(np.diag(dc.coef_), ts.beta_, rtol=1e-7)
    assert_array_equal(dc.coef_[~np.eye(4, dtype=bool)], 0.0)
    assert_array_equal(dc.intercept_, 0.0)


def test_calibrated_probabilities_give_the_identity_map():
    # scores that are the true probabilities: the identity map (W = I, b = 0) is the truth, so the likelihood
    # ratio of the fit against it is chi-squared with the model's 6 free parameters (k (k + 1) less the k + 1
    # that no probability depends on); its 99.9% quantile bounds it. The fit's own loss is never above the
    # identity's.
    from scipy.stats import chi2

    rng = np.random.default_rng(13)
    n = 50000
    q = rng.dirichlet([0.7, 1.0, 1.5], size=n)
    y = (q.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    dc = DirichletCalibration().fit(q, y)
    x = np.log(q + 1e-12)
    ones = np.ones(n)
    fit_loss, _ = naive.loss_and_grad(np.c_[dc.coef_, dc.intercept_].ravel(), x, y, ones, "full", 0.0, None)
    identity_loss, _ = naive.loss_and_grad(np.c_[np.eye(3), np.zeros(3)].ravel(), x, y, ones, "full", 0.0, None)
    assert 0.0 <= 2.0 * n * (identity_loss - fit_loss) <= chi2.ppf(0.999, 6)


def test_centred_logits_still_fit_the_best_model():
    # logits whose rows sum to 0 leave W determined up to a vector added to its columns: the fit still reaches
    # the optimum (the probabilities are scikit-learn's)
    from sklearn.linear_model import LogisticRegression

    z, y, _ = _case(14, n=3000, k=4)
    zc = z - z.mean(axis=1, keepdims=True)
    ours = MatrixScaling().fit(zc, y)
    assert ours.converged_
    lr = LogisticRegression(C=np.inf, tol=1e-14, max_iter=100000).fit(zc, y)
    assert_allclose(ours.predict_proba(zc), lr.predict_proba(zc), atol=1e-5)


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 300), k=st.integers(2, 4), seed=st.integers(0, 2**32 - 1), ties=st.booleans(),
       weighted=st.booleans(), f32=st.booleans(), case=st.sampled_from(CASES))
def test_the_fit_is_a_stationary_point_of_the_objective(n, k, seed, ties, weighted, f32, case):
    kind, matrix, reg_lambda, reg_mu = case
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    if ties:
        z = np.round(z)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k) if n >= k else y[:k]
    w = rng.integers(0, 4, n).astype(float) if weighted else None
    if w is not None and w.sum() == 0:
        w[0] = 1.0
    if kind == "dirichlet":
        z = np.exp(z - z.max(axis=1, keepdims=True))
        z /= z.sum(axis=1, keepdims=True)
    X = z.astype(np.float32) if f32 else z
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = _est(kind, matrix, reg_lambda, reg_mu).fit(X, y, sample_weight=w)
    absent_warned = any("has no row of positive weight" in str(m.message) for m in caught)
    P = est.predict_proba(X)
    assert P.dtype == X.dtype and P.shape == (n, k)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1.0, atol=1e-5 if f32 else 1e-12)
    ww = np.ones(n) if w is None else w
    biases_free = matrix != "fixed_diagonal" and (reg_mu == 0.0 if reg_mu is not None else reg_lambda == 0.0)
    absent = biases_free and np.any(np.bincount(y, weights=ww, minlength=k) == 0)
    assert absent_warned == absent  # an absent class with a free bias warns
    if not est.converged_ or absent or naive_multiclass.nearly_separable(P, y, w):
        # no finite optimum: the fit stops on its decrement with parameters of up to 1e10 (one class's rows), where
        # float32 features' rounding alone moves the gradient by units
        return
    # the objective's gradient vanishes at the optimum, to the accuracy of the stopping rule (a decrement of
    # 1e-10 per unit weight: a relative gradient of about 1e-5)
    x = _features(kind, X.astype(np.float64))
    theta = (np.c_[est.coef_, est.intercept_].ravel() if matrix == "full" else
             np.r_[np.diag(est.coef_), est.intercept_] if matrix == "diagonal" else np.array([est.coef_[0, 0]]))
    _, g = naive.loss_and_grad(theta, x, y, ww, matrix, reg_lambda, reg_mu)
    scale = 1.0 + np.abs(x).max()
    assert np.abs(g).max() <= 1e-4 * scale


def test_a_parameter_that_moves_no_logit_is_a_zero_step():
    # equal probabilities in every row: the fixed-diagonal W multiplies a constant row; its Hessian and its bound
    # are 0 (hypothesis found a ZeroDivisionError in the gradient-step fallback)
    X = np.full((2, 2), 0.5)
    est = DirichletCalibration(matrix_type="fixed_diagonal").fit(X, [0, 1])
    assert est.converged_
    assert_allclose(est.predict_proba(X), 0.5, rtol=0, atol=1e-15)


@pytest.mark.parametrize("kind, matrix", [("matrix", "full"), ("dirichlet", "diagonal")])
def test_same_bits_at_any_thread_count_and_weight_scale(kind, matrix):
    X, y, rng = _case(0, n=70000, k=4, kind=kind)  # above the warm start's threshold
    w = rng.random(X.shape[0])

    def fit(ww):
        est = _est(kind, matrix, 0.01, 0.01).fit(X, y, sample_weight=ww)
        return est.coef_, est.intercept_, est.predict_proba(X[:100])

    serial, parallel = serial_and_parallel(fit, w)
    for s, p in zip(serial, parallel):
        assert_array_equal(s, p)
    for s, p in zip(serial, fit(w * 2.0**-30)):
        assert_array_equal(s, p)


@pytest.mark.parametrize("kind, matrix", [("matrix", "full"), ("dirichlet", "full"), ("dirichlet", "diagonal")])
def test_integer_weights_equal_repeated_rows(kind, matrix):
    X, y, rng = _case(1, n=500, k=3, kind=kind)
    reps = rng.integers(0, 4, X.shape[0])
    a = _est(kind, matrix).fit(X, y, sample_weight=reps.astype(float))
    b = _est(kind, matrix).fit(np.repeat(X, reps, axis=0), np.repeat(y, reps))
    assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)
    assert_allclose(a.intercept_, b.intercept_, rtol=1e-7, atol=1e-9)


def test_float32_input_keeps_its_dtype_and_fits_the_same_model():
    z, y, _ = _case(2, n=3000, k=3)
    z32 = z.astype(np.float32)
    est = MatrixScaling().fit(z32, y)
    ref = MatrixScaling().fit(z32.astype(np.float64), y)  # the same numbers: the sums run in float64 either way
    assert_allclose(est.coef_, ref.coef_, rtol=1e-12, atol=1e-13)
    assert est.predict_proba(z32).dtype == np.float32


def test_inputs_are_not_modified_and_read_only_strided_input_works():
    z, y, _ = _case(3, n=800, k=4)
    big = np.repeat(z, 2, axis=1)[:, ::2]  # non-contiguous
    big.flags.writeable = False
    before = big.copy()
    est = MatrixScaling().fit(big, y)
    assert_array_equal(big, before)
    assert_array_equal(est.predict_proba(big), MatrixScaling().fit(z, y).predict_proba(z))


def test_binary_decision_values_are_platt_scaling():
    rng = np.random.default_rng(4)
    d = rng.normal(size=2000)
    y = (rng.random(2000) < 1 / (1 + np.exp(-1.5 * d - 0.3))).astype(int)
    est = MatrixScaling().fit(d, y)
    assert est.n_classes_ == 2 and est.n_features_in_ == 1 and est.coef_.shape == (2, 1)
    W, b, _ = naive.fit(d[:, None], y)
    assert_allclose(est.coef_, W, atol=1e-6)
    assert_allclose(est.intercept_, b, atol=1e-6)
    assert_allclose(est.coef_[:, 0], [-est.coef_[1, 0], est.coef_[1, 0]])  # nearest to (-1, 1): mean 0
    with pytest.raises(ValueError, match="reg_mu: the ODIR penalty needs one column of X per class"):
        MatrixScaling(reg_mu=0.1).fit(d, y)


def test_errors_name_the_argument():
    z = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"y must hold class indices in 0 \.\. 2"):
        MatrixScaling().fit(z, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="rows of X must sum to 1"):
        DirichletCalibration().fit(np.full((4, 3), 0.5), [0, 1, 2, 0])
    with pytest.raises(ValueError, match="X holds one column; probabilities need one column per class"):
        DirichletCalibration().fit(np.full(4, 0.5), [0, 1, 1, 0])
    with pytest.raises(ValueError, match="sample_weight"):
        MatrixScaling().fit(z, [0, 1, 2, 0], sample_weight=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(fastcal.InvalidParameterError, match="matrix_type"):
        DirichletCalibration(matrix_type="lower").fit(np.full((4, 2), 0.5), [0, 1, 1, 0])
    with pytest.raises(fastcal.InvalidParameterError, match="reg_lambda"):
        MatrixScaling(reg_lambda=-1.0).fit(z, [0, 1, 2, 0])
    with pytest.raises(fastcal.InvalidParameterError, match="reg_mu"):
        MatrixScaling(reg_mu="odir").fit(z, [0, 1, 2, 0])
    est = MatrixScaling().fit(z, [0, 1, 2, 0])
    with pytest.raises(ValueError, match="X has 2 features, but MatrixScaling is expecting 3"):
        est.predict_proba(np.zeros((2, 2)))
    with pytest.raises(fastcal.NotFittedError):
        DirichletCalibration().predict_proba(np.full((2, 2), 0.5))


@pytest.mark.parametrize("kind, matrix", [("matrix", "full"), ("dirichlet", "full"), ("dirichlet", "diagonal"),
                                          ("dirichlet", "fixed_diagonal")])
def test_model_files_round_trip(kind, matrix, tmp_path):
    X, y, _ = _case(5, n=600, k=4, kind=kind)
    est = _est(kind, matrix, 0.01, 0.01).fit(X, y)
    path = tmp_path / "m.json"
    est.save(path)
    loaded = fastcal.load(path)
    assert type(loaded) is type(est) and loaded.get_params() == est.get_params()
    assert_array_equal(loaded.predict_proba(X), est.predict_proba(X))


def test_a_model_file_with_an_off_diagonal_entry_for_a_diagonal_type_is_refused(tmp_path):
    import json

    X, y, _ = _case(5, n=600, k=3, kind="dirichlet")
    path = tmp_path / "m.json"
    DirichletCalibration(matrix_type="diagonal").fit(X, y).save(path)
    doc = json.loads(path.read_text())
    doc["state"]["coef_"]["data"][1] = 0.5
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="needs a diagonal coef_"):
        fastcal.load(path)


def test_no_allocation_grows_with_rows_times_classes_squared():
    # the fit's memory beyond its input is O(k^4) per chunk of rows (the Hessian's sums), never O(n k^2)
    z, y, _ = _case(9, n=200000, k=8)
    tracemalloc.start()
    try:
        MatrixScaling().fit(z, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # the copies a fit makes: the labels (int64), the warm start's 1/16 subsample, the temperature start's
    # (n, k) scratch; an (n, k, k) array would be 8x the input
    assert peak < 2.5 * z.nbytes
