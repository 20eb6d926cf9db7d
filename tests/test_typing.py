"""fastcal's type hints, checked from the side of a library that imports fastcal.

fastcal ships inline type hints and the PEP 561 marker ``fastcal/py.typed``.
These tests run mypy (in a subprocess) on small scripts written into a
temporary directory, the way a project that depends on fastcal checks its code:

- ``CONSUMER`` uses every public name (the estimators' fit/predict/transform,
  parameters, fitted attributes and model files; the functions and the fields
  of their results; ``fastcal.outofcore``; ``fastcal.plot``; ``fastcal.dask``,
  on Dask arrays and Series) and states the
  type mypy must infer for each result with ``typing.assert_type``. It must
  pass ``mypy --strict``. It is also *run*, with ``assert_type`` replaced by a
  check of the value against the stated type, so that the hints are true of
  what the functions return, not only consistent.
- ``CONSUMER_ERRORS`` makes deliberate type errors (a wrong option string, a
  string for a thread count, arithmetic on a result's field with a string...);
  mypy must report each on its line with its error code, and nothing else.
- mypy must find fastcal as an *installed* package, through ``py.typed``: it
  is given a directory holding only a link to the package being tested (the
  worktree's or the installed one, whichever ``import fastcal`` finds), on the
  ``PYTHONPATH`` of ``--python-executable`` (where mypy looks for installed
  packages, which need the marker), and runs from an empty directory with a
  config file of its own, so neither the source tree nor ``MYPYPATH`` (where
  no marker is needed) can stand in. A copy of the package without
  ``py.typed`` is refused ("missing library stubs or py.typed marker"),
  which shows the marker is what makes the hints visible.

Dask's own hints are partial (its constructors, such as ``da.from_array``, are
not annotated): ``CONSUMER`` makes its Dask inputs with one ``type: ignore`` on
such a call, and every call of ``fastcal.dask`` is checked with ``--strict``.

``PENDING`` is for public names that have no hints yet (none now): they are
left out of ``CONSUMER``, and a test fails once they gain hints, as a
reminder to cover them here.
"""

import ast
import inspect
import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import types
import typing
from pathlib import Path

import numpy as np
import pytest

import fastcal
import fastcal.dask
import fastcal.outofcore
import fastcal.plot

PACKAGE_DIR = Path(fastcal.__file__).resolve().parent
ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 600

#: Public names without hints yet: not in CONSUMER.
PENDING: set[str] = set()

#: mypy's settings for the scripts: all of --strict (numpy's own hints need nothing relaxed).
MYPY_CONFIG = """\
[mypy]
strict = True
python_version = 3.11
"""

# Once per `make test`, not again on one thread: mypy on the typed API: no kernel runs, nothing depends on threads.
pytestmark = pytest.mark.slow

CONSUMER = '''\
"""A library using fastcal's public API (tests/test_typing.py)."""

from __future__ import annotations

import os
import sys
from typing import Any, Literal, assert_type

import dask.array as da
import dask.dataframe as dd
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure, SubFigure
from numpy.typing import NDArray
from sklearn.linear_model import LogisticRegression  # type: ignore[import-untyped, unused-ignore]

import fastcal
import fastcal.dask
import fastcal.outofcore
import fastcal.plot

Floats = NDArray[np.floating[Any]]
Calibrator = (fastcal.IsotonicRegression | fastcal.PlattScaling | fastcal.TemperatureScaling | fastcal.BetaCalibration
              | fastcal.HistogramBinning | fastcal.VennAbers | fastcal.VectorScaling
              | fastcal.BiasCorrectedTemperatureScaling | fastcal.MatrixScaling | fastcal.DirichletCalibration)
Curve = tuple[NDArray[np.float64], NDArray[np.float64]]
CurveCounts = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64] | NDArray[np.float64]]


def calibrators(s: NDArray[np.float64], y: NDArray[np.int64], tmp: str) -> None:
    iso = fastcal.IsotonicRegression(y_min=0.0, y_max=None, increasing="auto", out_of_bounds="clip")
    assert_type(iso.fit(s, y, sample_weight=None), fastcal.IsotonicRegression)
    assert_type(iso.predict(s), Floats)
    assert_type(iso.transform([0.1, 0.2]), Floats)
    assert_type(iso.fit_transform(s, y, 1.0), Floats)
    assert_type(iso.X_thresholds_, Floats)
    assert_type(iso.y_thresholds_, Floats)
    assert_type(iso.X_min_, np.floating[Any])
    assert_type(iso.X_max_, np.floating[Any])
    assert_type(iso.increasing_, bool)
    assert_type(iso.get_feature_names_out(), NDArray[np.object_])
    assert_type(iso.get_params(deep=True), dict[str, Any])
    assert_type(iso.set_params(out_of_bounds="nan"), fastcal.IsotonicRegression)
    assert_type(fastcal.IsotonicRegression(increasing=False).fit(s, y).increasing_, bool)
    res = fastcal.isotonic_regression([5.0, 3.0, 1.0], weights=[1.0, 2.0, 1.0], increasing=True)
    print(res.x, res.blocks)  # scipy.optimize.OptimizeResult: typed only with the scipy-stubs package

    platt = fastcal.PlattScaling(max_iter=50, tol=None).fit(s, y, sample_weight=np.ones(s.shape[0]))
    assert_type(platt, fastcal.PlattScaling)
    assert_type(platt.predict(s), Floats)
    assert_type(platt.a_, float)
    assert_type(platt.b_, float)
    assert_type(platt.n_iter_, int)
    assert_type(platt.converged_, bool)

    z = np.stack([s, -s, 0.5 * s], axis=1)
    y3 = np.arange(s.shape[0]) % 3
    temp = fastcal.TemperatureScaling(input_type="logits", max_iter=100, tol=1e-10).fit(z, y3)
    assert_type(temp, fastcal.TemperatureScaling)
    assert_type(temp.predict_proba(z), Floats)
    assert_type(temp.predict(z), Floats)
    assert_type(temp.beta_, float)
    assert_type(temp.temperature_, float)
    assert_type(temp.n_classes_, int)
    assert_type(temp.n_iter_, int)
    assert_type(temp.converged_, bool)
    assert_type(temp.input_type_, str)

    vs = fastcal.VectorScaling(input_type="logits", max_iter=100, tol=1e-10).fit(z, y3, sample_weight=None)
    assert_type(vs, fastcal.VectorScaling)
    assert_type(vs.predict_proba(z), Floats)
    assert_type(vs.predict(z), Floats)
    assert_type(vs.scales_, NDArray[np.float64])
    assert_type(vs.biases_, NDArray[np.float64])
    assert_type(vs.n_classes_, int)
    assert_type(vs.input_type_, str)
    ms = fastcal.MatrixScaling(input_type="logits", reg_lambda=0.0, reg_mu=None, max_iter=100, tol=1e-10).fit(z, y3)
    assert_type(ms, fastcal.MatrixScaling)
    assert_type(ms.predict_proba(z), Floats)
    assert_type(ms.coef_, NDArray[np.float64])
    assert_type(ms.intercept_, NDArray[np.float64])
    p3 = temp.predict_proba(z)
    dc = fastcal.DirichletCalibration(matrix_type="diagonal", reg_lambda=0.1, reg_mu=0.1).fit(p3, y3, None)
    assert_type(dc, fastcal.DirichletCalibration)
    assert_type(dc.predict(p3), Floats)
    assert_type(dc.n_iter_, int)
    assert_type(dc.input_type_, str)
    bcts = fastcal.BiasCorrectedTemperatureScaling(input_type="auto").fit(z, y3, 1.0)
    assert_type(bcts, fastcal.BiasCorrectedTemperatureScaling)
    assert_type(bcts.predict_proba(z), Floats)
    assert_type(bcts.beta_, float)
    assert_type(bcts.temperature_, float)
    assert_type(bcts.biases_, NDArray[np.float64])
    assert_type(bcts.n_iter_, int)
    assert_type(bcts.converged_, bool)

    p = 1.0 / (1.0 + np.exp(-s))
    beta = fastcal.BetaCalibration(parameters="am", max_iter=50, tol=None).fit(p, y, sample_weight=None)
    assert_type(beta, fastcal.BetaCalibration)
    assert_type(beta.predict(p), Floats)
    assert_type(beta.a_, float)
    assert_type(beta.b_, float)
    assert_type(beta.c_, float)
    assert_type(beta.m_, float)
    assert_type(beta.n_iter_, int)
    assert_type(beta.converged_, bool)
    hist = fastcal.HistogramBinning(n_bins=5, strategy="quantile").fit(p, y, 1.0)
    assert_type(hist, fastcal.HistogramBinning)
    assert_type(hist.predict(p), Floats)
    assert_type(hist.bin_edges_, NDArray[np.float64])
    assert_type(hist.bin_values_, NDArray[np.float64])
    assert_type(hist.bin_weights_, NDArray[np.float64])

    path = os.path.join(tmp, "platt.json")
    platt.save(path)
    loaded = fastcal.load(path)
    assert_type(loaded, Calibrator | fastcal.GroupedCalibrator | fastcal.MulticalibrationCalibrator)
    # whose predicts need the groups or the segments
    assert not isinstance(loaded, (fastcal.GroupedCalibrator, fastcal.MulticalibrationCalibrator))
    assert_type(loaded, Calibrator)
    assert_type(loaded.predict(s), Floats)
    assert_type(loaded.to_dict(), dict[str, Any])
    assert_type(fastcal.PlattScaling.from_dict(platt.to_dict()), fastcal.PlattScaling)
    if isinstance(loaded, fastcal.PlattScaling):
        assert_type(loaded.a_, float)
    va = fastcal.VennAbers().fit(s, y, sample_weight=None)
    assert_type(va, fastcal.VennAbers)
    assert_type(va.predict_interval(s), tuple[Floats, Floats])
    assert_type(va.predict_proba(s), Floats)
    assert_type(va.predict(s), Floats)
    assert_type(fastcal.IsotonicRegression(centered=True).fit(s, y), fastcal.IsotonicRegression)
    try:
        fastcal.PlattScaling().predict(s)
    except fastcal.NotFittedError as exc:
        assert_type(exc, fastcal.NotFittedError)
    try:
        fastcal.PlattScaling(max_iter=0).fit(s, y)
    except fastcal.InvalidParameterError as bad:
        assert_type(bad, fastcal.InvalidParameterError)


def functions(s: NDArray[np.float64], y: NDArray[np.int64]) -> None:
    p = 1.0 / (1.0 + np.exp(-s))
    r = fastcal.platt_scaling(s, y, sample_weight=None, max_iter=100, tol=1e-10)
    assert_type(r, fastcal.PlattResult)
    assert_type(r.a, float)
    assert_type(r.b, float)
    assert_type(r.n_iter, int)
    assert_type(r.converged, bool)
    si = fastcal.calibration_slope_intercept(y, p, sample_weight=2.0)
    assert_type(si, fastcal.SlopeInterceptResult)
    assert_type(si.slope, float)
    assert_type(si.intercept_se, float)
    assert_type(si.slope_ci, tuple[float, float])
    assert_type(si.calibration_in_the_large, float)
    assert_type(si.n_iter, int)
    assert_type(si.converged, bool)

    assert_type(fastcal.correct_negative_sampling(0.5, 0.1), np.float64)
    assert_type(fastcal.correct_negative_sampling(np.float32(0.5), 0.1), np.floating[Any])
    assert_type(fastcal.correct_negative_sampling(p, 0.1), Floats)
    assert_type(fastcal.correct_negative_sampling([0.2, 0.4], rate=0.5), Floats)
    assert_type(fastcal.correct_negative_sampling(p, 0.1, out=np.empty_like(p)), Floats)
    assert_type(fastcal.negative_sampling_logit_offset(0.1), float)
    assert_type(fastcal.adjust_priors(p, 0.5, 0.1), Floats)
    assert_type(fastcal.adjust_priors(0.3, [0.5, 0.5], np.array([0.9, 0.1])), np.float64)
    proba = np.stack([1.0 - p, p], axis=1)
    assert_type(fastcal.adjust_priors(proba, [0.5, 0.5], [0.8, 0.2], out=proba), Floats)
    em = fastcal.estimate_priors_em(p, 0.5, max_iter=200, tol=1e-6)
    assert_type(em, fastcal.PriorEMResult)
    assert_type(em.priors, NDArray[np.float64])
    assert_type(em.proba, Floats)
    assert_type(em.n_iter, int)
    assert_type(em.converged, bool)
    ls = fastcal.estimate_label_shift(y, proba, proba, method="bbse", calibrator=None, n_bootstrap=2,
                                      random_state=0)
    assert_type(ls, fastcal.LabelShiftResult)
    assert_type(ls.priors, NDArray[np.float64])
    assert_type(ls.weights, NDArray[np.float64])
    assert_type(ls.condition_number, float)
    assert_type(ls.priors_low, NDArray[np.float64] | None)

    fastcal.set_num_threads(1)
    assert_type(fastcal.get_num_threads(), int)
    fastcal.set_num_threads(None)
    assert issubclass(fastcal.ConvergenceWarning, UserWarning)
    assert issubclass(fastcal.NoCacheWarning, Warning)


def metrics(s: NDArray[np.float64], y: NDArray[np.int64], return_counts: bool) -> None:
    p = 1.0 / (1.0 + np.exp(-s))
    assert_type(fastcal.calibration_curve(y, p), Curve)
    prob_true, prob_pred, counts = fastcal.calibration_curve(y, p, pos_label=1, n_bins=5, strategy="quantile",
                                                             sample_weight=None, return_counts=True)
    assert_type(prob_true, NDArray[np.float64])
    assert_type(counts, NDArray[np.int64] | NDArray[np.float64])
    assert_type(fastcal.calibration_curve(y, p, sample_weight=np.ones(s.shape[0]), return_counts=return_counts),
                Curve | CurveCounts)
    assert_type(fastcal.brier_score_loss(y, p, sample_weight=None, pos_label=1, scale_by_half="auto"), float)
    y3 = np.arange(s.shape[0]) % 3
    proba = np.stack([p / 2, (1 - p) / 2, np.full_like(p, 0.5)], axis=1)
    assert_type(fastcal.brier_score_loss(y3, proba, labels=[0, 1, 2], scale_by_half=False), float)
    assert_type(fastcal.brier_score_loss(y, y_prob=p), float)
    assert_type(fastcal.log_loss(y, p, normalize=False, sample_weight=np.ones(s.shape[0]), labels=[0, 1]), float)
    assert_type(fastcal.log_loss(y3, y_proba=proba, pos_label=None), float)
    d = fastcal.brier_decomposition(y, p, n_bins=10, strategy="uniform", sample_weight=None, pos_label=1)
    assert_type(d, fastcal.BrierDecomposition)
    assert_type(d.brier, float)
    assert_type(d.reliability - d.resolution + d.uncertainty + d.within_bin_variance - d.within_bin_covariance,
                float)
    assert_type(d.to_dict(), dict[str, Any])
    assert_type(fastcal.expected_calibration_error(y, p, n_bins=15, strategy="quantile", norm="max"), float)
    assert_type(fastcal.roc_auc_score(y, s), float)
    assert_type(fastcal.roc_auc_score(y, s, max_fpr=0.5, sample_weight=np.ones(s.shape[0]), pos_label=1), float)
    assert_type(fastcal.roc_auc_score(y3, proba, multi_class="ovo", average="weighted", labels=[0, 1, 2]), float)
    assert_type(fastcal.roc_auc_score(y3, proba, multi_class="ovr", average=None), float | NDArray[np.float64])
    assert_type(fastcal.roc_auc_score(y, s, average=None), float | NDArray[np.float64])
    r = fastcal.calibration_report(y, p, sample_weight=None, n_bins=5, strategy="quantile", pos_label=1)
    assert_type(r, fastcal.CalibrationReport)
    assert_type(r.n, int)
    assert_type(r.auc, float)
    assert_type(r.calibration_in_the_large, float)
    assert_type(r.n_bins, int)
    assert_type(r.strategy, Literal["uniform", "quantile"])
    assert_type(r.bin_edges, NDArray[np.float64])
    assert_type(r.bin_weights, NDArray[np.float64])
    assert_type(r.prob_true, NDArray[np.float64])
    assert_type(r.prob_pred, NDArray[np.float64])
    assert_type(r.slope_se, float | None)
    assert_type(r.slope_ci, tuple[float, float] | None)
    assert_type(r.intercept_ci, tuple[float, float] | None)
    assert_type(r.slope_converged, bool | None)
    assert_type(r.brier_miscalibration - r.brier_discrimination + r.log_loss_uncertainty, float)
    sd = fastcal.score_decomposition(y, p, scoring="log_loss", sample_weight=None)
    assert_type(sd, fastcal.ScoreDecomposition)
    assert_type(sd.miscalibration - sd.discrimination + sd.uncertainty - sd.score, float)
    assert_type(fastcal.score_decomposition(y3, proba, multiclass="top_label").scoring, str)
    corp = fastcal.corp_reliability(y, p, sample_weight=np.ones(s.shape[0]), n_resamples=5, level=0.8,
                                    band="confidence", random_state=np.random.default_rng(0))
    assert_type(corp, fastcal.CorpReliabilityResult)
    assert_type(corp.x, NDArray[np.float64])
    assert_type(corp.y, NDArray[np.float64])
    assert_type(corp.lower, NDArray[np.float64] | None)
    assert_type(fastcal.corp_reliability(y, p, random_state=1).n_resamples, int)
    sm = fastcal.smooth_ece(y, p, bandwidth=None, sample_weight=np.ones(s.shape[0]))
    assert_type(sm, fastcal.SmoothECEResult)
    assert_type(sm.ece + sm.bandwidth + sm.error_bound, float)
    assert_type(sm.y, NDArray[np.float64])
    assert_type(fastcal.smooth_ece(y3, proba, bandwidth=0.1, multiclass="top_label").density, NDArray[np.float64])
    ec = fastcal.ecce(y, p, sample_weight=np.ones(s.shape[0]))
    assert_type(ec, fastcal.ECCEResult)
    assert_type(ec.ecce + ec.std + ec.ecce_sigma + ec.pvalue, float)
    mc = fastcal.multicalibration_error(y, p, {"g": y}, numerical=(), max_depth=2, max_n_segments=None)
    assert_type(mc, fastcal.MulticalibrationResult)
    assert_type(mc.mce + mc.mce_pvalue + mc.mde_relative, float)
    assert_type(mc.segment_ecce_sigma, NDArray[np.float64])
    sr = fastcal.segment_report(y, p, y, sample_weight=np.ones(s.shape[0]), n_bins=5)
    assert_type(sr, fastcal.SegmentReport)
    assert_type(sr.ecce_sigma, NDArray[np.float64])
    grouped = fastcal.GroupedCalibrator(fastcal.PlattScaling(), min_samples_per_group=2).fit(s, y, y)
    assert_type(grouped, fastcal.GroupedCalibrator)
    assert_type(grouped.predict(s, y), NDArray[np.floating])
    mcal = fastcal.MulticalibrationCalibrator(max_depth=2, n_buckets=4).fit(p, y, {"g": y}, sample_weight=None)
    assert_type(mcal, fastcal.MulticalibrationCalibrator)
    assert_type(mcal.predict(p, {"g": y}), NDArray[np.floating])
    assert_type(mcal.offsets_, NDArray[np.float64])
    assert_type(fastcal.calibration_ratio(y, p, adjust_unjoined=True), float)
    assert_type(fastcal.proportional_ece(y, p, n_bins=10), float)
    assert_type(fastcal.normalized_entropy(y, p), float)
    assert_type(fastcal.calibration_curve(y3, proba, n_bins=5, labels=[0, 1, 2]), Curve)
    assert_type(fastcal.calibration_curve(y3, proba, multiclass="classwise"), list[Curve])
    assert_type(fastcal.calibration_curve(y3, proba, multiclass="classwise", return_counts=True), list[CurveCounts])
    assert_type(fastcal.expected_calibration_error(y3, proba, multiclass="top_label"), float)
    assert_type(fastcal.expected_calibration_error(y3, proba, multiclass="classwise"), float | NDArray[np.float64])
    assert_type(str(r), str)


def with_sklearn(s: NDArray[np.float64], y: NDArray[np.int64]) -> None:
    X = np.stack([s, np.sin(7.0 * s)], axis=1)
    cal = fastcal.CalibratedClassifierCV(LogisticRegression(), method="isotonic", cv=3, ensemble=False)
    assert_type(cal.fit(X, y), fastcal.CalibratedClassifierCV)
    assert_type(cal.predict_proba(X), NDArray[np.float64])
    assert_type(cal.predict(X), NDArray[Any])
    assert_type(cal.classes_, NDArray[Any])
    assert_type(cal.train_priors_, NDArray[np.float64])
    fastcal.CalibratedClassifierCV(method="temperature", cv=[(np.arange(50), np.arange(50, 100))],
                                   prior_correction=0.5, n_jobs=None)
    report = fastcal.cross_val_calibration_report(LogisticRegression(), X, y, method="sigmoid", cv=2, inner_cv=2)
    assert_type(report, fastcal.CrossValCalibrationReport)
    assert_type(report.before, fastcal.CalibrationReport)
    assert_type(report.after.ece, float)
    assert_type(report.folds[0]["after"].auc, float)
    assert_type(report.to_dict(), dict[str, Any])


def out_of_core(s: NDArray[np.float64], y: NDArray[np.int64], tmp: str) -> None:
    xpath, ypath = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
    np.save(xpath, s)
    np.save(ypath, y)
    iso = fastcal.outofcore.fit_isotonic(xpath, ypath, None, chunk_rows=64, tmpdir=tmp, out_of_bounds="clip",
                                         increasing="auto", y_min=0.0)
    assert_type(iso, fastcal.IsotonicRegression)
    assert_type(fastcal.outofcore.fit_platt(s, y, 1.0, max_iter=50, memory_budget=1 << 20), fastcal.PlattScaling)
    p = 1.0 / (1.0 + np.exp(-s))
    assert_type(fastcal.outofcore.fit_beta(p, y, None, parameters="ab", chunk_rows=100), fastcal.BetaCalibration)
    assert_type(fastcal.outofcore.fit_histogram(p, y, None, n_bins=5, strategy="quantile", chunk_rows=100),
                fastcal.HistogramBinning)
    for chunk in fastcal.outofcore.iter_npy(xpath, 64, column=None):
        assert_type(chunk, NDArray[Any])


def parquet_fits(path: str) -> Calibrator:
    """Type-checked, not run (writing Parquet needs pyarrow)."""
    for batch in fastcal.outofcore.iter_parquet(path, ["s", "y"], 1024):
        assert_type(batch, dict[str, NDArray[Any]])
    fastcal.outofcore.fit_isotonic_parquet(path, "s", "y", weight_col=None, memory_budget=1 << 24,
                                           increasing=False)
    fastcal.outofcore.fit_beta_parquet(path, "p", "y", "w", parameters="abm", max_iter=20, memory_budget=1 << 24)
    fastcal.outofcore.fit_histogram_parquet(path, "p", "y", "w", n_bins=5, strategy="uniform", memory_budget=1 << 24)
    return fastcal.outofcore.fit_platt_parquet(path, "s", "y", "w", max_iter=20, tol=1e-8, chunk_rows=1000)


def on_dask(s: NDArray[np.float64], y: NDArray[np.int64]) -> None:
    # dask's constructors are not annotated: one ignore per call, as any strictly typed user of dask needs.
    x: da.Array = da.from_array(s, chunks=100)  # type: ignore[no-untyped-call, unused-ignore]
    yd: da.Array = da.from_array(y, chunks=100)  # type: ignore[no-untyped-call, unused-ignore]
    frame: dd.DataFrame = dd.from_dict({"s": s, "y": y}, npartitions=3)
    col: dd.Series = frame["s"]
    iso = fastcal.dask.fit_isotonic(x, yd, None, n_partitions=2, out_of_bounds="clip", increasing="auto")
    assert_type(iso, fastcal.IsotonicRegression)
    platt = fastcal.dask.fit_platt(col, frame["y"], 1.0, max_iter=50, tol=None)
    assert_type(platt, fastcal.PlattScaling)
    assert_type(fastcal.dask.predict(iso, x), da.Array)
    assert_type(fastcal.dask.predict(platt, col), dd.Series)
    pd_: da.Array = da.from_array(1.0 / (1.0 + np.exp(-s)), chunks=100)  # type: ignore[no-untyped-call, unused-ignore]
    beta = fastcal.dask.fit_beta(pd_, yd, None, parameters="abm", max_iter=50, tol=None)
    assert_type(beta, fastcal.BetaCalibration)
    assert_type(fastcal.dask.predict(beta, pd_), da.Array)
    z3: da.Array = da.from_array(np.stack([s, -s, 0.5 * s], axis=1), chunks=(100, 3))  # type: ignore[no-untyped-call, unused-ignore]
    y3: da.Array = da.from_array(np.arange(s.shape[0]) % 3, chunks=100)  # type: ignore[no-untyped-call, unused-ignore]
    assert_type(fastcal.dask.fit_multiclass(fastcal.VectorScaling(), z3, y3, None), fastcal.VectorScaling)
    p3 = fastcal.dask.predict_proba(fastcal.dask.fit_multiclass(fastcal.VectorScaling(), z3, y3), z3)
    assert_type(fastcal.dask.fit_multiclass(fastcal.DirichletCalibration(reg_lambda=0.1), p3, y3, 1.0),
                fastcal.DirichletCalibration)
    shift = fastcal.dask.estimate_label_shift(y3, p3, p3, method="bbse", calibrator=None, n_bootstrap=5,
                                              random_state=0)
    assert_type(shift, fastcal.LabelShiftResult)
    assert_type(shift.priors, NDArray[np.float64])
    ts = fastcal.dask.fit_multiclass(fastcal.TemperatureScaling(), col, frame["y"])
    assert_type(ts, fastcal.TemperatureScaling)
    assert_type(fastcal.dask.predict_proba(ts, col), da.Array)
    assert_type(fastcal.dask.predict_proba(fastcal.MatrixScaling().fit(np.stack([s, -s], axis=1), y % 2), z3), da.Array)
    hist = fastcal.dask.fit_histogram(pd_, yd, None, n_bins=5, strategy="quantile")
    assert_type(hist, fastcal.HistogramBinning)
    assert_type(fastcal.dask.predict(hist, pd_), da.Array)
    p = fastcal.dask.predict(platt, x)
    assert_type(fastcal.dask.correct_negative_sampling(p, 0.5), da.Array)
    one_column: dd.DataFrame = frame[["s"]]
    assert_type(fastcal.dask.correct_negative_sampling(one_column, rate=0.5), dd.Series)
    assert_type(fastcal.dask.adjust_priors(p, 0.5, 0.1), da.Array)
    assert_type(fastcal.dask.calibration_curve(yd, p, n_bins=5, strategy="quantile"), Curve)
    assert_type(fastcal.dask.calibration_curve(y, p, pos_label=1, return_counts=True)[2],
                NDArray[np.int64] | NDArray[np.float64])
    assert_type(fastcal.dask.brier_score_loss(yd, p, sample_weight=np.ones(s.shape[0]), pos_label=1), float)
    assert_type(fastcal.dask.log_loss(yd, p, normalize=False), float)
    assert_type(fastcal.dask.expected_calibration_error(yd, p, n_bins=10, norm="l2"), float)
    d = fastcal.dask.brier_decomposition(yd, p, n_bins=4, strategy="uniform", sample_weight=None)
    assert_type(d, fastcal.BrierDecomposition)
    assert_type(d.resolution, float)
    assert_type(fastcal.dask.score_decomposition(yd, p, scoring="brier", sample_weight=None).uncertainty, float)
    assert_type(fastcal.dask.smooth_ece(yd, p, bandwidth=None, sample_weight=None), fastcal.SmoothECEResult)
    assert_type(fastcal.dask.roc_auc_score(yd, p, sample_weight=None, pos_label=1, n_partitions=2), float)
    assert_type(fastcal.dask.calibration_report(yd, p, n_bins=5, strategy="quantile"), fastcal.CalibrationReport)
    assert_type(fastcal.dask.corp_reliability(yd, p, sample_weight=None), fastcal.CorpReliabilityResult)
    assert_type(fastcal.dask.calibration_slope_intercept(yd, p, sample_weight=None), fastcal.SlopeInterceptResult)
    assert_type(fastcal.dask.estimate_priors_em(p, 0.5, tol=1e-6, accelerate=True), fastcal.PriorEMResult)
    assert_type(fastcal.dask.ecce(yd, p, sample_weight=None, n_partitions=2).ecce_sigma, float)
    assert_type(fastcal.dask.calibration_ratio(yd, p, adjust_unjoined=True), float)
    assert_type(fastcal.dask.normalized_entropy(yd, p, sample_weight=None), float)
    assert_type(fastcal.dask.proportional_ece(yd, p, n_bins=20, sample_weight=None), float)
    assert_type(fastcal.dask.segment_report(yd, p, yd, n_bins=5, n_partitions=2), fastcal.SegmentReport)
    assert_type(fastcal.dask.multicalibration_error(yd, p, {"g": yd}, max_depth=1, n_partitions=2).mce, float)
    mcal = fastcal.MulticalibrationCalibrator(n_buckets=2).fit(1.0 / (1.0 + np.exp(-s)), y, {"y": y})
    assert_type(fastcal.dask.predict(mcal, pd_, segments={"y": yd}), da.Array)
    assert_type(fastcal.dask.fit_multicalibration(pd_, yd, {"y": yd}, sample_weight=None, numerical=(), n_buckets=2,
                                                  n_folds=3), fastcal.MulticalibrationCalibrator)
    features: dd.DataFrame = frame[["y"]]
    assert_type(fastcal.dask.predict(mcal, col, segments=features), dd.Series)
    grouped = fastcal.dask.fit_grouped(fastcal.PlattScaling(), x, yd, yd, sample_weight=None, min_samples_per_group=2,
                                       n_partitions=2)
    assert_type(grouped, fastcal.GroupedCalibrator)
    assert_type(fastcal.dask.predict(grouped, x, groups=yd), da.Array)


def plots(s: NDArray[np.float64], y: NDArray[np.int64]) -> None:
    p = 1.0 / (1.0 + np.exp(-s))
    fig, (ax, hist_ax) = fastcal.plot.reliability_diagram(y, {"raw": p, "squared": p ** 2}, n_bins=5,
                                                          strategy="quantile", title="t", figsize=(4, 4))
    assert_type(fig, Figure)
    assert_type(ax, Axes)
    assert_type(hist_ax, Axes | None)
    fig2, ax2 = fastcal.plot.probability_histogram(p, base_rate=0.5, bins=20, range=(0.0, 1.0), ax=ax)
    assert_type(fig2, Figure | SubFigure)
    assert_type(ax2, Axes)
    assert_type(fastcal.plot.probability_histogram({"p": p}, log=True)[0], Figure)
    assert_type(fastcal.plot.reliability_diagram(y, p, method="corp", n_resamples=10, level=0.8, band="confidence",
                                                 random_state=0, show_decomposition=True)[0], Figure)
    assert_type(fastcal.plot.reliability_diagram(y, p, method="smooth", bandwidth=0.1, ax=ax)[1][0], Axes)
    assert_type(fastcal.plot.segment_sigmas(fastcal.segment_report(y, p, y), alpha=0.01, top=5, ax=ax)[1], Axes)
    report = fastcal.calibration_report(y, p, n_bins=5)
    corp = fastcal.corp_reliability(y, p, n_resamples=0)
    fig3, (ax3, hist_ax3) = fastcal.plot.report_diagram(report, corp, title="t", figsize=(4, 4))
    assert_type(fig3, Figure)
    assert_type(hist_ax3, Axes | None)
    assert_type(fastcal.plot.report_diagram(report, ax=ax, hist_ax=hist_ax)[0], Figure | SubFigure)


def main(tmp: str) -> None:
    rng = np.random.default_rng(0)
    s = rng.normal(size=300)
    y = (rng.random(300) < 1.0 / (1.0 + np.exp(-2.0 * s))).astype(np.int64)
    calibrators(s, y, tmp)
    functions(s, y)
    metrics(s, y, False)
    metrics(s, y, True)
    with_sklearn(s, y)
    out_of_core(s, y, tmp)
    on_dask(s, y)
    plots(s, y)


if __name__ == "__main__":
    main(sys.argv[1])
'''

#: Each line marked ``# E: <code>`` must get exactly that mypy error; no other line may get one.
CONSUMER_ERRORS = '''\
import numpy as np

import fastcal
import fastcal.dask
import fastcal.outofcore
import fastcal.plot

s = np.linspace(-1.0, 1.0, 10)
y = (s > 0).astype(np.int64)
fastcal.IsotonicRegression(out_of_bounds="wrap")  # E: arg-type
fastcal.IsotonicRegression(increasing="yes")  # E: arg-type
fastcal.platt_scaling(s, y).a + "x"  # E: operator
fastcal.score_decomposition(y, s, scoring="auc")  # E: arg-type
fastcal.corp_reliability(y, s, band="bootstrap")  # E: arg-type
fastcal.set_num_threads("2")  # E: arg-type
fastcal.TemperatureScaling(input_type="logit")  # E: arg-type
threads: str = fastcal.get_num_threads()  # E: assignment
fastcal.estimate_priors_em(s, 0.5).priors.upper()  # E: attr-defined
fastcal.PlattScaling().fit(s, y).predict_proba(s)  # E: attr-defined
fastcal.load("model.json").a_  # E: union-attr
ci: tuple[float, float, float] = fastcal.calibration_slope_intercept(y, s).slope_ci  # E: assignment
fastcal.correct_negative_sampling(s, "0.1")  # E: call-overload
fastcal.outofcore.fit_isotonic(s, y, out_of_bounds="wrap")  # E: arg-type
fastcal.outofcore.fit_isotonic(s, y, y_mni=0.0)  # E: call-arg
fastcal.plot.probability_histogram(s, bins="auto")  # E: call-overload
fastcal.CalibratedClassifierCV(method="bayes")  # E: arg-type
fastcal.cross_val_calibration_report(None, s, y).before.ece.upper()  # E: attr-defined
fastcal.calibration_curve(y, s, strategy="median")  # E: call-overload
prob_true, prob_pred, counts = fastcal.calibration_curve(y, s)  # E: misc
fastcal.expected_calibration_error(y, s, norm="l3")  # E: call-overload
fastcal.smooth_ece(y, s, bandwidth="auto")  # E: arg-type
fastcal.plot.reliability_diagram(y, s, method="isotonic")  # E: call-overload
fastcal.roc_auc_score(y, s, multi_class="all")  # E: call-overload
auc: float = fastcal.roc_auc_score(y, s, average=None)  # E: assignment
fastcal.calibration_report(y, s).slope_ci[0]  # E: index
fastcal.brier_score_loss(y, s, scale_by_half="yes")  # E: arg-type
fastcal.dask.expected_calibration_error(y, s, strategy="median")  # E: arg-type
fastcal.dask.predict(fastcal.TemperatureScaling(), s)  # E: call-overload
'''

_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+): error: (?P<message>.*?)(?:  \[(?P<code>[a-z-]+)\])?$")


def _mypy(workdir, site, *scripts, cache):
    """mypy on ``scripts`` in ``workdir``, finding fastcal as an installed package in ``site``."""
    (workdir / "mypy.ini").write_text(MYPY_CONFIG)
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    env["PYTHONPATH"] = str(site)
    cmd = [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--python-executable", sys.executable,
           "--cache-dir", str(cache), "--no-color-output", "--no-pretty", "--show-error-codes", *scripts]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=workdir, env=env, timeout=TIMEOUT)


def _errors(stdout, script):
    """``{line: {code, ...}}`` of mypy's errors in ``script``."""
    found = {}
    for line in stdout.splitlines():
        m = _ERROR.match(line)
        if m and Path(m["file"]).name == script:
            found.setdefault(int(m["line"]), set()).add(m["code"])
    return found


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory):
    """One mypy run on CONSUMER and CONSUMER_ERRORS, fastcal linked into an otherwise empty ``site``."""
    base = tmp_path_factory.mktemp("typing")
    site, work = base / "site", base / "work"
    site.mkdir()
    work.mkdir()
    (site / "fastcal").symlink_to(PACKAGE_DIR, target_is_directory=True)
    (work / "consumer.py").write_text(CONSUMER)
    (work / "consumer_errors.py").write_text(CONSUMER_ERRORS)
    out = _mypy(work, site, "consumer.py", "consumer_errors.py", cache=base / "cache")
    assert "error: Cannot find implementation or library stub" not in out.stdout, out.stdout[-3000:]
    return base, out


def test_py_typed_marker_is_in_the_package():
    assert (PACKAGE_DIR / "py.typed").is_file()
    # and is installed with it (a wheel holds the package data that pyproject.toml names)
    with open(ROOT / "pyproject.toml", "rb") as f:
        package_data = tomllib.load(f)["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["fastcal"]


def test_a_library_using_fastcal_type_checks_strictly(mypy_run):
    _, out = mypy_run
    assert _errors(out.stdout, "consumer.py") == {}, out.stdout[-5000:]
    # Nothing outside the two scripts is reported (errors inside an installed package are not).
    assert all(Path(m["file"]).name in ("consumer.py", "consumer_errors.py")
               for m in map(_ERROR.match, out.stdout.splitlines()) if m), out.stdout[-5000:]


def test_type_errors_in_a_library_using_fastcal_are_reported(mypy_run):
    _, out = mypy_run
    expected = {}
    for i, line in enumerate(CONSUMER_ERRORS.splitlines(), start=1):
        if "# E: " in line:
            expected[i] = {line.rsplit("# E: ", 1)[1].strip()}
    assert len(expected) >= 15
    assert out.returncode == 1
    assert _errors(out.stdout, "consumer_errors.py") == expected, out.stdout[-5000:]


def test_without_the_marker_mypy_ignores_the_hints(tmp_path, mypy_run):
    base, _ = mypy_run
    site = tmp_path / "site"
    shutil.copytree(PACKAGE_DIR, site / "fastcal",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "py.typed"))
    work = tmp_path / "work"
    work.mkdir()
    (work / "uses_fastcal.py").write_text("import fastcal\n\nfastcal.set_num_threads('2')\n")
    out = _mypy(work, site, "uses_fastcal.py", cache=base / "cache")
    assert out.returncode == 1
    assert "missing library stubs or py.typed marker" in out.stdout, out.stdout[-3000:]
    assert "[arg-type]" not in out.stdout  # the call is not checked: fastcal is untyped to mypy


def test_the_consumer_covers_the_public_api():
    used = {node.attr for node in ast.walk(ast.parse(CONSUMER))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "fastcal"}
    used |= {f"outofcore.{node.attr}" for node in ast.walk(ast.parse(CONSUMER))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
             and node.value.attr == "outofcore"}
    used |= {f"plot.{node.attr}" for node in ast.walk(ast.parse(CONSUMER))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
             and node.value.attr == "plot"}
    used |= {f"dask.{node.attr}" for node in ast.walk(ast.parse(CONSUMER))
             if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
             and node.value.attr == "dask"}
    public = set(fastcal.__all__) - PENDING
    public |= {f"outofcore.{n}" for n in fastcal.outofcore.__all__} | {f"plot.{n}" for n in fastcal.plot.__all__}
    public |= {f"dask.{n}" for n in fastcal.dask.__all__}
    assert public - used == set()


def test_pending_names_still_lack_hints():
    # When fastcal.metrics gains hints, cover its names in CONSUMER and remove them from PENDING.
    for name in PENDING:
        obj = getattr(fastcal, name)
        if inspect.isfunction(obj):
            assert inspect.signature(obj).return_annotation is inspect.Signature.empty, name


# ---------------------------------------------------------------------------
# The overloads: each accepts exactly the implementation's parameters
# ---------------------------------------------------------------------------

#: The overloaded public functions whose overloads take their shared options as ``**options: Unpack[...]`` of a
#: ``TypedDict`` of fastcal._typing (see its docstring).
UNPACKED = ["calibration_curve", "expected_calibration_error", "roc_auc_score", "plot.reliability_diagram",
            "plot.probability_histogram", "dask.calibration_curve", "correct_negative_sampling", "adjust_priors"]


def _resolve(name):
    obj = fastcal
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def overload_parameters(func):
    """``[(overload's line, the names it accepts)]``: its own parameters and the keys of its ``Unpack``-ed
    ``TypedDict``; the overloads are looked up under the module that defined them."""
    import fastcal._typing

    home = types.SimpleNamespace(__module__=func.__globals__["__name__"], __qualname__=func.__qualname__)
    found = []
    for declared in typing.get_overloads(home):
        names = set()
        for param in inspect.signature(declared).parameters.values():
            if param.kind is inspect.Parameter.VAR_KEYWORD:
                match = re.fullmatch(r"Unpack\[(\w+)(\[.*\])?\]", param.annotation)
                assert match, f"{func.__qualname__}: **{param.name}: {param.annotation} is not Unpack[TypedDict]"
                options = getattr(fastcal._typing, match[1])
                names |= options.__required_keys__ | options.__optional_keys__
            else:
                names.add(param.name)
        found.append((declared.__code__.co_firstlineno, names))
    return found


def _overloaded():
    """The public functions of fastcal, fastcal.plot, fastcal.dask and fastcal.outofcore that have overloads."""
    found = []
    for prefix, module in [("", fastcal), ("plot.", fastcal.plot), ("dask.", fastcal.dask),
                           ("outofcore.", fastcal.outofcore)]:
        for name in module.__all__:
            func = getattr(module, name)
            if inspect.isfunction(func) and overload_parameters(func):
                found.append(prefix + name)
    return found


OVERLOADED = _overloaded()


def test_the_overloaded_functions_are_found():
    # the input types that decide the result's (a dask Series for a Series, an array for an array, a float for a
    # float) and the option sets of UNPACKED, in memory and on Dask
    assert {"correct_negative_sampling", "adjust_priors", "dask.predict", "dask.correct_negative_sampling",
            *UNPACKED} <= set(OVERLOADED)


@pytest.mark.parametrize("name", OVERLOADED)
def test_every_overload_accepts_the_implementations_parameters(name):
    func = _resolve(name)
    expected = set(inspect.signature(func).parameters)
    found = overload_parameters(func)
    assert len(found) >= 2, name
    for line, names in found:
        assert names == expected, (f"{name}, overload at line {line}: missing {expected - names}, "
                                   f"extra {names - expected}")


def test_the_overload_check_can_fail(tmp_path, monkeypatch):
    source = """
from __future__ import annotations
from typing import Literal, Unpack, overload
from fastcal._typing import CurveOptions

@overload
def f(y: int, *, flag: Literal[True], **options: Unpack[CurveOptions]) -> int: ...
@overload
def f(y: int, *, flag: Literal[False] = False, **options: Unpack[CurveOptions]) -> str: ...
def f(y, *, flag=False, pos_label=None, n_bins=5, strategy="uniform", sample_weight=None, labels=None, extra=1):
    return y
"""
    (tmp_path / "overloaded_probe.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    import overloaded_probe

    found = overload_parameters(overloaded_probe.f)
    assert len(found) == 2
    assert all(set(inspect.signature(overloaded_probe.f).parameters) - names == {"extra"} for _, names in found)


# ---------------------------------------------------------------------------
# The hints are true: CONSUMER run with assert_type checking the values
# ---------------------------------------------------------------------------


def _conforms(value, tp):
    """Whether ``value`` is of type ``tp`` (the forms CONSUMER uses: classes, unions, literals, ndarray, tuple,
    dict)."""
    if tp is typing.Any:
        return True
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is typing.Literal:
        return any(type(value) is type(a) and value == a for a in args)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if origin is None:
        return isinstance(value, tp)
    if origin is np.ndarray:
        (scalar,) = typing.get_args(args[1])  # ndarray[shape, dtype[scalar]]
        return isinstance(value, np.ndarray) and (
            scalar is typing.Any or issubclass(value.dtype.type, typing.get_origin(scalar) or scalar))
    if origin is tuple:
        return isinstance(value, tuple) and len(value) == len(args) and all(map(_conforms, value, args))
    if origin is dict:
        return isinstance(value, dict) and all(_conforms(k, args[0]) and _conforms(v, args[1])
                                               for k, v in value.items())
    return isinstance(value, origin)  # np.floating[Any] and the like


def test_conforms_checks():
    from numpy.typing import NDArray

    assert _conforms(np.zeros(2), NDArray[np.floating[typing.Any]])
    assert not _conforms(np.zeros(2, dtype=np.int64), NDArray[np.floating[typing.Any]])
    assert not _conforms(np.zeros(2, dtype=np.float32), NDArray[np.float64])
    assert _conforms(np.array(["a"], dtype=object), NDArray[np.object_])
    assert _conforms(np.float32(1), np.floating[typing.Any]) and not _conforms(1.0, np.float32)
    assert _conforms((1.0, 2.0), tuple[float, float]) and not _conforms((1.0,), tuple[float, float])
    assert _conforms(None, int | None) and not _conforms("a", int | None)
    assert not _conforms({"a": 1}, dict[str, str])
    assert _conforms("l1", typing.Literal["l1", "l2"]) and not _conforms("max", typing.Literal["l1", "l2"])
    assert not _conforms(True, typing.Literal[1])


_RUNNER = """
import sys, typing
sys.path.insert(0, {tests!r})
from test_typing import _conforms

def assert_type(value, tp):
    assert _conforms(value, tp), f"{{value!r}} is not {{tp}}"
    return value

typing.assert_type = assert_type
import runpy
runpy.run_path({script!r}, run_name="__main__")
"""


def test_the_hints_hold_at_run_time(tmp_path):
    script = tmp_path / "consumer.py"
    script.write_text(CONSUMER)
    env = dict(os.environ, MPLBACKEND="Agg",
               PYTHONPATH=os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")])))
    code = textwrap.dedent(_RUNNER).format(tests=str(Path(__file__).parent), script=str(script))
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True,
                         cwd=tmp_path, env=env, timeout=TIMEOUT)
    assert out.returncode == 0, out.stderr[-5000:]
