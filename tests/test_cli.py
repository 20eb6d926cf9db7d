"""The fastcal command line, driven as a user would: ``python -m fastcal`` on real files of each format.

Fitted models are compared with the library's in-memory fits on the same
columns, outputs with ``predict`` on the same scores. Finer-grained cases
(error messages, options) call ``fastcal.cli.main`` in-process, which runs
exactly the same code without paying for a new interpreter each time.
"""

import json
import contextlib
import os
import pty
import subprocess
import sys
import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

import fastcal
from fastcal import IsotonicRegression
from fastcal.cli import main

import pyarrow as pa  # noqa: E402 - the io extra is a test dependency: a missing one fails, never skips
import pyarrow.parquet as pq  # noqa: E402

N = 5000


# Once per `make test`, not again on one thread: the command line's behaviour (its kernels are the in-memory ones,
# which the other tests run on one thread).
pytestmark = pytest.mark.slow


def run(*args, stdin=None, cwd=None, env=None):
    return subprocess.run([sys.executable, "-m", "fastcal", *map(str, args)], input=stdin, capture_output=True,
                          cwd=cwd, env=env, timeout=120)


def one_line_error(out, *fragments):
    err = out.stderr.decode() if isinstance(out.stderr, bytes) else out.stderr
    lines = [ln for ln in err.splitlines() if ln.startswith("fastcal: error:")]
    assert len(lines) == 1, err
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    score = np.round(rng.random(N), 6)  # round-trips through CSV text exactly
    label = (rng.random(N) < score ** 2).astype(np.int64)
    weight = np.round(rng.uniform(0.5, 2.0, N), 3)
    return score, label, weight


@pytest.fixture(scope="module")
def files(tmp_path_factory, data):
    score, label, weight = data
    d = tmp_path_factory.mktemp("cli")
    ident = np.arange(N)
    with open(d / "data.csv", "w") as f:
        f.write("id,score,label,weight\n")
        f.writelines(f"{i},{s!r},{y},{w!r}\n" for i, s, y, w in zip(ident, score.tolist(), label, weight.tolist()))
    pq.write_table(pa.table({"id": ident, "score": score, "label": label, "weight": weight}), d / "data.parquet",
                   row_group_size=1500)
    rec = np.zeros(N, dtype=[("score", "f8"), ("label", "i8"), ("weight", "f8")])
    rec["score"], rec["label"], rec["weight"] = score, label, weight
    np.save(d / "data.npy", rec)
    np.save(d / "matrix.npy", np.column_stack([score, label, weight]))
    np.savez(d / "data.npz", score=score, label=label, weight=weight)
    return d


def reference(data, weighted=False, **params):
    score, label, weight = data
    params.setdefault("out_of_bounds", "clip")
    return IsotonicRegression(**params).fit(score, label, sample_weight=weight if weighted else None)


def assert_model_equal(path, ref, rtol=0.0):
    model = fastcal.load(path)
    assert type(model) is type(ref)
    assert_array_equal(model.X_thresholds_, ref.X_thresholds_)
    assert_allclose(model.y_thresholds_, ref.y_thresholds_, rtol=rtol, atol=1e-12)
    assert model.get_params() == ref.get_params()


# ---------------------------------------------------------------------------
# End to end, by subprocess: every input and output format, stdin and stdout.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "cols"), [
    ("data.csv", ["score", "label", "weight"]),
    ("data.parquet", ["score", "label", "weight"]),
    ("matrix.npy", ["0", "1", "2"]),
    ("data.npz", ["score", "label", "weight"]),
])
def test_fit_reads_every_format(files, data, tmp_path, name, cols):
    out = run("fit", "--method", "isotonic", "--score-col", cols[0], "--label-col", cols[1],
              "--weight-col", cols[2], files / name, "-o", tmp_path / "model.json")
    assert out.returncode == 0, out.stderr
    assert out.stderr == b""  # no progress bar when stderr is not a terminal
    assert out.stdout.decode().startswith(f"fastcal fit: isotonic on {N:,} rows: ")  # the one summary line
    assert out.stdout.count(b"\n") == 1
    assert_model_equal(tmp_path / "model.json", reference(data, weighted=True))
    assert list(tmp_path.iterdir()) == [tmp_path / "model.json"]  # no temporary files left


@pytest.fixture(scope="module")
def model(files, data):
    path = files / "model.json"
    reference(data).save(path)
    return path


@pytest.mark.parametrize(("src", "dst"), [
    ("data.csv", "out.parquet"), ("data.parquet", "out.csv"), ("data.npz", "out.npy"), ("data.npy", "out.npz"),
])
def test_apply_writes_every_format(files, data, model, tmp_path, src, dst):
    out = run("apply", model, files / src, "-o", tmp_path / dst, "--score-col", "score")
    assert out.returncode == 0, out.stderr
    want = reference(data).predict(data[0])
    target = tmp_path / dst
    if dst.endswith(".parquet"):
        t = pq.read_table(target)
        assert t.column_names == ["id", "score", "label", "weight", "calibrated"]
        assert_array_equal(t.column("calibrated").to_numpy(), want)
        # CSV columns reach Parquet as the text they were, never by type inference
        assert t.column("id").to_pylist() == [str(i) for i in range(N)]
        assert t.schema.field("id").type == pa.string()
    elif dst.endswith(".csv"):
        lines = target.read_text().splitlines()
        assert lines[0].replace('"', "") == "id,score,label,weight,calibrated"
        got = np.array([float(ln.split(",")[-1]) for ln in lines[1:]])
        assert_array_equal(got, want)
    elif dst.endswith(".npy"):
        assert_array_equal(np.load(target), want)
    else:
        z = np.load(target)
        assert sorted(z.files) == ["calibrated", "label", "score", "weight"]
        assert_array_equal(z["calibrated"], want)
    assert os.stat(target).st_mode & 0o777 == 0o666 & ~_umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == [dst]


def _umask():
    """The process umask, read without changing it (Linux); else by a file this process creates."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "probe")
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o777))
        return 0o777 & ~os.stat(path).st_mode


def test_stdin_and_stdout_csv(files, data, tmp_path):
    text = (files / "data.csv").read_bytes()
    out = run("fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "-",
              "-o", tmp_path / "m.json", stdin=text)
    assert out.returncode == 0, out.stderr
    assert_model_equal(tmp_path / "m.json", reference(data))
    out = run("apply", tmp_path / "m.json", "-", "-o", "-", "--prior-rate", "0.5", stdin=text)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.decode().splitlines()
    assert len(lines) == N + 1
    got = np.array([float(ln.split(",")[-1]) for ln in lines[1:]])
    assert_allclose(got, fastcal.correct_negative_sampling(reference(data).predict(data[0]), 0.5), rtol=1e-15)


def test_out_of_core_fit_needs_a_file_not_stdin(files, tmp_path):
    out = run("fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--memory-budget", "1M",
              "-", "-o", tmp_path / "m.json", stdin=(files / "data.csv").read_bytes())
    assert out.returncode == 2
    one_line_error(out, "--memory-budget reads the input several times: give a file, not stdin")
    assert list(tmp_path.iterdir()) == []


def test_report_json_and_html(files, data, tmp_path):
    score, label, _ = data
    out = run("report", files / "data.parquet", "--score-col", "score", "--label-col", "label",
              "-o", tmp_path / "report.json")
    assert out.returncode == 0, out.stderr
    assert b"Calibration report" in out.stdout  # the table, on stdout
    doc = json.loads((tmp_path / "report.json").read_text())
    want = fastcal.calibration_report(label, score)
    assert doc["report"]["brier"] == pytest.approx(want.brier, rel=1e-12)
    assert doc["report"]["ece"] == pytest.approx(want.ece, rel=1e-12)
    assert doc["report"]["prob_true"] == pytest.approx(list(want.prob_true), rel=1e-12)
    assert doc["report"]["brier_miscalibration"] == pytest.approx(want.brier_miscalibration, rel=1e-12)
    corp = fastcal.corp_reliability(label, score, n_resamples=doc["corp"]["n_resamples"], random_state=0)
    assert doc["corp"]["n_resamples"] > 0 and doc["corp"] == json.loads(json.dumps(corp.to_dict()))


def test_report_html_and_png(files, tmp_path, capsys):
    assert main(["report", str(files / "data.npz"), "--score-col", "score", "--label-col", "label", "-q",
                 "--n-bins", "8", "--strategy", "quantile", "-o", str(tmp_path / "report.html")]) == 0
    assert capsys.readouterr().out == ""
    html = (tmp_path / "report.html").read_text()
    assert "Calibration report (8 quantile bins)" in html and "data:image/png;base64," in html
    assert main(["report", str(files / "data.npy"), "--score-col", "score", "--label-col", "label",
                 "--weight-col", "weight", "-o", str(tmp_path / "report.png")]) == 0
    assert (tmp_path / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "total weight" in capsys.readouterr().out


def test_exit_codes_and_one_line_errors(files, model, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("score,label\n0.1,0\n0.2,1\nnan,1\n0.4,0\n")
    out = run("fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", bad,
              "-o", tmp_path / "m.json")
    assert out.returncode == 1
    one_line_error(out, "bad.csv", "column 'score'", "row 3", "not finite")
    out = run("fit", "--method", "isotonic", "--score-col", "nope", "--label-col", "label", files / "data.csv",
              "-o", tmp_path / "m.json")
    assert out.returncode == 2
    one_line_error(out, "data.csv", "no column 'nope'")
    assert not (tmp_path / "m.json").exists()


def test_failed_apply_leaves_no_output(files, tmp_path, model):
    # A bad value in the third batch: two batches were already written to the temporary file.
    score = np.random.default_rng(1).random(3000)
    score[2500] = np.inf
    pq.write_table(pa.table({"score": score}), tmp_path / "in.parquet")
    out = run("apply", model, tmp_path / "in.parquet", "-o", tmp_path / "out.parquet", "--batch-rows", "1000")
    assert out.returncode == 1
    one_line_error(out, "in.parquet", "column 'score'", "row 2501", "not finite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]


def test_progress_on_a_terminal(files, tmp_path):
    args = [sys.executable, "-m", "fastcal", "fit", "--method", "isotonic", "--score-col", "score",
            "--label-col", "label", str(files / "data.parquet"), "-o", str(tmp_path / "m.json"), "--batch-rows", "1000"]
    leader, follower = pty.openpty()
    proc = subprocess.run(args, stderr=follower, stdout=subprocess.PIPE, timeout=120)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    err = b"".join(chunks).decode()
    assert proc.returncode == 0, err
    assert proc.stdout.startswith(b"fastcal fit: ") and proc.stdout.count(b"\n") == 1  # no progress on stdout
    assert "reading" in err and "100.0%" in err and f"{N:,}/{N:,} rows" in err
    assert "fitting isotonic" in err


def test_quiet_silences_progress(files, tmp_path, capsys, monkeypatch):
    argv = ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
            str(files / "data.parquet"), "-o", str(tmp_path / "m.json"), "--batch-rows", "1000"]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(argv + ["--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(argv) == 0
    assert "100.0%" in capsys.readouterr().err


def test_entry_points(tmp_path):
    # python -m fastcal, python -m fastcal.cli and the console script (fastcal.cli:main) run one CLI.
    from importlib.metadata import entry_points

    (script,) = entry_points(group="console_scripts", name="fastcal")
    assert script.value == "fastcal.cli:main" and script.load() is main
    for module in ("fastcal", "fastcal.cli"):
        out = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, timeout=120)
        assert (out.returncode, out.stdout.decode()) == (0, f"fastcal {fastcal.__version__}\n"), out.stderr
        out = subprocess.run([sys.executable, "-m", module, "report", str(tmp_path / "none.csv"), "--score-col", "s",
                              "--label-col", "y", "-o", str(tmp_path / "r.json")], capture_output=True, timeout=120)
        assert out.returncode == 2  # the exit status passes through
        one_line_error(out, "none.csv: no such file")


def test_demo_subcommand(monkeypatch):
    # The demo itself runs end to end in test_demo.py; here: the subcommand hands it every argument.
    from fastcal import demo

    calls = []
    monkeypatch.setattr(demo, "main", lambda argv, prog: calls.append((argv, prog)))
    assert main(["demo", "--n", "20000", "--out", "somewhere", "--no-images"]) == 0
    assert calls == [(["--n", "20000", "--out", "somewhere", "--no-images"], "fastcal demo")]


# ---------------------------------------------------------------------------
# In-process: options, methods and messages.
# ---------------------------------------------------------------------------


def test_out_of_core_fit_equals_in_memory(files, data, tmp_path, capsys):
    for name in ("data.parquet", "data.csv", "data.npz"):
        target = tmp_path / f"{name}.json"
        assert main(["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
                     "--weight-col", "weight", "--memory-budget", "1M", "--batch-rows", "700",
                     "--increasing", "auto", str(files / name), "-o", str(target)]) == 0
        # out of core: weighted means of 0/1 labels over <= N rows (terms of one sign), summed in other
        # groupings than in memory, so 4 N eps apart (relative)
        assert_model_equal(target, reference(data, weighted=True, increasing="auto"),
                           rtol=4 * N * np.finfo(np.float64).eps)


def test_csv_without_pyarrow(files, data, tmp_path, monkeypatch):
    monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")
    assert main(["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
                 str(files / "data.csv"), "-o", str(tmp_path / "m.json")]) == 0
    assert_model_equal(tmp_path / "m.json", reference(data))
    assert main(["apply", str(tmp_path / "m.json"), str(files / "data.csv"), "-o", str(tmp_path / "o.csv")]) == 0
    lines = (tmp_path / "o.csv").read_text().splitlines()
    assert lines[0] == "id,score,label,weight,calibrated"
    assert_array_equal([float(ln.split(",")[-1]) for ln in lines[1:]], reference(data).predict(data[0]))
    assert main(["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
                 str(files / "data.parquet"), "-o", str(tmp_path / "m.json")]) == 2  # Parquet needs pyarrow


def test_sigmoid_and_temperature(files, data, tmp_path, capsys):
    score, label, weight = data
    status = main(["fit", "--method", "sigmoid", "--score-col", "score", "--label-col", "label",
                   "--weight-col", "weight", str(files / "data.parquet"), "-o", str(tmp_path / "s.json")])
    assert status == 0
    m = fastcal.load(tmp_path / "s.json")
    ref = fastcal.PlattScaling().fit(score, label, sample_weight=weight)
    assert (m.a_, m.b_) == pytest.approx((ref.a_, ref.b_), rel=1e-12)
    from fastcal import temperature
    rng = np.random.default_rng(2)
    logits = rng.normal(size=(3000, 3)) * 3
    y = np.argmax(logits + rng.gumbel(size=logits.shape) * 2, axis=1)
    np.savez(tmp_path / "mc.npz", a=logits[:, 0], b=logits[:, 1], c=logits[:, 2], y=y)
    assert main(["fit", "--method", "temperature", "--score-col", "a,b,c", "--label-col", "y",
                 str(tmp_path / "mc.npz"), "-o", str(tmp_path / "t.json")]) == 0
    ref = temperature.TemperatureScaling().fit(logits, y)
    m = fastcal.load(tmp_path / "t.json")
    assert m.beta_ == pytest.approx(ref.beta_, rel=1e-12)
    assert main(["apply", str(tmp_path / "t.json"), str(tmp_path / "mc.npz"), "--score-col", "a",
                 "--score-col", "b", "--score-col", "c", "-o", str(tmp_path / "mc_out.npz")]) == 0
    z = np.load(tmp_path / "mc_out.npz")
    want = ref.predict_proba(logits)
    for j in range(3):
        assert_allclose(z[f"calibrated_{j}"], want[:, j], rtol=1e-12)


@pytest.mark.parametrize("method, cls", [("vector", fastcal.VectorScaling),
                                         ("bcts", fastcal.BiasCorrectedTemperatureScaling)])
def test_vector_and_bcts_fit_and_apply(tmp_path, capsys, method, cls):
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(3000, 3)) * 3
    y = np.argmax(0.5 * logits + [0.0, 0.3, 0.6] + rng.gumbel(size=logits.shape), axis=1)
    w = rng.uniform(0.5, 2.0, 3000)
    np.savez(tmp_path / "mc.npz", a=logits[:, 0], b=logits[:, 1], c=logits[:, 2], y=y, w=w)
    assert main(["fit", "--method", method, "--score-col", "a,b,c", "--label-col", "y", "--weight-col", "w",
                 str(tmp_path / "mc.npz"), "-o", str(tmp_path / "m.json")]) == 0
    assert f"fastcal fit: {method} on 3,000 rows: " in capsys.readouterr().out
    ref = cls().fit(logits, y, sample_weight=w)
    m = fastcal.load(tmp_path / "m.json")
    assert type(m) is cls
    assert_array_equal(m.biases_, ref.biases_)  # the same arrays, the same fit
    assert main(["apply", str(tmp_path / "m.json"), str(tmp_path / "mc.npz"), "--score-col", "a,b,c",
                 "-o", str(tmp_path / "out.npz")]) == 0
    z = np.load(tmp_path / "out.npz")
    want = ref.predict_proba(logits)
    for j in range(3):
        assert_array_equal(z[f"calibrated_{j}"], want[:, j])
    assert_array_equal(z["y"], y)  # the other columns, verbatim
    np.savez(tmp_path / "bad.npz", a=logits[:, 0], b=logits[:, 1], c=logits[:, 2], y=np.where(y == 2, 3, y))
    assert main(["fit", "--method", method, "--score-col", "a,b,c", "--label-col", "y",
                 str(tmp_path / "bad.npz"), "-o", str(tmp_path / "b.json")]) == 1
    assert "is not a class index in 0 .. 2" in capsys.readouterr().err


@pytest.mark.parametrize("method, options, ref", [
    ("matrix", [], fastcal.MatrixScaling()),
    ("matrix", ["--reg-lambda", "0.01", "--reg-mu", "0.1"], fastcal.MatrixScaling(reg_lambda=0.01, reg_mu=0.1)),
    ("dirichlet", ["--reg-lambda", "0.001"], fastcal.DirichletCalibration(reg_lambda=0.001)),
    ("dirichlet", ["--matrix-type", "diagonal", "--max-iter", "50"],
     fastcal.DirichletCalibration(matrix_type="diagonal", max_iter=50)),
])
def test_matrix_and_dirichlet_fit_and_apply(tmp_path, capsys, method, options, ref):
    from scipy.special import softmax

    rng = np.random.default_rng(4)
    logits = rng.normal(size=(3000, 3)) * 3
    y = np.argmax(0.5 * logits + [0.0, 0.3, 0.6] + rng.gumbel(size=logits.shape), axis=1)
    w = rng.uniform(0.5, 2.0, 3000)
    X = softmax(logits, axis=1) if method == "dirichlet" else logits
    np.savez(tmp_path / "mc.npz", a=X[:, 0], b=X[:, 1], c=X[:, 2], y=y, w=w)
    assert main(["fit", "--method", method, *options, "--score-col", "a,b,c", "--label-col", "y", "--weight-col", "w",
                 str(tmp_path / "mc.npz"), "-o", str(tmp_path / "m.json")]) == 0
    assert f"fastcal fit: {method} on 3,000 rows: W 3x3, diagonal " in capsys.readouterr().out
    ref.fit(X, y, sample_weight=w)
    m = fastcal.load(tmp_path / "m.json")
    assert type(m) is type(ref) and m.get_params() == ref.get_params()
    assert_array_equal(m.coef_, ref.coef_)  # the same arrays, the same fit
    assert_array_equal(m.intercept_, ref.intercept_)
    assert main(["apply", str(tmp_path / "m.json"), str(tmp_path / "mc.npz"), "--score-col", "a,b,c",
                 "-o", str(tmp_path / "out.npz")]) == 0
    z = np.load(tmp_path / "out.npz")
    want = ref.predict_proba(X)
    for j in range(3):
        assert_array_equal(z[f"calibrated_{j}"], want[:, j])
    assert_array_equal(z["w"], w)  # the other columns, verbatim


@pytest.mark.parametrize("argv, message", [
    (["--method", "dirichlet", "--score-col", "a"], "--method dirichlet takes one --score-col of probabilities per "
                                                    "class"),
    (["--method", "vector", "--reg-lambda", "0.1", "--score-col", "a,b,c"], "--reg-lambda is for --method matrix or "
                                                                            "dirichlet"),
    (["--method", "matrix", "--matrix-type", "diagonal", "--score-col", "a,b,c"], "--matrix-type is for --method "
                                                                                  "dirichlet"),
    (["--method", "matrix", "--reg-mu", "-1", "--score-col", "a,b,c"], "expected a finite number (0 or more), got '-1'"),
    (["--method", "matrix", "--reg-lambda", "nan", "--score-col", "a,b,c"], "expected a finite number"),
    (["--method", "dirichlet", "--score-col", "a,b,c"], "X must hold probabilities in [0, 1]"),
])
def test_matrix_and_dirichlet_options_are_checked(tmp_path, capsys, argv, message):
    logits = np.random.default_rng(5).normal(size=(100, 3)) * 3
    np.savez(tmp_path / "mc.npz", a=logits[:, 0], b=logits[:, 1], c=logits[:, 2], y=np.arange(100) % 3)
    try:
        status = main(["fit", *argv, "--label-col", "y", str(tmp_path / "mc.npz"), "-o", str(tmp_path / "m.json")])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status in (1, 2)
    assert message in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_apply_with_priors_and_defaults(files, data, model, tmp_path):
    score = data[0]
    np.save(tmp_path / "s.npy", score)
    # A 1-D .npy has one column, used without --score-col.
    assert main(["apply", str(model), str(tmp_path / "s.npy"), "-o", str(tmp_path / "o.npy"),
                 "--priors", "0.5", "0.1"]) == 0
    want = fastcal.adjust_priors(reference(data).predict(score), 0.5, 0.1)
    assert_array_equal(np.load(tmp_path / "o.npy"), want)


def test_fit_structured_npy_in_process(files, data, tmp_path):
    assert main(["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
                 "--weight-col", "weight", str(files / "data.npy"), "-o", str(tmp_path / "m.json")]) == 0
    assert_model_equal(tmp_path / "m.json", reference(data, weighted=True))


@pytest.mark.parametrize(("argv", "status", "fragments"), [
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{d}/data.txt", "-o", "{t}/m.json"],
     2, ["unknown input format '.txt'"]),
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{d}/missing.csv", "-o",
      "{t}/m.json"], 2, ["missing.csv: no such file"]),
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{d}/data.csv", "-o",
      "{t}/m.txt"], 2, ["must be .json"]),
    (["fit", "--method", "sigmoid", "--score-col", "score", "--label-col", "weight", "{d}/data.csv", "-o",
      "{t}/m.json"], 1, ["data.csv: column 'weight', row 1", "is not 0 or 1"]),
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--weight-col", "id",
      "{t}/negw.csv", "-o", "{t}/m.json"], 1, ["negw.csv: column 'id', row 2", "negative"]),
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{t}/text.csv", "-o",
      "{t}/m.json"], 1, ["text.csv: column 'score', row 2: 'oops' is not a number"]),
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{t}/ragged.csv", "-o",
      "{t}/m.json"], 1, ["ragged.csv: row 2: expected 2 fields, got 3"]),
    (["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{t}/null.parquet", "-o",
      "{t}/m.json"], 1, ["null.parquet: column 'score', row 2: missing value"]),
    (["apply", "{t}/notamodel.json", "{d}/data.csv", "-o", "{t}/o.csv"], 1, ["notamodel.json", "invalid fastcal model"]),
    (["apply", "{d}/model.json", "{d}/matrix.npy", "-o", "{t}/o.csv"], 2, ["matrix.npy", "--score-col"]),
    (["apply", "{d}/model.json", "{d}/data.csv", "-o", "{t}/o.csv", "--score-col", "score", "--output-col", "id"],
     2, ["already has a column 'id'"]),
    (["apply", "{d}/model.json", "{d}/data.csv", "-o", "{t}/o.xlsx", "--score-col", "score"], 2,
     ["unknown output format"]),
    (["report", "{d}/data.csv", "--score-col", "weight", "--label-col", "label", "-o", "{t}/r.json"], 1,
     ["column 'weight', row 1", "not a probability"]),
    (["report", "{d}/data.csv", "--score-col", "score", "--label-col", "label", "-o", "{t}/r.pdf"], 2,
     ["must be .png, .html or .json"]),
])
def test_error_messages(files, model, tmp_path, capsys, argv, status, fragments):
    (tmp_path / "negw.csv").write_text("score,label,id\n0.1,0,1\n0.2,1,-1\n")
    (tmp_path / "text.csv").write_text("score,label\n0.1,0\noops,1\n")
    (tmp_path / "ragged.csv").write_text("score,label\n0.1,0\n0.2,1,3\n")
    (tmp_path / "notamodel.json").write_text('{"format": "something else"}')
    pq.write_table(pa.table({"score": pa.array([0.1, None]), "label": [0, 1]}), tmp_path / "null.parquet")
    before = set(tmp_path.iterdir())
    argv = [a.format(d=files, t=tmp_path) for a in argv]
    assert main(argv) == status
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("fastcal: error:")]
    assert len(lines) == 1, err
    for f in fragments:
        assert f in lines[0]
    assert set(tmp_path.iterdir()) == before  # no output, no temporary file


def test_usage_errors_exit_2(capsys):
    for argv in (["fit", "--method", "magic", "x.csv", "-o", "m.json"], ["fit", "--bogus"], ["nope"],
                 *(["fit", "x.csv", "-o", "m.json", "--memory-budget", size] for size in ("infG", "nan", "-inf", "1e999M"))):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert "fastcal: error:" in capsys.readouterr().err
    assert main([]) == 2


def test_bad_values_are_printed_as_plain_numbers():
    # Messages show 2.0, not np.float64(2.0).
    from fastcal._io import DataError
    from fastcal.cli.checks import check_labels, check_weights

    cases = [
        (lambda: check_labels(np.array([0.0, 2.0]), "d.csv", "y", "sigmoid"), "row 2: label 2.0 is not 0 or 1"),
        (lambda: check_labels(np.array([1, 7], dtype=np.int64), "d.csv", "y", "temperature", n_classes=3),
         "row 2: label 7 is not a class index in 0 .. 2"),
        (lambda: check_weights(np.array([1.0, -0.5], dtype=np.float32), "d.csv", "w"), "row 2: weight -0.5 is negative"),
    ]
    for call, message in cases:
        with pytest.raises(DataError) as info:
            call()
        assert message in str(info.value) and "np." not in str(info.value)


# ---------------------------------------------------------------------------
# apply carries every input column through untouched (issue 11).
# ---------------------------------------------------------------------------

#: Records that type inference, re-quoting or line splitting would change; the score is the 2nd field.
TRICKY_HEADER = b'id,score,zip,text,empty,mixed'
TRICKY_ROWS = [
    b'007,0.25,01234,"a, b",,1',
    b'9007199254740993,0.5,00000,"line\nbreak\r\ninside",,abc',
    '"\u00fcn\u00efc\u00f8d\u00e9 \u2713",0.75,1e5,"say ""hi""",,2.50'.encode(),
    b'-0,"0.125",+1,\'single\',,TRUE',
    b'18446744073709551617,1e-1,0x1F,"",,',
    b'a"b,0.875, 1 ,x"y"z,,1e400',
]
TRICKY_SCORES = [0.25, 0.5, 0.75, 0.125, 0.1, 0.875]


def tricky_csv(eol=b"\n", bom=False, final_eol=True):
    text = (b"\xef\xbb\xbf" if bom else b"") + eol.join([TRICKY_HEADER, *TRICKY_ROWS])
    return text + (eol if final_eol else b"")


def assert_csv_pass_through(out, header, rows, eol, final_eol, want, new_header=b"calibrated"):
    """``out`` is ``header,NEW`` and every record of ``rows`` byte for byte, then ``,value``, then its line break."""
    head = header + b"," + new_header + eol
    assert out[: len(head)] == head, out[:200]
    pos = len(head)
    for i, (row, w) in enumerate(zip(rows, want)):
        assert out[pos: pos + len(row) + 1] == row + b",", (i, out[pos: pos + len(row) + 40])
        pos += len(row) + 1
        last = i == len(rows) - 1 and not final_eol
        end = len(out) if last else out.index(eol, pos)
        assert float(out[pos:end]) == w, (i, out[pos:end], w)  # the value round-trips exactly
        pos = end + (0 if last else len(eol))
    assert pos == len(out)


@pytest.mark.parametrize("engine", ["pyarrow", "csv module"])
@pytest.mark.parametrize(("eol", "bom", "final_eol"), [
    (b"\n", False, True), (b"\r\n", True, True), (b"\r\n", False, False), (b"\n", True, False), (b"\r", False, True),
])
def test_apply_csv_copies_every_record_byte_for_byte(model, data, tmp_path, monkeypatch, engine, eol, bom,
                                                     final_eol):
    if engine == "csv module":
        monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")
    src = tmp_path / "in.csv"
    src.write_bytes(tricky_csv(eol, bom, final_eol))
    want = reference(data).predict(np.array(TRICKY_SCORES))
    for batch_rows in ("1000", "2"):  # one block; records cut into blocks of two
        assert main(["apply", str(model), str(src), "-o", str(tmp_path / "out.csv"), "--batch-rows", batch_rows]) == 0
        header = (b"\xef\xbb\xbf" if bom else b"") + TRICKY_HEADER
        assert_csv_pass_through((tmp_path / "out.csv").read_bytes(), header, TRICKY_ROWS, eol, final_eol, want)


def test_apply_csv_to_parquet_keeps_the_text(model, data, tmp_path):
    # Columns of a CSV file reach Parquet as the text they were (quotes removed), never by type inference.
    import csv
    import io

    src = tmp_path / "in.csv"
    src.write_bytes(tricky_csv(b"\r\n", bom=True))
    assert main(["apply", str(model), str(src), "-o", str(tmp_path / "out.parquet")]) == 0
    t = pq.read_table(tmp_path / "out.parquet")
    rows = list(csv.reader(io.StringIO(tricky_csv(b"\r\n").decode(), newline="")))
    assert t.column_names == rows[0] + ["calibrated"]
    for j, name in enumerate(rows[0]):
        assert t.schema.field(name).type == pa.string()
        assert t.column(name).to_pylist() == [r[j] for r in rows[1:]], name
    assert_array_equal(t.column("calibrated").to_numpy(), reference(data).predict(np.array(TRICKY_SCORES)))


def test_apply_parquet_keeps_arrow_types_and_values(model, data, tmp_path, capsys):
    import datetime
    import decimal

    n = 7
    table = pa.table({
        "id": pa.array(["007", "01234", "", None, "\u00fc\u2713", "a,b", "x\ny"]),
        "big": pa.array([2 ** 53 + 1, 2 ** 63 - 1, -(2 ** 63), 0, None, 7, 9], pa.int64()),
        "u8": pa.array([0, 255, 1, 2, 3, 4, 5], pa.uint8()),
        "f32": pa.array([0.1, None, 1e38, -0.0, 3.5, 1e-45, 2.0], pa.float32()),
        "dec": pa.array([decimal.Decimal("1.10")] * n, pa.decimal128(5, 2)),
        "when": pa.array([datetime.datetime(2024, 1, 1, 12, 0, i) for i in range(n)], pa.timestamp("us", tz="UTC")),
        "flag": pa.array([True, False, None, True, True, False, True]),
        "cat": pa.array(["a", "b", "a", "c", "a", "b", None]).dictionary_encode(),
        "tags": pa.array([[1, 2], [], None, [3], [4, 5, 6], [7], [8]]),
        "score": pa.array(TRICKY_SCORES + [0.3], pa.float32()),
    })
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=3)
    assert main(["apply", str(model), str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"),
                 "--batch-rows", "2"]) == 0
    # CSV has no lists: a usage error naming the column, no output
    assert main(["apply", str(model), str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.csv")]) == 2
    assert "cannot be written as CSV" in capsys.readouterr().err
    assert not (tmp_path / "out.csv").exists()
    pq.write_table(table.drop_columns(["tags"]), tmp_path / "flat.parquet", row_group_size=3)
    assert main(["apply", str(model), str(tmp_path / "flat.parquet"), "-o", str(tmp_path / "out.csv"),
                 "--batch-rows", "2"]) == 0
    got = pq.read_table(tmp_path / "out.parquet")
    assert got.schema.remove(got.schema.get_field_index("calibrated")) == table.schema
    assert got.drop_columns(["calibrated"]).equals(table)
    assert_array_equal(got.column("calibrated").to_numpy(), reference(data).predict(table.column("score").to_numpy()))
    # CSV output: pyarrow's CSV text of the same values (integers in full, no float round trip)
    text = (tmp_path / "out.csv").read_text()
    assert "9223372036854775807" in text and "9007199254740993" in text and '"007"' in text


def test_apply_output_column_never_collides(model, tmp_path, capsys):
    src = tmp_path / "in.csv"
    src.write_text("score,calibrated\n0.5,keep me\n")
    assert main(["apply", str(model), str(src), "-o", str(tmp_path / "out.csv")]) == 2
    assert "already has a column 'calibrated'" in capsys.readouterr().err
    assert main(["apply", str(model), str(src), "-o", str(tmp_path / "out.csv"), "--output-col", "p"]) == 0
    assert (tmp_path / "out.csv").read_text().splitlines()[1].startswith("0.5,keep me,")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "out.csv"]


@pytest.mark.parametrize("text", [b"score,id\n", b"score,id", b"\xef\xbb\xbfscore,id\r\n"])
def test_apply_header_only_csv(model, tmp_path, text):
    (tmp_path / "in.csv").write_bytes(text)
    for dst in ("out.csv", "out.parquet", "out.npy"):
        assert main(["apply", str(model), str(tmp_path / "in.csv"), "-o", str(tmp_path / dst)]) == 0
    out = (tmp_path / "out.csv").read_bytes()
    head = text.rstrip(b"\r\n")
    assert out == head + b",calibrated" + text[len(head):]
    assert pq.read_table(tmp_path / "out.parquet").column_names == ["score", "id", "calibrated"]
    assert np.load(tmp_path / "out.npy").shape == (0,)


@pytest.mark.slow
def test_apply_streams_2m_rows_whose_id_turns_alphanumeric(model, data, tmp_path):
    # The id column is numeric for the first 1.5M rows (a type-inferring reader settles on int64 in its first
    # block), then alphanumeric; it must come out as it came in.
    n = 2_000_000
    score = (np.arange(n) % 1000) / 1000
    ids = np.char.add(np.where(np.arange(n) < 1_500_000, "", "A"), np.arange(n).astype(str))
    body = np.char.add(np.char.add(ids, ","), score.astype(str))
    text = ("id,score\n" + "\n".join(body.tolist()) + "\n").encode()
    (tmp_path / "in.csv").write_bytes(text)
    assert main(["apply", str(model), str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv")]) == 0
    out = (tmp_path / "out.csv").read_bytes().split(b"\n")
    assert out[0] == b"id,score,calibrated" and out[-1] == b"" and len(out) == n + 2
    want = reference(data).predict(score)
    lines = text.split(b"\n")[1:-1]
    for i in (0, 1_499_999, 1_500_000, n - 1):
        assert out[i + 1].startswith(lines[i] + b","), (i, out[i + 1])
    got = np.array([ln.rsplit(b",", 1)[1] for ln in out[1:-1]], dtype=np.float64)
    assert_array_equal(got, want)
    assert all(o[: len(ln)] == ln for o, ln in zip(out[1:-1], lines))


# ---------------------------------------------------------------------------
# Memory: out-of-core fits and apply (stdin too) stay within the budget at 10^7 rows.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def big_files(tmp_path_factory):
    """10^7 rows (float64 scores, 0/1 labels) as Parquet (row groups of 2^18 rows) and CSV; 2^16 rows of each."""
    import pyarrow.csv as pcsv

    d = tmp_path_factory.mktemp("big")
    rng = np.random.default_rng(12)
    for stem, n in (("big", 10 ** 7), ("small", 1 << 16)):
        x = rng.random(n)
        table = pa.table({"score": x, "label": (rng.random(n) < x).astype(np.uint8)})
        pq.write_table(table, d / f"{stem}.parquet", row_group_size=1 << 18)
        pcsv.write_csv(table, d / f"{stem}.csv")
    IsotonicRegression(out_of_bounds="clip").fit(x, table.column("label").to_numpy()).save(d / "model.json")
    return d


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "ext"), [
    ("isotonic", ".parquet"), ("sigmoid", ".parquet"), ("isotonic", ".csv"), ("sigmoid", ".csv"), ("apply", ".csv"),
])
def test_memory_does_not_grow_with_the_file(big_files, tmp_path, kind, ext):
    # fastcal fit --memory-budget 16M, and apply from stdin, within 5x the budget beyond the process's own
    # memory; on main these grew by 120-310 MB (fit) and 775 MB (apply reading stdin whole).
    from .memory_limit import run_limited

    budget = 16 << 20
    extra = 5 * budget
    out = big_files / "model.json" if kind == "apply" else tmp_path / "m.json"
    res = run_limited(kind, big_files / f"big{ext}", big_files / f"small{ext}", budget, extra, out, tmp_path)
    assert res["control"] == "MemoryError"  # the limit binds: the file's columns do not fit
    assert res["growth"] < extra, res["growth"] / 1e6


# ---------------------------------------------------------------------------
# Signals: SIGINT, SIGTERM and SIGHUP stop a run, leave nothing behind, exit 128 + the signal's number.
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def long_inputs(tmp_path_factory):
    """2 * 10^6 rows as CSV and Parquet: a run over them takes seconds, time enough to be interrupted."""
    import pyarrow.csv as pcsv

    d = tmp_path_factory.mktemp("long")
    rng = np.random.default_rng(13)
    x = rng.random(2_000_000)
    table = pa.table({"id": np.arange(x.shape[0]), "score": x, "label": (rng.random(x.shape[0]) < x).astype(np.uint8)})
    pcsv.write_csv(table, d / "in.csv")
    pq.write_table(table, d / "in.parquet", row_group_size=1 << 16)
    return d


def _interrupt_when(argv, ready, signum, env=None, timeout=120, stdin=None):
    """Start ``fastcal argv``, send ``signum`` once ``ready()`` holds, return the finished process.

    With ``stdin`` (bytes), the first half is piped in before the wait and the rest after the signal: the
    command cannot finish, and commit its output, before it has been signalled.
    """
    import signal as _signal
    import time

    proc = subprocess.Popen([sys.executable, "-m", "fastcal", *map(str, argv)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=None if stdin is None else subprocess.PIPE, env=env)
    deadline = time.monotonic() + timeout
    try:
        if stdin is not None:
            proc.stdin.write(stdin[:len(stdin) // 2])
            proc.stdin.flush()
        while not ready():
            assert proc.poll() is None, ("finished before it could be interrupted", proc.communicate())
            assert time.monotonic() < deadline, "never got ready"
            time.sleep(0.02)
        proc.send_signal(signum)
        if stdin is not None:
            try:
                proc.stdin.write(stdin[len(stdin) // 2:])
                proc.stdin.close()
            except BrokenPipeError:  # it stopped reading
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
            proc.stdin = None
        out, err = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != -_signal.SIGKILL
    return proc.returncode, err.decode()


SIGNAL_NAMES = ["SIGTERM", pytest.param("SIGHUP", marks=pytest.mark.slow), pytest.param("SIGINT", marks=pytest.mark.slow)]


@pytest.mark.parametrize("name", SIGNAL_NAMES)
def test_signal_during_apply_leaves_no_partial_output(long_inputs, model, tmp_path, name):
    import signal as _signal

    signum = getattr(_signal, name)

    def writing():  # the temporary output exists and has rows in it
        return any(p.name.startswith(".fastcal-") and p.stat().st_size > 1 << 16 for p in tmp_path.iterdir())

    # the input comes on stdin, its second half only after the signal: the run cannot end before it
    rc, err = _interrupt_when(["apply", model, "-", "-o", tmp_path / "out.csv", "--batch-rows", "2000"], writing,
                              signum, stdin=(long_inputs / "in.csv").read_bytes())
    assert rc == 128 + signum, err
    assert "fastcal: interrupted" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", SIGNAL_NAMES)
def test_signal_during_out_of_core_fit_removes_partition_files(long_inputs, tmp_path, name):
    import signal as _signal

    signum = getattr(_signal, name)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    out.mkdir()

    def partitioning():  # the out-of-core fit has written partition files
        return any(any(d.iterdir()) for d in tmp.iterdir() if d.name.startswith("fastcal-partitions-"))

    rc, err = _interrupt_when(["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label",
                               "--memory-budget", "1M", long_inputs / "in.parquet", "-o", out / "m.json"],
                              partitioning, signum, env=dict(os.environ, TMPDIR=str(tmp)))
    assert rc == 128 + signum, err
    assert list(tmp.iterdir()) == [] and list(out.iterdir()) == []


def test_swallowed_interrupt_still_stops_the_run(model, files, tmp_path, monkeypatch):
    # pyarrow swallows a KeyboardInterrupt raised while it imports pandas lazily: the signal is recorded anyway,
    # and the run stops at the next batch or before its output is renamed into place.
    import signal as _signal

    from fastcal.cli import apply as apply_module

    original = apply_module.calibrate

    def calibrate_after_a_swallowed_interrupt(*args):
        try:
            os.kill(os.getpid(), _signal.SIGINT)
            for _ in range(1000):  # the handler runs between two bytecodes, raising in here
                pass
        except KeyboardInterrupt:
            pass
        return original(*args)

    monkeypatch.setattr(apply_module, "calibrate", calibrate_after_a_swallowed_interrupt)
    # SIGINT's default handler, whatever started the tests (a shell's background job ignores SIGINT, which main
    # then leaves ignored, as it does nohup's SIGHUP)
    inherited = _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    try:
        before = {s: _signal.getsignal(s) for s in (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)}
        for dst in ("out.csv", "out.npy", "out.parquet"):
            assert main(["apply", str(model), str(files / "data.parquet"), "-o", str(tmp_path / dst)]) == 130
            assert list(tmp_path.iterdir()) == []
        # the handlers are main's own: restored after it
        assert {s: _signal.getsignal(s) for s in before} == before
    finally:
        _signal.signal(_signal.SIGINT, inherited)


def test_an_error_raised_instead_of_the_interrupt_still_exits_with_the_signal(model, files, tmp_path, monkeypatch):
    # NumPy's tofile, interrupted by a signal whose handler raises, raises a TypeError instead (seen in the
    # out-of-core fit's partition files): the run was interrupted all the same, and exits with 128 + the signal.
    import signal as _signal

    from fastcal.cli import apply as apply_module

    def calibrate_interrupted_into_a_type_error(*args):
        try:
            os.kill(os.getpid(), _signal.SIGTERM)
            for _ in range(1000):  # the handler runs between two bytecodes, raising in here
                pass
        except KeyboardInterrupt:
            raise TypeError("expected str, bytes or os.PathLike object, not BufferedWriter") from None
        raise AssertionError("the handler did not run")

    monkeypatch.setattr(apply_module, "calibrate", calibrate_interrupted_into_a_type_error)
    assert main(["apply", str(model), str(files / "data.parquet"), "-o", str(tmp_path / "out.csv")]) == 128 + 15
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_while_pyarrow_imports_pandas(files, model, tmp_path):
    # A stand-in for pandas that receives Ctrl-C while it is being imported; whether or not a command makes
    # pyarrow import pandas, Ctrl-C stops it with exit 130 and no output.
    fake = tmp_path / "fake"
    (fake / "pandas").mkdir(parents=True)
    (fake / "pandas" / "__init__.py").write_text(
        "import os, signal, sys, time\nsys.stderr.write('pandas imported\\n')\n"
        "os.kill(os.getpid(), signal.SIGINT)\ntime.sleep(0.5)\n")
    out = tmp_path / "out"
    out.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake), *sys.path]))
    for argv in (["apply", model, files / "data.parquet", "-o", out / "o.npy"],
                 ["apply", model, files / "data.csv", "-o", out / "o.npy"],
                 ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "--weight-col",
                  "weight", files / "data.parquet", "-o", out / "m.json"]):
        proc = run(*argv, env=env)
        err = proc.stderr.decode()
        if "pandas imported" in err:
            assert proc.returncode == 130, err
            assert list(out.iterdir()) == []
        else:
            assert proc.returncode == 0, err
            for p in out.iterdir():
                p.unlink()


def test_import_installs_no_signal_handler():
    code = ("import signal; before = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)]; "
            "import fastcal, fastcal.cli, fastcal.cli.signals; "
            "print(before == [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "True", out.stderr


# ---------------------------------------------------------------------------
# The same answer for the same mistake (issue 11): exit codes, labels, numbers, empty inputs.
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "{d}/data.parquet"],
    ["fit", "--method", "sigmoid", "--memory-budget", "1M", "--score-col", "score", "--label-col", "label",
     "{d}/data.csv"],
    ["apply", "{d}/model.json", "{d}/data.parquet"],
    ["report", "{d}/data.npz", "--score-col", "score", "--label-col", "label"],
])
@pytest.mark.parametrize("ext", [".json", ".csv", ".parquet", ".npy", ".npz", ".png", ".html"])
def test_missing_output_directory_is_a_usage_error(files, model, tmp_path, capsys, argv, ext):
    # The README: exit status 2 for bad usage, a missing file or directory among them; for every command,
    # checked before any work (fit checked it only when saving: exit 1, after the fit).
    kind = {"fit": (".json",), "apply": (".csv", ".parquet", ".npy", ".npz"), "report": (".json", ".png", ".html")}
    if ext not in kind[argv[0]]:
        return
    target = tmp_path / "no" / "such" / f"out{ext}"
    status = main([a.format(d=files) for a in argv] + ["-o", str(target)])
    err = capsys.readouterr().err
    assert status == 2, err
    assert f"directory {tmp_path / 'no' / 'such'} does not exist" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
@pytest.mark.parametrize("memory_budget", [None, "1M"])
@pytest.mark.parametrize(("bad", "shown"), [("2", "2.0"), ("0.5", "0.5"), ("-1", "-1.0"), ("1.0000001", "1.0000001")])
def test_calibration_labels_must_be_0_or_1(tmp_path, capsys, method, memory_budget, bad, shown):
    # README: labels not 0/1 are bad data (exit 1) for calibration; isotonic accepted 2 and 0.5 silently.
    lines = ["score,label"] + [f"{i / 10},{i % 2}" for i in range(10)]
    lines[7] = f"0.6,{bad}"  # data row 7
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    argv = ["fit", "--method", method, "--score-col", "score", "--label-col", "label", str(tmp_path / "d.csv"),
            "-o", str(tmp_path / "m.json")] + (["--memory-budget", memory_budget] if memory_budget else [])
    assert main(argv) == 1
    assert f"column 'label', row 7: label {shown} is not 0 or 1" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()
    lines[7] = "0.6,1.0"  # 1.0 and True are 1: fine
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    assert main(argv) == 0


@pytest.mark.parametrize("engine", ["pyarrow", "csv module"])
@pytest.mark.parametrize(("value", "shown"), [
    ("0.5_0", "'0.5_0' is not a number"),  # Python's float() takes digit separators; pyarrow does not
    ("1_000", "'1_000' is not a number"),
    ("\uff11", "'\uff11' is not a number"),  # a fullwidth digit: float() takes it too
    ("0x10", "'0x10' is not a number"),
    ("1,5", None),  # an unquoted comma: a row with one field too many
    ('"1,5"', "'1,5' is not a number"),
    ("", "missing value"),
    ('""', "missing value"),
    ("  ", "missing value"),
])
@pytest.mark.parametrize("command", ["fit", "fit-out-of-core", "report", "apply"])
def test_values_that_are_not_numbers_name_row_and_column(model, tmp_path, capsys, monkeypatch, engine, value, shown,
                                                         command):
    if engine == "csv module":
        monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")
    lines = ["score,label"] + [f"{(i % 10) / 10},{i % 2}" for i in range(3000)]
    lines[2500] = f"{value},1"  # data row 2500, in the third batch
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    common = [str(tmp_path / "d.csv"), "--batch-rows", "1000"]
    argv = {
        "fit": ["fit", "--method", "isotonic", "--score-col", "score", "--label-col", "label", "-o",
                str(tmp_path / "m.json")] + common,
        "fit-out-of-core": ["fit", "--method", "sigmoid", "--score-col", "score", "--label-col", "label", "-o",
                            str(tmp_path / "m.json"), "--memory-budget", "1M"] + common,
        "report": ["report", "--score-col", "score", "--label-col", "label", "-o", str(tmp_path / "r.json")] + common,
        "apply": ["apply", str(model), "-o", str(tmp_path / "o.csv")] + common,
    }[command]
    assert main(argv) == 1
    err = capsys.readouterr().err
    want = "row 2500: expected 2 fields, got 3" if shown is None else f"column 'score', row 2500: {shown}"
    assert f"d.csv: {want}" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]


@pytest.mark.parametrize("content", [b"score,label\n", b"score,label", b"\xef\xbb\xbfscore,label\r\n", None, b""])
@pytest.mark.parametrize("memory_budget", [None, "1M"])
@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
def test_inputs_without_rows(tmp_path, capsys, content, memory_budget, method):
    # Header only, a Parquet file of zero rows (None) and an empty file: one clear error, exit 1.
    # Out of core these crashed (TypeError, a Numba typing error) or, from .npz, fitted a model on nothing.
    if content is None:
        path = tmp_path / "d.parquet"
        pq.write_table(pa.table({"score": pa.array([], pa.float64()), "label": pa.array([], pa.int8())}), path)
    else:
        path = tmp_path / "d.csv"
        path.write_bytes(content)
    argv = ["fit", "--method", method, "--score-col", "score", "--label-col", "label", str(path), "-o",
            str(tmp_path / "m.json")] + (["--memory-budget", memory_budget] if memory_budget else [])
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert ("empty file, no header line" if content == b"" else "no rows of data") in err, err
    if content is not None and content:
        assert main(["report", str(path), "--score-col", "score", "--label-col", "label", "-o",
                     str(tmp_path / "r.json")]) == 1
        assert "no rows of data" in capsys.readouterr().err
    assert not (tmp_path / "m.json").exists()


def test_npz_without_rows_out_of_core(tmp_path, capsys):
    np.savez(tmp_path / "d.npz", score=np.empty(0), label=np.empty(0))
    for method in ("isotonic", "sigmoid"):
        assert main(["fit", "--method", method, "--score-col", "score", "--label-col", "label", "--memory-budget",
                     "1M", str(tmp_path / "d.npz"), "-o", str(tmp_path / "m.json")]) == 1
        assert "no rows of data" in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["pyarrow", "csv module"])
def test_apply_csv_passes_bytes_that_are_not_utf8(model, data, tmp_path, monkeypatch, engine):
    if engine == "csv module":
        monkeypatch.setenv("FASTCAL_CLI_NO_PYARROW", "1")
    rows = [b"\xe9t\xe9,0.5", b"\xff\xfe,0.25"]  # latin-1 text and stray bytes in a column that is not parsed
    (tmp_path / "in.csv").write_bytes(b"id,score\n" + b"\n".join(rows) + b"\n")
    assert main(["apply", str(model), str(tmp_path / "in.csv"), "-o", str(tmp_path / "out.csv")]) == 0
    assert_csv_pass_through((tmp_path / "out.csv").read_bytes(), b"id,score", rows, b"\n", True,
                            reference(data).predict(np.array([0.5, 0.25])))


# ---------------------------------------------------------------------------
# segments: report --segment-col, fit --group-col, apply --group-col
# ---------------------------------------------------------------------------
def _segment_files(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(30)
    n = 4000
    p = rng.uniform(0.05, 0.95, n)
    g = rng.choice(["fr", "de", "us", "xx"], n, p=[0.4, 0.4, 0.19, 0.01])
    y = (rng.uniform(size=n) < np.where(g == "fr", p**2, p)).astype(np.int64)
    with open(tmp_path / "seg.csv", "w") as f:
        f.write("score,label,country\n")
        f.writelines(f"{float(a)!r},{b},{c}\n" for a, b, c in zip(p, y, g))
    pq.write_table(pa.table({"score": p, "label": y, "country": g}), tmp_path / "seg.parquet")
    return p, y, g


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_report_by_segment(tmp_path, capsys, kind):
    p, y, g = _segment_files(tmp_path)
    assert main(["report", str(tmp_path / f"seg.{kind}"), "--score-col", "score", "--label-col", "label",
                 "--segment-col", "country", "-o", str(tmp_path / "r.json")]) == 0
    out = capsys.readouterr().out
    assert "By country:" in out and "multicalibration error over country: mce " in out
    doc = json.loads((tmp_path / "r.json").read_text())
    want = fastcal.segment_report(y, p, g)
    by_group = dict(zip(doc["segments"]["groups"], doc["segments"]["ecce_sigma"]))
    assert by_group == pytest.approx(dict(zip(want.groups, want.ecce_sigma.tolist())), rel=1e-12)
    mce = fastcal.multicalibration_error(y, p, {"country": g}, max_values_per_segment_feature=4)
    assert doc["multicalibration"]["mce_sigma"] == pytest.approx(mce.mce_sigma, rel=1e-12)
    assert doc["segment_col"] == "country"


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_fit_and_apply_by_group(tmp_path, kind):
    p, y, g = _segment_files(tmp_path)
    data = str(tmp_path / f"seg.{kind}")
    model = str(tmp_path / "m.json")
    assert main(["fit", data, "-o", model, "--method", "sigmoid", "--score-col", "score", "--label-col", "label",
                 "--group-col", "country", "--min-group-rows", "50", "-q"]) == 0
    est = fastcal.load(model)
    want = fastcal.GroupedCalibrator(fastcal.PlattScaling(), min_samples_per_group=50).fit(p, y, g)
    assert sorted(est.groups_) == ["de", "fr", "us"]  # "xx" has under 50 rows: the global fit
    out = tmp_path / f"out.{kind}"
    assert main(["apply", model, data, "-o", str(out), "--score-col", "score", "--group-col", "country", "-q"]) == 0
    if kind == "csv":
        calibrated = np.loadtxt(out, delimiter=",", skiprows=1, usecols=3)
    else:
        import pyarrow.parquet as pq

        calibrated = pq.read_table(out).column("calibrated").to_numpy()
    np.testing.assert_allclose(calibrated, want.predict(p, g), rtol=1e-15)
    # the model needs its group column, and a plain model takes none
    assert main(["apply", model, data, "-o", str(tmp_path / "o2.csv"), "--score-col", "score", "-q"]) == 2
    assert not (tmp_path / "o2.csv").exists()
    assert main(["fit", data, "-o", model, "--method", "sigmoid", "--score-col", "score", "--label-col", "label",
                 "--group-col", "nope", "-q"]) == 2
    assert main(["fit", data, "-o", model, "--method", "sigmoid", "--score-col", "score", "--label-col", "label",
                 "--group-col", "country", "--memory-budget", "1G", "-q"]) == 2


def test_html_report_by_segment_has_the_segment_section(tmp_path):
    import re

    from fastcal.cli.documents import SEGMENT_PICTURES

    p, y, g = _segment_files(tmp_path)
    out = tmp_path / "r.html"
    assert main(["report", str(tmp_path / "seg.parquet"), "--score-col", "score", "--label-col", "label",
                 "--segment-col", "country", "-o", str(out), "-q"]) == 0
    page = out.read_text()
    want = fastcal.segment_report(y, p, g).worst()
    mce = fastcal.multicalibration_error(y, p, {"country": g}, max_values_per_segment_feature=4)
    assert "<h2>By country</h2>" in page
    assert f"mce_sigma {mce.mce_sigma:.4g}" in page and f"mce_pvalue {mce.mce_pvalue:.4g}" in page
    header = re.findall(r"<th>([^<]*)</th>", page)
    assert header == ["group", *[name for name in want.to_dict() if name != "groups"]]
    shown = re.findall(r"<tr><td>([^<]*)</td>", page)
    assert shown == [str(x) for x in want.groups]  # worst first
    pictures = re.findall(r'alt="reliability diagram of country = ([^"]*)"', page)
    assert pictures == [str(x) for x in want.groups[:SEGMENT_PICTURES]]
    assert len(pictures) == min(SEGMENT_PICTURES, len(want.groups)) > 1


def test_html_report_in_process_leaves_the_hosts_matplotlib_alone(files, tmp_path):
    # fastcal.cli.main called in a host process that has chosen its own backend (here "svg") draws its pictures
    # on figures of its own: the backend stays the host's, and pyplot is not imported.
    code = f"""
import sys
import matplotlib
matplotlib.use("svg")
from fastcal.cli import main
assert main(["report", {str(files / "data.parquet")!r}, "--score-col", "score", "--label-col", "label",
             "-o", {str(tmp_path / "r.html")!r}, "-q"]) == 0
assert matplotlib.get_backend() == "svg", matplotlib.get_backend()
assert "matplotlib.pyplot" not in sys.modules
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "data:image/png;base64," in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize("value", ["0", "-3", "1.5", "many"])
def test_counts_must_be_positive_integers(value, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--method", "platt", "--score-col", "s", "--label-col", "y", "--max-iter", value, "in.csv",
              "-o", "m.json"])
    assert exc.value.code == 2
    assert f"argument --max-iter: expected a positive integer, got '{value}'" in capsys.readouterr().err
