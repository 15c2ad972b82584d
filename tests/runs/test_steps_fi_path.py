"""lab/runbook/steps.sh's fi_path: the path FlashInfer runs get, from its site's .pth files."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def fi_path(home: Path) -> list[str]:
    """fi_path as steps.sh defines it, run with this Python as python3."""
    text = (REPO / "lab/runbook/steps.sh").read_text()
    start = text.index("fi_path() {")
    body = text[start : text.index("\n}\n", start) + 3]
    shim = home / "bin"
    shim.mkdir(exist_ok=True)
    (shim / "python3").symlink_to(sys.executable)
    env = {**os.environ, "HOME": str(home), "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"}
    out = subprocess.run(["bash", "-c", body + "\nfi_path"], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip().split(":")


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_paths_and_code_lines_of_pth_files_both_reach_the_path(tmp_path):
    site = tmp_path / "fi-site"
    # cutlass-dsl 4.5 / 4.6: a directory named in the .pth file
    (site / "python_packages").mkdir(parents=True)
    (site / "old.pth").write_text("# comment\npython_packages\n")
    # 4.8: a line of code importing the package, which puts its directory on sys.path
    (site / "nvidia_cutlass_dsl" / "dsl_packages").mkdir(parents=True)
    (site / "nvidia_cutlass_dsl" / "__init__.py").write_text("")
    (site / "new.pth").write_text(
        "import sys, os, nvidia_cutlass_dsl; "
        "sys.path.insert(0, os.path.join(nvidia_cutlass_dsl.__path__[0], 'dsl_packages'))\n"
    )
    got = fi_path(tmp_path)
    assert got[0] == str(site)
    assert set(got[1:]) == {str(site / "python_packages"), str(site / "nvidia_cutlass_dsl" / "dsl_packages")}


def test_a_site_without_pth_files_is_the_site_alone(tmp_path):
    (tmp_path / "fi-site").mkdir()
    assert fi_path(tmp_path) == [str(tmp_path / "fi-site")]
