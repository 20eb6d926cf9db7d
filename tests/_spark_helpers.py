"""Helpers shared by the Spark test modules: data made in the JVM, and columns collected to NumPy.

Imported by name (``from ._spark_helpers import frame, collect``); the session fixture ``spark`` stays in
tests/test_spark.py. Needs pyspark and pyarrow, both test dependencies.
"""

import numpy as np
from pyspark.sql import functions as F


def frame(spark, n, parts, seed=0, *, float32=False):
    """``n`` rows made in the JVM in ``parts`` partitions: score s in (0, 1), label y (0/1), weight w in [0.5, 2),
    and ``id``."""
    s = F.rand(seed)
    return spark.range(0, n, numPartitions=parts).select(
        (s.cast("float") if float32 else s).alias("s"),
        (F.rand(seed + 1) < s).cast("int").alias("y"),
        (F.rand(seed + 2) * 1.5 + 0.5).alias("w"),
        F.col("id"))


def collect(df, *cols):
    """The columns ``cols`` of ``df`` as NumPy arrays, in one Arrow collect."""
    table = df.select(*cols).toArrow()
    return [table.column(c).to_numpy() for c in cols]


def persisted_rdds(spark):
    """How many RDDs the classic session's SparkContext holds persisted: the JVM's ``SparkContext``, reached through
    PySpark's private Py4J gateway (PySpark has no public count; fastcal itself reads no private handle)."""
    jvm = spark.sparkContext._gateway.jvm
    return int(jvm.org.apache.spark.SparkContext.getOrCreate().getPersistentRDDs().size())


def multicalibration_bound(cal, p, q):
    """How far a MulticalibrationCalibrator's prediction in the JVM may be from ``q = cal.predict(p, ...)``.

    The JVM adds the same offsets in the same order, but its ``ln``, ``log1p`` and ``exp`` are ``StrictMath``'s
    (fdlibm, within 1 ulp) where fastcal's kernel has the C library's ``log`` and ``log1p`` and its own ``exp``
    (within 1.1 ulp). The logit's absolute error is then at most 4 ulp of ``|log p'| + |log1p(-p')|`` (two
    functions each side), times ``|slope|``, plus 2 ulp of ``|z|`` (bounded with every offset's magnitude);
    ``q``'s relative error is ``(1 - q)`` times ``z``'s absolute error, plus 4 ulp (``exp`` each side, the
    division)."""
    eps = np.finfo(np.float64).eps
    v = np.clip(np.asarray(p, dtype=np.float64), 2.0**-40, 1 - 2.0**-40)
    lg = np.log(v) - np.log1p(-v)
    z = np.abs(cal.slope_ * lg) + np.abs(cal.offsets_).sum()
    dz = 4 * eps * (np.abs(np.log(v)) + np.abs(np.log1p(-v))) * abs(cal.slope_) + 2 * eps * z
    return q * ((1 - q) * dz + 4 * eps)
