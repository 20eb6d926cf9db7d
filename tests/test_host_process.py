"""fastcal as a guest in other programs: process pools, threads, Dask, a host's own Numba code,
read-only installs, the umask, interpreter shutdown and ``NUMBA_DISABLE_JIT``.

Each scenario runs in a fresh interpreter with a timeout, so a hang or a
killed child fails its test instead of stalling the suite. The work done in
every scenario is :func:`tests.host_workload.run` (every public computation,
above the parallel threshold); results are compared bit for bit through
:func:`tests.host_workload.digest`.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from . import host_workload

pytestmark = pytest.mark.slow  # each scenario starts its own interpreters and sets their threads: run once, not again on one thread

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT = 300


def run_python(code, *, env=None, drop=(), cwd=ROOT, pythonpath=ROOT, timeout=TIMEOUT, args=()):
    """Run ``code`` in a new interpreter; return its stdout. Fails on a non-zero exit or after ``timeout`` s.

    The child leads its own process group, which is killed on timeout, so
    that its own children (pool workers) cannot outlive a hung test.
    """
    full_env = {k: v for k, v in os.environ.items() if k not in drop}
    full_env["PYTHONPATH"] = str(pythonpath)
    full_env.update(env or {})
    proc = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code), *args],
        cwd=cwd, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"timed out after {timeout} s (a hang)\nstdout:\n{out}\nstderr:\n{err}")
    assert proc.returncode == 0, f"exit {proc.returncode}\nstdout:\n{out}\nstderr:\n{err}"
    return out


@pytest.fixture(scope="module")
def expected():
    """Digests of the workload for seeds 1 and 2, computed in this process."""
    return {seed: host_workload.task(seed) for seed in (1, 2)}


# ---------------------------------------------------------------------------
# process pools, after fastcal ran in the parent
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["fork", "forkserver", "spawn"])
def test_process_pools_after_use_in_the_parent(method, expected):
    out = run_python(f"""
        import json, multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from tests import host_workload as h

        parent = {{seed: h.task(seed) for seed in (1, 2)}}  # every parallel kernel runs in the parent first
        ctx = mp.get_context({method!r})
        with ctx.Pool(2) as pool:
            pooled = pool.map(h.task, [1, 2])
        with ProcessPoolExecutor(2, mp_context=ctx) as ex:
            executed = list(ex.map(h.task, [1, 2]))
        print(json.dumps([parent[1], parent[2], *pooled, *executed]))
    """)
    digests = json.loads(out.strip().splitlines()[-1])
    assert digests == [expected[1], expected[2]] * 3


@pytest.mark.parametrize("backend", ["loky", "threading", "multiprocessing"])
def test_joblib_backends(backend, expected):
    out = run_python(f"""
        import json
        from joblib import Parallel, delayed
        from tests import host_workload as h

        first = h.task(1)
        got = Parallel(n_jobs=2, backend={backend!r})(delayed(h.task)(seed) for seed in (1, 2, 1, 2))
        print(json.dumps([first, *got]))
    """)
    digests = json.loads(out.strip().splitlines()[-1])
    assert digests == [expected[1], expected[1], expected[2], expected[1], expected[2]]


# ---------------------------------------------------------------------------
# threads: many at once, results independent of the thread count
# ---------------------------------------------------------------------------
def test_eight_threads_at_once_equal_serial_bit_for_bit(expected):
    out = run_python("""
        import json, threading
        import fastcal
        from numba.np.ufunc import parallel as numba_parallel
        from tests import host_workload as h

        fastcal.set_num_threads(1)
        serial = {seed: h.task(seed) for seed in (1, 2)}
        fastcal.set_num_threads(None)
        barrier = threading.Barrier(8)
        got = [None] * 8

        def worker(i):
            barrier.wait()
            got[i] = h.task(1 + i % 2)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print(json.dumps({"serial": [serial[1], serial[2]], "threads": got,
                          "numba_layer_launched": numba_parallel._is_initialized}))
    """)
    result = json.loads(out.strip().splitlines()[-1])
    assert result["serial"] == [expected[1], expected[2]]
    assert result["threads"] == [expected[1], expected[2]] * 4
    assert result["numba_layer_launched"] is False


@pytest.mark.parametrize("threads", ["1", "2", "5"])
def test_numba_num_threads_does_not_change_results(threads, expected):
    out = run_python("""
        import sys
        from tests import host_workload as h

        print(h.task(1), h.task(2))
    """, env={"NUMBA_NUM_THREADS": threads})
    assert out.split() == [expected[1], expected[2]]


# ---------------------------------------------------------------------------
# Dask schedulers
# ---------------------------------------------------------------------------
def test_dask_schedulers():
    out = run_python("""
        import json
        import numpy as np
        import dask
        import dask.array as da
        import fastcal, fastcal.dask
        from tests import host_workload as h

        s, p, y, w, *_ = h.data(1 << 17, seed=3)
        P, Y = da.from_array(p, chunks=1 << 13), da.from_array(y, chunks=1 << 13)
        reference = fastcal.IsotonicRegression().fit(p, y).predict(p)

        def fits():
            iso = fastcal.dask.fit_isotonic(P, Y)
            platt = fastcal.dask.fit_platt(P, Y)
            pred = fastcal.dask.predict(iso, P).compute()
            ece = fastcal.dask.expected_calibration_error(Y, P, strategy="quantile")
            return pred, (platt.a_, platt.b_), ece

        results = {}
        for scheduler in ("threads", "processes", "synchronous"):
            with dask.config.set(scheduler=scheduler):
                results[scheduler] = fits()
        from distributed import Client, LocalCluster
        with LocalCluster(n_workers=2, threads_per_worker=2, processes=True, dashboard_address=":0") as cluster:
            with Client(cluster):
                results["distributed"] = fits()
        base = results["synchronous"]
        for name, (pred, ab, ece) in results.items():
            # Exactly the in-memory fit's thresholds; block means to ~1e-15 (sums added in another order).
            np.testing.assert_allclose(pred, reference, rtol=1e-14, atol=1e-15)
            np.testing.assert_array_equal(pred, base[0])
            assert ab == base[1] and ece == base[2], name
        print(json.dumps(sorted(results)))
    """)
    assert json.loads(out.strip().splitlines()[-1]) == ["distributed", "processes", "synchronous", "threads"]


# ---------------------------------------------------------------------------
# the host's own Numba code keeps its threading layer
# ---------------------------------------------------------------------------
def test_host_numba_threading_layer_is_never_launched_or_chosen(expected):
    out = run_python("""
        import json
        import numba
        import numpy as np
        from numba.np.ufunc import parallel as numba_parallel

        numba.config.THREADING_LAYER = "workqueue"  # the host's choice
        from tests import host_workload as h

        first = h.task(1)
        launched_by_fastcal = numba_parallel._is_initialized

        @numba.njit(parallel=True)
        def host_sum(x):
            total = 0.0
            for i in numba.prange(x.shape[0]):
                total += x[i]
            return total

        assert host_sum(np.ones(10_000)) == 10_000.0
        layer = numba.threading_layer()
        second = h.task(2)  # fastcal next to the host's running layer
        print(json.dumps([first, second, launched_by_fastcal, layer]))
    """)
    first, second, launched, layer = json.loads(out.strip().splitlines()[-1])
    assert [first, second] == [expected[1], expected[2]]
    assert launched is False
    assert layer == "workqueue"


# ---------------------------------------------------------------------------
# read-only install, no cache anywhere
# ---------------------------------------------------------------------------
def test_read_only_install_imports_and_warns_once(tmp_path):
    site = tmp_path / "site"
    shutil.copytree(ROOT / "fastcal", site / "fastcal", ignore=shutil.ignore_patterns("__pycache__"))
    # Numba caches next to the sources (in each package's __pycache__) or in the user's cache folder. Make both
    # impossible, also for root (who may write anywhere): every __pycache__ is a file, HOME is not a folder.
    for package in [site / "fastcal", *(d for d in (site / "fastcal").rglob("*") if d.is_dir())]:
        (package / "__pycache__").write_text("not a folder")
    for path in [*site.rglob("*"), site]:
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        out = run_python(f"""
            import json, warnings
            import numpy as np

            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                import fastcal
                p = np.random.default_rng(0).random(1 << 17)
                y = (p > 0.5).astype(int)
                q = fastcal.correct_negative_sampling(p, 0.1)
                iso = fastcal.IsotonicRegression().fit(p, y)
                r = fastcal.platt_scaling(p, y)
            assert fastcal.__file__.startswith({str(site)!r}), fastcal.__file__
            assert np.all(np.diff(q[np.argsort(p)]) >= 0) and r.converged
            ours = [w for w in caught if issubclass(w.category, fastcal.NoCacheWarning)]
            others = [str(w.message) for w in caught if not issubclass(w.category, fastcal.NoCacheWarning)]
            print(json.dumps([len(ours), str(ours[0].message) if ours else "", others]))
        """, env={"HOME": "/dev/null/home", "XDG_CACHE_HOME": "/dev/null/cache", "PYTHONDONTWRITEBYTECODE": "1"},
            drop=("NUMBA_CACHE_DIR",), pythonpath=site, cwd=tmp_path)
    finally:
        for path in [site, *site.rglob("*")]:
            path.chmod(path.stat().st_mode | stat.S_IWUSR)
    n_warnings, message, others = json.loads(out.strip().splitlines()[-1])
    assert n_warnings == 1
    assert "NUMBA_CACHE_DIR" in message
    assert others == []


# ---------------------------------------------------------------------------
# process-wide state: the umask
# ---------------------------------------------------------------------------
def test_saving_never_reads_or_changes_the_umask(tmp_path):
    out = run_python(f"""
        import json, os, stat
        import numpy as np
        import fastcal

        os.umask(0o027)  # the host's umask

        def forbidden(*args):
            raise AssertionError("fastcal called os.umask, which is process-wide")

        os.umask = forbidden
        p = np.random.default_rng(0).random(1000)
        y = (p > 0.5).astype(int)
        modes = []
        for name, model in (("iso", fastcal.IsotonicRegression().fit(p, y)), ("platt", fastcal.PlattScaling().fit(p, y))):
            path = os.path.join({str(tmp_path)!r}, name + ".json")
            model.save(path)
            modes.append(stat.S_IMODE(os.stat(path).st_mode))
        print(json.dumps(modes))
    """)
    assert json.loads(out.strip().splitlines()[-1]) == [0o640, 0o640]


# ---------------------------------------------------------------------------
# interpreter shutdown
# ---------------------------------------------------------------------------
def test_works_at_interpreter_shutdown():
    out = run_python("""
        import atexit, threading, time
        import numpy as np
        import fastcal

        rng = np.random.default_rng(0)
        p = rng.random(1 << 19)
        y = (rng.random(1 << 19) < p).astype(np.uint8)
        reference = fastcal.calibration_report(y, p).to_dict()

        def work(tag):
            fastcal.IsotonicRegression().fit(p, y).predict(p)
            assert fastcal.calibration_report(y, p).to_dict() == reference
            fastcal.roc_auc_score(y, p)
            fastcal.correct_negative_sampling(p, 0.1)
            fastcal.platt_scaling(p, y)
            print(tag, "ok", flush=True)

        atexit.register(work, "atexit")

        def late():
            time.sleep(0.5)  # the main thread has finished by now
            work("thread")

        threading.Thread(target=late).start()  # not a daemon: the interpreter waits for it
    """)
    assert out.split("\n")[:2] == ["thread ok", "atexit ok"]


# ---------------------------------------------------------------------------
# NUMBA_DISABLE_JIT=1 (a process-wide debugging switch): every public function still works
# ---------------------------------------------------------------------------
#: Results of iterative solvers: they stop once a step changes the result by
#: less than their tolerance, and compiled code (vectorised, reassociated sums)
#: and interpreted code (the sums in order) may stop one step apart.
ITERATIVE = {"platt", "platt_predict", "slope", "temperature", "temperature_proba", "em_priors", "em_proba",
             "em2_priors", "em2_proba", "cv_sigmoid", "load_platt", "load_temp",
             "smooth"}  # the smooth ECE's fixed point: a root to 1e-10


def test_disable_jit_gives_the_compiled_results(tmp_path):
    path = tmp_path / "nojit.npz"
    run_python(f"""
        import numpy as np
        import numba
        assert numba.config.DISABLE_JIT
        from tests import host_workload as h

        np.savez({str(path)!r}, **h.run(n=3000, extras=True))
    """, env={"NUMBA_DISABLE_JIT": "1"})
    interpreted = dict(np.load(path))
    compiled = host_workload.run(n=3000, extras=True)
    assert sorted(interpreted) == sorted(compiled)
    for name, want in compiled.items():
        got = interpreted[name]
        assert got.shape == want.shape, name
        if name in ITERATIVE:
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9, err_msg=name)
        else:
            # Sums of at most 3000 terms in another order: within 3000 eps of the sum of magnitudes.
            np.testing.assert_allclose(got, want, rtol=3000 * np.finfo(np.float64).eps, atol=1e-15, err_msg=name)
