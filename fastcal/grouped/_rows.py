r"""One calibrator per group over a :class:`~fastcal._engine.Rows`: :func:`fit_grouped`.

Chunks are ``(scores, y, w, groups)``, raw (``w`` None in every chunk when
``weighted`` is False; ``groups`` any 1-D values; or ``(scores, y, w, *group
columns)``, each row's group the tuple of its values, as in memory). The result is the
:class:`fastcal.GroupedCalibrator` that ``GroupedCalibrator(calibrator,
min_samples_per_group=...).fit`` gives on the same rows, assembled by
:meth:`fastcal.GroupedCalibrator.from_fits`:

1. the groups are numbered as the in-memory fit numbers the whole column
   (:func:`fastcal._coding.number_groups`: each chunk's distinct
   values and their rows, one :meth:`Rows.map`), which gives every group's
   size, hence the groups with a model of their own (``min_samples_per_group``
   rows or more);
2. the global model is the calibrator's own driver on the first three columns
   (:func:`fastcal.isotonic._rows.fit_isotonic`,
   :func:`fastcal.platt._rows.fit_platt`,
   :func:`fastcal.beta._rows.fit_beta`,
   :func:`fastcal.metrics._rows.fit_histogram`), which validates the rows
   and raises the in-memory errors;
3. a :meth:`Rows.convert` gives every row its group's number
   (:func:`fastcal._coding.number_chunk`), the rows are partitioned
   by number into ranges of whole groups of about equal rows
   (:func:`fastcal._coding.group_bounds`; one per
   :data:`~fastcal._coding.GROUP_PARTITION_ROWS` rows, at least
   ``rows.parallelism``), and each partition fits its groups with the
   in-memory fit's own per-group code (:func:`fastcal.grouped.fit_group_models`:
   the batched isotonic and histogram fits, the Newton fits of each group's
   slice). Only the fitted models (a few kB each) come back.

Only per-group summaries reach the caller: the distinct values with their
counts, and the models. VennAbers has no driver here (its global fit would
need one): :func:`fit_grouped` refuses it, as any calibrator without a driver.

Exactness
---------
A group's model is its calibrator's in-memory fit on the group's rows,
in the order the partition holds them. Isotonic thresholds, histogram bins
and counts are exact; float sums (block means, bin means, Newton sums) are
those of the group's rows in that order: the in-memory bits when the backend
keeps the rows' order (:class:`~fastcal._engine.ListRows`, Dask), their
rounding otherwise (Spark's shuffle). The global model follows its driver's
exactness rule (isotonic thresholds bit for bit, Newton fits to about 1e-10).
A partition holds whole groups, so the largest group must fit in a worker's
memory.
"""

from __future__ import annotations

import numpy as np

from .._coding import GROUP_PARTITION_ROWS, group_bounds, number_chunk, number_groups
from .._engine import CHUNK_NUMBER, bind_chunk
from ..beta import BetaCalibration
from ..beta import rows as beta_rows
from ..histogram import HistogramBinning
from ..isotonic import IsotonicRegression
from ..isotonic import rows as isotonic_rows
from ..metrics import rows as metrics_rows
from ..platt import PlattScaling
from ..platt import rows as platt_rows
from ._calibrator import GroupedCalibrator, check_calibrator, check_min_samples
from ._fits import fit_group_models

__all__ = ["DRIVERS", "fit_grouped"]

#: The global fit's driver of each calibrator :func:`fit_grouped` takes.
DRIVERS = {
    IsotonicRegression: isotonic_rows.fit_isotonic,
    PlattScaling: platt_rows.fit_platt,
    BetaCalibration: beta_rows.fit_beta,
    HistogramBinning: metrics_rows.fit_histogram,
}


def _on_head(chunk, number, k, fn, *args):
    return fn(chunk[:k], *bind_chunk(args, number))


class _Head:
    """The :class:`Rows` of the first ``k`` columns of ``rows`` (whose other columns ride along unseen)."""

    def __init__(self, rows, k, owned=False):
        self.rows, self.k, self.owned = rows, k, owned
        self.parallelism = rows.parallelism
        self.n_rows = getattr(rows, "n_rows", None)

    def map(self, fn, *args):
        return self.rows.map(_on_head, CHUNK_NUMBER, self.k, fn, *args)

    def convert(self, fn, *args):
        return self.rows.convert(_on_head, CHUNK_NUMBER, self.k, fn, *args)

    def partition(self, bounds, key=0):
        return _Head(self.rows.partition(bounds, key), self.k, owned=True)

    def release(self):
        if self.owned:
            self.rows.release()


def _fit_part(chunk, calibrator, minimum):
    """The global numbers of the groups of one partition of whole groups with ``minimum`` rows or more, and
    their models (:func:`fastcal.grouped.fit_group_models` on the partition's rows)."""
    s, y, w, codes = chunk
    if not codes.shape[0]:
        return np.zeros(0, dtype=np.int64), []
    numbers, local = np.unique(codes, return_inverse=True)
    local = local.reshape(-1).astype(np.int64)
    sizes = np.bincount(local, minlength=numbers.shape[0])
    fitted = np.flatnonzero(sizes >= minimum)
    if not fitted.size:
        return np.zeros(0, dtype=np.int64), []
    return numbers[fitted].astype(np.int64), fit_group_models(calibrator, s, y, local, sizes, fitted, w)


def check_grouped_calibrator(calibrator, where):
    """The calibrator :func:`fit_grouped` clones (None: the in-memory default); ``ValueError`` naming
    ``calibrator`` for one without a driver (VennAbers, temperature scaling, any other object)."""
    template = check_calibrator(calibrator) if calibrator is None or type(calibrator) in DRIVERS else None
    if template is None:
        raise ValueError(f"calibrator must be an IsotonicRegression, PlattScaling, BetaCalibration or "
                         f"HistogramBinning for {where} (the calibrators with a fit driver), got {calibrator!r}; "
                         f"fit fastcal.GroupedCalibrator in memory for the others.")
    return template


def fit_grouped(rows, *, x_dtype, weighted, calibrator=None, min_samples_per_group=100, n_partitions=None,
                where="fit_grouped"):
    """A fitted :class:`fastcal.GroupedCalibrator` of rows ``(scores, y, w, groups)``: see the module docstring.

    Parameters
    ----------
    rows : Rows
        Chunks ``(scores, y, w, groups)``, raw (validated here).
    x_dtype : dtype
        The declared dtype of the scores.
    weighted : bool
        Whether the chunks carry weights.
    calibrator : IsotonicRegression, PlattScaling, BetaCalibration or HistogramBinning, optional
        The calibrator cloned per group (None: ``IsotonicRegression(out_of_bounds="clip")``, as in memory).
    min_samples_per_group : int, default=100
        As in :class:`fastcal.GroupedCalibrator`.
    n_partitions : int, optional
        Partitions of whole groups (default: one per
        :data:`~fastcal._coding.GROUP_PARTITION_ROWS` rows, at least
        ``rows.parallelism``); the result does not depend on it.
    where : str
        The public function's name, for the message refusing a calibrator.

    Returns
    -------
    fastcal.GroupedCalibrator
    """
    from .._core.params import Integer, check

    template = check_grouped_calibrator(calibrator, where)
    minimum = check_min_samples(min_samples_per_group)
    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    distinct, uniques, counts = number_groups(rows)
    global_model = DRIVERS[type(template)](_Head(rows, 3), x_dtype=x_dtype, weighted=weighted,
                                           **template.get_params())
    fitted = np.flatnonzero(counts >= minimum)
    models = []
    if fitted.size:
        numbered, _ = rows.convert(number_chunk, distinct)
        try:
            if n_partitions is None:
                n_partitions = max(int(rows.parallelism), -(-int(counts.sum()) // GROUP_PARTITION_ROWS))
            parts = numbered.partition(group_bounds(counts, int(n_partitions)), key=3)
        finally:
            numbered.release()
        try:
            fits = parts.map(_fit_part, template, minimum)
        finally:
            parts.release()
        numbers = np.concatenate([f[0] for f in fits])
        if not np.array_equal(numbers, fitted):
            raise RuntimeError("internal: the partitions of whole groups lost or repeated a group.")
        models = [m for f in fits for m in f[1]]
    return GroupedCalibrator.from_fits(calibrator, [uniques[i] for i in fitted], models, global_model,
                                       counts[fitted], min_samples_per_group=minimum)
