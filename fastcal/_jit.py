"""Every Numba option fastcal uses, in one place.

Kernels are compiled lazily, on first use, for the dtypes the public wrappers
hand them (float32 and float64 data, int64 indices; labels of a few integer
dtypes). ``cache=True`` writes the machine code next to the sources (or to
``NUMBA_CACHE_DIR``), so only the first process on a machine pays for
compilation; later processes load it in milliseconds.

Kernels call only helpers of their own module: Numba decides whether a
cached function is stale from its own source file alone, so machine code that
inlined a helper from another file would survive an edit of that file.

Why not eager, explicit signatures? Numba compiles every listed signature when
the module is imported, so ``import fastcal`` would cost the compile time of
every kernel of every subject, even for a user who needs one. The wrappers are
the only callers of the kernels and fix their argument types, so lazy
dispatch compiles exactly the variants that a program uses.

Kernels are serial. Parallelism comes from :mod:`fastcal._parallel`, which
runs a kernel on ranges of its input from fastcal's own threads; Numba's
``parallel=True`` and its process-wide threading layer are never used (see
that module for why).

Where no cache can be written (a read-only install with an unwritable home
and no ``NUMBA_CACHE_DIR``), Numba refuses ``cache=True`` when the kernel is
defined. :func:`kernel` then compiles in memory instead, and
:class:`NoCacheWarning` says so once per process.

Options:

- ``nogil=True``: kernels release the GIL, so threads can run them side by side.
- ``error_model="numpy"``: division by zero gives inf/nan instead of raising,
  which removes a branch from every division in the hot loops.
- ``fastmath``: only the flags that keep IEEE semantics for NaN and infinity
  (never ``nnan`` or ``ninf``), and only where a kernel opts in.
"""

from __future__ import annotations

import warnings

import numba

__all__ = [
    "FASTMATH",
    "NoCacheWarning",
    "kernel",
]

#: Fast-math flags kernels may opt in to: reassociation and contraction for
#: vectorised reductions; never ``nnan``/``ninf``, which would let LLVM assume
#: that NaN and infinity never occur and silently corrupt results.
FASTMATH = frozenset({"reassoc", "contract", "arcp", "nsz"})

_OPTIONS = dict(nogil=True, error_model="numpy")


class NoCacheWarning(UserWarning):
    """fastcal found nowhere to cache compiled code, and compiles in memory in every process."""


_warned_no_cache = False


def _compile(func, fastmath):
    global _warned_no_cache
    options = dict(_OPTIONS, fastmath=set(FASTMATH) if fastmath else False)
    try:
        return numba.njit(cache=True, **options)(func)
    except RuntimeError as exc:
        if "no locator available" not in str(exc):
            raise
    if not _warned_no_cache:
        _warned_no_cache = True
        warnings.warn(
            "fastcal cannot cache its compiled kernels: neither its install folder nor the user's "
            "cache folder is writable. Each new process compiles them again (seconds on first use). "
            "Set NUMBA_CACHE_DIR to a writable folder to avoid this.",
            NoCacheWarning,
            stacklevel=4,
        )
    return numba.njit(cache=False, **options)(func)


def kernel(func=None, *, fastmath=False):
    """Compile ``func`` as a fastcal kernel (``@kernel`` or ``@kernel(fastmath=True)``): serial, ``nogil``, cached."""
    if func is None:
        return lambda f: _compile(f, fastmath)
    return _compile(func, fastmath)
