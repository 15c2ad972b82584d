"""`apply.py verify --model` at the command line: options that do not combine, a checkpoint or
prompts file that cannot serve, each one line and exit 2 with nothing written; the report and
--json of a run (its GPU part faked)."""

from __future__ import annotations

import importlib.util
import json

import pytest

from cli_runner import run
from fake_checkpoint import fake_checkpoint

NO_VLLM = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                             reason="vLLM is installed here: verify would really run")


def one_line_error(r, work) -> str:
    assert r.code == 2, (r.code, r.out, r.err)
    assert r.out == "" and len(r.err.strip().splitlines()) == 1, r.err
    assert not work.exists()
    return r.err.strip().removeprefix("error: ")


@pytest.mark.parametrize(("args", "message"), [
    (["--max-tokens", "64"], "--max-tokens goes with --model (the tiny model's runs fix their own)"),
    (["--max-num-batched-tokens", "512"], "--max-num-batched-tokens goes with --model"),
    (["--float32-reference"], "--float32-reference goes with --model"),
    (["--prefill-backend", "flashinfer"], "--prefill-backend flashinfer: FlashInfer's GDN prefill runs heads of 128 "
                                          "only; the qwen3_next tiny model has 64 (use --model-class qwen3_5 or "
                                          "qwen3_5_moe)"),
    (["--prompts", "prompts.jsonl"], "--prompts prompts.jsonl: not one of the tiny model's prompt sets (align-shifts, churn, "
                                     "k-plus-1, long-chunked, one-token, producer-consumer, prompt-tail, random, "
                                     "shared-prefix, tool-calls, tq-continuation); a JSONL file of prompts goes "
                                     "with --model or --server"),
])
def test_options_of_model_runs_are_refused_without_model(tmp_path, args, message):
    work = tmp_path / "w"
    assert one_line_error(run("verify", "--work-dir", str(work), *args), work).startswith(message)


@pytest.mark.parametrize(("args", "message"), [
    (["--model-class", "qwen3_5"], "--model-class picks the tiny model's family; with --model the checkpoint decides"),
    (["--calibrate-kv", "auto"], "--calibrate-kv goes with the tiny model's prompt sets, not with --model"),
    (["--batch", "1", "--batch", "16"], "--model runs one batch size: give --batch once"),
    (["--prompts", "shared-prefix"], "--prompts shared-prefix is one of the tiny model's prompt sets; with --model, "
                                     "--prompts is a JSONL file of prompts"),
])
def test_options_of_the_tiny_model_are_refused_with_model(tmp_path, args, message):
    work = tmp_path / "w"
    assert one_line_error(run("verify", "--model", str(tmp_path), "--work-dir", str(work), *args), work) == message


def test_a_missing_or_non_hybrid_checkpoint_is_refused(tmp_path):
    work = tmp_path / "w"
    r = run("verify", "--model", str(tmp_path / "nope"), "--work-dir", str(work))
    assert one_line_error(r, work) == (
        f"--model {tmp_path / 'nope'}: no such directory (a local Hugging Face checkpoint is needed)")
    d = fake_checkpoint(tmp_path / "llama", config={"architectures": ["LlamaForCausalLM"], "model_type": "llama"})
    r = run("verify", "--model", str(d), "--work-dir", str(work), "--json")
    assert r.code == 2 and r.json["exit_code"] == 2 and "\n" not in r.out.strip()
    assert r.json["error"].endswith("LlamaForCausalLM is not a hybrid Gated-DeltaNet model "
                                    "(verify --model judges Qwen3-Next, Qwen3.5, Qwen3.6 and Kimi Linear checkpoints)")
    assert not work.exists()


def test_a_bad_prompts_file_is_refused_by_its_line(tmp_path, checkpoint_dir):
    work, f = tmp_path / "w", tmp_path / "p.jsonl"
    f.write_text('{"prompt": "ok"}\n{"messages": [{"role": "user"}]}\n')
    r = run("verify", "--model", str(checkpoint_dir), "--prompts", str(f), "--work-dir", str(work))
    assert one_line_error(r, work) == f'--prompts {f} line 2: message 1 needs a string "content"'


def test_mtp_on_a_checkpoint_without_an_mtp_layer_is_refused(tmp_path, checkpoint_dir):
    work = tmp_path / "w"
    r = run("verify", "--model", str(checkpoint_dir), "--preset", "mtp", "--work-dir", str(work))
    assert one_line_error(r, work).startswith(f"--preset mtp: --model {checkpoint_dir.resolve()} has no MTP layer")


@NO_VLLM
@pytest.mark.parametrize("with_file", [False, True])
def test_a_good_checkpoint_and_prompts_are_accepted_up_to_the_vllm_check(tmp_path, checkpoint_dir, with_file):
    work, f = tmp_path / "w", tmp_path / "p.jsonl"
    f.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}], "group": "chat"}) + "\n")
    given = ["--prompts", str(f)] if with_file else []
    r = run("verify", "--model", str(checkpoint_dir), "--work-dir", str(work), *given)
    assert one_line_error(r, work).startswith("verify needs vLLM installed in this Python")


RESULT = {
    "vllm": "0.31.0", "reference": "vllm-teacher-forced", "backports": ["gdn-spec-state", "turboquant-spec-decode"],
    "model": {"path": "/models/x", "architecture": "Qwen3NextForCausalLM", "model_type": "qwen3_next",
              "family": "Qwen3-Next", "mtp_layers": 1, "max_positions": 262144, "weight_gib": 148.5},
    "kv_cache": "auto", "threshold": 1.2, "baseline_worst_regret": 0.6, "tp": 4,
    "scenario": {"prompts": "built-in", "prompt_count": 12, "groups": {"code-edit": 4, "tool-call": 4,
                 "shared-system-prompt": 4}, "presets": ["ngram", "mtp"], "batch": 16, "modes": ["graphs"],
                 "max_tokens": 256, "max_model_len": 1904, "stop_token_ids": [151645], "prefix_caching": "default",
                 "async_scheduling": "default", "gdn_prefill_backend": "default", "gpu_memory_utilization": 0.9,
                 "kv_cache_gib": None, "max_num_batched_tokens": None, "reference_batched_tokens": 2048},
    "calibrated": True, "passed": True, "machine": {"gpu": "NVIDIA H100"},
    "rows": [{"scenario": s, "site": "target", "batch": 16, "mode": "graphs", "sequences": 12, "tokens": 3000,
              "errors": 0, "worst_regret": 0.6, "first_error_at": None, "bad_sequences": 0, "exercised": None,
              "same_as_baseline": 12, "tokens_per_s": 900.0, "start_s": 200.0,
              "engine": {"prefix_caching": True, "async_scheduling": s == "mtp"},
              "regrets": [[0.0] * 250] * 12, "acceptance": None if s == "baseline" else
              {"drafts": 900, "draft_tokens": 2700, "accepted_tokens": 1800, "rate": 0.667,
               "mean_accepted_length": 3.0},
              "groups": {}} for s in ("baseline", "ngram", "mtp")],
}


@pytest.mark.parametrize("as_json", [False, True])
def test_the_report_is_one_screen_and_json_is_for_ci(tmp_path, monkeypatch, as_json):
    from vllm_backports.verify import served

    work = tmp_path / "w"
    seen = []

    def fake_execute(plan, progress):
        seen.append(plan)
        plan.work.mkdir(parents=True)
        return RESULT

    monkeypatch.setattr(served, "execute", fake_execute)
    monkeypatch.setenv("COLUMNS", "120")
    r = run("verify", "--model", str(tmp_path), "--tp", "4", "--work-dir", str(work), *(["--json"] if as_json else []))
    assert r.code == 0
    p = seen[0]
    assert (p.tp, p.batch, p.modes, p.presets, p.gpu_memory_utilization, p.max_tokens, p.prompts) == (
        4, 16, ("graphs",), (), 0.9, 256, None)
    assert json.loads((work / "verify.json").read_text())["rows"][0]["regrets"]  # kept whole on disk
    if as_json:
        assert r.json["verdict"] == "verify: passed" and r.json["passed"] and r.json["tp"] == 4
        assert all("regrets" not in row for row in r.json["rows"])
        return
    lines = r.out.splitlines()
    assert lines[0] == "vLLM 0.31.0, backports: gdn-spec-state, turboquant-spec-decode"
    assert lines[1] == "model /models/x: Qwen3NextForCausalLM (Qwen3-Next, 1 MTP layer, 148.5 GiB)"
    assert lines[2].startswith("engines, one at a time: TP 4, gpu-memory-utilization 0.90, KV auto, prefix caching on")
    assert "67% (3.00)" in r.out and lines[-1] == "verify: passed"
    assert len(lines) < 20


def test_a_failed_calibration_exits_2_and_errors_exit_1(tmp_path, monkeypatch):
    from vllm_backports.verify import served

    results = iter([{**RESULT, "calibrated": False, "baseline_worst_regret": 3.4},
                    {**RESULT, "passed": False, "rows": [{**RESULT["rows"][1], "errors": 7, "worst_regret": 9.1,
                                                          "first_error_at": 30, "bad_sequences": 2,
                                                          "groups": {"code-edit": {"errors": 7, "sequences": 4,
                                                                                   "bad_sequences": 2}}}]}])

    def fake_execute(plan, progress):
        plan.work.mkdir(parents=True, exist_ok=True)
        return next(results)

    monkeypatch.setattr(served, "execute", fake_execute)
    monkeypatch.setenv("COLUMNS", "120")
    r = run("verify", "--model", str(tmp_path), "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and r.out.splitlines()[-1].startswith("calibration failed: the plain baseline itself strays "
                                                             "from its own teacher-forced output (worst regret 3.40")
    r = run("verify", "--model", str(tmp_path), "--work-dir", str(tmp_path / "w"))
    assert r.code == 1 and r.out.splitlines()[-2:] == [
        "ngram/target graphs: errors in code-edit (2 of 4 sequences)",
        "verify: FAILED: speculative output is not what the model predicts"]
