#!/usr/bin/env bash
# Steps on the GPU machine: GDN decode throughput unpatched vs patched, and the MTP preset
# judged by the float32 reference, on vLLM 0.20.0 (repo root, after the staged install; one step
# per call).
set -uo pipefail
export PYTHONPATH=$HOME/vllm-site
step=$1; out=${OUT:-/tmp/out}; mkdir -p "$out"
v() { # tag, verify args...
  local tag=$1; shift
  python3 apply.py verify --prefill-backend triton --work-dir "/tmp/v-$tag" --json "$@" > "$out/$tag.json"
  echo "$tag: exit $?"
  python3 - "$out/$tag.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("threshold", "baseline_worst_regret", "calibrated", "passed")})
for r in d.get("rows", []):
    print(r["scenario"], r["batch"], r["mode"], r["sequences"], r["tokens"], r["errors"], r["bad_sequences"],
          r["worst_regret"], r["first_error_at"], r["exercised"], r["same_as_baseline"], r["tokens_per_s"])
PY
  cp "/tmp/v-$tag/verify.json" "$out/$tag-full.json" 2>/dev/null
  tar -czf "$out/$tag-logs.tgz" --exclude=model -C /tmp "v-$tag" 2>/dev/null; true
}
b() { python3 benchmarks/bench_gdn_decode.py --prefill-backend triton --rounds 7 --label "$1" --out "$HOME/bench-$1.json" | tail -n 14; cp "$HOME/bench-$1.json" "$out/"; }
case $step in
  unpatched) b unpatched; v mtp-unpatched-b16-eager --preset mtp --batch 16 --mode eager ;;
  patched)   python3 apply.py --vllm 0.20.0 --json | head -c 300; echo
             b patched; python3 benchmarks/bench_gdn_decode.py --compare "$HOME/bench-unpatched.json" "$HOME/bench-patched.json" 2>/dev/null
             v mtp-patched-eager --preset mtp --batch 1 --batch 16 --mode eager ;;
  unpatched-again) python3 apply.py revert --vllm 0.20.0 --json | head -c 300; echo
             b unpatched; python3 benchmarks/bench_gdn_decode.py --compare "$HOME/bench-unpatched.json" "$HOME/bench-patched.json" ;;
  mtp-graphs) v mtp-patched-b16-graphs --preset mtp --batch 16 --mode graphs ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
