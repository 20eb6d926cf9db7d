"""``fastcal precompile``: compile every kernel for every dtype into Numba's cache, for a new process to load."""

from __future__ import annotations

import os
import sys
import time

from .. import _precompile
from .progress import Progress


def cmd_precompile(args, progress_enabled, timings):
    """Run every warm-up call of :mod:`fastcal._precompile` with a progress bar; print what the cache holds."""
    bar = Progress("compiling kernels", total=_precompile.total_calls(), enabled=progress_enabled, unit="calls")
    t0 = time.perf_counter()
    calls = _precompile.precompile(progress=lambda label: bar.update(1))
    bar.close()
    timings["precompile"] = time.perf_counter() - t0
    kernels = _precompile.dispatchers()
    compiled = sum(sum(d.stats.cache_misses.values()) for d in kernels.values())
    loaded = sum(sum(d.stats.cache_hits.values()) for d in kernels.values())
    files = _precompile.cache_files()
    size = sum(os.path.getsize(f) for f in files)
    where = os.path.commonpath(files) if files else "nowhere: kernels are compiled in memory"
    if not args.quiet:
        sys.stdout.write(
            f"fastcal precompile: {calls} warm-up calls in {timings['precompile']:.1f} s: "
            f"{compiled} kernel signatures compiled, {loaded} loaded from the cache; "
            f"cache {size / 2**20:.1f} MiB in {len(files)} files under {where}\n"
        )
