"""Isotonic regression and isotonic calibration.

:func:`isotonic_regression` is a drop-in for
:func:`scipy.optimize.isotonic_regression`; :class:`IsotonicRegression` is a
drop-in for :class:`sklearn.isotonic.IsotonicRegression`. Both run an O(n)
pool-adjacent-violators kernel; a fit spends most of its time ordering the
scores, which fastcal does without an argsort when the labels are binary.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, Literal, Self, TypedDict

import numpy as np

from . import _kernels as _k
from . import _pav
from .._base import UNCHANGED, BaseCalibrator, check_is_fitted
from .._core.errors import InvalidParameterError
from .._core.params import Boolean, Options, Real, check
from .._persist import register
from .._prediction import Knots
from .._core.parallel import parallel_for
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_finite,
    check_numeric,
    check_sample_weight,
    column_or_1d,
    rescale_weights,
    weight_exponent,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray
    from scipy.optimize import OptimizeResult

__all__ = ["IsotonicRegression", "isotonic_regression"]

#: What ``IsotonicRegression(out_of_bounds=...)`` accepts.
OutOfBounds = Literal["nan", "clip", "raise"]


class IsotonicParams(TypedDict, total=False):
    """The constructor parameters of :class:`IsotonicRegression`, for ``**params`` of fits that build one
    (:func:`fastcal.outofcore.fit_isotonic`, :func:`fastcal.dask.fit_isotonic`)."""

    y_min: float | None
    y_max: float | None
    increasing: bool | Literal["auto"]
    out_of_bounds: OutOfBounds
    centered: bool


def isotonic_regression(y: ArrayLike, *, weights: ArrayLike | None = None, increasing: bool = True) -> OptimizeResult:
    r"""Nonparametric isotonic regression, a drop-in for :func:`scipy.optimize.isotonic_regression`.

    Finds the monotone sequence :math:`x` closest to ``y`` in weighted least
    squares,

    .. math:: \min_x \sum_i w_i (y_i - x_i)^2 \quad\text{s.t.}\quad x_1 \le x_2 \le \dots \le x_n

    (or ``>=`` when ``increasing`` is False), by the O(n) pool adjacent
    violators algorithm of Busing (2022).

    Parameters
    ----------
    y : (N,) array_like
        Response values, finite.
    weights : (N,) array_like or None
        Strictly positive, finite case weights; ``None`` means all ones.
    increasing : bool
        True for a non-decreasing fit, False for non-increasing.

    Returns
    -------
    res : OptimizeResult
        ``x`` (float64, the fitted values), ``weights`` (float64, each block's
        total weight) and ``blocks`` (intp, block ``i`` is ``x[blocks[i]:blocks[i + 1]]``).

    Notes
    -----
    Same results as SciPy to the last bit (the same algorithm in the same
    arithmetic order), same errors for 2-D input, mismatched lengths and
    non-positive weights; empty, NaN or infinite input, which SciPy does not
    check, raise ``ValueError`` here. The inputs are never modified.

    References
    ----------
    Busing, F. M. T. A. (2022). Monotone Regression: A Simple and Fast O(n)
    PAVA Implementation. Journal of Statistical Software, Code Snippets, 102(1).

    Examples
    --------
    >>> from fastcal import isotonic_regression
    >>> res = isotonic_regression([5, 3, 1, 2, 8, 10, 7, 9, 6, 4])
    >>> res.x
    array([2.75      , 2.75      , 2.75      , 2.75      , 7.33333333,
           7.33333333, 7.33333333, 7.33333333, 7.33333333, 7.33333333])
    >>> res.blocks
    array([ 0,  4, 10])
    """
    yarr = np.asarray(y)
    check_numeric(yarr, "y")  # before atleast_1d: None or a dict named as what it is
    yarr = np.atleast_1d(yarr)
    if yarr.ndim != 1:
        raise ValueError("Input arrays y and w must have one dimension of equal length.")
    increasing = check("increasing", increasing, [Boolean()])
    order = slice(None) if increasing else slice(None, None, -1)
    x = as_float_array(yarr, "y", dtype=np.float64)[order].copy()
    if x.shape[0] == 0:
        raise ValueError("y must have at least 1 element, got 0.")
    check_finite(x, "y")
    if weights is None:
        w = np.ones(x.shape[0])
    else:
        warr = np.atleast_1d(np.asarray(weights))
        if not (warr.ndim == 1 and warr.shape[0] == yarr.shape[0]):
            raise ValueError("Input arrays y and w must have one dimension of equal length.")
        w = as_float_array(warr, "weights", dtype=np.float64)[order].copy()
        check_finite(w, "weights")
        if w.min() <= 0:
            raise ValueError("Weights w must be strictly positive.")
    w, exponent = rescale_weights(w)
    r = np.empty(x.shape[0] + 1, dtype=np.intp)
    nb = _k.pav_blocks(x, w, r)
    _k.expand_blocks(x, r, nb)
    r = r[: nb + 1]
    w = w[:nb] if weights is None else np.ldexp(w[:nb], exponent)
    if not increasing:
        x = x[::-1]
        w = w[::-1]
        r = r[-1] - r[::-1]
    from scipy.optimize import OptimizeResult  # imported here: scipy.optimize takes 0.3 s to import

    return OptimizeResult(x=x, weights=w, blocks=r)


@register
class IsotonicRegression(BaseCalibrator):
    r"""Isotonic regression model, a drop-in for :class:`sklearn.isotonic.IsotonicRegression`.

    Fits the monotone step function closest to ``y`` in weighted least squares
    and predicts by linear interpolation between its thresholds. Used as a
    calibrator, ``X`` are a model's scores and ``y`` the 0/1 outcomes; the fit
    is then the maximum-likelihood monotone map from score to probability
    (Zadrozny & Elkan 2002).

    Parameters
    ----------
    y_min, y_max : float or None
        Lower and upper bounds on the fitted values (applied by clipping the
        fit, as scikit-learn does). ``y_min`` must not exceed ``y_max``.
    increasing : bool or "auto"
        Direction of the fit. ``"auto"`` picks it from the sign of Spearman's
        rank correlation of ``X`` and ``y`` (warning when its 95% confidence
        interval, by Fisher's z-transform, spans zero), as scikit-learn does.
    out_of_bounds : {"nan", "clip", "raise"}
        What ``predict`` does with values outside ``[X_min_, X_max_]``:
        return NaN, predict the value at the nearest bound, or raise
        ``ValueError``.
    centered : bool
        Centered isotonic regression (Oron & Flournoy 2017): each PAV block
        becomes one knot, at the block's weighted mean score with the block's
        mean as value, and predictions interpolate linearly between these
        knots, so the fit is strictly monotone from the first block's centre
        to the last one's and keeps the ranking of scores there (the step
        fit ties whole score ranges). From ``X_min_`` to the first centre and
        from the last centre to ``X_max_`` the fit is flat (the end blocks'
        values); beyond ``X_min_``/``X_max_`` ``out_of_bounds`` applies as
        usual. The out-of-core and Dask fits are exact for it too: each part
        carries its blocks' sums of weight times score, which pool like the
        blocks.

    Attributes
    ----------
    X_min_, X_max_ : float
        Smallest and largest score with positive weight seen in ``fit``.
    X_thresholds_, y_thresholds_ : ndarray
        The interpolation knots: the distinct scores (scores closer than the
        dtype's resolution pooled, their weighted mean taken) with their
        fitted values, keeping only the two ends of each run of equal fitted
        values, exactly the points scikit-learn keeps. Same dtype as ``X``.
        With ``centered=True``: the block centres (weighted mean score,
        clipped to the block's score range, in the dtype of ``X``) and block
        means, with ``X_min_`` and ``X_max_`` added at the ends' values
        where they differ from the end centres.
    increasing_ : bool
        The direction used.

    Notes
    -----
    Differences from scikit-learn, all on inputs it does not reject: negative
    sample weights, NaN or infinite values, empty input and ``y_min > y_max``
    raise ``ValueError``; zero weights are dropped as scikit-learn does.
    As in scikit-learn, a fit with a single threshold predicts that constant
    everywhere, whatever ``out_of_bounds`` says.

    A fit sorts the scores and runs on every thread fastcal is given
    (:func:`fastcal.set_num_threads`), with the same result at any thread
    count: the rows are cut into score ranges whose number depends on the
    row count alone, the ranges are sorted and fitted as threads free up,
    and their blocks are pooled. With 0/1 labels and no
    weights the scores of each class are sorted by value (no argsort);
    already sorted scores are detected and not sorted again.

    References
    ----------
    Zadrozny, B. and Elkan, C. (2002). Transforming classifier scores into
    accurate multiclass probability estimates. KDD.

    Oron, A. P. and Flournoy, N. (2017). Centered isotonic regression: point
    and interval estimation for dose-response studies. Statistics in
    Biopharmaceutical Research, 9(3), 258-267.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import IsotonicRegression
    >>> scores = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    >>> labels = np.array([0, 1, 0, 0, 1, 1])
    >>> iso = IsotonicRegression(out_of_bounds="clip").fit(scores, labels)
    >>> iso.predict([0.15, 0.35, 0.9])
    array([0.16666667, 0.33333333, 1.        ])
    """

    X_thresholds_: NDArray[np.floating]
    y_thresholds_: NDArray[np.floating]
    X_min_: np.floating
    X_max_: np.floating
    increasing_: bool

    #: Model files written before ``centered`` existed load as step fits.
    _added_params = {"centered": False}

    _state_schema = {
        "X_thresholds_": "array",
        "y_thresholds_": "array",
        "X_min_": "float",
        "X_max_": "float",
        "increasing_": "bool",
    }

    def __init__(
        self,
        *,
        y_min: float | None = None,
        y_max: float | None = None,
        increasing: bool | Literal["auto"] = True,
        out_of_bounds: OutOfBounds = "nan",
        centered: bool = False,
    ) -> None:
        self.y_min = y_min
        self.y_max = y_max
        self.increasing = increasing
        self.out_of_bounds = out_of_bounds
        self.centered = centered

    # -- fitting -----------------------------------------------------------

    _parameter_constraints = {
        "y_min": [Real(finite=False), None],
        "y_max": [Real(finite=False), None],
        "increasing": [Boolean(), Options("auto")],
        "out_of_bounds": [Options("nan", "clip", "raise")],
        "centered": [Boolean()],
    }

    def _validate_params(self):
        params = super()._validate_params()
        if self.y_min is not None and self.y_max is not None and self.y_min > self.y_max:
            raise InvalidParameterError(
                f"y_min must not exceed y_max; got y_min={self.y_min!r} > y_max={self.y_max!r}.")
        return params

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the isotonic model.

        Parameters
        ----------
        X : array-like of shape (n_samples,) or (n_samples, 1)
            Scores (training data), finite. float32 stays float32.
        y : array-like of shape (n_samples,) or (n_samples, 1)
            Targets, finite (0/1 labels for calibration).
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights; samples of weight zero are ignored.

        Returns
        -------
        self : IsotonicRegression
        """
        self._validate_params()
        x = as_float_array(_one_feature(X, "X"), "X")
        check_finite(x, "X")
        y_arr = column_or_1d(y, "y", min_size=0)  # (n, 1) too, as the other calibrators
        if x.shape[0] != y_arr.shape[0]:  # scikit-learn's words
            raise ValueError(f"Found input variables with inconsistent numbers of samples: [{x.shape[0]}, "
                             f"{y_arr.shape[0]}] (X has {x.shape[0]}, y has {y_arr.shape[0]}).")
        labels = as_label_array(y_arr, "y")
        if labels.dtype.kind == "f":
            check_finite(labels, "y")
        n = x.shape[0]
        if sample_weight is not None and np.ndim(sample_weight) == 1 and len(sample_weight) != n:
            raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n}, {n}, "  # scikit-learn's
                             f"{len(sample_weight)}] (X and y have {n}, sample_weight has {len(sample_weight)}).")
        w, w_min, w_max = check_sample_weight(sample_weight, n, bounds=True)  # rescaled by the PAV steps, not here
        exponent = weight_exponent(None, w_max) if w is not None and n else 0

        if self.increasing == "auto":
            self.increasing_ = _spearman_increasing(x, labels)
        else:
            self.increasing_ = bool(self.increasing)
        if w is not None and w_min == 0:
            keep = w > 0
            x, labels, w = x[keep], labels[keep], w[keep]

        return self._set_blocks(_pav.summarise(x, labels, w, 1.0 if self.increasing_ else -1.0,
                                                      centered=self.centered, w_exponent=exponent))

    def _set_blocks(self, blocks):
        """Set the fitted attributes from PAV blocks ``(sw, swy, xf, xl)`` (see :func:`pav_fit`).

        Fits of data that is split by score range (Dask partitions, chunks of
        a file) end here too, after :func:`fastcal._pav.merge`. Centered
        fits need the fifth array ``swx``.
        """
        xf, xl = blocks[2], blocks[3]
        self.X_thresholds_, self.y_thresholds_ = _pav.finish(
            blocks, 1.0 if self.increasing_ else -1.0, y_min=self.y_min, y_max=self.y_max, centered=self.centered)
        self.X_min_ = xf[0]
        self.X_max_ = xl[xl.shape[0] - 1]
        self._build_lookup()
        return self

    def _check_loaded_state(self):
        super()._check_loaded_state()
        xs, ys = self.X_thresholds_, self.y_thresholds_
        if xs.ndim != 1 or ys.ndim != 1 or xs.shape[0] != ys.shape[0] or xs.shape[0] == 0:
            raise ValueError("invalid fastcal model: X_thresholds_ and y_thresholds_ must be 1-D, non-empty, "
                             "of equal length")
        if xs.dtype != ys.dtype or xs.dtype.kind != "f":
            raise ValueError("invalid fastcal model: X_thresholds_ and y_thresholds_ must share a float dtype")
        if np.any(np.diff(xs) <= 0):
            raise ValueError("invalid fastcal model: X_thresholds_ must be strictly increasing")
        if not (self.X_min_ == xs[0] and xs[-1] == self.X_max_):  # every fit's knots run from X_min_ to X_max_
            raise ValueError("invalid fastcal model: X_min_ and X_max_ must be the first and the last of "
                             "X_thresholds_")
        steps = np.diff(ys)
        if np.any(steps < 0 if self.increasing_ else steps > 0):
            order = "non-decreasing" if self.increasing_ else "non-increasing"
            raise ValueError(f"invalid fastcal model: y_thresholds_ must be {order} "
                             f"(increasing_ is {str(self.increasing_).lower()})")
        lo = -np.inf if self.y_min is None else self.y_min
        hi = np.inf if self.y_max is None else self.y_max
        if np.any((ys < lo) | (ys > hi)):
            raise ValueError("invalid fastcal model: y_thresholds_ must lie within [y_min, y_max]")
        self.X_min_, self.X_max_ = xs.dtype.type(self.X_min_), xs.dtype.type(self.X_max_)
        self._build_lookup()

    def _build_lookup(self):
        xs = self.X_thresholds_
        self._lookup = _k.build_lookup(xs, _pav.lookup_cells(xs.shape[0])) if xs.shape[0] > 1 else None

    # -- prediction ----------------------------------------------------------

    def predict(self, T: ArrayLike) -> NDArray[np.floating]:
        """Predict by linear interpolation between the thresholds.

        Parameters
        ----------
        T : array-like of shape (n_samples,) or (n_samples, 1)
            Scores, finite; cast to the dtype of ``X_thresholds_`` (as
            scikit-learn does), so a float32 fit gives float32 predictions.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        col = _one_feature(T, "T", min_size=0)  # the shape first, as scikit-learn
        check_is_fitted(self, "X_thresholds_")
        check("out_of_bounds", self.out_of_bounds, self._parameter_constraints["out_of_bounds"])
        xs, ys = self.X_thresholds_, self.y_thresholds_
        t = as_float_array(col, "T", dtype=xs.dtype)
        check_finite(t, "T")
        n = t.shape[0]
        if xs.shape[0] == 1:
            return np.full(n, ys[0], dtype=t.dtype)
        if self.out_of_bounds == "raise" and n:
            lo, hi = t.min(), t.max()
            if lo < self.X_min_:
                raise ValueError(  # scikit-learn's words (x_new is its name for T)
                    f"A value ({lo}) in x_new is below the interpolation range's minimum value ({self.X_min_}). "
                    "x_new: the argument T."
                )
            if hi > self.X_max_:
                raise ValueError(
                    f"A value ({hi}) in x_new is above the interpolation range's maximum value ({self.X_max_}). "
                    "x_new: the argument T."
                )
        if getattr(self, "_lookup", None) is None:
            self._build_lookup()
        table, scale = self._lookup
        out = np.empty(n, dtype=t.dtype)
        parallel_for(_k.predict, n, t, xs, ys, table, scale, self.out_of_bounds == "clip", out)
        return out

    def prediction_data(self) -> Knots:
        """What :meth:`predict` computes, as data (:class:`fastcal._prediction.Knots`): the knots, ``out_of_bounds``
        and the dtype; for backends that compute the prediction elsewhere (``fastcal.spark.predict``)."""
        check_is_fitted(self, "X_thresholds_")
        check("out_of_bounds", self.out_of_bounds, self._parameter_constraints["out_of_bounds"])
        xs = self.X_thresholds_
        return Knots(xs.copy(), self.y_thresholds_.copy(), self.out_of_bounds, xs.dtype)

    def transform(self, T: ArrayLike) -> NDArray[np.floating]:
        """Same as :meth:`predict` (the transformer interface); a DataFrame after ``set_output(transform="pandas")``."""
        return self._wrap_output(self.predict(T), T)

    def fit_transform(
        self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None
    ) -> NDArray[np.floating]:
        """Fit, then predict on ``X``; a DataFrame after ``set_output(transform="pandas")``."""
        return self._wrap_output(self.fit(X, y, sample_weight=sample_weight).predict(X), X)

    def score(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> float:
        r"""The coefficient of determination :math:`R^2` of :meth:`predict` on ``X`` against ``y``.

        :math:`R^2 = 1 - \sum_i w_i (y_i - \hat y_i)^2 / \sum_i w_i (y_i - \bar y)^2`, with
        :math:`\bar y` the weighted mean, as scikit-learn's ``r2_score`` (1.0 for a perfect fit of
        constant ``y``, 0.0 for an imperfect one), so that ``cross_val_score`` works as with scikit-learn's
        regressors.
        """
        pred = self.predict(X).astype(np.float64)
        target = as_float_array(column_or_1d(y, "y"), "y", dtype=np.float64)
        check_consistent_length(X=pred, y=target)
        check_finite(target, "y")
        w = check_sample_weight(sample_weight, target.shape[0], rescale=True)
        w = np.ones(target.shape[0]) if w is None else w.astype(np.float64)
        residual = float(np.dot(w, (target - pred) ** 2))
        total = float(np.dot(w, (target - np.average(target, weights=w)) ** 2))
        if total == 0.0:
            return 1.0 if residual == 0.0 else 0.0
        return 1.0 - residual / total

    def set_score_request(self, *, sample_weight: bool | str | None = UNCHANGED) -> Self:
        """Whether ``score`` takes ``sample_weight`` under scikit-learn's metadata routing (see ``set_fit_request``)."""
        return self._set_request("score", sample_weight=sample_weight)

    def get_feature_names_out(self, input_features: ArrayLike | None = None) -> NDArray[np.object_]:
        """Output feature names, ``["isotonicregression0"]`` as in scikit-learn."""
        check_is_fitted(self, "X_thresholds_")
        return np.asarray([f"{type(self).__name__.lower()}0"], dtype=object)

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lookup", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if "X_thresholds_" in state:
            self._build_lookup()

    #: scikit-learn's regressor tags (``__sklearn_tags__``): ``score`` is R^2; 1-D scores in.
    _estimator_type = "regressor"
    _one_d_input = True


def _one_feature(X, name, min_size=1):
    """:func:`~fastcal._core.validation.column_or_1d`, with scikit-learn's words for more than one column."""
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.shape[1] != 1:
        raise ValueError(f"Isotonic regression input X should be a 1d array or 2d array with 1 feature; {name} has "
                         f"shape {arr.shape}.")
    return column_or_1d(arr, name, min_size=min_size)


def pav_fit(X, labels, w, sign, by_label=None):
    """PAV blocks of the scores ``X`` with targets ``sign * labels``: ``(sw, swy, xf, xl)``.

    Block ``k`` has total weight ``sw[k]``, weighted target sum ``swy[k]`` and
    spans the distinct scores ``xf[k] .. xl[k]``. ``X`` is a contiguous
    float32/float64 array, ``labels`` a label array (see
    :func:`~fastcal._core.validation.as_label_array`), ``w`` None or positive
    weights. This is :func:`fastcal._pav.summarise` (every thread);
    ``by_label`` is :func:`fastcal._pav.sort_for_fit` of the same rows,
    if the caller shares that sort with another statistic.
    """
    return _pav.summarise(X, labels, w, sign, by_label=by_label)


def new_estimator(params):
    """``IsotonicRegression(**params)`` with its parameters checked, for fits that build it from PAV blocks
    (:mod:`fastcal.outofcore`, :mod:`fastcal.dask`) instead of calling ``fit``."""
    est = IsotonicRegression(**params)
    est._validate_params()
    return est


def set_fitted_blocks(est, blocks):
    """Fit ``est`` (``increasing_`` set) from the summary ``blocks`` of all the data
    (:func:`fastcal._pav.merge` of the parts'); returns ``est``."""
    return est._set_blocks(blocks)


def _spearman_increasing(X, y):
    """scikit-learn's ``check_increasing``: the sign of Spearman's rho, with its warning."""
    from scipy.stats import spearmanr

    if X.shape[0] < 2 or np.all(X == X[0]) or np.all(y == y[0]):
        rho = math.nan  # constant input: decreasing, as in scikit-learn (without SciPy's warning)
    else:
        rho = float(spearmanr(X, y)[0])
    increasing = bool(rho >= 0)
    if rho not in (-1.0, 1.0) and X.shape[0] > 3 and not math.isnan(rho):
        F = 0.5 * math.log((1.0 + rho) / (1.0 - rho))
        F_se = 1 / math.sqrt(X.shape[0] - 3)
        if np.sign(math.tanh(F - 1.96 * F_se)) != np.sign(math.tanh(F + 1.96 * F_se)):
            warnings.warn(
                "Confidence interval of the Spearman correlation coefficient spans zero. "
                "Determination of ``increasing`` may be suspect.",
                UserWarning,
                stacklevel=3,
            )
    return increasing
