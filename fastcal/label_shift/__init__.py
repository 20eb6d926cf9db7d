r"""Label shift: the class priors of a target population, by EM on calibrated posteriors or by BBSE.

:func:`estimate_label_shift` (:mod:`fastcal.label_shift._estimate`) calibrates a
model's probabilities on a labelled source sample (bias-corrected temperature
scaling by default, :mod:`fastcal.multiclass`), then estimates the target's
priors by the EM of :mod:`fastcal.prior`, or by black-box shift estimation,
with the conditioning of the confusion matrix and bootstrap intervals.
"""

from .._exports import publish
from ._estimate import LabelShiftResult, estimate_label_shift

# The driver of every backend's estimate (fastcal._engine's contract): estimate_label_shift over Rows.
from . import _rows as rows

__all__ = ["LabelShiftResult", "estimate_label_shift"]

publish(globals(), __all__)
