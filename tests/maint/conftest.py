"""A copy of the checkout for the maintainer commands to read and rewrite, pointed at through
vllm_backports.maint.HOME."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from vllm_backports import maint

REPO = Path(__file__).resolve().parent.parent.parent


def copy_checkout(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "repo"
    home.mkdir()
    for name in ("versions.toml", "README.md", "docs/SUPPORT.md"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, home / name)
    shutil.copytree(REPO / "backports", home / "backports")
    monkeypatch.setattr(maint, "HOME", home)
    # The copy has no docs/evidence: its matrix starts from the hand-written cells alone (the
    # repository's own matrix, with its evidence, is checked by CI's `maint matrix`).
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    return home
