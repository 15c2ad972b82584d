"""`apply.py verify --rounds / --prompt-logprobs / --output-logprobs / --check-accepted-counts`: the options reach the
plan, what they find reaches the screen and the JSON (execute() stood in for: no GPU here)."""

from __future__ import annotations

import json

import pytest

from cli_runner import run
from vllm_backports.verify import run as verify_run


def fake_result(plan, logprob_errors: int = 0) -> dict:
    rows = [
        {"scenario": "baseline", "site": "target", "batch": 1, "mode": "graphs", "sequences": 36, "tokens": 1728,
         "errors": 0, "worst_regret": 0.3, "first_error_at": None, "bad_sequences": 0, "exercised": None,
         "same_as_baseline": 12, "tokens_per_s": 90.0, "start_s": 40.0, "engine": None, "regrets": [[0.1]]},
        {"scenario": "mtp", "site": "target", "batch": 1, "mode": "graphs", "sequences": 36, "tokens": 1728,
         "errors": 7, "worst_regret": 8.0, "first_error_at": 3, "bad_sequences": 2, "exercised": None,
         "same_as_baseline": 12, "tokens_per_s": 90.0, "start_s": 40.0, "engine": None, "regrets": [[0.1]],
         "rounds": [{"round": i + 1, "errors": e, "accepted": a} for i, (e, a) in enumerate([(0, 900), (0, 880),
                                                                                             (7, 300)])],
         "accepted_counts": {"status": "checked", "in_range": False, "range": [1, 4], "min": 0, "max": 4,
                             "outside": 2, "rows": 500, "builds": 400}},
    ]
    logprobs = None
    if plan.prompt_logprobs:
        for r in rows:
            r["prompt_logprobs"] = {"sequences": 12, "positions": 468, "errors": logprob_errors if r["scenario"] ==
                                    "mtp" else 0, "bad_sequences": 1, "first_error_at": 2, "worst_difference": 4.2,
                                    "missing": 0, "threshold": 1.0}
        logprobs = {"threshold": 1.0, "baseline_worst_difference": 0.3, "calibrated": True}
    outputs = None
    if plan.output_logprobs:
        for r in rows:
            r["output_logprobs"] = {"sequences": 36, "tokens": 1728, "errors": 4 if r["scenario"] == "mtp" else 0,
                                    "bad_sequences": 4, "worst_mean_difference": 0.061, "worst_difference": 0.5,
                                    "missing": 0, "threshold": 0.015}
        outputs = {"threshold": 0.015, "baseline_worst_mean_difference": 0.005, "calibrated": True}
    return {**verify_run.conclude(rows, 0.3, 1.0, plan, "0.20.0", logprobs, outputs), "machine": {"gpu": "none"}}


@pytest.fixture
def planned(monkeypatch):
    plans = []

    def execute(plan, progress):
        plans.append(plan)
        return fake_result(plan, logprob_errors=5)

    monkeypatch.setattr(verify_run, "execute", execute)
    monkeypatch.setenv("COLUMNS", "200")
    return plans


def test_the_options_reach_the_plan(tmp_path, planned):
    run("verify", "--work-dir", str(tmp_path), "--preset", "mtp", "--batch", "1", "--rounds", "3",
        "--prompt-logprobs", "--check-accepted-counts")
    (p,) = planned
    assert (p.rounds, p.prompt_logprobs, p.check_accepted_counts) == (3, True, True)
    run("verify", "--work-dir", str(tmp_path))
    assert (planned[1].rounds, planned[1].prompt_logprobs, planned[1].check_accepted_counts) == (1, False, False)
    assert not planned[1].output_logprobs
    run("verify", "--work-dir", str(tmp_path), "--output-logprobs")
    assert planned[2].output_logprobs


def test_output_logprobs_are_reported(tmp_path, planned):
    r = run("verify", "--work-dir", str(tmp_path), "--preset", "mtp", "--output-logprobs")
    assert r.code == 1  # the target's tokens have errors too; its drifting sequences are said below the table
    assert "output logprobs: error: a sequence's mean |vLLM - reference| > 0.0150 nats" in r.out
    assert "mtp/target b1 graphs: output logprobs drift in 4 of 36 sequences (worst mean 0.061" in r.out
    assert "output lp drifts (worst mean)" in r.out and "4 (0.061)" in r.out
    kept = json.loads((tmp_path / "verify.json").read_text())
    assert kept["output_logprobs"]["calibrated"] and kept["rows"][1]["output_logprobs"]["errors"] == 4


def test_rounds_prompt_logprobs_and_counts_are_reported(tmp_path, planned):
    r = run("verify", "--work-dir", str(tmp_path), "--preset", "mtp", "--rounds", "3", "--prompt-logprobs",
            "--check-accepted-counts")
    assert r.code == 1  # the target's prompt logprobs and last round have errors
    assert "mtp/target b1 graphs: errors by round 0, 0, 7; accepted 900, 880, 300" in r.out
    assert "mtp/target b1 graphs: prompt logprobs off at 5 of 468 positions" in r.out
    assert "mtp/target b1 graphs: accepted counts OUTSIDE 1..4: 2 rows; 0..4 over 500 speculative rows" in r.out
    assert "prompt logprobs: error: |vLLM - reference| > 1.00 nats" in r.out
    assert "prompt lp errors" in r.out
    kept = json.loads((tmp_path / "verify.json").read_text())
    assert kept["prompt_logprobs"]["calibrated"] and kept["rows"][1]["rounds"][2]["errors"] == 7


def test_the_json_payload_keeps_rounds_and_counts(tmp_path, planned):
    r = run("verify", "--json", "--work-dir", str(tmp_path), "--preset", "mtp", "--rounds", "3")
    row = r.json["rows"][1]
    assert [x["errors"] for x in row["rounds"]] == [0, 0, 7] and row["accepted_counts"]["outside"] == 2
    assert "regrets" not in row and r.json["scenario"]["rounds"] == 3


@pytest.mark.parametrize(
    "option", [["--rounds", "2"], ["--prompt-logprobs"], ["--output-logprobs"], ["--check-accepted-counts"]]
)
def test_with_model_the_options_are_refused(tmp_path, planned, option):
    r = run("verify", "--model", str(tmp_path), "--work-dir", str(tmp_path / "w"), *option)
    assert r.code == 2 and f"{option[0]} goes with the tiny model" in r.err and not planned


@pytest.mark.parametrize("rounds", ["0", "21"])
def test_rounds_out_of_range_are_usage_errors(tmp_path, planned, rounds):
    r = run("verify", "--work-dir", str(tmp_path / "w"), "--rounds", rounds)
    assert r.code == 2 and not planned
