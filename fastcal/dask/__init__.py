r"""fastcal on Dask: the same fits, predictions and diagnostics on ``dask.array`` and ``dask.dataframe`` data.

``import fastcal.dask`` needs the ``dask`` extra (dask and distributed);
``import fastcal`` never imports it. Every function takes 1-D ``dask.array``
arrays or ``dask.dataframe`` columns (``Series``), and also NumPy arrays for
small arguments such as weights, and works with any Dask scheduler: the
threaded default, or a ``distributed.Client`` connected to a
``LocalCluster`` or to a cluster of many machines (create the client; nothing
else changes).

Fits return the classes of the single-machine API, equal to an in-memory fit
on the same data:

- :func:`fit_isotonic` returns a fitted :class:`fastcal.IsotonicRegression`:
  exact (thresholds equal to the in-memory fit; block means to ~1e-15). The
  data is range-partitioned by score with a shuffle between workers
  (boundaries at quantiles of a sample), the pool-adjacent-violators kernel
  runs inside each partition on the workers, and the client pools the
  partitions' block summaries (a few thousand numbers each) with a final PAV
  pass, as Spark MLlib parallelises PAV. Pooling is exact because the
  partitions are contiguous in score order and each begins at the start of
  one of the fit's tie groups (a boundary inside a run of scores closer than
  the dtype's resolution is moved; see :mod:`fastcal.outofcore`).
- :func:`fit_platt` returns a fitted :class:`fastcal.PlattScaling`: Newton
  iterations on the client, each one reduction of the per-chunk fused
  objective/gradient/Hessian Numba kernel over the (persisted) chunks; a, b
  equal to the in-memory fit to ~1e-10.
- :func:`fit_beta` returns a fitted :class:`fastcal.BetaCalibration` in the
  same way (3x3 Newton steps on the client); :func:`fit_histogram` a fitted
  :class:`fastcal.HistogramBinning` from the diagnostics' per-chunk bin tables.
- :func:`fit_multiclass` returns a fitted copy of a multiclass calibrator, which
  :func:`predict_proba` applies (a lazy ``map_blocks``)
  (:class:`fastcal.TemperatureScaling`, :class:`fastcal.VectorScaling`,
  :class:`fastcal.BiasCorrectedTemperatureScaling`,
  :class:`fastcal.MatrixScaling`, :class:`fastcal.DirichletCalibration`) of
  (n, k) Dask scores: Halley and Newton steps on the client, each one round
  of the in-memory kernels' sums over the persisted chunks; equal to the
  in-memory fit to ~1e-10.

Predictions and prior corrections (:func:`predict`,
:func:`correct_negative_sampling`, :func:`adjust_priors`) are lazy
``map_blocks`` of the Numba kernels, chunk shapes preserved. The diagnostics
(:func:`calibration_curve`, :func:`brier_score_loss`, :func:`log_loss`,
:func:`expected_calibration_error`, :func:`brier_decomposition`) reduce
per-chunk partial sums of the same kernel as :mod:`fastcal.metrics` and
return the same numbers; :func:`score_decomposition` adds the exact
isotonic fit of :func:`fit_isotonic` to them, whose curve
:func:`corp_reliability` returns; :func:`smooth_ece` adds up the
chunks' grid sums (:func:`fastcal.smooth.grid_sums`) and smooths them as the
in-memory function.

This package is an adapter: :class:`DaskRows` gives the engine's drivers
(:mod:`fastcal._engine`) the chunks of Dask data, and every fit and
diagnostic above is one call of a driver (the algorithms, and their
exactness rules, are written there once for every backend).

One module a subject; this package re-exports their public names, so
``fastcal.dask.X`` and ``from fastcal.dask import X`` are the names to use:

- :mod:`fastcal.dask._rows`: the adapter, :class:`DaskRows` and the
  aligned chunks of Dask columns that every module below builds its rows
  from;
- :mod:`fastcal.dask._fits`: :func:`fit_isotonic`, :func:`fit_platt`,
  :func:`fit_beta`, :func:`fit_histogram`, :func:`fit_multiclass`;
- :mod:`fastcal.dask._predictions`: :func:`predict`, :func:`predict_proba`, :func:`estimate_label_shift`,
  :func:`correct_negative_sampling`, :func:`adjust_priors`, and
  :func:`estimate_priors_em` (the engine's EM driver);
- :mod:`fastcal.dask._metrics`: the diagnostics, :func:`roc_auc_score` and
  :func:`calibration_report`;
- :mod:`fastcal.dask._segments`: :func:`ecce`, :func:`calibration_ratio`,
  :func:`normalized_entropy`, :func:`proportional_ece`,
  :func:`segment_report`, :func:`multicalibration_error`, :func:`fit_multicalibration`;
- :mod:`fastcal.dask._grouped`: :func:`fit_grouped` (one calibrator per
  group, a :class:`fastcal.GroupedCalibrator`).
"""

from .._exports import publish
from ._fits import fit_beta, fit_histogram, fit_isotonic, fit_multiclass, fit_platt
from ._grouped import fit_grouped
from ._metrics import (
    brier_decomposition,
    brier_score_loss,
    calibration_curve,
    calibration_report,
    calibration_slope_intercept,
    corp_reliability,
    expected_calibration_error,
    log_loss,
    roc_auc_score,
    score_decomposition,
    smooth_ece,
)
from ._predictions import (adjust_priors, correct_negative_sampling, estimate_label_shift, estimate_priors_em, predict,
                           predict_proba)
from ._rows import DaskRows
from ._segments import (
    calibration_ratio,
    ecce,
    fit_multicalibration,
    multicalibration_error,
    normalized_entropy,
    proportional_ece,
    segment_report,
)

__all__ = [
    "adjust_priors",
    "brier_decomposition",
    "brier_score_loss",
    "calibration_curve",
    "calibration_ratio",
    "calibration_report",
    "calibration_slope_intercept",
    "corp_reliability",
    "correct_negative_sampling",
    "ecce",
    "estimate_label_shift",
    "estimate_priors_em",
    "expected_calibration_error",
    "fit_beta",
    "fit_grouped",
    "fit_histogram",
    "fit_isotonic",
    "fit_multicalibration",
    "fit_multiclass",
    "fit_platt",
    "log_loss",
    "multicalibration_error",
    "normalized_entropy",
    "predict",
    "predict_proba",
    "proportional_ece",
    "roc_auc_score",
    "score_decomposition",
    "segment_report",
    "smooth_ece",
]

# The internal API of the adapter (the engine's Rows over Dask chunks), not in __all__: DaskRows.

publish(globals(), __all__)  # their public home, the name that pickles, reprs and the API reference show
