"""SIGINT, SIGTERM and SIGHUP during a command: clean up, leave no output, exit with 128 + the signal's number.

:class:`Signals` installs the handlers for the duration of
:func:`fastcal.cli.main` only (never on ``import fastcal``) and restores the
previous ones afterwards; a signal that was ignored when ``main`` started (as
``nohup`` ignores SIGHUP) stays ignored. The first signal raises
:class:`Interrupted` (a ``KeyboardInterrupt``) in the main thread, so the
``finally`` blocks of the command remove temporary outputs and partition
files; later ones are only recorded, so that the clean-up itself is not cut
short.

A ``KeyboardInterrupt`` can be lost: pyarrow swallows one raised while it
imports pandas lazily (on the first conversion of an array). The signal is
recorded before anything is raised, and :func:`checkpoint` (called after
every batch, by :class:`~fastcal.cli.progress.Progress`) and :func:`committing`
(around the rename of each output) raise it again, so an interrupted run
never writes its output.
"""

from __future__ import annotations

import contextlib
import signal
import threading

__all__ = ["Interrupted", "Signals", "checkpoint", "committing"]

_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))

_active = []  # the Signals of the running main() calls (one, unless main is called inside a command)


class Interrupted(KeyboardInterrupt):
    """The command was stopped by signal ``signum``."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


class Signals:
    """Context manager: the handlers of SIGINT, SIGTERM and SIGHUP while a command runs.

    Attributes
    ----------
    received : int or None
        The first signal received.
    committed : bool
        Whether the command's output was renamed into place (by
        :func:`committing`); a signal after that is only recorded.
    """

    def __init__(self):
        self.received = None
        self.committed = False  # an output was renamed into place: the run is complete
        self._saved = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in _SIGNALS:
                previous = signal.getsignal(signum)
                if previous is signal.SIG_IGN:
                    continue  # ignored by whoever started us (nohup): keep it so
                signal.signal(signum, self._handle)
                self._saved[signum] = previous
        _active.append(self)
        return self

    def __exit__(self, *exc):
        _active.remove(self)
        for signum, previous in self._saved.items():
            signal.signal(signum, previous if previous is not None else signal.SIG_DFL)
        return False

    def _handle(self, signum, frame):
        if self.received is None:
            self.received = signum
            if not self.committed:
                raise Interrupted(signum)

    def check(self):
        """Raise :class:`Interrupted` if a signal was received (its exception may have been swallowed)."""
        if self.received is not None:
            raise Interrupted(self.received)


def checkpoint():
    """Raise :class:`Interrupted` if the running command received a signal."""
    for s in _active:
        s.check()


@contextlib.contextmanager
def committing():
    """Around the rename of an output: the signals are held back, and one already received stops the rename."""
    blocked = bool(_active) and threading.current_thread() is threading.main_thread()
    if blocked:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        checkpoint()
        yield
        for s in _active:
            s.committed = True
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)
