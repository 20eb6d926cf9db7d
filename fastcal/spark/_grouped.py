"""One calibrator per group on a DataFrame's columns: :func:`fit_grouped`, the engine's driver on a
:class:`SparkRows`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import DataFrame

from ..grouped import rows as _grouped
from ._rows import drive, pin_rows
from ._segments import group_numbers, needs_numbers, numbered_columns, one_column, several_columns, tuples_of

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..grouped import GroupedCalibrator


def fit_grouped(
    calibrator: Any,
    df: DataFrame,
    score_col: str,
    label_col: str,
    group_col: str | Sequence[str],
    *,
    weight_col: str | None = None,
    min_samples_per_group: int = 100,
    n_partitions: int | None = None,
) -> GroupedCalibrator:
    """Fit :class:`fastcal.GroupedCalibrator` on a DataFrame's columns: one clone of ``calibrator`` per group.

    Equal to ``GroupedCalibrator(calibrator, min_samples_per_group=...).fit`` on the collected columns: the same
    groups (in the same order), counts and group models (each the in-memory fit of its group's rows, in the
    order Spark's shuffle delivers them: isotonic thresholds and histogram bins exactly, sums to their
    rounding), and the global model of the calibrator's Spark fit (isotonic thresholds bit for bit, Platt and
    beta to ~1e-10).

    Parameters
    ----------
    calibrator : IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning or None
        Cloned per group and fitted on all rows (None: ``IsotonicRegression(out_of_bounds="clip")``).
        Calibrators without a Spark fit (``VennAbers``, ``TemperatureScaling``) raise ``ValueError``.
    df : pyspark.sql.DataFrame
    score_col : str
        The scores (probabilities in [0, 1] for beta calibration and histogram binning).
    label_col : str
        0/1 labels.
    group_col : str
        Each row's group: a numeric, boolean or string (or other) column. Non-numeric columns, and numeric ones
        with nulls or NaN, are numbered in the JVM first as :func:`segment_report` numbers them (numbers and
        strings in the in-memory order, other values sorted; null and NaN one group, last, ``None`` in
        ``groups_``). A list of column names: each row's group is the tuple of its values, each column read
        as one column is, the tuples in the in-memory order (by the first column's order, then the second's...;
        a missing value ``None`` in its place), as ``GroupedCalibrator.fit`` given the collected columns.
    weight_col : str, optional
        Non-negative weights.
    min_samples_per_group : int, default=100
        Fewest rows of a group with a calibrator of its own; smaller groups use the global fit.
    n_partitions : int, optional
        Partitions of whole groups (default: one per 2^22 rows, at least ``spark.default.parallelism``); the
        result does not depend on it.

    Returns
    -------
    GroupedCalibrator
        Fitted; predict with :func:`fastcal.spark.predict` (``group_col=``, the same columns), in the JVM.

    Notes
    -----
    One job collects each partition's distinct
    groups and their rows; the global model is the calibrator's own Spark fit; then the rows, numbered by
    group, are shuffled in the JVM so that each partition holds whole groups, and each task fits its groups
    with the in-memory per-group fits and returns the models. Nothing but distinct values, counts and models
    reaches the driver; a group's rows must fit in a task's memory.
    """
    _grouped.check_grouped_calibrator(calibrator, "fastcal.spark.fit_grouped")  # before any job
    kwargs = {"calibrator": calibrator, "min_samples_per_group": min_samples_per_group,
              "n_partitions": n_partitions, "where": "fastcal.spark.fit_grouped", "pinned": True}
    names = several_columns(group_col)
    if names is not None:
        labels = ("score_col", "label_col", "weight_col", *(f"group_col[{j}]" for j in range(len(names))))
        with pin_rows(df, (score_col, label_col, weight_col, *names)) as df:
            if not isinstance(df, DataFrame):
                raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}.")
            numbered, columns, orders = numbered_columns(df, names)
            fitted = drive(_grouped.fit_grouped, numbered, (score_col, label_col, weight_col, *columns), labels,
                           **kwargs)
            fitted.groups_ = tuples_of(fitted.groups_, orders)
            return fitted
    group_col = one_column(group_col)
    labels = ("score_col", "label_col", "weight_col", "group_col")
    with pin_rows(df, (score_col, label_col, weight_col, group_col)) as df:
        fields = {f.name: f for f in df.schema.fields} if isinstance(df, DataFrame) else {}
        if needs_numbers(df, fields, group_col):
            numbered, column, ordered = group_numbers(df, group_col)
            fitted = drive(_grouped.fit_grouped, numbered, (score_col, label_col, weight_col, column), labels,
                           **kwargs)
            fitted.groups_ = [ordered[int(g)] for g in fitted.groups_]
            return fitted
        return drive(_grouped.fit_grouped, df, (score_col, label_col, weight_col, group_col), labels, **kwargs)
