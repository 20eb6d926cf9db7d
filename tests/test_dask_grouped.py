"""fastcal.dask.fit_grouped and predict(groups=) against the in-memory GroupedCalibrator on the same arrays.

Oracles: every group model is the in-memory fit of that group's rows, bit for bit (the partitions of whole
groups keep the rows' order); the global model is the calibrator's own Dask fit, bit for bit (the same
driver), and the in-memory global fit to that fit's tested tolerance (isotonic thresholds exactly, Platt and
beta 1e-10, histogram tables to 1e-15: float sums in another order). Predictions are the in-memory
``predict`` of the fitted model, bit for bit. The weight-scale case is in tests/test_weight_scale.py.
"""

import dask
import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import dask as fd

FITS = {fastcal.IsotonicRegression: fd.fit_isotonic, fastcal.PlattScaling: fd.fit_platt,
        fastcal.BetaCalibration: fd.fit_beta, fastcal.HistogramBinning: fd.fit_histogram}
CALIBRATORS = [None, fastcal.IsotonicRegression(increasing=False, out_of_bounds="nan"), fastcal.PlattScaling(),
               fastcal.BetaCalibration(parameters="ab"), fastcal.HistogramBinning(n_bins=7),
               fastcal.HistogramBinning(n_bins=5, strategy="quantile")]


# Once per `make test`, not again on one thread: as tests/test_dask.py.
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _threads():
    with dask.config.set(scheduler="threads"):
        yield


def _data(n=1500, seed=0):
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.01, 0.99, n), 2)  # ties
    g = rng.choice(["fr", "de", "it", "nl", "x"], n, p=[0.35, 0.3, 0.2, 0.14, 0.01])  # "x": below the minimum
    y = (rng.uniform(size=n) < np.where(g == "fr", p ** 2, p)).astype(np.int64)
    w = rng.exponential(1.0, n)
    w[::7] = 0.0
    return p, y, w, g


def _fitted_state(est):
    return {k: v for k, v in vars(est).items() if k.endswith("_") and not k.startswith("_")}


def _assert_same_model(got, ref):
    assert type(got) is type(ref) and got.get_params() == ref.get_params()
    a, b = _fitted_state(got), _fitted_state(ref)
    assert a.keys() == b.keys()
    for k in a:
        assert_array_equal(a[k], b[k], err_msg=k)


def _assert_close_global(got, ref):
    if isinstance(ref, fastcal.IsotonicRegression):
        assert_array_equal(got.X_thresholds_, ref.X_thresholds_)
        assert_allclose(got.y_thresholds_, ref.y_thresholds_, rtol=1e-15, atol=1e-15)
    elif isinstance(ref, fastcal.HistogramBinning):
        assert_array_equal(got.bin_edges_, ref.bin_edges_)
        assert_allclose(got.bin_values_, ref.bin_values_, rtol=1e-15, atol=1e-15)
    else:
        names = ("a_", "b_", "c_") if isinstance(ref, fastcal.BetaCalibration) else ("a_", "b_")
        assert_allclose([getattr(got, n) for n in names], [getattr(ref, n) for n in names], rtol=1e-10)


@pytest.mark.parametrize("calibrator", CALIBRATORS, ids=lambda c: repr(c))
@pytest.mark.parametrize("weighted", [False, True])
def test_equals_the_in_memory_fit(calibrator, weighted):
    p, y, w, g = _data()
    w = w if weighted else None
    chunks = (400, 1, 0, 599, 500)  # an empty and a one-row chunk; groups cut across chunks
    pd_, yd = da.from_array(p, chunks=chunks), da.from_array(y, chunks=700)
    wd = None if w is None else da.from_array(w, chunks=300)
    got = fd.fit_grouped(calibrator, pd_, yd, da.from_array(g, chunks=250), sample_weight=wd,
                         min_samples_per_group=40, n_partitions=3)
    ref = fastcal.GroupedCalibrator(calibrator, min_samples_per_group=40).fit(p, y, g, sample_weight=w)
    assert got.get_params() == ref.get_params()
    assert got.groups_ == ref.groups_ and sorted(ref.groups_) == ["de", "fr", "it", "nl"]
    assert_array_equal(got.group_counts_, ref.group_counts_)
    for a, b in zip(got.calibrators_, ref.calibrators_, strict=True):
        _assert_same_model(a, b)
    template = calibrator if calibrator is not None else fastcal.IsotonicRegression(out_of_bounds="clip")
    own = FITS[type(template)](pd_, yd, wd, **template.get_params())
    _assert_same_model(got.global_calibrator_, own)
    _assert_close_global(got.global_calibrator_, ref.global_calibrator_)

    # predictions: small ("x") and unseen ("zz") groups on the global model; each chunk the in-memory predict
    t = np.concatenate([p[:300], [0.005, 0.5, 0.995]])
    h = np.concatenate([g[:300], ["zz", "x", "fr"]])
    out = fd.predict(got, da.from_array(t, chunks=101), groups=da.from_array(h, chunks=77))
    assert isinstance(out, da.Array)
    assert_array_equal(out.compute(), got.predict(t, h))
    assert_allclose(out.compute(), ref.predict(t, h), rtol=1e-9, atol=1e-12)


def test_dataframe_columns_scalar_weight_and_numeric_groups():
    """Columns of one DataFrame (partitions zipped), a scalar weight (the same weight on every row, as in memory),
    integer groups with every group below the minimum but one."""
    p, y, _, _ = _data(600, seed=3)
    k = np.arange(600) % 7
    k[k > 0] = np.arange(599)[k[1:] > 0] % 50 + 1  # groups 1..50 of about 10 rows, group 0 of 86
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y, "k": k}), npartitions=4)
    got = fd.fit_grouped(fastcal.PlattScaling(), frame["p"], frame["y"], frame["k"], sample_weight=2.5,
                         min_samples_per_group=60)
    ref = fastcal.GroupedCalibrator(fastcal.PlattScaling(), min_samples_per_group=60).fit(p, y, k, sample_weight=2.5)
    assert got.groups_ == ref.groups_ == [0]
    _assert_same_model(got.calibrators_[0], ref.calibrators_[0])
    out = fd.predict(got, frame["p"], groups=frame["k"])
    assert isinstance(out, dd.Series)
    assert_array_equal(out.compute().to_numpy(), got.predict(p, k))


def test_no_group_reaches_the_minimum():
    p, y, w, g = _data(300, seed=4)
    got = fd.fit_grouped(None, da.from_array(p, chunks=100), da.from_array(y, chunks=100), g,
                         min_samples_per_group=1000)
    assert got.groups_ == [] and got.calibrators_ == [] and got.group_counts_.shape == (0,)
    assert_array_equal(got.predict(p, g), got.global_calibrator_.predict(p))


def test_bad_input():
    p, y, w, g = _data(200, seed=5)
    pd_, yd = da.from_array(p, chunks=50), da.from_array(y, chunks=50)
    for bad in (fastcal.VennAbers(), fastcal.TemperatureScaling(), "isotonic"):
        with pytest.raises(ValueError, match="calibrator must be an IsotonicRegression"):
            fd.fit_grouped(bad, pd_, yd, g)
    with pytest.raises(ValueError, match="min_samples_per_group"):
        fd.fit_grouped(None, pd_, yd, g, min_samples_per_group=0)
    with pytest.raises(ValueError, match="groups has 199"):
        fd.fit_grouped(None, pd_, yd, g[:-1])
    with pytest.raises(ValueError, match="y_min"):  # the calibrator's own check
        fd.fit_grouped(fastcal.IsotonicRegression(y_min=1.0, y_max=0.0), pd_, yd, g)
    with pytest.raises(ValueError, match="scores"):
        fd.fit_grouped(fastcal.PlattScaling(), da.from_array(np.where(p > 0.5, np.nan, p), chunks=50), yd, g)
    with pytest.raises(ValueError, match="groups must be a 1-D"):
        fd.fit_grouped(None, pd_, yd, np.stack([g, g], axis=1))
    est = fd.fit_grouped(None, pd_, yd, g, min_samples_per_group=10)
    with pytest.raises(TypeError, match="groups is required"):
        fd.predict(est, pd_)
    with pytest.raises(TypeError, match="groups is only for a GroupedCalibrator"):
        fd.predict(est.global_calibrator_, pd_, groups=g)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples"):
        fd.predict(est, pd_, groups=g[:-1])
    with pytest.raises(fastcal.NotFittedError):
        fd.predict(fastcal.GroupedCalibrator(), pd_, groups=g)


def test_from_fits_refuses_lengths_that_differ():
    """The assembly hook of the distributed fits checks what it is given."""
    model = fastcal.IsotonicRegression().fit([0.0, 1.0], [0, 1])
    est = fastcal.GroupedCalibrator.from_fits(None, ["a"], [model], model, [3], min_samples_per_group=2)
    assert est.groups_ == ["a"] and est.group_counts_.dtype == np.int64
    assert_array_equal(est.predict([0.5, 0.5], ["a", "b"]), [0.5, 0.5])
    with pytest.raises(ValueError, match="differ in length"):
        fastcal.GroupedCalibrator.from_fits(None, ["a", "b"], [model], model, [3])
    with pytest.raises(ValueError, match="min_samples_per_group"):
        fastcal.GroupedCalibrator.from_fits(None, ["a"], [model], model, [3], min_samples_per_group=0)


def test_float32_scores_stay_float32():
    p, y, w, g = _data(800, seed=6)
    p = p.astype(np.float32)
    got = fd.fit_grouped(None, da.from_array(p, chunks=300), da.from_array(y, chunks=300), g, sample_weight=w,
                         min_samples_per_group=40)
    ref = fastcal.GroupedCalibrator(min_samples_per_group=40).fit(p, y, g, sample_weight=w)
    for a, b in zip(got.calibrators_, ref.calibrators_, strict=True):
        assert a.X_thresholds_.dtype == np.float32
        _assert_same_model(a, b)
    out = fd.predict(got, da.from_array(p, chunks=300), groups=g)
    assert out.dtype == np.float32
    assert_array_equal(out.compute(), got.predict(p, g))


@pytest.mark.parametrize("calibrator", [fastcal.IsotonicRegression(out_of_bounds="clip"), fastcal.PlattScaling()],
                         ids=lambda c: repr(c))
def test_several_group_columns_equal_the_in_memory_fit(calibrator):
    """Two group columns (text with None, floats with NaN): the groups are the tuples, in the in-memory order,
    and every group model and prediction are the in-memory ones, bit for bit; arrays, a list or a dict of them,
    and columns of one DataFrame."""
    p, y, w, g = _data(2000, seed=6)
    text = g.astype(object)
    text[::13] = None
    device = np.where(np.arange(2000) % 3 == 0, 2.0, 1.0)
    device[::17] = np.nan
    chunks = (400, 1, 0, 599, 1000)
    ref = fastcal.GroupedCalibrator(calibrator, min_samples_per_group=25).fit(p, y, [text, device],
                                                                               sample_weight=w)
    assert any(t[0] is None for t in ref.groups_) and any(t[1] is None for t in ref.groups_)
    pd_, yd, wd = da.from_array(p, chunks=chunks), da.from_array(y, chunks=700), da.from_array(w, chunks=300)
    as_arrays = [da.from_array(text, chunks=250), da.from_array(device, chunks=333)]
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y, "w": w, "g": text, "d": device}), npartitions=4)
    fits = [fd.fit_grouped(calibrator, pd_, yd, as_arrays, sample_weight=wd, min_samples_per_group=25,
                           n_partitions=3),
            fd.fit_grouped(calibrator, pd_, yd, {"g": text, "d": as_arrays[1]}, sample_weight=wd,
                           min_samples_per_group=25),
            fd.fit_grouped(calibrator, frame["p"], frame["y"], frame[["g", "d"]], sample_weight=frame["w"],
                           min_samples_per_group=25)]
    for got in fits:
        assert got.groups_ == ref.groups_
        assert_array_equal(got.group_counts_, ref.group_counts_)
        for a, b in zip(got.calibrators_, ref.calibrators_, strict=True):
            _assert_same_model(a, b)
    t = np.concatenate([p[:300], [0.5, 0.5]])
    h = [np.append(text[:300], ["zz", "fr"]), np.append(device[:300], [1.0, 7.0])]  # unseen tuples: global
    out = fd.predict(fits[0], da.from_array(t, chunks=101), groups=[da.from_array(c, chunks=77) for c in h])
    assert_array_equal(out.compute(), fits[0].predict(t, h))  # each chunk the in-memory predict of the model
    assert_allclose(out.compute(), ref.predict(t, h), rtol=1e-9, atol=1e-12)  # the global models: their rounding
    series = fd.predict(fits[2], frame["p"], groups=[frame["g"], frame["d"]])
    assert_array_equal(series.compute().to_numpy(), fits[2].predict(p, [text, device]))
