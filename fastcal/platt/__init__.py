r"""Platt scaling and the calibration slope and intercept.

:func:`platt_scaling` fits Platt's sigmoid p = 1 / (1 + exp(a*s + b)) to
scores ``s`` and binary labels, the same model and objective as scikit-learn's
sigmoid calibration (``sklearn.calibration._SigmoidCalibration``);
:class:`PlattScaling` wraps it as an estimator. :func:`calibration_slope_intercept`
is the logistic recalibration logit P(y = 1) = alpha + beta * logit(p) used to
validate clinical prediction models (Cox 1958; Van Calster et al. 2016).

Both are fitted by the one Newton driver of :mod:`fastcal._engine.newton`: a
closed-form 2x2 solve, a tiny ridge and a line search whose sufficient
decrease is certified without evaluating the objective where possible, over
one fused parallel pass per iteration (objective, gradient and Hessian
together, float64 accumulators). On big inputs it starts from the solution of
a subsample, which changes the number of passes, not the answer.
:func:`fit_passes` is that fit for any source of passes: arrays in memory
here, file chunks in :mod:`fastcal.outofcore`, partitions in :mod:`fastcal.dask`.
"""

from .._base import ConvergenceWarning
from .._exports import publish
from ._scaling import PlattResult, PlattScaling, platt_scaling
from ._slope import SlopeInterceptResult, calibration_slope_intercept

# The internal API of fastcal.beta, fastcal.grouped, the engine's drivers and the diagnostics (documented in the
# modules), not re-exported by fastcal: the model's constants, checks, passes and warm start; Platt's fit from
# passes or from validated arrays (fit_arrays), of many groups' rows at once (fit_groups); the slope's.
from ._model import (
    PARAMETERS,
    WARM_START_MIN,
    array_pass,
    check_max_iter,
    check_tol,
    check_total_weight,
    merge_prep,
    subsample,
    subsample_fraction,
    warm_start,
)
from ._scaling import fit_arrays, fit_passes, fitted_estimator, merge_prepared, prepare
from ._groups import Blocks, fit_groups, fitted_estimators, minimize_lockstep
from ._slope import logit_rows, slope_intercept_fit, slope_intercept_passes

# The driver over a Rows (fastcal._engine): what the backends (Dask, Spark, out of core) call; its passes, which beta's
# driver and the calibration report's slope run too.
from . import _rows as rows
from ._rows import Passes as RowPasses

__all__ = [
    "ConvergenceWarning",
    "PlattResult",
    "PlattScaling",
    "SlopeInterceptResult",
    "calibration_slope_intercept",
    "platt_scaling",
]

# Their public home, the name that pickles, reprs and the API reference show (ConvergenceWarning's is fastcal._base).
publish(globals(), ["PlattResult", "PlattScaling", "SlopeInterceptResult", "calibration_slope_intercept", "platt_scaling"])
