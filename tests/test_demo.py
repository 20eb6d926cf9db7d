"""`make demo` / `fastcal demo` (issue 27): it runs end to end on few rows, writes its pictures into ./fastcal-demo/
or --out and nowhere else, refuses before any work when an extra is missing, keeps --n as the bound of every step;
the README's transcript has the demo's sections; the pictures are readable (distinct curves, zoomed axes)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastcal
from fastcal import demo

# Run once per `make test`: subprocess runs of the demo check its files and messages, not threads.
pytestmark = pytest.mark.slow

PACKAGE = Path(fastcal.__file__).resolve().parent
REPO = PACKAGE.parent
README = REPO / "README.md"
N = 20_000


def _tree(root):
    """Every file under ``root`` but the caches (bytecode, Numba's), with its size and modification time."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in ("__pycache__", ".venv", ".git", ".hypothesis",
                                                        ".pytest_cache")]
        for name in filenames:
            st = os.stat(os.path.join(dirpath, name))
            out[os.path.join(dirpath, name)] = (st.st_size, st.st_mtime_ns)
    return out


def _git_status():
    if not (REPO / ".git").exists():
        return None
    return subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=REPO, capture_output=True,
                          text=True, check=True).stdout


def _python(code, cwd, timeout=900):
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("how", ["default", "--out"])
def test_demo_writes_only_its_pictures(tmp_path, how):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    args = ["--n", str(N)] + (["--out", str(tmp_path / "pictures" / "here")] if how == "--out" else [])
    package_before, status_before = _tree(PACKAGE), _git_status()
    out = subprocess.run([sys.executable, "-m", "fastcal", "demo", *args], cwd=cwd, capture_output=True,
                         text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    target = cwd / "fastcal-demo" if how == "default" else tmp_path / "pictures" / "here"
    assert sorted(p.name for p in target.iterdir()) == sorted(demo.PICTURES)
    for name in demo.PICTURES:
        assert (target / name).stat().st_size > 10_000
    # Nothing written elsewhere: the current directory holds the default folder only, or nothing.
    assert sorted(p.name for p in cwd.iterdir()) == (["fastcal-demo"] if how == "default" else [])
    assert sorted(p.name for p in tmp_path.iterdir()) == (["cwd"] if how == "default" else ["cwd", "pictures"])
    assert _tree(PACKAGE) == package_before
    assert _git_status() == status_before
    text = out.stdout
    assert demo.section_titles(text) == list(demo.SECTIONS)
    assert "knots as scikit-learn: yes" in text
    assert "as expected" in text and "UNEXPECTED" not in text
    # --n bounds every step: the undersampling study and the prior-correction timing included.
    assert f"training rows of {N:,}" in text
    assert f"correct_negative_sampling on {N:,} rows" in text
    assert "10,000,000" not in text and "100,000 rows" not in text


BLOCKED = r"""
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # `import name` now raises ImportError, as when it is not installed
import time
t0 = time.perf_counter()
from fastcal.cli import main

try:
    status = main(["demo", "--n", "1000000", *{extra!r}])
finally:
    print(f"seconds {{time.perf_counter() - t0:.3f}}")
sys.exit(status)
"""


@pytest.mark.parametrize(("blocked", "extra", "shown"), [
    (["sklearn"], [], 'the demo needs scikit-learn, which is not installed; install it with pip install '
                      '"fastcal[sklearn]"'),
    (["matplotlib"], [], 'the demo needs matplotlib, which is not installed; install it with pip install '
                         '"fastcal[plot]" (or run the demo with --no-images)'),
    (["sklearn", "matplotlib"], [], 'the demo needs scikit-learn and matplotlib, which are not installed; '
                                    'install them with pip install "fastcal[sklearn,plot]"'),
    (["sklearn", "matplotlib"], ["--no-images"], 'the demo needs scikit-learn, which is not installed'),
])
def test_a_missing_extra_stops_the_demo_before_any_work(tmp_path, blocked, extra, shown):
    out = _python(BLOCKED.format(blocked=blocked, extra=extra), cwd=tmp_path, timeout=300)
    assert out.returncode == 2, out.stderr
    assert out.stderr.splitlines() == [f"fastcal demo: error: {shown}"] or \
        out.stderr.splitlines()[0].startswith(f"fastcal demo: error: {shown}"), out.stderr
    assert len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stdout.splitlines()[:-1] == [], out.stdout  # nothing printed: no section started
    assert float(out.stdout.split()[-1]) < 30  # no calibration of 10^6 rows either
    assert list(tmp_path.iterdir()) == []


def test_demo_rejects_too_few_rows(capsys):
    for bad in ("10", "1.5e3x", "nan", "1e400"):
        with pytest.raises(SystemExit) as exc:
            demo.main(["--n", bad], prog="fastcal demo")
        assert exc.value.code == 2
        assert "fastcal demo: error: argument --n" in capsys.readouterr().err
    assert demo.build_parser().parse_args(["--n", "1e7"]).n == 10**7


# --- the README's transcript ------------------------------------------------------------------

def test_readme_transcript_has_the_demo_sections():
    # make demo-readme writes it; a section added to, renamed in or removed from the demo fails here until then.
    text = demo.transcript_between_markers(README.read_text(encoding="utf-8"), "README.md")
    assert demo.section_titles(text) == list(demo.SECTIONS)


def test_readme_demo_prose_times_come_from_the_transcript():
    # A time or speed-up in the prose around the transcript must be one the transcript shows (a figure written
    # by hand goes stale when the demo changes, or was never measured).
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## The demo"):]
    section = section[:section.index("\n## ")]
    transcript = demo.transcript_between_markers(text, "README.md")
    prose = section.replace(transcript, "")
    figures = re.findall(r"(\d+(?:\.\d+)?)\s?(s|x)\b", prose)
    shown = set(re.findall(r"(\d+(?:\.\d+)?)\s?(s|x)\b", transcript))
    assert set(figures) <= shown, f"not in the transcript: {sorted(set(figures) - shown)}"
    assert re.search(r"^demo done in \d+ s ", transcript, re.M)


def test_replace_transcript():
    readme = f"# t\n\nbefore\n{demo.TRANSCRIPT_START}\nold\n{demo.TRANSCRIPT_END}\nafter\n"
    new = demo.replace_transcript(readme, "\nfastcal demo\n== 1. Isotonic calibration, 5 rows ===\n")
    assert new == (f"# t\n\nbefore\n{demo.TRANSCRIPT_START}\n```text\nfastcal demo\n"
                   f"== 1. Isotonic calibration, 5 rows ===\n```\n{demo.TRANSCRIPT_END}\nafter\n")
    assert demo.replace_transcript(new, "fastcal demo\n== 1. Isotonic calibration, 5 rows ===") == new
    assert demo.section_titles(demo.transcript_between_markers(new)) == ["1. Isotonic calibration"]
    for broken in ("# t\n", f"{demo.TRANSCRIPT_START}\n", f"{demo.TRANSCRIPT_END}\n{demo.TRANSCRIPT_START}\n",
                   f"{demo.TRANSCRIPT_START}\n{demo.TRANSCRIPT_START}\n{demo.TRANSCRIPT_END}\n"):
        with pytest.raises(ValueError, match="must have one line <!-- demo-transcript:start -->"):
            demo.replace_transcript(broken, "x", "README.md")
        with pytest.raises(ValueError, match="README.md must have"):
            demo.transcript_between_markers(broken, "README.md")


def test_section_titles_show_unknown_headings():
    text = "== 1. Isotonic calibration, 5 rows ====\n== 9. Something else ===\n  == 5. Pictures, into x ===\n"
    assert demo.section_titles(text) == ["1. Isotonic calibration", "9. Something else", "5. Pictures"]


def test_readme_without_markers_stops_before_any_work(tmp_path):
    (tmp_path / "R.md").write_text("# no markers\n")
    out = subprocess.run([sys.executable, "-m", "fastcal.demo", "--readme", "R.md", "--out", "pics"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 2
    assert out.stderr.startswith("python -m fastcal.demo: error: R.md must have one line <!-- demo-transcript:start")
    assert out.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R.md"]
    assert (tmp_path / "R.md").read_text() == "# no markers\n"


def test_readme_option_writes_the_transcript_and_the_pictures(tmp_path):
    (tmp_path / "R.md").write_text(f"# R\n{demo.TRANSCRIPT_START}\nstale\n{demo.TRANSCRIPT_END}\nend\n")
    out = subprocess.run([sys.executable, "-m", "fastcal.demo", "--readme", "R.md", "--out", "pics", "--n", "5000"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr
    text = (tmp_path / "R.md").read_text()
    assert "stale" not in text and text.endswith(f"{demo.TRANSCRIPT_END}\nend\n")
    between = demo.transcript_between_markers(text)
    assert demo.section_titles(between) == list(demo.SECTIONS)
    assert between in "```text\n" + out.stdout.split("wrote the transcript")[0].strip("\n") + "\n```\n"
    assert sorted(p.name for p in (tmp_path / "pics").iterdir()) == sorted(demo.PICTURES)
    assert f"wrote {', '.join(demo.PICTURES)} into pics" in between
    assert re.search(r"^demo done in \d+ s ", between, re.M)


# --- pictures a reader can read ---------------------------------------------------------------

@pytest.fixture(scope="module")
def pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def _curves(ax):
    return [line for line in ax.get_lines() if line.get_label() != "perfectly calibrated"]


def test_reliability_figure_keeps_the_calibrators_apart(pyplot):
    p, y = demo.over_confident_model(50_000, seed=1)
    iso = fastcal.IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(p)
    probs = {"model as is": p, "isotonic": iso, "Platt on p": fastcal.PlattScaling().fit(p, y).predict(p),
             "beta": fastcal.BetaCalibration().fit(p, y).predict(p)}
    fig = demo.reliability_figure(y, probs)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["isotonic", "Platt on p", "beta"]  # one panel per calibrator
    for ax, name in zip(panels, ["isotonic", "Platt on p", "beta"]):
        raw, cal = _curves(ax)
        assert raw.get_label().startswith("model as is") and cal.get_label().startswith(name)
        assert (raw.get_marker(), raw.get_linestyle()) != (cal.get_marker(), cal.get_linestyle())
        # The legend's ECE is the table's: every row, 10 uniform bins (calibration_report's default).
        ece = fastcal.calibration_report(y, probs[name], n_bins=10).ece
        assert cal.get_label() == f"{name} (ECE {ece:.4f})"
    assert f"{y.shape[0]:,} fresh rows, 10 uniform bins" in fig._suptitle.get_text()
    pyplot.close(fig)


def test_corp_figure_states_its_subsample(pyplot):
    p, y = demo.over_confident_model(3 * demo.CORP_ROWS + 5, seed=1)
    fig = demo.corp_figure(y, {"model as is": p, "isotonic": p})
    assert f"1 row in 4 of the {y.shape[0]:,}: {y[::4].shape[0]:,} rows" in fig.axes[0].get_title()
    pyplot.close(fig)


def test_corp_figure_legend_covers_no_curve(pyplot):
    p, y = demo.over_confident_model(demo.CORP_ROWS, seed=1)
    iso = fastcal.IsotonicRegression(out_of_bounds="clip").fit(p, y).predict(p)
    fig = demo.corp_figure(y, {"model as is": p, "isotonic": iso})
    fig.canvas.draw()
    ax = fig.axes[0]
    box = ax.get_legend().get_window_extent()
    lines = ax.get_lines()
    assert len(lines) == 3  # the diagonal and the two curves
    for line in lines:
        xy = line.get_xydata()
        xy = xy[np.isfinite(xy).all(axis=1)]
        if line.get_label() == "perfectly calibrated":  # two points: the segment, densely
            xy = np.linspace(xy[0], xy[-1], 1001)
        shown = ax.transData.transform(xy)
        inside = (shown[:, 0] >= box.x0) & (shown[:, 0] <= box.x1) & (shown[:, 1] >= box.y0) & (shown[:, 1] <= box.y1)
        assert not inside.any(), f"the legend covers {line.get_label()!r}"
    pyplot.close(fig)


def _panels(fig):
    """The curve panels of a figure: the axes with a diagonal of perfect calibration."""
    return [ax for ax in fig.axes if any(line.get_label() == "perfectly calibrated" for line in ax.get_lines())]


def test_undersampling_figure_is_zoomed_to_its_points(pyplot):
    # Before the correction the predictions reach five times higher than after it: on shared axes the
    # corrected points would sit in a fifth of the frame.
    rng = np.random.default_rng(0)
    before = rng.beta(2, 12, 20_000)
    y = (rng.random(20_000) < before / 5).astype(int)
    fig = demo.undersampling_reliability_figure(y, {"before": before, "after": before / 5})
    panels = _panels(fig)
    assert len(panels) == 2
    for ax, name in zip(panels, ["before", "after"]):
        (curve,) = _curves(ax)
        assert curve.get_label().startswith(name)
        points = curve.get_xydata()
        (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
        assert x0 == y0 == 0
        assert points[:, 0].max() <= x1 < 1.35 * points[:, 0].max()  # the points reach across the frame
        assert points[:, 1].max() <= y1 < 1.35 * points[:, 1].max()
        assert y1 < 0.5  # on [0, 1] they would all sit in the bottom of the frame
    pyplot.close(fig)


@pytest.mark.parametrize("limit", [0.0099, 0.0336, 0.07, 0.1, 0.15, 0.42, 0.7, 0.95, 1.0])
def test_zoom_is_a_round_limit_just_above(limit):
    zoom = demo.zoom_limit(limit)
    assert limit < zoom <= 1.0 or limit >= 1.0 / 1.05
    assert zoom < 1.35 * limit or zoom == 1.0  # 1.05 times a step of at most 1.25
    assert round(zoom / 10.0 ** np.floor(np.log10(zoom)), 9) in demo.ROUND_LIMITS


def test_plot_gives_each_model_its_own_marker_and_line_style(pyplot):
    from fastcal.plot import reliability_diagram

    rng = np.random.default_rng(0)
    p = rng.random(2000)
    y = (rng.random(2000) < p).astype(int)
    fig, (ax, hist_ax) = reliability_diagram(y, {f"m{i}": p for i in range(5)})
    styles = [(line.get_marker(), line.get_linestyle()) for line in _curves(ax)]
    assert len(set(styles)) == len(styles) == 5
    assert len({m for m, _ in styles}) == 5
    assert len({ls for _, ls in styles[:4]}) == 4  # matplotlib names custom dash patterns "--"
    pyplot.close(fig)


def test_make_demo_writes_into_a_git_ignored_folder():
    # `make demo` runs the demo from the repository's root, so its default folder must be ignored by git
    # (a fresh clone's `git status` stays empty), and the Makefile must say where the pictures go.
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo: ")[1].split("\n\n")[0]
    assert recipe.splitlines()[-1].strip() == "$(BIN)/python -m fastcal.demo $(DEMO_ARGS)"
    comment = makefile.split("\ndemo: ")[0].rsplit("\n\n", 1)[1]
    assert f"{demo.DEFAULT_OUT}/" in comment and "demo_output" not in makefile
    ignored = subprocess.run(["git", "check-ignore", "-q", f"{demo.DEFAULT_OUT}/{demo.PICTURES[0]}"], cwd=REPO)
    assert ignored.returncode == 0, f"{demo.DEFAULT_OUT}/ is not in .gitignore"
    tracked = subprocess.run(["git", "ls-files", demo.DEFAULT_OUT], cwd=REPO, capture_output=True, text=True)
    assert tracked.stdout == ""


SHIM = """#!{python}
import json, os, sys
with open({log!r}, "a") as f:
    f.write(json.dumps(dict(argv=sys.argv[1:], cache=os.environ.get("NUMBA_CACHE_DIR"))) + "\\n")
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
@pytest.mark.parametrize("user_cache", [None, "/somewhere/numba"])
def test_make_demo_compiles_into_the_cache_of_your_own_runs(tmp_path, user_cache):
    # `make demo` runs `fastcal precompile`, then the demo, in the environment of a user's own run: Numba's cache
    # where fastcal puts it by itself (or the user's NUMBA_CACHE_DIR), not a folder of make's choosing. So a
    # `fastcal report` after it loads every kernel and compiles nothing (tests/test_precompile.py checks that a
    # new process compiles nothing after `fastcal precompile`). The venv's python is replaced by one that logs.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.jsonl"
    (bin_dir / "python").write_text(SHIM.format(python=sys.executable, log=str(log)))
    (bin_dir / "python").chmod(0o755)
    stamp = tmp_path / "installed"
    stamp.touch()  # newer than pyproject.toml: make installs nothing
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    if user_cache:
        env["NUMBA_CACHE_DIR"] = user_cache
    for target in ("demo", "demo-readme"):
        subprocess.run(["make", "-s", "-C", str(REPO), target, f"BIN={bin_dir}", f"STAMP={stamp}",
                        "DEMO_ARGS=--n 2000", "PRECOMPILE_JOBS=3"], env=env, check=True, capture_output=True,
                       timeout=60)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    precompile = ["-m", "fastcal", "precompile", "--jobs", "3"]
    assert [c["argv"] for c in calls] == [
        precompile, ["-m", "fastcal.demo", "--n", "2000"],
        precompile, ["-m", "fastcal.demo", "--out", "docs/images", "--readme", "README.md", "--n", "2000"]]
    assert [c["cache"] for c in calls] == [user_cache] * 4
