"""Shared pieces of the benchmark suite: sizes, data, timing, table rows.

asv files (``bench_*.py``) read their parameter grids from here so that
``FASTCAL_BENCH_QUICK=1`` (set by the test suite's smoke run) shrinks every
benchmark to sizes that run in a blink. The side-by-side comparison
(``python -m benchmarks.compare``) collects :class:`Row` objects from the
``compare_*.py`` modules and turns them into the README's table.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field

import numpy as np

QUICK = os.environ.get("FASTCAL_BENCH_QUICK") == "1"

#: asv sizes: 10^3 ... 10^8 in full runs, tiny in the smoke run.
SIZES = [10**3, 10**4] if QUICK else [10**3, 10**5, 10**7, 10**8]
DTYPES = ["float32", "float64"]

#: Rows of the prefix on which a ``setup`` repeats the timed calls to compile
#: (or load) their kernels: prefixes of a C-contiguous array have the same
#: Numba types, and 2^20 rows reach every size-dependent path of fastcal (the
#: two-thread path at ``_parallel.PARALLEL_MIN_SIZE``, the Platt and beta
#: warm start, the threaded sorts, the radix sort, the chunked smooth ECE).
#: ``tests/test_benchmarks.py`` checks it against those thresholds.
WARM = 1 << 20


def warm_rows(n):
    """Rows a ``setup`` warms on: all ``n`` below :data:`WARM`, else the first :data:`WARM`."""
    return min(n, WARM)


@dataclass
class Row:
    """One line of the comparison table: fastcal's time and each peer's on the same arrays."""

    subject: str
    task: str
    n: int
    ours: float
    peers: dict = field(default_factory=dict)
    note: str = ""


def best_of(func, repeat=3, min_time=0.0):
    """Best wall time of ``repeat`` calls of ``func()`` (seconds), garbage collected in between. Under
    :data:`QUICK` (a smoke run: it checks that the calls run, it measures nothing) one call, not collected first
    (a collection takes 0.2 s once the kernels are loaded: half of the smoke run's time)."""
    best = float("inf")
    for _ in range(1 if QUICK else repeat):
        if not QUICK:
            gc.collect()
        t0 = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - t0)
        if best > 10 and min_time == 0:
            break
    return best


def miscalibrated_scores(n, dtype="float64", seed=0):
    """Scores and binary labels from an over-confident model: P(y=1 | s) = sigmoid(s / 2).

    Returns ``(scores, y)`` with ``scores`` in (0, 1) (the model's claimed
    probability sigmoid(s)) and ``y`` as uint8 labels.
    """
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.uint8)
    p = (1.0 / (1.0 + np.exp(-s))).astype(dtype)
    return p, y


def peak_rss():
    """Peak resident memory of this process in bytes (``VmHWM``; reset it by writing 5 to ``/proc/self/clear_refs``)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) * 1024


_BIG_RUN = r"""
import json, sys, time
import fastcal
from benchmarks._harness import miscalibrated_scores, peak_rss as hwm, warm_rows

def run(p, y):
    return CALL

n, dtype, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
p, y = miscalibrated_scores(n, dtype, seed=seed)
m = warm_rows(n)
run(p[:m], y[:m])  # compiles (or loads) the kernels of every size-dependent path
open("/proc/self/clear_refs", "w").write("5")  # reset the peak-RSS mark
base = hwm()
t0 = time.perf_counter()
run(p, y)
seconds = time.perf_counter() - t0
print(json.dumps(dict(seconds=seconds, extra=hwm() - base, inputs=p.nbytes + y.nbytes)))
"""


def big_run(call, n, dtype="float64", seed=0):
    """One timed call on ``n`` rows of :func:`miscalibrated_scores` in a fresh process, after a warm-up on a prefix.

    ``call`` is an expression of the scores ``p`` and labels ``y`` (e.g.
    ``"fastcal.smooth_ece(y, p)"``). Returns a dict: ``seconds``, ``extra``
    (peak memory beyond what the process held before the call, in bytes;
    Linux ``/proc``) and ``inputs`` (bytes of ``p`` and ``y``).
    """
    out = subprocess.run([sys.executable, "-c", _BIG_RUN.replace("CALL", call), str(n), dtype, str(seed)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def thread_cpu_ns():
    """CPU time (ns) of every thread of this process, ``{tid: ns}``, from ``/proc/self/task/*/schedstat`` (Linux).

    The first field of ``schedstat`` is the time the thread has spent on a
    CPU. Two readings around a call give each thread's share of its work;
    :func:`spread` turns them into the speed-up more cores could give.
    """
    times = {}
    for task in os.scandir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task.name}/schedstat") as f:
                times[task.name] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # the thread ended between listing and reading
            pass
    return times


def spread(before, after):
    """Work over the busiest thread's share: (sum of the threads' CPU time) / (largest one), between two readings.

    1 means one thread did everything; T means T threads shared it evenly.
    It is the speed-up that enough cores could give the measured call
    (Amdahl's bound, serial parts included), and unlike a wall-clock
    speed-up it does not depend on what else the machine is running.
    """
    used = [t - before.get(tid, 0) for tid, t in after.items()]
    used = [u for u in used if u > 0]
    return sum(used) / max(used) if used else 1.0
