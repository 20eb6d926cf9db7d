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

from . import _isotonic_kernels as _k
from ._base import UNCHANGED, BaseCalibrator, check_is_fitted
from ._errors import InvalidParameterError
from ._params import Boolean, Options, Real, check
from ._persist import register
from ._sort import sort_pairs, sort_with
from ._parallel import parallel_for, run
from ._validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_finite,
    check_numeric,
    check_sample_weight,
    column_or_1d,
    is_binary,
    rescale_weights,
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

#: Sorting in two threads pays from about this many scores on.
_THREADED_SORT_MIN_SIZE = 1 << 18


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

    A fit sorts the scores. With 0/1 labels and no weights fastcal sorts the
    scores of each class by value (no argsort) in two threads and merges the
    two runs; already sorted scores are detected and not sorted again.

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
        w = check_sample_weight(sample_weight, n, rescale=True)

        if self.increasing == "auto":
            self.increasing_ = _spearman_increasing(x, labels)
        else:
            self.increasing_ = bool(self.increasing)
        if w is not None and w.min() == 0:
            keep = w > 0
            x, labels, w = x[keep], labels[keep], w[keep]

        blocks = pav_fit(x, labels, w, 1.0 if self.increasing_ else -1.0)
        return self._set_blocks(with_score_sums(x, w, blocks) if self.centered else blocks)

    def _set_blocks(self, blocks):
        """Set the fitted attributes from PAV blocks ``(sw, swy, xf, xl)`` (see :func:`pav_fit`).

        Fits of data that is split by score range (threads, Dask partitions,
        chunks of a file) end here too, after :func:`pool_blocks`. Centered
        fits need the fifth array ``swx`` (see :func:`with_score_sums`).
        """
        sw, swy, xf, xl = blocks[:4]
        vals = swy / sw
        if not self.increasing_:
            vals = -vals
        vals = vals.astype(xf.dtype, copy=False)
        if self.y_min is not None or self.y_max is not None:
            lo = -np.inf if self.y_min is None else self.y_min
            hi = np.inf if self.y_max is None else self.y_max
            np.clip(vals, lo, hi, out=vals)
        if self.centered:
            self.X_thresholds_, self.y_thresholds_ = _centered_knots(vals, sw, xf, xl, blocks[4])
        else:
            self.X_thresholds_, self.y_thresholds_ = _k.thresholds(vals, xf, xl, vals.shape[0])
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
        self._lookup = _k.build_lookup(xs, _lookup_cells(xs.shape[0])) if xs.shape[0] > 1 else None

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
    """:func:`~fastcal._validation.column_or_1d`, with scikit-learn's words for more than one column."""
    arr = np.asarray(X)
    if arr.ndim == 2 and arr.shape[1] != 1:
        raise ValueError(f"Isotonic regression input X should be a 1d array or 2d array with 1 feature; {name} has "
                         f"shape {arr.shape}.")
    return column_or_1d(arr, name, min_size=min_size)


def _lookup_cells(n_thresholds):
    """Cells of the prediction lookup table: a power of two, 16 to 32 per knot, at most 2^16.

    Most cells then hold no knot, so a prediction rarely searches; a larger
    table would no longer fit in the L2 cache (measured: 2 cells per knot
    predicts 25% slower, 2^18 cells 50% slower).
    """
    return 1 << min(16, max(4, int(16 * n_thresholds - 1).bit_length()))


def _centered_knots(vals, sw, xf, xl, swx):
    """Knots of the centered fit: block centres ``swx / sw`` (clipped into ``[xf, xl]``) and the end points.

    Blocks whose values became equal in the scores' dtype (or by ``y_min``/``y_max``) are one block here.
    """
    starts = np.flatnonzero(np.concatenate(([True], vals[1:] != vals[:-1])))
    if starts.shape[0] < vals.shape[0]:
        ends = np.append(starts[1:], vals.shape[0]) - 1
        sw, swx = np.add.reduceat(sw, starts), np.add.reduceat(swx, starts)
        vals, xf, xl = vals[starts], xf[starts], xl[ends]
    centers = np.clip((swx / sw).astype(xf.dtype), xf, xl)
    xs, ys = [centers], [vals]
    if xf[0] < centers[0]:
        xs.insert(0, xf[:1])
        ys.insert(0, vals[:1])
    if xl[-1] > centers[-1]:
        xs.append(xl[-1:])
        ys.append(vals[-1:])
    return np.concatenate(xs), np.concatenate(ys)


def with_score_sums(X, w, blocks):
    """PAV blocks of ``X`` (from :func:`pav_fit`) with a fifth array ``swx``: each block's sum of weight times score.

    Centered isotonic regression needs it; it pools like the other sums
    (:func:`pool_blocks`). Each row's block is found through the prediction
    lookup table (in parallel), and the sums are a ``bincount`` in row order,
    so they do not depend on the thread count.
    """
    nb = blocks[0].shape[0]
    idx = np.empty(X.shape[0], dtype=np.int32 if nb < 2**31 else np.int64)
    table, scale = _k.build_lookup(blocks[2], _lookup_cells(nb))
    parallel_for(_k.block_index, X.shape[0], X, blocks[2], table, scale, idx)
    wx = X.astype(np.float64) if w is None else X * w.astype(np.float64)
    swx = np.bincount(idx, weights=wx, minlength=nb)
    return (*blocks, swx)


def pav_fit(X, labels, w, sign):
    """PAV blocks of the scores ``X`` with targets ``sign * labels``: ``(sw, swy, xf, xl)``.

    Block ``k`` has total weight ``sw[k]``, weighted target sum ``swy[k]`` and
    spans the distinct scores ``xf[k] .. xl[k]``. ``X`` is a contiguous
    float32/float64 array, ``labels`` a label array (see
    :func:`~fastcal._validation.as_label_array`), ``w`` None or positive weights.
    """
    n = X.shape[0]
    eps = X.dtype.type(np.finfo(X.dtype).resolution)
    # The stack is as deep as the number of blocks; pages never written are never touched.
    sw = np.empty(n)
    swy = np.empty(n)
    xf = np.empty(n, dtype=X.dtype)
    xl = np.empty(n, dtype=X.dtype)
    stack = (sw, swy, xf, xl)
    if _k.is_sorted(X):
        nb = _k.pav_ordered(X, labels, _weights_or_empty(w), n, eps, sign, *stack)
    elif (binary := bool(is_binary(labels))) and w is None:
        nb = _pav_binary(*_sorted_class_runs(X, labels), eps, sign, stack)
    elif binary or w is None:
        # One float64 per row carries the target, or the weight with the 0/1 label as its sign, through
        # the sort: no pass reads at random (a gather after an argsort cost as much as the sort).
        if binary:
            xs, ps = sort_pairs(X, w.astype(np.float64, copy=False), flip=labels)
        else:
            xs, ps = sort_pairs(X, labels.astype(np.float64, copy=False))
        kind = (2 if X.dtype == np.float32 else 1) if binary else 0  # see pav_carried
        nb = _pav_sorted(xs, (ps, kind), eps, sign, stack)
    else:
        xs, ys, ws = sort_with(X, labels, w)
        nb = _pav_sorted(xs, (ys, ws), eps, sign, stack)
    # Copies: views would keep the n-sized stack arrays alive.
    return sw[:nb].copy(), swy[:nb].copy(), xf[:nb].copy(), xl[:nb].copy()


def new_estimator(params):
    """``IsotonicRegression(**params)`` with its parameters checked, for fits that build it from PAV blocks
    (:mod:`fastcal.outofcore`, :mod:`fastcal.dask`) instead of calling ``fit``."""
    est = IsotonicRegression(**params)
    est._validate_params()
    return est


def set_fitted_blocks(est, parts):
    """Fit ``est`` (``increasing_`` set) from the PAV blocks of data parts adjacent in score order.

    ``parts`` as for :func:`pool_blocks` (one part is taken as it is); returns ``est``.
    """
    return est._set_blocks(pool_blocks(parts) if len(parts) > 1 else parts[0])


def pool_blocks(parts):
    """Pool the PAV blocks of parts of the data that are adjacent in score order.

    ``parts`` are block tuples ``(sw, swy, xf, xl)`` from :func:`pav_fit`, in
    increasing score order, with the same ``sign``; a part's lowest score must
    start a tie group (be at least the dtype's resolution above the previous
    part's highest score). Pooling adjacent violators over the parts' blocks
    gives exactly the blocks of a fit of all the data at once, because the
    blocks of a part are unions of blocks of the whole. Parts with the fifth
    array ``swx`` (centered fits) give the pooled ``swx`` too: each part's
    block adds its sum to the pooled block that contains it, in order.
    """
    arrays = [np.concatenate(a) for a in zip(*parts)]
    sw, swy, xf, xl = arrays[:4]
    first = xf.copy() if len(arrays) > 4 else None
    nb = _k.push_blocks(sw, swy, xf, xl, 0, 0, sw.shape[0])
    pooled = (sw[:nb], swy[:nb], xf[:nb], xl[:nb])
    if first is None:
        return pooled
    swx = np.zeros(nb)
    np.add.at(swx, np.searchsorted(pooled[2], first, side="right") - 1, arrays[4])
    return (*pooled, swx)


def _weights_or_empty(w):
    return np.empty(0, dtype=np.float64) if w is None else w


def sorted_class_runs(X, labels):
    """The scores of 0/1 ``labels`` sorted per class, without an argsort: ``(big_a, big_b, small, big_label)``.

    ``big_a`` and ``big_b`` are sorted runs of the scores of the larger class
    (label ``big_label``), ``small`` the sorted scores of the other; the sorts
    run in two threads on big input. ``X`` is a contiguous float32/float64
    array (it is not modified). Other fits over sorted scores (Venn-Abers)
    share this ordering with the isotonic fit.
    """
    return _sorted_class_runs(X, labels)


def _sorted_class_runs(X, labels):
    """Sorted runs of the scores of each class: ``(big_a, big_b, small, big_label)``.

    The scores are split by label, then sorted by value (no argsort) in two
    threads; NumPy's sort releases the GIL. To balance the threads, the larger
    class is cut so that one thread sorts half of all scores and the other
    sorts the rest; :func:`~fastcal._isotonic_kernels.pav_binary` merges the runs.
    """
    n = X.shape[0]
    n_pos = _k.count_positive(labels)
    n_neg = n - n_pos
    buf = np.empty(n + 1, dtype=X.dtype)
    _k.split_by_label(X, labels, buf)
    neg, pos = buf[:n_neg], buf[n_neg + 1 :]
    big, small, big_label = (neg, pos, 0.0) if n_neg >= n_pos else (pos, neg, 1.0)
    if n < _THREADED_SORT_MIN_SIZE:
        big.sort()
        small.sort()
        return big, big[:0], small, big_label
    cut = n // 2
    first, second = big[:cut], big[cut:]
    run([(first.sort, ()), (_sort_each, (second, small))])
    return first, second, small, big_label


def _sort_each(*arrays):
    for a in arrays:
        a.sort()


def _pav_binary(big_a, big_b, small, big_label, eps, sign, stack):
    """Run :func:`~fastcal._isotonic_kernels.pav_binary`, in two threads on big input.

    The score range is cut at a score ``P`` with about half the scores below
    it and none within ``eps`` below it, so that ``P`` starts a new tie group
    either way. Each thread fits one side into its own part of the stack
    arrays; the blocks of the upper side are then pooled onto the lower
    side's stack, which gives exactly the fit of the whole.
    """
    runs = (big_a, big_b, small)
    n = sum(r.shape[0] for r in runs)
    cuts = _range_cut(runs, eps) if n >= _THREADED_SORT_MIN_SIZE else None
    if cuts is None:
        return _k.pav_binary(big_a, big_b, small, big_label, eps, sign, *stack)
    lower = [r[:c] for r, c in zip(runs, cuts)]
    upper = [r[c:] for r, c in zip(runs, cuts)]
    offset = sum(cuts)
    upper_stack = [a[offset:] for a in stack]
    top, nb_upper = run([(_k.pav_binary, (*lower, big_label, eps, sign, *stack)),
                         (_k.pav_binary, (*upper, big_label, eps, sign, *upper_stack))])
    return _k.push_blocks(*stack, top, offset, offset + nb_upper)


def _range_cut(runs, eps, tries=64):
    """Cut points of the sorted ``runs`` at a score ``P`` near the median of all, or None.

    Below ``P`` no score lies within ``eps``, so ``P`` starts a tie group.
    """
    n = sum(r.shape[0] for r in runs)
    ref = max(runs, key=len)
    lo, hi = 0, ref.shape[0]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if sum(np.searchsorted(r, ref[mid]) for r in runs) < n // 2:
            lo = mid
        else:
            hi = mid
    for i in range(hi, min(hi + tries, ref.shape[0])):
        cut_at = ref[i]
        cuts = [int(np.searchsorted(r, cut_at)) for r in runs]
        below = [float(r[c - 1]) for r, c in zip(runs, cuts) if c > 0]
        if below and float(cut_at) - max(below) >= eps:
            return cuts
    return None


def _pav_sorted(xs, rows, eps, sign, stack, tries=64):
    """The PAV of sorted scores ``xs``, in two threads on big input; returns the number of blocks.

    ``rows`` is ``(ys, ws)`` for :func:`~fastcal._isotonic_kernels.pav_ordered`
    or ``(p, kind)`` for :func:`~fastcal._isotonic_kernels.pav_carried`
    (``kind`` an int). The rows are cut near the middle, before a score at
    least ``eps`` above the one before it, so that it starts a tie group
    either way; the blocks of the upper half are pooled onto the lower half's,
    as in :func:`_pav_binary`.
    """
    carried = isinstance(rows[1], int)

    def call(lo, hi, out):
        if carried:
            p, kind = rows
            return _k.pav_carried, (xs[lo:hi], p[lo:hi], kind, eps, sign, *out)
        ys, ws = rows
        return _k.pav_ordered, (xs[lo:hi], ys[lo:hi], ws[lo:hi], hi - lo, eps, sign, *out)

    n = xs.shape[0]
    cut = None
    if n >= _THREADED_SORT_MIN_SIZE:
        for c in range(n // 2, min(n // 2 + tries, n)):
            if float(xs[c]) - float(xs[c - 1]) >= eps:
                cut = c
                break
    if cut is None:
        fit, args = call(0, n, stack)
        return fit(*args)
    top, nb_upper = run([call(0, cut, stack), call(cut, n, [a[cut:] for a in stack])])
    return _k.push_blocks(*stack, top, cut, cut + nb_upper)


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
