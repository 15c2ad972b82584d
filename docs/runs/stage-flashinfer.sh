#!/usr/bin/env bash
# The slim bundle of ../shared/gpu/stage-vllm.sh has no FlashInfer, so verify runs there on the
# Triton GDN prefill only; Hopper's default is FlashInfer's. This stages the FlashInfer the release
# resolves to and the two packages it imports that the bundle lacks, without flashinfer-cubin
# (295 MiB) and without nvidia-cutlass-dsl. `steps.sh setup` installs .stage/fi into the site
# before copying it. Enough for FlashInfer's nvcc-built modules (the sampler's: prebuilt by
# docs/runs/stage-flashinfer-jit.sh), not for the sm90 GDN prefill from flashinfer-python 0.6.18
# (vLLM 0.29 on): that is a CuTe-DSL kernel compiled in-process by nvidia-cutlass-dsl, whose
# `import cutlass` is unguarded (`import flashinfer.gdn_prefill` fails without it, seen on the
# H100 2026-11-25), and it also imports cuda-bindings. Staging those (the cu13 cutlass-dsl wheel
# alone is 84 MiB: two carries) is still to do.
#   ../shared/gpu/stage-vllm.sh 0.20.0 && bash docs/runs/stage-flashinfer.sh 0.20.0
set -euo pipefail
release=$1
resolved=$HOME/.cache/vllm-stage/$release/resolved.txt
[ -f "$resolved" ] || { echo "no resolved.txt for vLLM $release under ~/.cache/vllm-stage: run ../shared/gpu/stage-vllm.sh $release first" >&2; exit 2; }
# The versions vLLM's own resolution chose. stage-vllm.sh drops every flashinfer, cuda- and nvidia-
# package from its bundle (the GPU image has its own CUDA packages); of those, FlashInfer imports
# these two besides itself. apache-tvm-ffi, its JIT's other need, is in the bundle already.
pins=$(grep -iE '^(flashinfer-python|cuda-tile|nvidia-cudnn-frontend)==' "$resolved" || true)
[ "$(echo "$pins" | grep -c ==)" = 3 ] || { echo "vLLM $release's resolution lacks flashinfer-python, cuda-tile or nvidia-cudnn-frontend: $pins" >&2; exit 2; }
out=.stage/fi
rm -rf "$out" && mkdir -p "$out"
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d "$out" $pins 2>&1 | grep -v '^WARNING: Location' || true
[ "$(ls "$out"/*.whl | wc -l)" = 3 ] || { echo "expected 3 wheels in $out" >&2; exit 1; }
echo "staged $(echo $pins) for vLLM $release: $(du -sm "$out" | cut -f1) MiB in $out"
echo "Carry it in the setup call: run  carry=[\"$out\", \".gpu-pytest\"]  command: REL=$release ... bash docs/runs/steps.sh setup"
