"""Run a fit in a fresh interpreter under an address-space limit and report how far its memory grew.

Used by test_outofcore.py and test_cli.py to show that out-of-core fits stay
within their memory budget whatever the size of the file. The child process
first runs the same call on a small file of the same kind (compiling or
loading every kernel, importing pyarrow), starts fastcal's worker threads
with one parallel call (they start on a process's first parallel pass, and a
small file makes none; each thread's stack is 8 MB of address space that the
limit would otherwise count: a run once failed so), then sets
``RLIMIT_AS`` to its address space plus ``extra`` bytes, runs the call on the
big file, and reports the growth of its peak resident memory (``VmHWM``)
beyond the resident memory it had before, and a control: whether reading the
file's columns (a CSV file's bytes) whole still fits under the limit.

pyarrow's default allocator (mimalloc) reserves address space ahead of use,
so that ``RLIMIT_AS`` would not bind on it: the child uses the system
allocator (``ARROW_DEFAULT_MEMORY_POOL=system``), with one malloc arena
(``MALLOC_ARENA_MAX=1``; glibc otherwise reserves 64 MB of address space per
thread arena). Both are settings of the child's environment only.
"""

import json
import os
import subprocess
import sys
import textwrap

_SCRIPT = textwrap.dedent("""
    import gc, json, os, resource, sys
    kind, path, small, budget, extra, out = sys.argv[1:7]
    budget, extra = int(budget), int(extra)
    import pyarrow.parquet as pq
    from fastcal import outofcore
    from fastcal.cli import main

    def status(key):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024

    def fit(p):
        if kind == "apply":  # out is the model; the big file comes on stdin
            if p == path:
                sys.stdin = open(p)
                p = "-"
            assert main(["apply", out, p, "-o", os.path.join(os.path.dirname(out), "out.npy"), "-q"]) == 0
            return None
        if kind == "fit_isotonic_parquet":
            return outofcore.fit_isotonic_parquet(p, "score", "label", memory_budget=budget).X_thresholds_.tolist()
        if kind == "fit_platt_parquet":
            est = outofcore.fit_platt_parquet(p, "score", "label", memory_budget=budget)
            return [est.a_, est.b_]
        status = main(["fit", "--method", kind, "--score-col", "score", "--label-col", "label",
                       "--memory-budget", str(budget), "-q", p, "-o", out])
        assert status == 0, status
        return None

    fit(small)
    import fastcal, numpy as np
    fastcal.log_loss(np.zeros(1 << 20, np.uint8), np.full(1 << 20, 0.5))  # above PARALLEL_MIN_SIZE: every thread
    gc.collect()
    rss, vm = status("VmRSS"), status("VmSize")
    resource.setrlimit(resource.RLIMIT_AS, (vm + extra, resource.RLIM_INFINITY))
    result = fit(path)
    growth = status("VmHWM") - rss
    try:
        if path.endswith(".parquet"):
            pq.ParquetFile(path).read(columns=["score"], use_threads=False)
        else:  # pyarrow's CSV parser aborts the process when out of memory: read the bytes
            with open(path, "rb") as f:
                f.read()
        control = "loaded"
    except MemoryError:
        control = "MemoryError"
    print(json.dumps({"growth": growth, "control": control, "result": result}))
""")


def run_limited(kind, path, small, budget, extra, out, tmp_path):
    """``{"growth", "control", "result"}`` of ``kind`` (an outofcore function or a --method) on ``path``.

    ``kind`` "apply": ``fastcal apply`` of the model file ``out`` to ``path`` read from stdin.
    """
    script = tmp_path / "limited.py"
    script.write_text(_SCRIPT)
    env = dict(os.environ, MALLOC_ARENA_MAX="1", ARROW_DEFAULT_MEMORY_POOL="system")
    proc = subprocess.run([sys.executable, str(script), kind, str(path), str(small), str(budget), str(extra), str(out)],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])
