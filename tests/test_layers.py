"""The architecture as tests, next to the import-linter contracts in pyproject.toml (``lint-imports``).

These read fastcal's sources (``ast``) or import them in a fresh interpreter,
so they run under plain pytest too:

- no fastcal module uses another module's private names (``from .isotonic
  import _fit_blocks`` or ``isotonic._fit_blocks``); private *modules* (``_binning``) are
  how the layers are named and may be imported. ``tests/`` is not checked:
  a test may reach into the module it tests.
- kernels (``_<subject>_kernels.py``) import only ``_jit``, the shared
  helpers of ``_math_kernels``, numba, numpy and math, the rule
  ``lint-imports`` checks for fastcal's own modules, here for third-party ones
  too; and the kernel contract lists every kernel module.
- importing fastcal or any of its modules, except the integrations that exist
  to use an optional dependency, leaves every optional dependency unimported.
- fastcal's Spark code reads no private name of PySpark's objects (``._jdf``,
  ``sparkContext._gateway``), which Spark Connect sessions lack: it reads
  only its own objects' private attributes (``self._x``).

Each checker, and each import-linter contract, is also fed a synthetic
violation, to show that it can fail.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "fastcal"

OPTIONAL = ("sklearn", "dask", "distributed", "matplotlib", "pyarrow", "pandas", "pyspark")

#: Modules that import an optional dependency when they are imported: they exist to use it.
IMPORTS_OPTIONAL = {
    "fastcal.calibration": "scikit-learn's estimator API",
    "fastcal.dask": "dask.array and dask.delayed",
    "fastcal.spark": "pyspark's DataFrame and SQL functions (every module of the package)",
}

#: Modules that do something when imported, other than defining names.
SCRIPTS = {"fastcal.__main__": "runs the command line", "fastcal.cli.__main__": "runs the command line"}

KERNEL_EXTERNALS = {"__future__", "math", "numba", "numpy"}

#: What kernels may import from fastcal: the Numba options and the shared helpers (whose text
#: fastcal._core.jit adds to the cache key of every kernel that imports them).
KERNEL_IMPORTS = {"fastcal._core.jit", "fastcal._core.math_kernels", "fastcal._core.pav_kernels"}


# Once per `make test`, not again on one thread: the import contracts and the modules' shape: no kernel runs.
pytestmark = pytest.mark.slow


def _modules():
    """``{dotted name: (path, is_package)}`` for every module under fastcal/, from the file tree."""
    found = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


MODULES = _modules()
KERNELS = sorted(m for m in MODULES if m.endswith("_kernels"))  # each package's _kernels, _core's two helpers


def _uses_optional(module):
    """Whether ``module`` is one of :data:`IMPORTS_OPTIONAL` or a module of one of those packages."""
    return any(module == m or module.startswith(f"{m}.") for m in IMPORTS_OPTIONAL)


def _is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _resolve(module, is_package, node):
    """The absolute name of the module an ``ImportFrom`` node imports from."""
    if not node.level:
        return node.module
    parts = module.split(".") if is_package else module.split(".")[:-1]
    parts = parts[:len(parts) - node.level + 1]
    return ".".join(parts + ([node.module] if node.module else []))


def private_name_uses(source, module, is_package=False, modules=MODULES):
    """Where ``source``, the text of fastcal module ``module``, uses another fastcal module's private names.

    Two forms are found: ``from fastcal.x import _name`` (absolute or relative),
    and ``m._name`` where ``m`` is bound, anywhere in the file, to a fastcal
    module (``import fastcal.x as m``, ``from . import x as m``, or a chain
    ``fastcal.x._name``). Importing a module is not using a private name, even
    if the module's own name starts with ``_``. Dunder names are public.
    Attributes of other objects (``estimator._state``) are not looked at.
    """
    tree = ast.parse(source)
    found = []
    bound = {}  # local name -> the fastcal module it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "fastcal":
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound["fastcal"] = "fastcal"
        elif isinstance(node, ast.ImportFrom):
            origin = _resolve(module, is_package, node)
            if origin.split(".")[0] != "fastcal":
                continue
            for alias in node.names:
                if f"{origin}.{alias.name}" in modules:
                    bound[alias.asname or alias.name] = f"{origin}.{alias.name}"
                elif _is_private(alias.name) and origin != module:
                    found.append(f"{module}:{node.lineno}: from {origin} import {alias.name}")

    def module_of(expr):
        if isinstance(expr, ast.Name):
            return bound.get(expr.id)
        if isinstance(expr, ast.Attribute):
            owner = module_of(expr.value)
            if owner and f"{owner}.{expr.attr}" in modules:
                return f"{owner}.{expr.attr}"
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            owner = module_of(node.value)
            if owner and owner != module and f"{owner}.{node.attr}" not in modules:
                found.append(f"{module}:{node.lineno}: {owner}.{node.attr}")
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def private_module_imports(source, module, is_package=False, modules=MODULES):
    """Where ``source``, the text of fastcal module ``module``, imports a private module of a package it is not in.

    A module whose own name starts with ``_`` inside a package of fastcal
    (``fastcal.isotonic._pav``, ``fastcal._coding._kernels``) belongs to that
    package: others reach it through the package's ``__init__`` (its internal
    API), never directly. The top-level private modules (``fastcal._engine``, ``fastcal._binning``) and
    the public modules of a private package (``fastcal._engine.partition``) are the shared layers, there for
    every module.
    """
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = _resolve(module, is_package, node)
            targets = [(node.lineno, origin)] + [(node.lineno, f"{origin}.{a.name}") for a in node.names
                                                 if f"{origin}.{a.name}" in modules]
        else:
            continue
        for line, target in targets:
            parent, _, last = target.rpartition(".")
            inside = module == parent or module.startswith(f"{parent}.")
            if parent.startswith("fastcal.") and _is_private(last) and target in modules and not inside:
                found.append(f"{module}:{line}: {target}")
    return sorted(set(found), key=lambda s: (s.split(":")[0], int(s.split(":")[1]), s))


def kernel_imports(source, module):
    """Every ``(line, imported module)`` of kernel module ``module``, at any depth, by absolute name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = _resolve(module, False, node)
            # from ._core import jit: the module imported is fastcal._core.jit, not the package
            found += sorted({(node.lineno, f"{origin}.{alias.name}" if f"{origin}.{alias.name}" in MODULES else origin)
                             for alias in node.names})
    return found


def kernel_violations(source, module):
    """Imports of kernel module ``module`` other than _jit, _math_kernels, numba, numpy and math."""
    bad = []
    for line, name in kernel_imports(source, module):
        if name.split(".")[0] == "fastcal":
            if name not in KERNEL_IMPORTS:
                bad.append(f"{module}:{line}: imports {name}")
        elif name.split(".")[0] not in KERNEL_EXTERNALS:
            bad.append(f"{module}:{line}: imports {name}")
    return bad


_PROBE = """
import importlib, json, sys
report = []
for name in {modules!r}:
    importlib.import_module(name)
    report.append([name, sorted(m for m in {optional!r} if m in sys.modules)])
print(json.dumps(report))
"""


def optional_dependencies_after_import(modules):
    """Import ``modules`` in turn in a fresh interpreter; ``[module, [optional dependencies loaded by then]]`` each."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-c", _PROBE.format(modules=list(modules), optional=OPTIONAL)],
                         capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.splitlines()[-1])


# ---------------------------------------------------------------------------
# The package as it is
# ---------------------------------------------------------------------------


def test_the_module_list_is_the_package():
    assert "fastcal" in MODULES and "fastcal._core.jit" in MODULES and "fastcal.isotonic" in MODULES
    assert "fastcal.isotonic._kernels" in KERNELS and "fastcal._core.jit" not in KERNELS
    assert "fastcal.platt._kernels" in KERNELS and "fastcal.beta._kernels" in KERNELS  # a subject's, in its package


def test_no_module_uses_another_modules_private_names():
    found = []
    for name, (path, is_package) in MODULES.items():
        found += private_name_uses(path.read_text(encoding="utf-8"), name, is_package)
    assert not found, "private names used across modules:\n" + "\n".join(found)


def test_no_module_imports_another_packages_private_module():
    found = []
    for name, (path, is_package) in MODULES.items():
        found += private_module_imports(path.read_text(encoding="utf-8"), name, is_package)
    assert not found, "private modules of other packages imported:\n" + "\n".join(found)


def test_tests_and_benchmarks_use_no_private_name_of_fastcal():
    # They reach fastcal through its public API and the documented internal names (kernels, engine hooks,
    # size knobs), so a private helper can change without breaking them.
    root = Path(__file__).resolve().parent.parent
    found = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((root / folder).glob("*.py")):
            found += private_name_uses(path.read_text(encoding="utf-8"), f"{folder}.{path.stem}")
    assert not found, "private names of fastcal used:\n" + "\n".join(found)


@pytest.mark.parametrize("module", KERNELS)
def test_kernels_import_only_jit_math_kernels_numba_numpy_math(module):
    path, _ = MODULES[module]
    assert kernel_violations(path.read_text(encoding="utf-8"), module) == []


def test_kernel_contract_lists_every_kernel_module():
    # import-linter has no wildcard for "_*_kernels": the contract names them, and this keeps the list whole.
    with open(ROOT / "pyproject.toml", "rb") as f:
        contracts = tomllib.load(f)["tool"]["importlinter"]["contracts"]
    (contract,) = [c for c in contracts if c["name"].startswith("Kernels")]
    assert sorted(contract["source_modules"]) == KERNELS


@pytest.mark.nojit  # also with NUMBA_DISABLE_JIT=1 (make test)
def test_importing_the_core_leaves_optional_dependencies_out():
    modules = ["fastcal"] + [m for m in MODULES if not _uses_optional(m) and m not in SCRIPTS]
    report = optional_dependencies_after_import(modules)
    assert [m for m, _ in report] == modules
    loaded = [(m, deps) for m, deps in report if deps]
    # The first module after which one is loaded is the one that imported it.
    assert not loaded, f"importing {loaded[0][0]} imports {', '.join(loaded[0][1])}"


# ---------------------------------------------------------------------------
# The checkers can fail
# ---------------------------------------------------------------------------


def test_private_module_checker_flags_synthetic_violations():
    source = """
from ..isotonic._pav import chunk_count
from ..isotonic import _kernels as ik, pav_fit
from .._coding import _kernels
import fastcal.platt._model
from .._engine import partition as _partition
from .. import _engine
from . import _rows
from ._rows import SparkRows
def f():
    from ..metrics import rows
"""
    assert private_module_imports(source, "fastcal.spark._fits") == [
        "fastcal.spark._fits:2: fastcal.isotonic._pav",
        "fastcal.spark._fits:3: fastcal.isotonic._kernels",
        "fastcal.spark._fits:4: fastcal._coding._kernels",
        "fastcal.spark._fits:5: fastcal.platt._model",
    ]


def test_private_name_checker_flags_synthetic_violations():
    source = """
from .isotonic import _fit_blocks, pav_fit
from fastcal.metrics import _bin_counts as bins
from . import platt as pl, _binning
import fastcal.outofcore
import fastcal.prior as pr

def f(est):
    pl._solve(1)
    fastcal.outofcore._budget()
    fastcal._engine.partition._split()
    pr.__doc__, pr.adjust_priors, _binning.bounds, est._check_loaded_state()
    return fastcal.__version__, fastcal._LAZY
"""
    assert private_name_uses(source, "fastcal.dask") == [
        "fastcal.dask:2: from fastcal.isotonic import _fit_blocks",
        "fastcal.dask:3: from fastcal.metrics import _bin_counts",
        "fastcal.dask:9: fastcal.platt._solve",
        "fastcal.dask:10: fastcal.outofcore._budget",
        "fastcal.dask:11: fastcal._engine.partition._split",
        "fastcal.dask:13: fastcal._LAZY",
    ]
    # A package's own relative imports resolve inside it; a module's own private names are its own.
    assert private_name_uses("from .cli import _run", "fastcal", is_package=True) == \
        ["fastcal:1: from fastcal.cli import _run"]
    assert private_name_uses("from .dask import _x\nfrom . import dask\ndask._y", "fastcal.dask") == []


#: Names of PySpark's classic, JVM-backed objects, which a Spark Connect session lacks (its sparkContext too).
PYSPARK_JVM_NAMES = ("sparkContext", "_jdf", "_jvm", "_gateway", "_jsc", "_jcol", "_jsparkSession", "_sc")


def pyspark_private_reads(source, module):
    """Where ``source`` reads a private attribute of something other than ``self`` (``df._jdf``,
    ``getattr(x, "_jvm")``, or ``getattr`` of a computed name) or names one of :data:`PYSPARK_JVM_NAMES` anywhere
    (code or string)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        name = None
        if isinstance(node, ast.Attribute):
            base = node.value
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if private and not (isinstance(base, ast.Name) and base.id == "self"):
                name = node.attr
            elif node.attr in PYSPARK_JVM_NAMES:
                name = node.attr
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            attr = node.args[1] if len(node.args) > 1 else None
            if isinstance(attr, ast.Constant) and isinstance(attr.value, str) and (
                    attr.value.startswith("_") and not attr.value.startswith("__")
                    or attr.value.split(".")[0] in PYSPARK_JVM_NAMES):
                name = attr.value
            elif not isinstance(attr, ast.Constant):
                name = "a computed name"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if any(n in PYSPARK_JVM_NAMES for n in node.value.replace(".", " ").split()):
                name = node.value
        if name is not None:
            found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_spark_code_reads_no_private_name_of_pyspark():
    # The modules that hold PySpark objects: fastcal.spark and the command line's --spark.
    spark_modules = [m for m in MODULES if m == "fastcal.spark" or m.startswith("fastcal.spark.")]
    spark_modules.append("fastcal.cli.spark")
    assert len(spark_modules) > 5
    found = []
    for module in spark_modules:
        found += pyspark_private_reads(MODULES[module][0].read_text(encoding="utf-8"), module)
    assert not found, "private names of PySpark read:\n" + "\n".join(found)


def test_pyspark_private_read_checker_flags_synthetic_violations():
    source = """
def f(df, spark, self):
    a = df._jdf
    b = spark.sparkContext
    c = getattr(spark, "_jvm")
    d = getattr(df, "sparkContext")
    h = getattr(df, "_" + "jdf")
    i = "a.sparkContext.b"
    e = self._own  # its own attribute: allowed
    g = df.__class__  # a dunder: allowed
    k = getattr(df, "schema"), "_" + "x"  # a public attribute, a string: allowed
"""
    found = pyspark_private_reads(source, "m")
    assert sorted({int(f.split(":")[1]) for f in found}) == [3, 4, 5, 6, 7, 8], found


def test_kernel_checker_flags_synthetic_violations():
    source = """
import math
import numpy as np
from numba.extending import overload
from ._core.jit import kernel
from ._core import jit as _jit
from ._core.math_kernels import exp_neg

def f():
    import scipy.special
    from ._core.parallel import parallel_for
    from .isotonic import pav_fit
    from ._core import validation as _validation
    from .platt._kernels import log_normal
"""
    assert kernel_violations(source, "fastcal._example_kernels") == [
        "fastcal._example_kernels:10: imports scipy.special",
        "fastcal._example_kernels:11: imports fastcal._core.parallel",
        "fastcal._example_kernels:12: imports fastcal.isotonic",
        "fastcal._example_kernels:13: imports fastcal._core.validation",
        "fastcal._example_kernels:14: imports fastcal.platt._kernels",
    ]


def test_import_probe_sees_an_optional_dependency():
    report = optional_dependencies_after_import(["fastcal", "fastcal.calibration"])
    assert report[0] == ["fastcal", []]
    assert "sklearn" in report[1][1]


def test_contracts_catch_synthetic_violations(tmp_path):
    shutil.copytree(PACKAGE_DIR, tmp_path / "fastcal", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for name, text in [
        ("prior/_kernels.py", "from .._core import validation"),       # a kernel importing the data checks
        ("isotonic/_regression.py", "def _up():\n    from .. import cli"),  # a calibrator importing a front-end
        ("prior/_em.py", "def _show():\n    import matplotlib"),       # an optional dependency in the core
        ("prior/_inputs.py", "def _up():\n    from . import _em"),     # a shared check importing a subject
        ("dask/_fits.py", "def _inner():\n    from .._engine import partition as _partition"),  # an adapter past the engine's API
        ("dask/_rows.py", "def _up():\n    from . import _metrics"),  # the adapter's rows importing a subject
        ("spark/_rows.py", "def _up():\n    from . import _predict"),  # likewise on Spark
        ("cli/documents.py", "def _up():\n    from . import spark"),  # the report's documents importing a command
        # a typing-only import circle
        ("_persist.py", "import typing\nif typing.TYPE_CHECKING:\n    from .isotonic import IsotonicRegression"),
    ]:
        with open(tmp_path / "fastcal" / name, "a", encoding="utf-8") as f:
            f.write(f"\n\n{text}\n")
    (tmp_path / "fastcal" / "_unplaced.py").write_text("")              # a module with no layer
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"COLUMNS": "250", "NO_COLOR": "1"}
    out = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command as c; c()",
                          "--no-cache", "--config", str(ROOT / "pyproject.toml")],
                         capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert out.returncode != 0
    # 16 broken: the calibrator importing the CLI also reaches the layers of the packages whose drivers the backends
    # import (isotonic._regression -> cli -> spark -> isotonic.rows, above it; beta, platt, grouped, metrics and
    # multicalibration alike), and multiclass's (its _scaling -> _base -> _persist -> isotonic -> cli -> its _linear).
    for expected in ["Contracts: 4 kept, 16 broken.",
                     "fastcal.dask is not allowed to import fastcal._engine.partition",
                     "fastcal.dask._fits -> fastcal._engine.partition (l.",
                     "fastcal.dask._rows -> fastcal.dask._metrics (l.",
                     "fastcal.spark._rows -> fastcal.spark._predict (l.",
                     "fastcal.cli.documents -> fastcal.cli.spark (l.",
                     "fastcal.isotonic is not allowed to import fastcal.cli",
                     "fastcal.prior._kernels is not allowed to import fastcal._core.validation",
                     "fastcal._persist is not allowed to import fastcal.isotonic",
                     "- fastcal._unplaced",
                     "fastcal.prior._inputs -> fastcal.prior._em (l.",
                     "fastcal.prior._em -> matplotlib"]:
        assert expected in out.stdout, out.stdout[-3000:]


def test_spark_sessions_are_fixtures_of_the_conftest_alone():
    # A test module that defines or imports the session-scoped `spark` fixture makes a second instance of it, whose
    # teardown stops the SparkContext (and the Connect server in its JVM) before the Connect client's: that client's
    # stop then retries for 10 minutes.
    found = []
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef) and node.name in ("spark", "connect", "session") and any(
                    "fixture" in ast.unparse(d) for d in node.decorator_list):
                found.append(f"{path.name}:{node.lineno}: defines {node.name}")
            if isinstance(node, ast.ImportFrom) and any(a.name in ("spark", "connect", "session") for a in node.names):
                found.append(f"{path.name}:{node.lineno}: imports {ast.unparse(node)}")
    assert not found, "\n".join(found)
