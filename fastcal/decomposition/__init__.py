r"""CORP: the score decomposition and reliability curve from the isotonic recalibration.

The isotonic (PAV) regression of the outcomes on the predictions is the
recalibration that CORP (consistent, optimally binned, reproducible, PAV)
reliability diagrams draw (Dimitriadis, Gneiting & Jordan 2021). Through it,
any proper score :math:`S` splits exactly into miscalibration, discrimination
and uncertainty:

.. math::

    \bar S(p) = \underbrace{\bar S(p) - \bar S(\hat p)}_{\mathrm{MCB}}
              - \underbrace{\big(\bar S(\bar y) - \bar S(\hat p)\big)}_{\mathrm{DSC}}
              + \underbrace{\bar S(\bar y)}_{\mathrm{UNC}},

with :math:`\hat p` the PAV recalibration of :math:`y` on :math:`p`,
:math:`\bar y` the (weighted) base rate and :math:`\bar S` the weighted mean
score. Both functions run on the PAV steps of fastcal.isotonic
(:func:`fastcal.isotonic.pav_fit`); the bands of :func:`corp_reliability`
refit the PAV on resampled labels over one pre-sorted order.

The functions are in :mod:`fastcal.decomposition._corp`, on the kernels of
:mod:`fastcal.decomposition._kernels`.
"""

from .._exports import publish
from ._corp import CorpReliabilityResult, ScoreDecomposition, corp_reliability, score_decomposition

# The internal API of the calibration report, the drivers over rows (fastcal.metrics) and the tests (documented in
# _corp): the validated binary problem, the score sums and the decomposition from them, one sort shared with the AUC,
# the CORP curve of PAV blocks, and the consistency band's checks, partitions' blocks, curves and quantiles.
from ._corp import (
    band_blocks,
    band_from_blocks,
    band_quantiles,
    check_band,
    check_binary_problem,
    corp_curve,
    decompose,
    decomposition_from_sums,
    resample_curves,
    score_sums,
    shared_sort,
    uncertainty,
)

__all__ = ["CorpReliabilityResult", "ScoreDecomposition", "corp_reliability", "score_decomposition"]

# Their public home, the name that pickles, reprs and the API reference show.
publish(globals(), __all__)
