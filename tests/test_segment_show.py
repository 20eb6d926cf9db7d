"""Showing segments: the worst first, by their real values, with every column under its full name."""

import numpy as np
import pandas as pd
import pytest

import fastcal


def _data(n=20_000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.1, 0.9, n)
    country = rng.choice(["de", "fr", "united states"], n)
    device = rng.choice(["ios", "web"], n)
    bad = (country == "fr") & (device == "ios")
    y = rng.uniform(size=n) < np.where(bad, p**2, p)
    return y, p, country, device


def test_segment_report_worst_orders_by_the_column_greatest_first_nan_last():
    y, p, country, device = _data()
    groups = np.char.add(np.char.add(country, "/"), device)
    w = np.ones(p.size)
    w[groups == "de/web"] = 0.0  # a group of zero weight: NaN sigma, listed last
    r = fastcal.segment_report(y, p, groups, sample_weight=w)
    for by in ("ecce_sigma", "log_loss", "n"):
        key = np.asarray(getattr(r, by), dtype=float)
        want = sorted(range(len(r.groups)), key=lambda i: (np.isnan(key[i]), -key[i] if not np.isnan(key[i]) else 0, i))
        worst = r.worst(by=by)
        assert worst.groups == [r.groups[i] for i in want]
        np.testing.assert_array_equal(worst.ecce, r.ecce[want])
        np.testing.assert_array_equal(worst.n, r.n[want])
    assert r.worst(1).groups == ["fr/ios"]
    assert r.worst().groups[-1] == "de/web"
    assert r.worst(0).groups == [] and r.worst(0).n.shape == (0,)
    assert r.worst(100).groups == r.worst().groups


@pytest.mark.parametrize("bad", [dict(by="sigma"), dict(k=-1), dict(k=1.5), dict(k=True)])
def test_segment_report_worst_refuses_bad_arguments(bad):
    y, p, country, _ = _data(300)
    with pytest.raises(ValueError, match="by must be|k must be"):
        fastcal.segment_report(y, p, country).worst(**bad)


def test_segment_report_prints_every_column_by_its_full_name_worst_first():
    y, p, country, _ = _data()
    text = str(fastcal.segment_report(y, p, country))
    lines = text.splitlines()
    header = lines[1].split()
    assert header == ["group", "n", "base_rate", "mean_prediction", "calibration_ratio", "ece", "ecce",
                      "ecce_sigma", "pvalue", "brier", "log_loss", "auc"]
    assert lines[2].split()[0] == "fr"  # the miscalibrated group first
    assert "united states" in text  # a long group name, whole
    assert len({len(line) for line in lines[1:]}) == 1  # aligned columns
    weighted = str(fastcal.segment_report(y, p, country, sample_weight=np.full(p.size, 0.5)))
    assert weighted.splitlines()[1].split()[:3] == ["group", "n", "weight_sum"]


def test_multicalibration_worst_names_the_segment_by_its_values():
    y, p, country, device = _data()
    r = fastcal.multicalibration_error(y, p, {"country": country, "device": device},
                                       max_values_per_segment_feature=3)
    worst = r.worst(None)
    sigma = np.asarray(r.segment_ecce_sigma)
    want = sorted(range(sigma.size), key=lambda s: (-sigma[s], s))
    assert [w["segment"] for w in worst] == want
    assert worst[0]["values"] == {"country": "fr", "device": "ios"}
    assert worst[0]["ecce_sigma"] == r.mce_sigma
    assert worst[0]["n"] == int(np.sum((country == "fr") & (device == "ios")))
    assert len(r.worst()) == min(10, sigma.size) and r.worst(0) == []
    with pytest.raises(ValueError, match="k must be"):
        r.worst(-1)


def test_multicalibration_to_pandas_has_a_column_per_feature():
    y, p, country, device = _data()
    r = fastcal.multicalibration_error(y, p, {"country": country, "device": device})
    df = r.to_pandas()
    assert list(df.columns) == ["country", "device", "n", "ecce", "ecce_sigma", "pvalue"]
    assert len(df) == len(r.segment_values)
    assert df.iloc[0][["country", "device"]].isna().all()  # segment 0: all rows
    for s, values in enumerate(r.segment_values):
        row = df.iloc[s]
        assert {k: row[k] for k in ("country", "device") if not pd.isna(row[k])} == values
    np.testing.assert_array_equal(df["ecce_sigma"].to_numpy(), r.segment_ecce_sigma)


def _folding_case(seed=0, n=20_000):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.1, 0.9, n)
    country = rng.choice(["de", "fr", "us", "it", "es"], n, p=[0.3, 0.3, 0.2, 0.1, 0.1])
    device = rng.choice(["ios", "web"], n)
    y = rng.uniform(size=n) < np.where((country == "it") & (device == "ios"), p**2, p)
    return y, p, {"country": country, "device": device}


def test_the_worst_segment_hidden_in_folded_values_is_reported():
    # MCGrad's default keeps 2 values of country (the most frequent, de and fr): the bad cell, it x ios, is
    # pooled with es and us into "__OTHER"; the result says how many values each feature pooled, and a warning
    # names the worst segment and what it pools
    y, p, segments = _folding_case()
    with pytest.warns(UserWarning, match=r"the worst segment, \{'country': '__OTHER', 'device': 'ios'\}, pools "
                                         r"3 values of 'country' \(shown as '__OTHER'\): raise max_values_per"):
        r = fastcal.multicalibration_error(y, p, segments)
    assert r.folded == {"country": 3}
    assert r.worst(1)[0]["values"] == {"country": "__OTHER", "device": "ios"}
    r = fastcal.multicalibration_error(y, p, segments, max_values_per_segment_feature=5)  # no warning: all kept
    assert r.folded == {} and r.worst(1)[0]["values"] == {"country": "it", "device": "ios"}


def test_folding_without_the_worst_segment_is_a_field_not_a_warning():
    y, p, segments = _folding_case()
    y = np.random.default_rng(1).uniform(size=p.size) < np.where(segments["country"] == "de", p**2, p)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = fastcal.multicalibration_error(y, p, segments)
    assert r.folded == {"country": 3} and r.worst(1)[0]["values"] == {"country": "de"}


def test_a_folded_numeric_category_is_reported_by_its_label():
    rng = np.random.default_rng(2)
    p = rng.uniform(0.1, 0.9, 20_000)
    k = rng.integers(3, 9, p.size)  # 6 values; the folded ones are labelled min - 1 = 2
    y = rng.uniform(size=p.size) < np.where(k == 8, p**2, p)
    with pytest.warns(UserWarning, match=r"pools 4 values of 'k' \(shown as 2\)"):
        r = fastcal.multicalibration_error(y, p, {"k": k})
    assert r.folded == {"k": 4}


def test_folding_is_reported_alike_on_dask():
    import dask.array as da

    import fastcal.dask as fd

    y, p, segments = _folding_case()
    with pytest.warns(UserWarning, match="pools 3 values of 'country'"):
        want = fastcal.multicalibration_error(y, p, segments)
    chunks = 5_000
    with pytest.warns(UserWarning, match="pools 3 values of 'country'"):
        got = fd.multicalibration_error(da.from_array(y, chunks), da.from_array(p, chunks),
                                        {k: da.from_array(v, chunks) for k, v in segments.items()})
    assert got.folded == want.folded == {"country": 3}
    assert got.segment_values == want.segment_values
