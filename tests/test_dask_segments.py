"""fastcal.dask's ECCE, calibration ratio, report by segment, ROC AUC and calibration report against the in-memory
functions on the same (collected) columns.

The drivers' exactness over many chunkings is tested on ListRows (tests/test_engine_segments.py); here the Dask
adapter: arrays and DataFrame columns, chunks that split tie groups and groups, empty and one-row chunks, weights,
float32, strings and objects as groups. Tolerances as there: 1e-12 relative (float64 sums in another order).
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

from ._reports import assert_same_but_the_slope

RTOL = 1e-12


# Once per `make test`, not again on one thread: as tests/test_dask.py.
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _threads(request):
    if "dask_client" in request.fixturenames:  # the LocalCluster's test: its client is the scheduler
        yield
        return
    with dask.config.set(scheduler="threads"):
        yield


def _data(n, seed, dtype=np.float64, weighted=True):
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0, 1, n), 2).astype(dtype)  # ties
    g = rng.choice(["fr", "de", "it", "nl", "x"], n)
    y = (rng.uniform(size=n) < np.where(g == "fr", p ** 2, p)).astype(np.int64)
    w = rng.exponential(1.0, n) if weighted else None
    if weighted:
        w[::7] = 0.0
    return p, y, w, g


CHUNKS = [(1000,), (1, 0, 300, 299, 400), (50,) * 20]


def _arr(a, chunks):
    return da.from_array(a, chunks=(chunks,) if isinstance(chunks, tuple) else chunks)


@pytest.mark.parametrize("chunks", CHUNKS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ecce_and_ratio(chunks, dtype):
    p, y, w, _ = _data(1000, 1, dtype)
    for weights in (None, w):
        ref = fastcal.ecce(y, p, sample_weight=weights)
        wd = None if weights is None else _arr(weights, chunks)
        for n_partitions in (None, 1, 4):
            got = fd.ecce(_arr(y, chunks), _arr(p, chunks), sample_weight=wd, n_partitions=n_partitions)
            assert_allclose([got.ecce, got.std, got.ecce_sigma, got.pvalue],
                            [ref.ecce, ref.std, ref.ecce_sigma, ref.pvalue], rtol=RTOL)
        for adjust in (False, True):
            assert_allclose(fd.calibration_ratio(_arr(y, chunks), _arr(p, chunks), sample_weight=wd,
                                                 adjust_unjoined=adjust),
                            fastcal.calibration_ratio(y, p, sample_weight=weights, adjust_unjoined=adjust), rtol=RTOL)
        assert_allclose(fd.normalized_entropy(_arr(y, chunks), _arr(p, chunks), sample_weight=wd),
                        fastcal.normalized_entropy(y, p, sample_weight=weights), rtol=RTOL)
        assert_allclose(fd.proportional_ece(_arr(y, chunks), _arr(p, chunks), sample_weight=wd, n_bins=9),
                        fastcal.proportional_ece(y, p, sample_weight=weights, n_bins=9), rtol=RTOL)


def _same_report(got, ref):
    assert got.groups == ref.groups
    assert_array_equal(got.n, ref.n)
    for name in ("weight_sum", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce", "ecce_sigma",
                 "brier", "log_loss", "auc"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=RTOL, equal_nan=True, err_msg=name)
    # p-values of large sigmas: relative error grows as sigma^2 times sigma's (Kuiper's tail)
    assert_allclose(got.pvalue, ref.pvalue, rtol=RTOL * (1 + ref.ecce_sigma.max() ** 2), equal_nan=True)


@pytest.mark.parametrize("chunks", CHUNKS)
def test_segment_report_arrays(chunks):
    p, y, w, g = _data(1000, 2)
    for weights in (None, w):
        ref = fastcal.segment_report(y, p, g, sample_weight=weights, n_bins=5)
        got = fd.segment_report(_arr(y, chunks), _arr(p, chunks), _arr(g, chunks),
                                sample_weight=None if weights is None else _arr(weights, chunks), n_bins=5,
                                n_partitions=3)
        _same_report(got, ref)
    ints = (np.arange(1000) * 7919) % 13
    _same_report(fd.segment_report(_arr(y, chunks), _arr(p, chunks), _arr(ints, chunks), n_partitions=2),
                 fastcal.segment_report(y, p, ints))


def test_dataframe_columns_and_objects_with_missing_values():
    p, y, w, g = _data(900, 3, np.float32)
    groups = pd.Series(g, dtype=object)
    groups[::11] = None
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y, "w": w, "g": groups}), npartitions=5)
    ref = fastcal.segment_report(y, p, groups.to_numpy(), sample_weight=w)
    got = fd.segment_report(frame["y"], frame["p"], frame["g"], sample_weight=frame["w"])
    assert got.groups[-1] is None and ref.groups[-1] is None
    _same_report(got, ref)
    e = fd.ecce(frame["y"], frame["p"], sample_weight=frame["w"])
    assert_allclose(e.ecce, fastcal.ecce(y, p, sample_weight=w).ecce, rtol=RTOL)


def test_roc_auc_score_and_calibration_report():
    p, y, w, _ = _data(800, 4)
    chunks = (0, 1, 399, 400)
    yd, pd_, wd = _arr(y, chunks), _arr(p, chunks), _arr(w, chunks)
    assert fd.roc_auc_score(yd, pd_) == fastcal.roc_auc_score(y, p)  # integer counts: the same bits
    assert_allclose(fd.roc_auc_score(yd, pd_, sample_weight=wd), fastcal.roc_auc_score(y, p, sample_weight=w),
                    rtol=RTOL)
    assert fd.roc_auc_score(yd, pd_, n_partitions=3, pos_label=0) == fastcal.roc_auc_score(y, p, pos_label=0)
    ref = fastcal.calibration_report(y, p, sample_weight=w, n_bins=8).to_dict()
    got = fd.calibration_report(yd, pd_, sample_weight=wd, n_bins=8).to_dict()
    assert got.keys() == ref.keys()
    for key in ref:
        a, b = got[key], ref[key]
        if key in ("calibration_slope", "calibration_intercept"):
            assert_allclose(a, b, rtol=1e-9)  # Newton fits: the solver's tolerance
        elif isinstance(b, str) or b is None:
            assert a == b, key
        else:  # numbers and lists of numbers: sums in another order
            assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=1e-11, equal_nan=True,
                            err_msg=key)


def test_calibration_report_without_the_slope():
    p, y, w, _ = _data(800, 4)
    chunks = (0, 1, 399, 400)
    yd, pd_, wd = _arr(y, chunks), _arr(p, chunks), _arr(w, chunks)
    assert_same_but_the_slope(fd.calibration_report(yd, pd_, sample_weight=wd, slope=False),
                              fd.calibration_report(yd, pd_, sample_weight=wd), rtol=1e-12, atol=1e-14)
    with pytest.raises(TypeError, match="slope"):
        fd.calibration_report(yd, pd_, slope=1)


@pytest.mark.parametrize("weighted", [False, True])
def test_corp_reliability(weighted):
    p, y, w, _ = _data(900, 6, weighted=weighted)
    chunks = (0, 1, 449, 450)
    got = fd.corp_reliability(_arr(y, chunks), _arr(p, chunks), sample_weight=None if w is None else _arr(w, chunks))
    ref = fastcal.corp_reliability(y, p, sample_weight=w)
    assert_array_equal(got.x, ref.x)  # the blocks' edges: scores, exactly
    if w is None:
        assert_array_equal(got.y, ref.y)  # integer counts: the same bits
    else:
        assert_allclose(got.y, ref.y, rtol=RTOL, atol=0)  # the blocks' sums in another order
    assert got.lower is None and got.upper is None and got.n_resamples == 0
    with pytest.raises(ValueError, match="it must hold probabilities"):
        fd.corp_reliability(_arr(y, chunks), _arr(p * 2, chunks))
    # The consistency band: the in-memory draws, bit for bit without weights (counts), else to the sums' rounding.
    wd = None if w is None else _arr(w, chunks)
    got = fd.corp_reliability(_arr(y, chunks), _arr(p, chunks), sample_weight=wd, n_resamples=30, random_state=4)
    ref = fastcal.corp_reliability(y, p, sample_weight=w, n_resamples=30, random_state=4)
    assert got.n_resamples == 30 and got.band == "consistency"
    for a, b in ((got.lower, ref.lower), (got.upper, ref.upper)):
        if w is None:
            assert_array_equal(a, b)
        else:
            assert_allclose(a, b, rtol=RTOL, atol=0)
    with pytest.raises(ValueError, match="band='confidence'"):
        fd.corp_reliability(_arr(y, chunks), _arr(p, chunks), n_resamples=3, band="confidence")


@pytest.mark.parametrize("weighted", [False, True])
def test_calibration_slope_intercept(weighted):
    p, y, w, _ = _data(900, 7, weighted=weighted)
    p = np.clip(p, 0.01, 0.99)
    chunks = (0, 1, 449, 450)
    got = fd.calibration_slope_intercept(_arr(y, chunks), _arr(p, chunks),
                                         sample_weight=None if w is None else _arr(w, chunks))
    ref = fastcal.calibration_slope_intercept(y, p, sample_weight=w)
    for name in ("slope", "intercept", "calibration_in_the_large", "slope_se", "intercept_se"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=1e-9, err_msg=name)  # Newton: the tolerance
    with pytest.raises(ValueError) as mem:
        fastcal.calibration_slope_intercept(np.ones(900), p)
    with pytest.raises(ValueError) as dsk:
        fd.calibration_slope_intercept(_arr(np.ones(900), chunks), _arr(p, chunks))
    assert str(dsk.value) == str(mem.value)  # one class: the estimate does not exist


def test_errors():
    p, y, _, g = _data(50, 5)
    with pytest.raises(ValueError, match="Inconsistent numbers of samples"):
        fd.segment_report(_arr(y, (50,)), _arr(p, (50,)), _arr(g[:40], (40,)))
    with pytest.raises(ValueError, match="y_true must contain only the labels 0 and 1"):
        fd.ecce(_arr(y * 2, (25, 25)), _arr(p, (25, 25)))
    with pytest.raises(ValueError, match="fastcal.dask.roc_auc_score is binary only"):
        fd.roc_auc_score(_arr(y, (50,)), da.from_array(np.ones((50, 3))))


@pytest.mark.parametrize("name", ["smooth_ece", "score_decomposition", "roc_auc_score", "calibration_report"])
def test_binary_only_functions_name_themselves(name):
    y = _arr(np.zeros(6, dtype=np.int64), (6,))
    with pytest.raises(ValueError, match=rf"^fastcal\.dask\.{name} is binary only: y_prob must be 1-D, .* got shape "
                                         rf"\(6, 3\); .* use fastcal\.{name} in memory\.$"):
        getattr(fd, name)(y, da.from_array(np.full((6, 3), 1 / 3)))


def test_messages_name_the_arguments():
    y, p = _arr(np.array([0, 1, 1]), (3,)), _arr(np.array([0.1, np.nan, 0.7]), (3,))
    with pytest.raises(ValueError, match="y_score"):
        fd.roc_auc_score(y, p)
    for func in (fd.ecce, fd.calibration_ratio, fd.brier_score_loss):
        with pytest.raises(ValueError, match="y_prob"):
            func(y, p)


# Aligned by position, a DataFrame's string column becomes a dask array of objects, which dask warns of.
@pytest.mark.filterwarnings("ignore:Dask currently has limited support for converting pandas extension dtypes")
def test_segment_functions_take_any_partitioning():
    """As the other Dask functions: Series of one DataFrame are zipped partition by partition; columns cut
    otherwise (another DataFrame's partitions, a dask array's chunks) are aligned by position."""
    p, y, w, g = _data(600, 11)
    k = np.arange(600) % 3
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y, "w": w}), npartitions=5)
    other = dd.from_pandas(pd.DataFrame({"g": g, "k": k}), npartitions=3)
    # a DataFrame's strings reach the chunks as objects, whose groups are in the order of their first rows
    ref = fastcal.segment_report(y, p, g.astype(object), sample_weight=w)
    for groups in (other["g"], other[["g"]], frame["y"].map_partitions(
            lambda s: pd.Series(g[s.index], index=s.index, dtype=object), meta=("g", object))):
        _same_report(fd.segment_report(frame["y"], frame["p"], groups, sample_weight=frame["w"]), ref)
    _same_report(fd.segment_report(_arr(y, (600,)), _arr(p, (200, 400)), other["g"], sample_weight=frame["w"]), ref)
    _same_report(fd.segment_report(frame["y"], frame["p"], _arr(g, (100, 250, 250)), sample_weight=frame["w"]),
                 fastcal.segment_report(y, p, g, sample_weight=w))
    ref = fastcal.multicalibration_error(y, p, {"g": g, "k": k}, sample_weight=w)
    _same_mce(fd.multicalibration_error(frame["y"], frame["p"], other, sample_weight=frame["w"]), ref)
    _same_mce(fd.multicalibration_error(frame["y"], frame["p"], {"g": other["g"], "k": _arr(k, (600,))},
                                        sample_weight=frame["w"]), ref)


def _same_mce(got, ref):
    assert len(got.segment_values) == len(ref.segment_values)
    for a, b in zip(got.segment_values, ref.segment_values):
        assert list(a) == list(b)
        for k in b:
            assert (a[k] == b[k]) or (a[k] != a[k] and b[k] != b[k]), (a, b)  # NaN: the missing value's label
    assert_array_equal(got.segment_n, ref.segment_n)
    assert_allclose(got.segment_ecce, ref.segment_ecce, rtol=RTOL, atol=0)
    assert_allclose(got.segment_ecce_sigma, ref.segment_ecce_sigma, rtol=RTOL, atol=0)
    for name in ("mce", "mce_sigma", "mde", "global_ecce"):
        assert_allclose(getattr(got, name), getattr(ref, name), rtol=RTOL, err_msg=name)


@pytest.mark.parametrize("chunks", CHUNKS[1:])
def test_multicalibration_error(chunks):
    p, y, w, g = _data(1000, 6)
    rng = np.random.default_rng(7)
    age = rng.normal(40, 10, 1000)
    age[::17] = np.nan
    device = rng.integers(0, 5, 1000)
    ref = fastcal.multicalibration_error(y, p, {"country": g, "device": device, "age": age}, sample_weight=w,
                                         numerical=["age"], min_samples_per_segment=5)
    got = fd.multicalibration_error(_arr(y, chunks), _arr(p, chunks),
                                    {"country": _arr(g, chunks), "device": _arr(device, chunks),
                                     "age": _arr(age, chunks)},
                                    sample_weight=_arr(w, chunks), numerical=["age"], min_samples_per_segment=5,
                                    n_partitions=3)
    _same_mce(got, ref)


def test_multicalibration_error_dataframe():
    p, y, _, g = _data(600, 8, np.float32, weighted=False)
    frame = pd.DataFrame({"p": p, "y": y, "country": g, "k": np.arange(600) % 4})
    df = dd.from_pandas(frame, npartitions=4)
    ref = fastcal.multicalibration_error(y, p, frame[["country", "k"]], max_depth=None)
    got = fd.multicalibration_error(df["y"], df["p"], df[["country", "k"]], max_depth=None)
    _same_mce(got, ref)


def test_on_a_local_cluster_of_two_processes(dask_client):
    """The chunk functions and their arguments travel between processes (pickled): the report by object groups
    and the multicalibration error of a string and a numerical feature, on two worker processes."""
    p, y, w, g = _data(1200, 9)
    groups = np.array(g.tolist(), dtype=object)
    groups[::10] = None
    x = np.random.default_rng(10).normal(size=1200)
    chunks = (300, 0, 500, 400)
    got = fd.segment_report(_arr(y, chunks), _arr(p, chunks), _arr(groups, chunks), sample_weight=_arr(w, chunks))
    _same_report(got, fastcal.segment_report(y, p, groups, sample_weight=w))
    got = fd.multicalibration_error(_arr(y, chunks), _arr(p, chunks), {"g": _arr(g, chunks), "x": _arr(x, chunks)},
                                    sample_weight=_arr(w, chunks), numerical=["x"], n_partitions=2)
    _same_mce(got, fastcal.multicalibration_error(y, p, {"g": g, "x": x}, sample_weight=w, numerical=["x"]))


def test_segment_report_of_several_columns():
    """Two group columns (objects with None, integers): the tuples, in the in-memory order, and the in-memory
    numbers; a list of arrays and columns of one DataFrame."""
    p, y, w, g = _data(1200, 4)
    text = pd.Series(g, dtype=object)
    text[::11] = None
    k = (np.arange(1200) * 7919) % 3
    ref = fastcal.segment_report(y, p, [text.to_numpy(), k], sample_weight=w, n_bins=5)
    assert all(isinstance(t, tuple) for t in ref.groups) and ref.groups[-1][0] is None
    got = fd.segment_report(_arr(y, 250), _arr(p, 250), [_arr(text.to_numpy(), 300), _arr(k, 100)],
                            sample_weight=_arr(w, 250), n_bins=5, n_partitions=3)
    _same_report(got, ref)
    frame = dd.from_pandas(pd.DataFrame({"p": p, "y": y, "w": w, "g": text, "k": k}), npartitions=5)
    _same_report(fd.segment_report(frame["y"], frame["p"], frame[["g", "k"]], sample_weight=frame["w"], n_bins=5),
                 ref)
