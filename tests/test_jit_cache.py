"""Compiled kernels are cached: a second process loads them and compiles nothing; an edit of a helper
module invalidates the kernels that inline it."""

import ast
import importlib
import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastcal
from fastcal import _precompile
from fastcal._core import jit as _jit, math_kernels as _math_kernels

# the compile cache, in fresh interpreters: run once, not again on one thread
pytestmark = pytest.mark.slow

SCRIPT = r"""
import json, time
import numpy as np
from numba.core.registry import CPUDispatcher
import fastcal
from fastcal._core import validation as _validation
from fastcal.isotonic import _kernels as _isotonic_kernels

t0 = time.perf_counter()
rng = np.random.default_rng(0)
for dtype in (np.float32, np.float64):
    x = rng.random(400_000).astype(dtype)
    y = (rng.random(400_000) < x).astype(np.uint8)
    iso = fastcal.IsotonicRegression().fit(x, y)
    iso.predict(x)
    fastcal.IsotonicRegression().fit(x, y, sample_weight=np.ones(x.shape[0]))
fastcal.isotonic_regression(rng.random(100))
elapsed = time.perf_counter() - t0
hits = misses = 0
for module in (_isotonic_kernels, _validation):
    for obj in vars(module).values():
        if isinstance(obj, CPUDispatcher):
            hits += sum(obj.stats.cache_hits.values())
            misses += sum(obj.stats.cache_misses.values())
print(json.dumps(dict(hits=hits, misses=misses, seconds=elapsed)))
"""


def run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_second_process_does_not_recompile(tmp_path):
    first = run(tmp_path)
    second = run(tmp_path)
    assert first["misses"] > 0, "the first process should have compiled (empty cache)"
    assert second["misses"] == 0, f"the second process recompiled {second['misses']} kernels"
    assert second["hits"] > 0  # callees inlined into cached callers need no load of their own
    assert second["seconds"] < first["seconds"]


#: The reductions of the kernels that opt in to fastmath (reassociation), compiled or loaded: the EM's E-step sums
#: (fastcal.prior's engine API), one-pass Platt, slope, beta and temperature fits. float.hex of each.
REDUCTIONS = r"""
import warnings
import numpy as np
import fastcal
from fastcal import prior

warnings.simplefilter("ignore")  # the one-pass fits do not converge
rng = np.random.default_rng(0)
s = rng.normal(size=1000)
p = 1 / (1 + np.exp(-s * 1.3 + 0.2))
y = (rng.random(1000) < p).astype(np.int64)
pi = np.array([float.fromhex("0x1.68b6c2cd5dc6ep-1"), float.fromhex("0x1.2e927a6544724p-2")])
train = np.array([0.5, 0.5])
out = [prior.em_summarise(p, pi, train, False, True).sums[0]]
out += list(prior.estimate_priors_em(np.stack([1 - p, p], axis=1), [0.5, 0.5], max_iter=1).priors)
r = fastcal.platt_scaling(s, y, max_iter=1)
out += [r.a, r.b]
r = fastcal.calibration_slope_intercept(y, p)
out += [r.slope, r.intercept]
b = fastcal.BetaCalibration(max_iter=1).fit(p, y)
out += [b.a_, b.b_]
z = rng.normal(size=(1000, 4))
out.append(fastcal.TemperatureScaling(max_iter=1).fit(z, rng.integers(0, 4, 1000)).temperature_)
print(" ".join(float(v).hex() for v in out))
"""


def test_fastmath_reductions_give_the_same_bits_compiled_or_loaded(tmp_path):
    """A kernel compiled in this process and the same kernel loaded from the cache give the same bits.

    LLVM may reassociate a ``fastmath`` reduction differently when it
    compiles for the process than in the object code the cache keeps (the
    binary EM's E-step sums did, by one ulp): such a kernel must not opt in.
    """
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path))
    runs = [subprocess.run([sys.executable, "-c", REDUCTIONS], env=env, capture_output=True, text=True, check=True,
                           timeout=600).stdout for _ in range(2)]
    assert runs[0] == runs[1]


# ---------------------------------------------------------------------------
# Cache keys cover the shared helpers a kernel inlines (fastcal._core.jit)
# ---------------------------------------------------------------------------

#: In a fresh interpreter, on a copy of the package: one temperature pass (it inlines exp_neg and log_normal
#: of _math_kernels) and one isotonic kernel (whose module does not import _math_kernels); compilations
#: counted per dispatcher.
SHARED = r"""
import json
import numpy as np
from fastcal.isotonic import _kernels as ik
from fastcal.temperature import _kernels as tk

z = np.linspace(-3.0, 3.0, 40).reshape(10, 4)
out = np.empty((1, tk.N_SUMS))
tk.derivative_chunks(z, np.arange(10, dtype=np.int64) % 4, np.empty(0), 0.7, True, out, 0, 1)  # with the loss
ik.is_sorted(z[:, 0].copy())
kernels = dict(temperature=tk.derivative_chunks, isotonic=ik.is_sorted)
print(json.dumps(dict(file=tk.__file__, sums=out[0].tolist(),
                      misses={k: sum(d.stats.cache_misses.values()) for k, d in kernels.items()},
                      hits={k: sum(d.stats.cache_hits.values()) for k, d in kernels.items()})))
"""


def test_an_edit_of_a_shared_helper_invalidates_the_kernels_that_inline_it(tmp_path):
    package = tmp_path / "src" / "fastcal"
    shutil.copytree(Path(fastcal.__file__).parent, package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(tmp_path / "src"))

    def run():
        out = subprocess.run([sys.executable, "-c", SHARED], env=env, capture_output=True, text=True,
                             cwd=tmp_path, check=True)
        return json.loads(out.stdout)

    first = run()
    assert first["file"] == str(package / "temperature" / "_kernels.py")  # the copy, not the checkout
    assert first["misses"] == {"temperature": 1, "isotonic": 1}
    unchanged = run()
    assert unchanged["misses"] == {"temperature": 0, "isotonic": 0}
    assert unchanged["hits"] == {"temperature": 1, "isotonic": 1}
    assert unchanged["sums"] == first["sums"]

    # Change what exp_neg computes (exp(r) * 2: the loss moves by log 2 a row) without touching the kernel's own file.
    helpers = package / "_core" / "math_kernels.py"
    text = helpers.read_text()
    assert text.count("    p = p * r + 1.0\n    p = p * r + 1.0\n") == 1  # the end of exp_neg's polynomial
    tail = "    p = p * r + 1.0\n    p = p * r + 1.0\n"
    helpers.write_text(text.replace(tail, tail + "    p = p * 2.0\n"))
    edited = run()
    assert edited["misses"] == {"temperature": 1, "isotonic": 0}  # recompiled only where exp_neg is inlined
    assert edited["sums"] != first["sums"]  # the machine code runs the edited helper
    again = run()
    assert again["misses"] == {"temperature": 0, "isotonic": 0}
    assert again["sums"] == edited["sums"]


def _top_level_fastcal_imports(module):
    """The fastcal modules that ``module``'s top-level import statements name (modules imported, or imported from)."""
    path = Path(sys.modules[module].__file__)
    found = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("fastcal.")}
        elif isinstance(node, ast.ImportFrom):
            origin = node.module if not node.level else ".".join(
                [*module.split(".")[:-node.level]] + ([node.module] if node.module else []))
            for a in node.names:  # from .. import _jit names a module; from .._core.jit import kernel, its module
                found.add(f"{origin}.{a.name}" if f"{origin}.{a.name}" in sys.modules else origin)
    found = {m for m in found if m.startswith("fastcal.")}
    return found


def test_every_module_a_kernel_module_imports_is_in_its_kernels_cache_keys():
    # What _jit finds in a module's namespace when a kernel is defined must include every fastcal module that
    # module imports at its top (an import placed after a kernel, or of a bare constant, would be missed).
    for info in pkgutil.walk_packages(fastcal.__path__, "fastcal."):
        if info.name.endswith("_kernels"):  # fastcal._engine.sort._kernels, fastcal.platt._kernels
            importlib.import_module(info.name)
    kernels = _precompile.dispatchers()
    assert len(kernels) > 50
    checked = 0
    for name, dispatcher in kernels.items():
        module = dispatcher.py_func.__module__
        deps = _jit.cache_dependencies(dispatcher)
        assert deps is not None, name
        missing = _top_level_fastcal_imports(module) - set(deps) - {module}
        assert not missing, f"{name}: its cache key does not cover {sorted(missing)}"
        assert "fastcal._core.jit" in deps  # the compile options
        checked += 1
    deps = _jit.cache_dependencies(kernels["fastcal.temperature._kernels.chunk_terms"])
    assert "fastcal._core.math_kernels" in deps
    assert "fastcal._core.math_kernels" not in _jit.cache_dependencies(kernels["fastcal.isotonic._kernels.predict"])


def test_dependencies_follow_modules_functions_and_dispatchers():
    namespace = {"np": np, "kernel": _jit.kernel, "exp_neg": _math_kernels.exp_neg, "m": _math_kernels, "N": 3}
    exec("def f(x):\n    return x", namespace)
    namespace["f"].__module__ = "fastcal._someone_kernels"
    assert _jit.dependencies(namespace["f"]) == ("fastcal._core.jit", "fastcal._core.math_kernels")
    del namespace["exp_neg"], namespace["m"]
    assert _jit.dependencies(namespace["f"]) == ("fastcal._core.jit",)


#: A process that names its prior kernels' cache folder, waits for a line on stdin, then compiles one of them.
WAITS_THEN_COMPILES = r"""
import sys
import numpy as np
import fastcal
from fastcal.prior import _kernels
from numba.core.registry import CPUDispatcher
kernel = next(obj for obj in vars(_kernels).values() if isinstance(obj, CPUDispatcher))
print(kernel._cache._cache_path, flush=True)
sys.stdin.readline()
fastcal.correct_negative_sampling(np.linspace(0.0, 1.0, 11), 0.3)
print("done", flush=True)
"""


def test_a_save_waits_for_the_lock_of_its_cache_folder(tmp_path):
    # Numba's save (read the index, add an entry with the first free number, write the index, write the data) is
    # not atomic: two processes compiling different signatures of one kernel into one cache could both take
    # number 1. fastcal's cache makes each save wait for an exclusive lock of the folder.
    import fcntl
    import select

    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-c", WAITS_THEN_COMPILES], env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        folder = Path(proc.stdout.readline().strip())
        folder.mkdir(parents=True, exist_ok=True)
        with open(folder / _jit.SAVE_LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            # compiled in a second or two, then blocked in its save: nothing written, nothing returned
            ready, _, _ = select.select([proc.stdout], [], [], 15)
            assert not ready, "the kernel was saved while another process held the cache folder's lock"
            assert not list(folder.glob("*.nbi")) and not list(folder.glob("*.nbc"))
        assert proc.stdout.readline() == "done\n"  # the lock released: saved, and the call returned
        assert proc.wait(timeout=120) == 0, proc.stderr.read()
        assert list(folder.glob("_kernels.*.nbi")) and list(folder.glob("_kernels.*.nbc"))
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
