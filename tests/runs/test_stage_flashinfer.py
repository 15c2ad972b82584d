"""`python -m lab flashinfer` and `flashinfer-jit` (lab/flashinfer.py), and the shims
lab/runbook/stage-flashinfer.sh and stage-flashinfer-jit.sh that keep the recorded command lines,
read the release's pins from the lab's resolution (lab.stage.resolve), under
VLLM_BACKPORTS_LAB_CACHE when it is set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {
    "stage-flashinfer.sh": ["bash", "lab/runbook/stage-flashinfer.sh"],
    "stage-flashinfer-jit.sh": ["bash", "lab/runbook/stage-flashinfer-jit.sh"],
    "flashinfer": [sys.executable, "-m", "lab", "flashinfer"],
    "flashinfer-jit": [sys.executable, "-m", "lab", "flashinfer-jit"],
}


def run(script: str, cache: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "VLLM_BACKPORTS_LAB_CACHE": str(cache), "HOME": str(tmp_path / "home")}
    return subprocess.run([*COMMANDS[script], "0.26.0"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("script", list(COMMANDS))
def test_without_the_labs_resolution_it_says_how_to_make_it(tmp_path, script):
    done = run(script, tmp_path / "cache", tmp_path)
    assert done.returncode == 2
    assert f"no {tmp_path}/cache/resolve/0.26.0.txt: run python -m lab bundle 0.26.0 first" in done.stderr


@pytest.mark.parametrize(
    "script, said",
    [
        ("stage-flashinfer.sh", "vLLM 0.26.0's resolution has no flashinfer-python"),
        ("stage-flashinfer-jit.sh", "vLLM 0.26.0 resolves no flashinfer-python or apache-tvm-ffi"),
        ("flashinfer", "vLLM 0.26.0's resolution has no flashinfer-python"),
        ("flashinfer-jit", "vLLM 0.26.0 resolves no flashinfer-python or apache-tvm-ffi"),
    ],
)
def test_the_pins_come_from_the_labs_resolution(tmp_path, script, said):
    (tmp_path / "cache" / "resolve").mkdir(parents=True)
    (tmp_path / "cache" / "resolve" / "0.26.0.txt").write_text("vllm==0.26.0\ntorch==2.11.0\n")
    done = run(script, tmp_path / "cache", tmp_path)
    assert done.returncode == 2 and said in done.stderr
