"""`make demo` runs end to end (on fewer rows)."""

import subprocess
import sys


def test_demo_runs():
    out = subprocess.run([sys.executable, "-m", "fastcal.demo", "--n", "50000"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "same" in out.stdout and "knots as scikit-learn: yes" in out.stdout
    assert "after (fastcal isotonic)" in out.stdout
