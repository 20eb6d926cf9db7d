"""Every Python block of the README and of the user guide runs as it is, each on its own.

A block is a fenced block whose info string is exactly ``python``; blocks that are not meant
to run are ``text``, ``console`` or another language. Each block runs in a fresh namespace
in a temporary working directory (the examples write model and data files there). A block
that uses Dask starts worker processes, so it must be a script with an
``if __name__ == "__main__":`` guard: it runs as a file in a subprocess.

The same module runs the README's ``fastcal fit/apply/report`` lines on small files, and
checks the README's shape (at most 450 lines, the demo transcript markers) and that relative
links in the Markdown pages point at files that exist.
"""

import contextlib
import io
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

# Run once per `make test`: the blocks' results do not depend on the thread count, and they take minutes.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "user_guide"
FENCE = re.compile(r"^(`{3,})([^`\n]*)\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)


def code_blocks(path):
    """(line number, info string, code) of each fenced block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, m.start()) + 1, m.group(2).strip(), m.group(3))
        for m in FENCE.finditer(text)
    ]


def python_blocks():
    pages = [README, *sorted(GUIDE.glob("*.md"))]
    out = []
    for page in pages:
        for line, info, code in code_blocks(page):
            if info == "python":
                out.append(pytest.param(code, id=f"{page.relative_to(ROOT)}:{line}"))
    return out


BLOCKS = python_blocks()


def test_blocks_are_found():
    # The parser must see the blocks it is meant to run: the README's end-to-end example
    # among them, and a Python block on every user-guide page but the conventions.
    ids = [p.id for p in BLOCKS]
    assert any(i.startswith("README.md:") for i in ids)
    pages_with_blocks = {i.rsplit(":", 1)[0] for i in ids}
    for page in GUIDE.glob("*.md"):
        if page.name != "conventions.md":
            assert str(page.relative_to(ROOT)) in pages_with_blocks, page.name
    readme = code_blocks(README)
    assert any("fastcal.load(" in code and info == "python" for _, info, code in readme)


def test_fence_parser_on_a_known_text(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("text\n```python\nx = 1\n```\n\n```console\n$ ls\n```\n````python\n```\n````\n")
    assert code_blocks(page) == [(2, "python", "x = 1\n"), (6, "console", "$ ls\n"), (9, "python", "```\n")]


@pytest.mark.parametrize("code", BLOCKS)
def test_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    if "dask" in code or "distributed" in code or "pyspark" in code:
        assert 'if __name__ == "__main__":' in code, "a Dask or Spark block must be a script with a __main__ guard"
        if "pyspark" in code and shutil.which("java") is None:
            pytest.skip("Java is missing: the Spark example needs a Java runtime (17 or later)")
        script = tmp_path / "block.py"
        script.write_text(code)
        # pyspark's notice about pandas 3 (installed for other tests) is its own, not the example's.
        warn = "error,ignore:PySpark does not yet fully support pandas:FutureWarning" if "pyspark" in code else "error"
        # PYSPARK_PYTHON: Spark's Python workers run this interpreter, as the Spark page tells users to set it
        env = {**os.environ, "MPLBACKEND": "Agg", "PYTHONWARNINGS": warn, "PYSPARK_PYTHON": sys.executable}
        proc = subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        return
    namespace = {"__name__": "__main__"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(compile(code, "<docs block>", "exec"), namespace)
    if "matplotlib" in sys.modules:
        import matplotlib.pyplot as plt

        plt.close("all")


def printed_examples(path):
    """(line, code, shown output, paragraph after it) of each Python block followed by "It prints:" and a text block.

    The paragraph is the prose up to the next blank line after the output block.
    """
    text = path.read_text(encoding="utf-8")
    blocks = list(FENCE.finditer(text))
    out = []
    for code, shown in zip(blocks, blocks[1:]):
        if code.group(2).strip() == "python" and shown.group(2).strip() == "text" \
                and text[code.end():shown.start()].strip() == "It prints:":
            paragraph = text[shown.end():].lstrip("\n").split("\n\n", 1)[0]
            out.append((text.count("\n", 0, code.start()) + 1, code.group(3), shown.group(3), paragraph))
    return out


def test_readme_example_prints_what_the_readme_shows(tmp_path, monkeypatch):
    # The end-to-end example's output is shown under it, and the numbers of the prose that follows are those
    # of the output: a change of the example, of fastcal or of its peers that moves them fails here.
    examples = printed_examples(README)
    assert any("fastcal.load(" in code for _, code, _, _ in examples)
    monkeypatch.chdir(tmp_path)
    for line, code, shown, paragraph in examples:
        printed = io.StringIO()
        with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
            warnings.simplefilter("error")
            exec(compile(code, f"<README.md:{line}>", "exec"), {"__name__": "__main__"})
        assert printed.getvalue() == shown, f"README.md:{line} prints\n{printed.getvalue()}"
        tokens = set(re.findall(r"-?\d+\.\d+", shown))
        numbers = re.findall(r"-?\d+\.\d+", paragraph)
        assert numbers, f"README.md:{line}: the paragraph under the output names no figure of it"
        assert set(numbers) <= tokens, f"README.md:{line}: {sorted(set(numbers) - tokens)} are not in the output"


def test_printed_examples_parser(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("```python\nprint(1.5)\n```\n\nIt prints:\n\n```text\n1.5\n```\n\nSo 1.5 it is.\nYes.\n\nNext.\n"
                    "```python\nx = 1\n```\n```text\nnot output\n```\n")
    assert printed_examples(page) == [(1, "print(1.5)\n", "1.5\n", "So 1.5 it is.\nYes.")]


def test_readme_shape():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 450
    start, end = "<!-- demo-transcript:start -->", "<!-- demo-transcript:end -->"
    assert text.count(start) == 1 and text.count(end) == 1
    assert text.index(start) < text.index(end)


def test_readme_performance_rows_are_the_full_tables():
    # The README's headline speed-ups and its 10^8-row times are those of docs/performance.md's table, which
    # `make bench` writes (and which then rewrites the README's rows from it).
    from benchmarks import compare

    full = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert compare.readme_headline(README.read_text(encoding="utf-8")) == compare.headline(full)


def test_headline_reads_the_full_table():
    from benchmarks import compare

    rows = compare.parse_table(f"{compare.START}\n| subject | task | n | fastcal | peer | peer time | peer / fastcal |\n"
                               "|---|---|---|---|---|---|---|\n| a | `f` (note) | 10^7 | 1.0 ms | P | 2.0 ms | **2.0x** |\n"
                               f"|  |  |  |  | Q | 3.0 ms | **3.0x** |\n{compare.END}")
    assert rows == {("a", "`f` (note)", "10^7", "P"): ("1.0 ms", 2.0), ("a", "`f` (note)", "10^7", "Q"): ("1.0 ms", 3.0)}
    assert compare._find(rows, "a", "`f`", "10^7", "Q") == ("1.0 ms", 3.0)
    with pytest.raises(KeyError):
        compare._find(rows, "a", "`g`", "10^7", "Q")
    assert [compare.fmt_ratio(r) for r in (219.6, 30.0, 29.96, 8.94)] == ["220", "30", "30.0", "8.9"]


def test_spark_guide_speed_tables_are_the_recorded_runs():
    # docs/user_guide/spark.md's fit and predict tables and its sentences on predict's query come from the two
    # runs of benchmarks/spark_bench.py recorded with --json.
    import json

    from benchmarks import spark_bench

    classic, connect = (json.loads((ROOT / "benchmarks" / "recorded" / f"spark_{kind}.json").read_text())
                        for kind in ("classic", "connect"))
    assert (classic["session"], connect["session"]) == ("classic", "Spark Connect")
    guide = " ".join((GUIDE / "spark.md").read_text(encoding="utf-8").split())  # sentences wrapped anywhere
    for text in [*spark_bench.fit_rows(classic), *spark_bench.predict_rows(classic, connect),
                 spark_bench.predict_query_sentence(classic), spark_bench.predict_query_sentence(connect)]:
        assert " ".join(text.split()) in guide, text


def test_repairing_guide_table_is_the_recorded_run():
    # docs/user_guide/repairing.md's table against MCGrad is benchmarks/compare_multicalibration_fit.py's run
    # recorded with --json --write-guide.
    import json

    from benchmarks import compare_multicalibration_fit as bench

    record = json.loads((ROOT / "benchmarks" / "recorded" / "multicalibration_fit.json").read_text())
    assert [r["case"] for r in record["results"]] == list(bench.CASES)
    assert all("MCGrad" in r for r in record["results"])
    guide = (GUIDE / "repairing.md").read_text(encoding="utf-8")
    assert f"{bench.START}\n{bench.guide_table(record)}\n{bench.END}" in guide
    assert " ".join(bench.readme_claim(record).split()) in " ".join(README.read_text(encoding="utf-8").split())


#: The README's scaling rows: each row's paths in docs/scaling.md's first (10^8-row) table.
README_SCALING = {"`IsotonicRegression.fit`, 0/1 / weighted": ["isotonic fit, 0/1", "isotonic fit, weighted"],
                  "`roc_auc_score` / `score_decomposition`": ["roc_auc_score", "score_decomposition"],
                  "`calibration_report`": ["calibration_report"]}


def test_readme_scaling_rows_are_the_scaling_pages():
    page = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    first = page[:page.index("\n## ")]
    measured = {}
    for line in first.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] not in ("path", "---"):
            measured[cells[0]] = [float(c.rstrip("x")) for c in cells[1:]]
    readme = README.read_text(encoding="utf-8")
    for label, paths in README_SCALING.items():
        m = [measured[p] for p in paths]
        row = (f"| {label} | {', '.join(f'{r[2]:.2f}x' for r in m)} | "
               f"{', '.join(f'{r[3]:.1f} / {r[4]:.1f}' for r in m)} | {', '.join(f'{r[5]:.1f}x' for r in m)} | "
               f"{', '.join(f'{r[6]:.2f} s' for r in m)} |")
        assert row in readme, row


@pytest.mark.parametrize("page", [README, *sorted((ROOT / "docs").rglob("*.md"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_exist(page):
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = target.split("#", 1)[0]
        assert (page.parent / path).exists(), f"{page.name}: broken link {target}"


def test_readme_cli_commands_run(tmp_path):
    # The README's `fastcal fit/apply/report` lines, run as they are on small files with the
    # columns they name (precompile and demo take minutes and have tests of their own).
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    s = rng.normal(size=2_000)
    y = (rng.random(s.size) < 1 / (1 + np.exp(-s))).astype(np.int8)
    pq.write_table(pa.table({"score": s, "label": y}), tmp_path / "data.parquet")
    pq.write_table(pa.table({"s": s, "y": y}), tmp_path / "big.parquet")
    (tmp_path / "new.csv").write_text("id,score\n1,0.3\n2,-1.5\n")
    p = rng.random(2_000)
    rows = "".join(f"{float(a)!r},{int(b)}\n" for a, b in zip(p, rng.random(p.size) < p))
    (tmp_path / "predictions.csv").write_text("p,label\n" + rows)

    blocks = [code for _, info, code in code_blocks(README) if info == "console" and "fastcal fit" in code]
    assert len(blocks) == 1
    commands = [line.split("#", 1)[0].split() for line in blocks[0].splitlines() if line.startswith("fastcal ")]
    run = [c for c in commands if c[1] in ("fit", "apply", "report")]
    assert len(run) >= 4
    for command in run:
        proc = subprocess.run(
            [sys.executable, "-m", "fastcal", *command[1:]], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, (command, proc.stderr)
        output = command[command.index("-o") + 1]
        assert (tmp_path / output).stat().st_size > 0, command
    lines = (tmp_path / "calibrated.csv").read_text().splitlines()
    assert lines[0] == "id,score,calibrated" and len(lines) == 3
