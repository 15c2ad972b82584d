"""The human lines of verify's judged extras (--rounds, --prompt-logprobs, --check-accepted-counts)
and the verdicts they lead to."""

from __future__ import annotations

from vllm_backports.verify.report import (
    accepted_counts_line,
    align_shifts_line,
    judged_lines,
    output_logprob_cell,
    prompt_logprob_cell,
    verdict,
)


def row(scenario: str = "mtp", site: str = "target", errors: int = 0, **kw) -> dict:
    return {"scenario": scenario, "site": site, "batch": 16, "mode": "graphs", "errors": errors, **kw}


def result(rows: list[dict], **kw) -> dict:
    from vllm_backports.verify.run import row_errors

    passed = all(row_errors(r) == 0 for r in rows if r["site"] == "target")
    return {"calibrated": True, "passed": passed, "baseline_worst_regret": 0.4, "rows": rows, **kw}


def test_count_lines_say_in_range_outside_or_why_not_checked():
    checked = {"status": "checked", "in_range": True, "range": [1, 4], "min": 1, "max": 4, "outside": 0,
               "rows": 90, "builds": 30}
    assert accepted_counts_line(checked) == "accepted counts in 1..4: 1..4 over 90 speculative rows in 30 builds"
    bad = {**checked, "in_range": False, "min": 0, "outside": 3}
    assert accepted_counts_line(bad).startswith("accepted counts OUTSIDE 1..4: 3 rows; 0..4 over 90")
    assert accepted_counts_line({**checked, "startup": {"outside": 6}}).endswith(
        "in 30 builds (and 6 outside in the engine's start-up runs)")
    assert accepted_counts_line({"status": "unavailable", "why": "at TP > 1 ..."}) == (
        "accepted counts unavailable: at TP > 1 ...")
    assert accepted_counts_line({"status": "not seen", "why": "no speculative rows"}).startswith("accepted counts not")


def test_shift_lines_say_the_shifts_by_rows_or_why_none_were_counted():
    counted = {"status": "counted", "steps": 40, "rows": 600, "cross_block_copies": 12, "in_place": 3,
               "in_block_shifts": {"1": 5, "2": 2}}
    assert align_shifts_line(counted) == (
        "align shifts within a block: 5 of 1 row(s), 2 of 2 row(s); 12 copies to another block, over 600 rows in 40 steps")
    assert align_shifts_line({**counted, "in_block_shifts": {}}).startswith("align shifts within a block: none;")
    assert align_shifts_line({**counted, "overlapping": 7, "conv_rows": 6}).startswith(
        "align shifts within a block: 7 overlapping in a 6-row window; 5 of 1 row(s)")
    assert align_shifts_line({"status": "unavailable", "why": "no such function"}) == (
        "align shifts unavailable: no such function")
    lines = judged_lines(result([row("ngram", align_shifts=counted), row("baseline")]))
    assert lines == ["ngram/target b16 graphs: " + align_shifts_line(counted)]


def test_rounds_lines_leave_out_accepted_counts_nobody_reported():
    lines = judged_lines(result([row("baseline", rounds=[{"errors": 0, "accepted": None}] * 2),
                                row(rounds=[{"errors": 0, "accepted": 50}, {"errors": 4, "accepted": 10}])]))
    assert lines == ["baseline/target b16 graphs: errors by round 0, 0",
                     "mtp/target b16 graphs: errors by round 0, 4; accepted 50, 10"]


def test_nothing_extra_without_the_options():
    assert judged_lines(result([row("baseline"), row()])) == []
    assert prompt_logprob_cell(row()) == "-"


def test_a_target_failing_on_prompt_logprobs_only_says_so():
    lp = {"errors": 3, "positions": 100, "sequences": 4, "bad_sequences": 1, "worst_difference": 5.0, "missing": 1}
    r = result([row("baseline"), row(prompt_logprobs=lp)])
    assert verdict(r) == ("verify: FAILED: speculative engines' prompt logprobs are not the model's", 1)
    assert prompt_logprob_cell(r["rows"][1]) == "3"
    assert "mtp/target b16 graphs: prompt logprobs off at 3 of 100 positions (1 of 4 prompts; worst 5.00, 1 missing)" \
        in judged_lines(r)
    assert verdict(result([row("baseline"), row(errors=2, prompt_logprobs=lp)]))[0].endswith("what the model predicts")


def test_a_target_failing_on_output_logprobs_only_says_so():
    lp = {"errors": 2, "sequences": 24, "tokens": 3072, "bad_sequences": 2, "worst_mean_difference": 0.05,
          "worst_difference": 0.4, "missing": 0}
    r = {**result([row("baseline"), row(output_logprobs=lp)]),
         "output_logprobs": {"threshold": 0.012, "baseline_worst_mean_difference": 0.004, "calibrated": True}}
    assert verdict(r) == ("verify: FAILED: speculative engines' output logprobs drift from the model's", 1)
    assert output_logprob_cell(r["rows"][1]) == "2 (0.050)" and output_logprob_cell(row()) == "-"
    lines = judged_lines(r)
    assert "output logprobs: error: a sequence's mean |vLLM - reference| > 0.0120 nats (plain engine's worst mean " \
        "0.0040)" in lines
    assert "mtp/target b16 graphs: output logprobs drift in 2 of 24 sequences (worst mean 0.050, worst token 0.40)" \
        in lines


def test_a_baseline_whose_output_logprobs_stray_is_a_calibration_failure():
    outputs = {"threshold": 1.8, "baseline_worst_mean_difference": 0.6, "calibrated": False}
    r = {**result([row("baseline"), row()]), "calibrated": False, "output_logprobs": outputs}
    line, code = verdict(r)
    assert code == 2 and "output logprobs stray from the reference (worst sequence mean 0.60 nats" in line


def test_a_baseline_whose_prompt_logprobs_stray_is_a_calibration_failure():
    logprobs = {"threshold": 8.0, "baseline_worst_difference": 4.0, "calibrated": False}
    r = {**result([row("baseline"), row()]), "calibrated": False, "prompt_logprobs": logprobs}
    line, code = verdict(r)
    assert code == 2 and "prompt logprobs stray from the reference (worst difference 4.00, more than 3)" in line
    # a baseline whose tokens stray is said first, as before
    line, code = verdict({**r, "baseline_worst_regret": 3.5})
    assert code == 2 and "worst regret 3.50" in line


def test_a_plain_engine_that_strays_in_a_later_round_is_named_by_round():
    base = row("baseline", errors=4, rounds=[{"round": 1, "errors": 0}, {"round": 2, "errors": 0},
                                             {"round": 3, "errors": 4}])
    line, code = verdict({**result([base, row()]), "calibrated": False})
    assert code == 2 and line.startswith("calibration failed: the plain baseline's round 3 strays")
