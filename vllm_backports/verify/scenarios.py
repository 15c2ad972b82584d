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
        return {
            "model": model,
            "prompts": prompts,
            "max_num_seqs": self.max_num_seqs,
            "max_tokens": self.max_tokens,
            "max_model_len": MAX_MODEL_LEN,
            "eager": eager,
            "tp": tp,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            **extra,
        }


SHAPES: dict[int, Shape] = {
    # One at a time, a speculative run parts from the baseline at the first bf16 near-tie and its
    # scripted drafts stop matching from there; many short requests keep transitions coming.
    1: Shape("1 a batch", prompts=12, max_num_seqs=1, max_tokens=48, max_num_batched_tokens=None),
    16: Shape("16 a batch", prompts=24, max_num_seqs=16, max_tokens=128, max_num_batched_tokens=192),
}
PROMPT_LEN = 40
MAX_MODEL_LEN = 512
# Long enough to fill whole prefix-cache blocks of verify's model in Mamba "align" mode (vLLM sizes
# a hybrid's attention block to hold one layer's recurrent state: 144 tokens for this model), short
# enough that prefix, suffix and 128 output tokens stay inside MAX_MODEL_LEN.
SHARED_PREFIX_LEN = 300
SHARED_SUFFIX_LEN = 12

# Engine switches a scenario may set; "default" leaves the release's own choice, which the
# evidence then reads back from the engine.
SWITCHES = ("default", "on", "off")


def switch(value: str) -> bool | None:
    return {"default": None, "on": True, "off": False}[value]


def _distinct(rng: random.Random, length: int, vocab: int, taken: list[list[int]]) -> list[int]:
    while True:
        p = [rng.randrange(2, vocab) for _ in range(length)]
        # The scripted drafter finds a row's request by prompt prefix: no prompt may begin another.
        if all(p[: len(q)] != q and q[: len(p)] != p for q in taken):
            return p


def random_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    """Distinct random prompts (token 0 and 1 are bos/eos and left out)."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    while len(out) < count:
        out.append(_distinct(rng, PROMPT_LEN, vocab, out))
    return out


def shared_prefix_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    """One long prefix, a distinct suffix each: with prefix caching on, every request after the
    first prefill reads the prefix's KV blocks and recurrent state from the cache."""
    rng = random.Random(seed)
    prefix = [rng.randrange(2, vocab) for _ in range(SHARED_PREFIX_LEN)]
    out: list[list[int]] = []
    while len(out) < count:
        out.append(prefix + _distinct(rng, SHARED_SUFFIX_LEN, vocab, [q[SHARED_PREFIX_LEN:] for q in out]))
    return out


def k_plus_one_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    """Every other prompt exactly k+1 tokens long (a prefill the size of a verify row), the rest
    PROMPT_LEN: both kinds meet in one batch."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    while len(out) < count:
        out.append(_distinct(rng, k + 1 if len(out) % 2 == 0 else PROMPT_LEN, vocab, out))
    return out


PROMPT_SETS = {"random": random_prompts, "shared-prefix": shared_prefix_prompts, "k-plus-1": k_plus_one_prompts}


def prompts(count: int, vocab: int, seed: int = 1, kind: str = "random", k: int = 3) -> list[list[int]]:
    return PROMPT_SETS[kind](count, vocab, k, seed)
