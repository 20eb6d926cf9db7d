"""Writing files atomically: to a temporary name next to the target, then renaming.

A failure, or a process killed mid-write, leaves no partial file behind: the
target either keeps its old content or gets the complete new one.
"""

from __future__ import annotations

import contextlib
import os
import secrets

__all__ = ["AtomicTarget"]


def _create_unique(directory, prefix, suffix):
    """Create a new empty file ``directory/prefix<random>suffix``; return its path.

    Created with mode ``0o666`` less the process umask, as ``open(path, "w")``
    would, so the final file has the permissions the user expects, without
    reading or changing the umask (process-wide state other threads rely on).
    """
    flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(directory, f"{prefix}{secrets.token_hex(6)}{suffix}")
        try:
            fd = os.open(path, flags, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return path
    raise FileExistsError(f"no unused temporary name in {directory}")


class AtomicTarget:
    """A temporary path ``tmp`` next to ``path``; :meth:`commit` renames it over ``path``, :meth:`abort` removes it.

    Parameters
    ----------
    path : str or os.PathLike
        The file to write in the end.
    suffix : str, optional
        Ending of the temporary file's name (before ``.tmp``), e.g. ``".csv"``.

    Attributes
    ----------
    tmp : str
        The temporary file, created empty (``O_EXCL``, mode ``0o666`` less the
        umask) in the target's directory: write the content there.
    path : str or os.PathLike
        The target.

    Raises
    ------
    FileNotFoundError
        If the target's directory does not exist.
    """

    def __init__(self, path, suffix=""):
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise FileNotFoundError(f"{path}: directory {directory} does not exist")
        self.tmp = _create_unique(directory, ".fastcal-", suffix + ".tmp")
        self.path = path

    def commit(self):
        """Rename the complete temporary file over the target (atomically, on one file system)."""
        os.replace(self.tmp, self.path)

    def abort(self):
        """Remove the temporary file, if it is still there; the target is left as it was."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)
