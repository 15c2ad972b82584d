#!/usr/bin/env bash
# The bundle of `python -m lab bundle` has no FlashInfer, so verify runs there on the
# Triton GDN prefill unless FlashInfer is brought. This stages, for one release, what FlashInfer's
# GDN prefill imports and the bundle lacks, at the versions vLLM's own resolution chose:
# flashinfer-python, cuda-tile, nvidia-cudnn-frontend and, from flashinfer-python 0.6.14 on
# (vLLM 0.26+), the CuTe DSL that compiles its sm90 chunk kernel in the engine's process
# (nvidia-cutlass-dsl and its libs for CUDA 13, cuda-bindings, cuda-pathfinder); plus the
# modules pre-built by lab/runbook/stage-flashinfer-jit.sh when they are there. Not
# flashinfer-cubin (295 MiB). It comes as one tar cut into parts under one call's 64 MiB carry:
#   python -m lab bundle 0.33.0 && bash lab/runbook/stage-flashinfer.sh 0.33.0
#   -> .stage-fi-0.33.0/p0 .. pN; on the GPU machine copy each part to $HOME/fi (one call a part),
#      then `REL=0.33.0 python3 -m lab.steps fi-site` installs it into $HOME/fi-site.
# FlashInfer stays out of the release's sites: importable, it changes the sampler of every run.
set -euo pipefail
release=$1
# the release's resolution, as lab.stage.resolve writes it in the lab's cache
resolved=${VLLM_BACKPORTS_LAB_CACHE:-$HOME/.cache/vllm-backports-lab}/resolve/$release.txt
[ -f "$resolved" ] || { echo "no $resolved: run python -m lab bundle $release first" >&2; exit 2; }
# lab.stage drops every flashinfer, cuda- and nvidia- package (and quack-kernels) from its stage (the GPU image
# has its own CUDA packages); of those, these are what FlashInfer's GDN prefill imports
want='flashinfer-python|quack-kernels|cuda-tile|nvidia-cudnn-frontend|nvidia-cutlass-dsl|nvidia-cutlass-dsl-libs-base|nvidia-cutlass-dsl-libs-core|nvidia-cutlass-dsl-libs-cu13|cuda-bindings|cuda-pathfinder'
pins=$(grep -iE "^($want)==" "$resolved" || true)
grep -qi '^flashinfer-python==' <<< "$pins" || { echo "vLLM $release's resolution has no flashinfer-python" >&2; exit 2; }
work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform any -d "$work/w" $pins 2>&1 | grep -v '^WARNING: Location' || true
[ "$(ls "$work"/w/*.whl | wc -l)" = "$(grep -c == <<< "$pins")" ] || { echo "not every pin downloaded: $pins" >&2; exit 1; }
# modules lab/runbook/stage-flashinfer-jit.sh pre-built for this release, one archive each
prebuilt=$(ls .stage-fi-prebuilt-"$release"/fi-aot-*-sm90a.tar.xz 2>/dev/null || true)
if [ -n "$prebuilt" ]; then cp $prebuilt "$work/w/"
else echo "no pre-built module under .stage-fi-prebuilt-$release: FlashInfer JIT-builds what it needs at engine start"; fi
out=.stage-fi-$release
rm -rf "$out" && mkdir -p "$out"
tar -cf "$work/fi.tar" -C "$work/w" .
(cd "$work" && sha256sum fi.tar) > "$out/fi.tar.sha256"
# parts of PART_MB MiB (default 54): a call carries the working tree beside each
split -b $((${PART_MB:-54} * 1024 * 1024)) -d -a 1 "$work/fi.tar" "$work/fi.tar."
for f in "$work"/fi.tar.[0-9]; do i=${f##*.}; mkdir -p "$out/p$i" && mv "$f" "$out/p$i/"; done
cp "$out/fi.tar.sha256" "$out/p0/"
echo "staged $(echo $pins) for vLLM $release: $(du -sm "$out" | cut -f1) MiB in $(ls -d "$out"/p* | wc -l) parts under $out"
