"""Plots: they draw what they claim and save readable PNGs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from numpy.testing import assert_allclose  # noqa: E402

import fastcal  # noqa: E402
from fastcal import plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _data(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(0, 2, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-s / 2))).astype(int)
    return y, 1 / (1 + np.exp(-s)), 1 / (1 + np.exp(-s / 2))


def test_reliability_diagram(tmp_path):
    y, p, q = _data()
    fig, (ax, hist_ax) = plot.reliability_diagram(y, {"raw": p, "recalibrated": q}, n_bins=8)
    lines = ax.get_lines()
    assert len(lines) == 3  # diagonal + one curve per model
    assert_allclose(lines[0].get_xydata(), [[0, 0], [1, 1]])
    prob_true, prob_pred = fastcal.calibration_curve(y, p, n_bins=8)
    assert_allclose(lines[1].get_xdata(), prob_pred)
    assert_allclose(lines[1].get_ydata(), prob_true)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    ece = fastcal.expected_calibration_error(y, p, n_bins=8)
    assert labels[1] == f"raw (ECE {ece:.4f})" and labels[2].startswith("recalibrated (ECE ")
    # the histogram: one outline per model, total count n each
    assert hist_ax is not None and len(hist_ax.patches) == 2
    assert_allclose(hist_ax.patches[0].get_data().values.sum(), len(p))
    path = tmp_path / "reliability.png"
    fig.savefig(path, dpi=80)
    assert path.stat().st_size > 10_000


def test_reliability_diagram_options():
    y, p, _ = _data(2000)
    fig, (ax, hist_ax) = plot.reliability_diagram(y, p, show_histogram=False, strategy="quantile", title="t")
    assert hist_ax is None and ax.get_title() == "t" and len(ax.get_lines()) == 2
    fig2, given = plt.subplots(1, 2)
    fig, (ax, hist_ax) = plot.reliability_diagram(
        y, p, ax=given[0], hist_ax=given[1], sample_weight=np.full(p.size, 2.0), hist_log=True
    )
    assert fig is fig2 and ax is given[0] and hist_ax is given[1]
    assert hist_ax.get_yscale() == "log" and hist_ax.get_ylabel() == "weight"
    assert_allclose(hist_ax.patches[0].get_data().values.sum(), 2 * len(p))


def test_probability_histogram(tmp_path):
    rng = np.random.default_rng(1)
    before = rng.beta(2, 5, 5000)
    after = before / 3
    fig, ax = plot.probability_histogram({"before": before, "after": after}, base_rate=0.1, bins=40)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == [
        f"before (mean {before.mean():.3f})",
        f"after (mean {after.mean():.3f})",
        "true base rate (0.100)",
    ]
    vertical = [line.get_xdata()[0] for line in ax.get_lines()]
    assert_allclose(sorted(vertical), sorted([before.mean(), after.mean(), 0.1]))
    path = tmp_path / "hist.png"
    fig.savefig(path, dpi=80)
    assert path.stat().st_size > 10_000
    # single array, density, weights, zoomed range
    fig, ax = plot.probability_histogram(after, density=True, range=(0, 0.5), log=True, sample_weight=np.ones(5000))
    assert ax.get_xlim() == (0, 0.5) and ax.get_yscale() == "log" and ax.get_ylabel() == "density"


def test_plot_bad_input():
    y, p, _ = _data(100)
    with pytest.raises(ValueError, match="y_prob\\['m'\\] has values outside"):
        plot.reliability_diagram(y, {"m": p * 2})
    with pytest.raises(ValueError, match="y_prob must not be an empty mapping"):
        plot.reliability_diagram(y, {})
    with pytest.raises(ValueError, match="n_bins"):
        plot.reliability_diagram(y, p, n_bins=0)
    with pytest.raises(ValueError, match="base_rate"):
        plot.probability_histogram(p, base_rate=1.5)
    with pytest.raises(ValueError, match="bins"):
        plot.probability_histogram(p, bins=0)
    with pytest.raises(ValueError, match="range"):
        plot.probability_histogram(p, range=(1, 0))
    with pytest.raises(ValueError, match="probs\\['model'\\] must be finite"):
        plot.probability_histogram(np.array([0.1, np.nan]))
    with pytest.raises(ValueError, match="sample_weight"):
        plot.probability_histogram(p, sample_weight=np.ones(3))




def test_reliability_diagram_corp_band_and_decomposition():
    y, p, q = _data(5000, seed=3)
    fig, (ax, hist_ax) = plot.reliability_diagram(y, {"raw": p, "recalibrated": q}, method="corp",
                                                   n_resamples=60, random_state=1)
    corp = fastcal.corp_reliability(y, p, n_resamples=60, random_state=1)
    line = ax.get_lines()[1]
    assert_allclose(line.get_xdata(), corp.x)
    assert_allclose(line.get_ydata(), corp.y)
    bands = ax.collections
    assert len(bands) == 2  # one shaded band per model
    path = bands[0].get_paths()[0].vertices
    assert_allclose([path[:, 0].min(), path[:, 0].max()], [corp.x.min(), corp.x.max()])
    assert_allclose(np.sort(path[:, 1])[[0, -1]], [min(corp.lower.min(), corp.upper.min()),
                                                  max(corp.lower.max(), corp.upper.max())])
    d = fastcal.score_decomposition(y, p)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[1] == f"raw (MCB {d.miscalibration:.4f}, DSC {d.discrimination:.4f}, UNC {d.uncertainty:.4f})"
    assert labels[2] == "raw: 90% consistency band"
    assert ax.get_title() == "CORP reliability diagram"
    # no resamples, no band
    _, (ax, _) = plot.reliability_diagram(y, p, method="corp", n_resamples=0)
    assert len(ax.collections) == 0


def test_reliability_diagram_smooth():
    y, p, _ = _data(5000, seed=4)
    _, (ax, _) = plot.reliability_diagram(y, p, method="smooth", show_decomposition=True)
    r = fastcal.smooth_ece(y, p)
    line = ax.get_lines()[1]
    assert_allclose(line.get_xdata(), r.x)
    assert_allclose(line.get_ydata(), r.y)
    d = fastcal.score_decomposition(y, p)
    text = ax.get_legend().get_texts()[1].get_text()
    assert text == (f"model (smooth ECE {r.ece:.4f}; MCB {d.miscalibration:.4f}, DSC {d.discrimination:.4f}, "
                    f"UNC {d.uncertainty:.4f})")
    _, (ax, _) = plot.reliability_diagram(y, p, method="smooth", bandwidth=0.2)
    assert_allclose(ax.get_lines()[1].get_ydata(), fastcal.smooth_ece(y, p, bandwidth=0.2).y)


def test_reliability_diagram_top_label_of_a_matrix():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(3000, 4)) * 2
    P = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = rng.integers(0, 4, 3000)
    for method in ("binned", "corp", "smooth"):
        _, (ax, hist_ax) = plot.reliability_diagram(y, P, method=method, n_resamples=20)
        conf, correct = P.max(axis=1), (P.argmax(axis=1) == y).astype(int)
        _, (ax2, _) = plot.reliability_diagram(correct, conf, method=method, n_resamples=20)
        assert_allclose(ax.get_lines()[1].get_xydata(), ax2.get_lines()[1].get_xydata())
        counts = hist_ax.patches[0].get_data()[0]
        assert_allclose(counts, np.histogram(conf, bins=np.linspace(0, 1, 51))[0])


def test_reliability_diagram_bad_method():
    y, p, _ = _data(100)
    with pytest.raises(fastcal.InvalidParameterError, match="method must be 'binned', 'corp' or 'smooth'"):
        plot.reliability_diagram(y, p, method="isotonic")
    with pytest.raises(fastcal.InvalidParameterError, match="show_decomposition"):
        plot.reliability_diagram(y, p, show_decomposition="yes")


def test_report_diagram_draws_the_reports_numbers(tmp_path):
    y, p, _ = _data(5000, seed=6)
    w = np.linspace(0.5, 2.0, p.size)
    report = fastcal.calibration_report(y, p, sample_weight=w, n_bins=8, strategy="quantile")
    corp = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=40, random_state=2)
    fig, (ax, hist_ax) = plot.report_diagram(report, corp)
    diagonal, binned, curve = ax.get_lines()
    assert_allclose(diagonal.get_xydata(), [[0, 0], [1, 1]])
    assert_allclose(binned.get_xdata(), report.prob_pred)
    assert_allclose(binned.get_ydata(), report.prob_true)
    assert_allclose(curve.get_xdata(), corp.x)
    assert_allclose(curve.get_ydata(), corp.y)
    (band,) = ax.collections
    vertices = band.get_paths()[0].vertices
    assert_allclose(np.sort(vertices[:, 1])[[0, -1]], [corp.lower.min(), corp.upper.max()])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[1:] == [
        f"binned (ECE {report.ece:.4f})",
        f"CORP (MCB {report.brier_miscalibration:.4f}, DSC {report.brier_discrimination:.4f}, "
        f"UNC {report.uncertainty:.4f})",
        "90% consistency band (40 resamples)",
    ]
    assert ax.get_title() == "Reliability diagram (8 quantile bins)"
    # the lower panel: the report's bins' weights over its edges, in the weights' units
    values, edges = hist_ax.patches[0].get_data()[:2]
    assert_allclose(values, report.bin_weights)
    assert_allclose(edges, report.bin_edges)
    assert hist_ax.get_ylabel() == "weight in bin"
    fig.savefig(tmp_path / "report.png", dpi=60)
    assert (tmp_path / "report.png").stat().st_size > 5_000


def test_report_diagram_options():
    y, p, _ = _data(2000, seed=7)
    report = fastcal.calibration_report(y, p)
    # a curve without a band (fastcal.spark.corp_reliability's) says so; no CORP curve at all
    _, (ax, hist_ax) = plot.report_diagram(report, fastcal.corp_reliability(y, p, n_resamples=0), title="t")
    assert ax.get_title() == "t" and not ax.collections
    assert ax.get_legend().get_texts()[2].get_text().startswith("CORP, no band (MCB ")
    assert hist_ax.get_ylabel() == "count in bin"
    _, (ax, _) = plot.report_diagram(report)
    assert len(ax.get_lines()) == 2
    # given axes: no weights panel unless asked for
    fig2, given = plt.subplots(1, 2)
    fig, (ax, hist_ax) = plot.report_diagram(report, ax=given[0])
    assert fig is fig2 and ax is given[0] and hist_ax is None
    _, (_, hist_ax) = plot.report_diagram(report, ax=given[0], hist_ax=given[1])
    assert hist_ax is given[1] and len(hist_ax.patches) == 2
    with pytest.raises(fastcal.InvalidParameterError, match="report must be a CalibrationReport; got"):
        plot.report_diagram(fastcal.corp_reliability(y, p, n_resamples=0))
    with pytest.raises(fastcal.InvalidParameterError, match="corp must be a CorpReliabilityResult or None"):
        plot.report_diagram(report, report)
