"""The engine API (fastcal._engine): the reference adapter ListRows, and reduce."""

import numpy as np
import pytest

from fastcal._engine import ListRows, Reduction, reduce


def _chunks(rng, sizes, weighted):
    return [(rng.random(n), rng.integers(0, 2, n).astype(np.uint8), rng.random(n) if weighted else None)
            for n in sizes]


def _take(c, j, bounds):
    keep = np.searchsorted(bounds, c[0], side="right") == j
    return tuple(None if col is None else col[keep] for col in c)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("sizes", [[0], [5], [7, 0, 13, 1], [100] * 6])
def test_partition_cuts_by_key_and_keeps_row_order(weighted, sizes):
    rng = np.random.default_rng(len(sizes))
    chunks = _chunks(rng, sizes, weighted)
    bounds = np.array([0.25, 0.5, 0.5000001, 0.9])
    parts = ListRows(chunks).partition(bounds).chunks
    assert len(parts) == bounds.shape[0] + 1
    for j, part in enumerate(parts):
        expected = [_take(c, j, bounds) for c in chunks]
        for i, col in enumerate(part):
            if expected[0][i] is None:
                assert col is None
            else:  # every row of range j, in chunk order then row order; nothing else
                np.testing.assert_array_equal(col, np.concatenate([e[i] for e in expected]))
                assert col.dtype == chunks[0][i].dtype
        lo = bounds[j - 1] if j else -np.inf
        hi = bounds[j] if j < bounds.shape[0] else np.inf
        assert np.all((part[0] >= lo) & (part[0] < hi))
    assert sum(p[0].shape[0] for p in parts) == sum(sizes)


def test_partition_compares_in_the_key_dtype():
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    parts = ListRows([(x,)]).partition(np.array([np.float32(0.2)], dtype=np.float32)).chunks
    assert parts[0][0].tolist() == [x[0]] and parts[1][0].tolist() == [x[1], x[2]]


def test_convert_map_and_reduce_run_in_chunk_order():
    rows = ListRows([(np.arange(3.0),), (np.arange(3.0, 5.0),)])
    converted, facts = rows.convert(lambda c, k: ((c[0] * k,), c[0].shape[0]), 2.0)
    assert facts == [3, 2]
    assert converted.map(lambda c: c[0].tolist()) == [[0.0, 2.0, 4.0], [6.0, 8.0]]
    total = Reduction(lambda c, p: float(np.sum(c[0] ** p)), lambda sums: sums, lambda sums: sum(sums))
    assert reduce(converted, total, 2) == 4.0 + 16.0 + 36.0 + 64.0
    assert reduce(converted, Reduction(lambda c: c[0].shape[0], sum)) == 5
    converted.release()
    assert converted.map(len) == []
