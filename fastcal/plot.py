"""Pictures of calibration: reliability diagrams and probability histograms.

matplotlib is an optional dependency (``pip install "fastcal[plot]"``) and is
imported only when one of these functions is called; ``import fastcal`` never
imports it. The functions draw on given axes or create a new figure through
``matplotlib.pyplot``, and return the figure and axes for further styling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, overload

import numpy as np

from ._binning import MAX_BINS
from ._core.params import Boolean, InstanceOf, Integer, Options, Real, check
from .decomposition import CorpReliabilityResult, corp_reliability, score_decomposition
from .metrics import (
    CalibrationReport,
    binary_labels,
    calibration_curve,
    check_probabilities,
    expected_calibration_error,
)
from .multicalibration import MulticalibrationResult, SegmentReport, kuiper_sf
from .smooth import smooth_ece

if TYPE_CHECKING:
    from typing import Unpack

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure
    from numpy.typing import ArrayLike

    from ._typing import HistogramOptions, ReliabilityOptions

__all__ = ["probability_histogram", "reliability_diagram", "report_diagram", "segment_sigmas"]

#: Each model's marker (binned curves) and line style, in turn: curves that lie on top of one another stay
#: distinguishable, in colour and in grey.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_LINESTYLES = ("-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)), (0, (1, 3)))


#: The layout of a reliability diagram over its histogram: the two panels' heights and the gap between them
#: (``gridspec_kw`` of a 2 x 1 figure). Internal API of fastcal.cli, which draws the report on a figure of its own.
PANELS = {"height_ratios": (3, 1), "hspace": 0.08}


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'fastcal.plot needs matplotlib; install it with pip install "fastcal[plot]".'
        ) from exc
    return plt


def _axes(ax, figsize):
    """``(figure, axes)``: ``ax`` and its figure, or (``ax`` None) a new pyplot figure of ``figsize`` with one
    axes. Drawing on given axes needs no pyplot (a ``matplotlib.figure.Figure`` of the caller's works)."""
    if ax is None:
        return _pyplot().subplots(figsize=figsize)
    return ax.figure, ax


def _colors():
    """The colours of matplotlib's property cycle, in order (``[None]``, matplotlib's choice, if it has none)."""
    import matplotlib

    return matplotlib.rcParams["axes.prop_cycle"].by_key().get("color", [None])


def _as_named(probs, name, *, matrices=False):
    """``{label: array}`` from one array or a mapping of them; (n, k) matrices kept as they are if ``matrices``."""
    if isinstance(probs, Mapping):
        if not probs:
            raise ValueError(f"{name} must not be an empty mapping.")
        items = list(probs.items())
    else:
        items = [("model", probs)]
    out = []
    for label, p in items:
        arr = np.asarray(p)
        if matrices and arr.ndim == 2 and arr.shape[1] > 1:
            out.append((str(label), arr))
        else:
            out.append((str(label), check_probabilities(p, f"{name}[{label!r}]")[0]))
    return out


@overload
def reliability_diagram(y_true: ArrayLike, y_prob: ArrayLike | Mapping[str, ArrayLike], *, ax: None = None,
                        **options: Unpack[ReliabilityOptions]) -> tuple[Figure, tuple[Axes, Axes | None]]: ...
@overload
def reliability_diagram(y_true: ArrayLike, y_prob: ArrayLike | Mapping[str, ArrayLike], *, ax: Axes,
                        **options: Unpack[ReliabilityOptions]
                        ) -> tuple[Figure | SubFigure, tuple[Axes, Axes | None]]: ...
def reliability_diagram(
    y_true: ArrayLike,
    y_prob: ArrayLike | Mapping[str, ArrayLike],
    *,
    method: Literal["binned", "corp", "smooth"] = "binned",
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: float | str | None = None,
    labels: ArrayLike | None = None,
    n_resamples: int = 200,
    level: float = 0.9,
    band: Literal["consistency", "confidence"] = "consistency",
    random_state: int | np.random.Generator | None = 0,
    bandwidth: float | None = None,
    show_decomposition: bool | None = None,
    ax: Axes | None = None,
    hist_ax: Axes | None = None,
    show_histogram: bool = True,
    hist_bins: int = 50,
    hist_log: bool = False,
    title: str | None = None,
    figsize: tuple[float, float] = (6.0, 7.0),
) -> tuple[Figure | SubFigure, tuple[Axes, Axes | None]]:
    """Reliability diagram of one or more models: binned, CORP (with a consistency band) or kernel-smoothed.

    The upper panel shows the diagonal of perfect calibration and, for each
    model, its reliability curve (each model with its own colour, line style
    and, when binned, marker, so that curves lying on top of one another
    stay apart), by ``method``:

    - "binned": the points ``(prob_pred, prob_true)`` of
      :func:`fastcal.calibration_curve` (empty bins left out), labelled with
      the model's expected calibration error on the same bins;
    - "corp": the CORP curve of :func:`fastcal.corp_reliability` (the
      isotonic recalibration: no bins to choose), with its band at ``level``
      shaded (``n_resamples`` resamples; the "consistency" band is where the
      curve of calibrated predictions would lie, so a curve leaving it shows
      miscalibration); labelled with the miscalibration (MCB),
      discrimination (DSC) and uncertainty (UNC) of the Brier score
      (:func:`fastcal.score_decomposition`: Brier = MCB - DSC + UNC);
    - "smooth": the kernel-smoothed curve of :func:`fastcal.smooth_ece`,
      labelled with the smooth ECE.

    The lower panel shows the distribution of each model's predicted
    probabilities (of the confidences, for a matrix): a curve is only as
    trustworthy as the number of predictions behind it.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        True binary labels (see :func:`fastcal.calibration_curve`), or the
        classes of (n, k) ``y_prob``.
    y_prob : array-like of shape (n_samples,) or mapping of str to arrays
        Predicted probabilities, or several models' predictions by name
        (e.g. ``{"raw": p, "isotonic": p_iso}``), each of ``n_samples``. An
        (n, k) matrix of class probabilities is drawn as its top-label
        (confidence) problem.
    method : {"binned", "corp", "smooth"}, default="binned"
        The reliability curve (above).
    n_bins, strategy
        Binning of "binned", as in :func:`fastcal.calibration_curve`.
    sample_weight, pos_label
        As in :func:`fastcal.calibration_curve`.
    labels : array-like of shape (n_classes,), optional
        The classes of the columns of (n, k) ``y_prob``, when ``y_true``
        lacks some (as in :func:`fastcal.calibration_curve`).
    n_resamples, level, band, random_state
        The band of "corp" (:func:`fastcal.corp_reliability`); 0 resamples
        draw no band. The default seed makes the picture reproducible.
    bandwidth : float, optional
        The bandwidth of "smooth"; the fixed point of the smooth ECE when None.
    show_decomposition : bool, optional
        Put MCB, DSC and UNC in the legend; by default with "corp" only.
    ax : matplotlib Axes, optional
        Axes for the curve. With ``ax`` given, no histogram is drawn unless
        ``hist_ax`` is given too.
    hist_ax : matplotlib Axes, optional
        Axes for the histogram.
    show_histogram : bool, default=True
        Draw the histogram panel when creating a new figure.
    hist_bins : int, default=50
        Number of equal-width histogram bins on [0, 1] (at most 2**20).
    hist_log : bool, default=False
        Logarithmic count axis for the histogram.
    title : str, optional
        Title of the curve panel.
    figsize : tuple, default=(6, 7)
        Size of a new figure.

    Returns
    -------
    fig : matplotlib Figure
    axes : tuple ``(ax, hist_ax)``
        ``hist_ax`` is None when no histogram is drawn.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal.plot import reliability_diagram
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(1000); y = (rng.random(1000) < p ** 2).astype(int)
    >>> fig, (ax, hist_ax) = reliability_diagram(y, {"model": p, "squared": p ** 2})
    >>> len(ax.get_lines())  # the diagonal and one curve per model
    3
    >>> fig, (ax, _) = reliability_diagram(y, p, method="corp", n_resamples=50)
    >>> ax.get_legend().get_texts()[1].get_text()
    'model (MCB 0.0325, DSC 0.0945, UNC 0.2323)'
    """
    method = check("method", method, [Options("binned", "corp", "smooth")])
    show_decomposition = check("show_decomposition", show_decomposition, [Boolean(), None])
    hist_bins = check("hist_bins", hist_bins, [Integer(1, MAX_BINS)])
    if show_decomposition is None:
        show_decomposition = method == "corp"
    models = _as_named(y_prob, "y_prob", matrices=True)
    curves = []
    for label, p in models:
        matrix = p.ndim == 2
        if labels is not None and not matrix:
            raise ValueError(f"labels is for an (n, k) y_prob, whose columns are the classes; {label!r} is 1-D.")
        y = y_true if matrix else binary_labels(y_true, pos_label)
        classes = {"labels": labels} if matrix else {}
        extra = {}
        if method == "binned":
            prob_true, prob_pred = calibration_curve(
                y_true, p, n_bins=n_bins, strategy=strategy, sample_weight=sample_weight,
                pos_label=None if matrix else pos_label, **classes,
            )
            ece = expected_calibration_error(
                y_true, p, n_bins=n_bins, strategy=strategy, sample_weight=sample_weight,
                pos_label=None if matrix else pos_label, **classes,
            )
            text = f"ECE {ece:.4f}"
            extra["marker"] = True
        elif method == "corp":
            corp = corp_reliability(y, p, sample_weight=sample_weight, n_resamples=n_resamples, level=level,
                                    band=band, random_state=random_state, **classes)
            prob_pred, prob_true = corp.x, corp.y
            extra["band"] = (corp.lower, corp.upper)
            text = ""
        else:
            smooth = smooth_ece(y, p, bandwidth=bandwidth, sample_weight=sample_weight, **classes)
            prob_pred, prob_true = smooth.x, smooth.y
            text = f"smooth ECE {smooth.ece:.4f}"
        if show_decomposition:
            d = score_decomposition(y, p, sample_weight=sample_weight, **classes)
            numbers = f"MCB {d.miscalibration:.4f}, DSC {d.discrimination:.4f}, UNC {d.uncertainty:.4f}"
            text = f"{text}; {numbers}" if text else numbers
        hist_p = p.max(axis=1) if matrix else p
        curves.append((label, hist_p, prob_true, prob_pred, text, extra))

    if ax is None and show_histogram:
        plt = _pyplot()
        fig, (ax, hist_ax) = plt.subplots(
            2, 1, figsize=figsize, sharex=True, gridspec_kw=PANELS
        )
    else:
        hist_ax = hist_ax if ax is not None else None
        fig, ax = _axes(ax, figsize)

    ax.plot([0, 1], [0, 1], linestyle=":", color="0.4", label="perfectly calibrated")
    colors = _colors()
    for i, (label, _, prob_true, prob_pred, text, extra) in enumerate(curves):
        color = colors[i % len(colors)]
        ax.plot(
            prob_pred, prob_true, marker=_MARKERS[i % len(_MARKERS)] if extra.get("marker") else None,
            markersize=5, markerfacecolor="none" if i % 2 else color, linewidth=1.5,
            linestyle=_LINESTYLES[i % len(_LINESTYLES)], color=color, label=f"{label} ({text})",
        )
        lower, upper = extra.get("band", (None, None))
        if lower is not None:
            ax.fill_between(prob_pred, lower, upper, color=color, alpha=0.2, linewidth=0,
                            label=f"{label}: {level:.0%} {band} band")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("observed frequency of positives" if method == "binned" else "recalibrated probability")
    if hist_ax is None:
        ax.set_aspect("equal", adjustable="box")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="best", fontsize="small")
    default_title = {
        "binned": f"Reliability diagram ({n_bins} {strategy} bins)",
        "corp": "CORP reliability diagram",
        "smooth": "Smoothed reliability diagram",
    }[method]
    ax.set_title(title if title is not None else default_title)

    if hist_ax is not None:
        edges = np.linspace(0.0, 1.0, int(hist_bins) + 1)
        w = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
        for i, (label, p, *_) in enumerate(curves):
            counts, _ = np.histogram(p, bins=edges, weights=w)
            hist_ax.stairs(counts, edges, color=colors[i % len(colors)], label=label, linewidth=1.2,
                           linestyle=_LINESTYLES[i % len(_LINESTYLES)])
        if hist_log:
            hist_ax.set_yscale("log")
        hist_ax.set_xlim(0, 1)
        hist_ax.set_xlabel("predicted probability")
        hist_ax.set_ylabel("weight" if w is not None else "count")
        hist_ax.grid(True, alpha=0.3)
    else:
        ax.set_xlabel("mean predicted probability" if method == "binned" else "predicted probability")
    return fig, (ax, hist_ax)


@overload
def report_diagram(report: CalibrationReport, corp: CorpReliabilityResult | None = None, *, ax: None = None,
                   hist_ax: Axes | None = None, title: str | None = None, figsize: tuple[float, float] = (6.0, 7.0),
                   ) -> tuple[Figure, tuple[Axes, Axes | None]]: ...
@overload
def report_diagram(report: CalibrationReport, corp: CorpReliabilityResult | None = None, *, ax: Axes,
                   hist_ax: Axes | None = None, title: str | None = None, figsize: tuple[float, float] = (6.0, 7.0),
                   ) -> tuple[Figure | SubFigure, tuple[Axes, Axes | None]]: ...
def report_diagram(
    report: CalibrationReport,
    corp: CorpReliabilityResult | None = None,
    *,
    ax: Axes | None = None,
    hist_ax: Axes | None = None,
    title: str | None = None,
    figsize: tuple[float, float] = (6.0, 7.0),
) -> tuple[Figure | SubFigure, tuple[Axes, Axes | None]]:
    """Reliability diagram of a calibration report: drawn from its numbers, not from the rows.

    The upper panel shows the diagonal of perfect calibration, the binned
    reliability curve of ``report`` (the points ``(prob_pred, prob_true)``
    of its non-empty bins, labelled with its ``ece``) and, when ``corp`` is
    given, the CORP curve ``(corp.x, corp.y)``, labelled with the report's
    Brier miscalibration (MCB), discrimination (DSC) and uncertainty (UNC),
    and its band (``corp.lower`` to ``corp.upper``) shaded when it has one;
    a CORP curve without a band says "no band" in its label. The lower panel
    shows the weight of each of the report's bins (``bin_weights`` over
    ``bin_edges``): a point is only as trustworthy as the weight behind it.

    So the picture of a report is the same whichever backend computed it:
    :func:`fastcal.calibration_report` in memory,
    :func:`fastcal.dask.calibration_report` or
    ``fastcal.spark.calibration_report`` (whose ``corp_reliability`` gives
    the curve without a band).

    Parameters
    ----------
    report : CalibrationReport
        The report to draw (:func:`fastcal.calibration_report`).
    corp : CorpReliabilityResult, optional
        A CORP curve of the same predictions (:func:`fastcal.corp_reliability`).
    ax : matplotlib Axes, optional
        Axes for the curves. With ``ax`` given, the bins' weights are drawn
        only if ``hist_ax`` is given too.
    hist_ax : matplotlib Axes, optional
        Axes for the bins' weights.
    title : str, optional
        Title of the curve panel; by default the report's bins, e.g.
        "Reliability diagram (10 uniform bins)".
    figsize : tuple, default=(6, 7)
        Size of a new figure.

    Returns
    -------
    fig : matplotlib Figure
    axes : tuple ``(ax, hist_ax)``
        ``hist_ax`` is None when the bins' weights are not drawn.

    See Also
    --------
    reliability_diagram : The same picture from the rows, of several models.

    Examples
    --------
    >>> import numpy as np
    >>> import fastcal
    >>> from fastcal.plot import report_diagram
    >>> rng = np.random.default_rng(0)
    >>> p = rng.random(1000); y = (rng.random(1000) < p ** 2).astype(int)
    >>> report = fastcal.calibration_report(y, p)
    >>> corp = fastcal.corp_reliability(y, p, n_resamples=0)
    >>> fig, (ax, hist_ax) = report_diagram(report, corp)
    >>> [t.get_text() for t in ax.get_legend().get_texts()][1:]
    ['binned (ECE 0.1499)', 'CORP, no band (MCB 0.0325, DSC 0.0945, UNC 0.2323)']
    """
    report = check("report", report, [InstanceOf(CalibrationReport, "a CalibrationReport")])
    corp = check("corp", corp, [InstanceOf(CorpReliabilityResult, "a CorpReliabilityResult"), None])
    if ax is None:
        plt = _pyplot()
        fig, (ax, hist_ax) = plt.subplots(
            2, 1, figsize=figsize, sharex=True, gridspec_kw=PANELS
        )
    else:
        fig, ax = _axes(ax, figsize)
    colors = _colors()
    ax.plot([0, 1], [0, 1], linestyle=":", color="0.4", label="perfectly calibrated")
    ax.plot(report.prob_pred, report.prob_true, marker=_MARKERS[0], markersize=5, linewidth=1.5,
            linestyle=_LINESTYLES[0], color=colors[0], label=f"binned (ECE {report.ece:.4f})")
    if corp is not None:
        color = colors[1 % len(colors)]
        numbers = (f"MCB {report.brier_miscalibration:.4f}, DSC {report.brier_discrimination:.4f}, "
                   f"UNC {report.uncertainty:.4f}")
        ax.plot(corp.x, corp.y, linewidth=1.5, linestyle=_LINESTYLES[1], color=color,
                label=f"CORP ({numbers})" if corp.lower is not None else f"CORP, no band ({numbers})")
        if corp.lower is not None:
            ax.fill_between(corp.x, corp.lower, corp.upper, color=color, alpha=0.2, linewidth=0,
                            label=f"{corp.level:.0%} {corp.band} band ({corp.n_resamples} resamples)")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_ylabel("observed frequency of positives")
    if hist_ax is None:
        ax.set_aspect("equal", adjustable="box")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")
    ax.set_title(title if title is not None else f"Reliability diagram ({report.n_bins} {report.strategy} bins)")
    if hist_ax is not None:
        weights = np.asarray(report.bin_weights, dtype=np.float64)
        counts = report.weight_sum == report.n and bool(np.all(weights == np.round(weights)))
        hist_ax.stairs(weights, report.bin_edges, color=colors[0], fill=True, alpha=0.25)
        hist_ax.stairs(weights, report.bin_edges, color=colors[0], linewidth=1.2)
        hist_ax.set_xlim(0, 1)
        hist_ax.set_xlabel("predicted probability")
        hist_ax.set_ylabel("count in bin" if counts else "weight in bin")
        hist_ax.grid(True, alpha=0.3)
    else:
        ax.set_xlabel("mean predicted probability")
    return fig, (ax, hist_ax)


@overload
def probability_histogram(probs: ArrayLike | Mapping[str, ArrayLike], *, ax: None = None,
                          **options: Unpack[HistogramOptions]) -> tuple[Figure, Axes]: ...
@overload
def probability_histogram(probs: ArrayLike | Mapping[str, ArrayLike], *, ax: Axes,
                          **options: Unpack[HistogramOptions]) -> tuple[Figure | SubFigure, Axes]: ...
def probability_histogram(
    probs: ArrayLike | Mapping[str, ArrayLike],
    *,
    base_rate: float | None = None,
    bins: int = 50,
    range: tuple[float, float] = (0.0, 1.0),  # noqa: A002 - same name as numpy.histogram's argument
    sample_weight: ArrayLike | None = None,
    density: bool = False,
    log: bool = False,
    ax: Axes | None = None,
    title: str | None = None,
    figsize: tuple[float, float] = (7.0, 4.0),
) -> tuple[Figure | SubFigure, Axes]:
    """Distributions of predicted probabilities, e.g. before and after a correction, against the base rate.

    Each distribution is drawn as an outlined histogram with a dotted
    vertical line at its mean; the legend gives each mean, and the true base
    rate (when given) is a solid vertical line. For a model trained on an
    undersample, the "before" mean sits far above the base rate and the
    corrected predictions slide back onto it.

    Parameters
    ----------
    probs : array-like or mapping of str to array-like
        Predicted probabilities, or several sets by name (e.g.
        ``{"before": p, "after": p_corrected}``); the sets may differ in size.
    base_rate : float, optional
        The true rate of positives, drawn as a vertical line.
    bins : int, default=50
        Number of equal-width bins over ``range`` (at most 2**20).
    range : tuple, default=(0, 1)
        Histogram range (e.g. ``(0, 0.2)`` to look at rare-event predictions).
    sample_weight : array-like, optional
        Weights of the samples (same for every set; the sets must then have
        equal lengths). The legend means are weighted means.
    density : bool, default=False
        Normalise each histogram to unit area (to compare sets of different sizes).
    log : bool, default=False
        Logarithmic count axis.
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is created when None.
    title : str, optional
        Axes title.
    figsize : tuple, default=(7, 4)
        Size of a new figure.

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal.plot import probability_histogram
    >>> rng = np.random.default_rng(0)
    >>> before = rng.beta(2, 5, 1000); after = before / 3
    >>> fig, ax = probability_histogram({"before": before, "after": after}, base_rate=0.1)
    >>> [t.get_text() for t in ax.get_legend().get_texts()][0]
    'before (mean 0.276)'
    """
    sets = _as_named(probs, "probs")
    base_rate = check("base_rate", base_rate, [Real(0, 1), None])
    bins = check("bins", bins, [Integer(1, MAX_BINS)])
    lo, hi = (float(v) for v in range)
    if not lo < hi:
        raise ValueError(f"range must be (low, high) with low < high; got {range!r}.")
    w = None
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64)
        for label, p in sets:
            if w.shape != p.shape:
                raise ValueError(f"sample_weight has {w.size} elements but probs[{label!r}] has {p.size}.")
        if np.any(w < 0) or not np.all(np.isfinite(w)) or not w.sum() > 0:
            raise ValueError("sample_weight must be finite, non-negative and have a positive sum.")

    fig, ax = _axes(ax, figsize)
    colors = _colors()
    edges = np.linspace(lo, hi, int(bins) + 1)
    for i, (label, p) in enumerate(sets):
        color = colors[i % len(colors)]
        mean = float(np.average(p, weights=w))
        counts, _ = np.histogram(p, bins=edges, weights=w, density=density)
        ax.stairs(counts, edges, color=color, fill=True, alpha=0.25)
        ax.stairs(counts, edges, color=color, linewidth=1.5, label=f"{label} (mean {mean:.3f})")
        ax.axvline(mean, color=color, linestyle=":", linewidth=1.5, zorder=3)
    if base_rate is not None:
        ax.axvline(base_rate, color="black", linewidth=2, zorder=1.5, label=f"true base rate ({base_rate:.3f})")
    if log:
        ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("predicted probability")
    ax.set_ylabel("density" if density else ("weight" if w is not None else "count"))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    ax.set_title(title if title is not None else "Distribution of predicted probabilities")
    return fig, ax


def _sigma_at(alpha):
    """The ECCE in sigmas whose Kuiper p-value is ``alpha`` (bisection on :func:`fastcal.multicalibration.kuiper_sf`)."""
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if kuiper_sf(mid) > alpha:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def segment_sigmas(
    result: SegmentReport | MulticalibrationResult,
    *,
    alpha: float = 0.05,
    top: int = 30,
    ax: Axes | None = None,
    title: str | None = None,
    figsize: tuple[float, float] = (7.0, 5.0),
) -> tuple[Figure | SubFigure, Axes]:
    """The ECCE of each segment in standard deviations, largest first, against the line of significance.

    One horizontal bar per group of a :func:`fastcal.segment_report` (or per
    segment of a :func:`fastcal.multicalibration_error`, "all" being segment
    0), the ``top`` largest ``ecce_sigma`` first; the dashed line is the
    sigma whose Kuiper p-value is ``alpha`` (1.96... for a normal test, here
    about 2.5 at 0.05): a bar beyond it is a segment miscalibrated at level
    ``alpha`` (one test; with many segments, compare against ``alpha`` divided
    by their number).

    Parameters
    ----------
    result : SegmentReport or MulticalibrationResult
        The segments to draw.
    alpha : float, default=0.05
        Significance level of the line, in (0, 1).
    top : int, default=30
        Most segments drawn (the largest sigmas).
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure is created when None.
    title : str, optional
        Axes title.
    figsize : tuple, default=(7, 5)
        Size of a new figure.

    Returns
    -------
    fig : matplotlib Figure
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import segment_report
    >>> from fastcal.plot import segment_sigmas
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.9, 10_000)
    >>> country = rng.choice(["fr", "de", "us"], 10_000)
    >>> y = rng.uniform(size=10_000) < np.where(country == "fr", p ** 2, p)
    >>> fig, ax = segment_sigmas(segment_report(y, p, country))
    >>> [t.get_text() for t in ax.get_yticklabels()][-1]  # the top bar: the largest sigma
    'fr'
    """
    alpha = check("alpha", alpha, [Real(0, 1, open_low=True, open_high=True)])
    top = check("top", top, [Integer(1)])
    if isinstance(result, SegmentReport):
        labels = [str(g) for g in result.groups]
    elif isinstance(result, MulticalibrationResult):
        labels = [", ".join(f"{k}={v}" for k, v in values.items()) or "all" for values in result.segment_values]
    else:
        raise TypeError(f"result must be a SegmentReport or a MulticalibrationResult, got {type(result).__name__}.")
    sigma = np.asarray(result.ecce_sigma if isinstance(result, SegmentReport) else result.segment_ecce_sigma)
    shown = np.argsort(-sigma, kind="stable")[:top][::-1]
    line = _sigma_at(alpha)
    fig, ax = _axes(ax, figsize)
    values = np.minimum(sigma[shown], np.finfo(np.float64).max)
    colors = ["C3" if v > line else "C0" for v in values]
    ax.barh(np.arange(shown.size), values, color=colors)
    ax.set_yticks(np.arange(shown.size), [labels[i] for i in shown])
    ax.axvline(line, color="black", linestyle="--", linewidth=1.2, label=f"p-value {alpha:g} ({line:.2f} sigma)")
    ax.set_xlabel("ECCE / sigma")
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize="small", loc="lower right")
    ax.set_title(title if title is not None else "Calibration by segment")
    return fig, ax
