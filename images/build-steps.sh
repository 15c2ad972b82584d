#!/usr/bin/env bash
# What an image build runs after copying the project in: apply the release's series, then prove
# from `status --json` that every expected backport is present and that vllm still imports.
#   usage: images/build-steps.sh VLLM_VERSION [--target DIR]
# With --target (tests, outside Docker) it works on that tree and skips the import.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
version=${1:?usage: build-steps.sh VLLM_VERSION [--target DIR]}
shift
python3 "$here/apply.py" --vllm "$version" "$@"
# A file of its own: two builds (or test runs) on one host must not read each other's status.
status=$(mktemp)
trap 'rm -f "$status"' EXIT
python3 "$here/apply.py" status --vllm "$version" "$@" --json > "$status"
if [ "${1:-}" = "--target" ]; then
  python3 "$here/images/smoke.py" --vllm "$version" --status "$status"
else
  python3 "$here/images/smoke.py" --vllm "$version" --status "$status" --import-vllm
fi
