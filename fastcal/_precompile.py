"""Warm-up calls that compile every kernel into the cache: what ``fastcal precompile`` runs.

Kernels compile lazily, on the first call of each argument type (see
:mod:`fastcal._core.jit`), and ``cache=True`` stores the machine code in
``NUMBA_CACHE_DIR`` (or ``__pycache__`` next to the sources, or the user's
cache folder). This module calls every public subject on tiny inputs of every
dtype its wrappers can hand to a kernel, so that after one run a new process
loads everything from the cache and compiles nothing: a Dockerfile step
``RUN fastcal precompile`` bakes the machine code into the image.

The calls go through the public functions, never the kernels: the wrappers
decide which kernels run and with which types, so warm-ups stay right when a
wrapper's dispatch changes, and a kernel nobody calls needs no warm-up.

Adding a warm-up (a new subject, kernel or dtype path)
------------------------------------------------------
1. Import the public function or estimator at the top of this module (its
   module must sit below ``_precompile`` in the layers of ``pyproject.toml``;
   every calibrator and diagnostic does).
2. Write a function that calls it on tiny, valid inputs, and register it
   with :func:`warmup`; it is called once per entry of its variants (here
   each float dtype; a variant is any value the function understands)::

       @warmup("beta calibration", FLOATS)
       def _beta(dtype):
           s, y = _scores(dtype)
           for labels in _labels(y):
               BetaCalibration().fit(s, labels).predict(s)
           BetaCalibration().fit(s, y, sample_weight=_weights(s.shape[0], dtype))
           BetaCalibration().fit(*_read_only(s, y))

3. Cover every option that reaches a different kernel or hands a kernel a
   different argument type: score dtypes (``FLOATS``), every label dtype of
   :func:`_labels` with no weights and with weights of each float dtype
   (:func:`_labels_and_weights`: users pass any combination, and a kernel
   that reads both compiles for each), the class dtypes of :func:`_classes`,
   read-only inputs (:func:`_read_only`: Numba compiles them apart), binary
   and multiclass shapes. Only the types matter, so keep inputs tiny; keep
   them valid, so that no call warns (the warm-ups run without silencing
   warnings). Two exceptions to tiny: a path that only runs above a size
   threshold needs inputs that large (:data:`BIG` rows for the radix argsort
   of weighted and real-valued isotonic fits, weighted AUC, Venn-Abers and the
   CORP resampling; :data:`LARGE` rows, on two threads, for the Newton fits'
   warm-start subsample, the quantile selection, the threaded sorts and the
   smooth ECE's chunks), and a variant chosen by the data (the beta fit's line
   search evaluating the loss) needs data that reaches it.
4. A subject that needs an optional dependency: import it inside the
   function and return when the dependency is missing (nobody can call the
   subject then; see ``_dask``), and list the import in the
   optional-dependencies contract of ``pyproject.toml``.
5. Run ``pytest tests/test_precompile.py``.

``tests/test_precompile.py`` checks that after :func:`precompile` every
``@kernel`` dispatcher of fastcal has at least one compiled signature, so a
new kernel without a warm-up fails the suite; and that a new process then
compiles nothing on the first calls of every public subject with every
dtype users pass, small and large (``tests/first_calls.py``), nor in the
command line's report, fit and apply.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from . import outofcore
from ._io import open_input, open_output
from ._auc import THREADED_SORT_MIN_SIZE
from ._binning import SELECT_MIN_SIZE
from ._core.parallel import PARALLEL_MIN_SIZE, set_num_threads
from ._engine.sort import RADIX_MIN_SIZE
from ._core.validation import LABEL_DTYPES
from .beta import BetaCalibration
from .decomposition import corp_reliability, score_decomposition
from .histogram import HistogramBinning
from .isotonic import IsotonicRegression, isotonic_regression
from .metrics import (
    brier_decomposition,
    brier_score_loss,
    calibration_curve,
    calibration_report,
    expected_calibration_error,
    log_loss,
    roc_auc_score,
)
from .grouped import GroupedCalibrator
from ._coding import Sizes
from .multicalibration import (
    MulticalibrationCalibrator,
    ecce,
    kuiper_cdf,
    kuiper_sf,
    multicalibration_error,
    segment_report,
)
from .platt import WARM_START_MIN, PlattScaling, calibration_slope_intercept, platt_scaling
from .prior import adjust_priors, correct_negative_sampling, estimate_priors_em
from .smooth import CHUNK_ROWS, smooth_ece
from .temperature import TemperatureScaling
from .multiclass import BiasCorrectedTemperatureScaling, DirichletCalibration, MatrixScaling, VectorScaling
from .venn_abers import VennAbers

__all__ = ["FLOATS", "LARGE", "WARMUPS", "Warmup", "cache_files", "cached_signatures", "call_label", "calls",
           "compile_counts", "dispatchers", "precompile", "total_calls", "warmup"]

#: The float dtypes every subject keeps (no up-cast): the usual variants.
FLOATS = (np.float32, np.float64)

#: Rows of the tiny inputs: enough for every branch to be reached (two classes, ties, several bins).
N = 64

#: Rows of the inputs of paths that only run on larger inputs: the radix argsort (weighted and real-valued
#: isotonic fits, weighted AUC, the decomposition's resampling, weighted Venn-Abers).
BIG = RADIX_MIN_SIZE

#: Rows of the inputs cut between threads (the parallel threshold).
THREADED = PARALLEL_MIN_SIZE

#: Rows of the smooth ECE's chunked path (more than one chunk of its grid sums).
SMOOTH_CHUNKED = CHUNK_ROWS + 1

#: Rows past every size at which a wrapper switches kernels or their argument types: the Newton fits' warm start
#: from a subsample, the threaded sorts, the parallel chunks, the quantile selection, the smooth ECE's chunks.
LARGE = max(WARM_START_MIN, THREADED_SORT_MIN_SIZE, THREADED, SELECT_MIN_SIZE, SMOOTH_CHUNKED) + RADIX_MIN_SIZE


@dataclass(frozen=True)
class Warmup:
    """One registered warm-up: ``func(variant)`` for each of ``variants``."""

    name: str
    func: Callable[[Any], object]
    variants: tuple[Any, ...]


#: Every warm-up, in registration order.
WARMUPS: list[Warmup] = []


def warmup(name: str, variants: tuple[Any, ...] = FLOATS) -> Callable[[Callable[[Any], object]], Callable[[Any], object]]:
    """Register ``func`` as the warm-up ``name``, to be called once per entry of ``variants``."""

    def register(func: Callable[[Any], object]) -> Callable[[Any], object]:
        WARMUPS.append(Warmup(name, func, tuple(variants)))
        return func

    return register


def calls() -> list[tuple[Warmup, Any]]:
    """Every warm-up call, in order: ``(warm-up, variant)`` for each variant of each registered warm-up."""
    return [(w, variant) for w in WARMUPS for variant in w.variants]


def call_label(call: tuple[Warmup, Any]) -> str:
    """A short label of one warm-up call (for a progress bar)."""
    w, variant = call
    return f"{w.name} ({_label(variant)})"


def precompile(progress: Callable[[str], None] | None = None, only: Iterable[int] | None = None) -> int:
    """Run every warm-up call: compile (or load from the cache) every kernel for every dtype.

    Parameters
    ----------
    progress : callable, optional
        Called with a short label after each call (for a progress bar).
    only : iterable of int, optional
        The positions in :func:`calls` of the calls to make (default: all);
        ``fastcal precompile --jobs`` hands each worker process its calls.

    Returns
    -------
    int
        The number of warm-up calls made (``sum(len(w.variants) for w in WARMUPS)`` by default).
    """
    every = calls()
    done = 0
    for k in range(len(every)) if only is None else only:
        w, variant = every[k]
        w.func(variant)
        done += 1
        if progress is not None:
            progress(call_label(every[k]))
    return done


def total_calls() -> int:
    """How many calls :func:`precompile` makes."""
    return len(calls())


def dispatchers() -> dict[str, Any]:
    """Every ``@kernel`` dispatcher of the fastcal modules loaded in this process, by qualified name."""
    from numba.core.registry import CPUDispatcher

    found = {}
    for name, module in list(sys.modules.items()):
        if name == "fastcal" or name.startswith("fastcal."):
            for attr, obj in vars(module).items():
                if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == name:
                    found[f"{name}.{attr}"] = obj
    return found


def compile_counts() -> tuple[int, int]:
    """``(compiled, loaded)``: the kernel signatures this process compiled and loaded from the cache so far."""
    kernels = dispatchers().values()
    return (sum(sum(d.stats.cache_misses.values()) for d in kernels),
            sum(sum(d.stats.cache_hits.values()) for d in kernels))


def cache_files() -> list[str]:
    """The files (index ``.nbi`` and machine code ``.nbc``) of fastcal's kernel cache, wherever Numba put them.

    Each kernel module's files sit in the folder Numba's cache locator chose
    for it (``NUMBA_CACHE_DIR``, ``__pycache__`` next to the source, or the
    user's cache folder), named after the module's file.
    """
    files = set()
    for disp in dispatchers().values():
        cache = getattr(disp, "_cache", None)
        folder = getattr(cache, "_cache_path", None)  # Numba's cache locator's choice (None: not cached)
        if folder is None or not os.path.isdir(folder):
            continue
        stem = os.path.splitext(os.path.basename(disp.py_func.__code__.co_filename))[0]
        for entry in os.listdir(folder):
            if entry.startswith(stem + ".") and entry.endswith((".nbi", ".nbc")):
                files.add(os.path.join(folder, entry))
    return sorted(files)


def cached_signatures() -> dict[str, int]:
    """How many signatures of each ``@kernel`` dispatcher (by qualified name) the cache holds: its machine-code
    files (``<base>.<n>.nbc`` beside its index ``<base>.nbi``, ``base`` Numba's name for the function's files).

    What :func:`precompile` left in the cache, whichever processes compiled
    it (``fastcal precompile --jobs``); this process need not have loaded any.
    """
    counts = {}
    for name, disp in dispatchers().items():
        cache = getattr(disp, "_cache", None)
        folder = getattr(cache, "_cache_path", None)
        base = getattr(getattr(cache, "_impl", None), "filename_base", None)
        if folder is None or base is None or not os.path.isdir(folder):
            counts[name] = 0
            continue
        data = re.compile(re.escape(base) + r"\.\d+\.nbc")
        counts[name] = sum(1 for entry in os.listdir(folder) if data.fullmatch(entry))
    return counts


def _label(variant):
    return np.dtype(variant).name if isinstance(variant, type) else str(variant)


# --- tiny inputs ------------------------------------------------------------------------------

def _scores(dtype, n=N, seed=0):
    """Probabilities in (0, 1) of ``dtype`` with ties, and 0/1 labels (uint8) with both classes."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.02, 0.98, n), 2).astype(dtype)
    y = (rng.random(n) < p).astype(np.uint8)
    y[:2] = (0, 1)
    return p, y


def _near_ties(dtype, n):
    """Scores a fraction of the dtype's resolution apart: every partition boundary falls inside a tie chain."""
    step = np.finfo(dtype).resolution / 8
    return (0.5 + (np.arange(n) % 997) * step).astype(dtype)


def _labels(y):
    """The 0/1 labels ``y`` in every label dtype a kernel is compiled for (booleans become uint8)."""
    return [y.astype(d) for d in LABEL_DTYPES]


def _classes(k):
    """The class numbers ``k`` in every integer label dtype."""
    return [k.astype(d) for d in LABEL_DTYPES if np.issubdtype(d, np.integer)]


def _labels_and_weights(y, dtype=None):
    """``(labels, weights)`` for every label dtype of :func:`_labels`, with no weights and with weights of each
    float dtype (the kernels read the weights as given): what users pass, in every combination."""
    n = y.shape[0]
    return [(labels, w) for labels in _labels(y) for w in (None, *(_weights(n, d) for d in FLOATS))]


def _read_only(*arrays):
    """Read-only copies: Numba types them apart from writable arrays, so they compile separately."""
    out = []
    for a in arrays:
        a = a.copy()
        a.flags.writeable = False
        out.append(a)
    return out


def _weights(n, dtype):
    return np.random.default_rng(1).uniform(0.5, 2.0, n).astype(dtype)


def _proba(n, k, dtype, seed=2):
    rng = np.random.default_rng(seed)
    P = rng.random((n, k)) + 0.05
    P /= P.sum(axis=1, keepdims=True)
    y = np.arange(n) % k
    return P.astype(dtype), y


# --- warm-ups -----------------------------------------------------------------------------------

@warmup("isotonic")
def _isotonic(dtype):
    x, y = _scores(dtype)
    for labels in _labels(y):
        IsotonicRegression().fit(x, labels, sample_weight=_weights(x.shape[0], np.float64))
        iso = IsotonicRegression(out_of_bounds="clip").fit(x, labels)
        iso.predict(x)
        IsotonicRegression(increasing="auto").fit(x, labels)
        IsotonicRegression(increasing=False).fit(x, labels)
    for wdtype in FLOATS:
        IsotonicRegression().fit(x, y, sample_weight=_weights(x.shape[0], wdtype))
    targets = np.random.default_rng(3).random(x.shape[0]).astype(dtype)
    IsotonicRegression().fit(x, targets)
    IsotonicRegression(out_of_bounds="nan", y_min=0.1, y_max=0.9).fit(x, y).predict(x)
    xr, yr = _read_only(x, y)
    IsotonicRegression().fit(xr, yr).predict(xr)
    isotonic_regression(targets)
    isotonic_regression(targets, weights=_weights(x.shape[0], dtype), increasing=False)
    isotonic_regression(*_read_only(targets))
    for labels in _labels(y):
        IsotonicRegression(centered=True).fit(x, labels).predict(x)
        IsotonicRegression(centered=True).fit(x, labels, sample_weight=_weights(x.shape[0], np.float64))
    for wdtype in FLOATS:
        IsotonicRegression(centered=True).fit(x, y, sample_weight=_weights(x.shape[0], wdtype))
    IsotonicRegression(centered=True).fit(xr, yr).predict(xr)
    IsotonicRegression(centered=True).fit(xr, yr, sample_weight=_weights(x.shape[0], dtype))
    IsotonicRegression(centered=True).fit(np.sort(x), y)  # sorted scores: the PAV without a sort


@warmup("isotonic, radix-sorted")
def _isotonic_radix(dtype):
    """Weighted and real-valued fits above ``RADIX_MIN_SIZE`` rows: the radix sort carries the targets (and weights)."""
    x, y = _scores(dtype, n=BIG)
    w = _weights(BIG, np.float64)
    for labels in _labels(y):
        IsotonicRegression().fit(x, labels, sample_weight=w)
    IsotonicRegression().fit(x, y, sample_weight=_weights(BIG, np.float32))
    targets = np.random.default_rng(3).random(BIG).astype(dtype)
    IsotonicRegression().fit(x, targets)
    IsotonicRegression().fit(x, targets, sample_weight=w)  # weighted real-valued: argsort and gather
    xr, yr, tr = _read_only(x, y, targets)
    IsotonicRegression().fit(xr, yr, sample_weight=w)
    IsotonicRegression().fit(xr, tr)
    IsotonicRegression().fit(xr, tr, sample_weight=w)
    for labels in _labels(y):
        roc_auc_score(labels, x, sample_weight=w)
    roc_auc_score(y, x, sample_weight=_weights(BIG, np.float32))
    roc_auc_score(yr, xr, sample_weight=w)


@warmup("radix sort in two threads")
def _radix_two_threads(dtype):
    """Inputs cut between two threads (:data:`THREADED` rows): each radix pass's per-range digit counts.

    The fits run in a thread of their own, whose fastcal thread count (a
    per-thread setting, :func:`~fastcal.set_num_threads`) dies with it.
    """
    x, y = _scores(dtype, n=THREADED)
    w = _weights(THREADED, np.float64)
    targets = np.random.default_rng(3).random(THREADED).astype(dtype)

    def fits():
        IsotonicRegression().fit(x, y, sample_weight=w)  # (key, value) rows
        IsotonicRegression().fit(x, targets, sample_weight=w)  # (key, index) arrays

    _in_two_threads(fits)


def _in_two_threads(func):
    """Call ``func()`` in a thread of its own that runs fastcal's kernels on two threads (even on one CPU).

    The thread's fastcal thread count (a per-thread setting,
    :func:`~fastcal.set_num_threads`) dies with it.
    """
    errors = []

    def run():
        try:
            set_num_threads(2)
            func()
        except BaseException as exc:  # re-raised in the calling thread
            errors.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]


@warmup("large inputs")
def _large(dtype):
    """Inputs past every size at which a wrapper switches kernels (:data:`LARGE` rows), cut between two threads.

    The Newton fits' warm start copies a subsample of the labels and weights
    as they were given (Platt scaling, the calibration slope, beta
    calibration), the quantile bins select their edges, the AUC sorts in
    threads, the CORP band gathers its resamples: each with every label dtype
    and weights of each float dtype, the combinations users pass.
    """
    p, y = _scores(dtype, n=LARGE)
    P, yk = _proba(LARGE, 3, dtype)

    def calls():
        for labels, w in _labels_and_weights(y):
            platt_scaling(p, labels, sample_weight=w)
            calibration_slope_intercept(labels, p, sample_weight=w)
            BetaCalibration().fit(p, labels, sample_weight=w)
            HistogramBinning(strategy="quantile").fit(p, labels, sample_weight=w)
            calibration_curve(labels, p, strategy="quantile", sample_weight=w)
            roc_auc_score(labels, p, sample_weight=w)
            calibration_report(labels, p, sample_weight=w)
            corp_reliability(labels, p, n_resamples=2, random_state=0, sample_weight=w)
        for labels in _classes(yk):
            for w in (None, *(_weights(LARGE, d) for d in FLOATS)):
                roc_auc_score(labels, P, multi_class="ovr", sample_weight=w)

    _in_two_threads(calls)


@warmup("platt")
def _platt(dtype):
    s, y = _scores(dtype)
    for labels, w in _labels_and_weights(y):
        platt_scaling(s, labels, sample_weight=w)
        calibration_slope_intercept(labels, s, sample_weight=w)
    sr, yr = _read_only(s, y)
    PlattScaling().fit(sr, yr).predict(sr)
    PlattScaling().fit(s, y).predict(s)


@warmup("beta")
def _beta(dtype):
    s, y = _scores(dtype)
    w = _weights(s.shape[0], np.float64)
    # Underconfident scores: the Newton line search evaluates the loss too, a variant of the pass kernel.
    for p in (s, (0.5 + (s - 0.5) * 0.01).astype(dtype)):
        for labels, weights in _labels_and_weights(y):
            BetaCalibration().fit(p, labels, sample_weight=weights).predict(p)
        pr, yr = _read_only(p, y)
        BetaCalibration().fit(pr, yr).predict(pr)
        BetaCalibration().fit(pr, yr, sample_weight=w)


@warmup("histogram binning")
def _histogram(dtype):
    p, y = _scores(dtype)
    for labels in _labels(y):
        for strategy in ("uniform", "quantile"):
            HistogramBinning(n_bins=5, strategy=strategy).fit(p, labels).predict(p)
        HistogramBinning(n_bins=5).fit(p, labels, sample_weight=_weights(p.shape[0], np.float64))
    for wdtype in FLOATS:
        HistogramBinning(n_bins=5).fit(p, y, sample_weight=_weights(p.shape[0], wdtype))
    pr, yr = _read_only(p, y)
    for strategy in ("uniform", "quantile"):
        HistogramBinning(n_bins=5, strategy=strategy).fit(pr, yr).predict(pr)


@warmup("Venn-Abers")
def _venn_abers(dtype):
    x, y = _scores(dtype)
    for labels in _labels(y):
        VennAbers().fit(x, labels).predict_proba(x)
    xr, yr = _read_only(x, y)
    va = VennAbers().fit(xr, yr)
    va.predict_interval(xr)
    va.predict(xr)
    xb, yb = _scores(dtype, n=BIG)  # weighted: the radix argsort
    for wdtype in FLOATS:
        VennAbers().fit(x, y, sample_weight=_weights(N, wdtype))
        VennAbers().fit(xb, yb, sample_weight=_weights(BIG, wdtype))
    for labels in _labels(yb):
        VennAbers().fit(xb, labels, sample_weight=_weights(BIG, dtype))
    xbr, ybr = _read_only(xb, yb)
    VennAbers().fit(xbr, ybr, sample_weight=_weights(BIG, dtype))


@warmup("temperature")
def _temperature(dtype):
    P, y = _proba(N, 3, dtype)
    logits = np.log(P)
    for labels in _labels(y):
        TemperatureScaling().fit(logits, labels.astype(labels.dtype)).predict_proba(logits)
    TemperatureScaling().fit(logits, y, sample_weight=_weights(N, dtype))
    (lr,) = _read_only(logits)
    TemperatureScaling().fit(lr, y).predict_proba(lr)


@warmup("vector, BCTS, matrix and Dirichlet calibration")
def _vector_scaling(dtype):
    P, y = _proba(N, 3, dtype)
    logits = np.log(P)
    (lr,) = _read_only(logits)
    for cls in (VectorScaling, BiasCorrectedTemperatureScaling, MatrixScaling):
        cls().fit(logits, y).predict_proba(logits)
        cls().fit(P, y, sample_weight=_weights(N, dtype)).predict_proba(P)
        cls().fit(lr, y).predict_proba(lr)
    for matrix_type in ("full", "diagonal"):
        DirichletCalibration(matrix_type=matrix_type, reg_lambda=0.01, reg_mu=0.01).fit(P, y).predict_proba(P)


@warmup("prior correction")
def _prior(dtype):
    p, _ = _scores(dtype)
    correct_negative_sampling(p, 0.1)
    correct_negative_sampling(p, 0.1, out=np.empty_like(p))
    correct_negative_sampling(p.copy(), 0.1, out=None)
    correct_negative_sampling(dtype(0.3), 0.1)
    (pr,) = _read_only(p)
    for src in (p, pr):
        correct_negative_sampling(src, 0.1)
        correct_negative_sampling(src, 1.0)  # rate 1: a copy (its own kernel)
        for train, new in ((0.5, 0.1), (0.1, 0.5)):  # the two directions are two kernels
            adjust_priors(src, train, new)
            adjust_priors(src, train, new, out=np.empty_like(p))
    P, _ = _proba(N, 3, dtype)
    train, new = np.array([0.2, 0.3, 0.5]), np.array([0.5, 0.3, 0.2])
    adjust_priors(P, train, new)
    adjust_priors(P, train, new, out=np.empty_like(P))
    (Pr,) = _read_only(P)
    adjust_priors(Pr, train, new)
    estimate_priors_em(P, train)
    estimate_priors_em(Pr, train)
    estimate_priors_em(p, 0.5)


@warmup("diagnostics")
def _metrics(dtype):
    p, y = _scores(dtype)
    w = _weights(p.shape[0], dtype)
    pr, yr = _read_only(p, y)
    for labels, weights in _labels_and_weights(y):
        _binary_metrics(labels, p, weights)
    _binary_metrics(yr, pr, None)
    roc_auc_score(y, p, max_fpr=0.5)
    roc_auc_score(y, p, sample_weight=w, max_fpr=0.5)
    log_loss(y, np.stack([1 - p, p], axis=1))
    P, yk = _proba(N, 3, dtype)
    for labels in _classes(yk):
        for w in (None, *(_weights(N, d) for d in FLOATS)):
            log_loss(labels, P, sample_weight=w)
            brier_score_loss(labels, P, sample_weight=w)
            roc_auc_score(labels, P, multi_class="ovr", sample_weight=w)
        for kwargs in (dict(multi_class="ovo"), dict(multi_class="ovr", average="micro"),
                       dict(multi_class="ovr", average="weighted", sample_weight=_weights(N, dtype))):
            roc_auc_score(labels, P, **kwargs)
    (Pr,) = _read_only(P)
    log_loss(yk, Pr)
    brier_score_loss(yk, Pr)
    roc_auc_score(yk, Pr, multi_class="ovr")
    Pb, ykb = _proba(BIG, 3, dtype)  # the radix sort of sort_pairs: each class's weighted AUC
    roc_auc_score(ykb, Pb, multi_class="ovr", sample_weight=_weights(BIG, dtype))


def _binary_metrics(y, p, w):
    for strategy in ("uniform", "quantile"):
        calibration_curve(y, p, n_bins=5, strategy=strategy, sample_weight=w)
    brier_score_loss(y, p, sample_weight=w)
    log_loss(y, p, sample_weight=w)
    roc_auc_score(y, p, sample_weight=w)
    expected_calibration_error(y, p, sample_weight=w)
    brier_decomposition(y, p, sample_weight=w)
    calibration_report(y, p, sample_weight=w)


@warmup("decomposition")
def _decomposition(dtype):
    p, y = _scores(dtype)
    pr, yr = _read_only(p, y)
    P, yk = _proba(N, 3, dtype)
    (Pr,) = _read_only(P)
    for scoring in ("brier", "log_loss"):
        for labels, w in _labels_and_weights(y):
            score_decomposition(labels, p, scoring=scoring, sample_weight=w)
        score_decomposition(yr, pr, scoring=scoring)
        score_decomposition(yk, P, scoring=scoring)
        score_decomposition(yk, Pr, scoring=scoring)
    for band in ("consistency", "confidence"):
        for labels, w in _labels_and_weights(y):
            corp_reliability(labels, p, n_resamples=4, band=band, random_state=0, sample_weight=w)
        corp_reliability(yr, pr, n_resamples=4, band=band, random_state=0)
        corp_reliability(yk, P, n_resamples=4, band=band, random_state=0)
        pb, yb = _scores(dtype, n=BIG)  # weighted PAV and the resampling's order: the radix argsort
        for wdtype in FLOATS:
            corp_reliability(yb, pb, n_resamples=2, band=band, random_state=0, sample_weight=_weights(BIG, wdtype))
        corp_reliability(yb, pb, n_resamples=2, band=band, random_state=0)


@warmup("ECCE and multicalibration error")
def _multicalibration(dtype):
    p, y = _scores(dtype)
    for labels, w in _labels_and_weights(y):
        ecce(labels, p, sample_weight=w)
    for wdtype in FLOATS:
        segments = {"a": np.arange(N) % 4, "c": np.linspace(0.0, 1.0, N)}
        multicalibration_error(y, p, segments, numerical=["c"], sample_weight=_weights(N, wdtype),
                               min_samples_per_segment=1)
    for labels in _labels(y):  # the pass reads the validated labels, predictions and weights in place
        multicalibration_error(labels, p, {"a": np.arange(N) % 4}, min_samples_per_segment=1)
    pr, yr, wr = _read_only(p, y, _weights(N, np.float64))
    multicalibration_error(yr, pr, {"a": np.arange(N) % 4}, min_samples_per_segment=1)
    multicalibration_error(yr, pr, {"a": np.arange(N) % 4}, sample_weight=wr, min_samples_per_segment=1)
    pb, yb = _scores(dtype, n=BIG)  # rows moved to score ranges, each sorted in the cache
    ecce(yb, pb)
    tied = Sizes.TIE_ROWS + 1  # a weighted group of equal scores ordered in chunks on several threads
    for wdtype in FLOATS:
        ecce((np.arange(tied) % 2).astype(np.uint8), np.full(tied, 0.5, dtype=dtype),
             sample_weight=_weights(tied, wdtype))
    multicalibration_error(yb, pb, {"a": np.arange(BIG) % 4, "s": np.array(["x", "y"])[np.arange(BIG) % 2]})
    kuiper_cdf(1.0)
    kuiper_cdf(3.0)
    kuiper_sf(3.0)
    groups = np.array(["a", "b", "c"])[np.arange(N) % 3]
    for labels, w in _labels_and_weights(y):  # the report by segment reads the validated labels, predictions, weights
        segment_report(labels, p, groups, sample_weight=w)
        for template in (PlattScaling(), BetaCalibration()):  # the batched Newton fits of every group
            GroupedCalibrator(template, min_samples_per_group=2).fit(p, labels, groups, w)
    segment_report(y, p, np.arange(N) % 3)
    for template in (PlattScaling(), BetaCalibration()):
        GroupedCalibrator(template, min_samples_per_group=2).fit(p, y, groups).predict(p, groups)
    pb, yb = _scores(dtype, n=BIG)  # a bucket of groups past the radix sort's threshold (weighted isotonic)
    for labels in _labels(y):  # the batched isotonic fits read the validated labels in place
        GroupedCalibrator(IsotonicRegression(), min_samples_per_group=2).fit(p, labels, groups).predict(p, groups)
        for wdtype in FLOATS:
            GroupedCalibrator(IsotonicRegression(), min_samples_per_group=2).fit(p, labels, groups,
                                                                                 _weights(N, wdtype))
    for wdtype in FLOATS:
        GroupedCalibrator(IsotonicRegression(), min_samples_per_group=2).fit(pb, yb, np.arange(BIG) % 2,
                                                                             _weights(BIG, wdtype))
    for labels in _labels(y):  # the batched histogram fits: one pass of every group's bin sums
        GroupedCalibrator(HistogramBinning(strategy="uniform"), min_samples_per_group=2).fit(p, labels, groups)
        for wdtype in FLOATS:
            GroupedCalibrator(HistogramBinning(strategy="uniform"), min_samples_per_group=2).fit(
                p, labels, groups, _weights(N, wdtype))


@warmup("multicalibration fit")
def _multicalibration_fit(dtype):
    p, y = _scores(dtype)
    segments = {"a": np.arange(N) % 3, "s": np.array(["x", "y"])[np.arange(N) % 2], "c": np.linspace(0.0, 1.0, N)}
    for w in (None, _weights(N, np.float64)):  # the fit reads its weights as float64
        cal = MulticalibrationCalibrator(min_samples_per_segment=1).fit(p, y, segments, numerical=["c"],
                                                                        sample_weight=w)
        cal.predict(p, segments)
    pr, yr = _read_only(p, y)
    MulticalibrationCalibrator(min_samples_per_segment=1).fit(pr, yr, segments, numerical=["c"]).predict(pr, segments)


@warmup("smooth ECE")
def _smooth(dtype):
    p, y = _scores(dtype)
    pr, yr = _read_only(p, y)
    for labels, w in _labels_and_weights(y):
        smooth_ece(labels, p, sample_weight=w)
    smooth_ece(yr, pr)
    smooth_ece(np.where(y == 1, 1, -1), p)  # {-1, 1} labels
    P, yk = _proba(N, 3, dtype)
    smooth_ece(yk, P)
    smooth_ece(yk, *_read_only(P))
    pb, yb = _scores(dtype, n=SMOOTH_CHUNKED)  # more than one chunk: the chunk grids are merged
    smooth_ece(yb, pb)


@warmup("multiclass diagnostics")
def _multiclass_metrics(dtype):
    P, yk = _proba(N, 3, dtype)
    (Pr,) = _read_only(P)
    for multiclass in ("top_label", "classwise"):
        for labels in _classes(yk):
            for w in (None, *(_weights(N, d) for d in FLOATS)):
                calibration_curve(labels, P, n_bins=5, multiclass=multiclass, sample_weight=w)
                expected_calibration_error(labels, P, multiclass=multiclass, sample_weight=w)
        calibration_curve(yk, Pr, n_bins=5, strategy="quantile", multiclass=multiclass)
        expected_calibration_error(yk, Pr, multiclass=multiclass)


@warmup("CSV files", ("csv",))
def _csv(_):
    """The CSV reader's record splitter and the writer's field appender (``fastcal fit``/``apply`` on CSV)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = os.path.join(tmp, "in.csv"), os.path.join(tmp, "out.csv")
        with open(src, "w") as f:
            f.write('score,label,note\n0.25,0,"a, b"\n0.75,1,c\n')
        reader = open_input(src)
        writer = open_output(dst, ["calibrated"])
        for piece in reader.pieces():
            writer.write_piece(piece, {"calibrated": piece.numbers("score", src)})
        writer.commit()


@warmup("out of core")
def _outofcore(dtype):
    budget = dict(memory_budget=1 << 20, chunk_rows=4096)  # the smallest budget
    _, part_rows = outofcore.budget_rows(**budget)
    x, y = _scores(dtype, n=3 * part_rows)  # three partitions
    x = np.where(np.arange(x.shape[0]) % 2 == 0, x, _near_ties(dtype, x.shape[0]))  # boundaries within ties
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for name, arr in (("x", x), ("y", y), ("w", _weights(x.shape[0], dtype))):
            paths.append(os.path.join(tmp, f"{name}.npy"))
            np.save(paths[-1], arr)
        px, py, pw = paths
        outofcore.fit_isotonic(px, py, tmpdir=tmp, **budget)
        outofcore.fit_isotonic(px, py, pw, tmpdir=tmp, increasing="auto", **budget)
        outofcore.fit_isotonic(px, py, tmpdir=tmp, centered=True, **budget)
        outofcore.fit_isotonic(px, py, pw, tmpdir=tmp, centered=True, **budget)
        outofcore.fit_platt(px, py, **budget)
        outofcore.fit_platt(px, py, pw, **budget)
        outofcore.fit_beta(px, py, **budget)
        outofcore.fit_beta(px, py, pw, **budget)
        pw64 = os.path.join(tmp, "w64.npy")
        np.save(pw64, _weights(x.shape[0], np.float64))
        for i, labels in enumerate(_labels(y)):  # the partitioning kernels carry the labels, with and without weights
            path = os.path.join(tmp, f"y{i}.npy")
            np.save(path, labels)
            outofcore.fit_isotonic(px, path, tmpdir=tmp, **budget)
            outofcore.fit_isotonic(px, path, pw64, tmpdir=tmp, **budget)


@warmup("Dask")
def _dask(dtype):
    try:
        import dask.array as da
    except ImportError:  # without Dask (the dask extra), nobody can call fastcal.dask: nothing to compile
        return
    from . import dask as fdask

    x, y = _scores(dtype, n=2000)
    w = _weights(x.shape[0], dtype)
    X, Y, W = (da.from_array(a, chunks=500) for a in (x, y, w))
    for weights in (None, W):
        iso = fdask.fit_isotonic(X, Y, weights, n_partitions=2)
        fdask.predict(iso, X).compute()
        pl = fdask.fit_platt(X, Y, weights)
        fdask.predict(pl, X).compute()
        for strategy in ("uniform", "quantile"):
            fdask.calibration_curve(Y, X, n_bins=5, strategy=strategy, sample_weight=weights)
        fdask.brier_score_loss(Y, X, sample_weight=weights)
        fdask.log_loss(Y, X, sample_weight=weights)
        fdask.expected_calibration_error(Y, X, sample_weight=weights)
        fdask.brier_decomposition(Y, X, sample_weight=weights)
        fdask.fit_isotonic(X, Y, weights, n_partitions=2, centered=True)
        fdask.predict(fdask.fit_beta(X, Y, weights), X).compute()
        for strategy in ("uniform", "quantile"):
            fdask.fit_histogram(X, Y, weights, n_bins=5, strategy=strategy)
        fdask.score_decomposition(Y, X, sample_weight=weights)
        fdask.smooth_ece(Y, X, sample_weight=weights)
    W64 = da.from_array(_weights(x.shape[0], np.float64), chunks=500)
    for labels in _labels(y):
        YL = da.from_array(labels, chunks=500)
        fdask.fit_isotonic(X, YL, None, n_partitions=2)
        fdask.fit_isotonic(X, YL, W64, n_partitions=2)
    wz = _weights(x.shape[0], np.float64)
    wz[::7] = 0.0  # "auto" with zero weights: the partitions' summaries skip the zero-weight rows
    fdask.fit_isotonic(X, Y, da.from_array(wz, chunks=500), n_partitions=2, increasing="auto")
    near = da.from_array(_near_ties(dtype, x.shape[0]), chunks=500)
    fdask.fit_isotonic(near, Y, n_partitions=40)  # more than 32 partitions, boundaries within tie chains
    fdask.correct_negative_sampling(X, 0.1).compute()
    fdask.adjust_priors(X, 0.5, 0.1).compute()
