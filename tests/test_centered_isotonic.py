"""Centered isotonic regression (IsotonicRegression(centered=True)): naive reference, invariants, every layer."""

import json

import dask
import dask.array as da
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

from fastcal import IsotonicRegression, load, roc_auc_score
from fastcal import dask as fd
from fastcal import outofcore as oc
from fastcal.cli import main

from . import naive_isotonic as naive
from .strategies import scores_and_labels

HYPO = settings(max_examples=60, deadline=None)


def tol(x, n):
    """Knot tolerance between two centred fits whose float64 sums (weights, weight x score, weight x label)
    run in other orders: each sum of n terms of one sign is within n eps of the other (relative), so
    centres and means agree to about 4 n eps; float32 knots are rounded to float32 (one ulp each)."""
    if x.dtype == np.float32:
        return dict(rtol=2 * np.finfo(np.float32).eps, atol=1e-30)
    scale = max(1.0, float(np.max(np.abs(x), initial=0.0)))
    return dict(rtol=(4 * n + 8) * np.finfo(np.float64).eps, atol=(4 * n + 8) * np.finfo(np.float64).eps * scale)


@HYPO
@given(scores_and_labels(max_size=120), st.sampled_from([False, True, "zeros"]), st.booleans())
def test_matches_naive_reference(data, weighted, increasing):
    x, y, _ = data
    rng = np.random.default_rng(len(x))
    w = None
    if weighted:
        w = rng.uniform(0.1, 3.0, len(x))
        if weighted == "zeros" and len(x) > 1:
            w[rng.random(len(x)) < 0.3] = 0.0
            w[0] = 1.0
    iso = IsotonicRegression(centered=True, increasing=increasing).fit(x, y, sample_weight=w)
    xs, ys = naive.centered_isotonic_fit(x, y, w, increasing=increasing)
    assert iso.X_thresholds_.dtype == iso.y_thresholds_.dtype == x.dtype
    assert iso.X_thresholds_.shape == xs.shape
    assert_allclose(iso.X_thresholds_, xs, **tol(x, len(x)))
    assert_allclose(iso.y_thresholds_, ys, **tol(ys, len(x)))


@HYPO
@given(scores_and_labels(max_size=200, binary=False), st.booleans())
def test_strictly_monotone_between_the_end_centres(data, increasing):
    x, y, _ = data
    iso = IsotonicRegression(centered=True, increasing=increasing).fit(x, y)
    xs, ys = iso.X_thresholds_, iso.y_thresholds_
    assert np.all(np.diff(xs) > 0)
    # the end knots (X_min_, X_max_) may repeat the end blocks' values; between the centres every step moves
    steps = np.diff(ys)
    assert np.all(steps >= 0 if increasing else steps <= 0)
    assert np.all(steps[1:-1] != 0)
    step = IsotonicRegression(increasing=increasing).fit(x, y)
    # the blocks, and so the values, are the step fit's
    assert_array_equal(np.unique(iso.y_thresholds_), np.unique(step.y_thresholds_))


def test_ranking_kept_and_auc():
    rng = np.random.default_rng(0)
    x = rng.random(5000)
    y = (rng.random(5000) < x**3).astype(np.uint8)
    step = IsotonicRegression(out_of_bounds="clip").fit(x, y)
    cir = IsotonicRegression(out_of_bounds="clip", centered=True).fit(x, y)
    xs = cir.X_thresholds_
    t = np.sort(rng.uniform(xs[1], xs[-2], 2000))
    p = cir.predict(t)
    assert np.all(np.diff(p) > 0)  # strictly increasing between the first and last centre
    inside = (x > xs[1]) & (x < xs[-2])
    # a strictly increasing map keeps the ranking, so the AUC of the scores there; the step fit ties them
    assert roc_auc_score(y[inside], cir.predict(x[inside])) == roc_auc_score(y[inside], x[inside])
    assert roc_auc_score(y[inside], step.predict(x[inside])) != roc_auc_score(y[inside], x[inside])
    # flat beyond the end centres up to the data's range, then out_of_bounds
    assert cir.predict([cir.X_min_])[0] == cir.y_thresholds_[0] == cir.predict([xs[1]])[0]
    assert np.isnan(IsotonicRegression(centered=True).fit(x, y).predict([x.max() + 1])[0])


def test_hand_example():
    x = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    y = np.array([0.0, 1.0, 0.0, 1.0, 1.0, 1.0])
    iso = IsotonicRegression(centered=True).fit(x, y)
    # PAV blocks: {1} -> 0, {2, 3} -> 0.5 (centre 2.5), {4, 5, 6} -> 1 (centre 5)
    assert_array_equal(iso.X_thresholds_, [1.0, 2.5, 5.0, 6.0])
    assert_array_equal(iso.y_thresholds_, [0.0, 0.5, 1.0, 1.0])
    assert_allclose(iso.predict([1.75, 4.0]), [0.25, 0.8])


def _data(n, seed, dtype=np.float64):
    rng = np.random.default_rng(seed)
    x = np.round(rng.random(n), 3).astype(dtype)  # ties across partition boundaries
    y = (rng.random(n) < x).astype(np.uint8)
    w = rng.uniform(0.5, 2, n)
    return x, y, w


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("weighted", [False, True])
def test_out_of_core_and_dask_equal_in_memory(dtype, weighted):
    n = 40_000
    x, y, w = _data(n, 1, dtype)
    w = w if weighted else None
    ref = IsotonicRegression(centered=True, out_of_bounds="clip").fit(x, y, sample_weight=w)
    got = oc.fit_isotonic(x, y, w, memory_budget=1 << 20, centered=True, out_of_bounds="clip")  # several parts
    with dask.config.set(scheduler="synchronous"):
        X = da.from_array(x, chunks=7000)
        Y = da.from_array(y, chunks=7000)
        W = None if w is None else da.from_array(w, chunks=7000)
        got_dask = fd.fit_isotonic(X, Y, W, n_partitions=5, centered=True, out_of_bounds="clip")
    for fit in (got, got_dask):
        assert fit.centered
        assert fit.X_thresholds_.shape == ref.X_thresholds_.shape
        assert_allclose(fit.X_thresholds_, ref.X_thresholds_, **tol(x, n))
        assert_allclose(fit.y_thresholds_, ref.y_thresholds_, **tol(ref.y_thresholds_, n))
        if not weighted and dtype == np.float64:
            # unit weights: counts and label sums are exact; only the sums of scores run in other orders
            assert_array_equal(fit.y_thresholds_, ref.y_thresholds_)


def test_model_file_and_cli(tmp_path):
    x, y, _ = _data(3000, 2)
    iso = IsotonicRegression(centered=True, out_of_bounds="clip").fit(x, y)
    iso.save(tmp_path / "m.json")
    back = load(tmp_path / "m.json")
    assert back.centered is True
    assert_array_equal(back.predict(x), iso.predict(x))
    np.savez(tmp_path / "d.npz", score=x, label=y)
    for extra in ([], ["--memory-budget", "1M"]):
        assert main(["fit", "--method", "centered-isotonic", "--score-col", "score", "--label-col", "label", "-q",
                     *extra, str(tmp_path / "d.npz"), "-o", str(tmp_path / "cli.json")]) == 0
        model = load(tmp_path / "cli.json")
        assert model.centered and json.loads((tmp_path / "cli.json").read_text())["params"]["centered"] is True
        assert_allclose(model.X_thresholds_, iso.X_thresholds_, **tol(x, 3000))
    assert main(["apply", str(tmp_path / "cli.json"), str(tmp_path / "d.npz"), "-o", str(tmp_path / "o.npz"),
                 "-q"]) == 0


def test_bad_parameter():
    with pytest.raises(ValueError, match="centered"):
        IsotonicRegression(centered="yes").fit([0.1, 0.2], [0, 1])


def test_model_files_from_before_centered_load_as_step_fits():
    iso = IsotonicRegression().fit([0.1, 0.2, 0.3], [0, 1, 1])
    data = iso.to_dict()
    del data["params"]["centered"]
    back = IsotonicRegression.from_dict(data)
    assert back.centered is False
    assert_array_equal(back.X_thresholds_, iso.X_thresholds_)
    data["params"]["unknown"] = 1
    with pytest.raises(ValueError, match="params"):
        IsotonicRegression.from_dict(data)


def test_score_sums_kernel_and_threads():
    # Each sorted row adds its weight times score to the last block whose first score is <= it.
    from fastcal.isotonic import _kernels as kernels

    from .threads import serial_and_parallel

    rng = np.random.default_rng(8)
    for nb in (1, 2, 7, 300):
        xf = np.sort(rng.choice(np.unique(np.round(rng.normal(size=5 * nb), 3)), nb, replace=False))  # increasing
        x = np.sort(np.concatenate([xf, rng.normal(size=2000) * 0.5 + xf.mean(), [xf[0] - 1, xf[-1] + 1]]))
        p = rng.uniform(-2, 2, x.shape[0])
        idx = np.maximum(np.searchsorted(xf, x, side="right") - 1, 0)
        for kind, wk in ((0, np.ones_like(p)), (1, p), (2, np.abs(p))):
            swx = np.zeros(nb)
            kernels.score_sums(x, p, kind, xf, nb, swx)
            expected = np.zeros(nb)
            for i in range(x.shape[0]):  # row order, as the kernel adds
                expected[idx[i]] += wk[i] * x[i]
            assert_array_equal(swx, expected)
    x, y, w = _data(5000, 3)
    serial, parallel = serial_and_parallel(
        lambda: IsotonicRegression(centered=True).fit(x, y, sample_weight=w).X_thresholds_)
    assert_array_equal(serial, parallel)
