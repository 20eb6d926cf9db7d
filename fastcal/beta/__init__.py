r"""Beta calibration (Kull, Silva Filho & Flach 2017).

The model is logistic in :math:`\log p` and :math:`\log(1 - p)`,

.. math:: \operatorname{logit} q = a \log p - b \log(1 - p) + c,

a family that contains the identity map (a = b = 1, c = 0) and fixes the
sigmoid family's misses, such as the inverse-sigmoid distortions of naive
Bayes. Three variants, as in the ``betacal`` package: ``"abm"`` (a, b, c
free), ``"ab"`` (c = (a - b) log 2, i.e. the midpoint m = 1/2) and ``"am"``
(a = b, i.e. logistic in logit p).

The fit is maximum likelihood by the one Newton driver of
:mod:`fastcal._engine.newton`, over one fused pass per iteration (objective,
gradient and the 3x3 Hessian together, float64 accumulators, fixed blocks
merged in order: the same bits on any number of threads), warm-started from
a subsample on big inputs. :func:`fit_passes` is that fit for any source of
passes: arrays in memory here, file chunks in :mod:`fastcal.outofcore`,
partitions in :mod:`fastcal.dask`. The fits and the estimator are
:mod:`fastcal.beta._calibrator`, over the model of :mod:`fastcal.beta._model`
(the frame, the objective, the passes over rows in memory), on the kernels of
:mod:`fastcal.beta._kernels`. Internal API: :data:`MODELS`,
:data:`PARAMETERS`, :func:`check_model`, :func:`array_pass`,
:func:`fit_passes`, :func:`fit_arrays`, :class:`BetaFit`, :func:`fitted_estimator`.
"""

from .._exports import publish
from ._calibrator import BetaCalibration

# The internal API of fastcal.grouped, the engine's drivers and the tests (documented in the modules): the models and
# the parameters' checks; the passes over rows in memory, the midpoint; beta calibration's fit from passes or from
# validated arrays (fit_arrays), of many groups' rows at once (fit_groups), and the estimators made from fits.
from ._model import MODELS, PARAMETERS, array_pass, check_model, midpoint
from ._calibrator import BetaFit, fit_arrays, fit_groups, fit_passes, fitted_estimator, fitted_estimators

# The driver over a Rows (fastcal._engine): what the backends (Dask, Spark, out of core) call.
from . import _rows as rows

__all__ = ["BetaCalibration"]

# Its public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
