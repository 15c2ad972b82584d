"""GPU scenario: TurboQuant KV + ngram speculative decoding, full CUDA graphs on vs off.

Run on a machine with CUDA and a real vLLM 0.20.x-0.26.0 (not collected by pytest):

    python tests/gpu/turboquant_graphs.py --out results.json --mode unpatched-graphs
    python tests/gpu/turboquant_graphs.py --out results.json --mode reference
    python tests/gpu/turboquant_graphs.py --out results.json --mode patched-graphs   # after apply.py

The model is a tiny dense Qwen3 with random weights written locally by transformers (vLLM 0.20.0
refuses TurboQuant on hybrid models). The reference is the same engine with torch.compile on and
CUDA graphs off, which the #40831 reporters found correct; same kernels and the same inductor
graph, so outputs may differ from it only where graph replay changes what is computed.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import click

MODEL_DIR = Path(os.environ.get("TQ_MODEL_DIR", "/tmp/tiny-qwen3-tq128"))
PROMPTS, PROMPT_LEN, MAX_TOKENS, VOCAB = 32, 96, 128, 512


def write_model() -> None:
    if (MODEL_DIR / "config.json").exists():
        return
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=VOCAB, hidden_size=256, intermediate_size=512, num_hidden_layers=8,
                         num_attention_heads=4, num_key_value_heads=2, head_dim=128, max_position_embeddings=2048,
                         tie_word_embeddings=False, torch_dtype="bfloat16")
    model = Qwen3ForCausalLM(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(20.0)  # confident logits: greedy choices far from ties
    model.to(torch.bfloat16).save_pretrained(MODEL_DIR)


def prompts() -> list[list[int]]:
    rng = random.Random(1)
    out = []
    for _ in range(PROMPTS):
        motif = [rng.randrange(VOCAB) for _ in range(12)]
        body = (motif * 8)[: PROMPT_LEN - 16] + [rng.randrange(VOCAB) for _ in range(16)]
        out.append(body)
    return out


@click.command()
@click.option("--mode", type=click.Choice(["unpatched-graphs", "reference", "patched-graphs"]), required=True)
@click.option("--out", type=click.Path(path_type=Path), required=True)
@click.option("--kv", default="turboquant_k8v4")
def main(mode: str, out: Path, kv: str) -> None:
    write_model()
    from vllm import LLM, SamplingParams
    from vllm.v1.attention.backends.turboquant_attn import TurboQuantMetadataBuilder

    compilation = {"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64]}
    if mode == "reference":
        compilation["cudagraph_mode"] = "NONE"
    llm = LLM(model=str(MODEL_DIR), skip_tokenizer_init=True, dtype="bfloat16", kv_cache_dtype=kv,
              max_model_len=1024, max_num_seqs=16, gpu_memory_utilization=0.3, seed=0,
              compilation_config=compilation,
              speculative_config={"method": "ngram", "num_speculative_tokens": 3,
                                  "prompt_lookup_max": 3, "prompt_lookup_min": 1})
    params = SamplingParams(temperature=0.0, max_tokens=MAX_TOKENS, ignore_eos=True)
    batch = [{"prompt_token_ids": p} for p in prompts()]
    llm.generate(batch[:2], params)  # warm-up
    start = time.perf_counter()
    results = llm.generate(batch, params)
    elapsed = time.perf_counter() - start
    tokens = [list(r.outputs[0].token_ids) for r in results]
    record = {"mode": mode, "kv_cache_dtype": kv, "seconds": elapsed,
              "tokens_per_s": sum(map(len, tokens)) / elapsed,
              "cudagraph_support": TurboQuantMetadataBuilder._cudagraph_support.name,
              "tokens": tokens}
    try:
        record["metrics"] = {m.name: getattr(m, "value", None) for m in llm.get_metrics()
                             if "spec_decode" in m.name and hasattr(m, "value")}
    except Exception as exc:  # metrics API differs between releases; the tokens are what matter
        record["metrics_error"] = repr(exc)
    data = json.loads(out.read_text()) if out.exists() else {}
    data[mode] = record
    out.write_text(json.dumps(data))
    print(json.dumps({k: v for k, v in record.items() if k != "tokens"}))


if __name__ == "__main__":
    main()
