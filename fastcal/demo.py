"""The fastcal demo: the main job, at real sizes, with real output.

``python -m fastcal.demo`` (or ``make demo``, or ``fastcal demo``):

1. generates 10^7 scores and labels from an over-confident model and 10^7
   fresh rows to score on;
2. calibrates them by isotonic regression, Platt scaling and beta
   calibration, with fastcal and with scikit-learn (betacal for beta) on the
   same arrays, printing times, speed-ups and agreement;
3. measures every calibration diagnostic before and after, on the fresh
   rows, against scikit-learn's metrics;
4. reproduces the undersampling study (a rare-event model trained on 10% of
   the negatives) and undoes the undersampling;
5. draws the reliability diagrams (binned, and CORP with consistency bands)
   and probability histograms that the README shows (``docs/images/``).

Needs scikit-learn and matplotlib (the ``sklearn`` and ``plot`` extras); compares with
betacal when it is installed (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

IMAGES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "images")


def over_confident_model(n, seed):
    """Scores of an over-confident model and the true outcomes.

    The model claims P(y=1) = sigmoid(s) while the truth is sigmoid(s / 2),
    with s ~ N(0, 2^2): its predictions are too close to 0 and 1.
    """
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.uint8)
    return 1.0 / (1.0 + np.exp(-s)), y


def timed(func):
    t0 = time.perf_counter()
    result = func()
    return result, time.perf_counter() - t0


def section(title):
    print(f"\n== {title} " + "=" * max(0, 74 - len(title)))


def speed_table(rows):
    print(f"{'':34s}{'fastcal':>10s}{'scikit-learn':>14s}{'speed-up':>10s}")
    for name, ours, theirs in rows:
        print(f"{name:34s}{ours:9.3f}s{theirs:13.3f}s{theirs / ours:9.1f}x")


def calibrate(n):
    """Sections 1-2: isotonic regression and Platt scaling, fastcal against scikit-learn."""
    from sklearn.calibration import _SigmoidCalibration
    from sklearn.isotonic import IsotonicRegression as SkIsotonicRegression

    import fastcal

    p_train, y_train = over_confident_model(n, seed=1)
    p_test, y_test = over_confident_model(n, seed=2)
    print(f"model: claims sigmoid(s), truth is sigmoid(s/2), s ~ N(0, 4); fitted on {n:,} rows, "
          f"scored on {n:,} fresh rows")
    fastcal.IsotonicRegression().fit(p_train[:1000], y_train[:1000])  # load the compiled kernels
    fastcal.platt_scaling(p_train[:1000], y_train[:1000])
    fastcal.BetaCalibration().fit(p_train[:1000], y_train[:1000])

    section(f"1. Isotonic calibration, {n:,} rows")
    iso, t_fit = timed(lambda: fastcal.IsotonicRegression(out_of_bounds="clip").fit(p_train, y_train))
    sk_iso, t_sk_fit = timed(lambda: SkIsotonicRegression(out_of_bounds="clip").fit(p_train, y_train))
    p_iso, t_pred = timed(lambda: iso.predict(p_test))
    sk_pred, t_sk_pred = timed(lambda: sk_iso.predict(p_test))
    speed_table([("IsotonicRegression.fit", t_fit, t_sk_fit), ("IsotonicRegression.predict", t_pred, t_sk_pred)])
    same = np.array_equal(iso.X_thresholds_, sk_iso.X_thresholds_)
    print(f"same {iso.X_thresholds_.shape[0]} knots as scikit-learn: {'yes' if same else 'NO'}; "
          f"largest prediction difference: {np.max(np.abs(p_iso - sk_pred)):.1e}")

    section(f"2. Platt scaling and beta calibration, {n:,} rows")
    res, t_platt = timed(lambda: fastcal.platt_scaling(p_train, y_train))
    sk_sig, t_sk_platt = timed(lambda: _SigmoidCalibration().fit(p_train, y_train))
    speed_table([("platt_scaling (Newton)", t_platt, t_sk_platt)])
    print(f"a = {res.a:.8f}, b = {res.b:.8f} in {res.n_iter} Newton passes "
          f"(scikit-learn's L-BFGS: a = {sk_sig.a_:.8f}, b = {sk_sig.b_:.8f})")
    p_platt = fastcal.PlattScaling().fit(p_train, y_train).predict(p_test)
    # Platt fits a sigmoid of its input. Here the truth is sigmoid(logit(p) / 2): a
    # sigmoid of the model's logit, not of p, so on logit(p) Platt is exact.
    logit = lambda p: np.log(p) - np.log1p(-p)  # noqa: E731
    p_platt_logit = fastcal.PlattScaling().fit(logit(p_train), y_train).predict(logit(p_test))
    print("Platt on p is misspecified for this model (the truth is a sigmoid of logit(p)); "
          "on logit(p) it is exact, see below")
    # Beta calibration contains sigmoid(logit(p) / 2): a = b = 1/2, c = 0.
    import warnings

    beta, t_beta = timed(lambda: fastcal.BetaCalibration().fit(p_train, y_train))
    fitted = f"a = {beta.a_:.6f}, b = {beta.b_:.6f}, c = {beta.c_:.6f}, m = {beta.m_:.6f} (truth: 1/2, 1/2, 0, 1/2"
    try:
        from betacal import BetaCalibration as PeerBeta
    except ImportError:
        print(f"BetaCalibration.fit: {t_beta:.3f}s (betacal, the peer, is not installed: the bench extra)")
        print(fitted + ")")
    else:
        with warnings.catch_warnings():  # betacal switches every warning off globally
            peer, t_peer = timed(lambda: PeerBeta().fit(p_train, y_train))
        speed_table([("BetaCalibration.fit, vs betacal", t_beta, t_peer)])
        a_peer, b_peer, m_peer = peer.calibrator_.map_
        print(fitted + f"; betacal: a = {a_peer:.6f}, b = {b_peer:.6f}, m = {m_peer:.6f})")
    p_beta = beta.predict(p_test)
    probs = {"model as is": p_test, "isotonic": p_iso, "Platt on p": p_platt, "Platt on logit": p_platt_logit,
             "beta": p_beta}
    more_calibrators(p_train, y_train, p_test, y_test, p_iso)
    return y_test, probs, same


def more_calibrators(p_train, y_train, p_test, y_test, p_iso):
    """Section 2b: centered (strictly monotone) isotonic regression and Venn-Abers."""
    import fastcal

    n = p_train.shape[0]
    section(f"2b. Centered isotonic regression and Venn-Abers, {n:,} rows")
    cir, t_cir = timed(lambda: fastcal.IsotonicRegression(centered=True, out_of_bounds="clip").fit(p_train, y_train))
    p_cir = cir.predict(p_test)
    ties = lambda p: 1 - np.unique(p).shape[0] / p.shape[0]  # noqa: E731
    print(f"centered isotonic: fit in {t_cir:.2f} s; tied test predictions {ties(p_cir):.1%} "
          f"(step fit: {ties(p_iso):.1%}); AUC {fastcal.roc_auc_score(y_test, p_cir):.5f} "
          f"(step fit: {fastcal.roc_auc_score(y_test, p_iso):.5f}, model: {fastcal.roc_auc_score(y_test, p_test):.5f})")
    va, t_va = timed(lambda: fastcal.VennAbers().fit(p_train, y_train))
    (p0, p1), t_pred = timed(lambda: va.predict_interval(p_test))
    print(f"Venn-Abers: fit in {t_va:.2f} s, (p0, p1) of {n:,} test rows in {t_pred:.2f} s; "
          f"median width p1 - p0 = {np.median(p1 - p0):.2e}; "
          f"log loss of the merged p {fastcal.log_loss(y_test, va.predict(p_test)):.5f}")


def diagnose(y, probs):
    """Section 3: the calibration report of each set of predictions, and its speed."""
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    import fastcal

    n = y.shape[0]
    section(f"3. Diagnostics on {n:,} fresh rows")
    reports = {}
    for name, p in probs.items():
        reports[name], t = timed(lambda p=p: fastcal.calibration_report(y, p, n_bins=10))
    p = probs["model as is"]

    def sklearn_diagnostics():
        calibration_curve(y, p, n_bins=10)
        brier_score_loss(y, p)
        log_loss(y, p)
        roc_auc_score(y, p)

    _, t_sk = timed(sklearn_diagnostics)
    keys = [("AUC", "auc"), ("Brier score", "brier"), ("log loss", "log_loss"), ("ECE (10 bins)", "ece"),
            ("max calibration error", "mce"), ("calibration slope", "slope"), ("calibration intercept", "intercept"),
            ("calibration-in-the-large", "calibration_in_the_large"), ("mean prediction", "mean_prediction")]
    print(f"{'':26s}" + "".join(f"{name:>15s}" for name in reports))
    for label, key in keys:
        print(f"{label:26s}" + "".join(f"{getattr(r, key):15.5f}" for r in reports.values()))
    print(f"observed rate: {reports['model as is'].base_rate:.5f}. A calibrated model has slope 1, intercept 0.")
    print(f"calibration_report (curve, Brier + decomposition, log loss, ECE, AUC, slope/intercept): {t:.3f}s; "
          f"scikit-learn's curve, Brier, log loss and AUC alone: {t_sk:.3f}s ({t_sk / t:.1f}x)")
    return reports


def undersampling():
    """Section 4: the undersampling study, before and after the correction."""
    import fastcal
    from fastcal.examples import undersampling as study

    section("4. Undoing negative undersampling (100,000 rows, 10% of negatives kept)")
    figures = study.run(verbose=True, return_predictions=True)
    ok = figures["mean_before"] > 3 * figures["true_rate"] and \
        abs(figures["mean_after"] - figures["true_rate"]) < 0.1 * figures["true_rate"]
    print(f"before: mean prediction {figures['mean_before'] / figures['true_rate']:.1f}x the true rate; after: "
          f"{figures['mean_after'] / figures['true_rate']:.2f}x; AUC unchanged: "
          f"{abs(figures['auc_before'] - figures['auc_after']) <= 1e-12} -> {'as expected' if ok else 'UNEXPECTED'}")
    n = 10**7
    p = np.random.default_rng(3).random(n)
    fastcal.correct_negative_sampling(p[:1000], 0.1)
    out = np.empty_like(p)
    _, t_ours = timed(lambda: fastcal.correct_negative_sampling(p, 0.1, out=out))
    _, t_np = timed(lambda: p / (p + (1 - p) / 0.1))
    print(f"correct_negative_sampling on {n:,} rows: {t_ours * 1e3:.1f} ms, the NumPy expression "
          f"p / (p + (1 - p) / r): {t_np * 1e3:.1f} ms ({t_np / t_ours:.1f}x)")
    return figures


def draw(y, probs, figures, directory):
    """Section 5: the README's pictures."""
    import matplotlib

    matplotlib.use("Agg")
    from fastcal.plot import probability_histogram, reliability_diagram

    section("5. Pictures")
    os.makedirs(directory, exist_ok=True)
    paths = []
    fig, _ = reliability_diagram(y, probs, n_bins=15, title="Over-confident model, before and after calibration")
    paths.append(os.path.join(directory, "reliability.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    # CORP on 10^5 of the rows: its consistency band is narrow at 10^6, and 200 refits per model are quick here
    few = slice(None, None, max(1, y.shape[0] // 10**5))
    corp = {name: probs[name][few] for name in ("model as is", "isotonic")}
    fig, _ = reliability_diagram(y[few], corp, method="corp", n_resamples=200, random_state=0,
                                 title="CORP reliability diagrams with 90% consistency bands")
    paths.append(os.path.join(directory, "corp_reliability.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    y_u, before, after = figures["y"], figures["p_before"], figures["p_after"]
    fig, _ = probability_histogram({"trained on the undersample": before, "corrected": after},
                                   base_rate=float(y_u.mean()), bins=60, log=True,
                                   title="Predicted probabilities before and after undoing undersampling")
    paths.append(os.path.join(directory, "undersampling_histogram.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    fig, _ = reliability_diagram(y_u, {"trained on the undersample": before, "corrected": after}, n_bins=10,
                                 strategy="quantile", hist_log=True,
                                 title="Undersampled model, before and after the correction")
    paths.append(os.path.join(directory, "undersampling_reliability.png"))
    fig.savefig(paths[-1], dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close("all")
    for path in paths:
        print(f"wrote {os.path.relpath(path)}")


def main(argv=None):
    parser = argparse.ArgumentParser(description="The fastcal demo.")
    parser.add_argument("--n", type=int, default=10**7, help="rows to calibrate (default 10^7)")
    parser.add_argument("--images", default=IMAGES, help="where to write the pictures (default docs/images)")
    parser.add_argument("--no-images", action="store_true", help="skip the pictures")
    args = parser.parse_args(argv)
    print(f"fastcal demo: {args.n:,} rows")
    y, probs, _ = calibrate(args.n)
    diagnose(y, probs)
    figures = undersampling()
    if not args.no_images:
        # Plot a subsample: the pictures do not change, drawing 10^7 points does.
        keep = slice(None, None, max(1, args.n // 10**6))
        draw(y[keep], {k: v[keep] for k, v in probs.items()}, figures, args.images)
    return 0


if __name__ == "__main__":
    main()
