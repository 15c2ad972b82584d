#!/usr/bin/env bash
# A CPU-only Python environment with one vLLM release importable, for the GDN builder tests
# (tests/release/test_gdn_routing.py): the release's pinned torch as a CPU build, vLLM without
# its dependencies, then every plain dependency vLLM declares (no GPU libraries, no kernels).
#   bash .ci/cpu-vllm-env.sh 0.20.0 2.11.0      # release, its torch pin (versions.toml)
set -euo pipefail
release=$1 torch=$2
# The CPU build where PyTorch's own index is reachable (GitHub's runners); elsewhere PyPI's build,
# whose CUDA libraries are loaded but never used on a machine without a GPU.
python -m pip install -q --timeout 20 --retries 0 "torch==${torch}" --index-url https://download.pytorch.org/whl/cpu \
  || python -m pip install -q "torch==${torch}"
python -m pip install -q --no-deps "vllm==${release}"
python - > /tmp/vllm-plain-deps.txt <<'PY'
import importlib.metadata as md
import re
# GPU libraries and kernels: not needed to import the builder, and torch is already the CPU build.
gpu = re.compile(r"(torch|torchaudio|torchvision|triton|xformers|flashinfer|nvidia|cupy|deep|quack|flash)", re.I)
for req in md.requires("vllm") or []:
    spec, _, marker = req.partition(";")
    if "extra ==" not in marker and not gpu.match(spec.strip()):
        print(spec.replace(" ", ""))
PY
python -m pip install -q -r /tmp/vllm-plain-deps.txt
python -c "import vllm.v1.attention.backends.gdn_attn; print('vllm', '${release}', 'importable on CPU')"
