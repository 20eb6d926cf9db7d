r"""Inductive Venn-Abers predictors (Vovk, Petej & Fedorova 2015).

:class:`VennAbers` gives a pair of probabilities ``(p0, p1)`` per test score
and their merge; :func:`merge_intervals` merges pairs made elsewhere
(:mod:`fastcal.venn_abers._predictor`, on the kernels of
:mod:`fastcal.venn_abers._kernels`).
"""

from .._exports import publish
from ._predictor import VennAbers, merge_intervals

__all__ = ["VennAbers", "merge_intervals"]

# Their public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
