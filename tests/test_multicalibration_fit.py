"""MulticalibrationCalibrator against a naive lasso on a dense design matrix, and its invariants."""

import json

import numpy as np
import pytest

import fastcal
from fastcal import MulticalibrationCalibrator, multicalibration_error
from fastcal.metrics import log_loss
from fastcal.multicalibration._fit import FRACTIONS

from .naive_multicalibration_fit import design, lambda_max, lasso_fit, loss


def _case(n, seed, bias=True, weighted=False):
    rng = np.random.default_rng(seed)
    a = rng.choice(3, n, p=[0.5, 0.3, 0.2])
    c = rng.choice(np.array(["x", "y", "z"]), n, p=[0.5, 0.3, 0.2])
    num = rng.normal(size=n)
    t = rng.normal(-0.3, 1.2, n)
    truth = t + (0.7 * (a == 2) - 0.6 * ((c == "z") & (num > 0)) if bias else 0.0)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-truth))).astype(np.int64)
    w = rng.uniform(0.2, 3.0, n) if weighted else None
    return 1 / (1 + np.exp(-t)), y, {"a": a, "c": c, "num": num}, w


@pytest.mark.parametrize("weighted", [False, True])
def test_fit_equals_the_naive_lasso(weighted):
    """The fitted model minimises the penalised log loss at the chosen penalty: its predictions equal those of a
    naive lasso (FISTA on the dense design of segment and bucket masks) and its objective is at most the naive one's."""
    p, y, seg, w = _case(3000, 1, weighted=weighted)
    cal = MulticalibrationCalibrator(n_buckets=3, max_depth=2).fit(p, y, seg, numerical=["num"], sample_weight=w)
    assert cal.n_rounds_ > 0
    X = design(p, seg, cal.segment_values_, 3, ["num"], cal.max_values_per_segment_feature)
    assert X.shape[1] == 1 + cal.offsets_.size
    lam = FRACTIONS[cal.n_rounds_ - 1] * lambda_max(X, y, w)
    theta = lasso_fit(X, y, w, lam)
    ww = np.ones(y.size) if w is None else w
    ours = np.concatenate([[cal.slope_], cal.offsets_.ravel()])
    objective = loss(X, y, ww, ours) + lam * np.abs(ours[1:]).sum()
    naive_objective = loss(X, y, ww, theta) + lam * np.abs(theta[1:]).sum()
    # both solvers stop at steps of 1e-10 to 1e-13: the objectives agree to well under 1e-9 of the loss
    assert objective <= naive_objective + 1e-9 * naive_objective
    q = cal.predict(p, seg)
    np.testing.assert_allclose(q, 1 / (1 + np.exp(-(X @ theta))), rtol=0, atol=1e-6)
    # the prediction is the sum of the offsets of the row's cells, in the design's order
    np.testing.assert_allclose(q, 1 / (1 + np.exp(-(X @ ours))), rtol=0, atol=1e-12)


def test_repairs_segments_and_does_no_harm():
    """A biased segment is repaired on held-out rows; on scores with no segment bias, the held-out log loss moves
    by less than 0.0005 and the multicalibration error does not rise."""
    p, y, seg, _ = _case(40_000, 2)
    pt, yt, segt, _ = _case(100_000, 3)
    cal = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"])
    before = multicalibration_error(yt, pt, segt, numerical=["num"])
    after = multicalibration_error(yt, cal.predict(pt, segt), segt, numerical=["num"])
    assert before.mce_sigma > 10 and after.mce_sigma < before.mce_sigma / 3
    assert log_loss(yt, cal.predict(pt, segt)) < log_loss(yt, pt) - 0.005
    p, y, seg, _ = _case(40_000, 4, bias=False)
    pt, yt, segt, _ = _case(100_000, 5, bias=False)
    cal = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"])
    q = cal.predict(pt, segt)
    assert abs(log_loss(yt, q) - log_loss(yt, pt)) < 5e-4
    assert (multicalibration_error(yt, q, segt, numerical=["num"]).mce_sigma
            <= multicalibration_error(yt, pt, segt, numerical=["num"]).mce_sigma + 0.1)


def test_same_bits_at_any_thread_count():
    """Every pass is a fixed-chunk reduction: one thread and two give the same model and predictions, bit for bit
    (300k rows: the passes run as several tasks)."""
    p, y, seg, w = _case(300_000, 6, weighted=True)
    results = []
    for threads in (1, 2):
        fastcal.set_num_threads(threads)
        try:
            cal = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"], sample_weight=w)
            results.append((cal.slope_, cal.offsets_.tobytes(), cal.predict(p, seg).tobytes()))
        finally:
            fastcal.set_num_threads(None)
    assert results[0] == results[1]


def test_weights_scaled_change_nothing():
    p, y, seg, w = _case(5000, 7, weighted=True)
    a = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"], sample_weight=w)
    b = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"], sample_weight=w * 37.3)
    assert a.n_rounds_ == b.n_rounds_
    np.testing.assert_allclose(a.predict(p, seg), b.predict(p, seg), rtol=1e-9)


def test_unseen_and_folded_values():
    """A value unseen at fit gets no correction from its feature's segments; one folded into "__OTHER" gets the
    "__OTHER" segments'; a numerical value past the bins takes the last bin."""
    rng = np.random.default_rng(8)
    n = 20_000
    p = rng.uniform(0.1, 0.9, n)
    country = rng.choice(np.array(["fr", "de", "us", "it", "es"]), n, p=[0.4, 0.3, 0.1, 0.1, 0.1])
    lg = np.log(p / (1 - p)) + 0.8 * (country == "it") + 0.8 * (country == "es")
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-lg))).astype(int)
    cal = MulticalibrationCalibrator(max_values_per_segment_feature=3, n_buckets=1).fit(p, y, {"country": country})
    names = [v.get("country") for v in cal.segment_values_]
    assert names[0] is None and sorted(names[1:]) == ["__OTHER", "de", "fr"]  # in order of appearance
    other = cal.offsets_[names.index("__OTHER")].sum()
    assert other > 0.2  # "us", "it" and "es", folded, mostly biased
    q = cal.predict(np.full(3, 0.5), {"country": np.array(["it", "jp", "fr"])})
    assert cal.slope_ == pytest.approx(1, abs=0.1)
    base = cal.offsets_[0].sum()
    z = np.log(q / (1 - q)) - cal.slope_ * 0.0  # the logit of 0.5 is 0
    np.testing.assert_allclose(z, [base + other, base, base + cal.offsets_[names.index("fr")].sum()], rtol=0,
                               atol=1e-12)


def test_model_file_round_trip_and_tampering(tmp_path):
    p, y, seg, w = _case(5000, 9, weighted=True)
    cal = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"], sample_weight=w)
    cal.save(tmp_path / "m.json")
    text = (tmp_path / "m.json").read_text()
    loaded = fastcal.load(tmp_path / "m.json")
    assert type(loaded) is MulticalibrationCalibrator
    np.testing.assert_array_equal(loaded.predict(p, seg), cal.predict(p, seg))
    assert loaded.segment_values_ == cal.segment_values_
    data = json.loads(text)
    data["state"]["segment_digits_"]["data"][-1] = 99
    with pytest.raises(ValueError, match="invalid fastcal model"):
        _load_text(tmp_path, json.dumps(data))
    data = json.loads(text)
    data["state"]["feature_counts_"]["data"][0] += 1
    with pytest.raises(ValueError, match="invalid fastcal model"):
        _load_text(tmp_path, json.dumps(data))


def _load_text(tmp_path, text):
    (tmp_path / "bad.json").write_text(text)
    return fastcal.load(tmp_path / "bad.json")


def test_inputs_dtypes_and_errors():
    p, y, seg, _ = _case(3000, 10)
    cal = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"])
    p32 = p.astype(np.float32)
    assert cal.predict(p32, seg).dtype == np.float32
    ro = p.copy()
    ro.flags.writeable = False
    before = {k: v.copy() for k, v in seg.items()}
    np.testing.assert_array_equal(cal.predict(ro, seg), cal.predict(p[::-1].copy()[::-1], seg))
    strided = np.repeat(p, 2)[::2]
    np.testing.assert_array_equal(cal.predict(strided, seg), cal.predict(p, seg))
    for k in seg:
        np.testing.assert_array_equal(seg[k], before[k])
    with pytest.raises(ValueError, match="segments"):
        MulticalibrationCalibrator().fit(p, y, {"a": seg["a"][:-1]})
    with pytest.raises(ValueError, match="at least one feature"):
        MulticalibrationCalibrator().fit(p, y, {})
    bad = seg["num"].copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match="num"):
        MulticalibrationCalibrator().fit(p, y, {"num": bad}, numerical=["num"])
    with pytest.raises(ValueError, match="scores"):
        MulticalibrationCalibrator().fit(p[:-1], y, seg)
    with pytest.raises(ValueError, match="lacks the features"):
        cal.predict(p, {"a": seg["a"]})
    with pytest.raises(ValueError, match="n_buckets"):
        MulticalibrationCalibrator(n_buckets=0).fit(p, y, seg)
    with pytest.raises(TypeError, match="n_folds"):
        MulticalibrationCalibrator(n_folds=2.5).fit(p, y, seg)
    with pytest.raises(ValueError, match="n_folds must be at most 255, got 256"):  # a row's fold is a uint8
        MulticalibrationCalibrator(n_folds=256).fit(p, y, seg)
    with pytest.raises(fastcal.NotFittedError):
        MulticalibrationCalibrator().predict(p, seg)


def test_prediction_numbers_patterns_or_finds_each_rows_cells(monkeypatch):
    """Predictions through the numbered patterns (the fast path) and through each row's own cells (past
    KEY_LIMIT patterns) are the same bits; NaN in a numerical feature is a value of its own."""
    p, y, seg, w = _case(4000, 11, weighted=True)
    seg["num"][::50] = np.nan
    cal = MulticalibrationCalibrator().fit(p, y, seg, numerical=["num"], sample_weight=w)
    assert any(v.get("num") != v.get("num") for v in cal.segment_values_)  # NaN: a segment of its own
    expected = cal.predict(p, seg)
    monkeypatch.setattr("fastcal.multicalibration._fit.KEY_LIMIT", 1)
    np.testing.assert_array_equal(cal.predict(p, seg), expected)


def test_errors_name_the_arguments():
    p, y, seg, _ = _case(500, 12)
    cases = [
        (dict(scores=np.where(seg["a"] == 0, np.nan, p)), "scores"),
        (dict(scores=p * 2), "scores"),
        (dict(y=2 * y - 1), "y must contain only the labels 0 and 1"),
        (dict(sample_weight=np.zeros(500)), "sample_weight"),
        (dict(sample_weight=-np.ones(500)), "sample_weight"),
        (dict(segments={"a": np.c_[seg["a"], seg["a"]]}), "segments\\['a'\\]"),
        (dict(segments=[seg["a"]]), "segments must be a mapping"),
        (dict(numerical=["zz"]), "numerical"),
    ]
    for change, message in cases:
        args = {**dict(scores=p, y=y, segments=seg, sample_weight=None, numerical=["num"]), **change}
        with pytest.raises((ValueError, TypeError), match=message):
            MulticalibrationCalibrator().fit(args["scores"], args["y"], args["segments"],
                                             sample_weight=args["sample_weight"], numerical=args["numerical"])


def test_estimator_conventions():
    """scikit-learn's estimator checks call fit(X, y) and do not apply (fit takes the segments); the conventions
    they check hold: parameters stored untouched, clone, pickling, fitted attributes only after fit."""
    import pickle

    from sklearn.base import clone

    est = MulticalibrationCalibrator(max_depth=2, n_buckets=4, n_folds=3)
    assert est.get_params() == {"max_depth": 2, "max_values_per_segment_feature": 6, "min_samples_per_segment": 10,
                                "max_n_segments": 1000, "n_buckets": 4, "n_folds": 3}
    assert clone(est).get_params() == est.get_params()
    assert not hasattr(est, "offsets_")
    p, y, seg, _ = _case(3000, 13)
    est.fit(p, y, seg, numerical=["num"])
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(p, seg), est.predict(p, seg))
    assert not hasattr(clone(est), "offsets_")


def _read_prediction_data(d, p, columns):
    """A plain reading of :class:`fastcal._prediction.SegmentOffsets` (its docstring, row by row), with Python's
    ``math`` functions."""
    import math

    def digit(feature, value):
        if isinstance(value, np.generic):
            value = value.item()
        if feature.numerical:
            value = float("nan") if value is None else float(value)
            if feature.edges.size:
                below = int(np.sum(feature.edges < value))
                value = feature.edges.size if value != value else min(max(below - 1, 0), feature.edges.size - 2)
        if isinstance(value, float) and value != value:
            value = None
        for v, g in zip(feature.values, feature.digits.tolist()):
            if (v is None) == (value is None) and (v is None or (type(v) is type(value) and v == value)):
                return g
        return None

    out = np.empty(p.shape[0])
    for i in range(p.shape[0]):
        x = float(p[i])
        edges = d.bucket_edges
        k = min(max(int(np.sum(edges < x)) - 1, 0), edges.size - 2) if edges.size >= 2 else 0
        acc = d.base_own
        acc += float(d.base_by_bucket[k])
        digits = [digit(f, columns[f.name][i]) for f in d.features]
        for t in d.terms:
            ds = [digits[f] for f in t.features]
            if None in ds:
                continue
            at = np.flatnonzero(t.keys == sum(v * m for v, m in zip(ds, t.mult)))
            if at.size:
                acc += float(t.own[at[0]])
                acc += float(t.by_bucket[at[0], k])
        v = min(max(x, d.eps), 1 - d.eps)
        z = d.slope * (math.log(v) - math.log1p(-v)) + acc
        e = math.exp(-abs(z))
        out[i] = 1 / (1 + e) if z >= 0 else e / (1 + e)
    return out


def test_prediction_data_says_what_predict_computes():
    """The prediction as data (what fastcal.spark.predict writes as SQL), read row by row, gives predict's results
    to 4 ulp (fastcal's exp is its own, within 1.1 ulp, and Python's the C library's: q = 1 / (1 + e) or
    e / (1 + e) carries e's relative error, plus a rounding); a segment's offset wrong or missing would be off by
    far more. Unseen values, NaN in a binned and in a categorical feature, a number the model holds as text."""
    p, y, seg, _ = _case(6000, 8)
    seg["c"] = seg["c"].astype(object)
    seg["c"][::41] = None
    seg["num"][::37] = np.nan
    cal = MulticalibrationCalibrator(n_buckets=4).fit(p, y, seg, numerical=["num"])
    data = cal.prediction_data()
    assert len(data.terms) >= 2 and data.features[2].edges.size >= 2
    kept = sum(t.keys.size for t in data.terms) + 1
    assert kept == int(np.count_nonzero(np.any(cal.offsets_ != 0, axis=1))) + (not np.any(cal.offsets_[0]))
    q, r = _case(3000, 9)[0], {k: v.copy() for k, v in _case(3000, 9)[2].items()}
    r["c"] = r["c"].astype(object)
    r["c"][::13], r["a"][::17] = "unseen", 7
    want = cal.predict(q, r)
    got = _read_prediction_data(data, q, r)
    assert np.all(np.abs(got - want) <= 4 * np.spacing(want))


def test_the_docstring_states_the_path():
    """The estimator's docstring says how many penalties the path has, their range, and when it stops."""
    from fastcal.multicalibration._fit import PATIENCE

    doc = " ".join(MulticalibrationCalibrator.__doc__.split())
    words = {1: "one", 2: "two", 3: "three"}
    assert f"along {len(FRACTIONS)} fractions" in doc
    assert np.isclose(FRACTIONS[0], 10 ** -0.5) and np.isclose(FRACTIONS[-1], 1e-5)
    assert r"10^{-1/2}, 10^{-1}, \ldots, 10^{-5}" in doc
    assert f"stopping {words[PATIENCE]} steps after the best" in doc
