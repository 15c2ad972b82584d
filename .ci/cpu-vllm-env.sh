#!/usr/bin/env bash
# A CPU-only Python environment with one vLLM release importable, for the builder tests
# (tests/release/test_gdn_routing.py and the TurboQuant ones): a CPU build of torch, vLLM without
# its dependencies, then what its plain requirements resolve to, less GPU libraries and kernels.
#   bash .ci/cpu-vllm-env.sh 0.26.0 2.11.0      # release, its torch pin (versions.toml)
#   CPU_TORCH=2.13.0+cpu bash .ci/cpu-vllm-env.sh 0.26.0 2.11.0
# CPU_TORCH names the CPU build to take when PyTorch's CPU index is out of reach, instead of
# PyPI's build of the pin: that one brings CUDA libraries of several GB, and once filled a CI disk.
set -euo pipefail
release=$1 torch=$2
export PIP_NO_CACHE_DIR=1   # a second copy of every wheel is what a small disk cannot hold
# Quiet: where the index is out of reach pip's errors would read as this step's failure.
if python -m pip install -q --timeout 20 --retries 0 "torch==${torch}" --index-url https://download.pytorch.org/whl/cpu 2>/dev/null; then
  :
elif [ -n "${CPU_TORCH:-}" ]; then
  echo "cpu-vllm-env: PyTorch's CPU index is out of reach; torch ${CPU_TORCH} stands in for vLLM ${release}'s pin ${torch}" >&2
  python -m pip install -q "torch==${CPU_TORCH}"
else
  echo "cpu-vllm-env: PyTorch's CPU index is out of reach; installing PyPI's torch ${torch} (CUDA libraries included, several GB)" >&2
  python -m pip install -q "torch==${torch}"
fi
python -m pip install -q --no-deps "vllm==${release}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python "$(dirname "$0")/cpu_vllm_deps.py" requires > "$work/deps.txt"
# Resolve first, then install the resolution less GPU pieces: they also come in through plain
# packages (xgrammar asks for triton, about 1 GB), so vLLM's own list is not enough to filter.
python -m pip install -q --dry-run --report "$work/report.json" -r "$work/deps.txt"
python "$(dirname "$0")/cpu_vllm_deps.py" pins "$work/report.json" > "$work/pins.txt"
python -m pip install -q --no-deps -r "$work/pins.txt"
python -c "import vllm.v1.attention.backends.gdn_attn; print('vllm', '${release}', 'importable on CPU')"
