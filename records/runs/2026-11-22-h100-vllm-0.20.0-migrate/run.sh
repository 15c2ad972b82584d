#!/usr/bin/env bash
# Steps on the GPU machine: the shipped GDN routing fix (gdn-spec-state, with its start-at-1
# line) beside the gdn-state-migrate alternative, on vLLM 0.20.0 (repo root, after the staged
# install; one step per call, each under the 600 s limit). $HOME/vllm-site carries the shipped
# series (`setup mig-only` leaves it pristine); /tmp/site-mig is a hard-linked copy carrying 0001 +
# 0003 + the alternative. First machine: setup, mig-eager, routing-eager, routing-graphs, bench.
# Second machine (fresh): setup mig-only, kernel, mtp-unpatched, bench-unpatched, mig-graphs,
# mtp-graphs.
set -uo pipefail
step=$1; out=${OUT:-/tmp/out}; mkdir -p "$out"
MIG=/tmp/site-mig
v() { # site, tag, verify args...
  local site=$1 tag=$2; shift 2
  PYTHONPATH=$site python3 apply.py verify --prefill-backend triton --work-dir "/tmp/v-$tag" --json "$@" > "$out/$tag.json"
  echo "$tag: exit $?"
  python3 - "$out/$tag.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print({k: d.get(k) for k in ("vllm", "threshold", "baseline_worst_regret", "calibrated", "passed")})
for r in d.get("rows", []):
    print(r["scenario"], r["batch"], r["mode"], r["sequences"], r["tokens"], r["errors"], r["bad_sequences"],
          r["worst_regret"], r["first_error_at"], r["exercised"], r["same_as_baseline"], r["tokens_per_s"])
PY
  tar -czf "$out/$tag-logs.tgz" --exclude=model -C /tmp "v-$tag" 2>/dev/null; true
}
case $step in
  setup)  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
          rm -rf $MIG && cp -al "$HOME/vllm-site" $MIG
          for f in v1/worker/gpu_model_runner.py v1/attention/backends/gdn_attn.py model_executor/layers/mamba/gdn_linear_attn.py \
                   v1/attention/backends/turboquant_attn.py; do  # own copies, never the shared inode
            cp "$MIG/vllm/$f" "$MIG/vllm/$f.own" && mv "$MIG/vllm/$f.own" "$MIG/vllm/$f"; done
          rm -rf $MIG/vllm/.backports
          PYTHONPATH=$MIG python3 apply.py --vllm 0.20.0 --target $MIG --skip gdn-spec-state --json > "$out/apply-mig-base.json"; echo "mig base: exit $?"
          patch -p1 -d $MIG --no-backup-if-mismatch < benchmarks/alternatives/gdn-state-migrate/0.20.0/0002-gdn-state-migrate.patch; echo "mig patch: exit $?"
          [ "${2:-}" = mig-only ] || { PYTHONPATH=$HOME/vllm-site python3 apply.py --vllm 0.20.0 --json > "$out/apply-routing.json"; echo "routing: exit $?"
            PYTHONPATH=$HOME/vllm-site python3 apply.py status --vllm 0.20.0 --json > "$out/status-routing.json"; }
          PYTHONPATH=$MIG python3 -c "import vllm.model_executor.layers.mamba.gdn_linear_attn as m; print('mig imports', m.__file__)"
          PYTHONPATH=.gpu-pytest python3 -m pytest -q tests/gpu/test_gdn_state_migrate.py 2>&1 | tail -5
          python3 benchmarks/bench_gdn_state_migrate.py --out "$out/bench-migrate-kernel.json" ;;
  mig-eager)      v $MIG migrate-eager --batch 1 --batch 16 --mode eager ;;
  routing-eager)  v "$HOME/vllm-site" routing-eager --batch 1 --batch 16 --mode eager ;;
  mig-graphs)     v $MIG migrate-b16-graphs --batch 16 --mode graphs ;;
  routing-graphs) v "$HOME/vllm-site" routing-b16-graphs --batch 16 --mode graphs ;;
  bench)  for site in "$HOME/vllm-site:routing" "$MIG:migrate"; do
            PYTHONPATH=${site%%:*} python3 benchmarks/bench_gdn_decode.py --label ${site##*:} --prefill-backend triton \
              --rounds 5 --out "$out/bench-${site##*:}.json" --work-dir /tmp/bench-${site##*:} 2>&1 | tail -3
          done ;;
  bench-unpatched) PYTHONPATH=$HOME/vllm-site python3 apply.py revert --vllm 0.20.0 --json | head -c 200; echo
          PYTHONPATH=$HOME/vllm-site python3 benchmarks/bench_gdn_decode.py --label unpatched --prefill-backend triton \
              --rounds 5 --out "$out/bench-unpatched.json" --work-dir /tmp/bench-unpatched 2>&1 | tail -3 ;;
  kernel) PYTHONPATH=$HOME/vllm-site python3 benchmarks/bench_gdn_state_migrate.py --out "$out/bench-migrate-kernel-graphs.json" ;;
  # MTP on the checkpoint whose MTP layer drafts what the target mostly picks (accepted drafts).
  mtp-unpatched) PYTHONPATH=$HOME/vllm-site python3 apply.py revert --vllm 0.20.0 --json | head -c 200; echo
          v "$HOME/vllm-site" mtp-unpatched-b16-eager --preset mtp --batch 16 --mode eager ;;
  mtp-graphs) v "$HOME/vllm-site" mtp-unpatched-b16-graphs --preset mtp --batch 16 --mode graphs ;;
  *) echo "unknown step $step"; exit 2 ;;
esac
