r"""Vector scaling and bias-corrected temperature scaling: the estimators of the affine softmax model.

Both predict ``softmax(a * z + b)`` from (n, k) logits ``z`` (or
probabilities, read as centred log-probabilities), with the parameters of
their family of :mod:`fastcal.multiclass._model`, fitted by Newton's method
(:func:`fastcal._engine.newton.solve`, the driver of every logistic fit of
fastcal) over one fused parallel pass per step.
"""

from __future__ import annotations

import math
import warnings
from typing import TYPE_CHECKING, ClassVar, Literal, Self

import numpy as np

from . import _model
from .._base import BaseCalibrator, check_is_fitted
from .._core.errors import warn_not_converged
from .._core.validation import check_sample_weight
from .._engine.newton import solve
from .._persist import register
from .._prediction import Softmax
from ..temperature import INPUT_TYPE, SOLVER_PARAMETERS, check_reading, class_indices, halley_minimize
from ..temperature import predict_logits, read_logits, softmax_data

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["BiasCorrectedTemperatureScaling", "SoftmaxCalibration", "VectorScaling"]

#: Logits above this magnitude are refused: the Hessian sums products of two of them (float64 overflows at 1.8e308).
_MAX_LOGIT = 1e100


def temperature_start(data, max_iter):
    """The scale the Newton fit starts from: temperature scaling's inverse temperature, solved to 1e-6 (its
    Halley solver, safeguarded by a bracket, finds it where the identity map saturates every probability and
    leaves Newton's method no curvature). At its lower bound e^-10 (logits of 10^5 and more), ``1 / spread``
    instead (the largest spread of a row's logits, ``data.bounds[1]``: every row's scaled logits then within 1 of
    each other); at its upper bound (separable rows) or if it does not converge, 1.0. ``data``: an
    :class:`fastcal.multiclass._model.ArrayData` or :class:`fastcal.multiclass.rows.RowsData`."""
    spread = data.bounds[1]
    beta, _, converged = halley_minimize(data.temperature_derivatives, max_iter, 1e-6,
                                         data.temperature_start(max_iter))
    if converged and beta <= math.exp(-10.0) * 1.001 and spread > 0.0:
        return 1.0 / spread
    return beta if converged and math.exp(-10.0) * 1.001 < beta < math.exp(10.0) * 0.999 else 1.0


def check_logit_range(data):
    """Refuse logits above :data:`_MAX_LOGIT` in magnitude (``data.bounds``), naming X."""
    top = max(data.bounds[0])
    if top > _MAX_LOGIT:
        raise ValueError(f"X: the logits reach {top:.3g} in magnitude; above {_MAX_LOGIT:g} the Hessian's float64 "
                         "sums (of products of two logits) overflow. Scale them down.")


_INPUT_TYPE_DOC = """input_type : {"auto", "logits", "probabilities"}
        How to read ``X``. "logits": (n, k) scores, used as they are;
        "probabilities": (n, k) rows in [0, 1] summing to 1, used as the
        centred log-probabilities ``log(p + 1e-12)`` less their row mean (the
        inverse softmax of Alexandari et al.); "auto" (scikit-learn's rule):
        probabilities if every row looks like one, logits otherwise. A 1-D (or
        single-column) ``X`` is a binary decision value ``x``, read as the
        logits ``(-x, x)``."""


class SoftmaxCalibration(BaseCalibrator):
    """The fit and prediction every multiclass calibrator of this package shares: the inputs' checks, the start
    from temperature scaling, the Newton fit of a subclass's objective (``_solve``), the warnings.

    A subclass defines ``_reading()`` (``(input_type, centre)``: how X becomes the (n, k) logits the fit reads,
    :func:`fastcal.temperature.read_logits`' arguments),
    ``_solve(data, beta, n_features)`` (``data`` as in :meth:`fit_data`; returns the
    :class:`fastcal._engine.newton.NewtonResult` and the fitted parameters,
    for ``_set_parameters``), ``_predict(z)``, and ``_biases_free()``
    (whether an absent class sends its bias to minus infinity).
    """

    n_classes_: int
    n_iter_: int
    converged_: bool
    input_type_: str

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the parameters by minimising the weighted log loss (plus the penalty, where there is one).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Logits, probabilities, or binary decision values (see ``input_type``).
        y : array-like of shape (n_samples,)
            Class indices in ``0 .. n_classes - 1``: label ``j`` is column
            ``j`` of ``X`` (as for :class:`fastcal.TemperatureScaling`); map
            class labels first, e.g. ``np.searchsorted(model.classes_, y)``.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights; scaling them all by a constant changes nothing.
        """
        input_type, centre = self.reading()
        name = type(self).__name__
        if y is None:
            raise ValueError(f"{name} requires y to be passed, but the target y is None.")
        z, reading = read_logits(X, input_type, centre=centre)
        shape = np.asarray(X).shape
        n_features = 1 if len(shape) == 1 else int(shape[1])
        labels = class_indices(y, z, n_features)
        w = check_sample_weight(sample_weight, z.shape[0], rescale=True)
        w = np.empty(0) if w is None else np.ascontiguousarray(w, dtype=np.float64)
        return self.fit_data(_model.ArrayData(z, labels, w), n_features, reading, stacklevel=3)

    def fit_data(self, data, n_features, reading, stacklevel=2):
        """Fit on ``data`` (an :class:`fastcal.multiclass._model.ArrayData` or
        :class:`fastcal.multiclass.rows.RowsData`: the rows' logits, labels and weights, checked) read from
        ``n_features`` columns of X as ``reading`` ("logits" or "probabilities":
        :func:`fastcal.temperature.read_logits`'); the warnings at ``stacklevel``. The one orchestration of every
        backend's fit."""
        name = type(self).__name__
        k = data.k
        check_logit_range(data)
        self._check_penalty(k, n_features)
        beta = temperature_start(data, self.max_iter)
        res, params = self._solve(data, beta, n_features)
        if not res.converged:
            warn_not_converged(name, self.max_iter, "Newton iterations", stacklevel=stacklevel)
        if self._biases_free() and np.any(data.counts == 0.0):
            absent = np.flatnonzero(data.counts == 0.0).tolist()
            warnings.warn(f"{name}: class {absent[0] if len(absent) == 1 else absent} has no row of positive weight: "
                          "its bias has no finite optimum (its probability goes to 0); the fit stopped where the "
                          "Newton decrement met tol.", UserWarning, stacklevel=stacklevel)
        self._set_parameters(*params)
        self.n_iter_ = res.n_iter
        self.converged_ = res.converged
        self.n_classes_ = k
        self.n_features_in_ = n_features
        self.input_type_ = reading
        return self

    def reading(self) -> tuple[str, bool]:
        """``(input_type, centre)``: how the fit reads X (:func:`fastcal.temperature.read_logits`' arguments), the
        parameters checked."""
        self._validate_params()
        return self._reading()

    def _check_loaded_state(self):
        super()._check_loaded_state()
        check_reading(self)

    def _check_penalty(self, k, n_features):
        """Refuse a penalty the model cannot have (none here)."""

    def _biases_free(self):
        return True

    def predict_proba(self, X: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities, shape (n_samples, n_classes), in the input's float dtype (computed in
        float64)."""
        check_is_fitted(self, "n_classes_")
        return self._predict(predict_logits(X, self, centre=self._reading()[1]))

    def predict(self, X: ArrayLike) -> NDArray[np.floating]:
        """Same as :meth:`predict_proba` (scikit-learn's calibrators predict probabilities)."""
        return self.predict_proba(X)


class _AffineScaling(SoftmaxCalibration):
    """The estimator of one family of the affine softmax model (``_family``); the subclasses name it."""

    _family: ClassVar[str]
    _parameter_constraints = {"input_type": INPUT_TYPE, **SOLVER_PARAMETERS}

    def __init__(
        self,
        *,
        input_type: Literal["auto", "logits", "probabilities"] = "auto",
        max_iter: int = 100,
        tol: float = _model.DEFAULT_TOL,
    ) -> None:
        self.input_type = input_type
        self.max_iter = max_iter
        self.tol = tol

    def _reading(self):
        return self.input_type, True

    def _solve(self, data, beta, n_features):
        family = self._family
        k = data.k
        objective = data.affine(family)
        res = solve(objective, _model.start(family, k, beta), self.tol, self.max_iter,
                    _model.free_parameters(family, k))
        return res, _model.centred(*objective.split(objective.expand(res.theta)))

    def _predict(self, z):
        return _model.predict(z, *self._parameters())

    def prediction_data(self) -> Softmax:
        """What :meth:`predict_proba` computes, as data (:class:`fastcal._prediction.Softmax`): the scales on the
        diagonal of the affine map, the centred log-probabilities for probabilities; for backends that compute it
        elsewhere (``fastcal.spark.predict_proba``)."""
        check_is_fitted(self, "n_classes_")
        return softmax_data(*self._parameters(), self.input_type_, True)

    def _check_loaded_state(self):
        super()._check_loaded_state()
        a, b = self._parameters()
        if self.n_classes_ < 2 or a.shape != (self.n_classes_,) or b.shape != (self.n_classes_,):
            raise ValueError(f"invalid fastcal model: {type(self).__name__} needs n_classes_ >= 2 scales and biases")
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            raise ValueError("invalid fastcal model: the scales and biases must be finite")


@register
class VectorScaling(_AffineScaling):
    r"""Vector scaling of multiclass logits or probabilities: a scale and a bias per class (Guo et al. 2017).

    Predicts ``softmax(scales_ * z + biases_)``. With probabilities it is the
    recipe of Alexandari et al. (2020), the calibration that makes the EM
    estimate of shifted class priors work.

    Parameters
    ----------
    %(input_type)s
    max_iter : int
        Maximum number of Newton steps (passes over the data; the warm
        start's subsample's are not counted).
    tol : float
        Stop when the Newton decrement per unit weight, :math:`g^\top H^{-1} g / W`,
        is at most ``tol``; the last step is then taken without another pass.

    Attributes
    ----------
    scales_ : ndarray of shape (n_classes,)
        The scale of each class's logit.
    biases_ : ndarray of shape (n_classes,)
        The bias of each class, with mean 0 (adding a constant to every bias
        changes no probability).
    n_classes_ : int
    n_iter_ : int
        Newton steps taken.
    converged_ : bool
    input_type_ : {"logits", "probabilities"}
        How the fit read ``X``, and how :meth:`predict_proba` reads every
        batch: "auto" is decided once, on the fit's rows.

    Notes
    -----
    Minimises :math:`\sum_i w_i (\log \sum_j e^{u_{ij}} - u_{i y_i})` with
    :math:`u_{ij} = a_j z_{ij} + b_j`, which is convex in (a, b), by damped
    Newton steps on the 2k - 1 free parameters: each step is one fused pass
    over the rows for the gradient and the Hessian (O(k^2) a row, float64
    sums in fixed chunks: the same bits at any thread count), from the fit
    of temperature scaling. Inputs of 65536 rows or more start from the fit
    of every 16th row. With two classes read from one column of decision
    values (logits (-x, x)), only ``scales_[0] + scales_[1]`` is identified
    (Platt scaling is that model). Unlike the L-BFGS fit
    of ``abstention``, the scales are not bounded below by 0: a negative
    scale is the optimum when a class's logit ranks its rows backwards.

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On Calibration
    of Modern Neural Networks. ICML.

    Alexandari, A., Kundaje, A. and Shrikumar, A. (2020). Maximum Likelihood
    with Bias-Corrected Calibration is Hard-To-Beat at Label Shift Adaptation.
    ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import VectorScaling
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(5000, 3))
    >>> p = np.exp(2.0 * z + [0.0, 0.5, 1.0])
    >>> y = (np.cumsum(p / p.sum(1, keepdims=True), 1) > rng.random((5000, 1))).argmax(1)
    >>> vs = VectorScaling().fit(z, y)
    >>> vs.scales_.round(1), (vs.biases_ - vs.biases_[0]).round(1)
    (array([2., 2., 2.]), array([0. , 0.6, 1.1]))
    """

    _family = "vector"
    _state_schema = {"scales_": "array", "biases_": "array", "n_classes_": "int", "n_iter_": "int",
                     "converged_": "bool", "input_type_": "str"}

    scales_: NDArray[np.float64]
    biases_: NDArray[np.float64]

    def _set_parameters(self, a, b):
        self.scales_ = a
        self.biases_ = b

    def _parameters(self):
        return np.asarray(self.scales_, dtype=np.float64), np.asarray(self.biases_, dtype=np.float64)


@register
class BiasCorrectedTemperatureScaling(_AffineScaling):
    r"""Bias-corrected temperature scaling (BCTS): one temperature and a bias per class (Alexandari et al. 2020).

    Predicts ``softmax(beta_ * z + biases_)``: temperature scaling
    (:class:`fastcal.TemperatureScaling`) with a bias per class, which
    corrects a model's systematic over- or under-prediction of some classes.
    Calibrating with it before the EM estimate of shifted class priors is the
    recipe that makes that estimate hard to beat.

    Parameters
    ----------
    %(input_type)s
    max_iter : int
        Maximum number of Newton steps (passes over the data; the warm
        start's subsample's are not counted).
    tol : float
        Stop when the Newton decrement per unit weight, :math:`g^\top H^{-1} g / W`,
        is at most ``tol``; the last step is then taken without another pass.

    Attributes
    ----------
    beta_ : float
        The inverse temperature.
    temperature_ : float
        ``1 / beta_``.
    biases_ : ndarray of shape (n_classes,)
        The bias of each class, with mean 0.
    n_classes_ : int
    n_iter_ : int
        Newton steps taken.
    converged_ : bool
    input_type_ : {"logits", "probabilities"}
        How the fit read ``X``, and how :meth:`predict_proba` reads every
        batch: "auto" is decided once, on the fit's rows.

    Notes
    -----
    Minimises the weighted log loss of ``softmax(beta * z + b)``, convex in
    (beta, b), by damped Newton steps on its k free parameters (one fused
    pass over the rows a step). Unlike ``abstention``'s L-BFGS fit, beta is
    not bounded below by 0.

    References
    ----------
    Alexandari, A., Kundaje, A. and Shrikumar, A. (2020). Maximum Likelihood
    with Bias-Corrected Calibration is Hard-To-Beat at Label Shift Adaptation.
    ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import BiasCorrectedTemperatureScaling
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(5000, 3))
    >>> p = np.exp(0.5 * z + [0.0, 0.5, 1.0])
    >>> y = (np.cumsum(p / p.sum(1, keepdims=True), 1) > rng.random((5000, 1))).argmax(1)
    >>> bcts = BiasCorrectedTemperatureScaling().fit(z, y)
    >>> round(bcts.beta_, 1), (bcts.biases_ - bcts.biases_[0]).round(1)
    (0.5, array([0. , 0.5, 1.1]))
    """

    _family = "bcts"
    _state_schema = {"beta_": "float", "biases_": "array", "n_classes_": "int", "n_iter_": "int",
                     "converged_": "bool", "input_type_": "str"}

    beta_: float
    biases_: NDArray[np.float64]

    def _set_parameters(self, a, b):
        self.beta_ = float(a[0])
        self.biases_ = b

    def _parameters(self):
        b = np.asarray(self.biases_, dtype=np.float64)
        return np.full(b.shape[0], float(self.beta_)), b

    @property
    def temperature_(self) -> float:
        check_is_fitted(self, "beta_")
        return 1.0 / self.beta_


for _cls in (VectorScaling, BiasCorrectedTemperatureScaling):
    _cls.__doc__ = _cls.__doc__.replace("%(input_type)s", _INPUT_TYPE_DOC)
