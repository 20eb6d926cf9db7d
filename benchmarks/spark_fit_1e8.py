"""``fastcal.spark.fit_isotonic`` at 10^8 rows on local[2] with a 4 GiB driver: time and peak memory.

Usage::

    python -m benchmarks.spark_fit_1e8 [--rows 100000000] [--partitions 16] [--driver-memory 4g]

The rows are made in the JVM (``spark.range`` and ``rand``, not cached: the
fit caches the two columns, then the rows cut by score). In local mode the executors live
in the driver's JVM, so its heap (``spark.driver.memory``) holds Spark's
cache and shuffle buffers too; the Python driver holds fastcal's summaries.
Prints the fit's time, the number of knots, and the peak resident memory
(``VmHWM`` from ``/proc``) of the Python driver, of the JVM and of the
largest Python worker, sampled every 0.2 s (the JVM's and workers' peaks are
read at the end, from the kernel's high-water mark; workers that exited
before are counted by the sampler).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time


def _hwm_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return 0
    return 0


def _descendants(pid):
    """The process ids below ``pid`` (from /proc: no psutil needed)."""
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            out.append(c)
            todo.append(c)
    return out


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--driver-memory", default="4g")
    args = parser.parse_args(argv)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    import fastcal.spark as fs

    spark = (SparkSession.builder.master("local[2]").appName("fastcal-spark-1e8")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", args.driver_memory)
             .config("spark.pyspark.python", sys.executable).getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    peaks = {"jvm": 0, "worker": 0}
    done = threading.Event()

    def sample():
        while not done.wait(0.2):
            for pid in _descendants(os.getpid()):
                kind = "jvm" if "java" in _cmdline(pid) else "worker"
                peaks[kind] = max(peaks[kind], _hwm_kib(pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    s = F.rand(0)
    df = spark.range(0, args.rows, numPartitions=args.partitions).select(
        s.alias("score"), (F.rand(1) < s * s).cast("double").alias("label"))
    print(f"rows {args.rows:,}, partitions {args.partitions}, driver memory {args.driver_memory}, "
          f"Spark {spark.version}", flush=True)
    t0 = time.perf_counter()
    iso = fs.fit_isotonic(df, "score", "label", out_of_bounds="clip")
    elapsed = time.perf_counter() - t0
    done.set()
    sampler.join()
    for pid in _descendants(os.getpid()):
        kind = "jvm" if "java" in _cmdline(pid) else "worker"
        peaks[kind] = max(peaks[kind], _hwm_kib(pid))
    print(f"fit_isotonic: {elapsed:.1f} s, {iso.X_thresholds_.shape[0]} knots", flush=True)
    print(f"peak RSS: Python driver {_hwm_kib(os.getpid()) / 2**20:.2f} GiB, JVM (driver and local executors) "
          f"{peaks['jvm'] / 2**20:.2f} GiB, largest Python worker {peaks['worker'] / 2**20:.2f} GiB", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
