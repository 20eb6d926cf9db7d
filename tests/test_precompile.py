"""``fastcal precompile``: every kernel gets compiled, and a new process then compiles nothing.

One cold run (an empty ``NUMBA_CACHE_DIR``) of the warm-ups, through the
command line's code with worker processes (tests/precompile_cold.py), is
shared by the tests. Every ``@kernel`` dispatcher of every fastcal module must
then have at least one signature in the cache:
a kernel that no warm-up reaches (a new kernel, a new module) fails here until
:mod:`fastcal._precompile` gets a warm-up for it. Then new processes, reading
the same cache, must load everything and compile nothing (the dispatchers'
cache statistics, as in tests/test_jit_cache.py).
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fastcal import _precompile

from . import first_calls, precompile_cold

def _python(code_or_args, cache, timeout=1800):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
    args = ["-c", code_or_args] if isinstance(code_or_args, str) else code_or_args
    out = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=timeout)
    assert out.returncode == 0, out.stderr[-3000:]
    return out


@pytest.fixture(scope="module")
def cold(tmp_path_factory):
    """The shared cold run: ``(cache folder, report)``; a few minutes, all kernels compiled once.

    ``make test`` makes it before the suite (tests/precompile_cold.py) and names its report in
    ``FASTCAL_COLD_PRECOMPILE``; otherwise it is made here.
    """
    given = os.environ.get("FASTCAL_COLD_PRECOMPILE")
    if given:
        with open(given) as f:
            report = json.load(f)
    else:
        report = precompile_cold.run(tmp_path_factory.mktemp("numba-cache"))
    return report["cache"], report


@pytest.mark.slow
def test_every_kernel_is_compiled_by_precompile(cold):
    _, report = cold
    assert report["status"] == 0
    assert len(report["kernels"]) > 50  # the walk found the kernel modules
    missing = sorted(name for name, k in report["kernels"].items() if not k["signatures"])
    assert not missing, ("kernels no warm-up of fastcal/_precompile.py reaches (add one, see its docstring): "
                         + ", ".join(missing))


#: The cold-start figures of docs/performance.md that do not depend on the machine: what one cold run compiles.
_COLD_FIGURES = re.compile(r"(?P<signatures>[\d,]+) kernel signatures compiled in.*?the cache is [\d.]+ MiB on "
                           r"disk, (?P<files>[\d,]+) files", re.S)


@pytest.mark.slow
def test_the_docs_cold_start_counts_are_those_of_a_cold_run(cold):
    # The signatures compiled and the cache's files are the same on every machine with this code; the times and
    # sizes beside them are one machine's measurement (tests/precompile_cold.py reports them too).
    _, report = cold
    found = _COLD_FIGURES.search((Path(__file__).resolve().parent.parent / "docs" / "performance.md").read_text())
    assert found, "docs/performance.md: the cold-start figures are missing"
    stated = {name: int(found[name].replace(",", "")) for name in ("signatures", "files")}
    assert stated == {"signatures": report["signatures"], "files": report["files"]}, (
        f"docs/performance.md states {stated}; a cold run now gives {report['signatures']} signatures, "
        f"{report['files']} files, {report['bytes'] / 2**20:.1f} MiB, in {report['seconds'] / 60:.1f} min "
        f"({report['cpu_seconds']:.0f} s of CPU, peak memory {report['peak_rss_bytes'] / 2**30:.1f} GiB)")


@pytest.mark.slow
def test_the_command_run_again_compiles_nothing(cold):
    # (A user's first calls in a new process: test_first_calls_with_every_dtype_compile_nothing_after_precompile.)
    cache, _ = cold
    out = _python(["-m", "fastcal", "precompile"], cache)
    summary = out.stdout.strip().splitlines()[-1]
    assert f"{_precompile.total_calls()} warm-up calls" in summary
    assert " 0 kernel signatures compiled" in summary, summary
    assert str(cache) in summary  # where the cache is, and its size


@pytest.mark.slow
def test_first_calls_with_every_dtype_compile_nothing_after_precompile(cold):
    # The first call of every public subject, with the label, score and weight dtypes users pass, small and past
    # every size threshold of the wrappers, and the command line's report, fit and apply on files: after
    # `fastcal precompile`, in a new process, each loads its kernels from the cache and compiles none.
    cache, _ = cold
    out = _python([str(Path(first_calls.__file__))], cache, timeout=3600)
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["calls"] > 1000
    compiled = result["compiled"]
    shown = "\n".join(f"{call}: {', '.join(kernels)}" for call, kernels in list(compiled.items())[:30])
    assert not compiled, f"{len(compiled)} first calls compiled kernels after precompile (add warm-ups to " \
                         f"fastcal/_precompile.py):\n{shown}"


def test_registry_names_and_calls():
    names = [w.name for w in _precompile.WARMUPS]
    assert len(names) == len(set(names))
    assert {"isotonic", "platt", "temperature", "prior correction", "diagnostics", "beta", "histogram binning",
            "Venn-Abers", "decomposition", "smooth ECE"} <= set(names)
    assert _precompile.total_calls() == sum(len(w.variants) for w in _precompile.WARMUPS)
