"""fastcal.spark.fit_multiclass: the multiclass calibrators on a DataFrame's columns, on a classic session and on
Spark Connect, against the in-memory fits of the collected columns.

The driver's exactness over many cuts is tested on ListRows and on RawCut (a backend converting its rows in every
pass, as Spark does: tests/test_multiclass_rows.py); here the columns reach it from Spark: probabilities agree to
1e-10 (see that module's docstring); the errors are the in-memory ones; no cache is left behind.
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import pyspark  # noqa: F401 - the spark extra is a test dependency: a missing one fails, never skips
from pyspark.sql import functions as F

import fastcal
import fastcal.spark as fs

from ._spark_helpers import collect, persisted_rdds

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,
]


def _frame(spark, n, parts, probabilities=False):
    """Three columns of scores a, b, c (logits, or their softmax), a label y drawn from a shifted softmax, a weight
    w, made in the JVM (not cached)."""
    z = [F.randn(seed) * 2 for seed in (1, 2, 3)]
    df = spark.range(0, n, numPartitions=parts).select(*[c.alias(name) for c, name in zip(z, "abc")],
                                                        (F.rand(7) * 1.5 + 0.5).alias("w"))
    u = [F.col(name) * 0.7 + shift for name, shift in zip("abc", (0.0, 0.3, 0.6))]
    e = [F.exp(v) for v in u]
    total = e[0] + e[1] + e[2]
    r = F.rand(8)
    y = F.when(r < e[0] / total, 0).when(r < (e[0] + e[1]) / total, 1).otherwise(2)
    df = df.select("a", "b", "c", "w", y.alias("y"))
    if probabilities:
        ea, eb, ec = (F.exp(F.col(name)) for name in "abc")
        df = df.select((ea / (ea + eb + ec)).alias("a"), (eb / (ea + eb + ec)).alias("b"),
                       (ec / (ea + eb + ec)).alias("c"), "w", "y")
    return df.persist()


@pytest.mark.parametrize("cal", [
    fastcal.TemperatureScaling(), fastcal.VectorScaling(), fastcal.MatrixScaling(reg_lambda=0.01, reg_mu=0.01),
    fastcal.DirichletCalibration(matrix_type="diagonal"),
], ids=repr)
def test_fit_multiclass_equals_in_memory(session, cal):
    df = _frame(session, 30_000, 3, probabilities=isinstance(cal, fastcal.DirichletCalibration))
    try:
        a, b, c, y, w = collect(df, "a", "b", "c", "y", "w")
        X = np.column_stack([a, b, c])
        ref = type(cal)(**cal.get_params()).fit(X, y, w)
        got = fs.fit_multiclass(cal, df, ["a", "b", "c"], "y", weight_col="w")
        assert type(got) is type(ref) and got.get_params() == ref.get_params()
        assert (got.n_classes_, got.converged_, got.input_type_) == (ref.n_classes_, ref.converged_, ref.input_type_)
        assert_allclose(got.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-10)
    finally:
        df.unpersist()


def test_decision_values_errors_and_no_cache_left(spark):
    df = _frame(spark, 5000, 2)
    try:
        a, y = collect(df.select("a", (F.col("y") % 2).alias("y")), "a", "y")
        before = persisted_rdds(spark)  # df's own
        ref = fastcal.MatrixScaling().fit(a, y)
        binary = df.select("a", (F.col("y") % 2).alias("y"))
        got = fs.fit_multiclass(fastcal.MatrixScaling(), binary, "a", "y")
        assert_allclose(got.predict_proba(a), ref.predict_proba(a), rtol=0, atol=1e-10)
        with pytest.raises(ValueError, match=r"y must hold class indices in 0 \.\. 1"):
            fs.fit_multiclass(fastcal.MatrixScaling(), df, "a", "y")
        with pytest.raises(ValueError, match="X must hold probabilities in"):
            fs.fit_multiclass(fastcal.DirichletCalibration(), df, ["a", "b", "c"], "y")
        with pytest.raises(ValueError, match="label_col='nope' is not a column"):
            fs.fit_multiclass(fastcal.VectorScaling(), df, ["a", "b", "c"], "nope")
        assert persisted_rdds(spark) == before
    finally:
        df.unpersist()


def test_weights_scaled_by_a_power_of_two_give_the_same_bits(spark):
    df = _frame(spark, 5000, 2)
    try:
        scaled = df.withColumn("w", F.col("w") * 1024.0)
        a = fs.fit_multiclass(fastcal.VectorScaling(), df, ["a", "b", "c"], "y", weight_col="w")
        b = fs.fit_multiclass(fastcal.VectorScaling(), scaled, ["a", "b", "c"], "y", weight_col="w")
        np.testing.assert_array_equal(np.r_[a.scales_, a.biases_], np.r_[b.scales_, b.biases_])
    finally:
        df.unpersist()


@pytest.mark.parametrize("method, calibrator", [("em", "auto"), ("bbse", None)])
def test_estimate_label_shift_equals_in_memory(session, method, calibrator):
    source = _frame(session, 6000, 2, probabilities=True)
    target = _frame(session, 8000, 3, probabilities=True).where(F.col("a") > 0.2)  # a shifted population
    try:
        a, b, c, y = collect(source, "a", "b", "c", "y")
        ta, tb, tc = collect(target, "a", "b", "c")
        ps, pt = np.column_stack([a, b, c]), np.column_stack([ta, tb, tc])
        ref = fastcal.estimate_label_shift(y, ps, pt, method=method, calibrator=calibrator,
                                           n_bootstrap=20 if method == "bbse" else 0, random_state=0)
        got = fs.estimate_label_shift(source, target, ["a", "b", "c"], "y", method=method, calibrator=calibrator,
                                      n_bootstrap=20 if method == "bbse" else 0, random_state=0)
        # see tests/test_label_shift_rows.py: counts exact (hard BBSE bit for bit), a calibrator and the EM to tol
        assert_allclose(got.priors, ref.priors, rtol=0, atol=1e-8 if method == "em" else 0.0)
        if method == "bbse":
            np.testing.assert_array_equal(got.priors_low, ref.priors_low)
    finally:
        source.unpersist()
        target.unpersist()
