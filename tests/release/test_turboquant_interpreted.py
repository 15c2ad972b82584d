"""turboquant-spec-decode's patched decode kernel run on the CPU by Triton's interpreter, for the
installed release (tests/release/turboquant_interpreted.py): needs torch, triton and a vLLM release
the fix serves; skipped elsewhere. The same checks as tests/gpu/test_turboquant_spec_decode.py
bar graph replay, so releases that cannot run on our GPU get their kernel checked too."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from . import installed
from .conftest import REPO

torch, RELEASE = installed.served("turboquant-spec-decode")
if not installed.REQUIRED:
    pytest.importorskip("triton")


@pytest.mark.parametrize("preset", ["turboquant_k8v4", "turboquant_3bit_nc"])
def test_expanded_verify_rows_match_the_per_request_path_and_attend_causally(preset):
    env = {**os.environ, "TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(REPO / "tests/release/turboquant_interpreted.py"), preset],
                          capture_output=True, text=True, env=env, timeout=1200)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["vllm"] == RELEASE.version
    assert result["presets"][preset]["same_as_per_request"], result
