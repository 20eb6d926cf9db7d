"""Every public in-memory function of fastcal is on Dask and on Spark, or this file says why not.

A function added to ``fastcal`` fails this test until ``fastcal.dask`` and ``fastcal.spark`` have it, or until
:data:`NOT_ON_BACKENDS` gives the reason (the docs' backend pages say the same).
"""

import inspect

import pytest

import fastcal

#: The public functions of fastcal that the backends do not have, and why.
NOT_ON_BACKENDS = {
    "cross_val_calibration_report": "cross-validates a scikit-learn estimator, which refits on in-memory folds",
    "get_num_threads": "fastcal's threads in this process: a setting, not a computation over rows",
    "set_num_threads": "fastcal's threads in this process: a setting, not a computation over rows",
    "isotonic_regression": "SciPy's function of an ordered sequence of values; the backends fit rows with "
                           "fit_isotonic",
    "load": "reads a model file; a loaded model predicts on the backends with predict",
    "negative_sampling_logit_offset": "a number of a number (log rate): no rows",
    "platt_scaling": "the function form of PlattScaling; the backends fit it with fit_platt",
    "estimate_label_shift": "(n, k) probabilities and a calibrator's fit: no driver over rows yet (issue 41)",
}


def _functions():
    return sorted(n for n in fastcal.__all__ if inspect.isfunction(getattr(fastcal, n)))


@pytest.mark.parametrize("backend", ["dask", "spark"])
def test_every_public_function_is_on_the_backend_or_says_why_not(backend):
    import importlib

    module = importlib.import_module(f"fastcal.{backend}")
    missing = [n for n in _functions() if n not in module.__all__ and n not in NOT_ON_BACKENDS]
    assert not missing, f"fastcal.{backend} lacks {missing}: add them, or the reason to NOT_ON_BACKENDS"
    stale = [n for n in NOT_ON_BACKENDS if n in module.__all__ or n not in fastcal.__all__]
    assert not stale, f"NOT_ON_BACKENDS lists {stale}, which fastcal.{backend} has (or fastcal has not)"
