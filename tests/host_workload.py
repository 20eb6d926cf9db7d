"""One call of every public computation of fastcal, for the host-process tests.

Importable by child processes (``python -m tests.host_workload`` or
``from tests import host_workload``). :func:`run` returns every result as a
flat dict of float64 arrays; :func:`digest` hashes them, so two processes can
compare results bit for bit by exchanging one string.
"""

from __future__ import annotations

import hashlib
import json
import sys

import numpy as np

import fastcal

#: Above fastcal's parallel threshold (``fastcal._core.parallel.PARALLEL_MIN_SIZE``), so every
#: parallel kernel is cut into ranges when more than one thread is allowed.
N = 1 << 19


def data(n=N, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    p = 1.0 / (1.0 + np.exp(-s))
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-0.6 * s))).astype(np.int64)
    w = rng.uniform(0.0, 2.0, n)
    logits = rng.normal(0.0, 2.0, (n // 4, 4))
    labels = rng.integers(0, 4, n // 4)
    proba = rng.dirichlet(np.ones(3), n // 3)
    return s, p, y, w, logits, labels, proba


def run(n=N, seed=0, *, extras=False):
    """Every public computation on one data set; ``extras`` adds the scikit-learn meta-estimator, model files and plots."""
    s, p, y, w, logits, labels, proba = data(n, seed)
    out = {}
    iso = fastcal.IsotonicRegression(out_of_bounds="clip").fit(p, y)
    out["iso"] = iso.predict(p)
    out["iso_w"] = fastcal.IsotonicRegression().fit(p, y, sample_weight=w).predict(p)
    out["isotonic_regression"] = fastcal.isotonic_regression(p[:5000] + 0.1 * y[:5000]).x
    r = fastcal.platt_scaling(s, y, sample_weight=w)
    out["platt"] = np.array([r.a, r.b])
    platt = fastcal.PlattScaling().fit(s, y)
    out["platt_predict"] = platt.predict(s)
    r = fastcal.calibration_slope_intercept(y, p)
    out["slope"] = np.array([r.slope, r.intercept, r.slope_se, r.intercept_se])
    temp = fastcal.TemperatureScaling().fit(logits, labels)
    out["temperature"] = np.array([temp.temperature_])
    out["temperature_proba"] = temp.predict_proba(logits)
    out["negative_sampling"] = fastcal.correct_negative_sampling(p, 0.1)
    out["offset"] = np.array([fastcal.negative_sampling_logit_offset(0.1)])
    out["adjust_binary"] = fastcal.adjust_priors(p, 0.3, 0.1)
    out["adjust_multi"] = fastcal.adjust_priors(proba, [0.2, 0.3, 0.5], [0.4, 0.4, 0.2])
    em = fastcal.estimate_priors_em(proba, [1 / 3, 1 / 3, 1 / 3])
    out["em_priors"], out["em_proba"] = em.priors, em.proba
    em2 = fastcal.estimate_priors_em(p, 0.4)
    out["em2_priors"], out["em2_proba"] = em2.priors, em2.proba
    report = fastcal.calibration_report(y, p, sample_weight=w)
    out["report"] = np.array([v for v in report.to_dict().values() if isinstance(v, float)])
    out["auc"] = np.array([fastcal.roc_auc_score(y, p), fastcal.roc_auc_score(y, p, sample_weight=w)])
    out["ece"] = np.array([fastcal.expected_calibration_error(y, p, strategy=st) for st in ("uniform", "quantile")])
    out["curve"] = np.concatenate(fastcal.calibration_curve(y, p, n_bins=10, strategy="quantile"))
    out["brier_decomposition"] = np.array(list(fastcal.brier_decomposition(y, p, sample_weight=w).to_dict().values()))
    out["losses"] = np.array([fastcal.brier_score_loss(y, p), fastcal.log_loss(y, p, sample_weight=w)])
    out["score_decomposition"] = np.array([list(fastcal.score_decomposition(y, p, **kw).to_dict().values())[:4]
                                           for kw in ({}, {"scoring": "log_loss", "sample_weight": w})])
    out["top_label_decomposition"] = np.array(list(fastcal.score_decomposition(np.arange(proba.shape[0]) * 7 % 3, proba)
                                                   .to_dict().values())[:4])
    for band in ("consistency", "confidence"):
        c = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=3, band=band, random_state=0)
        out[f"corp_{band}"] = np.concatenate([c.x, c.y, c.lower, c.upper])
    sm = fastcal.smooth_ece(y, p, sample_weight=w)
    out["smooth"] = np.concatenate([[sm.ece, sm.bandwidth], sm.y[np.isfinite(sm.y)], sm.density])
    out["smooth_fixed"] = np.array([fastcal.smooth_ece(y, p, bandwidth=0.05).ece])
    out["ece_classwise"] = fastcal.expected_calibration_error(np.arange(proba.shape[0]) * 7 % 3, proba,
                                                              multiclass="classwise")
    if extras:
        import io
        import os
        import tempfile

        import matplotlib

        matplotlib.use("Agg")
        from fastcal import plot

        rng = np.random.default_rng(seed)
        X = rng.normal(size=(600, 3))
        yy = (X[:, 0] + rng.normal(size=600) > 0).astype(int)
        from sklearn.linear_model import LogisticRegression

        for method in ("isotonic", "sigmoid"):
            cv = fastcal.CalibratedClassifierCV(LogisticRegression(), method=method, cv=3).fit(X, yy)
            out[f"cv_{method}"] = cv.predict_proba(X)[:, 1]
        out["cv_report"] = np.array([
            fastcal.cross_val_calibration_report(LogisticRegression(), X, yy, cv=3, inner_cv=2).after.to_dict()["ece"]
        ])
        with tempfile.TemporaryDirectory() as tmp:
            for name, model in (("iso", iso), ("platt", platt), ("temp", temp)):
                path = os.path.join(tmp, f"{name}.json")
                model.save(path)
                loaded = fastcal.load(path)
                x = logits if name == "temp" else (p if name == "iso" else s)
                got = loaded.predict_proba(x) if name == "temp" else loaded.predict(x)
                out[f"load_{name}"] = got
        fig, _ = plot.reliability_diagram(y, p, n_bins=10)
        plot.reliability_diagram(y, p, method="corp", n_resamples=3)
        plot.reliability_diagram(y, p, method="smooth")
        plot.probability_histogram(p)
        fig.savefig(io.BytesIO(), format="png")
    return {k: np.asarray(v, dtype=np.float64) for k, v in out.items()}


def digest(results):
    """SHA-256 of every result's name, shape and bytes: equal digests mean bit-identical results."""
    h = hashlib.sha256()
    for name in sorted(results):
        a = np.ascontiguousarray(results[name])
        h.update(f"{name}{a.shape}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def task(seed):
    """The digest of :func:`run` for ``seed`` (what worker processes and threads compute)."""
    return digest(run(seed=seed))


if __name__ == "__main__":
    # python -m tests.host_workload [seed ...]: print the digests as JSON.
    seeds = [int(a) for a in sys.argv[1:]] or [0]
    print(json.dumps({seed: task(seed) for seed in seeds}))
