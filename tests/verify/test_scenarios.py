"""Prompt sets and engine switches of verify's scenarios (data only, no GPU)."""

from __future__ import annotations

import pytest

from vllm_backports.verify import scenarios


@pytest.mark.parametrize("kind", sorted(scenarios.PROMPT_SETS))
def test_no_prompt_begins_another_so_the_scripted_drafter_finds_each_request(kind):
    ps = scenarios.prompts(24, 2048, kind=kind, k=3)
    assert len(ps) == 24
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
