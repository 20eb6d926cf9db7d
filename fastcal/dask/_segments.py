"""ECCE, calibration ratio, report by segment and multicalibration error on Dask data."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..multicalibration import MulticalibrationCalibrator
from ..multicalibration import fit_rows as _fit_rows
from ..multicalibration import mce_rows as _mce_rows
from ..multicalibration import rows as _segments
from ._rows import aligned_columns, driver_args, group_columns, metric, metric_columns, segment_features, with_columns

if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    import dask.dataframe as dd

    from ..multicalibration import ECCEResult, MulticalibrationResult, SegmentReport
    from .._typing import DaskData, DaskWeights

# ---------------------------------------------------------------------------
# ECCE, calibration ratio, report by segment: the drivers of fastcal.multicalibration._rows.
# ---------------------------------------------------------------------------


def ecce(y_true: DaskData, y_prob: DaskData, *, sample_weight: DaskWeights = None,
         n_partitions: int | None = None) -> ECCEResult:
    """:func:`fastcal.ecce` of Dask data: the ECCE, its sigma and p-value.

    The rows are range-partitioned by probability with a shuffle (the
    isotonic fit's range partition: equal probabilities are never split),
    each partition returns its sum and the extremes of its running sums, and
    the client merges them in score order by prefix offsets. Equal to the in-memory result to the
    rounding of the float64 sums (about 1e-12 relative or better).
    ``n_partitions``: probability ranges (the result does not depend on it).
    """
    return metric(_segments.ecce, y_true, y_prob, sample_weight, n_partitions=n_partitions)


def calibration_ratio(y_true: DaskData, y_prob: DaskData, *, sample_weight: DaskWeights = None,
                      adjust_unjoined: bool = False) -> float:
    """:func:`fastcal.calibration_ratio` of Dask data: per-chunk sums, added on the client in chunk order."""
    return metric(_segments.calibration_ratio, y_true, y_prob, sample_weight, adjust_unjoined=adjust_unjoined)


def normalized_entropy(y_true: DaskData, y_prob: DaskData, *, sample_weight: DaskWeights = None) -> float:
    """:func:`fastcal.normalized_entropy` of Dask data: per-chunk log loss and weight sums (a one-bin table),
    added on the client in chunk order; the in-memory value to the rounding of those sums."""
    return metric(_segments.normalized_entropy, y_true, y_prob, sample_weight)


def proportional_ece(y_true: DaskData, y_prob: DaskData, *, n_bins: int = 40,
                     sample_weight: DaskWeights = None) -> float:
    """:func:`fastcal.proportional_ece` of Dask data: per-chunk bin tables of its bins, added on the client in
    chunk order; the in-memory value to the rounding of those sums."""
    return metric(_segments.proportional_ece, y_true, y_prob, sample_weight, n_bins=n_bins)


def segment_report(y_true: DaskData, y_prob: DaskData, groups: DaskData, *, sample_weight: DaskWeights = None,
                   n_bins: int = 10, n_partitions: int | None = None) -> SegmentReport:
    """:func:`fastcal.segment_report` of Dask data: one row per group, in the in-memory order.

    The groups are numbered as the in-memory function numbers the whole
    column (each chunk's distinct values, gathered on the client), the rows
    are shuffled so that each partition holds whole groups, and each
    partition runs the in-memory report on its rows. Equal to the in-memory report (``n``
    exactly; the rest to the rounding of a group's sums). ``groups``: a Dask
    array or Series (any values; NaN and None are one group), or several
    (a list of them, a dict, a Dask DataFrame of several columns): each
    group then the tuple of a row's values, in the in-memory order;
    ``n_partitions``: partitions of whole groups (the result does not depend
    on it).
    """
    cols = metric_columns(y_true, y_prob, sample_weight)
    return _segments.segment_report(**with_columns(cols, y_prob, group_columns(groups)), n_bins=n_bins,
                                    n_partitions=n_partitions)


def multicalibration_error(
    y_true: DaskData,
    y_prob: DaskData,
    segments: Mapping[str, DaskData] | dd.DataFrame,
    *,
    sample_weight: DaskWeights = None,
    numerical: Iterable[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 3,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
    n_partitions: int | None = None,
) -> MulticalibrationResult:
    """:func:`fastcal.multicalibration_error` of Dask data: the same segments, values and numbers.

    ``segments``: a mapping of names to Dask arrays or Series (or a Dask
    DataFrame of the features), aligned with ``y_prob``. The features' value
    orders, collapsed categories and quantile bins come from reductions on
    the client (the bins are the in-memory quantile bins of the whole
    column, exactly); each chunk's cells are summed; the per-segment running sums
    come from a range partition by probability, merged per segment by prefix
    offsets. Equal to the in-memory result
    (segments and counts exactly; the ECCEs to ~1e-12 relative).
    ``n_partitions``: probability ranges (the result does not depend on it).
    """
    features = segment_features(segments)
    cols = metric_columns(y_true, y_prob, sample_weight)
    rows = with_columns(cols, y_prob, {f"segments[{name!r}]": v for name, v in features.items()}) if features else \
        driver_args(cols)
    return _mce_rows.multicalibration_error(
        **rows, names=list(features), numerical=numerical, max_depth=max_depth,
        max_values_per_segment_feature=max_values_per_segment_feature,
        min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments, n_partitions=n_partitions)


def fit_multicalibration(
    scores: DaskData,
    y: DaskData,
    segments: Mapping[str, DaskData] | dd.DataFrame,
    *,
    sample_weight: DaskWeights = None,
    numerical: Iterable[str] = (),
    max_depth: int | None = 3,
    max_values_per_segment_feature: int = 6,
    min_samples_per_segment: int = 10,
    max_n_segments: int | None = 1000,
    n_buckets: int = 8,
    n_folds: int = 5,
) -> MulticalibrationCalibrator:
    """Fit :class:`fastcal.MulticalibrationCalibrator` on Dask data: the in-memory fit's model.

    ``segments``: a mapping of names to Dask arrays or Series (or a Dask DataFrame of the features), aligned with
    ``scores`` as :func:`multicalibration_error` aligns them; ``numerical`` and the other parameters are the
    estimator's. Equal to ``MulticalibrationCalibrator(...).fit(scores, y, segments, sample_weight=...,
    numerical=...)`` on the computed columns: the same feature tables, segments, score buckets and chosen penalty,
    the slope and offsets to the rounding of float64 sums (about 1e-12), so predictions agree to a few ulp.

    Notes
    -----
    The passes of :func:`multicalibration_error` number the features' values and give each chunk its cells; the
    score buckets are the exact quantiles of all the scores (two or three small reductions); one conversion,
    persisted, gives each row its pattern, logit and fold (a hash of its position in the whole column). Each
    Newton step is then one round: every chunk's sums per pattern, added on the client in chunk order, where the
    coordinate descent runs. Only those sums (patterns x folds x 3 numbers a chunk) reach the client.
    """
    template = MulticalibrationCalibrator(
        max_depth=max_depth, max_values_per_segment_feature=max_values_per_segment_feature,
        min_samples_per_segment=min_samples_per_segment, max_n_segments=max_n_segments, n_buckets=n_buckets,
        n_folds=n_folds)
    features = segment_features(segments)
    cols = aligned_columns(scores, y, sample_weight, "scores", y_name="y")
    extra = {f"segments[{name!r}]": v for name, v in features.items()}
    rows = with_columns(cols, scores, extra, "scores") if features else driver_args(cols)
    return _fit_rows.fit_multicalibration(**rows, names=list(features), numerical=numerical, calibrator=template)
