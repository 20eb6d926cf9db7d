"""CORP score decomposition and reliability against model-diagnostics, on the same arrays, in one process.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table (JIT warmed, best of N); ``python -m benchmarks.compare_decomposition``
prints them. :func:`fastcal.score_decomposition` against
``model_diagnostics.scoring.decompose`` at 10^7 rows (binary) and 10^6 rows
(top-label of (n, 10) probabilities, the peer given NumPy's max/argmax);
:func:`fastcal.corp_reliability` with 1,000 consistency resamples of 10^6
rows (no peer: model-diagnostics draws no bands), with its scaling in the
number of resamples and of threads; the decomposition of 10^8 rows in a
subprocess of its own (fresh memory, peak RSS measured).
"""

from __future__ import annotations

import sys

import numpy as np

from ._harness import Row, best_of, big_run, miscalibrated_scores

SUBJECT = "decomposition"


def _peer(y, p, w=None, scoring="brier"):
    from model_diagnostics.scoring import LogLoss, SquaredError, decompose

    return decompose(y, p, w, scoring_function=SquaredError() if scoring == "brier" else LogLoss())


def rows(quick=False):
    import fastcal

    from .compare_metrics import class_probabilities

    n = 10**4 if quick else 10**7
    repeat = 1 if quick else 3
    peer_repeat = 1 if quick else 2
    p, y = miscalibrated_scores(n, "float64", seed=11)
    w = np.random.default_rng(12).uniform(0.5, 2.0, n)
    warm = slice(0, min(n, 1 << 18))
    _peer(y[:1000], p[:1000])  # imports and first-call costs of the peer, untimed
    for scoring, weights, task in (
        ("brier", None, '`score_decomposition`, `scoring="brier"`'),
        ("log_loss", None, '`score_decomposition`, `scoring="log_loss"`'),
        ("brier", w, '`score_decomposition`, `scoring="brier"`, sample weights'),
    ):
        ww = None if weights is None else weights[warm]
        fastcal.score_decomposition(y[warm], p[warm], scoring=scoring, sample_weight=ww)
        ours = best_of(lambda: fastcal.score_decomposition(y, p, scoring=scoring, sample_weight=weights), repeat)
        theirs = best_of(lambda: _peer(y, p, weights, scoring), peer_repeat)
        yield Row(SUBJECT, f"{task}, float64", n, ours, {"model-diagnostics `decompose`": theirs})

    m = 10**4 if quick else 10**6
    P, labels = class_probabilities(m, 10, seed=13)
    fastcal.score_decomposition(labels[:1000], P[:1000])
    ours = best_of(lambda: fastcal.score_decomposition(labels, P), repeat)
    theirs = best_of(lambda: _peer((P.argmax(axis=1) == labels).astype(np.float64), P.max(axis=1)), peer_repeat)
    yield Row(SUBJECT, "`score_decomposition`, top-label of (n, 10) probabilities", m, ours,
              {"NumPy max/argmax + model-diagnostics `decompose`": theirs})

    yield from _corp_rows(fastcal, 10**4 if quick else 10**6, 10 if quick else 1000, repeat=1)
    if not quick:
        yield _big_row()


def _corp_rows(fastcal, n, n_resamples, repeat):
    """1,000 consistency resamples on every thread; then fewer resamples and one thread, for the scaling."""
    p, y = miscalibrated_scores(n, "float64", seed=14)
    fastcal.corp_reliability(y[:1000], p[:1000], n_resamples=4, random_state=0)
    fastcal.corp_reliability(y[:1000], p[:1000], n_resamples=4, random_state=0, band="confidence")
    threads = fastcal.get_num_threads()
    times = {}
    for band in ("consistency", "confidence"):
        for r in sorted({n_resamples // 4, n_resamples}):
            for t in sorted({1, threads}):
                fastcal.set_num_threads(t)
                try:
                    times[band, r, t] = best_of(lambda: fastcal.corp_reliability(
                        y, p, n_resamples=r, band=band, random_state=0), repeat)
                finally:
                    fastcal.set_num_threads(None)
    for band in ("consistency", "confidence"):
        note = "; ".join(f"{r} resamples on {t} thread{'s' if t > 1 else ''}: {times[band, r, t]:.2f} s"
                         for (b, r, t) in sorted(times) if b == band and (r, t) != (n_resamples, threads))
        yield Row(SUBJECT, f'`corp_reliability`, {n_resamples} `band="{band}"` resamples on {threads} threads', n,
                  times[band, n_resamples, threads], {}, note)


def _big_row(n=10**8, dtype="float64"):
    r = big_run("fastcal.score_decomposition(y, p)", n, dtype, seed=15)
    note = (f"{dtype}; peak memory beyond the inputs {r['extra'] / 2**30:.2f} GiB "
            f"({r['extra'] / r['inputs']:.2f}x the {r['inputs'] / 2**30:.2f} GiB of scores and uint8 labels); "
            "model-diagnostics not run at this size")
    return Row(SUBJECT, '`score_decomposition`, `scoring="brier"`', n, r["seconds"], {}, note)


def main():
    from .compare import render

    print(render(list(rows(quick="--quick" in sys.argv))))


if __name__ == "__main__":
    main()
