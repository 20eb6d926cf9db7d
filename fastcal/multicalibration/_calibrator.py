"""MulticalibrationCalibrator: repair the calibration of every segment at once, from scores and segment columns.

Internal API, for the fit over rows (:mod:`._fit_rows`): :func:`fit_parameters` (an estimator's parameters,
checked, as :func:`~._fit.fit_segment_model` takes them) and :func:`fitted` (a new estimator with those parameters
and a fitted :class:`~._fit.SegmentModel`); for ``fastcal apply``: :func:`predict_matched`."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from .._base import BaseCalibrator, check_is_fitted
from .._coding import feature_columns, group_kinds, kind_names, shown
from .._core.validation import (
    as_float_array,
    check_binary_labels,
    check_consistent_length,
    check_probability_range,
    check_sample_weight,
    column_or_1d,
)
from .._persist import register
from ._ecce import check_int
from ._fit import KINDS, FRACTIONS, FeatureTable, SegmentModel, fit_segment_model

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from numpy.typing import ArrayLike, NDArray

    from .._prediction import SegmentOffsets

__all__ = ["MulticalibrationCalibrator", "fit_parameters", "fitted", "predict_matched"]


@register
class MulticalibrationCalibrator(BaseCalibrator):
    r"""Repair the calibration of many overlapping segments at once: sparse logit offsets per segment and score bucket.

    The segments are those of :func:`~fastcal.multicalibration_error`, with the same parameters: all rows, then
    every combination of up to ``max_depth`` features and of their values that holds at least
    ``min_samples_per_segment`` rows (categorical features keep their ``max_values_per_segment_feature - 1`` most
    frequent values and fold the others into ``"__OTHER"``; numerical ones are cut into as many quantile bins), so
    what is measured is what is repaired. Each segment has an offset of its own and one per quantile bucket of the
    scores (``n_buckets``), and the calibrated probability of a row of score :math:`p` is

    .. math::

        q = \sigma\Bigl(a \operatorname{logit}(p) + \sum_{c \ni \text{row}} b_c\Bigr),

    the sum over the offsets of the row's segments and of its bucket in each. :math:`a` and :math:`b` minimise the
    weighted log loss plus :math:`\lambda \lVert b \rVert_1` (the lasso: the segments that are not off keep an
    offset of exactly 0) by Newton's method, each step one pass over the rows (sums per pattern of segments and
    bucket, then coordinate descent on those sums, as glmnet does). :math:`\lambda` is chosen on held-out log loss
    along 10 fractions of the least penalty that changes nothing, :math:`10^{-1/2}, 10^{-1}, \ldots, 10^{-5}`,
    stopping two steps after the best: ``n_folds``-fold cross-fitting, or a hold-out of 40% of the rows past 2.5
    million effective rows (MCGrad's rule). If no penalty beats the scores as they are on the held-out rows, nothing
    changes (``n_rounds_ == 0``). The chosen penalty is then fitted on every row.

    It needs no model, only its scores: scores in, scores out. It is deterministic: the folds are a hash of the
    row's position, and every sum is a fixed-chunk reduction (the same bits at any thread count).

    Parameters
    ----------
    max_depth : int or None, default=3
        Most features in a segment's definition (None: all).
    max_values_per_segment_feature : int, default=3
        Values (bins) kept per feature.
    min_samples_per_segment : int, default=10
        Fewest rows of a segment.
    max_n_segments : int or None, default=1000
        Most segments, all rows included (None: no limit).
    n_buckets : int, default=8
        Quantile buckets of the scores crossed with each segment (fewer if the scores have fewer distinct values).
    n_folds : int, default=5
        Folds of the cross-fitting that chooses the penalty.

    Attributes
    ----------
    slope_ : float
        :math:`a`.
    offsets_ : ndarray of shape (n_segments, 1 + number of buckets)
        :math:`b`, per segment (rows, as :attr:`segment_values_` lists them): the segment's own offset (column 0),
        then one per score bucket.
    bucket_edges_ : ndarray of float64
        The score buckets' edges (buckets ``(e_{k-1}, e_k]``, the first closed; scores beyond go to the first or
        last bucket).
    segment_values_ : list of dict
        Each segment's features and values (``{}``: all rows), as :class:`~fastcal.MulticalibrationResult` lists
        them (``"__OTHER"`` for folded values, a bin number for a binned numerical feature).
    n_rounds_ : int
        The position of the chosen penalty on the path (0: no change).
    cv_losses_ : ndarray
        The held-out log loss (per unit weight) of the unchanged scores and of each penalty tried.
    feature_names_in_ : list of str
        The segment features, categorical ones first.

    Notes
    -----
    ``fit(scores, y, segments)`` and ``predict(scores, segments)`` take the segment features as a mapping of names
    to 1-D arrays, or a DataFrame; scikit-learn's estimator checks, which call ``fit(X, y)``, do not apply. At
    ``predict``, a value not seen at fit gets no correction from the segments of its feature (its row keeps those
    of its other features); a value folded into ``"__OTHER"`` at fit gets the ``"__OTHER"`` segments'. A numerical
    feature's values beyond its bins go to the first or last bin; NaN is a value of its own.

    References
    ----------
    Friedman, J., Hastie, T. and Tibshirani, R. (2010). Regularization paths for generalized linear models via
    coordinate descent. Journal of Statistical Software 33(1).
    Hébert-Johnson, U., Kim, M. P., Reingold, O. and Rothblum, G. N. (2018). Multicalibration: calibration for the
    (computationally-identifiable) masses. ICML.
    Guy, I., Haimovich, D., Linder, F., Okati, N., Perini, L., Tax, N. and Tygert, M. (2025). Measuring
    multi-calibration. arXiv:2506.11251.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import MulticalibrationCalibrator, multicalibration_error
    >>> rng = np.random.default_rng(0)
    >>> n = 20_000
    >>> p = rng.uniform(0.05, 0.95, n)
    >>> country = rng.choice(["fr", "de", "us"], n)
    >>> y = rng.uniform(size=n) < np.where(country == "fr", p ** 2, p)  # miscalibrated in "fr"
    >>> cal = MulticalibrationCalibrator().fit(p[:10_000], y[:10_000], {"country": country[:10_000]})
    >>> q = cal.predict(p[10_000:], {"country": country[10_000:]})
    >>> before = multicalibration_error(y[10_000:], p[10_000:], {"country": country[10_000:]})
    >>> after = multicalibration_error(y[10_000:], q, {"country": country[10_000:]})
    >>> bool(before.mce_sigma > 5 > after.mce_sigma)
    True
    """

    slope_: float
    offsets_: NDArray[np.float64]
    bucket_edges_: NDArray[np.float64]
    n_rounds_: int
    cv_losses_: NDArray[np.float64]
    feature_names_in_: list[str]

    _one_d_input = True
    _state_schema: ClassVar[dict[str, str]] = {
        "feature_names_in_": "values", "feature_kinds_": "values", "feature_values_": "values",
        "feature_digits_": "array", "feature_counts_": "array", "feature_others_": "array", "feature_sizes_": "array",
        "feature_edges_": "array", "feature_edge_counts_": "array", "segment_features_": "array",
        "segment_digits_": "array", "bucket_edges_": "array", "slope_": "float", "offsets_": "array",
        "n_rounds_": "int", "cv_losses_": "array",
    }

    def __init__(self, *, max_depth: int | None = 3, max_values_per_segment_feature: int = 6,
                 min_samples_per_segment: int = 10, max_n_segments: int | None = 1000, n_buckets: int = 8,
                 n_folds: int = 5) -> None:
        self.max_depth = max_depth
        self.max_values_per_segment_feature = max_values_per_segment_feature
        self.min_samples_per_segment = min_samples_per_segment
        self.max_n_segments = max_n_segments
        self.n_buckets = n_buckets
        self.n_folds = n_folds

    def _validate_params(self):
        return dict(
            max_depth=check_int(self.max_depth, "max_depth", 0, allow_none=True),
            max_values=check_int(self.max_values_per_segment_feature, "max_values_per_segment_feature", 1),
            min_samples=check_int(self.min_samples_per_segment, "min_samples_per_segment", 0),
            max_n_segments=check_int(self.max_n_segments, "max_n_segments", 1, allow_none=True),
            n_buckets=check_int(self.n_buckets, "n_buckets", 1),
            n_folds=_check_folds(self.n_folds),
        )

    def fit(self, scores: ArrayLike, y: ArrayLike, segments: Mapping[str, ArrayLike] | Any, *,
            sample_weight: ArrayLike | None = None, numerical: Iterable[str] = ()) -> Self:
        """Fit the offsets of every segment and score bucket; returns ``self``.

        ``segments``: the segment features (a mapping of names to 1-D arrays, or a DataFrame); ``numerical``: the
        names of those that are numerical (cut at quantiles; the others are categorical).
        """
        params = self._validate_params()
        p = as_float_array(column_or_1d(scores, "scores"), "scores")
        yv = column_or_1d(y, "y")
        check_consistent_length(scores=p, y=yv)
        check_probability_range(p, "scores")
        yv = check_binary_labels(yv, "y")
        w = check_sample_weight(sample_weight, p.shape[0], rescale=True)
        if p.shape[0] == 0:
            raise ValueError("scores must hold at least one row, got 0.")
        columns = feature_columns(segments, p.shape[0], numerical)
        if not columns:
            raise ValueError("segments must hold at least one feature, got none.")
        model = fit_segment_model(p, yv, None if w is None else np.ascontiguousarray(w, dtype=np.float64), columns,
                                  **params)
        self._set_model(model)
        return self

    def _set_model(self, model):
        tables = model.features
        self.feature_names_in_ = [t.name for t in tables]
        self.feature_kinds_ = [t.kind for t in tables]
        self.feature_values_ = [v for t in tables for v in t.values]
        self.feature_digits_ = np.concatenate([t.digits for t in tables]).astype(np.int64)
        self.feature_counts_ = np.array([len(t.values) for t in tables], dtype=np.int64)
        self.feature_others_ = np.array([t.other for t in tables], dtype=np.int64)
        self.feature_sizes_ = np.array([t.size for t in tables], dtype=np.int64)
        self.feature_edges_ = np.concatenate([t.edges for t in tables]).astype(np.float64)
        self.feature_edge_counts_ = np.array([t.edges.size for t in tables], dtype=np.int64)
        self.segment_features_ = model.segment_features
        self.segment_digits_ = model.segment_digits
        self.bucket_edges_ = model.bucket_edges
        self.slope_ = float(model.slope)
        self.offsets_ = model.offsets
        self.n_rounds_ = int(np.argmin(model.path_loss)) if model.path_loss.size else 0
        self.cv_losses_ = model.path_loss
        self.__dict__["_segment_model"] = model

    def _model(self):
        cached = self.__dict__.get("_segment_model")
        if cached is not None and cached.offsets is self.offsets_:
            return cached
        counts, edge_counts = self.feature_counts_.tolist(), self.feature_edge_counts_.tolist()
        v0, e0, tables = 0, 0, []
        for f, name in enumerate(self.feature_names_in_):
            v1, e1 = v0 + counts[f], e0 + edge_counts[f]
            tables.append(FeatureTable(name, self.feature_kinds_[f], list(self.feature_values_[v0:v1]),
                                       self.feature_digits_[v0:v1], int(self.feature_others_[f]),
                                       self.feature_edges_[e0:e1], int(self.feature_sizes_[f])))
            v0, e0 = v1, e1
        model = SegmentModel(tables, self.segment_features_, self.segment_digits_, self.bucket_edges_, self.slope_,
                             self.offsets_, FRACTIONS[self.n_rounds_ - 1] if self.n_rounds_ else float("nan"),
                             self.cv_losses_)
        self.__dict__["_segment_model"] = model
        return model

    @property
    def segment_values_(self) -> list[dict[str, Any]]:
        check_is_fitted(self, "offsets_")
        return self._model().segment_values()

    def predict(self, scores: ArrayLike, segments: Mapping[str, ArrayLike] | Any) -> NDArray[np.floating]:
        """The calibrated probabilities of ``scores`` (in their dtype, float32 or float64) with the rows' segment
        features ``segments`` (every feature of the fit; others are ignored).

        Warns (``UserWarning``) when no row's value of a feature is one of its values at fit and the values are all
        of another kind (numbers against text, e.g. a feature fitted as integers given as strings): no row then
        gets that feature's corrections, which is seldom what was meant. Values unseen at fit of the fitted kind
        are no mistake, and get no correction from their feature silently."""
        out, matches = predict_matched(self, scores, segments)
        for name, (matched, values) in matches.items():
            fitted = self.feature_values(name)
            kinds, fitted_kinds = group_kinds(values), group_kinds(fitted)
            if not matched and values and kinds and fitted_kinds and not kinds & fitted_kinds:
                warnings.warn(f"no row's value of the segment feature {name!r} is one of its values at fit, which "
                              f"are {kind_names(fitted_kinds)} ({shown(fitted)}) while the values given are "
                              f"{kind_names(kinds)} ({shown(values)}): no row with a value gets that feature's "
                              f"corrections. Give the values as they were fitted.", UserWarning, stacklevel=2)
        return out

    def feature_values(self, name: str) -> list[Any]:
        """The values of segment feature ``name`` seen at fit (for a binned numerical feature, its bin numbers)."""
        check_is_fitted(self, "offsets_")
        f = self.feature_names_in_.index(name)
        start = int(self.feature_counts_[:f].sum())
        return list(self.feature_values_[start:start + int(self.feature_counts_[f])])

    def prediction_data(self) -> SegmentOffsets:
        """What :meth:`predict` computes, as data (:class:`fastcal._prediction.SegmentOffsets`: the segments with an
        offset), for backends that compute it elsewhere (:func:`fastcal.spark.predict`)."""
        check_is_fitted(self, "offsets_")
        return self._model().prediction_data()

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_segment_model", None)
        return state

    def _check_loaded_state(self):
        self._validate_params()
        n_features = len(self.feature_names_in_)
        counts = [self.feature_kinds_, self.feature_counts_, self.feature_others_, self.feature_sizes_,
                  self.feature_edge_counts_]
        if any(len(c) != n_features for c in counts):
            raise ValueError("invalid fastcal model: the feature tables differ in length")
        if any(k not in KINDS for k in self.feature_kinds_):
            raise ValueError(f"invalid fastcal model: a feature kind is not one of {KINDS}")
        if (int(self.feature_counts_.sum()) != len(self.feature_values_)
                or len(self.feature_values_) != self.feature_digits_.size
                or int(self.feature_edge_counts_.sum()) != self.feature_edges_.size):
            raise ValueError("invalid fastcal model: the feature values, digits or edges do not add up")
        sizes = self.feature_sizes_
        start = 0
        for f, count in enumerate(self.feature_counts_.tolist()):
            digits = self.feature_digits_[start:start + count]
            if digits.size and (digits.min() < 0 or digits.max() >= sizes[f]):
                raise ValueError(f"invalid fastcal model: a digit of feature {f} is out of range")
            start += count
        sf, sd = self.segment_features_, self.segment_digits_
        if sf.ndim != 2 or sd.shape != sf.shape or self.offsets_.ndim != 2 or self.offsets_.shape[0] != sf.shape[0]:
            raise ValueError("invalid fastcal model: the segment table and the offsets differ in shape")
        if sf.size and (sf.max() >= n_features or sf.min() < -1
                        or np.any((sf >= 0) & ((sd < 0) | (sd >= sizes[np.maximum(sf, 0)])))):
            raise ValueError("invalid fastcal model: a segment names a feature or value out of range")
        buckets = max(self.bucket_edges_.size - 1, 1)
        if self.offsets_.shape[1] != buckets + 1 or np.any(np.diff(self.bucket_edges_) <= 0):
            raise ValueError("invalid fastcal model: bucket_edges_ and offsets_ do not match")
        if not 0 <= self.n_rounds_ < max(self.cv_losses_.size, 1) or self.n_rounds_ > len(FRACTIONS):
            raise ValueError("invalid fastcal model: n_rounds_ is out of range")


#: Most folds: a row's fold is a uint8.
MAX_FOLDS = 255


def _check_folds(n_folds):
    n_folds = check_int(n_folds, "n_folds", 2)
    if n_folds > MAX_FOLDS:
        raise ValueError(f"n_folds must be at most {MAX_FOLDS}, got {n_folds}.")
    return n_folds


def fit_parameters(estimator: MulticalibrationCalibrator) -> dict[str, Any]:
    """The parameters of ``estimator``, checked (``InvalidParameterError`` naming one), as
    :func:`~._fit.fit_segment_model` takes them."""
    return estimator._validate_params()


def fitted(estimator: MulticalibrationCalibrator, model: SegmentModel) -> MulticalibrationCalibrator:
    """A new :class:`MulticalibrationCalibrator` with the parameters of ``estimator``, fitted: ``model``."""
    out = MulticalibrationCalibrator(**estimator.get_params())
    out._set_model(model)
    return out


def predict_matched(estimator: MulticalibrationCalibrator, scores: Any,
                    segments: Any) -> tuple[NDArray[np.floating], dict[str, tuple[int, list[Any]]]]:
    """``(p, matches)``: ``estimator.predict(scores, segments)`` without its warning, and for each feature of values
    (not binned) the rows whose value was seen at fit and the column's distinct values (internal API of ``fastcal
    apply``, which warns for a whole file)."""
    check_is_fitted(estimator, "offsets_")
    p = as_float_array(column_or_1d(scores, "scores"), "scores")
    check_probability_range(p, "scores")
    names = estimator.feature_names_in_
    given = {name: column for name, column, _ in feature_columns(segments, p.shape[0], ())}
    missing = [name for name in names if name not in given]
    if missing:
        raise ValueError(f"segments lacks the features {missing} of the fit (it has {list(given)}).")
    matches: dict[str, tuple[int, list[Any]]] = {}
    return estimator._model().predict(p, given, matches), matches
