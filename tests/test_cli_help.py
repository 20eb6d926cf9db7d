"""The command line's help and messages as a new user meets them (issue 27): usage names, required options,
help on every option, and a bad probability named by its column and row in every command that needs one."""

import subprocess
import sys

import pytest

from fastcal.cli import build_parser, main


def _help(capsys, *argv):
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def _subparsers():
    parser = build_parser()
    return next(a for a in parser._actions if a.dest == "command").choices


def test_demo_help_names_the_command():
    # Through the real entry point (python -m fastcal): argparse would take its prog from sys.argv[0].
    out = subprocess.run([sys.executable, "-m", "fastcal", "demo", "--help"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: fastcal demo"), out.stdout
    assert "__main__" not in out.stdout
    assert "--out" in out.stdout


def test_fit_help_shows_score_col_as_required(capsys):
    usage = _help(capsys, "fit").split("\n\n")[0]
    # argparse puts optional options in brackets; a required one appears bare in the usage line.
    assert "--score-col COL" in usage and "[--score-col COL]" not in usage, usage
    assert "[--label-col" not in usage and "--label-col COL" in usage


def test_fit_without_score_col_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["fit", "--method", "isotonic", "--label-col", "y", "x.csv", "-o", "m.json"])
    assert exc.value.code == 2
    assert "--score-col" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["fit", "apply", "report", "precompile"])
def test_quiet_mentions_a_report_table_only_where_there_is_one(command):
    quiet = next(a for a in _subparsers()[command]._actions if "--quiet" in a.option_strings)
    assert "progress" in quiet.help
    assert ("table" in quiet.help) == (command == "report"), quiet.help


@pytest.mark.parametrize("command", ["fit", "apply", "report", "precompile"])
def test_every_option_and_argument_has_help(command):
    for action in _subparsers()[command]._actions:
        name = action.option_strings[-1] if action.option_strings else action.metavar
        assert action.help and action.help.strip(), f"fastcal {command} {name} has no help"


def test_report_option_help(capsys):
    text = " ".join(_help(capsys, "report").split())
    assert "--weight-col COL column of sample weights" in text
    assert "--n-bins N bins of the reliability curve" in text
    assert "--strategy {uniform,quantile} bin edges" in text


# histogram has no out-of-core fit (a usage error, tested in test_cli.py)
@pytest.mark.parametrize(("method", "memory_budget"), [("beta", None), ("beta", "1M"), ("histogram", None)])
def test_fit_names_the_column_and_row_of_a_score_that_is_not_a_probability(tmp_path, capsys, method,
                                                                           memory_budget):
    lines = ["s,label"] + [f"{i / 10},{i % 2}" for i in range(10)]
    lines[4] = "1.5,1"  # data row 4
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    argv = ["fit", "--method", method, "--score-col", "s", "--label-col", "label", str(tmp_path / "d.csv"),
            "-o", str(tmp_path / "m.json")] + (["--memory-budget", memory_budget] if memory_budget else [])
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"fastcal: error: {tmp_path / 'd.csv'}: column 's', row 4: 1.5 is not a probability in [0, 1]"]
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("method", ["isotonic", "sigmoid"])
def test_fit_takes_real_scores_where_the_method_does(tmp_path, capsys, method):
    # Isotonic and sigmoid calibrate any real-valued score: no probability check there.
    (tmp_path / "d.csv").write_text("s,label\n" + "".join(f"{i - 5},{i % 2}\n" for i in range(10)))
    argv = ["fit", "--method", method, "--score-col", "s", "--label-col", "label", str(tmp_path / "d.csv"),
            "-o", str(tmp_path / "m.json")]
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize("command", [["report", "in.csv", "-o", "out.json"], ["fit", "in.csv", "-o", "m.json", "--method", "histogram"]])
def test_too_many_bins_is_refused_before_the_data_is_read(tmp_path, capsys, command):
    # in.csv does not exist: the refusal must come from the option, before any file is opened
    args = [*command, "--score-col", "p", "--label-col", "y", "--n-bins", str(10**8)]
    args = [str(tmp_path / a) if a.endswith((".csv", ".json")) else a for a in args]
    with pytest.raises(SystemExit) as exc:
        main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--n-bins" in err and "expected at most 1048576 bins, got '100000000'" in err
    assert "No such file" not in err and not any((tmp_path / f).exists() for f in ("out.json", "m.json"))
