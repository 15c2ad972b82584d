"""The image build's steps, run outside Docker against each release's pristine files: no Docker
engine runs here, so this is how every step an image build runs is tested."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli_runner import run

from .conftest import CATALOGUE, build_steps

SERVED = [v for v in CATALOGUE.versions if CATALOGUE.releases[v].series]


def _steps(version: str, site: Path) -> subprocess.CompletedProcess:
    return build_steps(version, "--target", str(site))


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
