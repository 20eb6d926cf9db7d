"""Every weighted function is invariant to scaling all weights by a constant (issue 11).

Each public callable that takes ``sample_weight`` (or ``weights``,
``weight_col``) is listed in ``CASES``, and ``test_cases_cover_every_weighted_callable``
finds them all by introspection in every public module of fastcal (found by
:mod:`pkgutil`), so that a new one, or a new module, must be added here.

fastcal rescales the weights by an exact power of two
(:func:`fastcal._core.validation.rescale_weights`), so with scales that are powers
of two the rescaled weights, and every result computed from them, are
bit-identical: the test compares exactly. A result in weight units (a weight
sum, ``log_loss(normalize=False)``) scales with the weights, again exactly. The
standard errors of :func:`fastcal.calibration_slope_intercept` are those of
frequency weights (documented): they scale by ``c ** -0.5``, which costs one
rounding of ``sqrt(2)`` for odd exponents (relative 2**-52). Platt's targets
are pseudo-counts in weight units (Platt 1999; scikit-learn's sigmoid
calibration does the same), so Platt's fit depends on the weight scale by
definition: it is tested against scikit-learn at moderate scales and for
finite, converged results at the extremes, where scikit-learn fails. Beta
calibration's targets are the labels themselves, so beta is exactly invariant.

Scales that are not powers of two round each weight (relative error up to
2**-53); results then agree to a few hundred ulps (the fits here are well
conditioned: at most n = 64 terms, no cancellation near a tie of block means).
"""

import inspect
import importlib
import math
import pkgutil
import re
import warnings

import numpy as np
import pytest

import fastcal
from fastcal import metrics

N = 64
_rng = np.random.default_rng(11)
S = np.sort(_rng.random(N))
Y = (_rng.random(N) < S).astype(np.int64)
W = _rng.uniform(0.5, 2.0, N)  # not all equal, so that the weights matter
LOGITS = _rng.normal(size=(N, 3))
YK = _rng.integers(0, 3, N)
PK = np.exp(LOGITS) / np.exp(LOGITS).sum(axis=1, keepdims=True)

#: Powers of two: the weights stay normal floats (W * 2**k within [2**-1022, 2**1015]) and their sum finite.
EXACT_SCALES = [2.0**k for k in (-1021, -996, -551, -150, -1, 0, 3, 150, 509, 996, 1014)]
DECIMAL_SCALES = [1e-300, 1e-165, 1e-100, 1e100, 1e153, 1e154, 1e300]


def _floats(x):
    return np.asarray(x, dtype=np.float64).reshape(-1)


def _nan_marked(x):
    """``x`` with its NaN (documented: e.g. a smoothed curve where there are no predictions) as -1, so that the
    test can check every value finite and the NaN in the same places."""
    x = _floats(x)
    return np.where(np.isnan(x), -1.0, x)


def _iso(w):
    out = {}
    for centered in (False, True):
        est = fastcal.IsotonicRegression(centered=centered).fit(S, Y, sample_weight=w)
        out[f"{centered}"] = _floats(np.concatenate([est.X_thresholds_, est.y_thresholds_, est.predict(S)]))
    return out


def _venn_abers(w):
    va = fastcal.VennAbers().fit(S, Y, sample_weight=w)
    return {"tables": _floats(np.concatenate([va.c_, va.p0_, va.p1_])), "proba": _floats(va.predict_proba(S))}


def _slope(w):
    r = fastcal.calibration_slope_intercept(Y, S, sample_weight=w)
    return {"fit": _floats([r.slope, r.intercept, r.calibration_in_the_large]),
            "se": (_floats([r.slope_se, r.intercept_se]), -0.5)}


def _report(w):
    r = fastcal.calibration_report(Y, S, sample_weight=w)
    d = r.to_dict()
    out = {k: _floats(v) for k, v in d.items() if isinstance(v, float) and k not in
           ("weight_sum", "slope_se", "intercept_se")}
    out["weight_sum"] = (_floats(r.weight_sum), 1)
    out["bin_weights"] = (_floats(r.bin_weights), 1)
    out["se"] = (_floats([r.slope_se, r.intercept_se]), -0.5)
    out["curve"] = _floats(np.concatenate([r.prob_true, r.prob_pred]))
    return out


def _curve_counts(w):
    t, p, c = fastcal.calibration_curve(Y, S, sample_weight=w, return_counts=True)
    out = {"curve": _floats(np.concatenate([t, p])), "counts": (_floats(c), 1)}
    t, p, c = fastcal.calibration_curve(YK, PK, sample_weight=w, return_counts=True, strategy="quantile")
    out["top label"], out["top label counts"] = _floats(np.concatenate([t, p])), (_floats(c), 1)
    for j, (t, p, c) in enumerate(fastcal.calibration_curve(YK, PK, sample_weight=w, return_counts=True,
                                                            multiclass="classwise")):
        out[f"class {j}"], out[f"class {j} counts"] = _floats(np.concatenate([t, p])), (_floats(c), 1)
    return out


def _ece(w):
    out = {"e": _floats([metrics.expected_calibration_error(Y, S, sample_weight=w, norm=k) for k in ("l1", "l2", "max")])}
    out["top label"] = _floats(metrics.expected_calibration_error(YK, PK, sample_weight=w))
    out["classwise"] = _floats(metrics.expected_calibration_error(YK, PK, sample_weight=w, multiclass="classwise"))
    return out


def _ecce(w):
    r = fastcal.ecce(Y, S, sample_weight=w)
    return {"ecce": _floats([r.ecce, r.std, r.ecce_sigma, r.pvalue])}


def _multicalibration(w):
    r = fastcal.multicalibration_error(Y, S, {"g": np.arange(N) % 3, "x": S[::-1].copy()}, numerical=["x"],
                                       sample_weight=w, min_samples_per_segment=2)
    return {"mce": _floats([r.mce, r.mce_sigma, r.mce_pvalue, r.mce_relative, r.mde, r.mde_relative,
                            r.global_ecce, r.global_ecce_sigma, r.global_ecce_pvalue]),
            "segments": _floats(np.concatenate([r.segment_ecce, r.segment_ecce_sigma, r.segment_pvalue]))}


def _smooth(w):
    out = {}
    for key, (y, p) in {"b": (Y, S), "k": (YK, PK)}.items():
        for bandwidth in (None, 0.05):
            r = fastcal.smooth_ece(y, p, sample_weight=w, bandwidth=bandwidth)
            name = f"{key} {bandwidth}"
            out[name] = _floats(np.concatenate([[r.ece, r.bandwidth, r.error_bound], r.x]))
            # The density f_w / W and the curve y = f_y / f_w: cosine series of at most m = 2.82 / sigma + 1 modes,
            # each evaluated with an absolute error of about m eps max f. Where the density is far below its
            # maximum, their relative error is that much larger (the curve is NaN below 1e-9 of it), so at the
            # decimal scales (weights rounded) the density is compared to m eps max(density) absolute, and y through
            # y * density / max(density), accurate to about 2 m eps: 1e-12 covers m = 57 (sigma = 0.05) with a
            # margin of 40. At the exact scales both are bit-identical.
            out[f"{name} density"] = (r.density, 0, 1e-12 * r.density.max())
            out[f"{name} curve"] = (_nan_marked(r.y), 0, None)
            out[f"{name} weighted curve"] = (np.nan_to_num(r.y) * r.density / r.density.max(), 0, 1e-12)
    return out


def _dask_smooth(w):
    import dask.array as da

    from fastcal import dask as fd

    r = fd.smooth_ece(da.from_array(Y, chunks=20), da.from_array(S, chunks=20), sample_weight=da.from_array(w, chunks=20))
    return {"smooth": _nan_marked(np.concatenate([[r.ece, r.bandwidth, r.error_bound], r.x, r.y, r.density]))}


def _isotonic_regression(w):
    r = fastcal.isotonic_regression(S + Y, weights=w)
    return {"x": r.x, "blocks": _floats(r.blocks), "weights": (r.weights, 1)}


def _cccv(w):
    from sklearn.neighbors import KNeighborsClassifier

    # An estimator without sample_weight: the weights reach only the calibrators (scikit-learn's own estimators
    # are not all scale-invariant, e.g. a penalty against weighted losses).
    # Every method but "sigmoid" (Platt's targets depend on the weight scale, see PLATT).
    X = np.column_stack([S, LOGITS[:, 0]])
    out = {}
    for method in ("isotonic", "centered_isotonic", "venn_abers", "beta", "histogram", "temperature"):
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Since KNeighborsClassifier does not appear to accept sample_weight")
            est = fastcal.CalibratedClassifierCV(KNeighborsClassifier(9), method=method, cv=2).fit(
                X, Y, sample_weight=w)
        out[method] = est.predict_proba(X)[:, 1]
        out[f"{method} score"] = _floats(est.score(X, Y, sample_weight=w))
    return out


def _dask(name, **kw):
    def run(w):
        import dask.array as da

        from fastcal import dask as fd

        s, y = da.from_array(S, chunks=20), da.from_array(Y, chunks=20)
        wd = da.from_array(w, chunks=20)
        if name == "fit_isotonic":
            out = {}
            for centered in (False, True):
                est = fd.fit_isotonic(s, y, wd, centered=centered)
                out[f"{centered}"] = _floats(np.concatenate([est.X_thresholds_, est.y_thresholds_]))
            return out
        if name == "calibration_curve":
            t, p, c = fd.calibration_curve(y, s, sample_weight=wd, return_counts=True)
            return {"curve": _floats(np.concatenate([t, p])), "counts": (_floats(c), 1)}
        value = getattr(fd, name)(y, s, sample_weight=wd, **kw)
        out = {"value": _floats(list(value.to_dict().values()) if hasattr(value, "to_dict") else value)}
        if name == "log_loss":
            out["sum"] = (_floats(fd.log_loss(y, s, sample_weight=wd, normalize=False)), 1)
        if name in ("log_loss", "brier_score_loss"):  # (n, k) matrices
            yk, pk = da.from_array(YK, chunks=20), da.from_array(PK, chunks=(20, 3))
            out["k"] = _floats(getattr(fd, name)(yk, pk, sample_weight=wd))
            if name == "log_loss":
                out["ksum"] = (_floats(fd.log_loss(yk, pk, sample_weight=wd, normalize=False)), 1)
        return out

    return run


def _outofcore_isotonic(w, tmp_path):
    from fastcal import outofcore

    out = {}
    for centered in (False, True):
        est = outofcore.fit_isotonic(S, Y, sample_weight=w, chunk_rows=20, centered=centered)
        out[f"{centered}"] = _floats(np.concatenate([est.X_thresholds_, est.y_thresholds_]))
    return out


def _outofcore_isotonic_parquet(w, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastcal import outofcore

    path = tmp_path / f"w{np.max(w):.3e}.parquet"
    pq.write_table(pa.table({"s": S, "y": Y, "w": w}), path, row_group_size=20)
    est = outofcore.fit_isotonic_parquet(path, "s", "y", weight_col="w", chunk_rows=20)
    return {"X": _floats(est.X_thresholds_), "y": _floats(est.y_thresholds_)}


def _plot_curve(w):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fastcal import plot

    out = {}
    for method in ("binned", "corp", "smooth"):
        for key, (y, p) in {"b": (Y, S), "k": (YK, PK)}.items():
            fig, (ax, hax) = plot.reliability_diagram(y, p, sample_weight=w, method=method, n_resamples=16,
                                                      show_decomposition=True)
            lines = [_floats(line.get_ydata()) for line in ax.get_lines()]
            heights = [p.get_data().values for p in hax.patches]
            out[f"{method} {key}"] = _nan_marked(np.concatenate(lines))
            # the ECE and decomposition printed in the legend
            legend = " ".join(t.get_text() for t in ax.get_legend().get_texts())
            out[f"{method} {key} legend"] = _floats([float(v) for v in re.findall(r"\d+\.\d+", legend)])
            out[f"{method} {key} hist"] = (_floats(np.concatenate(heights)), 1)  # weight sums
            plt.close(fig)
    return out


def _plot_hist(w):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fastcal import plot

    fig, ax = plot.probability_histogram(S, sample_weight=w, density=True)
    heights = [p.get_data().values for p in ax.patches]
    plt.close(fig)
    return {"hist": _floats(np.concatenate(heights))}


def _beta_params(est):
    return _floats([est.a_, est.b_, est.c_, est.m_, est.n_iter_])


def _beta(w):
    out = {}
    for model in ("abm", "ab", "am"):  # "abm" refits here with the log p term dropped (a < 0)
        est = fastcal.BetaCalibration(model).fit(S, Y, sample_weight=w)
        out[model] = _beta_params(est)
        out[f"{model} pred"] = est.predict(S)
    out["abm, a, b > 0"] = _beta_params(fastcal.BetaCalibration().fit(S**2, Y, sample_weight=w))
    out["constant p"] = _beta_params(fastcal.BetaCalibration().fit(np.full(N, 0.3), Y, sample_weight=w))
    return out


def _outofcore_beta(w):
    from fastcal import outofcore

    return {m: _beta_params(outofcore.fit_beta(S, Y, w, parameters=m, chunk_rows=20)) for m in ("abm", "am")}


def _outofcore_beta_parquet(w, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastcal import outofcore

    path = tmp_path / f"beta{np.max(w):.3e}.parquet"
    pq.write_table(pa.table({"p": S, "y": Y, "w": w}), path, row_group_size=20)
    return {"abm": _beta_params(outofcore.fit_beta_parquet(path, "p", "y", weight_col="w", chunk_rows=20))}


def _dask_beta(w):
    import dask.array as da

    from fastcal import dask as fd

    p, y, wd = (da.from_array(a, chunks=20) for a in (S, Y, w))
    return {m: _beta_params(fd.fit_beta(p, y, wd, parameters=m)) for m in ("abm", "am")}


def _dask_multiclass(w):
    import dask.array as da

    from fastcal import dask as fd

    z, y, wd = da.from_array(LOGITS, chunks=(20, 2)), da.from_array(YK, chunks=20), da.from_array(w, chunks=20)
    m = fd.fit_multiclass(fastcal.MatrixScaling(reg_lambda=0.1), z, y, wd)
    v = fd.fit_multiclass(fastcal.VectorScaling(), z, y, wd)
    return {"matrix": _floats(np.concatenate([m.coef_.ravel(), m.intercept_])),
            "vector": _floats(np.concatenate([v.scales_, v.biases_]))}


def _histogram(w):
    out = {}
    for strategy in ("uniform", "quantile"):
        est = fastcal.HistogramBinning(n_bins=7, strategy=strategy).fit(S, Y, sample_weight=w)
        out[strategy] = _floats(np.concatenate([est.bin_edges_, est.bin_values_, est.predict(S)]))
        out[f"{strategy} weights"] = (est.bin_weights_, 1)
    return out


def _dask_histogram(w):
    import dask.array as da

    from fastcal import dask as fd

    est = fd.fit_histogram(da.from_array(S, chunks=20), da.from_array(Y, chunks=20), da.from_array(w, chunks=20),
                           n_bins=7, strategy="quantile")
    return {"fit": _floats(np.concatenate([est.bin_edges_, est.bin_values_])), "weights": (est.bin_weights_, 1)}


def _outofcore_histogram(w, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastcal import outofcore

    est = outofcore.fit_histogram(S, Y, w, n_bins=7, strategy="quantile", chunk_rows=20)
    path = tmp_path / f"hist{np.max(w):.3e}.parquet"
    pq.write_table(pa.table({"p": S, "y": Y, "w": w}), path, row_group_size=20)
    from_file = outofcore.fit_histogram_parquet(path, "p", "y", "w", n_bins=7, chunk_rows=20)
    return {"fit": _floats(np.concatenate([est.bin_edges_, est.bin_values_])), "weights": (est.bin_weights_, 1),
            "parquet": _floats(np.concatenate([from_file.bin_edges_, from_file.bin_values_])),
            "parquet weights": (from_file.bin_weights_, 1)}


def _decomposition(w):
    out = {}
    for scoring in ("brier", "log_loss"):
        for key, (y, p) in {"b": (Y, S), "k": (YK, PK)}.items():
            d = fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=w)
            out[f"{scoring} {key}"] = _floats([d.score, d.miscalibration, d.discrimination, d.uncertainty])
    return out


def _corp(w):
    out = {}
    for band in ("consistency", "confidence"):
        r = fastcal.corp_reliability(Y, S, sample_weight=w, n_resamples=16, band=band, random_state=3)
        out[band] = _floats(np.concatenate([r.x, r.y, r.lower, r.upper]))
    r = fastcal.corp_reliability(YK, PK, sample_weight=w)
    out["top label"] = _floats(np.concatenate([r.x, r.y]))
    return out


def _dask_decomposition(w):
    import dask.array as da

    from fastcal import dask as fd

    y, p, wd = (da.from_array(a, chunks=20) for a in (Y, S, w))
    out = {}
    for scoring in ("brier", "log_loss"):
        d = fd.score_decomposition(y, p, scoring=scoring, sample_weight=wd)
        out[scoring] = _floats([d.score, d.miscalibration, d.discrimination, d.uncertainty])
    return out


#: (qualified name of the callable, function of the weights giving {name: value, or (value, weight units power),
#: or (value, weight units power, absolute tolerance at the decimal scales, None for none: compared at the exact
#: scales only)}).
CASES = {
    "fastcal.isotonic.isotonic_regression": _isotonic_regression,
    "fastcal.isotonic.IsotonicRegression.fit": _iso,
    "fastcal.isotonic.IsotonicRegression.fit_transform":
        lambda w: {"t": fastcal.IsotonicRegression().fit_transform(S, Y, sample_weight=w)},
    "fastcal.isotonic.IsotonicRegression.score": lambda w: {
        "r2": _floats(fastcal.IsotonicRegression(out_of_bounds="clip").fit(S[::2], Y[::2]).score(S, Y, sample_weight=w))},
    "fastcal.platt.calibration_slope_intercept": _slope,
    "fastcal.temperature.TemperatureScaling.fit":
        lambda w: {"t": _floats(fastcal.TemperatureScaling().fit(LOGITS, YK, sample_weight=w).temperature_)},
    "fastcal.multiclass.VectorScaling.fit": lambda w: {"p": _floats(np.concatenate(
        [(m := fastcal.VectorScaling().fit(LOGITS, YK, sample_weight=w)).scales_, m.biases_]))},
    "fastcal.multiclass.BiasCorrectedTemperatureScaling.fit": lambda w: {"p": _floats(np.concatenate(
        [[(m := fastcal.BiasCorrectedTemperatureScaling().fit(LOGITS, YK, sample_weight=w)).beta_], m.biases_]))},
    "fastcal.multiclass.MatrixScaling.fit": lambda w: {"p": _floats(np.concatenate(
        [(m := fastcal.MatrixScaling(reg_lambda=0.1).fit(LOGITS, YK, sample_weight=w)).coef_.ravel(), m.intercept_]))},
    "fastcal.multiclass.DirichletCalibration.fit": lambda w: {"p": _floats(np.concatenate(
        [(m := fastcal.DirichletCalibration().fit(PK, YK, sample_weight=w)).coef_.ravel(), m.intercept_]))},
    "fastcal.metrics.brier_score_loss": lambda w: {
        "b": _floats(metrics.brier_score_loss(Y, S, sample_weight=w)),
        "k": _floats(metrics.brier_score_loss(YK, PK, sample_weight=w))},
    "fastcal.metrics.log_loss": lambda w: {
        "b": _floats(metrics.log_loss(Y, S, sample_weight=w)),
        "k": _floats(metrics.log_loss(YK, PK, sample_weight=w)),
        "sum": (_floats(metrics.log_loss(Y, S, sample_weight=w, normalize=False)), 1),
        "ksum": (_floats(metrics.log_loss(YK, PK, sample_weight=w, normalize=False)), 1)},
    "fastcal.metrics.roc_auc_score": lambda w: {
        "b": _floats(metrics.roc_auc_score(Y, S, sample_weight=w)),
        "ovr": _floats(metrics.roc_auc_score(YK, PK, sample_weight=w, multi_class="ovr", average="weighted")),
        "partial": _floats(metrics.roc_auc_score(Y, S, sample_weight=w, max_fpr=0.5))},
    "fastcal.metrics.expected_calibration_error": _ece,
    "fastcal.metrics.calibration_curve": _curve_counts,
    "fastcal.metrics.brier_decomposition":
        lambda w: {"d": _floats(list(metrics.brier_decomposition(Y, S, sample_weight=w).to_dict().values()))},
    "fastcal.metrics.calibration_report": _report,
    "fastcal.calibration.CalibratedClassifierCV.fit": _cccv,
    "fastcal.calibration.CalibratedClassifierCV.score": _cccv,
    "fastcal.dask.fit_isotonic": _dask("fit_isotonic"),
    "fastcal.dask.fit_multiclass": _dask_multiclass,
    "fastcal.dask.calibration_curve": _dask("calibration_curve"),
    "fastcal.dask.brier_score_loss": _dask("brier_score_loss"),
    "fastcal.dask.log_loss": _dask("log_loss"),
    "fastcal.dask.expected_calibration_error": _dask("expected_calibration_error"),
    "fastcal.dask.brier_decomposition": _dask("brier_decomposition"),
    "fastcal.outofcore.fit_isotonic": _outofcore_isotonic,
    "fastcal.outofcore.fit_isotonic_parquet": _outofcore_isotonic_parquet,
    "fastcal.plot.reliability_diagram": _plot_curve,
    "fastcal.plot.probability_histogram": _plot_hist,
    "fastcal.beta.BetaCalibration.fit": _beta,
    "fastcal.outofcore.fit_beta": _outofcore_beta,
    "fastcal.outofcore.fit_beta_parquet": _outofcore_beta_parquet,
    "fastcal.dask.fit_beta": _dask_beta,
    "fastcal.histogram.HistogramBinning.fit": _histogram,
    "fastcal.dask.fit_histogram": _dask_histogram,
    "fastcal.outofcore.fit_histogram": _outofcore_histogram,
    "fastcal.outofcore.fit_histogram_parquet": _outofcore_histogram,
    "fastcal.decomposition.score_decomposition": _decomposition,
    "fastcal.decomposition.corp_reliability": _corp,
    "fastcal.dask.score_decomposition": _dask_decomposition,
    "fastcal.smooth.smooth_ece": _smooth,
    "fastcal.multicalibration.ecce": _ecce,
    "fastcal.multicalibration.multicalibration_error": _multicalibration,
    "fastcal.multicalibration.calibration_ratio": lambda w: {
        f"{a}": _floats(fastcal.calibration_ratio(Y, S, sample_weight=w, adjust_unjoined=a)) for a in (False, True)},
    "fastcal.multicalibration.proportional_ece": lambda w: {
        "pece": _floats(fastcal.proportional_ece(Y, S, sample_weight=w, n_bins=5))},
    "fastcal.multicalibration.normalized_entropy": lambda w: {
        "ne": _floats(fastcal.normalized_entropy(Y, S, sample_weight=w))},
    "fastcal.venn_abers.VennAbers.fit": _venn_abers,
    "fastcal.dask.smooth_ece": _dask_smooth,
    "fastcal.multicalibration.segment_report": lambda w: _segment_report(w),
    "fastcal.grouped.GroupedCalibrator.fit": lambda w: _grouped(w),
    "fastcal.multicalibration.MulticalibrationCalibrator.fit": lambda w: _multicalibration_fit(w),
    "fastcal.dask.ecce": _dask("ecce"),
    "fastcal.dask.calibration_ratio": _dask("calibration_ratio"),
    "fastcal.dask.normalized_entropy": _dask("normalized_entropy"),
    "fastcal.dask.proportional_ece": _dask("proportional_ece", n_bins=7),
    "fastcal.dask.roc_auc_score": _dask("roc_auc_score"),
    "fastcal.dask.calibration_report": lambda w: _dask_report(w),
    "fastcal.dask.calibration_slope_intercept": lambda w: _dask_slope(w),
    "fastcal.dask.corp_reliability": lambda w: _dask_corp(w),
    "fastcal.dask.segment_report": lambda w: _dask_segment_report(w),
    "fastcal.dask.fit_grouped": lambda w: _dask_fit_grouped(w),
    "fastcal.dask.multicalibration_error": lambda w: _dask_multicalibration(w),
    "fastcal.dask.fit_multicalibration": lambda w: _dask_multicalibration_fit(w),
}


def _dask_multicalibration(w):
    import dask.array as da

    from fastcal import dask as fd

    r = fd.multicalibration_error(da.from_array(Y, chunks=20), da.from_array(S, chunks=20),
                                  {"g": da.from_array(np.arange(N) % 3, chunks=20),
                                   "x": da.from_array(S[::-1].copy(), chunks=20)},
                                  numerical=["x"], sample_weight=da.from_array(w, chunks=20),
                                  min_samples_per_segment=2)
    return {"mce": _floats([r.mce, r.mce_sigma, r.mce_pvalue, r.mce_relative, r.mde, r.mde_relative]),
            "segments": _floats(np.concatenate([r.segment_ecce, r.segment_ecce_sigma, r.segment_pvalue]))}


def _dask_slope(w):
    import dask.array as da

    from fastcal import dask as fd

    r = fd.calibration_slope_intercept(da.from_array(Y, chunks=20), da.from_array(S, chunks=20),
                                       sample_weight=da.from_array(w, chunks=20))
    return {"fit": _floats([r.slope, r.intercept, r.calibration_in_the_large]),
            "se": (_floats([r.slope_se, r.intercept_se]), -0.5)}


def _dask_corp(w):
    import dask.array as da

    from fastcal import dask as fd

    r = fd.corp_reliability(da.from_array(Y, chunks=20), da.from_array(S, chunks=20),
                            sample_weight=da.from_array(w, chunks=20), n_resamples=16, random_state=3)
    return {"curve": _floats(np.concatenate([r.x, r.y])), "band": _floats(np.concatenate([r.lower, r.upper]))}


def _dask_report(w):
    import dask.array as da

    from fastcal import dask as fd

    r = fd.calibration_report(da.from_array(Y, chunks=20), da.from_array(S, chunks=20),
                              sample_weight=da.from_array(w, chunks=20))
    out = {k: _floats(v) for k, v in r.to_dict().items() if isinstance(v, float) and k not in
           ("weight_sum", "slope_se", "intercept_se")}
    out["weight_sum"] = (_floats(r.weight_sum), 1)
    out["bin_weights"] = (_floats(r.bin_weights), 1)
    out["se"] = (_floats([r.slope_se, r.intercept_se]), -0.5)
    return out


def _dask_segment_report(w):
    import dask.array as da

    from fastcal import dask as fd

    r = fd.segment_report(da.from_array(Y, chunks=20), da.from_array(S, chunks=20),
                          da.from_array(np.arange(N) % 3, chunks=20), sample_weight=da.from_array(w, chunks=20),
                          n_partitions=2)
    out = {k: _nan_marked(v) for k, v in r.to_dict().items() if k not in ("groups", "n", "weight_sum")}
    out["weight_sum"] = (_floats(r.weight_sum), 1)
    return out

def _multicalibration_fit(w):
    segments = {"g": Y ^ (np.arange(N) % 7 == 0), "x": S[::-1].copy()}  # g: mostly the label, so the fit changes
    est = fastcal.MulticalibrationCalibrator(min_samples_per_segment=2, n_folds=2).fit(
        S, Y, segments, numerical=["x"], sample_weight=w)
    # Powers of two: the same bits. Decimal scales round each weight once (relative 2^-53), which moves the pattern
    # sums by as much and the converged lasso by that times its conditioning: offsets of order 1 by ~1e-15 (seen:
    # 1.5e-15, an offset at the soft threshold's edge at 0 or -1.5e-15); 1e-12 allows a conditioning of 10^3.
    return {"model": (_floats([est.slope_, *est.offsets_.ravel(), *est.cv_losses_]), 0, 1e-12),
            "predictions": (_floats(est.predict(S, segments)), 0, 1e-12)}


def _dask_multicalibration_fit(w):
    import dask.array as da

    from fastcal import dask as fd

    segments = {"g": Y ^ (np.arange(N) % 7 == 0), "x": S[::-1].copy()}
    est = fd.fit_multicalibration(da.from_array(S, chunks=20), da.from_array(Y, chunks=20),
                                  {k: da.from_array(v, chunks=20) for k, v in segments.items()},
                                  sample_weight=da.from_array(w, chunks=20), numerical=["x"],
                                  min_samples_per_segment=2, n_folds=2)
    # as the in-memory fit (_multicalibration_fit): the driver rescales the weights by the same power of two
    return {"model": (_floats([est.slope_, *est.offsets_.ravel(), *est.cv_losses_]), 0, 1e-12),
            "predictions": (_floats(est.predict(S, segments)), 0, 1e-12)}


def _dask_fit_grouped(w):
    import dask.array as da

    from fastcal import dask as fd

    groups = np.arange(N) % 3
    est = fd.fit_grouped(None, da.from_array(S, chunks=20), da.from_array(Y, chunks=20),
                         da.from_array(groups, chunks=20), sample_weight=da.from_array(w, chunks=20),
                         min_samples_per_group=20, n_partitions=2)
    return {"p": est.predict(S, groups), "global": _floats(est.global_calibrator_.y_thresholds_)}


#: fastcal.spark hands the weight column to the engine's drivers (fastcal._engine), the drivers the Dask cases above
#: cover; tests/test_spark.py runs its weighted functions at two exact scales (a Spark job per call: all the scales
#: here for each would take minutes). Listed here so that the search below still finds every other callable.
SPARK = {"fastcal.spark." + name for name in (
    "brier_decomposition", "brier_score_loss", "calibration_curve", "calibration_ratio", "calibration_report",
    "calibration_slope_intercept", "corp_reliability", "ecce", "fit_grouped", "fit_multicalibration",
    "multicalibration_error", "normalized_entropy", "proportional_ece", "segment_report",
    "expected_calibration_error", "fit_beta", "fit_histogram", "fit_isotonic", "fit_multiclass", "fit_platt", "log_loss",
    "roc_auc_score", "score_decomposition", "smooth_ece")}


def _segment_report(w):
    r = fastcal.segment_report(Y, S, np.arange(N) % 3, sample_weight=w)
    d = r.to_dict()
    out = {k: _nan_marked(v) for k, v in d.items() if k not in ("groups", "n", "weight_sum")}
    out["weight_sum"] = (_floats(r.weight_sum), 1)
    return out


def _grouped(w):
    groups = np.arange(N) % 3
    out = {}
    for calibrator in (fastcal.IsotonicRegression(out_of_bounds="clip"), fastcal.BetaCalibration()):
        est = fastcal.GroupedCalibrator(calibrator, min_samples_per_group=20).fit(S, Y, groups, sample_weight=w)
        out[type(calibrator).__name__] = _floats(est.predict(S, (np.arange(N) + 1) % 4))  # group 3: unseen, global
    return out

#: Platt's fits: scale-dependent by definition (targets are pseudo-counts in weight units), tested below.
PLATT = {
    "fastcal.platt.platt_scaling": lambda w: fastcal.platt_scaling(S, Y, sample_weight=w),
    "fastcal.platt.PlattScaling.fit": lambda w: fastcal.PlattScaling().fit(S, Y, sample_weight=w),
    "fastcal.dask.fit_platt": lambda w: _dask_platt(w),
    "fastcal.outofcore.fit_platt": lambda w: importlib.import_module("fastcal.outofcore").fit_platt(
        S, Y, w, chunk_rows=20),
    "fastcal.outofcore.fit_platt_parquet": lambda w: _outofcore_platt_parquet(w),
}


def _dask_platt(w):
    import dask.array as da

    from fastcal import dask as fd

    return fd.fit_platt(da.from_array(S, chunks=20), da.from_array(Y, chunks=20), da.from_array(w, chunks=20))


def _outofcore_platt_parquet(w):
    import tempfile

    import pyarrow as pa
    import pyarrow.parquet as pq

    from fastcal import outofcore

    with tempfile.TemporaryDirectory() as tmp:
        path = f"{tmp}/data.parquet"
        pq.write_table(pa.table({"s": S, "y": Y, "w": w}), path, row_group_size=20)
        return outofcore.fit_platt_parquet(path, "s", "y", weight_col="w", chunk_rows=20)

def _public_modules():
    """fastcal and every module of it without a private name part (``fastcal._io``, ``__main__`` are not)."""
    names = ["fastcal"]
    for info in pkgutil.walk_packages(fastcal.__path__, "fastcal."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


_WEIGHT_PARAMETERS = {"sample_weight", "weights", "weight_col"}


def _public_names(module):
    """``__all__``, or (a module without one) the public names it defines itself."""
    if hasattr(module, "__all__"):
        return module.__all__
    return [name for name in dir(module) if not name.startswith("_")
            and getattr(getattr(module, name), "__module__", None) == module.__name__]


def _weighted_callables():
    found = set()
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in _public_names(module):
            obj = getattr(module, name)
            home = getattr(obj, "__module__", module_name)
            if inspect.isclass(obj):
                members = [(f"{home}.{name}.{m}", getattr(obj, m)) for m in dir(obj)
                           if not m.startswith("_") and callable(getattr(obj, m))]
            else:
                members = [(f"{home}.{name}", obj)] if callable(obj) else []
            for qualified, func in members:
                if qualified.rsplit(".", 1)[-1].startswith("set_") and qualified.endswith("_request"):
                    continue  # scikit-learn's metadata routing: sample_weight there is a request flag
                try:
                    parameters = inspect.signature(func).parameters
                except (TypeError, ValueError):
                    continue
                if _WEIGHT_PARAMETERS & set(parameters):
                    found.add(qualified)
    return found


def test_every_public_module_is_searched():
    # The search above would miss a module that pkgutil does not list: check a few we know.
    assert {"fastcal.metrics", "fastcal.dask", "fastcal.outofcore", "fastcal.beta", "fastcal.decomposition",
            "fastcal.cli"} <= set(_public_modules())
    assert not [m for m in _public_modules() if "._" in m]


def test_cases_cover_every_weighted_callable():
    assert _weighted_callables() == set(CASES) | set(PLATT) | SPARK


def _run(case, w, tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        params = inspect.signature(case).parameters
        out = case(w, tmp_path) if "tmp_path" in params else case(w)
    out = {k: v if isinstance(v, tuple) else (v, 0) for k, v in out.items()}
    return {k: v if len(v) == 3 else (*v, 0.0) for k, v in out.items()}


@pytest.mark.parametrize("name", sorted(CASES))
def test_results_do_not_depend_on_the_weight_scale(name, tmp_path):
    case = CASES[name]
    base = _run(case, W, tmp_path)
    for key, (value, *_) in base.items():
        assert np.all(np.isfinite(value)), (key, value)
    for c in EXACT_SCALES:
        got = _run(case, W * c, tmp_path)
        for key, (value, units, _) in base.items():
            expected = value * c**units if units != -0.5 else value / math.sqrt(c)
            if units == -0.5:  # one rounding of sqrt(2) (odd exponents), see the module docstring
                np.testing.assert_allclose(got[key][0], expected, rtol=4 * 2.0**-52, err_msg=f"{key} at {c}")
            else:
                np.testing.assert_array_equal(got[key][0], expected, err_msg=f"{key} at {c}")
    for c in DECIMAL_SCALES:
        got = _run(case, W * c, tmp_path)
        for key, (value, units, atol) in base.items():
            if atol is None:
                continue
            expected = value * c**units if units != -0.5 else value / math.sqrt(c)
            np.testing.assert_allclose(got[key][0], expected, rtol=1e-12, atol=atol, err_msg=f"{key} at {c}")


@pytest.mark.parametrize("name", sorted(PLATT))
def test_platt_fits_at_every_weight_scale(name):
    from sklearn.calibration import _sigmoid_calibration

    fit = PLATT[name]

    def params(w):
        r = fit(w)
        return (r.a, r.b, r.converged) if hasattr(r, "a") else (r.a_, r.b_, r.converged_)

    for c in (2.0**-10, 1e-3, 1.0, 7.0, 1e3, 2.0**10):
        a, b, converged = params(W * c)
        a_sk, b_sk = _sigmoid_calibration(S, Y, sample_weight=W * c)
        # scikit-learn's L-BFGS stops at a gradient of 1e-5 (relative to the loss), ours at a decrement of 1e-10.
        assert converged and abs(a - a_sk) < 1e-4 * (1 + abs(a_sk)) and abs(b - b_sk) < 1e-4 * (1 + abs(b_sk))
    # Far from 1 the targets saturate: (N+ + 1)/(N+ + 2) is 1/2 + O(N+) for tiny and 1 - O(1/N+) for huge weights.
    tiny = [params(W * c) for c in (2.0**-996, 1e-300, 1e-165, 2.0**-150)]
    huge = [params(W * c) for c in (2.0**150, 1e153, 1e300, 2.0**996)]
    for a, b, converged in tiny:
        assert converged and abs(a) < 1e-30 and abs(b) < 1e-30
    for a, b, converged in huge:
        assert converged and np.allclose((a, b), huge[0][:2], rtol=1e-9, atol=0)
    assert huge[0][0] < -1
