#!/usr/bin/env bash
# Pre-builds, on a machine without a GPU, the FlashInfer nvcc-JIT module that vLLM's FlashInfer
# path builds at engine start on the GPU machine (the bundle has no flashinfer-cubin or
# flashinfer-jit-cache), for sm_90a (H100), and packs it where FlashInfer loads it without a
# build. Companion of docs/runs/stage-flashinfer.sh (same release, same flashinfer-python pin).
#   bash docs/runs/stage-flashinfer-jit.sh 0.31.0     # -> .stage-fi-prebuilt-0.31.0/
#
# What it builds, and what it cannot:
# - `sampling` (flashinfer.jit.sampling.gen_sampling_module(): csrc/sampling.cu, renorm.cu,
#   flashinfer_sampling_binding.cu), the module of vLLM's FlashInfer top-k/top-p sampler
#   (VLLM_USE_FLASHINFER_SAMPLER defaults to on in 0.31/0.33 once flashinfer imports). verify's
#   and the benchmarks' engines turn it off (verify/engine.py: they decode greedily), so only
#   engines started otherwise need this module.
# - NOT the GDN prefill. With flashinfer-python 0.7.x (vLLM 0.31.0: 0.7.0.post1; 0.33.0:
#   0.7.2.post1) the sm90 chunk_gated_delta_rule is a CuTe-DSL kernel
#   (flashinfer/gdn_kernels/delta_rule_dsl/delta_rule_sm90.py, and delta_rule_cp_sm90.py for the
#   context-parallel route), compiled in-process by cute.compile (nvidia-cutlass-dsl, not nvcc);
#   cute.compile forces no_cache=True and FlashInfer keeps the result in an in-memory dict only,
#   so there is nothing on disk to pre-build. It also needs nvidia-cutlass-dsl on the GPU
#   machine: `import flashinfer.gdn_prefill` fails with "No module named 'cutlass'" without it.
#   flashinfer-python 0.6.18.post1 (vLLM 0.29/0.30) has the same CuTe-DSL sm90 route; older pins
#   were not checked.
#
# How FlashInfer finds the result: JitSpecNvcc.try_load() loads
# <flashinfer package>/data/aot/<name>/<name>.so (flashinfer.jit.env.get_aot_artifacts' fallback
# path) with tvm_ffi.load_module, with no ninja and no source/path/mtime check. The JIT cache
# ($FLASHINFER_WORKSPACE_BASE/.cache/flashinfer/<ver>/<arch>/cached_ops/<name>/) is the wrong
# place to carry: there FlashInfer rewrites build.ninja and runs ninja on every load, and the
# build.ninja holds absolute paths (the flashinfer and tvm_ffi install dirs, the Python include
# dir, CUDA_HOME) that differ on the GPU machine, so ninja sees a changed command and rebuilds.
#
# Seen 2026-11-25 on the H100 (driver 580.159.04, nvcc 13.0.88 as here, glibc 2.39, torch 2.11+cu130):
# 0.31.0's artifact in a --target install of flashinfer-python 0.7.0.post1 loaded from data/aot with
# FLASHINFER_DISABLE_JIT=1 (no build, no nvcc, nothing written under FLASHINFER_WORKSPACE_BASE), and
# top_k_top_p_sampling_from_logits / top_p_sampling_from_probs ran (picks within the top 20).
# Build environment (env vars honoured): PY (a Python that imports torch; FlashInfer's __init__
# needs it; a CPU torch will do), WORK (scratch, default ~/.cache/fi-prebuild), MAX_JOBS (2),
# CUDA_HOME (/usr/local/cuda). The build is FLASHINFER_CUDA_ARCH_LIST=9.0a and, since this
# toolkit has no cuRAND headers, CPATH=<nvidia-curand wheel>/nvidia/cu13/include.
set -euo pipefail
release=$1
resolved=$HOME/.cache/vllm-stage/$release/resolved.txt
[ -f "$resolved" ] || { echo "no resolved.txt for vLLM $release: run ../shared/gpu/stage-vllm.sh $release first" >&2; exit 2; }
fi_ver=$(grep -i '^flashinfer-python==' "$resolved" | cut -d= -f3)
tvm_ver=$(grep -i '^apache-tvm-ffi==' "$resolved" | cut -d= -f3)
[ -n "$fi_ver" ] && [ -n "$tvm_ver" ] || { echo "vLLM $release resolves no flashinfer-python or apache-tvm-ffi" >&2; exit 2; }
case $fi_ver in 0.7.*) ;; *) echo "flashinfer-python $fi_ver: only 0.7.x was checked (module set and AOT fallback path)" >&2; exit 2;; esac
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v "$CUDA_HOME/bin/nvcc" >/dev/null || { echo "no nvcc under $CUDA_HOME" >&2; exit 2; }
PY=${PY:-}
if [ -z "$PY" ]; then for p in python3.12 python3.11 python3; do "$p" -c 'import torch' 2>/dev/null && PY=$p && break; done; fi
[ -n "$PY" ] || { echo "no Python with torch found: set PY" >&2; exit 2; }
work=${WORK:-$HOME/.cache/fi-prebuild}/$fi_ver
repo=$(pwd)
out=$repo/.stage-fi-prebuilt-$release
mkdir -p "$work"
venv=$work/venv
if [ ! -x "$venv/bin/python" ]; then
  "$PY" -m venv --system-site-packages "$venv"
  "$venv/bin/pip" install -q --no-deps "flashinfer-python==$fi_ver"
  "$venv/bin/pip" install -q "apache-tvm-ffi==$tvm_ver" einops tabulate tqdm nvidia-ml-py packaging requests click filelock numpy
fi
if [ ! -f "$work/curand/nvidia/cu13/include/curand_kernel.h" ]; then  # sampling.cuh includes curand.h
  rm -rf "$work/curand-dl" && "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --platform manylinux_2_27_x86_64 --platform manylinux_2_28_x86_64 -d "$work/curand-dl" nvidia-curand 2>&1 | grep -v '^WARNING' || true
  mkdir -p "$work/curand" && (cd "$work/curand" && unzip -q -o "$work"/curand-dl/*.whl 'nvidia/cu13/include/*')
fi
# The link line has -lcuda from $CUDA_HOME/lib64/stubs, which a toolkit without a driver may lack;
# the module uses no driver symbol (--as-needed drops it), so any libcuda.so lets ld finish.
mkdir -p "$work/stubs"
[ -f "$CUDA_HOME/lib64/stubs/libcuda.so" ] || [ -f "$work/stubs/libcuda.so" ] ||
  echo 'void flashinfer_prebuild_stub(void) {}' | gcc -shared -fPIC -x c - -Wl,-soname,libcuda.so.1 -o "$work/stubs/libcuda.so"
# $work/ws is kept between runs: ninja resumes where an earlier run stopped (a 2-core build of
# the three sources takes about 20 min).
start=$(date +%s)
LIBRARY_PATH=$work/stubs CPATH=$work/curand/nvidia/cu13/include FLASHINFER_WORKSPACE_BASE=$work/ws FLASHINFER_CUDA_ARCH_LIST=9.0a \
  MAX_JOBS=${MAX_JOBS:-2} "$venv/bin/python" - <<'PY'
from flashinfer.jit.sampling import gen_sampling_module
spec = gen_sampling_module()
spec.build(verbose=True)
print("built", spec.jit_library_path)
PY
secs=$(( $(date +%s) - start ))
so=$work/ws/.cache/flashinfer/$fi_ver/90a/cached_ops/sampling/sampling.so
[ -f "$so" ] || { echo "no $so" >&2; exit 1; }
rm -rf "$work/pkg" && mkdir -p "$work/pkg/flashinfer/data/aot/sampling" && cp "$so" "$work/pkg/flashinfer/data/aot/sampling/"
rm -rf "$out" && mkdir -p "$out"
tar -C "$work/pkg" -cJf "$out/fi-aot-sampling-sm90a.tar.xz" flashinfer
(cd "$out" && sha256sum fi-aot-sampling-sm90a.tar.xz > fi-aot-sampling-sm90a.tar.xz.sha256)
{ echo "vllm=$release flashinfer-python=$fi_ver apache-tvm-ffi=$tvm_ver arch=sm_90a module=sampling build_s=$secs"
  "$CUDA_HOME/bin/nvcc" --version | tail -1
  echo "so sha256: $(sha256sum "$so" | cut -d' ' -f1)"
  readelf -d "$so" | grep NEEDED; } > "$out/MANIFEST.txt"
cat "$out/MANIFEST.txt"
echo "staged in $(du -sh "$out" | cut -f1): $out; docs/runs/stage-flashinfer.sh $release packs it with FlashInfer"
cat <<EOF
GPU side, 'REL=$release bash docs/runs/steps.sh fi-site' extracts it into \$HOME/fi-site/flashinfer.
No env var is needed (FLASHINFER_WORKSPACE_BASE does not matter for this path). To confirm it is
used without a build (FLASHINFER_DISABLE_JIT=1 makes any build raise MissingJITCacheError):
  PYTHONPATH=\$HOME/vllm-site:\$HOME/fi-site FLASHINFER_DISABLE_JIT=1 python3 -c "import torch, flashinfer
from flashinfer.jit.sampling import gen_sampling_module as g; s = g(); print('aot', s.is_aot, s.get_library_path())
x = torch.randn(4, 151936, device='cuda')
print(flashinfer.sampling.top_k_top_p_sampling_from_logits(x, torch.full((4,), 20, device='cuda', dtype=torch.int32), torch.full((4,), 0.9, device='cuda'), deterministic=True))"
In vLLM's log: no 'Building JIT module sampling' line (flashinfer.jit logger), and no nvcc/cicc processes.
GDN prefill (FlashInfer on Hopper) is a CuTe-DSL kernel in flashinfer-python $fi_ver: nothing here
pre-builds it, and it needs nvidia-cutlass-dsl (+ -libs-base, -libs-core and one of -libs-cu12/-libs-cu13),
which docs/runs/stage-flashinfer.sh leaves out.
EOF
