"""Dask, out-of-core and CLI fits against fastcal's own in-memory fits, on the same data, in one process.

The peer here is fastcal in memory: these paths exist for data that does not
fit in one process, and the question is what they cost when it does. A ratio
(peer / ours) below 1 is the overhead: 0.5x means twice the in-memory time.
Dask runs on a ``distributed.LocalCluster`` of two worker processes with one
thread each (the in-memory fit uses both cores too); the quick (smoke) run
uses the synchronous scheduler and tiny sizes.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks._harness import Row, best_of, miscalibrated_scores

SUBJECT = "dask / out of core / CLI"


def _cluster(quick):
    if quick:
        return None, None
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                           silence_logs=40)
    return cluster, Client(cluster)


def _generated(n, chunks, seed=1):
    """``miscalibrated_scores`` as dask arrays computed where they live (Dask's own generator)."""
    import dask.array as da

    rng = da.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n, chunks=chunks)
    y = (rng.random(n, chunks=chunks) < 1.0 / (1.0 + da.exp(-s / 2.0))).astype(np.uint8)
    return 1.0 / (1.0 + da.exp(-s)), y


def dask_rows(n, quick, repeat):
    import dask

    import fastcal
    import fastcal.dask as fd

    cluster, client = _cluster(quick)
    ctx = dask.config.set(scheduler="sync") if quick else None
    try:
        if ctx is not None:
            ctx.__enter__()
        chunks = max(1000, n // 10)
        P, Y = dask.persist(*_generated(n, chunks))  # made on the workers, as real data would be
        p, y = P.compute(), Y.compute()
        where = "sync scheduler" if quick else "LocalCluster, 2 worker processes x 1 thread"
        fastcal.IsotonicRegression().fit(p[: 1 << 19], y[: 1 << 19])
        fd.fit_isotonic(P, Y)  # load the kernels on the workers
        ours = best_of(lambda: fd.fit_isotonic(P, Y), repeat)
        mem = best_of(lambda: fastcal.IsotonicRegression().fit(p, y), repeat)
        yield Row(SUBJECT, f"`fastcal.dask.fit_isotonic` ({where}, {n // chunks} chunks)", n, ours,
                  {"fastcal in memory": mem}, "exact; <1x = Dask overhead")
        fastcal.PlattScaling().fit(p[: 1 << 19], y[: 1 << 19])
        fd.fit_platt(P, Y)
        ours = best_of(lambda: fd.fit_platt(P, Y), repeat)
        mem = best_of(lambda: fastcal.PlattScaling().fit(p, y), repeat)
        yield Row(SUBJECT, f"`fastcal.dask.fit_platt` ({where})", n, ours, {"fastcal in memory": mem})
        fd.calibration_curve(Y, P, n_bins=10)
        ours = best_of(lambda: fd.calibration_curve(Y, P, n_bins=10), repeat)
        mem = best_of(lambda: fastcal.calibration_curve(y, p, n_bins=10), repeat)
        yield Row(SUBJECT, f"`fastcal.dask.calibration_curve` ({where})", n, ours, {"fastcal in memory": mem})
        yield from _multicalibration_row(n // 10 if not quick else n, chunks // 10 if not quick else chunks, where,
                                         repeat)
    finally:
        if ctx is not None:
            ctx.__exit__(None, None, None)
        if client is not None:
            client.close()
            cluster.close()


def _multicalibration_row(n, chunks, where, repeat):
    """``fastcal.dask.fit_multicalibration`` against the in-memory fit: four features (text, integers, a binned
    number, three numbers), a bias in two segments; each Newton step is one round of the chunks' pattern sums."""
    import dask
    import dask.array as da

    import fastcal
    import fastcal.dask as fd

    rng = np.random.default_rng(4)
    p = rng.uniform(0.02, 0.98, n)
    seg = {"a": rng.choice(np.array(list("pqrstu")), n), "b": rng.integers(0, 8, n), "num": rng.normal(size=n),
           "few": rng.choice([0.5, 1.5, 2.5], n)}
    lg = np.log(p) - np.log1p(-p) + 0.6 * (seg["a"] == "p") - 0.5 * (seg["b"] == 2)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-lg))).astype(np.uint8)
    numerical = ["num", "few"]
    P, Y = dask.persist(da.from_array(p, chunks=chunks), da.from_array(y, chunks=chunks))
    S = dict(zip(seg, dask.persist(*(da.from_array(v, chunks=chunks) for v in seg.values()))))
    fd.fit_multicalibration(P, Y, S, numerical=numerical)  # load the kernels on the workers
    ours = best_of(lambda: fd.fit_multicalibration(P, Y, S, numerical=numerical), repeat)
    mem = best_of(lambda: fastcal.MulticalibrationCalibrator().fit(p, y, seg, numerical=numerical), repeat)
    yield Row(SUBJECT, f"`fastcal.dask.fit_multicalibration` ({where}, {n // chunks} chunks)", n, ours,
              {"fastcal in memory": mem}, "the in-memory model; <1x = Dask overhead")


def outofcore_rows(n, quick, repeat, workdir):
    import fastcal
    from fastcal import outofcore

    p, y = miscalibrated_scores(n, "float64", seed=2)
    xp, yp = os.path.join(workdir, "x.npy"), os.path.join(workdir, "y.npy")
    np.save(xp, p)
    np.save(yp, y)
    outofcore.fit_isotonic(p[:5000], y[:5000], chunk_rows=1000)
    budget = 64 << 20
    ours = best_of(lambda: outofcore.fit_isotonic(xp, yp, memory_budget=budget), repeat)
    mem = best_of(lambda: fastcal.IsotonicRegression().fit(p, y), repeat)
    yield Row(SUBJECT, "`outofcore.fit_isotonic` from .npy files, 64 MiB budget", n, ours,
              {"fastcal in memory": mem}, "exact")
    outofcore.fit_platt(p[:5000], y[:5000], chunk_rows=1000)
    ours = best_of(lambda: outofcore.fit_platt(xp, yp, memory_budget=budget), repeat)
    mem = best_of(lambda: fastcal.PlattScaling().fit(p, y), repeat)
    yield Row(SUBJECT, "`outofcore.fit_platt` from .npy files, 64 MiB budget", n, ours, {"fastcal in memory": mem})


def cli_rows(n, quick, workdir):
    """``fastcal fit`` on a Parquet file: wall time, and the split reported by ``--timings``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    import fastcal

    p, y = miscalibrated_scores(n, "float64", seed=3)
    path = os.path.join(workdir, "data.parquet")
    pq.write_table(pa.table({"id": np.arange(n), "score": p, "label": y}), path)
    cmd = [sys.executable, "-m", "fastcal", "fit", "--method", "isotonic", "--score-col", "score",
           "--label-col", "label", path, "-o", os.path.join(workdir, "m.json"), "--timings"]
    startup = [sys.executable, "-c", "import fastcal.cli"]
    subprocess.run(cmd, check=True, capture_output=True)
    split = {}

    def once():
        out = subprocess.run(cmd, check=True, capture_output=True, text=True)
        split.clear()
        split.update((k, float(v)) for k, v in re.findall(r"(\w[\w ()-]*?) ([\d.]+)s", out.stderr))

    ours = best_of(once, 1 if quick else 3)
    t_start = best_of(lambda: subprocess.run(startup, check=True), 1 if quick else 3)

    def in_process():
        table = pq.read_table(path, columns=["score", "label"])
        fastcal.IsotonicRegression().fit(table.column("score").to_numpy(), table.column("label").to_numpy())

    fastcal.IsotonicRegression().fit(p[:5000], y[:5000])
    mem = best_of(in_process, 1 if quick else 3)
    note = (f"start-up and imports {t_start:.2f} s, read {split.get('read', 0):.2f} s, "
            f"fit {split.get('fit', 0):.2f} s, write {split.get('write', 0):.3f} s")
    yield Row(SUBJECT, "`fastcal fit` CLI on a Parquet file (whole process)", n, ours,
              {"pyarrow read + fit in one process": mem}, note)


def rows(quick=False):
    n = 10**4 if quick else 10**7
    repeat = 1 if quick else 3
    yield from dask_rows(n, quick, repeat)
    workdir = tempfile.mkdtemp(prefix="fastcal-compare-")
    try:
        yield from outofcore_rows(n, quick, repeat, workdir)
        yield from cli_rows(n, quick, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
