r"""Calibration by group: one clone of a 1-D calibrator per group, and a global fit for the small and unseen ones.

:class:`GroupedCalibrator` wraps any of fastcal's 1-D calibrators
(:class:`~fastcal.IsotonicRegression`, :class:`~fastcal.PlattScaling`,
:class:`~fastcal.BetaCalibration`, :class:`~fastcal.HistogramBinning`,
:class:`~fastcal.VennAbers`). ``fit`` numbers the groups
(:func:`fastcal._coding.group_codes`) and fits the calibrator on all
rows and on each group's rows; a group's model is exactly the model its
calibrator fits on that group's rows alone.

The per-group fits are :func:`fastcal.grouped._fits.fit_group_models` (batched
for isotonic step fits of 0/1 labels, uniform histogram binning, Platt
scaling and beta calibration, each group with the bits of its own fit). The
isotonic models' predictions run in one pass over the rows
(:func:`_predict_isotonic`).
"""

from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING, Any, ClassVar, Self

import numpy as np

from . import _kernels as _gk
from .._core import parallel as _parallel
from .._base import BaseCalibrator, check_is_fitted
from ._fits import fit_group_models
from .._persist import register
from .._core.validation import as_float_array, check_consistent_length, check_finite, column_or_1d
from ..beta import BetaCalibration
from ..histogram import HistogramBinning
from ..isotonic import IsotonicRegression
from .._coding import as_groups, counting_order, group_kinds, group_sizes_codes, kind_names, shown
from ..platt import PlattScaling
from ..venn_abers import VennAbers

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = ["GroupedCalibrator"]  # internal API: ONE_D, check_calibrator, check_min_samples, predict_matched,
#   group_kinds


def _clone(calibrator):
    """An unfitted copy of ``calibrator`` with the same parameters (scikit-learn's ``clone``, for fastcal's own)."""
    return type(calibrator)(**calibrator.get_params())


#: The calibrators a GroupedCalibrator clones: fastcal's calibrators of one column of scores.
ONE_D = (IsotonicRegression, PlattScaling, BetaCalibration, HistogramBinning, VennAbers)


def check_calibrator(calibrator):
    if calibrator is None:
        return IsotonicRegression(out_of_bounds="clip")
    if type(calibrator) not in ONE_D:
        raise TypeError(f"calibrator must be one of fastcal's 1-D calibrators (IsotonicRegression, PlattScaling, "
                        f"BetaCalibration, HistogramBinning, VennAbers), got {calibrator!r}.")
    return calibrator


def check_min_samples(minimum):
    """``min_samples_per_group`` as an int; ``ValueError`` naming it unless an integer >= 1."""
    if not isinstance(minimum, numbers.Integral) or isinstance(minimum, bool) or minimum < 1:
        raise ValueError(f"min_samples_per_group must be an integer >= 1; got {minimum!r}.")
    return int(minimum)


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
        So are the rows of a group whose sample weights are all zero: it has
        nothing to fit, and is not in ``groups_``.

    Attributes
    ----------
    groups_ : list
        The groups with a calibrator of their own, in their order of :func:`fastcal._coding.group_codes`;
        tuples of values when the groups are given as several columns.
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
    strings, a pandas categorical; NaN and None are one group), or as
    several columns whose values together make a row's group: a 2-D array of
    shape ``(n, m)``, a pandas DataFrame, a dict of columns or a list of 1-D
    arrays. A group of several columns is the tuple of its values (for
    example ``("fr", "ios")``), ordered by the first column's order of
    :func:`~fastcal._coding.group_codes`, then the second's. So
    scikit-learn's estimator checks, which call ``fit(X, y)``, do not apply;
    the conventions they check (parameters, cloning, fitted attributes,
    ``NotFittedError``, inputs never modified, read-only input) hold all the same.

    With an :class:`~fastcal.IsotonicRegression` of a given direction
    (``increasing`` True or False, not centered) and 0/1 labels, all groups
    are fitted in one batched pass (see :mod:`fastcal.grouped`) with the bits
    of their own fits, and ``predict`` runs in one pass over the rows; so are
    the fits of :class:`~fastcal.HistogramBinning` with uniform bins, of
    :class:`~fastcal.PlattScaling` and of :class:`~fastcal.BetaCalibration`
    (``"abm"``; each group's Newton iterations in lockstep, one pass over the
    rows per iteration). Other calibrators and parameters, and the groups
    whose fit leaves the Newton driver's common path, fit one clone per group,
    with the same bits.

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

    Groups of two columns, each group the tuple of its values:

    >>> device = rng.choice(["ios", "web"], 2000)
    >>> cal = GroupedCalibrator(PlattScaling()).fit(s, y, [g, device])
    >>> cal.groups_
    [('de', 'web'), ('de', 'ios'), ('fr', 'web'), ('fr', 'ios')]
    >>> cal.predict([0.0], [np.array(["fr"]), np.array(["web"])]).shape
    (1,)
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
        return {"calibrator": check_calibrator(self.calibrator),
                "min_samples_per_group": check_min_samples(self.min_samples_per_group)}

    def fit(self, scores: ArrayLike, y: ArrayLike, groups: ArrayLike,
            sample_weight: ArrayLike | float | None = None) -> Self:
        """Fit the global calibrator and one per group of at least ``min_samples_per_group`` rows; returns ``self``.

        A group whose weights are all zero gets no calibrator of its own: its rows take the global one, as
        those of a small group.
        """
        params = self._validate_params()
        template, minimum = params["calibrator"], params["min_samples_per_group"]
        s = column_or_1d(scores, "scores")
        yv = column_or_1d(y, "y")
        g = as_groups(groups, "groups")
        w = None
        if sample_weight is not None and not isinstance(sample_weight, numbers.Real):
            w = column_or_1d(sample_weight, "sample_weight")
        check_consistent_length(scores=s, y=yv, groups=g, sample_weight=w)
        weights = w if w is not None else sample_weight
        global_fit = _clone(template).fit(s, yv, sample_weight=weights)  # validates scores, labels and weights
        codes, uniques, sizes = group_sizes_codes(g, "groups")
        fitted = np.flatnonzero(sizes >= minimum)
        models = fit_group_models(template, s, yv, codes, sizes, fitted, weights)
        return self._set_fits([uniques[i] for i in fitted], models, global_fit, sizes[fitted])

    @classmethod
    def from_fits(cls, calibrator: Any, groups: list[Any], models: list[Any], global_model: Any,
                  counts: ArrayLike, *, min_samples_per_group: int = 100) -> GroupedCalibrator:
        """A fitted ``GroupedCalibrator`` from models fitted elsewhere (internal API of the engine's
        :func:`fastcal.grouped._rows.fit_grouped`; ``fit`` assembles its own fits through it too).

        ``groups``: the groups with a model of their own, in the order of
        :func:`fastcal._coding.group_codes` of all groups; ``models``: their fitted clones of
        ``calibrator`` (None: a group without a row of positive weight, left out); ``global_model``: the clone
        fitted on all rows; ``counts``: the rows of each group.
        """
        est = cls(calibrator, min_samples_per_group=min_samples_per_group)
        est._validate_params()
        counts = np.asarray(counts, dtype=np.int64)
        if not len(groups) == len(models) == counts.shape[0]:
            raise ValueError(f"groups, models and counts differ in length: {len(groups)}, {len(models)}, "
                             f"{counts.shape[0]}.")
        return est._set_fits(list(groups), list(models), global_model, counts)

    def _set_fits(self, groups, models, global_model, counts):
        """Set the fitted attributes; a group whose model is None (no row of positive weight) is left out."""
        own = [i for i, model in enumerate(models) if model is not None]
        self.groups_ = [groups[i] for i in own]
        self.calibrators_ = [models[i] for i in own]
        self.global_calibrator_ = global_model
        self.group_counts_ = np.asarray(counts).astype(np.int64)[own]
        return self

    def predict(self, scores: ArrayLike, groups: ArrayLike) -> NDArray[np.floating]:
        """Calibrated probabilities: each row by its group's calibrator, or the global one (small or unseen group).

        Warns (``UserWarning``) when no row's group is one of ``groups_`` and the groups are all of another
        kind than ``groups_`` (numbers against text, e.g. groups fitted as integers given as strings): every
        row then takes the global calibrator, which is seldom what was meant. Groups unseen at fit of the
        fitted kind are no mistake, and take the global calibrator silently.
        """
        out, matched, values = predict_matched(self, scores, groups)
        if not matched and values:
            kinds, fitted = group_kinds(values), group_kinds(self.groups_)
            if kinds and fitted and not kinds & fitted:
                warnings.warn(f"no row's group is one of the fitted groups, which are {kind_names(fitted)} "
                              f"({shown(self.groups_)}) while the groups given are {kind_names(kinds)} "
                              f"({shown(values)}): every row takes the global calibrator. Give the groups as "
                              f"the values they were fitted with.", UserWarning, stacklevel=2)
        return out

    def _flat_isotonic(self):
        """The isotonic models of the groups and the global one (last) as flat arrays, for :func:`_predict_isotonic`
        (made once per fit): None unless every model is an ``IsotonicRegression`` of one dtype predicting
        NaN or the nearest bound out of its range."""
        models = [*self.calibrators_, self.global_calibrator_]
        cached = self.__dict__.get("_flat")
        if cached is not None and cached[0] is self.global_calibrator_ and len(cached[1]) == len(models):
            return cached[2]
        flat = None
        if all(type(m) is IsotonicRegression for m in models):
            bounds = {m.out_of_bounds for m in models}
            dtypes = {m.X_thresholds_.dtype for m in models}
            if len(bounds) == 1 and bounds <= {"nan", "clip"} and len(dtypes) == 1:
                counts = np.array([m.X_thresholds_.shape[0] for m in models], dtype=np.int64)
                flat = (np.concatenate([[0], np.cumsum(counts)]),
                        np.concatenate([m.X_thresholds_ for m in models]),
                        np.concatenate([m.y_thresholds_ for m in models]), bounds == {"clip"})
        self.__dict__["_flat"] = (self.global_calibrator_, models, flat)
        return flat

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_flat", None)
        return state

    def _check_loaded_state(self):
        template = self._validate_params()["calibrator"]
        if len(self.groups_) != len(self.calibrators_) or self.group_counts_.shape != (len(self.groups_),):
            raise ValueError("invalid fastcal model: groups_, calibrators_ and group_counts_ differ in length")
        for model in [self.global_calibrator_, *self.calibrators_]:
            if type(model) not in ONE_D:
                raise ValueError(f"invalid fastcal model: {type(model).__name__} is not a 1-D calibrator")
            if type(model) is not type(template):
                raise ValueError(f"invalid fastcal model: its calibrator is a {type(template).__name__}, but it "
                                 f"holds a fitted {type(model).__name__}")
        if len(set(map(_key, self.groups_))) != len(self.groups_):
            raise ValueError("invalid fastcal model: groups_ has a group twice")


def predict_matched(est, scores, groups):
    """``(p, matched, values)``: ``est.predict(scores, groups)`` without its warning, the number of rows whose
    group has a calibrator of its own, and the distinct groups of the rows (empty when no row or no group has a
    calibrator of its own); internal API of ``fastcal apply``, which warns for a whole file."""
    check_is_fitted(est, "global_calibrator_")
    s = column_or_1d(scores, "scores", min_size=0)
    g = as_groups(groups, "groups", min_size=0)
    check_consistent_length(scores=s, groups=g)
    flat = est._flat_isotonic()
    if flat is not None:
        t = as_float_array(s, "scores", dtype=flat[1].dtype)  # as IsotonicRegression.predict casts its input
        check_finite(t, "scores")
        out = np.empty(t.shape[0], dtype=t.dtype)
    else:
        out = np.asarray(est.global_calibrator_.predict(s))
    if not s.shape[0] or not est.groups_:
        if flat is not None and s.shape[0]:
            _predict_isotonic(flat, t, np.zeros(t.shape[0], dtype=np.int64), out)
        return out, 0, []
    codes, uniques, sizes = group_sizes_codes(g, "groups")
    index = {u: i for i, u in enumerate(est.groups_)}
    model = np.array([index.get(u, -1) for u in uniques], dtype=np.int64)
    matched = int(sizes[model >= 0].sum())
    if flat is not None:
        _predict_isotonic(flat, t, np.where(model >= 0, model, len(est.groups_))[codes], out)
        return out, matched, uniques
    rows = model[codes]
    known = np.flatnonzero(rows >= 0)
    order, starts = counting_order(rows[known], len(est.groups_))
    for i in np.flatnonzero(np.diff(starts)):
        at = known[order[starts[i]:starts[i + 1]]]
        out[at] = est.calibrators_[i].predict(s[at])
    return out, matched, uniques


def _predict_isotonic(flat, t, model, out):
    """Predictions of isotonic models by group in one pass over the rows
    (:func:`~fastcal.grouped._kernels.predict_groups`) into ``out``: row ``i`` of the checked scores ``t`` by
    model ``model[i]`` of ``flat`` (:meth:`GroupedCalibrator._flat_isotonic`; the global one last); the bits of
    each model's ``predict``."""
    offsets, knots_x, knots_y, clip = flat
    _parallel.parallel_for(_gk.predict_groups, t.shape[0], t, model, offsets, knots_x, knots_y, clip, out)


def _key(value):
    return (type(value) is str, value)
