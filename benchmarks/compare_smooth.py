"""fastcal.smooth_ece against relplot.smECE on the same arrays, in one process.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table: binary predictions of 10^6 rows (over-confident, the harness's
model; then well-calibrated and under-confident), the top-label problem of an
(n, 10) probability matrix (relplot's own reduction, then its smECE), and
10^8 rows in a subprocess of its own (fresh memory, peak RSS measured;
relplot not run at that size).
"""

from __future__ import annotations

import sys

import numpy as np

from ._harness import Row, best_of, big_run, miscalibrated_scores

SUBJECT = "diagnostics"


def rows(quick=False):
    import relplot

    import fastcal

    from .compare_metrics import class_probabilities

    n = 10**4 if quick else 10**6
    repeat = 1 if quick else 5
    peer_repeat = 1 if quick else 3
    p, y = miscalibrated_scores(n, "float64", seed=11)
    yf = y.astype(np.float64)
    fastcal.smooth_ece(y[:1000], p[:1000])
    ours = best_of(lambda: fastcal.smooth_ece(y, p), repeat)
    theirs = best_of(lambda: relplot.smECE(p, yf), peer_repeat)
    yield Row(SUBJECT, "`smooth_ece` (fixed-point bandwidth), float64", n, ours, {"relplot `smECE`": theirs})

    # The same latent scores, calibrated and under-confident: the fixed point (and relplot's grid) depend on the
    # miscalibration; at sigma ~ 0.003 (well calibrated, 10^6 rows) fastcal evaluates on its finest grid.
    for kind, (p, y) in other_scores(n, seed=11).items():
        yf = y.astype(np.float64)
        ours = best_of(lambda: fastcal.smooth_ece(y, p), repeat)
        theirs = best_of(lambda: relplot.smECE(p, yf), peer_repeat)
        yield Row(SUBJECT, f"`smooth_ece`, {kind} scores, float64", n, ours, {"relplot `smECE`": theirs})

    P, labels = class_probabilities(n, 10, seed=12)
    fastcal.smooth_ece(labels[:1000], P[:1000])
    ours = best_of(lambda: fastcal.smooth_ece(labels, P), repeat)

    def peer():
        conf, correct = relplot.metrics.multiclass_logits_to_confidences(P, labels, probs=True)
        return relplot.smECE(conf, correct)

    theirs = best_of(peer, peer_repeat)
    yield Row(SUBJECT, "`smooth_ece`, top-label of (n, 10) probabilities", n, ours,
              {"relplot `multiclass_logits_to_confidences` + `smECE`": theirs})
    if not quick:
        yield big_row()


def other_scores(n, seed=0):
    """Well-calibrated and under-confident scores of ``n`` rows, from the latent scores of
    :func:`benchmarks._harness.miscalibrated_scores` (s ~ N(0, 2^2)): y ~ Bernoulli(sigmoid(s)) with
    p = sigmoid(s), and with p = sigmoid(s / 2) (the over-confident model of the first row, reversed)."""
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    truth = 1.0 / (1.0 + np.exp(-s))
    y = (rng.random(n) < truth).astype(np.uint8)
    return {"well-calibrated": (truth, y), "under-confident": (1.0 / (1.0 + np.exp(-s / 2.0)), y)}


def big_row(n=10**8, dtype="float64"):
    """``smooth_ece`` on ``n`` rows in a fresh process: time and peak memory beyond the inputs."""
    r = big_run("fastcal.smooth_ece(y, p)", n, dtype, seed=13)
    note = (f"{dtype}; peak memory beyond the inputs {r['extra'] / 2**20:.0f} MiB "
            f"(the {r['inputs'] / 2**30:.2f} GiB of scores and uint8 labels are read once); relplot not run")
    return Row(SUBJECT, "`smooth_ece`", n, r["seconds"], {}, note)


def main():
    from .compare import render

    print(render(list(rows(quick="--quick" in sys.argv))))


if __name__ == "__main__":
    main()
