"""The command line's ``--spark`` option: fit, apply and report read their input through Spark (fastcal.spark).

Oracles: the same commands without ``--spark`` on the same file (the
in-memory path: models, predictions and reports must agree), and the CLI's
rules (exit status 2 for bad usage, 1 for bad data, one error line naming
the argument, no output left behind on error). Calls ``fastcal.cli.main``
in-process, on the session-scoped local[2] SparkSession of test_spark.py
(the command reuses an active session and leaves it running); small files.
"""

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal.cli import main

from . import naive_multiclass as naive
from .test_multicalibration_fit_rows import assert_same_model
from ._spark_helpers import multicalibration_bound


pytestmark = [
    pytest.mark.filterwarnings("ignore:PySpark does not yet fully support pandas:FutureWarning"),
    pytest.mark.slow,
]

N = 3000


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    rng = np.random.default_rng(3)
    score = np.round(rng.random(N), 6)
    label = (rng.random(N) < score ** 2).astype(np.int64)
    weight = np.round(rng.uniform(0.5, 2.0, N), 3)
    d = tmp_path_factory.mktemp("cli_spark")
    table = pa.table({"id": np.arange(N), "score": score, "label": label, "weight": weight})
    pq.write_table(table, d / "data.parquet")
    with open(d / "data.csv", "w") as f:
        f.write("id,score,label,weight\n")
        f.writelines(f"{i},{s!r},{y},{w!r}\n" for i, s, y, w in zip(range(N), score.tolist(), label, weight.tolist()))
    bad = table.set_column(2, "label", pa.array(np.where(np.arange(N) == 7, 2, label)))
    pq.write_table(bad, d / "bad_label.parquet")
    nan = table.set_column(1, "score", pa.array(np.where(np.arange(N) == 11, np.nan, score)))
    pq.write_table(nan, d / "nan_score.parquet")
    return d, score, label, weight


def _error_line(capsys):
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("fastcal: error:")]
    assert len(lines) == 1, err
    return lines[0]


def _leftovers(d):
    return [p for p in os.listdir(d) if p.startswith(".fastcal-")]


@pytest.mark.parametrize("method", ["isotonic", "histogram"])  # sigmoid, beta: the same plumbing
def test_fit_with_spark_equals_the_in_memory_fit(spark, files, method):  # noqa: F811
    d, *_ = files
    args = ["fit", "--method", method, "--score-col", "score", "--label-col", "label", "--weight-col", "weight"]
    assert main(args + ["--spark", str(d / "data.parquet"), "-o", str(d / f"spark_{method}.json")]) == 0
    assert main(args + [str(d / "data.parquet"), "-o", str(d / f"mem_{method}.json")]) == 0
    got, want = fastcal.load(d / f"spark_{method}.json"), fastcal.load(d / f"mem_{method}.json")
    assert type(got) is type(want)
    if method == "isotonic":
        assert_array_equal(got.X_thresholds_, want.X_thresholds_)
        assert_allclose(got.y_thresholds_, want.y_thresholds_, rtol=1e-12, atol=0)
    elif method == "sigmoid":
        assert_allclose([got.a_, got.b_], [want.a_, want.b_], rtol=1e-9)
    else:
        assert_array_equal(got.bin_edges_, want.bin_edges_)
        assert_allclose(got.bin_values_, want.bin_values_, rtol=1e-12, atol=0)


@pytest.mark.parametrize("src, dst", [("data.parquet", "out.parquet"), ("data.csv", "out.csv")])
def test_apply_with_spark_keeps_every_row_and_column_and_equals_predict(spark, files, src, dst):  # noqa: F811
    d, score, label, weight = files
    est = fastcal.IsotonicRegression(out_of_bounds="clip").fit(score, label)
    est.save(d / "iso.json")
    out = d / f"spark_{dst}"
    for _ in range(2):  # the second run replaces the first output
        assert main(["apply", "--spark", str(d / "iso.json"), str(d / src), "-o", str(out), "--score-col", "score",
                     "--output-col", "p"]) == 0
    assert os.path.isdir(out) and not _leftovers(d)
    if dst.endswith(".parquet"):
        table = pq.read_table(out)
    else:
        import pyarrow.csv as pc

        parts = sorted(p for p in os.listdir(out) if p.endswith(".csv"))
        table = pa.concat_tables([pc.read_csv(out / p) for p in parts])
    assert table.column_names == ["id", "score", "label", "weight", "p"]
    order = np.argsort(table.column("id").to_numpy())
    assert_array_equal(table.column("id").to_numpy()[order], np.arange(N))
    assert_array_equal(table.column("score").to_numpy()[order], score)
    assert_array_equal(table.column("p").to_numpy()[order], est.predict(score))


def test_report_with_spark_equals_the_in_memory_report(spark, files):  # noqa: F811
    d, *_ = files
    args = ["report", "--score-col", "score", "--label-col", "label", "--weight-col", "weight", "-q"]
    assert main(args + ["--spark", str(d / "data.parquet"), "-o", str(d / "spark.json")]) == 0
    assert main(args + [str(d / "data.parquet"), "-o", str(d / "mem.json")]) == 0
    got_doc, want_doc = (json.loads((d / f"{w}.json").read_text()) for w in ("spark", "mem"))
    # The CORP curve and its consistency band: x exactly, the block means to the rounding of their weighted sums.
    assert got_doc["corp"].keys() == want_doc["corp"].keys() and want_doc["corp"]["n_resamples"] > 0
    for key, value in want_doc["corp"].items():
        if isinstance(value, list):
            assert_allclose(got_doc["corp"][key], value, rtol=0 if key == "x" else 1e-12, atol=0, err_msg=key)
        else:
            assert got_doc["corp"][key] == value, key
    got, want = got_doc["report"], want_doc["report"]
    assert got.keys() == want.keys()
    for key in want:
        if isinstance(want[key], float):
            assert got[key] == pytest.approx(want[key], rel=1e-9, abs=1e-12), key
        elif want[key] is not None and not isinstance(want[key], str):
            assert_allclose(np.asarray(got[key], dtype=float), np.asarray(want[key], dtype=float), rtol=1e-9,
                            atol=1e-12, err_msg=key)


def test_spark_errors_name_the_argument_and_leave_no_output(spark, files, capsys):  # noqa: F811
    d, score, label, _ = files
    fastcal.IsotonicRegression(out_of_bounds="clip").fit(score, label).save(d / "model.json")
    # bad data: exit 1, the column named, nothing written
    assert main(["fit", "--spark", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
                 str(d / "bad_label.parquet"), "-o", str(d / "bad.json")]) == 1
    assert "column 'label': label 2 is not 0 or 1" in _error_line(capsys)
    assert not os.path.exists(d / "bad.json")
    assert main(["apply", "--spark", str(d / "model.json"), str(d / "nan_score.parquet"), "-o",
                 str(d / "nan_out.parquet"), "--score-col", "score"]) == 1
    assert "T must be finite, but contains NaN" in _error_line(capsys)
    assert not os.path.exists(d / "nan_out.parquet") and not _leftovers(d)
    # bad usage: exit 2
    usage = [
        (["fit", "--spark", "--method", "venn-abers", "--score-col", "score", "--label-col", "label",
          str(d / "data.parquet"), "-o", str(d / "x.json")], "--method venn-abers"),
        (["fit", "--spark", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
          "--memory-budget", "1G", str(d / "data.parquet"), "-o", str(d / "x.json")], "--memory-budget"),
        (["fit", "--spark", "--method", "isotonic", "--score-col", "nope", "--label-col", "label",
          str(d / "data.parquet"), "-o", str(d / "x.json")], "no column 'nope'"),
        (["fit", "--spark", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
          str(d / "missing.parquet"), "-o", str(d / "x.json")], "no such file"),
        (["apply", "--spark", str(d / "model.json"), str(d / "data.parquet"), "-o", str(d / "x.npy")],
         "must be .parquet or .csv"),
        (["apply", "--spark", str(d / "model.json"), str(d / "data.parquet"), "-o", str(d / "y.parquet"),
          "--prior-rate", "0.5"], "--prior-rate"),
        (["report", "--spark", "--score-col", "score", "--label-col", "label", str(d / "data.parquet"), "-o",
          str(d / "r.pdf")], "must be .png, .html or .json"),
        (["report", "--spark-master", "local[1]", "--score-col", "score", "--label-col", "label",
          str(d / "data.parquet"), "-o", str(d / "r.json")], "--spark-master needs --spark"),
    ]
    for argv, fragment in usage:
        assert main(argv) == 2, argv
        assert fragment in _error_line(capsys), argv
    assert not [p for p in ("x.json", "y.parquet", "r.pdf", "r.json") if os.path.exists(d / p)]
    assert not _leftovers(d)
    assert spark.range(3).count() == 3  # the test's session is still running


def test_fit_and_apply_by_group_with_spark_equal_the_in_memory_commands(spark, files):  # noqa: F811
    d, score, label, weight = files
    group = np.array(["a", "b", "c", "tiny"])[np.minimum(np.arange(N) % 7, 3)]  # "tiny": under the minimum
    group[np.arange(N) % 7 == 6] = "tiny"
    group[:5] = "x"  # 5 rows: the global model's
    table = pa.table({"id": np.arange(N), "score": score, "label": label, "weight": weight, "group": group})
    pq.write_table(table, d / "grouped.parquet")
    args = ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--weight-col", "weight",
            "--group-col", "group", "--min-group-rows", "50"]
    assert main(args + ["--spark", str(d / "grouped.parquet"), "-o", str(d / "spark_grouped.json")]) == 0
    assert main(args + [str(d / "grouped.parquet"), "-o", str(d / "mem_grouped.json")]) == 0
    got, want = fastcal.load(d / "spark_grouped.json"), fastcal.load(d / "mem_grouped.json")
    assert isinstance(got, fastcal.GroupedCalibrator) and sorted(got.groups_) == sorted(want.groups_)
    got_models = dict(zip(got.groups_, got.calibrators_))  # Spark numbers string groups in its own row order
    for group_name, w_model in zip(want.groups_, want.calibrators_):
        g_model = got_models[group_name]
        assert_array_equal(g_model.X_thresholds_, w_model.X_thresholds_)
        assert_allclose(g_model.y_thresholds_, w_model.y_thresholds_, rtol=1e-12, atol=0)
    out = d / "spark_grouped_out.parquet"
    assert main(["apply", "--spark", str(d / "mem_grouped.json"), str(d / "grouped.parquet"), "-o", str(out),
                 "--score-col", "score", "--group-col", "group", "--output-col", "p"]) == 0
    result = pq.read_table(out)
    order = np.argsort(result.column("id").to_numpy())
    assert result.column_names == ["id", "score", "label", "weight", "group", "p"]
    assert_array_equal(result.column("p").to_numpy()[order], want.predict(score, group))


def test_apply_with_spark_fails_on_a_null_score_as_without_spark(spark, files, capsys):  # noqa: F811
    d, score, label, _ = files
    fastcal.PlattScaling().fit(score, label).save(d / "platt.json")
    table = pq.read_table(d / "data.parquet")
    null = table.set_column(1, "score", pa.array([None if i == 13 else s for i, s in enumerate(score.tolist())],
                                                  type=pa.float64()))
    pq.write_table(null, d / "null_score.parquet")
    for spark_option in ([], ["--spark"]):
        assert main(["apply", *spark_option, str(d / "platt.json"), str(d / "null_score.parquet"), "-o",
                     str(d / "null_out.parquet"), "--score-col", "score"]) == 1
        line = _error_line(capsys)
        assert "column 'score'" in line and "missing value" in line, line
        assert not os.path.exists(d / "null_out.parquet") and not _leftovers(d)


def test_fit_apply_and_report_with_spark_on_a_spark_connect_server(connect_url, files):
    """``--spark-master sc://host:port``: fit, apply and report through a Spark Connect server (the tests' JVM),
    each in a new process that is a Connect client alone: the in-memory model file, predictions and report."""
    import subprocess
    import sys

    d, score, _, _ = files
    fit = ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--weight-col", "weight",
           str(d / "data.parquet")]
    remote = ["--spark", "--spark-master", connect_url]
    for args in (fit + remote + ["-o", str(d / "connect_iso.json")], ["apply", *remote, str(d / "connect_iso.json"),
                 str(d / "data.parquet"), "-o", str(d / "connect_out.parquet"), "--score-col", "score",
                 "--output-col", "p"]):
        done = subprocess.run([sys.executable, "-m", "fastcal", *args], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
    assert main(fit + ["-o", str(d / "memory_iso.json")]) == 0
    got, want = fastcal.load(d / "connect_iso.json"), fastcal.load(d / "memory_iso.json")
    assert_array_equal(got.X_thresholds_, want.X_thresholds_)
    assert_allclose(got.y_thresholds_, want.y_thresholds_, rtol=1e-12, atol=0)
    table = pq.read_table(d / "connect_out.parquet")
    order = np.argsort(table.column("id").to_numpy())
    assert_array_equal(table.column("p").to_numpy()[order], got.predict(score))
    # report: the in-memory report's numbers
    report = ["report", "--score-col", "score", "--label-col", "label", "--weight-col", "weight", "-q",
              str(d / "data.parquet")]
    done = subprocess.run([sys.executable, "-m", "fastcal", *report, *remote, "-o", str(d / "connect_report.json")],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert main(report + ["-o", str(d / "memory_report.json")]) == 0
    got, want = (json.loads((d / f"{kind}_report.json").read_text())["report"] for kind in ("connect", "memory"))
    assert got.keys() == want.keys()
    for key, value in want.items():
        if isinstance(value, float):
            assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        elif value is not None and not isinstance(value, str):
            assert_allclose(np.asarray(got[key], dtype=float), np.asarray(value, dtype=float), rtol=1e-9,
                            atol=1e-12, err_msg=key)


def test_a_session_on_a_spark_connect_server_takes_no_client_settings():
    import argparse

    from fastcal.cli.spark import session_config

    assert session_config(argparse.Namespace(quiet=False, spark_master="sc://localhost:15002"), True) == {}
    local = session_config(argparse.Namespace(quiet=False, spark_master="local[2]"), True)
    assert local["spark.ui.showConsoleProgress"] == "true"


def test_a_session_the_command_starts_shows_progress_bars_only_where_fastcal_would():
    import argparse

    from fastcal.cli.spark import session_config

    for quiet, terminal, shown in ((False, True, "true"), (True, True, "false"), (False, False, "false")):
        config = session_config(argparse.Namespace(quiet=quiet, spark_master=None), terminal)
        assert config["spark.ui.showConsoleProgress"] == shown


@pytest.mark.parametrize("kind", ["int", "text"])
def test_csv_groups_with_spark_have_the_in_memory_types(spark, files, capsys, kind):  # noqa: F811
    """A CSV group column is typed alike with and without --spark (integers, or text; an empty cell the missing
    group, quoted or not), and a model fitted from CSV applies by Spark to the same file; a file without one
    fitted group gets a warning."""
    d, score, label, _ = files
    values = np.array(["-3", "11", "4", ""] if kind == "int" else ["b", "true", "2020-01-01", '""'])
    cells = values[np.arange(N) % 4]
    with open(d / f"g_{kind}.csv", "w") as f:
        f.write("id,score,label,group\n")
        f.writelines(f"{i},{s!r},{y},{g}\n" for i, s, y, g in zip(range(N), score.tolist(), label, cells))
    args = ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--group-col", "group",
            "--min-group-rows", "50", "-q", str(d / f"g_{kind}.csv")]
    assert main(args + ["--spark", "-o", str(d / "spark_g.json")]) == 0
    assert main(args + ["-o", str(d / "mem_g.json")]) == 0
    got, want = fastcal.load(d / "spark_g.json"), fastcal.load(d / "mem_g.json")
    expected = [-3, 4, 11, None] if kind == "int" else ["2020-01-01", "b", "true", None]
    assert sorted(want.groups_, key=lambda g: (g is None, g)) == expected
    assert sorted(got.groups_, key=lambda g: (g is None, g)) == expected
    out = d / f"spark_g_{kind}.parquet"
    assert main(["apply", "--spark", str(d / "mem_g.json"), str(d / f"g_{kind}.csv"), "-o", str(out),
                 "--score-col", "score", "--group-col", "group", "-q"]) == 0
    assert main(["apply", str(d / "mem_g.json"), str(d / f"g_{kind}.csv"), "-o", str(d / "mem_g.parquet"),
                 "--score-col", "score", "--group-col", "group", "-q"]) == 0
    result = pq.read_table(out)
    order = np.argsort(result.column("id").to_numpy())
    assert_array_equal(result.column("calibrated").to_numpy()[order],
                       pq.read_table(d / "mem_g.parquet").column("calibrated").to_numpy())
    assert capsys.readouterr().err == ""
    if kind == "text":  # a model of other groups: every row the global model's, and a warning
        other = d / "other.csv"
        other.write_text("score,group\n0.5,zz\n0.25,zz\n")
        assert main(["apply", "--spark", str(d / "mem_g.json"), str(other), "-o", str(d / "o.parquet"),
                     "--score-col", "score", "--group-col", "group", "-q"]) == 0
        err = capsys.readouterr().err
        assert f"fastcal: warning: {other}: no row's 'group' is one of the model's 4 groups" in err
        assert "the column's values: 'zz')" in err


@pytest.mark.parametrize("kind", ["parquet", "csv"])
def test_report_by_segment_with_spark_equals_the_in_memory_report(spark, files, capsys, kind):  # noqa: F811
    d, score, label, weight = files
    country = np.array(["fr", "de", "us", "xx"])[np.minimum(np.arange(N) % 9, 3)]
    country[::11] = ""  # missing in CSV (an empty cell), null in Parquet
    table = pa.table({"score": score, "label": label, "weight": weight,
                      "country": pa.array([c or None for c in country.tolist()], pa.string())})
    pq.write_table(table, d / "seg.parquet")
    with open(d / "seg.csv", "w") as f:
        f.write("score,label,weight,country\n")
        f.writelines(f"{s!r},{y},{w!r},{c}\n" for s, y, w, c in zip(score.tolist(), label, weight.tolist(), country))
    args = ["report", "--score-col", "score", "--label-col", "label", "--weight-col", "weight", "--segment-col",
            "country", str(d / f"seg.{kind}")]
    assert main(args + ["--spark", "-o", str(d / "seg_spark.json")]) == 0
    printed = capsys.readouterr().out
    assert "By country:" in printed and "multicalibration error over country: mce " in printed
    assert main(args + ["-o", str(d / "seg_mem.json"), "-q"]) == 0
    got, want = (json.loads((d / f"seg_{w}.json").read_text()) for w in ("spark", "mem"))
    assert got["segment_col"] == want["segment_col"] == "country"
    assert got["segments"]["groups"] == want["segments"]["groups"]  # the in-memory order, the missing group too
    assert None in want["segments"]["groups"]
    for key, values in want["segments"].items():
        if key != "groups":
            assert_allclose(np.asarray(got["segments"][key], dtype=float), np.asarray(values, dtype=float),
                            rtol=1e-9, atol=1e-12, err_msg=key)
    assert got["multicalibration"].keys() == want["multicalibration"].keys()
    for key, value in want["multicalibration"].items():
        assert got["multicalibration"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key


def _drawn(monkeypatch):
    """The ``(title, report, corp)`` of every picture the report command draws (fastcal.plot.report_diagram),
    recorded as they are drawn."""
    import fastcal.plot

    calls = []
    draw = fastcal.plot.report_diagram

    def record(report, corp=None, **options):
        calls.append((options.get("title"), report, corp))
        return draw(report, corp, **options)

    monkeypatch.setattr(fastcal.plot, "report_diagram", record)
    return calls


def _assert_same_numbers(got, want):
    """Two lists of drawn ``(title, report, corp)``: the same pictures, of the same numbers to 1e-12, the CORP
    curve's consistency band too."""
    assert [t for t, *_ in got] == [t for t, *_ in want]
    for (title, g_rep, g_corp), (_, w_rep, w_corp) in zip(got, want):
        assert_array_equal(g_rep.bin_edges, w_rep.bin_edges, err_msg=title)
        for name in ("bin_weights", "prob_true", "prob_pred"):
            assert_allclose(getattr(g_rep, name), getattr(w_rep, name), rtol=1e-12, atol=1e-12, err_msg=name)
        assert g_rep.ece == pytest.approx(w_rep.ece, rel=1e-12, abs=1e-12)
        assert (g_corp is None) == (w_corp is None)
        if w_corp is not None:
            assert_array_equal(g_corp.x, w_corp.x)
            assert w_corp.n_resamples > 0 and g_corp.n_resamples == w_corp.n_resamples
            for name in ("y", "lower", "upper"):
                assert_allclose(getattr(g_corp, name), getattr(w_corp, name), rtol=1e-12, atol=1e-12, err_msg=name)


def test_report_html_with_spark_has_the_in_memory_sections_and_numbers(spark, files, monkeypatch):  # noqa: F811
    """``report --spark -o .html --segment-col``: the in-memory page's report text, segment table and pictures (one
    per worst group, the null group's too), each drawn from numbers equal to the in-memory ones, the CORP curve's
    consistency band too."""
    import re

    from fastcal.cli.documents import SEGMENT_PICTURES

    d, score, label, weight = files
    country = np.array(["fr", "de", "us", None], dtype=object)[np.arange(N) % 4]
    label = np.where(country == "fr", (score > 0.3), label).astype(np.int64)  # fr miscalibrated
    pq.write_table(pa.table({"score": score, "label": label, "weight": weight,
                             "country": pa.array(country.tolist(), pa.string())}), d / "pic.parquet")
    args = ["report", "--score-col", "score", "--label-col", "label", "--weight-col", "weight", "--segment-col",
            "country", "-q", str(d / "pic.parquet")]
    drawn = _drawn(monkeypatch)
    assert main(args + ["--spark", "-o", str(d / "pic_spark.html")]) == 0
    spark_drawn = list(drawn)
    drawn.clear()
    assert main(args + ["-o", str(d / "pic_mem.html")]) == 0
    got, want = ((d / f"pic_{w}.html").read_text() for w in ("spark", "mem"))
    assert re.findall(r"<pre>.*?</pre>", got, re.S) == re.findall(r"<pre>.*?</pre>", want, re.S)
    for pattern in (r"<h\d>.*?</h\d>", r"<tr>.*?</tr>", r"Multicalibration error over .*?</p>", r'alt="[^"]*"'):
        assert re.findall(pattern, got) == re.findall(pattern, want), pattern
    assert len(re.findall(r'alt="[^"]*"', want)) == 1 + SEGMENT_PICTURES  # the null group's picture too
    assert 'alt="reliability diagram of country = None"' in want
    assert got.count("<img ") == want.count("<img ") == 1 + SEGMENT_PICTURES
    assert got.count("<p>") == want.count("<p>")
    _assert_same_numbers(spark_drawn, drawn)
    assert spark_drawn[1][0].startswith("fr (ecce_sigma ")  # worst first


def test_report_png_with_spark_draws_the_in_memory_numbers(spark, files, monkeypatch):  # noqa: F811
    d, *_ = files
    args = ["report", "--score-col", "score", "--label-col", "label", "--weight-col", "weight", "--n-bins", "7",
            "--strategy", "quantile", "-q", str(d / "data.parquet")]
    drawn = _drawn(monkeypatch)
    assert main(args + ["--spark", "-o", str(d / "spark.png")]) == 0
    spark_drawn = list(drawn)
    drawn.clear()
    assert main(args + ["-o", str(d / "mem.png")]) == 0
    assert (d / "spark.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(spark_drawn) == len(drawn) == 1
    _assert_same_numbers(spark_drawn, drawn)


def test_two_group_columns_with_spark_equal_the_in_memory_commands(spark, files, capsys):  # noqa: F811
    """``--group-col country,device`` and ``--segment-col country,device`` from CSV (a text column with empty
    cells, an integer column): with --spark, the groups (tuples, in the in-memory order), models, predictions and
    report of the commands without --spark."""
    d, score, label, weight = files
    country = np.array(["fr", "de", "us", ""])[np.arange(N) % 4]
    country[::7] = ""
    device = np.arange(N) % 3 + 1
    with open(d / "two.csv", "w") as f:
        f.write("id,score,label,weight,country,device\n")
        f.writelines(f"{i},{s!r},{y},{w!r},{c},{k}\n" for i, s, y, w, c, k in
                     zip(range(N), score.tolist(), label, weight.tolist(), country, device.tolist()))
    src = str(d / "two.csv")
    fit = ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--group-col",
           "country,device", "--min-group-rows", "50", "-q", src]
    assert main(fit + ["--spark", "-o", str(d / "two_spark.json")]) == 0
    assert main(fit + ["-o", str(d / "two_mem.json")]) == 0
    got, want = fastcal.load(d / "two_spark.json"), fastcal.load(d / "two_mem.json")
    assert got.groups_ == want.groups_ and ("fr", 1) in want.groups_ and (None, 3) in want.groups_
    for a, b in zip(got.calibrators_, want.calibrators_, strict=True):
        assert_array_equal(a.X_thresholds_, b.X_thresholds_)
        assert_allclose(a.y_thresholds_, b.y_thresholds_, rtol=1e-15, atol=1e-15)
    apply = ["apply", str(d / "two_mem.json"), src, "--score-col", "score", "--group-col", "country,device", "-q"]
    assert main(apply + ["--spark", "-o", str(d / "two_spark.parquet")]) == 0
    assert main(apply + ["-o", str(d / "two_mem.parquet")]) == 0
    assert main(["apply", "--spark", str(d / "two_mem.json"), src, "--score-col", "score", "--group-col", "country",
                 "-o", str(d / "two_one.parquet"), "-q"]) == 2  # the columns of the fit, or a usage error
    assert "fitted on 2 group columns, but --group-col names 1 (country)" in capsys.readouterr().err
    result = pq.read_table(d / "two_spark.parquet")
    order = np.argsort(result.column("id").to_numpy())
    assert_array_equal(result.column("calibrated").to_numpy()[order],
                       pq.read_table(d / "two_mem.parquet").column("calibrated").to_numpy())
    report = ["report", "--score-col", "score", "--label-col", "label", "--weight-col", "weight", "--segment-col",
              "country,device", "-q", src]
    assert main(report + ["--spark", "-o", str(d / "two_spark_r.json")]) == 0
    assert main(report + ["-o", str(d / "two_mem_r.json")]) == 0
    got, want = (json.loads((d / f"two_{w}_r.json").read_text()) for w in ("spark", "mem"))
    assert got["segments"]["groups"] == want["segments"]["groups"] and ["fr", 1] in want["segments"]["groups"]
    assert got["segments"]["n"] == want["segments"]["n"]
    for key, value in want["multicalibration"].items():
        assert got["multicalibration"][key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert capsys.readouterr().err == ""


def test_apply_spark_of_a_multicalibration_model_equals_apply(spark, files, capsys):  # noqa: F811
    """``apply --spark`` of a model of ``fit --method multicalibration``: the features read from the columns of
    their names (CSV typed as without --spark: text with empty cells, integers, numbers with empty cells), the
    predictions of ``apply`` without --spark within the JVM's rounding of its exp and log (see
    tests/test_spark_multicalibration.py), most of them the same bits."""
    d, score, label, weight = files
    country = np.array(["fr", "de", "us", ""])[np.arange(N) % 4]
    country[::7] = ""
    device = np.arange(N) % 3 + 1
    x = np.round(np.sin(np.arange(N)), 3).astype(object)
    x[::11] = ""
    with open(d / "mc.csv", "w") as f:
        f.write("id,score,label,country,device,x\n")
        f.writelines(f"{i},{s!r},{y},{c},{k},{v}\n" for i, s, y, c, k, v in
                     zip(range(N), score.tolist(), label, country, device.tolist(), x.tolist()))
    src = str(d / "mc.csv")
    src_text = (d / "mc.csv").read_text()
    assert main(["fit", "--method", "multicalibration", "--score-col", "score", "--label-col", "label",
                 "--segment-col", "country,device,x", "--numerical-col", "x", "-q", src, "-o",
                 str(d / "mc.json"), "--n-buckets", "5", "--max-depth", "2"]) == 0
    model = fastcal.load(d / "mc.json")
    assert np.count_nonzero(model.offsets_) > 0 and model.n_buckets == 5 and model.max_depth == 2
    apply = ["apply", str(d / "mc.json"), src, "--score-col", "score", "-q"]
    assert main(apply + ["--spark", "-o", str(d / "mc_spark.parquet")]) == 0
    assert main(apply + ["-o", str(d / "mc_mem.parquet")]) == 0
    result = pq.read_table(d / "mc_spark.parquet")
    got = result.column("calibrated").to_numpy()[np.argsort(result.column("id").to_numpy())]
    want = pq.read_table(d / "mc_mem.parquet").column("calibrated").to_numpy()
    assert np.all(np.abs(got - want) <= multicalibration_bound(model, score, want))
    assert np.mean(got == want) > 0.5
    assert capsys.readouterr().err == ""  # every feature has seen values: no warning
    unseen = d / "unseen.csv"
    unseen.write_text(src_text.replace(",fr,", ",xx,").replace(",de,", ",yy,").replace(",us,", ",zz,"))
    for spark_args in (["--spark"], []):
        out = d / ("unseen_out.parquet" if spark_args else "unseen_mem.parquet")
        assert main(["apply", str(d / "mc.json"), str(unseen), "--score-col", "score", "-q", "-o", str(out),
                     *spark_args]) == 0
        err = capsys.readouterr().err
        assert err.count("warning") == 1 and "no row's 'country' is one of the model's" in err, (spark_args, err)
        assert "no row with a value got that feature's corrections" in err
    # fit --spark: the model of fit without it (the file's rows in order: one CSV file, read in order)
    assert main(["fit", "--method", "multicalibration", "--score-col", "score", "--label-col", "label",
                 "--segment-col", "country,device,x", "--numerical-col", "x", "-q", src, "-o",
                 str(d / "mc_fit_spark.json"), "--spark", "--n-buckets", "5", "--max-depth", "2"]) == 0
    features = {"country": np.where(country == "", None, country).astype(object), "device": device,
                "x": np.array([np.nan if v == "" else float(v) for v in x])}
    assert_same_model(fastcal.load(d / "mc_fit_spark.json"), model, score, features)
    assert main(["fit", "--method", "multicalibration", "--score-col", "score", "--label-col", "label",
                 "--segment-col", "country,x", "--numerical-col", "country", "-q", src, "-o",
                 str(d / "bad.json"), "--spark"]) == 1
    assert not (d / "bad.json").exists()


@pytest.mark.parametrize("method, probabilities", [("vector", False), ("dirichlet", True)])
def test_fit_and_apply_multiclass_with_spark_equal_the_in_memory_commands(spark, files, capsys, method,
                                                                         probabilities):
    """``fit --spark --method vector|dirichlet`` with a --score-col per class (fastcal.spark.fit_multiclass) and
    ``apply --spark`` of the model (fastcal.spark.predict_proba): the in-memory commands' model (to 1e-10 in
    probability) and columns (to the JVM's rounding of exp and ln, see tests/test_spark_multiclass.py)."""
    d, *_ = files
    rng = np.random.default_rng(9)
    z = rng.normal(size=(N, 3)) * 2
    y = np.argmax(0.7 * z + rng.gumbel(size=z.shape), axis=1)
    X = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True) if probabilities else z
    src = d / f"mc_{method}.parquet"
    pq.write_table(pa.table({"id": np.arange(N), "a": X[:, 0], "b": X[:, 1], "c": X[:, 2], "y": y}), src)
    cols = ["--score-col", "a", "--score-col", "b", "--score-col", "c"]
    fit = ["fit", "--method", method, *cols, "--label-col", "y", "-q", str(src)]
    assert main(fit + ["--spark", "-o", str(d / "mc_spark.json")]) == 0
    assert main(fit + ["-o", str(d / "mc_mem.json")]) == 0
    got, want = fastcal.load(d / "mc_spark.json"), fastcal.load(d / "mc_mem.json")
    assert type(got) is type(want) and got.input_type_ == want.input_type_
    assert_allclose(got.predict_proba(X), want.predict_proba(X), rtol=0, atol=1e-10)
    apply = ["apply", str(d / "mc_mem.json"), str(src), *cols, "--output-col", "p", "-q"]
    assert main(apply + ["--spark", "-o", str(d / "mc_out_spark.parquet")]) == 0
    assert main(apply + ["-o", str(d / "mc_out_mem.parquet")]) == 0
    result = pq.read_table(d / "mc_out_spark.parquet")
    assert result.column_names == ["id", "a", "b", "c", "y", "p_0", "p_1", "p_2"]
    order = np.argsort(result.column("id").to_numpy())
    out = np.column_stack([result.column(f"p_{j}").to_numpy()[order] for j in range(3)])
    mem = pq.read_table(d / "mc_out_mem.parquet")
    assert_array_equal(mem.column("p_0").to_numpy(), want.predict_proba(X)[:, 0])
    _, a = naive.softmax_of_data(want.prediction_data(), X)
    assert np.all(np.abs(out - want.predict_proba(X)) <= 64 * np.finfo(np.float64).eps * (1 + a))
    # a null score fails the command, naming the column, as without --spark; nothing is left behind
    null = pa.table({"id": [0, 1], "a": [X[0, 0], X[1, 0]], "b": [X[0, 1], None], "c": [X[0, 2], X[1, 2]]})
    pq.write_table(null, d / "mc_null.parquet")
    capsys.readouterr()
    for spark_option in ([], ["--spark"]):
        assert main(["apply", *spark_option, str(d / "mc_mem.json"), str(d / "mc_null.parquet"), *cols, "-o",
                     str(d / "mc_null_out.parquet")]) == 1
        line = _error_line(capsys)
        assert "column 'b'" in line and "missing value" in line, line
        assert not os.path.exists(d / "mc_null_out.parquet") and not _leftovers(d)
