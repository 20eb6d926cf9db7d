"""fastcal.dask.predict(segments=) of a MulticalibrationCalibrator: each chunk the in-memory predict of its rows."""

import dask.array as da
import dask.dataframe as dd
import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_array_equal

import fastcal
import fastcal.dask as fd


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
