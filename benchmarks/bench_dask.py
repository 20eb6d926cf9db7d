"""asv benchmarks of the Dask fits, the out-of-core fits and the CLI (sizes and dtypes from ``_harness``).

The Dask benchmarks run on a ``distributed.LocalCluster`` of two worker
processes (one thread each), started once per process; in the smoke run
(``FASTCAL_BENCH_QUICK=1``) they use Dask's synchronous scheduler instead, so
that the test suite does not start a cluster. Sizes stop at 10^7: a 10^8 run
on a two-core machine measures the machine's memory, not fastcal.
"""

import atexit
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks._harness import DTYPES, QUICK, SIZES, miscalibrated_scores

SMALL_SIZES = [n for n in SIZES if n <= 10**7]
_CLIENT = []


def client():
    """The shared distributed client (None in the smoke run: synchronous scheduler)."""
    if QUICK:
        import dask

        dask.config.set(scheduler="sync")
        return None
    if not _CLIENT:
        from distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                               silence_logs=40)
        _CLIENT.append(Client(cluster))
        atexit.register(lambda: (_CLIENT[0].close(), cluster.close()))
    return _CLIENT[0]


def dask_data(n, dtype, chunks):
    """Scores and labels of an over-confident model as dask arrays made and held by the workers."""
    import dask
    import dask.array as da

    client()
    rng = da.random.default_rng(0)
    s = rng.normal(0.0, 2.0, n, chunks=chunks)
    y = (rng.random(n, chunks=chunks) < 1.0 / (1.0 + da.exp(-s / 2.0))).astype(np.uint8)
    return dask.persist((1.0 / (1.0 + da.exp(-s))).astype(dtype), y)


class DaskFit:
    params = (SMALL_SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        import fastcal.dask as fd

        self.fd = fd
        self.P, self.Y = dask_data(n, dtype, max(1000, n // 10))
        # The timed calls once each: compile or load their kernels (on the workers).
        fd.fit_isotonic(self.P, self.Y)
        fd.fit_platt(self.P, self.Y)
        fd.calibration_curve(self.Y, self.P, n_bins=10)

    def time_fit_isotonic(self, n, dtype):
        self.fd.fit_isotonic(self.P, self.Y)

    def time_fit_platt(self, n, dtype):
        self.fd.fit_platt(self.P, self.Y)

    def time_calibration_curve(self, n, dtype):
        self.fd.calibration_curve(self.Y, self.P, n_bins=10)


class OutOfCoreFit:
    params = (SMALL_SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        from fastcal import outofcore

        self.oc = outofcore
        self.dir = tempfile.mkdtemp(prefix="fastcal-bench-")
        p, y = miscalibrated_scores(n, dtype)
        self.xp, self.yp = os.path.join(self.dir, "x.npy"), os.path.join(self.dir, "y.npy")
        np.save(self.xp, p)
        np.save(self.yp, y)
        self.time_fit_isotonic_npy(n, dtype)  # the timed calls once each: compile or load their kernels
        self.time_fit_platt_npy(n, dtype)

    def teardown(self, n, dtype):
        shutil.rmtree(self.dir, ignore_errors=True)

    def time_fit_isotonic_npy(self, n, dtype):
        self.oc.fit_isotonic(self.xp, self.yp, memory_budget=64 << 20)

    def time_fit_platt_npy(self, n, dtype):
        self.oc.fit_platt(self.xp, self.yp, memory_budget=64 << 20)


class CliFitParquet:
    params = (SMALL_SIZES,)
    param_names = ["n"]
    timeout = 900

    def setup(self, n):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.dir = tempfile.mkdtemp(prefix="fastcal-bench-")
        p, y = miscalibrated_scores(n, "float64")
        self.path = os.path.join(self.dir, "data.parquet")
        pq.write_table(pa.table({"score": p, "label": y}), self.path)
        self.time_cli_fit(n)  # the timed command once: its process compiles or loads the kernels into the cache

    def teardown(self, n):
        shutil.rmtree(self.dir, ignore_errors=True)

    def time_cli_fit(self, n):
        subprocess.run([sys.executable, "-m", "fastcal", "fit", "--method", "isotonic", "--score-col", "score",
                        "--label-col", "label", self.path, "-o", os.path.join(self.dir, "m.json")], check=True)
