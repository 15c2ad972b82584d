"""What .ci/cpu-vllm-env.sh installs beside a vLLM release on a CPU machine.

  python cpu_vllm_deps.py requires          vLLM's plain requirements (no extras, markers kept)
  python cpu_vllm_deps.py pins REPORT       name==version of a pip --report resolution, less GPU
                                            libraries, kernels and their bindings (triton too,
                                            unless CPU_TRITON=1: its interpreter runs kernels on
                                            the CPU for tests/release/test_*_interpreted.py)
"""

from __future__ import annotations

import importlib.metadata as md
import json
import os
import re
import sys

# The builders import none of these, torch is already the CPU build, and together they weigh
# several GB. Names as pip reports them (normalised to lower case here).
GPU = re.compile(
    r"(torch|triton|xformers|flashinfer|flash-attn|nvidia|cupy|deep-?gemm|deep-?ep|quack|tilelang|"
    r"tokenspeed|humming|pynvvideocodec|nvtx|fastsafetensors|cuda-)",
    re.I,
)


def requires() -> list[str]:
    # Whole requirements, markers included: pip drops the ones for other platforms or Pythons.
    return [req.strip() for req in md.requires("vllm") or [] if "extra ==" not in req.partition(";")[2]]


def pins(report: str, keep_triton: bool = False) -> list[str]:
    with open(report) as f:
        items = json.load(f)["install"]
    kept = []
    for i in items:
        name = i["metadata"]["name"]
        if not GPU.match(name) or (keep_triton and name.lower() == "triton"):
            kept.append(f"{name}=={i['metadata']['version']}")
    return kept


if __name__ == "__main__":
    keep = os.environ.get("CPU_TRITON") == "1"
    lines = requires() if sys.argv[1] == "requires" else pins(sys.argv[2], keep_triton=keep)
    print("\n".join(lines))
