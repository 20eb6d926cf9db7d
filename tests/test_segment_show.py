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
