#!/usr/bin/env bash
# Steps on the GPU machine: turboquant-spec-decode on vLLM 0.21.0 (repo root, after
# the staged install; one step per call, each under the 600 s limit). Sites, all vLLM 0.21.0:
#   FIX  $HOME/vllm-site  the shipped series (turboquant-spec-decode, gdn-spec-state, gdn-mixed-batch-gates)
#   CTL  /tmp/site-ctl    the series without turboquant-spec-decode: TurboQuant as released
#   P65  /tmp/site-p65    CTL plus the P65 workaround (benchmarks/alternatives/turboquant-cudagraph)
#   RAW  /tmp/site-raw    pristine
# `setup` installs FA2 (carry .stage/fa2, from docs/runs/stage-fa2.sh) and .gpu-pytest.
set -uo pipefail
step=$1; out=${OUT:-/tmp/out}; mkdir -p "$out"
FIX=$HOME/vllm-site CTL=/tmp/site-ctl P65=/tmp/site-p65 RAW=/tmp/site-raw
KV=turboquant_k8v4
v() { # site, tag, verify args...
  local site=$1 tag=$2; shift 2
  PYTHONPATH=$site python3 apply.py verify --prefill-backend triton --work-dir "/tmp/v-$tag" --json "$@" > "$out/$tag.json"
  echo "$tag: exit $?"
  python3 - "$out/$tag.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("vllm", "kv_cache", "threshold", "baseline_worst_regret", "calibrated", "passed")})
for r in d.get("rows", []):
    print(r["scenario"], r["batch"], r["mode"], r["sequences"], r["tokens"], r["errors"], r["bad_sequences"],
          r["worst_regret"], r["first_error_at"], r["exercised"], r["same_as_baseline"], r["tokens_per_s"])
PY
  tar -czf "$out/$tag-logs.tgz" --exclude=model -C /tmp "v-$tag" 2>/dev/null; true
}
site_copy() { # a hard-linked copy of the pristine install, with its own copy of every file a patch touches
  rm -rf "$1" && cp -al "$FIX" "$1"
  for f in v1/worker/gpu_model_runner.py v1/attention/backends/gdn_attn.py model_executor/layers/mamba/gdn_linear_attn.py \
           v1/attention/backends/turboquant_attn.py v1/attention/ops/triton_turboquant_decode.py; do
    cp "$1/vllm/$f" "$1/vllm/$f.own" && mv "$1/vllm/$f.own" "$1/vllm/$f"; done
}
case $step in
  setup)  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
          m=vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so
          xz -dc .stage/fa2/fa2.so.xz > "$FIX/$m" && (cd "$FIX/vllm/vllm_flash_attn" && sed 's/fa2.so/_vllm_fa2_C.abi3.so/' "$OLDPWD/.stage/fa2/fa2.so.sha256" | sha256sum -c)
          for s in $RAW $CTL $P65; do site_copy $s; done
          PYTHONPATH=$CTL python3 apply.py --vllm 0.21.0 --target $CTL --skip turboquant-spec-decode --json > "$out/apply-ctl.json"; echo "ctl: exit $?"
          PYTHONPATH=$P65 python3 apply.py --vllm 0.21.0 --target $P65 --skip turboquant-spec-decode --json > "$out/apply-p65.json"; echo "p65 base: exit $?"
          patch -p1 -d $P65 --no-backup-if-mismatch < benchmarks/alternatives/turboquant-cudagraph/0.21.0/0001-turboquant-cudagraph.patch; echo "p65 patch: exit $?"
          PYTHONPATH=$FIX python3 apply.py --vllm 0.21.0 --json > "$out/apply-fix.json"; echo "fix: exit $?"
          PYTHONPATH=$FIX python3 apply.py status --vllm 0.21.0 --json > "$out/status-fix.json"; echo "status: exit $?"
          PYTHONPATH=$FIX:.gpu-pytest python3 -m pytest -q -s tests/gpu/test_turboquant_spec_decode.py 2>&1 | tail -15
          PYTHONPATH=$RAW:.gpu-pytest VLLM_BACKPORTS_REQUIRE_VLLM=1 python3 -m pytest -q -p no:cacheprovider \
            tests/release/test_turboquant_spec_decode.py tests/release/test_gdn_routing.py 2>&1 | tail -3 ;;
  ctl-mtp-graphs) v $CTL tq-ctl-mtp-b16-graphs --kv-cache $KV --preset mtp --batch 16 --mode graphs ;;
  fix-mtp-graphs) v $FIX tq-fix-mtp-b16-graphs --kv-cache $KV --preset mtp --batch 16 --mode graphs ;;
  p65-mtp-graphs) v $P65 tq-p65-mtp-b16-graphs --kv-cache $KV --preset mtp --batch 16 --mode graphs ;;
  fix-ngram-graphs) v $FIX tq-fix-ngram-b16-graphs --kv-cache $KV --preset ngram --batch 16 --mode graphs ;;
  ctl-ngram-graphs) v $CTL tq-ctl-ngram-b16-graphs --kv-cache $KV --preset ngram --batch 16 --mode graphs ;;
  fix-b1-graphs) v $FIX tq-fix-b1-graphs --kv-cache $KV --preset mtp --preset ngram --batch 1 --mode graphs ;;
  fix-eager) v $FIX tq-fix-b16-eager --kv-cache $KV --preset mtp --preset ngram --batch 16 --mode eager ;;
  bench)  python3 benchmarks/bench_turboquant_mtp.py --site p65=$P65 --site fix=$FIX --passes "${2:-1}" \
            --kv-cache $KV --out "$out/bench-tq-mtp.json" 2>&1 | tail -40 ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
