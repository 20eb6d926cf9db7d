r"""Platt scaling and the calibration slope and intercept.

:func:`platt_scaling` fits Platt's sigmoid p = 1 / (1 + exp(a*s + b)) to
scores ``s`` and binary labels, the same model and objective as scikit-learn's
sigmoid calibration (``sklearn.calibration._SigmoidCalibration``);
:class:`PlattScaling` wraps it as an estimator. :func:`calibration_slope_intercept`
is the logistic recalibration logit P(y = 1) = alpha + beta * logit(p) used to
validate clinical prediction models (Cox 1958; Van Calster et al. 2016).

Both are fitted by the one Newton driver of :mod:`fastcal._newton`: a
closed-form 2x2 solve, a tiny ridge and a line search whose sufficient
decrease is certified without evaluating the objective where possible, over
one fused parallel pass per iteration (objective, gradient and Hessian
together, float64 accumulators). On big inputs it starts from the solution of
a subsample, which changes the number of passes, not the answer.
:func:`fit_passes` is that fit for any source of passes: arrays in memory
here, file chunks in :mod:`fastcal.outofcore`, partitions in :mod:`fastcal.dask`.
"""

from .._base import ConvergenceWarning
from ._model import (
    DEFAULT_TOL,
    PARAMETERS,
    SUBSAMPLE_MAX,
    WARM_START_MIN,
    PlattObjective,
    array_objective,
    array_pass,
    center_and_scale,
    check_max_iter,
    check_tol,
    check_total_weight,
    subsample,
    subsample_fraction,
)
from ._scaling import (
    PlattFit,
    PlattResult,
    PlattScaling,
    fit_arrays,
    fit_passes,
    fitted_estimator,
    merge_prepared,
    platt_scaling,
    prepare,
    starting_point,
    warn_if_not_converged,
)
from ._slope import SlopeInterceptResult, calibration_slope_intercept, logit_rows, slope_intercept_fit, slope_intercept_passes

__all__ = [
    "ConvergenceWarning",
    "PlattResult",
    "PlattScaling",
    "SlopeInterceptResult",
    "calibration_slope_intercept",
    "platt_scaling",
]

# Also the internal API of fastcal.beta, the engine's drivers and the diagnostics (see the modules): the constants
# and checks of _model, Platt's fit from passes (prepare, merge_prepared, fit_passes, ...) or validated arrays (fit_arrays) and the slope's
# (logit_rows, slope_intercept_fit, slope_intercept_passes).

for _obj in (PlattResult, PlattScaling, SlopeInterceptResult, calibration_slope_intercept, platt_scaling):
    _obj.__module__ = __name__  # their public home, the name that pickles, reprs and the API reference show
del _obj
