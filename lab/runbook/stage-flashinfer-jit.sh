#!/usr/bin/env bash
# Pre-builds, on a machine without a GPU, a FlashInfer nvcc-JIT module that vLLM's FlashInfer
# path would build at engine start on the GPU machine (the bundle has no flashinfer-cubin or
# flashinfer-jit-cache), for sm_90a (H100), and packs it where FlashInfer loads it without a
# build. Companion of lab/runbook/stage-flashinfer.sh (same release, same flashinfer-python pin).
#   bash lab/runbook/stage-flashinfer-jit.sh 0.25.0                  # -> .stage-fi-prebuilt-0.25.0/
#   SAME_AS=0.25.0 bash lab/runbook/stage-flashinfer-jit.sh 0.23.0   # 0.25.0's build, if the same (below)
# MODULE=sampling|gdn_prefill_sm90 picks one; by default, the one the pin builds with nvcc on the
# path verify takes:
# - `gdn_prefill_sm90` (flashinfer.jit.gdn.gen_gdn_prefill_sm90_module(): 64 CUTLASS instances,
#   2 dtypes x 32 flag combinations, plus launcher and kernel): the sm90 GDN prefill of
#   flashinfer-python before 0.6.14 (vLLM 0.20/0.21: 0.6.8.post1; 0.23: 0.6.12; 0.25: 0.6.13).
#   On 2026-11-23 (0.24.0) the GPU machine's engine had not finished this build after 570 s.
# - `sampling` (flashinfer.jit.sampling.gen_sampling_module(): csrc/sampling.cu, renorm.cu,
#   flashinfer_sampling_binding.cu), the module of vLLM's FlashInfer top-k/top-p sampler
#   (VLLM_USE_FLASHINFER_SAMPLER defaults to on in 0.31/0.33 once flashinfer imports). verify's
#   and the benchmarks' engines turn it off (verify/engine.py: they decode greedily), so only
#   engines started otherwise need this module. The default for 0.7.x pins.
# - NOT the GDN prefill from flashinfer-python 0.6.14 (vLLM 0.26) on: there the sm90
#   chunk_gated_delta_rule is a CuTe-DSL kernel
#   (flashinfer/gdn_kernels/delta_rule_dsl/delta_rule_sm90.py, and delta_rule_cp_sm90.py for the
#   context-parallel route), compiled in-process by cute.compile (nvidia-cutlass-dsl, not nvcc);
#   cute.compile forces no_cache=True and FlashInfer keeps the result in an in-memory dict only,
#   so there is nothing on disk to pre-build. It also needs nvidia-cutlass-dsl on the GPU
#   machine: `import flashinfer.gdn_prefill` fails with "No module named 'cutlass'" without it.
#
# How FlashInfer finds the result: JitSpecNvcc.try_load() (0.7.x; JitSpec.build_and_load() in
# 0.6.x) loads <flashinfer package>/data/aot/<name>/<name>.so (flashinfer.jit.env's AOT dir
# fallback) with no ninja and no source/path/mtime check. The JIT cache
# ($FLASHINFER_WORKSPACE_BASE/.cache/flashinfer/<ver>/<arch>/cached_ops/<name>/) is the wrong
# place to carry: there FlashInfer rewrites build.ninja and runs ninja on every load, and the
# build.ninja holds absolute paths (the flashinfer and tvm_ffi install dirs, the Python include
# dir, CUDA_HOME) that differ on the GPU machine, so ninja sees a changed command and rebuilds.
#
# Seen 2026-11-25 on the H100 (driver 580.159.04, nvcc 13.0.88 as here, glibc 2.39, torch 2.11+cu130):
# 0.31.0's sampling artifact in a --target install of flashinfer-python 0.7.0.post1 loaded from
# data/aot with FLASHINFER_DISABLE_JIT=1 (no build, no nvcc, nothing written under
# FLASHINFER_WORKSPACE_BASE), and top_k_top_p_sampling_from_logits / top_p_sampling_from_probs
# ran (picks within the top 20).
# Seen 2026-11-27 here (2 cores, nvcc 13.0.88): 0.25.0's gdn_prefill_sm90 (flashinfer-python 0.6.13)
# built in about 77 min, a 3.7 MB module (2.0 MB xz); 0.6.12's build compared the same over 795
# inputs (SAME_AS, 3 s); with FLASHINFER_DISABLE_JIT=1 and FLASHINFER_CUDA_ARCH_LIST=9.0a it loaded
# through FlashInfer's AOT path (gen_gdn_prefill_sm90_module().build_and_load(), is_aot True) and
# exports gdn_prefill, on a host without a GPU. On 2026-11-27 vLLM 0.23.0 and 0.25.0 loaded it on an
# H200 without a build and ran their FlashInfer proofs on it (docs/VERIFICATION.md). 0.6.8.post1's
# (vLLM 0.20.0, 0.21.0) built here too, over two sessions: an 8.5 MB module, 0.3 MB xz; both
# releases loaded it on an H100 and ran their FlashInfer proofs on it (2026-11-27).
# Build environment (env vars honoured): PY (a Python that imports torch; FlashInfer's __init__
# needs it; a CPU torch will do), WORK (scratch, default ~/.cache/fi-prebuild), MAX_JOBS (2),
# CUDA_HOME (/usr/local/cuda). The build is FLASHINFER_CUDA_ARCH_LIST=9.0a and, since this
# toolkit has no cuRAND headers, CPATH=<nvidia-curand wheel>/nvidia/cu13/include.
set -euo pipefail
release=$1
resolved_of() { # RELEASE: its resolution, as lab.stage.resolve writes it in the lab's cache
  echo "${VLLM_BACKPORTS_LAB_CACHE:-$HOME/.cache/vllm-backports-lab}/resolve/$1.txt"
}
pin() { # PACKAGE RELEASE: its version in the release's resolution, or nothing
  grep -i "^$1==" "$(resolved_of "$2")" 2>/dev/null | cut -d= -f3 || true
}
[ -f "$(resolved_of "$release")" ] || { echo "no $(resolved_of "$release"): run python -m lab bundle $release first" >&2; exit 2; }
fi_ver=$(pin flashinfer-python "$release")
tvm_ver=$(pin apache-tvm-ffi "$release")
[ -n "$fi_ver" ] && [ -n "$tvm_ver" ] || { echo "vLLM $release resolves no flashinfer-python or apache-tvm-ffi" >&2; exit 2; }
case $fi_ver in
  0.7.*) default=sampling ;;
  0.6.8*|0.6.9*|0.6.1[0-3]*) default=gdn_prefill_sm90 ;;
  *) default= ;;
esac
module=${MODULE:-$default}
case $module in
  sampling|gdn_prefill_sm90) ;;
  "") echo "flashinfer-python $fi_ver: no module known to pre-build (checked: 0.6.8.post1 .. 0.6.13, 0.7.x); set MODULE" >&2; exit 2 ;;
  *) echo "MODULE=$module: one of sampling, gdn_prefill_sm90" >&2; exit 2 ;;
esac
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
command -v "$CUDA_HOME/bin/nvcc" >/dev/null || { echo "no nvcc under $CUDA_HOME" >&2; exit 2; }
PY=${PY:-}
if [ -z "$PY" ]; then for p in python3.12 python3.11 python3; do "$p" -c 'import torch' 2>/dev/null && PY=$p && break; done; fi
[ -n "$PY" ] || { echo "no Python with torch found: set PY" >&2; exit 2; }
work_of() { echo "${WORK:-$HOME/.cache/fi-prebuild}/$1"; }  # FLASHINFER_VERSION: its venv and workspace
ops_of() { echo "$(work_of "$1")/ws/.cache/flashinfer/$1/90a/cached_ops/$module"; }  # where ninja builds the module
work=$(work_of "$fi_ver")
repo=$(pwd)
out=$repo/.stage-fi-prebuilt-$release
mkdir -p "$work"
venv=$work/venv
if [ ! -x "$venv/bin/python" ]; then
  "$PY" -m venv --system-site-packages "$venv"
  # PY may itself be a venv, whose packages (torch) --system-site-packages does not reach: a .pth
  # appends PY's own site after the build venv's, so the pinned FlashInfer installed here wins
  "$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])' > \
    "$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/_py-site.pth"
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
# SAME_AS=REL2 takes the module built for vLLM REL2's pin instead of building it again, when
# lab/runbook/fi_same_build.py finds the build the same: build.ninja alike but for each install's
# paths, and every input ninja recorded from inside the install byte for byte (0.6.12 and 0.6.13
# compare the same; 0.6.8.post1 has their GDN sources but other CUTLASS headers).
ops=$(ops_of "$fi_ver")
same_as=
if [ -n "${SAME_AS:-}" ]; then
  ref_ver=$(pin flashinfer-python "$SAME_AS")
  [ -n "$ref_ver" ] || { echo "SAME_AS=$SAME_AS: no flashinfer-python in its resolution (stage it first)" >&2; exit 2; }
  ref_work=$(work_of "$ref_ver") ref_ops=$(ops_of "$ref_ver")
  [ -f "$ref_ops/$module.so" ] || { echo "SAME_AS=$SAME_AS: no $module built under $ref_ops (if $SAME_AS took it SAME_AS another release, name that one: its MANIFEST says which)" >&2; exit 2; }
fi
start=$(date +%s)
# $work/ws is kept between runs: ninja resumes where an earlier run stopped (a 2-core build of
# sampling's three sources takes about 20 min, of gdn_prefill_sm90's 66 about 80 min).
LIBRARY_PATH=$work/stubs CPATH=$work/curand/nvidia/cu13/include FLASHINFER_WORKSPACE_BASE=$work/ws FLASHINFER_CUDA_ARCH_LIST=9.0a \
  MAX_JOBS=${MAX_JOBS:-2} "$venv/bin/python" - "$module" "${SAME_AS:+ninja-only}" <<'PY'
import sys
if sys.argv[1] == "sampling":
    from flashinfer.jit.sampling import gen_sampling_module as gen
else:
    from flashinfer.jit.gdn import gen_gdn_prefill_sm90_module as gen
spec = gen()  # renders the generated sources
if sys.argv[2:] == ["ninja-only"]:
    spec.write_ninja()
    print("wrote", spec.ninja_path)
else:
    spec.build(verbose=True)
    print("built", spec.jit_library_path)
PY
if [ -n "${SAME_AS:-}" ]; then
  python3 "$repo/lab/runbook/fi_same_build.py" "$ref_ops" "$ops" "$ref_work/=$work/" "/flashinfer/$ref_ver/=/flashinfer/$fi_ver/" || {
    echo "flashinfer-python $fi_ver would not build $module as $ref_ver did (above): build it without SAME_AS" >&2; exit 1; }
  so=$ref_ops/$module.so
  same_as=" same_build_as=flashinfer-python-$ref_ver(vLLM-$SAME_AS)"
else
  so=$ops/$module.so
fi
secs=$(( $(date +%s) - start ))
[ -f "$so" ] || { echo "no $so" >&2; exit 1; }
rm -rf "$work/pkg" && mkdir -p "$work/pkg/flashinfer/data/aot/$module" && cp "$so" "$work/pkg/flashinfer/data/aot/$module/"
# one archive a module: a release may carry more than one
mkdir -p "$out" && art=fi-aot-$module-sm90a.tar.xz
tar -C "$work/pkg" -cJf "$out/$art" flashinfer
(cd "$out" && sha256sum "$art" > "$art.sha256")
{ echo "vllm=$release flashinfer-python=$fi_ver apache-tvm-ffi=$tvm_ver arch=sm_90a module=$module build_s=$secs$same_as"
  "$CUDA_HOME/bin/nvcc" --version | tail -1
  echo "so sha256: $(sha256sum "$so" | cut -d' ' -f1)"
  readelf -d "$so" | grep NEEDED; } > "$out/MANIFEST-$module.txt"
cat "$out/MANIFEST-$module.txt"
echo "staged in $(du -sh "$out" | cut -f1): $out; lab/runbook/stage-flashinfer.sh $release packs it with FlashInfer"
cat <<EOF
GPU side, 'REL=$release python3 -m lab.steps fi-site' extracts it into \$HOME/fi-site/flashinfer.
No env var is needed (FLASHINFER_WORKSPACE_BASE does not matter for this path). To confirm it loads
without a build (FLASHINFER_DISABLE_JIT=1 makes any build raise):
  PYTHONPATH=\$HOME/vllm-site:\$HOME/fi-site FLASHINFER_DISABLE_JIT=1 python3 -c "import torch, flashinfer
from flashinfer.jit import $( [ "$module" = sampling ] && echo 'sampling as m; s = m.gen_sampling_module()' || echo 'gdn as m; s = m.gen_gdn_prefill_sm90_module()' ); print('aot', s.is_aot, s.get_library_path())"
In vLLM's log: no 'Building JIT module $module' line (flashinfer.jit logger), and no nvcc/cicc processes.
EOF
