r"""Multiclass calibration beyond one temperature: vector scaling, bias-corrected temperature scaling, matrix
scaling and Dirichlet calibration.

The first two are families of the affine softmax model ``softmax(a * z + b)``,
the last two of the linear model ``softmax(W x + b)`` (a diagonal W is the
affine model again) (:mod:`fastcal.multiclass._model`), fitted by the Newton
driver of :mod:`fastcal._engine.newton` over one fused parallel pass per step
(:mod:`fastcal.multiclass._kernels`); the estimators are in
:mod:`fastcal.multiclass._scaling` and :mod:`fastcal.multiclass._linear`, and their fits over a backend's rows
(temperature scaling's too) in :mod:`fastcal.multiclass._rows`.
"""

from .._exports import publish
from ._linear import DirichletCalibration, MatrixScaling
from ._scaling import BiasCorrectedTemperatureScaling, VectorScaling

# The driver of every backend's fits (fastcal._engine's contract): fit_softmax over a Rows.
from . import _rows as rows

__all__ = ["BiasCorrectedTemperatureScaling", "DirichletCalibration", "MatrixScaling", "VectorScaling"]

# Its public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
