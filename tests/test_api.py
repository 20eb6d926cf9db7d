"""The public surface: names, lazy optional imports, shared warning class, model files of every calibrator."""

import subprocess
import sys

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fastcal
import fastcal.platt
import fastcal.prior

pytestmark = pytest.mark.nojit  # also run with NUMBA_DISABLE_JIT=1 (make test)


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


def test_num_threads_setting_is_per_thread_and_checked():
    import threading

    import numba

    default = fastcal.get_num_threads()
    assert default == max(1, numba.config.NUMBA_NUM_THREADS)
    seen = []
    try:
        fastcal.set_num_threads(3)
        assert fastcal.get_num_threads() == 3
        t = threading.Thread(target=lambda: seen.append(fastcal.get_num_threads()))
        t.start()
        t.join()
        assert seen == [default]  # another thread keeps the default
    finally:
        fastcal.set_num_threads(None)
    assert fastcal.get_num_threads() == default
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="^n must be a positive integer or None"):
            fastcal.set_num_threads(bad)
