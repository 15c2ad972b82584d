# Judges the GPU engines' tokens of the 2026-11-25 TurboQuant + MTP runs (0.27.0, 0.28.0) with verify's own
# float32 reference on the CPU; run from the repository root after
#   mkdir -p /tmp/tqj && tar -xzf records/runs/2026-11-25-h100-vllm-0.28.0/tq-mtp-engine-outputs-0.27.0-0.28.0.tgz -C /tmp/tqj
import json, sys
from pathlib import Path
from vllm_backports.verify import model, scenarios
from vllm_backports.verify.oracle import Reference, judge
from vllm_backports.verify.run import calibrated_threshold
d = Path("/tmp/tqj/m"); model.write_model(d, mtp=True, model_class="qwen3_next")
a = json.loads((d / "config.json").read_text()); b = json.loads(Path("/tmp/tqj/v-0.27.0-tq-mtp/model/config.json").read_text())
print("config identical to the GPU run's:", a == b)
ps = scenarios.prompts(scenarios.SHAPES[16].prompts, model.vocab_size("qwen3_next"), kind="random", k=3)
ref = Reference(str(d), device="cpu", model_class="qwen3_next")
out = {}
for rel in ("0.27.0", "0.28.0"):
    base = json.loads(Path(f"/tmp/tqj/v-{rel}-tq-mtp/b16-graphs-baseline.out.json").read_text())
    mtp = json.loads(Path(f"/tmp/tqj/v-{rel}-tq-mtp/b16-graphs-mtp.out.json").read_text())
    rb = [ref.regrets(p, t) for p, t in zip(ps, base["tokens"])]
    noise = max(x for s in rb for x in s); th = calibrated_threshold(noise)
    rm = [ref.regrets(p, t) for p, t in zip(ps, mtp["tokens"])]
    vb, vm = judge(rb, th).as_dict(), judge(rm, th).as_dict()
    out[rel] = {"threshold": th, "baseline": vb, "mtp_target": vm, "spec_counters": mtp.get("spec_counters"),
                "engine": {k: (mtp.get("engine") or {}).get(k) for k in ("backports", "kv_cache_dtype", "model_runner", "async_scheduling", "cudagraph_mode", "prefix_caching")}}
    print(rel, json.dumps(out[rel]))
Path("/tmp/tqj/judged.json").write_text(json.dumps(out, indent=1))
