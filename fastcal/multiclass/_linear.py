r"""Matrix scaling and Dirichlet calibration: the estimators of the linear softmax model ``softmax(W x + b)``.

:class:`MatrixScaling` reads logits (Guo et al. 2017), :class:`DirichletCalibration` log-probabilities (Kull et
al. 2019); both with the L2 or ODIR penalty. A full W is the linear model of :mod:`fastcal.multiclass._model`
(one fused pass a Newton step, O(k^2 (k + 1)^2 / 4) a row); a diagonal or scalar W is the affine model of
vector scaling and of temperature scaling, O(k^2) a row.

Identifiability: adding the same vector to every row of W, or the same
number to every bias, changes no probability. Without a penalty on them,
the fit holds row 0 of W (or b_0) at its start and returns the
representative nearest to the identity map: W less ``1 (mean_j W_j - mean_j
R_j)^T`` (R the identity, or ``(-1, 1)`` for one column of decision values),
and the biases with mean 0. With the penalty, the optimum is unique and
returned as it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import numpy as np

from . import _model
from .._core.params import Options, Real
from .._engine.newton import solve
from .._base import check_is_fitted
from .._persist import register
from .._prediction import Softmax
from ._scaling import SoftmaxCalibration
from ..temperature import INPUT_TYPE, SOLVER_PARAMETERS

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = ["DirichletCalibration", "MatrixScaling"]

_COMMON = {"reg_lambda": [Real(0)], "reg_mu": [None, Real(0)], **SOLVER_PARAMETERS}

#: The affine family of each diagonal ``matrix_type``.
_DIAGONAL_FAMILY = {"diagonal": "vector", "fixed_diagonal": "temperature"}


def _reference(k, d):
    """The identity map from d features to k classes: the identity, or (-1, 1) for one decision value."""
    return np.eye(k) if d == k else np.array([[-1.0], [1.0]])


class _LinearCalibration(SoftmaxCalibration):
    """The shared part of matrix scaling and Dirichlet calibration (``_matrix_type`` gives the form of W)."""

    reg_lambda: float
    reg_mu: float | None

    coef_: NDArray[np.float64]
    intercept_: NDArray[np.float64]

    _state_schema = {"coef_": "array", "intercept_": "array", "n_classes_": "int", "n_iter_": "int",
                     "converged_": "bool", "input_type_": "str"}

    def _matrix(self):
        return "full"

    def _check_penalty(self, k, n_features):
        if self.reg_mu is not None and n_features == 1:
            raise ValueError(f"reg_mu: the ODIR penalty needs one column of X per class; X holds one column of "
                             f"decision values. Use reg_mu=None (L2) with {type(self).__name__}.")

    def _biases_free(self):
        if self._matrix() == "fixed_diagonal":
            return False
        return self.reg_mu == 0.0 if self.reg_mu is not None else self.reg_lambda == 0.0

    def _solve(self, data, beta, n_features):
        k = data.k
        matrix = self._matrix()
        if matrix in _DIAGONAL_FAMILY:
            family = _DIAGONAL_FAMILY[matrix]
            objective = data.affine(family, _model.affine_penalty(k, self.reg_lambda, self.reg_mu))
            free = (_model.free_parameters(family, k) if self._biases_free()
                    else tuple(range(objective.k)))
            res = solve(objective, _model.start(family, k, beta), self.tol, self.max_iter, free)
            a, b = objective.split(objective.expand(res.theta))
            if self._biases_free():
                a, b = _model.centred(a, b)
            return res, (np.diag(a), b)
        first = 1 if n_features == 1 else 0
        d = k - first
        ref = _reference(k, d)
        objective = data.linear(first, _model.linear_penalty(k, d, self.reg_lambda, self.reg_mu))
        fixed = set()
        rows_free = self.reg_lambda == 0.0
        if rows_free:
            fixed.update(range(d))
        if self._biases_free():
            fixed.add(d)
        start = np.c_[beta * ref, np.zeros(k)].ravel()
        free = tuple(i for i in range(start.shape[0]) if i not in fixed)
        res = solve(objective, tuple(start.tolist()), self.tol, self.max_iter, free)
        W, b = objective.split(objective.expand(res.theta))
        if rows_free:
            W = W - (W.mean(axis=0) - ref.mean(axis=0))
        if self._biases_free():
            W, b = _model.centred(W, b)
        return res, (W, b)

    def _set_parameters(self, W, b):
        self.coef_ = W
        self.intercept_ = b

    def _predict(self, z):
        W = np.asarray(self.coef_, dtype=np.float64)
        b = np.asarray(self.intercept_, dtype=np.float64)
        if self._matrix() in _DIAGONAL_FAMILY:
            return _model.predict(z, np.ascontiguousarray(np.diag(W)), b)
        x = np.ascontiguousarray(z[:, 1:]) if W.shape[1] == 1 else z
        return _model.linear_predict(x, W, b)

    def prediction_data(self) -> Softmax:
        """What :meth:`predict_proba` computes, as data (:class:`fastcal._prediction.Softmax`): ``coef_`` and
        ``intercept_`` on the logits or the log-probabilities (a ``coef_`` of one column, fitted on binary decision
        values ``x``, reads the second logit of ``(-x, x)``: the first gets coefficients 0); for backends that
        compute it elsewhere (``fastcal.spark.predict_proba``)."""
        check_is_fitted(self, "n_classes_")
        W = np.asarray(self.coef_, dtype=np.float64)
        if W.shape[1] == 1:
            W = np.hstack([np.zeros_like(W), W])
        return Softmax(W.copy(), np.asarray(self.intercept_, dtype=np.float64).copy(), self.input_type_, False)

    def _check_loaded_state(self):
        super()._check_loaded_state()
        k = self.n_classes_
        W = np.asarray(self.coef_)
        b = np.asarray(self.intercept_)
        if k < 2 or W.ndim != 2 or W.shape[0] != k or W.shape[1] not in (k, 1) or b.shape != (k,):
            raise ValueError(f"invalid fastcal model: {type(self).__name__} needs n_classes_ >= 2, coef_ of shape "
                             "(n_classes_, n_classes_) and intercept_ of shape (n_classes_,)")
        if not (np.all(np.isfinite(W)) and np.all(np.isfinite(b))):
            raise ValueError("invalid fastcal model: coef_ and intercept_ must be finite")
        if self._matrix() in _DIAGONAL_FAMILY and np.any(W[~np.eye(k, dtype=bool)] != 0.0):
            raise ValueError(f"invalid fastcal model: matrix_type={self._matrix()!r} needs a diagonal coef_")


_PENALTY_DOC = """reg_lambda : float, default=0.0
        The penalty's weight on W: with ``reg_mu=None``, L2 on every
        parameter, :math:`\\lambda / (k (k + 1)) (\\sum_{jl} W_{jl}^2 + \\sum_j b_j^2)`;
        with ``reg_mu`` a number, ODIR on the off-diagonal entries only,
        :math:`\\lambda / (k (k - 1)) \\sum_{j \\ne l} W_{jl}^2`.
    reg_mu : float or None, default=None
        None: the L2 penalty; a number: ODIR (off-diagonal and intercept
        regularisation, Kull et al. 2019), adding :math:`\\mu / k \\sum_j b_j^2`.
        Both are per unit weight, added to the mean log loss (so scaling
        every sample weight changes nothing)."""

_COMMON_DOC = """max_iter : int, default=100
        Maximum number of Newton steps (passes over the data; the warm
        start's subsample's are not counted).
    tol : float, default=1e-10
        Stop when the Newton decrement per unit weight, :math:`g^\\top H^{-1} g / W`,
        is at most ``tol``; the last step is then taken without another pass.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_classes)
        W (for one column of decision values, shape (2, 1)).
    intercept_ : ndarray of shape (n_classes,)
        b.
    n_classes_ : int
    n_iter_ : int
        Newton steps taken.
    converged_ : bool
    input_type_ : {"logits", "probabilities"}
        How the fit read ``X``, and how :meth:`predict_proba` reads every
        batch: "auto" is decided once, on the fit's rows."""


@register
class MatrixScaling(_LinearCalibration):
    r"""Matrix scaling of multiclass logits: ``softmax(W z + b)`` with a full W (Guo et al. 2017).

    The most flexible of the affine maps of the logits: every class's
    calibrated logit may use every input logit. It has k(k + 1) parameters, so
    on small calibration sets use the ODIR penalty (``reg_mu``), which
    shrinks W towards a diagonal and b towards 0.

    Parameters
    ----------
    input_type : {"auto", "logits", "probabilities"}
        How to read ``X``. "logits": (n, k) scores, used as they are;
        "probabilities": (n, k) rows in [0, 1] summing to 1, used as the
        log-probabilities ``log(p + 1e-12)`` (then this is
        :class:`DirichletCalibration`); "auto" (scikit-learn's rule):
        probabilities if every row looks like one, logits otherwise. A 1-D
        (or single-column) ``X`` is one binary decision value ``x``: W is
        then (2, 1), and the model is Platt scaling's.
    %(penalty)s
    %(common)s

    Notes
    -----
    Minimises :math:`\sum_i w_i (\log \sum_j e^{u_{ij}} - u_{i y_i}) + W_{tot}\,
    \mathrm{penalty}` with :math:`u_i = W z_i + b`, convex in (W, b), by
    damped Newton steps (the driver of every logistic fit of fastcal): each
    step is one fused pass over the rows for the gradient and the full
    Hessian, O(k^2 (k + 1)^2 / 4) a row in float64 sums over fixed chunks
    (the same bits at any thread count), from the fit of temperature
    scaling; inputs of 65536 rows or more start from the fit of every 16th
    row. Memory beyond the input: O(k^4) per chunk of rows, never O(n k^2).
    Without a penalty on W, its rows are determined only up to a common
    vector (and the biases up to a constant): ``coef_`` is the representative
    nearest to the identity, ``intercept_`` has mean 0. Logits whose rows all
    sum to the same number (centred logits) leave W determined only up to a
    vector added to its columns as well; the fit then returns one of the
    equivalent maps (all give the same probabilities).

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On Calibration
    of Modern Neural Networks. ICML.

    Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song, H. and
    Flach, P. (2019). Beyond temperature scaling: Obtaining well-calibrated
    multi-class probabilities with Dirichlet calibration. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import MatrixScaling
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(100000, 3))
    >>> u = z @ np.array([[2.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.5]]).T
    >>> p = np.exp(u - u.max(1, keepdims=True))
    >>> y = (np.cumsum(p / p.sum(1, keepdims=True), 1) > rng.random((100000, 1))).argmax(1)
    >>> ms = MatrixScaling().fit(z, y)
    >>> (ms.coef_ - ms.coef_[2]).round(1)
    array([[ 2. ,  0.5, -1.5],
           [ 0. ,  1. , -1.5],
           [ 0. ,  0. ,  0. ]])
    """

    _parameter_constraints = {"input_type": INPUT_TYPE, **_COMMON}

    def __init__(
        self,
        *,
        input_type: Literal["auto", "logits", "probabilities"] = "auto",
        reg_lambda: float = 0.0,
        reg_mu: float | None = None,
        max_iter: int = 100,
        tol: float = _model.DEFAULT_TOL,
    ) -> None:
        self.input_type = input_type
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol

    def _reading(self):
        return self.input_type, False


@register
class DirichletCalibration(_LinearCalibration):
    r"""Dirichlet calibration of multiclass probabilities: ``softmax(W log p + b)`` (Kull et al. 2019).

    The natural family of calibration maps for k probabilities, as the
    beta family is for two: it contains the identity, fits any
    Dirichlet-distributed scores per class exactly, and with the ODIR
    penalty (``reg_mu``) it beat temperature, vector and matrix scaling on
    most of the paper's 21 network-dataset pairs.

    Parameters
    ----------
    matrix_type : {"full", "diagonal", "fixed_diagonal"}, default="full"
        The form of W: full (k(k + 1) parameters: matrix scaling of the
        log-probabilities); diagonal, a scale and a bias per class (vector
        scaling of the log-probabilities); a scalar times the identity,
        no biases (temperature scaling of the log-probabilities).
    %(penalty)s
    %(common)s

    Notes
    -----
    ``X`` holds (n, k) probabilities in [0, 1] whose rows sum to 1 (within
    1e-4), read as ``log(p + 1e-12)``. The fit is :class:`MatrixScaling`'s
    (full W) or :class:`VectorScaling`'s and temperature scaling's
    (diagonal W, O(k^2) a row).

    References
    ----------
    Kull, M., Perello-Nieto, M., Kängsepp, M., Silva Filho, T., Song, H. and
    Flach, P. (2019). Beyond temperature scaling: Obtaining well-calibrated
    multi-class probabilities with Dirichlet calibration. NeurIPS.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import DirichletCalibration
    >>> rng = np.random.default_rng(0)
    >>> q = rng.dirichlet([1.0, 1.0, 1.0], size=20000)
    >>> p = q ** 0.5 / (q ** 0.5).sum(1, keepdims=True)   # under-confident scores of the true q
    >>> y = (np.cumsum(q, 1) > rng.random((20000, 1))).argmax(1)
    >>> dc = DirichletCalibration(matrix_type="fixed_diagonal").fit(p, y)
    >>> dc.coef_.round(1)
    array([[2., 0., 0.],
           [0., 2., 0.],
           [0., 0., 2.]])
    """

    _parameter_constraints = {"matrix_type": [Options("full", "diagonal", "fixed_diagonal")], **_COMMON}

    def __init__(
        self,
        *,
        matrix_type: Literal["full", "diagonal", "fixed_diagonal"] = "full",
        reg_lambda: float = 0.0,
        reg_mu: float | None = None,
        max_iter: int = 100,
        tol: float = _model.DEFAULT_TOL,
    ) -> None:
        self.matrix_type = matrix_type
        self.reg_lambda = reg_lambda
        self.reg_mu = reg_mu
        self.max_iter = max_iter
        self.tol = tol

    def _matrix(self):
        return self.matrix_type

    def _reading(self):
        return "probabilities", False


for _cls in (MatrixScaling, DirichletCalibration):
    _cls.__doc__ = _cls.__doc__.replace("%(penalty)s", _PENALTY_DOC).replace("%(common)s", _COMMON_DOC)
