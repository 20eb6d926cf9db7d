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


# ---------------------------------------------------------------------------
# the command line: a group column has the same values from CSV and Parquet
# ---------------------------------------------------------------------------
def _cli(*argv):
    from fastcal.cli import main

    return main([str(a) for a in argv])


def _columns(kind, n=3000, seed=5):
    """Scores, labels and a group column of ``kind``: as CSV cells (text, "" empty) and as an Arrow array."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    s = np.round(rng.uniform(0.01, 0.99, n), 6)  # round-trips through CSV text exactly
    y = (rng.uniform(size=n) < s**1.5).astype(np.int64)
    k = rng.integers(0, 4, n)
    empty = (k == 3) & (np.arange(n) % 2 == 0) if kind.endswith("empty") else np.zeros(n, dtype=bool)
    if kind.startswith("int"):
        values = [None if e else int(v) for v, e in zip(k * 7 - 3, empty)]  # -3, 4, 11, 18
        arrow = pa.array(values, pa.int64())
    elif kind.startswith("float"):
        values = [None if e else float(v) for v, e in zip(k * 0.5 + 0.25, empty)]
        arrow = pa.array(values, pa.float64())
    else:
        values = [None if e else ["b", "a", "007", "z"][v] for v, e in zip(k, empty)]
        arrow = pa.array(values, pa.string())
    cells = ["" if v is None else (repr(v) if isinstance(v, float) else str(v)) for v in values]
    return s, y, cells, arrow


def _write(tmp_path, kind, **kw):
    import pyarrow as pa
    import pyarrow.parquet as pq

    s, y, cells, arrow = _columns(kind, **kw)
    with open(tmp_path / "d.csv", "w") as f:
        f.write("s,y,g\n")
        f.writelines(f"{a!r},{b},{c}\n" for a, b, c in zip(s.tolist(), y.tolist(), cells))
    pq.write_table(pa.table({"s": s, "y": y, "g": arrow}), tmp_path / "d.parquet", row_group_size=1000)
    return s, y, arrow.to_pylist()


def _calibrated(path):
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    table = pq.read_table(path) if str(path).endswith(".parquet") else pcsv.read_csv(path)
    return table.column("calibrated").to_numpy()


@pytest.mark.parametrize("kind", ["int", "int-empty", "float-empty", "text-empty"])
@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
def test_csv_and_parquet_give_the_same_groups_and_models(tmp_path, kind, method):
    s, y, groups = _write(tmp_path, kind)
    for fmt in ("csv", "parquet"):
        assert _cli("fit", tmp_path / f"d.{fmt}", "-o", tmp_path / f"{fmt}.json", "--method", method, "--score-col",
                    "s", "--label-col", "y", "--group-col", "g", "--min-group-rows", "10", "-q") == 0
    from_csv, from_parquet = (json.loads((tmp_path / f"{f}.json").read_text()) for f in ("csv", "parquet"))
    assert from_csv == from_parquet  # the same groups, of the same types, in the same order, and the same fits
    want = GroupedCalibrator(PlattScaling() if method == "sigmoid" else IsotonicRegression(),
                             min_samples_per_group=10)
    if kind.startswith("float"):  # as pandas holds them: float64, NaN for a missing value
        arr = np.array([np.nan if v is None else v for v in groups])
    elif None in groups or kind.startswith("text"):
        arr = np.empty(len(groups), dtype=object)
        arr[:] = groups
    else:
        arr = np.array(groups)
    want.fit(s, y, arr)
    assert fastcal.load(tmp_path / "csv.json").groups_ == want.groups_
    if kind.endswith("empty"):
        assert want.groups_[-1] is None  # an empty cell: the missing group, listed last
    # each model applied to each format: the same bits as within one format
    outs = {}
    for model in ("csv", "parquet"):
        for fmt in ("csv", "parquet"):
            out = tmp_path / f"{model}-{fmt}.{fmt}"
            assert _cli("apply", tmp_path / f"{model}.json", tmp_path / f"d.{fmt}", "-o", out, "--score-col", "s",
                        "--group-col", "g", "-q") == 0
            outs[model, fmt] = _calibrated(out)
    expected = want.predict(s, arr)
    for got in outs.values():
        assert_array_equal(got, expected)


def test_a_column_in_two_roles_from_csv(tmp_path, capsys):
    _write(tmp_path, "int")
    for fmt in ("csv", "parquet"):
        base = ["--score-col", "s", "--label-col", "y", "-q"]
        assert _cli("fit", tmp_path / f"d.{fmt}", "-o", tmp_path / f"g-{fmt}.json", "--method", "isotonic",
                    "--group-col", "y", "--min-group-rows", "10", *base) == 0
        assert _cli("fit", tmp_path / f"d.{fmt}", "-o", tmp_path / f"w-{fmt}.json", "--method", "isotonic",
                    "--weight-col", "y", *base) == 0
        assert _cli("report", tmp_path / f"d.{fmt}", "-o", tmp_path / f"r-{fmt}.json", "--segment-col", "y",
                    *base) == 0
    for name in ("g", "w"):
        assert (tmp_path / f"{name}-csv.json").read_text() == (tmp_path / f"{name}-parquet.json").read_text()
    assert fastcal.load(tmp_path / "g-csv.json").groups_ == [0, 1]
    reports = [json.loads((tmp_path / f"r-{fmt}.json").read_text()) for fmt in ("csv", "parquet")]
    assert reports[0]["segments"] == reports[1]["segments"] and reports[0]["segments"]["groups"] == [0, 1]


def test_report_segments_from_csv_are_typed(tmp_path):
    _write(tmp_path, "int-empty")
    for fmt in ("csv", "parquet"):
        assert _cli("report", tmp_path / f"d.{fmt}", "-o", tmp_path / f"r-{fmt}.json", "--score-col", "s",
                    "--label-col", "y", "--segment-col", "g", "-q") == 0
    docs = [json.loads((tmp_path / f"r-{fmt}.json").read_text()) for fmt in ("csv", "parquet")]
    assert docs[0]["segments"] == docs[1]["segments"]
    groups = docs[0]["segments"]["groups"]  # integers (not text), the missing group last
    assert sorted(groups[:-1]) == [-3, 4, 11, 18] and groups[-1] is None
    assert docs[0]["multicalibration"] == docs[1]["multicalibration"]


def test_apply_warns_when_no_row_has_a_fitted_group(tmp_path, capsys):
    import pyarrow as pa
    import pyarrow.parquet as pq

    s, y, groups = _write(tmp_path, "int")
    text = pa.table({"s": s, "y": y, "g": pa.array([str(g) for g in groups])})  # the groups as text
    pq.write_table(text, tmp_path / "text.parquet")
    assert _cli("fit", tmp_path / "text.parquet", "-o", tmp_path / "m.json", "--method", "isotonic", "--score-col",
                "s", "--label-col", "y", "--group-col", "g", "-q") == 0
    capsys.readouterr()
    for fmt in ("csv", "parquet"):  # the same cells, read as integers
        out = tmp_path / f"o.{fmt}"
        assert _cli("apply", tmp_path / "m.json", tmp_path / f"d.{fmt}", "-o", out, "--score-col", "s",
                    "--group-col", "g", "-q") == 0
        err = capsys.readouterr().err
        assert err.startswith(f"fastcal: warning: {tmp_path / f'd.{fmt}'}: no row's 'g' is one of the model's 4 "
                              "groups: every row got the global calibrator"), err
        assert "text in the model, numbers in the column" in err and err.count("\n") == 1
        assert_array_equal(_calibrated(out), fastcal.load(tmp_path / "m.json").global_calibrator_.predict(s))
    # unseen groups of the fitted kind: a warning for a whole file without one fitted group, none otherwise
    pq.write_table(pa.table({"s": s[:10], "g": pa.array(["new"] * 10)}), tmp_path / "new.parquet")
    assert _cli("apply", tmp_path / "m.json", tmp_path / "new.parquet", "-o", tmp_path / "n.parquet",
                "--score-col", "s", "--group-col", "g", "-q") == 0
    err = capsys.readouterr().err
    assert "no row's 'g' is one of the model's 4 groups" in err and "in the column" not in err
    assert _cli("apply", tmp_path / "m.json", tmp_path / "text.parquet", "-o", tmp_path / "t.parquet",
                "--score-col", "s", "--group-col", "g", "-q") == 0
    assert capsys.readouterr().err == ""


def test_predict_warns_when_the_groups_are_of_another_kind():
    p, y, g, _ = _weighted()
    est = GroupedCalibrator(PlattScaling(), min_samples_per_group=10).fit(p, y, g)
    with pytest.warns(UserWarning, match=r"fitted groups, which are numbers \(0, 1, 2\) while the groups given are "
                                         r"text \('\d', '\d', '\d'\): every row takes the global calibrator"):
        got = est.predict(p, g.astype(str))
    assert_array_equal(got, est.global_calibrator_.predict(p))
    assert_array_equal(est.predict(p[:5], np.full(5, 7)), est.global_calibrator_.predict(p[:5]))  # unseen: silent
    with pytest.warns(UserWarning, match="which are numbers"):  # the missing group is of no kind
        est.predict(p[:5], np.array(["x", None, "0", "1", "2"], dtype=object))


def test_csv_from_stdin_refuses_text_after_numbers_in_a_group_column(tmp_path, capsys, monkeypatch):
    import io
    import sys

    _write(tmp_path, "int", n=300)
    assert _cli("fit", tmp_path / "d.csv", "-o", tmp_path / "m.json", "--method", "isotonic", "--score-col", "s",
                "--label-col", "y", "--group-col", "g", "--min-group-rows", "10", "-q") == 0
    lines = (tmp_path / "d.csv").read_bytes().splitlines(keepends=True)
    lines[251] = lines[251].rsplit(b",", 1)[0] + b",x\n"
    (tmp_path / "mixed.csv").write_bytes(b"".join(lines))
    argv = ["apply", tmp_path / "m.json", "-", "-o", tmp_path / "o.csv", "--score-col", "s", "--group-col", "g",
            "--batch-rows", "100", "-q"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"".join(lines))))
    capsys.readouterr()
    assert _cli(*argv) == 1
    assert "<stdin>: column 'g', row 251: 'x' is not a number, but the rows before hold numbers" in \
        capsys.readouterr().err
    assert not (tmp_path / "o.csv").exists()
    # a file is read first to type the column: all of it text, no row with a fitted group
    assert _cli("apply", tmp_path / "m.json", tmp_path / "mixed.csv", "-o", tmp_path / "o.csv", "--score-col", "s",
                "--group-col", "g", "--batch-rows", "100", "-q") == 0
    assert "numbers in the model, text in the column" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# small points: --method platt, fit's summary line, whole counts in the report's bins
# ---------------------------------------------------------------------------
def test_method_platt_is_sigmoid_and_fit_prints_a_summary(tmp_path, capsys):
    from fastcal.cli import build_parser

    _write(tmp_path, "int")
    for method in ("platt", "sigmoid"):
        assert _cli("fit", tmp_path / "d.csv", "-o", tmp_path / f"{method}.json", "--method", method, "--score-col",
                    "s", "--label-col", "y", "--group-col", "g") == 0
    assert (tmp_path / "platt.json").read_text() == (tmp_path / "sigmoid.json").read_text()
    out = capsys.readouterr().out.splitlines()
    est = fastcal.load(tmp_path / "sigmoid.json")
    a, b = est.global_calibrator_.a_, est.global_calibrator_.b_
    assert len(out) == 2 and out[0].startswith("fastcal fit: sigmoid on 3,000 rows: 4 groups with a calibrator of "
                                               f"their own; global calibrator: a={a:.6g}, b={b:.6g}; ")
    assert out[0].endswith(f" s; model written to {tmp_path / 'platt.json'}")
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "i.json", "--method", "isotonic", "--score-col",
                "s", "--label-col", "y") == 0
    n_knots = fastcal.load(tmp_path / "i.json").X_thresholds_.shape[0]
    assert capsys.readouterr().out.startswith(f"fastcal fit: isotonic on 3,000 rows: {n_knots} knots; ")
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "i.json", "--method", "isotonic", "--score-col",
                "s", "--label-col", "y", "-q") == 0
    assert capsys.readouterr().out == ""
    assert "platt" in build_parser()._subparsers._group_actions[0].choices["fit"].format_help()


def test_report_prints_whole_counts_without_weights():
    n = 2_200_000  # over a million rows a bin: "%g" would print 1.1e+06
    p = np.where(np.arange(n) % 2 == 0, 0.25, 0.75)
    y = (np.random.default_rng(0).uniform(size=n) < p).astype(np.int8)
    table = str(fastcal.calibration_report(y, p, n_bins=2))
    assert "  1100000  " in table and "e+06" not in table
    w = np.full(n, 0.5)
    assert "   550000  " in str(fastcal.calibration_report(y, p, n_bins=2, sample_weight=w))


def test_csv_groups_without_pyarrow_are_typed_alike(tmp_path, monkeypatch):
    _write(tmp_path, "int-empty", n=500)
    argv = ["--method", "isotonic", "--score-col", "s", "--label-col", "y", "--group-col", "g", "--min-group-rows",
            "10", "-q"]
    assert _cli("fit", tmp_path / "d.parquet", "-o", tmp_path / "p.json", *argv) == 0
    monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")  # the csv module's parser, and the groups numbered by a dict
    assert _cli("fit", tmp_path / "d.csv", "-o", tmp_path / "c.json", *argv) == 0
    assert (tmp_path / "c.json").read_text() == (tmp_path / "p.json").read_text()
    assert _cli("apply", tmp_path / "c.json", tmp_path / "d.csv", "-o", tmp_path / "o.csv", "--score-col", "s",
                "--group-col", "g", "-q") == 0
    monkeypatch.delenv("FASTCAL_CLI_NO_PYARROW")
    want = fastcal.load(tmp_path / "p.json")
    s, _, groups = _columns("int-empty", n=500)[:3]
    arr = np.empty(len(groups), dtype=object)
    arr[:] = [None if c == "" else int(c) for c in groups]
    assert_array_equal(_calibrated(tmp_path / "o.csv"), want.predict(s, arr))
