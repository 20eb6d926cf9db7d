r"""Cumulative calibration error (ECCE) with its p-value, and the multicalibration error over segments.

With rows sorted by prediction :math:`p`, labels :math:`y \in \{0, 1\}`,
weights :math:`w` (default 1) and :math:`W = \sum_i w_i`, the cumulative
differences are :math:`D_0 = 0`, :math:`D_k = \sum_{i \le k} w_i (y_i - p_i) / W`
and (Arrieta-Ibarra et al. 2022)

.. math::

    \mathrm{ECCE} = \max_k D_k - \min_k D_k, \qquad
    \sigma = \frac{\sqrt{\sum_i w_i^2 p_i (1 - p_i)}}{W}, \qquad
    \text{p-value} = 1 - F(\mathrm{ECCE} / \sigma),

where :math:`F` is the CDF of the range of a standard Brownian motion on
[0, 1] (Kuiper's distribution): :math:`\mathrm{ECCE}/\sigma` is
asymptotically distributed as that range when the predictions are
calibrated. Rows of equal prediction are one step of :math:`D` (ties are
pooled), so the result does not depend on the order of the rows.

:func:`multicalibration_error` measures the ECCE of many segments at once
(Guy et al. 2025), with the segments of MCGrad's ``MulticalibrationError``:
the rows moved to ranges of scores, each sorted in the cache, and one pass
that updates, for each row, the running sums of every segment it belongs to
(:mod:`fastcal.multicalibration._kernels`), on the numbering of values of :mod:`fastcal._coding`.

One module a subject; this package re-exports their public names, so
``fastcal.multicalibration.X`` and ``from fastcal.multicalibration import X``
are the names to use:

- :mod:`fastcal.multicalibration._ecce`: :func:`ecce`, the Kuiper
  distribution, :func:`calibration_ratio`, :func:`proportional_ece`,
  :func:`normalized_entropy`;
- :mod:`fastcal.multicalibration._sums`: the per-segment sums of the ECCE (one
  segment) and of the multicalibration error;
- :mod:`fastcal.multicalibration._mce`: :func:`multicalibration_error`;
- :mod:`fastcal.multicalibration._report`: :func:`segment_report`;
- :mod:`fastcal.multicalibration._fit` (the model and its fit, on the passes of
  :mod:`fastcal.multicalibration._fit_kernels`) and
  :mod:`fastcal.multicalibration._calibrator`: :class:`MulticalibrationCalibrator`,
  which repairs every segment at once; :mod:`fastcal.multicalibration._fit_rows`, its fit over rows.

References
----------
Arrieta-Ibarra, I., Gujral, P., Tannen, J., Tygert, M. and Xu, C. (2022).
Metrics of calibration for probabilistic predictions. JMLR 23(351).
Guy, I., Haimovich, D., Linder, F., Okati, N., Perini, L., Tax, N. and
Tygert, M. (2025). Measuring multi-calibration. arXiv:2506.11251.
Feller, W. (1951). The asymptotic distribution of the range of sums of
independent random variables. Ann. Math. Statist. 22(3).
"""

from .._exports import publish
from ._calibrator import MulticalibrationCalibrator, predict_matched  # predict_matched: fastcal apply's
from ._ecce import ECCEResult, calibration_ratio, ecce, kuiper_cdf, kuiper_sf, normalized_entropy, proportional_ece
from ._mce import MulticalibrationResult, multicalibration_error
from ._report import SegmentReport, segment_report

# The drivers over a Rows (fastcal._engine): what the backends (Dask, Spark) call. ``rows``: ECCE, the single-pass
# metrics, the report by segment; ``mce_rows``: the multicalibration error. The numbering of values (and Sizes, the
# sizes of the passes, which tests lower) is fastcal._coding's. ``fit_rows``: the MulticalibrationCalibrator's fit.
from . import _fit_rows as fit_rows
from . import _mce_rows as mce_rows
from . import _rows as rows

__all__ = [
    "ECCEResult",
    "MulticalibrationCalibrator",
    "MulticalibrationResult",
    "SegmentReport",
    "calibration_ratio",
    "ecce",
    "kuiper_cdf",
    "kuiper_sf",
    "multicalibration_error",
    "normalized_entropy",
    "proportional_ece",
    "segment_report",
]

publish(globals(), __all__)  # their public home, the name that pickles, reprs and the API reference show
