"""The benchmark suite and the comparison script run (on tiny sizes), so they cannot rot."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# the asv benchmarks and comparisons, run once each: they check the benchmark files, not threads
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def test_every_benchmark_runs_once():
    env = dict(os.environ, FASTCAL_BENCH_QUICK="1")
    out = subprocess.run([sys.executable, "-m", "benchmarks.smoke"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "asv benchmark calls" in out.stdout
    # the comparisons' table, as `python -m benchmarks.compare` renders it
    assert "| isotonic | `IsotonicRegression.fit`" in out.stdout
    assert "scikit-learn" in out.stdout


def test_comparison_options(capsys):
    from benchmarks import compare

    with pytest.raises(SystemExit, match="--write-readme needs a full run"):  # refused before any measurement
        compare.main(["--quick", "--write-readme"])
    assert compare.collect(quick=True, only={"no such subject"}) == []


SYNTHETIC = r'''
import json, types
from benchmarks import smoke

SOURCE = """
import numpy as np
from fastcal import correct_negative_sampling

class Warmed:
    def setup(self):
        self.p = np.linspace(0.0, 1.0, 101)
        correct_negative_sampling(self.p[:10], 0.1)
    def time_correct(self):
        correct_negative_sampling(self.p, 0.1)

class OutNotWarmed:  # the timed call reaches another kernel (in place) than the one setup compiled
    def setup(self):
        self.p = np.linspace(0.0, 1.0, 101)
        correct_negative_sampling(self.p, 0.1)
    def time_in_place(self):
        correct_negative_sampling(self.p, 1.0, out=self.p)

class DtypeNotWarmed:  # float32 scores: another signature than setup's float64
    params = [[100]]
    def setup(self, n):
        self.p = np.linspace(0.0, 1.0, n)
        correct_negative_sampling(self.p, 0.1)
    def peakmem_float32(self, n):
        correct_negative_sampling(self.p.astype(np.float32), 0.1)
    def track_float32(self, n):  # not measured: may compile
        return float(correct_negative_sampling(self.p.astype(np.float32), 0.1)[-1])

class _Base:  # asv skips the names that start with an underscore: a base class of benchmarks
    def time_never(self):
        raise RuntimeError("a base class ran")

class Raises:
    def setup(self):
        pass
    def time_bad_rate(self):
        correct_negative_sampling(np.ones(3), -1.0)
"""

mod = types.ModuleType("bench_synthetic")
exec(SOURCE, mod.__dict__)
calls, problems = smoke.run_asv_suite([mod])
print(json.dumps(dict(calls=calls, problems=problems)))
'''


def test_smoke_flags_unwarmed_signatures_and_errors():
    # Each benchmark runs as under asv (kernels dropped first): a measured call that
    # compiles or loads a kernel its setup did not call is reported, and so is an error.
    out = subprocess.run([sys.executable, "-c", SYNTHETIC], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.splitlines()[-1])
    assert res["calls"] == 5
    flagged = sorted(p.split(":")[0].split(".", 1)[1] for p in res["problems"])
    assert flagged == ["DtypeNotWarmed.peakmem_float32(100,)", "OutNotWarmed.time_in_place()", "Raises.time_bad_rate()"]
    assert any("ValueError" in p and "rate" in p for p in res["problems"])
    assert any("binary_copy" in p for p in res["problems"] if "OutNotWarmed" in p)


def test_warm_prefix_reaches_every_size_threshold():
    # A setup warms on the first WARM rows: at least as many as any size at which
    # fastcal switches to another path (another kernel), so the full sizes' paths are warmed.
    from benchmarks._harness import WARM, warm_rows
    from fastcal import _auc, _binning, platt, smooth
    from fastcal._core import parallel as _parallel
    from fastcal._engine import sort as _sort

    thresholds = [_parallel.PARALLEL_MIN_SIZE, platt.WARM_START_MIN, _auc.THREADED_SORT_MIN_SIZE,
                  _sort.RADIX_MIN_SIZE, _binning.SELECT_MIN_SIZE,
                  smooth.CHUNK_ROWS + 1]
    assert WARM >= max(thresholds)
    assert warm_rows(10) == 10 and warm_rows(10**8) == WARM
