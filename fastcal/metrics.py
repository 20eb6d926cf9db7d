r"""Calibration diagnostics: reliability curves, Brier score and its decomposition, ECE, AUC.

Every binned quantity comes from one parallel pass over the data
(:func:`fastcal._binning.bin_stats`): each row is put in its bin and the
bin's weight, positives, sum of predictions (and, where asked for, centred
moments, squared errors and log losses) are accumulated in per-chunk buffers
that are merged in a fixed order, so the result does not depend on the number
of threads. The AUC is in :mod:`fastcal._auc`.

Binning follows :func:`sklearn.calibration.calibration_curve` exactly: the
``n_bins + 1`` edges are ``np.linspace(0, 1, n_bins + 1)`` ("uniform") or
``np.percentile(y_prob, np.linspace(0, 1, n_bins + 1) * 100)`` ("quantile"),
and a prediction ``p`` goes to bin ``np.searchsorted(edges[1:-1], p)``, i.e.
bins are ``[e_0, e_1], (e_1, e_2], ..., (e_{K-1}, e_K]``. Quantile edges are
computed from selected order statistics (bucket histogram + selection, no
full sort), with NumPy's "linear" interpolation formula reproduced operation
by operation, so they are bit-identical to ``np.percentile``'s.

Labels: ``y_true`` in {0, 1} (any numeric or boolean dtype) is used as is;
{-1, 1} counts 1 as positive; any other pair of labels needs ``pos_label``.
Unlike some scikit-learn metrics, no positive label is ever guessed from the
order of the labels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._auc import roc_auc
from ._binning import (
    SBRIER,
    SLOG,
    SP,
    SY,
    W,
    bin_edges,
    bin_stats,
    brier_terms_from_table,
    check_binning,
    check_params,
    column_mean,
    curve_from_table,
    ece_from_table,
    order_statistics,
)
from ._results import Result
from ._validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_sample_weight,
    column_or_1d,
    is_binary,
)

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


# ---------------------------------------------------------------------------
# validation helpers
# ---------------------------------------------------------------------------
def _value_range(x, name):
    """``(min, max)`` of the float array ``x``; ``ValueError`` naming ``name`` if it holds NaN or infinity.

    NumPy's SIMD min/max propagate NaN, and without NaN an infinity is the
    min or the max, so two reductions check finiteness too.
    """
    if x.shape[0] == 0:
        return 0.0, 0.0
    lo = float(x.min())
    hi = float(x.max())
    if math.isnan(lo) or math.isnan(hi):
        raise ValueError(f"{name} must be finite, but contains NaN.")
    if math.isinf(lo) or math.isinf(hi):
        raise ValueError(f"{name} must be finite, but contains infinity.")
    return lo, hi


def check_probabilities(y_prob, name="y_prob"):
    """``y_prob`` as a contiguous float32/float64 1-D array in [0, 1]; returns ``(p, min, max)``."""
    p = as_float_array(column_or_1d(y_prob, name), name)
    lo, hi = _value_range(p, name)
    if lo < 0 or hi > 1:
        raise ValueError(f"{name} has values outside [0, 1] (min {lo!r}, max {hi!r}); it must hold probabilities.")
    return p, lo, hi


def _check_scores(y_score, name="y_score"):
    x = as_float_array(column_or_1d(y_score, name), name)
    _value_range(x, name)
    return x


def _same_label(a, b):
    try:
        return bool(a == b) and not isinstance(a, str) and not isinstance(b, str)
    except Exception:  # noqa: BLE001 - uncomparable labels are different
        return False


def binary_labels(y_true, pos_label, name="y_true"):
    """Labels as a contiguous array whose nonzero entries are the positives.

    {0, 1} labels of any numeric/boolean dtype are returned without a copy
    (one parallel check, no sort); everything else goes through
    ``np.unique`` (a sort) with scikit-learn's ``calibration_curve`` rules.
    """
    check_params(pos_label=pos_label)
    arr = column_or_1d(y_true, name)
    if arr.dtype.kind in "biuf":
        lab = as_label_array(arr, name)
        if is_binary(lab):
            if pos_label is None or _same_label(pos_label, 1):
                return lab
            if _same_label(pos_label, 0):
                return np.ascontiguousarray(lab == 0).view(np.uint8)
    classes = np.unique(arr)
    if classes.dtype.kind == "f" and np.isnan(classes).any():
        raise ValueError(f"{name} must not contain NaN.")
    shown = ", ".join(repr(c) for c in classes[:5].tolist()) + (", ..." if classes.size > 5 else "")
    if classes.size > 2:
        raise ValueError(
            f"{name} must hold binary labels; only binary classification is supported, "
            f"found {classes.size} labels: {{{shown}}}."
        )
    if pos_label is None:
        ok = classes.dtype.kind in "biuf" and set(classes.tolist()) <= {0, 1} or set(classes.tolist()) <= {-1, 1}
        if classes.dtype.kind in "OUS" or not ok:
            raise ValueError(
                f"{name} takes values in {{{shown}}} and pos_label is not specified: either make "
                f"{name} take values in {{0, 1}} or {{-1, 1}} or pass pos_label explicitly."
            )
        pos_label = 1
    return np.ascontiguousarray(arr == pos_label).view(np.uint8)


def _check_inputs(y_true, y_prob, sample_weight, pos_label, *, prob=True, score_name="y_prob"):
    """Validated ``(y, p, w, lo, hi)``: labels (nonzero = positive), predictions, weights or None."""
    y_arr = column_or_1d(y_true, "y_true")
    p_arr = column_or_1d(y_prob, score_name)
    check_consistent_length(y_true=y_arr, **{score_name: p_arr})
    y = binary_labels(y_arr, pos_label)
    if prob:
        p, lo, hi = check_probabilities(p_arr, score_name)
    else:
        p = _check_scores(p_arr, score_name)
        lo = hi = None
    w = check_sample_weight(sample_weight, p.shape[0])
    return y, p, w, lo, hi


def _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, **flags):
    """Validated input, binned: ``(table, edges, (y, p, w))`` (see :func:`fastcal._binning.bin_stats`)."""
    n_bins = check_binning(n_bins, strategy)
    y, p, w, lo, hi = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    edges = bin_edges(n_bins, strategy, p.shape[0], lambda ranks: order_statistics(p, ranks, lo, hi))
    return bin_stats(p, y, w, edges, **flags), edges, (y, p, w)


# ---------------------------------------------------------------------------
# public functions
# ---------------------------------------------------------------------------
def calibration_curve(
    y_true,
    y_prob,
    *,
    pos_label=None,
    n_bins=5,
    strategy="uniform",
    sample_weight=None,
    return_counts=False,
):
    r"""True and predicted probabilities of a calibration (reliability) curve.

    A drop-in for :func:`sklearn.calibration.calibration_curve` (same
    arguments, bins, return values and label rules), computed in one parallel
    pass, with optional sample weights and bin counts. For each non-empty bin
    :math:`B_k` (total weight :math:`W_k = \sum_{i \in B_k} w_i`):

    .. math::

        \text{prob\_true}_k = \frac{1}{W_k}\sum_{i \in B_k} w_i y_i, \qquad
        \text{prob\_pred}_k = \frac{1}{W_k}\sum_{i \in B_k} w_i p_i.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels: {0, 1}, {-1, 1} (1 positive), or any two labels
        with ``pos_label``.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    pos_label : int, float, bool or str, default=None
        The label of the positive class (required unless the labels are
        {0, 1} or {-1, 1}).
    n_bins : int, default=5
        Number of bins (>= 1). Empty bins are dropped from the output, so the
        arrays may be shorter.
    strategy : {"uniform", "quantile"}, default="uniform"
        "uniform": bins of equal width on [0, 1]; "quantile": edges at the
        percentiles of ``y_prob`` (``np.percentile``'s linear interpolation,
        bit-identical; repeated edges give empty, dropped bins). With
        ``sample_weight``, quantile edges are still the unweighted
        percentiles of ``y_prob``: weights change the averages, not the bins.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights. A bin whose samples all have weight 0 counts as
        empty.
    return_counts : bool, default=False
        Also return the number of samples (int64), or the total weight
        (float64) with ``sample_weight``, of each returned bin.

    Returns
    -------
    prob_true : ndarray of shape (n_nonempty_bins,)
        Fraction of positives in each non-empty bin.
    prob_pred : ndarray of shape (n_nonempty_bins,)
        Mean predicted probability in each non-empty bin.
    counts : ndarray of shape (n_nonempty_bins,)
        Only with ``return_counts=True``.

    References
    ----------
    Niculescu-Mizil, A. and Caruana, R. (2005). Predicting good probabilities
    with supervised learning. ICML, section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import calibration_curve
    >>> y_true = np.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
    >>> y_pred = np.array([0.1, 0.2, 0.3, 0.4, 0.65, 0.7, 0.8, 0.9, 1.0])
    >>> prob_true, prob_pred, counts = calibration_curve(y_true, y_pred, n_bins=3, return_counts=True)
    >>> prob_true
    array([0. , 0.5, 1. ])
    >>> prob_pred
    array([0.2  , 0.525, 0.85 ])
    >>> counts
    array([3, 2, 4])
    """
    check_params(return_counts=return_counts)
    table, _, (_, _, w) = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    return curve_from_table(table, w is not None, return_counts)


def brier_score_loss(y_true, y_prob, *, sample_weight=None, pos_label=None):
    r"""Brier score of binary probabilistic predictions (mean squared error of the probabilities).

    .. math:: \mathrm{BS} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i}

    Equal to :func:`sklearn.metrics.brier_score_loss` for 1-D binary input
    (to 1e-12 for float64; for float32 input fastcal accumulates in float64,
    scikit-learn in float32). One parallel pass.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`calibration_curve`).
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum.
    pos_label : int, float, bool or str, default=None
        The positive label, required unless labels are {0, 1} or {-1, 1}.

    Returns
    -------
    float

    References
    ----------
    Brier, G. W. (1950). Verification of forecasts expressed in terms of
    probability. Monthly Weather Review 78(1), 1-3.

    Examples
    --------
    >>> from fastcal import brier_score_loss
    >>> round(brier_score_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 6)
    0.0375
    """
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, 1, "uniform", brier=True)
    return column_mean(table, SBRIER)


def log_loss(y_true, y_prob, *, sample_weight=None, pos_label=None, normalize=True):
    r"""Logistic loss (cross-entropy) of binary probabilistic predictions.

    .. math::

        \mathrm{LL} = -\frac{\sum_i w_i \left[y_i \log q_i^{(1)} + (1-y_i)\log q_i^{(0)}\right]}{\sum_i w_i},
        \quad q^{(1)} = \mathrm{clip}(p, \epsilon, 1-\epsilon),\ q^{(0)} = \mathrm{clip}(1-p, \epsilon, 1-\epsilon)

    Clipping is scikit-learn 1.9's: ``eps = np.finfo(y_prob.dtype).eps``
    (2.2e-16 for float64, 1.2e-7 for float32) and ``1 - p`` and the clip are
    computed in the dtype of ``y_prob``; so a prediction of exactly 0 or 1
    costs at most ``-log(eps)`` (36.04 for float64). The logarithms and the
    sum are float64. Equal to :func:`sklearn.metrics.log_loss` to 1e-12 for
    float64 input; unlike it, ``y_true`` may hold a single class.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`calibration_curve`).
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum.
    pos_label : int, float, bool or str, default=None
        The positive label, required unless labels are {0, 1} or {-1, 1}.
    normalize : bool, default=True
        Return the (weighted) mean loss; if False, the (weighted) sum.

    Returns
    -------
    float

    Examples
    --------
    >>> from fastcal import log_loss
    >>> round(log_loss([0, 1, 1, 0], [0.1, 0.9, 0.8, 0.3]), 6)
    0.197635
    """
    check_params(normalize=normalize)
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, 1, "uniform", logloss=True)
    return column_mean(table, SLOG) if normalize else float(table[:, SLOG].sum())


@dataclass(frozen=True, eq=False, repr=False)
class BrierDecomposition(Result):
    """Terms of the Brier score: ``brier == reliability - resolution + uncertainty
    + within_bin_variance - within_bin_covariance`` (up to rounding)."""

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float


def brier_decomposition(y_true, y_prob, *, n_bins=10, strategy="uniform", sample_weight=None, pos_label=None):
    r"""Murphy's decomposition of the Brier score, with the two within-bin terms that make it exact.

    With bins :math:`B_k` (as in :func:`calibration_curve`), total weight
    :math:`N = \sum_i w_i`, bin weight :math:`W_k`, mean prediction
    :math:`\bar p_k`, observed frequency :math:`\bar o_k` and base rate
    :math:`\bar o`:

    .. math::

        \mathrm{BS} = \underbrace{\tfrac1N\sum_k W_k(\bar p_k-\bar o_k)^2}_{\text{reliability}}
        - \underbrace{\tfrac1N\sum_k W_k(\bar o_k-\bar o)^2}_{\text{resolution}}
        + \underbrace{\bar o(1-\bar o)}_{\text{uncertainty}}
        + \underbrace{\tfrac1N\sum_k\sum_{i\in B_k} w_i(p_i-\bar p_k)^2}_{\text{within-bin variance}}
        - \underbrace{\tfrac2N\sum_k\sum_{i\in B_k} w_i(p_i-\bar p_k)(y_i-\bar o_k)}_{\text{within-bin covariance}}

    This is the variant of Stephenson, Coelho and Jolliffe (2008): Murphy's
    three terms (reliability, resolution, uncertainty) are computed from the
    bin means of the predictions, and the two extra terms account for the
    spread of the predictions inside each bin, so the five terms add up to
    the Brier score exactly (in exact arithmetic; to ~1e-15 in floating
    point), for any binning. Murphy's original identity
    (``BS = REL - RES + UNC``) holds only when all predictions in a bin are
    equal, where the extra terms vanish. The within-bin moments are
    accumulated about a point inside each bin, which keeps them free of
    cancellation, in the same single pass that bins the data.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`.
    n_bins : int, default=10
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.

    Returns
    -------
    BrierDecomposition
        Named tuple ``(brier, reliability, resolution, uncertainty,
        within_bin_variance, within_bin_covariance)`` of floats.

    References
    ----------
    Murphy, A. H. (1973). A new vector partition of the probability score.
    Journal of Applied Meteorology 12(4), 595-600.
    Stephenson, D. B., Coelho, C. A. S. and Jolliffe, I. T. (2008). Two extra
    components in the Brier score decomposition. Weather and Forecasting
    23(4), 752-757.

    Examples
    --------
    >>> from fastcal import brier_decomposition
    >>> d = brier_decomposition([0, 0, 1, 1, 1], [0.1, 0.3, 0.35, 0.8, 0.9], n_bins=2)
    >>> round(d.brier, 6), round(d.reliability - d.resolution + d.uncertainty
    ...                          + d.within_bin_variance - d.within_bin_covariance, 6)
    (0.1145, 0.1145)
    """
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True, brier=True)
    return BrierDecomposition(*brier_terms_from_table(table))


def expected_calibration_error(
    y_true, y_prob, *, n_bins=15, strategy="uniform", norm="l1", sample_weight=None, pos_label=None
):
    r"""Binned expected calibration error (ECE), its RMS (``norm="l2"``) and maximum (``"max"``) variants.

    With bins as in :func:`calibration_curve`, bin mass :math:`m_k = W_k / N`
    and gap :math:`g_k = |\bar o_k - \bar p_k|` over the non-empty bins:

    .. math::

        \mathrm{ECE} = \sum_k m_k g_k,\qquad
        \mathrm{RMSCE} = \sqrt{\textstyle\sum_k m_k g_k^2},\qquad
        \mathrm{MCE} = \max_{k:\,W_k>0} g_k.

    Empty bins carry no mass and are left out of the maximum (they never
    produce NaN). ``RMSCE**2`` is the reliability term of
    :func:`brier_decomposition` on the same bins.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`.
    n_bins : int, default=15
        Number of bins.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges ("quantile" gives the equal-mass ECE).
    norm : {"l1", "l2", "max"}, default="l1"
        ECE, RMS calibration error or maximum calibration error.

    Returns
    -------
    float

    References
    ----------
    Naeini, M. P., Cooper, G. F. and Hauskrecht, M. (2015). Obtaining well
    calibrated probabilities using Bayesian binning. AAAI.
    Guo, C., Pleiss, G., Sun, Y. and Weinberger, K. Q. (2017). On calibration
    of modern neural networks. ICML.

    Examples
    --------
    >>> from fastcal import expected_calibration_error
    >>> expected_calibration_error([0, 1, 1, 0], [0.2, 0.7, 0.8, 0.4], n_bins=2)
    0.275
    """
    check_params(norm=norm)
    table, _, _ = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy)
    return ece_from_table(table)[norm]


def roc_auc_score(y_true, y_score, *, sample_weight=None, pos_label=None):
    r"""Area under the ROC curve of a binary problem, ties counted half.

    .. math:: \mathrm{AUC} = \frac{\sum_{i:y_i=1}\sum_{j:y_j=0} w_i w_j
              \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right)}{\sum_{i:y_i=1} w_i \sum_{j:y_j=0} w_j}

    the Mann-Whitney statistic, equal to the trapezoidal area under the ROC
    curve and to :func:`sklearn.metrics.roc_auc_score` (binary case, to
    1e-12). O(n log n): without weights, the scores are split by label and
    value range, each range's two classes are sorted by value (ranges on
    parallel threads) and counted in one merge sweep with exact integer
    arithmetic; with weights, one argsort and one sweep over tied groups.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`calibration_curve`); both classes
        must be present.
    y_score : array-like of shape (n_samples,)
        Scores (any finite real values; higher means more likely positive).
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights.
    pos_label : int, float, bool or str, default=None
        The positive label, required unless labels are {0, 1} or {-1, 1}.

    Returns
    -------
    float

    References
    ----------
    Hanley, J. A. and McNeil, B. J. (1982). The meaning and use of the area
    under a receiver operating characteristic (ROC) curve. Radiology 143(1),
    29-36.

    Examples
    --------
    >>> from fastcal import roc_auc_score
    >>> roc_auc_score([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    y, x, w, _, _ = _check_inputs(y_true, y_score, sample_weight, pos_label, prob=False, score_name="y_score")
    return roc_auc(y, x, w)


# ---------------------------------------------------------------------------
# the report
# ---------------------------------------------------------------------------
_REPORT_ROWS = (
    # (field, label, format)
    ("n", "samples", "{:,}"),
    ("weight_sum", "total weight", "{:,.6g}"),
    ("base_rate", "base rate (observed)", "{:.6f}"),
    ("mean_prediction", "mean prediction", "{:.6f}"),
    ("auc", "ROC AUC", "{:.6f}"),
    ("brier", "Brier score", "{:.6f}"),
    ("log_loss", "log loss", "{:.6f}"),
    ("ece", "ECE (l1)", "{:.6f}"),
    ("rmsce", "RMS calibration error (l2)", "{:.6f}"),
    ("mce", "max calibration error", "{:.6f}"),
    ("reliability", "reliability", "{:.6f}"),
    ("resolution", "resolution", "{:.6f}"),
    ("uncertainty", "uncertainty", "{:.6f}"),
    ("within_bin_variance", "within-bin variance", "{:.6f}"),
    ("within_bin_covariance", "within-bin covariance", "{:.6f}"),
    ("slope", "calibration slope", "{:.6f}"),
    ("intercept", "calibration intercept", "{:.6f}"),
    ("calibration_in_the_large", "calibration-in-the-large", "{:.6f}"),
)


@dataclass(frozen=True, eq=False, repr=False)
class CalibrationReport(Result):
    """All of fastcal's diagnostics of one set of predictions (see :func:`calibration_report`).

    Scalars are Python floats/ints; ``bin_edges`` has ``n_bins + 1`` entries,
    ``bin_weights`` one per bin (0 for an empty bin), ``prob_true``,
    ``prob_pred`` one per non-empty bin, as :func:`calibration_curve` returns
    them. ``slope_se``, ``intercept_se``, ``slope_ci``, ``intercept_ci`` (Wald
    95%) and ``slope_converged`` come from
    :func:`fastcal.platt.calibration_slope_intercept`. ``str(report)`` is a
    readable table; :meth:`to_dict` gives plain Python types
    (JSON-serialisable).
    """

    n: int
    weight_sum: float
    base_rate: float
    mean_prediction: float
    auc: float
    brier: float
    log_loss: float
    ece: float
    rmsce: float
    mce: float
    reliability: float
    resolution: float
    uncertainty: float
    within_bin_variance: float
    within_bin_covariance: float
    slope: float
    intercept: float
    calibration_in_the_large: float
    n_bins: int
    strategy: str
    bin_edges: np.ndarray = field(repr=False)
    bin_weights: np.ndarray = field(repr=False)
    prob_true: np.ndarray = field(repr=False)
    prob_pred: np.ndarray = field(repr=False)
    slope_se: float | None = None
    intercept_se: float | None = None
    slope_ci: tuple | None = None
    intercept_ci: tuple | None = None
    slope_converged: bool | None = None

    def __str__(self):
        title = f"Calibration report ({self.n_bins} {self.strategy} bins)"
        rows = []
        for name, label, fmt in _REPORT_ROWS:
            value = getattr(self, name)
            if name == "weight_sum" and value == self.n:
                continue
            rows.append((label, fmt.format(value)))
            ci = getattr(self, f"{name}_ci", None) if name in ("slope", "intercept") else None
            if ci is not None:
                rows.append(("  95% CI", f"[{ci[0]:.4f}, {ci[1]:.4f}]"))
        if self.slope_converged is False:
            rows.append(("slope fit converged", "NO"))
        width = max(len(label) for label, _ in rows)
        vwidth = max(len(v) for _, v in rows)
        rule = "-" * (width + 2 + vwidth)
        lines = [title, rule]
        lines += [f"{label:<{width}}  {v:>{vwidth}}" for label, v in rows]
        lines.append(rule)
        lines.append("bin  range            weight    mean pred  frac pos")
        nz = np.flatnonzero(self.bin_weights > 0)
        j = 0
        for k in range(self.n_bins):
            lo, hi = self.bin_edges[k], self.bin_edges[k + 1]
            rng = f"{'[' if k == 0 else '('}{lo:.3f}, {hi:.3f}]"
            if j < nz.size and nz[j] == k:
                weight, pred, true = self.bin_weights[k], self.prob_pred[j], self.prob_true[j]
                lines.append(f"{k:>3}  {rng:<15} {weight:>8.6g}  {pred:>9.4f}  {true:>8.4f}")
                j += 1
            else:
                lines.append(f"{k:>3}  {rng:<15} {0:>8}  {'(empty)':>9}  {'':>8}")
        return "\n".join(lines)


def calibration_report(y_true, y_prob, *, sample_weight=None, n_bins=10, strategy="uniform", pos_label=None):
    r"""Every calibration diagnostic of a set of binary predictions, in one call.

    One parallel pass over the data gives the binned quantities (calibration
    curve, ECE/RMSCE/MCE, Brier decomposition), the Brier score and the log
    loss; the AUC comes from sorting the scores of each class
    (:func:`roc_auc_score`); the calibration slope, intercept and
    calibration-in-the-large come from the logistic recalibration
    :math:`\operatorname{logit} P(y=1) = \alpha + \beta \operatorname{logit}(p)`
    of :func:`fastcal.platt.calibration_slope_intercept`.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`; both classes must be present.
    n_bins : int, default=10
        Bins of the curve, the ECE and the Brier decomposition.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.

    Returns
    -------
    CalibrationReport
        ``n``, ``weight_sum``, ``base_rate``, ``mean_prediction``, ``auc``,
        ``brier``, ``log_loss``, ``ece`` (l1), ``rmsce`` (l2), ``mce`` (max),
        ``reliability``, ``resolution``, ``uncertainty``,
        ``within_bin_variance``, ``within_bin_covariance``, ``slope``,
        ``intercept``, ``calibration_in_the_large``, the standard errors and
        95% confidence intervals of slope and intercept, and the bins
        (``bin_edges``, ``bin_weights``, ``prob_true``, ``prob_pred``).
        Prints as a table; ``to_dict()`` converts it.

    References
    ----------
    Van Calster, B., McLernon, D. J., van Smeden, M., Wynants, L. and
    Steyerberg, E. W. (2019). Calibration: the Achilles heel of predictive
    analytics. BMC Medicine 17, 230.
    Cox, D. R. (1958). Two further applications of a model for binary
    regression. Biometrika 45(3/4), 562-565.
    """
    from .platt import calibration_slope_intercept

    table, edges, (y, p, w) = _binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True,
                                      brier=True, logloss=True)
    weight = table[:, W]
    total = float(weight.sum())
    positives = float(table[:, SY].sum())
    if not (0 < positives < total):
        raise ValueError("calibration_report needs both classes in y_true (with positive weight).")
    decomposition = BrierDecomposition(*brier_terms_from_table(table))
    ece = ece_from_table(table)
    prob_true, prob_pred = curve_from_table(table, w is not None, False)
    auc = roc_auc(y, p, w)
    slope_fit = calibration_slope_intercept(y, p, sample_weight=w)
    optional = {}
    for name, attr in (
        ("slope_se", "slope_se"),
        ("intercept_se", "intercept_se"),
        ("slope_ci", "slope_ci"),
        ("intercept_ci", "intercept_ci"),
        ("slope_converged", "converged"),
    ):
        value = getattr(slope_fit, attr, None)
        if value is None:
            continue
        if name.endswith("_ci"):
            value = tuple(float(v) for v in np.ravel(value))
        elif name == "slope_converged":
            value = bool(value)
        else:
            value = float(value)
        optional[name] = value
    return CalibrationReport(
        n=int(p.shape[0]),
        weight_sum=total,
        base_rate=positives / total,
        mean_prediction=column_mean(table, SP),
        auc=auc,
        brier=decomposition.brier,
        log_loss=column_mean(table, SLOG),
        ece=ece["l1"],
        rmsce=ece["l2"],
        mce=ece["max"],
        reliability=decomposition.reliability,
        resolution=decomposition.resolution,
        uncertainty=decomposition.uncertainty,
        within_bin_variance=decomposition.within_bin_variance,
        within_bin_covariance=decomposition.within_bin_covariance,
        slope=float(slope_fit.slope),
        intercept=float(slope_fit.intercept),
        calibration_in_the_large=float(slope_fit.calibration_in_the_large),
        n_bins=edges.shape[0] - 1,
        strategy=strategy,
        bin_edges=edges,
        bin_weights=weight.copy(),
        prob_true=prob_true,
        prob_pred=prob_pred,
        **optional,
    )
