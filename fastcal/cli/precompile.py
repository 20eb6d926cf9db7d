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

With ``--jobs N``, the worker processes are killed first (their saves are
whole entries too, under the cache folder's lock), in both cases.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import tempfile
import threading
import time

from .. import _precompile
from .._io import UsageError
from .._core.jit import cache_dependencies, cache_dir_problem
from .progress import Progress
from .signals import Interrupted


#: The arguments of the Python interpreter that runs a worker of ``--jobs``.
WORKER = ("-m", "fastcal", "precompile", "--worker")


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
    """Run every warm-up call of :mod:`fastcal._precompile` with a progress bar; print what the cache holds.

    With ``--jobs N`` (N > 1), N worker processes make the calls first, each
    taking the next call as it finishes one, into the same cache (its saves
    are locked between processes: :class:`fastcal._core.jit._KernelCache`); then
    this process makes every call once more, which loads what they compiled
    and checks that nothing is missing.
    """
    if getattr(args, "worker", False):
        return _worker()
    problem = cache_problem()
    if problem is not None:
        raise UsageError(f"precompile: {problem}")
    jobs = args.jobs if args.jobs > 0 else len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
        else (os.cpu_count() or 1)
    t0 = time.perf_counter()
    by_workers = (0, 0)
    if jobs > 1:
        bar = Progress(f"compiling kernels in {jobs} processes", total=_precompile.total_calls(),
                       enabled=progress_enabled, unit="calls")
        by_workers = _in_workers(jobs, bar, args)
        bar.close()
    label = "checking the cache" if jobs > 1 else "compiling kernels"
    bar = Progress(label, total=_precompile.total_calls(), enabled=progress_enabled, unit="calls")
    calls = _in_this_process(bar, args)
    timings["precompile"] = time.perf_counter() - t0
    compiled, loaded = _precompile.compile_counts()
    files = _precompile.cache_files()
    size = sum(os.path.getsize(f) for f in files)
    where = os.path.commonpath(files) if files else "nowhere: kernels are compiled in memory"
    if not args.quiet:
        counts = f"{compiled} kernel signatures compiled, {loaded} loaded from the cache"
        if jobs > 1:
            counts = (f"{by_workers[0]} kernel signatures compiled and {by_workers[1]} loaded by {jobs} worker "
                      f"processes; then, in this one, {counts}")
        sys.stdout.write(f"fastcal precompile: {calls} warm-up calls in {timings['precompile']:.1f} s: {counts}; "
                         f"cache {size / 2**20:.1f} MiB in {len(files)} files under {where}\n")


def _interrupted(exc, bar, args):
    """After a signal: as the ``fastcal`` program, end the process at once (see the module's docstring)."""
    if getattr(args, "program", False):
        if bar.enabled:
            sys.stderr.write("\n")
        sys.stderr.write("fastcal: interrupted\n")
        sys.stderr.flush()
        sys.stdout.flush()
        os._exit(128 + exc.signum)
    raise exc


def _in_this_process(bar, args):
    """Every warm-up call, in a worker thread while the main thread waits for signals; the number of calls."""
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
        _interrupted(exc, bar, args)
    if "error" in outcome:
        raise outcome["error"]
    bar.update(len(done) - shown)
    bar.close()
    return outcome["calls"]


def _worker():
    """``fastcal precompile --worker``: make the warm-up calls whose positions arrive on stdin, one a line, and
    answer ``done`` after each; at the end of the input, ``counts COMPILED LOADED`` (kernel signatures)."""
    for line in sys.stdin:
        _precompile.precompile(only=[int(line)])
        sys.stdout.write("done\n")
        sys.stdout.flush()
    compiled, loaded = _precompile.compile_counts()
    sys.stdout.write(f"counts {compiled} {loaded}\n")
    sys.stdout.flush()


def _in_workers(jobs, bar, args):
    """Every warm-up call once, in ``jobs`` worker processes (``fastcal precompile --worker``), each handed the
    next call when it finishes one; ``(compiled, loaded)``, their kernel signatures.

    The main thread waits on the workers' pipes, so a signal is handled at
    once: the workers are killed (whatever they saved is whole) before the
    command ends as :func:`_in_this_process` does.
    """
    import fastcal

    env = dict(os.environ)  # the workers import this fastcal, wherever it was imported from
    root = os.path.dirname(os.path.dirname(os.path.abspath(fastcal.__file__)))
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    command = [sys.executable, *WORKER]
    todo = list(range(_precompile.total_calls()))
    todo.reverse()  # popped from the end: in order
    workers = []
    selector = selectors.DefaultSelector()
    try:
        for _ in range(min(jobs, len(todo))):
            # stderr to a file: a pipe nobody reads while the worker runs could fill and stop it
            err = tempfile.TemporaryFile(mode="w+")
            w = subprocess.Popen(command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                                 text=True, bufsize=1)
            w.err = err
            workers.append(w)
            selector.register(w.stdout, selectors.EVENT_READ, w)
            _hand(w, todo)
        counts = [0, 0]
        errors = []
        open_pipes = len(workers)
        while open_pipes:
            for key, _ in selector.select(timeout=0.05):
                w = key.data
                line = w.stdout.readline()
                if line == "done\n":
                    bar.update(1)
                    _hand(w, todo)
                elif line.startswith("counts "):
                    compiled, loaded = map(int, line.split()[1:])
                    counts[0] += compiled
                    counts[1] += loaded
                elif not line:  # the worker ended
                    selector.unregister(w.stdout)
                    open_pipes -= 1
                    if w.wait() != 0:
                        w.err.seek(0)
                        errors.append((w.returncode, w.err.read()))
        if errors:
            status, text = errors[0]
            raise RuntimeError(f"fastcal precompile: a worker process failed (status {status}):\n{text[-3000:]}")
        return tuple(counts)
    except Interrupted as exc:
        for w in workers:
            w.kill()
        for w in workers:
            w.wait()
        _interrupted(exc, bar, args)
    finally:
        for w in workers:
            if w.poll() is None:
                w.kill()
                w.wait()
            for pipe in (w.stdin, w.stdout, w.err):
                try:
                    pipe.close()
                except OSError:  # a dead worker's input, with a line still buffered
                    pass
        selector.close()


def _hand(worker, todo):
    """Send ``worker`` the next call of ``todo``, or close its input when none is left."""
    try:
        if todo:
            worker.stdin.write(f"{todo[-1]}\n")
            worker.stdin.flush()
            todo.pop()
        else:
            worker.stdin.close()
    except BrokenPipeError:  # the worker died: its status and stderr are reported when its output ends
        pass
