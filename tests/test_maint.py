"""The generators: check mode fails on drift and shows it; --write fixes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from vllm_backports import maint

REPO = Path(__file__).resolve().parent.parent


def _copy(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "repo"
    home.mkdir()
    for name in ("versions.toml", "README.md"):
        shutil.copy(REPO / name, home / name)
    shutil.copytree(REPO / "backports", home / "backports")
    monkeypatch.setattr(maint, "HOME", home)
    return home


def test_matrix_drift_is_reported_then_written(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    toml = home / "versions.toml"
    toml.write_text(toml.read_text().replace('torch = "2.14.0"', 'torch = "2.14.1"'))
    drift = CliRunner().invoke(maint.main, ["matrix"])
    assert drift.exit_code == 1 and "2.14.1" in drift.output
    assert "2.14.1" not in (home / "README.md").read_text()
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    assert "| 0.33.0 | 2.14.1 / 13 |" in (home / "README.md").read_text()


def test_rehash_pins_an_edited_backport(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    patch = home / "backports/0.33.0/0001-turboquant-cudagraph.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Last-Update: 2026-11-22", b"Last-Update: 2026-11-23"))
    drift = CliRunner().invoke(maint.main, ["rehash"])
    assert drift.exit_code == 1 and "0001-turboquant-cudagraph.patch" in drift.output
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    assert CliRunner().invoke(maint.main, ["rehash"]).exit_code == 0
    from vllm_backports.catalogue import Catalogue

    assert Catalogue(home).series("0.33.0").patches[0].header["Last-Update"] == "2026-11-23"
