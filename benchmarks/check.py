"""The benchmark gate (``make bench-check``): fail when fastcal gets slower against its peers, or stops using its threads.

Each case times a fastcal call and the same work done by its peers
(scikit-learn, SciPy, NumPy, relplot, model-diagnostics, MCGrad) in this process, on
the same arrays of 10^6 rows, and checks two things.

**Speed, one thread against one thread.** fastcal runs on one thread
(:func:`fastcal.set_num_threads`) and the peers' BLAS and OpenMP pools are
limited to one thread (threadpoolctl), so the ratio compares algorithms and
kernels, not how many cores the machine lends each side. Each call is timed
in **CPU time** of the process (``time.process_time``), not wall time: a
call that the OS sets aside for another process is not charged for the wait.
Calls alternate round by round (fastcal, then each peer); the ratio of a row
is the peer's **least** CPU time over rounds divided by fastcal's least. A
slowdown of fastcal's code lifts every call, its least too, so a 2x slowdown
halves the ratio; what a busy machine adds (preemption, caches another
process evicted) is spread over the calls and left out by the least. Measured
side by side on 2 cores, quiet and beside three CPU-bound processes: the
least CPU times moved the ratios of IsotonicRegression.predict, platt_scaling,
brier_score_loss and smooth_ece by at most 12% (smooth_ece 38.9x quiet, 36.4x
and 41.3x loaded), where the median of paired wall-time ratios, the former
statistic, lost up to 45% (smooth_ece 34.4x quiet, 18.9x loaded: a CI run on a
busy machine failed that way). The row fails when the ratio falls below
``TOLERANCE`` (0.7) times the reference ratio recorded for this kind of CPU.

**Threads, by CPU time.** fastcal's call runs again on ``SPREAD_THREADS`` (8)
threads, and :func:`benchmarks._harness.spread` reads every thread's CPU time
from ``/proc/self/task/*/schedstat``: work / busiest thread, the speed-up that
more cores could give. It does not depend on the machine's load or core
count. The row fails when the spread (best of a few calls) falls below
a third of the way from 1 to its reference, so a path that turns serial fails
(on fewer cores than threads, the OS's sharing moves the spread of dynamic
tasks from call to call by up to half its gain: hence the best of several
calls, and a floor well below the reference).

**References per CPU.** Ratios differ between CPUs (NumPy's sorts use
AVX-512 where they can; Numba compiles for the host), so ``floors.json`` keeps
one set of reference ratios per CPU name (the one Numba compiles for, e.g.
``znver3`` or ``icelake-server``). On a CPU with no reference of its own, the
lowest reference of any CPU is used, with the looser ``OTHER_CPU`` (0.5)
(and said so); record one with ``--update-floors`` on that machine.

A row below its floor is measured again (``--retries``) and fails only if no
measurement reaches the floor. ``--slowdown K`` calls fastcal ``K`` times per
timed call, to check that the gate catches a K-fold slowdown (it should then
fail every gated row; ``--expect-fail`` makes that the passing outcome).

``python -m benchmarks.check`` prints the table and writes
``benchmarks/results/bench-check.json`` (ignored by git); ``--only
isotonic,platt`` picks cases by subject; ``--n`` changes the size (the
references hold for 10^6).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gc
import json
import platform
import statistics
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks._harness import miscalibrated_scores, spread, thread_cpu_ns

HERE = Path(__file__).resolve().parent
FLOORS = HERE / "floors.json"
RESULTS = HERE / "results" / "bench-check.json"
N = 10**6
TOLERANCE = 0.7  # a row fails below this fraction of its CPU's reference: 2x slower fails (and the 1.6x of a call
#                   repeated on warm caches), noise of up to 30% passes
OTHER_CPU = 0.5  # the fraction of the lowest reference used on a CPU that has none of its own
SPREAD_THREADS = 8
BUDGET = 2.0  # seconds of timed rounds per case (fastcal and peers together), after the warm-up calls
MIN_ROUNDS, MAX_ROUNDS = 5, 25
#: Calls whose best spread is kept. How the OS shares 2 cores among 8 threads moves a short call's spread a lot
#: (TemperatureScaling.fit, 10 ms: 1.3 to 4.7 over 15 calls, the same before and after a change): with 5 calls
#: its best fell below the floor in one CI run of two. A path that turned serial stays near 1 in every call.
SPREAD_CALLS = 15


@dataclass
class Case:
    """A gated comparison: ``setup(n)`` builds the arrays once and returns ``(ours, {peer: func})`` (no-arg callables).

    ``size`` scales ``n`` for cases whose peer is too slow to call several
    times at 10^6 rows.
    """

    subject: str
    task: str
    setup: Callable[[int], tuple[Callable[[], object], dict[str, Callable[[], object]]]]
    size: float = 1.0

    @property
    def key(self):
        return f"{self.subject}: {self.task}"


@dataclass
class Result:
    """One measured case: fastcal's least CPU time (one thread), each peer's, their ratios, the spread."""

    key: str
    ours: float
    peers: dict[str, float]
    ratios: dict[str, float] = field(default_factory=dict)
    spread: float | None = None
    floors: dict[str, float] = field(default_factory=dict)
    spread_floor: float | None = None
    rounds: int = 0
    attempts: int = 1

    def failing(self):
        """The peers whose ratio is below its floor, and ``"spread"`` if the spread is below its floor."""
        low = [p for p, floor in self.floors.items() if self.ratios.get(p, float("inf")) < floor]
        if self.spread_floor is not None and self.spread is not None and self.spread < self.spread_floor:
            low.append("spread")
        return low


def _timed(func):
    """CPU time of this process during ``func()`` (every thread's), the garbage collector paused as ``timeit`` does
    (a collection costs 0.5 s in a big heap)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.process_time()
        func()
        return time.process_time() - t0
    finally:
        if enabled:
            gc.enable()


@contextlib.contextmanager
def threads(n):
    """fastcal on ``n`` threads in this thread, and the peers' native pools (BLAS, OpenMP) on one."""
    import fastcal
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        fastcal.set_num_threads(n)
        try:
            yield
        finally:
            fastcal.set_num_threads(None)


def _repeated(func, times):
    if times == 1:
        return func

    def again():
        for _ in range(times):
            func()
    return again


def measure(case, n=N, budget=BUDGET, slowdown=1):
    """Time ``case`` on ``n`` rows: ratios of least CPU times on one thread, then the spread on :data:`SPREAD_THREADS`.

    Every callable is called once untimed first (fastcal's kernels compile
    or load; the peers' lazy imports and caches fill). Then rounds alternate
    fastcal and each peer, as many as fit in ``budget`` seconds (between
    :data:`MIN_ROUNDS` and :data:`MAX_ROUNDS`).
    """
    ours, peers = case.setup(max(1, int(n * case.size)))
    ours = _repeated(ours, slowdown)
    with threads(1):
        ours(), [func() for func in peers.values()]
        gc.collect()
        first = _timed(ours) + sum(_timed(func) for func in peers.values())
        rounds = int(min(MAX_ROUNDS, max(MIN_ROUNDS, budget // max(first, 1e-9))))
        ours_t, peer_t = [], {name: [] for name in peers}
        for _ in range(rounds):
            ours_t.append(_timed(ours))
            for name, func in peers.items():
                peer_t[name].append(_timed(func))
    best = max(min(ours_t), 1e-9)
    result = Result(case.key, best, {p: min(t) for p, t in peer_t.items()},
                    {p: min(t) / best for p, t in peer_t.items()}, rounds=rounds)
    with threads(SPREAD_THREADS):
        ours()  # starts the pool's threads
        spreads = []
        for _ in range(SPREAD_CALLS):
            before = thread_cpu_ns()
            ours()
            spreads.append(spread(before, thread_cpu_ns()))
    result.spread = max(spreads)
    return result


def cpu_name():
    """The CPU name Numba compiles for (``NUMBA_CPU_NAME`` if set, else the host's, e.g. ``znver3``)."""
    import numba
    from llvmlite import binding

    return numba.config.CPU_NAME or binding.get_host_cpu_name()


def floors_for(data, cpu=None):
    """``({key: {peer: floor}}, {key: spread floor}, note)`` for ``cpu`` from the contents of ``floors.json``.

    A ratio's floor is :data:`TOLERANCE` times the reference of this CPU. On
    a CPU with none of its own it is :data:`OTHER_CPU` times the lowest
    reference of any CPU for that row: ratios differ between CPUs by more
    than the gate's noise, so there the gate catches only larger slowdowns.
    A spread's floor is a third of the way from 1 to its reference; spreads below
    1.5 (paths that run on one thread at this size) are not gated.
    """
    cpu = cpu or cpu_name()
    refs = data.get("references", {})
    own = refs.get(cpu)
    note = (f"CPU {cpu}: its own reference ratios" if own else
            f"CPU {cpu} has no reference ratios: using the lowest of {sorted(refs)}; "
            "record this CPU's with --update-floors")
    floors = {}
    for other in ([own] if own else refs.values()):
        for key, peers in other["ratios"].items():
            for p, r in peers.items():
                floor = (TOLERANCE if own else OTHER_CPU) * r
                floors.setdefault(key, {})[p] = min(floors.get(key, {}).get(p, np.inf), floor)
    spread_floors = {key: 1 + (s - 1) / 3 for key, s in data.get("spread", {}).get("values", {}).items() if s >= 1.5}
    return floors, spread_floors, note


def gate(cases, data, n=N, retries=2, log=None, slowdown=1, cpu=None):
    """Measure every case; re-measure each row below a floor up to ``retries`` times.

    Returns the results; a result's :meth:`Result.failing` lists what is
    still below its floor. The kept ratio and spread are the best over the
    attempts (a slowdown is real only if no attempt reaches the floor).
    """
    floors, spread_floors, _ = floors_for(data, cpu)
    results = []
    for case in cases:
        result = measure(case, n, slowdown=slowdown)
        result.floors = {p: f for p, f in floors.get(case.key, {}).items() if p in result.ratios}
        result.spread_floor = spread_floors.get(case.key)
        while result.failing() and result.attempts <= retries:
            again = measure(case, n, budget=BUDGET * (result.attempts + 1), slowdown=slowdown)
            result.attempts += 1
            for p in result.ratios:
                if again.ratios[p] > result.ratios[p]:
                    result.ratios[p], result.peers[p] = again.ratios[p], again.peers[p]
            result.ours = min(result.ours, again.ours)
            result.spread = max(result.spread, again.spread)
        if log:
            log(result)
        results.append(result)
        gc.collect()
    return results


def render(results):
    lines = ["| case | fastcal, 1 thread (CPU time) | peer | peer CPU time | ratio | floor | spread, 8 threads | floor | |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        for i, (peer, t) in enumerate(r.peers.items()):
            floor = r.floors.get(peer)
            bad = r.failing()
            status = "FAIL" if (peer in bad or (i == 0 and "spread" in bad)) else ("ok" if floor is not None else "—")
            spread_cells = (f"{r.spread:.2f} | {'—' if r.spread_floor is None else f'{r.spread_floor:.2f}'}"
                            if i == 0 and r.spread is not None else " | ")
            lines.append(f"| {r.key if i == 0 else ''} | {_ms(r.ours) if i == 0 else ''} | {peer} | {_ms(t)} "
                         f"| {r.ratios[peer]:.1f}x | {'—' if floor is None else f'{floor:.1f}x'} | {spread_cells} | {status} |")
    return "\n".join(lines)


def _ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


def load_floors(path=None):
    """The contents of ``floors.json``: ``references`` (per CPU) and ``spread``."""
    return json.loads(Path(path or FLOORS).read_text())


def references_from_runs(runs):
    """Reference ratios ``{key: {peer: ratio}}`` and spreads ``{key: spread}``: the median over runs of each."""
    ratios, spreads = {}, {}
    for results in runs:
        for r in results:
            for p, v in r.ratios.items():
                ratios.setdefault(r.key, {}).setdefault(p, []).append(v)
            if r.spread is not None:
                spreads.setdefault(r.key, []).append(r.spread)
    return ({key: {p: round(statistics.median(v), 2) for p, v in peers.items()} for key, peers in ratios.items()},
            {key: round(statistics.median(v), 2) for key, v in spreads.items()})


def write_references(ratios, spreads, path=None, runs=1, cpu=None):
    """Record this CPU's reference ratios (and the spreads) in ``floors.json``, keeping the other CPUs' and the notes."""
    path = Path(path or FLOORS)
    data = json.loads(path.read_text()) if path.exists() else {}
    when = f"{datetime.date.today().isoformat()}, median of {runs} runs of --update-floors: {_machine()}"
    data.setdefault("references", {})[cpu or cpu_name()] = {"measured": when, "ratios": ratios}
    data["spread"] = {"measured": when, "threads": SPREAD_THREADS, "values": spreads}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _machine():
    import os

    import numba
    import scipy
    import sklearn

    return (f"{os.cpu_count()} cores, {platform.machine()} ({cpu_name()}), Python {platform.python_version()}, "
            f"NumPy {np.__version__}, SciPy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
            f"Numba {numba.__version__}")


# --- the cases ------------------------------------------------------------------------------------

def _isotonic_fit(dtype, weighted=False):
    def setup(n):
        import fastcal
        from sklearn.isotonic import IsotonicRegression

        x, y = miscalibrated_scores(n, dtype, seed=1)
        w = np.random.default_rng(3).uniform(0.5, 2.0, n) if weighted else None
        return (lambda: fastcal.IsotonicRegression().fit(x, y, sample_weight=w),
                {"scikit-learn": lambda: IsotonicRegression().fit(x, y, sample_weight=w)})
    return setup


def _isotonic_predict(n):
    import fastcal
    from sklearn.isotonic import IsotonicRegression

    x, y = miscalibrated_scores(n, "float64", seed=2)
    ours = fastcal.IsotonicRegression(out_of_bounds="clip").fit(x, y)
    theirs = IsotonicRegression(out_of_bounds="clip").fit(x, y)
    t = np.random.default_rng(4).random(n)
    return (lambda: ours.predict(t), {"scikit-learn": lambda: theirs.predict(t),
                                      "NumPy np.interp": lambda: np.interp(t, ours.X_thresholds_, ours.y_thresholds_)})


def _isotonic_ordered(n):
    import fastcal
    from scipy.optimize import isotonic_regression

    v = np.random.default_rng(5).normal(size=n) + np.linspace(0, 10, n)
    return lambda: fastcal.isotonic_regression(v), {"SciPy": lambda: isotonic_regression(v)}


def _platt(dtype):
    def setup(n):
        import fastcal
        from sklearn.calibration import _SigmoidCalibration

        s, y = miscalibrated_scores(n, dtype, seed=1)
        return lambda: fastcal.platt_scaling(s, y), {"scikit-learn": lambda: _SigmoidCalibration().fit(s, y)}
    return setup


def _platt_predict(n):
    import fastcal
    from scipy.special import expit

    s, y = miscalibrated_scores(n, "float64", seed=2)
    cal = fastcal.PlattScaling().fit(s, y)
    a, b = cal.a_, cal.b_
    return lambda: cal.predict(s), {"SciPy expit": lambda: expit(-(a * s + b))}


def _slope(n):
    import fastcal
    from sklearn.linear_model import LogisticRegression

    p, y = miscalibrated_scores(n, "float64", seed=5)

    def sklearn_fit():
        LogisticRegression(C=np.inf, tol=1e-8, max_iter=1000).fit((np.log(p) - np.log1p(-p))[:, None], y)

    return lambda: fastcal.calibration_slope_intercept(y, p), {"scikit-learn": sklearn_fit}


def _temperature(n):
    import fastcal
    from sklearn.calibration import _TemperatureScaling

    rng = np.random.default_rng(0)
    z = rng.normal(size=(n, 10)) * 3
    p = np.exp(z / 2)
    p /= p.sum(axis=1, keepdims=True)
    y = np.minimum((rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), 9)
    return lambda: fastcal.TemperatureScaling().fit(z, y), {"scikit-learn": lambda: _TemperatureScaling().fit(z, y)}


def _negative_sampling(n):
    import fastcal

    p, _ = miscalibrated_scores(n, "float64")
    return lambda: fastcal.correct_negative_sampling(p, 0.1), {"NumPy": lambda: p / (p + (1 - p) / 0.1)}


def _proba(n, k, seed):
    P = np.random.default_rng(seed).normal(size=(n, k))
    np.exp(P - P.max(axis=1, keepdims=True), out=P)
    P /= P.sum(axis=1, keepdims=True)
    return P


def _adjust_multiclass(n):
    import fastcal

    P = _proba(n, 10, 2)
    rng = np.random.default_rng(3)
    train, new = rng.dirichlet(np.ones(10)), rng.dirichlet(np.ones(10))
    w = new / train

    def numpy():
        q = P * w
        q /= q.sum(axis=1, keepdims=True)

    return lambda: fastcal.adjust_priors(P, train, new), {"NumPy": numpy}


def _em(n, iters=3):
    import fastcal
    from fastcal import ConvergenceWarning

    P = _proba(n, 10, 4)
    train = np.full(10, 0.1)

    def ours():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fastcal.estimate_priors_em(P, train, max_iter=iters, tol=1e-300)

    def numpy():
        pi = train
        for _ in range(iters):
            q = P * (pi / train)
            q /= q.sum(axis=1, keepdims=True)
            pi = q.mean(axis=0)

    return ours, {"NumPy": numpy}


def _metric(name, **kwargs):
    def setup(n):
        import fastcal
        from sklearn import metrics
        from sklearn.calibration import calibration_curve

        p, y = miscalibrated_scores(n, "float64", seed=1)
        ours = getattr(fastcal, name)
        theirs = calibration_curve if name == "calibration_curve" else getattr(metrics, name)
        return lambda: ours(y, p, **kwargs), {"scikit-learn": lambda: theirs(y, p, **kwargs)}
    return setup


def _ece(n):
    import fastcal

    p, y = miscalibrated_scores(n, "float64", seed=1)

    def numpy():
        ids = np.searchsorted(np.linspace(0, 1, 16)[1:-1], p)
        count = np.bincount(ids, minlength=15)
        pos = np.bincount(ids, weights=y, minlength=15)
        conf = np.bincount(ids, weights=p, minlength=15)
        return np.sum(np.abs(pos - conf)[count > 0]) / len(p)

    return lambda: fastcal.expected_calibration_error(y, p), {"NumPy": numpy}


def _multiclass_log_loss(n):
    import fastcal
    from sklearn import metrics

    P = _proba(n, 10, 6)
    y = np.arange(n) % 10
    return lambda: fastcal.log_loss(y, P), {"scikit-learn": lambda: metrics.log_loss(y, P)}


def _smooth(n):
    import fastcal
    import relplot

    p, y = miscalibrated_scores(n, "float64", seed=11)
    yf = y.astype(np.float64)
    return lambda: fastcal.smooth_ece(y, p), {"relplot": lambda: relplot.smECE(p, yf)}


def _decomposition(n):
    import fastcal
    from model_diagnostics.scoring import SquaredError, decompose

    p, y = miscalibrated_scores(n, "float64", seed=11)
    return (lambda: fastcal.score_decomposition(y, p),
            {"model-diagnostics": lambda: decompose(y, p, scoring_function=SquaredError())})


def _tied_ecce(n):
    """Weighted ECCE on scores rounded to 2 decimals (tie groups of thousands of rows, whose rows fastcal puts in an
    order of their own), against MCGrad's ``ecce`` and ``ecce_pvalue`` (which sort and do not pool ties)."""
    import fastcal
    from mcgrad import metrics as mcgrad

    p, y = miscalibrated_scores(n, "float64", seed=21)
    p = np.round(p, 2)
    w = np.random.default_rng(23).uniform(0.2, 3.0, n)
    return (lambda: fastcal.ecce(y, p, sample_weight=w),
            {"MCGrad": lambda: (mcgrad.ecce(y, p, sample_weight=w), mcgrad.ecce_pvalue(y, p, sample_weight=w))})


CASES = [
    Case("isotonic", "IsotonicRegression.fit, float64, 0/1 labels", _isotonic_fit("float64")),
    Case("isotonic", "IsotonicRegression.fit, float32, 0/1 labels", _isotonic_fit("float32")),
    Case("isotonic", "IsotonicRegression.fit, sample weights", _isotonic_fit("float64", weighted=True)),
    Case("isotonic", "IsotonicRegression.predict", _isotonic_predict),
    Case("isotonic", "isotonic_regression, ordered values", _isotonic_ordered),
    Case("platt", "platt_scaling, float64", _platt("float64")),
    Case("platt", "PlattScaling.predict", _platt_predict, size=4),
    Case("platt", "calibration_slope_intercept", _slope),
    Case("temperature", "TemperatureScaling.fit, 10 classes", _temperature, size=0.2),
    Case("prior", "correct_negative_sampling", _negative_sampling, size=10),
    Case("prior", "adjust_priors, 10 classes", _adjust_multiclass),
    Case("prior", "estimate_priors_em, 10 classes, 3 iterations", _em),
    Case("diagnostics", "calibration_curve, uniform", _metric("calibration_curve", n_bins=10)),
    Case("diagnostics", "calibration_curve, quantile", _metric("calibration_curve", n_bins=10, strategy="quantile")),
    Case("diagnostics", "brier_score_loss", _metric("brier_score_loss")),
    Case("diagnostics", "log_loss", _metric("log_loss")),
    Case("diagnostics", "roc_auc_score", _metric("roc_auc_score")),
    Case("diagnostics", "expected_calibration_error", _ece),
    Case("diagnostics", "log_loss, 10 classes", _multiclass_log_loss),
    Case("diagnostics", "smooth_ece", _smooth),
    Case("diagnostics", "score_decomposition, Brier", _decomposition),
    Case("diagnostics", "ecce, weighted, scores rounded to 2 decimals", _tied_ecce),
]


def _pick(only):
    cases = [c for c in CASES if not only or c.subject in only]  # CASES read at call time (the self-test swaps it)
    if not cases:
        raise SystemExit(f"no case for {sorted(only)}; subjects: {sorted({c.subject for c in CASES})}")
    return cases


def _report(result):
    ratios = ", ".join(f"{p} {r:.1f}x" for p, r in result.ratios.items())
    again = f" ({result.attempts} attempts)" if result.attempts > 1 else ""
    spread_text = "" if result.spread is None else f"; spread {result.spread:.2f}"
    print(f"  {result.key}: {_ms(result.ours)}; {ratios}{spread_text}; {result.rounds} rounds{again}",
          file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=N, help="rows (the references hold for 10^6)")
    parser.add_argument("--only", help="comma-separated subjects, e.g. isotonic,platt")
    parser.add_argument("--retries", type=int, default=2, help="re-measurements of a row below its floor")
    parser.add_argument("--update-floors", action="store_true",
                        help="measure --runs times and record this CPU's reference ratios and the spreads")
    parser.add_argument("--runs", type=int, default=3, help="with --update-floors: runs to take the median of")
    parser.add_argument("--slowdown", type=int, default=1, help="call fastcal this many times per timed call")
    parser.add_argument("--expect-fail", action="store_true",
                        help="succeed only if every gated row fails (with --slowdown: the gate catches it)")
    parser.add_argument("--json", type=Path, default=None, help=f"results file (default {RESULTS})")
    args = parser.parse_args(argv)
    args.json = args.json or RESULTS
    cases = _pick(set(args.only.split(",")) if args.only else None)
    t0 = time.perf_counter()
    if args.update_floors:
        if args.only or args.n != N or args.slowdown != 1:
            raise SystemExit("--update-floors needs every case at the default size, without --slowdown")
        runs = []
        for run in range(args.runs):
            print(f"run {run + 1} of {args.runs}", file=sys.stderr)
            runs.append(gate(cases, {}, args.n, retries=0, log=_report))
        write_references(*references_from_runs(runs), runs=args.runs)
        print(f"wrote {FLOORS}; review the diff", file=sys.stderr)
        return 0
    data = load_floors()
    floors, _, note = floors_for(data)
    print(note, file=sys.stderr)
    missing = [c.key for c in cases if c.key not in floors]
    results = gate(cases, data, args.n, retries=0 if args.expect_fail else args.retries, log=_report,
                   slowdown=args.slowdown)
    elapsed = time.perf_counter() - t0
    print(render(results))
    failed = [(r.key, p) for r in results for p in r.failing()]
    caught = [r.key for r in results if r.failing()]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), machine=_machine(),
        cpu=cpu_name(), n=args.n, slowdown=args.slowdown, seconds=elapsed, passed=not failed and not missing,
        missing_floors=missing, results=[asdict(r) for r in results]), indent=2) + "\n")
    print(f"\n{len(results)} cases in {elapsed:.0f} s; results in {args.json}", file=sys.stderr)
    if missing:
        print("no reference in floors.json for: " + "; ".join(missing), file=sys.stderr)
    if args.expect_fail:
        missed = [r.key for r in results if r.key not in caught and r.floors]
        for key in missed:
            print(f"NOT CAUGHT {key}: passes with fastcal slowed {args.slowdown}x", file=sys.stderr)
        return 1 if missed else 0
    for r in results:
        for p in r.failing():
            if p == "spread":
                print(f"FAIL {r.key}: spread {r.spread:.2f} on {SPREAD_THREADS} threads is below "
                      f"{r.spread_floor:.2f}", file=sys.stderr)
            else:
                print(f"FAIL {r.key} against {p}: {r.ratios[p]:.2f}x is below the floor {r.floors[p]:.2f}x",
                      file=sys.stderr)
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
