"""``fastcal fit --method multicalibration --segment-col ...`` and ``fastcal apply`` of its model: the same model from
CSV and Parquet, equal to the in-memory fit on the same typed columns, and the same bits as its ``predict``."""

import json

import numpy as np
import pytest
from numpy.testing import assert_array_equal

import fastcal


def _cli(*argv):
    from fastcal.cli import main

    return main([str(a) for a in argv])


def _data(n=6000, seed=3):
    """Scores, labels and three segment features: text with empty cells, integers with empty cells, numbers with
    empty cells (NaN); a bias where country is "fr" and device is 1. As columns (None: missing) and CSV cells."""
    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(0.02, 0.98, n), 6)  # round-trips through CSV text exactly
    country = rng.choice(["fr", "de", "007", "us"], n).tolist()
    device = rng.integers(0, 3, n).tolist()
    x = np.round(rng.normal(size=n), 3).tolist()
    for i in range(0, n, 37):
        country[i] = None
    for i in range(5, n, 41):
        device[i] = None
    for i in range(9, n, 43):
        x[i] = None
    bad = np.array([c == "fr" and d == 1 for c, d in zip(country, device)])
    y = (rng.uniform(size=n) < np.where(bad, s**2, s)).astype(np.int64)
    return s, y, {"country": country, "device": device, "x": x}


def _write(tmp_path, s, y, cols):
    import pyarrow as pa
    import pyarrow.parquet as pq

    def cell(v):
        return "" if v is None else str(v)

    with open(tmp_path / "d.csv", "w") as f:
        f.write("id,s,y,country,device,x\n")
        for i, row in enumerate(zip(s.tolist(), y.tolist(), *cols.values())):
            f.write(f"r{i},{row[0]!r},{row[1]}," + ",".join(cell(v) for v in row[2:]) + "\n")
    table = pa.table({"id": [f"r{i}" for i in range(s.size)], "s": s, "y": y,
                      "country": pa.array(cols["country"], pa.string()),
                      "device": pa.array(cols["device"], pa.int64()), "x": pa.array(cols["x"], pa.float64())})
    pq.write_table(table, tmp_path / "d.parquet", row_group_size=1000)


def _in_memory(cols):
    """The columns as the command types them: text and integers with None for a missing value, numbers with NaN."""
    out = {}
    for name in ("country", "device"):
        arr = np.empty(len(cols[name]), dtype=object)
        arr[:] = cols[name]
        out[name] = arr
    out["x"] = np.array([np.nan if v is None else v for v in cols["x"]])
    return out


FIT = ("--method", "multicalibration", "--score-col", "s", "--label-col", "y", "--segment-col", "country,device,x",
       "--numerical-col", "x", "-q")


def test_csv_and_parquet_give_the_in_memory_model_and_predictions(tmp_path):
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    s, y, cols = _data()
    _write(tmp_path, s, y, cols)
    for fmt in ("csv", "parquet"):
        assert _cli("fit", tmp_path / f"d.{fmt}", "-o", tmp_path / f"{fmt}.json", *FIT) == 0
    from_csv, from_parquet = (json.loads((tmp_path / f"{f}.json").read_text()) for f in ("csv", "parquet"))
    assert from_csv == from_parquet
    segments = _in_memory(cols)
    want = fastcal.MulticalibrationCalibrator().fit(s, y, segments, numerical=["x"])
    got = fastcal.load(tmp_path / "csv.json")
    assert got.feature_names_in_ == ["country", "device", "x"] and got.feature_kinds_[2] != "categorical"
    assert repr(got.segment_values_) == repr(want.segment_values_)  # NaN: a value of its own
    assert_array_equal(got.offsets_, want.offsets_)
    assert got.slope_ == want.slope_
    assert np.count_nonzero(want.offsets_) > 0  # the bias is found: the test can tell a model from none
    expected = want.predict(s, segments)
    for fmt in ("csv", "parquet"):
        out = tmp_path / f"out.{fmt}"
        assert _cli("apply", tmp_path / f"{fmt}.json", tmp_path / f"d.{fmt}", "-o", out, "--score-col", "s",
                    "-q") == 0
        table = pq.read_table(out) if fmt == "parquet" else pcsv.read_csv(out)
        assert table.column_names == ["id", "s", "y", "country", "device", "x", "calibrated"]
        assert_array_equal(table.column("calibrated").to_numpy(), expected)
    # CSV records are copied byte for byte
    lines_in = (tmp_path / "d.csv").read_text().splitlines()
    lines_out = (tmp_path / "out.csv").read_text().splitlines()
    assert [a.split(",")[:6] for a in lines_out[1:]] == [a.split(",") for a in lines_in[1:]]


@pytest.mark.parametrize("options, params", [
    (("--max-depth", "1", "--n-buckets", "3", "--n-folds", "4"), {"max_depth": 1, "n_buckets": 3, "n_folds": 4}),
    (("--max-depth", "none", "--max-values-per-segment-feature", "2", "--min-samples-per-segment", "0",
      "--max-n-segments", "none"),
     {"max_depth": None, "max_values_per_segment_feature": 2, "min_samples_per_segment": 0, "max_n_segments": None}),
    (("--max-n-segments", "5",), {"max_n_segments": 5}),
])
def test_the_estimator_parameters_as_options(tmp_path, options, params):
    """Each option sets the estimator's parameter of its name; the model is the in-memory fit's with them (and with
    the estimator's defaults for the others, which the help text states)."""
    s, y, cols = _data(n=3000)
    _write(tmp_path, s, y, cols)
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "m.json", *FIT, *options) == 0
    got = fastcal.load(tmp_path / "m.json")
    want = fastcal.MulticalibrationCalibrator(**params).fit(s, y, _in_memory(cols), numerical=["x"])
    assert got.get_params() == want.get_params() == {**fastcal.MulticalibrationCalibrator().get_params(), **params}
    assert repr(got.segment_values_) == repr(want.segment_values_)
    assert_array_equal(got.offsets_, want.offsets_)


def test_the_help_states_the_estimator_defaults(capsys):
    from fastcal.cli import main

    with pytest.raises(SystemExit):
        main(["fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for name, value in fastcal.MulticalibrationCalibrator().get_params().items():
        assert f"--{name.replace('_', '-')}" in text
        assert f"{name}, " in text and f"(default {value})" in text.split(f"{name}, ")[1].split("--")[0], name


@pytest.mark.parametrize("option, value, words", [
    ("--n-folds", "1", "argument --n-folds: expected an integer from 2 to 255, got '1'"),
    ("--n-folds", "256", "argument --n-folds: expected an integer from 2 to 255, got '256'"),
    ("--max-depth", "-1", "argument --max-depth: expected an integer (0 or more) or none, got '-1'"),
    ("--max-n-segments", "0", "argument --max-n-segments: expected an integer (1 or more) or none, got '0'"),
    ("--n-buckets", "x", "argument --n-buckets: expected a positive integer, got 'x'"),
])
def test_option_values_are_checked_before_any_data_is_read(tmp_path, capsys, option, value, words):
    with pytest.raises(SystemExit) as exc:
        _cli("fit", tmp_path / "absent.parquet", "-o", tmp_path / "m.json", *FIT, option, value)
    assert exc.value.code == 2 and words in capsys.readouterr().err


def test_fit_prints_what_it_fitted(tmp_path, capsys):
    s, y, cols = _data(n=3000)
    _write(tmp_path, s, y, cols)
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "m.json", *FIT[:-1]) == 0
    est = fastcal.load(tmp_path / "m.json")
    line = capsys.readouterr().out
    assert line.startswith("fastcal fit: multicalibration on 3,000 rows: ")
    assert f"{est.offsets_.shape[0]} segments, {int(np.any(est.offsets_ != 0, axis=1).sum())} with an offset" in line


@pytest.mark.parametrize("extra, words", [
    (("--method", "isotonic", "--segment-col", "country"), "--segment-col and --numerical-col are for --method "
                                                           "multicalibration"),
    (("--method", "multicalibration"), "--method multicalibration needs --segment-col"),
    (("--method", "multicalibration", "--segment-col", "country", "--numerical-col", "x"),
     "--numerical-col names x, not among --segment-col (country)"),
    (("--method", "multicalibration", "--segment-col", "country,country"), "--segment-col: a column named twice"),
    (("--method", "multicalibration", "--segment-col", "country", "--group-col", "device"), "not --group-col"),
    (("--method", "multicalibration", "--segment-col", "country", "--memory-budget", "1G"),
     "--memory-budget (out-of-core fitting) supports"),
    (("--method", "multicalibration", "--segment-col", "country,nope"), "nope"),
    (("--method", "isotonic", "--n-buckets", "3"), "--n-buckets is for --method multicalibration"),
])
def test_usage_errors(tmp_path, capsys, extra, words):
    s, y, cols = _data(n=500)
    _write(tmp_path, s, y, cols)
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "m.json", "--score-col", "s", "--label-col", "y",
                *extra) == 2
    assert words in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_text_in_a_numerical_column_names_the_row(tmp_path, capsys):
    s, y, cols = _data(n=500)
    _write(tmp_path, s, y, cols)
    assert _cli("fit", tmp_path / "d.csv", "-o", tmp_path / "m.json", "--method", "multicalibration", "--score-col",
                "s", "--label-col", "y", "--segment-col", "country,device", "--numerical-col", "country") == 1
    err = capsys.readouterr().err
    first = next(i for i, v in enumerate(cols["country"]) if v is not None)
    assert f"column 'country', row {first + 1}: {cols['country'][first]!r} is not a number" in err


def test_scores_must_be_probabilities(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"s": [0.2, 1.5], "y": [0, 1], "g": ["a", "b"]}), tmp_path / "d.parquet")
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "m.json", "--method", "multicalibration",
                "--score-col", "s", "--label-col", "y", "--segment-col", "g") == 1
    assert "row 2: 1.5 is not a probability" in capsys.readouterr().err


def test_apply_needs_the_model_features_and_no_group_col(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    s, y, cols = _data(n=2000)
    _write(tmp_path, s, y, cols)
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "m.json", *FIT) == 0
    pq.write_table(pa.table({"s": s, "country": cols["country"]}), tmp_path / "part.parquet")
    assert _cli("apply", tmp_path / "m.json", tmp_path / "part.parquet", "-o", tmp_path / "o.parquet",
                "--score-col", "s") == 2
    assert "device" in capsys.readouterr().err
    assert _cli("apply", tmp_path / "m.json", tmp_path / "d.parquet", "-o", tmp_path / "o.parquet", "--score-col",
                "s", "--group-col", "country") == 2
    assert "--group-col is for models fitted with --group-col" in capsys.readouterr().err
    for path in ("part.parquet", "o.parquet"):
        assert path == "part.parquet" or not (tmp_path / path).exists()


def test_apply_warns_when_no_row_of_a_feature_was_seen_at_fit(tmp_path, capsys):
    """A feature whose every value in the file is unseen at fit (integers in the model, text in the file) gets a
    warning naming the column, the model's values and the file's, once for the whole file; seen values: none."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s, y, cols = _data(n=3000)
    _write(tmp_path, s, y, cols)
    model = tmp_path / "m.json"
    assert _cli("fit", tmp_path / "d.parquet", "-o", model, "--score-col", "s", "--label-col", "y", "-q",
                "--method", "multicalibration", "--segment-col", "country,device,x", "--numerical-col", "x") == 0
    assert _cli("apply", model, tmp_path / "d.parquet", "-o", tmp_path / "ok.parquet", "--score-col", "s", "-q") == 0
    assert capsys.readouterr().err == ""
    table = pq.read_table(tmp_path / "d.parquet")
    text = pa.array([None if v is None else f"n{v}" for v in cols["device"]], pa.string())
    pq.write_table(table.set_column(table.column_names.index("device"), "device", text), tmp_path / "t.parquet",
                   row_group_size=1000)
    assert _cli("apply", model, tmp_path / "t.parquet", "-o", tmp_path / "t_out.parquet", "--score-col", "s",
                "-q") == 0
    err = capsys.readouterr().err
    assert err.count("warning") == 1, err
    assert "no row's 'device' is one of the model's 4 values: no row with a value got that feature's corrections" in err
    assert "numbers in the model, text in the column" in err and "'n0'" in err
    # a column of missing values only: those rows get the missing value's segments, no warning
    empty = pa.array([None] * len(cols["device"]), pa.int64())
    pq.write_table(table.set_column(table.column_names.index("device"), "device", empty), tmp_path / "e.parquet")
    assert _cli("apply", model, tmp_path / "e.parquet", "-o", tmp_path / "e_out.parquet", "--score-col", "s",
                "-q") == 0
    assert capsys.readouterr().err == ""
    cal = fastcal.load(model)
    with pytest.warns(UserWarning, match="no row's value of the segment feature 'device' is one of its values at fit"):
        cal.predict(s, {**_in_memory(cols), "device": np.array(text.to_pylist(), dtype=object)})
