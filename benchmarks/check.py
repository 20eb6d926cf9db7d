"""The benchmark gate (``make bench-check``): fail when fastcal's speed-up over a peer falls below its floor.

Each case times a fastcal call and the same work done by its peers
(scikit-learn, SciPy, NumPy, relplot, model-diagnostics) in this process, on the same arrays of 10^6
rows, and computes ``ratio = peer time / fastcal time``. The gate fails when
a ratio falls below its floor in ``benchmarks/floors.json``.

Noise must not fail it, so:

- the JIT is warmed (one call of everything) before any timing;
- each time is the best of several calls, fastcal's and the peers' calls
  interleaved round by round, so both see the same background load;
- a row below its floor is measured again (up to ``--retries`` times, with
  more rounds), and fails only if no measurement reaches the floor;
- each floor is about half the ratio measured on a quiet machine, lowered
  where a busy machine measured less (see :func:`floors_from_runs`, and
  ``floors.json`` for how to update them).

``python -m benchmarks.check`` prints the table and writes
``benchmarks/results/bench-check.json`` (ignored by git); ``--update-floors``
measures ``--runs`` times and writes new floors (:func:`floors_from_runs`)
to ``floors.json``; ``--only isotonic,platt`` picks cases by subject;
``--n`` changes the size (the floors hold for 10^6).
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import platform
import sys
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from benchmarks._harness import miscalibrated_scores

HERE = Path(__file__).resolve().parent
FLOORS = HERE / "floors.json"
RESULTS = HERE / "results" / "bench-check.json"
N = 10**6
PEER_BUDGET = 1.0  # seconds of calls per peer and case, after its first call


@dataclass
class Case:
    """A gated comparison: ``setup(n)`` builds the arrays once and returns ``(ours, {peer: func})`` (no-arg callables)."""

    subject: str
    task: str
    setup: Callable[[int], tuple[Callable[[], object], dict[str, Callable[[], object]]]]
    rounds: int = 7  # interleaved rounds: fastcal is called in each (the peers within their budget)

    @property
    def key(self):
        return f"{self.subject}: {self.task}"


@dataclass
class Result:
    """One measured case: fastcal's best time, each peer's, and the ratios (peer / fastcal)."""

    key: str
    ours: float
    peers: dict[str, float]
    ratios: dict[str, float] = field(default_factory=dict)
    floors: dict[str, float] = field(default_factory=dict)
    attempts: int = 1

    def failing(self):
        """The peers whose ratio is below its floor."""
        return [p for p, floor in self.floors.items() if self.ratios.get(p, float("inf")) < floor]


def _timed(func):
    """Wall time of ``func()``, the garbage collector paused as ``timeit`` does (a collection costs 0.5 s in a big heap)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        t0 = time.perf_counter()
        func()
        return time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()


def measure(case, n=N, rounds=None, peer_budget=PEER_BUDGET):
    """Time ``case`` on ``n`` rows: the best of ``rounds`` interleaved rounds, after a warm-up call.

    fastcal is called in every round, after one untimed call that compiles
    (or loads) its kernels. A peer has no JIT to warm: its first call counts
    as a sample, and it is called again in the following rounds only while
    its calls have taken less than ``peer_budget`` seconds in all. Noise can
    only lengthen a time, so a peer with fewer samples can only look slower,
    which errs towards passing; fastcal gets every round.
    """
    ours, peers = case.setup(n)
    ours()
    gc.collect()
    best = {name: _timed(func) for name, func in peers.items()}
    spent = dict(best)
    best_ours = float("inf")
    for _ in range(rounds or case.rounds):
        best_ours = min(best_ours, _timed(ours))
        for name, func in peers.items():
            if spent[name] < peer_budget:
                t = _timed(func)
                spent[name] += t
                best[name] = min(best[name], t)
    return Result(case.key, best_ours, best, {p: v / best_ours for p, v in best.items()})


def gate(cases, floors, n=N, retries=2, log=None):
    """Measure every case; re-measure each row below a floor up to ``retries`` times (more rounds each time).

    Returns the results; a result's :meth:`Result.failing` lists the peers
    still below their floors. A ratio kept is the best over the attempts (a
    slowdown is real only if no attempt reaches the floor).
    """
    results = []
    for case in cases:
        result = measure(case, n)
        result.floors = {p: f for p, f in floors.get(case.key, {}).items() if p in result.ratios}
        while result.failing() and result.attempts <= retries:
            again = measure(case, n, rounds=case.rounds * (result.attempts + 1),
                            peer_budget=PEER_BUDGET * (result.attempts + 1))
            result.attempts += 1
            for p in result.ratios:
                if again.ratios[p] > result.ratios[p]:
                    result.ratios[p], result.peers[p] = again.ratios[p], again.peers[p]
            result.ours = min(result.ours, again.ours)
        if log:
            log(result)
        results.append(result)
        gc.collect()
    return results


def render(results):
    lines = ["| case | fastcal | peer | peer time | ratio | floor | |", "|---|---|---|---|---|---|---|"]
    for r in results:
        for i, (peer, t) in enumerate(r.peers.items()):
            floor = r.floors.get(peer)
            status = "—" if floor is None else ("FAIL" if r.ratios[peer] < floor else "ok")
            lines.append(f"| {r.key if i == 0 else ''} | {_ms(r.ours) if i == 0 else ''} | {peer} | {_ms(t)} "
                         f"| {r.ratios[peer]:.1f}x | {'—' if floor is None else f'{floor:.1f}x'} | {status} |")
    return "\n".join(lines)


def _ms(seconds):
    return f"{seconds * 1e3:.1f} ms"


def load_floors(path=None):
    return json.loads(Path(path or FLOORS).read_text())["floors"]


def floors_from_runs(runs):
    """Floors from several runs of every case: ``{key: {peer: floor}}``.

    ``runs`` is a list (one per run) of lists of :class:`Result`. The quiet
    ratio of a row is its peer's best time over all runs divided by
    fastcal's best time over all runs: each side's least disturbed call (on
    a busy machine the two rarely fall in the same run). The floor is half of
    it, or half the lowest ratio a run measured if that is lower (on a shared
    machine a lasting load can slow either side in every run, so the quiet
    ratio alone is not safe), rounded down to 0.1.
    """
    ours, peer, low = {}, {}, {}
    for results in runs:
        for r in results:
            ours[r.key] = min(ours.get(r.key, float("inf")), r.ours)
            for p, t in r.peers.items():
                peer.setdefault(r.key, {})[p] = min(peer.get(r.key, {}).get(p, float("inf")), t)
                low.setdefault(r.key, {})[p] = min(low.get(r.key, {}).get(p, float("inf")), r.ratios[p])
    return {key: {p: max(0.1, float(np.floor(10 * min(t / ours[key], low[key][p]) / 2)) / 10)
                  for p, t in peers.items()} for key, peers in peer.items()}


def write_floors(floors, path=None, runs=1):
    """Write ``floors`` (``{key: {peer: floor}}``) to ``floors.json``, keeping its notes."""
    path = path or FLOORS
    data = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    data["floors"] = floors
    data["measured"] = f"{datetime.date.today().isoformat()}, best of {runs} runs of --update-floors: {_machine()}"
    Path(path).write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _machine():
    import os

    import numba
    import scipy
    import sklearn

    return (f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, NumPy {np.__version__}, "
            f"SciPy {scipy.__version__}, scikit-learn {sklearn.__version__}, Numba {numba.__version__}")


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


CASES = [
    Case("isotonic", "IsotonicRegression.fit, float64, 0/1 labels", _isotonic_fit("float64")),
    Case("isotonic", "IsotonicRegression.fit, float32, 0/1 labels", _isotonic_fit("float32")),
    Case("isotonic", "IsotonicRegression.fit, sample weights", _isotonic_fit("float64", weighted=True), rounds=3),
    Case("isotonic", "IsotonicRegression.predict", _isotonic_predict),
    Case("isotonic", "isotonic_regression, ordered values", _isotonic_ordered, rounds=7),
    Case("platt", "platt_scaling, float64", _platt("float64"), rounds=3),
    Case("platt", "PlattScaling.predict", _platt_predict, rounds=9),
    Case("platt", "calibration_slope_intercept", _slope, rounds=3),
    Case("temperature", "TemperatureScaling.fit, 10 classes", _temperature, rounds=2),
    Case("prior", "correct_negative_sampling", _negative_sampling, rounds=15),
    Case("prior", "adjust_priors, 10 classes", _adjust_multiclass, rounds=5),
    Case("prior", "estimate_priors_em, 10 classes, 3 iterations", _em, rounds=3),
    Case("diagnostics", "calibration_curve, uniform", _metric("calibration_curve", n_bins=10)),
    Case("diagnostics", "calibration_curve, quantile", _metric("calibration_curve", n_bins=10, strategy="quantile")),
    Case("diagnostics", "brier_score_loss", _metric("brier_score_loss")),
    Case("diagnostics", "log_loss", _metric("log_loss")),
    Case("diagnostics", "roc_auc_score", _metric("roc_auc_score"), rounds=3),
    Case("diagnostics", "expected_calibration_error", _ece),
    Case("diagnostics", "log_loss, 10 classes", _multiclass_log_loss),
    Case("diagnostics", "smooth_ece", _smooth, rounds=5),
    Case("diagnostics", "score_decomposition, Brier", _decomposition, rounds=3),
]


def _pick(only):
    cases = [c for c in CASES if not only or c.subject in only]  # CASES read at call time (the self-test swaps it)
    if not cases:
        raise SystemExit(f"no case for {sorted(only)}; subjects: {sorted({c.subject for c in CASES})}")
    return cases


def _report(result):
    ratios = ", ".join(f"{p} {r:.1f}x" for p, r in result.ratios.items())
    again = f" ({result.attempts} attempts)" if result.attempts > 1 else ""
    print(f"  {result.key}: {_ms(result.ours)}; {ratios}{again}", file=sys.stderr, flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=N, help="rows (the floors hold for 10^6)")
    parser.add_argument("--only", help="comma-separated subjects, e.g. isotonic,platt")
    parser.add_argument("--retries", type=int, default=2, help="re-measurements of a row below its floor")
    parser.add_argument("--update-floors", action="store_true", help="measure --runs times and write new floors")
    parser.add_argument("--runs", type=int, default=3, help="with --update-floors: runs to take the best of")
    parser.add_argument("--json", type=Path, default=None, help=f"results file (default {RESULTS})")
    args = parser.parse_args(argv)
    args.json = args.json or RESULTS
    cases = _pick(set(args.only.split(",")) if args.only else None)
    t0 = time.perf_counter()
    if args.update_floors:
        if args.only or args.n != N:
            raise SystemExit("--update-floors needs every case at the default size")
        runs = []
        for run in range(args.runs):
            print(f"run {run + 1} of {args.runs}", file=sys.stderr)
            runs.append(gate(cases, {}, args.n, retries=0, log=_report))
        write_floors(floors_from_runs(runs), runs=args.runs)
        print(f"wrote {FLOORS}; review the diff", file=sys.stderr)
        return 0
    floors = load_floors()
    missing = [c.key for c in cases if c.key not in floors]
    results = gate(cases, floors, args.n, retries=args.retries, log=_report)
    elapsed = time.perf_counter() - t0
    print(render(results))
    failed = [(r.key, p, r.ratios[p], r.floors[p]) for r in results for p in r.failing()]
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(dict(
        date=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), machine=_machine(),
        n=args.n, seconds=elapsed, passed=not failed and not missing, missing_floors=missing,
        results=[asdict(r) for r in results]), indent=2) + "\n")
    print(f"\n{len(results)} cases in {elapsed:.0f} s; results in {args.json}", file=sys.stderr)
    if missing:
        print("no floor in floors.json for: " + "; ".join(missing), file=sys.stderr)
    for key, peer, ratio, floor in failed:
        print(f"FAIL {key} against {peer}: {ratio:.2f}x is below the floor {floor:.1f}x", file=sys.stderr)
    return 1 if failed or missing else 0


if __name__ == "__main__":
    sys.exit(main())
