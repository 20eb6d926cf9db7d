"""Groups of several columns (GroupedCalibrator, segment_report, model files): a row's group is the tuple of its
values, and every result equals the one on a single column that numbers the same tuples (a key built by hand)."""

import json

import numpy as np
import pandas as pd
import pytest

import fastcal
from fastcal import GroupedCalibrator, IsotonicRegression, PlattScaling, segment_report
from fastcal._coding import as_groups, group_codes


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    s = rng.uniform(0.02, 0.98, n)
    country = rng.choice(["de", "fr", "us"], n)
    device = rng.choice([1, 2], n)
    bias = np.where((country == "fr") & (device == 2), 2.0, 1.0)
    y = (rng.uniform(size=n) < s ** bias).astype(np.int8)
    return s, y, country, device


def _key(country, device):
    """The hand-built single column: one string per (country, device)."""
    return np.array([f"{c}|{d}" for c, d in zip(country, device)])


def _as_key(group):
    return f"{group[0]}|{group[1]}"


@pytest.mark.parametrize("calibrator", [PlattScaling(), IsotonicRegression(out_of_bounds="clip")])
def test_grouped_fit_of_two_columns_equals_the_fit_on_a_combined_key(calibrator):
    s, y, country, device = _data()
    two = GroupedCalibrator(calibrator, min_samples_per_group=50).fit(s, y, [country, device])
    one = GroupedCalibrator(calibrator, min_samples_per_group=50).fit(s, y, _key(country, device))
    assert all(isinstance(g, tuple) and len(g) == 2 for g in two.groups_)
    assert sorted(map(_as_key, two.groups_)) == sorted(one.groups_)
    by_key = dict(zip(one.groups_, one.calibrators_))
    for group, model in zip(two.groups_, two.calibrators_):
        assert np.array_equal(model.predict(s), by_key[_as_key(group)].predict(s))
    assert np.array_equal(two.predict(s, [country, device]), one.predict(s, _key(country, device)))


def test_the_forms_of_several_columns_give_the_same_groups():
    s, y, country, device = _data(1500)
    frame = pd.DataFrame({"country": country, "device": device})
    typed = [[country, device], (country, device), {"country": country, "device": device}, frame,
             [frame["country"], frame["device"]]]
    # rows of values and 2-D object arrays: object columns, numbered by first appearance (another order)
    untyped = [[(c, d) for c, d in zip(country.tolist(), device.tolist())],
               np.column_stack([country, device.astype(object)])]
    fits = [GroupedCalibrator(PlattScaling(), min_samples_per_group=50).fit(s, y, f) for f in typed + untyped]
    for i, fit in enumerate(fits[1:], 1):
        same_order = i < len(typed)
        groups = fit.groups_ if same_order else sorted(fit.groups_)
        models = dict(zip(fit.groups_, fit.calibrators_))
        assert groups == (fits[0].groups_ if same_order else sorted(fits[0].groups_))
        assert [models[g].a_ for g in fits[0].groups_] == [m.a_ for m in fits[0].calibrators_]
    # the values keep their types per column: ints stay ints beside the strings of the other column
    assert fits[0].groups_[0] == ("de", 1) and type(fits[0].groups_[0][1]) is int
    # one column in a multi-column form is that column
    assert GroupedCalibrator(PlattScaling()).fit(s, y, [country]).groups_ == ["de", "fr", "us"]


def test_tuples_are_ordered_column_by_column_and_missing_values_are_none():
    country = np.array(["fr", "de", "fr", None, "de"], dtype=object)
    device = np.array([2, 1, 1, 2, 2])
    codes, uniques = group_codes(as_groups([country, device], "groups"), "groups")
    # the first column's order of group_codes (first appearance for objects), then the second's (numbers: sorted)
    assert uniques == [("fr", 1), ("fr", 2), ("de", 1), ("de", 2), (None, 2)]
    assert [uniques[c] for c in codes] == [(a, int(b)) for a, b in zip(country, device)]


def test_unseen_tuples_take_the_global_model():
    s, y, country, device = _data(3000)
    cal = GroupedCalibrator(PlattScaling(), min_samples_per_group=50).fit(s, y, [country, device])
    out = cal.predict(s[:3], [np.array(["xx", "fr", "de"]), np.array([1, 9, 1])])
    glob = cal.global_calibrator_.predict(s[:3])
    assert out[0] == glob[0] and out[1] == glob[1]
    assert out[2] == cal.calibrators_[cal.groups_.index(("de", 1))].predict(s[2:3])[0]


def test_segment_report_of_two_columns_equals_the_report_on_a_combined_key():
    s, y, country, device = _data(6000, seed=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, s.shape[0])
    two = segment_report(y, s, {"country": country, "device": device}, sample_weight=w)
    one = segment_report(y, s, _key(country, device), sample_weight=w)
    index = {g: i for i, g in enumerate(one.groups)}
    order = [index[_as_key(g)] for g in two.groups]
    for name in ("n", "weight_sum", "ece", "ecce", "ecce_sigma", "brier", "log_loss", "auc"):
        assert np.array_equal(getattr(two, name), getattr(one, name)[order]), name
    assert two.worst(1).groups == [("fr", 2)]  # the biased cell
    assert "('fr', 2)" in str(two)


def test_model_files_hold_tuples_and_refuse_mixed_groups(tmp_path):
    s, y, country, device = _data(2000)
    cal = GroupedCalibrator(PlattScaling(), min_samples_per_group=50).fit(s, y, [country, device])
    path = tmp_path / "m.json"
    cal.save(path)
    loaded = fastcal.load(path)
    assert loaded.groups_ == cal.groups_
    assert np.array_equal(loaded.predict(s, [country, device]), cal.predict(s, [country, device]))
    doc = json.loads(path.read_text())
    groups = doc["state"]["groups_"]
    for bad in ([*groups[:-1], "de"], [*groups[:-1], ["de"]], [*groups[:-1], []], [*groups[:-1], [["de"], 1]]):
        doc["state"]["groups_"] = bad
        path.write_text(json.dumps(doc))
        with pytest.raises(ValueError, match="invalid fastcal model: .*groups_"):
            fastcal.load(path)


@pytest.mark.parametrize("groups, message", [
    (lambda c, d: [c, d[:10]], r"the columns of groups differ in length: \[2000, 10\]"),
    (lambda c, d: {}, "groups must hold at least one column"),
    (lambda c, d: [c, np.zeros((2000, 2))], r"groups \(column 1\) must be a 1-D array"),
])
def test_bad_columns_are_named(groups, message):
    s, y, country, device = _data(2000)
    with pytest.raises(ValueError, match=message):
        GroupedCalibrator().fit(s, y, groups(country, device))
    with pytest.raises(ValueError, match=message):
        segment_report(y, s, groups(country, device))


def test_inputs_are_not_modified():
    s, y, country, device = _data(1000)
    columns = [country.copy(), device.copy()]
    for c in columns:
        c.flags.writeable = False
    GroupedCalibrator(PlattScaling(), min_samples_per_group=50).fit(s, y, columns).predict(s, columns)
    segment_report(y, s, columns)
    assert np.array_equal(columns[0], country) and np.array_equal(columns[1], device)


# ---------------------------------------------------------------------------
# the command line: --group-col a,b and --segment-col a,b, from CSV and Parquet
# ---------------------------------------------------------------------------
def _cli(*argv):
    from fastcal.cli import main

    return main([str(a) for a in argv])


def _files(tmp_path, n=4000):
    """CSV and Parquet files of scores, labels, a text column with empty cells, an int column and a column named
    ``k,v``; and the group columns as memory holds them (object text with None, int64)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s, y, country, device = _data(n, seed=3)
    s = np.round(s, 6)  # round-trips through CSV text exactly
    text = [None if i % 7 == 0 and c == "us" else str(c) for i, c in enumerate(country)]
    with open(tmp_path / "d.csv", "w") as f:
        f.write('s,y,country,device,"k,v"\n')
        f.writelines(f"{a!r},{b},{'' if c is None else c},{d},{d}\n"
                     for a, b, c, d in zip(s.tolist(), y.tolist(), text, device.tolist()))
    pq.write_table(pa.table({"s": s, "y": y.astype(np.int64), "country": pa.array(text, pa.string()),
                             "device": device.astype(np.int64), "k,v": device.astype(np.int64)}),
                   tmp_path / "d.parquet", row_group_size=1000)
    country_col = np.empty(n, dtype=object)
    country_col[:] = text
    return s, y.astype(np.int64), country_col, device.astype(np.int64)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_cli_fit_and_apply_with_two_group_columns_equal_memory(tmp_path, fmt):
    s, y, country, device = _files(tmp_path)
    model = tmp_path / "m.json"
    assert _cli("fit", tmp_path / f"d.{fmt}", "-o", model, "--method", "isotonic", "--score-col", "s",
                "--label-col", "y", "--group-col", "country,device", "--min-group-rows", "50", "-q") == 0
    want = GroupedCalibrator(IsotonicRegression(), min_samples_per_group=50).fit(s, y, [country, device])
    got = fastcal.load(model)
    assert got.groups_ == want.groups_ and (None, 1) in got.groups_  # the empty cells: None in the tuples
    for a, b in zip(got.calibrators_, want.calibrators_):
        assert np.array_equal(a.X_thresholds_, b.X_thresholds_) and np.array_equal(a.y_thresholds_, b.y_thresholds_)
    out = tmp_path / f"out.{fmt}"
    assert _cli("apply", model, tmp_path / f"d.{fmt}", "-o", out, "--score-col", "s", "--group-col",
                "country,device", "-q") == 0
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    table = pq.read_table(out) if fmt == "parquet" else pcsv.read_csv(out)
    np.testing.assert_array_equal(table.column("calibrated").to_numpy(), want.predict(s, [country, device]))


def test_cli_report_with_two_segment_columns_equals_memory(tmp_path):
    s, y, country, device = _files(tmp_path)
    for fmt in ("csv", "parquet"):
        assert _cli("report", tmp_path / f"d.{fmt}", "-o", tmp_path / f"r-{fmt}.json", "--score-col", "s",
                    "--label-col", "y", "--segment-col", "country,device", "-q") == 0
    docs = [json.loads((tmp_path / f"r-{fmt}.json").read_text()) for fmt in ("csv", "parquet")]
    assert docs[0]["segments"] == docs[1]["segments"]
    want = segment_report(y, s, [country, device])
    assert docs[0]["segments"]["groups"] == [list(g) for g in want.groups]  # tuples as lists, None as null
    assert docs[0]["segments"]["n"] == want.n.tolist()
    mce = fastcal.multicalibration_error(y, s, {"country": country, "device": device},
                                         max_values_per_segment_feature=len(want.groups))
    assert docs[0]["multicalibration"]["mce"] == pytest.approx(mce.mce, rel=1e-12)
    # the HTML page names the tuples
    assert _cli("report", tmp_path / "d.csv", "-o", tmp_path / "r.html", "--score-col", "s", "--label-col", "y",
                "--segment-col", "country,device", "-q") == 0
    assert "(&#x27;fr&#x27;, 2)" in (tmp_path / "r.html").read_text()


def test_cli_a_column_named_with_a_comma_and_a_missing_column(tmp_path, capsys):
    s, y, country, device = _files(tmp_path, n=2000)
    for fmt in ("csv", "parquet"):  # "k,v" is a column: one group column (the device's values)
        assert _cli("fit", tmp_path / f"d.{fmt}", "-o", tmp_path / f"{fmt}.json", "--method", "sigmoid",
                    "--score-col", "s", "--label-col", "y", "--group-col", "k,v", "--min-group-rows", "50",
                    "-q") == 0
        assert fastcal.load(tmp_path / f"{fmt}.json").groups_ == [1, 2]
    capsys.readouterr()
    assert _cli("fit", tmp_path / "d.csv", "-o", tmp_path / "x.json", "--method", "sigmoid", "--score-col", "s",
                "--label-col", "y", "--group-col", "country,nope", "-q") == 2
    assert "no column 'nope'" in capsys.readouterr().err
    assert _cli("report", tmp_path / "d.csv", "-o", tmp_path / "x.json", "--score-col", "s", "--label-col", "y",
                "--segment-col", "country,,device", "-q") == 2
    assert "--segment-col 'country,,device': an empty column name" in capsys.readouterr().err
    assert _cli("apply", tmp_path / "csv.json", tmp_path / "d.csv", "-o", tmp_path / "x.csv", "--score-col", "s",
                "--group-col", "device,nope", "-q") == 2
    assert "no column 'nope'" in capsys.readouterr().err
    # a model of one group column applied with two, and of two applied with one: the columns of the fit
    assert _cli("apply", tmp_path / "csv.json", tmp_path / "d.csv", "-o", tmp_path / "x.csv", "--score-col", "s",
                "--group-col", "country,device", "-q") == 2
    assert "fitted on 1 group column, but --group-col names 2 (country, device)" in capsys.readouterr().err
    assert _cli("fit", tmp_path / "d.csv", "-o", tmp_path / "two.json", "--method", "sigmoid", "--score-col", "s",
                "--label-col", "y", "--group-col", "country,device", "--min-group-rows", "50", "-q") == 0
    assert _cli("apply", tmp_path / "two.json", tmp_path / "d.csv", "-o", tmp_path / "x.csv", "--score-col", "s",
                "--group-col", "device", "-q") == 2
    assert "fitted on 2 group columns, but --group-col names 1 (device)" in capsys.readouterr().err
