"""How each in-memory path scales with threads: time at 1 and 2 threads, and how its work spreads over 8 and 16.

``python -m benchmarks.scaling`` (``make scaling``) runs every path of
:data:`PATHS` at ``--n`` rows (10^7 by default; ``--n 1e8`` allowed), each
figure in a fresh process, after a warm-up on a prefix of the same arrays
(:func:`benchmarks._harness.warm_rows`) so that compiling is not timed:

- **time** at 1 and at 2 threads: the median of ``--repeat`` calls, and the
  speed-up t1 / t2;
- **spread** at 8 and at 16 threads: the CPU time of all the process's
  threads during one call over the CPU time of the busiest one, each read
  from ``/proc/self/task/<tid>/schedstat`` (first field: nanoseconds on a CPU)
  before and after the call, the best of ``--repeat`` calls (on a machine with
  fewer cores than threads, how the OS shares the cores out moves it from call
  to call). Ideal: the thread count. A serial pass or a
  fixed two-way split shows up as a spread near 1 or 2 whatever the cores, so
  this is measured even on a machine with fewer cores than threads;
- **memory**: the peak resident memory (``VmHWM``) the call adds, its mark
  reset after the warm-up (``/proc/self/clear_refs``), in units of one input
  array (the scores), taken in the 2-thread process on its first timed call.

From them a **projection** of the time on 16 cores: t1 / min(16, spread16),
which assumes the work spreads over 16 cores as it spreads over 16 threads
and that memory bandwidth keeps up. The table written to ``--out``
(docs/scaling.md) says which columns are measured and which are projected.
Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

#: The paths measured: name -> expression of the data (scores ``p`` in (0, 1), 0/1 labels ``y``, weights ``w``,
#: real-valued targets ``t``).
PATHS = {
    "isotonic fit, 0/1": "fastcal.IsotonicRegression().fit(p, y)",
    "isotonic fit, weighted": "fastcal.IsotonicRegression().fit(p, y, sample_weight=w)",
    "isotonic fit, real-valued": "fastcal.IsotonicRegression().fit(p, t)",
    "roc_auc_score": "fastcal.roc_auc_score(y, p)",
    "calibration_report": "fastcal.calibration_report(y, p)",
    "score_decomposition": "fastcal.score_decomposition(y, p)",
    "calibration_curve, quantile": "fastcal.calibration_curve(y, p, n_bins=10, strategy='quantile')",
    "smooth_ece": "fastcal.smooth_ece(y, p)",
    "platt_scaling": "fastcal.platt_scaling(p, y)",
}

_CHILD = r"""
import json, os, statistics, sys, time
import numpy as np
import fastcal
from benchmarks._harness import miscalibrated_scores, peak_rss, spread, thread_cpu_ns, warm_rows

call, n, threads, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p, y = miscalibrated_scores(n, "float64", seed=0)
rng = np.random.default_rng(1)
w = rng.uniform(0.5, 2.0, n)
t = np.clip(p + rng.normal(0.0, 0.1, n), 0.0, 1.0)
run = eval("lambda p, y, w, t: " + call)
fastcal.set_num_threads(threads)
m = warm_rows(n)
run(p[:m], y[:m], w[:m], t[:m])  # compiles (or loads) the kernels, starts the worker threads
run(p[:m], y[:m], w[:m], t[:m])


open("/proc/self/clear_refs", "w").write("5")  # reset the peak-RSS mark
base = peak_rss()
times, spreads = [], []
for i in range(repeat):
    before = thread_cpu_ns()
    t0 = time.perf_counter()
    run(p, y, w, t)
    times.append(time.perf_counter() - t0)
    after = thread_cpu_ns()
    if i == 0:
        extra = peak_rss() - base
    spreads.append(spread(before, after))
print(json.dumps(dict(seconds=statistics.median(times), extra=extra, input=p.nbytes, spread=max(spreads))))
"""


def measure(call, n, threads, repeat):
    """One fresh process: ``call`` at ``threads`` threads on ``n`` rows (see the module docstring); a dict."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", _CHILD, call, str(n), str(threads), str(repeat)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def run_path(call, n, repeat):
    """The row of one path: times at 1 and 2 threads, spreads at 8 and 16, memory, projection."""
    one = measure(call, n, 1, repeat)
    two = measure(call, n, 2, repeat)
    s8 = measure(call, n, 8, repeat)
    s16 = measure(call, n, 16, repeat)
    return dict(t1=one["seconds"], t2=two["seconds"], speedup=one["seconds"] / two["seconds"],
                spread8=s8["spread"], spread16=s16["spread"], memory=two["extra"] / two["input"],
                projected16=one["seconds"] / min(16.0, s16["spread"]))


def _fmt_n(n):
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10**e else f"{n:,}"


def table(rows, n, repeat):
    """The markdown page: what was measured, how, and the table."""
    lines = [
        "# Scaling with threads",
        "",
        f"Written by `make scaling` (`python -m benchmarks.scaling`, {_fmt_n(n)} float64 rows, "
        f"{time.strftime('%Y-%m-%d', time.gmtime())}, {os.cpu_count()} CPUs, {platform.machine()}, "
        f"load average {os.getloadavg()[0]:.1f} at the end). Each figure comes from a fresh process, after a "
        "warm-up on a prefix of the same arrays.",
        "",
        "- **measured**: *1 thread*, *2 threads*: seconds, the median of "
        f"{repeat} calls; *speed-up*: their ratio; *spread 8*, *spread 16*: the CPU time of all threads during "
        "a call at 8 (16) threads over that of the busiest thread, the best of "
        f"{repeat} calls (`/proc/self/task/*/schedstat`; ideal: 8 "
        "(16); it shows serial passes and fixed splits even on a machine with fewer cores); *memory*: the peak "
        "resident memory the call adds (VmHWM, 2 threads), in units of one input array of scores.",
        "- **projected**: *16 cores*: 1-thread time / min(16, spread 16), the time if the work spread over 16 "
        "cores as it does over 16 threads and memory bandwidth kept up.",
        "",
        "| path | 1 thread (s) | 2 threads (s) | speed-up | spread 8 | spread 16 | memory (x input) "
        "| 16 cores, projected (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['t1']:.3g} | {r['t2']:.3g} | {r['speedup']:.2f}x | {r['spread8']:.2f} "
                     f"| {r['spread16']:.2f} | {r['memory']:.2f} | {r['projected16']:.3g} |")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="rows (default 1e7; 1e8 allowed)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="calls per process (the median time is kept, and the best spread)")
    parser.add_argument("--paths", nargs="*", choices=sorted(PATHS), help="a subset of the paths")
    parser.add_argument("--out", default=os.path.join("docs", "scaling.md"), help="where to write the table")
    args = parser.parse_args(argv)
    n = int(args.n)
    rows = {}
    for name in args.paths or PATHS:
        rows[name] = run_path(PATHS[name], n, args.repeat)
        r = rows[name]
        print(f"{name}: {r['t1']:.3g} s / {r['t2']:.3g} s ({r['speedup']:.2f}x), spread {r['spread8']:.2f} "
              f"/ {r['spread16']:.2f}, memory {r['memory']:.2f}x", flush=True)
    page = table(rows, n, args.repeat)
    with open(args.out, "w") as f:
        f.write(page)
    print(page)
    return rows


if __name__ == "__main__":
    main()
