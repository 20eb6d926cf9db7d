"""Numba kernels behind :mod:`fastcal.smooth`: linear binning of (weight, label, residual) sums onto a fine grid.

The caller validates; these kernels assume clean, contiguous input
(probabilities in [0, 1], labels with nonzero = positive, non-negative
weights) and never check.

The grid has ``M`` cells of width ``h = 1 / M``; node ``b`` is the cell
centre ``x_b = (b + 1/2) h``. A prediction ``x`` between nodes ``j`` and ``j + 1``
(``u = x M - 1/2``, ``j = floor(u)``, ``theta = u - j``) puts ``1 - theta`` of
its sums on node ``j`` and ``theta`` on node ``j + 1`` (linear binning). Below
the first node (``x < h / 2``) it all goes to node 0, above the last to node
``M - 1``: the smoothing kernel is reflected at 0 and 1, so the mirror image of
node 0 at ``-h / 2`` is node 0 itself, and this is still linear binning.

Three additions per row, not six. Each chunk bins the weights of the
negatives and of the positives apart (channels :data:`SN`, :data:`SP`:
``W = SN + SP``, ``Y = SP``), so a row adds to its own class's channel at
two nodes. The residual sum of node ``b``, ``R_b = sum w (x - y) hat_b(x)``,
is not binned itself: it is ``x_b W_b - Y_b + sum w (x - x_b) hat_b(x)``, and
a row of bin ``j`` adds ``w theta (1 - theta) h`` to that last sum at node
``j`` and subtracts it at node ``j + 1``. So the third channel is
``D_j = sum_{bin j} w theta (1 - theta)`` (:data:`SD`), plus two scalars for
the rows beyond the end nodes (``sum w (u - j_end)``), and the last
:func:`merge` turns the merged sums into ``(W, Y, R)`` exactly (up to the
rounding of the sums): ``R_b = x_b W_b - Y_b + h (D_b - D_{b-1})`` (+ ``h``
times an end scalar at nodes 0 and ``M - 1``).

Determinism. Rows are cut into chunks of a fixed number of rows; chunk ``c``
writes its sums into slot ``c - first`` of a buffer of slots, and the slots
are added into the total in chunk order (:func:`merge`, which runs in
parallel over ranges of grid nodes: each node's additions keep their order).
Nothing depends on the thread count.
"""

from __future__ import annotations

import numpy as np

from .._core.jit import kernel

# Channels of the grid sums (the output of the last merge).
GW = 0  # sum of w                (the density of the predictions)
GY = 1  # sum of w * y            (the smoothed reliability curve)
GR = 2  # sum of w * (p - y)      (the smooth ECE)
NCHAN = 3
# Channels of a chunk's binned sums (the slots).
SN = 0  # sum of w over the negatives (y = 0)
SP = 1  # sum of w over the positives
SD = 2  # sum over the rows of bin j of w * theta * (1 - theta)


@kernel
def _deposit_rows(p, y, w, start, stop, acc, ends):
    # Branch-free: a row at or beyond an end node gets theta = 0 at node 0 (theta = 1 at node M - 2 for
    # node M - 1), so it adds its weight to the end node, zeros elsewhere, and its offset to the end sums.
    m = acc.shape[0]
    scale = np.float64(m)
    last = np.float64(m - 1)
    below = 0.0
    above = 0.0
    for i in range(start, stop):
        if w is None:
            wi = 1.0
        else:
            wi = np.float64(w[i])
        c = np.int64(y[i] != 0)  # SN = 0, SP = 1
        u = np.float64(p[i]) * scale - 0.5
        below += wi * min(u, 0.0)
        above += wi * max(u - last, 0.0)
        u = min(max(u, 0.0), last)
        j = min(int(u), m - 2)
        t = u - j
        s = 1.0 - t
        acc[j, c] += s * wi
        acc[j, SD] += (s * t) * wi
        acc[j + 1, c] += t * wi
    ends[0] += below
    ends[1] += above


@kernel
def deposit(p, y, w, chunk_rows, first, slots, ends, lo, hi):
    """Binned sums of chunks ``first + lo .. first + hi - 1`` (``chunk_rows`` rows each) into ``slots[lo:hi]``.

    ``slots``: shape ``(nslots, M, 3)``, channels ``SN, SP, SD``; ``ends``:
    shape ``(nslots, 2)``, the sums of ``w (u - j_end)`` of the rows beyond
    node 0 and node ``M - 1``. Each slot used is zeroed first.
    """
    n = p.shape[0]
    for s in range(lo, hi):
        acc = slots[s]
        acc[:, :] = 0.0
        ends[s, 0] = 0.0
        ends[s, 1] = 0.0
        start = (first + s) * chunk_rows
        stop = min(n, start + chunk_rows)
        _deposit_rows(p, y, w, start, stop, acc, ends[s])


@kernel
def merge(slots, used, total, accumulate, finish, below, above, out, lo, hi):
    """Add up the binned ``(SN, SP, SD)`` of ``total`` (if ``accumulate``) and ``slots[:used]``, in that order,
    for the nodes ``b`` in ``[lo, hi)``, into ``out``: the sums themselves, or with ``finish`` the grid sums
    ``(W_b, Y_b, R_b)``.

    ``W_b = SN_b + SP_b``, ``Y_b = SP_b``, ``R_b = x_b W_b - Y_b + h (D_b -
    D_{b-1})``, plus ``h * below`` at node 0 and ``h * above`` at node
    ``M - 1`` (``D_{-1} = D_{M-1} = 0``). ``out`` may be ``total`` when not
    ``finish``.
    """
    m = out.shape[0]
    h = 1.0 / m
    prev = -below
    if finish and lo > 0:
        prev = total[lo - 1, SD] + slots[0, lo - 1, SD] if accumulate else slots[0, lo - 1, SD]
        for s in range(1, used):
            prev += slots[s, lo - 1, SD]
    for b in range(lo, hi):
        if accumulate:
            nb = total[b, SN] + slots[0, b, SN]
            pb = total[b, SP] + slots[0, b, SP]
            db = total[b, SD] + slots[0, b, SD]
        else:
            nb = slots[0, b, SN]
            pb = slots[0, b, SP]
            db = slots[0, b, SD]
        for s in range(1, used):
            nb += slots[s, b, SN]
            pb += slots[s, b, SP]
            db += slots[s, b, SD]
        if not finish:
            out[b, SN] = nb
            out[b, SP] = pb
            out[b, SD] = db
            continue
        wb = nb + pb
        if b == m - 1:
            db = above
        out[b, GW] = wb
        out[b, GY] = pb
        out[b, GR] = ((b + 0.5) * h) * wb - pb + h * (db - prev)
        prev = db


@kernel
def restrict(src, dst):
    """Linear binning of the nodes of ``src`` (``2 m`` cells, one channel) onto the ``m`` cells of ``dst``.

    Coarse node ``k`` sits at ``(k + 1/2) H`` with ``H = 2 h``; the fine nodes
    ``2k`` and ``2k + 1`` lie ``H / 4`` from it, ``2k - 1`` and ``2k + 2`` lie
    ``3 H / 4`` from it: weights 3/4 and 1/4 (each fine node's weights add up to
    1 and keep its position, the mean). At the ends the fine node beyond the
    grid is the mirror image of the first (last) node itself, as in
    :func:`deposit`: fine node 0 gives all its sums to coarse node 0.
    """
    m = dst.shape[0]  # at least 2
    dst[0] = src[0] + 0.75 * src[1] + 0.25 * src[2]
    for k in range(1, m - 1):
        dst[k] = 0.25 * (src[2 * k - 1] + src[2 * k + 2]) + 0.75 * (src[2 * k] + src[2 * k + 1])
    dst[m - 1] = 0.25 * src[2 * m - 3] + 0.75 * src[2 * m - 2] + src[2 * m - 1]


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
