"""Parameter checks declared as tables (fastcal._core.params): one wording and one exception everywhere."""

import math

import numpy as np
import pytest

import fastcal
from fastcal._core.params import Boolean, Integer, InvalidParameterError, Options, Real, check

pytestmark = pytest.mark.nojit  # plain Python: also run with NUMBA_DISABLE_JIT=1 (make test)

ESTIMATORS = [fastcal.IsotonicRegression, fastcal.PlattScaling, fastcal.TemperatureScaling]


def test_the_exception_is_both_value_and_type_error():
    assert issubclass(InvalidParameterError, ValueError) and issubclass(InvalidParameterError, TypeError)


@pytest.mark.parametrize(
    "allowed, good, bad, message",
    [
        ([Integer(1)], [1, np.int64(7)], [0, 1.0, True, "1", None], "p must be an integer >= 1; got "),
        ([Integer(0, 3)], [0, 3], [-1, 4], "p must be an integer in [0, 3]; got "),
        ([Real(0, open_low=True), None], [1e-300, 5, None], [0, -1.0, math.inf, math.nan, False, "1"],
         "p must be a real number > 0 and finite or None; got "),
        ([Real(0, 1)], [0, 1, 0.5, np.float32(0.25)], [-0.1, 1.1, math.nan], "p must be a real number in [0, 1]; got "),
        ([Real(finite=False)], [-math.inf, 1e308], [math.nan, "x"], "p must be a real number (not NaN); got "),
        ([Boolean(), Options("auto")], [True, np.bool_(False), "auto"], [1, 0, "Auto", None],
         "p must be True, False or 'auto'; got "),
        ([Options("a", "b", "c")], ["a", "c"], [np.str_("b") + "x", 1, None], "p must be 'a', 'b' or 'c'; got "),
    ],
)
def test_check_accepts_and_rejects(allowed, good, bad, message):
    for value in good:
        check("p", value, allowed)
    for value in bad:
        with pytest.raises(InvalidParameterError) as info:
            check("p", value, allowed)
        assert str(info.value) == f"{message}{value!r}."


def test_values_are_normalised():
    assert type(check("p", np.int64(3), [Integer(1)])) is int
    assert type(check("p", 2, [Real(0)])) is float
    assert type(check("p", np.bool_(True), [Boolean()])) is bool


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_every_constructor_parameter_is_declared(cls):
    assert sorted(cls._parameter_constraints) == sorted(cls().get_params())


class _Bad:
    def __repr__(self):
        return "<bad>"


@pytest.mark.parametrize(
    "cls, name",
    [(cls, name) for cls in ESTIMATORS for name in cls._parameter_constraints],
    ids=lambda v: getattr(v, "__name__", v),
)
def test_fit_rejects_a_bad_value_of_every_parameter(cls, name):
    rng = np.random.default_rng(0)
    if cls is fastcal.TemperatureScaling:
        X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    else:
        X, y = rng.normal(size=40), rng.integers(0, 2, 40)
    est = cls().set_params(**{name: _Bad()})
    with pytest.raises(InvalidParameterError, match=f"^{name} must be .*; got <bad>.$"):
        est.fit(X, y)


def test_functions_use_the_same_wording():
    rng = np.random.default_rng(1)
    s, y = rng.normal(size=50), rng.integers(0, 2, 50)
    with pytest.raises(InvalidParameterError, match="^max_iter must be an integer >= 1; got 0.$"):
        fastcal.platt_scaling(s, y, max_iter=0)
    with pytest.raises(InvalidParameterError, match="^max_iter must be an integer >= 1; got 0.$"):
        fastcal.estimate_priors_em(np.full((5, 2), 0.5), [0.5, 0.5], max_iter=0)
    with pytest.raises(InvalidParameterError, match="^increasing must be True or False; got 'yes'.$"):
        fastcal.isotonic_regression([1.0, 2.0], increasing="yes")
    with pytest.raises(InvalidParameterError, match=r"^n must be an integer >= 1 or None; got 0.$"):
        fastcal.set_num_threads(0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda y, p: fastcal.calibration_curve(y, p, n_bins=0), "n_bins must be an integer in [1, 1048576]; got 0."),
        (lambda y, p: fastcal.calibration_curve(y, p, strategy="median"),
         "strategy must be 'uniform' or 'quantile'; got 'median'."),
        (lambda y, p: fastcal.calibration_curve(y, p, return_counts=1), "return_counts must be True or False; got 1."),
        (lambda y, p: fastcal.expected_calibration_error(y, p, norm="l3"),
         "norm must be 'l1', 'l2' or 'max'; got 'l3'."),
        (lambda y, p: fastcal.log_loss(y, p, normalize="yes"), "normalize must be True or False; got 'yes'."),
        (lambda y, p: fastcal.brier_score_loss(y, p, pos_label=[1]),
         "pos_label must be None or a number, a bool or a str; got [1]."),
        (lambda y, p: fastcal.brier_score_loss(y, p, scale_by_half="yes"),
         "scale_by_half must be True, False or 'auto'; got 'yes'."),
        (lambda y, p: fastcal.log_loss(y, p, pos_label={}), "pos_label must be None or a number, a bool or a str; got {}."),
        (lambda y, p: fastcal.roc_auc_score(y, p, average="median"),
         "average must be 'micro', 'macro', 'samples', 'weighted' or None; got 'median'."),
        (lambda y, p: fastcal.roc_auc_score(y, p, multi_class="ova"),
         "multi_class must be 'raise', 'ovr' or 'ovo'; got 'ova'."),
        (lambda y, p: fastcal.roc_auc_score(y, p, max_fpr=0), "max_fpr must be a real number in (0, 1] or None; got 0."),
        (lambda y, p: fastcal.roc_auc_score(y, p, max_fpr=1.5),
         "max_fpr must be a real number in (0, 1] or None; got 1.5."),
        (lambda y, p: fastcal.roc_auc_score(y, p, pos_label=[1]),
         "pos_label must be None or a number, a bool or a str; got [1]."),
    ],
)
def test_diagnostics_parameters(call, message):
    y, p = np.array([0, 1, 1, 0]), np.array([0.1, 0.8, 0.6, 0.3])
    with pytest.raises(InvalidParameterError) as info:
        call(y, p)
    assert str(info.value) == message


def test_scale_parameters():
    import fastcal.outofcore

    with pytest.raises(InvalidParameterError, match=r"^memory_budget must be an integer >= 1048576 or None; got 10.$"):
        fastcal.outofcore.fit_platt(np.ones(4), np.array([0, 1, 0, 1]), memory_budget=10)
    with pytest.raises(InvalidParameterError, match=r"^chunk_rows must be an integer >= 1 or None; got 0.$"):
        fastcal.outofcore.fit_platt(np.ones(4), np.array([0, 1, 0, 1]), chunk_rows=0)
    import dask.array as da

    import fastcal.dask

    x = da.from_array(np.arange(4.0), chunks=2)
    with pytest.raises(InvalidParameterError, match=r"^n_partitions must be an integer >= 1 or None; got 0.$"):
        fastcal.dask.fit_isotonic(x, x, n_partitions=0)
