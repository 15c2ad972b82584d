#!/usr/bin/env bash
# Steps on the GPU machine for the shipped GDN series on vLLM 0.20.0 (run from the repo root
# after the staged install). One step per call, to stay under the per-call time limit.
set -uo pipefail
export PYTHONPATH=$HOME/vllm-site
step=$1; out=${OUT:-/tmp/out}; mkdir -p "$out"
v() { # tag, verify args...
  local tag=$1; shift
  python3 apply.py verify --prefill-backend triton --work-dir "/tmp/v-$tag" --json "$@" > "$out/$tag.json"
  echo "$tag: exit $?"; tail -c 600 "$out/$tag.json"; echo
  tar -czf "$out/$tag-logs.tgz" --exclude=model -C /tmp "v-$tag" 2>/dev/null; true
}
case $step in
  patched-graphs)   python3 apply.py --vllm 0.20.0 --json > "$out/apply.json"; cat "$out/apply.json" | head -c 400; echo
                    v patched-b16-graphs --batch 16 --mode graphs ;;
  patched-eager)    v patched-eager --batch 1 --batch 16 --mode eager ;;
  patched-b1-graphs) v patched-b1-graphs --batch 1 --mode graphs ;;
  unpatched-graphs) python3 apply.py revert --vllm 0.20.0 --json > "$out/revert.json"; head -c 400 "$out/revert.json"; echo
                    python3 apply.py check --vllm 0.20.0 --json | head -c 300; echo
                    v unpatched-b16-graphs --batch 16 --mode graphs ;;
  unpatched-b1)     v unpatched-b1-eager --batch 1 --mode eager ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
