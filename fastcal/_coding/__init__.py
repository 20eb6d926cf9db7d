"""Numbering of values: groups (one column), segment features and cells (a row's value of every feature).

The one home of the coding that :mod:`fastcal.grouped` (one calibrator per
group), :mod:`fastcal.multicalibration` (the segment tools) and the backends'
segment drivers share: :mod:`fastcal._coding._values` on the passes of
:mod:`fastcal._coding._kernels`, and the groups of rows that no pass holds
whole (:mod:`fastcal._coding._rows`: the backends' numbering). Internal API
(documented in ``_values`` and ``_rows``):
"""

from ._kernels import count_values, counting_order  # the counting passes that lay grouped rows out (fastcal.grouped)
from ._rows import (
    CHANGED,
    GROUP_PARTITION_ROWS,
    Crossed,
    chunk_numbers,
    distinct_values,
    group_bounds,
    group_columns,
    number_chunk,
    number_groups,
    numbered,
)
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
    group_kinds,
    group_sizes_codes,
    kind_names,
    labels_by_appearance,
    binned_codes,
    bin_numbers,
    mixed_radix,
    numerical_codes,
    numerical_edges,
    quantile_edges,
    row_type,
    shown,
)

__all__ = [
    "bin_numbers",
    "binned_codes",
    "CHANGED",
    "Crossed",
    "GROUP_PARTITION_ROWS",
    "MISSING",
    "OTHER",
    "GroupColumns",
    "Sizes",
    "appearance_rank",
    "as_groups",
    "categorical_codes",
    "cell_numbers",
    "cell_type",
    "chunk_numbers",
    "collapse_categories",
    "count_values",
    "counting_order",
    "distinct_values",
    "feature_columns",
    "folded_values",
    "group_bounds",
    "group_codes",
    "group_columns",
    "group_kinds",
    "group_sizes_codes",
    "kind_names",
    "labels_by_appearance",
    "number_chunk",
    "number_groups",
    "numbered",
    "mixed_radix",
    "numerical_codes",
    "numerical_edges",
    "quantile_edges",
    "row_type",
    "shown",
]
