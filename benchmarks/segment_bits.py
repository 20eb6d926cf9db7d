"""The segment metrics' bits at several thread counts.

``python -m benchmarks.segment_bits [--n N] [--threads 1,2,3,8,16] [--zeros]``

Runs itself once per thread count, each in a new process with ``NUMBA_NUM_THREADS`` set (so the pool, the
tasks and the serial-twin paths are those of that count), on ``N`` rows (default 4*10^5) of scores rounded to
2 decimals (tie groups of thousands of rows) and, with ``--zeros``, 70% of the scores at 0 (one group of more
than ``Sizes.TIE_ROWS`` rows at the default size: ordered in chunks), float64 and float32, weighted (weights
over five orders of magnitude, in the scores' dtype) and not. Each process prints one SHA-256 per result:
``ecce`` (all four fields), ``multicalibration_error`` (two categorical features and one numerical; every
field and the per-segment table) and ``segment_report`` (20 groups, every column). Exits 1 if a result's
digest differs between thread counts. ``--print`` prints this process's digests only (to compare two
checkouts).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys

import numpy as np

_REPORT = ("n", "weight_sum", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce", "ecce_sigma",
           "pvalue", "brier", "log_loss", "auc")
_MCE = ("mce", "mce_sigma", "mce_pvalue", "mce_relative", "mde", "mde_relative", "global_ecce", "global_ecce_sigma",
        "global_ecce_pvalue")


def digests(n, zeros=False):
    """``{result name: SHA-256 hex digest}`` of the three metrics on the rows described in the module's docstring."""
    import fastcal

    rng = np.random.default_rng(7)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.uint8)
    p = np.round(1.0 / (1.0 + np.exp(-s)), 2)
    if zeros:
        p[rng.random(n) < 0.7] = 0.0
    w = rng.uniform(0.2, 3.0, n) * 10.0 ** rng.integers(-2, 3, n)
    segments = {"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y", "z", "w"], n),
                "x": np.round(rng.normal(size=n), 1)}
    groups = rng.integers(0, 20, n)
    out = {}
    for dtype in (np.float64, np.float32):
        for weights in (None, w.astype(dtype)):
            pp = p.astype(dtype)
            tag = f"{np.dtype(dtype).name}, {'weighted' if weights is not None else 'unweighted'}"
            e = fastcal.ecce(y, pp, sample_weight=weights)
            out[f"ecce, {tag}"] = _sha([e.ecce, e.std, e.ecce_sigma, e.pvalue])
            r = fastcal.multicalibration_error(y, pp, segments, sample_weight=weights, numerical=["x"])
            out[f"multicalibration_error, {tag}"] = _sha(
                [getattr(r, f) for f in _MCE], r.segment_n, r.segment_ecce, r.segment_ecce_sigma, r.segment_pvalue,
                repr(r.segment_values).encode())
            g = fastcal.segment_report(y, pp, groups, sample_weight=weights)
            out[f"segment_report, {tag}"] = _sha(*[getattr(g, c) for c in _REPORT])
    return out


def _sha(*parts):
    h = hashlib.sha256()
    for part in parts:
        h.update(part if isinstance(part, bytes) else np.asarray(part).tobytes())
    return h.hexdigest()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=400_000)
    parser.add_argument("--threads", default="1,2,3,8,16")
    parser.add_argument("--zeros", action="store_true", help="70%% of the scores at 0")
    parser.add_argument("--print", action="store_true", help="print this process's digests and exit")
    args = parser.parse_args(argv)
    if args.print:
        for name, digest in digests(args.n, args.zeros).items():
            print(f"{digest}  {name}")
        return 0
    runs = {}
    for t in args.threads.split(","):
        cmd = [sys.executable, "-m", "benchmarks.segment_bits", "--print", "--n", str(args.n)]
        env = dict(os.environ, NUMBA_NUM_THREADS=t)
        text = subprocess.run(cmd + (["--zeros"] if args.zeros else []), env=env, check=True, capture_output=True,
                              text=True).stdout
        runs[t] = dict(line.split("  ", 1)[::-1] for line in text.splitlines())
        print(f"NUMBA_NUM_THREADS={t}: {len(runs[t])} results", file=sys.stderr)
    first = next(iter(runs.values()))
    bad = [(name, t) for t, run in runs.items() for name in first if run[name] != first[name]]
    for name, digest in first.items():
        same = all(run[name] == digest for run in runs.values())
        print(f"{digest[:16]}  {'same' if same else 'DIFFERS'}  {name}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
