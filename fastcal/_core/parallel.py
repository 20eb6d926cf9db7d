"""fastcal's worker threads: how kernels run in parallel without Numba's threading layer.

Every kernel is compiled serial and ``nogil`` (:mod:`fastcal._core.jit`); a kernel
that can run in parallel takes a half-open range ``lo, hi`` of items (rows, or
fixed-size chunks of rows) as its last two arguments.

The contract of :func:`parallel_for` (``kernel``, ``n`` items standing for
``rows`` rows):

- **tasks fixed by the size**: above :data:`PARALLEL_MIN_SIZE` rows, ``[0, n)``
  is cut into ``min(n, rows // TASK_ROWS)`` contiguous, balanced ranges
  (:func:`task_bounds`). The cut depends on ``n`` and ``rows`` alone, never on
  the thread count, so a big input has many more tasks than threads (10^7 rows:
  76 tasks; 10^8 rows: 762).
- **dynamic**: the tasks are taken one at a time by whichever thread is free
  (:func:`run`), so uneven tasks, or a thread slowed by another process, do
  not hold the others back.
- **serial twin**: under :data:`PARALLEL_MIN_SIZE` rows, or with one thread,
  the kernel is called once, on ``[0, n)``.
- **what the results may depend on**: nothing but the input. A kernel run this
  way must give the same result whatever the cut: elementwise maps; integer
  counts and order-key minima and maxima, which the caller may add up or take
  the least of over the returned per-range results (exact in any order); and
  float reductions written into per-chunk partial buffers whose chunk bounds
  depend on the problem size alone (the kernel's items are those chunks), merged
  in chunk order by the caller. A float reduction must never add up the
  returned per-range results: their number depends on the thread count.
- :func:`parallel_accumulate` is the one exception to "one result per range":
  the ranges add exact (integer) contributions into at most
  :func:`get_num_threads` scratch buffers, so memory stays bounded by the
  thread count however many tasks there are.

Why not ``numba.njit(parallel=True)``? Its ``prange`` loops run on Numba's
threading layer, which is one per process and chosen once for every Numba user
in it: GNU OpenMP kills forked children (``fork() called from a process
already using GNU OpenMP``), ``workqueue`` aborts when two threads enter it at
once, and ``tbb`` loads only where the dynamic loader can find ``libtbb``.
fastcal never launches that layer, so it cannot break, or choose, the threading
of the program it runs in.

Guarantees, each tested in a subprocess:

- **fork**: the pool is dropped in a forked child (``os.register_at_fork``)
  and started anew on first use there.
- **threads**: any number of threads may call in at once; each call waits for
  its own ranges only. A call from inside a worker runs serially, so nested
  calls cannot deadlock.
- **interpreter shutdown**: when threads can no longer be started (at
  finalisation) the ranges run serially in the calling thread.
- **thread count**: :func:`get_num_threads` threads at most: the calling
  thread's :func:`set_num_threads` setting, else ``NUMBA_NUM_THREADS``
  (Numba's default: the CPUs this process may run on). Numba's own
  ``numba.set_num_threads`` is not read: reading it would launch Numba's
  threading layer.
"""

from __future__ import annotations

import os
import queue
import sys
import threading

import numba

from .params import Integer, check

__all__ = [
    "PARALLEL_MIN_SIZE",
    "TASK_ROWS",
    "capped_chunks",
    "get_num_threads",
    "n_chunks",
    "parallel_accumulate",
    "parallel_for",
    "run",
    "set_num_threads",
    "split",
    "task_bounds",
    "thread_setting",
]

#: Below this many rows a call runs in the calling thread: waking a worker
#: costs 10-20 microseconds, which a short loop does not win back. Measured
#: with ``python -m benchmarks.threshold`` (2 vCPUs): a second thread starts
#: to pay between 2^18 rows (Platt prediction, an exp per row) and 2^21
#: (memory-bound passes such as the finiteness check).
PARALLEL_MIN_SIZE = 1 << 18

#: Rows per task of :func:`parallel_for` above :data:`PARALLEL_MIN_SIZE` (1 MB of float64): small enough
#: that 10^7 rows make dozens of tasks for 64 threads to share, large enough that taking a task
#: (a lock and a kernel dispatch, a few microseconds) costs under 1% of running it.
TASK_ROWS = 1 << 17

_local = threading.local()


def get_num_threads() -> int:
    """Threads fastcal uses for a call from this thread (:func:`set_num_threads`, else ``NUMBA_NUM_THREADS``)."""
    n = getattr(_local, "num_threads", None)
    return n if n is not None else max(1, int(numba.config.NUMBA_NUM_THREADS))  # type: ignore[attr-defined]


def thread_setting() -> int | None:
    """The calling thread's :func:`set_num_threads` setting (``None``: not set), to restore it later."""
    return getattr(_local, "num_threads", None)


def set_num_threads(n: int | None) -> None:
    """Use at most ``n`` threads for fastcal calls made from the calling thread; ``None`` restores the default.

    The setting belongs to the calling thread alone, as ``numba.set_num_threads``'s
    does; nothing process-wide changes. Results do not depend on it.
    """
    _local.num_threads = check("n", n, [Integer(1), None])


def split(n, parts):
    """Bounds ``b`` (length ``parts + 1``) of ``parts`` contiguous, balanced ranges of ``[0, n)``."""
    return [(i * n) // parts for i in range(parts + 1)]


# The two rules that cut a problem into fixed chunks. Each is a function of the problem's sizes alone, never of
# the thread count, so that partial results merged in chunk order are the same on any number of threads.


def n_chunks(n_rows, chunk_rows):
    """The number of ``chunk_rows``-row chunks covering ``n_rows`` rows: ``ceil(n_rows / chunk_rows)``, at least 1
    (chunks of a fixed size, the last one shorter)."""
    return max(1, -(-int(n_rows) // int(chunk_rows)))


def capped_chunks(n_rows, chunk_rows, most=None):
    """The number of chunks of at least ``chunk_rows`` rows each of ``n_rows`` rows: ``n_rows // chunk_rows``, at
    most ``most`` (a cap from the memory of the partial results, or from the work one chunk must hold), at least 1
    (the rows shared among them by :func:`split`)."""
    count = int(n_rows) // int(chunk_rows)
    return max(1, count if most is None else min(count, int(most)))


class _Batch:
    """The calls of one :func:`run`, taken one at a time by whichever threads run it."""

    def __init__(self, calls):
        self.calls = calls
        self.results = [None] * len(calls)
        self.errors = []
        self.next = 0
        self.remaining = len(calls)
        self.lock = threading.Lock()
        self.done = threading.Event()

    def drain(self):
        """Take and run calls until none is left (a helper that starts late finds none and returns)."""
        while True:
            with self.lock:
                i = self.next
                if i == len(self.calls):
                    return
                self.next = i + 1
            func, args = self.calls[i]
            try:
                self.results[i] = func(*args)
            except BaseException as exc:  # re-raised in the calling thread
                with self.lock:
                    self.errors.append((i, exc))
            with self.lock:
                self.remaining -= 1
                if self.remaining == 0:
                    self.done.set()


class _Pool:
    """Daemon threads taking tasks from one queue; grows to the largest number of workers asked for."""

    def __init__(self):
        self.queue = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.size = 0

    def ensure(self, size):
        """Start workers until there are ``size``; return how many there are (fewer if threads cannot start)."""
        with self.lock:
            while self.size < size:
                t = threading.Thread(target=_work, args=(self.queue,), name=f"fastcal-{self.size}", daemon=True)
                try:
                    t.start()
                except RuntimeError:  # interpreter shutting down, or the process is out of threads
                    break
                self.size += 1
            return self.size


def _work(tasks):
    _local.in_worker = True
    while True:
        tasks.get()()  # a _Batch.drain: never raises


_pool = None
_pool_lock = threading.Lock()


def _get_pool():
    global _pool
    if _pool is None:
        with _pool_lock:
            if _pool is None:
                _pool = _Pool()
    return _pool


def _after_fork_in_child():
    # The parent's workers do not exist in the child: start afresh.
    global _pool, _pool_lock
    _pool = None
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _threads_for(parts):
    """How many threads may run ``parts`` ranges from the calling thread (1: run them here)."""
    if parts <= 1 or getattr(_local, "in_worker", False) or sys.is_finalizing():
        return 1
    return min(parts, get_num_threads())


def run(calls):
    """Run ``calls`` (a list of ``(func, args)``) on up to :func:`get_num_threads` threads; return their results in order.

    The calling thread takes part; each thread takes the next call not yet
    taken, so at most ``get_num_threads()`` calls of this batch run at once
    however many workers the pool has. If calls raise, the exception of the
    first of them is re-raised once every call has finished (they may share
    output buffers).
    """
    threads = _threads_for(len(calls))
    pool = _get_pool() if threads > 1 else None
    helpers = min(pool.ensure(threads - 1), threads - 1) if pool is not None else 0
    if helpers == 0:
        return [func(*args) for func, args in calls]
    batch = _Batch(calls)
    for _ in range(helpers):
        pool.queue.put(batch.drain)
    batch.drain()
    batch.done.wait()
    if batch.errors:
        raise min(batch.errors, key=lambda e: e[0])[1]
    return batch.results


def task_bounds(n, rows=None):
    """Bounds ``b`` of the tasks :func:`parallel_for` cuts ``[0, n)`` into: ``n`` and ``rows`` decide, never the threads.

    One range under :data:`PARALLEL_MIN_SIZE` rows (``rows`` defaults to
    ``n``), else ``min(n, rows // TASK_ROWS)`` (at least 1) balanced contiguous ranges
    (:func:`split`).
    """
    rows = n if rows is None else rows
    if rows < PARALLEL_MIN_SIZE or n <= 1:
        return [0, n]
    return split(n, capped_chunks(rows, TASK_ROWS, n))


def parallel_for(kernel, n, *args, rows=None):
    """Call ``kernel(*args, lo, hi)`` on the tasks covering ``[0, n)``; return their results in order.

    ``n`` counts the kernel's items (rows, or fixed-size chunks); ``rows`` is
    the work they stand for (default ``n``). The tasks are
    :func:`task_bounds`, taken by threads as they free up; with one task or
    one thread this is the single call ``kernel(*args, 0, n)``, so the number
    of results depends on the threads: reduce them only exactly (see the
    module's contract).
    """
    bounds = task_bounds(n, rows)
    tasks = len(bounds) - 1
    if tasks == 1 or _threads_for(tasks) == 1:
        return [kernel(*args, 0, n)]
    return run([(kernel, (*args, bounds[i], bounds[i + 1])) for i in range(tasks)])


def parallel_accumulate(kernel, n, *args, buffer, rows=None):
    """Call ``kernel(*args, buf, lo, hi)`` on the tasks of :func:`parallel_for`, each adding into a scratch buffer.

    ``buffer()`` makes a zeroed buffer; at most one per thread is made, and
    a task adds into whichever is free. Returns the list of buffers made:
    their sum is the same on any number of threads only if the additions are
    exact (integer counts), which is the only use allowed.
    """
    bounds = task_bounds(n, rows)
    tasks = len(bounds) - 1
    threads = _threads_for(tasks)
    if tasks == 1 or threads == 1:
        buf = buffer()
        kernel(*args, buf, 0, n)
        return [buf]
    bufs = [buffer() for _ in range(threads)]
    free = queue.SimpleQueue()
    for b in bufs:
        free.put(b)

    def task(lo, hi):
        buf = free.get()  # never waits: run() has at most `threads` calls going at once
        try:
            kernel(*args, buf, lo, hi)
        finally:
            free.put(buf)

    run([(task, (bounds[i], bounds[i + 1])) for i in range(tasks)])
    return bufs
