#!/usr/bin/env bash
# Steps on the GPU machine: the GDN series on vLLM 0.20.0 at tensor parallel 2 (two H200s),
# patched and unpatched (repo root, after the staged install; one step per call).
set -uo pipefail
export PYTHONPATH=$HOME/vllm-site
step=$1; out=${OUT:-/tmp/out}; mkdir -p "$out"
v() { # tag, verify args...
  local tag=$1; shift
  python3 apply.py verify --prefill-backend triton --tp 2 --work-dir "/tmp/v-$tag" --json "$@" > "$out/$tag.json"
  echo "$tag: exit $?"
  python3 - "$out/$tag.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("threshold", "baseline_worst_regret", "calibrated", "passed", "tp")})
for r in d.get("rows", []):
    print(r["scenario"], r["batch"], r["mode"], r["sequences"], r["tokens"], r["errors"], r["bad_sequences"],
          r["worst_regret"], r["first_error_at"], r["exercised"], r["same_as_baseline"], r["tokens_per_s"])
PY
  tar -czf "$out/$tag-logs.tgz" --exclude=model -C /tmp "v-$tag" 2>/dev/null; true
}
case $step in
  patched)   nvidia-smi --query-gpu=name --format=csv,noheader
             python3 apply.py --vllm 0.20.0 --json | head -c 200; echo
             v tp2-patched-b16-eager --batch 16 --mode eager ;;
  unpatched) python3 apply.py revert --vllm 0.20.0 --json | head -c 200; echo
             v tp2-unpatched-b16-eager --batch 16 --mode eager ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
