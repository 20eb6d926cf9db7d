"""Two source trees of fastcal side by side: the same paths, the same arrays, fresh processes, alternating.

``python -m benchmarks.commits --old /tmp/old [--new .] [--paths roc_auc,iso_w] [--threads 1,2]
[--n 1e7] [--rounds 5] [--repeat 3]``

(Not ``compare_commits.py``: ``benchmarks.compare`` and ``benchmarks.smoke``
take every ``compare_*`` module for a peer comparison with a ``rows()``.)

Make the old tree with ``git worktree add /tmp/old <commit>``; both trees run
on this virtual environment's packages, each imported through ``PYTHONPATH``
(which comes before the editable install on ``sys.path``; the child prints
where ``fastcal`` came from, and this script checks it) with its own
``NUMBA_CACHE_DIR`` (under ``--cache``), so that neither loads the other's
compiled kernels.

For every round, path and thread count, one fresh process per tree, the
order old/new alternating from round to round (a machine that slows down
during a run slows both alike). Each process makes the arrays, calls the path
twice on a prefix of :data:`benchmarks._harness.WARM` rows (compiles or loads
the kernels, starts the workers), then times ``--repeat`` calls on all rows
and reports the least wall time, the least CPU time (all threads, from
``/proc/self/task/*/schedstat``) and the best spread of the work over the
threads (:func:`benchmarks._harness.spread`; ideal: the thread count).

The table: per path and thread count, the median over rounds of old and new
wall times (seconds), new / old (below 1: new is faster), each tree's
run-to-run variation of the wall time ((max - min) / median over its rounds),
the same for the CPU time, and each tree's best work spread. On a busy
machine the wall time of a call moves with what else runs; the CPU time of a
one-thread call hardly does (it still pays for shared caches and memory
bandwidth), so it is the better 1-thread comparison there. Ratios only mean
something when the variations are well below ``|1 - ratio|``. Linux only
(``/proc``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys

#: The paths: name -> expression of the data (scores ``p`` in (0, 1), 0/1 labels ``y``, weights ``w`` in
#: [0.5, 2], real-valued targets ``t`` in [0, 1]).
PATHS = {
    "roc_auc": "fastcal.roc_auc_score(y, p)",
    "roc_auc_w": "fastcal.roc_auc_score(y, p, sample_weight=w)",
    "iso_01": "fastcal.IsotonicRegression().fit(p, y)",
    "iso_w": "fastcal.IsotonicRegression().fit(p, y, sample_weight=w)",
    "iso_real": "fastcal.IsotonicRegression().fit(p, t)",
    "platt": "fastcal.platt_scaling(p, y)",
    "smooth_ece": "fastcal.smooth_ece(y, p)",
    "decomposition": "fastcal.score_decomposition(y, p)",
    "report": "fastcal.calibration_report(y, p)",
    "corp_bands": "fastcal.corp_reliability(y, p, n_resamples=8, random_state=0)",
    "venn_abers": "fastcal.VennAbers().fit(p, y)",
    "curve_quantile": "fastcal.calibration_curve(y, p, n_bins=10, strategy='quantile')",
    "ece": "fastcal.expected_calibration_error(y, p)",
    "ece_quantile": "fastcal.expected_calibration_error(y, p, strategy='quantile')",
}

_CHILD = r"""
import json, os, statistics, sys, time
import numpy as np
import fastcal

def thread_cpu_ns():
    times = {}
    for task in os.scandir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task.name}/schedstat") as f:
                times[task.name] = int(f.read().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return times

def spread(before, after):
    used = [t - before.get(tid, 0) for tid, t in after.items()]
    used = [u for u in used if u > 0]
    return sum(used) / max(used) if used else 1.0

call, n, threads, repeat, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
rng = np.random.default_rng(0)  # benchmarks._harness.miscalibrated_scores(n, seed=0)
s = rng.normal(0.0, 2.0, n)
y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.uint8)
p = 1.0 / (1.0 + np.exp(-s))
del s
rng = np.random.default_rng(1)
w = rng.uniform(0.5, 2.0, n)
t = np.clip(p + rng.normal(0.0, 0.1, n), 0.0, 1.0)
run = eval("lambda p, y, w, t: " + call)
fastcal.set_num_threads(threads)
m = min(n, warm)
run(p[:m], y[:m], w[:m], t[:m])
run(p[:m], y[:m], w[:m], t[:m])
times, cpus, spreads = [], [], []
for i in range(repeat):
    before = thread_cpu_ns()
    t0 = time.perf_counter()
    run(p, y, w, t)
    times.append(time.perf_counter() - t0)
    after = thread_cpu_ns()
    cpus.append(sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9)
    spreads.append(spread(before, after))
print(json.dumps(dict(seconds=min(times), cpu=min(cpus), spread=max(spreads), file=fastcal.__file__)))
"""


def measure(tree, cache_root, call, n, threads, repeat, warm=1 << 20):
    """One fresh process importing fastcal from ``tree``: the median of ``repeat`` timed calls and the best spread."""
    tree = os.path.abspath(tree)
    cache = os.path.join(cache_root, hashlib.sha1(tree.encode()).hexdigest()[:12])
    env = dict(os.environ, PYTHONPATH=tree, NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", _CHILD, call, str(n), str(threads), str(repeat), str(warm)],
                         capture_output=True, text=True, env=env, cwd=cache_root)
    if out.returncode != 0:
        raise RuntimeError(f"{call} in {tree} failed:\n{out.stderr}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not os.path.abspath(result["file"]).startswith(tree + os.sep):
        raise RuntimeError(f"fastcal came from {result['file']}, not from {tree}")
    return result


def variation(values):
    """(max - min) / median of a list of times."""
    return (max(values) - min(values)) / statistics.median(values)


def compare(old, new, paths, threads, n, rounds, repeat, cache_root, log=print):
    """``{(path, threads): {"old": [...], "new": [...]}}`` of the per-process results, measured alternately."""
    os.makedirs(cache_root, exist_ok=True)
    results = {(p, t): {"old": [], "new": []} for p in paths for t in threads}
    for r in range(rounds):
        order = (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old))
        for p in paths:
            for t in threads:
                for name, tree in order:
                    res = measure(tree, cache_root, PATHS[p], n, t, repeat)
                    results[p, t][name].append(res)
                    log(f"round {r + 1}/{rounds} {p:15s} {t:2d} threads {name}: {res['seconds']:.3f} s, "
                        f"cpu {res['cpu']:.3f} s, spread {res['spread']:.2f}", file=sys.stderr)
    return results


def table(results):
    """The comparison table (text)."""
    head = (f"{'path':15s} {'thr':>3s} {'old s':>7s} {'new s':>7s} {'new/old':>7s} {'var old':>7s} "
            f"{'var new':>7s} {'cpu old':>7s} {'cpu new':>7s} {'new/old':>7s} {'sprd old':>8s} {'sprd new':>8s}")
    lines = [head, "-" * len(head)]
    for (p, t), res in results.items():
        row = [f"{p:15s} {t:3d}"]
        old = [x["seconds"] for x in res["old"]]
        new = [x["seconds"] for x in res["new"]]
        mo, mn = statistics.median(old), statistics.median(new)
        co = statistics.median(x["cpu"] for x in res["old"])
        cn = statistics.median(x["cpu"] for x in res["new"])
        row.append(f"{mo:7.3f} {mn:7.3f} {mn / mo:7.3f} {variation(old):7.0%} {variation(new):7.0%}")
        row.append(f"{co:7.3f} {cn:7.3f} {cn / co:7.3f}")
        row.append(f"{max(x['spread'] for x in res['old']):8.2f} {max(x['spread'] for x in res['new']):8.2f}")
        lines.append(" ".join(row))
    return "\n".join(lines)


def main(argv=None):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", required=True, help="source tree of the old fastcal (e.g. a git worktree)")
    ap.add_argument("--new", default=here, help="source tree of the new fastcal (default: this one)")
    ap.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of: {', '.join(PATHS)}")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--n", type=float, default=1e7, help="rows (default 1e7)")
    ap.add_argument("--rounds", type=int, default=5, help="fresh processes per tree, path and thread count")
    ap.add_argument("--repeat", type=int, default=3, help="timed calls per process (their median is kept)")
    ap.add_argument("--cache", default="/tmp/fastcal-compare-cache", help="root of the per-tree Numba caches")
    ap.add_argument("--json", help="also write the per-process results here")
    args = ap.parse_args(argv)
    paths = args.paths.split(",")
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        ap.error(f"unknown paths {unknown}; known: {', '.join(PATHS)}")
    threads = [int(t) for t in args.threads.split(",")]
    results = compare(args.old, args.new, paths, threads, int(args.n), args.rounds, args.repeat, args.cache)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{p}@{t}": v for (p, t), v in results.items()}, f, indent=1)
    print(f"{int(args.n):,} rows, {args.rounds} rounds x {args.repeat} calls, old={args.old}, new={args.new}")
    print(table(results))


if __name__ == "__main__":
    main()
