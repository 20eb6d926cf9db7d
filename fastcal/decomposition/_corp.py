r"""CORP (:mod:`fastcal.decomposition`): the score decomposition, the reliability curve and its bands.

See the package's docstring for the method and its references; the
functions run on the PAV steps of :mod:`fastcal.isotonic` and the kernels of
:mod:`fastcal.decomposition._kernels`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np

from . import _kernels as _k
from .._matrices import top_label_problem
from .._core.params import Integer, Options, Real, check
from .._core.parallel import n_chunks, parallel_for
from .._core.results import Result
from .._engine.sort import argsort, sort_with
from .._core.validation import (
    as_float_array,
    as_label_array,
    check_consistent_length,
    check_probability_range,
    check_sample_weight,
    column_or_1d,
    is_binary,
)
from ..isotonic import pav_fit, sort_for_fit

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, NDArray

__all__ = [
    "CorpReliabilityResult",
    "ScoreDecomposition",
    "corp_reliability",
    "score_decomposition",
]

Scoring = Literal["brier", "log_loss"]


@dataclass(frozen=True, eq=False, repr=False)
class ScoreDecomposition(Result):
    """``score == miscalibration - discrimination + uncertainty`` (to rounding); see :func:`score_decomposition`."""

    score: float
    miscalibration: float
    discrimination: float
    uncertainty: float
    scoring: str


@dataclass(frozen=True, eq=False, repr=False)
class CorpReliabilityResult(Result):
    """The CORP reliability curve and its bands; see :func:`corp_reliability`.

    ``x`` are the block edges of the PAV fit (increasing), ``y`` the
    recalibrated probability at each; ``lower`` and ``upper`` (None without
    resamples) the pointwise band at ``level``.
    """

    x: NDArray[np.float64] = field(repr=False)
    y: NDArray[np.float64] = field(repr=False)
    lower: NDArray[np.float64] | None = field(repr=False)
    upper: NDArray[np.float64] | None = field(repr=False)
    level: float
    band: str
    n_resamples: int


# ---------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------


def check_binary_problem(y, p, sample_weight, *, multiclass="top_label", labels=None, stacklevel=1):
    """Validated ``(labels, p, w)`` of a binary problem; ``w`` None or positive weights (zero-weight rows dropped).

    The weights are rescaled by :func:`fastcal._core.validation.rescale_weights`
    (the results are invariant to the weight scale). ``p`` 1-D (or one
    column): probabilities of the positive class, with
    ``y`` 0/1 labels. ``p`` of shape (n, k), k >= 2: the top-label problem,
    ``p`` becoming the confidence ``max_j p[:, j]`` and the label whether the
    argmax is the class of ``y``, the columns being the classes in sorted
    order (``labels``, else those of ``y``: :func:`fastcal._core.labels.matrix_codes`).
    Rows of the matrix that do not sum to 1 warn as in ``brier_score_loss``
    (:func:`fastcal._matrices.check_row_sums`).
    The internal entry point of :mod:`fastcal.metrics` and :mod:`fastcal.dask`;
    ``stacklevel`` (of the warnings for rows off 1 and unsorted ``labels``) is counted from the caller.
    """
    multiclass = check("multiclass", multiclass, [Options("top_label")])
    parr = np.asarray(p)
    if parr.ndim == 2 and parr.shape[1] >= 2:
        P = as_float_array(parr, "p")
        y_arr = column_or_1d(y, "y")
        check_consistent_length(y=y_arr, p=P)
        labels, probs = top_label_problem(y_arr, P, labels, "p", "y", stacklevel=stacklevel + 1)
    else:
        if labels is not None:
            raise ValueError("labels is for an (n, k) p, whose columns are the classes; a 1-D p is the "
                             "probability of label 1.")
        y_arr = column_or_1d(y, "y")
        probs = as_float_array(column_or_1d(p, "p"), "p")
        check_consistent_length(y=y_arr, p=probs)
        labels = as_label_array(y_arr, "y")
        if not is_binary(labels):
            raise ValueError("y must hold binary labels 0 and 1 (or booleans); for classes pass an (n, k) p.")
        check_probability_range(probs, "p")
    w = check_sample_weight(sample_weight, probs.shape[0], rescale=True)
    if w is not None and w.min() == 0:
        keep = w > 0
        labels, probs, w = labels[keep], probs[keep], w[keep]
    return labels, probs, w


def _weights(w):
    return np.empty(0, dtype=np.float64) if w is None else w


# ---------------------------------------------------------------------------
# score decomposition
# ---------------------------------------------------------------------------
def score_sums(labels, p, w, scoring):
    """``(sum w s(p, y), sum w, sum w y)`` over validated rows, in fixed chunks (thread-count independent).

    The internal entry point for chunked callers (:mod:`fastcal.dask`).
    """
    n = p.shape[0]
    chunks = n_chunks(n, _k.CHUNK)
    out = np.zeros((chunks, 3))
    parallel_for(_k.score_sums, chunks, labels, p, _weights(w), scoring == "log_loss", out, rows=n)
    s, sw, swy = out.sum(axis=0)
    return float(s), float(sw), float(swy)


def uncertainty(base_rate, scoring):
    """The score of the constant prediction ``base_rate`` on data with that base rate."""
    q = base_rate
    if scoring == "brier":
        return q * (1.0 - q)
    return 0.0 - sum(v * math.log(v) for v in (q, 1.0 - q) if v > 0)  # 0.0 - 0.0: no negative zero


def decomposition_from_sums(score_sum, recal_sum, weight, positives, scoring):
    """:class:`ScoreDecomposition` from the total score of ``p``, of its recalibration, the total weight and
    the weighted positives."""
    score = score_sum / weight
    recal = recal_sum / weight
    unc = uncertainty(positives / weight, scoring)
    return ScoreDecomposition(score=score, miscalibration=score - recal, discrimination=unc - recal,
                              uncertainty=unc, scoring=scoring)


def shared_sort(labels, p, w):
    """The sort of the scores that :func:`decompose` ``(labels, p, w, ...)`` makes, for the caller to share with
    other statistics of the same rows (:func:`fastcal._auc.roc_auc`'s ``by_label``), then pass to
    :func:`decompose`; None where the fit sorts otherwise (see :func:`fastcal.isotonic._pav.sort_for_fit`).
    The scores are sorted as float64 (the fit's)."""
    return sort_for_fit(p.astype(np.float64, copy=False), labels, w)


def decompose(labels, p, w, scorings, by_label=None):
    """:class:`ScoreDecomposition` of validated rows for each of ``scorings``, from one PAV fit.

    ``labels`` 0/1, ``p`` probabilities (float32/float64), ``w`` None or
    non-negative weights (zero-weight rows are dropped here). ``by_label``:
    :func:`shared_sort` of the same rows, if made. The internal entry point
    of :func:`fastcal.metrics.calibration_report`.
    """
    if w is not None and w.min() == 0:
        keep = w > 0
        labels, p, w = labels[keep], p[keep], w[keep]
    sw, swy, _, _ = pav_fit(p.astype(np.float64, copy=False), labels, w, 1.0, by_label)
    out = []
    for scoring in scorings:
        recal_sum = float(_k.block_score(sw, swy, scoring == "log_loss"))
        score_sum, weight, positives = score_sums(labels, p, w, scoring)
        out.append(decomposition_from_sums(score_sum, recal_sum, weight, positives, scoring))
    return out


def score_decomposition(
    y: ArrayLike,
    p: ArrayLike,
    *,
    scoring: Scoring = "brier",
    sample_weight: ArrayLike | None = None,
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> ScoreDecomposition:
    r"""Decompose the Brier score or log loss into miscalibration, discrimination and uncertainty.

    With :math:`\hat p` the isotonic (PAV) recalibration of ``y`` on ``p``
    and :math:`\bar y` the weighted base rate,

    .. math::

        \mathrm{MCB} = \bar S(p) - \bar S(\hat p), \quad
        \mathrm{DSC} = \bar S(\bar y) - \bar S(\hat p), \quad
        \mathrm{UNC} = \bar S(\bar y), \quad
        \bar S(p) = \mathrm{MCB} - \mathrm{DSC} + \mathrm{UNC},

    where :math:`\bar S(q) = \sum_i w_i S(q_i, y_i) / \sum_i w_i` and
    :math:`S(q, y) = (q - y)^2` (``"brier"``) or :math:`-y \log q - (1 - y)
    \log(1 - q)` (``"log_loss"``, natural logarithm, unclipped: a prediction
    of 0 or 1 that is wrong makes the score and MCB infinite). Since the PAV
    fit minimises every proper score among monotone maps of ``p``, and the
    base rate is one, MCB >= 0 and DSC >= 0 (Dimitriadis, Gneiting & Jordan
    2021). The same as ``model_diagnostics.scoring.decompose`` with
    ``SquaredError()`` / ``LogLoss()``, to rounding: the sums are taken in
    another order (4e-16 for the Brier terms, 1e-14 for the log loss, at
    10^5 rows). There, a prediction within float64's resolution above the
    first of its tie group gets scikit-learn's interpolated value; here, as
    in the PAV fit, the value of its group.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        0/1 labels (booleans, any numeric dtype); with an (n, k) ``p``, class
        labels: the columns of ``p`` are the classes in sorted order, those of
        ``labels``, else the distinct labels of ``y`` (which must then number
        k), as in :func:`fastcal.log_loss`.
    p : array-like of shape (n_samples,) or (n_samples, n_classes)
        Predicted probabilities in [0, 1]: of the positive class, or of each
        class. float32 is read at its exact values; the PAV runs in float64
        and pools predictions closer than float64's resolution (1e-15),
        scikit-learn's rule.
    scoring : {"brier", "log_loss"}, default="brier"
        The proper score.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weights with a positive sum; zero-weight rows are ignored.
    multiclass : {"top_label"}, default="top_label"
        What an (n, k) ``p`` is decomposed as: the top-label problem, whose
        prediction is the confidence :math:`\max_j p_{ij}` and whose outcome
        is whether the argmax (the first, on ties) is the true class.
    labels : array-like of shape (n_classes,), optional
        The classes of the columns of an (n, k) ``p``, when ``y`` lacks some
        (e.g. ``range(k)`` for class indices); unsorted labels warn that the
        columns are taken in sorted order, as in scikit-learn's ``log_loss``.

    Returns
    -------
    ScoreDecomposition
        ``score``, ``miscalibration``, ``discrimination``, ``uncertainty``
        (floats) and ``scoring``.

    Notes
    -----
    One PAV fit (fastcal's sort-free path for unweighted 0/1 labels) and one
    parallel pass for :math:`\bar S(p)`; :math:`\bar S(\hat p)` comes from
    the PAV blocks, without predicting.

    References
    ----------
    Dimitriadis, T., Gneiting, T. and Jordan, A. I. (2021). Stable
    reliability diagrams for probabilistic classifiers. PNAS 118(8),
    e2016191118.
    Fissler, T., Lorentzen, C. and Mayer, M. (2022). Model comparison and
    calibration assessment. arXiv:2202.12780.

    Examples
    --------
    >>> from fastcal import score_decomposition
    >>> d = score_decomposition([0, 0, 1, 0, 1, 1], [0.1, 0.3, 0.35, 0.4, 0.8, 0.9])
    >>> round(d.score, 6), round(d.miscalibration, 6), round(d.discrimination, 6), round(d.uncertainty, 6)
    (0.122083, 0.03875, 0.166667, 0.25)
    """
    scoring = check("scoring", scoring, [Options("brier", "log_loss")])
    labels, probs, w = check_binary_problem(y, p, sample_weight, multiclass=multiclass, labels=labels, stacklevel=2)
    return decompose(labels, probs, w, (scoring,))[0]


# ---------------------------------------------------------------------------
# CORP reliability curve and bands
# ---------------------------------------------------------------------------
def _seed_key(random_state):
    if random_state is None:
        return np.uint64(np.random.default_rng().integers(0, 2**63))
    if isinstance(random_state, np.random.Generator):
        return np.uint64(random_state.integers(0, 2**63))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) and random_state >= 0:
        return np.random.SeedSequence(int(random_state)).generate_state(1, np.uint64)[0]
    raise TypeError(
        f"random_state must be None, a non-negative int or a numpy.random.Generator, got {random_state!r}."
    )


def corp_curve(sw, swy, xf, xl):
    """``(x, y)`` of the CORP curve from PAV blocks: each block's first and last prediction (once if equal)."""
    vals = swy / sw
    both = xl > xf
    x = np.empty(2 * sw.shape[0])
    x[0::2] = xf
    x[1::2] = xl
    y = np.repeat(vals, 2)
    keep = np.ones(x.shape[0], dtype=bool)
    keep[1::2] = both
    return x[keep], y[keep]


def corp_reliability(
    y: ArrayLike,
    p: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    n_resamples: int = 0,
    level: float = 0.9,
    band: Literal["consistency", "confidence"] = "consistency",
    random_state: int | np.random.Generator | None = None,
    multiclass: Literal["top_label"] = "top_label",
    labels: ArrayLike | None = None,
) -> CorpReliabilityResult:
    r"""The CORP reliability curve: the isotonic recalibration of ``y`` on ``p``, with resampling bands.

    The curve is the PAV fit :math:`\hat p` of the outcomes on the
    predictions, a step function that is constant on each block of pooled
    predictions. It needs no binning choice: the PAV chooses the bins, and
    the curve is the one consistent, optimally binned reliability curve
    (Dimitriadis, Gneiting & Jordan 2021). A calibrated ``p`` has its
    curve near the diagonal.

    With ``n_resamples > 0`` a pointwise band at ``level`` comes with it: at
    each ``x``, the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles
    (NumPy's default "linear" rule) of the recalibrated value over
    ``n_resamples`` refits:

    - ``band="consistency"`` (the paper's): the labels are redrawn as
      :math:`y_i^* \sim \mathrm{Bernoulli}(p_i)`, so the band shows where
      the curve of calibrated predictions would lie; the curve leaving it is
      evidence of miscalibration.
    - ``band="confidence"``: the rows are bootstrapped (``n`` draws with
      replacement); the band is a confidence band for the recalibration.
      Where a resample holds no row at a prediction, its value there is the
      one of the block to the left (the first block before all).

    Parameters
    ----------
    y, p, sample_weight, multiclass, labels
        As in :func:`score_decomposition` (an (n, k) ``p`` gives the
        top-label curve).
    n_resamples : int, default=0
        Number of resamples for the band; 0 for none.
    level : float, default=0.9
        Pointwise coverage of the band, in (0, 1).
    band : {"consistency", "confidence"}, default="consistency"
        What is resampled (above).
    random_state : int, numpy.random.Generator or None, default=None
        Seed of the resampling. Resample ``r`` draws from its own
        counter-based SplitMix64 stream (Steele, Lea & Flood 2014) keyed by
        the seed and ``r``, so the band is the same bit for bit whatever the
        number of threads.

    Returns
    -------
    CorpReliabilityResult
        ``x``: the block edges of the PAV fit (each block's smallest and
        largest distinct prediction, once if they coincide; increasing,
        float64); ``y``: the recalibrated probability at each (equal in
        pairs); ``lower``, ``upper``: the band at ``x`` (None without
        resamples); ``level``, ``band``, ``n_resamples``. Drawn as a
        line through ``(x, y)``, the curve is flat on each block and linear
        between blocks, as :class:`fastcal.IsotonicRegression` predicts.

    Notes
    -----
    The rows are sorted by prediction once (a parallel radix argsort and
    gather), for the fit and the resamples; each resample is then one O(n)
    pass (draws, tie groups and the PAV stack fused) over that order, the
    resamples run in parallel on fastcal's threads. Memory: the sorted rows,
    one n-sized scratch set per thread, and ``n_resamples * len(x)`` values.

    References
    ----------
    Dimitriadis, T., Gneiting, T. and Jordan, A. I. (2021). Stable
    reliability diagrams for probabilistic classifiers. PNAS 118(8),
    e2016191118.
    Steele, G. L., Lea, D. and Flood, C. H. (2014). Fast splittable
    pseudorandom number generators. OOPSLA.

    Examples
    --------
    >>> from fastcal import corp_reliability
    >>> c = corp_reliability([0, 0, 1, 0, 1, 1], [0.1, 0.3, 0.35, 0.4, 0.8, 0.9])
    >>> c.x.tolist(), c.y.tolist()
    ([0.1, 0.3, 0.35, 0.4, 0.8, 0.9], [0.0, 0.0, 0.5, 0.5, 1.0, 1.0])
    """
    n_resamples, level, band, key = check_band(n_resamples, level, band, random_state)
    labels, probs, w = check_binary_problem(y, p, sample_weight, multiclass=multiclass, labels=labels, stacklevel=2)
    p64 = probs.astype(np.float64, copy=False)
    lower = upper = None
    if n_resamples:
        # One sort for the fit and the resamples: the rows in score order, gathered on every thread.
        ps, ls, ws = sort_with(p64, labels, _weights(w))
        sw, swy, xf, xl = pav_fit(ps, ls, None if w is None else ws, 1.0)
        x, fit = corp_curve(sw, swy, xf, xl)
        ws = ws.astype(np.float64, copy=False)
        if band == "consistency":
            _k.order_ties_by_weight(ps, ws)  # the order of the rows every backend makes (see band_blocks)
        draws = _resample_sorted(ps, ls.astype(np.float64), ws, x, n_resamples, key, band)
        lower, upper = band_quantiles(draws, level)
    else:
        sw, swy, xf, xl = pav_fit(p64, labels, w, 1.0)
        x, fit = corp_curve(sw, swy, xf, xl)
    return CorpReliabilityResult(x=x, y=fit, lower=lower, upper=upper, level=float(level), band=band,
                           n_resamples=int(n_resamples))


def check_band(n_resamples, level, band, random_state):
    """:func:`corp_reliability`'s band parameters, checked: ``(n_resamples, level, band, key)``, ``key`` the
    seed's 64-bit word (0 without resamples)."""
    n_resamples = check("n_resamples", n_resamples, [Integer(0)])
    level = check("level", level, [Real(0, 1, open_low=True, open_high=True)])
    band = check("band", band, [Options("consistency", "confidence")])
    return n_resamples, level, band, _seed_key(random_state) if n_resamples else np.uint64(0)


def band_quantiles(draws, level):
    """``(lower, upper)``: the pointwise ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resampled
    curves ``draws`` (one row per resample)."""
    return np.quantile(draws, [(1 - level) / 2, (1 + level) / 2], axis=0)


def band_blocks(p64, w, offset, key, n_resamples):
    r"""The PAV blocks of every consistency resample of one score range of the rows: for a backend's partitions.

    The in-memory band sorts all the rows by score, equal scores by weight,
    and row ``i`` of that order draws :math:`y_i^* \sim \mathrm{Bernoulli}(p_i)`
    from the ``i``-th number of its resample's stream. A partition whose
    scores are a range of the whole that begins at a tie group of the whole
    (:func:`fastcal._engine.partition.tie_entries`), and whose first row is row
    ``offset`` of that order, makes the same order and the same draws here.

    Parameters
    ----------
    p64 : ndarray of float64
        The partition's predictions, in any order.
    w : ndarray or None
        Their weights (float64, rescaled by the caller as it wishes), or None.
    offset : int
        The number of rows of all the partitions before this one.
    key : numpy.uint64
        The seed's word (:func:`check_band`).
    n_resamples : int
        Resamples.

    Returns
    -------
    list of tuple
        Per resample, the PAV summary ``(sw, swy, xf, xl)`` of the partition
        (first and last tie-group scores of each block, as
        :func:`fastcal.isotonic._pav.summarise` makes them): merged in score
        order with the other partitions', the blocks of that resample over
        all the rows; the empty list for no rows.
    """
    if not p64.shape[0]:
        return []
    if w is None:
        ps, ws = np.sort(p64), np.empty(0)
    else:
        order = np.lexsort((w, p64))
        ps, ws = p64[order], np.ascontiguousarray(w[order], dtype=np.float64)
    starts = _tie_group_starts(ps)
    n_groups = starts.shape[0] - 1
    thr = _bernoulli_thresholds(ps)
    firsts = ps[starts[:-1]]
    lab = np.empty(ps.shape[0])
    bw, bwy = np.empty(n_groups), np.empty(n_groups)
    bg, bl = np.empty(n_groups, dtype=np.int64), np.empty(n_groups, dtype=np.int64)
    out = []
    with np.errstate(over="ignore"):  # the generator's products wrap modulo 2^64 (NumPy scalars without the JIT)
        for r in range(n_resamples):
            nb = _k.consistency_blocks(ws, thr, starts, int(offset), key, r, lab, bw, bwy, bg, bl)
            out.append((bw[:nb].copy(), bwy[:nb].copy(), firsts[bg[:nb]], firsts[bl[:nb]]))
    return out


def _tie_group_starts(ps):
    """The ``G + 1`` bounds of the tie groups of the sorted float64 ``ps`` (scikit-learn's rule, float64's
    resolution), int64."""
    starts = np.empty(ps.shape[0] + 1, dtype=np.int64)
    return starts[: _k.group_starts(ps, np.finfo(np.float64).resolution, starts) + 1]


def _bernoulli_thresholds(ps):
    """:func:`fastcal.decomposition._kernels.bernoulli_thresholds` of ``ps`` (uint64)."""
    thr = np.empty(ps.shape[0], dtype=np.uint64)
    _k.bernoulli_thresholds(ps, thr)
    return thr


def band_from_blocks(resamples, x):
    """``(n_resamples, len(x))`` curves from each resample's PAV summary over all the rows (see
    :func:`band_blocks`): the value at each ``x`` (a tie group's first score) is the mean of the last block
    beginning at or before it (of the first block before every block), as :func:`corp_reliability` evaluates."""
    out = np.empty((len(resamples), x.shape[0]))
    for r, (sw, swy, xf, _) in enumerate(resamples):
        k = np.maximum(np.searchsorted(xf, x, side="right") - 1, 0)
        out[r] = swy[k] / sw[k]
    return out


def resample_curves(labels, p64, w, x, n_resamples, key, band):
    """``(n_resamples, len(x))``: the recalibrated value at each ``x`` (sorted tie-group scores) of each resample.

    ``band`` is ``"consistency"``, ``"confidence"`` or ``"none"`` (the data itself, every row equal).
    """
    order = argsort(p64)
    ps = p64[order]
    ys = labels[order].astype(np.float64)
    ws = _weights(None if w is None else w[order].astype(np.float64, copy=False))
    del order
    return _resample_sorted(ps, ys, ws, x, n_resamples, key, band)


def _resample_sorted(ps, ys, ws, x, n_resamples, key, band):
    """:func:`resample_curves` of rows already in score order: scores ``ps``, float64 labels ``ys``, float64
    weights ``ws`` (empty: none)."""
    starts = _tie_group_starts(ps)
    targets = np.searchsorted(ps[starts[:-1]], x).astype(np.int64)
    mode = {"none": 0, "consistency": 1, "confidence": 2}[band]
    thr = _bernoulli_thresholds(ps) if mode == 1 else np.empty(0, dtype=np.uint64)
    del ps
    out = np.empty((n_resamples, x.shape[0]))
    # The generator's products wrap modulo 2^64 by design; NumPy scalars (under NUMBA_DISABLE_JIT) would warn.
    with np.errstate(over="ignore"):
        parallel_for(_k.resample_fits, n_resamples, ys, ws, thr, starts, targets, np.uint64(key), mode, out,
                     rows=n_resamples * ys.shape[0])
    return out
