"""``fastcal report``: calibration diagnostics of a column of probabilities, as .json, .html or .png."""

from __future__ import annotations

import importlib
import io
import json
import math
import os
import time

from .._io import DataError, UsageError, check_output_dir, display_name, new_target, open_input, read_columns
from .checks import check_labels, check_probabilities, check_weights
from . import spark
from .progress import Progress
from .signals import committing


def _png_tag(png_bytes, alt):
    import base64
    import html

    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png_bytes).decode()}">'


def _report_html(report, png_bytes, source, segments_html=""):
    import html

    img = "" if png_bytes is None else _png_tag(png_bytes, "reliability diagram")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fastcal calibration report</title>"
        "<style>body{font-family:sans-serif;margin:2em} pre{font-size:14px} "
        "table{border-collapse:collapse;font-size:13px} td,th{padding:2px 8px;text-align:right} "
        "th{border-bottom:1px solid #888} td:first-child,th:first-child{text-align:left}</style></head><body>\n"
        f"<h1>Calibration report</h1><p>{html.escape(source)}</p>\n<pre>{html.escape(str(report))}</pre>\n"
        f"{img}\n{segments_html}</body></html>\n"
    )


#: Groups of the HTML report's segment section that get a reliability picture of their own (the worst ones).
SEGMENT_PICTURES = 4


def _segments_html(column, segments, mce, pictures):
    """The HTML report's segment section: the multicalibration error, the segment table worst first (every
    column), and ``pictures``, ``(group, png bytes)`` of the worst groups."""
    import html

    worst = segments.worst()
    names = [name for name in segments.to_dict() if name != "groups"]
    head = "".join(f"<th>{html.escape(name)}</th>" for name in ["group", *names])
    rows = []
    for i, g in enumerate(worst.groups):
        cells = "".join(f"<td>{int(getattr(worst, name)[i]) if name == 'n' else f'{getattr(worst, name)[i]:.4g}'}</td>"
                        for name in names)
        rows.append(f"<tr><td>{html.escape(str(g))}</td>{cells}</tr>")
    summary = ", ".join(f"{k} {v:.4g}" for k, v in _mce_summary(mce).items())
    imgs = "".join(_png_tag(png, f"reliability diagram of {column} = {g}") for g, png in pictures)
    return (f"<h2>By {html.escape(column)}</h2>\n<p>Multicalibration error over {html.escape(column)}: "
            f"{html.escape(summary)}</p>\n<p>Groups worst first (by ecce_sigma):</p>\n"
            f"<table><tr>{head}</tr>\n" + "\n".join(rows) + "</table>\n"
            + (f"<h3>The {len(pictures)} worst groups</h3>\n<div>{imgs}</div>\n" if pictures else ""))


def _segment_pngs(y, p, w, groups, segments, n_bins, strategy):
    """Small reliability diagrams of the :data:`SEGMENT_PICTURES` worst groups (NaN ``ecce_sigma`` left out):
    ``(group, png bytes)``."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..multicalibration import group_codes
    from ..plot import reliability_diagram

    codes, _ = group_codes(groups, "groups")  # numbered in the order of segments.groups
    place = {id(g): k for k, g in enumerate(segments.groups)}
    worst = segments.worst(SEGMENT_PICTURES)
    out = []
    for g, sigma in zip(worst.groups, worst.ecce_sigma):
        if not np.isfinite(sigma):
            continue
        rows = codes == place[id(g)]
        fig, _ = reliability_diagram(y[rows], p[rows], n_bins=n_bins, strategy=strategy,
                                     sample_weight=None if w is None else w[rows], figsize=(3.6, 4.2),
                                     title=f"{g} (ecce_sigma {sigma:.3g})")
        buf = io.BytesIO()
        try:
            fig.savefig(buf, format="png", dpi=80)
        finally:
            plt.close(fig)
        out.append((g, buf.getvalue()))
    return out


#: Rows times resamples of the report's CORP consistency band (about a second of work).
_BAND_BUDGET = 10**8


def _corp(y, p, w):
    """The CORP curve with a 90% consistency band of at most 200 resamples, fewer on big data."""
    import fastcal

    n_resamples = min(200, _BAND_BUDGET // max(1, p.shape[0]))
    return fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=n_resamples, random_state=0)


def _reliability_png(y, p, w, n_bins, strategy, report, corp):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..plot import reliability_diagram

    fig, (ax, _) = reliability_diagram(y, p, n_bins=n_bins, strategy=strategy, sample_weight=w)
    if corp.lower is not None:
        ax.fill_between(corp.x, corp.lower, corp.upper, color="C1", alpha=0.2, linewidth=0,
                        label=f"{corp.level:.0%} consistency band ({corp.n_resamples} resamples)")
    ax.plot(corp.x, corp.y, color="C1", linewidth=1.5,
            label=f"CORP (Brier MCB {report.brier_miscalibration:.4f}, DSC {report.brier_discrimination:.4f}, "
                  f"UNC {report.uncertainty:.4f})")
    ax.legend(loc="upper left", fontsize="small")
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=100)
    finally:
        plt.close(fig)
    return buf.getvalue()


def json_ready(value):
    """``value`` with non-finite floats as None (JSON has no NaN), through dicts, lists and tuples."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def _json_key(value):
    """A group as JSON holds it: strings, numbers, booleans and null as they are, anything else as its str."""
    return value if value is None or isinstance(value, (str, bool, int, float)) else str(value)


def segment_document(column, segments, mce):
    """The JSON report's segment entries: ``segment_col``, ``segments`` (the table) and ``multicalibration``."""
    return {"segment_col": column,
            "segments": json_ready({**segments.to_dict(), "groups": [_json_key(g) for g in segments.groups]}),
            "multicalibration": json_ready(_mce_summary(mce))}


def print_segments(column, segments, mce):
    """The segment table and multicalibration error that ``fastcal report --segment-col`` prints."""
    print(f"\nBy {column}:\n{segments}")
    print(f"\nmulticalibration error over {column}: " + ", ".join(f"{k} {v:.4g}" for k, v in _mce_summary(mce).items()))


def _mce_summary(mce):
    names = ("mce", "mce_sigma", "mce_pvalue", "mce_relative", "mde", "global_ecce", "global_ecce_sigma",
             "global_ecce_pvalue")
    return {name: getattr(mce, name) for name in names}


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
                print_segments(args.segment_col, segments, mce)
        return
    reader = open_input(args.input, args.batch_rows)
    numeric = [args.score_col, args.label_col] + ([args.weight_col] if args.weight_col else [])
    cols = numeric + ([args.segment_col] if args.segment_col else [])
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
        if args.segment_col:
            groups = reader.group_column(data[args.segment_col])
            segments = fastcal.segment_report(y, p, groups, sample_weight=w, n_bins=args.n_bins)
            mce = fastcal.multicalibration_error(y, p, {args.segment_col: groups}, sample_weight=w,
                                                 max_values_per_segment_feature=max(2, len(segments.groups)))
    except ValueError as exc:
        raise DataError(f"{path}: {exc}") from None
    timings["compute"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    target = new_target(args.output, kind)
    try:
        if kind == ".json":
            doc = {"input": path, "score_col": args.score_col, "label_col": args.label_col,
                   "report": json_ready(report.to_dict()), "corp": json_ready(corp.to_dict())}
            if segments is not None:
                doc.update(segment_document(args.segment_col, segments, mce))
            with open(target.tmp, "w", encoding="utf-8") as f:
                json.dump(doc, f, indent=1, allow_nan=False)
        else:
            png = None
            try:
                png = _reliability_png(y, p, w, args.n_bins, args.strategy, report, corp)
            except ImportError:
                if kind == ".png":
                    raise
            if kind == ".png":
                with open(target.tmp, "wb") as f:
                    f.write(png)
            else:
                section = ""
                if segments is not None:
                    pictures = []
                    try:
                        pictures = _segment_pngs(y, p, w, groups, segments, args.n_bins, args.strategy)
                    except ImportError:  # no matplotlib: the section without pictures
                        pass
                    section = _segments_html(args.segment_col, segments, mce, pictures)
                with open(target.tmp, "w", encoding="utf-8") as f:
                    f.write(_report_html(report, png, f"{path}: {args.score_col} against {args.label_col}", section))
        with committing():
            target.commit()
    except BaseException:
        target.abort()
        raise
    timings["write"] = time.perf_counter() - t0
    if not args.quiet:
        print(report)
        if segments is not None:
            print_segments(args.segment_col, segments, mce)
