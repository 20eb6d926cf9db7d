"""The command line's option values: argparse types (a bad value: usage error, exit status 2) and list options."""

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


def positive_int(text):
    """An integer >= 1 (``--batch-rows``, ``--max-iter``)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


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
