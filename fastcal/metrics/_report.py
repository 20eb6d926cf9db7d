"""The calibration report: every diagnostic of one set of binary predictions, from one bin table and one sort.

:func:`report_from_parts` assembles the report from its parts; it is shared
by :func:`calibration_report` (in memory) and the engine's driver
(:func:`fastcal.metrics._report_rows.calibration_report`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .._auc import roc_auc
from .._binning import SLOG, SP, SY, W, brier_terms_from_table, column_mean, curve_from_table, ece_from_table
from .._core.params import Boolean, check
from .._core.results import Result
from ..decomposition import decompose, shared_sort
from ._inputs import binned, in_weight_units, units_exponent
from ._scores import BrierDecomposition

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


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
    ("brier_miscalibration", "CORP miscalibration (Brier)", "{:.6f}"),
    ("brier_discrimination", "CORP discrimination (Brier)", "{:.6f}"),
    ("log_loss_miscalibration", "CORP miscalibration (log loss)", "{:.6f}"),
    ("log_loss_discrimination", "CORP discrimination (log loss)", "{:.6f}"),
    ("log_loss_uncertainty", "CORP uncertainty (log loss)", "{:.6f}"),
)


@dataclass(frozen=True, eq=False, repr=False)
class CalibrationReport(Result):
    """All of fastcal's diagnostics of one set of predictions (see :func:`calibration_report`).

    Scalars are Python floats/ints; ``bin_edges`` has ``n_bins + 1`` entries,
    ``bin_weights`` one per bin (0 for an empty bin), ``prob_true``,
    ``prob_pred`` one per non-empty bin, as :func:`calibration_curve` returns
    them. ``slope_se``, ``intercept_se``, ``slope_ci``, ``intercept_ci`` (Wald
    95%) and ``slope_converged`` come from
    :func:`fastcal.platt.calibration_slope_intercept`; the ``brier_*`` and
    ``log_loss_*`` terms from :func:`fastcal.score_decomposition` (the Brier
    uncertainty is ``uncertainty``; the log-loss score, unclipped, is
    ``log_loss_miscalibration - log_loss_discrimination + log_loss_uncertainty``). ``str(report)`` is a
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
    brier_miscalibration: float
    brier_discrimination: float
    log_loss_miscalibration: float
    log_loss_discrimination: float
    log_loss_uncertainty: float
    n_bins: int
    strategy: Literal["uniform", "quantile"]
    bin_edges: NDArray[np.float64] = field(repr=False)
    bin_weights: NDArray[np.float64] = field(repr=False)
    prob_true: NDArray[np.float64] = field(repr=False)
    prob_pred: NDArray[np.float64] = field(repr=False)
    slope_se: float | None = None
    intercept_se: float | None = None
    slope_ci: tuple[float, float] | None = None
    intercept_ci: tuple[float, float] | None = None
    slope_converged: bool | None = None

    def __str__(self) -> str:
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
        # unweighted (every row weighs 1): the bins' weights are counts, printed whole
        counts = self.weight_sum == self.n and bool(np.all(self.bin_weights == np.round(self.bin_weights)))
        j = 0
        for k in range(self.n_bins):
            lo, hi = self.bin_edges[k], self.bin_edges[k + 1]
            rng = f"{'[' if k == 0 else '('}{lo:.3f}, {hi:.3f}]"
            if j < nz.size and nz[j] == k:
                weight, pred, true = self.bin_weights[k], self.prob_pred[j], self.prob_true[j]
                shown = f"{int(weight):>8d}" if counts else f"{weight:>8.6g}"
                lines.append(f"{k:>3}  {rng:<15} {shown}  {pred:>9.4f}  {true:>8.4f}")
                j += 1
            else:
                lines.append(f"{k:>3}  {rng:<15} {0:>8}  {'(empty)':>9}  {'':>8}")
        return "\n".join(lines)


def calibration_report(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    pos_label: float | str | None = None,
    slope: bool = True,
) -> CalibrationReport:
    r"""Every calibration diagnostic of a set of binary predictions, in one call.

    One parallel pass over the data gives the binned quantities (calibration
    curve, ECE/RMSCE/MCE, Brier decomposition), the Brier score and the log
    loss; the AUC comes from sorting the scores of each class
    (:func:`roc_auc_score`); the calibration slope, intercept and
    calibration-in-the-large come from the logistic recalibration
    :math:`\operatorname{logit} P(y=1) = \alpha + \beta \operatorname{logit}(p)`
    of :func:`fastcal.platt.calibration_slope_intercept`; the CORP score decompositions
    (:func:`fastcal.score_decomposition`) from one isotonic fit.

    Parameters
    ----------
    y_true, y_prob, sample_weight, pos_label
        As in :func:`calibration_curve`; both classes must be present.
    n_bins : int, default=10
        Bins of the curve, the ECE and the Brier decomposition.
    strategy : {"uniform", "quantile"}, default="uniform"
        Bin edges, as in :func:`calibration_curve`.
    slope : bool, default=True
        Fit the calibration slope and intercept (Newton steps over the
        logits). False skips that fit: ``slope``, ``intercept``,
        ``calibration_in_the_large`` are NaN, their standard errors,
        intervals and ``slope_converged`` None, and no warning is given
        where the slope would not exist (one class, or separable data).
        For many small reports, one per segment, say, whose bins are what
        is looked at.

    Returns
    -------
    CalibrationReport
        ``n``, ``weight_sum``, ``base_rate``, ``mean_prediction``, ``auc``,
        ``brier``, ``log_loss``, ``ece`` (l1), ``rmsce`` (l2), ``mce`` (max),
        ``reliability``, ``resolution``, ``uncertainty``,
        ``within_bin_variance``, ``within_bin_covariance``, ``slope``,
        ``intercept``, ``calibration_in_the_large``, the CORP score
        decompositions (``brier_miscalibration``, ``brier_discrimination``,
        ``log_loss_miscalibration``, ``log_loss_discrimination``,
        ``log_loss_uncertainty``, see :func:`fastcal.score_decomposition`),
        the standard errors and
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
    from ..platt import slope_intercept_fit

    slope = check("slope", slope, [Boolean()])
    table, edges, (y, p, w) = binned(y_true, y_prob, sample_weight, pos_label, n_bins, strategy, moments=True,
                                      brier=True, logloss=True)
    positives = float(table[:, SY].sum())
    both = 0 < positives < float(table[:, W].sum())
    # One sort of the scores per class for the AUC and the CORP decomposition's isotonic fit.
    by_label = shared_sort(y, p, w) if both else None
    auc = roc_auc(y, p, w, by_label=by_label) if both else math.nan
    corp = decompose(y, p, w, ("brier", "log_loss"), by_label=by_label)
    del by_label  # the slope fit's logits would otherwise sit beside the sorted copy: 2x the scores at the peak
    # The standard errors are those of frequency weights, in the caller's units: the rescaled weights go with
    # their exponent (no copy of them in the caller's units).
    slope_fit, missing = (slope_intercept_fit(y, p, w, strict=False, exponent=units_exponent(sample_weight)) if slope
                          else (None, None))
    return report_from_parts(table, edges, strategy, int(p.shape[0]), w is not None,
                             lambda v: in_weight_units(v, sample_weight), auc, corp, slope_fit, missing, 3)


def report_from_parts(table, edges, strategy, n, weighted, in_weight_units, auc, corp, slope_fit, missing, stacklevel):
    """The :class:`CalibrationReport` of binary data from its parts: what :func:`calibration_report` and the
    engine's driver (:func:`fastcal.metrics._report_rows.calibration_report`) both computed.

    Parameters
    ----------
    table : ndarray
        The bin table (``fastcal._binning``'s columns, with moments, Brier and log-loss sums).
    edges : ndarray
        The bin edges.
    strategy : str
        How they were chosen.
    n : int
        The number of rows.
    weighted : bool
        Whether the rows were weighted.
    in_weight_units : callable
        A sum of the table's weights in the units of ``sample_weight``.
    auc : float
        The ROC AUC (NaN unless both classes are present).
    corp : tuple
        The CORP decompositions of the Brier score and of the log loss.
    slope_fit, missing
        :func:`fastcal.platt.slope_intercept_fit`'s result (``strict=False``): the fit, and why the
        maximum-likelihood slope does not exist (or None); warned about here, at ``stacklevel``. Both None:
        no fit (``slope=False``), its fields NaN or None.
    """
    weight = table[:, W]
    total = float(weight.sum())
    positives = float(table[:, SY].sum())
    both = 0 < positives < total
    if missing is not None:
        what = ("the ROC AUC and the calibration slope and intercept are NaN, the calibration-in-the-large "
                f"{slope_fit.calibration_in_the_large:+}" if not both else
                f"the calibration slope is {slope_fit.slope:+} and the intercept NaN" if math.isinf(slope_fit.slope)
                else "the calibration slope and intercept are NaN")
        warnings.warn(f"calibration_report: {missing}, so the maximum-likelihood calibration slope does not exist: "
                      f"{what} (with their standard errors).", UserWarning, stacklevel=stacklevel)
    decomposition = BrierDecomposition(*brier_terms_from_table(table))
    ece = ece_from_table(table)
    prob_true, prob_pred = curve_from_table(table, weighted, False)
    corp_brier, corp_log = corp
    optional: dict[str, Any] = {}
    fitted = slope_fit is not None
    for name, attr in (
        ("slope_se", "slope_se"),
        ("intercept_se", "intercept_se"),
        ("slope_ci", "slope_ci"),
        ("intercept_ci", "intercept_ci"),
        ("slope_converged", "converged"),
    ):
        value = getattr(slope_fit, attr, None)  # None without a fit
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
        n=n,
        weight_sum=float(in_weight_units(total)),
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
        slope=float(slope_fit.slope) if fitted else math.nan,
        intercept=float(slope_fit.intercept) if fitted else math.nan,
        calibration_in_the_large=float(slope_fit.calibration_in_the_large) if fitted else math.nan,
        brier_miscalibration=corp_brier.miscalibration,
        brier_discrimination=corp_brier.discrimination,
        log_loss_miscalibration=corp_log.miscalibration,
        log_loss_discrimination=corp_log.discrimination,
        log_loss_uncertainty=corp_log.uncertainty,
        n_bins=edges.shape[0] - 1,
        strategy=strategy,
        bin_edges=edges,
        bin_weights=np.asarray(in_weight_units(weight), dtype=np.float64),
        prob_true=prob_true,
        prob_pred=prob_pred,
        **optional,
    )
