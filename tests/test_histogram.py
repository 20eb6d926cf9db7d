"""Histogram binning: against a bin-by-bin naive reference, and in every layer."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import HistogramBinning, InvalidParameterError, NotFittedError

from . import naive_beta as naive
from .strategies import probabilities
from .threads import serial_and_parallel

HYPO = settings(max_examples=60, deadline=None)


@HYPO
@given(data=probabilities(weighted=True))
def test_hypothesis_matches_the_naive_reference(data):
    y, p, w = data
    for strategy in ("uniform", "quantile"):
        for n_bins in (1, 3, 10):
            cal = HistogramBinning(n_bins=n_bins, strategy=strategy).fit(p, y, w)
            edges, values = naive.histogram_binning(p, y, w, n_bins, strategy)
            assert_array_equal(cal.bin_edges_, edges)
            # weighted means of 0/1 labels: sums of <= N terms of one sign, in another order: N eps relative
            assert_allclose(cal.bin_values_, values, rtol=len(p) * np.finfo(np.float64).eps, atol=0)
            q = cal.predict(p)
            assert q.dtype == np.float64
            # each point gets its bin's value: the naive bin of each point, found by its own rule
            expected = np.array([values[_naive_bin(x, edges)] for x in p.astype(np.float64)])
            assert_allclose(q, expected, rtol=len(p) * np.finfo(np.float64).eps, atol=0)


def _naive_bin(x, edges):
    for k in range(len(edges) - 1):
        if (edges[k] < x <= edges[k + 1]) or (k == 0 and edges[0] <= x <= edges[1]):
            return k
    raise AssertionError(x)


def test_empty_bins_get_their_midpoint():
    p = np.array([0.05, 0.06, 0.95])
    y = np.array([0, 1, 1])
    cal = HistogramBinning(n_bins=4).fit(p, y)
    assert_allclose(cal.bin_values_, [0.5, 0.375, 0.625, 1.0])
    assert_allclose(cal.bin_weights_, [2, 0, 0, 1])
    assert_allclose(cal.predict([0.3, 0.6, 0.0, 1.0]), [0.375, 0.625, 0.5, 1.0])


def test_quantile_edges_cover_the_unit_interval():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.2, 0.4, 1000)
    y = rng.random(1000) < p
    cal = HistogramBinning(n_bins=5, strategy="quantile").fit(p, y)
    assert cal.bin_edges_[0] == 0.0 and cal.bin_edges_[-1] == 1.0
    assert_allclose(cal.bin_edges_[1:-1], np.percentile(p, [20, 40, 60, 80]), rtol=1e-15)
    assert_allclose(cal.bin_weights_, [200] * 5)
    assert cal.predict([0.0])[0] == cal.bin_values_[0] and cal.predict([1.0])[0] == cal.bin_values_[-1]


def test_weights():
    rng = np.random.default_rng(1)
    p = rng.random(500)
    y = (rng.random(500) < p).astype(int)
    k = rng.integers(0, 4, 500)
    a = HistogramBinning(n_bins=7).fit(p, y, k.astype(float))
    b = HistogramBinning(n_bins=7).fit(np.repeat(p, k), np.repeat(y, k))
    assert_allclose(a.bin_values_, b.bin_values_, rtol=1e-13)
    c = HistogramBinning(n_bins=7).fit(p, y, k * 1e6)
    assert_allclose(c.bin_values_, a.bin_values_, rtol=1e-13)


def test_threads_do_not_change_the_result():
    rng = np.random.default_rng(2)
    p = rng.random(200_000)
    y = rng.random(p.size) < p
    for strategy in ("uniform", "quantile"):
        serial, parallel = serial_and_parallel(lambda: HistogramBinning(n_bins=20, strategy=strategy).fit(p, y))
        assert_array_equal(serial.bin_values_, parallel.bin_values_)
        assert_array_equal(serial.bin_edges_, parallel.bin_edges_)


@pytest.mark.parametrize("p, y, w, exc, match", [
    ([0.1, 1.5], [0, 1], None, ValueError, r"p must contain probabilities in \[0, 1\]"),
    ([0.1, np.nan], [0, 1], None, ValueError, "p must be finite"),
    ([0.1, 0.5], [0, 2], None, ValueError, "y must contain only the labels 0 and 1"),
    ([0.1, 0.5, 0.7], [0, 1], None, ValueError, "Inconsistent numbers of samples"),
    ([0.1, 0.5], [0, 1], [1.0, -1.0], ValueError, "sample_weight"),
    ([], [], None, ValueError, "p must have at least 1 element"),
])
def test_bad_input_names_the_argument(p, y, w, exc, match):
    with pytest.raises(exc, match=match):
        HistogramBinning().fit(p, y, w)


@pytest.mark.parametrize("params, match", [
    (dict(n_bins=0), r"n_bins must be an integer in \[1, 1048576\]"),
    (dict(strategy="median"), "strategy must be 'uniform' or 'quantile'"),
])
def test_bad_parameters(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        HistogramBinning(**params).fit([0.1, 0.5], [0, 1])


def test_estimator_api_and_model_files(tmp_path):
    from sklearn.base import clone

    cal = HistogramBinning(n_bins=5, strategy="quantile")
    assert repr(cal) == "HistogramBinning(n_bins=5, strategy='quantile')"
    assert clone(cal).get_params() == {"n_bins": 5, "strategy": "quantile"}
    with pytest.raises(NotFittedError):
        cal.predict([0.5])
    rng = np.random.default_rng(3)
    p = rng.random(300).astype(np.float32)
    y = rng.random(300) < p
    cal.fit(p, y)
    assert_array_equal(pickle.loads(pickle.dumps(cal)).predict(p), cal.predict(p))
    with pytest.raises(ValueError, match=r"p must contain probabilities in \[0, 1\]"):
        cal.predict([-0.5])
    cal.save(tmp_path / "h.json")
    loaded = fastcal.load(tmp_path / "h.json")
    assert type(loaded) is HistogramBinning and loaded.get_params() == cal.get_params()
    assert_array_equal(loaded.predict(p), cal.predict(p))


@pytest.mark.parametrize("change, match", [
    (lambda d: d["state"]["bin_values_"]["data"].__setitem__(0, 1.5), r"bin_values_ must be in \[0, 1\]"),
    (lambda d: d["state"]["bin_edges_"]["data"].__setitem__(0, 0.1), "rise from 0 to 1"),
    (lambda d: d["params"].__setitem__("n_bins", 4), "needs 5 bin_edges_"),
    (lambda d: d["state"]["bin_weights_"]["data"].__setitem__(0, -1.0), "non-negative"),
    (lambda d: d["params"].__setitem__("strategy", "x"), "strategy must be"),
])
def test_invalid_model_files(change, match):
    rng = np.random.default_rng(4)
    p = rng.random(100)
    data = HistogramBinning(n_bins=5).fit(p, rng.random(100) < p).to_dict()
    change(data)
    with pytest.raises(ValueError, match=match):
        fastcal._persist.from_dict(data)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_calibrated_classifier_cv(n_classes):
    from sklearn.datasets import make_classification
    from sklearn.frozen import FrozenEstimator
    from sklearn.naive_bayes import GaussianNB

    X, y = make_classification(2000, n_informative=5, n_classes=n_classes, random_state=0)
    clf = GaussianNB().fit(X[:1000], y[:1000])
    cal = fastcal.CalibratedClassifierCV(FrozenEstimator(clf), method="histogram").fit(X[1000:], y[1000:])
    P = clf.predict_proba(X[1000:])
    columns = [1] if n_classes == 2 else range(n_classes)
    expected = np.column_stack([HistogramBinning().fit(P[:, j], y[1000:] == j).predict(P[:, j]) for j in columns])
    got = cal.predict_proba(X[1000:])
    if n_classes == 2:
        assert_array_equal(got[:, 1], expected[:, 0])
    else:
        assert_allclose(got, expected / expected.sum(axis=1, keepdims=True), rtol=1e-15)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_dask_equals_in_memory(strategy):
    import dask.array as da

    import fastcal.dask

    rng = np.random.default_rng(6)
    p = rng.random(20000)
    p[:500] = 0.5  # ties at a quantile
    y = (rng.random(20000) < p).astype(np.int64)
    w = rng.uniform(0.5, 2.0, 20000)
    ref = HistogramBinning(n_bins=8, strategy=strategy).fit(p, y, w)
    fit = fastcal.dask.fit_histogram(da.from_array(p, chunks=3000), da.from_array(y, chunks=3000),
                                     da.from_array(w, chunks=3000), n_bins=8, strategy=strategy)
    assert type(fit) is HistogramBinning and fit.get_params() == ref.get_params()
    assert_array_equal(fit.bin_edges_, ref.bin_edges_)  # exact order statistics on both sides
    # per-bin sums of <= N positive terms added in other groupings: N eps relative
    assert_allclose(fit.bin_values_, ref.bin_values_, rtol=20000 * np.finfo(np.float64).eps)
    assert_array_equal(fastcal.dask.predict(fit, da.from_array(p, chunks=3000)).compute(), fit.predict(p))
    with pytest.raises(ValueError, match="y_prob"):
        fastcal.dask.fit_histogram(da.from_array(p + 1, chunks=3000), da.from_array(y, chunks=3000))


def test_cli_fit_and_apply(tmp_path):
    from fastcal.cli import main

    rng = np.random.default_rng(5)
    p = rng.random(2000)
    y = (rng.random(2000) < p ** 2).astype(np.int64)
    np.savez(tmp_path / "d.npz", p=p, y=y)
    assert main(["fit", "-q", "--method", "histogram", "--n-bins", "7", "--strategy", "quantile", "--score-col", "p",
                 "--label-col", "y", str(tmp_path / "d.npz"), "-o", str(tmp_path / "m.json")]) == 0
    ref = HistogramBinning(n_bins=7, strategy="quantile").fit(p, y)
    assert_array_equal(fastcal.load(tmp_path / "m.json").bin_values_, ref.bin_values_)
    assert main(["apply", "-q", str(tmp_path / "m.json"), str(tmp_path / "d.npz"), "--score-col", "p",
                 "-o", str(tmp_path / "out.npy")]) == 0
    assert_array_equal(np.load(tmp_path / "out.npy"), ref.predict(p))
    # out of core (fastcal.outofcore.fit_histogram): the same edges, the values to the rounding of chunk sums
    assert main(["fit", "-q", "--method", "histogram", "--n-bins", "7", "--strategy", "quantile", "--memory-budget",
                 "1M", "--batch-rows", "300", "--score-col", "p", "--label-col", "y", str(tmp_path / "d.npz"), "-o",
                 str(tmp_path / "m2.json")]) == 0
    chunked = fastcal.load(tmp_path / "m2.json")
    assert_array_equal(chunked.bin_edges_, ref.bin_edges_)
    np.testing.assert_allclose(chunked.bin_values_, ref.bin_values_, rtol=1e-12, atol=0)
