"""``fastcal precompile``: compile every kernel for every dtype into Numba's cache, for a new process to load.

It refuses to start (a usage error) when the compiled code could not be
cached where asked: an unusable ``NUMBA_CACHE_DIR`` (Numba would quietly
cache elsewhere), or nowhere at all (minutes of compilation into memory).

Signals. Numba's compiler cannot be stopped midway: a ``KeyboardInterrupt``
raised inside it can be swallowed by its code generator, which then fails
later with an unrelated error and a traceback, and a signal handler only runs
when LLVM returns to Python, seconds later. So the warm-up calls run in a
worker thread while the main thread waits, and a signal (SIGINT, SIGTERM,
SIGHUP) is handled at once by the main thread: one line on stderr, then

- as the ``fastcal`` program (``main`` reading ``sys.argv``), the process ends
  at once with status 128 + the signal's number (``os._exit``: the worker is
  not unwound through the compiler). Numba writes each cache file to a
  temporary name and renames it, and reads an index entry whose file is
  missing as a miss, so the cache holds only whole entries and the next run
  compiles what is missing;
- when ``main`` is called by other code with its own ``argv``, it returns
  128 + the signal's number; the worker (a daemon thread) finishes the warm-up
  call it is in and stops there.
"""

from __future__ import annotations

import os
import sys
import threading
import time

from .. import _precompile
from .._io import UsageError
from .._jit import cache_dependencies, cache_dir_problem
from .progress import Progress
from .signals import Interrupted


class _Stop(Exception):
    """Raised in the worker, by its progress callback, when the command was interrupted."""


def cache_problem():
    """Why compiled kernels could not be cached where asked (a sentence for ``fastcal precompile``), or None."""
    problem = cache_dir_problem()
    if problem is not None:
        return f"{problem}: nothing would be cached there; set it to a writable folder, or unset it"
    uncached = [name for name, d in _precompile.dispatchers().items() if cache_dependencies(d) is None]
    if uncached:
        return ("fastcal cannot cache its compiled kernels anywhere (neither its install folder nor the user's "
                "cache folder is writable): set NUMBA_CACHE_DIR to a writable folder")
    return None


def cmd_precompile(args, progress_enabled, timings):
    """Run every warm-up call of :mod:`fastcal._precompile` with a progress bar; print what the cache holds."""
    problem = cache_problem()
    if problem is not None:
        raise UsageError(f"precompile: {problem}")
    bar = Progress("compiling kernels", total=_precompile.total_calls(), enabled=progress_enabled, unit="calls")
    done = []
    stop = threading.Event()
    outcome = {}

    def progress(label):
        done.append(label)
        if stop.is_set():
            raise _Stop

    def work():
        try:
            outcome["calls"] = _precompile.precompile(progress=progress)
        except _Stop:
            pass
        except BaseException as exc:  # handed to the main thread
            outcome["error"] = exc

    t0 = time.perf_counter()
    worker = threading.Thread(target=work, name="fastcal precompile", daemon=True)
    worker.start()
    shown = 0
    try:
        while worker.is_alive():
            worker.join(0.05)  # the main thread stays in Python: a signal is handled within this interval
            if len(done) > shown:
                bar.update(len(done) - shown)
                shown = len(done)
    except Interrupted as exc:
        stop.set()
        if getattr(args, "program", False):
            if bar.enabled:
                sys.stderr.write("\n")
            sys.stderr.write("fastcal: interrupted\n")
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(128 + exc.signum)
        raise
    if "error" in outcome:
        raise outcome["error"]
    bar.update(len(done) - shown)
    bar.close()
    calls = outcome["calls"]
    timings["precompile"] = time.perf_counter() - t0
    kernels = _precompile.dispatchers()
    compiled = sum(sum(d.stats.cache_misses.values()) for d in kernels.values())
    loaded = sum(sum(d.stats.cache_hits.values()) for d in kernels.values())
    files = _precompile.cache_files()
    size = sum(os.path.getsize(f) for f in files)
    where = os.path.commonpath(files) if files else "nowhere: kernels are compiled in memory"
    if not args.quiet:
        sys.stdout.write(
            f"fastcal precompile: {calls} warm-up calls in {timings['precompile']:.1f} s: "
            f"{compiled} kernel signatures compiled, {loaded} loaded from the cache; "
            f"cache {size / 2**20:.1f} MiB in {len(files)} files under {where}\n"
        )
