r"""Prior correction: undo negative undersampling and adapt to new class priors.

A classifier trained on a sample whose class balance is not the deployment
population's predicts probabilities for the wrong population. If the
class-conditional distributions :math:`p(x \mid y)` are the same in both
(only the priors differ, "prior shift"), Bayes' rule gives the exact fix:

.. math::

    p_\text{new}(i \mid x) = \frac{w_i \, p_\text{train}(i \mid x)}{\sum_j w_j \, p_\text{train}(j \mid x)},
    \qquad w_i = \frac{\pi_\text{new}(i)}{\pi_\text{train}(i)}.

- :func:`correct_negative_sampling` is the binary special case for negatives
  kept at rate :math:`r`: :math:`p = p' / (p' + (1 - p') / r)`, which is
  :math:`\operatorname{sigmoid}(\operatorname{logit}(p') + \log r)`;
  :func:`negative_sampling_logit_offset` gives the equivalent shift
  :math:`\log r` of a logistic model's bias.
- :func:`adjust_priors` applies the formula for known priors.
- :func:`estimate_priors_em` estimates unknown new priors from unlabelled
  predictions with the EM algorithm of Saerens, Latinne & Decaestecker (2002).

In the binary case every correction is a strictly increasing function of the
score, so rankings, ROC curves and AUC are unchanged; only the calibration
moves. The kernels keep this in floating point: the binary map is evaluated
as a chain of monotone operations, so no two scores ever swap. With k > 2 classes the pairwise odds are rescaled by constants,
:math:`p_\text{new}(i \mid x) / p_\text{new}(j \mid x) = (w_i / w_j)\,
p(i \mid x) / p(j \mid x)`, so every ranking by a pairwise likelihood ratio is
unchanged.

The kernels are Numba loops (run on fastcal's threads above ``_parallel.PARALLEL_MIN_SIZE`` rows)
that read the input once and write the output once; the checks of the input
(NaN, values outside [0, 1], row sums) are counted in the same pass, and the
error is raised after it.

The corrections are one subject a module: :mod:`!fastcal.prior._sampling`
(negative undersampling), :mod:`!fastcal.prior._shift` (known priors) and
:mod:`!fastcal.prior._em` (the EM), over the Bayes map of
:mod:`!fastcal.prior._maps` and the input checks of :mod:`!fastcal.prior._inputs`.

Internal API, the EM as steps (summarise a chunk → merge in order →
finish, driven over any :class:`fastcal._engine.Rows` by
:mod:`fastcal.prior._rows`): :func:`check_em`, :func:`em_source`,
:func:`em_partials`, :func:`em_summarise` and its :class:`EMSummary`,
:func:`em_merge`, :func:`em_finish`, :func:`iterate_em`,
:func:`warn_em_not_converged`. The exactness rule: a summary is the
fixed-chunk reduction of :mod:`fastcal._engine.chunked` (bit-identical at any
thread count); summaries merge in chunk order.
"""

from .._core.errors import ConvergenceWarning
from .._exports import publish
from ._em import PriorEMResult, estimate_priors_em
from ._inputs import SUM_TOL
from ._sampling import correct_negative_sampling, negative_sampling_logit_offset
from ._shift import adjust_priors

# The internal API of the backends that write the binary corrections in their own language (fastcal.spark): each
# correction's checked odds factor, and the map it makes (the kernel's operations and constants), as data.
from ._maps import binary_map
from ._sampling import sampling_odds
from ._shift import shift_odds

# The internal API of the tests (documented above and in the module): the EM as
# steps (checks, source, summaries, their merge and finish) and its iteration; not re-exported by fastcal.
from ._em import (
    EMSummary,
    check_em,
    em_finish,
    em_merge,
    em_partials,
    em_source,
    em_summarise,
    iterate_em,
    warn_em_not_converged,
)

# The driver over a Rows (fastcal._engine): what the backends (Dask, Spark, out of core) call.
from . import _rows as rows

__all__ = [
    "ConvergenceWarning",
    "PriorEMResult",
    "SUM_TOL",
    "adjust_priors",
    "correct_negative_sampling",
    "estimate_priors_em",
    "negative_sampling_logit_offset",
]

# Their public home, the name that pickles, reprs and the API reference show (ConvergenceWarning's is fastcal._core.errors).
publish(globals(), ["PriorEMResult", "adjust_priors", "correct_negative_sampling", "estimate_priors_em",
                    "negative_sampling_logit_offset"])
