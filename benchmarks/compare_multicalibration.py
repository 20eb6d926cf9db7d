"""fastcal's ECCE and multicalibration error against MCGrad's (``mcgrad`` 0.1.5), on the same arrays, in one process.

``rows(quick=False)`` yields :class:`benchmarks._harness.Row` objects for the
README table: ``ecce`` at 10^6 rows, and the multicalibration error at 10^6
rows with 3 categorical features (5, 4 and 10 values; MCGrad's defaults: 3
values kept per feature, depth 3, 64 segments). MCGrad's
``MulticalibrationError`` is timed from its DataFrame to ``mce_sigma`` at its
default ``precision_dtype="float32"`` (its usual use) and at "float64" (the
precision fastcal always uses).
"""

from __future__ import annotations

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
