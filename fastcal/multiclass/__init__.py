r"""Multiclass calibration beyond one temperature: vector scaling and bias-corrected temperature scaling.

Both are families of the affine softmax model ``softmax(a * z + b)``
(:mod:`fastcal.multiclass._model`), fitted by the Newton driver of
:mod:`fastcal._engine.newton` over one fused parallel pass per step
(:mod:`fastcal.multiclass._kernels`); the estimators are in
:mod:`fastcal.multiclass._scaling`.
"""

from .._exports import publish
from ._scaling import BiasCorrectedTemperatureScaling, VectorScaling

__all__ = ["BiasCorrectedTemperatureScaling", "VectorScaling"]

# Its public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
