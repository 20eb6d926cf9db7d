r"""Platt scaling over a :class:`~fastcal._engine.Rows` (beta calibration too, :mod:`fastcal.beta._rows`): Newton steps on
the caller's side.

Chunks are ``(scores, y, w)`` (``p`` for beta calibration), raw. One
:meth:`Rows.convert` validates and converts them (the in-memory fit's
errors, the scores named ``scores`` or ``p``) and returns each chunk's
preparation sums (:func:`fastcal.platt.prepare`: class weights, score range,
bad values); a backend that converts rows in each pass
(:meth:`Rows.convert_later`: Spark) makes one :meth:`Rows.map` of the sums
instead, and nothing is written back; a :meth:`Rows.map` collects the warm-start subsample
(:func:`fastcal.platt.subsample` of every chunk, the same share of each);
then every objective evaluation of the Newton solver
(:func:`fastcal.platt.fit_passes`, :func:`fastcal.beta.fit_passes`) is one
:meth:`Rows.map` of the fused objective/gradient/Hessian kernel
(:func:`fastcal.platt.array_pass`, :func:`fastcal.beta.array_pass`), its
sums added in chunk order; fits that advance together (the report's slope
and calibration in the large) share each map (:meth:`Passes.run_passes`). The weights of every chunk are rescaled by one
power of two, that of the largest weight of all
(:func:`fastcal._core.validation.weight_exponent`), as in memory.

Exactness
---------
Deterministic for given chunks (sums added in chunk order). The parameters
agree with the in-memory fit to the solver's tolerance, about 1e-10
relative: the per-chunk sums round differently from the in-memory kernel's
tasks, and the Newton iterations may stop one step apart. Degenerate fits
(one class, constant scores) are exactly the in-memory ones.
"""

from __future__ import annotations

import numpy as np

from .._engine import partition as _partition
from .._engine.chunked import merge_in_order
from .._engine import user_stacklevel
from .._core.validation import all_zero_weights, class_bytes, rescale_weights, weight_exponent
from ._model import array_pass, check_max_iter, check_tol, subsample, subsample_fraction
from ._scaling import fit_passes, fitted_estimator, merge_prepared, prepare

__all__ = ["Passes", "fit_platt"]


def _convert(chunk, x_dtype, name, fraction=None):
    """A converted chunk (:func:`_converted`, its labels then as the passes read them,
    :func:`fastcal._core.validation.class_bytes`) and its facts (:func:`_facts`)."""
    s, labels, w = _converted(chunk, x_dtype, name)
    facts, labels = _checked(s, labels, w, name, fraction)
    return (s, labels, w), facts


def _converted(chunk, x_dtype, name):
    """A raw chunk converted as the in-memory fit converts its rows (its errors, the scores named ``name``)."""
    x, y, w = chunk
    return _partition.convert_chunk(x, y, w, x_dtype, score_name=name)


def _facts(chunk, name, fraction):
    """The facts of a converted chunk, ``(prepare sums, rows, largest weight, subsample or None)``:
    :func:`fastcal.platt.prepare` finds bad values (then the in-memory checks raise their errors, naming the
    scores ``name``). With ``fraction``, the chunk's warm-start subsample (weights as given)."""
    return _checked(*chunk, name, fraction)[0]


def _checked(s, labels, w, name, fraction):
    """:func:`_facts` of the rows, and their labels as the passes read them (after the check)."""
    iout, fout = prepare(s, labels, w, name=name)
    labels = class_bytes(labels)
    sub = None if fraction is None else subsample(s, labels, w, fraction)
    return (iout, fout, s.shape[0], float(w.max()) if w is not None and w.shape[0] else 0.0, sub), labels


def _subsample(chunk, fraction, exponent):
    s, y, w = subsample(*chunk, fraction)
    return s, y, rescale_weights(w, exponent)[0]


def _pass(chunk, array_pass, exponent, *args):
    s, y, w = chunk
    return array_pass(s, y, rescale_weights(w, exponent)[0])(*args)


def _passes(chunk, array_pass, exponent, requests):
    """:func:`_pass` of every argument tuple of ``requests`` on one visit of the chunk."""
    s, y, w = chunk
    run = array_pass(s, y, rescale_weights(w, exponent)[0])
    return [run(*args) for args in requests]


class Passes:
    """The converted rows of a Platt or beta fit and the passes over them (see the module docstring)."""

    @classmethod
    def of(cls, conv, n, exponent, array_pass, fraction=None, subsamples=None):
        """The passes of ``array_pass`` over rows ``conv`` already converted (``n`` rows, weights rescaled by
        ``2**-exponent`` in each pass); ``subsamples``: the chunks' subsamples of ``fraction`` of their rows
        (weights as given), if the conversion took them."""
        self = cls.__new__(cls)
        self.conv, self.n, self.exponent, self.array_pass = conv, n, exponent, array_pass
        self.fraction, self.subsamples = fraction, subsamples
        return self

    def __init__(self, rows, x_dtype, weighted, name, array_pass):
        # The subsample the fit will ask for, taken in the conversion when the number of rows is known.
        n_rows = getattr(rows, "n_rows", None)
        self.fraction = None if not n_rows else subsample_fraction(n_rows)
        dtype = _partition.fit_dtype(x_dtype)
        if hasattr(rows, "convert_later"):  # converted in each pass (Spark): nothing written back
            self.conv = rows.convert_later(_converted, dtype, name)
            try:
                preps = self.conv.map(_facts, name, self.fraction)
            except BaseException:
                self.conv.release()
                raise
        else:
            self.conv, preps = rows.convert(_convert, dtype, name, self.fraction)
        self.subsamples = [p[4] for p in preps]
        self.array_pass = array_pass
        self.n = sum(p[2] for p in preps)
        if self.n == 0 or (weighted and not sum(float(p[1].sum()) for p in preps) > 0):
            self.conv.release()
            if self.n == 0:
                raise ValueError(f"{name} must have at least 1 element, got 0.")
            raise all_zero_weights()
        self.exponent = weight_exponent(None, max(p[3] for p in preps))
        self.prepared = merge_prepared([(p[0], p[1]) for p in preps], self.exponent)

    def rows(self, fraction):
        if fraction == self.fraction:  # taken in the conversion
            s, y, w = (None if parts[0] is None else np.concatenate(parts) for parts in zip(*self.subsamples))
            return s, y, rescale_weights(w, self.exponent)[0]
        subs = self.conv.map(_subsample, fraction, self.exponent)
        return tuple(None if parts[0] is None else np.concatenate(parts) for parts in zip(*subs))

    def run_pass(self, *args):
        return merge_in_order(np.stack(self.conv.map(_pass, self.array_pass, self.exponent, *args)))

    def run_passes(self, requests):
        """:meth:`run_pass` of every argument tuple of ``requests``, from one visit of each chunk (the same sums)."""
        sums = self.conv.map(_passes, self.array_pass, self.exponent, list(requests))
        return [merge_in_order(np.stack([chunk[i] for chunk in sums])) for i in range(len(requests))]


def fit_platt(rows, *, x_dtype, weighted, max_iter=100, tol=None):
    """Fit :class:`fastcal.PlattScaling` on ``rows`` of ``(scores, y, w)``: see the module docstring.

    ``max_iter`` and ``tol`` as in :class:`fastcal.PlattScaling`; about three
    passes over the rows after the conversion.
    """
    max_iter_c, tol_c = check_max_iter(max_iter), check_tol(tol)
    passes = Passes(rows, x_dtype, weighted, "scores", array_pass)
    try:
        fit = fit_passes(passes.prepared, passes.n, weighted, passes.run_pass, passes.rows, max_iter_c, tol_c,
                               passes.exponent)
    finally:
        passes.conv.release()
    return fitted_estimator(fit, max_iter, tol, stacklevel=user_stacklevel())
