"""Judging regrets and calibrating the threshold (the GPU part, the reference model, is not here)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from vllm_backports.verify.oracle import judge
from vllm_backports.verify.run import CALIBRATION_CAP, CALIBRATION_FLOOR, calibrated_threshold


def test_judge_counts_errors_sequences_and_the_earliest_position():
    v = judge([[0.1, 0.2, 3.0, 0.0], [0.0, 0.0], [0.5, 2.5]], threshold=1.0)
    assert (v.sequences, v.tokens, v.errors, v.bad_sequences) == (3, 8, 2, 2)
    assert v.first_error == 1 and v.worst == 3.0


def test_judge_threshold_is_strict():
    assert judge([[1.0]], threshold=1.0).errors == 0
    assert judge([[1.0001]], threshold=1.0).errors == 1


def test_clean_run_has_no_first_error():
    v = judge([[0.0, 0.3]], threshold=1.0)
    assert v.errors == 0 and v.first_error is None and v.as_dict()["first_error_at"] is None


def test_calibrated_threshold_doubles_the_baseline_noise_with_a_floor():
    assert calibrated_threshold(0.1) == CALIBRATION_FLOOR
    assert calibrated_threshold(0.8) == 1.6
    # the baseline's own worst token always passes the calibrated threshold
    for noise in (0.0, 0.2, 0.59, 1.4, CALIBRATION_CAP):
        assert judge([[noise]], calibrated_threshold(noise)).errors == 0


def test_prompt_logprob_differences_skip_position_zero_and_take_absolute_values():
    from vllm_backports.verify.oracle import prompt_logprob_differences

    diffs = prompt_logprob_differences([None, -1.0, -2.5, -0.2], [-1.25, -2.0, -0.2])
    assert diffs == [0.25, 0.5, 0.0]


def test_a_position_vllm_left_without_a_logprob_is_an_error_under_any_calibrated_threshold():
    from vllm_backports.verify.oracle import MISSING_LOGPROB, judge_prompt_logprobs, prompt_logprob_differences

    assert prompt_logprob_differences([None, -1.0, None], [-1.0, -2.0]) == [0.0, MISSING_LOGPROB]
    assert prompt_logprob_differences(None, [-1.0, -2.0]) == [MISSING_LOGPROB] * 2
    v = judge_prompt_logprobs([[0.0, MISSING_LOGPROB]], calibrated_threshold(CALIBRATION_CAP))
    assert v["errors"] == 1 and v["missing"] == 1


def test_output_logprob_differences_are_per_chosen_token_and_missing_ones_are_errors():
    from vllm_backports.verify.oracle import MISSING_LOGPROB, output_logprob_differences

    assert output_logprob_differences([-1.0, -2.5, None], [-1.25, -2.0, -0.2]) == [0.25, 0.5, MISSING_LOGPROB]
    assert output_logprob_differences(None, [-1.0, -2.0]) == [MISSING_LOGPROB] * 2
    with pytest.raises(ValueError, match="2 output logprobs from vLLM for 3 tokens"):
        output_logprob_differences([-1.0, -2.0], [-1.0, -2.0, -3.0])


def test_output_logprobs_are_judged_by_a_sequences_mean_not_its_worst_token():
    from vllm_backports.verify.oracle import judge_output_logprobs

    noise = [0.0, 0.3, 0.0, 0.0]  # one token off by 0.3: mean 0.075
    shifted = [0.1, 0.1, 0.1, 0.1]  # every token off by 0.1: mean 0.1
    v = judge_output_logprobs([noise, shifted, [0.0] * 4], threshold=0.08)
    assert (v["sequences"], v["tokens"], v["errors"], v["bad_sequences"], v["missing"]) == (3, 12, 1, 1, 0)
    assert v["worst_mean_difference"] == 0.1 and v["worst_difference"] == 0.3 and v["threshold"] == 0.08
    assert judge_output_logprobs([], 0.08)["errors"] == 0


def test_prompt_logprobs_of_another_prompt_length_are_refused():
    from vllm_backports.verify.oracle import prompt_logprob_differences

    with pytest.raises(ValueError, match="3 prompt logprobs from vLLM for a 4-token prompt"):
        prompt_logprob_differences([None, -1.0, -2.0], [-1.0, -2.0, -3.0])


def test_prompt_logprob_verdict_names_prompt_positions():
    from vllm_backports.verify.oracle import judge_prompt_logprobs

    v = judge_prompt_logprobs([[0.1, 0.2, 4.0], [0.0, 0.3, 0.1]], threshold=1.0)
    assert (v["sequences"], v["positions"], v["errors"], v["bad_sequences"], v["missing"]) == (2, 6, 1, 1, 0)
    # the third judged position is prompt token 3 (token 0 has no logprob)
    assert v["first_error_at"] == 3 and v["worst_difference"] == 4.0 and v["threshold"] == 1.0
    assert judge_prompt_logprobs([[0.1]], 1.0)["first_error_at"] is None


def test_reference_prompt_logprobs_score_each_token_given_the_ones_before():
    """On a model whose logits at a position depend only on that position's token, the logprob
    of prompt[i] is read off the logits of prompt[i-1]: the same alignment as the regrets."""
    torch = pytest.importorskip("torch")

    from vllm_backports.verify.oracle import Reference

    torch.manual_seed(0)
    table = torch.randn(8, 8) * 3

    class Model:
        def __call__(self, input_ids):
            return SimpleNamespace(logits=table[input_ids])

    ref = object.__new__(Reference)
    ref.torch, ref.device, ref.model, ref._known = torch, "cpu", Model(), {}
    prompt = [3, 5, 1, 7]
    logp = torch.log_softmax(table, dim=-1)
    expected = [logp[a, b].item() for a, b in zip(prompt, prompt[1:], strict=False)]
    assert ref.prompt_logprobs(prompt) == pytest.approx(expected)
    # the token chosen after the prompt is judged on the last prompt token's logits
    best = int(logp[7].argmax())
    assert ref.regrets(prompt, [best]) == pytest.approx([0.0])
    # an output token's logprob is the chosen token's, not the best one's, given the tokens before
    worst = int(logp[7].argmin())
    output = [worst, 2, 6]
    expected = [logp[7, worst].item(), logp[worst, 2].item(), logp[2, 6].item()]
    assert ref.output_logprobs(prompt, output) == pytest.approx(expected)
    assert ref.regrets(prompt, output)[0] == pytest.approx(logp[7].max().item() - logp[7, worst].item())
