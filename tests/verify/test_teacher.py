"""The teacher-forced vLLM reference of `verify --model`, without vLLM: prompt log-probabilities
as vLLM returns them (a dict per position, None at 0), and the engine's arguments."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from vllm_backports.verify import engine, teacher


@dataclass
class Logprob:  # the fields of vLLM's Logprob that matter here
    logprob: float
    rank: int | None = None


def entry(chosen: int, chosen_lp: float, best: int | None = None, best_lp: float | None = None) -> dict:
    d = {chosen: Logprob(chosen_lp)}
    if best is not None:
        d[best] = Logprob(best_lp)
    return d


def test_a_chosen_token_that_is_the_best_has_no_regret_and_others_the_gap():
    seq = [5, 6, 7, 8]
    lps = [None, entry(6, -0.1), entry(7, -2.5, best=9, best_lp=-0.5), entry(8, -0.25, best=3, best_lp=-0.2)]
    assert teacher.regrets(lps, seq, 2) == pytest.approx([2.0, 0.05])
    assert teacher.regrets(lps, seq, 1) == pytest.approx([0.0, 2.0, 0.05])
    assert teacher.regrets(lps, seq, 4) == []  # an empty output


def test_plain_floats_are_read_as_log_probabilities():
    assert teacher.regrets([None, {4: -1.0, 2: -0.25}], [1, 4], 1) == [0.75]


@pytest.mark.parametrize("bad", [math.nan, -math.inf])
def test_a_log_probability_that_is_not_finite_counts_far_above_any_threshold(bad):
    assert teacher.regrets([None, entry(4, bad, best=2, best_lp=-0.1)], [1, 4], 1) == [teacher.NONFINITE_REGRET]
    # a NaN beside a chosen token that looks best is no evidence either
    assert teacher.regrets([None, entry(4, -0.1, best=2, best_lp=math.nan)], [1, 4], 1) == [teacher.NONFINITE_REGRET]


def test_what_cannot_be_read_is_an_error_not_a_clean_token():
    with pytest.raises(ValueError, match="position 1: no log-probability for token 4"):
        teacher.regrets([None, {2: Logprob(-0.1)}], [1, 4], 1)
    with pytest.raises(ValueError, match="for 1 positions, the sequence has 2"):
        teacher.regrets([None], [1, 4], 1)
    with pytest.raises(ValueError, match="for none positions"):
        teacher.regrets(None, [1, 4], 1)
    with pytest.raises(ValueError, match="start >= 1"):
        teacher.regrets([None, entry(4, -0.1)], [1, 4], 0)


class FakeLLM:
    """Returns, for every position, the token itself at -1 and token 0 at -0.5: each judged
    token has regret 0.5, except token 0, which has none."""

    def __init__(self):
        self.calls: list = []

    def generate(self, prompts, params, use_tqdm=True):
        self.calls.append((prompts, params))

        @dataclass
        class Out:
            prompt_logprobs: list

        outs = []
        for p in prompts:
            ids = p["prompt_token_ids"]
            outs.append(Out([None] + [{t: Logprob(-0.5 if t == 0 else -1.0), 0: Logprob(-0.5)} for t in ids[1:]]))
        return outs


def test_teacher_force_asks_for_the_prompts_log_probabilities_of_whole_sequences():
    llm = FakeLLM()
    got = teacher.teacher_force(llm, dict, [[3, 4, 0, 5], [7, 8]], [2, 1])
    assert got == [[0.0, 0.5], [0.5]]
    prompts, params = llm.calls[0]
    assert prompts == [{"prompt_token_ids": [3, 4, 0, 5]}, {"prompt_token_ids": [7, 8]}]
    assert params == {"temperature": 0.0, "max_tokens": 1, "prompt_logprobs": 1}


def tiny_spec(**kw) -> dict:
    return {"model": "/m", "prompts": [[2, 3]], "max_num_seqs": 16, "max_tokens": 128, "max_model_len": 512,
            "eager": True, "tp": 1, **kw}


def test_the_tiny_models_engine_arguments_stay_as_they_were():
    kw = engine.llm_kwargs(tiny_spec(enable_prefix_caching=None, async_scheduling=None))
    assert kw["dtype"] == "bfloat16" and kw["skip_tokenizer_init"] and kw["gpu_memory_utilization"] == 0.35
    assert "enable_prefix_caching" not in kw and "async_scheduling" not in kw and "compilation_config" not in kw
    assert engine.sampling_kwargs(tiny_spec()) == {"temperature": 0.0, "max_tokens": 128, "ignore_eos": True}
    assert "compilation_config" in engine.llm_kwargs(tiny_spec(eager=False))


def test_a_text_only_spec_starts_the_multimodal_class_without_its_vision_side():
    # vLLM 0.17.0 .. 0.33.0 all have EngineArgs.language_model_only
    fields = {"model", "language_model_only", "limit_mm_per_prompt"}
    assert engine.llm_kwargs(tiny_spec(text_only=True), fields)["language_model_only"] is True
    assert "limit_mm_per_prompt" not in engine.llm_kwargs(tiny_spec(text_only=True), fields)
    # a vLLM without it: no image or video per prompt, which skips the same tower and processor
    kw = engine.llm_kwargs(tiny_spec(text_only=True), {"model", "limit_mm_per_prompt"})
    assert kw["limit_mm_per_prompt"] == {"image": 0, "video": 0} and "language_model_only" not in kw
    # a text-only class: neither, and the installed vLLM is not consulted
    for spec in (tiny_spec(), tiny_spec(text_only=False)):
        kw = engine.llm_kwargs(spec)
        assert "language_model_only" not in kw and "limit_mm_per_prompt" not in kw


def test_a_user_models_engine_takes_its_dtype_and_stops_at_its_end_tokens():
    spec = tiny_spec(dtype="auto", stop_token_ids=[1, 7], enable_prefix_caching=False, gpu_memory_utilization=0.9)
    kw = engine.llm_kwargs(spec)
    assert kw["dtype"] == "auto" and kw["enable_prefix_caching"] is False and kw["gpu_memory_utilization"] == 0.9
    assert engine.sampling_kwargs(spec) == {"temperature": 0.0, "max_tokens": 128, "stop_token_ids": [1, 7]}
