"""fastcal.spark.fit_grouped and predict(group_col=) against the in-memory GroupedCalibrator on the collected
columns (few, small Spark jobs: the driver's chunkings and every calibrator with and without weights are tested
through Dask in tests/test_dask_grouped.py, on the same engine).

Tolerances: a group's model is the in-memory fit of its rows in the order Spark's shuffle delivers them
(isotonic thresholds and histogram edges exactly; block and bin means to 1e-15, Newton fits to 1e-12 relative:
sums in another order); the global model is the calibrator's Spark fit (tested to 1e-10 for the Newton fits in
tests/test_spark.py). JVM predictions equal the fitted model's ``predict`` bit for bit for isotonic and
histogram models, within a few ulps for Platt and beta (the JVM's exp and log).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import pyspark  # noqa: F401 - the spark extra is a test dependency: a missing one fails, never skips
from pyspark.sql import functions as F

import fastcal
import fastcal.spark as fs

from ._spark_helpers import collect as _collect, frame as _frame

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,
]


def _by_group(est):
    return dict(zip(est.groups_, est.calibrators_, strict=True))


def _strings(df, col):
    return np.array(df.select(col).toArrow().column(col).to_pylist(), dtype=object)


def test_isotonic_by_a_string_column_with_nulls(session):
    """The default calibrator, weighted, by a string column with nulls (numbered in the JVM: the missing group is
    None, last) and a group below the minimum; predictions in the JVM for small, unseen and null groups."""
    spark = session  # each kind of session in turn
    df = _frame(spark, 1500, 3, seed=7).select(
        F.round("s", 2).alias("s"), "y", "w", "id",
        F.when(F.col("id") % 13 == 0, None).when(F.col("id") % 97 == 1, "x").otherwise(
            F.element_at(F.array(*[F.lit(v) for v in ("fr", "de", "it", "ab")]),
                         (F.col("id") % 4 + 1).cast("int"))).alias("g"))
    s, y, w = _collect(df, "s", "y", "w")
    g = _strings(df, "g")
    got = fs.fit_grouped(None, df, "s", "y", "g", weight_col="w", min_samples_per_group=30, n_partitions=2)
    ref = fastcal.GroupedCalibrator(min_samples_per_group=30).fit(s, y, g, sample_weight=w)
    assert got.get_params() == ref.get_params()
    assert got.groups_[-1] is None and sorted(got.groups_[:-1]) == ["ab", "de", "fr", "it"]
    assert set(got.groups_) == set(ref.groups_)
    mine, theirs = _by_group(got), _by_group(ref)
    for group, model in theirs.items():
        assert_array_equal(mine[group].X_thresholds_, model.X_thresholds_)
        assert_allclose(mine[group].y_thresholds_, model.y_thresholds_, rtol=1e-15, atol=1e-15)
    counts = dict(zip(ref.groups_, ref.group_counts_.tolist()))
    assert dict(zip(got.groups_, got.group_counts_.tolist())) == counts
    assert_array_equal(got.global_calibrator_.X_thresholds_, ref.global_calibrator_.X_thresholds_)
    assert_allclose(got.global_calibrator_.y_thresholds_, ref.global_calibrator_.y_thresholds_, rtol=1e-15,
                    atol=1e-15)

    new = df.select("id", (F.col("s") * 1.2 - 0.1).alias("t"),  # scores outside the fitted range: clipped
                    F.when(F.col("id") % 11 == 0, "zz").otherwise(F.col("g")).alias("g"))
    out = fs.predict(got, new, "t", "p", group_col="g")
    assert out.columns == ["id", "t", "g", "p"]
    t, p, ids = _collect(out, "t", "p", "id")
    assert_array_equal(np.sort(ids), np.arange(1500))  # every row, once
    h = _strings(out, "g")
    assert_array_equal(p, got.predict(t, h))
    assert_allclose(p, ref.predict(t, h), rtol=1e-14, atol=1e-15)


def test_beta_by_an_integer_column_and_predictions_of_every_kind(session):
    """A Newton fit (beta calibration: the global fit is Spark's, the group fits the in-memory ones) by an integer
    column used as it is; then the JVM predictions of Platt, beta and quantile histogram models (per-group
    parameters in literal arrays; per-group edges searched in each model's slice) in one job, unseen group 99
    and small group 7 on the global model."""
    spark = session  # each kind of session in turn
    df = _frame(spark, 1200, 3, seed=9).withColumn("k", (F.col("id") % 5) * (F.col("id") % 3 != 0).cast("int"))
    df = df.withColumn("k", F.when(F.col("id") % 101 == 0, 7).otherwise(F.col("k")))  # group 7: below the minimum
    s, y, w, k = _collect(df, "s", "y", "w", "k")
    got = fs.fit_grouped(fastcal.BetaCalibration(), df, "s", "y", "k", min_samples_per_group=50)
    ref = fastcal.GroupedCalibrator(fastcal.BetaCalibration(), min_samples_per_group=50).fit(s, y, k)
    assert got.groups_ == ref.groups_ == [0, 1, 2, 3, 4]
    assert_array_equal(got.group_counts_, ref.group_counts_)
    for a, b in zip([*got.calibrators_, got.global_calibrator_], [*ref.calibrators_, ref.global_calibrator_]):
        assert_allclose([a.a_, a.b_, a.c_], [b.a_, b.b_, b.c_], rtol=1e-10)

    models = {"beta": got}
    for name, calibrator in (("platt", fastcal.PlattScaling()),
                             ("hist", fastcal.HistogramBinning(n_bins=4, strategy="quantile"))):
        models[name] = fastcal.GroupedCalibrator(calibrator, min_samples_per_group=50).fit(s, y, k, sample_weight=w)
    new = df.select("s", F.when(F.col("id") % 10 == 0, 99).otherwise(F.col("k")).alias("k"))
    for name, est in models.items():
        new = fs.predict(est, new, "s", name, group_col="k")
    t, kk, *predicted = _collect(new, "s", "k", *models)
    for (name, est), p in zip(models.items(), predicted):
        if name == "hist":
            assert_array_equal(p, est.predict(t, kk))
        else:
            assert_allclose(p, est.predict(t, kk), rtol=1e-14, atol=0, err_msg=name)


def test_bad_input(spark):
    """Refusals before any job."""
    df = _frame(spark, 20, 1).withColumn("g", F.col("id") % 2)
    with pytest.raises(ValueError, match="calibrator must be an IsotonicRegression"):
        fs.fit_grouped(fastcal.VennAbers(), df, "s", "y", "g")
    with pytest.raises(ValueError, match="group_col='nope' is not a column"):
        fs.fit_grouped(None, df, "s", "y", "nope")
    s, y, g = np.linspace(0, 1, 20), np.arange(20) % 2, np.arange(20) % 2
    est = fastcal.GroupedCalibrator(min_samples_per_group=2).fit(s, y, g)
    with pytest.raises(TypeError, match="group_col is required"):
        fs.predict(est, df, "s", "p")
    with pytest.raises(TypeError, match="group_col is only for a GroupedCalibrator"):
        fs.predict(est.global_calibrator_, df, "s", "p", group_col="g")
    with pytest.raises(ValueError, match="group_col='nope' is not a column"):
        fs.predict(est, df, "s", "p", group_col="nope")
    with pytest.raises(ValueError, match="output_col='g' is already a column"):
        fs.predict(est, df, "s", "g", group_col="g")
    with pytest.raises(TypeError, match="VennAbers"):
        fs.predict(fastcal.GroupedCalibrator(fastcal.VennAbers(), min_samples_per_group=2).fit(s, y, g), df, "s", "p",
                   group_col="g")
    # several columns: each one named when it is missing; tuples needed
    with pytest.raises(ValueError, match=r"group_col\[1\]='nope' is not a column"):
        fs.fit_grouped(None, df, "s", "y", ["g", "nope"])
    with pytest.raises(ValueError, match=r"group_col\[1\]='nope' is not a column"):
        fs.segment_report(df, "y", "s", ["g", "nope"])
    with pytest.raises(ValueError, match=r"group_col\[1\]='nope' is not a column"):
        fs.predict(est, df, "s", "p", group_col=["g", "nope"])
    with pytest.raises(TypeError, match="not tuples of 2 values"):
        fs.predict(est, df, "s", "p", group_col=["g", "id"])


def test_several_group_columns_fit_predict_and_report(spark):
    """Groups of two columns, a string one with nulls and a double one with nulls and NaN (each numbered in the
    JVM as one column is): the tuples in the in-memory order (None for a missing value, in either place), the
    in-memory group models and counts, JVM predictions for unseen and missing tuples, and the report by segment."""
    df = _frame(spark, 1500, 3, seed=11).select(
        F.round("s", 2).alias("s"), "y", "w", "id",
        F.when(F.col("id") % 13 == 0, None).otherwise(
            F.element_at(F.array(*[F.lit(v) for v in ("fr", "de", "it")]), (F.col("id") % 3 + 1).cast("int"))
        ).alias("g"),
        F.when(F.col("id") % 17 == 0, None).when(F.col("id") % 19 == 0, float("nan")).otherwise(
            (F.col("id") % 2 + 1).cast("double")).alias("d"))
    s, y, w, d = _collect(df, "s", "y", "w", "d")
    g = _strings(df, "g")
    got = fs.fit_grouped(None, df, "s", "y", ["g", "d"], weight_col="w", min_samples_per_group=30, n_partitions=2)
    ref = fastcal.GroupedCalibrator(min_samples_per_group=30).fit(s, y, [g, d], sample_weight=w)
    assert got.groups_ == ref.groups_  # the same tuples, in the same order
    assert (None, 1.0) in got.groups_ and ("fr", None) in got.groups_
    assert_array_equal(got.group_counts_, ref.group_counts_)
    for a, b in zip(got.calibrators_, ref.calibrators_, strict=True):
        assert_array_equal(a.X_thresholds_, b.X_thresholds_)
        assert_allclose(a.y_thresholds_, b.y_thresholds_, rtol=1e-15, atol=1e-15)

    new = df.select("id", "s", F.when(F.col("id") % 11 == 0, "zz").otherwise(F.col("g")).alias("g"), "d")
    out = fs.predict(got, new, "s", "p", group_col=["g", "d"])
    assert out.columns == ["id", "s", "g", "d", "p"]
    t, p, dd = _collect(out, "s", "p", "d")
    assert_array_equal(p, got.predict(t, [_strings(out, "g"), dd]))

    report = fs.segment_report(df, "y", "s", ["g", "d"], weight_col="w", n_bins=5)
    want = fastcal.segment_report(y, s, [g, d], sample_weight=w, n_bins=5)
    assert report.groups == want.groups
    assert_array_equal(report.n, want.n)
    for name in ("weight_sum", "ece", "ecce", "brier", "log_loss", "auc"):
        assert_allclose(getattr(report, name), getattr(want, name), rtol=1e-12, equal_nan=True, err_msg=name)
