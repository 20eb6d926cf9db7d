"""Calibrating classifiers: a faster drop-in for scikit-learn's ``CalibratedClassifierCV``.

This module imports scikit-learn (the ``sklearn`` extra); ``import fastcal``
does not import it, and reaches :class:`CalibratedClassifierCV` and
:func:`cross_val_calibration_report` lazily.
"""

from __future__ import annotations

import numbers
import warnings
from dataclasses import dataclass, field
from inspect import signature
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np
from scipy.special import expit, softmax
from sklearn.base import BaseEstimator, ClassifierMixin, MetaEstimatorMixin, clone
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import LeaveOneOut, check_cv, cross_val_predict
from sklearn.svm import LinearSVC
from sklearn.utils import _safe_indexing, indexable
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils import get_tags
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ._binning import check_binning
from ._core.params import Boolean, Options, check_all
from ._core.results import Result
from .beta import BetaCalibration
from .histogram import HistogramBinning
from .isotonic import IsotonicRegression
from .platt import PlattScaling
from .multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
from .temperature import TemperatureScaling
from .venn_abers import VennAbers, merge_intervals

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TypeAlias

    from numpy.typing import ArrayLike, NDArray
    from sklearn.model_selection import BaseCrossValidator, BaseShuffleSplit

    from .metrics import CalibrationReport

    #: What ``cv`` accepts, as in scikit-learn: a number of folds, a splitter, or (train, test) index pairs.
    CV: TypeAlias = int | BaseCrossValidator | BaseShuffleSplit | Iterable[tuple[ArrayLike, ArrayLike]] | None

__all__ = ["CalibratedClassifierCV", "CrossValCalibrationReport", "cross_val_calibration_report"]

METHODS = ("sigmoid", "isotonic", "temperature", "beta", "histogram", "centered_isotonic", "venn_abers", "vector",
           "bcts", "matrix", "dirichlet")
#: The multinomial methods: one calibrator of all the columns, every class in every fold's training part.
_MULTINOMIAL = {"temperature": TemperatureScaling, "vector": VectorScaling, "bcts": BiasCorrectedTemperatureScaling,
                "matrix": MatrixScaling, "dirichlet": DirichletCalibration}
#: One-vs-rest methods, one 1-D calibrator per class column; of these, the ones that take probabilities.
_ONE_VS_REST = ("isotonic", "sigmoid", "beta", "histogram", "centered_isotonic", "venn_abers")
_TAKE_PROBABILITIES = ("beta", "histogram")


def _response(estimator):
    """The prediction method scikit-learn calibrates: ``decision_function`` if there is one."""
    for name in ("decision_function", "predict_proba"):
        if hasattr(estimator, name):
            return name
    raise ValueError(f"{type(estimator).__name__} has neither decision_function nor predict_proba to calibrate.")


def _predictions(estimator, X):
    """Scores of a fitted classifier, (n, 1) for two classes (the positive class), else (n, k)."""
    name = _response(estimator)
    pred = np.asarray(getattr(estimator, name)(X))
    if pred.ndim == 2 and name == "predict_proba" and pred.shape[1] == 2:
        pred = pred[:, 1]
    if pred.ndim == 1:
        pred = pred.reshape(-1, 1)
    return pred, name


def _calibrated_columns(estimator, classes):
    """Index in ``classes`` of each column of the estimator's predictions (only the positive class for two)."""
    columns = np.searchsorted(classes, estimator.classes_)
    return columns[1:] if len(classes) == 2 else columns


def _new_calibrator(method, response):
    if method == "isotonic":
        return IsotonicRegression(out_of_bounds="clip")
    if method == "centered_isotonic":
        return IsotonicRegression(out_of_bounds="clip", centered=True)
    if method == "venn_abers":
        return VennAbers()
    if method == "sigmoid":
        return PlattScaling()
    if method == "beta":
        return BetaCalibration()
    if method == "histogram":
        return HistogramBinning()
    if method == "dirichlet":
        return DirichletCalibration()
    # predict_proba output must be probabilities (an error if rows do not sum
    # to 1); decision values follow scikit-learn's "auto" rule.
    return _MULTINOMIAL[method](input_type="probabilities" if response == "predict_proba" else "auto")


def _multinomial_input(predictions, method, response):
    """What a multinomial calibrator reads: (n, k) columns (two for a binary classifier's one column), and for
    "dirichlet", which takes probabilities, decision values through the softmax (the logistic function for one
    column) first."""
    if response == "predict_proba":
        return np.hstack([1 - predictions, predictions]) if predictions.shape[1] == 1 else predictions
    if method != "dirichlet":
        return predictions
    z = np.asarray(predictions, dtype=np.float64)
    if z.shape[1] == 1:
        p = expit(z)
        return np.hstack([1.0 - p, p])
    return softmax(z, axis=1)


def _calibrator_input(pred, method, response):
    """What a one-vs-rest calibrator reads: beta and histogram take probabilities, so decision
    values go through the logistic function first."""
    if method in _TAKE_PROBABILITIES and response == "decision_function":
        return expit(np.asarray(pred, dtype=np.float64))
    return pred


class _CalibratedPair:
    """A fitted classifier and its fitted calibrator(s); predicts calibrated probabilities."""

    def __init__(self, estimator: Any, calibrators: list[Any], *, classes: NDArray[Any], method: str) -> None:
        self.estimator = estimator
        self.calibrators = calibrators
        self.classes = classes
        self.method = method

    @classmethod
    def fit(cls, estimator, predictions, y_idx, classes, method, sample_weight, response):
        """Fit the calibrator(s) of ``estimator`` on its ``predictions`` of rows with class indices ``y_idx``."""
        calibrators = []
        if method in _ONE_VS_REST:
            for class_idx, pred in zip(_calibrated_columns(estimator, classes), predictions.T):
                target = (y_idx == class_idx).view(np.uint8)
                calibrators.append(_new_calibrator(method, response).fit(_calibrator_input(pred, method, response),
                                                                         target, sample_weight))
        else:
            calibrators.append(_new_calibrator(method, response).fit(_multinomial_input(predictions, method, response),
                                                                     y_idx, sample_weight))
        return cls(estimator, calibrators, classes=classes, method=method)

    def predict_intervals(self, X: Any) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.intp]]:
        """Venn-Abers pairs of each calibrated column: ``(p0, p1, columns)``, ``p0``/``p1`` of shape (n, m)."""
        predictions, _ = _predictions(self.estimator, X)
        pairs = [calibrator.predict_interval(pred) for pred, calibrator in zip(predictions.T, self.calibrators)]
        p0 = np.column_stack([np.asarray(a, dtype=np.float64) for a, _ in pairs])
        p1 = np.column_stack([np.asarray(b, dtype=np.float64) for _, b in pairs])
        return p0, p1, _calibrated_columns(self.estimator, self.classes)

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        if self.method == "venn_abers":
            return _venn_abers_proba([self.predict_intervals(X)], len(self.classes))
        predictions, response = _predictions(self.estimator, X)
        n_classes = len(self.classes)
        if self.method in _MULTINOMIAL:
            proba = np.asarray(self.calibrators[0].predict_proba(_multinomial_input(predictions, self.method, response)),
                               dtype=np.float64)
        else:
            proba = np.zeros((predictions.shape[0], n_classes))
            columns = _calibrated_columns(self.estimator, self.classes)
            for class_idx, pred, calibrator in zip(columns, predictions.T, self.calibrators):
                proba[:, class_idx] = calibrator.predict(_calibrator_input(pred, self.method, response))
            if n_classes == 2:
                proba[:, 0] = 1.0 - proba[:, 1]
            else:
                denominator = proba.sum(axis=1)[:, np.newaxis]
                uniform = np.full_like(proba, 1 / n_classes)
                proba = np.divide(proba, denominator, out=uniform, where=denominator != 0)
        proba[(1.0 < proba) & (proba <= 1.0 + 1e-5)] = 1.0
        return proba


def _venn_abers_proba(intervals, n_classes):
    """Probabilities from the Venn-Abers pairs ``(p0, p1, columns)`` of each fold (see ``predict_intervals``).

    Each class's pairs are merged over the folds that calibrated it by the
    CVAP rule (:func:`fastcal.venn_abers.merge_intervals`); a class no fold
    saw gets 0. Two classes give ``(1 - p, p)``, more are renormalised
    one-vs-rest as for the other methods.
    """
    proba = np.zeros((intervals[0][0].shape[0], n_classes))
    for class_idx in range(n_classes):
        found = [(p0[:, j], p1[:, j]) for p0, p1, columns in intervals for j in np.flatnonzero(columns == class_idx)]
        if found:
            proba[:, class_idx] = merge_intervals(np.stack([a for a, _ in found]), np.stack([b for _, b in found]))
    if n_classes == 2:
        proba[:, 0] = 1.0 - proba[:, 1]
        return proba
    denominator = proba.sum(axis=1)[:, np.newaxis]
    return np.divide(proba, denominator, out=np.full_like(proba, 1 / n_classes), where=denominator != 0)


class CalibratedClassifierCV(ClassifierMixin, MetaEstimatorMixin, BaseEstimator):
    """Probability calibration with cross-validation: a drop-in for scikit-learn's.

    Same parameters, attributes and behaviour as
    :class:`sklearn.calibration.CalibratedClassifierCV` (cross-fitting on the
    same splits, ``ensemble=True/False/"auto"``, an already fitted estimator
    wrapped in :class:`sklearn.frozen.FrozenEstimator`, ``decision_function``
    preferred over ``predict_proba``, one-vs-rest calibration renormalised
    for multiclass), with fastcal's calibrators: "sigmoid" is
    :class:`fastcal.PlattScaling` (Newton), "isotonic" is
    :class:`fastcal.IsotonicRegression`, "temperature" is
    :class:`fastcal.TemperatureScaling` (natively multinomial), "vector", "bcts" and "matrix"
    :class:`fastcal.VectorScaling`, :class:`fastcal.BiasCorrectedTemperatureScaling` and
    :class:`fastcal.MatrixScaling` (multinomial too), "dirichlet" :class:`fastcal.DirichletCalibration`
    (full W, no penalty; multinomial, on probabilities: decision values go through the softmax first), "beta" is
    :class:`fastcal.BetaCalibration` and "histogram" is
    :class:`fastcal.HistogramBinning` (both one-vs-rest; they take
    probabilities, so decision values are mapped through the logistic
    function 1 / (1 + exp(-s)) first),
    "centered_isotonic" is ``IsotonicRegression(centered=True)`` (strictly
    monotone), "venn_abers" is :class:`fastcal.VennAbers`: with
    ``ensemble=True`` that is cross-Venn-Abers (CVAP, Vovk, Petej & Fedorova
    2015): each fold's pair ``(p0, p1)`` per class, merged over the folds as
    ``p = G(p1) / (G(1 - p0) + G(p1))`` (``G`` the geometric mean) instead of
    averaging probabilities; with ``ensemble=False`` one IVAP on the
    cross-validated predictions.

    Parameters
    ----------
    estimator : classifier, optional
        The classifier to calibrate; ``LinearSVC(random_state=0)`` if None.
    method : {"sigmoid", "isotonic", "temperature", "beta", "histogram", "centered_isotonic", "venn_abers", \
            "vector", "bcts", "matrix", "dirichlet"}
    cv : int, cross-validation generator or iterable, optional
        As in scikit-learn (5-fold stratified by default).
    n_jobs : int, optional
        Folds fitted in parallel (joblib), as in scikit-learn.
    ensemble : bool or "auto"
        True: one (classifier, calibrator) pair per fold, probabilities
        averaged; False: one classifier on all data, calibrated on
        cross-validated predictions. "auto": False for a FrozenEstimator,
        True otherwise.
    prior_correction : float, array-like or None
        Applied to the calibrated probabilities. A float ``r`` in (0, 1]
        (binary only) undoes random undersampling of negatives at rate ``r``
        (:func:`fastcal.correct_negative_sampling`); an array of new class
        priors (one per class, summing to 1) adjusts from the class
        frequencies seen in ``fit`` (:func:`fastcal.adjust_priors`).

    Attributes
    ----------
    classes_ : ndarray
    calibrated_classifiers_ : list
        The fitted (classifier, calibrators) pairs; each has
        ``estimator``, ``calibrators``, ``classes``, ``method`` and ``predict_proba``.
    train_priors_ : ndarray
        Class frequencies (weighted) of ``y`` in ``fit``, used by ``prior_correction``.
    """

    classes_: NDArray[Any]
    calibrated_classifiers_: list[_CalibratedPair]
    train_priors_: NDArray[np.float64]
    n_features_in_: int
    feature_names_in_: NDArray[np.object_]

    def __init__(
        self,
        estimator: Any = None,
        *,
        method: Literal["sigmoid", "isotonic", "temperature", "beta", "histogram", "centered_isotonic",
                        "venn_abers", "vector", "bcts", "matrix", "dirichlet"] = "sigmoid",
        cv: CV = None,
        n_jobs: int | None = None,
        ensemble: bool | Literal["auto"] = "auto",
        prior_correction: float | ArrayLike | None = None,
    ) -> None:
        self.estimator = estimator
        self.method = method
        self.cv = cv
        self.n_jobs = n_jobs
        self.ensemble = ensemble
        self.prior_correction = prior_correction

    def _check_params(self, n_classes):
        check_all({"method": [Options(*METHODS)], "ensemble": [Boolean(), Options("auto")]}, self.get_params())
        pc = self.prior_correction
        if pc is None:
            return
        if isinstance(pc, numbers.Real) and not isinstance(pc, bool):
            if n_classes != 2:
                raise ValueError("prior_correction as a negative-sampling rate needs a binary problem; "
                                 "give new class priors for multiclass.")
            if not 0 < pc <= 1:
                raise ValueError(f"prior_correction rate must be in (0, 1]; got {pc!r}.")
            return
        priors = np.asarray(pc, dtype=np.float64)
        if priors.shape != (n_classes,):
            raise ValueError(f"prior_correction must be a rate or {n_classes} class priors; got shape {priors.shape}.")

    def fit(self, X: Any, y: ArrayLike, sample_weight: ArrayLike | None = None, **fit_params: Any) -> Self:
        """Fit the classifier(s) and their calibrators."""
        X, y = indexable(X, y)
        y = column_or_1d(y, warn=True)  # (n, 1): a DataConversionWarning, then flattened, as scikit-learn
        check_classification_targets(y)
        estimator = self._estimator()
        self.classes_, y_idx = np.unique(y, return_inverse=True)  # what LabelEncoder does
        self._check_params(len(self.classes_))
        ensemble = self.ensemble
        if ensemble == "auto":
            ensemble = not isinstance(estimator, FrozenEstimator)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
            if not sample_weight.sum() > 0:
                raise ValueError("sample_weight: the weights sum to zero (or are not finite); at least one must be "
                                 "positive.")
        counts = np.bincount(y_idx, weights=sample_weight, minlength=len(self.classes_))
        self.train_priors_ = counts / counts.sum()

        fit_kwargs = dict(fit_params)
        if sample_weight is not None:
            if "sample_weight" in signature(estimator.fit).parameters:
                fit_kwargs["sample_weight"] = sample_weight
            else:
                warnings.warn(
                    f"Since {type(estimator).__name__} does not appear to accept sample_weight, sample weights "
                    "will only be used for the calibration itself. Be warned that the result of the "
                    "calibration is likely to be incorrect."
                )
        if isinstance(self.cv, LeaveOneOut):
            raise ValueError("LeaveOneOut cross-validation does not allow all classes to be present in test "
                             "splits. Please use a cross-validation generator that allows all classes to "
                             "appear in every test and train split.")
        n_folds = int(self.cv) if isinstance(self.cv, numbers.Integral) else getattr(self.cv, "n_splits", None)
        if n_folds and np.any(np.bincount(y_idx) < n_folds):
            raise ValueError(f"Requesting {n_folds}-fold cross-validation but provided less than {n_folds} "
                             "examples for at least one class.")
        cv = check_cv(self.cv, y, classifier=True)

        if ensemble:
            from joblib import Parallel, delayed

            splits = list(cv.split(X, y))
            if self.method in _MULTINOMIAL:
                for i, (train, test) in enumerate(splits):
                    self._check_fold(y, train, test, i)
            self.calibrated_classifiers_ = Parallel(n_jobs=self.n_jobs)(
                delayed(_fit_pair)(clone(estimator), X, y, y_idx, train, test, self.method, self.classes_,
                                   sample_weight, fit_kwargs)
                for train, test in splits
            )
        else:
            this = clone(estimator)
            if isinstance(this, FrozenEstimator):
                # Fitting a frozen estimator does nothing, so its cross-validated
                # predictions are its predictions: skip the folds.
                this.fit(X, y, **fit_kwargs)
                predictions, response = _predictions(this, X)
            else:
                response = _response(this)
                predictions = cross_val_predict(this, X, y, cv=cv, method=response, n_jobs=self.n_jobs,
                                                params=fit_kwargs)
                if len(self.classes_) == 2:
                    if response == "predict_proba":
                        predictions = predictions[:, 1]
                    predictions = predictions.reshape(-1, 1)
                this.fit(X, y, **fit_kwargs)
            self.calibrated_classifiers_ = [
                _CalibratedPair.fit(this, predictions, y_idx, self.classes_, self.method, sample_weight, response)
            ]
        first = self.calibrated_classifiers_[0].estimator
        if hasattr(first, "n_features_in_"):
            self.n_features_in_ = first.n_features_in_
        if hasattr(first, "feature_names_in_"):
            self.feature_names_in_ = first.feature_names_in_
        return self

    def _check_fold(self, y, train, test, i):
        # One-vs-rest calibrators give a class a fold never saw probability 0, as
        # scikit-learn does; a multinomial calibrator needs every class in the
        # classifier's training part, to have a column of scores for it (where
        # scikit-learn fails with a broadcasting error). Its calibration part may
        # lack a class: the temperature's loss is still defined (as in scikit-learn).
        missing = np.setdiff1d(self.classes_, np.unique(y[train]))
        if missing.size:
            raise ValueError(
                f"method={self.method!r} needs every class in every fold, but class {missing[0].item()!r} is "
                f"missing from the training part of fold {i}. Use fewer folds or stratified splits (an integer "
                "cv), or method='sigmoid' or 'isotonic'."
            )

    def __sklearn_tags__(self):
        # Sparse input works exactly when the wrapped classifier takes it, as in scikit-learn.
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = get_tags(self._estimator()).input_tags.sparse
        return tags

    def _estimator(self):
        """The classifier to calibrate: ``estimator``, or ``LinearSVC(random_state=0)`` if None."""
        return LinearSVC(random_state=0) if self.estimator is None else self.estimator

    def predict_proba(self, X: Any) -> NDArray[np.float64]:
        """Calibrated probabilities, averaged over the calibrated classifiers, then prior-corrected."""
        check_is_fitted(self, "calibrated_classifiers_")
        pairs = self.calibrated_classifiers_
        if self.method == "venn_abers":
            intervals = [pair.predict_intervals(X) for pair in pairs]
            return self._correct_priors(_venn_abers_proba(intervals, len(self.classes_)))
        proba = pairs[0].predict_proba(X)
        for pair in pairs[1:]:
            proba = proba + pair.predict_proba(X)
        proba /= len(pairs)
        return self._correct_priors(proba)

    def _correct_priors(self, proba):
        pc = self.prior_correction
        if pc is None:
            return proba
        from .prior import adjust_priors, correct_negative_sampling

        if isinstance(pc, numbers.Real) and not isinstance(pc, bool):
            positive = correct_negative_sampling(np.ascontiguousarray(proba[:, 1]), pc)
            return np.column_stack([1.0 - positive, positive])
        return adjust_priors(np.ascontiguousarray(proba), self.train_priors_, np.asarray(pc, dtype=np.float64))

    def predict(self, X: Any) -> NDArray[Any]:
        """The class with the highest calibrated probability."""
        check_is_fitted(self, "calibrated_classifiers_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


def _fold_params(params, n_samples, indices):
    """Fit parameters for one fold: those with one value per sample cut to the fold's rows
    (as scikit-learn does), the others passed as they are."""
    out = {}
    for name, value in params.items():
        if hasattr(value, "__len__") and not isinstance(value, (str, bytes, dict)) and np.ndim(value) > 0 \
                and len(value) == n_samples:
            out[name] = _safe_indexing(value, indices)
        else:
            out[name] = value
    return out


def _fit_pair(estimator, X, y, y_idx, train, test, method, classes, sample_weight, fit_kwargs):
    estimator.fit(_safe_indexing(X, train), y[train], **_fold_params(fit_kwargs, len(y), train))
    predictions, response = _predictions(estimator, _safe_indexing(X, test))
    sw_test = None if sample_weight is None else sample_weight[test]
    return _CalibratedPair.fit(estimator, predictions, y_idx[test], classes, method, sw_test, response)


@dataclass(frozen=True, eq=False, repr=False)
class CrossValCalibrationReport(Result):
    """Result of :func:`cross_val_calibration_report`.

    ``folds`` holds one dict per outer fold with the ``before`` and ``after``
    :class:`fastcal.metrics.CalibrationReport` of its held-out rows;
    ``before`` and ``after`` are the reports of all held-out predictions
    pooled (every row is predicted once, by the model that never saw it).
    """

    before: CalibrationReport
    after: CalibrationReport
    folds: list[dict[str, CalibrationReport]] = field(default_factory=list)

    def __str__(self) -> str:
        b, a = self.before.to_dict(), self.after.to_dict()
        keys = [k for k in ("n", "auc", "brier", "log_loss", "ece", "slope", "intercept",
                            "calibration_in_the_large") if k in b]
        lines = [f"nested cross-validation, {len(self.folds)} outer folds, pooled held-out predictions",
                 f"{'':28s}{'before':>12s}{'after':>12s}"]
        for k in keys:
            lines.append(f"{k:28s}{_fmt(b[k]):>12s}{_fmt(a[k]):>12s}")
        return "\n".join(lines)


def _fmt(v):
    return f"{v:,}" if isinstance(v, (int, np.integer)) else f"{v:.5f}"


def cross_val_calibration_report(
    estimator: Any,
    X: Any,
    y: ArrayLike,
    *,
    method: Literal["sigmoid", "isotonic", "temperature", "beta", "histogram"] = "isotonic",
    cv: CV = 5,
    inner_cv: CV = 5,
    prior_correction: float | ArrayLike | None = None,
    n_bins: int = 10,
) -> CrossValCalibrationReport:
    """Evaluate a model plus its calibration by nested cross-validation (binary problems).

    Each outer fold is held out untouched; on the rest, the model and its
    calibrator are fitted (:class:`CalibratedClassifierCV` with ``inner_cv``:
    the calibrator learns from inner-fold predictions, never from rows its
    classifier was trained on), and the held-out fold is scored once. Also
    scored: the uncalibrated model (``predict_proba`` of the same base model
    refitted on the outer training rows).

    Why nested: a calibrator evaluated on the rows it was fitted on looks
    better than it is. Isotonic regression in particular can follow the
    labels closely (it has as many free values as distinct scores), so its
    in-sample Brier score and ECE are optimistic; only rows that neither the
    model nor the calibrator saw give an honest estimate of how calibrated
    the deployed predictions will be.

    Parameters
    ----------
    estimator : classifier with ``predict_proba``
    X, y : training data; ``y`` binary
    method : {"isotonic", "sigmoid", "temperature", "beta", "histogram"}
    cv, inner_cv : int or cross-validation generator
        Outer folds (evaluation) and inner folds (calibration).
    prior_correction : passed to :class:`CalibratedClassifierCV`.
    n_bins : bins of the ECE and reliability terms.

    Returns
    -------
    CrossValCalibrationReport
    """
    from .metrics import calibration_report

    n_bins = check_binning(n_bins, "uniform")  # before any fit
    X, y = indexable(X, y)
    y = np.asarray(y)
    classes = np.unique(y)
    if classes.shape[0] != 2:
        raise ValueError(f"cross_val_calibration_report needs a binary y; found {classes.shape[0]} classes.")
    if not hasattr(estimator, "predict_proba"):
        raise ValueError(f"{type(estimator).__name__} has no predict_proba: the uncalibrated baseline needs it.")
    outer = check_cv(cv, y, classifier=True)
    y01 = (y == classes[1]).astype(np.uint8)
    before = np.empty(y.shape[0])
    after = np.empty(y.shape[0])
    folds = []
    for train, test in outer.split(X, y):
        X_train, X_test = _safe_indexing(X, train), _safe_indexing(X, test)
        base = clone(estimator).fit(X_train, y[train])
        before[test] = base.predict_proba(X_test)[:, list(base.classes_).index(classes[1])]
        model = CalibratedClassifierCV(clone(estimator), method=method, cv=inner_cv,
                                       prior_correction=prior_correction).fit(X_train, y[train])
        after[test] = model.predict_proba(X_test)[:, 1]
        folds.append({
            "before": calibration_report(y01[test], before[test], n_bins=n_bins),
            "after": calibration_report(y01[test], after[test], n_bins=n_bins),
        })
    return CrossValCalibrationReport(
        before=calibration_report(y01, before, n_bins=n_bins),
        after=calibration_report(y01, after, n_bins=n_bins),
        folds=folds,
    )
