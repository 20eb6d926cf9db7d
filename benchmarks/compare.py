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
        f"{datetime.date.today().isoformat()}"
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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (smoke run)")
    parser.add_argument("--only", help="comma-separated subjects, e.g. isotonic,platt")
    parser.add_argument("--write-readme", action="store_true", help="replace the table in docs/performance.md")
    args = parser.parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    table = render(collect(quick=args.quick, only=only))
    print(table)
    if args.write_readme:
        if args.quick or only:
            raise SystemExit("--write-readme needs a full run (no --quick, no --only)")
        write_readme(table)
        print(f"\nwrote the table to {README}", file=sys.stderr)


if __name__ == "__main__":
    main()
