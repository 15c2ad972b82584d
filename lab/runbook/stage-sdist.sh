#!/usr/bin/env bash
# vLLM REL's source archive from PyPI (sha256 checked against PyPI's, as `maint upstream-tests`
# does), for `lab.steps upstream-gpu` on the GPU machine, which has no network: one part under a
# call's 64 MiB carry (37 to 45 MiB), with the hash and tblib's wheel beside it.
#   bash lab/runbook/stage-sdist.sh 0.28.0   # then carry .stage-sdist-0.28.0 in the upstream-gpu call
set -euo pipefail
release=$1
out=.stage-sdist-$release
path=$(python3 -c "import sys; from vllm_backports.upstream_tests import fetch_sdist; print(fetch_sdist(sys.argv[1]))" "$release")
rm -rf "$out" && mkdir -p "$out"
cp "$path" "$out/"
(cd "$out" && sha256sum "$(basename "$path")" | cut -d' ' -f1 > sdist.sha256)
# upstream's tests/conftest.py imports tblib, which the GPU image lacks (pure Python, one wheel)
python3 -m pip download -q --no-deps --only-binary=:all: -d "$out" tblib 2>&1 | grep -v '^WARNING' || true
ls "$out"/tblib-*.whl > /dev/null || { echo "tblib did not download" >&2; exit 1; }
echo "staged $(basename "$path") ($(du -m "$out" | cut -f1) MiB) under $out"
