"""asv benchmarks of fastcal.MulticalibrationCalibrator: its fit and predict on issue 40's case, at 1 and 2 threads.

The case is ``benchmarks.compare_multicalibration_fit.case("issue", n)``: three categorical features and one
numerical, 5-fold cross-fitting below 2.5 million effective rows. The thread count is a parameter, so that asv
records the one- and two-thread times side by side. ``python -m benchmarks.bench_multicalibration`` times every
benchmark once.
"""

from __future__ import annotations

import fastcal
from fastcal import MulticalibrationCalibrator

from ._harness import QUICK
from .compare_multicalibration_fit import case

ROWS = [10**3, 10**4] if QUICK else [10**4, 10**5, 10**6]
THREADS = [1, 2]


class MulticalibrationFit:
    params = (ROWS, THREADS)
    param_names = ["n", "threads"]
    timeout = 600

    def setup(self, n, threads):
        self.p, self.y, self.segments, self.numerical, _, _ = case("issue", n, 0)
        fastcal.set_num_threads(threads)
        self.model = MulticalibrationCalibrator().fit(self.p, self.y, self.segments, numerical=self.numerical)
        self.model.predict(self.p, self.segments)

    def teardown(self, n, threads):
        fastcal.set_num_threads(None)

    def time_fit(self, n, threads):
        MulticalibrationCalibrator().fit(self.p, self.y, self.segments, numerical=self.numerical)

    def time_predict(self, n, threads):
        self.model.predict(self.p, self.segments)


if __name__ == "__main__":
    import time

    for n in ROWS:
        for threads in THREADS:
            bench = MulticalibrationFit()
            bench.setup(n, threads)
            for name in ("time_fit", "time_predict"):
                t0 = time.perf_counter()
                getattr(bench, name)(n, threads)
                print(f"{name} n={n} threads={threads}: {time.perf_counter() - t0:.3f} s")
            bench.teardown(n, threads)
