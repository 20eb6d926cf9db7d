"""Which backend offers what: for each public name of fastcal that reads rows of data, the function of each backend
that computes it, or why there is none.

The backends are :mod:`fastcal.dask`, :mod:`fastcal.spark` and :mod:`fastcal.outofcore`. A calibrator's entry names
the backend's fit (which returns the fitted estimator); a function's, the backend's function of the same
arguments. tests/test_backends.py fails when a public name of fastcal is in neither :data:`PARITY` nor
:data:`NOT_ROWS`, when an entry names a function its backend lacks, or when a backend has a function that no
entry names (beyond :data:`OWN`); the table in the user guide's backends page is :func:`table` of this registry
(a test checks it).
"""

from __future__ import annotations

__all__ = ["BACKENDS", "NOT_ROWS", "OWN", "PARITY", "Missing", "table"]

BACKENDS = ("dask", "spark", "outofcore")


class Missing(str):
    """Why a backend has no function for a name (a ``str``: the reason)."""

    __slots__ = ()


_OOC_METRICS = Missing("out of core holds fits only: the diagnostics of files larger than memory run on Dask")
_OOC_LATER = Missing("not written for files yet: on Dask or Spark")


def _all(name, outofcore=_OOC_METRICS):
    return {"dask": name, "spark": name, "outofcore": outofcore}


def _nowhere(reason):
    return dict.fromkeys(BACKENDS, Missing(reason))


#: Public name of fastcal -> {backend: its function's name, or a :class:`Missing` reason}.
PARITY = {
    "IsotonicRegression": _all("fit_isotonic", "fit_isotonic"),
    "PlattScaling": _all("fit_platt", "fit_platt"),
    "BetaCalibration": _all("fit_beta", "fit_beta"),
    "HistogramBinning": _all("fit_histogram", "fit_histogram"),
    "TemperatureScaling": _all("fit_multiclass", _OOC_LATER),
    "VectorScaling": _all("fit_multiclass", _OOC_LATER),
    "BiasCorrectedTemperatureScaling": _all("fit_multiclass", _OOC_LATER),
    "MatrixScaling": _all("fit_multiclass", _OOC_LATER),
    "DirichletCalibration": _all("fit_multiclass", _OOC_LATER),
    "estimate_label_shift": _all("estimate_label_shift", _OOC_LATER),
    "VennAbers": _nowhere("its fit keeps every distinct score, in memory"),
    "GroupedCalibrator": _all("fit_grouped", _OOC_LATER),
    "MulticalibrationCalibrator": _all("fit_multicalibration", _OOC_LATER),
    "calibration_curve": _all("calibration_curve"),
    "expected_calibration_error": _all("expected_calibration_error"),
    "brier_score_loss": _all("brier_score_loss"),
    "log_loss": _all("log_loss"),
    "brier_decomposition": _all("brier_decomposition"),
    "smooth_ece": _all("smooth_ece"),
    "score_decomposition": _all("score_decomposition"),
    "corp_reliability": _all("corp_reliability"),
    "roc_auc_score": _all("roc_auc_score"),
    "calibration_slope_intercept": _all("calibration_slope_intercept"),
    "calibration_report": _all("calibration_report"),
    "ecce": _all("ecce"),
    "calibration_ratio": _all("calibration_ratio"),
    "normalized_entropy": _all("normalized_entropy"),
    "proportional_ece": _all("proportional_ece"),
    "segment_report": _all("segment_report"),
    "multicalibration_error": _all("multicalibration_error"),
    "correct_negative_sampling": _all("correct_negative_sampling", Missing("a map of each row: fastcal apply "
                                                                           "--prior-rate streams files")),
    "adjust_priors": _all("adjust_priors", Missing("a map of each row: fastcal apply --priors streams files")),
    "estimate_priors_em": _all("estimate_priors_em"),
    "isotonic_regression": _nowhere("SciPy's function of ordered values: fit_isotonic fits the model"),
    "platt_scaling": _nowhere("the function of fit_platt's model (its a_ and b_)"),
    "CalibratedClassifierCV": _nowhere("fits a scikit-learn classifier on in-memory features"),
    "cross_val_calibration_report": _nowhere("fits a scikit-learn classifier on in-memory features"),
}

#: Public names of fastcal that read no rows: results, errors, warnings, settings, model files, a closed form.
NOT_ROWS = frozenset({
    "BrierDecomposition", "CalibrationReport", "ConvergenceWarning", "CorpReliabilityResult",
    "CrossValCalibrationReport", "ECCEResult", "InvalidParameterError", "MulticalibrationResult", "NoCacheWarning",
    "NotFittedError", "PlattResult", "PriorEMResult", "LabelShiftResult", "ScoreDecomposition", "SegmentReport", "SlopeInterceptResult",
    "SmoothECEResult", "get_num_threads", "set_num_threads", "load", "negative_sampling_logit_offset",
})

#: A backend's public names that are its own (no in-memory twin): the prediction of any fitted model, the
#: adapters, the readers of files and the fits that read files.
OWN = {
    "dask": frozenset({"predict", "predict_proba"}),
    "spark": frozenset({"predict", "predict_proba", "SparkRows"}),
    "outofcore": frozenset({"fit_beta_parquet", "fit_histogram_parquet", "fit_isotonic_parquet", "fit_platt_parquet",
                            "iter_npy", "iter_parquet"}),
}


def table():
    """The registry as a Markdown table: a row per name, a column per backend (a function, or "-" and why)."""
    lines = ["| in memory | " + " | ".join(f"`fastcal.{b}`" for b in BACKENDS) + " |",
             "|---|" + "---|" * len(BACKENDS)]
    for name, entry in PARITY.items():
        cells = [f"no: {entry[b]}" if isinstance(entry[b], Missing) else f"`{entry[b]}`" for b in BACKENDS]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)
