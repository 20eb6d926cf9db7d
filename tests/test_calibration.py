"""CalibratedClassifierCV against scikit-learn's, and nested cross-validated evaluation."""

import pickle

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV as SkCalibratedClassifierCV
from sklearn.datasets import make_classification
from sklearn.ensemble import RandomForestClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import KFold
from sklearn.naive_bayes import GaussianNB
from sklearn.svm import LinearSVC

import fastcal
from fastcal.calibration import CalibratedClassifierCV, cross_val_calibration_report

TOL = {"sigmoid": 1e-5, "isotonic": 1e-8, "temperature": 1e-5}


def data(n_classes, n=600, seed=0):
    return make_classification(n_samples=n, n_features=8, n_informative=5, n_redundant=1,
                               n_classes=n_classes, n_clusters_per_class=1, random_state=seed)


ESTIMATORS = {
    "LinearSVC": LinearSVC(random_state=0),
    "GaussianNB": GaussianNB(),
    "RandomForest": RandomForestClassifier(n_estimators=20, random_state=0),
}


@pytest.mark.parametrize("method", ["sigmoid", "isotonic", "temperature"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("name", list(ESTIMATORS))
@pytest.mark.parametrize("ensemble", [True, False])
def test_same_predictions_as_sklearn(method, n_classes, name, ensemble):
    X, y = data(n_classes)
    X_test, _ = data(n_classes, n=200, seed=1)
    est = ESTIMATORS[name]
    ours = CalibratedClassifierCV(clone(est), method=method, cv=3, ensemble=ensemble).fit(X, y)
    theirs = SkCalibratedClassifierCV(clone(est), method=method, cv=3, ensemble=ensemble).fit(X, y)
    assert_array_equal(ours.classes_, theirs.classes_)
    assert len(ours.calibrated_classifiers_) == len(theirs.calibrated_classifiers_)
    assert_allclose(ours.predict_proba(X_test), theirs.predict_proba(X_test), rtol=0, atol=TOL[method])


@pytest.mark.parametrize("method", ["sigmoid", "isotonic", "temperature"])
def test_frozen_estimator_and_weights_like_sklearn(method):
    X, y = data(2)
    w = np.random.default_rng(0).uniform(0.5, 2.0, len(y))
    model = LogisticRegression().fit(X[:300], y[:300])
    # Both warn that a frozen estimator does not take the weights.
    with pytest.warns(UserWarning, match="does not appear to accept sample_weight"):
        ours = CalibratedClassifierCV(FrozenEstimator(model), method=method).fit(X[300:], y[300:],
                                                                                 sample_weight=w[300:])
    with pytest.warns(UserWarning, match="does not appear to accept sample_weight"):
        theirs = SkCalibratedClassifierCV(FrozenEstimator(model), method=method).fit(X[300:], y[300:],
                                                                                     sample_weight=w[300:])
    assert len(ours.calibrated_classifiers_) == 1
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=TOL[method])
    assert_array_equal(ours.predict(X), theirs.predict(X))


def test_string_labels_and_pickle():
    X, y = data(3)
    labels = np.array(["ant", "bee", "cat"])[y]
    ours = CalibratedClassifierCV(GaussianNB(), method="temperature", cv=3).fit(X, labels)
    theirs = SkCalibratedClassifierCV(GaussianNB(), method="temperature", cv=3).fit(X, labels)
    assert_allclose(ours.predict_proba(X), theirs.predict_proba(X), atol=1e-5)
    assert set(ours.predict(X)) <= set(labels)
    restored = pickle.loads(pickle.dumps(ours))
    assert_array_equal(restored.predict_proba(X), ours.predict_proba(X))


def test_prior_correction():
    X, y = data(2, n=2000)
    base = CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=3).fit(X, y)
    rate = CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=3, prior_correction=0.25).fit(X, y)
    p, q = base.predict_proba(X)[:, 1], rate.predict_proba(X)[:, 1]
    assert_allclose(q, fastcal.correct_negative_sampling(p, 0.25), rtol=1e-12)
    assert_allclose(rate.predict_proba(X).sum(axis=1), 1.0)
    priors = CalibratedClassifierCV(GaussianNB(), method="isotonic", cv=3, prior_correction=[0.9, 0.1]).fit(X, y)
    assert_allclose(priors.predict_proba(X),
                    fastcal.adjust_priors(base.predict_proba(X), base.train_priors_, np.array([0.9, 0.1])),
                    rtol=1e-12)
    assert priors.predict_proba(X)[:, 1].mean() < p.mean()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(method="bayes"), "method must be .sigmoid., .isotonic., .temperature., .beta., .histogram., "
                               ".centered_isotonic., .venn_abers., .vector., .bcts., .matrix. or .dirichlet.."),
        (dict(ensemble="yes"), "ensemble must be"),
        (dict(prior_correction=1.5), r"rate must be in \(0, 1\]"),
        (dict(prior_correction=[0.2, 0.3, 0.5]), "2 class priors"),
    ],
)
def test_bad_parameters(kwargs, match):
    X, y = data(2)
    with pytest.raises(ValueError, match=match):
        CalibratedClassifierCV(GaussianNB(), **kwargs).fit(X, y)


@pytest.mark.parametrize("method", ["sigmoid", "isotonic"])
@pytest.mark.parametrize("name", ["GaussianNB", "LogisticRegression"])
def test_class_missing_from_a_fold_as_sklearn(method, name):
    # Unshuffled KFold on sorted labels: each fold's training part lacks a class. scikit-learn
    # fits anyway (a class a fold never saw gets probability 0 there); so does fastcal, equally.
    X, y = data(3, n=90)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]
    est = GaussianNB() if name == "GaussianNB" else LogisticRegression()
    ours = CalibratedClassifierCV(est, method=method, cv=KFold(3)).fit(X, y)
    ref = SkCalibratedClassifierCV(est, method=method, cv=KFold(3)).fit(X, y)
    assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=TOL[method])
    assert_allclose(ours.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)


def test_class_missing_from_a_fold_with_temperature_is_a_clear_error():
    X, y = data(3, n=90)
    order = np.argsort(y, kind="stable")
    with pytest.raises(ValueError, match="method='temperature' needs every class in every fold, but class 0 is "
                                         "missing from the training part of fold 0"):
        CalibratedClassifierCV(GaussianNB(), method="temperature", cv=KFold(3)).fit(X[order], y[order])


class _RecordsFitParams(GaussianNB):
    """A classifier that keeps the per-sample fit parameter it was given (without checking its length)."""

    def fit(self, X, y, sample_weight=None, tag=None, scale=1.0):
        self.tag_ = None if tag is None else np.asarray(tag)
        self.scale_ = scale
        return super().fit(X, y, sample_weight)


@pytest.mark.parametrize("ensemble", [True, False])
def test_per_sample_fit_params_are_cut_to_each_fold(ensemble):
    X, y = data(2, n=120)
    tag = np.arange(len(y))
    model = CalibratedClassifierCV(_RecordsFitParams(), cv=KFold(3), ensemble=ensemble).fit(
        X, y, tag=tag, scale=2.0, sample_weight=np.ones(len(y)))
    for i, (train, _) in enumerate(KFold(3).split(X, y)):
        if ensemble:
            pair = model.calibrated_classifiers_[i]
            assert_array_equal(pair.estimator.tag_, train)  # the fold's own rows, in order
            assert pair.estimator.scale_ == 2.0  # not one value per sample: passed as it is
    if not ensemble:
        assert_array_equal(model.calibrated_classifiers_[0].estimator.tag_, tag)


def test_predict_before_fit_is_not_fitted_error():
    from sklearn.exceptions import NotFittedError

    model = CalibratedClassifierCV(GaussianNB())
    for method in (model.predict, model.predict_proba):
        with pytest.raises(NotFittedError):
            method(np.zeros((2, 8)))


class _ImproperProba(GaussianNB):
    """A classifier whose predict_proba rows do not sum to 1."""

    def predict_proba(self, X):
        return super().predict_proba(X) * 0.9


def test_temperature_needs_proper_probabilities():
    X, y = data(3)
    with pytest.raises(ValueError, match="must sum to 1"):
        CalibratedClassifierCV(_ImproperProba(), method="temperature", cv=3).fit(X, y)


def test_unfitted_use_is_a_clear_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        CalibratedClassifierCV(GaussianNB()).predict_proba(np.zeros((1, 8)))
    X, y = data(2)
    with pytest.raises(NotFittedError):
        CalibratedClassifierCV(FrozenEstimator(GaussianNB())).fit(X, y)


def test_lazy_access_from_the_package():
    assert fastcal.CalibratedClassifierCV is CalibratedClassifierCV
    assert fastcal.cross_val_calibration_report is cross_val_calibration_report


def test_nested_evaluation_is_less_optimistic_than_in_sample():
    X, y = make_classification(n_samples=3000, n_features=10, n_informative=4, weights=[0.8, 0.2],
                               flip_y=0.1, random_state=3)
    est = RandomForestClassifier(n_estimators=30, min_samples_leaf=3, random_state=0)
    report = cross_val_calibration_report(est, X, y, method="isotonic", cv=3, inner_cv=3)
    assert len(report.folds) == 3 and report.after.n == 3000
    # In-sample: calibrator fitted on the very predictions it is scored on.
    model = clone(est).fit(X, y)
    p = model.predict_proba(X)[:, 1]
    in_sample = fastcal.IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(p)
    in_sample_report = fastcal.calibration_report(y, in_sample)
    assert in_sample_report.brier < report.after.brier
    assert in_sample_report.ece < report.after.ece
    assert "before" in str(report) and "after" in str(report)
    assert set(report.to_dict()) == {"before", "after", "folds"}
    # Honest calibration helps the forest's held-out log loss.
    assert report.after.log_loss < report.before.log_loss


@pytest.mark.parametrize("method", ["sigmoid", "isotonic", "temperature"])
def test_the_meta_estimators_calibrators_are_saveable(tmp_path, method):
    X, y = data(3)
    model = CalibratedClassifierCV(GaussianNB(), method=method, cv=3).fit(X, y)
    pair = model.calibrated_classifiers_[0]
    predictions = pair.estimator.predict_proba(X)
    for i, calibrator in enumerate(pair.calibrators):
        path = tmp_path / f"calibrator{i}.json"
        calibrator.save(path)
        loaded = fastcal.load(path)
        column = predictions if method == "temperature" else predictions[:, i]
        before = calibrator.predict_proba(column) if method == "temperature" else calibrator.predict(column)
        after = loaded.predict_proba(column) if method == "temperature" else loaded.predict(column)
        assert_array_equal(after, before)


@pytest.mark.parametrize("method, cls", [("vector", fastcal.VectorScaling),
                                         ("bcts", fastcal.BiasCorrectedTemperatureScaling),
                                         ("matrix", fastcal.MatrixScaling)])
@pytest.mark.parametrize("estimator", ["LinearSVC", "GaussianNB"])
def test_vector_bcts_and_matrix_methods_are_their_calibrators_on_the_predictions(method, cls, estimator):
    # a frozen model: one calibrator, fitted on the model's own predictions of the calibration rows (its decision
    # function for LinearSVC, its probabilities for GaussianNB), with encoded labels
    X, y = data(3, n=900)
    labels = np.array(["ant", "bee", "cat"])[y]
    model = clone(ESTIMATORS[estimator]).fit(X[:450], labels[:450])
    ours = CalibratedClassifierCV(FrozenEstimator(model), method=method).fit(X[450:], labels[450:])
    scores = model.decision_function(X) if estimator == "LinearSVC" else model.predict_proba(X)
    input_type = "auto" if estimator == "LinearSVC" else "probabilities"
    ref = cls(input_type=input_type).fit(scores[450:], y[450:])
    assert_allclose(ours.predict_proba(X), ref.predict_proba(scores), rtol=1e-12, atol=1e-15)
    assert set(ours.predict(X)) <= set(labels)
    # cross-fitted: every fold's pair, probabilities averaged; a class missing from a fold's training part refused
    cv = CalibratedClassifierCV(clone(ESTIMATORS[estimator]), method=method, cv=3).fit(X, labels)
    assert_allclose(cv.predict_proba(X).sum(axis=1), 1.0, rtol=1e-12)
    order = np.argsort(y, kind="stable")
    with pytest.raises(ValueError, match=f"method='{method}' needs every class in every fold"):
        CalibratedClassifierCV(GaussianNB(), method=method, cv=KFold(3)).fit(X[order], y[order])


@pytest.mark.parametrize("estimator, n_classes", [("LinearSVC", 3), ("GaussianNB", 3), ("LinearSVC", 2),
                                                  ("GaussianNB", 2)])
def test_dirichlet_method_is_dirichlet_calibration_of_the_probabilities(estimator, n_classes):
    # probabilities as they are (a binary classifier's positive column p as [1 - p, p], as scikit-learn reads it);
    # decision values through the softmax (the logistic function for one column)
    from scipy.special import expit, softmax

    X, y = data(n_classes, n=900)
    model = clone(ESTIMATORS[estimator]).fit(X[:450], y[:450])
    ours = CalibratedClassifierCV(FrozenEstimator(model), method="dirichlet").fit(X[450:], y[450:])
    if estimator == "GaussianNB":
        P = model.predict_proba(X)
        if n_classes == 2:
            P = np.c_[1.0 - P[:, 1], P[:, 1]]
    else:
        d = model.decision_function(X)
        P = softmax(d, axis=1) if d.ndim == 2 else np.c_[1.0 - expit(d), expit(d)]
    ref = fastcal.DirichletCalibration().fit(P[450:], y[450:])
    assert_allclose(ours.predict_proba(X), ref.predict_proba(P), rtol=1e-12, atol=1e-15)


def test_y_as_one_column_warns_and_is_flattened_as_sklearn():
    from sklearn.exceptions import DataConversionWarning

    X, y = data(2, n=120)
    with pytest.warns(DataConversionWarning):
        ours = CalibratedClassifierCV(GaussianNB()).fit(X, y.reshape(-1, 1))
    assert_allclose(ours.predict_proba(X), CalibratedClassifierCV(GaussianNB()).fit(X, y).predict_proba(X))


def test_sparse_tag_follows_the_wrapped_estimator():
    from sklearn.utils import get_tags

    for est in (LogisticRegression(), GaussianNB(), None):
        want = get_tags(SkCalibratedClassifierCV(est)).input_tags.sparse
        assert get_tags(CalibratedClassifierCV(est)).input_tags.sparse == want
    assert get_tags(CalibratedClassifierCV(LogisticRegression())).input_tags.sparse  # one that takes sparse X
