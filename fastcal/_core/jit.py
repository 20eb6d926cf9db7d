"""Every Numba option fastcal uses, in one place.

Kernels are compiled lazily, on first use, for the dtypes the public wrappers
hand them (float32 and float64 data, int64 indices; labels of a few integer
dtypes). ``cache=True`` writes the machine code next to the sources (or to
``NUMBA_CACHE_DIR``), so only the first process on a machine pays for
compilation; later processes load it in milliseconds.

Cache keys cover the helpers a kernel inlines. Numba decides whether a
cached function is stale from its own source file alone (a hash of its text,
and the function's bytecode), so machine code that inlined a helper from
another file would survive an edit of that file. :func:`kernel` therefore
installs its own cache (:class:`_KernelCache`, Numba's ``FunctionCache`` with
a wrapped locator) whose source stamp is the pair (Numba's stamp of the
kernel's file, the hashes of the fastcal modules that file depends on). Those
are found in the kernel module's namespace when the kernel is defined: every
fastcal module, function or dispatcher it imported, and, in turn, what those
modules import (:func:`dependencies`). So a kernel may call the shared helpers
of :mod:`fastcal._core.math_kernels`; this module is always among the dependencies
(through ``kernel`` itself), which also makes an edit of the options below
invalidate every cache. Two rules keep the dependencies complete: import at
the top of the module (before the first ``@kernel``), and never import a bare
constant from another module for a kernel (Numba freezes it into the machine
code; ``tests/test_jit_cache.py`` checks, from the import statements, that
every fastcal module a kernel module imports is among its dependencies).

Why not eager, explicit signatures? Numba compiles every listed signature when
the module is imported, so ``import fastcal`` would cost the compile time of
every kernel of every subject, even for a user who needs one. The wrappers are
the only callers of the kernels and fix their argument types, so lazy
dispatch compiles exactly the variants that a program uses.

Kernels are serial. Parallelism comes from :mod:`fastcal._core.parallel`, which
runs a kernel on ranges of its input from fastcal's own threads; Numba's
``parallel=True`` and its process-wide threading layer are never used (see
that module for why).

Where no cache can be written (a read-only install with an unwritable home
and no ``NUMBA_CACHE_DIR``), Numba refuses ``cache=True`` when the kernel is
defined. :func:`kernel` then compiles in memory instead, and
:class:`NoCacheWarning` says so once per process. A ``NUMBA_CACHE_DIR`` that
is set but unusable (not a folder, not writable) is passed over by Numba in
silence, for the folder of the sources or the user's cache folder:
:class:`NoCacheWarning` says that too, once, with where the cache went
(:func:`cache_dir_problem`; ``fastcal precompile`` refuses to run then).

Options:

- ``nogil=True``: kernels release the GIL, so threads can run them side by side.
- ``error_model="numpy"``: division by zero gives inf/nan instead of raising,
  which removes a branch from every division in the hot loops.
- ``fastmath``: only the flags that keep IEEE semantics for NaN and infinity
  (never ``nnan`` or ``ninf``), and only where a kernel opts in.
- ``contract``: only fused multiply-add (one rounding for ``a * b + c``
  instead of two; the operations and their order are kept), for polynomial
  evaluations that must keep their order: one instruction per Horner step
  instead of two.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import tempfile
import types
import warnings

try:
    import fcntl
except ImportError:  # not POSIX: Numba's saves, unlocked
    fcntl = None

import numba
from numba.core.caching import CompileResultCacheImpl, FunctionCache, _CacheLocator
from numba.core.dispatcher import Dispatcher

__all__ = [
    "CONTRACT",
    "FASTMATH",
    "NoCacheWarning",
    "cache_dependencies",
    "cache_dir_problem",
    "dependencies",
    "kernel",
]

#: Fast-math flags kernels may opt in to: reassociation and contraction for
#: vectorised reductions; never ``nnan``/``ninf``, which would let LLVM assume
#: that NaN and infinity never occur and silently corrupt results.
FASTMATH = frozenset({"reassoc", "contract", "arcp", "nsz"})

#: The one flag of ``@kernel(contract=True)``: ``a * b + c`` may become a fused
#: multiply-add (exact product, one rounding), nothing else.
CONTRACT = frozenset({"contract"})

_OPTIONS = dict(nogil=True, error_model="numpy")


class NoCacheWarning(UserWarning):
    """fastcal found nowhere to cache compiled code, and compiles in memory in every process; or
    ``NUMBA_CACHE_DIR`` is unusable, and the cache is elsewhere."""


_warned_no_cache = False


_PACKAGE = __name__.split(".")[0]


def _fastcal_module(obj):
    """The name of the fastcal module that defines ``obj`` (a module, function or dispatcher), or None."""
    if isinstance(obj, types.ModuleType):
        name = obj.__name__
    elif isinstance(obj, types.FunctionType):
        name = obj.__module__
    elif isinstance(getattr(obj, "py_func", None), types.FunctionType):  # a Numba dispatcher
        name = obj.py_func.__module__
    else:
        return None
    return name if isinstance(name, str) and name.startswith(_PACKAGE + ".") else None


def _imported(namespace, own):
    """The (loaded) fastcal modules other than ``own`` that the module namespace ``namespace`` refers to."""
    found = {_fastcal_module(obj) for obj in list(namespace.values())}
    return {name for name in found if name is not None and name != own and name in sys.modules}


@functools.cache
def _closure(module):
    """``module`` and every fastcal module it depends on, transitively (a complete module: memoised)."""
    seen = {module}
    todo = [module]
    while todo:
        for dep in _imported(vars(sys.modules[todo.pop()]), None):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return frozenset(seen)


def dependencies(func):
    """The fastcal modules, other than its own, whose text can go into ``func``'s machine code (sorted names).

    Found in the namespace of ``func``'s module (which is still being imported
    when ``func`` is decorated, so only what it imported so far counts), then
    transitively in the namespaces of those modules.
    """
    own = func.__module__
    found = set()
    for module in _imported(func.__globals__, own):
        found |= _closure(module)
    found.discard(own)
    return tuple(sorted(found))


@functools.lru_cache(maxsize=None)
def _file_hash(path, mtime_ns, size):  # keyed on the file's stat: an edit in a running process is seen
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _module_hash(name):
    module = sys.modules[name]
    path = getattr(module, "__file__", None)
    try:
        st = os.stat(path)
        return _file_hash(path, st.st_mtime_ns, st.st_size)
    except (OSError, TypeError):  # no file (a zip import or a frozen executable): the source from the loader
        source = module.__loader__.get_source(name) or ""
        return hashlib.sha256(source.encode()).hexdigest()


class _CoveringLocator(_CacheLocator):
    """Numba's locator for a kernel, with a source stamp that also covers the kernel's dependencies."""

    def __init__(self, base, modules):
        self._base = base
        self.dependencies = modules
        self._stamp = tuple((name, _module_hash(name)) for name in modules)

    def ensure_cache_path(self):
        self._base.ensure_cache_path()

    def get_cache_path(self):
        return self._base.get_cache_path()

    def get_source_stamp(self):
        return self._base.get_source_stamp(), self._stamp

    def get_disambiguator(self):
        return self._base.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):  # never chosen by Numba: it wraps the one Numba chose
        return None


class _KernelCacheImpl(CompileResultCacheImpl):
    """Numba's cache implementation for compiled functions, with :class:`_CoveringLocator` around its locator.

    Numba chooses the locator as usual (``NUMBA_CACHE_DIR``, the folder of
    the sources, the user's cache folder, ``NUMBA_CACHE_LOCATOR_CLASSES``);
    only its source stamp is extended.
    """

    def __init__(self, py_func):
        super().__init__(py_func)
        self._covering = _CoveringLocator(super().locator, dependencies(py_func))

    @property
    def locator(self):
        return getattr(self, "_covering", None) or super().locator


#: The lock file of a cache folder (see :class:`_KernelCache`); not a cache file (neither ``.nbi`` nor ``.nbc``).
SAVE_LOCK = ".fastcal-save.lock"


@contextlib.contextmanager
def _folder_lock(folder):
    """An exclusive lock on ``folder``'s :data:`SAVE_LOCK` between processes (``flock``), for the duration of the
    block; no lock where there is no ``fcntl`` or the lock file cannot be opened (Numba's save then fails or
    proceeds as it would alone)."""
    try:
        fd = os.open(os.path.join(folder, SAVE_LOCK), os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        fd = None
    try:
        if fd is not None and fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed, or when the process dies
        yield
    finally:
        if fd is not None:
            os.close(fd)


class _KernelCache(FunctionCache):
    """Numba's cache of a compiled function, with the covering stamp, and saves locked between processes.

    Numba saves a new signature by reading the function's index, adding an
    entry with the first free data-file number, and writing the index and
    then the data file, each by an atomic rename but with no lock between
    them. Two processes compiling *different* signatures of one kernel at the
    same moment (the workers of a pool on a cold cache, ``fastcal precompile
    --jobs``) can then both take number 1: one index entry is lost, and the
    other can end up naming the other signature's machine code. The whole
    save runs here under an exclusive lock of the cache folder, so each
    process reads the index the previous one wrote.
    """

    _impl_class = _KernelCacheImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self.dependencies = self._impl.locator.dependencies

    def save_overload(self, sig, data):
        try:
            self._impl.locator.ensure_cache_path()  # the folder, for its lock (Numba's save would make it)
        except OSError:
            pass  # Numba's save meets the same error and reports it as it does alone
        with _folder_lock(self._cache_path):
            super().save_overload(sig, data)


def cache_dependencies(dispatcher):
    """The modules (names) whose text the cache key of ``dispatcher`` (a :func:`kernel`) covers besides its own file.

    Fixed when the kernel was defined; None when it is not cached.
    """
    return getattr(getattr(dispatcher, "_cache", None), "dependencies", None)


def cache_dir_problem():
    """Why the ``NUMBA_CACHE_DIR`` Numba was given cannot hold the cache (a sentence), or None (unset or usable).

    The test is Numba's own (its cache locators'): create the folder if
    needed, and a temporary file in it.
    """
    path = numba.config.CACHE_DIR
    if not path:
        return None
    if os.path.exists(path) and not os.path.isdir(path):
        return f"NUMBA_CACHE_DIR={path!r} is a file, not a folder"
    try:
        os.makedirs(path, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()
    except OSError as exc:
        return f"NUMBA_CACHE_DIR={path!r} is not a writable folder ({exc.strerror or exc})"
    return None


def _warn_no_cache(message):
    global _warned_no_cache
    if not _warned_no_cache:
        _warned_no_cache = True
        warnings.warn(message, NoCacheWarning, stacklevel=5)


def _compile(func, fastmath, contract=False):
    options = dict(_OPTIONS, fastmath=set(FASTMATH) if fastmath else set(CONTRACT) if contract else False)
    dispatcher = numba.njit(**options)(func)
    if not isinstance(dispatcher, Dispatcher):
        return dispatcher  # NUMBA_DISABLE_JIT=1: the Python function itself
    problem = cache_dir_problem() if not _warned_no_cache else None
    try:
        # What ``cache=True`` does (Dispatcher.enable_caching), with the covering cache.
        dispatcher._cache = _KernelCache(func)
    except RuntimeError as exc:
        if "no locator available" not in str(exc):
            raise
    else:
        if problem is not None:  # Numba passed over NUMBA_CACHE_DIR for another folder
            _warn_no_cache(f"fastcal cannot cache its compiled kernels where asked: {problem}. They are cached in "
                           f"{dispatcher._cache._cache_path} instead. Set NUMBA_CACHE_DIR to a writable folder, "
                           "or unset it.")
        return dispatcher
    _warn_no_cache(
        "fastcal cannot cache its compiled kernels: neither its install folder nor the user's "
        f"cache folder is writable{' and ' + problem if problem else ''}. Each new process compiles them "
        "again (seconds on first use). Set NUMBA_CACHE_DIR to a writable folder to avoid this."
    )
    return dispatcher


def kernel(func=None, *, fastmath=False, contract=False):
    """Compile ``func`` as a fastcal kernel (``@kernel``, ``@kernel(fastmath=True)`` or
    ``@kernel(contract=True)``): serial, ``nogil``, cached."""
    if func is None:
        return lambda f: _compile(f, fastmath, contract)
    return _compile(func, fastmath, contract)
