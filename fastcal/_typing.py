"""The option sets and result types of fastcal's overloaded signatures, kept in one place.

A function whose return type changes with a flag (``return_counts=True``
adds the counts, ``multiclass="classwise"`` returns one curve a class, a
given ``ax`` may be a subfigure's) is declared with ``typing.overload``: one
short declaration a flag value, naming only the flags, and the options they
share as ``**options: Unpack[...]`` of a ``TypedDict`` defined here, once.
:mod:`fastcal.dask`'s column types are here too: which inputs give a dask
Series and which a dask array is what its overloads say. The
implementation keeps its explicit parameters and defaults (what the
documentation shows); ``tests/test_typing.py`` checks that every overload
accepts exactly the implementation's parameters, and runs mypy on a user's
code.

Imported only by type checkers (under ``if TYPE_CHECKING:``): nothing here
runs when fastcal is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypedDict, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

if TYPE_CHECKING:
    import dask.array as da
    import dask.dataframe as dd
    from matplotlib.axes import Axes

__all__ = [
    "AUCOptions",
    "ArrayOutput",
    "BinOptions",
    "Counts",
    "Curve",
    "CurveOptions",
    "CurveWithCounts",
    "DaskArrayInput",
    "DaskBinOptions",
    "DaskColumn",
    "DaskData",
    "DaskSeriesInput",
    "DaskWeights",
    "ECEOptions",
    "HistogramOptions",
    "Priors",
    "PyScalar",
    "ReliabilityOptions",
    "ScalarOutput",
]

W = TypeVar("W")

#: A reliability curve: ``(prob_true, prob_pred)``.
Curve: TypeAlias = tuple[NDArray[np.float64], NDArray[np.float64]]
#: Its bins' sizes: counts (int64), or total weights (float64) with ``sample_weight``.
Counts: TypeAlias = NDArray[np.int64] | NDArray[np.float64]
#: ``(prob_true, prob_pred, counts)``, with ``return_counts=True``.
CurveWithCounts: TypeAlias = tuple[NDArray[np.float64], NDArray[np.float64], Counts]
#: A Python or NumPy integer or a Python float: element-wise functions return a ``np.float64`` for it.
PyScalar: TypeAlias = float | np.integer[Any]
#: Class priors: a binary problem's positive-class prior, or one prior a class.
Priors: TypeAlias = float | ArrayLike


class ScalarOutput(TypedDict, total=False):
    """The options of an element-wise function of probabilities (:func:`fastcal.correct_negative_sampling`,
    :func:`fastcal.adjust_priors`) given a scalar, which returns a NumPy scalar."""

    out: None


class ArrayOutput(TypedDict, total=False):
    """The same function's options given an array: the result may be written into ``out``."""

    out: NDArray[np.floating] | None


class BinOptions(TypedDict, Generic[W], total=False):
    """The binning options of a reliability curve, in memory and on Dask; ``W`` is the type of the weights."""

    pos_label: float | str | None
    n_bins: int
    strategy: Literal["uniform", "quantile"]
    sample_weight: W


# fastcal.dask: its columns, and the inputs that decide what its element-wise functions return. The Dask names
# are strings, read by type checkers only (dask is imported above for them, never at run time).

#: A column of Dask data: a 1-D dask array, a dask Series, or a dask DataFrame of one column.
DaskColumn: TypeAlias = "da.Array | dd.Series | dd.DataFrame"
#: What :mod:`fastcal.dask`'s functions take for a column: Dask data, or (small arguments) NumPy arrays.
DaskData: TypeAlias = "DaskColumn | ArrayLike"
#: Their ``sample_weight``: a column, one number for every row, or None.
DaskWeights: TypeAlias = "DaskData | float | None"
#: The inputs for which :func:`fastcal.dask.predict` and :func:`fastcal.dask.correct_negative_sampling`
#: return a dask Series (partitions and index kept)...
DaskSeriesInput: TypeAlias = "dd.Series | dd.DataFrame"
#: ... and those for which they return a dask array (chunks kept).
DaskArrayInput: TypeAlias = "da.Array | ArrayLike"


class DaskBinOptions(BinOptions["DaskWeights"], total=False):
    """:func:`fastcal.dask.calibration_curve`'s options other than ``return_counts``."""


class CurveOptions(BinOptions[ArrayLike | None], total=False):
    """:func:`fastcal.calibration_curve`'s options other than ``return_counts`` and ``multiclass``."""

    labels: ArrayLike | None


class ECEOptions(CurveOptions, total=False):
    """:func:`fastcal.expected_calibration_error`'s options other than ``multiclass``."""

    norm: Literal["l1", "l2", "max"]


class AUCOptions(TypedDict, total=False):
    """:func:`fastcal.roc_auc_score`'s options other than ``average``."""

    sample_weight: ArrayLike | None
    max_fpr: float | None
    multi_class: Literal["raise", "ovr", "ovo"]
    labels: ArrayLike | None
    pos_label: float | str | None


class ReliabilityOptions(TypedDict, total=False):
    """:func:`fastcal.plot.reliability_diagram`'s options other than ``ax``."""

    method: Literal["binned", "corp", "smooth"]
    n_bins: int
    strategy: Literal["uniform", "quantile"]
    sample_weight: ArrayLike | None
    pos_label: float | str | None
    labels: ArrayLike | None
    n_resamples: int
    level: float
    band: Literal["consistency", "confidence"]
    random_state: int | np.random.Generator | None
    bandwidth: float | None
    show_decomposition: bool | None
    hist_ax: Axes | None
    show_histogram: bool
    hist_bins: int
    hist_log: bool
    title: str | None
    figsize: tuple[float, float]


class HistogramOptions(TypedDict, total=False):
    """:func:`fastcal.plot.probability_histogram`'s options other than ``ax``."""

    base_rate: float | None
    bins: int
    range: tuple[float, float]
    sample_weight: ArrayLike | None
    density: bool
    log: bool
    title: str | None
    figsize: tuple[float, float]
