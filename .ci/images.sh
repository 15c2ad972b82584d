#!/usr/bin/env bash
# The project image built for real, with no Docker engine, registry or GPU: buildah builds
# images/Dockerfile unchanged on a stand-in base (images/standin.sh: the release's real vLLM
# files on a CPU install) for two releases, runs images/smoke.py inside each image, and checks
# that a base with one drifted vLLM file fails the build. Needs root (debootstrap, buildah).
# Skipped, saying so, only where buildah cannot be installed; with IMAGES_REQUIRED=1 (the
# GitHub job, whose runners can install it) that fails instead of passing with no image built.
#   bash .ci/images.sh [RELEASE...]         (default: 0.26.0 0.31.0)
# STANDIN_CACHE (default ~/.cache/vllm-backports/standin) keeps the stand-in bases between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
export STANDIN_CACHE=${STANDIN_CACHE:-$HOME/.cache/vllm-backports/standin}
tools="buildah podman runc debootstrap"
skip() {
  if [ "${IMAGES_REQUIRED:-0}" = 1 ]; then
    echo "images: FAILED: $1 (IMAGES_REQUIRED=1)" >&2
    exit 1
  fi
  echo "images: SKIPPED: $1" >&2
  exit 0
}

if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    exec sudo -n env "PATH=$PATH" "STANDIN_CACHE=$STANDIN_CACHE" "IMAGES_REQUIRED=${IMAGES_REQUIRED:-0}" bash "$0" "$@"
  fi
  skip "not root and no sudo, so buildah and debootstrap cannot run (no image built)"
fi
missing() { for t in $tools; do command -v "$t" >/dev/null || return 0; done; return 1; }
if missing && command -v apt-get >/dev/null; then
  echo "images: installing $tools"
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $tools) >/dev/null ||
    echo "images: apt-get could not install $tools" >&2
fi
if missing; then
  skip "$tools not installable here (no apt-get, or it failed); no image built"
fi

releases=("$@")
[ ${#releases[@]} -gt 0 ] || releases=(0.26.0 0.31.0)

# Storage of its own, thrown away at the end: only the cache's archives outlive a run. The overlay
# driver is about 8x faster than vfs; chroot isolation needs no cgroups or user namespaces.
work=$(mktemp -d)
buildah_cmd="buildah --root $work/root --runroot $work/run --storage-driver overlay"
read -r -a buildah <<< "$buildah_cmd"
# podman on the same storage: runc (crun fails on hybrid cgroup layouts), limits runc accepts.
cat > "$work/containers.conf" <<'EOF'
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]
[engine]
runtime = "runc"
EOF
podman=(env "CONTAINERS_CONF=$work/containers.conf" podman --root "$work/root" --runroot "$work/run"
  --storage-driver overlay)
cleanup() {
  "${buildah[@]}" rm --all >/dev/null 2>&1 || true
  "${buildah[@]}" umount --all >/dev/null 2>&1 || true
  umount -R "$work/root/overlay" 2>/dev/null || true
  rm -rf "$work"
  [ -d "$STANDIN_CACHE" ] && chmod -R a+rX "$STANDIN_CACHE"   # for a cache step that runs unprivileged
  return 0
}
trap cleanup EXIT

torch_of() { python3 -c "import sys, tomllib; print(tomllib.load(open('versions.toml', 'rb'))['releases'][sys.argv[1]]['torch'])" "$1"; }
# Where PyTorch's CPU index is out of reach (the machine CI runs on), the CPU wheel it carries.
export CPU_TORCH=${CPU_TORCH:-2.13.0+cpu}

# --model-check: `verify --model` reads a checkpoint written in the image, its tokenizer and chat
# template and a prompts file, and stops at the missing GPU (engines run in the GPU smoke job)
smoke='python3 /opt/vllm-backports/apply.py status --json > /tmp/status.json &&
  python3 /opt/vllm-backports/images/smoke.py --vllm "$0" --status /tmp/status.json --import-vllm --model-check /tmp/model-check'

for release in "${releases[@]}"; do
  started=$SECONDS
  base=localhost/vllm-backports-standin:$release
  image=localhost/vllm-backports-ci:$release
  echo "== images: vLLM $release"
  BUILDAH=$buildah_cmd bash images/standin.sh "$release" "$(torch_of "$release")" "$base"

  "${buildah[@]}" bud -q --isolation chroot --pull=never -f images/Dockerfile -t "$image" \
    --build-arg "BASE_IMAGE=$base" --build-arg "VLLM_VERSION=$release" --build-arg BACKPORT_REVISION=ci .
  echo "images: $image built from images/Dockerfile on $base"

  # The smoke checks that need no GPU (the GPU job runs the proofs): in a build container, then as a container.
  ctr=$("${buildah[@]}" from --pull=never "$image")
  "${buildah[@]}" run --isolation chroot "$ctr" -- bash -c "$smoke" "$release"
  "${buildah[@]}" rm "$ctr" >/dev/null
  "${podman[@]}" run --rm --network none --entrypoint bash "$image" -c "$smoke" "$release"

  # The image's own entrypoint, on the release's real vLLM and argument spellings: with
  # VLLM_BACKPORTS_STRICT, flags that meet a known bug no series fixes (MTP under the async
  # scheduling these releases default to for it, vLLM #53726) stop it before vLLM starts; without,
  # vLLM fails here (no GPU, no model) and the container exits non-zero with a report where
  # VLLM_BACKPORTS_REPORT_DIR says.
  flags=(--model /nonexistent --speculative-config '{"method": "mtp", "num_speculative_tokens": 1}')
  rc=0; "${podman[@]}" run --rm --network none -e VLLM_BACKPORTS_STRICT=1 "$image" "${flags[@]}" \
    > "$work/strict.log" 2>&1 || rc=$?
  if [ "$rc" != 2 ] || ! grep -q "gdn-mtp-async-illegal-address" "$work/strict.log" || grep -q "report written" "$work/strict.log"; then
    cat "$work/strict.log"; echo "images: FAILED: strict start-up with MTP under async scheduling exited $rc" >&2; exit 1
  fi
  mkdir -p "$work/reports"
  rc=0; "${podman[@]}" run --rm --network none -v "$work/reports:/reports" -e VLLM_BACKPORTS_REPORT_DIR=/reports \
    "$image" "${flags[@]}" > "$work/loud.log" 2>&1 || rc=$?
  if [ "$rc" = 0 ] || ! ls "$work"/reports/vllm-backports-report-*.txt > /dev/null 2>&1; then
    cat "$work/loud.log"; echo "images: FAILED: vLLM failing in the container gave exit $rc and no report" >&2; exit 1
  fi
  echo "images: the entrypoint refused MTP under async scheduling with STRICT, and a failed start exited $rc with a report"
  rm -rf "$work/reports"

  # The entrypoint as the container's PID 1: `docker stop` (SIGTERM to PID 1, which the kernel
  # drops unless PID 1 handles it) reaches vLLM, and vLLM's own exit code comes back, no report.
  # vLLM cannot serve here, so a stand-in `vllm` that exits 7 on SIGTERM is mounted over it.
  vllm_path=$("${podman[@]}" run --rm --network none --entrypoint sh "$image" -c 'command -v vllm' || true)
  if [ -z "$vllm_path" ]; then echo "images: FAILED: no vllm on the image's PATH" >&2; exit 1; fi
  printf '%s\n' '#!/bin/sh' 'trap "echo vllm stopped by SIGTERM; exit 7" TERM' 'echo vllm serving' \
    'while :; do sleep 1 & wait $!; done' > "$work/fake-vllm"
  chmod 755 "$work/fake-vllm"
  # In the foreground, as `docker run` then `docker stop`: the client passes SIGTERM on to PID 1
  # (--sig-proxy) and, with --rm, removes the container itself before it returns its exit code.
  "${podman[@]}" run --rm --network none --sig-proxy=true -v "$work/fake-vllm:$vllm_path:ro" "$image" \
    --model /nonexistent > "$work/stop.log" 2>&1 &
  client=$!
  # SIGTERM only once vLLM runs: before, PID 1 has no handler yet (the guard runs first) and drops it
  serving=no
  for _ in $(seq 300); do
    if grep -q "vllm serving" "$work/stop.log"; then serving=yes; break; fi
    sleep 0.2
  done
  [ "$serving" = yes ] && kill -TERM "$client"
  # a PID 1 that drops SIGTERM never ends: 60 s, then it fails here, not by hanging CI
  for _ in $(seq 300); do kill -0 "$client" 2>/dev/null || break; sleep 0.2; done
  if kill -0 "$client" 2>/dev/null; then
    kill -KILL "$client"; wait "$client" || true
    "${podman[@]}" rm -f --all >/dev/null 2>&1 || true   # the client killed, its container is not
    rc="none (still running 60 s after SIGTERM)"
  else
    rc=0; wait "$client" || rc=$?
  fi
  [ "$serving" = yes ] || rc="none (vLLM never started within 60 s)"
  if [ "$rc" != 7 ] || ! grep -q "vllm stopped by SIGTERM" "$work/stop.log" || grep -q "report written" "$work/stop.log"; then
    cat "$work/stop.log"; echo "images: FAILED: SIGTERM to the entrypoint as PID 1 gave exit $rc" >&2; exit 1
  fi
  echo "images: SIGTERM to the entrypoint as PID 1 reached vLLM, whose exit 7 came back, no report"

  # One pristine file of the release edited in the base: the build must refuse it.
  ctr=$("${buildah[@]}" from --pull=never "$base")
  drifted=$("${buildah[@]}" run --isolation chroot -v "$PWD:/run/repo:ro" "$ctr" -- python3 -c '
import sys, sysconfig
from pathlib import Path
sys.path.insert(0, "/run/repo")
from vllm_backports.catalogue import Catalogue
cat = Catalogue(Path("/run/repo"))
path = sorted(cat.series(cat.releases[sys.argv[1]].series).paths)[0]
target = Path(sysconfig.get_paths()["purelib"]) / path
target.write_text(target.read_text() + "\n# drifted\n")
print(path)' "$release")
  "${buildah[@]}" commit -q "$ctr" "$base-drifted" >/dev/null
  "${buildah[@]}" rm "$ctr" >/dev/null
  if "${buildah[@]}" bud -q --isolation chroot --pull=never -f images/Dockerfile -t "$image-drifted" \
    --build-arg "BASE_IMAGE=$base-drifted" --build-arg "VLLM_VERSION=$release" . > "$work/drifted.log" 2>&1; then
    cat "$work/drifted.log"
    echo "images: FAILED: the build on a base with $drifted edited succeeded" >&2
    exit 1
  fi
  if ! grep -q "edited locally" "$work/drifted.log"; then
    cat "$work/drifted.log"
    echo "images: FAILED: the build on a drifted base failed, but not on the drifted file" >&2
    exit 1
  fi
  echo "images: a base with $drifted edited fails the build: $(grep -m1 "edited locally" "$work/drifted.log")"
  echo "images: vLLM $release done in $((SECONDS - started)) s"
done
