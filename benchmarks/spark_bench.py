"""fastcal.spark against Spark MLlib at scale, side by side in one local SparkSession.

Usage::

    python -m benchmarks.spark_bench [--rows 10000000] [--partitions 8] [--repeat 2] [--stages] [--connect]

The data is made in the JVM (``spark.range`` and ``rand``), cached and
counted before any timing, so every timing starts from the same cached
DataFrame. It measures, warm (after one untimed call of each):

- ``fastcal.spark.fit_isotonic`` against MLlib's ``IsotonicRegression.fit``
  and against one ``df.select(score, label).toArrow()`` (the cost of moving
  the two columns to Python once);
- the floor of any fit that runs Python on the executors: one
  ``mapInArrow`` pass over the two columns that only counts the rows (the
  batches sent to the Python workers and nothing done with them), and one
  shuffle of them (``repartition`` by score, counted);
- ``fastcal.spark.predict`` of the fitted model against MLlib's
  ``IsotonicRegressionModel.transform``, forced the same two ways (a ``sum``
  of the new column, and a write of every column to Spark's ``noop`` sink),
  interleaved (ours, theirs, ours, ...), building the plan included: the
  median of at least 5 runs each; then the time to build each query
  alone, and the rest of its first collect (optimizing, planning and the
  job; a second collect of one query reuses the first's shuffle files, so
  it is not the rows' cost).

It also checks that the two fits agree: MLlib's boundaries equal fastcal's
thresholds and the predictions agree. Prints the best of ``--repeat`` times
and the ratios. The machine's other load is noise: compare ratios.

``--connect`` runs everything through a Spark Connect session (a Connect
server in the local session's JVM, as the tests' ``connect`` fixture), the
data made and cached through it: the same measurements on the other kind of
session.

``--stages`` also prints, for every timed fit, the wall time of each call the
engine's driver makes on :class:`fastcal.spark.SparkRows` (``describe``: the
count and the sample; ``convert``: a validation job and its cache, where a
driver converts first; ``partition``: the range partition; ``map``: each
per-partition job, named by its function, the first one of a cut holding
its shuffle and cache).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings


def _best(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def _timed_stages(cls):
    """Wrap ``cls``'s ``describe``, ``convert``, ``partition`` and ``map`` to log ``(name, seconds)`` per call; the
    log."""
    log = []

    def timed(method, name):
        def call(self, *args, **kwargs):
            t0 = time.perf_counter()
            try:
                return method(self, *args, **kwargs)
            finally:
                label = name if name != "map" else f"map({getattr(args[0], '__name__', '?')})"
                log.append((label, time.perf_counter() - t0))
        return call

    for name in ("describe", "convert", "partition", "map"):
        setattr(cls, name, timed(getattr(cls, name), name))
    return log


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--stages", action="store_true", help="time the fit's calls on SparkRows")
    parser.add_argument("--connect", action="store_true", help="measure through a Spark Connect session")
    parser.add_argument("--connect-port", type=int, default=15052)
    parser.add_argument("--json", metavar="PATH", help="also write the measurements to PATH (docs/user_guide/spark.md's "
                        "predict table is made from two such files: predict_rows)")
    args = parser.parse_args(argv)

    import numpy as np
    from pyspark.ml.regression import IsotonicRegression as MLlibIsotonic
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import fastcal.spark as fs

    warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas")  # a script: its own filters
    builder = (SparkSession.builder.master("local[2]").appName("fastcal-spark-bench")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.driver.memory", args.driver_memory)
               .config("spark.pyspark.python", sys.executable))
    # Spark's Python workers (a Connect server's too) run PYSPARK_PYTHON of the JVM's environment (default: python3
    # on PATH, which need not have fastcal): this interpreter. A script's own environment.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    if args.connect:
        builder = (builder.config("spark.plugins", "org.apache.spark.sql.connect.SparkConnectPlugin")
                   .config("spark.connect.grpc.binding.address", "localhost")
                   .config("spark.connect.grpc.binding.port", str(args.connect_port)))
    local = builder.getOrCreate()
    local.sparkContext.setLogLevel("ERROR")
    spark = local
    if args.connect:
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        spark = RemoteSparkSession.builder.remote(f"sc://localhost:{args.connect_port}").create()
        # pyspark.sql.functions makes Connect's Columns where this is set (a Connect-only process sets it itself;
        # this one also holds the server's local session); a script's own environment
        os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    s = F.rand(0)
    df = spark.range(0, args.rows, numPartitions=args.partitions).select(
        s.alias("score"), (F.rand(1) < s * s).cast("double").alias("label")).cache()
    df.count()
    load = round(os.getloadavg()[0], 2)
    print(f"rows {args.rows:,}, partitions {args.partitions}, Spark {spark.version}, "
          f"{'Spark Connect' if args.connect else 'classic'} session", flush=True)

    def arrow():
        return df.select("score", "label").toArrow().num_rows

    def ours():
        return fs.fit_isotonic(df, "score", "label", out_of_bounds="clip")

    ml = MLlibIsotonic(featuresCol="score", labelCol="label")

    def theirs():
        return ml.fit(df)

    def count_rows(batches):  # a closure: pickled by value for the workers
        import pyarrow as pa

        n = sum(b.num_rows for b in batches)
        yield pa.RecordBatch.from_arrays([pa.array([n], pa.int64())], names=["n"])

    def python_pass():
        return sum(r["n"] for r in df.select("score", "label").mapInArrow(count_rows, "n long").collect())

    def shuffle():
        return df.select("score", "label").repartition(args.partitions, "score").count()

    stages = _timed_stages(fs.SparkRows) if args.stages else None
    results, runs, query_parts = {}, {}, {}
    for name, fn in (("toArrow", arrow), ("one Python pass (count)", python_pass), ("one shuffle (count)", shuffle),
                     ("fastcal fit_isotonic", ours), ("MLlib fit", theirs)):
        fn()  # warm: workers started, kernels loaded, JVM code generated
        results[name], out = _best(fn, args.repeat)
        if name == "fastcal fit_isotonic":
            iso = out
        if name == "MLlib fit":
            model = out
        print(f"{name:28s} {results[name]:8.2f} s", flush=True)
        if stages is not None and name == "fastcal fit_isotonic":
            for _ in range(args.repeat):
                stages.clear()
                t0 = time.perf_counter()
                ours()
                total = time.perf_counter() - t0
                print(f"  stages of one fit ({total:.2f} s): "
                      + ", ".join(f"{what} {t:.2f}" for what, t in stages), flush=True)

    bounds = np.asarray(model.boundaries.toArray())
    print("MLlib boundaries == fastcal thresholds:", bool(np.array_equal(bounds, iso.X_thresholds_)),
          f"({bounds.shape[0]} vs {iso.X_thresholds_.shape[0]} knots)", flush=True)

    def predict_ours():  # building the plan included (it holds every knot)
        return fs.predict(iso, df, "score", "p").agg(F.sum("p")).collect()[0][0]

    def predict_theirs():
        return model.transform(df).agg(F.sum("prediction")).collect()[0][0]

    def noop_ours():
        fs.predict(iso, df, "score", "p").write.format("noop").mode("overwrite").save()

    def noop_theirs():
        model.transform(df).write.format("noop").mode("overwrite").save()

    pairs = (("fastcal predict", predict_ours, "MLlib transform", predict_theirs),
             ("fastcal predict (noop write)", noop_ours, "MLlib transform (noop write)", noop_theirs))
    for a, fa, b, fb in pairs:  # interleaved: ours, theirs, ours, theirs, ... (the machine's load drifts)
        fa(), fb()
        times = {a: [], b: []}
        for _ in range(max(5, args.repeat)):  # the median of at least 5 interleaved runs
            for name, fn in ((a, fa), (b, fb)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
        for name in (a, b):
            results[name] = statistics.median(times[name])
            runs[name] = times[name]
            print(f"{name:28s} {results[name]:8.2f} s median (all: {', '.join(f'{t:.2f}' for t in times[name])})",
                  flush=True)
    print("predictions' sums (fastcal, MLlib):", predict_ours(), predict_theirs())
    # Where a query's time goes: building it (each DataFrame step analysed on a classic session), then its first
    # collect (optimizing, planning, the job). A second collect of the same query is not the rows' cost: it reuses
    # the first run's shuffle files (with adaptive execution or without), and ran 0.04 s at 10^7 rows.
    for name, query in (("fastcal predict", lambda: fs.predict(iso, df, "score", "p").agg(F.sum("p"))),
                        ("MLlib transform", lambda: model.transform(df).agg(F.sum("prediction")))):
        built, ran = [], []
        for _ in range(5):
            t0 = time.perf_counter()
            q = query()
            t1 = time.perf_counter()
            q.collect()
            built.append(t1 - t0)
            ran.append(time.perf_counter() - t1)
        query_parts[name] = {"build": statistics.median(built), "run": statistics.median(ran)}
        print(f"{name:28s} building the query {statistics.median(built):.3f} s, then optimizing, planning and "
              f"running it {statistics.median(ran):.3f} s (medians of 5)", flush=True)

    print(f"MLlib fit / fastcal fit:          {results['MLlib fit'] / results['fastcal fit_isotonic']:.2f}x")
    print(f"fastcal fit / toArrow:            {results['fastcal fit_isotonic'] / results['toArrow']:.2f}x")
    print(f"one Python pass / toArrow:        {results['one Python pass (count)'] / results['toArrow']:.2f}x; "
          f"one Python pass + one shuffle / toArrow: "
          f"{(results['one Python pass (count)'] + results['one shuffle (count)']) / results['toArrow']:.2f}x")
    print(f"fastcal predict / MLlib transform: {results['fastcal predict'] / results['MLlib transform']:.2f}x (sum), "
          f"{results['fastcal predict (noop write)'] / results['MLlib transform (noop write)']:.2f}x (noop write)")
    if args.json:
        record = {"session": "Spark Connect" if args.connect else "classic", "rows": args.rows,
                  "partitions": args.partitions, "spark": spark.version, "load_at_start": load,
                  "seconds": results, "runs": runs,
                  "predict_query": query_parts}
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
    if args.connect:
        spark.stop()
    local.stop()


def fit_rows(record):
    """The rows of docs/user_guide/spark.md's fit table from a ``--json`` record."""
    t = record["seconds"]
    arrow, fit = t["toArrow"], t["fastcal fit_isotonic"]
    floor = t["one Python pass (count)"] + t["one shuffle (count)"]
    return [f"| `df.select(score, label).toArrow()` | {arrow:.2f} s | |",
            f"| one `mapInArrow` pass over the two columns that only counts the rows | "
            f"{t['one Python pass (count)']:.2f} s | {t['one Python pass (count)'] / arrow:.1f}x `toArrow` |",
            f"| one shuffle of the two columns by score, counted | {t['one shuffle (count)']:.2f} s | "
            f"{t['one shuffle (count)'] / arrow:.1f}x `toArrow` |",
            f"| `fastcal.spark.fit_isotonic` | {fit:.2f} s | {fit / floor:.2f}x the pass and the shuffle |",
            f"| MLlib `IsotonicRegression.fit` | {t['MLlib fit']:.1f} s | {t['MLlib fit'] / fit:.1f}x `fit_isotonic` |"]


def predict_query_sentence(record):
    """The guide's sentence on where one ``predict`` query's time goes, from a ``--json`` record."""
    q = record["predict_query"]
    ours, theirs = q["fastcal predict"], q["MLlib transform"]
    return (f"building `predict`'s query took {ours['build']:.3f} s against {theirs['build']:.3f} s for MLlib's, "
            f"and optimizing, planning and running it {ours['run']:.3f} s against {theirs['run']:.3f} s")


def predict_rows(*records):
    """The rows of docs/user_guide/spark.md's predict table from ``--json`` records: one per session kind."""
    rows = []
    for r in records:
        t = r["seconds"]
        sums = (t["fastcal predict"], t["MLlib transform"])
        noop = (t["fastcal predict (noop write)"], t["MLlib transform (noop write)"])
        rows.append(f"| {r['session']} | {sums[0]:.2f} s | {sums[1]:.2f} s | {sums[0] / sums[1]:.2f}x "
                    f"| {noop[0]:.2f} s | {noop[1]:.2f} s | {noop[0] / noop[1]:.2f}x |")
    return rows


if __name__ == "__main__":
    main()
