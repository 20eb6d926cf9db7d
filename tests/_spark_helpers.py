"""Helpers shared by the Spark test modules: data made in the JVM, and columns collected to NumPy.

Imported by name (``from ._spark_helpers import frame, collect``); the session fixture ``spark`` stays in
tests/test_spark.py. Needs pyspark and pyarrow, both test dependencies.
"""

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
