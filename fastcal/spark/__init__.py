r"""fastcal on Spark: the same fits, predictions and diagnostics on Spark DataFrames.

``import fastcal.spark`` needs the ``spark`` extra (pyspark, with pyarrow);
``import fastcal`` never imports it. Every function takes a
``pyspark.sql.DataFrame`` and the names of its columns, and works on any
master (``local[*]``, a standalone or YARN or Kubernetes cluster); the
workers need fastcal installed in their Python.

Fits and diagnostics are adapters on the subjects' drivers over a
:class:`fastcal._engine.Rows` (each package's ``rows``): :class:`SparkRows`
gives the drivers the DataFrame's partitions as
chunks of NumPy arrays, and the drivers do the rest, as they do for the
in-memory, out-of-core and Dask backends. So every result equals the
in-memory function of the collected columns (the isotonic thresholds bit for
bit, the Newton fits to ~1e-10, the diagnostics to ~1e-12), and the driver
never collects rows: it receives summaries (block lists, bin tables,
gradient sums) a few kB each.

- The per-chunk work runs in ``mapInArrow`` tasks: each task turns its
  partition into NumPy arrays (Arrow, no pickling of rows), calls the
  engine's module-level function on them, and returns its pickled summary.
- A conversion (validation, dtype) runs once; its result is cached
  (``DataFrame.persist``) and the Newton passes read the cache.
- The isotonic fit range-partitions the rows by score in the JVM: each row's
  partition is found by a binary search over the bounds (Spark SQL) and
  the rows are shuffled so that partition ``j`` holds exactly the scores
  between ``bounds[j - 1]`` and ``bounds[j]``.

:func:`predict` never leaves the JVM: each calibrator gives its prediction as
data (knots, bin edges and values, or a logistic model's coefficients), and
one module writes it as Spark SQL expressions (isotonic regression and
histogram binning: a grid search of the knots and SQL arithmetic), so a Spark
plan applies them at the speed of any SQL projection, equal to
``estimator.predict`` (see :func:`predict`).

Everything here is built with PySpark's public API (``pyspark.sql.functions``,
Spark SQL text, ``mapInArrow``, ``DataFrame.persist``) and reads no private
handle of PySpark, so it runs on a classic session and on Spark Connect alike.

Workers
-------
Each task runs fastcal's kernels on ``spark.task.cpus`` threads (the
TaskContext's CPUs; the setting is scoped to the task and restored after it).
Numba compiles fastcal's kernels on first use in every Python worker
(about 17 s) unless the workers share a filled cache: run
``NUMBA_CACHE_DIR=/shared/numba fastcal precompile`` once on a machine like the
workers, and give the executors the same directory
(``spark.executorEnv.NUMBA_CACHE_DIR=/shared/numba``, or the cluster's
environment); a new worker then loads the kernels in a few seconds, and with
``spark.python.worker.reuse`` (Spark's default) later tasks pay nothing.

One module a subject; this package re-exports their public names:

- :mod:`fastcal.spark._tasks`: inside the tasks (Arrow batches to chunks, the task's threads, results);
- :mod:`fastcal.spark._expr`: Spark SQL text (exact literals, literal arrays);
- :mod:`fastcal.spark._buckets`: binary searches and partition keys as Spark SQL expressions;
- :mod:`fastcal.spark._rows`: :class:`SparkRows`, and an engine driver's call on a DataFrame's columns;
- :mod:`fastcal.spark._predict`: :func:`predict`, in Spark SQL;
- :mod:`fastcal.spark._predict_proba`: :func:`predict_proba` of the multiclass calibrators, in Spark SQL;
- :mod:`fastcal.spark._fits`: the fits (:func:`fit_multiclass`: the multiclass calibrators, from one column
  per class);
- :mod:`fastcal.spark._metrics`: the diagnostics;
- :mod:`fastcal.spark._segments`: ECCE, calibration ratio, normalized entropy, proportional ECE, the segment
  metrics, and :func:`fit_multicalibration` (a :class:`fastcal.MulticalibrationCalibrator`);
- :mod:`fastcal.spark._grouped`: :func:`fit_grouped`, one calibrator per group;
- :mod:`fastcal.spark._prior`: :func:`correct_negative_sampling` and :func:`adjust_priors` of a probability
  column, in Spark SQL, and :func:`estimate_priors_em` (the engine's EM driver).
"""

from .._exports import publish
from ._buckets import partition_keys, with_count_below
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
from ._predict import predict
from ._predict_proba import predict_proba
from ._prior import adjust_priors, correct_negative_sampling, estimate_label_shift, estimate_priors_em
from ._rows import SparkRows
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
    "SparkRows",
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

# The internal API of fastcal.cli.spark and the tests, not in __all__: partition_keys, with_count_below (the
# predictions' search of sorted values).

publish(globals(), __all__)  # their public home, the name that pickles, reprs and the API reference show
