"""Label shift estimation against abstention (Alexandari et al.'s code), the paper's main finding, the bootstrap
intervals' coverage, and the errors."""

import warnings
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from benchmarks import label_shift_study as study

from fastcal.label_shift._rlls import rlls_theta

from . import naive_label_shift as naive
from .threads import serial_and_parallel

with warnings.catch_warnings():  # abstention imports scipy.misc, deprecated
    warnings.simplefilter("ignore", DeprecationWarning)
    from abstention.calibration import TempScaling
    from abstention.label_shift import BBSEImbalanceAdapter, EMImbalanceAdapter

K = 4


def _case(seed):
    """A miscalibrated model on a uniform source sample and a Dirichlet-shifted target sample."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 6))
    ns, nt = (int(v) for v in rng.integers(1000, 5000, 2))
    ys, ps = study.sample(np.full(k, 1.0 / k), ns, rng)
    truth = rng.dirichlet(np.ones(k) * 2)
    _, pt = study.sample(truth, nt, rng)
    return ys, ps, pt, truth


@pytest.mark.slow  # a peer on 20 cases: once per `make test`
@pytest.mark.parametrize("seed", range(20))
def test_em_on_bcts_equals_abstentions_em_on_its_bcts(seed):
    ys, ps, pt, _ = _case(seed)
    k = ps.shape[1]
    onehot = np.eye(k)[ys]
    tight = {"options": {"ftol": 1e-15, "gtol": 1e-10, "maxiter": 15000}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        calibrate = TempScaling(bias_positions="all", lbfgs_kwargs=tight)(ps, onehot, posterior_supplied=True)
    # abstention's EMImbalanceAdapter(calibrator_factory=...) iterates on the uncalibrated target posteriors (0.1.3.1:
    # it takes them before calibrating): calibrate first, then its EM, from the source's class frequencies
    em = EMImbalanceAdapter(estimate_priors_from_valid_labels=True, tolerance=1e-13, max_iterations=100000)
    adapter = em(tofit_initial_posterior_probs=calibrate(pt), valid_posterior_probs=calibrate(ps), valid_labels=onehot)
    source = onehot.mean(axis=0)
    ours = fastcal.estimate_label_shift(ys, ps, pt, tol=1e-12)
    # their BCTS to a gradient of 1e-10 leaves the posteriors ~1e-8 from ours; the EM's fixed point moves as much
    assert_allclose(ours.priors, adapter.multipliers * source, atol=1e-6, rtol=0)
    assert_allclose(ours.source_priors, source, rtol=1e-15)
    assert_allclose(ours.weights, ours.priors / source, rtol=1e-15)


@pytest.mark.slow  # a peer on 20 cases: once per `make test`
@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
@pytest.mark.parametrize("seed", range(20))
def test_bbse_equals_abstentions(seed, soft):
    ys, ps, pt, _ = _case(seed)
    k = ps.shape[1]
    theirs = BBSEImbalanceAdapter(soft=soft)(valid_labels=np.eye(k)[ys], tofit_initial_posterior_probs=pt,
                                             valid_posterior_probs=ps)
    priors = theirs.multipliers * np.bincount(ys, minlength=k) / len(ys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = fastcal.estimate_label_shift(ys, ps, pt, method="bbse-soft" if soft else "bbse")
    # a k x k solve of the same means: rounding only (measured: 1e-16)
    assert_allclose(ours.priors, priors / priors.sum(), atol=1e-12, rtol=0)
    assert ours.n_iter == 0 and ours.converged
    assert ours.calibrator is None


@pytest.mark.slow  # SLSQP from three starts, 40 times: once per `make test`
@pytest.mark.parametrize("seed", range(20))
def test_rlls_solves_its_cone_program(seed):
    # a random confusion matrix and prediction frequencies, with the paper's Delta and a larger one; the reference
    # is SLSQP on the epigraph form, from three starts
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 7))
    C = np.diag(rng.uniform(0.5, 1.0, k)) + rng.uniform(0.0, 0.3, (k, k))
    C /= C.sum()
    b = C @ rng.uniform(0.0, 3.0, k) + rng.normal(0.0, 0.01, k) - C.sum(axis=1)
    for delta in (naive.rlls_delta(k, 2000), 0.05):
        ours = rlls_theta(C, b, delta)
        ref, success = naive.rlls_theta(C, b, delta)
        assert np.all(ours >= -1.0)
        assert naive.rlls_objective(C, b, delta, ours) <= naive.rlls_objective(C, b, delta, ref) + 1e-9
        if success:
            # both within ~1e-8 of the optimum (measured)
            assert_allclose(ours, ref, atol=1e-6, rtol=0)
    # theta = 0 is optimal exactly when 0 is a subgradient there: ||C^T b|| <= Delta ||b|| (no shift detected)
    zero = np.linalg.norm(C.T @ b) / np.linalg.norm(b)
    assert_allclose(rlls_theta(C, b, 1.01 * zero), 0.0, atol=1e-9)
    assert np.abs(rlls_theta(C, b, 0.9 * zero)).max() > 1e-6


@pytest.mark.slow  # SLSQP: once per `make test`
@pytest.mark.parametrize("soft", [False, True], ids=["hard", "soft"])
@pytest.mark.parametrize("seed", range(5))
def test_rlls_priors_from_the_naive_statistics(seed, soft):
    ys, ps, pt, _ = _case(seed)
    k = ps.shape[1]
    onehot = np.eye(k)[ys]
    pred_s = ps if soft else np.eye(k)[ps.argmax(axis=1)]
    C = pred_s.T @ onehot / len(ys)
    mu = (pt if soft else np.eye(k)[pt.argmax(axis=1)]).mean(axis=0)
    theta, success = naive.rlls_theta(C, mu - C.sum(axis=1), naive.rlls_delta(k, len(ys)))
    source = onehot.mean(axis=0)
    priors = np.maximum(1.0 + theta, 0.0) * source
    ours = fastcal.estimate_label_shift(ys, ps, pt, method="rlls-soft" if soft else "rlls")
    if success:
        assert_allclose(ours.priors, priors / priors.sum(), atol=1e-6, rtol=0)


def test_the_papers_finding_em_on_bcts_beats_bbse_and_uncalibrated_em():
    # Alexandari et al. (2020): calibrated with class-wise biases, EM is hard to beat; uncalibrated, it loses.
    # Measured on 50 shifts (python -m benchmarks.label_shift_study): 0.0074 against 0.0099-0.0117 and 0.077.
    mae = study.errors(50, seed=0, n_source=3000, n_target=3000)
    em = mae["EM on BCTS"]
    assert em < mae["BBSE (hard)"] and em < mae["BBSE (soft)"], mae
    assert em < 0.5 * mae["EM uncalibrated"], mae


def test_the_guide_states_the_studys_numbers():
    text = " ".join((Path(__file__).resolve().parent.parent / "docs" / "user_guide" / "label_shift.md").read_text().split())
    assert study.guide_sentences(study.errors(50), study.coverage(100)) in text


def test_bbse_intervals_cover_the_true_priors():
    # 200 shifts x 5 classes, nominal 95%: at least 90% covered (measured 94.6% on 100 shifts)
    assert study.coverage(200, "bbse", n_bootstrap=200, seed=3) >= 0.90


@pytest.mark.slow
def test_em_intervals_cover_the_true_priors():
    # the row bootstrap, refitting BCTS each time: fewer shifts (each is 100 fits)
    assert study.coverage(40, "em", n_bootstrap=100, seed=4, n_source=2000, n_target=2000, calibrator="bcts") >= 0.90


def test_intervals_hold_the_estimate_and_follow_the_seed():
    ys, ps, pt, _ = _case(1)
    for method in ("em", "bbse", "bbse-soft", "rlls", "rlls-soft"):
        a = fastcal.estimate_label_shift(ys, ps, pt, method=method, n_bootstrap=30, random_state=7)
        b = fastcal.estimate_label_shift(ys, ps, pt, method=method, n_bootstrap=30, random_state=7)
        assert_array_equal(a.priors_low, b.priors_low)
        assert np.all(a.priors_low <= a.priors_high)
        assert np.all(a.priors_low <= a.priors + 0.05) and np.all(a.priors - 0.05 <= a.priors_high)
    assert fastcal.estimate_label_shift(ys, ps, pt).priors_low is None


def test_no_shift_gives_the_source_priors_back():
    rng = np.random.default_rng(5)
    ys, ps = study.sample(np.full(K, 1 / K), 20000, rng)
    for method in ("em", "bbse", "bbse-soft", "rlls", "rlls-soft"):
        res = fastcal.estimate_label_shift(ys, ps, ps, method=method, tol=1e-12)
        # the target is the source: BBSE's C^-1 mu is 1 exactly (up to the solve's rounding); EM's fixed point is
        # the calibrated posteriors' mean, which BCTS's bias terms make the class frequencies (to its tolerance)
        assert_allclose(res.priors, res.source_priors, atol=1e-12 if method != "em" else 1e-6)


def test_same_bits_at_any_thread_count():
    ys, ps, pt, _ = _case(2)
    serial, parallel = serial_and_parallel(lambda: fastcal.estimate_label_shift(ys, ps, pt).priors)
    assert_array_equal(serial, parallel)


def test_a_calibrator_object_is_copied_not_fitted():
    ys, ps, pt, _ = _case(3)
    mine = fastcal.VectorScaling(tol=1e-12)
    res = fastcal.estimate_label_shift(ys, ps, pt, calibrator=mine)
    assert not hasattr(mine, "scales_") and isinstance(res.calibrator, fastcal.VectorScaling)
    assert res.calibrator.tol == 1e-12
    assert_allclose(res.priors, fastcal.estimate_label_shift(ys, ps, pt, calibrator="vector").priors, atol=1e-6)


def test_rows_summing_to_one_within_the_tolerance_are_renormalised():
    # a row 5e-5 off is accepted (fastcal.prior.SUM_TOL) and read as the probabilities it is, for every method
    ys, ps, pt, _ = _case(8)
    off = pt.copy()
    off[0] *= 1 + 5e-5
    before = off.copy()
    for method in ("em", "bbse", "rlls-soft"):
        assert_allclose(fastcal.estimate_label_shift(ys, ps, off, method=method).priors,
                        fastcal.estimate_label_shift(ys, ps, pt, method=method).priors, atol=1e-6)
    assert_array_equal(off, before)


def test_any_estimator_as_calibrator_and_plain_to_dict():
    import json

    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    ys, ps, pt, _ = _case(9)
    mine = make_pipeline(StandardScaler(), LogisticRegression())
    res = fastcal.estimate_label_shift(ys, ps, pt, calibrator=mine)
    assert not hasattr(mine[-1], "coef_")  # the caller's pipeline, steps included, is never fitted
    assert hasattr(res.calibrator[-1], "coef_")
    plain = res.to_dict()
    assert json.loads(json.dumps(plain)) == plain and plain["calibrator"].startswith("Pipeline(")
    assert isinstance(fastcal.estimate_label_shift(ys, ps, pt).to_dict()["calibrator"], dict)  # a model file


def test_failed_bootstrap_replicates_are_counted():
    rng = np.random.default_rng(10)
    ys, ps = study.sample(np.array([0.49, 0.49, 0.02]), 150, rng)  # 3 rows of class 2: some replicates lack it
    _, pt = study.sample(np.array([0.3, 0.3, 0.4]), 500, rng)
    with pytest.warns(UserWarning, match=r"\d+ of 100 bootstrap replicates have no estimate"):
        res = fastcal.estimate_label_shift(ys, ps, pt, method="bbse-soft", n_bootstrap=100, random_state=0)
    assert np.all(np.isfinite(res.priors_low)) and np.all(res.priors_low <= res.priors_high)


def test_an_ill_conditioned_confusion_matrix_warns():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 3000)
    p = np.empty((3000, 3))
    p[:, 0] = 0.2 + 0.6 * (y == 0)
    p[:, 1] = (1.0 - p[:, 0]) / 2 + 1e-3 * ((y == 1) - 1.0 * (y == 2))  # classes 1 and 2 look alike
    p[:, 2] = 1.0 - p[:, 0] - p[:, 1]
    with pytest.warns(UserWarning, match="condition number"):
        res = fastcal.estimate_label_shift(y, p, p, method="bbse-soft")
    assert res.condition_number > 100


def test_errors_name_the_argument():
    ys, ps, pt, _ = _case(4)
    k = ps.shape[1]
    with pytest.raises(ValueError, match="at least 2 classes"):
        fastcal.estimate_label_shift(np.zeros(5, int), np.ones((5, 1)), np.ones((5, 1)))
    with pytest.raises(ValueError, match=r"y_source must hold class indices in 0 \.\. .* column of proba_source"):
        fastcal.estimate_label_shift(ys + k, ps, pt)
    with pytest.raises(ValueError, match="rows of proba_target must sum to 1"):
        fastcal.estimate_label_shift(ys, ps, pt * 0.5)
    with pytest.raises(ValueError, match="proba_target has"):
        fastcal.estimate_label_shift(ys, ps, pt[:, :-1] / pt[:, :-1].sum(axis=1, keepdims=True))
    with pytest.raises(ValueError, match="y_source has no row of class"):
        fastcal.estimate_label_shift(np.minimum(ys, k - 2), ps, pt)
    with pytest.raises(ValueError, match="method"):
        fastcal.estimate_label_shift(ys, ps, pt, method="rlls-typo")
    with pytest.raises(TypeError, match="calibrator must be"):
        fastcal.estimate_label_shift(ys, ps, pt, calibrator=object())
    with pytest.raises(ValueError, match="proba_source must be a 2-D array"):
        fastcal.estimate_label_shift(ys, ps[:, 0], pt)
