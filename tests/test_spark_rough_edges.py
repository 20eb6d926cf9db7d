"""fastcal.spark on the inputs a user's DataFrame brings that the other Spark tests do not make: decimal columns.

Oracle: the same calls on the column cast to double in the JVM (a decimal's value as the tasks read it), and the
in-memory functions on the collected columns.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import pyspark  # noqa: F401 - the spark extra is a test dependency: a missing one fails, never skips
from pyspark.sql import functions as F

import fastcal
import fastcal.spark as fs

from ._reports import assert_same_but_the_slope
from ._spark_helpers import collect, frame

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,
]


def test_decimal_score_columns_are_numeric(spark):
    # A decimal(10,3) score is read as its double: every function gives what it gives on the double column.
    df = frame(spark, 3000, 3, seed=11).select(F.col("s").cast("decimal(10,3)").alias("d"),
                                               F.col("s").cast("decimal(10,3)").cast("double").alias("s"),
                                               "y", "w", (F.col("id") % 3).cast("decimal(4,1)").alias("g"))
    iso = fs.fit_isotonic(df, "d", "y", weight_col="w")
    ref = fs.fit_isotonic(df, "s", "y", weight_col="w")
    assert_array_equal(iso.X_thresholds_, ref.X_thresholds_)
    assert_array_equal(iso.y_thresholds_, ref.y_thresholds_)
    platt, platt_ref = fs.fit_platt(df, "d", "y"), fs.fit_platt(df, "s", "y")
    assert (platt.a_, platt.b_) == (platt_ref.a_, platt_ref.b_)
    for model in (iso, platt):
        got = collect(fs.predict(model, df, "d", output_col="p"), "p")[0]
        assert_array_equal(got, collect(fs.predict(model, df, "s", output_col="p"), "p")[0])
    assert fs.ecce(df, "y", "d").ecce == fs.ecce(df, "y", "s").ecce
    assert fs.calibration_report(df, "y", "d").ece == fs.calibration_report(df, "y", "s").ece
    s, y = collect(df, "s", "y")
    mce = fs.multicalibration_error(df, "y", "s", ["d"], numerical=["d"])
    mem = fastcal.multicalibration_error(y, s, {"d": s}, numerical=["d"])
    assert mce.segment_values == mem.segment_values
    assert_array_equal(mce.segment_n, mem.segment_n)
    # a decimal group column: its values are the groups (Python decimals), in sorted order
    report = fs.segment_report(df, "y", "s", "g")
    assert [float(g) for g in report.groups] == [0.0, 1.0, 2.0] and int(report.n.sum()) == 3000
    with pytest.raises(TypeError, match="score_col='g2' must be a numeric column, got string"):
        fs.predict(platt, df.withColumn("g2", F.lit("a")), "g2", output_col="p")


def test_all_zero_weights_have_the_in_memory_error(spark):
    # One error for one fault, on every path: scikit-learn's words, as in memory.
    df = frame(spark, 500, 2, seed=12).withColumn("z", F.lit(0.0))
    s, y = collect(df, "s", "y")
    message = r"Sample weights must contain at least one non-zero number \(sample_weight is all zeros\)"
    with pytest.raises(ValueError, match=message):
        fastcal.IsotonicRegression().fit(s, y, sample_weight=np.zeros(500))  # the in-memory wording
    calls = [lambda: fs.fit_isotonic(df, "s", "y", weight_col="z"), lambda: fs.fit_platt(df, "s", "y", weight_col="z"),
             lambda: fs.calibration_report(df, "y", "s", weight_col="z"), lambda: fs.ecce(df, "y", "s", weight_col="z"),
             lambda: fs.roc_auc_score(df, "y", "s", weight_col="z")]
    for call in calls:
        with pytest.raises(ValueError, match=message):
            call()


def test_segment_tools_take_the_in_memory_labels(spark):
    # {-1, 1} labels: accepted by the report and the AUC, refused by the segment tools with the in-memory error
    # (the Spark guide says so).
    df = frame(spark, 400, 2, seed=13).withColumn("t", F.col("y") * 2 - 1).withColumn("g", F.col("id") % 3)
    s, y, t, g = collect(df, "s", "y", "t", "g")
    assert fs.calibration_report(df, "t", "s").ece == pytest.approx(fastcal.calibration_report(t, s).ece, rel=1e-12)
    for spark_call, memory_call in [(lambda: fs.ecce(df, "t", "s"), lambda: fastcal.ecce(t, s)),
                                    (lambda: fs.segment_report(df, "t", "s", "g"),
                                     lambda: fastcal.segment_report(t, s, g))]:
        with pytest.raises(ValueError) as memory:
            memory_call()
        with pytest.raises(ValueError, match=str(memory.value).replace(".", r"\.")):
            spark_call()


def test_calibration_report_without_the_slope(session):
    # what report --spark draws for each worst segment: no Newton passes, and no warning about the slope
    df = frame(session, 4_000, 3, seed=11)
    # the table may be made in a pass of its own: sums in another order
    assert_same_but_the_slope(fs.calibration_report(df, "y", "s", weight_col="w", slope=False),
                              fs.calibration_report(df, "y", "s", weight_col="w"), rtol=1e-12, atol=1e-14)


def test_calibration_slope_intercept(session):
    df = frame(session, 4_000, 3, seed=13)
    s, y, w = collect(df, "s", "y", "w")
    got = fs.calibration_slope_intercept(df, "y", "s", weight_col="w")
    ref = fastcal.calibration_slope_intercept(y, s, sample_weight=w)
    for name in ("slope", "intercept", "calibration_in_the_large", "slope_se", "intercept_se"):
        np.testing.assert_allclose(getattr(got, name), getattr(ref, name), rtol=1e-9, err_msg=name)  # Newton
