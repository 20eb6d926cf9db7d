r"""Calibration diagnostics: reliability curves, Brier score and its decomposition, ECE, log loss, AUC.

One module a subject; this package re-exports their public names, so
``fastcal.metrics.X`` and ``from fastcal.metrics import X`` are the names to use:

- :mod:`fastcal.metrics._inputs`: validation of labels, probabilities, (n, k) matrices;
- :mod:`fastcal.metrics._reliability`: :func:`calibration_curve`, :func:`expected_calibration_error`;
- :mod:`fastcal.metrics._scores`: :func:`brier_score_loss`, :func:`log_loss`, :func:`brier_decomposition`;
- :mod:`fastcal.metrics._ranking`: :func:`roc_auc_score`;
- :mod:`fastcal.metrics._report`: :func:`calibration_report` (all of the above in one call).

Every binned quantity comes from one parallel pass over the data
(:func:`fastcal._binning.bin_stats`): each row is put in its bin and the
bin's weight, positives, sum of predictions (and, where asked for, centred
moments, squared errors and log losses) are accumulated in per-chunk buffers
that are merged in a fixed order, so the result does not depend on the number
of threads. The log loss and Brier score of an (n, k) probability matrix are
one such pass over its rows (:func:`fastcal._matrices.class_rows`). The AUC is
in :mod:`fastcal._auc`.

Binning follows :func:`sklearn.calibration.calibration_curve` exactly: the
``n_bins + 1`` edges are ``np.linspace(0, 1, n_bins + 1)`` ("uniform") or
``np.percentile(y_prob, np.linspace(0, 1, n_bins + 1) * 100)`` ("quantile"),
and a prediction ``p`` goes to bin ``np.searchsorted(edges[1:-1], p)``, i.e.
bins are ``[e_0, e_1], (e_1, e_2], ..., (e_{K-1}, e_K]``. Quantile edges are
computed from selected order statistics (bucket histogram + selection, no
full sort), with NumPy's "linear" interpolation formula reproduced operation
by operation, so they are bit-identical to ``np.percentile``'s.

Labels of binary predictions: ``y_true`` in {0, 1} (any numeric or boolean
dtype) is used as is; {-1, 1} counts 1 as positive; any other pair of labels
needs ``pos_label``, except in :func:`log_loss` and :func:`roc_auc_score`,
whose 1-D predictions are, as in scikit-learn, those of the greater of the
two labels. No positive label is guessed elsewhere (scikit-learn's
``brier_score_loss`` falls back on the greater of two numeric labels).
The columns of an (n, k) matrix are the classes in sorted order, those of
``labels`` or of ``y_true``, as scikit-learn's ``LabelBinarizer`` orders them.
"""

from .._exports import publish
from ._inputs import binary_labels, check_probabilities
from ._ranking import roc_auc_score
from ._reliability import calibration_curve, expected_calibration_error
from ._report import CalibrationReport, calibration_report
from ._scores import BrierDecomposition, brier_decomposition, brier_score_loss, log_loss

__all__ = [
    "BrierDecomposition",
    "CalibrationReport",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "calibration_report",
    "expected_calibration_error",
    "log_loss",
    "roc_auc_score",
]

# The internal API of the layers above (fastcal.plot), not re-exported by fastcal: binary_labels,
# check_probabilities.

# The drivers over a Rows (fastcal._engine): what the backends (Dask, Spark) call. ``rows``: the binned diagnostics
# and the histogram fit; ``report_rows``: the score decomposition, CORP, the AUC, the slope and the report.
from . import _report_rows as report_rows
from . import _rows as rows

publish(globals(), __all__)  # their public home, the name that pickles, reprs and the API reference show
