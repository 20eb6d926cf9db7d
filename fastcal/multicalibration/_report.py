"""The report by segment: one row of calibration and discrimination metrics per group, in one pass."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _kernels as _k
from ._kuiper_kernels import kuiper_sf_many
from .._core.parallel import parallel_for, split, task_bounds
from .._core.results import Result, worst_first
from .._engine.sort import argsort
from .._core.validation import check_consistent_length
from .._coding import Sizes, as_groups, group_codes
from ._ecce import check_int, check_scaled_inputs, sigma_of

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray


# ---------------------------------------------------------------------------
# the report by segment
# ---------------------------------------------------------------------------
@dataclass(frozen=True, eq=False, repr=False)
class SegmentReport(Result):
    """One row of calibration diagnostics per group (see :func:`segment_report`); ``to_pandas()`` gives a DataFrame."""

    groups: list[Any]
    n: NDArray[np.int64]
    weight_sum: NDArray[np.float64]
    base_rate: NDArray[np.float64]
    mean_prediction: NDArray[np.float64]
    calibration_ratio: NDArray[np.float64]
    ece: NDArray[np.float64]
    ecce: NDArray[np.float64]
    ecce_sigma: NDArray[np.float64]
    pvalue: NDArray[np.float64]
    brier: NDArray[np.float64]
    log_loss: NDArray[np.float64]
    auc: NDArray[np.float64]

    def to_pandas(self) -> Any:
        """The report as a pandas DataFrame, one row per group (needs pandas)."""
        import pandas as pd

        columns = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "groups"}
        return pd.DataFrame({"group": pd.Series(self.groups, dtype=object), **columns})

    def worst(self, k: int | None = None, by: str = "ecce_sigma") -> SegmentReport:
        """The report with its groups in order of ``by``, greatest first, NaN last: the ``k`` worst (all if None).

        ``by`` is a column; ties keep the report's order. ``str(report)`` prints
        the groups in this order.

        Examples
        --------
        >>> import numpy as np
        >>> from fastcal import segment_report
        >>> rng = np.random.default_rng(0)
        >>> p = rng.uniform(0.1, 0.9, 30_000)
        >>> country = rng.choice(["de", "fr", "us"], 30_000)
        >>> y = rng.uniform(size=30_000) < np.where(country == "fr", p ** 2, p)
        >>> segment_report(y, p, country).worst(1).groups
        ['fr']
        """
        columns = [f.name for f in dataclasses.fields(self) if f.name != "groups"]
        if by not in columns:
            raise ValueError(f"by must be one of {columns}, got {by!r}.")
        order = worst_first(getattr(self, by), k)
        return dataclasses.replace(self, groups=[self.groups[i] for i in order],
                                   **{name: getattr(self, name)[order] for name in columns})

    def __str__(self) -> str:
        """The table, every column under its full name (``weight_sum`` when it is not ``n``), the groups worst
        first (by ``ecce_sigma``)."""
        shown = self.worst()
        names = [f.name for f in dataclasses.fields(self) if f.name != "groups"
                 and not (f.name == "weight_sum" and np.array_equal(self.weight_sum, self.n))]  # unweighted
        groups = [str(g) for g in shown.groups]
        first = max([len("group"), *map(len, groups)])
        cells = [[f"{int(v):d}" if name == "n" else f"{v:.4g}" for v in getattr(shown, name)] for name in names]
        widths = [max([len(name), *map(len, column)]) for name, column in zip(names, cells)]
        lines = ["groups worst first (by ecce_sigma)",
                 f"{'group':>{first}}" + "".join(f"  {name:>{w}}" for name, w in zip(names, widths))]
        for i, g in enumerate(groups):
            lines.append(f"{g:>{first}}" + "".join(f"  {column[i]:>{w}}" for column, w in zip(cells, widths)))
        return "\n".join(lines)


def segment_report(y_true: ArrayLike, y_prob: ArrayLike, groups: ArrayLike, *,
                   sample_weight: ArrayLike | None = None, n_bins: int = 10) -> SegmentReport:
    r"""Calibration diagnostics of each group of rows, in one pass: one row per group.

    For the rows of each group (weights :math:`w`, default 1, :math:`W = \sum w`):
    ``n``, ``weight_sum`` :math:`W`, ``base_rate`` :math:`\sum w y / W`,
    ``mean_prediction`` :math:`\sum w p / W`, ``calibration_ratio``
    :math:`\sum w p / \sum w y` (:func:`calibration_ratio`; NaN without a
    positive), ``ece`` (:func:`fastcal.expected_calibration_error` with
    ``n_bins`` uniform bins), ``ecce``, ``ecce_sigma`` and ``pvalue``
    (:func:`ecce`), ``brier`` (:func:`fastcal.brier_score_loss`),
    ``log_loss`` (:func:`fastcal.log_loss`, scikit-learn's clipping) and ``auc``
    (:func:`fastcal.roc_auc_score`, ties counting half; NaN unless both
    classes are present). Each equals the single metric on the group's rows,
    up to the order of the float64 sums.

    One stable sort of the predictions, one counting sort that moves the
    rows to their groups (the rows of each group then follow in order of
    prediction; the rows of one prediction are put in an order of their
    own), and one pass over the groups, each in tasks cut by the number of
    groups and rows alone: the same bits at any thread count and for the
    rows in any order. A group of zero
    weight has NaN for every column but ``n`` and ``weight_sum``.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Labels in {0, 1}.
    y_prob : array-like of shape (n_samples,)
        Predicted probabilities in [0, 1].
    groups : array-like of shape (n_samples,) or several columns
        The group of each row: any hashable values (ints, strings, a pandas
        categorical; NaN and None are one group); or several columns whose
        values together make a row's group, each group then the tuple of its
        values: a 2-D array of shape (n_samples, m), a pandas DataFrame, a
        dict of columns or a list of 1-D arrays.
    sample_weight : array-like of shape (n_samples,), optional
        Non-negative weights.
    n_bins : int, default=10
        Uniform bins of the ECE.

    Returns
    -------
    SegmentReport
        ``groups`` (in the order of :func:`group_codes`) and one array per column.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import segment_report
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.1, 0.9, 10_000)
    >>> country = rng.choice(["fr", "de"], 10_000)
    >>> y = rng.uniform(size=10_000) < np.where(country == "fr", p ** 2, p)
    >>> r = segment_report(y, p, country)
    >>> r.groups, r.pvalue < 1e-6
    (['de', 'fr'], array([False,  True]))
    """
    # weights times a power of two (rescale_weights), as they are moved: the same bits at any scale of sample_weight
    y, p, w, factor, exponent = check_scaled_inputs(y_true, y_prob, sample_weight)
    g = as_groups(groups, "groups")
    check_consistent_length(y_prob=p, groups=g)
    n_bins = check_int(n_bins, "n_bins", 1)
    codes, uniques = group_codes(g, "groups")
    k = len(uniques)
    n = p.shape[0]
    order = argsort(p)  # int32 from 4096 rows: the small inputs' too, one type for the kernels below
    order = order.astype(np.int32 if n < 2**31 else np.int64, copy=False)
    # a stable counting sort of the rows by group, in chunks of the rows in order of score, in parallel
    bounds = task_bounds(n)
    if len(bounds) - 1 > max(1, Sizes.COUNT_ENTRIES // max(k, 1)):
        bounds = split(n, max(1, Sizes.COUNT_ENTRIES // max(k, 1)))
    bounds = np.array(bounds, dtype=np.int64)
    n_chunks = bounds.size - 1
    counts = np.zeros((n_chunks, k), dtype=np.int64)
    parallel_for(_k.group_counts, n_chunks, codes, order, bounds, counts, rows=n)
    starts = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(counts.sum(axis=0), out=starts[1:])
    offsets = starts[:-1] + np.cumsum(counts, axis=0) - counts
    del counts
    ps, ys = np.empty_like(p), np.empty_like(y)
    ws = np.empty(0) if w is None else np.empty_like(w)
    parallel_for(_k.group_scatter, n_chunks, codes, order, p, y, np.empty(0) if w is None else w, factor, bounds,
                 offsets, ps, ys, ws, rows=n)
    del order, offsets
    dt = p.dtype.type
    clip_lo = dt(np.finfo(p.dtype).eps)
    # the rows of equal scores of a group in an order of their own: the sums do not depend on the input order
    parallel_for(_k.order_group_ties, k, ps, ys, ws, starts, rows=n)
    out = np.empty((k, _k.G_COLUMNS))
    parallel_for(_k.group_report, k, ps, ys, ws, starts, np.linspace(0.0, 1.0, n_bins + 1), dt(1), clip_lo,
                 dt(1) - clip_lo, out, rows=n)
    total = out[:, _k.G_W]
    with np.errstate(divide="ignore", invalid="ignore"):
        ecce_value = (out[:, _k.G_HI] - out[:, _k.G_LO]) / total
        std = np.sqrt(out[:, _k.G_VAR]) / total
        positives = out[:, _k.G_SY]
        both = (out[:, _k.G_WPOS] > 0) & (out[:, _k.G_WNEG] > 0)
        # a group of zero weight has no ECCE: NaN, not a sigma of 0 or inf
        sigma = np.where(total > 0, sigma_of(ecce_value, std), np.nan)
        pvalue = np.where(total > 0, kuiper_sf_many(sigma), np.nan)
        return SegmentReport(
            groups=uniques, n=out[:, _k.G_N].astype(np.int64), weight_sum=np.ldexp(total, exponent),
            base_rate=positives / total,
            mean_prediction=out[:, _k.G_SP] / total,
            calibration_ratio=np.where(positives > 0, out[:, _k.G_SP] / np.where(positives > 0, positives, 1), np.nan),
            ece=out[:, _k.G_ECE] / total, ecce=ecce_value, ecce_sigma=sigma, pvalue=pvalue,
            brier=out[:, _k.G_BRIER] / total, log_loss=out[:, _k.G_LOG] / total,
            auc=np.where(both, out[:, _k.G_U] / (out[:, _k.G_WPOS] * out[:, _k.G_WNEG]), np.nan),
        )
