r"""Temperature scaling: multiclass calibration with one parameter (Guo et al. 2017).

:class:`TemperatureScaling` fits ``softmax(z / T)`` to (n, k) logits or
probabilities by Halley steps on the inverse temperature, over one fused
parallel pass per step (:mod:`fastcal.temperature._scaling`, on the kernels of
:mod:`fastcal.temperature._kernels`).
"""

from .._exports import publish
from ._scaling import TemperatureScaling

# The internal API of the tests and the engine (documented in _scaling): the fused pass, the solver and its start.
from ._scaling import SUBSAMPLE_MIN, halley_minimize, loss_derivatives, warm_start
# The multiclass calibrators' input readers (fastcal.multiclass): logits, class indices, the columns at predict;
# and the pieces of them and of the fit that a backend's rows use chunk by chunk (fastcal.multiclass.rows).
from ._scaling import INPUT_TYPE, SOLVER_PARAMETERS, check_reading, class_indices, predict_logits, read_logits
from ._scaling import ROW_SUM_TOL, probability_errors, reading_why, softmax_data
from ._scaling import ArrayRows, log_probabilities, probability_facts, reads_probabilities, subsample_start
from ._scaling import subsample_stride

__all__ = ["TemperatureScaling"]

# Its public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
