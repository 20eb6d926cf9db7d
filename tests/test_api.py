"""The public surface: names, lazy optional imports, shared warning class, model files of every calibrator."""

import subprocess
import sys

import numpy as np
from numpy.testing import assert_array_equal

import fastcal
import fastcal.platt
import fastcal.prior


def test_every_public_name_resolves():
    for name in fastcal.__all__:
        assert getattr(fastcal, name) is not None, name


def test_import_needs_only_the_core_dependencies():
    code = (
        "import sys, fastcal; "
        "heavy = [m for m in ('sklearn', 'matplotlib', 'dask', 'distributed', 'pyarrow') if m in sys.modules]; "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_convergence_warning_class():
    assert fastcal.platt.ConvergenceWarning is fastcal.ConvergenceWarning
    assert fastcal.prior.ConvergenceWarning is fastcal.ConvergenceWarning
    assert issubclass(fastcal.ConvergenceWarning, UserWarning)


def test_platt_model_file_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    s = rng.normal(size=5000)
    y = (rng.random(5000) < 1 / (1 + np.exp(-s))).astype(int)
    cal = fastcal.PlattScaling().fit(s, y)
    cal.save(tmp_path / "platt.json")
    loaded = fastcal.load(tmp_path / "platt.json")
    assert type(loaded) is fastcal.PlattScaling
    assert (loaded.a_, loaded.b_) == (cal.a_, cal.b_)
    assert_array_equal(loaded.predict(s), cal.predict(s))


def test_thread_settings_are_not_changed():
    import numba

    before = numba.get_num_threads()
    rng = np.random.default_rng(1)
    p = rng.random(200_000)
    y = (rng.random(200_000) < p).astype(np.uint8)
    fastcal.IsotonicRegression().fit(p, y).predict(p)
    fastcal.platt_scaling(p, y)
    fastcal.calibration_report(y, p)
    fastcal.correct_negative_sampling(p, 0.5)
    assert numba.get_num_threads() == before
