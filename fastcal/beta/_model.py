r"""Beta calibration's model for the Newton driver: the frame of its features, its objective, the passes over rows
in memory, the midpoint and the fit of constant probabilities.

What the fits of :mod:`fastcal.beta._calibrator` (from any source of passes, from validated arrays, of many
groups' rows at once) share, on the kernels of :mod:`fastcal.beta._kernels`; the Newton driver
(:mod:`fastcal._engine.newton`) and Platt's warm start and checks come through :mod:`fastcal.platt`.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from .. import platt
from . import _kernels as _k
from .._engine.chunked import Partials, merge_in_order
from .._core.params import Options, check
from .._core.validation import class_bytes

#: The variants of the model (``parameters``), as in ``betacal``.
MODELS = ("abm", "ab", "am")
#: What beta calibration's parameters accept (see :mod:`fastcal._core.params`).
PARAMETERS: dict[str, list[Any]] = {"parameters": [Options(*MODELS)], **platt.PARAMETERS}
#: log 2: the "ab" model's intercept is c = (a - b) log 2 (its midpoint 1/2).
LOG2 = math.log(2.0)


def check_model(parameters):
    """``parameters`` checked against :data:`MODELS`."""
    return check("parameters", parameters, PARAMETERS["parameters"])


# ---------------------------------------------------------------------------
# The objective for the Newton driver.
# ---------------------------------------------------------------------------


class Frame(NamedTuple):
    """Where the kernel's features live: x1 = (log p' - c1) s1, x2 = (-log(1 - p') - c2) s2,
    p' = clip(p, eps, 1 - eps); |x1| <= xmax1, |x2| <= xmax2 over all rows."""

    eps: float
    c1: float
    s1: float
    c2: float
    s2: float
    xmax1: float
    xmax2: float


def _features(p, eps):
    """log p' and -log(1 - p'), p' = clip(p, eps, 1 - eps)."""
    return _k.beta_features(float(p), float(eps))


def make_frame(model, lo, hi, eps):
    """The :class:`Frame` of a fit whose probabilities (all rows) lie in ``[lo, hi]``.

    "abm" and "am" centre each feature on the middle of its range; "ab" has no
    intercept, so its features are centred where the model is: log(2p') and
    -log(2(1 - p')), and the intercept stays 0. Scales are powers of two
    (exact) that bring the features within [-1, 1]. Computed by
    :func:`fastcal.beta._kernels.beta_frame` (:func:`fastcal.beta.fit_groups` makes many at once).
    """
    return Frame(eps, *_k.beta_frame(float(lo), float(hi), float(eps), model == "ab", LOG2))


def basis(model, frame):
    """The 3 x k matrix T of a model: the kernel's (t1, t2, t3) = T @ theta (``frame`` unused but for "am")."""
    if model == "abm":
        return ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    if model == "ab":
        return ((1.0, 0.0), (0.0, 1.0), (0.0, 0.0))
    # "am": a = b = alpha, t1 = alpha / s1, t2 = alpha / s2.
    return ((1.0 / frame.s1, 0.0), (1.0 / frame.s2, 0.0), (0.0, 1.0))


class BetaObjective:
    r"""Beta calibration's cross-entropy in the solver's coordinates, for :func:`fastcal._engine.newton.solve`.

    ``run_pass(frame, t1, t2, t3, want_loss)`` returns the
    :data:`fastcal.beta._kernels.N_BETA_STATS` sums of the fused pass over
    all rows, wherever they are, at :math:`\eta = t_1 x_1 + t_2 x_2 + t_3`;
    the objective's parameters are ``theta`` with ``(t1, t2, t3) = T theta``
    (:func:`basis`), so the gradient is :math:`T^\top g` and the Hessian
    :math:`T^\top H T`. ``subsample`` is a callable returning the objective on
    a subsample, or None.
    """

    def __init__(self, run_pass, n, model, frame, total_weight, subsample=None):
        self.run_pass = run_pass
        self.n = n
        self.model = model
        self.frame = frame
        self.basis = basis(model, frame)
        self.k = len(self.basis[0])
        xb = (frame.xmax1, frame.xmax2, 1.0)
        self.bounds = tuple(sum(abs(self.basis[j][m]) * xb[j] for j in range(3)) for m in range(self.k))
        self.total_weight = total_weight
        self._subsample = subsample

    def kernel_theta(self, theta):
        return tuple(sum(row[m] * theta[m] for m in range(self.k)) for row in self.basis)

    #: The weight of the rows that the last point evaluated classifies wrongly or not at all
    #: (:data:`fastcal.beta._kernels.BETA_WRONG`): 0 means the model separates the classes.
    wrong = math.inf

    def stats(self, theta, want_loss=False):
        """F, the gradient and the Hessian's upper triangle at ``theta`` (F only if ``want_loss``, else 0)."""
        st = self.run_pass(self.frame, *self.kernel_theta(theta), want_loss)
        self.wrong = float(st[_k.BETA_WRONG])
        if self.model == "abm":
            return st[:_k.BETA_WRONG]
        T = self.basis
        g = st[1:4]
        h = [[st[4], st[5], st[6]], [st[5], st[7], st[8]], [st[6], st[8], st[9]]]
        out = [float(st[0])]
        out += [sum(T[j][m] * g[j] for j in range(3)) for m in range(2)]
        ht = [[sum(h[i][j] * T[j][m] for j in range(3)) for m in range(2)] for i in range(3)]
        tht = [[sum(T[i][m] * ht[i][l] for i in range(3)) for l in range(2)] for m in range(2)]
        return out + [tht[0][0], tht[0][1], tht[1][1]]

    def subsample(self):
        return None if self._subsample is None else self._subsample()

    def to_public(self, theta):
        """(a, b, c) of logit q = a log p - b log(1 - p) + c from the solver's ``theta``."""
        t1, t2, t3 = self.kernel_theta(theta)
        f = self.frame
        a, b = t1 * f.s1, t2 * f.s2
        return a, b, t3 - a * f.c1 - b * f.c2

    def to_internal(self, a, b, c):
        """The solver's ``theta`` for (a, b, c) (of the model's family)."""
        f = self.frame
        t1, t2 = a / f.s1, b / f.s2
        t3 = c + a * f.c1 + b * f.c2
        if self.model == "abm":
            return (t1, t2, t3)
        if self.model == "ab":
            return (t1, t2)
        return (a, t3)


# ---------------------------------------------------------------------------
# Passes over arrays in memory.
# ---------------------------------------------------------------------------


def array_pass(p, y, w):
    """The ``run_pass`` of rows in memory: one fused parallel kernel pass, into a scratch buffer reused across calls.

    ``y``: validated 0/1 labels, read as :func:`fastcal._core.validation.class_bytes` (converted here unless they are).
    """
    part = Partials(p.shape[0], _k.CHUNK, _k.N_BETA_STATS)
    y = class_bytes(y)

    def run_pass(frame, t1, t2, t3, want_loss):
        part.run(_k.beta_pass, p, y, w, frame.eps, 1.0 - frame.eps, frame.c1, frame.s1, frame.c2, frame.s2,
                 t1, t2, t3, True if want_loss else None)
        return merge_in_order(part.bufs[0])

    return run_pass


def array_objective(p, y, w, model, frame, total_weight):
    """:class:`BetaObjective` over rows in memory, warm-started from subsamples of them (recursively)."""
    sub = platt.warm_start(lambda fraction: platt.subsample(p, y, w, fraction), p.shape[0],
                           lambda ps, ys, ws, total: array_objective(ps, ys, ws, model, frame, total))
    return BetaObjective(array_pass(p, y, w), p.shape[0], model, frame, total_weight, sub)


def midpoint(model, a, b, c):
    r"""``betacal``'s midpoint m: where the calibrated probability is 1/2.

    "ab": 1/2 (fixed by the model). Otherwise the root in (0, 1) of
    :math:`a \log m - b \log(1 - m) + c`, found by bisection on logit m (for
    "am", :math:`1 / (1 + e^{c / a})` as ``betacal`` computes it); where there
    is no root (a term dropped by the constraint), the end of [0, 1] where
    :math:`|a \log m - b \log(1 - m) + c|` is smallest, as ``betacal``'s bounded
    search finds it; 1/2 when a = b = 0 (every m is as good).
    """
    if model == "ab" or (a == 0.0 and b == 0.0):
        return 0.5
    if model == "am":
        return 1.0 / (1.0 + math.exp(min(c / a, 709.0)))

    if a < 0.0 or b < 0.0:  # a term dropped, the other negative: the expression decreasing, its negative has the same root
        a, b, c = -a, -b, -c
    return float(_k.beta_midpoint(float(a), float(b), float(c)))  # compiled: 130 evaluations, a fit's fixed cost


def constant_fit(model, p0, eps, wpos, wneg):
    """(a, b, c) when p is constant over the rows of positive weight: the best logit is log(W+ / W-)."""
    L = math.log(wpos / wneg)
    if model != "ab":
        return 0.0, 0.0, L
    # Minimum-norm (a, b) with a log(2p) - b log(2(1 - p)) = L; c = (a - b) log 2.
    u1, u2 = _features(p0, eps)
    f1, f2 = u1 + LOG2, u2 - LOG2
    nrm = f1 * f1 + f2 * f2
    if not nrm > 0.0:
        return 0.0, 0.0, 0.0
    a, b = L * f1 / nrm, L * f2 / nrm
    return a, b, (a - b) * LOG2
