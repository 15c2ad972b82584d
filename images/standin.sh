#!/usr/bin/env bash
# A stand-in for vllm/vllm-openai:vRELEASE where there is no registry and no GPU (CI): Debian
# minbase, its python3, and in /opt/venv (first on PATH) the release's real vLLM wheel from PyPI,
# pristine files and RECORD, made importable on the CPU by .ci/cpu-vllm-env.sh (a CPU torch,
# vLLM's plain dependencies). images/Dockerfile builds on it unchanged: its apply step reads the
# same files and hashes as in the official image, and its smoke step imports vllm and every module
# the series patches. Not a stand-in for CUDA kernels: the GPU smoke job runs those.
#   usage: images/standin.sh RELEASE TORCH IMAGE     (TORCH: the release's pin, versions.toml)
# BUILDAH: the buildah command with its storage options (default: plain buildah).
# STANDIN_CACHE: a directory for OCI archives of the images, reused while every input is the same.
# CPU_TORCH: passed to .ci/cpu-vllm-env.sh (the CPU torch to take when PyTorch's index is away).
set -euo pipefail
release=${1:?usage: standin.sh RELEASE TORCH IMAGE} torch=${2:?} image=${3:?}
repo=$(cd "$(dirname "$0")/.." && pwd)
read -r -a buildah <<< "${BUILDAH:-buildah}"
cache=${STANDIN_CACHE:-}
suite=bookworm

# Everything a layer is made from is in its key: a change to any of these scripts rebuilds it.
key() { cat "$repo/images/standin.sh" "$@" | sha256sum | cut -c1-16; }

# Reuse an image already in storage with this key, else load it from the cache's archive; 1 if
# neither exists.
reuse() {
  local name=$1 archive=$2 want=$3 id
  have=$("${buildah[@]}" inspect --type image --format '{{index .OCIv1.Config.Labels "io.vllm-backports.standin-key"}}' \
    "$name" 2>/dev/null) || have=
  [ "$have" = "$want" ] && return 0
  [ -n "$cache" ] && [ -f "$archive" ] || return 1
  echo "standin: $name from $archive"
  id=$("${buildah[@]}" pull -q "oci-archive:$archive" | tail -1)
  "${buildah[@]}" tag "$id" "$name"
}

# Save an image to the cache under its key, dropping archives of the same image with older keys.
keep() {
  local name=$1 archive=$2
  [ -n "$cache" ] || return 0
  mkdir -p "$cache"
  rm -f "${archive%-*}"-*.tar
  # Uncompressed: gzip of a few GB costs minutes on a CI machine, and the archive is read back once.
  "${buildah[@]}" push -q --disable-compression "$name" "oci-archive:$archive" >/dev/null
}

# The host's TLS and pip settings inside the build: its CA bundle (for proxies that re-sign TLS),
# its pip configuration files and every local file or directory they name (wheel directories,
# file:// indexes, constraints), each at the same path.
ca=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
run_opts=()
if [ -f "$ca" ]; then
  run_opts+=(-v "$ca:/run/host-ca.crt:ro" -e PIP_CERT=/run/host-ca.crt -e SSL_CERT_FILE=/run/host-ca.crt)
fi
for path in /etc/pip.conf /etc/xdg/pip "$HOME/.config/pip" "$HOME/.pip" \
  $(python3 -m pip config list 2>/dev/null | grep -oE "(file://)?/[^' ]+" | sed 's|^file://||' | sort -u); do
  case $path in /etc/ssl/*) continue ;; */simple) path=${path%/simple} ;; esac  # an index's files lie beside it
  [ -e "$path" ] && run_opts+=(-v "$path:$path:ro")
done
[ -n "${PIP_FIND_LINKS:-}" ] && run_opts+=(-e "PIP_FIND_LINKS=$PIP_FIND_LINKS")

# 1. Debian and a venv with a current pip: shared by every release.
python_image=localhost/vllm-backports-standin-python:$suite
python_key=$(key)
if ! reuse "$python_image" "$cache/standin-python-$python_key.tar" "$python_key"; then
  echo "standin: building $python_image (debootstrap $suite minbase)"
  ctr=$("${buildah[@]}" from scratch)
  mnt=$("${buildah[@]}" mount "$ctr")
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
    "$suite" "$mnt" "${DEBIAN_MIRROR:-http://deb.debian.org/debian}" >/dev/null
  rm -rf "$mnt"/var/cache/apt/archives/*.deb "$mnt"/var/lib/apt/lists/*
  "${buildah[@]}" umount "$ctr" >/dev/null
  "${buildah[@]}" run --isolation chroot "${run_opts[@]}" "$ctr" -- sh -c \
    'python3 -m venv /opt/venv && /opt/venv/bin/python -m pip install -q --upgrade pip'
  "${buildah[@]}" config --env PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env PIP_NO_CACHE_DIR=1 --label "io.vllm-backports.standin-key=$python_key" "$ctr"
  "${buildah[@]}" commit -q "$ctr" "$python_image" >/dev/null
  "${buildah[@]}" rm "$ctr" >/dev/null
  keep "$python_image" "$cache/standin-python-$python_key.tar"
fi

# 2. The release's vLLM, the way the CPU builder tests get theirs.
vllm_key=$(key "$repo/.ci/cpu-vllm-env.sh" "$repo/.ci/cpu_vllm_deps.py" <(echo "$release $torch ${CPU_TORCH:-}"))
if reuse "$image" "$cache/standin-vllm-$release-$vllm_key.tar" "$vllm_key"; then
  echo "standin: $image is current"
  exit 0
fi
echo "standin: building $image (vLLM $release from PyPI, CPU torch)"
ctr=$("${buildah[@]}" from --pull=never "$python_image")
"${buildah[@]}" run --isolation chroot "${run_opts[@]}" -v "$repo/.ci:/run/ci:ro" -e "CPU_TORCH=${CPU_TORCH:-}" \
  "$ctr" -- bash /run/ci/cpu-vllm-env.sh "$release" "$torch"
"${buildah[@]}" config --label "io.vllm-backports.standin=$release" --label "io.vllm-backports.standin-key=$vllm_key" "$ctr"
"${buildah[@]}" commit -q "$ctr" "$image" >/dev/null
"${buildah[@]}" rm "$ctr" >/dev/null
keep "$image" "$cache/standin-vllm-$release-$vllm_key.tar"
