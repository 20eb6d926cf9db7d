"""benchmarks/scaling.py runs end to end on a tiny input (one path), so that it cannot rot (Linux: it reads /proc)."""

import pytest

from benchmarks import scaling


def test_scaling_runs_and_writes_its_table(tmp_path):
    out = tmp_path / "scaling.md"
    rows = scaling.main(["--n", "3000", "--repeat", "1", "--paths", "smooth_ece", "--out", str(out)])
    r = rows["smooth_ece"]
    assert r["t1"] > 0 and r["t2"] > 0
    assert 1.0 <= r["spread8"] <= 8.0 + 1e-9 and 1.0 <= r["spread16"] <= 16.0 + 1e-9
    assert r["projected16"] == pytest.approx(r["t1"] / min(16.0, r["spread16"]))
    page = out.read_text()
    assert "| smooth_ece |" in page and "projected" in page and "measured" in page
    assert set(scaling.PATHS) >= {"isotonic fit, 0/1", "roc_auc_score", "calibration_report", "platt_scaling"}
