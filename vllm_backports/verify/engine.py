"""One engine run, in its own process: `python -m vllm_backports.verify.engine SPEC.json OUT.json`.

A fresh process per engine frees the GPU between runs and lets the scripted drafter be installed
before vLLM builds its workers (they fork from here, so they inherit it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time


def run(spec: dict) -> dict:
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "fork")
    # From 0.21 vLLM imports FlashInfer for its sampler by default; greedy decoding never uses it,
    # and an install without FlashInfer (a slim one) would otherwise fail at engine start.
    if importlib.util.find_spec("flashinfer") is None:
        os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
    from . import drafts

    scripted = drafts.install_from_env()
    from vllm import LLM, SamplingParams

    kwargs = {
        "model": spec["model"], "skip_tokenizer_init": True, "dtype": "bfloat16", "seed": 0,
        "max_model_len": spec["max_model_len"], "max_num_seqs": spec["max_num_seqs"],
        "gpu_memory_utilization": spec.get("gpu_memory_utilization", 0.35),
        "tensor_parallel_size": spec.get("tp", 1), "enforce_eager": spec["eager"],
        "additional_config": spec.get("additional_config") or {},
    }
    if spec.get("max_num_batched_tokens"):
        kwargs["max_num_batched_tokens"] = spec["max_num_batched_tokens"]
    if not spec["eager"]:
        kwargs["compilation_config"] = {"cudagraph_capture_sizes": [1, 2, 4, 8, 16, 32, 64]}
    if spec.get("speculative"):
        kwargs["speculative_config"] = spec["speculative"]
        kwargs["disable_log_stats"] = False  # the spec-decode counters read below
    if spec.get("kv_cache_dtype"):
        kwargs["kv_cache_dtype"] = spec["kv_cache_dtype"]
    started = time.perf_counter()
    llm = LLM(**kwargs)
    ready = time.perf_counter()
    params = SamplingParams(temperature=0.0, max_tokens=spec["max_tokens"], ignore_eos=True)
    batch = [{"prompt_token_ids": p} for p in spec["prompts"]]
    outs = llm.generate(batch, params, use_tqdm=False)
    done = time.perf_counter()
    tokens = [list(o.outputs[0].token_ids) for o in outs]
    # Benchmarks time further identical rounds on the warm engine (the first pays for warm-up).
    counters = spec_counters(llm)
    rounds, accepted, previous = [], [], tokens
    for _ in range(spec.get("timed_rounds", 0)):
        if scripted:
            drafts.reset(previous if spec.get("drafts_follow_own_output") else None)
        before = spec_counters(llm) or {}
        t0 = time.perf_counter()
        again = llm.generate(batch, params, use_tqdm=False)
        rounds.append(sum(len(o.outputs[0].token_ids) for o in again) / (time.perf_counter() - t0))
        previous = [list(o.outputs[0].token_ids) for o in again]
        after = spec_counters(llm) or {}
        accepted.append(after.get("num_accepted_tokens", 0) - before.get("num_accepted_tokens", 0))
    return {"tokens": tokens, "scripted": scripted, "spec_counters": counters, "start_s": ready - started,
            "generate_s": done - ready, "tokens_per_s": sum(map(len, tokens)) / (done - ready),
            "timed_rounds_tokens_per_s": rounds, "timed_rounds_accepted": accepted}


def spec_counters(llm) -> dict | None:
    """vLLM's speculative-decoding counters (drafts, draft tokens, accepted tokens), if it has them."""
    try:
        metrics = llm.get_metrics()
    except Exception:  # an older or newer metrics API: the counters are a report, not a verdict
        return None
    out = {m.name.removeprefix("vllm:spec_decode_"): m.value for m in metrics
           if m.name.startswith("vllm:spec_decode_") and isinstance(getattr(m, "value", None), int | float)}
    return out or None


def main(argv: list[str]) -> int:
    spec_path, out_path = argv
    with open(spec_path) as f:
        spec = json.load(f)
    result = run(spec)
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
