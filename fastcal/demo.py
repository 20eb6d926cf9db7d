"""The fastcal demo: the main job, at real sizes, with real output.

``fastcal demo`` (or ``python -m fastcal.demo``):

1. generates ``--n`` (default 10^7) scores and labels from an over-confident
   model and as many fresh rows to score on;
2. calibrates them by isotonic regression, Platt scaling and beta
   calibration, with fastcal and with scikit-learn (betacal for beta) on the
   same arrays, printing times, speed-ups and agreement; then by centered
   isotonic regression and Venn-Abers;
3. measures every calibration diagnostic before and after, on the fresh
   rows, against scikit-learn's metrics;
4. reproduces the undersampling study (a rare-event model trained on 10% of
   the negatives; at most ``--n`` rows) and undoes the undersampling;
5. draws the reliability diagrams (binned, and CORP with consistency bands)
   and probability histograms into ``--out`` (default ``./fastcal-demo/``
   in the current directory; nothing else is written anywhere).

``--n`` bounds all of the work. Needs scikit-learn and matplotlib (the
``sklearn`` and ``plot`` extras; matplotlib not with ``--no-images``),
checked before any work; compares with betacal when it is installed (the
``bench`` extra).

``--readme README.md`` also writes the printed transcript into that file,
between the lines :data:`TRANSCRIPT_START` and :data:`TRANSCRIPT_END`
(which must be there). The section titles are :data:`SECTIONS`, and
:func:`section_titles` reads them back from a transcript.
"""

# ``make demo-readme`` runs the demo with ``--readme README.md --out docs/images``: the README's transcript and
# its pictures in one run; tests/test_demo.py checks the README's section titles against SECTIONS.

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import os
import re
import sys
import time

import numpy as np

from ._precompile import LARGE

#: The demo's sections, in order: each is printed as a heading ``== TITLE, DETAIL =====``.
SECTIONS = (
    "1. Isotonic calibration",
    "2. Platt scaling and beta calibration",
    "2b. Centered isotonic regression and Venn-Abers",
    "3. Diagnostics",
    "4. Undoing negative undersampling",
    "5. Pictures",
)

#: Where the pictures go by default: a folder of the current directory.
DEFAULT_OUT = "fastcal-demo"

#: The lines of a README between which ``--readme`` writes the transcript.
TRANSCRIPT_START = "<!-- demo-transcript:start -->"
TRANSCRIPT_END = "<!-- demo-transcript:end -->"

#: The pictures the demo draws, in order.
PICTURES = ("reliability.png", "corp_reliability.png", "undersampling_histogram.png", "undersampling_reliability.png")

#: Rows of the CORP diagram (a subsample above this: 200 refits of the band per model stay quick).
CORP_ROWS = 10**5

#: Rows of the undersampling study, or ``--n`` if fewer.
STUDY_ROWS = 100_000

#: Rows of the warm-up call before each timing (:func:`timed`): past every size at which a wrapper switches kernels.
WARM_ROWS = LARGE

_HEADING = re.compile(r"^== (.+?) =+$")


def over_confident_model(n, seed):
    """Scores of an over-confident model and the true outcomes.

    The model claims P(y=1) = sigmoid(s) while the truth is sigmoid(s / 2),
    with s ~ N(0, 2^2): its predictions are too close to 0 and 1.
    """
    rng = np.random.default_rng(seed)
    s = rng.normal(0.0, 2.0, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.uint8)
    return 1.0 / (1.0 + np.exp(-s)), y


def timed(func, *arrays):
    """``(func(*arrays), seconds)``, timed after a warm-up call on the first :data:`WARM_ROWS` rows of each array.

    Kernels compile (or load from the cache) on their first call with each
    argument type: the warm-up call, on a slice of the same dtypes, makes
    that happen before the clock starts. It is as long as the largest
    size at which a wrapper switches kernels, so that the timed call takes
    no path the warm-up did not (at most the whole input).
    """
    func(*(a[:WARM_ROWS] if isinstance(a, np.ndarray) else a for a in arrays))
    t0 = time.perf_counter()
    result = func(*arrays)
    return result, time.perf_counter() - t0


def section(index, detail):
    """Print the heading of section ``SECTIONS[index]``, with ``detail`` (e.g. the rows)."""
    title = f"{SECTIONS[index]}, {detail}"
    print(f"\n== {title} " + "=" * max(3, 74 - len(title)))


def section_titles(text):
    """The section titles (:data:`SECTIONS` entries) of the headings in a demo transcript ``text``, in order.

    A heading whose title is not one of :data:`SECTIONS` (with its detail)
    comes back whole, so a comparison with :data:`SECTIONS` shows it.
    """
    found = []
    for line in text.splitlines():
        m = _HEADING.match(line.strip())
        if m:
            title = m.group(1)
            found.append(next((s for s in SECTIONS if title == s or title.startswith(s + ", ")), title))
    return found


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

    section(0, f"{n:,} rows")
    iso, t_fit = timed(lambda p, y: fastcal.IsotonicRegression(out_of_bounds="clip").fit(p, y), p_train, y_train)
    sk_iso, t_sk_fit = timed(lambda p, y: SkIsotonicRegression(out_of_bounds="clip").fit(p, y), p_train, y_train)
    p_iso, t_pred = timed(iso.predict, p_test)
    sk_pred, t_sk_pred = timed(sk_iso.predict, p_test)
    speed_table([("IsotonicRegression.fit", t_fit, t_sk_fit), ("IsotonicRegression.predict", t_pred, t_sk_pred)])
    same = np.array_equal(iso.X_thresholds_, sk_iso.X_thresholds_)
    print(f"same {iso.X_thresholds_.shape[0]} knots as scikit-learn: {'yes' if same else 'NO'}; "
          f"largest prediction difference: {np.max(np.abs(p_iso - sk_pred)):.1e}")

    section(1, f"{n:,} rows")
    res, t_platt = timed(fastcal.platt_scaling, p_train, y_train)
    sk_sig, t_sk_platt = timed(lambda p, y: _SigmoidCalibration().fit(p, y), p_train, y_train)
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

    beta, t_beta = timed(lambda p, y: fastcal.BetaCalibration().fit(p, y), p_train, y_train)
    fitted = f"a = {beta.a_:.6f}, b = {beta.b_:.6f}, c = {beta.c_:.6f}, m = {beta.m_:.6f} (truth: 1/2, 1/2, 0, 1/2"
    try:
        from betacal import BetaCalibration as PeerBeta
    except ImportError:
        print(f"BetaCalibration.fit: {t_beta:.3f}s (betacal, the peer, is not installed: the bench extra)")
        print(fitted + ")")
    else:
        with warnings.catch_warnings():  # betacal switches every warning off globally
            peer, t_peer = timed(lambda p, y: PeerBeta().fit(p, y), p_train, y_train)
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
    section(2, f"{n:,} rows")
    cir, t_cir = timed(lambda p, y: fastcal.IsotonicRegression(centered=True, out_of_bounds="clip").fit(p, y),
                       p_train, y_train)
    p_cir = cir.predict(p_test)
    ties = lambda p: 1 - np.unique(p).shape[0] / p.shape[0]  # noqa: E731
    print(f"centered isotonic: fit in {t_cir:.2f} s; tied test predictions {ties(p_cir):.1%} "
          f"(step fit: {ties(p_iso):.1%}); AUC {fastcal.roc_auc_score(y_test, p_cir):.5f} "
          f"(step fit: {fastcal.roc_auc_score(y_test, p_iso):.5f}, model: {fastcal.roc_auc_score(y_test, p_test):.5f})")
    va, t_va = timed(lambda p, y: fastcal.VennAbers().fit(p, y), p_train, y_train)
    (p0, p1), t_pred = timed(va.predict_interval, p_test)
    print(f"Venn-Abers: fit in {t_va:.2f} s, (p0, p1) of {n:,} test rows in {t_pred:.2f} s; "
          f"median width p1 - p0 = {np.median(p1 - p0):.2e}; "
          f"log loss of the merged p {fastcal.log_loss(y_test, va.predict(p_test)):.5f}")


def diagnose(y, probs):
    """Section 3: the calibration report of each set of predictions, and its speed."""
    from sklearn.calibration import calibration_curve
    from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

    import fastcal

    n = y.shape[0]
    section(3, f"on {n:,} fresh rows")
    reports = {}
    for name, p in probs.items():
        reports[name], t = timed(lambda y, p: fastcal.calibration_report(y, p, n_bins=10), y, p)

    def sklearn_diagnostics(y, p):
        calibration_curve(y, p, n_bins=10)
        brier_score_loss(y, p)
        log_loss(y, p)
        roc_auc_score(y, p)

    _, t_sk = timed(sklearn_diagnostics, y, probs["model as is"])
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


def undersampling(n):
    """Section 4: the undersampling study (at most ``n`` rows), before and after the correction."""
    import fastcal
    from fastcal.examples import undersampling as study

    rows = min(n, STUDY_ROWS)
    section(4, f"{rows:,} rows, 10% of negatives kept")
    figures = study.run(verbose=True, return_predictions=True, n_samples=rows)
    ok = figures["mean_before"] > 3 * figures["true_rate"] and \
        abs(figures["mean_after"] - figures["true_rate"]) < 0.1 * figures["true_rate"]
    print(f"before: mean prediction {figures['mean_before'] / figures['true_rate']:.1f}x the true rate; after: "
          f"{figures['mean_after'] / figures['true_rate']:.2f}x; AUC unchanged: "
          f"{abs(figures['auc_before'] - figures['auc_after']) <= 1e-12} -> {'as expected' if ok else 'UNEXPECTED'}")
    p = np.random.default_rng(3).random(n)
    _, t_ours = timed(lambda p, out: fastcal.correct_negative_sampling(p, 0.1, out=out), p, np.empty_like(p))
    _, t_np = timed(lambda p: p / (p + (1 - p) / 0.1), p)
    print(f"correct_negative_sampling on {n:,} rows: {t_ours * 1e3:.1f} ms, the NumPy expression "
          f"p / (p + (1 - p) / r): {t_np * 1e3:.1f} ms ({t_np / t_ours:.1f}x)")
    return figures


#: The round axis limits of :func:`zoom_limit`, per power of ten.
ROUND_LIMITS = (1.0, 1.2, 1.4, 1.6, 1.8, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)


def zoom_limit(limit):
    """An axis limit a little (5%) above ``limit``, round (one of :data:`ROUND_LIMITS` times a power of ten: at most
    1.25 times the next lower one), at most 1."""
    want = limit * 1.05
    scale = 10.0 ** np.floor(np.log10(want))
    return min(1.0, next(r * scale for r in ROUND_LIMITS if r * scale >= want * (1 - 1e-12)))


def reliability_figure(y, probs, raw="model as is"):
    """The binned reliability diagrams of section 5: one panel per calibrator, each against the model ``raw``.

    Every row is used (binning 10^7 rows takes milliseconds; only points
    drawn would cost), with the table's 10 uniform bins, so each legend's ECE
    is the table's. The calibrated curves lie close to the diagonal and to
    one another: on one panel only the last one drawn would show.
    """
    import matplotlib.pyplot as plt

    from fastcal.plot import reliability_diagram

    calibrated = [name for name in probs if name != raw]
    cols = 2
    rows = -(-len(calibrated) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 5.2 * rows), squeeze=False)
    for ax, name in zip(axes.flat, calibrated):
        reliability_diagram(y, {raw: probs[raw], name: probs[name]}, n_bins=10, ax=ax, title=name)
    for ax in axes.flat[len(calibrated):]:
        ax.set_visible(False)
    fig.suptitle(f"Over-confident model, before and after each calibration: {y.shape[0]:,} fresh rows, "
                 "10 uniform bins (ECE as in the table)", fontsize="large")
    fig.tight_layout()
    return fig


def corp_figure(y, probs, names=("model as is", "isotonic")):
    """The CORP diagrams of section 5, on at most :data:`CORP_ROWS` rows (a regular subsample, stated in the title).

    The legend stands to the right of the curves: inside, it would cover the
    part of the square that one of the curves crosses.
    """
    from fastcal.plot import reliability_diagram

    n = y.shape[0]
    step = max(1, -(-n // CORP_ROWS))
    few = slice(None, None, step)
    corp = {name: probs[name][few] for name in names}
    sub = f"1 row in {step:,} of the {n:,}: {y[few].shape[0]:,} rows" if step > 1 else f"{n:,} rows"
    fig, (ax, _) = reliability_diagram(y[few], corp, method="corp", n_resamples=200, random_state=0,
                                       title=f"CORP reliability diagrams with 90% consistency bands\n({sub})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, fontsize="small")
    return fig


def undersampling_reliability_figure(y, probs):
    """The reliability diagrams of the undersampled model (section 5): one panel per model, each zoomed to its points.

    Rare events: the 10 quantile bins of the predictions sit near 0, so on
    the full [0, 1] square every point would be in the bottom-left corner;
    and the model's predictions before the correction reach several times
    higher than after it, so on one pair of axes the corrected points would
    be squeezed into a corner too. Each model gets its own column (curve
    above, histogram of its predictions below), with axes that reach a
    little past its own points.
    """
    import matplotlib.pyplot as plt

    import fastcal
    from fastcal.plot import reliability_diagram

    fig, axes = plt.subplots(2, len(probs), figsize=(5.5 * len(probs), 7.0), sharex="col",
                             gridspec_kw=dict(height_ratios=(3, 1)), squeeze=False)
    for column, (name, p) in enumerate(probs.items()):
        ax, hist_ax = axes[0, column], axes[1, column]
        prob_true, prob_pred = fastcal.calibration_curve(y, p, n_bins=10, strategy="quantile")
        x_lim, y_lim = zoom_limit(np.max(prob_pred)), zoom_limit(np.max(prob_true))
        reliability_diagram(y, {name: p}, n_bins=10, strategy="quantile", hist_log=True, ax=ax, hist_ax=hist_ax,
                            hist_bins=max(50, round(30 / x_lim)), title=f"{name}\n(x up to {x_lim:.2f}, "
                                                                         f"y up to {y_lim:.2f})")
        ax.set_xlim(0, x_lim)
        ax.set_ylim(0, y_lim)
        ax.legend(loc="upper left", fontsize="small")
    fig.suptitle("Undersampled model, before and after the correction: 10 quantile bins, "
                 "each panel zoomed to its points", fontsize="large")
    fig.tight_layout()
    return fig


def draw(y, probs, figures, directory):
    """Section 5: the pictures, into ``directory`` (created if needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from fastcal.plot import probability_histogram

    section(5, f"into {directory}")
    os.makedirs(directory, exist_ok=True)
    y_u = figures["y"]
    both = {"trained on the undersample": figures["p_before"], "corrected": figures["p_after"]}
    hist, _ = probability_histogram(both, base_rate=float(y_u.mean()), bins=60, log=True,
                                    title="Predicted probabilities before and after undoing undersampling")
    pictures = dict(zip(PICTURES, (reliability_figure(y, probs), corp_figure(y, probs), hist,
                                   undersampling_reliability_figure(y_u, both))))
    for name, fig in pictures.items():
        fig.savefig(os.path.join(directory, name), dpi=100, bbox_inches="tight")
        plt.close(fig)
    print(f"wrote {', '.join(pictures)} into {os.path.relpath(directory)}")


#: The extras the demo needs: (import name, what to call it, the fastcal extra that installs it).
_EXTRAS = (("sklearn", "scikit-learn", "sklearn"), ("matplotlib", "matplotlib", "plot"))


def missing_extras(images=True):
    """The message naming the extras the demo needs that cannot be imported, or None when all are there."""
    missing = []
    for module, name, extra in _EXTRAS:
        if module == "matplotlib" and not images:
            continue
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append((name, extra))
    if not missing:
        return None
    names = " and ".join(name for name, _ in missing)
    extras = ",".join(extra for _, extra in missing)
    return (f"the demo needs {names}, which {'is' if len(missing) == 1 else 'are'} not installed; "
            f'install {"it" if len(missing) == 1 else "them"} with pip install "fastcal[{extras}]"'
            + (" (or run the demo with --no-images)" if missing == [("matplotlib", "plot")] else ""))


def _rows(text):
    """``--n``: a whole number of rows (``10000000`` or ``1e7``), at least 1000."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected a whole number of rows, got {text!r}")
    if value < 1000:
        raise argparse.ArgumentTypeError(f"the demo needs at least 1000 rows, got {text!r}")
    return int(value)


def build_parser(prog=None):
    """The demo's argument parser (``prog``: its name in the usage line)."""
    parser = argparse.ArgumentParser(
        prog=prog or "python -m fastcal.demo",
        description="The fastcal demo: calibrate --n rows with fastcal and scikit-learn side by side, diagnose, "
                    "undo undersampling, and draw the pictures into --out. Writes nowhere else.")
    parser.add_argument("--n", type=_rows, default=10**7, metavar="ROWS",
                        help="rows to calibrate, and a bound on every step's rows (default 10^7; at least 1000)")
    parser.add_argument("--out", default=DEFAULT_OUT, metavar="DIR",
                        help=f"folder for the pictures, created if needed (default ./{DEFAULT_OUT}/ in the "
                             "current directory)")
    parser.add_argument("--no-images", action="store_true",
                        help="draw no pictures (then nothing is written, --readme aside)")
    parser.add_argument("--readme", metavar="README.md",
                        help=f"also write the transcript into this file, between the lines {TRANSCRIPT_START} "
                             f"and {TRANSCRIPT_END} (make demo-readme)")
    return parser


def replace_transcript(text, transcript, path="README.md"):
    """``text`` (a README) with the lines between the transcript markers replaced by ``transcript``, fenced.

    Raises ValueError naming ``path`` when the markers are missing, repeated or out of order.
    """
    lines = text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.strip() == TRANSCRIPT_START]
    ends = [i for i, ln in enumerate(lines) if ln.strip() == TRANSCRIPT_END]
    if len(starts) != 1 or len(ends) != 1 or not starts[0] < ends[0]:
        raise ValueError(f"{path} must have one line {TRANSCRIPT_START} and, below it, one line {TRANSCRIPT_END} "
                         f"(found {len(starts)} and {len(ends)}): the demo's transcript goes between them")
    block = "```text\n" + transcript.strip("\n") + "\n```\n"
    return "".join(lines[: starts[0] + 1]) + block + "".join(lines[ends[0]:])


def transcript_between_markers(text, path="README.md"):
    """The text between the transcript markers of ``text`` (a README); ValueError when they are missing."""
    lines = text.splitlines(keepends=True)
    replace_transcript(text, "", path)  # the same check of the markers
    start = next(i for i, ln in enumerate(lines) if ln.strip() == TRANSCRIPT_START)
    end = next(i for i, ln in enumerate(lines) if ln.strip() == TRANSCRIPT_END)
    return "".join(lines[start + 1: end])


class _Tee(io.TextIOBase):
    """Write to a stream and keep a copy."""

    def __init__(self, stream):
        self.stream = stream
        self.copy = io.StringIO()

    def write(self, text):
        self.copy.write(text)
        return self.stream.write(text)

    def flush(self):
        self.stream.flush()


def main(argv=None, prog=None):
    """Run the demo with the command-line arguments ``argv`` (default ``sys.argv[1:]``); returns 0.

    Exits with status 2 (``SystemExit``, as argparse does for a bad option)
    before any work when an extra it needs is missing, or when ``--readme``
    names a file without the transcript markers.
    """
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    problem = missing_extras(images=not args.no_images)
    if problem is None and args.readme is not None:
        try:
            with open(args.readme, encoding="utf-8") as f:
                replace_transcript(f.read(), "", args.readme)
        except (OSError, ValueError) as exc:
            problem = str(exc)
    if problem is not None:
        parser.exit(2, f"{parser.prog}: error: {problem}\n")
    tee = _Tee(sys.stdout)
    with contextlib.redirect_stdout(tee) if args.readme else contextlib.nullcontext():
        run(args.n, None if args.no_images else args.out)
    if args.readme:
        with open(args.readme, encoding="utf-8") as f:
            text = replace_transcript(f.read(), tee.copy.getvalue(), args.readme)
        with open(args.readme, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote the transcript into {args.readme}")
    return 0


def run(n, out):
    """The demo on ``n`` rows; the pictures into the folder ``out`` (None: no pictures)."""
    t0 = time.perf_counter()
    where = f"pictures into {out}" if out is not None else "no pictures"
    print(f"fastcal demo: {n:,} rows, {where}")
    y, probs, _ = calibrate(n)
    diagnose(y, probs)
    figures = undersampling(n)
    if out is not None:
        draw(y, probs, figures, out)
    print(f"demo done in {time.perf_counter() - t0:.0f} s (the peers' calls and the warm-up calls included)")


if __name__ == "__main__":
    sys.exit(main())
