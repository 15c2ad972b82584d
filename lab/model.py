"""`verify --model` on the tiny checkpoint against the float32 verify of the same preset.

    REL=0.31.0 python3 -m lab.steps model [PRESET...]   # default mtp ngram
    REL=0.31.0 python3 -m lab.steps poll 500
    REL=0.31.0 python3 -m lab.steps model-compare

`model` writes the tiny checkpoint with a tokenizer (the same weights as the tiny model's verify)
and starts, with bg, `verify --model` on it, judged by vLLM's own teacher-forced reference and, on
the same outputs, by float32 transformers (--float32-reference), beside the tiny model's float32
verify of the same preset: both on the fix site with the pristine one as control (four at once on
one GPU, a fixed KV size each). Prompts, output length and token budget as the float32 verify's
shape. A control whose runs fail (the agreement on errors needs one): CONTROL=less-ID (default
raw), BATCH (default 16) and MODEL_PROMPTS=SET, one of the tiny model's prompt sets, which --model
reads as a JSONL file of token ids (the tokenizer's vocabulary may be smaller than the model's, so
the ids are drawn anew, as many and as long); e.g. on 0.28.0 CONTROL=less-spec-prefill-decode-graph
BATCH=1 MODEL_PROMPTS=k-plus-1 ... model ngram mtp. Start it in a call of its own, then poll: on
2026-11-27 (0.28.0, H100) a call that ran install.sh, setup and `model ngram | tail` ran into its
300 s limit with both verifies started and unfinished, so nothing came back from it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from .steps import PY, Ctx
from .verifies import bg

_PROMPTS = """import json, sys
from transformers import AutoTokenizer
from vllm_backports.verify import scenarios
kind, count = sys.argv[2], int(sys.argv[3])
own = scenarios.PROMPT_SETS[kind]
if own != scenarios.PromptSet(own.build):
    sys.exit(f"MODEL_PROMPTS={kind}: a prompt set with engine settings of its own, which --model does not take")
vocab = len(AutoTokenizer.from_pretrained(sys.argv[1], local_files_only=True))
for ids in scenarios.prompts(count, vocab, kind=kind, k=3):
    print(json.dumps({"prompt_token_ids": ids, "group": kind}))
"""


def model(ctx: Ctx, presets: list[str]) -> int:
    ck = Path(f"/tmp/tiny-ck-{ctx.rel}")
    fix_env = {**os.environ, "PYTHONPATH": str(ctx.site["fix"])}
    cmd = [PY, "-m", "vllm_backports.verify.tokenizer", str(ck), "--mtp"]
    print(f"tiny checkpoint: exit {subprocess.run(cmd, stdout=subprocess.DEVNULL, env=fix_env).returncode}", flush=True)
    name = os.environ.get("CONTROL", "raw")
    control = ctx.site.get(name)
    if control is None or not control.is_dir():
        print(f"no control site {name} for {ctx.rel}")
        return 1
    batch = os.environ.get("BATCH", "16")
    common = ["--mode", "graphs", "--batch", batch, "--prefill-backend", os.environ.get("PREFILL", "triton")]
    common += ["--kv-cache-gib", "2", "--gpu-memory-utilization", "0.08", "--control", str(control)]
    # --model's engine as the float32 verify's shape has it (scenarios.SHAPES), prompts included
    from vllm_backports.verify.scenarios import SHAPES

    shape = SHAPES.get(int(batch)) if batch.isdigit() else None
    if shape is None:
        print(f"no shape of {batch} a batch")
        return 1
    mp = ["--max-tokens", str(shape.max_tokens)]
    if shape.max_num_batched_tokens:
        mp += ["--max-num-batched-tokens", str(shape.max_num_batched_tokens)]
    fp: list[str] = []
    kind = os.environ.get("MODEL_PROMPTS", "")
    if kind:
        # the tiny model's set at the presets' k (3) and the shape's count, token ids within the
        # tokenizer's vocabulary; a set with engine settings of its own --model would not take
        jsonl = Path(f"{ck}.prompts.jsonl")
        with open(jsonl, "w") as f:
            args = [PY, "-c", _PROMPTS, str(ck), kind, str(shape.prompts)]
            if subprocess.run(args, stdout=f, env=fix_env).returncode != 0:
                return 1
        mp += ["--prompts", str(jsonl)]
        fp = ["--prompts", kind]
    for preset in presets or ["mtp", "ngram"]:
        bg(ctx, [f"model-{preset}", "--model", str(ck), "--float32-reference", "--preset", preset, *mp, *common])
        bg(ctx, [f"f32-{preset}", "--preset", preset, *fp, *common])
    return 0


def _verdicts(d: dict) -> dict[tuple[str, str], str]:
    return {
        (r["scenario"], r["site"]): "crashed" if r.get("crashed") else ("errors" if r["errors"] else "clean")
        for r in d.get("rows", [])
        if r["scenario"] != "baseline"
    }


def model_compare(ctx: Ctx, _args: list[str]) -> int:
    """After model and poll: every verdict of the two references on the same outputs, and of verify
    --model beside the float32 verify, per preset and site (target, control)."""
    ok, errors = True, False
    for path in sorted(ctx.res.glob("model-*.json")):
        preset = path.name[len("model-") : -len(".json")]
        try:
            m = json.loads(path.read_text())
            f = json.loads((ctx.res / f"f32-{preset}.json").read_text())
        except (OSError, ValueError) as exc:
            print(f"{preset}: no result ({exc})")
            ok = False
            continue
        cross = m.get("float32") or {}
        print(
            f"== {preset}: --model calibrated {m.get('calibrated')} (threshold {m.get('threshold')}, worst "
            f"{m.get('baseline_worst_regret')}), float32 on the same outputs calibrated {cross.get('calibrated')} "
            f"(threshold {cross.get('threshold')}, worst {cross.get('baseline_worst_regret')}); float32 verify "
            f"calibrated {f.get('calibrated')}; proofs: --model {m.get('proof')!r}, float32 verify {f.get('proof')!r}"
        )
        for p in cross.get("rows", []):
            print(
                f"  {p['scenario']}/{p['site']}: vLLM reference {p['errors']} errors (worst {p['worst_regret']}), "
                f"float32 on the same outputs {p['float32_errors']} (worst {p['float32_worst_regret']}): "
                + ("agree" if p["agrees"] else "DISAGREE")
            )
        mv, fv = _verdicts(m), _verdicts(f)
        for key in sorted(set(mv) | set(fv)):
            same = mv.get(key) == fv.get(key)
            said = f"  {key[0]}/{key[1]}: --model {mv.get(key)}, float32 verify {fv.get(key)}"
            print(said + ("" if same else "  (differs)"))
        ok &= bool(cross.get("agree")) and bool(m.get("calibrated")) and bool(f.get("calibrated"))
        errors |= any(p["errors"] and p["float32_errors"] for p in cross.get("rows", []))
    if not ok:
        print("agreement NOT shown (see above)")
    elif not errors:
        print("the two references agree, on clean runs only: no run had errors to agree on")
    else:
        print("the two references agree on every verdict, errors and clean runs")
    return 0
