r"""Temperature scaling: multiclass calibration with one parameter.

Guo, Pleiss, Sun and Weinberger (2017) calibrate a network's logits ``z`` by
``softmax(z / T)``, fitting the temperature ``T`` by minimising the log loss
on held-out data. fastcal fits the inverse temperature :math:`\beta = 1/T`:

.. math:: L(\beta) = \sum_i w_i \left(\log \sum_j e^{\beta z_{ij}} - \beta z_{i y_i}\right),\quad
          L'(\beta) = \sum_i w_i (\mathrm{E}_{p_i}[z_i] - z_{i y_i}),\quad
          L''(\beta) = \sum_i w_i \mathrm{Var}_{p_i}[z_i] \ge 0

with :math:`p_i = \mathrm{softmax}(\beta z_i)`: the loss is convex in
:math:`\beta`. The loss of a row is the cumulant generating function of its
logits, so its derivatives of every order are the cumulants of ``z_i`` under
:math:`p_i`; one fused parallel pass over the (n, k) logits gives the first
four. Halley steps (cubic convergence, with the third derivative), safeguarded
by bisection of a bracket, from the fit of a subsample of the rows, converge
in two passes over the data on typical inputs; the fourth derivative lets
the iteration stop after the second without a third pass to confirm it.

Internal API (for the tests, which check the pass against a naive reference and
across thread counts, and the solver and its start on their own): :func:`loss_derivatives`, the one fused
pass; :func:`halley_minimize`, the solver; :func:`warm_start`, the start from a subsample of at least
:data:`SUBSAMPLE_MIN` rows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal, Self

import numpy as np

from . import _kernels as _k
from .._base import BaseCalibrator, check_is_fitted
from .._engine.chunked import Partials, merge_exact
from .._core.errors import warn_not_converged
from .._core.parallel import parallel_for
from .._core.params import Integer, Options, Real
from .._persist import register
from .._prediction import Softmax
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_finite,
    check_sample_weight,
    column_or_1d,
    value_range,
)

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["TemperatureScaling"]

# Internal API (fastcal.multiclass reads its inputs the same way): read_logits, class_indices, predict_logits,
# check_reading, softmax_data, reading_why, probability_errors, ROW_SUM_TOL, INPUT_TYPE, SOLVER_PARAMETERS.

#: The constraints of the parameters that every multiclass calibrator shares (fastcal.multiclass uses them too).
INPUT_TYPE = [Options("auto", "logits", "probabilities")]
SOLVER_PARAMETERS = {"max_iter": [Integer(1)], "tol": [Real(0, open_low=True)]}

#: Bounds of log(beta), as in scikit-learn: beta in [e^-10, e^10].
_LOG_BETA_BOUNDS = (-10.0, 10.0)
#: Added to probabilities before taking logs, as in scikit-learn.
_PROBA_EPS = 1e-12
#: Rows of probabilities must sum to 1 within this tolerance.
_ROW_SUM_TOL = 1e-6
#: A fit of at least SUBSAMPLE_MIN rows starts from the fit of every _SUBSAMPLE_STRIDE-th row (or of
#: _SUBSAMPLE_ROWS rows, evenly spaced, if fewer), solved to _SUBSAMPLE_TOL (see warm_start).
SUBSAMPLE_MIN = 1 << 14
_SUBSAMPLE_STRIDE = 16
_SUBSAMPLE_ROWS = 1 << 15
_SUBSAMPLE_TOL = 1e-6


def read_logits(X, input_type, name="X", *, centre=False, why="input_type='probabilities'"):
    """``(z, reading)``: (n, k) float logits from decision values, logits or probabilities (scikit-learn's rules),
    and how ``X`` was read, "logits" or "probabilities" (what an "auto" fit stores, to read every later batch
    the same way).

    1-D or single-column decision values ``x`` become two-class logits
    ``(-x, x)`` (read as "logits"); probabilities (``input_type="probabilities"``, or "auto" and
    every row in [0, 1] summing to 1) become ``log(p + 1e-12)``, less their
    mean over the row with ``centre`` (the inverse softmax that vector
    scaling's authors use). Bad input
    raises the exception types of scikit-learn's ``check_array``, with its words; scores that are not the
    probabilities ``input_type`` asks for, a ``ValueError`` saying ``why`` they must be.
    """
    if X is None:
        raise ValueError(f"{name} must be an array of scores, got None.")
    if type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(f"Sparse data was passed for {name}, but dense data is required. Use '.toarray()' to "
                        "convert to a dense numpy array.")
    arr = np.asarray(X)
    if arr.dtype == object:
        try:
            arr = arr.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{name}: {exc}") from None
    if np.issubdtype(arr.dtype, np.complexfloating):
        raise ValueError(f"Complex data not supported: {name} has dtype {arr.dtype}.")
    if arr.ndim == 2 and arr.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={arr.shape}) while a minimum of 1 is required: {name} "
                         "needs one column of scores per class (or one of binary decision values).")
    if arr.ndim == 1 or (arr.ndim == 2 and arr.shape[1] == 1):
        col = as_float_array(arr.reshape(-1), name)
        if col.shape[0] == 0:
            raise ValueError(f"{name} must have at least 1 sample, got 0.")
        check_finite(col, name)
        if input_type == "probabilities":
            raise ValueError(f"{name} holds one column; probabilities need one column per class (n, k).")
        return np.ascontiguousarray(np.stack([-col, col], axis=1)), "logits"
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 1-D or 2-D (n_samples, n_classes), got shape {arr.shape}.")
    z = as_float_array(arr, name)
    if z.shape[0] == 0:
        raise ValueError(f"{name} must have at least 1 sample, got 0.")
    if input_type == "logits":
        check_finite(z, name)
        return z, "logits"
    in_range, sums_ok = probability_facts(z, name)
    if not reads_probabilities(input_type, in_range, sums_ok, name, why):
        return z, "logits"
    return log_probabilities(z, centre), "probabilities"


def probability_facts(z, name="X"):
    """``(in_range, sums_ok)`` of finite (n, k) float scores ``z`` (a ``ValueError`` naming ``name`` otherwise):
    whether every value is in [0, 1], and whether every row sums to 1 within 1e-6 (rows whose values are not in
    [0, 1] are not summed). One pass for the finiteness check and the range, one for the row sums."""
    if z.shape[0] == 0:
        return True, True
    zmin, zmax = value_range(z, name)
    in_range = bool(zmin >= 0 and zmax <= 1)
    sums_ok = in_range and bool(np.all(np.abs(z.sum(axis=1, dtype=np.float64) - 1.0) <= _ROW_SUM_TOL))
    return in_range, sums_ok


#: Rows of probabilities must sum to 1 within this tolerance (the Spark predictions check it too).
ROW_SUM_TOL = _ROW_SUM_TOL


def probability_errors(name="X", why="input_type='probabilities'"):
    """The messages of scores read as probabilities that are not: ``(outside [0, 1], a row not summing to 1)``."""
    return (f"{name} must hold probabilities in [0, 1] ({why}).",
            f"the rows of {name} must sum to 1 (within {_ROW_SUM_TOL:g}) ({why}).")


def reads_probabilities(input_type, in_range, sums_ok, name="X", why="input_type='probabilities'"):
    """Whether scores of :func:`probability_facts` ``(in_range, sums_ok)`` (all the rows') are read as
    probabilities under ``input_type`` (scikit-learn's rule for "auto"); "probabilities" that are not raise the
    ``ValueError`` naming ``name`` and ``why`` they must be probabilities."""
    if input_type == "probabilities":
        range_error, sum_error = probability_errors(name, why)
        if not in_range:
            raise ValueError(range_error)
        if not sums_ok:
            raise ValueError(sum_error)
        return True
    return input_type == "auto" and in_range and sums_ok


def log_probabilities(p, centre=False):
    """``log(p + 1e-12)`` of (n, k) probabilities, in their dtype; less each row's mean with ``centre`` (the
    inverse softmax of vector scaling's authors)."""
    logp = np.log(p + p.dtype.type(_PROBA_EPS))
    if centre:
        logp -= logp.mean(axis=1, dtype=np.float64, keepdims=True).astype(logp.dtype)
    return logp


def class_indices(y, z, n_features, name="y", x_name="X"):
    """``y`` checked as class indices of the (n, k) logits ``z``: int64 in ``0 .. k - 1``, one per row.

    ``n_features`` is the number of columns of the user's ``X`` (1 for binary
    decision values), named in the error. Labels that are not integers, or
    lie outside the columns, raise a ``ValueError`` naming ``y`` (the
    arguments' names are ``name`` and ``x_name``).
    """
    k = z.shape[1]
    labels = column_or_1d(y, name, allow_column=False, min_size=0)
    if labels.dtype == object or labels.dtype.kind in "USV":
        try:  # numbers in an object array are numbers
            labels = labels.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"Unknown label type: {name} must hold integer class indices (one per column of "
                             f"{x_name}), got values such as {labels[:3].tolist()}.") from None
    check_consistent_length(**{x_name: z, name: labels})
    labels = as_label_array(labels, name)
    if labels.dtype.kind == "f":
        check_finite(labels, name)
        if np.any(labels != np.round(labels)):
            raise ValueError(f"{name} must hold integer class indices.")
    lo, hi = labels.min(), labels.max()  # before the cast to int64, which would wrap 1e308
    if lo < 0 or hi >= k:
        columns = (f"one per column of {x_name}" if n_features > 1 else
                   f"{x_name} has {n_features} feature(s): binary decision values, read as 2 classes")
        raise ValueError(f"{name} must hold class indices in 0 .. {k - 1} ({columns}); "
                         f"found {float(lo):g} .. {float(hi):g}. Labels are column indices of {x_name}, as for "
                         "scikit-learn's temperature calibrator; map class labels to them first, e.g. "
                         f"np.searchsorted(model.classes_, {name}).")
    return labels.astype(np.int64, copy=False)


def predict_logits(X, estimator, *, centre=False):
    """The (n, k) logits of ``X`` at the predict of the fitted multiclass ``estimator``: read as its fit read X
    (``input_type_``: an "auto" fit decides once, from the fit's rows, so that a batch of logits that happen to
    look like probabilities is not read otherwise), its columns checked first."""
    _check_columns(X, estimator)  # a batch of the wrong width: the first thing to say
    return read_logits(X, estimator.input_type_, centre=centre, why=reading_why(estimator))[0]


def reading_why(estimator):
    """Why the fitted multiclass ``estimator`` reads probabilities, in its errors: its ``input_type``, the fit's
    decision of "auto", or its class (Dirichlet calibration)."""
    given = estimator.reading()[0]
    why = (f"input_type={given!r}" if "input_type" in estimator.get_params()
           else f"{type(estimator).__name__} reads probabilities")
    return why if estimator.input_type_ == given else f"the fit read X as probabilities ({why})"


def softmax_data(scales, biases, reading, centre):
    """The :class:`fastcal._prediction.Softmax` of ``softmax(scales * z + biases)``."""
    return Softmax(np.diag(np.asarray(scales, dtype=np.float64)), np.asarray(biases, dtype=np.float64).copy(),
                   reading, centre)


def check_reading(estimator):
    """Refuse a loaded ``input_type_`` that the parameters rule out (the ``ValueError`` of a model file):
    the parameter ``input_type`` itself, or after "auto", "logits" or "probabilities" (or "auto", in a file of
    fastcal 0.1.0, which read each batch anew)."""
    given = estimator.reading()[0]
    allowed = ("logits", "probabilities", "auto") if given == "auto" else (given,)
    if estimator.input_type_ not in allowed:
        raise ValueError(f"invalid fastcal model: input_type_ must be one of {list(allowed)} (input_type "
                         f"{given!r}), got {estimator.input_type_!r}")


def _check_columns(X, estimator):
    """Refuse a 1-D or 2-D ``X`` whose columns are not the ``n_classes_`` of the fitted ``estimator`` (one
    column, or a 1-D ``X``, is two classes' decision values), in scikit-learn's words; any other ``X`` is left
    to :func:`read_logits`' errors."""
    k = estimator.n_classes_
    try:
        shape = np.shape(X)
    except ValueError:  # a ragged list
        return
    if len(shape) == 1 and k != 2:
        raise ValueError(f"X is 1-D (binary decision values), but the model was fitted on {k} "
                         f"classes. Reshape your data to (n_samples, {k}).")
    if len(shape) == 2 and (2 if shape[1] == 1 else shape[1]) != k:
        raise ValueError(f"X has {shape[1]} features, but {type(estimator).__name__} is expecting "
                         f"{getattr(estimator, 'n_features_in_', k)} features as input "
                         f"(one per class; the model was fitted on {k} classes).")


@register
class TemperatureScaling(BaseCalibrator):
    r"""Temperature scaling of multiclass logits or probabilities (Guo et al. 2017).

    Predicts ``softmax(beta * z)`` with one fitted scalar: the inverse
    temperature ``beta_ = 1 / temperature_``. Below 1 it softens over-confident
    predictions, above 1 it sharpens under-confident ones; it never changes
    which class is most probable.

    Parameters
    ----------
    input_type : {"auto", "logits", "probabilities"}
        How to read ``X``. "logits": (n, k) scores; "probabilities": (n, k)
        rows in [0, 1] summing to 1, used as logits ``log(p + 1e-12)``;
        "auto" (scikit-learn's rule): probabilities if every row looks like
        one, logits otherwise. A 1-D (or single-column) ``X`` is a binary
        decision value ``x``, read as the logits ``(-x, x)``.
    max_iter : int
        Maximum number of iterations (passes over the data; a subsample's
        are not counted).
    tol : float
        Stop when ``beta`` is within ``tol`` relative of the minimiser: when
        a step changes it by less than that, or a small step is known to land
        that close from the local Taylor model of the gradient.

    Attributes
    ----------
    beta_ : float
        Fitted inverse temperature, within [e^-10, e^10] as in scikit-learn.
    temperature_ : float
        ``1 / beta_``.
    n_classes_ : int
        Number of columns of the logits.
    n_iter_ : int
        Iterations used, one pass over all rows each.
    converged_ : bool
    input_type_ : {"logits", "probabilities"}
        How the fit read ``X``, and how :meth:`predict_proba` reads every
        batch: "auto" is decided once, on the fit's rows.

    Notes
    -----
    The loss is convex in ``beta``: Halley steps are taken while they stay
    inside a bracket of the minimiser, otherwise the bracket is bisected (in
    log scale). Inputs of 16384 rows or more start from the fit of every
    16th row (about 32768 rows at most). Agrees with scikit-learn's
    ``CalibratedClassifierCV(method="temperature")``, which minimises the
    same loss over log(beta) with Brent's method.

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On
    Calibration of Modern Neural Networks. ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import TemperatureScaling
    >>> logits = np.array([[4.0, 0.0, 0.0], [0.0, 4.0, 0.0], [0.0, 0.0, 4.0], [4.0, 0.0, 0.0]])
    >>> ts = TemperatureScaling().fit(logits, [0, 1, 2, 1])
    >>> round(ts.temperature_, 3)
    2.232
    """

    beta_: float
    n_classes_: int
    n_iter_: int
    converged_: bool

    input_type_: str

    _state_schema = {"beta_": "float", "n_classes_": "int", "n_iter_": "int", "converged_": "bool",
                     "input_type_": "str"}
    # Files of fastcal 0.1.0 have no input_type_: it is the parameter (after "auto", each batch read anew, as then).
    _added_state = {"input_type_": "input_type"}

    def __init__(
        self,
        *,
        input_type: Literal["auto", "logits", "probabilities"] = "auto",
        max_iter: int = 100,
        tol: float = 1e-12,
    ) -> None:
        self.input_type = input_type
        self.max_iter = max_iter
        self.tol = tol

    _parameter_constraints = {"input_type": INPUT_TYPE, **SOLVER_PARAMETERS}

    def fit(self, X: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the inverse temperature.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_classes) or (n_samples,)
            Logits, probabilities, or binary decision values (see ``input_type``).
        y : array-like of shape (n_samples,)
            Class indices in ``0 .. n_classes - 1``: label ``j`` is column
            ``j`` of ``X``, as in scikit-learn's internal temperature
            calibrator (``CalibratedClassifierCV`` encodes labels before
            calling it) and in deep-learning losses. Other class labels are
            refused rather than guessed: map them first, e.g.
            ``np.searchsorted(model.classes_, y)`` for a scikit-learn
            classifier's ``predict_proba`` columns.
        sample_weight : array-like of shape (n_samples,), optional
            Non-negative weights.
        """
        input_type, centre = self.reading()
        if y is None:
            raise ValueError("TemperatureScaling requires y to be passed, but the target y is None.")
        z, reading = read_logits(X, input_type, centre=centre)
        n = z.shape[0]
        shape = np.asarray(X).shape  # dense now (read_logits refuses sparse X)
        n_features = 1 if len(shape) == 1 else int(shape[1])
        labels = class_indices(y, z, n_features)
        w = check_sample_weight(sample_weight, n, rescale=True)
        w = np.empty(0) if w is None else np.ascontiguousarray(w, dtype=np.float64)
        return self.fit_data(ArrayRows(z, labels, w), n_features, reading, stacklevel=3)

    def reading(self) -> tuple[str, bool]:
        """``(input_type, centre)``: how the fit reads X (:func:`read_logits`' arguments), the parameters checked."""
        self._validate_params()
        return self.input_type, False

    def fit_data(self, data: Any, n_features: int, reading: str, stacklevel: int = 2) -> Self:
        """Fit on ``data`` (an :class:`ArrayRows`, or a backend's rows with its two methods and ``k``) read from
        ``n_features`` columns of X as ``reading`` ("logits" or "probabilities": :func:`read_logits`'); the warning
        at ``stacklevel``. The one orchestration of every backend's fit."""
        self.beta_, self.n_iter_, self.converged_ = halley_minimize(
            data.temperature_derivatives, self.max_iter, self.tol, data.temperature_start(self.max_iter))
        if not self.converged_:
            warn_not_converged("TemperatureScaling", self.max_iter, "Newton iterations", stacklevel=stacklevel)
        self.n_classes_ = data.k
        self.n_features_in_ = n_features
        self.input_type_ = reading
        return self

    @property
    def temperature_(self) -> float:
        check_is_fitted(self, "beta_")
        return 1.0 / self.beta_

    def predict_proba(self, X: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities ``softmax(beta_ * logits)``, shape (n_samples, n_classes)."""
        check_is_fitted(self, "beta_")
        z = predict_logits(X, self)
        out = np.empty(z.shape, dtype=z.dtype)
        parallel_for(_k.softmax, z.shape[0], z, self.beta_, out, rows=z.size)
        return out

    def predict(self, X: ArrayLike) -> NDArray[np.floating]:
        """Same as :meth:`predict_proba` (scikit-learn's calibrators predict probabilities)."""
        return self.predict_proba(X)

    def prediction_data(self) -> Softmax:
        """What :meth:`predict_proba` computes, as data (:class:`fastcal._prediction.Softmax`): ``softmax(beta z)``
        as the affine map ``beta I``; for backends that compute it elsewhere (``fastcal.spark.predict_proba``)."""
        check_is_fitted(self, "beta_")
        return softmax_data(np.full(self.n_classes_, self.beta_), np.zeros(self.n_classes_), self.input_type_, False)

    def _check_loaded_state(self):
        super()._check_loaded_state()
        lo, hi = (math.exp(b) for b in _LOG_BETA_BOUNDS)
        if not (lo * (1 - 1e-12) <= self.beta_ <= hi * (1 + 1e-12)):
            raise ValueError("invalid fastcal model: beta_ is outside [e^-10, e^10]")
        if self.n_classes_ < 2:
            raise ValueError("invalid fastcal model: n_classes_ must be at least 2")
        check_reading(self)


def loss_derivatives(z, labels, w, beta, want_loss=False):
    r"""The loss :math:`L(\beta)` (0.0 unless ``want_loss``) and its first four derivatives in ``beta``.

    ``z``: (n, k) C-contiguous logits (float32 or float64); ``labels``: int64
    class indices; ``w``: float64 weights or an empty array (unit weights).
    Weighted sums over the rows of the cumulants of :math:`z_i` under
    :math:`\mathrm{softmax}(\beta z_i)` (see the module docstring), in one
    pass over fixed chunks merged exactly (:mod:`fastcal._engine.chunked`): the same
    bits at any thread count. Returns the tuple of floats
    ``(L, dL, d2L, d3L, d4L)``.
    """
    n, k = z.shape
    part = Partials(n, _k.CHUNK, _k.N_SUMS)
    part.run(_k.derivative_chunks, z, labels, w, beta, True if want_loss else None, work=n * k)
    return tuple(merge_exact(part.bufs[0]).tolist())


def subsample_stride(n):
    """The stride of :func:`warm_start`'s subsample of ``n`` rows (every ``stride``-th row, from row 0), or None
    below :data:`SUBSAMPLE_MIN` rows."""
    return None if n < SUBSAMPLE_MIN else max(_SUBSAMPLE_STRIDE, n // _SUBSAMPLE_ROWS)


def warm_start(z, labels, w, max_iter):
    """The start of the full fit: the fit of a strided subsample of the rows, or 1.0.

    Every :data:`_SUBSAMPLE_STRIDE`-th row, or :data:`_SUBSAMPLE_ROWS` rows
    evenly spaced if that is fewer (:func:`subsample_stride`), solved to :data:`_SUBSAMPLE_TOL` (about
    its sampling error), for inputs of at least :data:`SUBSAMPLE_MIN` rows.
    A start within about 1% of the minimiser lets the full fit converge in
    two passes (see :func:`halley_minimize`); the minimiser does not depend on the
    start.
    """
    stride = subsample_stride(z.shape[0])
    if stride is None:
        return 1.0
    ws = np.ascontiguousarray(w[::stride]) if w.shape[0] else w
    return subsample_start(np.ascontiguousarray(z[::stride]), np.ascontiguousarray(labels[::stride]), ws, max_iter)


def subsample_start(zs, ls, ws, max_iter):
    """:func:`warm_start` from its subsample's rows (those of :func:`subsample_stride`, wherever the rows are): the
    subsample's fit, or 1.0 if it stops at a bound of beta (separable rows) or does not converge."""
    beta, _, converged = halley_minimize(lambda b: loss_derivatives(zs, ls, ws, b), max_iter, _SUBSAMPLE_TOL)
    lo, hi = (math.exp(b) for b in _LOG_BETA_BOUNDS)
    return beta if converged and lo * 1.001 < beta < hi * 0.999 else 1.0


class ArrayRows:
    """The rows of a temperature fit in memory, as :meth:`TemperatureScaling.fit_data` reads them: ``z`` (n, k)
    C-contiguous logits, ``labels`` int64 class indices, ``w`` float64 weights (rescaled) or an empty array.
    ``temperature_derivatives(beta)`` is :func:`loss_derivatives`, ``temperature_start(max_iter)``
    :func:`warm_start` (a backend's rows give the same two methods)."""

    def __init__(self, z, labels, w):
        self.z, self.labels, self.w = z, labels, w
        self.n, self.k = z.shape

    def temperature_derivatives(self, beta):
        return loss_derivatives(self.z, self.labels, self.w, beta)

    def temperature_start(self, max_iter):
        return warm_start(self.z, self.labels, self.w, max_iter)


def halley_minimize(derivatives, max_iter, tol, start=1.0):
    r"""Minimise a convex function of beta on [e^-10, e^10]: safeguarded Halley iteration.

    ``derivatives(beta)`` gives the function and its first four derivatives
    (one pass over the data). Each step is Halley's,
    :math:`s = s_N / (1 + g_3 s_N / (2 h))` with the Newton step
    :math:`s_N = -g / h` (``g``, ``h``, ``g_3``: the first three derivatives):
    the root of the local quadratic model of the gradient to third order, so
    convergence is cubic; Newton's step where Halley's correction would more
    than double it. Keeps a bracket [lo, hi] of the minimiser from the signs
    of the gradients seen. A step that leaves the bracket (or a flat
    curvature) is replaced by a bisection step towards that side: the
    arithmetic mean with ``lo`` downwards, the geometric mean with ``hi``
    upwards (the upper bound is far). When the iteration creeps (two steps in
    the same direction, the second at least half the first: a loss flattening
    out, as towards the bound on separable data), the bound on that side is
    tested once (one more pass), and the step becomes a geometric bisection
    towards that side.

    Stops when a step changes beta by less than ``tol`` relative, or the
    bracket is that narrow; or, without another pass, when a step of at most
    1e-4 relative lands within ``tol / 2`` relative of the minimiser by the
    cubic Taylor model of the gradient,
    :math:`|g + h s + g_3 s^2 / 2 + g_4 s^3 / 6| \le h \cdot tol \cdot \beta / 2`
    (the terms left out are smaller by a factor of about
    :math:`|s| \cdot \max_i \mathrm{range}(z_i)`). Returns ``(beta, n_iter, converged)``.
    """
    bounds = tuple(math.exp(b) for b in _LOG_BETA_BOUNDS)
    lo, hi = bounds
    beta = start
    last_step = 0.0
    tested = set()
    for it in range(1, max_iter + 1):
        _, g, h, g3, g4 = derivatives(beta)
        if not (math.isfinite(g) and math.isfinite(h)):
            # beta * X overflowed: the minimiser lies below beta.
            if beta <= bounds[0]:
                raise ValueError("X: the logits are too large in magnitude: beta * X overflows float64 even at "
                                 "the smallest inverse temperature, e^-10.")
            hi = beta
            last_step = 0.0
            beta = math.sqrt(beta * lo)  # lo < beta: a geometric step down, within the bracket
            continue
        if g > 0:
            hi = beta
        elif g < 0:
            lo = beta
        else:
            return beta, it, True
        if h > 0:
            step = -g / h
            halley = 1.0 + 0.5 * g3 * step / h
            if math.isfinite(halley) and halley >= 0.5:
                step /= halley
            new = beta + step
        else:
            step = math.nan
            new = -math.inf if g > 0 else math.inf
        creeping = last_step * (new - beta) > 0 and abs(new - beta) >= 0.5 * abs(last_step)
        if creeping:
            edge = hi if new > beta else lo
            if edge in bounds and edge not in tested:
                tested.add(edge)
                g_edge = derivatives(edge)[1]
                if (g_edge <= 0) if edge == hi else (g_edge >= 0):
                    return edge, it, True
            new = math.sqrt(beta * edge)
        if new <= lo:
            new = 0.5 * (beta + lo)
        elif new >= hi:
            new = math.sqrt(beta * hi)
        if abs(new - beta) <= tol * beta or hi - lo <= tol * lo:
            return new, it, True
        if new == beta + step and abs(step) <= 1e-4 * beta:
            residual = g + step * (h + step * (0.5 * g3 + step * g4 / 6.0))
            if abs(residual) <= 0.5 * tol * h * new:  # False for NaN (g3 or g4 overflowed)
                return new, it, True
        last_step = new - beta
        beta = new
    return beta, max_iter, False
