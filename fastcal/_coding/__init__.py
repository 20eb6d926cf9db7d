"""Numbering of values: groups (one column), segment features and cells (a row's value of every feature).

The one home of the coding that :mod:`fastcal.grouped` (one calibrator per
group), :mod:`fastcal.multicalibration` (the segment tools) and the backends'
segment drivers share: :mod:`fastcal._coding._values` on the passes of
:mod:`fastcal._coding._kernels`. Internal API (documented in ``_values``):
"""

from ._values import (
    MISSING,
    OTHER,
    GroupColumns,
    Sizes,
    appearance_rank,
    as_groups,
    categorical_codes,
    cell_numbers,
    cell_type,
    collapse_categories,
    feature_columns,
    folded_values,
    group_codes,
    group_sizes_codes,
    labels_by_appearance,
    numerical_codes,
    quantile_edges,
    row_type,
)

__all__ = [
    "MISSING",
    "OTHER",
    "GroupColumns",
    "Sizes",
    "appearance_rank",
    "as_groups",
    "categorical_codes",
    "cell_numbers",
    "cell_type",
    "collapse_categories",
    "feature_columns",
    "folded_values",
    "group_codes",
    "group_sizes_codes",
    "labels_by_appearance",
    "numerical_codes",
    "quantile_edges",
    "row_type",
]
