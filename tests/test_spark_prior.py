"""fastcal.spark.correct_negative_sampling and adjust_priors: the in-memory corrections, bit for bit.

Oracle: fastcal.correct_negative_sampling and fastcal.adjust_priors on the collected column (each a chain of
IEEE operations, which the Spark SQL expression repeats: equal bits are the claim, on double and float columns,
for each of the map's three evaluations), on both kinds of session.
"""

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import pyspark  # noqa: F401 - the spark extra is a test dependency: a missing one fails, never skips
from pyspark.sql import functions as F

import fastcal
import fastcal.spark as fs

from ._spark_helpers import collect

pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,
]


def _scores(dtype):
    """Probabilities of every magnitude, 0 and 1, the smallest subnormal, and one ulp below 1."""
    info = np.finfo(dtype)
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.random(2000), 10.0 ** -rng.uniform(0, 300 if dtype == np.float64 else 37, 500),
                        [0.0, -0.0, 1.0, float(info.smallest_subnormal), 1.0 - float(info.epsneg), 0.5]]).astype(dtype)
    return p


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_corrections_equal_the_in_memory_ones_bit_for_bit(session, dtype):
    p = _scores(dtype)
    kind = "double" if dtype == np.float64 else "float"
    df = session.createDataFrame([(i, float(v)) for i, v in enumerate(p.tolist())], "id long, p double")
    df = df.withColumn("p", F.col("p").cast(kind))
    cases = {  # the map's three evaluations: c > 1 (down), c < 1 (up), c == 1 (copy)
        "sampling": (lambda d: fs.correct_negative_sampling(d, "p", 0.1, "q"),
                     lambda v: fastcal.correct_negative_sampling(v, 0.1)),
        "up": (lambda d: fs.adjust_priors(d, "p", 0.2, 0.6, "q"), lambda v: fastcal.adjust_priors(v, 0.2, 0.6)),
        "down": (lambda d: fs.adjust_priors(d, "p", [0.3, 0.7], [0.9, 0.1], "q"),
                 lambda v: fastcal.adjust_priors(v, [0.3, 0.7], [0.9, 0.1])),
        "copy": (lambda d: fs.correct_negative_sampling(d, "p", 1.0, "q"),
                 lambda v: fastcal.correct_negative_sampling(v, 1.0)),
    }
    for name, (spark_call, memory_call) in cases.items():
        out = spark_call(df)
        assert out.columns == ["id", "p", "q"]
        assert dict(out.dtypes)["q"] == kind, name
        ids, given, got = collect(out, "id", "p", "q")
        assert_array_equal(given, p[ids])
        want = memory_call(given)
        assert got.dtype == want.dtype == dtype, name
        assert_array_equal(got.view(np.uint8), want.view(np.uint8), err_msg=name)  # the bits


def test_errors_name_the_argument(session):
    df = session.createDataFrame([(0.5,), (None,), (1.5,)], "p double")
    with pytest.raises(ValueError, match="rate"):
        fs.correct_negative_sampling(df, "p", 0.0, "q")
    with pytest.raises(ValueError, match="binary problem, but the priors have 3 classes"):
        fs.adjust_priors(df, "p", [0.2, 0.3, 0.5], [0.3, 0.3, 0.4], "q")
    with pytest.raises(ValueError, match="prob_col='x' is not a column"):
        fs.correct_negative_sampling(df, "x", 0.5, "q")
    with pytest.raises(ValueError, match="output_col='p' is already a column"):
        fs.correct_negative_sampling(df, "p", 0.5, "p")
    ok = fs.correct_negative_sampling(session.createDataFrame([(0.5,), (None,)], "p double"), "p", 0.5, "q")
    assert sorted(ok.collect(), key=lambda r: r["p"] is None)[1]["q"] is None  # a null stays null
    with pytest.raises(Exception, match=r"p must hold probabilities in \[0, 1\] without NaN"):
        fs.correct_negative_sampling(df, "p", 0.5, "q").collect()


def test_estimate_priors_em_equals_the_in_memory_estimate(session):
    rng = np.random.default_rng(12)
    p = 1.0 / (1.0 + np.exp(-rng.normal(-1.0, 2.0, 5000)))
    df = session.createDataFrame([(float(a),) for a in p], "p double").repartition(3)
    # Partitions of other sizes than the kernels' 4096-row chunks round each partition's sums first: EM may stop a
    # step apart, each within tol / (1 - rate) of the fixed point (this problem's rate is below 0.9, as in
    # tests/test_prior.py's).
    ref = fastcal.estimate_priors_em(p, [0.3, 0.7], tol=1e-10)
    got = fs.estimate_priors_em(df, "p", [0.3, 0.7], tol=1e-10)  # each EM pass is a Spark job
    assert got.converged and got.proba is None
    np.testing.assert_allclose(got.priors, ref.priors, rtol=0, atol=2 * 1e-10 / (1 - 0.9))
    with pytest.raises(ValueError, match="prob_col='x' is not a column"):
        fs.estimate_priors_em(df, "x", 0.5)
    with pytest.raises(ValueError, match="binary problem, but the priors have 3 classes"):
        fs.estimate_priors_em(df, "p", [0.2, 0.3, 0.5])
