"""asv benchmarks of fastcal.GroupedCalibrator, next to one fit of its calibrator on all rows.

The issue's goal (10^7 rows, 10^4 groups): a grouped fit takes at most 2x
one global fit of the same calibrator, and so the classes time both on the
same arrays (``time_global_*``: the reference), for every calibrator it wraps. Groups: one per 1000 rows,
uniform. ``python -m benchmarks.bench_grouped [n]`` runs the side by side
measurement in one process: grouped and global calls interleaved, five
rounds, the median of the per-round ratios (absolute times on a shared
machine are noise).
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np

from fastcal import (
    BetaCalibration,
    GroupedCalibrator,
    HistogramBinning,
    IsotonicRegression,
    PlattScaling,
    VennAbers,
)

from ._harness import DTYPES, SIZES, miscalibrated_scores, warm_rows

ROWS_PER_GROUP = 1000


def _data(n, dtype, seed=0):
    s, y = miscalibrated_scores(n, dtype, seed)
    rng = np.random.default_rng(seed + 1)
    groups = rng.integers(0, max(1, n // ROWS_PER_GROUP), n)
    w = rng.uniform(0.5, 2.0, n).astype(dtype)
    return s, y, groups, w


def _isotonic():
    return IsotonicRegression(out_of_bounds="clip")


class GroupedIsotonic:
    params = (SIZES, DTYPES)
    param_names = ["n", "dtype"]
    timeout = 900

    def setup(self, n, dtype):
        self.s, self.y, self.g, self.w = _data(n, dtype)
        self.model = GroupedCalibrator(_isotonic()).fit(self.s, self.y, self.g)
        self.global_model = _isotonic().fit(self.s, self.y)
        m = warm_rows(n)
        s, y, g, w = self.s[:m], self.y[:m], self.g[:m], self.w[:m]
        GroupedCalibrator(_isotonic(), min_samples_per_group=1).fit(s, y, g)
        GroupedCalibrator(_isotonic(), min_samples_per_group=1).fit(s, y, g, sample_weight=w)
        _isotonic().fit(s, y, sample_weight=w)
        self.model.predict(s, g)
        self.global_model.predict(s)

    def time_fit(self, n, dtype):
        GroupedCalibrator(_isotonic()).fit(self.s, self.y, self.g)

    def time_global_fit(self, n, dtype):
        _isotonic().fit(self.s, self.y)

    def time_fit_weighted(self, n, dtype):
        GroupedCalibrator(_isotonic()).fit(self.s, self.y, self.g, sample_weight=self.w)

    def time_global_fit_weighted(self, n, dtype):
        _isotonic().fit(self.s, self.y, sample_weight=self.w)

    def time_predict(self, n, dtype):
        self.model.predict(self.s, self.g)

    def time_global_predict(self, n, dtype):
        self.global_model.predict(self.s)


#: The other 1-D calibrators a GroupedCalibrator wraps, by name.
OTHERS = {"platt": PlattScaling, "beta": BetaCalibration, "histogram": HistogramBinning, "venn_abers": VennAbers}


class GroupedOther:
    params = (SIZES[:3], list(OTHERS))
    param_names = ["n", "calibrator"]
    timeout = 900

    def setup(self, n, calibrator):
        self.s, self.y, self.g, self.w = _data(n, "float64")
        self.make = OTHERS[calibrator]
        m = warm_rows(n)
        GroupedCalibrator(self.make(), min_samples_per_group=1).fit(self.s[:m], self.y[:m], self.g[:m] % 16)
        GroupedCalibrator(self.make(), min_samples_per_group=1).fit(self.s[:m], self.y[:m], self.g[:m] % 16,
                                                                    sample_weight=self.w[:m])
        self.make().fit(self.s[:m], self.y[:m])
        self.make().fit(self.s[:m], self.y[:m], sample_weight=self.w[:m])

    def time_fit(self, n, calibrator):
        GroupedCalibrator(self.make()).fit(self.s, self.y, self.g)

    def time_global_fit(self, n, calibrator):
        self.make().fit(self.s, self.y)

    def time_fit_weighted(self, n, calibrator):
        GroupedCalibrator(self.make()).fit(self.s, self.y, self.g, sample_weight=self.w)

    def time_global_fit_weighted(self, n, calibrator):
        self.make().fit(self.s, self.y, sample_weight=self.w)


def side_by_side(n, rounds=5):
    """Median over ``rounds`` interleaved rounds of (grouped time) / (global time) for each case; prints them."""

    def timed(func):
        t0 = time.perf_counter()
        func()
        return time.perf_counter() - t0

    s, y, g, w = _data(n, "float64")
    grouped = GroupedCalibrator(_isotonic()).fit(s, y, g)
    global_model = _isotonic().fit(s, y)
    cases = {
        "isotonic fit": (lambda: GroupedCalibrator(_isotonic()).fit(s, y, g), lambda: _isotonic().fit(s, y)),
        "isotonic fit weighted": (lambda: GroupedCalibrator(_isotonic()).fit(s, y, g, sample_weight=w),
                                  lambda: _isotonic().fit(s, y, sample_weight=w)),
        "isotonic predict": (lambda: grouped.predict(s, g), lambda: global_model.predict(s)),
    }
    for name, make in OTHERS.items():
        cases[f"{name} fit"] = (lambda m=make: GroupedCalibrator(m()).fit(s, y, g), lambda m=make: m().fit(s, y))
        cases[f"{name} fit weighted"] = (lambda m=make: GroupedCalibrator(m()).fit(s, y, g, sample_weight=w),
                                         lambda m=make: m().fit(s, y, sample_weight=w))
    for ours, theirs in cases.values():  # compile or load every kernel first
        ours()
        theirs()
    print(f"load average {os.getloadavg()}")
    for name, (ours, theirs) in cases.items():
        times = [(timed(ours), timed(theirs)) for _ in range(rounds)]
        ratios = sorted(a / b for a, b in times)
        print(f"{name:24s} n={n:.0e} groups={len(np.unique(g))}: grouped/global ratio median "
              f"{ratios[len(ratios) // 2]:.2f} (rounds {', '.join(f'{r:.2f}' for r in ratios)}; "
              f"grouped {min(t[0] for t in times):.3f} s, global {min(t[1] for t in times):.3f} s best)")


if __name__ == "__main__":
    side_by_side(int(float(sys.argv[1])) if len(sys.argv) > 1 else 10**7)
