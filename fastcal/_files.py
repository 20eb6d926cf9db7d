"""Writing files atomically: to a temporary name next to the target, then renaming.

A failure, or a process killed mid-write, leaves no partial file behind: the
target either keeps its old content or gets the complete new one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

__all__ = ["AtomicTarget"]


def _default_permissions(path):
    """Give ``path`` the permissions of a newly created file (``mkstemp`` creates them private)."""
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(path, 0o666 & ~mask)


class AtomicTarget:
    """A temporary path ``tmp`` next to ``path``; :meth:`commit` renames it over ``path``, :meth:`abort` removes it.

    Raises ``FileNotFoundError`` if the target's directory does not exist.
    """

    def __init__(self, path, suffix=""):
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"{path}: directory {directory} does not exist")
        fd, self.tmp = tempfile.mkstemp(dir=directory, prefix=".fastcal-", suffix=suffix + ".tmp")
        os.close(fd)
        self.path = path

    def commit(self):
        _default_permissions(self.tmp)
        os.replace(self.tmp, self.path)

    def abort(self):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)
