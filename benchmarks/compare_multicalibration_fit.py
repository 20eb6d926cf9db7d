"""MulticalibrationCalibrator against MCGrad (``mcgrad`` 0.1.5, LightGBM) on the same training and held-out rows.

Three cases, each with training rows and twice as many held-out rows drawn from the same law:

- ``issue``: issue 40's case. Three categorical features (4, 3 and 3 values) and one numerical feature; the truth
  adds to the scores' logit +0.6 on ``b == 2``, -0.5 on ``c == "z"`` and +0.8 on ``(num > 1) & (a == 1)``.
- ``interaction``: a two-feature interaction only (+0.7 on ``country == "fr" & device == "ios"``), five
  categorical features of 2 to 6 values, none of the others matters.
- ``threshold``: a numerical threshold within one platform (-0.6 on ``platform == "web" & age > 0.7``, ``age``
  uniform) and an over-confident model (the scores' logit 1.3 times the truth's), with sample weights.

For each, on the held-out rows (the true probabilities' figures too, the floor that noise sets): ``mce_sigma`` of
:func:`fastcal.multicalibration_error` (its defaults: what the
issue's goals are stated in), the log loss, the ECE (15 bins) and, for reference, the ECE of a global isotonic fit;
and the seconds of each fit and predict (fastcal's the best of 3, MCGrad's one run: it takes seconds).
``rows(quick)`` gives the timing rows of ``benchmarks.compare`` (MCGrad left out with ``quick``: its fit takes
seconds).

``python -m benchmarks.compare_multicalibration_fit [--cases issue,interaction,threshold] [--json PATH
[--write-guide]]`` prints the table (and writes the numbers as JSON: ``benchmarks/recorded/multicalibration_fit.json``
is the run that docs/user_guide/repairing.md quotes, which ``--write-guide`` fills and ``tests/test_docs.py``
checks).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import warnings

import numpy as np

from ._harness import Row

SUBJECT = "multicalibration"
N_TRAIN = 100_000
#: MCGrad's parameters are its defaults; fastcal's likewise.
CASES = ("issue", "interaction", "threshold")


def case(name, n, seed):
    """``(scores, labels, segments, numerical, weights or None, true probabilities)`` of a case (see the module's
    docstring)."""
    rng = np.random.default_rng(seed)
    if name == "issue":
        a = rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])
        b = rng.choice(3, n, p=[0.5, 0.3, 0.2])
        c = rng.choice(np.array(["x", "y", "z"]), n, p=[0.5, 0.3, 0.2])
        num = rng.normal(size=n)
        t = rng.normal(-0.4, 1.3, n) + 0.3 * num
        truth = t + 0.6 * (b == 2) - 0.5 * (c == "z") + 0.8 * ((num > 1) & (a == 1))
        segments, numerical, w = {"a": a, "b": b, "c": c, "num": num}, ["num"], None
    elif name == "interaction":
        country = rng.choice(np.array(["fr", "de", "us", "it", "es", "uk"]), n)
        device = rng.choice(np.array(["ios", "android", "web"]), n, p=[0.3, 0.5, 0.2])
        others = {f"f{j}": rng.integers(0, k, n) for j, k in enumerate((2, 4, 5))}
        t = rng.normal(-1.0, 1.2, n)
        truth = t + 0.7 * ((country == "fr") & (device == "ios"))
        segments, numerical, w = {"country": country, "device": device, **others}, [], None
    elif name == "threshold":
        platform_ = rng.choice(np.array(["web", "app"]), n, p=[0.4, 0.6])
        age = rng.uniform(size=n)
        region = rng.integers(0, 3, n)
        truth_model = rng.normal(-0.5, 1.0, n)
        truth = truth_model - 0.6 * ((platform_ == "web") & (age > 0.7))
        t = 1.3 * truth_model
        segments, numerical = {"platform": platform_, "region": region, "age": age}, ["age"]
        w = rng.uniform(0.5, 2.0, n)
    else:
        raise ValueError(f"no case {name!r}; the cases are {CASES}")
    q = 1 / (1 + np.exp(-truth))
    y = (rng.uniform(size=n) < q).astype(np.int64)
    return 1 / (1 + np.exp(-t)), y, segments, numerical, w, q


def _fastcal(p, y, segments, numerical, w, pt, segt, repeat=3):
    """fastcal's predictions and its best fit and predict times of ``repeat`` (a fit takes a fraction of a second:
    the best of a few leaves out a moment of load; MCGrad's take seconds, and run once)."""
    from fastcal import MulticalibrationCalibrator

    fits, predicts = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        cal = MulticalibrationCalibrator().fit(p, y, segments, numerical=numerical, sample_weight=w)
        t1 = time.perf_counter()
        q = cal.predict(pt, segt)
        fits.append(t1 - t0)
        predicts.append(time.perf_counter() - t1)
    return q, min(fits), min(predicts)


def _mcgrad(p, y, segments, numerical, w, pt, segt):
    import pandas as pd
    from mcgrad.methods import MCGrad

    categorical = [k for k in segments if k not in numerical]

    def frame(scores, columns, extra):
        df = pd.DataFrame({"p": scores, **{k: (v if k in numerical else np.asarray(v).astype(str))
                                           for k, v in columns.items()}, **extra})
        return df

    train = frame(p, segments, {"y": y, **({"w": w} if w is not None else {})})
    test = frame(pt, segt, {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        model = MCGrad().fit(train, "p", "y", weight_column_name=None if w is None else "w",
                             categorical_feature_column_names=categorical, numerical_feature_column_names=numerical)
        t1 = time.perf_counter()
        q = model.predict(test, "p", categorical_feature_column_names=categorical,
                          numerical_feature_column_names=numerical)
    return np.asarray(q, dtype=np.float64), t1 - t0, time.perf_counter() - t1


def measure(name, n=N_TRAIN, seed=0, peers=True):
    """The held-out figures of the raw scores, a global isotonic fit, fastcal and (with ``peers``) MCGrad."""
    from fastcal import IsotonicRegression, multicalibration_error
    from fastcal.metrics import expected_calibration_error, log_loss

    p, y, segments, numerical, w, _ = case(name, n, seed)
    pt, yt, segt, _, wt, truth = case(name, 2 * n, seed + 1)

    def figures(q):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the worst segment may pool folded values: not the point here
            mce = multicalibration_error(yt, q, segt, numerical=numerical, sample_weight=wt)
        return {"mce_sigma": float(mce.mce_sigma), "log_loss": float(log_loss(yt, q, sample_weight=wt)),
                "ece": float(expected_calibration_error(yt, q, n_bins=15, sample_weight=wt))}

    iso = IsotonicRegression(out_of_bounds="clip").fit(p, y, sample_weight=w).predict(pt)
    out = {"case": name, "n_train": n, "n_heldout": 2 * n, "raw": figures(pt), "truth": figures(truth),
           "isotonic_ece": figures(iso)["ece"]}
    runners = {"fastcal": _fastcal, **({"MCGrad": _mcgrad} if peers else {})}
    for label, run in runners.items():
        q, fit_s, predict_s = run(p, y, segments, numerical, w, pt, segt)
        out[label] = {**figures(q), "fit_seconds": fit_s, "predict_seconds": predict_s}
    return out


def rows(quick=False):
    n = 20_000 if quick else N_TRAIN
    r = measure("issue", n=n, peers=not quick)
    peers = {} if quick else {"MCGrad `MCGrad().fit`": r["MCGrad"]["fit_seconds"]}
    yield Row(SUBJECT, "`MulticalibrationCalibrator.fit`, issue 40's case (4 features, 5-fold cross-fitting)", n,
              r["fastcal"]["fit_seconds"], peers)


def table(results):
    """The Markdown table of :func:`measure`'s results."""
    lines = ["| case | method | held-out `mce_sigma` | log loss | ECE | fit (s) | predict (s) |",
             "|---|---|---|---|---|---|---|"]
    for r in results:
        for label, key in (("raw scores", "raw"), ("the true probabilities", "truth")):
            lines.append(f"| {r['case']} | {label} | {r[key]['mce_sigma']:.2f} | {r[key]['log_loss']:.5f} | "
                         f"{r[key]['ece']:.4f} | | |")
        for label in ("fastcal", "MCGrad"):
            if label in r:
                m = r[label]
                lines.append(f"| {r['case']} | {label} | {m['mce_sigma']:.2f} | {m['log_loss']:.5f} | "
                             f"{m['ece']:.4f} | {m['fit_seconds']:.2f} | {m['predict_seconds']:.2f} |")
        lines.append(f"| {r['case']} | global isotonic (ECE only) | | | {r['isotonic_ece']:.4f} | | |")
    return "\n".join(lines)


#: The markers of the table in the user guide that :func:`write_guide` fills from a recorded run.
GUIDE = "docs/user_guide/repairing.md"
START, END = "<!-- multicalibration-fit-table -->", "<!-- /multicalibration-fit-table -->"


def guide_table(record):
    """The guide's table of a recorded run (``--json``): :func:`table` and the machine it ran on."""
    return f"{table(record['results'])}\n\nMeasured on {record['machine']}."


def readme_claim(record):
    """The README's sentence on a recorded run: what it shows against MCGrad on every case (AssertionError if the
    run does not show it: a lower held-out ``mce_sigma``, a log loss within 0.0005), and the range of the fits'
    speed ratios."""
    results = record["results"]
    assert all(r["fastcal"]["mce_sigma"] < r["MCGrad"]["mce_sigma"] for r in results), "mce_sigma"
    assert all(abs(r["fastcal"]["log_loss"] - r["MCGrad"]["log_loss"]) <= 5e-4 for r in results), "log loss"
    ratios = [r["MCGrad"]["fit_seconds"] / r["fastcal"]["fit_seconds"] for r in results]
    return (f"against MCGrad on the same rows, a lower held-out multicalibration error, the same log loss, at "
            f"{int(min(ratios))}-{int(max(ratios))}x its speed")


def write_guide(record, root="."):
    import pathlib
    import re

    path = pathlib.Path(root) / GUIDE
    text = path.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    path.write_text(pattern.sub(lambda _: f"{START}\n{guide_table(record)}\n{END}", text))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    # --write-guide needs --json (the guide quotes a recorded run)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--n", type=int, default=N_TRAIN)
    parser.add_argument("--no-peer", action="store_true", help="fastcal only")
    parser.add_argument("--json", metavar="PATH")
    parser.add_argument("--write-guide", action="store_true", help=f"fill {GUIDE}'s table from this run")
    args = parser.parse_args(argv)
    results = []
    for name in args.cases.split(","):
        results.append(measure(name, n=args.n, peers=not args.no_peer))
        print(f"{name} done", file=sys.stderr, flush=True)
    print(table(results))
    if args.json:
        import os

        record = {"machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average "
                             f"{os.getloadavg()[0]:.1f}", "results": results}
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
        if args.write_guide:
            write_guide(record)


if __name__ == "__main__":
    main()
