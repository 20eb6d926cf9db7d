"""``fastcal precompile`` stopped by a signal, and with nowhere usable to cache (issue 27).

A signal mid-compile must end the program promptly with one line and status
128 + the signal's number, never an llvmlite/Numba traceback, and leave a cache
that later runs use (Numba once failed after an interrupted run with "no
compiled object yet for <Library ...>"). An unusable ``NUMBA_CACHE_DIR`` gives
one :class:`fastcal.NoCacheWarning`, and ``precompile`` refuses to start.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from fastcal.cli import main

#: Seconds from the signal to the end of the process: the main thread waits in 50 ms steps. Generous for a
#: loaded machine; the runs measured 0.02-0.04 s.
PROMPT = 1.0

#: A later process's first calls, through the kernels the interrupted runs were compiling (precompile's first
#: warm-ups: isotonic, Platt and beta).
LATER = r"""
import json, warnings
warnings.simplefilter("error")
import numpy as np
import fastcal
from fastcal import _precompile
rng = np.random.default_rng(0)
for dtype in (np.float32, np.float64):
    p = rng.uniform(0.01, 0.99, 2000).astype(dtype)
    y = (rng.random(2000) < p).astype(np.uint8)
    assert np.all(np.isfinite(fastcal.IsotonicRegression().fit(p, y).predict(p)))
    assert fastcal.platt_scaling(p, y).converged
    assert fastcal.BetaCalibration().fit(p, y).converged_
kernels = _precompile.dispatchers()
print(json.dumps(dict(loaded=sum(sum(d.stats.cache_hits.values()) for d in kernels.values()))))
"""


def _env(cache):
    return dict(os.environ, NUMBA_CACHE_DIR=str(cache))


def _cache_files(cache):
    return [f for _, _, files in os.walk(cache) for f in files if f.endswith((".nbi", ".nbc"))]


def _interrupt(cache, signum, delay, jobs):
    """Start ``fastcal precompile --jobs jobs`` into ``cache``, send ``signum`` ``delay`` s after it writes a new cache
    file, and check that it ends at once with one line and status 128 + ``signum``, leaving no worker behind."""
    before = len(_cache_files(cache))
    proc = subprocess.Popen([sys.executable, "-m", "fastcal", "precompile", "--jobs", str(jobs)], env=_env(cache),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while len(_cache_files(cache)) <= before:  # mid-compile: it has written a new cache file
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(delay)
        assert proc.poll() is None, "precompile finished before the signal: shorten the delays"
        proc.send_signal(signum)
        t0 = time.monotonic()
        out, err = proc.communicate(timeout=60)
        seconds = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    what = f"{signal.Signals(signum).name} after {delay} s, {jobs} jobs"
    assert proc.returncode == 128 + signum, (what, proc.returncode, err)
    assert err == "fastcal: interrupted\n", (what, err)
    assert out == "", (what, out)
    assert seconds < PROMPT, (what, seconds)
    with pytest.raises(ProcessLookupError):  # the workers (in the command's process group) were ended with it
        os.killpg(proc.pid, 0)


def _later_calls_work(cache):
    """A later process loads what the interrupted runs cached, and compiles the rest, without an error."""
    later = subprocess.run([sys.executable, "-c", LATER], env=_env(cache), capture_output=True, text=True,
                           timeout=1800)
    assert later.returncode == 0, later.stderr[-3000:]
    assert json.loads(later.stdout)["loaded"] > 0


@pytest.mark.slow
def test_a_signal_mid_compile_ends_precompile_and_its_workers_at_once_and_leaves_a_working_cache(tmp_path):
    cache = tmp_path / "numba-cache"
    # The same cache each time: later tries start further along (more loaded, other kernels compiling). With 2 jobs,
    # the workers save into that cache (under its lock) and are killed mid-compile: whole entries only.
    tries = [(signal.SIGTERM, 0.0, 1), (signal.SIGINT, 0.5, 2), (signal.SIGTERM, 1.5, 1), (signal.SIGINT, 2.0, 2),
             (signal.SIGHUP, 1.0, 1)]
    for signum, delay, jobs in tries:
        _interrupt(cache, signum, delay, jobs)
    _later_calls_work(cache)
    # (A whole precompile from a cold cache is test_precompile's; not repeated here: it costs minutes of CI.)


@pytest.mark.parametrize("kind", ["a file", "under a file"])
def test_an_unusable_cache_dir_warns_once_and_precompile_refuses(tmp_path, kind):
    (tmp_path / "file").write_text("not a folder")
    cache = tmp_path / "file" if kind == "a file" else tmp_path / "file" / "sub"
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "fastcal", "precompile"], env=_env(cache), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 2, out.stderr
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("fastcal: error:")]
    reason = "is a file, not a folder" if kind == "a file" else "is not a writable folder (Not a directory)"
    assert errors == [f"fastcal: error: precompile: NUMBA_CACHE_DIR={str(cache)!r} {reason}: nothing would be "
                      "cached there; set it to a writable folder, or unset it"], out.stderr
    assert out.stderr.count("NoCacheWarning") == 1, out.stderr
    assert out.stdout == ""
    assert time.monotonic() - t0 < 60  # refused up front, not after minutes of compilation
    assert (tmp_path / "file").read_text() == "not a folder"


def test_an_unusable_cache_dir_warns_once_in_a_library_process(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    code = r"""
import json, warnings
import numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import fastcal
    p = np.random.default_rng(0).random(1000)
    fastcal.correct_negative_sampling(p, 0.1)
    fastcal.IsotonicRegression().fit(p, (p > 0.5).astype(int))
print(json.dumps([[w.category.__name__, str(w.message)] for w in caught]))
"""
    out = subprocess.run([sys.executable, "-c", code], env=_env(tmp_path / "file"), capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    caught = json.loads(out.stdout)
    assert [c for c, _ in caught] == ["NoCacheWarning"], caught
    message = caught[0][1]
    assert f"NUMBA_CACHE_DIR={str(tmp_path / 'file')!r} is a file, not a folder" in message
    assert "They are cached in " in message


def test_precompile_refuses_without_any_cache(monkeypatch, capsys):
    import fastcal.cli.precompile as cli_precompile

    monkeypatch.setattr(cli_precompile, "cache_dependencies", lambda dispatcher: None)  # as with no locator
    assert main(["precompile"]) == 2
    err = capsys.readouterr().err
    assert err == ("fastcal: error: precompile: fastcal cannot cache its compiled kernels anywhere (neither its "
                   "install folder nor the user's cache folder is writable): set NUMBA_CACHE_DIR to a writable "
                   "folder\n")


@pytest.mark.parametrize("jobs", ["-1", "two"])
def test_precompile_jobs_must_be_a_count(jobs, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["precompile", "--jobs", jobs])
    assert exc.value.code == 2
    assert f"argument -j/--jobs: expected a number of processes (0 or more), got '{jobs}'" in capsys.readouterr().err


def test_a_failed_worker_of_precompile_jobs_is_an_error_with_its_message(tmp_path, monkeypatch):
    import fastcal.cli.precompile as cli_precompile

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    # a worker that dies at once: the command reports its status and stderr, after the other worker's end
    monkeypatch.setattr(cli_precompile, "WORKER", ("-c", "import sys; sys.stderr.write('worker broke'); sys.exit(3)"))
    with pytest.raises(RuntimeError, match=r"a worker process failed \(status 3\):\nworker broke"):
        main(["precompile", "--quiet", "--jobs", "2"])
