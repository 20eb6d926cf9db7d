r"""The multicalibration fit: a sparse logistic model of offsets per segment and score bucket, its penalty chosen
on held-out log loss.

The model (:class:`SegmentModel`). With :math:`\ell = \operatorname{logit} p` of a row's score and the cells
:math:`c \ni i` that hold it (each segment of :func:`~fastcal.multicalibration.multicalibration_error` has a cell of
all its rows and a cell per quantile bucket of the score; segment 0 is all rows),

.. math::

    \operatorname{logit} q_i = a\,\ell_i + \sum_{c \ni i} b_c,

fitted by minimising :math:`\sum_i w_i\,\mathrm{logloss}(y_i, q_i) + \lambda \lVert b \rVert_1` (the lasso: few
segments are off, and an L1 penalty leaves the others at exactly 0 where a ridge would spread each effect over every
segment that overlaps it). The segments are those the multicalibration error measures, with the same parameters,
so what is measured is what is repaired; the buckets let a segment's correction change with the score.

Rows of one *pattern* (their cell of every feature and their bucket) share every cell, so one pass over the rows
gives, per pattern, the sums of the gradient and the Hessian (:func:`~._fit_kernels.fit_pass`), and the Newton step
of the penalised problem is solved on those sums alone by coordinate descent
(:func:`~._fit_kernels.lasso_direction`; glmnet's scheme, Friedman, Hastie and Tibshirani 2010): each Newton step
is one pass of per-pattern sums. Steps that raise the objective are halved.

The penalty. :math:`\lambda` runs along :data:`FRACTIONS` of :math:`\lambda_{max}` (the least penalty that keeps
every offset at 0), from strong to weak, each fit starting from the last; the path stops early when the held-out
log loss has not improved for :data:`PATIENCE` steps. Held-out rows: ``n_folds``-fold cross-fitting (folds by a
hash of the row's position), or a hold-out of 40% of the rows past :data:`HOLDOUT_ROWS` effective rows, as MCGrad
(Guy et al. 2026) does. The penalty that held out best (or no change at all, if the scores as they are did) is
then fitted on every row along the same path. Scaling every weight scales :math:`\lambda_{max}` alike and changes
nothing.

Internal API: :class:`FeatureTable` (a feature's values and their numbers, for new rows), :class:`SegmentModel`,
:func:`fit_segment_model`, :data:`FRACTIONS`; for the fit over rows (:mod:`._fit_rows`), the steps it shares:
:func:`feature_key`, :func:`segment_table`, :func:`bucket_edges`, :func:`score_buckets`, :func:`logits_of`,
:func:`folds_of`, :func:`pattern_cells`, :class:`Passes` and :func:`fit_offsets` (the penalty's choice and the
final fit, on any object that runs the passes).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from . import _fit_kernels as _k
from .._coding import (
    MISSING,
    OTHER,
    bin_numbers,
    binned_codes,
    categorical_codes,
    cell_numbers,
    group_sizes_codes,
    mixed_radix,
    group_codes,
    numerical_edges,
    quantile_edges,
)
from .._binning import order_statistics
from .._core import parallel as _parallel
from .._core.errors import ConvergenceWarning
from .._engine.chunked import Partials, merge_in_order
from ._mce import choose_segments

__all__ = ["FRACTIONS", "FeatureTable", "Passes", "SegmentModel", "bucket_edges", "feature_key", "fit_offsets",
           "fit_segment_model", "folds_of", "logits_of", "pattern_cells", "score_buckets", "segment_table"]

#: The path of penalties, fractions of :math:`\lambda_{max}` (the least that changes no offset): :math:`10^{-j/2}`,
#: j = 1..10.
FRACTIONS = tuple(10.0 ** (-j / 2) for j in range(1, 11))
#: Path steps without a better held-out log loss before the path stops.
PATIENCE = 2
#: Effective rows :math:`(\sum w)^2 / \sum w^2` past which one hold-out replaces cross-fitting (MCGrad's rule).
HOLDOUT_ROWS = 2_500_000
#: The share of the rows held out then.
HOLDOUT_SHARE = 0.4
#: Scores are clipped to ``[EPS, 1 - EPS]`` before their logit (so 0 and 1 have finite logits, about -+27.6).
EPS = 2.0 ** -40
#: Rows per chunk of a pass, at least (more when the pattern sums are many: see :func:`chunk_rows`).
CHUNK_ROWS = 1 << 13
#: The work of one row of one split in a pass, in rows of a plain pass (the unit of fastcal._core.parallel's
#: thresholds, measured on a pass of one exp a row): an exp and a log a row.
EVAL_WORK = 2
#: Newton steps per penalty, and halvings per step, at most.
MAX_NEWTON = 50
MAX_HALVINGS = 40
#: A Newton fit has converged when no parameter would move by more than this (logit units): the final fit's
#: tolerance, and the looser one of the fits that choose the penalty (held-out log losses a hair off do not change
#: the choice; a Newton step from 1e-6 would move by about 1e-12).
STEP_TOL = 1e-10
PATH_TOL = 1e-3
#: Coordinate descent sweeps per Newton step, at most.
MAX_SWEEPS = 2000

KINDS = ("categorical", "values", "bins")
#: Patterns (every feature's digit or none, times the score buckets) past which :meth:`SegmentModel.predict` finds
#: each row's cells on its own instead of numbering the patterns (their mixed-radix numbers must stay in int64).
KEY_LIMIT = 1 << 62


@dataclass(frozen=True)
class FeatureTable:
    """A segment feature as fitted: how a value of a new row finds its number (digit), and each digit's label.

    ``kind`` is "categorical", "values" (a numerical feature of few distinct values, each its own) or "bins" (a
    numerical feature cut at ``edges``). ``values``/``digits``: every distinct value seen at fit (None: missing)
    and its digit (for "bins", the bin numbers, and ``edges.size`` for NaN); ``other``: the digit of the folded
    values (``"__OTHER"``), -1 if none; ``size``: the number of digits. A value not in the table has no digit:
    the segments of that feature do not hold its row.
    """

    name: str
    kind: str
    values: list
    digits: np.ndarray
    other: int
    edges: np.ndarray
    size: int

    def codes_of(self, column):
        """``(codes, remap, uniques)``: a new column of this feature as codes from 0 (int64), each code's digit + 1
        (0: a value not in the table, which no segment of this feature holds) and each code's value."""
        if self.kind == "bins":  # the bin numbers are the values: 0..edges.size - 2, and edges.size for NaN
            codes = bin_numbers(np.ascontiguousarray(np.asarray(column, dtype=np.float64)), self.edges)
            uniques = range(self.edges.size + 1)
        else:
            codes, uniques = group_codes(column, self.name)
        lookup = dict(zip(self.values, self.digits.tolist()))
        remap = np.array([lookup.get(feature_key(u), -1) + 1 for u in uniques] or [0], dtype=np.int64)
        return codes, remap, uniques

    def label(self, digit):
        """The label of a digit, as segment tables show it: the value, ``"__NA"`` for missing (NaN for a numerical
        feature), ``"__OTHER"`` for the folded values, the bin number of a binned feature."""
        if digit == self.other:
            return OTHER
        value = self.values[self.digits.tolist().index(digit)]
        if self.kind == "bins":
            return float("nan") if value == self.edges.size else value
        if value is None:
            return MISSING if self.kind == "categorical" else float("nan")
        return value


def feature_key(value):
    """A value as the tables hold it: Python scalars (NumPy's as Python's), missing as None."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value != value:
        return None
    return value


@dataclass(frozen=True)
class SegmentModel:
    """A fitted multicalibration model: the features, the segments (features and digits, -1 padded), the score
    buckets' edges, the slope and the offsets (segments x buckets); the chosen penalty and the path's held-out
    log losses (per weight; the first is that of the scores unchanged)."""

    features: list
    segment_features: np.ndarray
    segment_digits: np.ndarray
    bucket_edges: np.ndarray
    slope: float
    offsets: np.ndarray
    rho: float
    path_loss: np.ndarray

    @property
    def n_buckets(self):
        return max(self.bucket_edges.size - 1, 1)

    def combinations(self):
        """The segments as the kernels take them: ``(combo_features, combo_mult, local, local_start,
        first_segment)``, one entry per combination of features (segments of one combination are consecutive)."""
        sizes = [f.size for f in self.features]
        n_segments, depth = self.segment_features.shape
        changed = np.any(self.segment_features[2:] != self.segment_features[1:-1], axis=1)
        starts = ([1] if n_segments > 1 else []) + (np.flatnonzero(changed) + 2).tolist()
        width = max(depth, 1)
        feats = np.full((len(starts), width), -1, dtype=np.int64)
        mult = np.zeros((len(starts), width), dtype=np.int64)
        locals_, local_start = [], [0]
        for j, (a, b) in enumerate(zip(starts, starts[1:] + [n_segments])):
            subset = [int(f) for f in self.segment_features[a] if f >= 0]
            size = [sizes[f] for f in subset]
            m = [math.prod(size[i + 1:]) for i in range(len(subset))]
            feats[j, :len(subset)] = subset
            mult[j, :len(subset)] = m
            local = np.full(math.prod(size), -1, dtype=np.int64)
            keys = self.segment_digits[a:b, :len(subset)] @ np.array(m, dtype=np.int64)
            local[keys] = np.arange(b - a)
            locals_.append(local)
            local_start.append(local_start[-1] + local.size)
        local = np.concatenate(locals_) if locals_ else np.zeros(0, dtype=np.int64)
        return feats, mult, local, np.array(local_start, dtype=np.int64), np.array(starts, dtype=np.int64)

    def segment_values(self):
        """Each segment's features and labels, as :class:`MulticalibrationResult` lists them."""
        out = []
        for feats, digits in zip(self.segment_features.tolist(), self.segment_digits.tolist()):
            out.append({self.features[f].name: self.features[f].label(d) for f, d in zip(feats, digits) if f >= 0})
        return out

    def prediction_data(self):
        """The prediction as data (:class:`fastcal._prediction.SegmentOffsets`): the segments with an offset only."""
        from .._prediction import SegmentFeature, SegmentOffsets, SegmentTerm

        features = tuple(SegmentFeature(t.name, t.kind != "categorical", list(t.values), t.digits.copy(),
                                        t.edges.copy()) for t in self.features)
        feats, mult, local, local_start, first = self.combinations()
        terms = []
        for j in range(feats.shape[0]):
            width = int(np.count_nonzero(feats[j] >= 0))
            table = local[local_start[j]:local_start[j + 1]]
            keys = np.flatnonzero(table >= 0)
            segments = first[j] + table[keys]
            keep = np.any(self.offsets[segments] != 0, axis=1)
            if keep.any():
                rows = self.offsets[segments[keep]]
                terms.append(SegmentTerm(tuple(feats[j, :width].tolist()), tuple(mult[j, :width].tolist()),
                                         keys[keep].astype(np.int64), rows[:, 0].copy(), rows[:, 1:].copy()))
        return SegmentOffsets(EPS, float(self.slope), self.bucket_edges.copy(), float(self.offsets[0, 0]),
                              self.offsets[0, 1:].copy(), features, tuple(terms))

    def buckets(self, p):
        """The score bucket of each score (int64)."""
        return score_buckets(p, self.bucket_edges)

    def predict(self, p, columns, matches=None):
        """The calibrated probabilities of scores ``p`` (float32 or float64, in their dtype) with the segment
        ``columns`` (name -> 1-D array, every feature); ``matches``, a dict, gets for each feature of values (not
        binned) ``(rows whose value is in its table, the column's distinct values)``, missing values left out.

        The rows are numbered by their pattern (each feature's digit, or none, and the score bucket: a mixed-radix
        number, renumbered among those present), the offsets added up once per pattern
        (:func:`~._fit_kernels.row_offsets`, in the order of the fit's sums) and looked up by each row in the pass
        that calibrates it (:func:`~._fit_kernels.predict_rows`)."""
        n = p.shape[0]
        digits = []
        for t in self.features:
            codes, remap, uniques = t.codes_of(columns[t.name])
            if matches is not None and t.kind != "bins":
                sizes = np.bincount(codes, minlength=remap.size) if n else np.zeros(remap.size, dtype=np.int64)
                present = np.array([feature_key(u) is not None for u in uniques] or [False])
                matches[t.name] = (int(sizes[(remap > 0) & present].sum()),
                                   [u for u, keep in zip(uniques, present.tolist()) if keep])
            digits.append((codes, remap, t.size + 1))
        n_b = self.n_buckets
        span = math.prod(t.size + 1 for t in self.features) * n_b
        if span >= KEY_LIMIT:  # too many patterns to number: each row's cells found on its own
            pattern_digits = np.empty((n, len(self.features)), dtype=np.int64)
            for f, (codes, remap, _) in enumerate(digits):
                pattern_digits[:, f] = remap[codes] - 1
            bucket, index = self.buckets(p), np.arange(n)
        else:
            present, index = renumbered(mixed_radix([*digits, (self.buckets(p), np.arange(n_b), n_b)]))
            bucket, place = present % n_b, present // n_b
            pattern_digits = np.empty((present.size, len(self.features)), dtype=np.int64)
            for f in range(len(self.features) - 1, -1, -1):
                place, pattern_digits[:, f] = np.divmod(place, self.features[f].size + 1)
            pattern_digits -= 1
        offsets = np.empty(pattern_digits.shape[0])
        _parallel.parallel_for(_k.row_offsets, offsets.shape[0], pattern_digits, bucket, *self.combinations(), n_b,
                               self.offsets.ravel(), offsets)
        out = np.empty(n, dtype=p.dtype)
        _parallel.parallel_for(_k.predict_rows, n, p, EPS, float(self.slope), index, offsets, out)
        return out


def score_buckets(p, edges):
    """The bucket of each score ``p`` among the buckets of ``edges`` (int64; all 0 with fewer than two edges)."""
    if edges.size < 2:
        return np.zeros(p.shape[0], dtype=np.int64)
    return bin_numbers(np.ascontiguousarray(p, dtype=np.float64), edges)


def bucket_edges(n, lo, hi, n_buckets, select):
    """The score buckets' edges: MCGrad's quantile bins of ``n`` scores in ``[lo, hi]`` (``select(ranks)``: their
    order statistics, float64), none when the scores are all equal or ``n_buckets`` is 1."""
    if not (hi > lo and n_buckets > 1):
        return np.zeros(0)
    return quantile_edges(n, lo, hi, n_buckets, "y_prob", select)


def renumbered(keys):
    """``(present, index)``: the distinct int64 ``keys`` ascending, and each row's number among them (int64), counted
    and renumbered on fastcal's threads (:func:`fastcal._coding.group_sizes_codes`)."""
    index, present, _ = group_sizes_codes(keys, "patterns")
    return np.asarray(present, dtype=np.int64), np.ascontiguousarray(index, dtype=np.int64)


def logits_of(p):
    """The logit of the scores clipped to ``[EPS, 1 - EPS]``, float64, on fastcal's threads."""
    out = np.empty(p.shape[0])
    _parallel.parallel_for(_k.logits, p.shape[0], p, EPS, out)
    return out


def feature_table(name, column, is_numerical, p, max_values):
    """``(coded, table)``: a feature numbered as :func:`multicalibration_error` numbers it (``coded``, the tuple
    of :func:`fastcal._coding.categorical_codes`) and its :class:`FeatureTable`."""
    if is_numerical:
        x, edges = numerical_edges(column, name, max_values)
        coded = binned_codes(x, edges, name, p)
        codes, offset, remap, labels, _ = coded
        if edges is not None:
            values = [int(v) if v == v else edges.size for v in labels]  # bin numbers; NaN is edges.size
            return coded, FeatureTable(name, "bins", values, np.arange(len(labels), dtype=np.int64), -1, edges,
                                       len(labels))
        value_codes, uniques = group_codes(x, name)
        first = np.full(len(uniques), -1, dtype=np.int64)
        first[value_codes[::-1]] = np.arange(value_codes.shape[0] - 1, -1, -1)
        other, kind = -1, "values"
    else:
        *coded, uniques, first = categorical_codes(column, name, p, max_values, with_values=True)
        codes, offset, remap, labels, folded = coded
        other, kind = -1 if folded is None else labels.index(folded[1]), "categorical"
    digits = remap[codes[first].astype(np.int64) - offset]
    return coded, FeatureTable(name, kind, [feature_key(u) for u in uniques], digits.astype(np.int64), other,
                               np.zeros(0), len(labels))


def chunk_rows(n_sums):
    """Rows per chunk of a pass whose chunks each write ``n_sums`` sums: at least :data:`CHUNK_ROWS`, and at least
    a quarter of the sums' count, so that the partial buffers hold at most 32 bytes per row (four float64 a row,
    about what the pass reads). A function of the problem's sizes alone."""
    return max(CHUNK_ROWS, n_sums // 4)


def folds_of(n, n_folds, start=0):
    """The fold (uint8) of rows ``start .. start + n - 1``: a hash of the row's position (SplitMix64, Steele et al.
    2014) modulo ``n_folds``."""
    z = np.arange(start, start + n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return (z % np.uint64(n_folds)).astype(np.uint8)


class Passes:
    """The rows of a fit, ready for passes: patterns, logits, labels, weights, folds, and the splits' held-out
    folds (``held``: splits x folds). What :func:`fit_offsets` takes: ``n_splits``, ``n_patterns`` and
    :meth:`run`."""

    def __init__(self, pattern, lg, y, w, fold, held, n_patterns):
        self.args = (pattern, lg, y, np.zeros(0) if w is None else w, fold, held)
        self.n_splits = held.shape[0]
        self.n_patterns = n_patterns
        self.partials = Partials(pattern.shape[0], chunk_rows(self.n_splits * n_patterns * _k.N_SUMS),
                                 self.n_splits * n_patterns * _k.N_SUMS, self.n_splits * _k.N_TOTALS)

    def run(self, slope, beta):
        """Pattern sums (patterns x splits x 3) and totals (splits x 4) at ``slope`` (splits) and ``beta`` (splits
        x patterns), merged in chunk order."""
        self.partials.run(_k.fit_pass, *self.args, slope, np.ascontiguousarray(beta.T),
                          chunk_rows(self.n_splits * self.n_patterns * _k.N_SUMS),
                          work=self.partials.n_rows * self.n_splits * EVAL_WORK)
        sums, totals = (merge_in_order(buf) for buf in self.partials.bufs)
        return (sums.reshape(self.n_patterns, self.n_splits, _k.N_SUMS),
                totals.reshape(self.n_splits, _k.N_TOTALS))


def _newton_path(passes, pcells, n_cells, fractions, *, stop_early, step_tol, path_steps):
    r"""Fit each split along the penalties ``fractions`` of its :math:`\lambda_{max}`, warm-started, in lockstep (one
    pass of the rows per Newton step of every split). Returns ``(slope, b, held_losses)``: the last parameters of
    every split and, per penalty reached, the held-out log loss summed over the splits, the first entry that of
    the unchanged scores. With ``stop_early``, stops :data:`PATIENCE` penalties after the best. Each penalty but the
    last takes at most ``path_steps`` Newton steps (warm-started, one step lands close to the solution: the
    pathwise scheme of glmnet); a fit has converged when a Newton step would move no parameter by more than
    ``step_tol``."""
    n_splits = passes.n_splits
    n_patterns = passes.n_patterns
    start, patterns = _k.cell_patterns(pcells, n_cells)
    slope = np.ones(n_splits)
    b = np.zeros((n_splits, n_cells))
    beta = np.zeros((n_splits, n_patterns))
    sums, totals = passes.run(slope, beta)
    # the least penalty that keeps every offset at 0 (the slope aside): the largest gradient of a cell
    owner = np.repeat(np.arange(n_cells), np.diff(start))
    lam_max = np.array([np.abs(np.bincount(owner, weights=sums[patterns, s, 0], minlength=n_cells)).max()
                        for s in range(n_splits)])
    held = [float(totals[:, _k.HELD_LOSS].sum())]
    best = 0
    for j, fraction in enumerate(fractions, start=1):
        limit = MAX_NEWTON if j == len(fractions) else path_steps
        steps = np.zeros(n_splits, dtype=np.int64)
        lam = fraction * lam_max
        objective = totals[:, _k.TRAIN_LOSS] + lam * np.abs(b).sum(axis=1)
        base_slope, base_b = slope.copy(), b.copy()
        step_slope, step_b = np.zeros(n_splits), np.zeros((n_splits, n_cells))
        done = np.zeros(n_splits, dtype=bool)
        halvings = np.zeros(n_splits, dtype=np.int64)
        restored = False
        for _ in range(MAX_NEWTON * (MAX_HALVINGS + 1)):
            new_objective = totals[:, _k.TRAIN_LOSS] + lam * np.abs(b).sum(axis=1)
            need = []
            for s in range(n_splits):
                if done[s]:
                    continue
                rejected = new_objective[s] > objective[s] * (1 + 1e-13)
                if rejected and halvings[s] < MAX_HALVINGS:  # halve the step and look again
                    halvings[s] += 1
                    step_slope[s] *= 0.5
                    step_b[s] *= 0.5
                    slope[s] = base_slope[s] + step_slope[s]
                    b[s] = base_b[s] + step_b[s]
                    continue
                if rejected:  # no halving lowers it: keep the last accepted parameters
                    slope[s], b[s] = base_slope[s], base_b[s]
                    done[s] = restored = True
                    continue
                objective[s] = new_objective[s]
                halvings[s] = 0
                if steps[s] >= limit:
                    done[s] = True
                    continue
                need.append(s)
            # the splits' Newton directions are independent: one task each, on fastcal's threads
            directions = {s: np.empty(n_cells + 1) for s in need}
            _parallel.run([(_k.lasso_direction, (start, patterns, sums[:, s, 0].copy(), sums[:, s, 1].copy(),
                                                 sums[:, s, 2].copy(), totals[s, _k.GL], totals[s, _k.HLL], lam[s],
                                                 b[s], step_tol * 0.5, MAX_SWEEPS, directions[s])) for s in need])
            for s in need:
                delta = directions[s]
                step = delta[:n_cells] - b[s]
                if not max(np.abs(step).max(initial=0.0), abs(delta[n_cells])) > step_tol:
                    done[s] = True
                    continue
                steps[s] += 1
                base_slope[s], base_b[s] = slope[s], b[s].copy()
                step_slope[s], step_b[s] = delta[n_cells], step
                slope[s] = base_slope[s] + step_slope[s]
                b[s] = delta[:n_cells]
            if done.all():
                break
            sums, totals = passes.run(slope, _betas(pcells, b, beta))
        else:
            warnings.warn(f"the multicalibration fit did not converge at penalty {fraction:g} in {MAX_NEWTON} Newton "
                          f"steps.", ConvergenceWarning, stacklevel=4)
        if restored:  # the last pass was not at the parameters a split went back to
            sums, totals = passes.run(slope, _betas(pcells, b, beta))
        held.append(float(totals[:, _k.HELD_LOSS].sum()))
        if held[-1] < held[best]:
            best = j
        elif stop_early and j - best >= PATIENCE:
            break
    return slope, b, np.array(held)


def _betas(pcells, b, beta):
    for s in range(b.shape[0]):
        _k.pattern_offsets(pcells, b[s], beta[s])
    return beta


def segment_table(combos, n_segments, depth, sizes):
    """``(segment_features, segment_digits)`` (segments x ``max(depth, 1)``, -1 padded) of the segments that
    :func:`~._mce.choose_segments` chose (``combos``), the features' digit counts ``sizes``."""
    seg_features = np.full((n_segments, max(depth, 1)), -1, dtype=np.int64)
    seg_digits = np.full((n_segments, max(depth, 1)), -1, dtype=np.int64)
    for subset, mult, local, first, count in combos:
        keys = np.flatnonzero(local >= 0)
        for t, f in enumerate(subset):
            seg_features[first:first + count, t] = f
            seg_digits[first:first + count, t] = (keys // mult[t]) % sizes[f]
    return seg_features, seg_digits


def pattern_cells(model, pdigits, pbucket):
    """Each pattern's cells (patterns x (2 + 2 combinations), -1: none), from its digits and bucket."""
    feats, mult, local, local_start, first = model.combinations()
    pcells = np.empty((pdigits.shape[0], 2 + 2 * feats.shape[0]), dtype=np.int64)
    _k.segment_cells(np.ascontiguousarray(pdigits), pbucket, feats, mult, local, local_start, first,
                     model.n_buckets, pcells, 0, pdigits.shape[0])
    return pcells


def fit_offsets(model, pcells, make_passes, n_folds, effective, fold_weight):
    r"""The fitted :class:`SegmentModel`: the penalty chosen on the held-out log loss of the splits, then fitted on
    every row.

    ``model`` holds the features, segments and buckets (its slope and offsets are not read); ``pcells`` the cells of
    each pattern; ``make_passes(held)`` gives the rows' :class:`Passes` (or any object with ``n_splits``,
    ``n_patterns`` and ``run``) for held-out folds ``held`` (splits x ``n_folds``); ``effective`` is
    :math:`(\sum w)^2 / \sum w^2` and ``fold_weight`` the weight of each fold. Cross-fitting below
    :data:`HOLDOUT_ROWS` effective rows, one hold-out of :data:`HOLDOUT_SHARE` of the folds above.
    """
    n_segments, n_b = model.segment_features.shape[0], model.n_buckets
    n_cells = n_segments * (n_b + 1)
    if effective < HOLDOUT_ROWS:
        held = np.eye(n_folds, dtype=np.bool_)
    else:
        held = np.zeros((1, n_folds), dtype=np.bool_)
        held[0, :max(1, round(HOLDOUT_SHARE * n_folds))] = True
    held_weight = float(fold_weight[held.any(axis=0)].sum())
    train_weight = np.array([fold_weight[~h].sum() for h in held])
    if held_weight > 0 and train_weight.min() > 0:
        _, _, path = _newton_path(make_passes(held), pcells, n_cells, FRACTIONS, stop_early=True,
                                  step_tol=PATH_TOL, path_steps=1)
        path = path / held_weight
    else:  # too few rows to hold any out: nothing can show that a change helps
        path = np.zeros(1)
    best = int(np.argmin(path))
    slope, b, rho = 1.0, np.zeros(n_cells), math.nan
    if best > 0:
        rho = FRACTIONS[best - 1]
        slopes, bs, _ = _newton_path(make_passes(np.zeros((1, n_folds), dtype=np.bool_)), pcells, n_cells,
                                     FRACTIONS[:best], stop_early=False, step_tol=STEP_TOL, path_steps=1)
        slope, b = float(slopes[0]), bs[0]
    return SegmentModel(model.features, model.segment_features, model.segment_digits, model.bucket_edges, slope,
                        b.reshape(n_segments, n_b + 1), rho, path)


def fit_segment_model(p, y, w, columns, *, max_depth, max_values, min_samples, max_n_segments, n_buckets, n_folds):
    """The :class:`SegmentModel` of validated scores ``p``, 0/1 labels ``y``, weights ``w`` (None: unit) and
    segment ``columns`` (``(name, array, is_numerical)`` triples, categorical ones first)."""
    n = p.shape[0]
    coded, tables = [], []
    for name, column, is_numerical in columns:
        c, t = feature_table(name, column, is_numerical, p, max_values)
        coded.append((name, *c[:4]))
        tables.append(t)
    depth = len(tables) if max_depth is None else min(max_depth, len(tables))
    limit = math.inf if max_n_segments is None else max_n_segments
    cells, digits, cell_counts = cell_numbers(coded, n)
    labels = [(f[0], f[4]) for f in coded]
    combos, _, n_segments = choose_segments(labels, digits, cell_counts, depth, min_samples, limit)
    seg_features, seg_digits = segment_table(combos, n_segments, depth, [t.size for t in tables])
    x = np.ascontiguousarray(p, dtype=np.float64)
    lo, hi = float(x.min()), float(x.max())
    edges = bucket_edges(n, lo, hi, n_buckets, lambda ranks: order_statistics(x, ranks, lo, hi))
    model = SegmentModel(tables, seg_features, seg_digits, edges, 1.0, np.zeros(0), math.nan, np.zeros(0))
    n_b = model.n_buckets
    # the rows' patterns (cell x bucket), numbered among those present
    present, pattern = renumbered(cells.astype(np.int64) * n_b + model.buckets(p))
    pcells = pattern_cells(model, digits[present // n_b], present % n_b)
    lg = logits_of(p)
    y8 = np.ascontiguousarray(y, dtype=np.uint8)
    effective = float(n) if w is None else float(np.sum(w, dtype=np.float64)) ** 2 / float(np.dot(w, w))
    fold = folds_of(n, n_folds)
    fold_weight = np.bincount(fold, weights=w, minlength=n_folds)
    return fit_offsets(model, pcells, lambda held: Passes(pattern, lg, y8, w, fold, held, present.size), n_folds,
                       effective, fold_weight)
