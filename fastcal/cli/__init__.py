"""The ``fastcal`` command line: fit a calibrator on a file, apply it to another, report, demo.

::

    fastcal fit --method isotonic|centered-isotonic|sigmoid|platt|temperature|vector|bcts|matrix|dirichlet|beta|
                         histogram|venn-abers
                --score-col COL --label-col COL
                [--weight-col COL] [--group-col COL] INPUT -o model.json
    fastcal fit --method multicalibration --segment-col A,B,... [--numerical-col B,...] [--max-depth N] ...
                --score-col COL --label-col COL [--weight-col COL] INPUT -o model.json
    fastcal apply model.json INPUT -o OUTPUT [--score-col COL] [--prior-rate R | --priors TRAIN NEW]
    fastcal report INPUT --score-col COL --label-col COL -o report.png|report.html|report.json
    fastcal demo [--n ROWS] [--out DIR] [--no-images]
    fastcal precompile [--quiet] [--jobs N]

    fit, apply and report also take --spark [--spark-master URL]: the input read through Spark.

Files are read and written by extension: ``.csv``, ``.parquet`` (pyarrow,
the ``io`` extra), ``.npy`` and ``.npz``; ``-`` is CSV on stdin or stdout.
Columns of a ``.npy`` file are the fields of a structured array, or ``0``,
``1``, ... for the columns of a 2-D array (``0`` for a 1-D one); columns of a
``.npz`` file are its 1-D arrays.

``fit`` prints one line on stdout when done (rows, what was fitted, the
time; ``--quiet`` leaves it out). ``--method platt`` is ``--method sigmoid``.

A group column (``fit --group-col``, ``apply --group-col``, ``report
--segment-col``) has the same values from every format: a CSV column is
typed as Parquet, pandas and Spark infer it (integers, else numbers, else
text), and an empty cell is the missing group (see :mod:`fastcal._io.groups`;
``apply`` reads a CSV file's group column once first, to decide its type).
``apply`` warns on stderr when no row of its input has a group with a
calibrator of its own. Several columns, ``--group-col a,b``, make a row's
group the tuple of its values, each column typed alone (the groups and
order of :class:`fastcal.GroupedCalibrator` given the list of columns); a
name with commas that is a column of the file is that one column.

``fit --method multicalibration`` fits a :class:`fastcal.MulticalibrationCalibrator` on the segment
features ``--segment-col`` (each column typed as a group column; those of ``--numerical-col`` read as
numbers, an empty cell NaN, and cut at quantiles); ``--max-depth``, ``--n-buckets`` and the estimator's other
parameters are options of their names. ``apply`` reads the model's features from the columns of the same
names, and warns when no row's value of a feature was seen at fit.

``apply`` carries every input column through untouched: only the score
columns are parsed (CSV records are copied byte for byte, Parquet columns
keep their Arrow types). Files are read a bounded block at a time, stdin
included, so memory does not grow with the input.

Progress bars go to stderr, only when it is a terminal (``--quiet``
silences them). Exit status: 0 on success, 2 on bad usage (unknown option
or format, missing file, column or output directory), 1 on bad data (values
that are not numbers, missing values, NaN, labels that are not 0/1, no rows,
an invalid model file), with a one-line ``fastcal: error: ...`` naming the
file, the column and the row where it applies; 128 + the signal's number
when stopped by SIGINT, SIGTERM or SIGHUP (:mod:`.signals`; ``precompile``
ends at once, see :mod:`.precompile`). Outputs are
written to a temporary file in the target's directory and renamed when
complete, so a failure or a signal never leaves a partial output file
(stdout excepted).

With ``--spark``, ``fit``, ``apply`` and ``report`` read their input through
Spark and compute with :mod:`fastcal.spark` (see :mod:`.spark`); ``report``
writes the same .json, .html and .png, but its pictures' CORP curve has no
band (the band's resamples redraw every row).

Layout: this module parses the arguments and runs a command; the commands
are in :mod:`.fit`, :mod:`.apply`, :mod:`.report` and :mod:`.precompile`
(``demo`` hands over to :mod:`fastcal.demo`), each a function ``cmd_NAME(args, progress_enabled,
timings)`` that raises :class:`~fastcal._io.UsageError` or
:class:`~fastcal._io.DataError` and fills ``timings`` with the seconds of each
phase; :mod:`.options` has the option types, :mod:`.checks` the label and
weight checks, :mod:`.progress` the progress bar, :mod:`.signals` the
signal handlers, :mod:`.spark` the ``--spark`` paths, :mod:`.documents` the
report's files (with and without ``--spark``). Files are read and written
by :mod:`fastcal._io`.
"""

from __future__ import annotations

import argparse
import sys

from .._io import BATCH_ROWS, DataError, UsageError
from .apply import cmd_apply
from .fit import cmd_fit
from .options import (
    bins_arg,
    bool_arg,
    count_arg,
    count_or_none_arg,
    folds_arg,
    jobs_arg,
    limit_arg,
    memory_arg,
    nonnegative_float,
    positive_int,
)
from .precompile import cmd_precompile
from .report import cmd_report
from .signals import Interrupted, Signals
from .spark import add_options as add_spark_options

__all__ = ["main"]

EXIT_OK = 0
EXIT_DATA = 1
EXIT_USAGE = 2


def cmd_demo(args, progress_enabled, timings):
    """Run the fastcal demo with ``args.demo_args`` (a command, as the others)."""
    from .. import demo

    demo.main(args.demo_args, prog="fastcal demo")


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        sys.stderr.write(f"fastcal: error: {message}\n")
        raise SystemExit(EXIT_USAGE)


def build_parser():
    """The ``fastcal`` argument parser: a sub-parser per command, whose ``func`` default is the command."""
    from .. import __version__

    parser = _Parser(prog="fastcal", description="Fast, exact probability calibration from the command line.")
    parser.add_argument("--version", action="version", version=f"fastcal {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def common(p, quiet_help="no progress bars"):
        p.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
        p.add_argument("--timings", action="store_true", help="print the time of each phase on stderr")
        p.add_argument("--batch-rows", type=positive_int, default=BATCH_ROWS, metavar="N",
                       help=f"rows per batch read and written (default {BATCH_ROWS})")
        p.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)

    fit = sub.add_parser("fit", help="fit a calibrator and save it as a JSON model file")
    fit.add_argument("input", metavar="INPUT", help="data file (.csv, .parquet, .npy, .npz; - for CSV on stdin)")
    fit.add_argument("-o", "--output", required=True, metavar="MODEL.json", help="model file to write")
    fit.add_argument("--method", required=True, choices=("isotonic", "centered-isotonic", "sigmoid", "platt",
                                                         "temperature", "vector", "bcts", "matrix", "dirichlet",
                                                         "beta", "histogram", "venn-abers", "multicalibration"),
                     help="the calibrator (sigmoid, or its alias platt: Platt scaling; beta, histogram and "
                          "multicalibration: scores must be probabilities in [0, 1]; temperature, vector (vector "
                          "scaling), bcts (bias-corrected temperature scaling) and matrix (matrix scaling): one "
                          "score column per class; dirichlet (Dirichlet calibration): one probability column per "
                          "class; "
                          "multicalibration: every segment of --segment-col repaired at once, "
                          "fastcal.MulticalibrationCalibrator)")
    fit.add_argument("--score-col", action="append", required=True, metavar="COL",
                     help="column of scores (temperature, vector, bcts, matrix, dirichlet: one per class, "
                          "repeated or comma-separated)")
    fit.add_argument("--label-col", required=True, metavar="COL", help="column of labels")
    fit.add_argument("--weight-col", metavar="COL", help="column of sample weights")
    fit.add_argument("--increasing", type=bool_arg, default=True, metavar="true|false|auto",
                     help="isotonic: direction (default true)")
    fit.add_argument("--out-of-bounds", choices=("nan", "clip", "raise"), default="clip",
                     help="isotonic: prediction outside the fitted range (default clip)")
    fit.add_argument("--y-min", type=float, default=None, help="isotonic: lower bound of the fit")
    fit.add_argument("--y-max", type=float, default=None, help="isotonic: upper bound of the fit")
    fit.add_argument("--max-iter", type=positive_int, default=100,
                     help="sigmoid, beta, vector, bcts, matrix, dirichlet: Newton iterations (default 100)")
    fit.add_argument("--reg-lambda", type=nonnegative_float, default=None, metavar="X",
                     help="matrix, dirichlet: the penalty's weight on W (L2 on every parameter; with --reg-mu, "
                          "ODIR on W's off-diagonal entries) (default 0)")
    fit.add_argument("--reg-mu", type=nonnegative_float, default=None, metavar="X",
                     help="matrix, dirichlet: the ODIR penalty's weight on the diagonal of W and the biases "
                          "(default: none, L2 by --reg-lambda)")
    fit.add_argument("--matrix-type", choices=("full", "diagonal", "fixed_diagonal"), default=None,
                     help="dirichlet: the form of W (default full)")
    fit.add_argument("--parameters", choices=("abm", "ab", "am"), default="abm",
                     help="beta: the parameters fitted (default abm)")
    fit.add_argument("--n-bins", type=bins_arg, default=10, help="histogram: number of bins (default 10)")
    fit.add_argument("--strategy", choices=("uniform", "quantile"), default="uniform",
                     help="histogram: bin edges (default uniform)")
    fit.add_argument("--memory-budget", type=memory_arg, default=None, metavar="SIZE",
                     help="fit out of core within SIZE bytes of memory (e.g. 512M, 2G): for inputs larger "
                          "than memory (isotonic, centered-isotonic, sigmoid, beta, histogram)")
    fit.add_argument("--group-col", metavar="COL",
                     help="fit one calibrator per value of COL (fastcal.GroupedCalibrator); COL may be several "
                          "columns, a,b: a group is then a tuple of values (a name with commas that is a column "
                          "is that column); apply then needs the same --group-col")
    fit.add_argument("--min-group-rows", type=positive_int, default=100, metavar="N",
                     help="with --group-col: fewest rows of a group with its own calibrator; smaller and "
                          "unseen groups use the fit on all rows (default 100)")
    fit.add_argument("--segment-col", metavar="COLS",
                     help="multicalibration: the segment features, comma-separated (a,b,c); apply reads the "
                          "columns of the same names")
    fit.add_argument("--numerical-col", metavar="COLS",
                     help="multicalibration: the features of --segment-col that are numbers, cut at quantiles "
                          "(the others are categorical); an empty cell is NaN, a value of its own")
    mc = "multicalibration: fastcal.MulticalibrationCalibrator's"
    fit.add_argument("--max-depth", type=count_or_none_arg, metavar="N|none",
                     help=f"{mc} max_depth, most features in a segment (default 3)")
    fit.add_argument("--max-values-per-segment-feature", type=positive_int, metavar="N",
                     help=f"{mc} max_values_per_segment_feature, values (bins) kept per feature (default 6)")
    fit.add_argument("--min-samples-per-segment", type=count_arg, metavar="N",
                     help=f"{mc} min_samples_per_segment, fewest rows of a segment (default 10)")
    fit.add_argument("--max-n-segments", type=limit_arg, metavar="N|none",
                     help=f"{mc} max_n_segments, most segments (default 1000)")
    fit.add_argument("--n-buckets", type=positive_int, metavar="N",
                     help=f"{mc} n_buckets, score buckets crossed with each segment (default 8)")
    fit.add_argument("--n-folds", type=folds_arg, metavar="N",
                     help=f"{mc} n_folds, folds of the cross-fitting that chooses the penalty (default 5)")
    add_spark_options(fit)
    common(fit, quiet_help="no progress bars and no summary line on stdout")
    fit.set_defaults(func=cmd_fit)

    app = sub.add_parser("apply", help="apply a model file to a data file")
    app.add_argument("model", metavar="MODEL.json", help="model file written by fastcal fit")
    app.add_argument("input", metavar="INPUT", help="data file (.csv, .parquet, .npy, .npz; - for CSV on stdin)")
    app.add_argument("-o", "--output", required=True, metavar="OUTPUT",
                     help="output file: the input's columns plus the calibrated probabilities "
                          "(.npy: the probabilities only); - for CSV on stdout")
    app.add_argument("--score-col", action="append", metavar="COL",
                     help="column of scores (default: the only column, or 'score')")
    app.add_argument("--output-col", default="calibrated", metavar="NAME",
                     help="name of the new column (default calibrated; NAME_j per class for temperature, "
                          "vector, bcts, matrix and dirichlet)")
    app.add_argument("--group-col", metavar="COL",
                     help="column of the groups of a model fitted with --group-col (a,b: the same columns as "
                          "the fit's)")
    prior = app.add_mutually_exclusive_group()
    prior.add_argument("--prior-rate", type=float, metavar="R",
                       help="then undo negative undersampling at rate R (fastcal.correct_negative_sampling)")
    prior.add_argument("--priors", nargs=2, metavar=("TRAIN", "NEW"),
                       help="then adapt to new class priors (fastcal.adjust_priors): positive-class priors, "
                            "or comma-separated per-class priors")
    add_spark_options(app)
    common(app)
    app.set_defaults(func=cmd_apply)

    rep = sub.add_parser("report", help="calibration diagnostics and reliability diagram")
    rep.add_argument("input", metavar="INPUT", help="data file (.csv, .parquet, .npy, .npz; - for CSV on stdin)")
    rep.add_argument("-o", "--output", required=True, metavar="REPORT",
                     help="report.png (reliability diagram), report.html (table and diagram) or report.json")
    rep.add_argument("--score-col", required=True, metavar="COL", help="column of predicted probabilities")
    rep.add_argument("--label-col", required=True, metavar="COL", help="column of 0/1 labels")
    rep.add_argument("--weight-col", metavar="COL", help="column of sample weights (default: every row weighs 1)")
    rep.add_argument("--n-bins", type=bins_arg, default=10, metavar="N",
                     help="bins of the reliability curve and of the ECE (default 10)")
    rep.add_argument("--strategy", choices=("uniform", "quantile"), default="uniform",
                     help="bin edges: equal widths on [0, 1] (uniform, the default) or equal counts of "
                          "predictions (quantile)")
    rep.add_argument("--segment-col", metavar="COL",
                     help="also report each value of COL (fastcal.segment_report) and the multicalibration error "
                          "over them (fastcal.multicalibration_error); COL may be several columns, a,b: each tuple "
                          "of values a group, each column a segment feature")
    add_spark_options(rep)
    common(rep, quiet_help="no progress bars and no report table on stdout")
    rep.set_defaults(func=cmd_report)

    pre = sub.add_parser("precompile", help="compile every kernel into the cache (e.g. in a Dockerfile step)",
                         description="Compile every kernel for every dtype into Numba's cache (NUMBA_CACHE_DIR, "
                                     "or __pycache__ next to fastcal's sources), so that new processes load "
                                     "machine code instead of compiling it.")
    pre.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    pre.add_argument("-j", "--jobs", type=jobs_arg, default=1, metavar="N",
                     help="compile in N worker processes (0: one per CPU available; default 1). Each needs up to "
                          "about 2 GiB of memory at once; the cache is the same")
    pre.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # a worker of --jobs
    pre.set_defaults(func=cmd_precompile, timings=False, traceback=False)

    demo = sub.add_parser("demo", help="the fastcal demo (what make demo runs; fastcal demo --help for its options)",
                          add_help=False)
    demo.add_argument("demo_args", nargs=argparse.REMAINDER)
    demo.set_defaults(func=cmd_demo, quiet=False, timings=False, traceback=False)
    return parser


def main(argv=None):
    """Run the ``fastcal`` command line; returns the exit status (0 ok, 1 bad data, 2 bad usage).

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default ``sys.argv[1:]``).

    Returns
    -------
    int
        0 on success, 1 for bad data, 2 for bad usage, 128 + the signal's
        number when stopped by SIGINT (130), SIGTERM (143) or SIGHUP (129):
        then no output is left behind (see :mod:`.signals`). A bad option
        exits through ``SystemExit(2)`` (argparse). Without ``argv`` (the
        ``fastcal`` program), a signal during ``precompile`` ends the process
        at once with that status (see :mod:`.precompile`).
    """
    parser = build_parser()
    program = argv is None
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["demo"]:
        # Everything after "demo" is the demo's own (argparse's REMAINDER does not take options).
        args = argparse.Namespace(command="demo", func=cmd_demo, demo_args=argv[1:], quiet=False, timings=False,
                                  traceback=False)
    else:
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    args.program = program
    progress_enabled = not args.quiet and sys.stderr.isatty()
    timings = {}
    with Signals() as signals:
        try:
            status = _run(args, progress_enabled, timings)
        except BaseException:
            if signals.received is None or signals.committed:
                raise
            status = EXIT_DATA  # an error after the signal: what its exception became (below)
        if signals.received is not None and not signals.committed:
            # the signal's KeyboardInterrupt was swallowed (pyarrow, while it imports pandas) or turned into another
            # error (NumPy's tofile, interrupted, raises a TypeError): the run was interrupted all the same
            status = _interrupted(signals.received)
    return status


def _interrupted(signum):
    sys.stderr.write("\nfastcal: interrupted\n")
    return 128 + signum


def _run(args, progress_enabled, timings):
    try:
        args.func(args, progress_enabled, timings)
    except UsageError as exc:
        _error(exc)
        return EXIT_USAGE
    except DataError as exc:
        _error(exc)
        return EXIT_DATA
    except Interrupted as exc:
        return _interrupted(exc.signum)
    except KeyboardInterrupt:  # raised by a SIGINT handler other than ours (main called from another thread)
        return _interrupted(2)
    except (ValueError, OSError, MemoryError) as exc:
        if args.traceback:
            raise
        _error(f"{type(exc).__name__}: {exc}")
        return EXIT_DATA
    if args.timings and timings:
        total = sum(timings.values())
        parts = ", ".join(f"{k} {v:.3f}s ({100 * v / total:.0f}%)" for k, v in timings.items())
        sys.stderr.write(f"fastcal: timings: {parts}\n")
    return EXIT_OK


def _error(message):
    text = " ".join(str(message).split())  # one line
    sys.stderr.write(f"fastcal: error: {text}\n")

