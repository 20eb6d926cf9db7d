r"""Fixed-chunk reductions on fastcal's threads: the partial buffers and the in-order merge, written once.

A pass that reduces rows (a Newton step's gradient and Hessian, an EM
step's column sums, a preparation pass's counts and class weights) cuts
them into *chunks* of a fixed number of rows ``chunk_rows``, a constant of
its kernel module: chunk ``c`` holds rows
``[c * chunk_rows, min((c + 1) * chunk_rows, n))``, and there are
:func:`fastcal._core.parallel.n_chunks` of them (at least one, so that no rows still has a summary).
It is the in-memory form of the drivers' summarise → merge → finish
(:mod:`fastcal._engine`):

summarise
    The model's kernel (its per-row terms stay in its kernel module) writes
    the summary of chunk ``c`` into row ``c`` of one or more *partial
    buffers* (:class:`Partials`). It takes a range ``lo, hi`` of chunks as
    its last two arguments, just after the buffers, so that
    :func:`fastcal._core.parallel.parallel_for` runs ranges of chunks on any
    number of threads (:meth:`Partials.run`).
merge
    The rows of a buffer, in chunk order: :func:`merge_in_order` adds them
    one after another in float64, :func:`merge_exact` rounds their exact
    sum once (``math.fsum``, which no order changes). Integer counts, and
    minima and maxima, merge exactly in any order.
finish
    The caller's: the Newton direction, the EM map's new priors.

Exactness rule
--------------
The chunk bounds depend on the number of rows and on ``chunk_rows`` alone,
a chunk's summary on its own rows alone, and the merge on the rows of the
buffer in chunk order. So the result is the same bit for bit on any number
of threads and however the chunks are cut into tasks; never add up the
per-task results of a float reduction (their number depends on the
threads). :func:`merge_in_order` of ``m`` chunk sums adds at most ``m - 1``
roundings to each (Higham, *Accuracy and Stability of Numerical
Algorithms*, 4.2); :func:`merge_exact` one rounding in all.
"""

from __future__ import annotations

import math

import numpy as np

from .._core.parallel import n_chunks, parallel_for

__all__ = ["Partials", "merge_exact", "merge_in_order"]


def merge_in_order(buf):
    """The column sums of ``buf`` (``(n_chunks, k)``, or ``(n_chunks,)``: a scalar), added chunk after chunk in float64.

    Row after row into one running sum: the sequence of additions of ``np.add.accumulate`` along the chunks
    (``np.sum`` may add pairwise, or in blocks), without its ``(n_chunks, k)`` result; the sum starts from +0.0,
    so columns of -0.0 alone sum to +0.0.
    """
    total = np.array(buf[0], dtype=np.float64)
    for row in buf[1:]:
        total += row
    return total + 0.0


def merge_exact(buf):
    """The column sums of ``buf`` (``(n_chunks, k)``, or ``(n_chunks,)``: a float) correctly rounded (``math.fsum``)."""
    if buf.ndim == 1:
        return math.fsum(buf.tolist())
    return np.array([math.fsum(col) for col in buf.T.tolist()])


class Partials:
    """The partial buffers of a fixed-chunk reduction over ``n_rows`` rows, in chunks of ``chunk_rows`` rows.

    Parameters
    ----------
    n_rows, chunk_rows : int
        The rows, and the rows per chunk (the kernel module's constant).
    *widths : int or None
        One buffer per entry: ``(n_chunks, width)``, or ``(n_chunks,)`` for
        None (one number per chunk).
    dtypes : sequence of dtypes, optional
        The buffers' dtypes (default float64 for every buffer).

    Attributes
    ----------
    n : int
        The number of chunks, :func:`n_chunks`.
    bufs : list of ndarray
        The buffers, reused by every :meth:`run` (a Newton fit's passes
        share them).
    """

    __slots__ = ("bufs", "n", "n_rows")

    def __init__(self, n_rows, chunk_rows, *widths, dtypes=None):
        self.n_rows = int(n_rows)
        self.n = n_chunks(n_rows, chunk_rows)
        dtypes = dtypes or [np.float64] * len(widths)
        self.bufs = [np.empty(self.n if width is None else (self.n, width), dtype=dtype)
                     for width, dtype in zip(widths, dtypes)]

    def run(self, kernel, *args, work=None):
        """``kernel(*args, *bufs, lo, hi)`` on ranges of chunks covering them all, on fastcal's threads.

        ``work`` is the number of elements the pass reads (default: the
        rows), which decides how many tasks there are. Returns the kernel's
        per-task results in order: merge them exactly (integer counts) or not at all.
        """
        return parallel_for(kernel, self.n, *args, *self.bufs, rows=self.n_rows if work is None else work)
