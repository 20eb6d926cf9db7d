"""fastcal._engine.chunked, the fixed-chunk reductions: the chunk count, the two merges, and a pass on any thread count."""

import math

import numpy as np
import pytest

from fastcal.platt import _kernels as kernels
from fastcal._core.parallel import n_chunks
from fastcal._engine.chunked import Partials, merge_exact, merge_in_order

from .threads import serial_and_parallel


@pytest.mark.parametrize("n, size, want", [(0, 8, 1), (1, 8, 1), (8, 8, 1), (9, 8, 2), (17, 8, 3), (10**9, 1 << 14, 61036)])
def test_n_chunks_is_the_ceiling_and_at_least_one(n, size, want):
    assert n_chunks(n, size) == want


def test_merge_in_order_adds_chunk_after_chunk():
    # Terms whose float64 sum depends on the order: 1, then 2**-53 many times (each lost against 1), then -1.
    buf = np.array([[1.0, 0.0], *([[2.0**-53, 1.0]] * 5), [-1.0, -0.0]])
    acc = [0.0, 0.0]
    for row in buf.tolist():
        acc = [a + r for a, r in zip(acc, row)]
    got = merge_in_order(buf)
    assert got.tolist() == acc == [0.0, 5.0]  # in order: the small terms are lost
    assert merge_exact(buf).tolist() == [5 * 2.0**-53, 5.0]  # exactly rounded: they are kept
    assert merge_in_order(buf[:, 0]) == 0.0 and merge_exact(buf[:, 0]) == math.fsum(buf[:, 0].tolist())
    assert math.copysign(1.0, merge_in_order(np.array([[-0.0]]))[0]) == 1.0  # a sum from +0.0, as a loop's


def test_partials_pass_is_the_same_on_any_thread_count():
    rng = np.random.default_rng(0)
    n = 5 * kernels.CHUNK + 17
    s, y = rng.normal(size=n), (rng.random(n) < 0.3).astype(np.uint8)

    def run():
        part = Partials(n, kernels.CHUNK, kernels.N_STATS)
        part.run(kernels.newton_pass, s, y, None, 0.0, 0.5, -0.3, 0.2, 0.9, 0.1, 0.2, 0.8, True)
        return part.bufs[0].copy(), merge_in_order(part.bufs[0])

    (buf1, sums1), (buf2, sums2) = serial_and_parallel(run)
    assert buf1.shape == (6, kernels.N_STATS)
    assert buf1.tobytes() == buf2.tobytes() and sums1.tobytes() == sums2.tobytes()


def test_partials_buffers():
    part = Partials(10, 4, 3, None, dtypes=(np.int64, np.float64))
    assert part.n == 3 and [b.shape for b in part.bufs] == [(3, 3), (3,)]
    assert [b.dtype for b in part.bufs] == [np.int64, np.float64]
