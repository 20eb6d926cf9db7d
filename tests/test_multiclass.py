"""Vector scaling and bias-corrected temperature scaling against abstention (Alexandari et al.'s code), a naive
SciPy reference, and their invariants."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import BiasCorrectedTemperatureScaling, VectorScaling

from . import naive_multiclass as naive
from .threads import serial_and_parallel

with warnings.catch_warnings():  # abstention imports scipy.misc, deprecated
    warnings.simplefilter("ignore", DeprecationWarning)
    from abstention.calibration import TempScaling, VectorScaling as AbstentionVectorScaling

FAMILIES = {VectorScaling: "vector", BiasCorrectedTemperatureScaling: "bcts"}


def _case(seed, n=None, k=None):
    """A miscalibrated model's logits: softmax(s * z + c) is the truth, for a random scale s and biases c."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(300, 4000)) if n is None else n
    k = int(rng.integers(2, 7)) if k is None else k
    z = rng.normal(size=(n, k)) * rng.uniform(0.5, 3.0)
    p = np.exp(rng.uniform(0.3, 2.0) * z + rng.normal(size=k) * 0.5)
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return z, y, rng


def _loss(P, y):
    return -np.mean(np.log(P[np.arange(len(y)), y]))


def _abstention(cls, **kwargs):
    if cls is VectorScaling:
        return AbstentionVectorScaling(**kwargs)
    return TempScaling(bias_positions="all", **kwargs)


def _params(est):
    a = est.scales_ if isinstance(est, VectorScaling) else np.full(est.n_classes_, est.beta_)
    return a, est.biases_


@pytest.mark.slow  # a peer on 20 cases: once per `make test`
@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
@pytest.mark.parametrize("seed", range(20))
def test_abstention_stops_early_and_its_loss_is_no_lower(cls, seed):
    z, y, _ = _case(seed)
    ours = cls().fit(z, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # abstention's exp overflows on its line search
        theirs = _abstention(cls)(z, np.eye(z.shape[1])[y])
    # our optimum is the minimiser: its loss is at most theirs, to the rounding of the mean of n losses
    assert _loss(ours.predict_proba(z), y) <= _loss(theirs(z), y) + 1e-13


@pytest.mark.slow
@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("posteriors", [False, True], ids=["logits", "probabilities"])
def test_abstention_solved_tightly_gives_the_same_probabilities(cls, seed, posteriors):
    z, y, _ = _case(seed)
    X = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True) if posteriors else z
    tight = {"options": {"ftol": 1e-15, "gtol": 1e-9, "maxiter": 15000}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = _abstention(cls, lbfgs_kwargs=tight)(X, np.eye(z.shape[1])[y], posterior_supplied=posteriors)
    ours = cls().fit(X, y)
    # L-BFGS to a gradient of 1e-9 leaves the probabilities about 1e-8 from the optimum (measured: 1e-11 .. 3e-8)
    assert_allclose(ours.predict_proba(X), theirs(X), atol=1e-6, rtol=0)


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
@pytest.mark.parametrize("seed", range(10))
def test_parameters_equal_the_naive_reference(cls, seed):
    z, y, rng = _case(seed)
    w = rng.random(z.shape[0]) if seed % 2 else None
    ours = cls().fit(z, y, sample_weight=w)
    a, b, _ = naive.fit(z, y, w, FAMILIES[cls])
    oa, ob = _params(ours)
    # BFGS to a gradient of 1e-12 of the mean loss: the parameters within about 1e-9 (measured), asked 1e-6
    assert_allclose(oa, a, atol=1e-6, rtol=1e-6)
    assert_allclose(ob, b, atol=1e-6, rtol=1e-6)
    assert abs(ob.sum()) <= 1e-12 * max(1.0, np.abs(ob).max()) * len(ob)
    assert_allclose(ours.predict_proba(z), naive.predict(z, *_params(ours)), rtol=1e-12, atol=1e-15)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 300), k=st.integers(2, 5), seed=st.integers(0, 2**32 - 1),
       ties=st.booleans(), weighted=st.booleans(), f32=st.booleans(), cls=st.sampled_from(list(FAMILIES)))
def test_the_fit_is_a_stationary_point_of_the_loss(n, k, seed, ties, weighted, f32, cls):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    if ties:
        z = np.round(z)
    y = rng.integers(0, k, n)
    y[:k] = np.arange(k) if n >= k else y[:k]
    w = rng.integers(0, 4, n).astype(float) if weighted else None
    if w is not None and w.sum() == 0:
        w[0] = 1.0
    X = z.astype(np.float32) if f32 else z
    ww = np.ones(n) if w is None else w
    absent = np.bincount(y, weights=ww, minlength=k) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", fastcal.ConvergenceWarning)
        if absent.any():  # a class without weight: its bias has no finite optimum, and a warning says so
            with pytest.warns(UserWarning, match="has no row of positive weight"):
                est = cls().fit(X, y, sample_weight=w)
        else:
            est = cls().fit(X, y, sample_weight=w)
    P = est.predict_proba(X)
    assert P.dtype == X.dtype and P.shape == (n, k)
    assert np.all(np.isfinite(P)) and np.allclose(P.sum(axis=1), 1.0, atol=1e-5 if f32 else 1e-12)
    if not est.converged_ or absent.any():  # a class that never occurs (or separable rows): the optimum is at infinity
        return
    # the mean gradient in the biases vanishes at the optimum: sum_i w_i (p_ij - [y_i = j]) = 0 for every j,
    # to the accuracy of the stopping rule (decrement 1e-10 per unit weight: gradient about 1e-5 relative)
    g = ((P.astype(np.float64) - np.eye(k)[y]) * ww[:, None]).sum(axis=0) / ww.sum()
    assert np.abs(g).max() <= 1e-4


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_same_bits_at_any_thread_count_and_weight_scale(cls):
    z, y, rng = _case(0, n=70000, k=4)  # above the warm start's threshold
    w = rng.random(z.shape[0])
    serial, parallel = serial_and_parallel(lambda: _params(cls().fit(z, y, sample_weight=w)))
    for s, p in zip(serial, parallel):
        assert_array_equal(s, p)
    scaled = _params(cls().fit(z, y, sample_weight=w * 2.0**-30))
    for s, p in zip(serial, scaled):
        assert_array_equal(s, p)


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_integer_weights_equal_repeated_rows(cls):
    z, y, rng = _case(1, n=500, k=3)
    reps = rng.integers(0, 4, z.shape[0])
    a = cls().fit(z, y, sample_weight=reps.astype(float))
    b = cls().fit(np.repeat(z, reps, axis=0), np.repeat(y, reps))
    for pa, pb in zip(_params(a), _params(b)):
        assert_allclose(pa, pb, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_float32_input_keeps_its_dtype_and_fits_the_same_model(cls):
    z, y, _ = _case(2, n=3000, k=3)
    z32 = z.astype(np.float32)
    est = cls().fit(z32, y)
    ref = cls().fit(z32.astype(np.float64), y)  # the same numbers: the sums run in float64 either way
    for a, b in zip(_params(est), _params(ref)):
        assert_allclose(a, b, rtol=1e-12, atol=1e-13)
    assert est.predict_proba(z32).dtype == np.float32


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_inputs_are_not_modified_and_read_only_strided_input_works(cls):
    z, y, _ = _case(3, n=800, k=4)
    big = np.repeat(z, 2, axis=1)[:, ::2]  # non-contiguous
    big.flags.writeable = False
    before = big.copy()
    est = cls().fit(big, y)
    assert_array_equal(big, before)
    assert_array_equal(est.predict_proba(big), cls().fit(z, y).predict_proba(z))


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_errors_name_the_argument(cls):
    z = np.zeros((4, 3))
    with pytest.raises(ValueError, match=r"y must hold class indices in 0 \.\. 2"):
        cls().fit(z, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="y must hold integer class indices"):
        cls().fit(z, [0, 1, 0.5, 1])
    with pytest.raises(ValueError, match="rows of X must sum to 1"):
        cls(input_type="probabilities").fit(np.full((4, 3), 0.5), [0, 1, 2, 0])
    with pytest.raises(ValueError, match="sample_weight"):
        cls().fit(z, [0, 1, 2, 0], sample_weight=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="X must be finite|X .*NaN|NaN"):
        cls().fit(np.full((4, 3), np.nan), [0, 1, 2, 0])
    est = cls().fit(z, [0, 1, 2, 0])
    with pytest.raises(ValueError, match=f"X has 2 features, but {cls.__name__} is expecting 3"):
        est.predict_proba(np.zeros((2, 2)))
    with pytest.raises(fastcal.NotFittedError):
        cls().predict_proba(z)


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_binary_decision_values_are_two_class_logits(cls):
    rng = np.random.default_rng(4)
    d = rng.normal(size=2000)
    y = (rng.random(2000) < 1 / (1 + np.exp(-1.5 * d - 0.3))).astype(int)
    est = cls().fit(d, y)
    assert est.n_classes_ == 2 and est.n_features_in_ == 1
    assert_allclose(est.predict_proba(d), cls().fit(np.c_[-d, d], y).predict_proba(np.c_[-d, d]), rtol=1e-12)


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_model_files_round_trip(cls, tmp_path):
    z, y, _ = _case(5, n=600, k=4)
    est = cls().fit(z, y)
    path = tmp_path / "m.json"
    est.save(path)
    loaded = fastcal.load(path)
    assert type(loaded) is cls
    assert_array_equal(loaded.predict_proba(z), est.predict_proba(z))


@pytest.mark.parametrize("cls", list(FAMILIES), ids=lambda c: c.__name__)
def test_logits_of_any_magnitude_fit_the_same_model(cls):
    # from 1e5 on, the identity map saturates every probability: the fit starts where temperature scaling's
    # bracketed solver (or 1 / spread) puts it; above 1e100 the Hessian's sums would overflow: a clear error
    z, y, _ = _case(7, n=2000, k=3)
    ref = cls().fit(z, y)
    for s in (1e5, 1e6, 1e50):
        est = cls().fit(z * s, y)
        assert est.converged_
        (ea, eb), (ra, rb) = _params(est), _params(ref)
        assert_allclose(ea * s, ra, rtol=1e-6)  # both fits to the stopping rule's accuracy
        assert_allclose(eb, rb, atol=1e-6)
    with pytest.raises(ValueError, match="X: the logits reach .* in magnitude"):
        cls().fit(z * 1e160, y)


def test_an_absent_class_warns():
    z, y, _ = _case(8, n=500, k=3)
    with pytest.warns(UserWarning, match="class 2 has no row of positive weight"):
        VectorScaling().fit(z, np.where(y == 2, 0, y))


def test_bcts_without_biases_needed_is_temperature_scaling():
    # logits whose best biases are 0 by symmetry (the classes' columns permuted cyclically): BCTS's beta is
    # temperature scaling's
    z, y, _ = _case(6, n=2000, k=3)
    zz = np.concatenate([np.roll(z, s, axis=1) for s in range(3)])
    yy = np.concatenate([(y + s) % 3 for s in range(3)])
    bcts = BiasCorrectedTemperatureScaling().fit(zz, yy)
    ts = fastcal.TemperatureScaling(input_type="logits").fit(zz, yy)
    assert_allclose(bcts.biases_, 0.0, atol=1e-10)
    assert_allclose(bcts.beta_, ts.beta_, rtol=1e-8)


_AUTO = [fastcal.TemperatureScaling, VectorScaling, BiasCorrectedTemperatureScaling, fastcal.MatrixScaling]


@pytest.mark.parametrize("cls", _AUTO, ids=lambda c: c.__name__)
def test_auto_reads_every_batch_as_the_fit_read_its_rows(cls, tmp_path):
    # "auto" is decided once, on the fit's rows: a batch of logits that happen to look like probabilities (a row
    # (0.6, 0.4, 0.0)) is read as logits after a fit on logits, whatever rows it comes with, and after a fit on
    # probabilities a batch that is not probabilities is an error, not another reading
    z, y, _ = _case(11, n=2000, k=3)
    on_logits = cls().fit(z, y)
    assert on_logits.input_type_ == "logits"
    row = np.array([[0.6, 0.4, 0.0]])
    alone = on_logits.predict_proba(row)
    assert_array_equal(alone, on_logits.predict_proba(np.r_[row, [[2.0, -1.0, 0.5]]])[:1])
    assert_array_equal(alone, cls(input_type="logits").fit(z, y).predict_proba(row))
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    on_probabilities = cls().fit(p, y)
    assert on_probabilities.input_type_ == "probabilities"
    assert_array_equal(on_probabilities.predict_proba(p), cls(input_type="probabilities").fit(p, y).predict_proba(p))
    with pytest.raises(ValueError, match=r"X must hold probabilities in \[0, 1\] \(the fit read X as probabilities "
                                         r"\(input_type='auto'\)\)"):
        on_probabilities.predict_proba(np.r_[row, [[2.0, -1.0, 0.5]]])
    with pytest.raises(ValueError, match=r"rows of X must sum to 1 .*\(input_type='probabilities'\)"):
        cls(input_type="probabilities").fit(p, y).predict_proba(row * 0.5)
    for est in (on_logits, on_probabilities):  # model files keep the reading
        est.save(tmp_path / "m.json")
        assert fastcal.load(tmp_path / "m.json").input_type_ == est.input_type_
    state = on_logits.to_dict()
    for param, stored in (("auto", "logit"), ("logits", "probabilities"), ("probabilities", "auto")):
        bad = {**state, "params": {**state["params"], "input_type": param},
               "state": {**state["state"], "input_type_": stored}}
        with pytest.raises(ValueError, match="invalid fastcal model: input_type_ must be one of"):
            cls.from_dict(bad)


def test_dirichlet_reads_probabilities_and_says_so():
    z, y, _ = _case(12, n=2000, k=3)
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    est = fastcal.DirichletCalibration().fit(p, y)
    assert est.input_type_ == "probabilities"
    with pytest.raises(ValueError, match=r"X must hold probabilities in \[0, 1\] \(DirichletCalibration reads "
                                         r"probabilities\)"):
        est.predict_proba(z)


def test_temperature_files_of_0_1_0_read_each_batch_anew():
    # fastcal 0.1.0 wrote no input_type_, and its "auto" read each batch anew: such a file still does; its other
    # readings are the parameter's
    z, y, _ = _case(13, n=2000, k=3)
    row = np.array([[0.6, 0.4, 0.0]])
    for param in ("auto", "logits"):
        est = fastcal.TemperatureScaling(input_type=param).fit(z, y)
        old = est.to_dict()
        del old["state"]["input_type_"]
        loaded = fastcal.TemperatureScaling.from_dict(old)
        assert loaded.input_type_ == param
        logit_reading = np.exp(est.beta_ * row) / np.exp(est.beta_ * row).sum()
        q = np.log(row + 1e-12) * est.beta_
        probability_reading = np.exp(q) / np.exp(q).sum()
        assert_allclose(loaded.predict_proba(row), probability_reading if param == "auto" else logit_reading,
                        rtol=1e-12)
    with pytest.raises(ValueError, match="VectorScaling state must have exactly the fields"):
        old = VectorScaling().fit(z, y).to_dict()
        del old["state"]["input_type_"]
        VectorScaling.from_dict(old)


@pytest.mark.parametrize("cal, probabilities, one_column", [
    (fastcal.TemperatureScaling(), False, False), (fastcal.TemperatureScaling(), False, True),
    (VectorScaling(), True, False), (VectorScaling(), False, True), (BiasCorrectedTemperatureScaling(), True, False),
    (fastcal.MatrixScaling(reg_lambda=0.01, reg_mu=0.01), False, False), (fastcal.MatrixScaling(), False, True),
    (fastcal.DirichletCalibration(), True, False), (fastcal.DirichletCalibration(matrix_type="diagonal"), True, False),
], ids=repr)
def test_prediction_data_is_what_predict_proba_computes(cal, probabilities, one_column, tmp_path):
    # A NumPy evaluation of the model's Softmax data (what fastcal.spark.predict_proba writes in SQL) against
    # predict_proba: the same float64 operations in another order, so within a few eps of the logits' terms; also
    # for a model read from a file (which keeps no n_features_in_).
    z, y, _ = _case(14, n=3000, k=2 if one_column else 4)
    X = z[:, 1] - z[:, 0] if one_column else z
    if probabilities:
        X = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    model = cal.fit(X, y)
    model.save(tmp_path / "m.json")
    for m in (model, fastcal.load(tmp_path / "m.json")):
        data = m.prediction_data()
        assert data.reading == ("probabilities" if probabilities else "logits") and data.coef.shape == (m.n_classes_,) * 2
        q, a = naive.softmax_of_data(data, X)
        assert np.all(np.abs(m.predict_proba(X) - q) <= 16 * np.finfo(np.float64).eps * (1 + a))
    with pytest.raises(fastcal.NotFittedError):
        type(cal)(**cal.get_params()).prediction_data()
