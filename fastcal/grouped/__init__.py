r"""Calibration by group: one clone of a 1-D calibrator per group, and a global fit for the small and unseen ones.

:class:`GroupedCalibrator` (:mod:`fastcal.grouped._calibrator`) numbers the
groups (:mod:`fastcal._coding`) and fits its calibrator on all rows and on
each group's rows, with the per-group fits of :mod:`fastcal.grouped._fits`
(batched where the calibrator allows, each group with the bits of its own
fit) on the kernels of :mod:`fastcal.grouped._kernels`.
"""

from .._exports import publish
from ._calibrator import GroupedCalibrator

# The internal API of the command line (documented in the modules): the checks of a
# grouped fit's arguments, the groups' kinds, predictions of matched groups, and the per-group fits.
from ._calibrator import ONE_D, check_calibrator, check_min_samples, group_kinds, predict_matched
from ._fits import fit_group_models

# The driver over a Rows (fastcal._engine): what the backends (Dask, Spark, out of core) call.
from . import _rows as rows

__all__ = ["GroupedCalibrator"]

# Its public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
