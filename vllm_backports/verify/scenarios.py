"""What verify runs: batch shapes x graph modes x speculative presets. Data, no GPU."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

# ngram with a scripted drafter: the proposer vLLM builds is ngram, its drafts come from drafts.py.
# mtp: vLLM's own MTP drafter on an MTP layer built to draft what the last token points to, which
# the checkpoint's target picks about 70% of the time (model.py): every row runs the speculative
# kernels at every step, with full, partial and no acceptance; vLLM's counters report how many.
# ngram-vllm, ngram-vllm-min8: vLLM's own ngram proposer, unscripted, as the reports of #40875 /
# #56077 ran it: the release's lookup (prompt_lookup_min and _max left out: 5 and 5 in 0.17 ..
# 0.33), and the reports' workaround (prompt_lookup_min 8, which vLLM takes as the max too).
PRESETS: dict[str, dict] = {
    "ngram": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 3, "prompt_lookup_min": 1},
    "mtp": {"method": "mtp", "num_speculative_tokens": 3},
    "ngram-vllm": {"method": "ngram", "num_speculative_tokens": 3},
    "ngram-vllm-min8": {"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_min": 8},
}
SCRIPTED = frozenset({"ngram"})

# TurboQuant KV presets (vLLM's kv_cache_dtype names; the same four in 0.20 .. 0.33). vLLM 0.20.x
# refuses them on hybrid models; from 0.21 they run there, on FlashAttention 2, which vLLM picks.
TURBOQUANT = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
TURBOQUANT_ON_HYBRIDS_FROM = "0.21.0"
# vLLM 0.17.x takes FlashInfer's GDN prefill on every compute capability 9.0 GPU
# (ChunkGatedDeltaRule.__init__ in qwen3_next.py); 0.18.0 adds additional_config's
# gdn_prefill_backend, which verify sets. Before it, Hopper runs FlashInfer whatever is asked.
PREFILL_CHOICE_FROM = "0.18.0"
NEEDS_MTP_LAYER = frozenset({"mtp"})


def chooses_prefill(vllm_version: str) -> bool:
    """Whether this vLLM reads verify's GDN prefill choice (from PREFILL_CHOICE_FROM). A nightly
    or release candidate counts by its release numbers: 0.17.2rc1.devN has no choice."""
    from packaging.version import Version  # here: the GPU machine's bare python3 reads PROOFS

    return Version(Version(vllm_version).base_version) >= Version(PREFILL_CHOICE_FROM)


@dataclass(frozen=True)
class Shape:
    """How requests meet the engine. b16 sends more prompts than fit, with small token budgets,
    so prompt chunks land in batches beside speculative rows (the mixed-batch paths)."""

    name: str
    prompts: int
    max_num_seqs: int
    max_tokens: int
    max_num_batched_tokens: int | None

    def engine_spec(
        self, model: str, prompts: list[list[int]], eager: bool, tp: int, extra: dict, kind: str = "random"
    ) -> dict:
        """The engine's limits come from the shape unless the prompt set `kind` needs its own."""
        limits = PROMPT_SETS[kind]
        return {
            "model": model,
            "prompts": prompts,
            "max_num_seqs": self.max_num_seqs,
            "max_tokens": limits.max_tokens or self.max_tokens,
            "max_model_len": limits.max_model_len,
            "eager": eager,
            "tp": tp,
            "max_num_batched_tokens": limits.max_num_batched_tokens or self.max_num_batched_tokens,
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
# vLLM's model runner: the release's own choice, or V1 / V2 (engine.RUNNER_ENV; V2 is MTP's
# default from 0.29 and ngram's from 0.32).
MODEL_RUNNERS = ("default", "v1", "v2")


def switch(value: str) -> bool | None:
    return {"default": None, "on": True, "off": False}[value]


def _distinct(rng: random.Random, length: int, vocab: int, taken: list[list[int]]) -> list[int]:
    while True:
        p = [rng.randrange(2, vocab) for _ in range(length)]
        # The scripted drafter finds a row's request by prompt prefix: no prompt may begin another.
        if all(p[: len(q)] != q and q[: len(p)] != p for q in taken):
            return p


def random_prompts(count: int, vocab: int, k: int, seed: int = 1, length: int = PROMPT_LEN) -> list[list[int]]:
    """Distinct random prompts (token 0 and 1 are bos/eos and left out)."""
    rng = random.Random(seed)
    out: list[list[int]] = []
    while len(out) < count:
        out.append(_distinct(rng, length, vocab, out))
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


# tq-continuation (docs/SIBLING-BUGS.md section 3): continuation chunks that lose most of their
# context on TurboQuant's prefill fast path, which is taken when a first chunk is at least as long
# as every other prefill row's whole sequence. Lengths are set by the Mamba "align" block of
# verify's Qwen3-Next model with turboquant_k8v4 KV, read back from the engines (docs/evidence
# tq-mtp rows): 400 tokens with k=3 speculation, 368 without (bf16 KV: 160 and 144; TurboQuant's
# smaller K/V per token takes more tokens to fill a page the size of one layer's recurrent state).
# In align mode a prompt chunk that would cross the prompt's last block boundary is cut there, so
# only a whole number of blocks runs as one first chunk: first chunks of two blocks, consumers
# whose prefix covers one block and who continue, after a hit, with a short chunk beside them.
TQ_ALIGN_BLOCK = 400
TQ_FIRST_CHUNK_LEN = 2 * TQ_ALIGN_BLOCK
TQ_PREFIX_LEN = TQ_ALIGN_BLOCK + 10
TQ_SUFFIX_LEN = 12
TQ_CONTINUATION = TQ_PREFIX_LEN + TQ_SUFFIX_LEN - TQ_ALIGN_BLOCK  # tokens a consumer computes after its hit
TQ_COLD_CONSUMERS = 2
TQ_MAX_MODEL_LEN = TQ_FIRST_CHUNK_LEN + max(s.max_tokens for s in SHAPES.values())
# One whole first chunk, one consumer's continuation and sixteen verify rows of k+1 = 4 tokens: a
# first chunk is only taken whole where the budget left for it holds all of it, and a smaller
# budget would have every first chunk cut at a block boundary.
TQ_BATCHED_TOKENS = TQ_FIRST_CHUNK_LEN + TQ_CONTINUATION + 16 * 4


def tq_continuation_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    """Consumers (TQ_PREFIX_LEN shared + TQ_SUFFIX_LEN distinct tokens) and first chunks
    (TQ_FIRST_CHUNK_LEN distinct tokens), in the order the scheduler admits them (first come).
    Two cold consumers open: each computes the prefix's first block and stops at its boundary
    (align mode), which caches it; the next step continues both with TQ_CONTINUATION tokens and
    leaves a budget that takes a whole first chunk. From there first chunks and consumers
    alternate, so a consumer that hits the cached block continues beside a first chunk longer
    than its whole sequence: the batch that takes the fast path. Which steps really form is the
    scheduler's; the engine's prefix-cache counters say whether the hits came."""
    rng = random.Random(seed)
    prefix = [rng.randrange(2, vocab) for _ in range(TQ_PREFIX_LEN)]
    out: list[list[int]] = []
    while len(out) < count:
        i = len(out) - TQ_COLD_CONSUMERS
        if i >= 0 and i % 2 == 0:
            out.append(_distinct(rng, TQ_FIRST_CHUNK_LEN, vocab, out))
        else:
            out.append(prefix + _distinct(rng, TQ_SUFFIX_LEN, vocab, [q[TQ_PREFIX_LEN:] for q in out]))
    return out


# producer-consumer (docs/SIBLING-BUGS.md section 5): on 0.20 .. 0.25 an EAGLE-style drafter (MTP)
# lets a Mamba prefix hit run one align block past what full attention kept. The state that makes
# the longer hit can only come from an earlier, longer request (the scheduler caches Mamba state
# one block short of a prompt's end), so one producer of three blocks' worth opens, consumers
# sharing two blocks of its prefix follow, and the consumers admitted after the producer's
# prefill (the shape's later prompts, once rows free up) are the ones that can hit. Block sizes
# as above (160 tokens with k=3 on bf16 KV).
PC_PREFIX_LEN = 330
PC_PRODUCER_LEN = 480
PC_SUFFIX_LEN = 12
# Room for the producer, its output and a verify step's lookahead past it.
PC_MAX_MODEL_LEN = PC_PRODUCER_LEN + max(s.max_tokens for s in SHAPES.values()) + 32


def _producer_then_consumers(
    count: int, vocab: int, seed: int, prefix_len: int, producer_len: int, suffix_len: int
) -> list[list[int]]:
    """One producer (prefix_len shared + distinct tokens up to producer_len), then consumers
    (prefix_len shared + suffix_len distinct)."""
    rng = random.Random(seed)
    prefix = [rng.randrange(2, vocab) for _ in range(prefix_len)]
    out = [prefix + [rng.randrange(2, vocab) for _ in range(producer_len - prefix_len)]]
    while len(out) < count:
        out.append(prefix + _distinct(rng, suffix_len, vocab, [q[prefix_len:] for q in out]))
    return out


def producer_consumer_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    return _producer_then_consumers(count, vocab, seed, PC_PREFIX_LEN, PC_PRODUCER_LEN, PC_SUFFIX_LEN)


# prompt-tail: prefix-cache hits that leave one prompt token to compute. From 0.31 the V2 model
# runner runs such a tail, padded with placeholder drafts, as a speculative decode row
# (`v1/worker/gpu/model_runner.py:1356` and `model_states/mamba_hybrid.py:264` in 0.33.0); V2 is
# ngram's default runner from 0.32 and prefix caching hybrids' default from 0.26, so users' ngram
# engines meet it whenever a prompt ends one token past a cached block. ngram has no EAGLE block
# drop, so a hit reaches the last cached block: one producer whose prompt carries the shared
# prefix of two 160-token blocks (bf16 KV, k=3, Triton GDN prefill) and a block more, so its
# chunks end at both boundaries and cache their state; then consumers of that prefix plus one
# token. Read in 0.32.0's and 0.33.0's scheduler at 16 a batch: the producer's
# chunks take steps 1 to 3 of the 192-token budget, the first 15 consumers hit 320 in step 3
# beside its last chunk and run their token unpadded (a decode row without drafts), and the
# consumers admitted later, beside decode rows only, get 3 placeholder drafts: V2 takes both
# kinds for speculative decode rows. FlashInfer's prefill on 0.33.0 makes the align block 192.
# Run on 0.32.0 and 0.33.0 (H200, 2026-11-27): 23 of 24 requests hit 320 tokens of 321, and
# pristine and patched decoded clean (docs/evidence, tail-ngram-v2).
TAIL_PREFIX_LEN = 320
TAIL_PRODUCER_LEN = 480


def prompt_tail_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    return _producer_then_consumers(count, vocab, seed, TAIL_PREFIX_LEN, TAIL_PRODUCER_LEN, 1)


# align-shifts ([known.align-shift-copy-race], vLLM #50729): with speculation in align mode, a row
# whose step begins one token short of a block's end and accepts its one draft completes that
# block with its running state already in it, and the postprocess shifts the conv window by one row
# in place: an overlapping copy, unordered on 0.28.0. The scripted drafts land every row there
# (drafts.Script.land_on) at each block end its decode crosses: prompts of 158 tokens and 336
# output tokens cross 160, 320 and 480. Every row meets each landing, but shifts only if its draft
# is right: the first landing is the first decode step, whose draft is the plain engine's second
# token; in the first round the later ones are right only for rows still decoding what the plain
# engine did (which runs another block size, and few do: 0.28.0's series accepted 244 of 11,768
# drafts in a round, H100, 2026-12-07), and later rounds draft from the engine's own previous
# round (run.py).
# ALIGN_BLOCK is the align block of verify's Qwen3-Next model on bf16 KV with k=3 and Triton's
# GDN prefill (tq-continuation's note above); on another the count says how many landed
# (verify --count-align-shifts).
ALIGN_BLOCK = 160
ALIGN_SHIFT_PROMPT_LEN = 158
ALIGN_SHIFT_MAX_TOKENS = 336


# churn (docs/SIBLING-BUGS.md section 1): many short requests, so one finishes every few steps and
# a waiting prompt takes its freed row ahead of rows still decoding; under async scheduling with
# speculation in align mode, releases 0.19 .. 0.33 then read a row's accepted count at its old row.
CHURN_PROMPTS = 64
CHURN_MAX_TOKENS = 24


# long-chunked (#52475, docs/SIBLING-BUGS.md section 11): long prompts whose prefill runs in
# chunks, so that every prompt's later chunks are continuations reading the K/V its earlier ones
# cached (on TurboQuant KV: dequantized, through FA2's varlen_fwd) beside rows that decode with
# drafts. From 2,000 tokens up to what the tiny checkpoints' 4096 positions hold with 128 output
# tokens and a verify step's lookahead (max_position_embeddings in model.py; longer prompts would
# need a checkpoint of more positions, a new model under every earlier run). A budget of 512
# tokens a step cuts each prompt into 4 to 8 chunks and holds one whole TurboQuant align block
# (400 tokens with turboquant_k8v4 and k=3, where align mode cuts a chunk) beside 16 verify rows.
LONG_PROMPTS = 16
LONG_MIN_LEN = 2000
LONG_MAX_MODEL_LEN = 4096
LONG_MAX_LEN = LONG_MAX_MODEL_LEN - max(s.max_tokens for s in SHAPES.values()) - 32
LONG_BATCHED_TOKENS = 512


def long_chunked_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    """Distinct random prompts of LONG_MIN_LEN to LONG_MAX_LEN tokens, evenly spread, shortest first."""
    rng = random.Random(seed)
    step = (LONG_MAX_LEN - LONG_MIN_LEN) // max(1, count - 1)
    out: list[list[int]] = []
    while len(out) < count:
        length = LONG_MAX_LEN if len(out) == count - 1 else LONG_MIN_LEN + len(out) * step
        out.append(_distinct(rng, length, vocab, out))
    return out


# one-token (#51565, docs/SIBLING-BUGS.md section 11): every fourth prompt exactly one token, the
# rest random 40-token ones, churned as `churn` is (64 requests of 24 tokens), so that one-token
# prompts are admitted into freed rows beside rows that decode with drafts. Before 0.31.0 the GDN
# builder takes a one-token first chunk for a decode, which reads its state slot as it finds it:
# stale only where a finished request held the slot, so its proof runs in a KV pool small enough
# that freed blocks are handed out again (--kv-cache-gib 0.02; with 2 GiB none is handed out
# twice in a run, and a fresh slot holds zeros, the right initial state). The bug needs no drafts:
# where it is, the plain baseline decodes those prompts wrong too, and verify reports a failed
# calibration, the baseline row's errors the sign. No prompt begins another (_distinct): no other
# prompt starts with a one-token prompt's token, and the scripted drafter, which keys requests by
# as many head tokens as the shortest prompt has, keys them by their first token here.
ONE_TOKEN_EVERY = 4


def one_token_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    out: list[list[int]] = []
    while len(out) < count:
        length = 1 if len(out) % ONE_TOKEN_EVERY == ONE_TOKEN_EVERY - 1 else PROMPT_LEN
        out.append(_distinct(rng, length, vocab, out))
    return out


# tool-calls (#40875, #56077, docs/SIBLING-BUGS.md section 11): prompts shaped like a chat's tool
# calls, for vLLM's own ngram proposer, unscripted (presets ngram-vllm, ngram-vllm-min8). The
# tiny model has random weights and no tokenizer: a "tool call" here is only a token pattern, a
# fixed skeleton of token ids standing for the markup, JSON punctuation and keys of
# `<tool_call> {"name": "...", "arguments": {"...": "...", ...}} </tool_call>`, repeated with
# names, keys and values that vary, after a distinct random head. Each prompt ends inside a new
# call, on an 8-token n-gram its earlier calls repeat. vLLM's ngram proposer reads the context with
# the step's sampled token appended (gpu_model_runner's propose_draft_token_ids, 0.28.0), so even
# the first draft needs the model's own token to continue the pattern, and later ones a greedy
# output that falls into a loop: on the Qwen3-Next tiny model vLLM drafted once on 0.22.0 and 0.23.0,
# never on 0.26.0 or 0.28.0 (H100, 2026-12-06). The rows' vLLM counters say how many came.
TOOL_HEAD_LEN = 16
TOOL_CALLS = (4, 7)  # calls a prompt holds, at least and at most
TOOL_NAMES, TOOL_KEYS = 4, 6
# <tool_call> </tool_call> newline { } " : , name arguments
TOOL_SYNTAX = 10


def tool_call_prompts(count: int, vocab: int, k: int, seed: int = 1) -> list[list[int]]:
    rng = random.Random(seed)
    ids = rng.sample(range(2, vocab), TOOL_SYNTAX + 2 * TOOL_NAMES + TOOL_KEYS)
    call, end, nl, lb, rb, q, colon, comma, name, args = ids[:TOOL_SYNTAX]
    names = [ids[TOOL_SYNTAX + 2 * i : TOOL_SYNTAX + 2 * i + 2] for i in range(TOOL_NAMES)]
    keys = ids[TOOL_SYNTAX + 2 * TOOL_NAMES :]
    opener = [nl, call, lb, q, name, q, colon, q]

    def one_call() -> list[int]:
        pairs = []
        for key in rng.sample(keys, rng.randint(1, 3)):
            value = [rng.randrange(2, vocab) for _ in range(rng.randint(1, 3))]
            pairs.append([q, key, q, colon, q, *value, q])
        arguments = [t for i, pair in enumerate(pairs) for t in ([comma] if i else []) + pair]
        return [*opener, *rng.choice(names), q, comma, q, args, q, colon, lb, *arguments, rb, rb, nl, end]

    out: list[list[int]] = []
    while len(out) < count:
        head = _distinct(rng, TOOL_HEAD_LEN, vocab, [p[:TOOL_HEAD_LEN] for p in out])
        calls = [t for _ in range(rng.randint(*TOOL_CALLS)) for t in one_call()]
        out.append(head + calls + opener)
    return out


@dataclass(frozen=True)
class PromptSet:
    """How prompts are made, and what the engine needs to run them as intended."""

    build: Callable[[int, int, int, int], list[list[int]]]  # (count, vocab, k, seed)
    count: int | None = None  # None: the shape's own number of prompts
    max_tokens: int | None = None  # None: the shape's own
    max_model_len: int = MAX_MODEL_LEN
    max_num_batched_tokens: int | None = None  # None: the shape's own budget
    requires_prefix_caching: bool = False
    # Its batches corrupt a TurboQuant engine without speculation too: a baseline on bf16 KV
    # calibrates, and the TurboQuant one is judged like any other run (run.calibrates_on_auto).
    calibrate_on_auto: bool = False
    # The align block the scripted drafts land rows on (drafts.Script.land_on); 0: they do not.
    land_drafts_on: int = 0


PROMPT_SETS: dict[str, PromptSet] = {
    "random": PromptSet(random_prompts),
    "shared-prefix": PromptSet(shared_prefix_prompts),
    "k-plus-1": PromptSet(k_plus_one_prompts),
    "tq-continuation": PromptSet(
        tq_continuation_prompts,
        max_model_len=TQ_MAX_MODEL_LEN,
        max_num_batched_tokens=TQ_BATCHED_TOKENS,
        requires_prefix_caching=True,
        calibrate_on_auto=True,
    ),
    "producer-consumer": PromptSet(
        producer_consumer_prompts, max_model_len=PC_MAX_MODEL_LEN, requires_prefix_caching=True
    ),
    "churn": PromptSet(random_prompts, count=CHURN_PROMPTS, max_tokens=CHURN_MAX_TOKENS),
    "prompt-tail": PromptSet(prompt_tail_prompts, max_model_len=PC_MAX_MODEL_LEN, requires_prefix_caching=True),
    "long-chunked": PromptSet(
        long_chunked_prompts,
        count=LONG_PROMPTS,
        max_model_len=LONG_MAX_MODEL_LEN,
        max_num_batched_tokens=LONG_BATCHED_TOKENS,
    ),
    "one-token": PromptSet(one_token_prompts, count=CHURN_PROMPTS, max_tokens=CHURN_MAX_TOKENS),
    "tool-calls": PromptSet(tool_call_prompts),
    "align-shifts": PromptSet(
        partial(random_prompts, length=ALIGN_SHIFT_PROMPT_LEN),
        max_tokens=ALIGN_SHIFT_MAX_TOKENS,
        requires_prefix_caching=True,
        land_drafts_on=ALIGN_BLOCK,
    ),
}


def prompts(count: int, vocab: int, seed: int = 1, kind: str = "random", k: int = 3) -> list[list[int]]:
    """The prompt set's own count where it has one, else `count` (the shape's)."""
    return PROMPT_SETS[kind].build(PROMPT_SETS[kind].count or count, vocab, k, seed)
