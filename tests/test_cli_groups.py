"""Groups from end to end: GroupedCalibrator's edge cases, its model files, and the command line's group and
segment columns, which give the same groups from CSV, Parquet, Spark and memory."""

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fastcal
from fastcal import BetaCalibration, GroupedCalibrator, HistogramBinning, IsotonicRegression, PlattScaling, VennAbers

CALIBRATORS = [IsotonicRegression(out_of_bounds="clip"), IsotonicRegression(increasing="auto"), PlattScaling(),
               BetaCalibration(), HistogramBinning(n_bins=5), HistogramBinning(n_bins=5, strategy="quantile"),
               VennAbers()]


def _weighted(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.uniform(size=n) < p).astype(np.int64)
    g = rng.integers(0, 3, n)
    w = rng.exponential(size=n)
    return p, y, g, w


# ---------------------------------------------------------------------------
# a group whose weights are all zero: the global model's, as a small group
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("calibrator", CALIBRATORS, ids=repr)
def test_a_group_without_weight_takes_the_global_model(calibrator):
    p, y, g, w = _weighted()
    w[g == 1] = 0.0
    est = GroupedCalibrator(calibrator, min_samples_per_group=10).fit(p, y, g, sample_weight=w)
    assert est.groups_ == [0, 2]
    assert_array_equal(est.group_counts_, [np.sum(g == 0), np.sum(g == 2)])
    for k, model in zip(est.groups_, est.calibrators_):  # the other groups' models: their own fits
        rows = g == k
        own = type(calibrator)(**calibrator.get_params()).fit(p[rows], y[rows], sample_weight=w[rows])
        assert_array_equal(model.predict(p), own.predict(p))
    one = g == 1
    assert_array_equal(est.predict(p[one], g[one]), est.global_calibrator_.predict(p[one]))


def test_a_group_without_weight_in_the_engine_fit():
    """The engine's partitions (Dask's backend) leave a weightless group to the global model too."""
    da = pytest.importorskip("dask.array")
    import fastcal.dask as fd

    p, y, g, w = _weighted()
    w[g == 2] = 0.0
    ref = GroupedCalibrator(PlattScaling(), min_samples_per_group=10).fit(p, y, g, sample_weight=w)
    got = fd.fit_grouped(PlattScaling(), da.from_array(p, chunks=700), da.from_array(y, chunks=700),
                         da.from_array(g, chunks=700), sample_weight=da.from_array(w, chunks=700),
                         min_samples_per_group=10, n_partitions=3)
    assert got.groups_ == ref.groups_ == [0, 1]
    assert_array_equal(got.group_counts_, ref.group_counts_)


def test_all_weights_zero_still_names_the_weights():
    p, y, g, _ = _weighted(300)
    with pytest.raises(ValueError, match="non-zero"):
        GroupedCalibrator(PlattScaling()).fit(p, y, g, sample_weight=np.zeros(300))


# ---------------------------------------------------------------------------
# model files: the fitted models must be of the calibrator's type
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["calibrators_", "global_calibrator_"])
def test_a_model_file_whose_models_are_not_of_its_calibrator_is_refused(where):
    p, y, g, _ = _weighted()
    platt = GroupedCalibrator(PlattScaling(), min_samples_per_group=10).fit(p, y, g).to_dict()
    iso = GroupedCalibrator(IsotonicRegression(out_of_bounds="clip"), min_samples_per_group=10).fit(p, y, g).to_dict()
    forged = json.loads(json.dumps(platt))
    if where == "calibrators_":
        forged["state"]["calibrators_"][1] = iso["state"]["calibrators_"][1]
    else:
        forged["state"]["global_calibrator_"] = iso["state"]["global_calibrator_"]
    with pytest.raises(ValueError, match="invalid fastcal model: its calibrator is a PlattScaling, but it holds a "
                                         "fitted IsotonicRegression"):
        fastcal._persist.loads(json.dumps(forged))
    # all isotonic models under a Platt template: refused too
    forged = json.loads(json.dumps(iso))
    forged["params"] = platt["params"]
    with pytest.raises(ValueError, match="its calibrator is a PlattScaling"):
        fastcal._persist.loads(json.dumps(forged))
    assert isinstance(fastcal._persist.loads(json.dumps(platt)), GroupedCalibrator)
