"""fastcal's ECCE and multicalibration error against MCGrad's (``mcgrad`` 0.1.5), on the same arrays, in one process.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table: ``ecce`` at 10^6 rows, and the multicalibration error at 10^6
rows with 3 categorical features (5, 4 and 10 values; MCGrad's defaults: 3
values kept per feature, depth 3, 64 segments). MCGrad's
``MulticalibrationError`` is timed from its DataFrame to ``mce_sigma`` at its
default ``precision_dtype="float32"`` (its usual use) and at "float64" (the
precision fastcal always uses).

``python -m benchmarks.compare_multicalibration [repeats] [case]`` times the two
side by side instead, interleaved (fastcal, MCGrad, fastcal, MCGrad, ...),
on four cases of 10^6 rows: the 3 categorical features with MCGrad at its
defaults (``precision_dtype="float32"``: the issue's goal), the same with
MCGrad at float64, with weights, and with a numerical feature too (MCGrad at
float64) (``case``: only those whose name contains it, e.g. ``defaults``); it
prints the median of each, their ratio, each round's ratio and the load
average. On a shared machine absolute times are noise: the
interleaved runs see the same load, and the ratio is the result.
"""

from __future__ import annotations

import sys
import time
import warnings

import numpy as np

from ._harness import Row, best_of, miscalibrated_scores

SUBJECT = "diagnostics"


def rows(quick=False):
    import pandas as pd
    from mcgrad import metrics as mcgrad

    import fastcal

    n = 10**4 if quick else 10**6
    repeat = 1 if quick else 5
    peer_repeat = 1 if quick else 2
    p, y = miscalibrated_scores(n, "float64", seed=21)
    fastcal.ecce(y[:1000], p[:1000])
    ours = best_of(lambda: fastcal.ecce(y, p), repeat)
    theirs = best_of(lambda: (mcgrad.ecce(y, p), mcgrad.ecce_pvalue(y, p)), peer_repeat)
    yield Row(SUBJECT, "`ecce` with sigma and p-value, float64", n, ours, {"MCGrad `ecce` + `ecce_pvalue`": theirs})

    rng = np.random.default_rng(22)
    segments = {"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y", "z", "w"], n), "c": rng.integers(0, 10, n)}
    small = {k: v[:1000] for k, v in segments.items()}
    fastcal.multicalibration_error(y[:1000], p[:1000], small)
    ours = best_of(lambda: fastcal.multicalibration_error(y, p, segments), repeat)
    df = pd.DataFrame({"y": y, "p": p, **segments})
    peers = {}
    for precision in ("float32", "float64"):
        def peer(precision=precision):
            with warnings.catch_warnings():  # its pandas calls' deprecation warnings
                warnings.simplefilter("ignore")
                return mcgrad.MulticalibrationError(df, "y", "p", None, list(segments), None,
                                                    precision_dtype=precision).mce_sigma

        peers[f"MCGrad `MulticalibrationError` ({precision})"] = best_of(peer, peer_repeat)
    yield Row(SUBJECT, "`multicalibration_error`, 3 categorical features, 64 segments", n, ours, peers)


def side_by_side(repeat=3, n=10**6, only=""):
    """``{case: (fastcal's median seconds, MCGrad's median seconds, each round's ratio)}``, the calls interleaved,
    same arrays; ``only``: the cases whose name contains it."""
    import pandas as pd
    from mcgrad import metrics as mcgrad

    import fastcal

    p, y = miscalibrated_scores(n, "float64", seed=21)
    rng = np.random.default_rng(22)
    categorical = {"a": rng.integers(0, 5, n), "b": rng.choice(["x", "y", "z", "w"], n), "c": rng.integers(0, 10, n)}
    w = rng.uniform(0.2, 3.0, n)
    cases = {
        "3 categorical, MCGrad defaults (float32)": (categorical, None, [], "float32"),
        "3 categorical": (categorical, None, [], "float64"),
        "3 categorical, weights": (categorical, w, [], "float64"),
        "3 categorical + 1 numerical": ({**categorical, "x": rng.normal(size=n)}, None, ["x"], "float64"),
    }
    out = {}
    for name, (segments, weights, numerical, precision) in cases.items():
        if only not in name:
            continue
        small = {k: v[:1000] for k, v in segments.items()}
        fastcal.multicalibration_error(y[:1000], p[:1000], small, numerical=numerical,
                                       sample_weight=None if weights is None else weights[:1000])
        df = pd.DataFrame({"y": y, "p": p, **segments, **({} if weights is None else {"w": weights})})
        names = [k for k in segments if k not in numerical]
        ours, theirs = [], []
        for _ in range(repeat):
            t0 = time.perf_counter()
            fastcal.multicalibration_error(y, p, segments, sample_weight=weights, numerical=numerical)
            ours.append(time.perf_counter() - t0)
            with warnings.catch_warnings():  # its pandas calls' deprecation warnings
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                mcgrad.MulticalibrationError(df, "y", "p", None if weights is None else "w", names,
                                             numerical or None, precision_dtype=precision).mce_sigma
                theirs.append(time.perf_counter() - t0)
        out[name] = (float(np.median(ours)), float(np.median(theirs)), [b / a for a, b in zip(ours, theirs)])
    return out


if __name__ == "__main__":
    import os

    print(f"load average before: {os.getloadavg()[0]:.2f}")
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    for case, (ours, theirs, rounds) in side_by_side(repeat, only=sys.argv[2] if len(sys.argv) > 2 else "").items():
        print(f"{case}: fastcal {ours * 1e3:.1f} ms, MCGrad {theirs:.2f} s, ratio {theirs / ours:.0f}x "
              f"(rounds: {', '.join(f'{r:.0f}' for r in rounds)}; load {os.getloadavg()[0]:.2f})")
