"""Prompt sets and engine switches of verify's scenarios (data only, no GPU)."""

from __future__ import annotations

import pytest

from vllm_backports.verify import scenarios


@pytest.mark.parametrize("kind", sorted(scenarios.PROMPT_SETS))
def test_no_prompt_begins_another_so_the_scripted_drafter_finds_each_request(kind):
    ps = scenarios.prompts(24, 2048, kind=kind, k=3)
    assert len(ps) == (scenarios.PROMPT_SETS[kind].count or 24)
    for i, p in enumerate(ps):
        assert all(2 <= t < 2048 for t in p)
        for j, q in enumerate(ps):
            if i != j:
                assert p[: len(q)] != q


def test_random_prompts_are_the_ones_earlier_runs_used():
    # The recorded GPU runs drew each prompt with one loop of randrange per prompt; the prefix
    # check must not change the stream for prompts of one length.
    import random

    rng = random.Random(1)
    first = [rng.randrange(2, 2048) for _ in range(scenarios.PROMPT_LEN)]
    assert scenarios.prompts(3, 2048)[0] == first


def test_shared_prefix_prompts_share_whole_cache_blocks_and_fit_the_model_length():
    ps = scenarios.prompts(24, 2048, kind="shared-prefix")
    prefix = ps[0][: scenarios.SHARED_PREFIX_LEN]
    assert all(p[: scenarios.SHARED_PREFIX_LEN] == prefix for p in ps)
    assert len({tuple(p) for p in ps}) == 24
    longest = max(s.max_tokens for s in scenarios.SHAPES.values())
    assert max(map(len, ps)) + longest <= scenarios.MAX_MODEL_LEN
    assert scenarios.SHARED_PREFIX_LEN >= 2 * 144  # two of align mode's blocks for verify's model


def test_k_plus_one_prompts_alternate_with_long_ones():
    ps = scenarios.prompts(6, 2048, kind="k-plus-1", k=3)
    assert [len(p) for p in ps] == [4, 40, 4, 40, 4, 40]


def test_switches_leave_the_release_default_alone():
    assert scenarios.switch("default") is None
    assert scenarios.switch("on") is True and scenarios.switch("off") is False


# Engine specs of the sets that ran before PromptSet existed, hashed from that code: prompts and
# limits must stay what the recorded GPU runs used.
EARLIER_SPECS = {
    ("random", 1): "46c9775a6133a425",
    ("random", 16): "6a14eedff6aa9466",
    ("shared-prefix", 1): "5bfa45319bfdba6e",
    ("shared-prefix", 16): "5bca053209ae8909",
    ("k-plus-1", 1): "3c45228240f5f124",
    ("k-plus-1", 16): "2c8a146f5158b905",
}


@pytest.mark.parametrize(("kind", "batch"), sorted(EARLIER_SPECS))
def test_earlier_prompt_sets_give_the_engine_specs_they_always_gave(kind, batch):
    import hashlib
    import json

    shape = scenarios.SHAPES[batch]
    spec = shape.engine_spec("m", scenarios.prompts(shape.prompts, 2048, kind=kind, k=3), False, 1, {"x": 1}, kind)
    assert hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16] == EARLIER_SPECS[(kind, batch)]
    assert spec["max_model_len"] == scenarios.MAX_MODEL_LEN == 512
    assert spec["max_num_batched_tokens"] == shape.max_num_batched_tokens


def test_which_prompt_sets_need_prefix_caching_and_their_own_limits():
    sets = scenarios.PROMPT_SETS
    assert {k for k, s in sets.items() if s.requires_prefix_caching} == {
        "tq-continuation",
        "producer-consumer",
        "prompt-tail",
        "align-shifts",
    }
    assert {k for k, s in sets.items() if s.calibrate_on_auto} == {"tq-continuation"}
    assert {k for k, s in sets.items() if s.max_num_batched_tokens} == {"tq-continuation", "long-chunked"}
    assert {k for k, s in sets.items() if s.max_model_len != scenarios.MAX_MODEL_LEN} == {
        "tq-continuation",
        "producer-consumer",
        "prompt-tail",
        "long-chunked",
    }
    assert {k for k, s in sets.items() if s.count or s.max_tokens} == {"churn", "one-token", "long-chunked", "align-shifts"}
    assert {k for k, s in sets.items() if s.land_drafts_on} == {"align-shifts"}


def test_align_shift_rows_cross_three_block_ends_inside_the_model_length():
    ps = scenarios.PROMPT_SETS["align-shifts"]
    spec = scenarios.SHAPES[16].engine_spec("m", scenarios.prompts(24, 2048, kind="align-shifts", k=3), False, 1, {},
                                            "align-shifts")
    lengths = {len(p) for p in spec["prompts"]}
    assert lengths == {scenarios.ALIGN_SHIFT_PROMPT_LEN}
    ends = range(ps.land_drafts_on, scenarios.ALIGN_SHIFT_PROMPT_LEN + spec["max_tokens"], ps.land_drafts_on)
    assert len(ends) == 3 and min(lengths) < ends[0]
    # the first landing is the first decode step: the prompt and its first token are one short of
    # the block's end, so its draft is the plain engine's second token
    assert scenarios.ALIGN_SHIFT_PROMPT_LEN + 1 == ends[0] - 1
    assert scenarios.ALIGN_SHIFT_PROMPT_LEN + spec["max_tokens"] + 3 <= spec["max_model_len"]  # k=3 lookahead


@pytest.mark.parametrize("batch", sorted(scenarios.SHAPES))
def test_churn_sends_many_short_requests_through_the_shapes_rows(batch):
    shape = scenarios.SHAPES[batch]
    ps = scenarios.prompts(shape.prompts, 2048, kind="churn", k=3)
    spec = shape.engine_spec("m", ps, False, 1, {}, "churn")
    assert len(ps) == 64 and spec["max_tokens"] == 24
    # the same 40-token prompts as random, more of them
    assert ps[: shape.prompts] == scenarios.prompts(shape.prompts, 2048, k=3)
    assert spec["max_num_seqs"] == shape.max_num_seqs and spec["max_num_batched_tokens"] == shape.max_num_batched_tokens


def test_producer_consumer_opens_with_a_longer_producer_of_the_consumers_prefix():
    ps = scenarios.prompts(24, 2048, kind="producer-consumer", k=3)
    n = scenarios.PC_PREFIX_LEN
    assert [len(p) for p in ps] == [480] + [342] * 23
    assert all(p[:n] == ps[0][:n] for p in ps)
    assert len({tuple(p[n:]) for p in ps}) == 24
    # 160-token align blocks (bf16 KV, k=3): the producer's prompt caches Mamba state at two block
    # ends the consumers' prefix covers, the consumers' own only at the first
    block = 160
    assert (480 // block - 1) * block == 320 and (342 // block - 1) * block == 160 and n >= 2 * block
    spec = scenarios.SHAPES[16].engine_spec("m", ps, False, 1, {}, "producer-consumer")
    assert 480 + spec["max_tokens"] <= spec["max_model_len"] == 640


@pytest.mark.parametrize("batch", sorted(scenarios.SHAPES))
def test_tq_continuation_engines_get_the_prompt_sets_limits(batch):
    shape = scenarios.SHAPES[batch]
    ps = scenarios.prompts(shape.prompts, 2048, kind="tq-continuation", k=3)
    spec = shape.engine_spec("m", ps, True, 1, {}, "tq-continuation")
    assert spec["max_model_len"] == 928 and spec["max_num_batched_tokens"] == 886
    assert max(map(len, ps)) + shape.max_tokens <= spec["max_model_len"]


def test_tq_continuation_shapes_fit_the_turboquant_align_block():
    block = scenarios.TQ_ALIGN_BLOCK
    assert block == 400  # turboquant_k8v4, k=3, read back from the engines (docs/evidence tq-mtp rows)
    # a first chunk is a whole number of blocks, so align mode runs it as one chunk
    assert scenarios.TQ_FIRST_CHUNK_LEN % block == 0
    consumer = scenarios.TQ_PREFIX_LEN + scenarios.TQ_SUFFIX_LEN
    # a consumer's hit is the prefix's one whole block; it continues with a short chunk of a
    # sequence no longer than a first chunk, so the fast-path test holds beside one
    hit = scenarios.TQ_PREFIX_LEN // block * block
    assert hit == block and consumer - hit == scenarios.TQ_CONTINUATION == 22
    assert consumer <= scenarios.TQ_FIRST_CHUNK_LEN
    # budget: one whole first chunk, one continuation, sixteen verify rows of k+1
    assert scenarios.TQ_BATCHED_TOKENS == 800 + 22 + 16 * 4


def test_tq_continuation_orders_cold_consumers_then_first_chunks_and_consumers_alternating():
    ps = scenarios.prompts(24, 2048, kind="tq-continuation", k=3)
    consumer, first = scenarios.TQ_PREFIX_LEN + scenarios.TQ_SUFFIX_LEN, scenarios.TQ_FIRST_CHUNK_LEN
    assert [len(p) for p in ps] == [consumer, consumer] + [first, consumer] * 11
    consumers = [p for p in ps if len(p) == consumer]
    prefix = consumers[0][: scenarios.TQ_PREFIX_LEN]
    assert all(p[: scenarios.TQ_PREFIX_LEN] == prefix for p in consumers)
    assert len({tuple(p[scenarios.TQ_PREFIX_LEN :]) for p in consumers}) == len(consumers)
    # first chunks share nothing with the prefix's cached block
    assert all(p[: scenarios.TQ_ALIGN_BLOCK] != prefix[: scenarios.TQ_ALIGN_BLOCK] for p in ps if len(p) == first)
    assert scenarios.prompts(12, 2048, kind="tq-continuation")[:3] == ps[:3]  # batch 1: the same opening


def test_prompt_tail_consumers_end_one_token_past_the_producers_cached_blocks():
    ps = scenarios.prompts(24, 2048, kind="prompt-tail", k=3)
    n = scenarios.TAIL_PREFIX_LEN
    assert [len(p) for p in ps] == [480] + [321] * 23
    assert all(p[:n] == ps[0][:n] for p in ps)
    assert len({tuple(p[n:]) for p in ps}) == 24
    # 160-token align blocks (bf16 KV, k=3): the producer's chunks end at 160 and 320 (a chunk that
    # stops short of the prompt's end is cut at a block boundary), and a consumer's hit, at most
    # its length less one, reaches 320 and leaves one token
    block = 160
    assert n == 2 * block and 480 - n == block and len(ps[1]) - 1 == n
    spec = scenarios.SHAPES[16].engine_spec("m", ps, False, 1, {}, "prompt-tail")
    assert 480 + spec["max_tokens"] <= spec["max_model_len"]


def test_long_chunked_prompts_are_longer_than_a_steps_budget_so_continuation_chunks_must_occur():
    from vllm_backports.verify.model import MODEL_CLASSES

    ps = scenarios.prompts(24, 2048, kind="long-chunked", k=3)
    lengths = [len(p) for p in ps]
    assert len(ps) == 16 and lengths == sorted(lengths) and len(set(lengths)) == 16
    assert lengths[0] == 2000 and lengths[-1] == scenarios.LONG_MAX_LEN == 3936
    budget = scenarios.LONG_BATCHED_TOKENS
    # every prompt runs as a first chunk and at least three continuations, even a step with no
    # other row in it
    assert all(-(-n // budget) >= 4 for n in lengths) and -(-lengths[-1] // budget) == 8
    # a whole TurboQuant align block (turboquant_k8v4, k=3) fits beside sixteen verify rows
    assert budget >= scenarios.TQ_ALIGN_BLOCK + 16 * (3 + 1)
    for batch, shape in scenarios.SHAPES.items():
        spec = shape.engine_spec("m", ps, False, 1, {}, "long-chunked")
        assert spec["max_num_batched_tokens"] == budget and spec["max_model_len"] == 4096
        assert spec["max_tokens"] == shape.max_tokens and spec["max_num_seqs"] == shape.max_num_seqs
        # prompt, output and a verify step's k+1 lookahead in the model's length...
        assert lengths[-1] + spec["max_tokens"] + 3 + 1 <= spec["max_model_len"]
    # ...and in every tiny checkpoint's positions (vLLM refuses a longer max_model_len)
    for cls in MODEL_CLASSES.values():
        assert cls.config["max_position_embeddings"] >= scenarios.LONG_MAX_MODEL_LEN


def test_one_token_prompts_come_into_freed_rows_and_start_no_other_prompt():
    ps = scenarios.prompts(24, 2048, kind="one-token", k=3)
    assert len(ps) == scenarios.CHURN_PROMPTS == 64
    ones = [i for i, p in enumerate(ps) if len(p) == 1]
    assert ones == list(range(3, 64, 4)) and all(len(p) == scenarios.PROMPT_LEN for p in ps if len(p) != 1)
    # most are admitted after the first sixteen, into rows (and state slots) others freed
    assert sum(i >= scenarios.SHAPES[16].max_num_seqs for i in ones) == 12
    firsts = [p[0] for p in ps]
    assert all(firsts.count(ps[i][0]) == 1 for i in ones)
    for batch, shape in scenarios.SHAPES.items():
        spec = shape.engine_spec("m", ps, False, 1, {}, "one-token")
        assert spec["max_tokens"] == 24 and spec["max_num_batched_tokens"] == shape.max_num_batched_tokens


def test_the_scripted_drafter_finds_every_row_of_one_token_prompts():
    np = pytest.importorskip("numpy")

    from vllm_backports.verify.drafts import Script

    ps = scenarios.prompts(16, 2048, kind="one-token", k=3)
    continuations = [[(7 * i + j) % 2046 + 2 for j in range(24)] for i in range(len(ps))]
    script = Script(ps, continuations, k=3, vocab=2048)
    assert script._head == 1  # keyed by first token: the shortest prompt has one
    for i, p in enumerate(ps):
        for done in (0, 1, 5, 23):
            context = p + continuations[i][:done]
            assert script.request_of(context) == i
            row = np.zeros(script.longest_prompt + 32, dtype=np.int32)
            row[: len(context)] = context
            assert script.request_of_row(row, len(context)) == i
    # a one-token row is drafted for as its schedule says, from its own continuation
    i = next(i for i, p in enumerate(ps) if len(p) == 1)
    script.steps[i] = (0 - i) % len(script.schedule)  # the schedule's first step, (3, 3)
    assert script.propose(ps[i] + continuations[i][:1]) == continuations[i][1:4]


def _ngram_match(tokens: list[int], n: int) -> bool:
    """Whether vLLM's ngram proposer finds the last `n` tokens earlier in `tokens` (and so drafts)."""
    tail = tokens[-n:]
    return any(tokens[i : i + n] == tail for i in range(len(tokens) - n))


def test_tool_call_prompts_end_on_an_ngram_they_repeat_so_vllms_own_ngram_drafts():
    ps = scenarios.prompts(24, 2048, kind="tool-calls", k=3)
    assert len(ps) == 24 and len({tuple(p[: scenarios.TOOL_HEAD_LEN]) for p in ps}) == 24
    for n in (5, 8):  # vLLM's default prompt_lookup_min, and the reports' workaround
        assert all(_ngram_match(p, n) for p in ps)
    # random prompts of the same lengths give the proposer nothing to find
    rand = scenarios.prompts(24, 2048, k=3)
    assert not any(_ngram_match(p, 5) for p in rand)
    for batch, shape in scenarios.SHAPES.items():
        spec = shape.engine_spec("m", ps[: shape.prompts], False, 1, {}, "tool-calls")
        assert spec["max_model_len"] == scenarios.MAX_MODEL_LEN
        assert max(map(len, ps)) + spec["max_tokens"] + 3 + 1 <= spec["max_model_len"]


def test_vllms_own_ngram_presets_are_unscripted_and_leave_or_raise_the_lookup():
    own, workaround = scenarios.PRESETS["ngram-vllm"], scenarios.PRESETS["ngram-vllm-min8"]
    assert "prompt_lookup_min" not in own and "prompt_lookup_max" not in own  # the release's own (5, 5)
    assert workaround["prompt_lookup_min"] == 8 and "prompt_lookup_max" not in workaround
    assert own["method"] == workaround["method"] == "ngram"
    assert scenarios.SCRIPTED == {"ngram"} and not scenarios.NEEDS_MTP_LAYER & {"ngram-vllm", "ngram-vllm-min8"}
