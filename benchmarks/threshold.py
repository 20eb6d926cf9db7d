"""Where running a pass on several threads starts to pay: ``python -m benchmarks.threshold``.

For element-wise and reduction passes of fastcal (prior correction, the
finiteness check, the Platt prediction), times one call on ``n`` rows with one
thread and with every thread, side by side in one process, and prints the
ratio. :data:`fastcal._core.parallel.PARALLEL_MIN_SIZE` should sit where the ratio
crosses 1: below it, waking a worker costs more than it saves.
"""

from __future__ import annotations

import time

import numpy as np

from fastcal._core import parallel as _parallel
from fastcal.platt import _kernels as platt_kernels
from fastcal.prior import _kernels as prior_kernels
from fastcal._core.validation import count_nonfinite


def _passes(n):
    """``name: (kernel, args)`` of passes whose kernels take a row range ``lo, hi`` last."""
    p = np.random.default_rng(0).random(n)
    out = np.empty_like(p)
    return {
        "prior correction (binary)": (prior_kernels.binary_down, (p, out, 9.0, 0.0, 1.0)),
        "finiteness check": (count_nonfinite, (p,)),
        "Platt prediction": (platt_kernels.predict, (p, -1.5, 0.2, out)),
    }


def _cut(kernel, n, args, parts):
    """The kernel on ``parts`` ranges of ``[0, n)`` on fastcal's threads (``parts == 1``: one call here)."""
    bounds = _parallel.split(n, parts)
    return _parallel.run([(kernel, (*args, bounds[i], bounds[i + 1])) for i in range(parts)])


def _per_call(func, batch_time=2e-3, batches=7):
    """Best over ``batches`` of the mean time of one call, in batches of at least ``batch_time`` s (warm caches)."""
    func()
    k = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(k):
            func()
        if time.perf_counter() - t0 >= batch_time:
            break
        k *= 2
    best = float("inf")
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(k):
            func()
        best = min(best, (time.perf_counter() - t0) / k)
    return best


def main():
    threads = _parallel.get_num_threads()
    print(f"{'pass':28s}{'n':>10s}{'1 thread':>12s}{f'{threads} threads':>12s}{'speed-up':>10s}")
    for n in [1 << k for k in range(12, 22)]:
        for name, (kernel, args) in _passes(n).items():
            one = _per_call(lambda: _cut(kernel, n, args, 1))
            many = _per_call(lambda: _cut(kernel, n, args, threads))
            print(f"{name:28s}{n:>10d}{one * 1e6:>10.1f}us{many * 1e6:>10.1f}us{one / many:>9.2f}x")


if __name__ == "__main__":
    main()
