"""Side-by-side timings of fastcal and its peers, in one process, on the same arrays.

``python -m benchmarks.compare`` runs the ``rows()`` of every
``benchmarks/compare_*.py`` module and prints one Markdown table of times and
ratios (peer time / fastcal time: above 1 means fastcal is faster).
``--write-readme`` also replaces the table in docs/performance.md between the
``<!-- bench:start -->`` and ``<!-- bench:end -->`` markers; ``--quick`` uses
tiny sizes (a smoke run); ``--only isotonic,platt`` picks subjects.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import os
import pkgutil
import platform
import re
import sys
from pathlib import Path

import benchmarks

#: The page that holds the full table (the README shows a few headline rows and links to it).
README = Path(__file__).resolve().parent.parent / "docs" / "performance.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def fmt_time(seconds):
    if seconds is None:
        return "—"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def fmt_n(n):
    exp = len(str(n)) - 1
    return f"10^{exp}" if n == 10**exp else f"{n:,}"


def machine_line():
    import numba
    import numpy
    import scipy

    try:
        import sklearn

        sk = f", scikit-learn {sklearn.__version__}"
    except ImportError:
        sk = ""
    return (
        f"{os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
        f"NumPy {numpy.__version__}, SciPy {scipy.__version__}{sk}, Numba {numba.__version__}; "
        f"{datetime.date.today().isoformat()}; load average {os.getloadavg()[0]:.1f} at the end (a busy machine "
        f"slows fastcal's two threads more than a peer's one)"
    )


def render(rows):
    lines = [
        "| subject | task | n | fastcal | peer | peer time | peer / fastcal |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        peers = list(row.peers.items()) or [("—", None)]
        for i, (peer, t) in enumerate(peers):
            ratio = f"**{t / row.ours:.1f}x**" if t is not None and row.ours else "—"
            task = row.task + (f" ({row.note})" if row.note and i == 0 else "")
            first = i == 0
            lines.append(
                f"| {row.subject if first else ''} | {task if first else ''} | {fmt_n(row.n) if first else ''} "
                f"| {fmt_time(row.ours) if first else ''} | {peer} | {fmt_time(t)} | {ratio} |"
            )
    lines.append("")
    lines.append(f"Measured by `make bench` on {machine_line()}. Best of several runs, JIT warmed.")
    return "\n".join(lines)


#: Table order: the subjects in the order the README presents them; any others after.
ORDER = ["isotonic", "platt", "prior", "metrics", "decomposition", "calibration", "dask"]


def collect(quick=False, only=None):
    rows = []
    names = sorted((m.name for m in pkgutil.iter_modules(benchmarks.__path__) if m.name.startswith("compare_")),
                   key=lambda name: (ORDER.index(name[8:]) if name[8:] in ORDER else len(ORDER), name))
    for name in names:
        subject = name.removeprefix("compare_")
        if only and subject not in only:
            continue
        module = importlib.import_module(f"benchmarks.{name}")
        for row in module.rows(quick=quick):
            print(f"  {row.subject}: {row.task}, n={row.n}: {fmt_time(row.ours)}", file=sys.stderr, flush=True)
            rows.append(row)
    return rows


def write_readme(table):
    text = README.read_text()
    pattern = re.compile(re.escape(START) + ".*?" + re.escape(END), re.S)
    if not pattern.search(text):
        raise SystemExit(f"{README} has no {START} ... {END} section")
    README.write_text(pattern.sub(lambda _: f"{START}\n{table}\n{END}", text))


#: The README's headline rows, each from rows of the full table: (README task, peer as the README names it,
#: subject, the full table's tasks (several: the README gives their range), rows, the full table's peer).
HEADLINE = [
    ("`IsotonicRegression.fit`, 0/1 labels", "scikit-learn",
     "isotonic", ["`IsotonicRegression.fit`, unsorted float64 scores, 0/1 labels"], "10^7", "scikit-learn"),
    ("`IsotonicRegression.fit`, sample weights", "scikit-learn",
     "isotonic", ["`IsotonicRegression.fit`, unsorted float64 scores, with sample weights (radix sort path)"],
     "10^7", "scikit-learn"),
    ("`IsotonicRegression.predict`", "scikit-learn",
     "isotonic", ["`IsotonicRegression.predict`, 992 knots"], "10^7", "scikit-learn"),
    ("`platt_scaling`", "scikit-learn (L-BFGS)",
     "platt", ["`platt_scaling`, float64 scores (2 Newton iterations over the full data)"], "10^7",
     "scikit-learn `_SigmoidCalibration().fit` (L-BFGS)"),
    ("`BetaCalibration.fit`", "betacal",
     "beta", ["`BetaCalibration(\"abm\").fit` (2 Newton iterations over the full data)"], "10^7",
     "betacal `BetaCalibration.fit` (scikit-learn L-BFGS)"),
    ("`TemperatureScaling.fit`, 10 classes", "scikit-learn",
     "calibration", ["`TemperatureScaling.fit`, 10 classes"], "10^6", "scikit-learn"),
    ("`VennAbers` fit + predict", "venn-abers",
     "venn_abers", ["`VennAbers` fit + `predict_proba` (n calibration, n test rows)"], "10^6", "venn-abers `VennAbers`"),
    ("`calibration_report` (all diagnostics)", "scikit-learn (curve, Brier, log loss, AUC)",
     "diagnostics", ["`calibration_report` (everything, incl. slope/intercept fit)"], "10^7",
     "scikit-learn curve + Brier + log loss + AUC"),
    ("`roc_auc_score`", "scikit-learn",
     "diagnostics", ["`roc_auc_score` (ties counted half), float64"], "10^7", "scikit-learn"),
    ("`score_decomposition` (CORP, Brier)", "model-diagnostics",
     "decomposition", ["`score_decomposition`, `scoring=\"brier\"`, float64"], "10^7", "model-diagnostics `decompose`"),
    ("`smooth_ece`", "relplot",
     "diagnostics", ["`smooth_ece` (fixed-point bandwidth), float64", "`smooth_ece`, well-calibrated scores, float64",
                     "`smooth_ece`, under-confident scores, float64"], "10^6", "relplot `smECE`"),
    ("`correct_negative_sampling`, in place", "NumPy expression",
     "prior", ["`correct_negative_sampling`, in place (`out=p`)"], "10^7", "NumPy `p / (p + (1 - p) / r)`"),
]

#: The README's line on 10^8 rows: (its words, the full table's subject and task), times filled in.
LARGE = [("an isotonic fit", "isotonic", "`IsotonicRegression.fit`, unsorted float64 scores, 0/1 labels"),
         ("the full report", "diagnostics", "`calibration_report` (everything)")]

README_FILE = Path(__file__).resolve().parent.parent / "README.md"
_HEADLINE_BLOCK = re.compile(r"\| task \| rows \| peer \| speed-up \|\n.*?\nAt 10\^8 rows,.*?\n\n", re.S)


def parse_table(text):
    """The rows of the full table in ``text`` (docs/performance.md): ``(subject, task, n, peer)`` to
    ``(fastcal time, ratio or None)``, a continuation row taking the row above's subject, task, n and time."""
    section = text[text.index(START) + len(START):text.index(END)]
    out = {}
    subject = task = n = ours = None
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 7 or cells[0] in ("subject", "---"):
            continue
        if cells[0]:
            subject, task, n, ours = cells[0], cells[1], cells[2], cells[3]
        peer, ratio = cells[4], cells[6]
        value = float(ratio.strip("*").rstrip("x")) if ratio not in ("—", "") else None
        out[(subject, task, n, peer)] = (ours, value)
    return out


def _find(rows, subject, task, n, peer):
    """The row of ``rows`` (:func:`parse_table`) of ``subject`` and ``n`` whose task is ``task`` or ``task``
    followed by a note in parentheses."""
    for (s, t, m, p), value in rows.items():
        if s == subject and m == n and p == peer and (t == task or t.startswith(task + " (")):
            return value
    raise KeyError(f"the full table has no row {subject} | {task} | {n} | {peer}")


def fmt_ratio(r):
    """A headline ratio: whole from 30x up, one decimal below."""
    return f"{r:.0f}" if r >= 30 else f"{r:.1f}"


def headline(text):
    """The README's performance block (the headline table and the line on 10^8 rows) made from the full
    table in ``text`` (docs/performance.md)."""
    rows = parse_table(text)
    lines = ["| task | rows | peer | speed-up |", "|---|---|---|---|"]
    for label, shown_peer, subject, tasks, n, peer in HEADLINE:
        ratios = [_find(rows, subject, task, n, peer)[1] for task in tasks]
        lo, hi = min(ratios), max(ratios)
        cell = f"{fmt_ratio(lo)}x" if len(ratios) == 1 else f"{lo:.0f}-{hi:.0f}x"
        lines.append(f"| {label} | {n} | {shown_peer} | {cell} |")
    times, less = [], True
    for what, subject, task in LARGE:
        key = next(k for k in rows if k[0] == subject and k[2] == "10^8" and k[1].startswith(task + " ("))
        times.append(f"{what} takes {rows[key][0]}")
        memory = re.search(r"peak memory beyond the inputs:? ([0-9.]+) GiB", key[1])
        inputs = re.search(r"the ([0-9.]+) GiB of scores", key[1])
        less = less and float(memory.group(1)) < float(inputs.group(1))
    lines += ["", f"At 10^8 rows, {times[0]} and {times[1]}, using "
              + ("less extra memory than the size of the inputs." if less else "more extra memory than the size "
                 "of the inputs (see the full table)."), ""]
    return "\n".join(lines) + "\n"


def write_headline(text):
    """Replace the README's performance block by :func:`headline` of ``text``."""
    readme = README_FILE.read_text()
    if not _HEADLINE_BLOCK.search(readme):
        raise SystemExit(f"{README_FILE} has no performance table followed by the line on 10^8 rows")
    README_FILE.write_text(_HEADLINE_BLOCK.sub(lambda _: headline(text), readme, count=1))


def readme_headline(readme):
    """The README's performance block, as :func:`headline` writes it."""
    match = _HEADLINE_BLOCK.search(readme)
    return match.group(0) if match else None


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--only", help="comma-separated subjects, e.g. isotonic,platt")
    parser.add_argument("--write-readme", action="store_true", help="replace the table in docs/performance.md")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    if args.write_readme and (args.quick or only):  # before minutes of measurements
        raise SystemExit("--write-readme needs a full run (no --quick, no --only)")
    table = render(collect(quick=args.quick, only=only))
    print(table)
    if args.write_readme:
        write_readme(table)
        write_headline(README.read_text())
        print(f"\nwrote the table to {README} and its headline rows to {README_FILE}", file=sys.stderr)


if __name__ == "__main__":
    main()
