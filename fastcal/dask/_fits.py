"""Fits on Dask data: isotonic regression, Platt scaling, beta calibration, histogram binning, and the multiclass
calibrators."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from ..metrics import rows as _binned
from ..isotonic import rows as _isotonic
from ..beta import rows as _beta_rows
from ..platt import rows as _platt_rows
from ..multiclass import rows as _multiclass_rows
from ._rows import call_driver, matrix_rows, metric

if TYPE_CHECKING:
    from typing import TypeVar, Unpack

    from ..multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
    from ..temperature import TemperatureScaling

    Multiclass = TypeVar("Multiclass", TemperatureScaling, VectorScaling, BiasCorrectedTemperatureScaling,
                         MatrixScaling, DirichletCalibration)

    from ..beta import BetaCalibration
    from ..histogram import HistogramBinning
    from ..isotonic import IsotonicParams, IsotonicRegression
    from ..platt import PlattScaling
    from .._typing import DaskData, DaskWeights

# ---------------------------------------------------------------------------
# Isotonic regression.
# ---------------------------------------------------------------------------


def fit_isotonic(
    scores: DaskData,
    y: DaskData,
    sample_weight: DaskWeights = None,
    *,
    n_partitions: int | None = None,
    **params: Unpack[IsotonicParams],
) -> IsotonicRegression:
    """Fit :class:`fastcal.IsotonicRegression` on Dask data: exactly the in-memory fit.

    Parameters
    ----------
    scores : dask.array.Array or dask.dataframe.Series
        Scores (1-D, or one column), finite; float32 stays float32.
    y : dask.array.Array, dask.dataframe.Series or array-like
        Targets (0/1 labels for calibration), same length.
    sample_weight : dask or NumPy array, float, or None
        Non-negative weights; rows of weight zero are dropped, as in ``fit``.
    n_partitions : int, optional
        Score ranges the data is shuffled into, each fitted on one worker.
        Default: one per 2^23 rows (at least one per worker thread, at most
        one per input chunk).
    **params
        ``IsotonicRegression`` parameters (``y_min``, ``y_max``,
        ``increasing``, ``out_of_bounds``, ``centered``).

    Returns
    -------
    IsotonicRegression
        Fitted, with the same thresholds as ``IsotonicRegression(**params).fit``
        on the computed arrays (block means equal to ~1e-15: sums are added
        in another order).

    Notes
    -----
    Passes: the chunks are validated and converted (and
    persisted), a strided sample of each (one score in 4096, 64 to 4096)
    gives the partition boundaries; each chunk is split by score range and
    the pieces are shuffled to the partitions (persisted); a small summary
    of each partition finds boundaries that fall inside a run of scores
    closer than the dtype's resolution (then a small round follows the tie
    groups across them, and only the partitions whose bounds move are split
    again); each partition is fitted where it lives and only its PAV blocks
    travel to the client. Memory: the data is held once as chunks and once
    as partitions during the shuffle.

    ``increasing="auto"`` computes Spearman's rho exactly from the range
    partitions (average ranks of the scores; the ranks of 0/1 labels are
    affine in the labels), so it is supported for 0/1 labels only; pass the
    direction explicitly for other targets.

    Examples
    --------
    >>> import numpy as np, dask.array as da
    >>> import fastcal, fastcal.dask
    >>> rng = np.random.default_rng(0)
    >>> x = rng.random(100_000); y = (rng.random(100_000) < x).astype(np.uint8)
    >>> iso = fastcal.dask.fit_isotonic(da.from_array(x, chunks=25_000), da.from_array(y, chunks=25_000))
    >>> ref = fastcal.IsotonicRegression().fit(x, y)
    >>> bool(np.array_equal(iso.X_thresholds_, ref.X_thresholds_))
    True
    """
    return call_driver(_isotonic.fit_isotonic, scores, y, sample_weight, "X", "y", n_partitions=n_partitions, **params)


# ---------------------------------------------------------------------------
# Platt scaling and beta calibration: one first round, then rounds of sums.
# ---------------------------------------------------------------------------


def fit_platt(
    scores: DaskData,
    y: DaskData,
    sample_weight: DaskWeights = None,
    *,
    max_iter: int = 100,
    tol: float | None = None,
) -> PlattScaling:
    """Fit :class:`fastcal.PlattScaling` on Dask data: a, b equal to the in-memory fit (to ~1e-10).

    Parameters
    ----------
    scores : dask.array.Array or dask.dataframe.Series
        Scores, finite.
    y : dask.array.Array, dask.dataframe.Series or array-like
        0/1 labels.
    sample_weight : dask or NumPy array, float, or None
        Non-negative weights with a positive sum.
    max_iter, tol
        As in :class:`fastcal.PlattScaling`.

    Returns
    -------
    PlattScaling
        Fitted (``a_``, ``b_``, ``n_iter_``, ``converged_``).

    Notes
    -----
    The validated chunks are persisted (held in the workers' memory for the
    passes). One round computes the class weights and the score range of
    every chunk and collects a subsample (1/16 of the rows, at most 2^20, in
    evenly spaced blocks) from which the Newton iterations start, solved on
    the client. Each Newton iteration is then one round: every chunk's
    objective, gradient and Hessian sums from the fused Numba kernel, added
    on the client; the 2x2 Newton step, line search and stopping rule are
    those of :func:`fastcal.platt_scaling` (about two to three rounds).
    """
    return call_driver(_platt_rows.fit_platt, scores, y, sample_weight, "scores", "y", max_iter=max_iter, tol=tol)


def fit_beta(
    p: DaskData,
    y: DaskData,
    sample_weight: DaskWeights = None,
    *,
    parameters: Literal["abm", "ab", "am"] = "abm",
    max_iter: int = 100,
    tol: float | None = None,
) -> BetaCalibration:
    """Fit :class:`fastcal.BetaCalibration` on Dask data: a, b, c equal to the in-memory fit (to ~1e-10).

    ``p`` holds probabilities in [0, 1]; the rest as in :func:`fit_platt`,
    whose rounds this follows: one round of preparation and subsample, then
    one round per Newton iteration, each chunk's fused objective, gradient
    and 3x3 Hessian sums added on the client in chunk order (and, for "abm"
    with a negative a or b, the rounds of the refit).
    """
    return call_driver(_beta_rows.fit_beta, p, y, sample_weight, "p", "y", parameters=parameters, max_iter=max_iter,
                       tol=tol)


def fit_histogram(
    p: DaskData,
    y: DaskData,
    sample_weight: DaskWeights = None,
    *,
    n_bins: int = 10,
    strategy: Literal["uniform", "quantile"] = "uniform",
) -> HistogramBinning:
    """Fit :class:`fastcal.HistogramBinning` on Dask data: equal to the in-memory fit.

    The bins are those of :func:`calibration_curve` (the "quantile" edges
    exactly NumPy's percentiles of all of ``p``, the outer ones moved to 0
    and 1), the bin table the chunks' tables added in chunk order, so the
    values equal the in-memory fit's up to the order of the sums. ``p`` holds
    probabilities in [0, 1]; labels as in the Dask diagnostics ({0, 1} or
    {-1, 1}), whose checks (and messages, naming ``y_prob`` and ``y_true``)
    it shares.
    """
    return metric(_binned.fit_histogram, y, p, sample_weight, n_bins=n_bins, strategy=strategy)


# ---------------------------------------------------------------------------
# The multiclass calibrators: two conversions, then rounds of sums.
# ---------------------------------------------------------------------------


def fit_multiclass(
    calibrator: Multiclass,
    X: DaskData,
    y: DaskData,
    sample_weight: DaskWeights = None,
) -> Multiclass:
    """Fit a multiclass calibrator on Dask data: a fitted copy of ``calibrator``, equal to the in-memory fit.

    Parameters
    ----------
    calibrator : TemperatureScaling, VectorScaling, BiasCorrectedTemperatureScaling, MatrixScaling or \
            DirichletCalibration
        Unfitted; its parameters are used, and it is not modified.
    X : dask.array.Array or dask.dataframe.DataFrame
        (n, k) logits or probabilities (one column per class; read as the
        calibrator's ``input_type`` says), or one column of binary decision
        values (1-D, or a Series).
    y : dask.array.Array, dask.dataframe.Series or array-like
        Class indices in ``0 .. k - 1``, aligned with the rows of ``X``.
    sample_weight : dask or NumPy array, float, or None
        Non-negative weights with a positive sum.

    Returns
    -------
    The calibrator's class, fitted: the same parameters as
    ``calibrator.fit(X.compute(), y.compute(), sample_weight)`` to the
    solver's tolerance (about 1e-10; the warm starts are the in-memory ones),
    the same errors and warnings.

    Notes
    -----
    :func:`fastcal.multiclass.rows.fit_softmax`, the driver of every
    backend: two passes check and convert the chunks (persisted: whether
    the scores are probabilities is decided on all rows, as in memory),
    then each step of temperature scaling's start and each Newton step is
    one round of per-chunk sums from the in-memory kernels, added on the
    client. The client holds the warm-start subsamples (at most 2^20 + 2^16
    rows of k logits) and the k(k + 1) x k(k + 1) Hessian.
    """
    rows, k = matrix_rows(y, X, sample_weight, x_name="X", y_name="y")
    return _multiclass_rows.fit_softmax(rows, n_columns=k, calibrator=calibrator, weighted=sample_weight is not None)
