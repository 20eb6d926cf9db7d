"""The first calls of every public subject, with every dtype a user passes, and the kernels each call compiled.

Run in a fresh interpreter after a ``fastcal precompile`` (tests/test_precompile.py): each call should load
its kernels from the cache and compile nothing. The calls are the public functions and estimators, at two
sizes: a small one, and one past every size threshold at which a wrapper switches kernels (the warm-start
subsample of the Newton fits, the threaded and radix sorts, the parallel chunks, the quantile selection);
then the command line's report, fit and apply on small CSV, Parquet and .npz files.

Prints one JSON object: ``{"calls": n, "compiled": {call: [kernel signatures compiled]}}`` (only calls that
compiled something are listed).

Usage: ``python tests/first_calls.py [--small | --large]`` (one of the sizes only).
"""

import json
import sys
import tempfile

import numpy as np

import fastcal
from fastcal import _precompile

#: Label dtypes users pass: NumPy's defaults (bool from comparisons, int64 from integers, float64 from
#: floats), the compact ones (int8, uint8) and the rest of the integer family.
USER_LABELS = (np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
               np.float32, np.float64)

#: The label dtypes of :data:`USER_LABELS` that the wrappers hand to the kernels as they are (bool as uint8).
KEPT_LABELS = (np.bool_, np.int8, np.int32, np.int64, np.uint8, np.float32, np.float64)

#: Weight dtypes users pass (integer counts are cast to float64 by the wrappers).
USER_WEIGHTS = (np.float32, np.float64, np.int64)

#: Rows of the large calls: past every size threshold of the wrappers.
LARGE = _precompile.LARGE + 3

SMALL = 1000


_found = (0, {})


def _counts():
    # The dispatchers are looked up again only when a module was imported (the walk costs 5 ms a call).
    global _found
    if len(sys.modules) != _found[0]:
        _found = (len(sys.modules), _precompile.dispatchers())
    return {name: dict(d.stats.cache_misses) for name, d in _found[1].items()}


def _binary_calls(s, p, y, w):
    """(name, thunk) of every public binary subject on scores ``s``, probabilities ``p``, labels ``y``, weights ``w``."""
    n = p.shape[0]
    groups = np.arange(n) % 3
    segments = {"a": np.arange(n) % 4}
    return [
        ("IsotonicRegression", lambda: fastcal.IsotonicRegression(out_of_bounds="clip").fit(s, y, w).predict(s)),
        ("IsotonicRegression(centered)",
         lambda: fastcal.IsotonicRegression(centered=True).fit(s, y, w).predict(s)),
        ("isotonic_regression", lambda: fastcal.isotonic_regression(y, weights=w)),
        ("platt_scaling", lambda: fastcal.platt_scaling(s, y, sample_weight=w)),
        ("PlattScaling", lambda: fastcal.PlattScaling().fit(s, y, w).predict(s)),
        ("calibration_slope_intercept", lambda: fastcal.calibration_slope_intercept(y, p, sample_weight=w)),
        ("BetaCalibration", lambda: fastcal.BetaCalibration().fit(p, y, w).predict(p)),
        ("HistogramBinning", lambda: fastcal.HistogramBinning().fit(p, y, w).predict(p)),
        ("HistogramBinning(quantile)",
         lambda: fastcal.HistogramBinning(strategy="quantile").fit(p, y, w).predict(p)),
        ("VennAbers", lambda: fastcal.VennAbers().fit(s, y, w).predict_proba(s)),
        ("calibration_curve", lambda: fastcal.calibration_curve(y, p, sample_weight=w)),
        ("calibration_curve(quantile)", lambda: fastcal.calibration_curve(y, p, strategy="quantile", sample_weight=w)),
        ("expected_calibration_error", lambda: fastcal.expected_calibration_error(y, p, sample_weight=w)),
        ("brier_score_loss", lambda: fastcal.brier_score_loss(y, p, sample_weight=w)),
        ("brier_decomposition", lambda: fastcal.brier_decomposition(y, p, sample_weight=w)),
        ("log_loss", lambda: fastcal.log_loss(y, p, sample_weight=w)),
        ("roc_auc_score", lambda: fastcal.roc_auc_score(y, s, sample_weight=w)),
        ("calibration_report", lambda: fastcal.calibration_report(y, p, sample_weight=w)),
        ("score_decomposition", lambda: fastcal.score_decomposition(y, p, sample_weight=w)),
        ("score_decomposition(log_loss)",
         lambda: fastcal.score_decomposition(y, p, scoring="log_loss", sample_weight=w)),
        ("corp_reliability", lambda: fastcal.corp_reliability(y, p, n_resamples=2, random_state=0, sample_weight=w)),
        ("corp_reliability(confidence)", lambda: fastcal.corp_reliability(y, p, n_resamples=2, band="confidence",
                                                                          random_state=0, sample_weight=w)),
        ("smooth_ece", lambda: fastcal.smooth_ece(y, p, sample_weight=w)),
        ("ecce", lambda: fastcal.ecce(y, p, sample_weight=w)),
        ("calibration_ratio", lambda: fastcal.calibration_ratio(y, p, sample_weight=w)),
        ("proportional_ece", lambda: fastcal.proportional_ece(y, p, sample_weight=w)),
        ("normalized_entropy", lambda: fastcal.normalized_entropy(y, p, sample_weight=w)),
        ("multicalibration_error",
         lambda: fastcal.multicalibration_error(y, p, segments, sample_weight=w, min_samples_per_segment=1)),
        ("segment_report", lambda: fastcal.segment_report(y, p, groups, sample_weight=w)),
        ("GroupedCalibrator(isotonic)", lambda: fastcal.GroupedCalibrator(
            fastcal.IsotonicRegression(), min_samples_per_group=2).fit(p, y, groups, w).predict(p, groups)),
        ("GroupedCalibrator(Platt)", lambda: fastcal.GroupedCalibrator(
            fastcal.PlattScaling(), min_samples_per_group=2).fit(p, y, groups, w).predict(p, groups)),
    ]


def _unweighted_calls(p):
    return [
        ("correct_negative_sampling", lambda: fastcal.correct_negative_sampling(p, 0.1)),
        ("adjust_priors", lambda: fastcal.adjust_priors(p, 0.5, 0.1)),
        ("estimate_priors_em", lambda: fastcal.estimate_priors_em(p, 0.5)),
    ]


def _multiclass_calls(P, k, w, calibrators=True):
    logits = np.log(P)
    return [
        *([] if not calibrators else [
            ("TemperatureScaling", lambda: fastcal.TemperatureScaling().fit(logits, k, w).predict_proba(logits)),
            ("VectorScaling", lambda: fastcal.VectorScaling().fit(logits, k, w).predict_proba(logits)),
            ("BiasCorrectedTemperatureScaling",
             lambda: fastcal.BiasCorrectedTemperatureScaling().fit(P, k, w).predict_proba(P)),
            ("MatrixScaling", lambda: fastcal.MatrixScaling().fit(logits, k, w).predict_proba(logits)),
            ("DirichletCalibration", lambda: fastcal.DirichletCalibration().fit(P, k, w).predict_proba(P)),
        ]),
        ("log_loss(multiclass)", lambda: fastcal.log_loss(k, P, sample_weight=w)),
        ("brier_score_loss(multiclass)", lambda: fastcal.brier_score_loss(k, P, sample_weight=w)),
        ("roc_auc_score(ovr)", lambda: fastcal.roc_auc_score(k, P, multi_class="ovr", sample_weight=w)),
        ("roc_auc_score(ovo)", lambda: fastcal.roc_auc_score(k, P, multi_class="ovo")),  # no weights (scikit-learn's)
        ("calibration_curve(top_label)", lambda: fastcal.calibration_curve(k, P, sample_weight=w)),
        ("expected_calibration_error(classwise)",
         lambda: fastcal.expected_calibration_error(k, P, multiclass="classwise", sample_weight=w)),
        ("smooth_ece(multiclass)", lambda: fastcal.smooth_ece(k, P, sample_weight=w)),
        ("score_decomposition(multiclass)", lambda: fastcal.score_decomposition(k, P, sample_weight=w)),
    ]


def variants(sizes):
    """(label, calls) of every variant: sizes, score dtypes, label dtypes, weights."""
    for n in sizes:
        for sdtype in (np.float32, np.float64):
            rng = np.random.default_rng(0)
            p = np.clip(rng.beta(2, 3, n), 1e-6, 1 - 1e-6).astype(sdtype)
            s = np.log(p) - np.log1p(-p)  # logits: scores on another scale
            y01 = (rng.random(n) < p).astype(np.int64)
            y01[:2] = (0, 1)
            # Large: the label dtypes the wrappers keep (the others are cast to int64, as int64 labels are).
            for ldtype in USER_LABELS if n == SMALL else KEPT_LABELS:
                for wname, w in (("no weights", None), ("float64 weights", rng.uniform(0.5, 2.0, n))):
                    tag = f"n={n}, {np.dtype(sdtype).name} scores, {np.dtype(ldtype).name} labels, {wname}"
                    yield tag, _binary_calls(s, p, y01.astype(ldtype), w)
            for wdtype in USER_WEIGHTS:
                w = rng.uniform(0.5, 2.0, n).astype(wdtype) if wdtype != np.int64 else rng.integers(1, 4, n)
                for ldtype in (np.int64, np.bool_):
                    tag = f"n={n}, {np.dtype(sdtype).name} scores, {np.dtype(ldtype).name} labels, " \
                          f"{np.dtype(wdtype).name} weights"
                    yield tag, _binary_calls(s, p, y01.astype(ldtype), w)
            yield f"n={n}, {np.dtype(sdtype).name}", _unweighted_calls(p)
            P = rng.dirichlet(np.ones(4), n).astype(sdtype)
            for kdtype in (np.int64, np.int32, np.int8, np.uint8):
                k = (np.arange(n) % 4).astype(kdtype)
                # The calibrators cast class indices to int64 before any kernel (fastcal.temperature.class_indices):
                # past the size thresholds, one class dtype reaches every path of theirs (their Newton fits at
                # this size were a third of this script's time).
                calibrators = n == SMALL or kdtype is np.int64
                for wname, w in (("no weights", None), ("float64 weights", rng.uniform(0.5, 2.0, n))):
                    yield f"n={n}, {np.dtype(sdtype).name} (n, 4), {np.dtype(kdtype).name} classes, {wname}", \
                        _multiclass_calls(P, k, w, calibrators)


def cli_calls(folder):
    """(name, thunk) of the command line's runs on small files in ``folder``: report, fit and apply."""
    import os

    from fastcal.cli import main as cli

    rng = np.random.default_rng(0)
    n = 2000
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.int64)
    w = rng.uniform(0.5, 2.0, n)
    g = np.arange(n) % 3
    csv = os.path.join(folder, "data.csv")
    with open(csv, "w") as f:
        f.write("p,y,w,g\n" + "".join(f"{a!r},{b},{c!r},{d}\n" for a, b, c, d in zip(*(x.tolist() for x in (p, y, w, g)))))
    files = [csv]
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        pass
    else:
        files.append(os.path.join(folder, "data.parquet"))
        pq.write_table(pa.table({"p": p, "y": y, "w": w, "g": g}), files[-1])
    files.append(os.path.join(folder, "data.npz"))
    np.savez(files[-1], p=p, y=y.astype(np.int8), w=w.astype(np.float32), g=g)
    calls = []
    for i, path in enumerate(files):
        cols = ["--score-col", "p", "--label-col", "y"]
        out = os.path.join(folder, f"out{i}")
        for kind in (".json", ".html", ".png"):
            calls.append((f"fastcal report -o {kind} {os.path.basename(path)}",
                          lambda path=path, kind=kind, out=out: cli(["report", path, *cols, "-q", "-o", out + kind])))
        calls.append((f"fastcal report --weight-col --segment-col {os.path.basename(path)}",
                      lambda path=path, out=out: cli(["report", path, *cols, "--weight-col", "w", "--segment-col", "g",
                                                      "-q", "-o", out + "w.json"])))
        for method in ("isotonic", "sigmoid", "beta", "histogram", "centered-isotonic", "venn-abers"):
            for weights in ([], ["--weight-col", "w"]):
                model = f"{out}-{method}{len(weights)}.json"
                calls.append((f"fastcal fit --method {method} {' '.join(weights)} {os.path.basename(path)}",
                              lambda path=path, method=method, weights=weights, model=model:
                              cli(["fit", path, "--method", method, *cols, *weights, "-q", "-o", model])))
                calls.append((f"fastcal apply ({method}) {os.path.basename(path)}",
                              lambda path=path, model=model, out=out:
                              cli(["apply", model, path, "--score-col", "p", "-q", "-o", out + os.path.splitext(path)[1]])))
        calls.append((f"fastcal apply --prior-rate {os.path.basename(path)}",
                      lambda path=path, out=out: cli(["apply", f"{out}-isotonic0.json", path, "--score-col", "p", "--prior-rate", "0.1",
                                                      "-q", "-o", out + "prior" + os.path.splitext(path)[1]])))
    return calls


def main(sizes):
    compiled = {}
    calls = 0
    before = _counts()

    def record(name):
        nonlocal before, calls
        calls += 1
        after = _counts()
        new = [f"{kernel}{sig}" for kernel, sigs in after.items() for sig, count in sigs.items()
               if count > before.get(kernel, {}).get(sig, 0)]
        if new:
            compiled[name] = new
            print(f"{name}: {', '.join(new)}", file=sys.stderr, flush=True)
        before = after

    for tag, thunks in variants(sizes):
        for name, thunk in thunks:
            thunk()
            record(f"{name}: {tag}")
    with tempfile.TemporaryDirectory() as folder:
        for name, thunk in cli_calls(folder):
            status = thunk()
            assert status in (0, None), (name, status)
            record(name)
    print(json.dumps(dict(calls=calls, compiled=compiled)))


if __name__ == "__main__":
    main({"--small": (SMALL,), "--large": (LARGE,)}.get(sys.argv[-1], (SMALL, LARGE)))
