"""Calibrating classifiers: fastcal's calibration step against scikit-learn's, same predictions."""

from __future__ import annotations

import numpy as np

from benchmarks._harness import Row, best_of

SUBJECT = "calibration"


def _logits(n, k, seed=0):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 3
    p = np.exp(z / 2)
    p /= p.sum(axis=1, keepdims=True)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), k - 1)
    return z, y


def _score_column():
    """A fitted "classifier" whose decision function is the first column of X.

    Frozen into the meta-estimators, it makes their ``fit`` time the
    calibration step alone (no model to fit, nothing to predict).
    """
    from sklearn.base import BaseEstimator, ClassifierMixin

    class ScoreColumn(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            self.classes_ = np.array([0, 1])
            return self

        def decision_function(self, X):
            return np.asarray(X)[:, 0]

        def predict(self, X):
            return (self.decision_function(X) > 0).astype(int)

    return ScoreColumn().fit(None, None)


def _abstention():
    import warnings

    with warnings.catch_warnings():  # abstention imports scipy.misc, deprecated
        warnings.simplefilter("ignore", DeprecationWarning)
        from abstention import calibration
    return calibration


def _abstention_vector():
    return _abstention().VectorScaling()


def _abstention_bcts():
    return _abstention().TempScaling(bias_positions="all")


def rows(quick=False):
    from sklearn.calibration import CalibratedClassifierCV as SkCalibratedClassifierCV
    from sklearn.calibration import _TemperatureScaling
    from sklearn.frozen import FrozenEstimator

    import fastcal
    from fastcal.calibration import CalibratedClassifierCV

    n = 10**4 if quick else 10**6
    repeat = 1 if quick else 3
    z, y = _logits(n, 10)
    fastcal.TemperatureScaling().fit(z[:1000], y[:1000])
    ours = best_of(lambda: fastcal.TemperatureScaling().fit(z, y), repeat)
    theirs = best_of(lambda: _TemperatureScaling().fit(z, y), 1 if not quick else repeat)
    yield Row(SUBJECT, "`TemperatureScaling.fit`, 10 classes", n, ours, {"scikit-learn": theirs})

    onehot = np.eye(10)[y]
    for cls, peer in ((fastcal.VectorScaling, _abstention_vector), (fastcal.BiasCorrectedTemperatureScaling,
                                                                    _abstention_bcts)):
        cls().fit(z[:1000], y[:1000])
        ours = best_of(lambda: cls().fit(z, y), repeat)
        theirs = best_of(lambda: peer()(z, onehot), 1 if not quick else repeat)
        yield Row(SUBJECT, f"`{cls.__name__}.fit`, 10 classes", n, ours, {"abstention": theirs},
                  "abstention's L-BFGS, its default tolerance (it stops early: its loss is never below ours)")

    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 1)) * 2
    yb = (rng.random(n) < 1 / (1 + np.exp(-X[:, 0] / 2))).astype(int)
    model = FrozenEstimator(_score_column())
    for method in ("isotonic", "sigmoid", "temperature"):
        CalibratedClassifierCV(model, method=method).fit(X[:1000], yb[:1000])
        ours = best_of(lambda: CalibratedClassifierCV(model, method=method).fit(X, yb), repeat)
        theirs = best_of(lambda: SkCalibratedClassifierCV(model, method=method).fit(X, yb), 1 if not quick else repeat)
        yield Row(SUBJECT, f"`CalibratedClassifierCV(FrozenEstimator(model), method=\"{method}\").fit`",
                  n, ours, {"scikit-learn": theirs}, "the calibration step: the model's scores are a column of X")
