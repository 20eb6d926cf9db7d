"""``fastcal report``: calibration diagnostics of a column of probabilities, as .json, .html or .png.

The numbers are computed here (in memory) or by :func:`.spark.report` (``--spark``); the files are written
from them by :mod:`.documents`, the same for both.
"""

from __future__ import annotations

import importlib
import os
import time

from .._io import DataError, UsageError, check_output_dir, display_name, open_input, read_columns
from . import documents, spark
from .checks import check_labels, check_probabilities, check_weights
from .options import group_columns_arg, group_values
from .progress import Progress


def _corp(y, p, w):
    """The CORP curve with a 90% consistency band of :func:`.documents.band_resamples` resamples."""
    import fastcal

    return fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=documents.band_resamples(p.shape[0]),
                                    random_state=0)


def _group_reports(y, p, w, groups, segments, n_bins, strategy, path):
    """``report_of(group)`` of :func:`.documents.segment_pictures`: :func:`fastcal.calibration_report` of the rows
    of a group of ``segments`` (``groups`` the column, numbered as :func:`fastcal.segment_report` numbers it)."""
    import fastcal

    from .._coding import as_groups, group_codes

    codes, _ = group_codes(as_groups(groups, "groups"), "groups")  # numbered in the order of segments.groups
    place = {id(g): k for k, g in enumerate(segments.groups)}

    def report_of(group):
        rows = codes == place[id(group)]
        try:
            return fastcal.calibration_report(y[rows], p[rows], sample_weight=None if w is None else w[rows],
                                              n_bins=n_bins, strategy=strategy, slope=False)
        except ValueError as exc:
            raise DataError(f"{path}: {exc}") from None

    return report_of


def cmd_report(args, progress_enabled, timings):
    """Write the report on ``args.input`` and print its table (a command: see :func:`fastcal.cli.main`)."""
    import fastcal

    kind = os.path.splitext(args.output)[1].lower()
    if kind not in (".png", ".html", ".json"):
        raise UsageError(f"{args.output}: the report must be .png, .html or .json")
    if kind in (".png",):
        try:
            importlib.import_module("matplotlib")
        except ImportError:
            raise UsageError('a .png report needs matplotlib; install it with pip install "fastcal[plot]"') from None
    check_output_dir(args.output)
    spark.check_options(args, {})
    if args.spark:
        report, segments, mce = spark.report(args, timings)
        if not args.quiet:
            print(report)
            if segments is not None:
                documents.print_segments(args.segment_col, segments, mce)
        return
    reader = open_input(args.input, args.batch_rows)
    numeric = [args.score_col, args.label_col] + ([args.weight_col] if args.weight_col else [])
    segment_cols = group_columns_arg(args.segment_col, reader.names, "--segment-col")
    cols = numeric + segment_cols
    reader.require(cols)
    path = display_name(args.input)
    t0 = time.perf_counter()
    data = read_columns(reader, cols, numeric, Progress(f"reading {path}", reader.n_rows, progress_enabled))
    timings["read"] = time.perf_counter() - t0
    p, y = data[args.score_col], data[args.label_col]
    if not len(y):
        raise DataError(f"{path}: no rows of data")
    check_probabilities(p, path, args.score_col)
    check_labels(y, path, args.label_col, "binary")
    w = data[args.weight_col] if args.weight_col else None
    if w is not None:
        check_weights(w, path, args.weight_col)
    t0 = time.perf_counter()
    try:
        report = fastcal.calibration_report(y, p, sample_weight=w, n_bins=args.n_bins, strategy=args.strategy)
        corp = _corp(y, p, w)
        segments = mce = None
        if segment_cols:
            groups = group_values(reader, data, segment_cols)
            segments = fastcal.segment_report(y, p, groups, sample_weight=w, n_bins=args.n_bins)
            # each column its own segment feature, none of its values collapsed (a column has at most as many
            # values as there are groups)
            features = dict(zip(segment_cols, groups)) if len(segment_cols) > 1 else {segment_cols[0]: groups}
            mce = fastcal.multicalibration_error(y, p, features, sample_weight=w,
                                                 max_values_per_segment_feature=max(2, len(segments.groups)))
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    timings["compute"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    doc = {"input": path, "score_col": args.score_col, "label_col": args.label_col,
           "report": documents.json_ready(report.to_dict()), "corp": documents.json_ready(corp.to_dict())}
    report_of = None
    if segments is not None:
        doc.update(documents.segment_document(args.segment_col, segments, mce))
        report_of = _group_reports(y, p, w, groups, segments, args.n_bins, args.strategy, path)
    content = documents.render(kind, doc, report, corp, f"{path}: {args.score_col} against {args.label_col}",
                               args.segment_col, segments, mce, report_of)
    documents.write(args.output, kind, content)
    timings["write"] = time.perf_counter() - t0
    if not args.quiet:
        print(report)
        if segments is not None:
            documents.print_segments(args.segment_col, segments, mce)
