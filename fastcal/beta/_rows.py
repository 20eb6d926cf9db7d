"""Beta calibration over a :class:`~fastcal._engine.Rows`: the passes of Platt scaling's driver, beta's Newton fit.

Chunks are ``(p, y, w)``, raw; :class:`fastcal.platt._rows.Passes` converts
them (the in-memory errors, naming ``p``) and runs every objective evaluation
of :func:`fastcal.beta._calibrator.fit_passes` as one :meth:`Rows.map` of
:func:`fastcal.beta._model.array_pass`, sums added in chunk order. Exactness:
as Platt scaling's (:mod:`fastcal.platt._rows`): the in-memory fit to the
solver's tolerance, degenerate fits exactly.
"""

from __future__ import annotations

import numpy as np

from .._engine import partition as _partition
from .._engine import user_stacklevel
from ..platt import RowPasses, check_max_iter, check_tol
from ._calibrator import fit_passes, fitted_estimator
from ._model import array_pass, check_model

__all__ = ["fit_beta"]


def fit_beta(rows, *, x_dtype, weighted, parameters="abm", max_iter=100, tol=None):
    """Fit :class:`fastcal.BetaCalibration` on ``rows`` of ``(p, y, w)``: see the module docstring.

    ``parameters``, ``max_iter`` and ``tol`` as in :class:`fastcal.BetaCalibration`.
    """
    model = check_model(parameters)
    max_iter_c, tol_c = check_max_iter(max_iter), check_tol(tol)
    passes = RowPasses(rows, x_dtype, weighted, "p", array_pass)
    try:
        eps = float(np.finfo(_partition.fit_dtype(x_dtype)).eps)
        fit = fit_passes(passes.prepared, passes.n, weighted, passes.run_pass, passes.rows, model, eps,
                         max_iter_c, tol_c)
    finally:
        passes.conv.release()
    return fitted_estimator(fit, parameters, max_iter, tol, stacklevel=user_stacklevel())
