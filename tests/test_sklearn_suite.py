"""scikit-learn's own test files for isotonic regression and calibration, run against fastcal (issue 27, item 6).

The files are loaded at run time from the installed scikit-learn (``sklearn/tests/test_isotonic.py`` and
``sklearn/tests/test_calibration.py``; nothing of them is copied here), as fresh modules in which the names
``IsotonicRegression`` and ``CalibratedClassifierCV`` are fastcal's classes and ``calibration_curve`` is
fastcal's function, so that every test of theirs that builds or calls one uses fastcal's. Their tests then run as
tests of this module. The few fixtures they take from scikit-learn's conftest (``global_random_seed``,
``global_dtype``, ``pyplot``) are defined below as scikit-learn defines them by default.

A test that fails by fastcal's design is a strict expected failure, with the reason (:data:`BY_DESIGN`): when
one starts passing, the list must shrink. Everything else must pass (scikit-learn's array-API tests skip, as
in scikit-learn's own run, when the optional array libraries they need are not installed).
"""

import importlib.util
import pathlib
from collections.abc import Collection

import numpy as np
import pytest
import sklearn

import fastcal
from fastcal.calibration import CalibratedClassifierCV

_TESTS = pathlib.Path(sklearn.__file__).parent / "tests"
#: The names substituted in each file: fastcal's class for scikit-learn's.
SUBSTITUTES = {
    "test_isotonic": {"IsotonicRegression": fastcal.IsotonicRegression},
    "test_calibration": {"CalibratedClassifierCV": CalibratedClassifierCV,
                         "IsotonicRegression": fastcal.IsotonicRegression,
                         "calibration_curve": fastcal.calibration_curve},
}


def _load(name):
    """scikit-learn's test module ``name`` as a fresh module (not sklearn.tests.<name>), its names substituted."""
    spec = importlib.util.spec_from_file_location(f"fastcal_sklearn_suite.{name}", _TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for attr, value in SUBSTITUTES[name].items():
        assert hasattr(module, attr), f"scikit-learn's {name} no longer uses {attr}"
        setattr(module, attr, value)
    return module


_MODULES = [_load(name) for name in SUBSTITUTES]

# scikit-learn runs these files with only DeprecationWarning and FutureWarning as errors: its set-ups warn
# (LinearSVC not converging, a FrozenEstimator given sample weights, a training fold that lacks a class), as
# fastcal does where scikit-learn does. Here, as there, such warnings are shown, not raised.
# Run once per `make test`: scikit-learn's files check conventions, not threads, and take minutes.
pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("default::UserWarning"), pytest.mark.filterwarnings("default::RuntimeWarning")]

#: Tests (their node names in this module, parameters included) that fail by fastcal's design, with the reason.
BY_DESIGN = {
    "test_fast_predict": "calls scikit-learn's private IsotonicRegression._build_y, which fastcal does not have (its "
                         "fit is one kernel, not sklearn's build-then-interpolate steps)",
}


def _listed(mark):
    """A parametrize mark whose values are a generator, with them as a tuple (pytest deprecates generators)."""
    if mark.name == "parametrize" and len(mark.args) > 1 and not isinstance(mark.args[1], Collection):
        return pytest.mark.parametrize(mark.args[0], tuple(mark.args[1]), *mark.args[2:], **mark.kwargs).mark
    return mark


#: Tests of several seconds each (joblib's worker processes, multiclass LinearSVC set-ups): ``slow``, so that the
#: second, one-thread run of ``make test`` leaves them out (the first runs them).
SLOW = ("test_parallel_execution", "test_calibration_multiclass",
        "test_calibrated_classifier_cv_works_with_large_confidence_scores")


def _export(module):
    """Make the tests and fixtures of ``module`` this module's, for pytest to collect."""
    for attr, obj in vars(module).items():
        if attr.startswith("test_") and callable(obj):
            obj.pytestmark = [_listed(m) for m in getattr(obj, "pytestmark", [])]
            if attr in SLOW:
                obj.pytestmark.append(pytest.mark.slow.mark)
        elif type(obj).__name__ != "FixtureFunctionDefinition":
            continue
        if attr in globals():
            raise AssertionError(f"two of scikit-learn's test files define {attr}")
        globals()[attr] = obj


for _module in _MODULES:
    _export(_module)


@pytest.fixture
def global_random_seed():
    return 42  # scikit-learn's default (SKLEARN_TESTS_GLOBAL_RANDOM_SEED unset)


@pytest.fixture(params=[np.float32, np.float64])
def global_dtype(request):
    return request.param


@pytest.fixture
def pyplot():
    import matplotlib.pyplot as plt

    plt.close("all")
    yield plt
    plt.close("all")


@pytest.fixture(autouse=True)
def _by_design(request):
    reason = BY_DESIGN.get(request.node.name)
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
