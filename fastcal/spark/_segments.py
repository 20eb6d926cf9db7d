"""ECCE, calibration ratio, report by segment, multicalibration error and fit of a DataFrame's columns: the drivers
of :mod:`fastcal.multicalibration._rows`, :mod:`fastcal.multicalibration._mce_rows` and
:mod:`fastcal.multicalibration._fit_rows` on a :class:`SparkRows`.

Internal API of :mod:`fastcal.spark._grouped`: :func:`needs_numbers` and :func:`group_numbers` (a group column
numbered in the JVM, in the in-memory order); :func:`several_columns`, :func:`numbered_columns` and
:func:`tuples_of` (several group columns, each numbered as one is; the engine crosses them)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..multicalibration import MulticalibrationCalibrator
from ..multicalibration import fit_rows as _fit_rows
from ..multicalibration import mce_rows as _mce_rows
from ..multicalibration import rows as _segments
from .._coding import MISSING, OTHER, group_codes
from ._buckets import temp_name
from ._rows import SparkRows, drive, drive_metric, pin_rows
from ._tasks import NUMPY_OF_SPARK, is_numeric

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ..multicalibration import ECCEResult, MulticalibrationResult, SegmentReport


# ---------------------------------------------------------------------------
# ECCE, calibration ratio, report by segment: the drivers of fastcal.multicalibration._rows.
# ---------------------------------------------------------------------------


def ecce(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    n_partitions: int | None = None,
) -> ECCEResult:
    """:func:`fastcal.ecce` of a DataFrame's columns: the ECCE, its sigma and p-value.

    The rows are range-partitioned by probability in the JVM (as
    :func:`fit_isotonic` does: equal probabilities are never split), each
    partition's task returns its sum and the extremes of its running sums, and
    the driver merges them in score order by prefix offsets: equal to the in-memory result to the
    rounding of the float64 sums. ``n_partitions``: probability ranges (the
    result does not depend on it).
    """
    return drive_metric(_segments.ecce, df, label_col, prob_col, weight_col, n_partitions=n_partitions)


def calibration_ratio(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    *,
    weight_col: str | None = None,
    adjust_unjoined: bool = False,
) -> float:
    """:func:`fastcal.calibration_ratio` of a DataFrame's columns: per-partition sums, added on the driver."""
    return drive_metric(_segments.calibration_ratio, df, label_col, prob_col, weight_col,
                        adjust_unjoined=adjust_unjoined)


def normalized_entropy(df: DataFrame, label_col: str, prob_col: str, *, weight_col: str | None = None) -> float:
    """:func:`fastcal.normalized_entropy` of a DataFrame's columns: per-partition log loss and weight sums (a
    one-bin table), added on the driver; the in-memory value to the rounding of those sums."""
    return drive_metric(_segments.normalized_entropy, df, label_col, prob_col, weight_col)


def proportional_ece(df: DataFrame, label_col: str, prob_col: str, *, weight_col: str | None = None,
                     n_bins: int = 40) -> float:
    """:func:`fastcal.proportional_ece` of a DataFrame's columns: per-partition bin tables of its bins, added on
    the driver; the in-memory value to the rounding of those sums."""
    return drive_metric(_segments.proportional_ece, df, label_col, prob_col, weight_col, n_bins=n_bins)


def _is_missing(value):
    """Whether a collected value is missing: null (None) or a float NaN."""
    return value is None or (isinstance(value, float) and value != value)


def _has_missing(df, name):
    """Whether column ``name`` of ``df`` holds a null, or a NaN if it is a float column (one job, stops early)."""
    col = F.col(name)
    missing = col.isNull()
    if isinstance(df.schema[name].dataType, (T.FloatType, T.DoubleType)):
        missing = missing | F.isnan(col)
    return bool(df.select(col).where(missing).limit(1).count())


def needs_numbers(df, fields, name):
    """Whether a group column is numbered in the JVM (:func:`group_numbers`): any non-numeric column, and a
    numeric one that holds missing values (null, NaN), which fastcal's chunks cannot hold."""
    if name not in fields:
        return False  # SparkRows names the argument in its error
    if type(fields[name].dataType) not in NUMPY_OF_SPARK:
        return True
    return _has_missing(df, name)


def group_numbers(df, group_col):
    """``(df with an int column numbering group_col, its name, the values by number)``.

    The distinct values are collected with the position of their first row (one small job) and ordered as
    :func:`fastcal.segment_report` orders the collected column: numbers sorted, other values (strings, dates,
    decimals: an object array in memory) in the order they first appear; the missing values, null and NaN, are
    one group, last (``None``), as in memory. Each row gets its value's number by a broadcast join.
    """

    position = temp_name("i")
    found = (df.select(F.col(group_col), F.monotonically_increasing_id().alias(position))  # partition, then row
             .groupBy(group_col).agg(F.min(position)).collect())
    values = [r[0] for r in found]
    present = [v for v in values if not _is_missing(v)]
    if type(df.schema[group_col].dataType) in NUMPY_OF_SPARK:
        ordered = group_codes(np.array(present), "groups")[1] if present else []
    else:
        ordered = [r[0] for r in sorted(found, key=lambda r: r[1]) if not _is_missing(r[0])]
    if len(present) < len(values):
        ordered.append(None)
    number = temp_name("g")
    value = temp_name("v")
    session = df.sparkSession
    table = session.createDataFrame([(v, i) for i, v in enumerate(ordered) if v is not None],
                                    T.StructType([T.StructField(value, df.schema[group_col].dataType),
                                                  T.StructField(number, T.LongType())]))
    out = df.join(F.broadcast(table), df[group_col] == table[value], "left").drop(value)
    if ordered and ordered[-1] is None:  # null and NaN (which the table does not hold) join no row
        out = out.withColumn(number, F.coalesce(F.col(number), F.lit(len(ordered) - 1).cast("long")))
    return out, number, ordered


def several_columns(group_col, label="group_col"):
    """The names of several group columns (a list or tuple of two names or more), else None: one column (a
    list of one name is that name, as in memory; a name is given as it is, for the caller's checks)."""
    if not isinstance(group_col, (list, tuple)):
        return None
    if not group_col:
        raise ValueError(f"{label} must name at least one column, got none.")
    for j, name in enumerate(group_col):
        if not isinstance(name, str):
            raise TypeError(f"{label}[{j}] must be a column name (str), got {type(name).__name__}.")
    if len(set(group_col)) != len(group_col):
        raise ValueError(f"{label} names a column twice: {list(group_col)}.")
    return list(group_col) if len(group_col) > 1 else None


def one_column(group_col):
    """The name of a group column given as a list of one (else ``group_col`` as it is)."""
    return group_col[0] if isinstance(group_col, (list, tuple)) and len(group_col) == 1 else group_col


def numbered_columns(df, names, label="group_col"):
    """``(df, columns, orders)``: the group columns ``names`` as the engine reads them: each as
    :func:`segment_report` reads one column (numbered in the JVM by :func:`group_numbers` when
    :func:`needs_numbers`, ``orders[j]`` its values by number; else as it is, ``orders[j]`` None).
    ``ValueError`` naming ``label[j]`` for a column ``df`` does not have."""
    fields = {f.name: f for f in df.schema.fields}
    for j, name in enumerate(names):
        if name not in fields:
            raise ValueError(f"{label}[{j}]={name!r} is not a column of the DataFrame; its columns are "
                             f"{list(fields)}.")
    columns, orders = [], []
    for name in names:
        if needs_numbers(df, fields, name):
            df, column, ordered = group_numbers(df, name)
            columns.append(column)
            orders.append(ordered)
        else:
            columns.append(name)
            orders.append(None)
    return df, columns, orders


def tuples_of(groups, orders):
    """The engine's groups of :func:`numbered_columns` (tuples of numbers or values) as the columns' values."""
    return [tuple(v if o is None else o[int(v)] for v, o in zip(g, orders)) for g in groups]


def _missing_as_nan(df, name):
    """``(df with a float column of name's values, null and NaN as NaN, its name)`` for a numerical feature."""
    col = F.col(name)
    float_type = "float" if isinstance(df.schema[name].dataType, T.FloatType) else "double"
    out = temp_name("x")
    return df.withColumn(out, F.when(col.isNull(), F.lit(float("nan"))).otherwise(col).cast(float_type)), out


def segment_report(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    group_col: str | Sequence[str],
    *,
    weight_col: str | None = None,
    n_bins: int = 10,
    n_partitions: int | None = None,
) -> SegmentReport:
    """:func:`fastcal.segment_report` of a DataFrame's columns: one row per group, in the in-memory order.

    The groups are numbered as the in-memory function numbers the whole
    column, the rows are shuffled so that each partition holds whole groups,
    and each partition's task runs the in-memory report on its rows: ``n`` exact, the rest to the rounding
    of a group's sums. A numeric or boolean ``group_col`` without missing
    values is used as it is; any other column is numbered first (one job to
    look for nulls and NaNs, one to collect the distinct values): numbers
    and strings in the order the in-memory function gives a NumPy array of
    them, other values (dates) sorted; the missing values (null, and NaN in
    a float column) are one group, last, ``None`` in ``groups``, as the
    in-memory function makes NaN and None one group.

    ``group_col`` may be a list of column names: each row's group is then
    the tuple of its values, as in memory given the collected columns (each
    column read as above, the tuples that occur ordered by the first
    column's order, then the second's...; a missing value is ``None`` in its
    place of the tuple).
    """
    names = several_columns(group_col)
    if names is not None:
        with pin_rows(df, (prob_col, label_col, weight_col, *names)) as df:
            if not isinstance(df, DataFrame):
                raise TypeError(f"df must be a pyspark.sql.DataFrame, got {type(df).__name__}.")
            numbered, columns, orders = numbered_columns(df, names)
            report = drive(_segments.segment_report, numbered, (prob_col, label_col, weight_col, *columns),
                           ("prob_col", "label_col", "weight_col", *(f"group_col[{j}]" for j in range(len(names)))),
                           pinned=True, n_bins=n_bins, n_partitions=n_partitions)
            return dataclasses.replace(report, groups=tuples_of(report.groups, orders))
    group_col = one_column(group_col)
    with pin_rows(df, (prob_col, label_col, weight_col, group_col)) as df:
        fields = {f.name: f for f in df.schema.fields} if isinstance(df, DataFrame) else {}
        labels = ("prob_col", "label_col", "weight_col", "group_col")
        if needs_numbers(df, fields, group_col):
            numbered, column, ordered = group_numbers(df, group_col)
            report = drive(_segments.segment_report, numbered, (prob_col, label_col, weight_col, column), labels,
                           pinned=True, n_bins=n_bins, n_partitions=n_partitions)
            return dataclasses.replace(report, groups=[ordered[int(g)] for g in report.groups])
        return drive(_segments.segment_report, df, (prob_col, label_col, weight_col, group_col), labels,
                     pinned=True, n_bins=n_bins, n_partitions=n_partitions)


def multicalibration_error(
    df: DataFrame,
    label_col: str,
    prob_col: str,
    segment_cols: str | Sequence[str],
    *,
    weight_col: str | None = None,
    numerical: str | Sequence[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 3,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
    n_partitions: int | None = None,
) -> MulticalibrationResult:
    """:func:`fastcal.multicalibration_error` of a DataFrame's columns, ``segment_cols`` the features.

    The features' value orders, collapsed categories and quantile bins come
    from reductions on the driver (the bins are the in-memory quantile bins
    of the whole column, exactly), each partition's cells are summed in its task,
    and the per-segment running sums come from a range partition by
    probability in the JVM, merged per segment by prefix offsets: the in-memory segments and counts
    exactly, the ECCEs to ~1e-12 relative. A non-numeric feature (strings) is
    numbered in the JVM first, as in :func:`segment_report`; its labels are
    its values (null: ``"__NA"``, collapsed values: ``"__OTHER"``, as in
    memory). A numeric feature with missing values (null, NaN: one job
    looks) is numbered likewise, its missing values ``"__NA"`` (collapsed
    values: ``"__OTHER"``, as in memory); a
    ``numerical`` one gets NaN for null, its own bin (``nan``), as in memory.
    """
    names = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols)
    with pin_rows(df, (prob_col, label_col, weight_col, *names)) as frame:
        return _multicalibration_error(
            frame, label_col, prob_col, names, weight_col=weight_col, numerical=numerical, max_depth=max_depth,
            max_values_per_segment_feature=max_values_per_segment_feature,
            min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments, n_partitions=n_partitions)


def _feature_rows(df, prob_col, label_col, weight_col, names, numerical, labels):
    """``(rows, numbered, fields)``: the :class:`SparkRows` of ``(prob_col, label_col, weight_col, *features)`` of a
    DataFrame that reads the same rows in every job (:func:`pin_rows`), each feature as the multicalibration error
    reads it; ``numbered``: name -> the values by number of the features numbered in the JVM first
    (:func:`group_numbers`); ``labels``: the first three columns' names in messages."""
    fields = {f.name: f for f in df.schema.fields} if isinstance(df, DataFrame) else {}
    frame, columns, numbered = df, [], {}
    numerical_names = {numerical} if isinstance(numerical, str) else set(numerical)
    for name in names:
        if name in numerical_names and name in fields and not is_numeric(fields[name].dataType):
            raise TypeError(f"segments[{name!r}] is in numerical and must be a numeric column, got "
                            f"{fields[name].dataType.simpleString()}.")
        if name in numerical_names and name in fields and is_numeric(fields[name].dataType):
            if isinstance(fields[name].dataType, T.DecimalType) or _has_missing(frame, name):  # a decimal: as double
                frame, column = _missing_as_nan(frame, name)
                columns.append(column)
            else:
                columns.append(name)
        elif needs_numbers(frame, fields, name):
            frame, column, ordered = group_numbers(frame, name)
            numbered[name] = ordered
            columns.append(column)
        else:
            columns.append(name)
    rows = SparkRows.from_columns(frame, (prob_col, label_col, weight_col, *columns),
                                  (*labels, *(f"segment_cols[{i}]" for i in range(len(names)))), pinned=True)
    return rows, numbered, fields


def _multicalibration_error(df, label_col, prob_col, names, *, weight_col, numerical, max_depth,
                            max_values_per_segment_feature, min_samples_per_segment, max_n_segments, n_partitions):
    """:func:`multicalibration_error` of a DataFrame that reads the same rows in every job (:func:`pin_rows`)."""
    rows, numbered, fields = _feature_rows(df, prob_col, label_col, weight_col, names, numerical,
                                           ("prob_col", "label_col", "weight_col"))
    try:
        result = _mce_rows.multicalibration_error(
            rows, x_dtype=rows.dtypes[0], weighted=weight_col is not None, names=names, numerical=numerical,
            max_depth=max_depth, max_values_per_segment_feature=max_values_per_segment_feature,
            min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments,
            n_partitions=n_partitions)
    finally:
        rows.release()
    if not numbered:
        return result

    def label(name, value):
        if name not in numbered:
            return value
        ordered = numbered[name]
        if value == -1:  # the collapsed values (the least number less 1, as for any numeric feature)
            present = [v for v in ordered if v is not None]
            numeric = type(fields[name].dataType) in NUMPY_OF_SPARK and len(present) == len(ordered)
            return min(present) - 1 if numeric else OTHER  # as in memory: "__OTHER" beside missing values
        original = ordered[int(value)]
        return MISSING if original is None else original

    values = [{name: label(name, v) for name, v in seg.items()} for seg in result.segment_values]
    return dataclasses.replace(result, segment_values=values)


def fit_multicalibration(
    df: DataFrame,
    score_col: str,
    label_col: str,
    segment_cols: str | Sequence[str],
    *,
    weight_col: str | None = None,
    numerical: str | Sequence[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 6,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
    n_buckets: int = 8,
    n_folds: int = 5,
) -> MulticalibrationCalibrator:
    """Fit :class:`fastcal.MulticalibrationCalibrator` on a DataFrame's columns, ``segment_cols`` the features.

    Equal to ``MulticalibrationCalibrator(...).fit(scores, y, segments, sample_weight=..., numerical=...)`` on the
    collected columns (in partition order): the same feature tables, segments, score buckets and chosen penalty,
    the slope and offsets to the rounding of float64 sums (about 1e-12). The features are read as
    :func:`multicalibration_error` reads them (strings, and numbers with nulls or NaN, numbered in the JVM first;
    the model holds their values); the folds are a hash of each row's position in partition order. Each Newton
    step is one ``mapInArrow`` job over the converted rows (cached), whose tasks return their sums per pattern;
    the coordinate descent runs on the driver. Apply the model with :func:`predict` (``segment_cols=``).
    """
    template = MulticalibrationCalibrator(
        max_depth=max_depth, max_values_per_segment_feature=max_values_per_segment_feature,
        min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments, n_buckets=n_buckets,
        n_folds=n_folds)
    names = [segment_cols] if isinstance(segment_cols, str) else list(segment_cols)
    with pin_rows(df, (score_col, label_col, weight_col, *names)) as frame:
        rows, numbered, _ = _feature_rows(frame, score_col, label_col, weight_col, names, numerical,
                                          ("score_col", "label_col", "weight_col"))
        try:
            return _fit_rows.fit_multicalibration(rows, x_dtype=rows.dtypes[0], weighted=weight_col is not None,
                                                  names=names, numerical=numerical, calibrator=template,
                                                  numbered=numbered)
        finally:
            rows.release()
