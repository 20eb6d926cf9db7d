"""fastcal.VennAbers against the venn-abers package on the same arrays, in one process (warm JIT, best of N).

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table; ``python -m benchmarks.compare_venn_abers`` prints them. The
task is the issue's: fit on n calibration rows, then predict n test rows.
The package's fit is quadratic in the worst case and takes minutes at 10^6
rows, so it runs once there.
"""

from __future__ import annotations

import warnings

import numpy as np

from fastcal import VennAbers

from ._harness import Row, best_of, miscalibrated_scores


def _peer(p_cal, y_cal, p_test):
    from venn_abers import VennAbers as PeerVennAbers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # its nanmin of all-NaN slices
        va = PeerVennAbers().fit(np.column_stack([1 - p_cal, p_cal]), y_cal.astype(np.float64))
        return va.predict_proba(np.column_stack([1 - p_test, p_test]))


def fit_predict_rows(n, repeat, peer_repeat):
    p_cal, y_cal = miscalibrated_scores(n, "float64", seed=0)
    p_test, _ = miscalibrated_scores(n, "float64", seed=1)
    VennAbers().fit(p_cal[:1000], y_cal[:1000]).predict_proba(p_test[:1000])  # warm the JIT
    ours = best_of(lambda: VennAbers().fit(p_cal, y_cal).predict_proba(p_test), repeat)
    peer = best_of(lambda: _peer(p_cal, y_cal, p_test), peer_repeat)
    got = VennAbers().fit(p_cal, y_cal).predict_proba(p_test)
    diff = float(np.max(np.abs(got - _peer(p_cal, y_cal, p_test)[0]))) if n <= 10**5 else None
    note = "same p" if diff == 0.0 else (f"max |diff| {diff:.1e}" if diff is not None else "")
    yield Row("venn_abers", "`VennAbers` fit + `predict_proba` (n calibration, n test rows)", n, ours,
              {"venn-abers `VennAbers`": peer}, note)


def rows(quick=False):
    """Rows for the comparison table (float64): quick=True uses tiny sizes."""
    if quick:
        yield from fit_predict_rows(2_000, 2, 1)
        return
    yield from fit_predict_rows(10**5, 3, 2)
    yield from fit_predict_rows(10**6, 3, 1)


def main(quick=False):  # pragma: no cover - manual run
    for row in rows(quick):
        peers = ", ".join(f"{name} {t:.4f} s ({t / row.ours:.2f}x)" for name, t in row.peers.items())
        print(f"{row.task:55s} n={row.n:>11,d}  fastcal {row.ours:.4f} s | {peers} | {row.note}")


if __name__ == "__main__":  # pragma: no cover
    import sys

    main(quick="--quick" in sys.argv)
