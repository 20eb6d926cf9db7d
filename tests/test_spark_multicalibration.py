"""fastcal.spark.predict of a MulticalibrationCalibrator: the table applied in Spark SQL, on both kinds of session.

Oracle: the model's in-memory ``predict`` of the collected columns, within the JVM's rounding of its ``exp`` and
``log`` (``tests._spark_helpers.multicalibration_bound``, which derives the tolerance); the offsets, added in the same
order, are checked through ``prediction_data`` in tests/test_multicalibration_fit.py.
"""

import numpy as np
import pytest

import pyspark  # noqa: F401 - the spark extra is a test dependency: a missing one fails, never skips

import fastcal
import fastcal.spark as fs

from ._spark_helpers import multicalibration_bound

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,
]

def _case(n=4000, seed=4):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    country = rng.choice(np.array(["fr", "de", "us", None], dtype=object), n, p=[0.3, 0.3, 0.3, 0.1])
    device = rng.integers(0, 3, n)
    x = rng.normal(size=n)
    x[::23] = np.nan
    bias = np.where((country == "fr") & (device == 1), -1.0, 0.0) + np.where(x > 0.8, 0.7, 0.0)
    lg = np.log(p) - np.log1p(-p)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(lg + bias)))).astype(np.int64)
    return p, y, {"country": country, "device": device, "x": x}


@pytest.fixture(scope="module")
def fitted():
    p, y, seg = _case()
    cal = fastcal.MulticalibrationCalibrator(n_buckets=4).fit(p, y, seg, numerical=["x"])
    assert len(cal.prediction_data().terms) >= 2  # offsets on several combinations: the test can fail
    return cal


def _frame(session, p, seg, **renamed):
    import pyarrow as pa

    table = pa.table({"id": np.arange(p.size), "s": p, **{renamed.get(k, k): v for k, v in seg.items()}})
    return session.createDataFrame(table.to_pandas()).repartition(3)


def test_equals_the_in_memory_predict(session, fitted):
    p, _, seg = _case(n=3000, seed=9)
    seg["country"][::97] = "unseen"
    out = fs.predict(fitted, _frame(session, p, seg), "s", "q").orderBy("id").toArrow()
    assert out.column_names == ["id", "s", "country", "device", "x", "q"]
    got = out.column("q").to_numpy()
    want = fitted.predict(p, seg)
    assert np.all(np.abs(got - want) <= multicalibration_bound(fitted, p, want))
    assert np.mean(got == want) > 0.5  # mostly the same bits: the same offsets, in the same order


def test_float32_scores_renamed_columns_and_null_scores(session, fitted):
    from pyspark.sql import functions as F

    p, _, seg = _case(n=1500, seed=10)
    p32 = p.astype(np.float32)
    df = _frame(session, p, seg, device="dev").withColumn("s", F.col("s").cast("float"))
    df = df.withColumn("s", F.when(F.col("id") == 7, F.lit(None)).otherwise(F.col("s")))
    out = fs.predict(fitted, df, "s", "q", segment_cols={"device": "dev"}).orderBy("id").toArrow()
    got = out.column("q")
    assert str(got.type) == "float" and got.null_count == 1 and not got[7].is_valid
    keep = np.arange(p.size) != 7
    want = fitted.predict(p32, seg)
    assert want.dtype == np.float32
    got = got.to_numpy(zero_copy_only=False)[keep].astype(np.float64)
    bound = multicalibration_bound(fitted, p32[keep], want[keep].astype(np.float64)) + np.spacing(want[keep]).astype(np.float64)
    assert np.all(np.abs(got - want[keep]) <= bound)


def test_a_model_without_offsets_and_numbers_as_categories(session):
    rng = np.random.default_rng(2)
    p = rng.uniform(0.1, 0.9, 2000)
    y = (rng.uniform(size=p.size) < p).astype(np.int64)
    g = rng.integers(0, 4, p.size)
    cal = fastcal.MulticalibrationCalibrator(n_buckets=2).fit(p, y, {"g": g})
    data = cal.prediction_data()
    out = fs.predict(cal, _frame(session, p, {"g": g}), "s", "q").orderBy("id").toArrow().column("q").to_numpy()
    want = cal.predict(p, {"g": g})
    assert np.all(np.abs(out - want) <= multicalibration_bound(cal, p, want))
    assert not data.terms or np.count_nonzero(cal.offsets_[1:])


def test_errors(session, fitted):
    from pyspark.sql import functions as F

    p, _, seg = _case(n=200, seed=11)
    df = _frame(session, p, seg)
    with pytest.raises(ValueError, match="the model's feature 'device' needs the column 'device'"):
        fs.predict(fitted, df.drop("device"), "s", "q")
    with pytest.raises(ValueError, match=r"segment_cols names \['nope'\]"):
        fs.predict(fitted, df, "s", "q", segment_cols={"nope": "x"})
    with pytest.raises(TypeError, match="segment_cols is only for a MulticalibrationCalibrator"):
        fs.predict(fastcal.PlattScaling().fit(p, p > 0.5), df, "s", "q", segment_cols={})
    with pytest.raises(TypeError, match="not both"):
        fs.predict(fitted, df, "s", "q", group_col="country", segment_cols={})
    with pytest.raises(fastcal.NotFittedError):
        fs.predict(fastcal.MulticalibrationCalibrator(), df, "s", "q")
    with pytest.raises(TypeError, match="segment column 'country' is a int column, but the model's values are"):
        fs.predict(fitted, df.withColumn("country", F.lit(1)), "s", "q")
    with pytest.raises(Exception, match="scores has values outside"):
        fs.predict(fitted, df.withColumn("s", F.col("s") + 2), "s", "q").collect()


def test_fit_equals_the_in_memory_fit(session):
    """fastcal.spark.fit_multicalibration against MulticalibrationCalibrator.fit on the collected columns, in partition
    order (tests/test_multicalibration_fit_rows.assert_same_model: what is exact is equal, the rest to 1e-12):
    strings with nulls (numbered in the JVM), integers folded, a binned numerical feature with NaN, weights."""
    import pandas as pd

    from .test_multicalibration_fit_rows import NUMERICAL, _case, assert_same_model

    p, y, w, seg = _case(5000, 6, weighted=True, many=True)
    frame = pd.DataFrame({"s": p, "y": y, "w": w, **seg})
    df = session.createDataFrame(frame).repartition(3).cache()
    try:
        rows = df.toArrow()
        cols = {c: rows.column(c).to_numpy(zero_copy_only=False) for c in rows.column_names}
        cols["a"] = np.array([None if v is None else v for v in rows.column("a").to_pylist()], dtype=object)
        cols["num"] = np.where(np.isnan(cols["num"].astype(np.float64)), np.nan, cols["num"].astype(np.float64))
        feats = {k: cols[k] for k in seg}
        want = fastcal.MulticalibrationCalibrator(n_buckets=4).fit(cols["s"], cols["y"], feats, sample_weight=cols["w"],
                                                                   numerical=NUMERICAL)
        assert want.n_rounds_ > 0 and np.count_nonzero(want.offsets_) > 2 and np.all(want.feature_others_[:2] >= 0)
        got = fs.fit_multicalibration(df, "s", "y", list(seg), weight_col="w", numerical=NUMERICAL, n_buckets=4)
        with pytest.raises(TypeError,
                           match=r"segments\['a'\] is in numerical and must be a numeric column, got string"):
            fs.fit_multicalibration(df, "s", "y", list(seg), numerical=["a"])  # as in memory: not numbered silently
        assert_same_model(got, want, cols["s"], feats)
        q = fs.predict(got, df, "s", "q").toArrow().column("q").to_numpy()
        assert np.all(np.abs(q - got.predict(cols["s"], feats)) <= multicalibration_bound(got, cols["s"], q))
    finally:
        df.unpersist()
