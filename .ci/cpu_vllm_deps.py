"""What .ci/cpu-vllm-env.sh installs beside a vLLM release on a CPU machine.

  python cpu_vllm_deps.py requires          vLLM's plain requirements (no extras), one a line
  python cpu_vllm_deps.py pins REPORT       name==version of a pip --report resolution, less GPU
                                            libraries, kernels and their bindings
"""

from __future__ import annotations

import importlib.metadata as md
import json
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
    out = []
    for req in md.requires("vllm") or []:
        spec, _, marker = req.partition(";")
        if "extra ==" not in marker:
            out.append(spec.replace(" ", ""))
    return out


def pins(report: str) -> list[str]:
    with open(report) as f:
        items = json.load(f)["install"]
    return [f"{i['metadata']['name']}=={i['metadata']['version']}" for i in items
            if not GPU.match(i["metadata"]["name"])]


if __name__ == "__main__":
    lines = requires() if sys.argv[1] == "requires" else pins(sys.argv[2])
    print("\n".join(lines))
