"""The benchmark gate (benchmarks/check.py, ``make bench-check``) can fail: a slowed-down subject fails it, a normal one passes.

The subjects here are fakes whose times are bounded from below (``time.sleep``
never returns early) or a real fastcal function made 40x slower on purpose,
so each expected outcome holds with a wide margin whatever the machine's load.
"""

import json
import time

import fastcal
from benchmarks import check


def _sleep(seconds):
    return lambda: time.sleep(seconds)


def _fake(ours_seconds, peer_seconds=0.03):
    return check.Case("fake", "sleep", lambda n: (_sleep(ours_seconds), {"peer": _sleep(peer_seconds)}), rounds=3)


FLOORS = {"fake: sleep": {"peer": 2.0}}


def test_normal_subject_passes():
    # ratio 30 ms / (2 ms plus scheduling delay): above the floor 2 unless every call of ours is delayed 13 ms
    (result,) = check.gate([_fake(0.002)], FLOORS, n=0, retries=2)
    assert result.failing() == [], result
    assert result.ratios["peer"] >= 2.0


def test_slowed_subject_fails_after_being_measured_again():
    # ratio at most (30 ms plus delays) / 60 ms: a pass would need every peer call delayed by 90 ms
    (result,) = check.gate([_fake(0.06)], FLOORS, n=0, retries=1)
    assert result.failing() == ["peer"]
    assert result.attempts == 2  # re-measured once before failing
    assert result.ratios["peer"] < 2.0


def test_real_subject_slowed_on_purpose_fails(monkeypatch):
    case = next(c for c in check.CASES if c.key == "prior: correct_negative_sampling")
    floors = {case.key: {"NumPy": 0.25}}  # the ratio is ~2-4x at 10^5 rows; 40x slower puts it below 0.1x
    (normal,) = check.gate([case], floors, n=10**5, retries=2)
    assert normal.failing() == [], normal

    fast = fastcal.correct_negative_sampling

    def slowed(p, rate, **kwargs):
        for _ in range(39):
            fast(p, rate, **kwargs)
        return fast(p, rate, **kwargs)

    monkeypatch.setattr(fastcal, "correct_negative_sampling", slowed)
    (slow,) = check.gate([case], floors, n=10**5, retries=1)
    assert slow.failing() == ["NumPy"], slow


def test_main_exit_status_json_and_missing_floor(monkeypatch, tmp_path, capsys):
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"floors": FLOORS}))
    results = tmp_path / "out.json"
    monkeypatch.setattr(check, "FLOORS", floors)
    monkeypatch.setattr(check, "_machine", lambda: "test")  # not the seconds of importing scikit-learn
    monkeypatch.setattr(check, "CASES", [_fake(0.002)])
    assert check.main(["--json", str(results)]) == 0
    assert "| fake: sleep |" in capsys.readouterr().out
    assert json.loads(results.read_text())["passed"] is True

    monkeypatch.setattr(check, "CASES", [_fake(0.06)])
    assert check.main(["--json", str(results), "--retries", "0"]) == 1
    assert "FAIL fake: sleep against peer" in capsys.readouterr().err
    assert json.loads(results.read_text())["passed"] is False

    monkeypatch.setattr(check, "CASES", [check.Case("fake", "no floor", lambda n: (_sleep(0), {"peer": _sleep(0)}))])
    assert check.main(["--json", str(results)]) == 1  # a case without a floor fails: floors are not optional
    assert "no floor in floors.json for: fake: no floor" in capsys.readouterr().err


def test_update_floors_writes_half_the_quiet_ratio(monkeypatch, tmp_path):
    floors = tmp_path / "floors.json"
    floors.write_text(json.dumps({"about": ["kept"], "floors": {}}))
    monkeypatch.setattr(check, "FLOORS", floors)
    monkeypatch.setattr(check, "_machine", lambda: "test")
    # Three runs: fastcal's best call in the first (1.0), the peer's in the third (10.5): quiet ratio 10.5;
    # the runs measured 9, 7 and 7, lower: the floor is half of 7.
    times = iter([(1.0, 9.0), (2.0, 14.0), (1.5, 10.5)])

    def fake_measure(case, n, rounds=None, peer_budget=None):
        ours, peer = next(times)
        return check.Result(case.key, ours, {"peer": peer}, {"peer": peer / ours})

    monkeypatch.setattr(check, "measure", fake_measure)
    monkeypatch.setattr(check, "CASES", [_fake(0.0)])
    assert check.main(["--update-floors", "--runs", "3"]) == 0
    data = json.loads(floors.read_text())
    assert data["floors"] == {"fake: sleep": {"peer": 3.5}} and data["about"] == ["kept"]


def test_floor_is_half_the_quiet_or_the_lowest_ratio():
    runs = [[check.Result("k", 1.0, {"p": 10.0}, {"p": 10.0})], [check.Result("k", 2.0, {"p": 6.0}, {"p": 3.0})]]
    # quiet ratio: the peer's best 6 over fastcal's best 1 = 6; but the second run measured 3: floor 3 / 2
    assert check.floors_from_runs(runs) == {"k": {"p": 1.5}}
    steady = [[check.Result("k", 1.0, {"p": 8.0}, {"p": 8.0})], [check.Result("k", 1.1, {"p": 9.9}, {"p": 9.0})]]
    # quiet ratio 8 / 1 = 8, below both runs' ratios: floor 4
    assert check.floors_from_runs(steady) == {"k": {"p": 4.0}}


def test_every_case_has_a_floor():
    floors = check.load_floors()
    for case in check.CASES:
        assert case.key in floors, f"no floor for {case.key}: run python -m benchmarks.check --update-floors"
