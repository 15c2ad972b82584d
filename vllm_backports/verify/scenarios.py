"""What verify runs: batch shapes x graph modes x speculative presets. Data, no GPU."""

from __future__ import annotations

import random
from dataclasses import dataclass

# ngram with a scripted drafter: the proposer vLLM builds is ngram, its drafts come from drafts.py.
# mtp: vLLM's own MTP drafter on an MTP layer built to draft what the last token points to, which
# the checkpoint's target picks about 70% of the time (model.py): every row runs the speculative
# kernels at every step, with full, partial and no acceptance; vLLM's counters report how many.
PRESETS: dict[str, dict] = {
    "ngram": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1},
    "mtp": {"method": "mtp", "num_speculative_tokens": 3},
}
SCRIPTED = frozenset({"ngram"})

# TurboQuant KV presets (vLLM's kv_cache_dtype names; the same four in 0.20 .. 0.33). vLLM 0.20.x
# refuses them on hybrid models; from 0.21 they run there, on FlashAttention 2, which vLLM picks.
TURBOQUANT = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
TURBOQUANT_ON_HYBRIDS_FROM = "0.21.0"
NEEDS_MTP_LAYER = frozenset({"mtp"})


@dataclass(frozen=True)
class Shape:
    """How requests meet the engine. b16 sends more prompts than fit, with small token budgets,
    so prompt chunks land in batches beside speculative rows (the mixed-batch paths)."""

    name: str
    prompts: int
    max_num_seqs: int
    max_tokens: int
    max_num_batched_tokens: int | None

    def engine_spec(self, model: str, prompts: list[list[int]], eager: bool, tp: int, extra: dict) -> dict:
        return {"model": model, "prompts": prompts, "max_num_seqs": self.max_num_seqs,
                "max_tokens": self.max_tokens, "max_model_len": 512, "eager": eager, "tp": tp,
                "max_num_batched_tokens": self.max_num_batched_tokens, **extra}


SHAPES: dict[int, Shape] = {
    # One at a time, a speculative run parts from the baseline at the first bf16 near-tie and its
    # scripted drafts stop matching from there; many short requests keep transitions coming.
    1: Shape("1 a batch", prompts=12, max_num_seqs=1, max_tokens=48, max_num_batched_tokens=None),
    16: Shape("16 a batch", prompts=24, max_num_seqs=16, max_tokens=128, max_num_batched_tokens=192),
}
PROMPT_LEN = 40


def prompts(count: int, vocab: int, seed: int = 1) -> list[list[int]]:
    """Distinct random prompts (token 0 and 1 are bos/eos and left out)."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    while len(out) < count:
        p = [rng.randrange(2, vocab) for _ in range(PROMPT_LEN)]
        if p not in out:
            out.append(p)
    return out
