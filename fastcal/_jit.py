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

Options:

- ``nogil=True``: kernels release the GIL, so threads can run them side by side.
- ``error_model="numpy"``: division by zero gives inf/nan instead of raising,
  which removes a branch from every division in the hot loops.
- ``fastmath``: only the flags that keep IEEE semantics for NaN and infinity
  (never ``nnan`` or ``ninf``), and only where a kernel opts in.
"""

from __future__ import annotations

import numba

__all__ = [
    "FASTMATH",
    "PARALLEL_MIN_SIZE",
    "kernel",
    "parallel_kernel",
    "prange",
]

prange = numba.prange

#: Fast-math flags kernels may opt in to: reassociation and contraction for
#: vectorised reductions; never ``nnan``/``ninf``, which would let LLVM assume
#: that NaN and infinity never occur and silently corrupt results.
FASTMATH = frozenset({"reassoc", "contract", "arcp", "nsz"})

#: Below this many elements the serial variant of a kernel is used: a parallel
#: launch costs tens of microseconds, which a short loop does not win back.
#: Measured with ``python -m benchmarks.threshold``.
PARALLEL_MIN_SIZE = 1 << 15

_OPTIONS = dict(cache=True, nogil=True, error_model="numpy")


def kernel(func=None, *, fastmath=False):
    """Compile ``func`` as a serial fastcal kernel (``@kernel`` or ``@kernel(fastmath=True)``)."""
    options = dict(_OPTIONS, fastmath=set(FASTMATH) if fastmath else False)
    if func is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(func)


def parallel_kernel(func=None, *, fastmath=False):
    """Compile ``func`` as a multi-threaded kernel: its ``prange`` loops run on Numba's thread pool.

    A parallel kernel has a serial twin with the same loop body (``range``
    instead of ``prange``); tests check that both give the same result.
    """
    options = dict(_OPTIONS, parallel=True, fastmath=set(FASTMATH) if fastmath else False)
    if func is None:
        return lambda f: numba.njit(**options)(f)
    return numba.njit(**options)(func)
