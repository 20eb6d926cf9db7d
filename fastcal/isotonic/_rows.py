r"""The exact isotonic fit over a :class:`~fastcal._engine.Rows`: range partition by score, PAV per part, merge.

Chunks are ``(scores, y, w)`` as the backend has them (``w`` None in every
chunk when ``weighted`` is False). The driver

1. converts and validates every chunk (:func:`fastcal._engine.partition.prepare_chunk`:
   the in-memory fit's errors), summarising it (rows, weights, a strided
   sample of the scores) and, unless ``increasing="auto"``, dropping its rows
   of weight zero;
2. cuts the score range at quantiles of the samples (:meth:`Rows.partition`);
3. summarises the head of every partition (where its first tie group can
   begin) and, with ``increasing="auto"``, its Spearman partial sums; with a
   given direction it fits the partition in the same visit (step 5), which
   is the fit when every bound is clean;
4. for partitions that begin less than the dtype's resolution above the end
   of the one before, follows the chain of tie groups across the bound
   (:func:`fastcal._engine.partition.chain_exits`), and re-cuts the partitioned rows
   with each bound moved to where the whole fit's tie group begins
   (:func:`fastcal._engine.partition.tie_entries`): every part then begins at the
   start of one of the whole fit's tie groups;
5. fits each part where it lives (:func:`fastcal.isotonic._pav.summarise`)
   and merges the parts' PAV blocks in score order
   (:func:`fastcal.isotonic._pav.merge`).

A backend with :meth:`Rows.convert_later` and :meth:`Rows.describe` (Spark)
cuts before it converts (:func:`_cut_raw`): step 2's bounds come from its
own sample of the raw scores, and step 1's conversion and summaries are made
in step 3's visit of each partition, which then fits it too with the
exponent of the largest raw weight (checked against the summaries). The
rows are visited once where nothing else is needed.

Exactness
---------
The thresholds (``X_thresholds_``, ``X_min_``, ``X_max_``) and the direction
are bit-identical to ``IsotonicRegression(**params).fit`` on the same rows,
whatever the chunks, the bounds or the backend: the PAV blocks of a range of
scores that begins at a tie-group start are unions of the whole fit's blocks.
The block means (``y_thresholds_``) agree to the rounding of their float64
sums, which are added in another order (a few ulps; exact at weights that
are powers of two and 0/1 labels when no block spans two parts).
"""

from __future__ import annotations

import numpy as np

from .._engine import partition as _partition
from .._engine import partition_count, user_stacklevel
from .._core.validation import rescale_weights, weight_exponent
from . import _pav

__all__ = ["PARTITION_ROWS", "clean_parts", "fit_isotonic", "sample_size"]

#: Default rows per partition (about 150 MB of float64 scores, labels and
#: weights with the fit's working memory).
PARTITION_ROWS = 1 << 23


def sample_size(n):
    """Scores sampled from a chunk of ``n`` rows: one per 4096 rows, 64 to 4096."""
    return max(64, min(_partition.SAMPLE_PER_CHUNK, n >> 12))


def _convert(chunk, x_dtype, auto):
    """A validated chunk and its :class:`fastcal._engine.partition.ChunkSummary`; rows of weight zero dropped
    unless ``auto`` (Spearman's rho counts them, as in memory)."""
    x, y, w = chunk
    xs, labels, ws = _partition.prepare_chunk(x, y, w, x_dtype, score_name="X")
    summary = _partition.summarize_chunk(xs, labels, ws, sample_size=sample_size(xs.shape[0]), binary=auto)
    if ws is not None and not auto and summary.has_zero:
        keep = ws > 0
        xs, labels, ws = xs[keep], labels[keep], ws[keep]
    return (xs, labels, ws), summary


def _prepare(chunk, x_dtype):
    """A chunk validated and converted (:func:`fastcal._engine.partition.prepare_chunk`), rows of weight zero kept."""
    return _partition.prepare_chunk(*chunk, x_dtype, score_name="X")


def _summary_head_and_fit(part, eps, auto, sign, exponent, centered):
    """The first visit of a partition cut from raw rows (:func:`_cut_raw`): its summary, its :func:`_head` and,
    with a known direction, its :func:`_fit_part` (rows of weight zero still in it)."""
    x, labels, w = part
    summary = _partition.summarize_chunk(x, labels, w, sample_size=1, binary=auto)
    keep_zero = w is not None
    head = _head(part, eps, keep_zero, auto)
    return summary, head, None if auto else _fit_part(part, sign, keep_zero, exponent, centered)


def _checked(summaries, weighted, auto):
    """The checks of step 1 on the chunks' summaries (the in-memory fit's errors); the weights' exponent."""
    if sum(s.n for s in summaries) == 0:
        raise ValueError("X must have at least 1 element, got 0.")
    _partition.check_total_weight(summaries, weighted)
    if auto:
        _partition.auto_needs_binary(summaries)
    return _partition.global_weight_exponent(summaries)


def _cut_converted(rows, dtype, weighted, auto, n_partitions):
    """Steps 1-2: ``(parts, summaries, exponent)``, the rows converted (:meth:`Rows.convert`), checked
    (:func:`_checked`), then cut."""
    conv, summaries = rows.convert(_convert, dtype, auto)
    try:
        exponent = _checked(summaries, weighted, auto)
        if n_partitions is None:
            n_fit = sum(s.n_fit for s in summaries)
            n_partitions = partition_count(n_fit, len(summaries), rows.parallelism, PARTITION_ROWS)
        return conv.partition(_partition.choose_bounds(summaries, int(n_partitions), dtype)), summaries, exponent
    finally:
        if conv is not rows:
            conv.release()


def _cut_raw(rows, dtype, eps, weighted, n_partitions, sign, centered, auto):
    """Steps 1-3 for a backend that cuts its raw rows itself (:meth:`Rows.convert_later`, :meth:`Rows.describe`):
    ``(parts, summaries, exponent, (heads, blocks))``.

    The bounds come from the backend's sample of the raw scores and the
    weights' exponent from their largest raw value; the rows are cut raw and
    validated in the partitions' first visit, which summarises each one
    (the chunk summaries of step 1, then checked: :func:`_checked`), its
    head, and fits it when the direction is known. Valid rows give the
    exponent of step 1; fits made with another (invalid weights raise first)
    are dropped (``blocks`` None).
    """
    n, n_chunks, sample, largest = rows.describe(0, _partition.SAMPLE_PER_CHUNK * max(1, int(rows.parallelism)),
                                                 2 if weighted else None)
    if n == 0:
        raise ValueError("X must have at least 1 element, got 0.")
    exponent = weight_exponent(None, largest) if weighted else 0
    if n_partitions is None:
        n_partitions = partition_count(n, n_chunks, rows.parallelism, PARTITION_ROWS)
    sample = np.asarray(sample, dtype=np.float64)
    sample = sample[np.isfinite(sample)].astype(dtype)
    bounds = _partition.quantile_bounds(sample, np.ones(sample.shape[0]), int(n_partitions), dtype)
    lazy = rows.convert_later(_prepare, dtype)
    try:
        parts = lazy.partition(bounds)
    finally:
        lazy.release()
    try:
        first = parts.map(_summary_head_and_fit, eps, auto, sign, exponent, centered)
        summaries = [f[0] for f in first]
        checked = _checked(summaries, weighted, auto)
    except BaseException:
        parts.release()
        raise
    blocks = None if auto or checked != exponent else [f[2] for f in first]
    return parts, summaries, checked, ([f[1] for f in first], blocks)


def _positive(part, keep_zero):
    x, y, w = part
    if keep_zero and w is not None:
        keep = w > 0
        return x[keep], y[keep], w[keep]
    return x, y, w


def _head(part, eps, keep_zero, auto):
    """A partition's :func:`fastcal._engine.partition.head_summary` and (``auto``) its Spearman partial sums."""
    sp = _partition.spearman_partial(part[0], part[1]) if auto else None
    return (*_partition.head_summary(part[0], part[2] if keep_zero else None, eps), sp)


def _head_and_fit(part, eps, keep_zero, sign, exponent, centered):
    """:func:`_head` and :func:`_fit_part` of a partition, in one visit."""
    return _head(part, eps, keep_zero, False), _fit_part(part, sign, keep_zero, exponent, centered)


def partition_exits(part, eps, wanted, keep_zero):
    """The chain exits of the candidates ``wanted[lo]`` of the partition whose smallest (fitted) score is ``lo``;
    None for the other partitions."""
    x = _positive(part, keep_zero)[0]
    if not x.shape[0]:
        return None
    cands = wanted.get(float(x.min()))
    return None if cands is None else _partition.chain_exits(np.sort(x), eps, cands)


def _fit_part(part, sign, keep_zero, exponent, centered):
    x, y, w = _positive(part, keep_zero)
    if not x.shape[0]:
        return None
    w = rescale_weights(w, exponent)[0]  # one exponent for all parts: merge adds them
    return _pav.summarise(x, y, w, sign, centered=centered)


def moved_bounds(heads, entries, dtype):
    """The bounds that cut partitions with these ``heads`` into the fit's parts.

    ``entries`` maps each non-empty partition to its entry
    (:func:`fastcal._engine.partition.tie_entries`). Bound ``j - 1`` (the start of
    partition ``j``) moves up to partition ``j``'s entry; to the next
    partition's bound when partition ``j`` is empty or wholly in the part
    before (entry None), and to +inf after the last entry.
    """
    n_parts = len(heads)
    out = np.empty(max(0, n_parts - 1), dtype=dtype)
    nxt = np.inf
    for j in range(n_parts - 1, 0, -1):
        if heads[j][0] and entries[j] is not None:
            nxt = entries[j]
        out[j - 1] = nxt
    return out


def clean_parts(parts, heads, eps, dtype, keep_zero):
    """Step 4: ``(parts, recut)``, the partitions re-cut so that each begins at a tie group of the whole.

    ``heads`` are the partitions' :func:`_head` (of the rows of positive
    weight with ``keep_zero``, else of all the rows). Where a partition
    begins less than ``eps`` above the one before, the chain of tie groups
    is followed across the bound and the bound moved to where the whole's
    tie group begins; ``recut`` says whether any moved (the old ``parts``
    are then released).
    """
    need = _partition.unclean_boundaries(heads, eps)
    if not need:
        return parts, False
    wanted = {float(heads[j][1]): heads[j][3] for j in need}
    found = parts.map(partition_exits, eps, wanted, keep_zero)
    exits = {j: found[j] for j in need}
    entries = dict(_partition.tie_entries(heads, eps, exits.__getitem__))
    units = parts.partition(moved_bounds(heads, entries, dtype))
    if units is not parts:
        parts.release()
    return units, True


def fit_isotonic(rows, *, x_dtype, weighted, n_partitions=None, **params):
    """Fit :class:`fastcal.IsotonicRegression` on ``rows`` of ``(scores, y, w)``: see the module docstring.

    Parameters
    ----------
    rows : Rows
        Chunks ``(scores, y, w)``, raw (validated here).
    x_dtype : dtype
        The declared dtype of the scores (fitted in float32 if float32, else float64).
    weighted : bool
        Whether the chunks carry weights.
    n_partitions : int, optional
        Score ranges fitted apart. Default: one per :data:`PARTITION_ROWS`
        rows, at least ``rows.parallelism``, at most one per chunk.
    **params
        ``IsotonicRegression`` parameters.

    Returns
    -------
    IsotonicRegression
        Fitted; thresholds bit-identical to the in-memory fit.
    """
    from .._core.params import Integer, check
    from ._regression import new_estimator, set_fitted_blocks

    n_partitions = check("n_partitions", n_partitions, [Integer(1), None])
    est = new_estimator(params)
    auto = est.increasing == "auto"
    dtype = _partition.fit_dtype(x_dtype)
    eps = _partition.resolution(dtype)

    sign = 1.0 if est.increasing else -1.0  # known unless auto
    if hasattr(rows, "convert_later"):
        parts, summaries, exponent, first = _cut_raw(rows, dtype, eps, weighted, n_partitions, sign, est.centered,
                                                     auto)
        keep_zero = weighted  # rows of weight zero were cut with the others
    else:
        parts, summaries, exponent = _cut_converted(rows, dtype, weighted, auto, n_partitions)
        first = None
        keep_zero = auto and any(s.has_zero for s in summaries)
    try:
        n = sum(s.n for s in summaries)
        blocks = None
        if first is not None:
            heads, blocks = first  # blocks None: the first visit's fits used another exponent (never for valid weights)
        elif auto:
            heads = parts.map(_head, eps, keep_zero, auto)
        else:
            # The direction is known: fit every partition in the pass that summarises its head. Where all the
            # bounds are clean (the partitions are the parts), that was the fit.
            visits = parts.map(_head_and_fit, eps, keep_zero, sign, exponent, est.centered)
            heads, blocks = [h for h, _ in visits], [b for _, b in visits]
        if auto:
            rho = _partition.spearman_from_partials([h[4] for h in heads])
            est.increasing_ = _partition.increasing_from_rho(rho, n, stacklevel=user_stacklevel() + 1)
            sign = 1.0 if est.increasing_ else -1.0
        else:
            est.increasing_ = bool(est.increasing)

        parts, recut = clean_parts(parts, heads, eps, dtype, keep_zero)
        if recut:
            blocks = None
        if blocks is None:
            blocks = parts.map(_fit_part, sign, keep_zero, exponent, est.centered)
    finally:
        parts.release()
    return set_fitted_blocks(est, _pav.merge([b for b in blocks if b is not None]))

