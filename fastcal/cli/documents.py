"""The files of ``fastcal report``, with and without ``--spark``: .json, .html and .png, from the report's numbers.

Both paths compute the same numbers (:func:`fastcal.calibration_report`,
:func:`fastcal.corp_reliability`, :func:`fastcal.segment_report`,
:func:`fastcal.multicalibration_error`, or their :mod:`fastcal.spark`
twins) and hand them here; every picture is drawn from those numbers by
:func:`fastcal.plot.report_diagram`, never from the rows. A worst group's
picture is drawn from the report of that group's rows, which the caller
computes (``report_of``), in memory or on Spark. This module imports
neither :mod:`.report` nor :mod:`.spark`, which both use it.
"""

from __future__ import annotations

import io
import json
import math

from .._io import new_target
from .signals import committing

#: Groups of the HTML report's segment section that get a reliability picture of their own (the worst ones).
SEGMENT_PICTURES = 4

#: Rows times resamples of the report's CORP consistency band (about a second of work in memory).
BAND_BUDGET = 10**8


def band_resamples(n):
    """Resamples of the report's 90% CORP consistency band over ``n`` rows: 200, fewer on big data."""
    return min(200, BAND_BUDGET // max(1, n))


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
    """A group as JSON holds it: strings, numbers, booleans and null as they are, a tuple (a group of several
    columns) as a list of them, anything else as its str."""
    if isinstance(value, tuple):
        return [_json_key(v) for v in value]
    return value if value is None or isinstance(value, (str, bool, int, float)) else str(value)


def mce_summary(mce):
    """The multicalibration error's numbers that the report shows, by name."""
    names = ("mce", "mce_sigma", "mce_pvalue", "mce_relative", "mde", "global_ecce", "global_ecce_sigma",
             "global_ecce_pvalue")
    return {name: getattr(mce, name) for name in names}


def segment_document(column, segments, mce):
    """The JSON report's segment entries: ``segment_col``, ``segments`` (the table) and ``multicalibration``."""
    return {"segment_col": column,
            "segments": json_ready({**segments.to_dict(), "groups": [_json_key(g) for g in segments.groups]}),
            "multicalibration": json_ready(mce_summary(mce))}


def print_segments(column, segments, mce):
    """The segment table and multicalibration error that ``fastcal report --segment-col`` prints."""
    print(f"\nBy {column}:\n{segments}")
    print(f"\nmulticalibration error over {column}: " + ", ".join(f"{k} {v:.4g}" for k, v in mce_summary(mce).items()))


def png_tag(png_bytes, alt):
    """An ``<img>`` tag holding ``png_bytes`` (base64), with the text ``alt``."""
    import base64
    import html

    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png_bytes).decode()}">'


def report_html(report, png_bytes, source, segments_html=""):
    """The HTML report: ``source``, the report's table, its picture (``png_bytes``, None for none), a ``note``
    and the segment section ``segments_html``."""
    import html

    img = "" if png_bytes is None else png_tag(png_bytes, "reliability diagram")
    return (
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>fastcal calibration report</title>"
        "<style>body{font-family:sans-serif;margin:2em} pre{font-size:14px} "
        "table{border-collapse:collapse;font-size:13px} td,th{padding:2px 8px;text-align:right} "
        "th{border-bottom:1px solid #888} td:first-child,th:first-child{text-align:left}</style></head><body>\n"
        f"<h1>Calibration report</h1><p>{html.escape(source)}</p>\n<pre>{html.escape(str(report))}</pre>\n"
        f"{img}\n{segments_html}</body></html>\n"
    )


def segments_html(column, segments, mce, pictures):
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
    summary = ", ".join(f"{k} {v:.4g}" for k, v in mce_summary(mce).items())
    imgs = "".join(png_tag(png, f"reliability diagram of {column} = {g}") for g, png in pictures)
    return (f"<h2>By {html.escape(column)}</h2>\n<p>Multicalibration error over {html.escape(column)}: "
            f"{html.escape(summary)}</p>\n<p>Groups worst first (by ecce_sigma):</p>\n"
            f"<table><tr>{head}</tr>\n" + "\n".join(rows) + "</table>\n"
            + (f"<h3>The {len(pictures)} worst groups</h3>\n<div>{imgs}</div>\n" if pictures else ""))


def report_png(report, corp=None, *, title=None, figsize=(6.0, 7.0), dpi=100):
    """The PNG bytes of :func:`fastcal.plot.report_diagram` of ``report`` and ``corp``, drawn on a
    ``matplotlib.figure.Figure`` of its own (no pyplot, no backend chosen: the host's matplotlib state is left
    as it is); ImportError without matplotlib."""
    from matplotlib.figure import Figure

    from ..plot import PANELS, report_diagram

    fig = Figure(figsize=figsize)
    ax, hist_ax = fig.subplots(2, 1, sharex=True, gridspec_kw=PANELS)
    report_diagram(report, corp, ax=ax, hist_ax=hist_ax, title=title)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight")
    return buf.getvalue()


def segment_pictures(segments, report_of):
    """Small reliability diagrams of the :data:`SEGMENT_PICTURES` worst groups of ``segments`` (NaN
    ``ecce_sigma`` left out): ``(group, png bytes)``, each drawn from ``report_of(group)``, the
    :class:`fastcal.metrics.CalibrationReport` of that group's rows, made without the calibration slope (which
    the picture does not draw: ``slope=False``, so no warning about a slope that does not exist in a small
    group). ImportError without matplotlib, before any report is computed."""
    import matplotlib  # noqa: F401 - ImportError before any report is computed
    import numpy as np

    worst = segments.worst(SEGMENT_PICTURES)
    out = []
    for g, sigma in zip(worst.groups, worst.ecce_sigma):
        if not np.isfinite(sigma):
            continue
        report = report_of(g)
        out.append((g, report_png(report, title=f"{g} (ecce_sigma {sigma:.3g})", figsize=(3.6, 4.2), dpi=80)))
    return out


def render(kind, doc, report, corp, source, segment_col=None, segments=None, mce=None, report_of=None):
    """The bytes of the report file of extension ``kind``: ``.json`` the document ``doc``; ``.png`` the picture
    of ``report`` and ``corp`` (:func:`report_png`); ``.html`` the page of :func:`report_html`, with
    ``segment_col``'s section when ``segments`` is given (the pictures of the worst groups from ``report_of``,
    see :func:`segment_pictures`). Without matplotlib the page has no pictures, and a ``.png`` raises
    ImportError."""
    if kind == ".json":
        return json.dumps(doc, indent=1, allow_nan=False).encode("utf-8")
    if kind == ".png":
        return report_png(report, corp)
    try:
        png = report_png(report, corp)
    except ImportError:
        png = None
    section = ""
    if segments is not None:
        try:
            pictures = segment_pictures(segments, report_of)
        except ImportError:  # no matplotlib: the section without pictures
            pictures = []
        section = segments_html(segment_col, segments, mce, pictures)
    return report_html(report, png, source, section).encode("utf-8")


def write(output, kind, content):
    """Write ``content`` (bytes) to ``output`` through a temporary file in its directory, renamed when complete."""
    target = new_target(output, kind)
    try:
        with open(target.tmp, "wb") as f:
            f.write(content)
        with committing():
            target.commit()
    except BaseException:
        target.abort()
        raise
