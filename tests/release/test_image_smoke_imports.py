"""The image smoke test's import step (images/smoke.py --import-vllm) against the installed vLLM:
vllm and every module its series patches import on a machine without a GPU, as in an image build.
Needs torch and vLLM (skipped elsewhere; .ci/run's CPU vLLM step runs it)."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

from . import installed
from .conftest import CATALOGUE, REPO

torch, RELEASE = installed.served("gdn-spec-state")


def test_vllm_and_every_patched_module_import(tmp_path):
    version = importlib.metadata.version("vllm")
    status = tmp_path / "status.json"
    status.write_text(json.dumps({"vllm": version, "consistent": True,
                                  "applied": [{"id": b} for b in RELEASE.backports]}))
    done = subprocess.run([sys.executable, str(REPO / "images/smoke.py"), "--vllm", version, "--status", str(status),
                           "--import-vllm"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"smoke: vLLM {version} carries" in done.stdout
    assert CATALOGUE.series(RELEASE.series).paths  # there were modules to import
