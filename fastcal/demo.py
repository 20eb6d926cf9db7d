"""The fastcal demo: the main job, at real sizes, with real output.

``python -m fastcal.demo`` (or ``make demo``) generates 10^7 scores and labels
from an over-confident model, calibrates them with fastcal and with
scikit-learn on the same arrays, and prints the times, the speed-up and how
much calibration improved the predictions on 10^7 fresh rows. Needs
scikit-learn (the ``sklearn`` extra) for the side-by-side comparison.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def over_confident_model(n, seed):
    """Scores of an over-confident model and the true outcomes.

    The model claims P(y=1) = sigmoid(s) while the truth is sigmoid(s / 2),
    with s ~ N(0, 2^2): its predictions are too close to 0 and 1.
    """
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.uint8)
    return 1.0 / (1.0 + np.exp(-s)), y


def brier(y, p):
    return float(np.mean((p - y) ** 2))


def log_loss(y, p):
    p = np.clip(p, np.finfo(np.float64).eps, 1 - np.finfo(np.float64).eps)
    return float(-np.mean(np.where(y == 1, np.log(p), np.log1p(-p))))


def timed(func):
    t0 = time.perf_counter()
    result = func()
    return result, time.perf_counter() - t0


def section(title):
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)))


def isotonic_demo(n):
    from sklearn.isotonic import IsotonicRegression as SkIsotonicRegression

    import fastcal

    section(f"Isotonic calibration of {n:,} over-confident predictions")
    p_train, y_train = over_confident_model(n, seed=1)
    p_test, y_test = over_confident_model(n, seed=2)
    print("model: claims sigmoid(s), truth is sigmoid(s/2); fit on one sample, scored on a fresh one")

    fastcal.IsotonicRegression().fit(p_train[:1000], y_train[:1000])  # load the compiled kernels
    ours, t_fit = timed(lambda: fastcal.IsotonicRegression(out_of_bounds="clip").fit(p_train, y_train))
    theirs, t_sk_fit = timed(lambda: SkIsotonicRegression(out_of_bounds="clip").fit(p_train, y_train))
    pred, t_pred = timed(lambda: ours.predict(p_test))
    sk_pred, t_sk_pred = timed(lambda: theirs.predict(p_test))

    print(f"{'':28s}{'fastcal':>12s}{'scikit-learn':>15s}{'speed-up':>11s}")
    print(f"{'fit':28s}{t_fit:11.3f}s{t_sk_fit:14.3f}s{t_sk_fit / t_fit:10.1f}x")
    print(f"{'predict':28s}{t_pred:11.3f}s{t_sk_pred:14.3f}s{t_sk_pred / t_pred:10.1f}x")
    same = np.array_equal(ours.X_thresholds_, theirs.X_thresholds_)
    print(f"same {ours.X_thresholds_.shape[0]} knots as scikit-learn: {'yes' if same else 'NO'}; "
          f"largest prediction difference: {np.max(np.abs(pred - sk_pred)):.1e}")

    print(f"\n{'on 10^7 fresh rows':28s}{'Brier':>12s}{'log loss':>15s}")
    print(f"{'before calibration':28s}{brier(y_test, p_test):12.5f}{log_loss(y_test, p_test):15.5f}")
    print(f"{'after (fastcal isotonic)':28s}{brier(y_test, pred):12.5f}{log_loss(y_test, pred):15.5f}")
    return dict(fit=t_fit, sk_fit=t_sk_fit, predict=t_pred, sk_predict=t_sk_pred, same_knots=same)


def main(argv=None):
    parser = argparse.ArgumentParser(description="The fastcal demo.")
    parser.add_argument("--n", type=int, default=10**7, help="rows to calibrate (default 10^7)")
    args = parser.parse_args(argv)
    print(f"fastcal demo: {args.n:,} rows")
    isotonic_demo(args.n)


if __name__ == "__main__":
    main()
