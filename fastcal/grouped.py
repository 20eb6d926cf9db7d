r"""Calibration by group: one clone of a 1-D calibrator per group, and a global fit for the small and unseen ones.

:class:`GroupedCalibrator` wraps any of fastcal's 1-D calibrators
(:class:`~fastcal.IsotonicRegression`, :class:`~fastcal.PlattScaling`,
:class:`~fastcal.BetaCalibration`, :class:`~fastcal.HistogramBinning`,
:class:`~fastcal.VennAbers`). ``fit`` numbers the groups
(:func:`fastcal.multicalibration.group_codes`), orders the rows by group with
one counting sort, gathers scores, labels and weights once in that order, and
fits a clone of the calibrator on each group's contiguous rows; the groups
are cut into tasks of about :data:`fastcal._parallel.TASK_ROWS` rows (a cut
that depends on the group sizes alone, never on the threads) that fastcal's
threads take in turn. Each fit is the calibrator's own, so a group's model is
exactly the model its calibrator fits on that group's rows alone.
"""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from . import _multicalibration_kernels as _k
from . import _parallel
from ._base import BaseCalibrator, check_is_fitted
from ._persist import register
from ._validation import check_consistent_length, column_or_1d
from .beta import BetaCalibration
from .histogram import HistogramBinning
from .isotonic import IsotonicRegression
from .multicalibration import group_codes
from .platt import PlattScaling
from .venn_abers import VennAbers

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["GroupedCalibrator"]


def _clone(calibrator):
    """An unfitted copy of ``calibrator`` with the same parameters (scikit-learn's ``clone``, for fastcal's own)."""
    return type(calibrator)(**calibrator.get_params())


#: The calibrators a GroupedCalibrator clones: fastcal's calibrators of one column of scores.
ONE_D = (IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning, VennAbers)


def _check_calibrator(calibrator):
    if calibrator is None:
        return IsotonicRegression(out_of_bounds="clip")
    if type(calibrator) not in ONE_D:
        raise TypeError(f"calibrator must be one of fastcal's 1-D calibrators (IsotonicRegression, PlattScaling, "
                        f"BetaCalibration, HistogramBinning, VennAbers), got {calibrator!r}.")
    return calibrator


def _tasks(starts, groups):
    """The groups ``groups`` cut into runs of consecutive groups of about ``TASK_ROWS`` rows each (by size)."""
    tasks, current, rows = [], [], 0
    for g in groups:
        current.append(g)
        rows += int(starts[g + 1] - starts[g])
        if rows >= _parallel.TASK_ROWS:
            tasks.append(current)
            current, rows = [], 0
    if current:
        tasks.append(current)
    return tasks


@register
class GroupedCalibrator(BaseCalibrator):
    r"""One calibrator per group, the global one for groups too small or unseen.

    Parameters
    ----------
    calibrator : fastcal 1-D calibrator, default=None
        The calibrator cloned for each group and for all rows
        (None: ``IsotonicRegression(out_of_bounds="clip")``); it is not fitted itself.
    min_samples_per_group : int, default=100
        Fewest rows of a group that gets a calibrator of its own; the rows of
        smaller groups (and of groups unseen at fit) are calibrated by the global fit.

    Attributes
    ----------
    groups_ : list
        The groups with a calibrator of their own, in their order of :func:`fastcal.multicalibration.group_codes`.
    calibrators_ : list
        Their fitted calibrators.
    global_calibrator_ : calibrator
        The calibrator fitted on every row.
    group_counts_ : ndarray of int64
        Rows of each group of ``groups_`` at fit.

    Notes
    -----
    ``fit(scores, y, groups)`` and ``predict(scores, groups)`` take the
    groups as an extra argument (a 1-D array of any hashable values: ints,
    strings, a pandas categorical; NaN and None are one group), so
    scikit-learn's estimator checks, which call ``fit(X, y)``, do not apply;
    the conventions they check are tested in ``tests/test_grouped.py``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastcal import GroupedCalibrator, PlattScaling
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(size=2000)
    >>> g = rng.choice(["fr", "de"], 2000)
    >>> y = (rng.uniform(size=2000) < 1 / (1 + np.exp(np.where(g == "fr", -2 * s, -s)))).astype(int)
    >>> cal = GroupedCalibrator(PlattScaling()).fit(s, y, g)
    >>> cal.groups_, [round(c.a_, 1) for c in cal.calibrators_]
    (['de', 'fr'], [-1.0, -2.2])
    >>> cal.predict([0.0, 1.0], ["fr", "us"]).round(2)  # "us": the global fit
    array([0.48, 0.81])
    """

    groups_: list[Any]
    calibrators_: list[Any]
    global_calibrator_: Any
    group_counts_: NDArray[np.int64]

    _one_d_input = True
    _state_schema: ClassVar[dict[str, str]] = {
        "groups_": "values", "calibrators_": "models", "global_calibrator_": "model", "group_counts_": "array",
    }

    def __init__(self, calibrator: Any = None, *, min_samples_per_group: int = 100) -> None:
        self.calibrator = calibrator
        self.min_samples_per_group = min_samples_per_group

    def _validate_params(self):
        minimum = self.min_samples_per_group
        if not isinstance(minimum, numbers.Integral) or isinstance(minimum, bool) or minimum < 1:
            raise ValueError(f"min_samples_per_group must be an integer >= 1; got {minimum!r}.")
        return {"calibrator": _check_calibrator(self.calibrator), "min_samples_per_group": int(minimum)}

    def fit(self, scores: ArrayLike, y: ArrayLike, groups: ArrayLike,
            sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the global calibrator and one per group of at least ``min_samples_per_group`` rows; returns ``self``."""
        params = self._validate_params()
        template, minimum = params["calibrator"], params["min_samples_per_group"]
        s = column_or_1d(scores, "scores")
        yv = column_or_1d(y, "y")
        g = column_or_1d(groups, "groups")
        w = None
        if sample_weight is not None and not isinstance(sample_weight, numbers.Real):
            w = column_or_1d(sample_weight, "sample_weight")
        check_consistent_length(scores=s, y=yv, groups=g, sample_weight=w)
        weights = w if w is not None else sample_weight
        global_fit = _clone(template).fit(s, yv, sample_weight=weights)  # validates scores, labels and weights
        codes, uniques = group_codes(g, "groups")
        order, starts = _k.counting_order(codes, len(uniques))
        sizes = np.diff(starts)
        fitted = np.flatnonzero(sizes >= minimum)
        s_sorted, y_sorted = np.take(s, order), np.take(yv, order)
        w_sorted = np.take(w, order) if w is not None else None
        models: list[Any] = [None] * fitted.size
        kind, params = type(template), template.get_params()

        def fit_groups(positions):
            for i in positions:
                a, b = starts[fitted[i]], starts[fitted[i] + 1]
                weight = w_sorted[a:b] if w_sorted is not None else sample_weight
                models[i] = kind(**params).fit(s_sorted[a:b], y_sorted[a:b], sample_weight=weight)

        positions = _tasks(np.concatenate([[0], np.cumsum(sizes[fitted])]), range(fitted.size))
        _parallel.run([(fit_groups, (task,)) for task in positions])
        self.groups_ = [uniques[i] for i in fitted]
        self.calibrators_ = models
        self.global_calibrator_ = global_fit
        self.group_counts_ = sizes[fitted].astype(np.int64)
        return self

    def predict(self, scores: ArrayLike, groups: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities: each row by its group's calibrator, or the global one (small or unseen group)."""
        check_is_fitted(self, "global_calibrator_")
        s = column_or_1d(scores, "scores", min_size=0)
        g = column_or_1d(groups, "groups", min_size=0)
        check_consistent_length(scores=s, groups=g)
        out = np.asarray(self.global_calibrator_.predict(s))
        if not s.shape[0] or not self.calibrators_:
            return out
        codes, uniques = group_codes(g, "groups")
        index = {u: i for i, u in enumerate(self.groups_)}
        model = np.array([index.get(u, -1) for u in uniques], dtype=np.int64)
        rows = model[codes]
        known = np.flatnonzero(rows >= 0)
        order, starts = _k.counting_order(rows[known], len(self.groups_))
        for i in np.flatnonzero(np.diff(starts)):
            at = known[order[starts[i]:starts[i + 1]]]
            out[at] = self.calibrators_[i].predict(s[at])
        return out

    def _check_loaded_state(self):
        self._validate_params()
        if len(self.groups_) != len(self.calibrators_) or self.group_counts_.shape != (len(self.groups_),):
            raise ValueError("invalid fastcal model: groups_, calibrators_ and group_counts_ differ in length")
        for model in [self.global_calibrator_, *self.calibrators_]:
            if type(model) not in ONE_D:
                raise ValueError(f"invalid fastcal model: {type(model).__name__} is not a 1-D calibrator")
        if len(set(map(_key, self.groups_))) != len(self.groups_):
            raise ValueError("invalid fastcal model: groups_ has a group twice")


def _key(value):
    return (type(value) is str, value)
