"""The benchmark suite and the comparison script run (on tiny sizes), so they cannot rot."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_every_benchmark_runs_once():
    env = dict(os.environ, FASTCAL_BENCH_QUICK="1")
    out = subprocess.run([sys.executable, "-m", "benchmarks.smoke"], cwd=ROOT, env=env,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "asv benchmark calls" in out.stdout


def test_comparison_table_renders():
    out = subprocess.run([sys.executable, "-m", "benchmarks.compare", "--quick", "--only", "isotonic"],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "| isotonic | `IsotonicRegression.fit`" in out.stdout
    assert "scikit-learn" in out.stdout
