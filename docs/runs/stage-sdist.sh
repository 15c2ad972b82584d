#!/usr/bin/env bash
# vLLM REL's source archive from PyPI (sha256 checked against PyPI's, as `maint upstream-tests`
# does), for `steps.sh upstream-gpu` on the GPU machine, which has no network: one part under a
# call's 64 MiB carry (about 37 MiB), with the hash beside it.
#   bash docs/runs/stage-sdist.sh 0.28.0   # then carry .stage-sdist-0.28.0 in the upstream-gpu call
set -euo pipefail
release=$1
out=.stage-sdist-$release
path=$(python3 -c "import sys; from vllm_backports.upstream_tests import fetch_sdist; print(fetch_sdist(sys.argv[1]))" "$release")
rm -rf "$out" && mkdir -p "$out"
cp "$path" "$out/"
(cd "$out" && sha256sum "$(basename "$path")" | cut -d' ' -f1 > sdist.sha256)
echo "staged $(basename "$path") ($(du -m "$out" | cut -f1) MiB) under $out"
