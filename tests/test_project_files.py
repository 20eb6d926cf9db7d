"""The project files a user and a packager look for (issue 27): LICENSE (BSD-3-Clause, as pyproject says,
shipped in the distributions) and CHANGELOG.md (Keep a Changelog: an Unreleased section, then the versions)."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

import fastcal

ROOT = Path(__file__).resolve().parents[1]


def test_license_is_bsd_3_clause_as_declared():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("BSD 3-Clause License\n")
    assert "Copyright (c) 2026, fastcal developers" in text
    for clause in ("Redistributions of source code must retain", "Redistributions in binary form must reproduce",
                   "Neither the name of the copyright holder nor the names of its"):
        assert clause in text
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "BSD-3-Clause"
    assert project["license-files"] == ["LICENSE"]  # into the sdist and the wheel's .dist-info
    assert project["authors"] == [{"name": "fastcal developers"}]


def test_installed_metadata_carries_the_license():
    meta = importlib.metadata.metadata("fastcal")
    assert meta["License-Expression"] == "BSD-3-Clause"
    assert "LICENSE" in (meta.get_all("License-File") or [])


def test_changelog_sections():
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (.+)$", text, flags=re.M)
    assert versions[0] == "Unreleased"
    assert versions[1] == f"{fastcal.__version__} - 2026-11-23"  # the released version is the package's
    unreleased = text.split("\n## ")[1]
    for change in ("--out", "fastcal demo --help", "precompile", "NUMBA_CACHE_DIR", "LICENSE"):
        assert change in unreleased, change
    for kind in re.findall(r"^### (.+)$", text, flags=re.M):
        assert kind in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, kind
