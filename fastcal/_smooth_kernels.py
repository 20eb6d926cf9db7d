"""Numba kernels behind :mod:`fastcal.smooth`: linear binning of (weight, label, residual) sums onto a fine grid.

The caller validates; these kernels assume clean, contiguous input
(probabilities in [0, 1], labels with nonzero = positive, non-negative
weights) and never check.

The grid has ``M`` cells of width ``h = 1 / M``; node ``b`` is the cell
centre ``(b + 1/2) h``. A prediction ``x`` between nodes ``j`` and ``j + 1``
(``u = x M - 1/2``, ``j = floor(u)``, ``theta = u - j``) puts ``1 - theta`` of
its sums on node ``j`` and ``theta`` on node ``j + 1`` (linear binning). Below
the first node (``x < h / 2``) it all goes to node 0, above the last to node
``M - 1``: the smoothing kernel is reflected at 0 and 1, so the mirror image of
node 0 at ``-h / 2`` is node 0 itself, and this is still linear binning.

Determinism. Rows are cut into chunks of a fixed number of rows; chunk ``c``
writes its sums into slot ``c - first`` of a buffer of slots, and the slots
are added into the total in chunk order (:func:`merge_slots`, which runs in
parallel over ranges of grid nodes: each node's additions keep their order).
Nothing depends on the thread count.
"""

from __future__ import annotations

import numpy as np

from ._jit import kernel

# Channels of the grid sums.
GW = 0  # sum of w                (the density of the predictions)
GY = 1  # sum of w * y            (the smoothed reliability curve)
GR = 2  # sum of w * (p - y)      (the smooth ECE)
NCHAN = 3


@kernel
def _deposit_rows(p, y, w, start, stop, acc):
    m = acc.shape[0]
    scale = np.float64(m)
    last = m - 1
    for i in range(start, stop):
        x = np.float64(p[i])
        if w is None:
            wi = 1.0
        else:
            wi = np.float64(w[i])
        yi = 1.0 if y[i] != 0 else 0.0
        wy = wi * yi
        wr = wi * (x - yi)
        u = x * scale - 0.5
        if u <= 0.0:
            acc[0, GW] += wi
            acc[0, GY] += wy
            acc[0, GR] += wr
            continue
        j = int(u)
        if j >= last:
            acc[last, GW] += wi
            acc[last, GY] += wy
            acc[last, GR] += wr
            continue
        t = u - j
        s = 1.0 - t
        acc[j, GW] += s * wi
        acc[j, GY] += s * wy
        acc[j, GR] += s * wr
        acc[j + 1, GW] += t * wi
        acc[j + 1, GY] += t * wy
        acc[j + 1, GR] += t * wr


@kernel
def deposit(p, y, w, chunk_rows, first, slots, lo, hi):
    """Grid sums of chunks ``first + lo .. first + hi - 1`` (``chunk_rows`` rows each) into ``slots[lo:hi]``.

    ``slots``: shape ``(nslots, M, NCHAN)``; each slot used is zeroed first.
    """
    n = p.shape[0]
    for s in range(lo, hi):
        acc = slots[s]
        acc[:, :] = 0.0
        start = (first + s) * chunk_rows
        stop = min(n, start + chunk_rows)
        _deposit_rows(p, y, w, start, stop, acc)


@kernel
def merge_slots(slots, used, total, lo, hi):
    """``total[b] += slots[0, b] + slots[1, b] + ... + slots[used - 1, b]``, in that order, for nodes ``b`` in ``[lo, hi)``."""
    for s in range(used):
        acc = slots[s]
        for b in range(lo, hi):
            for c in range(NCHAN):
                total[b, c] += acc[b, c]


@kernel
def abs_integral(values, h):
    """Integral over [0, 1] of |F|, F the piecewise-linear interpolant of ``values`` at the cell centres ``(j + 1/2) h``.

    Exact for that interpolant: a segment whose ends differ in sign
    contributes ``h (a^2 + b^2) / (2 (|a| + |b|))``. F is even about 0 and 1
    (reflecting ends), so the half cells at the ends are flat.
    """
    n = values.shape[0]
    total = 0.5 * (abs(values[0]) + abs(values[n - 1]))
    for j in range(n - 1):
        a = values[j]
        b = values[j + 1]
        if (a >= 0.0) == (b >= 0.0):
            total += 0.5 * abs(a + b)
        else:
            total += 0.5 * (a * a + b * b) / (abs(a) + abs(b))
    return h * total
