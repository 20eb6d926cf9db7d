"""`make demo` runs end to end (on fewer rows, pictures into a temporary folder)."""

import subprocess
import sys


def test_demo_runs(tmp_path):
    out = subprocess.run([sys.executable, "-m", "fastcal.demo", "--n", "50000", "--images", str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "knots as scikit-learn: yes" in text
    for heading in ("1. Isotonic calibration", "2. Platt scaling", "3. Diagnostics", "4. Undoing negative",
                    "5. Pictures"):
        assert heading in text, heading
    assert "as expected" in text and "UNEXPECTED" not in text
    for name in ("reliability.png", "corp_reliability.png", "undersampling_histogram.png",
                 "undersampling_reliability.png"):
        assert (tmp_path / name).stat().st_size > 10_000
