"""fastcal.metrics against scikit-learn (and plain NumPy) on the same arrays, in one process.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table (JIT warmed, best of N); ``python -m benchmarks.compare_metrics``
prints them. The binary rows use 10^7 scores; the multiclass rows (log loss,
Brier score, one-vs-rest and one-vs-one AUC of an (n, 10) probability matrix)
10^6 rows. The full :func:`fastcal.calibration_report` on 10^8 rows runs in a
subprocess of its own (fresh memory, peak RSS measured).
"""

from __future__ import annotations

import sys

import numpy as np

from ._harness import Row, best_of, big_run, miscalibrated_scores

SUBJECT = "diagnostics"


def _numpy_ece(y, p, n_bins=15):
    """The usual NumPy ECE: searchsorted on linspace edges, three bincounts."""
    ids = np.searchsorted(np.linspace(0, 1, n_bins + 1)[1:-1], p)
    count = np.bincount(ids, minlength=n_bins)
    pos = np.bincount(ids, weights=y, minlength=n_bins)
    conf = np.bincount(ids, weights=p, minlength=n_bins)
    nz = count > 0
    return np.sum(np.abs(pos[nz] - conf[nz])) / len(p)


def _sklearn_report(y, p):
    """What scikit-learn gives for the same report (no slope/intercept, no decomposition)."""
    from sklearn import metrics
    from sklearn.calibration import calibration_curve

    calibration_curve(y, p, n_bins=10)
    metrics.brier_score_loss(y, p)
    metrics.log_loss(y, p)
    metrics.roc_auc_score(y, p)


def rows(quick=False):
    import fastcal
    from sklearn import metrics
    from sklearn.calibration import calibration_curve

    n = 10**4 if quick else 10**7
    repeat = 1 if quick else 5
    peer_repeat = 1 if quick else 3
    for dtype in ("float64", "float32"):
        p, y = miscalibrated_scores(n, dtype, seed=1)
        warm = slice(0, min(n, 1 << 18))
        for strategy in ("uniform", "quantile"):
            fastcal.calibration_curve(y[warm], p[warm], n_bins=10, strategy=strategy)
            ours = best_of(lambda: fastcal.calibration_curve(y, p, n_bins=10, strategy=strategy), repeat)
            theirs = best_of(lambda: calibration_curve(y, p, n_bins=10, strategy=strategy), peer_repeat)
            yield Row(SUBJECT, f'`calibration_curve`, 10 "{strategy}" bins, {dtype}', n, ours,
                      {"scikit-learn": theirs})
        for name, task in (
            ("brier_score_loss", "`brier_score_loss`"),
            ("log_loss", "`log_loss`"),
            ("roc_auc_score", "`roc_auc_score` (ties counted half)"),
        ):
            ours_f, theirs_f = getattr(fastcal, name), getattr(metrics, name)
            ours_f(y[warm], p[warm])
            ours = best_of(lambda: ours_f(y, p), repeat)
            theirs = best_of(lambda: theirs_f(y, p), peer_repeat)
            yield Row(SUBJECT, f"{task}, {dtype}", n, ours, {"scikit-learn": theirs})

    p, y = miscalibrated_scores(n, "float64", seed=2)
    warm = slice(0, min(n, 1 << 18))
    fastcal.roc_auc_score(y[warm], p[warm], max_fpr=0.1)
    ours = best_of(lambda: fastcal.roc_auc_score(y, p, max_fpr=0.1), repeat)
    theirs = best_of(lambda: metrics.roc_auc_score(y, p, max_fpr=0.1), peer_repeat)
    yield Row(SUBJECT, "`roc_auc_score`, `max_fpr=0.1` (McClish partial AUC), float64", n, ours,
              {"scikit-learn": theirs})
    w = np.random.default_rng(3).uniform(0.5, 2.0, n)
    fastcal.roc_auc_score(y[warm], p[warm], sample_weight=w[warm])
    unweighted = best_of(lambda: fastcal.roc_auc_score(y, p), repeat)
    ours = best_of(lambda: fastcal.roc_auc_score(y, p, sample_weight=w), repeat)
    theirs = best_of(lambda: metrics.roc_auc_score(y, p, sample_weight=w), peer_repeat)
    yield Row(SUBJECT, "`roc_auc_score`, with sample weights (radix sort), float64", n, ours,
              {"scikit-learn": theirs, "fastcal without weights (exact counts)": unweighted})
    two = np.stack([1 - p, p], axis=1)
    fastcal.log_loss(y[warm], two[warm])
    ours = best_of(lambda: fastcal.log_loss(y, two), repeat)
    theirs = best_of(lambda: metrics.log_loss(y, two), peer_repeat)
    yield Row(SUBJECT, "`log_loss`, (n, 2) probabilities, float64", n, ours, {"scikit-learn": theirs})

    yield from _multiclass_rows(metrics, 10**4 if quick else 10**6, repeat, peer_repeat)

    fastcal.expected_calibration_error(y[warm], p[warm])
    ours = best_of(lambda: fastcal.expected_calibration_error(y, p), repeat)
    theirs = best_of(lambda: _numpy_ece(y, p), peer_repeat)
    yield Row(SUBJECT, "`expected_calibration_error`, 15 bins", n, ours, {"NumPy (searchsorted + bincount)": theirs})

    fastcal.calibration_report(y[warm], p[warm])
    ours = best_of(lambda: fastcal.calibration_report(y, p), 1 if quick else 3)
    theirs = best_of(lambda: _sklearn_report(y, p), 1 if quick else 2)
    yield Row(SUBJECT, "`calibration_report` (everything, incl. slope/intercept fit)", n, ours,
              {"scikit-learn curve + Brier + log loss + AUC": theirs})

    if not quick:
        yield _big_report_row()


def class_probabilities(n, k, seed=0):
    """An over-confident model's (n, k) probabilities (float64 softmax of Gaussian logits) and labels drawn from
    the calibrated ones (the softmax of half the logits), as int64 in 0 .. k - 1."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.0, (n, k))

    def softmax(z):
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    cum = np.cumsum(softmax(logits / 2), axis=1)
    y = np.minimum((rng.random((n, 1)) > cum).sum(axis=1), k - 1)
    return softmax(logits), y


def _multiclass_rows(metrics, n, repeat, peer_repeat, k=10):
    import fastcal

    P, y = class_probabilities(n, k, seed=3)
    w = np.random.default_rng(4).uniform(0.5, 2.0, n)
    warm = slice(0, min(n, 1 << 16))
    for name, task, kwargs in (
        ("log_loss", "`log_loss`", {}),
        ("brier_score_loss", "`brier_score_loss`", {}),
        ("roc_auc_score", '`roc_auc_score`, `multi_class="ovr"` (macro)', dict(multi_class="ovr")),
        ("roc_auc_score", '`roc_auc_score`, `multi_class="ovo"` (macro)', dict(multi_class="ovo")),
        ("roc_auc_score", '`roc_auc_score`, `multi_class="ovr"`, `average="micro"`',
         dict(multi_class="ovr", average="micro")),
        ("roc_auc_score", '`roc_auc_score`, `multi_class="ovr"`, `average="weighted"`, sample weights',
         dict(multi_class="ovr", average="weighted", sample_weight=w)),
    ):
        ours_f, theirs_f = getattr(fastcal, name), getattr(metrics, name)
        warm_kwargs = {key: (v[warm] if key == "sample_weight" else v) for key, v in kwargs.items()}
        ours_f(y[warm], P[warm], **warm_kwargs)
        ours = best_of(lambda: ours_f(y, P, **kwargs), repeat)
        theirs = best_of(lambda: theirs_f(y, P, **kwargs), peer_repeat)
        yield Row(SUBJECT, f"{task}, (n, {k}) probabilities, float64", n, ours, {"scikit-learn": theirs})


def _big_report_row(n=10**8, dtype="float64"):
    r = big_run("fastcal.calibration_report(y, p)", n, dtype, seed=7)
    note = (f"{dtype}; peak memory beyond the inputs {r['extra'] / 2**30:.2f} GiB "
            f"({r['extra'] / r['inputs']:.2f}x the {r['inputs'] / 2**30:.2f} GiB of scores and uint8 labels); "
            "scikit-learn not run at this size")
    return Row(SUBJECT, "`calibration_report` (everything)", n, r["seconds"], {}, note)


def main():
    from .compare import render

    print(render(list(rows(quick="--quick" in sys.argv))))


if __name__ == "__main__":
    main()
