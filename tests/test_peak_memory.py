"""Peak memory of the sort-bound paths: what each call adds beyond its inputs, in a fresh process (Linux VmHWM).

Each path needs at most a few sorted copies of the scores; the bound of each
is that count of arrays the size of the scores (``p.nbytes``) plus a fixed
allowance for what does not grow with the rows: per-chunk buffers of the
range partition (:data:`fastcal.isotonic._pav.CHUNK_ROWS` rows of a few
columns per thread taking a chunk), bin tables and the allocator's slack.
The row count is chosen so that one extra copy of the scores (32 MiB) is
well above that allowance: a path that starts holding one more copy at its
peak fails. ``benchmarks/scaling.py`` reports the same figure at 10^7 rows
and more.
"""

import pytest

from benchmarks._harness import big_run

pytestmark = pytest.mark.slow

N = 1 << 22
#: Bytes that do not grow with the rows: 2 threads x a few CHUNK_ROWS-row float64 buffers, tables, allocator slack.
ALLOWANCE = 12 << 20

#: path -> copies of the scores it may hold at its peak (what the algorithm needs).
PATHS = {
    # one sorted copy of the scores, split by class
    "fastcal.IsotonicRegression().fit(p, y)": 1,
    "fastcal.roc_auc_score(y, p)": 1,
    "fastcal.score_decomposition(y, p)": 1,
    # one sorted copy shared by the AUC and the CORP fit; the slope fit's logits come after it is freed
    "fastcal.calibration_report(y, p)": 1,
    # the sorted scores and the signed weights that travel with them, rescaled in place
    "fastcal.IsotonicRegression().fit(p, y, sample_weight=p)": 2,
    # the same, and the validated weights rescaled by the input check
    "fastcal.roc_auc_score(y, p, sample_weight=p)": 3,
    # those three, shared by the report's AUC and CORP fit, then the slope fit's logits (the sort freed)
    "fastcal.calibration_report(y, p, sample_weight=p)": 3,
}


@pytest.mark.parametrize("call", list(PATHS))
def test_peak_memory_is_a_known_number_of_score_copies(call):
    r = big_run(call, N)
    scores = 8 * N
    assert r["extra"] <= PATHS[call] * scores + ALLOWANCE, (
        f"{call} added {r['extra'] / scores:.2f}x the scores at its peak (bound {PATHS[call]}x + {ALLOWANCE >> 20} MiB)")
