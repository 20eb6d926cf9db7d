"""fastcal.prior against plain NumPy on the same arrays, in one process (warm JIT, best of N).

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table; ``python -m benchmarks.compare_prior`` prints them. The memory
bandwidth yardstick is a plain ``np.copyto(dst, src)`` of the same bytes: the
negative-sampling correction moves exactly as many bytes (read p, write out),
so ``copy time / our time`` is the fraction of that bandwidth we reach.
"""

from __future__ import annotations

import gc
import warnings

import numpy as np

from fastcal import adjust_priors, correct_negative_sampling, estimate_priors_em
from fastcal.prior import ConvergenceWarning

from ._harness import Row, best_of, miscalibrated_scores

RATE = 0.1


def _numpy_negative_sampling(p, r=RATE):
    return p / (p + (1 - p) / r)


def _numpy_adjust(P, w):
    q = P * w
    q /= q.sum(axis=1, keepdims=True)
    return q


def _numpy_em(P, train, n_iter):
    pi = train
    for _ in range(n_iter):
        q = P * (pi / train)
        q /= q.sum(axis=1, keepdims=True)
        pi = q.mean(axis=0)
    return pi


def _proba_matrix(n, k, seed=0):
    rng = np.random.default_rng(seed)
    P = rng.normal(size=(n, k))
    P -= P.max(axis=1, keepdims=True)
    np.exp(P, out=P)
    P /= P.sum(axis=1, keepdims=True)
    return P


def _best_interleaved(funcs, repeat):
    """Best time of each function in ``funcs`` (a dict), the calls interleaved round by round.

    The machine is shared: interleaving lets fastcal and its peers see the
    same background load, so the ratios are fairer than with consecutive
    best-of runs.
    """
    best = dict.fromkeys(funcs, float("inf"))
    for _ in range(repeat):
        for name, func in funcs.items():
            best[name] = min(best[name], best_of(func, 1))
    return best


def _gbs(nbytes, seconds):
    return f"{nbytes / seconds / 1e9:.1f} GB/s"


def negative_sampling_rows(n, repeat):
    p, _ = miscalibrated_scores(n, "float64")
    correct_negative_sampling(p[:100_000], RATE)  # warm both kernels
    correct_negative_sampling(p[:100], RATE)
    moved = 2 * p.nbytes  # read p, write the result
    t = _best_interleaved({
        "ours": lambda: correct_negative_sampling(p, RATE),
        "numpy": lambda: _numpy_negative_sampling(p),
        "fresh_copy": lambda: p.copy(),
    }, repeat)
    numpy = t["numpy"]
    yield Row("prior", "`correct_negative_sampling`, new array", n, t["ours"],
              {"NumPy `p / (p + (1 - p) / r)`": numpy, "`p.copy()` (copy into new memory)": t["fresh_copy"]},
              f"{_gbs(moved, t['ours'])}; copy {_gbs(moved, t['fresh_copy'])}")
    dst = np.empty_like(p)
    np.copyto(dst, p)  # fault the pages in
    t = _best_interleaved({
        "out": lambda: correct_negative_sampling(p, RATE, out=dst),
        "in_place": lambda: correct_negative_sampling(dst, 0.999999, out=dst),  # values barely move between rounds
        "copy": lambda: np.copyto(dst, p),
    }, repeat)
    copy = t["copy"]
    yield Row("prior", "`correct_negative_sampling`, `out=` preallocated", n, t["out"],
              {"NumPy `p / (p + (1 - p) / r)`": numpy, "`np.copyto(dst, p)`": copy},
              f"{_gbs(moved, t['out'])} = {copy / t['out']:.0%} of copy bandwidth")
    yield Row("prior", "`correct_negative_sampling`, in place (`out=p`)", n, t["in_place"],
              {"NumPy `p / (p + (1 - p) / r)`": numpy, "`np.copyto(dst, p)`": copy},
              f"{_gbs(moved, t['in_place'])} = {copy / t['in_place']:.0%} of copy bandwidth")
    dst = None  # frees the array (not `del`: the timed lambdas above close over the name)
    gc.collect()


def adjust_binary_rows(n, repeat):
    p, _ = miscalibrated_scores(n, "float64", seed=1)
    adjust_priors(p[:100_000], 0.5, 0.05)
    w1, w0 = 0.05 / 0.5, 0.95 / 0.5
    t = _best_interleaved({
        "ours": lambda: adjust_priors(p, 0.5, 0.05),
        "numpy": lambda: w1 * p / (w1 * p + w0 * (1 - p)),
    }, repeat)
    yield Row("prior", "`adjust_priors`, binary", n, t["ours"], {"NumPy `w1 p / (w1 p + w0 (1 - p))`": t["numpy"]})


def adjust_multiclass_rows(n, k, repeat):
    P = _proba_matrix(n, k, seed=2)
    rng = np.random.default_rng(3)
    train, new = rng.dirichlet(np.ones(k)), rng.dirichlet(np.ones(k))
    adjust_priors(P[:10_000], train, new)
    w = new / train
    dst = np.empty_like(P)
    np.copyto(dst, P)
    t = _best_interleaved({
        "ours": lambda: adjust_priors(P, train, new),
        "numpy": lambda: _numpy_adjust(P, w),
        "out": lambda: adjust_priors(P, train, new, out=dst),
        "copy": lambda: np.copyto(dst, P),
    }, repeat)
    ours, numpy, ours_out, copy = t["ours"], t["numpy"], t["out"], t["copy"]
    yield Row("prior", f"`adjust_priors`, (n, {k})", n, ours,
              {"NumPy `q = P * w; q /= q.sum(axis=1, keepdims=True)`": numpy})
    yield Row("prior", f"`adjust_priors`, (n, {k}), `out=` preallocated", n, ours_out,
              {"NumPy `q = P * w; q /= q.sum(axis=1, keepdims=True)`": numpy, "`np.copyto(dst, P)`": copy},
              f"{_gbs(2 * P.nbytes, ours_out)} = {copy / ours_out:.0%} of copy bandwidth")
    dst = None  # frees the array (not `del`: the timed lambdas above close over the name)


def em_rows(n, k, repeat):
    P = _proba_matrix(n, k, seed=4)
    train = np.full(k, 1.0 / k)
    estimate_priors_em(P[:10_000], train)
    res = estimate_priors_em(P, train, accelerate=False)
    iters = res.n_iter

    def ours_fixed():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            estimate_priors_em(P, train, max_iter=iters, tol=1e-300, accelerate=False)

    t = _best_interleaved({"ours": ours_fixed, "numpy": lambda: _numpy_em(P, train, iters)}, repeat)
    ours, numpy = t["ours"], t["numpy"]
    yield Row("prior", f"`estimate_priors_em`, (n, {k}), {iters} iterations", n, ours,
              {"NumPy, the textbook EM loop, same iterations": numpy})


def _overlapping(n, k, spread, seed):
    """Posteriors of heavily overlapping classes: unit-variance Gaussians with means in [-spread, spread]."""
    rng = np.random.default_rng(seed)
    mu = np.linspace(-spread, spread, k)
    x = rng.normal(mu[rng.choice(k, n, p=rng.dirichlet(np.ones(k) * 2))])
    logits = -((x[:, None] - mu[None, :]) ** 2) / 2
    post = np.exp(logits - logits.max(axis=1, keepdims=True))
    return post / post.sum(axis=1, keepdims=True)


def squarem_rows(n, repeat):
    """SQUAREM against plain EM on heavily overlapping classes, to the same fixed point (tol=1e-12)."""
    for k, spread in ((2, 0.25), (3, 0.75)):
        post = _overlapping(n, k, spread, seed=k)
        data, train = (post[:, 1], 0.5) if k == 2 else (post, np.full(k, 1.0 / k))
        kwargs = dict(tol=1e-12, max_iter=100_000)
        fast = estimate_priors_em(data, train, **kwargs)
        plain = estimate_priors_em(data, train, accelerate=False, **kwargs)
        t = _best_interleaved({"fast": lambda: estimate_priors_em(data, train, **kwargs),
                               "plain": lambda: estimate_priors_em(data, train, accelerate=False, **kwargs)}, repeat)
        diff = float(np.abs(fast.priors - plain.priors).max())
        shape = "binary" if k == 2 else f"(n, {k})"
        yield Row("prior", f"`estimate_priors_em`, {shape}, overlapping classes, tol=1e-12: SQUAREM {fast.n_iter} "
                  f"passes vs plain EM {plain.n_iter} (priors agree to {diff:.0e})", n, t["fast"],
                  {"fastcal plain EM (`accelerate=False`)": t["plain"]})


def rows(quick=False):
    """Rows for the comparison table (float64): quick=True uses tiny sizes."""
    if quick:
        yield from negative_sampling_rows(10_000, 2)
        yield from adjust_binary_rows(10_000, 2)
        yield from adjust_multiclass_rows(2_000, 10, 2)
        yield from em_rows(500, 5, 1)
        yield from squarem_rows(2_000, 1)
        return
    yield from negative_sampling_rows(10**7, 5)
    yield from negative_sampling_rows(10**8, 2)
    yield from adjust_binary_rows(10**7, 5)
    yield from adjust_multiclass_rows(10**7, 10, 3)
    yield from em_rows(10**6, 10, 2)
    yield from squarem_rows(10**6, 1)


def main(quick=False):  # pragma: no cover - manual run
    for row in rows(quick):
        peers = ", ".join(f"{name} {t:.4f} s ({t / row.ours:.2f}x)" for name, t in row.peers.items())
        print(f"{row.task:55s} n={row.n:>11,d}  fastcal {row.ours:.4f} s | {peers} | {row.note}")


if __name__ == "__main__":  # pragma: no cover
    import sys

    main(quick="--quick" in sys.argv)
