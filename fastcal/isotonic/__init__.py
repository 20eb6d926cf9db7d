"""Isotonic regression and isotonic calibration.

:func:`isotonic_regression` is a drop-in for
:func:`scipy.optimize.isotonic_regression`; :class:`IsotonicRegression` is a
drop-in for :class:`sklearn.isotonic.IsotonicRegression`
(:mod:`fastcal.isotonic._regression`). Both run the PAV steps of
:mod:`fastcal.isotonic._pav` (summarise, merge, finish: every isotonic fit of
fastcal, in memory, out of core, on Dask and Spark, and the score
decomposition's) on the kernels of :mod:`fastcal.isotonic._kernels`.
"""

from .._exports import publish
from ._regression import IsotonicRegression, isotonic_regression

# The internal API of the drivers over rows and the score decomposition (documented in _regression):
# the estimator's parameters as a typed dict, the fit of sorted rows, an estimator made from merged blocks, the
# merge of PAV summaries adjacent in score order, the sort of a 0/1 fit (the report reuses it); the chunk rule
# and tie resolution the grouped fits share.
from ._regression import IsotonicParams, OutOfBounds, new_estimator, pav_fit, set_fitted_blocks
from ._pav import chunk_count, resolution, sort_for_fit
from ._pav import merge as merge_blocks

# The driver over a Rows (fastcal._engine): what the backends (Dask, Spark, out of core) call.
from . import _rows as rows

__all__ = ["IsotonicRegression", "isotonic_regression"]

# Their public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
