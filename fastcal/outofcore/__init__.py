r"""Exact fits from data that does not fit in memory: ``.npy`` files and Parquet, read in chunks.

:func:`fit_isotonic` and :func:`fit_platt` take 1-D arrays (``np.memmap``
included) or paths of ``.npy`` files; :func:`fit_isotonic_parquet` and
:func:`fit_platt_parquet` take a Parquet file and column names (pyarrow, the
``io`` extra); :func:`fit_beta`, :func:`fit_histogram` and their ``_parquet`` twins likewise. They
return the same fitted :class:`fastcal.IsotonicRegression`,
:class:`fastcal.PlattScaling`, :class:`fastcal.BetaCalibration` and :class:`fastcal.HistogramBinning` as the
in-memory API, equal to an in-memory fit of the same data, while holding only a bounded part of it in memory.

Isotonic regression: partition by score, then merge
---------------------------------------------------
A first pass validates the data and takes an evenly strided sample of the
scores; the sample's quantiles cut the score range into partitions of about
``memory_budget / 64`` rows each. A second pass appends every chunk's rows to
the temporary file of their partition (an external bucket sort). Then the
partitions are read back one at a time, **in increasing score order**, and
each is summarised by the PAV steps (:func:`fastcal.isotonic._pav.summarise`,
on every thread); the blocks of the parts are pooled into the blocks of
the whole (:func:`fastcal.isotonic._pav.merge`) and finished by the estimator. This is exact because the
PAV blocks of a contiguous range of scores are unions of the blocks of the
whole fit, provided each part begins at the start of one of the fit's *tie
groups*: scikit-learn (and fastcal) pools scores closer than the dtype's
resolution :math:`\varepsilon` into one point, each group starting at the first
score at least :math:`\varepsilon` above the previous group's first score. A
partition that begins less than :math:`\varepsilon` above the previous one's
largest score (dense float32 data: :math:`\varepsilon = 10^{-6}`) has its first
rows, those within :math:`\varepsilon` of the previous partition's last group
start, moved to the previous partition before that one is fitted; the moved
rows are exactly the ones the whole fit would pool there. The same
partition-and-merge scheme, with the partitions on Dask workers, is
:func:`fastcal.dask.fit_isotonic`.

Platt scaling: chunked passes
-----------------------------
Each Newton iteration of :func:`fastcal.platt_scaling` needs the objective's
gradient and Hessian: sums over rows, which the fused Numba kernel computes
chunk by chunk and which are added up over the chunks. One pass over the file
per iteration (plus a few line-search passes, rarely); the iterations start
from the solution of a subsample (at most 2^20 rows) kept in memory, so a fit
takes about four passes (validation, the subsample, two or three Newton steps).

The algorithms are the subjects' drivers over a :class:`fastcal._engine.Rows`; this
package is their adapter, as :mod:`fastcal.dask` and :mod:`fastcal.spark` are:
:mod:`fastcal.outofcore._sources` reads the columns in chunks
(:class:`Columns`) and sizes them from the budget,
:mod:`fastcal.outofcore._rows` is the ``Rows`` (:class:`FileRows` streams the
chunks and keeps the partitions in temporary files), and
:mod:`fastcal.outofcore._fits` the public fits over them.

Memory
------
Memory use is bounded by ``memory_budget`` (bytes, default 256 MiB), not by
the size of the data: chunks of ``chunk_rows`` rows are read (default: the
budget / 64 bytes), and partitions are sized so that fitting one, plus the
rows carried over, stays within the budget. Paths of ``.npy`` files are read
with plain file reads, a chunk at a time (no memory map), so even the address
space stays bounded; an ``np.memmap`` you pass works as well (the OS pages it
in and out), but a map counts its whole size against an address space limit
(``RLIMIT_AS``). What must fit in memory is the result: the PAV blocks of the
whole fit (32 bytes each; a calibration map has thousands, but isotonic
regression of a strictly increasing target has one per distinct score), and a
Parquet row group. Disk: the partition files take about the size of the score,
label and weight columns, in ``tmpdir`` (default: the system's temporary
directory), and are removed when the fit ends, also when it fails.
"""

from .._exports import publish
from .._io import iter_npy, iter_parquet, npy_info  # the readers (npy_info: a .npy file's shape and dtype)
from ._fits import (
    fit_beta,
    fit_beta_parquet,
    fit_histogram,
    fit_histogram_parquet,
    fit_isotonic,
    fit_isotonic_parquet,
    fit_platt,
    fit_platt_parquet,
)

# The internal API of the command line and the warm-ups (documented in the modules): a source read in chunks and the
# sizes of a memory budget, the fits of a source, and the adapter's Rows.
from ._fits import fit_beta_source, fit_histogram_source, fit_isotonic_source, fit_platt_source
from ._rows import FileRows
from ._sources import DEFAULT_MEMORY_BUDGET, Columns, array_source, budget_rows, parquet_source

__all__ = [
    "fit_beta",
    "fit_beta_parquet",
    "fit_histogram",
    "fit_histogram_parquet",
    "fit_isotonic",
    "fit_isotonic_parquet",
    "fit_platt",
    "fit_platt_parquet",
    "iter_npy",
    "iter_parquet",
]

# The fits' public home, the name that pickles, reprs and the API reference show (the readers' is fastcal._io).
publish(globals(), ["fit_beta", "fit_beta_parquet", "fit_histogram", "fit_histogram_parquet", "fit_isotonic",
                    "fit_isotonic_parquet", "fit_platt", "fit_platt_parquet"])
