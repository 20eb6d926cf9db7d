"""fastcal.spark's ECCE, calibration ratio and report by segment against the in-memory functions on the collected
columns (few, small Spark jobs: the drivers' chunkings are tested on ListRows in tests/test_engine_segments.py).

Tolerance 1e-12 relative: float64 sums of the same terms in another order; ``n`` and the group order exact.
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

RTOL = 1e-12


def _same_report(got, ref, groups=None):
    assert got.groups == (ref.groups if groups is None else groups)
    assert_array_equal(got.n, ref.n)
    for name in ("weight_sum", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce", "ecce_sigma",
                 "brier", "log_loss", "auc"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=RTOL, equal_nan=True, err_msg=name)
    assert_allclose(got.pvalue, ref.pvalue, rtol=RTOL * (1 + ref.ecce_sigma.max() ** 2), equal_nan=True)


def test_report_and_multicalibration_error(session):
    """Two calls (a Spark job takes seconds here): the report by a string column with nulls (numbered in the JVM,
    partitions of whole groups), and the multicalibration error of that column and an integer one (labels mapped
    back, "__NA" and "__OTHER"; its segment 0 is the ECCE of all rows, from the range partition by probability,
    here of tied probabilities and zero weights), and the ECCE and calibration ratio of all rows. Numerical bins,
    float32 and the chunkings are covered by the drivers' (ListRows) and Dask's tests."""
    spark = session  # each kind of session in turn
    df = _frame(spark, 3000, 3, seed=5).select(
        F.round("s", 2).alias("p"), "y",
        F.when(F.col("id") % 9 == 0, 0.0).otherwise(F.col("w")).alias("w"),
        F.when(F.col("id") % 13 == 0, None).otherwise(
            F.element_at(F.array(*[F.lit(v) for v in ("fr", "de", "it", "ab", "ba")]),
                         (F.col("id") % 5 + 1).cast("int"))).alias("g"),
        (F.col("id") % 3).alias("k"))
    p, y, w, k = _collect(df, "p", "y", "w", "k")
    g = np.array(df.select("g").toArrow().column("g").to_pylist(), dtype=object)
    # strings: in the order of the in-memory function on the collected column (an object array: the order in
    # which they first appear, not sorted), null last
    ref_groups = fastcal.segment_report(y, p, g).groups
    assert ref_groups[-1] is None and ref_groups[:-1] != sorted(ref_groups[:-1])
    got = fs.segment_report(df, "y", "p", "g", weight_col="w", n_bins=6)
    codes = np.array([ref_groups.index(v) for v in g])
    _same_report(got, fastcal.segment_report(y, p, codes, sample_weight=w, n_bins=6), ref_groups)
    with pytest.raises(ValueError, match="group_col='nope' is not a column"):  # no job
        fs.segment_report(df, "y", "p", "nope")
    ref_ecce, got_ecce = fastcal.ecce(y, p, sample_weight=w), fs.ecce(df, "y", "p", weight_col="w")
    assert_allclose([got_ecce.ecce, got_ecce.std, got_ecce.ecce_sigma], [ref_ecce.ecce, ref_ecce.std, ref_ecce.ecce_sigma],
                    rtol=RTOL)
    assert_allclose(fs.calibration_ratio(df, "y", "p", weight_col="w"),
                    fastcal.calibration_ratio(y, p, sample_weight=w), rtol=RTOL)
    assert_allclose(fs.normalized_entropy(df, "y", "p", weight_col="w"),
                    fastcal.normalized_entropy(y, p, sample_weight=w), rtol=RTOL)
    assert_allclose(fs.proportional_ece(df, "y", "p", n_bins=11), fastcal.proportional_ece(y, p, n_bins=11), rtol=RTOL)

    ref = fastcal.multicalibration_error(y, p, {"g": g, "k": k}, sample_weight=w, min_samples_per_segment=5)
    got = fs.multicalibration_error(df, "y", "p", ["g", "k"], weight_col="w", min_samples_per_segment=5,
                                    n_partitions=4)
    assert got.segment_values == ref.segment_values
    assert any(v.get("g") == "__OTHER" for v in ref.segment_values)
    assert_array_equal(got.segment_n, ref.segment_n)
    assert_allclose(got.segment_ecce, ref.segment_ecce, rtol=RTOL, atol=0)
    assert_allclose([got.mce, got.mce_sigma, got.mce_pvalue, got.global_ecce, got.global_ecce_sigma],
                    [ref.mce, ref.mce_sigma, ref.mce_pvalue, ref.global_ecce, ref.global_ecce_sigma], rtol=RTOL)


def _nan_as_text(values):
    """Segment values with NaN written ``"nan"`` (NaN equals nothing, not even itself, in a dict comparison)."""
    return [{k: "nan" if isinstance(v, float) and v != v else v for k, v in seg.items()} for seg in values]


def test_numeric_group_columns_with_nulls_are_a_missing_group(spark):
    """A numeric group column with nulls (and NaN, in a float one) is numbered in the JVM: the missing values are
    one group, last, as the in-memory functions make NaN one group (None in the report's groups, "__NA" in the
    segments); a ``numerical`` feature's nulls are NaN, its own bin. The oracle: the in-memory functions on the
    collected columns with NaN for null (integers as floats: equal labels)."""
    nan = F.lit(float("nan"))
    df = _frame(spark, 2000, 3, seed=7).select(
        F.round("s", 2).alias("p"), "y", "w",
        F.when(F.col("id") % 11 == 0, None).when(F.col("id") % 17 == 0, nan)
        .otherwise(F.col("id") % 4 * 0.5).alias("g"),                            # double: nulls and NaN
        F.when(F.col("id") % 7 == 0, None).when(F.col("id") % 10 == 1, 2).when(F.col("id") % 10 == 3, 3)
        .otherwise(F.col("id") % 2).alias("k"),                                   # long: nulls; 2, 3 rare
        F.when(F.col("id") % 5 == 0, None).otherwise(F.rand(9)).alias("x"))       # numerical: nulls
    cols = df.select("p", "y", "w", *(F.coalesce(F.col(c).cast("double"), nan).alias(c) for c in "gkx")).toArrow()
    p, y, w, g, k, x = (cols.column(c).to_numpy() for c in ("p", "y", "w", "g", "k", "x"))
    assert np.isnan(g).sum() > 0 and np.isnan(k).sum() > 0 and np.isnan(x).sum() > 0

    ref = fastcal.segment_report(y, p, g, sample_weight=w, n_bins=5)
    assert ref.groups[-1] is None
    _same_report(fs.segment_report(df, "y", "p", "g", weight_col="w", n_bins=5), ref)

    # k: 0, 1 and the missing value kept, 2 and 3 collapsed into "__OTHER" (not the least value less 1: beside
    # missing values, as in memory and in MCGrad, whose "__NA" makes the column one of objects)
    ref = fastcal.multicalibration_error(y, p, {"k": k, "x": x}, sample_weight=w, numerical=["x"],
                                         max_values_per_segment_feature=4, min_samples_per_segment=5)
    got = fs.multicalibration_error(df, "y", "p", ["k", "x"], weight_col="w", numerical=["x"],
                                    max_values_per_segment_feature=4, min_samples_per_segment=5)
    assert _nan_as_text(got.segment_values) == _nan_as_text(ref.segment_values)
    assert {v.get("k") for v in ref.segment_values} == {None, 0, 1, "__NA", "__OTHER"}
    assert any(v.get("x") != v.get("x") for v in ref.segment_values)  # the NaN bin
    assert_array_equal(got.segment_n, ref.segment_n)
    assert_allclose(got.segment_ecce, ref.segment_ecce, rtol=RTOL, atol=0)


def _redrawn(spark, n, kind):
    """``n`` rows whose group ``g`` is drawn again in every job that computes them (a nondeterministic UDF, one of
    4n values): a DataFrame that never gives the same rows twice."""
    import random

    if kind == "string":
        draw = F.udf(lambda: f"g{random.randrange(4 * n)}", "string").asNondeterministic()
    else:
        draw = F.udf(lambda: random.randrange(4 * n), "long").asNondeterministic()
    return _frame(spark, n, 3).withColumn("g", draw())


@pytest.mark.parametrize("kind", ["string", "long"])
def test_segment_tools_read_one_set_of_rows_from_a_frame_that_is_not_cached(spark, kind):
    # The group numbering (a job of its own for a string column) and the passes must see the same rows: passes that
    # each drew other groups would make the groups that the numbering never saw missing (None), or fail.
    from ._spark_helpers import persisted_rdds

    held = persisted_rdds(spark)
    report = fs.segment_report(_redrawn(spark, 200, kind), "y", "s", "g")
    assert None not in report.groups and len(set(report.groups)) == len(report.groups)
    assert int(report.n.sum()) == 200
    mce = fs.multicalibration_error(_redrawn(spark, 200, kind), "y", "s", ["g"], min_samples_per_segment=1,
                                    max_values_per_segment_feature=2000)
    assert {"g": "__NA"} not in mce.segment_values and int(mce.segment_n[0]) == 200
    assert int(mce.segment_n[1:].sum()) == 200  # the one feature's segments cover every row once
    fitted = fs.fit_grouped(fastcal.IsotonicRegression(out_of_bounds="clip"), _redrawn(spark, 200, kind),
                            "s", "y", "g", min_samples_per_group=1)
    assert None not in fitted.groups_ and int(np.sum(fitted.group_counts_)) == 200
    # the frame: a limit of a round-robin repartition, other rows in every job, though each collect counts
    # the same groups
    import pandas as pd

    rng = np.random.default_rng(5)
    base = spark.createDataFrame(pd.DataFrame({"s": rng.random(200), "y": rng.integers(0, 2, 200),
                                               "g": np.where(rng.random(200) < 0.6, "a", "b")}))
    limited = base.repartition(4).limit(30)
    report = fs.segment_report(limited, "y", "s", "g")
    assert sorted(report.groups) == ["a", "b"] and int(report.n.sum()) == 30  # in the order the pinned rows show them
    assert persisted_rdds(spark) == held  # every pin released
