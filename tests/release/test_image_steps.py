"""The image build's steps, run outside Docker against each release's pristine files: no Docker
engine runs here, so this is how every step an image build runs is tested."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_runner import run

from .conftest import CATALOGUE, REPO

SERVED = [v for v in CATALOGUE.versions if CATALOGUE.releases[v].series]


def _steps(version: str, site: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    return subprocess.run(["bash", str(REPO / "images/build-steps.sh"), version, "--target", str(site)],
                          capture_output=True, text=True, env=env)


@pytest.mark.parametrize("version", SERVED)
def test_build_steps_pass_on_the_pristine_release(version, tmp_path):
    site = tmp_path / "site"
    assert run("check", "--vllm", version, "--fetch", "--target", str(site)).code == 0
    result = _steps(version, site)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"smoke: vLLM {version} carries" in result.stdout


def test_build_fails_when_the_series_does_not_apply_cleanly(tmp_path):
    site = tmp_path / "site"
    assert run("check", "--vllm", "0.20.0", "--fetch", "--target", str(site)).code == 0
    target = site / "vllm/v1/attention/backends/turboquant_attn.py"
    target.write_text(target.read_text() + "\n# edited\n")
    result = _steps("0.20.0", site)
    assert result.returncode != 0
    assert "edited locally" in result.stderr
