"""fastcal.dask.fit_multiclass on a distributed.LocalCluster (two worker processes) and on the synchronous
scheduler, against the in-memory fits of the same (computed) arrays.

The driver's exactness over many cuts of the rows is tested on ListRows (tests/test_multiclass_rows.py); here the
Dask inputs (arrays of any chunking, DataFrames, Series, weights as arrays, NumPy or a scalar, both float
dtypes) reach it as the in-memory fit reads them. Probabilities agree to 1e-10 (see that module's docstring).
"""

import numpy as np
import pytest
from numpy.testing import assert_allclose

import dask
import dask.array as da
import dask.dataframe as dd
import pandas as pd

import fastcal
import fastcal.dask as fd


# Once per `make test`, not again on one thread: as tests/test_dask.py.
pytestmark = pytest.mark.slow


def _case(n, k, seed, probabilities, dtype=np.float64):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, k)) * 2
    y = np.argmax(0.7 * z + rng.gumbel(size=z.shape) + 0.3 * np.arange(k), axis=1)
    if probabilities:
        p = np.exp(z - z.max(axis=1, keepdims=True))
        z = p / p.sum(axis=1, keepdims=True)
    return z.astype(dtype), y, rng.uniform(0.1, 3.0, n)


def _same(got, ref, X):
    assert type(got) is type(ref) and got.get_params() == ref.get_params()
    assert ((got.n_classes_, got.n_features_in_, got.converged_, got.input_type_)
            == (ref.n_classes_, ref.n_features_in_, ref.converged_, ref.input_type_))
    assert_allclose(got.predict_proba(X), ref.predict_proba(X), rtol=0, atol=1e-10)


@pytest.mark.parametrize("cal", [
    fastcal.TemperatureScaling(), fastcal.VectorScaling(), fastcal.BiasCorrectedTemperatureScaling(),
    fastcal.MatrixScaling(reg_lambda=0.01, reg_mu=0.01), fastcal.DirichletCalibration(),
    fastcal.DirichletCalibration(matrix_type="diagonal"),
], ids=repr)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_fit_multiclass_equals_in_memory(dask_client, cal, dtype):
    probabilities = isinstance(cal, fastcal.DirichletCalibration)
    X, y, w = _case(100_000, 5, 0, probabilities, dtype)
    ref = type(cal)(**cal.get_params()).fit(X, y, w)
    # row chunks of another size than y's and w's, and the columns cut in two: aligned by position
    got = fd.fit_multiclass(cal, da.from_array(X, chunks=(7001, 3)), da.from_array(y, chunks=9000),
                            da.from_array(w, chunks=5000))
    _same(got, ref, X)


def test_dataframes_series_numpy_and_scalar_weights():
    X, y, w = _case(20_000, 3, 1, False)
    ref = fastcal.VectorScaling().fit(X, y, w)
    with dask.config.set(scheduler="synchronous"):
        frame = dd.from_pandas(pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y, "w": w}),
                               npartitions=4)
        _same(fd.fit_multiclass(fastcal.VectorScaling(), frame[["a", "b", "c"]], frame["y"], frame["w"]), ref, X)
        _same(fd.fit_multiclass(fastcal.VectorScaling(), da.from_array(X, chunks=3000), y, w), ref, X)
        unweighted = fastcal.VectorScaling().fit(X, y)
        _same(fd.fit_multiclass(fastcal.VectorScaling(), da.from_array(X, chunks=3000), y, 2.5), unweighted, X)
        # one column of binary decision values: an array, a column, a Series
        ref1 = fastcal.MatrixScaling().fit(X[:, 0], y % 2)
        for x in (da.from_array(X[:, 0], chunks=3000), da.from_array(X[:, :1], chunks=3000), frame["a"]):
            _same(fd.fit_multiclass(fastcal.MatrixScaling(), x, frame["y"] % 2), ref1, X[:, 0])


def test_errors_name_the_arguments():
    X, y, w = _case(1000, 3, 2, False)
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="Inconsistent numbers of samples: y has 999, X has 1000"):
            fd.fit_multiclass(fastcal.VectorScaling(), da.from_array(X, chunks=300), y[:-1])
        with pytest.raises(ValueError, match="sample_weight has 999 elements, expected 1000"):
            fd.fit_multiclass(fastcal.VectorScaling(), da.from_array(X, chunks=300), y, w[:-1])
        with pytest.raises(ValueError, match=r"y must hold class indices in 0 \.\. 2"):
            fd.fit_multiclass(fastcal.VectorScaling(), da.from_array(X, chunks=300), y + 1)
        with pytest.raises(ValueError, match="rows of X must sum to 1"):
            fd.fit_multiclass(fastcal.DirichletCalibration(), da.from_array(np.abs(X) / 10, chunks=300), y)
        with pytest.raises(ValueError, match="X must be 1-D or 2-D"):
            fd.fit_multiclass(fastcal.VectorScaling(), da.zeros((10, 3, 2)), np.zeros(10))


def test_predict_proba_is_the_in_memory_prediction_bit_for_bit():
    X, y, w = _case(10_000, 4, 3, False, np.float32)
    with dask.config.set(scheduler="synchronous"):
        for cal in (fastcal.TemperatureScaling(), fastcal.VectorScaling(), fastcal.MatrixScaling()):
            model = cal.fit(X, y, w)
            got = fd.predict_proba(model, da.from_array(X, chunks=(3001, 2)))
            assert got.chunks == ((3001, 3001, 3001, 997), (4,))
            out = got.compute()
            assert out.dtype == np.float32
            np.testing.assert_array_equal(out, model.predict_proba(X))
        frame = dd.from_pandas(pd.DataFrame({"a": X[:, 0].astype(np.float64)}), npartitions=3)
        binary = fastcal.MatrixScaling().fit(X[:, 0].astype(np.float64), y % 2)
        np.testing.assert_array_equal(fd.predict_proba(binary, frame["a"]).compute(),
                                      binary.predict_proba(X[:, 0].astype(np.float64)))
        with pytest.raises(fastcal.NotFittedError):
            fd.predict_proba(fastcal.VectorScaling(), da.from_array(X))
        with pytest.raises(TypeError, match="for NumPy data use VectorScaling.predict_proba"):
            fd.predict_proba(fastcal.VectorScaling().fit(X, y), X)


def test_predict_proba_reads_every_chunk_as_the_fit_read_its_rows():
    # a chunk of logits that happen to look like probabilities is read as logits after a fit on logits
    X, y, w = _case(2000, 3, 4, False, np.float64)
    model = fastcal.VectorScaling().fit(X, y, w)
    batch = np.r_[[[0.6, 0.4, 0.0], [0.2, 0.2, 0.6]], X[:5]]
    with dask.config.set(scheduler="synchronous"):
        got = fd.predict_proba(model, da.from_array(batch, chunks=(2, 3))).compute()
    np.testing.assert_array_equal(got, model.predict_proba(batch))
