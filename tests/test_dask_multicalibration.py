"""fastcal.dask.predict(segments=) of a MulticalibrationCalibrator: each chunk the in-memory predict of its rows."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

import fastcal
import fastcal.dask as fd


# Once per `make test`, not again on one thread: as tests/test_dask.py.
pytestmark = pytest.mark.slow


def _fitted(n=6000, seed=2, dtype=np.float64):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.03, 0.97, n).astype(dtype)
    country = rng.choice(np.array(["fr", "de", "us"], dtype=object), n)
    device = rng.integers(0, 3, n)
    x = rng.normal(size=n)
    x[::31] = np.nan
    bias = (country == "fr") & (device == 1)
    y = (rng.uniform(size=n) < np.where(bias, p**2, p)).astype(np.int64)
    seg = {"country": country, "device": device, "x": x}
    cal = fastcal.MulticalibrationCalibrator(n_buckets=4).fit(p, y, seg, numerical=["x"])
    assert np.count_nonzero(cal.offsets_)  # a model that changes something: equal results mean something
    return cal, p, seg


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_arrays_and_series_equal_the_in_memory_predict(dtype):
    cal, p, seg = _fitted(dtype=dtype)
    want = cal.predict(p, seg)
    assert want.dtype == dtype
    out = fd.predict(cal, da.from_array(p, chunks=701),
                     segments={"x": da.from_array(seg["x"], chunks=500), "device": seg["device"],
                               "country": da.from_array(seg["country"], chunks=1000), "unused": seg["x"]})
    assert out.dtype == dtype
    assert_array_equal(out.compute(), want)
    frame = dd.from_pandas(pd.DataFrame({"p": p, **seg}), npartitions=4)
    series = fd.predict(cal, frame["p"], segments=frame[["country", "device", "x"]])
    got = series.compute()
    assert_array_equal(got.to_numpy(), want)
    assert got.index.equals(frame.index.compute()) and got.name == "p"
    by_dict = fd.predict(cal, frame["p"], segments={"country": frame["country"], "device": frame["device"],
                                                    "x": frame["x"]})
    assert_array_equal(by_dict.compute().to_numpy(), want)


def test_bad_input():
    cal, p, seg = _fitted(n=2000)
    scores = da.from_array(p, chunks=500)
    with pytest.raises(TypeError, match="segments is required to predict with a MulticalibrationCalibrator"):
        fd.predict(cal, scores)
    with pytest.raises(TypeError, match="segments is only for a MulticalibrationCalibrator"):
        fd.predict(fastcal.PlattScaling().fit(p, p > 0.5), scores, segments=seg)
    with pytest.raises(TypeError, match="not both"):
        fd.predict(cal, scores, groups=seg["device"], segments=seg)
    with pytest.raises(ValueError, match=r"segments lacks the features \['x'\]"):
        fd.predict(cal, scores, segments={"country": seg["country"], "device": seg["device"]})
    with pytest.raises(ValueError, match=r"scores has 2000, segments\['x'\] has 1999"):
        fd.predict(cal, scores, segments={**seg, "x": seg["x"][:-1]})
    with pytest.raises(TypeError, match="segments must be a mapping"):
        fd.predict(cal, scores, segments=[seg["x"]])
    with pytest.raises(fastcal.NotFittedError):
        fd.predict(fastcal.MulticalibrationCalibrator(), scores, segments=seg)
    frame = dd.from_pandas(pd.DataFrame({"p": p, **seg}), npartitions=4)
    with pytest.raises(ValueError, match="segments must be Dask Series of as many partitions as scores"):
        fd.predict(cal, frame["p"], segments=seg)


# ---------------------------------------------------------------------------
# fastcal.dask.fit_multicalibration: the in-memory fit's model (oracle: MulticalibrationCalibrator.fit on the
# computed columns; tests/test_multicalibration_fit_rows.assert_same_model says what is exact and what is rounded).
# ---------------------------------------------------------------------------

from .test_multicalibration_fit_rows import NUMERICAL, _case, assert_same_model  # noqa: E402


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("weighted", [False, True])
def test_fit_equals_the_in_memory_fit(dtype, weighted):
    p, y, w, seg = _case(6000, 5, dtype, weighted, many=True)
    want = fastcal.MulticalibrationCalibrator(n_buckets=4).fit(p, y, seg, sample_weight=w, numerical=NUMERICAL)
    assert want.n_rounds_ > 0 and np.count_nonzero(want.offsets_) > 2
    got = fd.fit_multicalibration(
        da.from_array(p, chunks=1700), da.from_array(y, chunks=2500), {
            "a": da.from_array(seg["a"], chunks=1000), "b": seg["b"], "num": da.from_array(seg["num"], chunks=3000),
            "few": seg["few"]},
        sample_weight=None if w is None else da.from_array(w, chunks=1500), numerical=NUMERICAL, n_buckets=4)
    assert_same_model(got, want, p, seg)
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y, "w": np.ones_like(p) if w is None else w, **seg}),
                           npartitions=3)
    by_frame = fd.fit_multicalibration(frame["p"], frame["y"], frame[list(seg)],
                                       sample_weight=frame["w"] if weighted else None, numerical=NUMERICAL,
                                       n_buckets=4)
    assert_same_model(by_frame, want, p, seg)
    q = fd.predict(by_frame, frame["p"], segments=frame[list(seg)]).compute().to_numpy()
    np.testing.assert_array_equal(q, by_frame.predict(p, seg))


def test_fit_bad_input():
    p, y, w, seg = _case(800, 2)
    scores = da.from_array(p, chunks=300)
    with pytest.raises(ValueError, match=r"scores has 800, segments\['num'\] has 799"):
        fd.fit_multicalibration(scores, y, {**seg, "num": seg["num"][:-1]}, numerical=NUMERICAL)
    with pytest.raises(ValueError, match="segments must hold at least one feature"):
        fd.fit_multicalibration(scores, y, {})
    with pytest.raises(TypeError, match="segments must be a mapping"):
        fd.fit_multicalibration(scores, y, [seg["num"]])
    with pytest.raises(ValueError, match="n_buckets must be at least 1, got 0"):
        fd.fit_multicalibration(scores, y, seg, numerical=NUMERICAL, n_buckets=0)
    with pytest.raises(ValueError, match="y must contain only the labels 0 and 1"):
        fd.fit_multicalibration(scores, np.where(y == 1, 2, 0) + (np.arange(y.size) == 3), seg, numerical=NUMERICAL)
