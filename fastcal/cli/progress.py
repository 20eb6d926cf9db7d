"""Progress of a command on stderr: a one-line bar, drawn only when stderr is a terminal (and not ``--quiet``)."""

from __future__ import annotations

import sys
import time

from .signals import checkpoint


class Progress:
    """A one-line progress bar on stderr, drawn only when ``enabled`` (stderr is a terminal, not --quiet).

    Parameters
    ----------
    label : str
        What is being done, e.g. ``reading data.csv``.
    total : int, optional
        Units expected; without it the bar shows a count only.
    enabled : bool
        Draw anything at all.
    unit : str
        Name of the units counted.
    """

    def __init__(self, label, total=None, enabled=False, unit="rows"):
        self.label = label
        self.total = total
        self.enabled = enabled
        self.unit = unit
        self.done = 0
        self._last = 0.0
        self._drawn = False
        self._t0 = time.perf_counter()

    def update(self, n):
        """Count ``n`` more units done; redraw at most ten times a second; stop here if the run was interrupted."""
        checkpoint()
        self.done += n
        if self.enabled and time.perf_counter() - self._last > 0.1:
            self._draw()

    def _draw(self):
        self._last = time.perf_counter()
        if self.total:
            frac = min(1.0, self.done / self.total)
            bar = "#" * int(30 * frac)
            text = f"\r{self.label} [{bar:<30}] {100 * frac:5.1f}% {self.done:,}/{self.total:,} {self.unit}"
        else:
            text = f"\r{self.label} {self.done:,} {self.unit}"
        sys.stderr.write(text)
        sys.stderr.flush()
        self._drawn = True

    def status(self, message):
        """A one-off line (a phase without a count, e.g. fitting)."""
        if self.enabled:
            sys.stderr.write(f"{message}\n")
            sys.stderr.flush()

    def close(self):
        """Draw the final state and the elapsed time, and end the line."""
        if self.enabled:
            self._draw()
            sys.stderr.write(f" ({time.perf_counter() - self._t0:.1f}s)\n")
