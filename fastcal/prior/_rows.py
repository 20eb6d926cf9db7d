r"""The EM estimate of new class priors (:func:`fastcal.estimate_priors_em`) over a :class:`~fastcal._engine.Rows`.

Chunks are ``(p,)``, P(y = 1) of a binary problem, or ``(p_0, ..., p_{k-1})``,
one column a class, raw. One :meth:`Rows.convert` validates and converts
them (:func:`fastcal.prior._em.em_source`: the in-memory errors; float32 stays
float32) into the matrix or column the kernels read. Then every EM map
(Saerens, Latinne & Decaestecker 2002) is one :class:`~fastcal._engine.Reduction`
at the current priors:

summarise
    :func:`fastcal.prior._em.em_summarise` of a chunk: one fused E-step pass,
    the posteriors' column sums, the log-likelihood (with SQUAREM), the
    invalid values and rows (first pass only);
merge
    :func:`fastcal.prior._em.em_merge`, in chunk order;
finish
    :func:`fastcal.prior._em.em_finish`: the new priors and the log-likelihood,
    or the in-memory errors about ``proba``.

The iteration (plain EM or SQUAREM, :func:`fastcal.prior._em.iterate_em`) runs
on the caller's side, as in memory. Adjusting the rows to the estimated
priors is a map (:func:`fastcal.adjust_priors` of each chunk, with
``train_priors`` and the estimate as ``new_priors``), left to the adapter.

Exactness
---------
Deterministic for given chunks (summaries merged in chunk order). With one
chunk, or with chunks of ``fastcal.prior._kernels.EM_CHUNK`` rows each (the
last may be shorter), the estimate is the in-memory one bit for bit: the same
kernels on the same fixed chunks, the same merges. With other cuts each
chunk's sums are rounded before they are merged, a few ulp away from the
in-memory merge of the same rows, so the priors agree with the in-memory
estimate to about ``tol`` (EM may stop one step apart).
"""

from __future__ import annotations

import numpy as np

from .._engine import Reduction, reduce
from . import _em

__all__ = ["estimate_priors_em"]


def _convert(chunk, k, x_dtype):
    """A chunk as the kernels read it, and its number of rows."""
    arr = chunk[0] if len(chunk) == 1 else np.column_stack(chunk)
    if np.shape(arr)[0] == 0:
        arr = np.asarray(arr, dtype=x_dtype)
    src = _em.em_source(arr, k)
    return (src,), src.shape[0]


def _summarise(chunk, pi, train, check, want_ll):
    return _em.em_summarise(chunk[0], pi, train, check, want_ll)


#: One EM map over the rows: the chunks' summaries, merged in chunk order.
EM_STEP = Reduction(_summarise, _em.em_merge)


def estimate_priors_em(rows, *, x_dtype, weighted=False, train_priors, max_iter=1000, tol=1e-8, accelerate=True):
    """The EM estimate of the new class priors of the rows: ``(priors, n_iter, converged)`` as in
    :class:`fastcal.PriorEMResult` (see the module docstring).

    ``rows`` of ``(p,)`` or ``(p_0, ..., p_{k-1})``; ``x_dtype`` the dtype of
    the probabilities; ``weighted`` must be False (the EM has no sample
    weights); the other parameters are those of :func:`fastcal.estimate_priors_em`,
    which warns alike when the iterations do not converge. One pass over the
    rows for the conversion, then one a map.
    """
    if weighted:
        raise ValueError("estimate_priors_em takes no sample weights.")
    max_iter, tol, accelerate, train = _em.check_em(train_priors, max_iter, tol, accelerate)
    k = train.shape[0]
    conv, sizes = rows.convert(_convert, k, np.dtype(x_dtype))
    try:
        if sum(sizes) == 0:
            raise ValueError("proba must have at least one row.")
        first = [True]

        def em_step(pi):
            check, first[0] = first[0], False
            return _em.em_finish(reduce(conv, EM_STEP, pi, train, check, accelerate), pi, train)

        pi, delta, converged, n_iter = _em.iterate_em(em_step, train, max_iter, tol, accelerate)
    finally:
        conv.release()
    if not converged:
        _em.warn_em_not_converged(max_iter, delta, tol)
    return pi, n_iter, converged
