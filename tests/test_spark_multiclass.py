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

from . import naive_multiclass as naive
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


def _assert_close_to_in_memory(got, model, X, float32=False):
    # Spark's exp and ln (StrictMath, within 1 ulp) against fastcal's, and the sums' order: each logit u_j is off
    # by a few ulp of its terms' magnitude a = |b_j| + sum |W_jl f_l|, each probability by q (|du| + max |du|);
    # 64 eps (1 + a) is well above that for d <= 4. Float32 columns: the logs are taken in float32 in memory and
    # both results are rounded to float32.
    _, a = naive.softmax_of_data(model.prediction_data(), X)
    bound = 64 * np.finfo(np.float32 if float32 else np.float64).eps * (1 + a)
    want = model.predict_proba(X)
    assert got.dtype == want.dtype
    assert np.all(np.abs(got.astype(np.float64) - want) <= bound)


@pytest.mark.parametrize("cal, probabilities", [
    (fastcal.TemperatureScaling(), False), (fastcal.VectorScaling(), True), (fastcal.BiasCorrectedTemperatureScaling(), True),
    (fastcal.MatrixScaling(reg_lambda=0.01, reg_mu=0.01), False), (fastcal.DirichletCalibration(), True),
    (fastcal.DirichletCalibration(matrix_type="fixed_diagonal"), True),
], ids=repr)
def test_predict_proba_equals_in_memory(spark, cal, probabilities):
    df = _frame(spark, 5000, 3, probabilities)
    try:
        a, b, c, y = collect(df, "a", "b", "c", "y")
        X = np.column_stack([a, b, c])
        model = cal.fit(X, y)
        assert model.input_type_ == ("probabilities" if probabilities else "logits")
        out = fs.predict_proba(model, df, ["a", "b", "c"], ["p0", "p1", "p2"])
        assert out.columns == [*df.columns, "p0", "p1", "p2"]
        got = np.column_stack(collect(out, "p0", "p1", "p2"))
        _assert_close_to_in_memory(got, model, X)
    finally:
        df.unpersist()


def test_predict_proba_on_spark_connect_float32_decision_values_and_nulls(session):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(400, 3)) * 2
    y = np.argmax(X + rng.gumbel(size=X.shape), axis=1)
    rows = [(float(a), float(b), float(c), float(a - b), i) for i, (a, b, c) in enumerate(X)]
    rows.append((None, 1.0, 2.0, None, len(rows)))
    df = session.createDataFrame(rows, "a double, b double, c double, d double, i long")
    model = fastcal.VectorScaling().fit(X, y)
    got = fs.predict_proba(model, df, ["a", "b", "c"], ["p0", "p1", "p2"]).orderBy("i").collect()
    assert [r.p0 for r in got][-1] is None and got[-1].i == len(X)  # a null score: null probabilities
    _assert_close_to_in_memory(np.array([[r.p0, r.p1, r.p2] for r in got[:-1]]), model, X)
    # float columns give float probabilities, as in memory
    f32 = df.select(*(F.col(c).cast("float").alias(c) for c in "abc"), "i")
    got = fs.predict_proba(model, f32, ["a", "b", "c"], ["p0", "p1", "p2"]).orderBy("i").collect()
    assert dict(fs.predict_proba(model, f32, ["a", "b", "c"], ["p0", "p1", "p2"]).dtypes)["p0"] == "float"
    _assert_close_to_in_memory(np.array([[r.p0, r.p1, r.p2] for r in got[:-1]], dtype=np.float32), model,
                               X.astype(np.float32), float32=True)
    # one column of binary decision values (a matrix scaling's W of shape (2, 1))
    binary = fastcal.MatrixScaling().fit(X[:, 0] - X[:, 1], (y == 0).astype(int))
    got = fs.predict_proba(binary, df, "d", ["q0", "q1"]).orderBy("i").collect()
    _assert_close_to_in_memory(np.array([[r.q0, r.q1] for r in got[:-1]]), binary, X[:, 0] - X[:, 1])


def test_predict_proba_errors(spark):
    from pyspark.errors import PySparkException

    X = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1], [0.1, 0.1, 0.8]] * 20)
    y = np.arange(60) % 3
    model = fastcal.VectorScaling().fit(X, y)  # "auto": read as probabilities
    df = spark.createDataFrame([(0.2, 0.3, 0.5), (0.6, 0.5, 0.1)], "a double, b double, c double")
    with pytest.raises(PySparkException, match=r"the rows of X must sum to 1 \(within 1e-06\) \(the fit read X as "
                                               r"probabilities \(input_type='auto'\)\)"):
        fs.predict_proba(model, df, ["a", "b", "c"], ["p0", "p1", "p2"]).collect()
    with pytest.raises(ValueError, match=r"the rows of X must sum to 1 \(within 1e-06\) \(the fit read X as"):
        model.predict_proba([[0.6, 0.5, 0.1]])  # the same words in memory
    bad = spark.createDataFrame([(0.2, 0.3, float("nan"))], "a double, b double, c double")
    with pytest.raises(PySparkException, match="X must be finite, but contains NaN"):
        fs.predict_proba(model, bad, ["a", "b", "c"], ["p0", "p1", "p2"]).collect()
    with pytest.raises(PySparkException, match=r"X must hold probabilities in \[0, 1\] \(DirichletCalibration"):
        dc = fastcal.DirichletCalibration().fit(X, y)
        fs.predict_proba(dc, spark.createDataFrame([(1.5, -0.5, 0.0)], "a double, b double, c double"),
                         ["a", "b", "c"], ["p0", "p1", "p2"]).collect()
    with pytest.raises(ValueError, match="score_cols names 2 columns, but the VectorScaling was fitted on 3 classes"):
        fs.predict_proba(model, df, ["a", "b"], ["p0", "p1", "p2"])
    with pytest.raises(ValueError, match="output_cols names 2 columns, but the model has 3 classes"):
        fs.predict_proba(model, df, ["a", "b", "c"], ["p0", "p1"])
    with pytest.raises(ValueError, match="output_cols: 'a' is already a column"):
        fs.predict_proba(model, df, ["a", "b", "c"], ["a", "p1", "p2"])
    with pytest.raises(ValueError, match="output_cols must be distinct"):
        fs.predict_proba(model, df, ["a", "b", "c"], ["p", "p", "q"])
    with pytest.raises(TypeError, match="use fastcal.spark.predict for the 1-D calibrators"):
        fs.predict_proba(fastcal.PlattScaling().fit(X[:, 0], y % 2), df, "a", ["p0", "p1"])
    with pytest.raises(fastcal.NotFittedError):
        fs.predict_proba(fastcal.VectorScaling(), df, ["a", "b", "c"], ["p0", "p1", "p2"])
    ts = fastcal.TemperatureScaling().fit(X[:, 0] - X[:, 1], y % 2)  # on decision values
    two = spark.createDataFrame([(0.5,), (-1.0,)], "d double")
    got = np.array([[r.p0, r.p1] for r in fs.predict_proba(ts, two, "d", ["p0", "p1"]).collect()])
    _assert_close_to_in_memory(got, ts, np.array([0.5, -1.0]))
    with pytest.raises(ValueError, match="score_cols names one column; probabilities need one column per class"):
        fs.predict_proba(fastcal.VectorScaling().fit(X[:, :2] / X[:, :2].sum(1, keepdims=True), y % 2), two, "d",
                         ["p0", "p1"])
    old = fastcal.TemperatureScaling().fit(X, y).to_dict()
    del old["state"]["input_type_"]  # a file of fastcal 0.1.0: "auto" read each batch anew
    with pytest.raises(ValueError, match="reads each batch anew"):
        fs.predict_proba(fastcal.TemperatureScaling.from_dict(old), df, ["a", "b", "c"], ["p0", "p1", "p2"])
