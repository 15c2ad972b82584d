"""The filter .ci/cpu-vllm-env.sh applies to a pip resolution before installing it on a CPU machine."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / ".ci" / "cpu_vllm_deps.py"
spec = importlib.util.spec_from_file_location("cpu_vllm_deps", SCRIPT)
deps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(deps)


def _report(tmp_path, names):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"install": [{"metadata": {"name": n, "version": "1.0"}} for n in names]}))
    return str(report)


def test_gpu_pieces_pulled_in_by_plain_packages_are_dropped(tmp_path):
    # As vLLM 0.26.0's requirements resolved on 2026-11-22: xgrammar brings triton along.
    names = ["xgrammar", "triton", "apache-tvm-ffi", "nvidia-cutlass-dsl", "nvidia-cublas", "tilelang",
             "tokenspeed-triton", "humming-kernels", "PyNvVideoCodec", "cuda-bindings", "nvtx", "torch",
             "transformers", "numba"]
    kept = deps.pins(_report(tmp_path, names))
    assert kept == ["xgrammar==1.0", "apache-tvm-ffi==1.0", "transformers==1.0", "numba==1.0"]


def test_packages_merely_containing_a_gpu_word_are_kept(tmp_path):
    # The filter anchors at the start of the name: "pytorch-lightning"-like names that only mention
    # a GPU word later, and plain packages such as "deepdiff", stay.
    kept = deps.pins(_report(tmp_path, ["deepdiff", "lightning-torch", "opencv-python-headless"]))
    assert kept == ["deepdiff==1.0", "lightning-torch==1.0", "opencv-python-headless==1.0"]


def test_triton_is_kept_only_when_asked_for_the_interpreted_kernel_tests(tmp_path):
    report = _report(tmp_path, ["xgrammar", "triton", "nvidia-cublas"])
    assert deps.pins(report) == ["xgrammar==1.0"]
    assert deps.pins(report, keep_triton=True) == ["xgrammar==1.0", "triton==1.0"]
