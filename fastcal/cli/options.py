"""The command line's option values: argparse types (a bad value: usage error, exit status 2), list options and
the columns of groups."""

from __future__ import annotations

import argparse
import math

from .._binning import MAX_BINS
from .._io import UsageError


def columns_arg(values):
    """``--score-col a --score-col b`` or ``--score-col a,b`` -> ["a", "b"]."""
    out = []
    for v in values or []:
        out.extend(p for p in v.split(",") if p)
    return out


def group_columns_arg(text, names, option):
    """The columns of ``--group-col`` / ``--segment-col`` (``option``) among a file's column ``names``: ``text``
    itself when it is a column (a name with commas), else its comma-separated names (``a,b``: a row's group is
    the tuple of its values in a and b). ``[]`` for None; :class:`UsageError` for an empty or repeated name (a
    missing one is named by the reader's ``require``)."""
    if text is None:
        return []
    if text in names:
        return [text]
    cols = text.split(",")
    if any(not c for c in cols):
        raise UsageError(f"{option} {text!r}: an empty column name (give the columns as a,b)")
    if len(set(cols)) != len(cols):
        raise UsageError(f"{option} {text!r}: a column named twice")
    return cols


def group_values(reader, data, names):
    """The groups of the columns ``names`` of ``data`` (read whole by ``reader``), each typed by
    :meth:`~fastcal._io.Reader.group_column`: the column for one name, a list of columns for several (a row's
    group is then the tuple of its values, as :class:`fastcal.GroupedCalibrator` takes it)."""
    columns = [reader.group_column(data[name]) for name in names]
    return columns[0] if len(columns) == 1 else columns


def bool_arg(text):
    """``--increasing``: True (true, yes, 1, increasing), False (false, no, 0, decreasing) or "auto"."""
    low = text.lower()
    if low in ("true", "yes", "1", "increasing"):
        return True
    if low in ("false", "no", "0", "decreasing"):
        return False
    if low == "auto":
        return "auto"
    raise argparse.ArgumentTypeError(f"expected true, false or auto, got {text!r}")


def _int_at_least(text, least, what):
    """``text`` as an integer >= ``least``; an argparse error naming ``what`` otherwise."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < least:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    return value


def jobs_arg(text):
    """An integer >= 0 (``precompile --jobs``: 0 for one per CPU available)."""
    return _int_at_least(text, 0, "a number of processes (0 or more)")


def positive_int(text):
    """An integer >= 1 (``--batch-rows``, ``--max-iter``)."""
    return _int_at_least(text, 1, "a positive integer")


def nonnegative_float(text):
    """A finite number >= 0 (``--reg-lambda``, ``--reg-mu``)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number (0 or more), got {text!r}")
    return value


def count_arg(text):
    """An integer >= 0 (``--min-samples-per-segment``)."""
    return _int_at_least(text, 0, "an integer (0 or more)")


def count_or_none_arg(text, least=0):
    """An integer >= ``least``, or ``none`` (None: no limit; ``--max-depth``, ``--max-n-segments``)."""
    if text.strip().lower() == "none":
        return NO_LIMIT
    return _int_at_least(text, least, f"an integer ({least} or more) or none")


def folds_arg(text):
    """An integer from 2 to 255 (``--n-folds``: a row's fold is a uint8)."""
    value = _int_at_least(text, 2, "an integer from 2 to 255")
    if value > 255:
        raise argparse.ArgumentTypeError(f"expected an integer from 2 to 255, got {text!r}")
    return value


def limit_arg(text):
    """An integer >= 1, or ``none`` (``--max-n-segments``)."""
    return count_or_none_arg(text, 1)


#: What ``none`` parses to (argparse's own None means "not given": the estimator's default).
NO_LIMIT = "none"


def bins_arg(text):
    """``--n-bins``: an integer from 1 to the library's most bins, checked before any data is read."""
    value = positive_int(text)
    if value > MAX_BINS:
        raise argparse.ArgumentTypeError(f"expected at most {MAX_BINS} bins, got {text!r}")
    return value


def memory_arg(text):
    """``--memory-budget``: bytes, from a size such as ``512M`` or ``2G`` (k, m, g, t; a final b allowed), >= 1M."""
    units = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().rstrip("b")
    unit = t[-1] if t and t[-1] in "kmgt" else ""
    try:
        value = float(t[: len(t) - len(unit)]) * units[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a size such as 512M or 2G, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite size such as 512M or 2G, got {text!r}")
    if value < 1 << 20:
        raise argparse.ArgumentTypeError(f"the memory budget must be at least 1M, got {text!r}")
    return int(value)


def parse_priors(values):
    """``--priors TRAIN NEW``: each a number (positive-class prior) or a comma-separated list (per class)."""
    out = []
    for v in values:
        parts = [p for p in v.split(",") if p]
        try:
            nums = [float(p) for p in parts]
        except ValueError:
            raise UsageError(f"--priors: {v!r} is not a number or a comma-separated list of numbers") from None
        out.append(nums[0] if len(nums) == 1 else nums)
    return out
