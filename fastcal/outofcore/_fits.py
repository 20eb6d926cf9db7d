"""The out-of-core fits: each public function reads its source (:mod:`fastcal.outofcore._sources`) and calls the
subject's driver over :class:`~fastcal.outofcore._rows.FileRows`."""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal, Unpack

from ..beta import rows as _beta_rows
from ..isotonic import rows as _isotonic
from ..metrics import rows as _metrics_rows
from ..platt import rows as _platt_rows
from ._rows import FileRows
from ._sources import array_source, budget_rows, parquet_source

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicParams, IsotonicRegression
    from ..platt import PlattScaling

    #: A 1-D array (a memory map included) or the path of a ``.npy`` file.
    ArrayOrPath = ArrayLike | str | os.PathLike[str]

__all__ = [
    "fit_beta",
    "fit_beta_parquet",
    "fit_beta_source",
    "fit_histogram",
    "fit_histogram_parquet",
    "fit_histogram_source",
    "fit_isotonic",
    "fit_isotonic_parquet",
    "fit_isotonic_source",
    "fit_platt",
    "fit_platt_parquet",
    "fit_platt_source",
]


# ---------------------------------------------------------------------------
# Isotonic regression, out of core.
# ---------------------------------------------------------------------------


def fit_isotonic_source(src, params, tmpdir, part_rows, score_name="X"):
    """The exact out-of-core isotonic fit of a :class:`Columns` source (the CLI's entry point too): the engine's
    driver (:func:`fastcal.isotonic._rows.fit_isotonic`) over :class:`FileRows`, partitions of about
    ``part_rows`` rows."""
    if not src.n:
        raise ValueError(f"{score_name} must have at least 1 element, got 0.")
    rows = FileRows(src, tmpdir)
    try:
        return _isotonic.fit_isotonic(rows, x_dtype=src.x_dtype, weighted=src.weighted,
                                      n_partitions=max(1, -(-src.n // part_rows)), **params)
    finally:
        rows.release()


def fit_isotonic(
    scores: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
    tmpdir: str | os.PathLike[str] | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """Fit :class:`fastcal.IsotonicRegression` on data read in chunks: equal to the in-memory fit.

    Parameters
    ----------
    scores, y : array-like or path
        1-D arrays (an ``np.memmap`` from ``np.load(path, mmap_mode="r")``
        is read chunk by chunk) or paths of ``.npy`` files (read with plain
        file reads, no map). Scores finite; labels finite (0/1 labels for
        calibration).
    sample_weight : array-like, path, float or None
        Non-negative weights, as in ``IsotonicRegression.fit``.
    memory_budget : int, optional
        Bytes of memory the fit may use for data (default 256 MiB): sets the
        chunk and partition sizes.
    chunk_rows : int, optional
        Rows per chunk read (default ``memory_budget // 64``).
    tmpdir : str, optional
        Directory for the partition files (default: the system's).
    **params
        ``IsotonicRegression`` parameters: ``y_min``, ``y_max``,
        ``increasing`` (True, False, or "auto" with 0/1 labels),
        ``out_of_bounds``, ``centered``.

    Returns
    -------
    IsotonicRegression
        Fitted; thresholds equal to an in-memory fit of the same data (the
        block means may differ in the last bits: sums are added in a
        different order).

    Notes
    -----
    Two passes over the data (validation and sampling; partitioning into
    temporary files), then two reads of the partitions (their heads, and
    with ``increasing="auto"`` Spearman's rho, exactly; the fit of each
    partition in score order), and, when bounds fall inside chains of tie
    groups, a rewrite of the partitions those bounds move through. See the module docstring for why the merge
    of the partitions' fits is exact.

    Examples
    --------
    >>> import numpy as np, os, tempfile
    >>> from fastcal import outofcore
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random(10_000); y = (rng.random(10_000) < x).astype(np.uint8)
    >>> d = tempfile.mkdtemp()
    >>> np.save(os.path.join(d, "x.npy"), x); np.save(os.path.join(d, "y.npy"), y)
    >>> iso = outofcore.fit_isotonic(os.path.join(d, "x.npy"), os.path.join(d, "y.npy"), chunk_rows=1000)
    >>> from fastcal import IsotonicRegression
    >>> bool(np.array_equal(iso.X_thresholds_, IsotonicRegression().fit(x, y).X_thresholds_))
    True
    """
    chunk_rows, part_rows = budget_rows(memory_budget, chunk_rows)
    src = array_source(scores, y, sample_weight, chunk_rows, "X")
    return fit_isotonic_source(src, params, tmpdir, part_rows)


def fit_isotonic_parquet(
    path: str | os.PathLike[str],
    score_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
    tmpdir: str | os.PathLike[str] | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """:func:`fit_isotonic` on columns of a Parquet file (pyarrow, the ``io`` extra).

    The file is read one batch of ``chunk_rows`` rows at a time; pyarrow
    decodes a row group at a time, so a row group (10^6 rows in files written
    by pyarrow's defaults) must fit in memory. Null values raise
    ``ValueError`` naming the column and the row.
    """
    chunk_rows, part_rows = budget_rows(memory_budget, chunk_rows)
    src = parquet_source(path, score_col, label_col, weight_col, chunk_rows)
    return fit_isotonic_source(src, params, tmpdir, part_rows)


# ---------------------------------------------------------------------------
# Platt scaling, in passes over chunks (the setup shared with beta calibration).
# ---------------------------------------------------------------------------


def fit_platt_source(src, max_iter, tol):
    """Platt scaling of a :class:`Columns` source in passes over its chunks (the CLI's entry point too).

    The engine's :func:`fastcal.platt._rows.fit_platt` over :class:`FileRows`:
    one pass over the chunks per Newton step, after the validation and the warm-start subsample.
    """
    if not src.n:
        raise ValueError("scores must have at least 1 element, got 0.")
    return _platt_rows.fit_platt(FileRows(src), x_dtype=src.x_dtype, weighted=src.weighted, max_iter=max_iter, tol=tol)


def fit_platt(
    scores: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> PlattScaling:
    """Fit :class:`fastcal.PlattScaling` on data read in chunks: equal to the in-memory fit (to ~1e-10).

    ``scores``, ``y``, ``sample_weight`` as in :func:`fit_isotonic` (arrays,
    memory maps or ``.npy`` paths); ``max_iter`` and ``tol`` as in
    :class:`fastcal.PlattScaling`. One pass validates the data, computes the
    class weights and score range, one more collects a subsample (at most
    2^20 rows, evenly spaced blocks) from which the Newton iterations start;
    each Newton iteration is then one pass over the chunks with the fused
    objective/gradient/Hessian kernel: about four passes in all.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = array_source(scores, y, sample_weight, chunk_rows, "scores")
    return fit_platt_source(src, max_iter, tol)


def fit_platt_parquet(
    path: str | os.PathLike[str],
    score_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> PlattScaling:
    """:func:`fit_platt` on columns of a Parquet file (pyarrow, the ``io`` extra)."""
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = parquet_source(path, score_col, label_col, weight_col, chunk_rows)
    return fit_platt_source(src, max_iter, tol)


# ---------------------------------------------------------------------------
# Beta calibration, in passes over chunks.
# ---------------------------------------------------------------------------


def fit_beta_source(src, parameters, max_iter, tol):
    """Beta calibration of a :class:`Columns` source in passes over its chunks (the CLI's entry point too).

    The engine's :func:`fastcal.beta._rows.fit_beta` over :class:`FileRows`, as :func:`fit_platt_source`.
    """
    if not src.n:
        raise ValueError("p must have at least 1 element, got 0.")
    return _beta_rows.fit_beta(FileRows(src), x_dtype=src.x_dtype, weighted=src.weighted, parameters=parameters,
                              max_iter=max_iter, tol=tol)


def fit_beta(
    p: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> BetaCalibration:
    """Fit :class:`fastcal.BetaCalibration` on data read in chunks: equal to the in-memory fit (to ~1e-10).

    ``p`` (probabilities), ``y``, ``sample_weight`` as in :func:`fit_isotonic`
    (arrays, memory maps or ``.npy`` paths); ``parameters``, ``max_iter`` and
    ``tol`` as in :class:`fastcal.BetaCalibration`. As :func:`fit_platt`: one
    pass validates the data, one collects a subsample for the warm start, then one
    pass per Newton iteration (two or three), and, for "abm" with a negative
    a or b, the passes of the refit.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = array_source(p, y, sample_weight, chunk_rows, "p")
    return fit_beta_source(src, parameters, max_iter, tol)


def fit_beta_parquet(
    path: str | os.PathLike[str],
    p_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> BetaCalibration:
    """:func:`fit_beta` on columns of a Parquet file (pyarrow, the ``io`` extra)."""
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = parquet_source(path, p_col, label_col, weight_col, chunk_rows)
    return fit_beta_source(src, parameters, max_iter, tol)


# ---------------------------------------------------------------------------
# Histogram binning: the bin table in one pass over the chunks (the quantile edges from passes of counts).
# ---------------------------------------------------------------------------


def fit_histogram_source(src, n_bins, strategy):
    """Histogram binning of a :class:`Columns` source (the CLI's entry point too): the engine's
    :func:`fastcal.metrics._rows.fit_histogram` over :class:`FileRows`."""
    if not src.n:
        raise ValueError("p must have at least 1 element, got 0.")
    rows = FileRows(src)
    try:
        return _metrics_rows.fit_histogram(rows, x_dtype=src.x_dtype, weighted=src.weighted, n_bins=n_bins,
                                           strategy=strategy)
    finally:
        rows.release()


def fit_histogram(
    p: ArrayOrPath,
    y: ArrayOrPath,
    sample_weight: ArrayOrPath | float | None = None,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> HistogramBinning:
    """Fit :class:`fastcal.HistogramBinning` on data read in chunks: equal to the in-memory fit.

    ``p`` (probabilities), ``y``, ``sample_weight`` as in :func:`fit_isotonic` (arrays, memory maps or ``.npy``
    paths); ``n_bins`` and ``strategy`` as in :class:`fastcal.HistogramBinning`. The bins are those of the in-memory
    fit (the "quantile" edges exactly the percentiles of all of ``p``, from passes of bucket counts), the bin table
    the chunks' tables added in chunk order: the values equal the in-memory fit's up to the order of the sums. The
    checks are the diagnostics' (their messages name ``y_prob`` and ``y_true``), as for
    :func:`fastcal.dask.fit_histogram`.
    """
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = array_source(p, y, sample_weight, chunk_rows, "p")
    return fit_histogram_source(src, n_bins, strategy)


def fit_histogram_parquet(
    path: str | os.PathLike[str],
    p_col: str,
    label_col: str,
    weight_col: str | None = None,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
    memory_budget: int | None = None,
    chunk_rows: int | None = None,
) -> HistogramBinning:
    """:func:`fit_histogram` on columns of a Parquet file (pyarrow, the ``io`` extra)."""
    chunk_rows, _ = budget_rows(memory_budget, chunk_rows)
    src = parquet_source(path, p_col, label_col, weight_col, chunk_rows)
    return fit_histogram_source(src, n_bins, strategy)
