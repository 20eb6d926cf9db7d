"""One calibrator per group on Dask data: :func:`fit_grouped`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..grouped import rows as _grouped
from ._rows import aligned_columns, group_columns, with_columns

if TYPE_CHECKING:
    from ..grouped import GroupedCalibrator
    from .._typing import DaskData, DaskWeights


def fit_grouped(
    calibrator: Any,
    scores: DaskData,
    y: DaskData,
    groups: DaskData,
    *,
    sample_weight: DaskWeights = None,
    min_samples_per_group: int = 100,
    n_partitions: int | None = None,
) -> GroupedCalibrator:
    """Fit :class:`fastcal.GroupedCalibrator` on Dask data: one clone of ``calibrator`` per group.

    Equal to ``GroupedCalibrator(calibrator, min_samples_per_group=...).fit(scores, y, groups, sample_weight)``
    on the computed arrays: the same groups, counts and group models (the bits of the in-memory fits: each
    partition keeps its rows' order), and the global model of the calibrator's Dask fit (isotonic thresholds
    bit for bit, Platt and beta to ~1e-10, histogram tables to the rounding of their sums).

    Parameters
    ----------
    calibrator : IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning or None
        The calibrator cloned per group and fitted on all rows (None: ``IsotonicRegression(out_of_bounds="clip")``).
        Calibrators without a Dask fit (``VennAbers``, ``TemperatureScaling``) raise ``ValueError``.
    scores : dask.array.Array or dask.dataframe.Series
        Scores (probabilities in [0, 1] for beta calibration and histogram binning).
    y : dask.array.Array, dask.dataframe.Series or array-like
        0/1 labels.
    groups : dask.array.Array, dask.dataframe.Series or array-like, or several of them
        Each row's group: any hashable values (ints, strings; NaN and None are one group), aligned with
        ``scores`` as every ``fastcal.dask`` function aligns its columns. Several columns (a list or tuple of
        arrays or Series, a dict of them, or a Dask DataFrame of several columns) make each row's group the
        tuple of its values, as in memory: the same groups in the same order (each column numbered as one
        column is, the tuples that occur ordered by the first column, then the second...).
    sample_weight : dask or NumPy array, float, or None
        Non-negative weights.
    min_samples_per_group : int, default=100
        Fewest rows of a group with a calibrator of its own; smaller groups use the global fit.
    n_partitions : int, optional
        Partitions of whole groups the rows are shuffled into (default: one per 2^22 rows, at least one per
        worker thread); the result does not depend on it.

    Returns
    -------
    GroupedCalibrator
        Fitted; predict with :func:`fastcal.dask.predict` (``groups=``) or in memory.

    Notes
    -----
    One pass gathers each
    chunk's distinct groups and their rows (the numbering of :func:`segment_report`); the global model is the
    calibrator's own Dask fit (:func:`fit_isotonic`, :func:`fit_platt`, :func:`fit_beta`,
    :func:`fit_histogram`); then the rows are numbered by group, shuffled so that each partition holds whole
    groups, and each partition fits its groups with the in-memory per-group fits. Only the distinct values,
    their counts and the fitted models reach the client; a group's rows must fit in a worker's memory.
    """
    _grouped.check_grouped_calibrator(calibrator, "fastcal.dask.fit_grouped")  # before any pass
    cols = aligned_columns(scores, y, sample_weight, "scores", y_name="y")
    return _grouped.fit_grouped(**with_columns(cols, scores, group_columns(groups), "scores"), calibrator=calibrator,
                                min_samples_per_group=min_samples_per_group, n_partitions=n_partitions,
                                where="fastcal.dask.fit_grouped")
