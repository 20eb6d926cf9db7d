"""Run a call with a given number of fastcal threads, to check that results do not depend on it."""

import contextlib

from fastcal._core import parallel as _parallel

#: More threads than this machine may have cores: every parallel call is cut into this many ranges.
MANY = 7


@contextlib.contextmanager
def num_threads(n):
    """fastcal calls from this thread use ``n`` threads inside the block."""
    before = _parallel.thread_setting()
    _parallel.set_num_threads(n)
    try:
        yield
    finally:
        _parallel.set_num_threads(before)


#: The parallel threshold while :func:`serial_and_parallel` runs its parallel call, so that
#: test-sized inputs are cut into ranges too.
SMALL_THRESHOLD = 1 << 10
#: The rows per task meanwhile: more tasks than threads, as on a big input.
SMALL_TASK_ROWS = 1 << 7


def serial_and_parallel(func, *args, **kwargs):
    """``func(*args, **kwargs)`` with one thread, and with :data:`MANY` threads above a threshold of
    :data:`SMALL_THRESHOLD` rows (instead of ``PARALLEL_MIN_SIZE``)."""
    with num_threads(1):
        serial = func(*args, **kwargs)
    before = _parallel.PARALLEL_MIN_SIZE, _parallel.TASK_ROWS
    _parallel.PARALLEL_MIN_SIZE, _parallel.TASK_ROWS = SMALL_THRESHOLD, SMALL_TASK_ROWS
    try:
        with num_threads(MANY):
            parallel = func(*args, **kwargs)
    finally:
        _parallel.PARALLEL_MIN_SIZE, _parallel.TASK_ROWS = before
    return serial, parallel


def in_pieces(kernel, n, *args, parts=MANY):
    """``kernel(*args, lo, hi)`` on ``parts`` uneven ranges covering ``[0, n)``, last range first; the results in range order.

    A kernel whose result does not depend on where its range is cut gives the
    same output as ``kernel(*args, 0, n)``; running the ranges backwards also
    catches a range that reads what an earlier one wrote.
    """
    bounds = sorted({0, n, *(((i * i + 1) * n) // (parts * parts) for i in range(1, parts))})
    ranges = list(zip(bounds[:-1], bounds[1:]))
    results = [kernel(*args, lo, hi) for lo, hi in reversed(ranges)]
    return results[::-1]
