"""`verify --model` without a GPU: the checks before any engine, the engines it starts (faked),
the calibration on the plain engine's own teacher-forced output, the verdicts, the float32
cross-check and the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from fake_checkpoint import fake_checkpoint
from vllm_backports.errors import BackportError, UsageError
from vllm_backports.verify import model, report, run, scenarios, served

MARK = 3  # a token the fake engines emit only where they are wrong
GOOD = [10, 11, 12, 13]
TOOL_CALLS = range(4, 8)  # the built-in set's tool-call prompts (code edits first, then these)


def plan(checkpoint_dir: Path, tmp_path: Path, **kw) -> served.ModelPlan:
    args = {"model": checkpoint_dir, "prompts": None, "presets": (), "batch": 16, "modes": ("graphs",), "tp": 1,
            "threshold": None, "work": tmp_path / "w", "additional_config": {}} | kw
    return served.ModelPlan(**args)


def fake_gpu(monkeypatch, tmp_path, wrong=("control",), plain_regret=0.1, die=None):
    """Every GPU step replaced. Speculative engines on the sites in `wrong` emit MARK on the
    tool-call prompts; the reference gives MARK a regret of 5 and any other token `plain_regret`.
    `die`: the site whose speculative engine dies. Returns the specs the engines got."""
    specs: list[dict] = []

    def engine(spec, work, tag, script, site=None):
        where = "control" if site else "target"
        specs.append({**spec, "tag": tag, "site": where, "script": script})
        if spec.get("teacher_force"):
            forced = spec["teacher_force"]
            return {"regrets": [[5.0 if t == MARK else plain_regret for t in s[st:]]
                                for s, st in zip(forced["sequences"], forced["starts"], strict=True)], "engine": {}}
        spec_run = "speculative" in spec
        if spec_run and die == where:
            raise BackportError(f"engine run {tag} failed (exit -6): illegal memory access")
        bad = spec_run and where in wrong
        return {"tokens": [[MARK] * 4 if bad and i in TOOL_CALLS else GOOD for i in range(len(spec["prompts"]))],
                "tokens_per_s": 100.0, "spec_counters": {"num_drafts": 10, "num_draft_tokens": 30,
                                                         "num_accepted_tokens": 18} if spec_run else None,
                "engine": {"backports": ["gdn-spec-state"] if where == "target" else [], "prefix_caching": True,
                           "async_scheduling": False, "prefix_cache": {"queries": 9000, "hits": 4000}}}

    monkeypatch.setattr(run, "preflight", lambda model_class=None: specs.append({"preflight": model_class}) or "0.31.0")
    monkeypatch.setattr(run, "site_version", lambda site: "0.31.0")
    monkeypatch.setattr(run, "machine", lambda: {"gpu": "none"})
    monkeypatch.setattr(run, "run_engine", engine)
    monkeypatch.setattr(served, "check_gpus", lambda tp: None)
    return specs


def test_engines_run_one_at_a_time_and_the_reference_teacher_forces_each_distinct_output(
        checkpoint_dir, tmp_path, monkeypatch):
    specs = fake_gpu(monkeypatch, tmp_path)
    result = served.execute(plan(checkpoint_dir, tmp_path, control=tmp_path), lambda line: None)
    engines = [s for s in specs if "tag" in s]
    assert [(s["tag"], s["site"]) for s in engines] == [
        ("model-graphs-baseline", "target"), ("model-graphs-ngram", "target"),
        ("model-graphs-ngram-control", "control"), ("model-reference", "target")]
    assert specs[0] == {"preflight": None}  # no float32 reference asked: no transformers class needed
    base, ngram, _, ref = engines
    prompts = base["prompts"]
    assert len(prompts) == 12 and all(s["script"] is None for s in engines)  # vLLM's own drafter, unscripted
    for s in (base, ngram):
        assert s["dtype"] == "auto" and s["stop_token_ids"] == [1] and s["gpu_memory_utilization"] == 0.9
        assert s["max_model_len"] == max(map(len, prompts)) + 256 + served.LENGTH_SLACK and not s["eager"]
        assert s["max_num_seqs"] == 16 and s["max_tokens"] == 256
    assert "speculative" not in base and ngram["speculative"] == scenarios.PRESETS["ngram"]
    # the reference: no speculation, eager, every position computed, one token generated
    assert "speculative" not in ref and ref["eager"] and ref["enable_prefix_caching"] is False
    assert ref["max_tokens"] == 1 and ref["max_num_batched_tokens"] == served.REFERENCE_BATCHED_TOKENS
    assert ref["tp"] == 1 and ref["gpu_memory_utilization"] == 0.9 and ref["dtype"] == "auto"
    forced = ref["teacher_force"]
    # baseline and target agree: 12 distinct outputs, and the control's 4 wrong ones
    assert len(forced["sequences"]) == 16 and forced["starts"][:12] == [len(p) for p in prompts]
    assert forced["sequences"][0] == prompts[0] + GOOD
    assert result["calibrated"] and result["threshold"] == 1.0 and result["baseline_worst_regret"] == 0.1
    assert result["passed"] and result["proof"] == "control fails, target passes"
    assert result["backports"] == ["gdn-spec-state"] and result["reference"] == served.VLLM_REFERENCE
    rows = {(r["scenario"], r["site"]): r for r in result["rows"]}
    control = rows[("ngram", "control")]
    assert control["errors"] == 16 and control["groups"]["tool-call"]["bad_sequences"] == 4
    assert control["groups"]["code-edit"]["errors"] == 0
    assert rows[("ngram", "target")]["acceptance"] == {"drafts": 10, "draft_tokens": 30, "accepted_tokens": 18,
                                                       "rate": 0.6, "mean_accepted_length": 2.8}
    assert rows[("baseline", "target")]["acceptance"] is None
    assert result["scenario"]["groups"] == {"code-edit": 4, "tool-call": 4, "shared-system-prompt": 4}
    # the longest prompt, as the checkpoint's tokenizer and chat template made it: the run's and each row's
    longest = max(map(len, prompts))
    assert result["scenario"]["max_prompt_tokens"] == longest > 0
    assert [r["max_prompt_tokens"] for r in result["rows"]] == [longest] * 3
    assert report.verdict(result) == ("verify: passed (the control fails)", 0)


def test_a_plain_engine_that_strays_from_its_own_prefill_concludes_nothing(checkpoint_dir, tmp_path, monkeypatch):
    fake_gpu(monkeypatch, tmp_path, wrong=(), plain_regret=3.5)
    result = served.execute(plan(checkpoint_dir, tmp_path), lambda line: None)
    assert not result["calibrated"] and result["threshold"] == 7.0
    line, code = report.verdict(result)
    assert code == 2 and line == ("calibration failed: the plain baseline itself strays from its own teacher-forced "
                                  "output (worst regret 3.50, more than 3); nothing can be concluded")


def test_errors_on_the_target_fail_the_run(checkpoint_dir, tmp_path, monkeypatch):
    fake_gpu(monkeypatch, tmp_path, wrong=("target",))
    result = served.execute(plan(checkpoint_dir, tmp_path), lambda line: None)
    assert result["calibrated"] and not result["passed"] and "proof" not in result
    assert report.verdict(result) == ("verify: FAILED: speculative output is not what the model predicts", 1)


def test_a_clean_control_makes_the_run_weak(checkpoint_dir, tmp_path, monkeypatch):
    fake_gpu(monkeypatch, tmp_path, wrong=())
    result = served.execute(plan(checkpoint_dir, tmp_path, control=tmp_path), lambda line: None)
    assert result["passed"] and result["proof"].startswith("weak")
    assert report.verdict(result)[1] == 0 and "the control passed too" in report.verdict(result)[0]


def test_a_control_engine_that_dies_is_a_failed_control_and_a_target_one_is_an_error(
        checkpoint_dir, tmp_path, monkeypatch):
    fake_gpu(monkeypatch, tmp_path, wrong=(), die="control")
    result = served.execute(plan(checkpoint_dir, tmp_path, control=tmp_path), lambda line: None)
    dead = next(r for r in result["rows"] if r["site"] == "control")
    assert "illegal memory access" in dead["crashed"] and result["proof"] == "control fails, target passes"
    fake_gpu(monkeypatch, tmp_path, wrong=(), die="target")
    with pytest.raises(BackportError, match="illegal memory access"):
        served.execute(plan(checkpoint_dir, tmp_path / "again"), lambda line: None)


class Float32:
    """transformers' reference, faked: MARK is wrong when `sees` it is."""

    sees = True
    asked: list = []

    def __init__(self, model_dir, device="cuda", model_class=model.MODEL_CLASS):
        Float32.asked.append((model_dir, model_class))

    def regrets(self, prompt, output):
        return [4.0 if t == MARK and self.sees else 0.2 for t in output]


@pytest.mark.parametrize("sees", [True, False])
def test_the_float32_cross_check_judges_the_same_outputs_and_must_agree(checkpoint_dir, tmp_path, monkeypatch, sees):
    from vllm_backports.verify import oracle

    specs = fake_gpu(monkeypatch, tmp_path)
    monkeypatch.setattr(oracle, "Reference", Float32)
    monkeypatch.setattr(Float32, "sees", sees)
    result = served.execute(plan(checkpoint_dir, tmp_path, control=tmp_path, float32_reference=True),
                            lambda line: None)
    assert specs[0] == {"preflight": "qwen3_next"}  # transformers must have the class
    assert Float32.asked[-1] == (str(checkpoint_dir), "qwen3_next")
    cross = result["float32"]
    assert cross["calibrated"] and cross["threshold"] == 1.0 and cross["baseline_worst_regret"] == 0.2
    control = next(p for p in cross["rows"] if p["site"] == "control")
    assert control["errors"] == 16 and control["float32_errors"] == (16 if sees else 0)
    assert cross["agree"] is sees and control["agrees"] is sees
    line, code = report.verdict(result)
    assert (code, line.startswith("verify: passed")) == ((0, True) if sees else (1, False))


def test_cross_check_compares_verdicts_not_counts():
    row = {"scenario": "ngram", "site": "target", "mode": "graphs", "worst_regret": 0.1}
    a = [{**row, "scenario": "baseline", "errors": 0}, {**row, "errors": 3}, {**row, "site": "control", "errors": 0,
                                                                                "crashed": "exit -6"}]
    b = [{**row, "scenario": "baseline", "errors": 0}, {**row, "errors": 40}, {**row, "site": "control", "errors": 0}]
    cross = served.cross_check(a, b, 0.2, 1.0)
    assert cross["agree"] and [p["agrees"] for p in cross["rows"]] == [True, True, True]
    b[1]["errors"] = 0
    assert not served.cross_check(a, b, 0.2, 1.0)["agree"]
    assert not served.cross_check(a, [{**b[0], "errors": 0}, {**b[1], "errors": 3}, b[2]], 3.5, 7.0)["agree"]


def test_acceptance_from_vllms_counters():
    assert served.acceptance(None) is None and served.acceptance({"num_drafts": 0, "num_draft_tokens": 0}) is None
    assert served.acceptance({"num_drafts": 4, "num_draft_tokens": 12, "num_accepted_tokens": 12}) == {
        "drafts": 4, "draft_tokens": 12, "accepted_tokens": 12, "rate": 1.0, "mean_accepted_length": 4.0}


# --------------------------------------------------------------------------------------------
# the checks before any engine: refused with nothing written


def refused(p: served.ModelPlan, monkeypatch) -> str:
    monkeypatch.setattr(run, "preflight", lambda model_class=None: pytest.fail("got past the checks"))
    with pytest.raises(UsageError) as err:
        served.execute(p, lambda line: None)
    assert not p.work.exists()
    return str(err.value)


def test_presets_default_to_what_the_checkpoint_can_draft_with(checkpoint_dir, tmp_path, tokenizer_dir):
    assert served.prepare(plan(checkpoint_dir, tmp_path)).presets == ("ngram",)
    mtp = fake_checkpoint(tmp_path / "mtp", tokenizer_dir, dict(model.CONFIG, num_nextn_predict_layers=1))
    assert served.prepare(plan(mtp, tmp_path)).presets == ("ngram", "mtp")
    assert served.prepare(plan(mtp, tmp_path, presets=("mtp",))).presets == ("mtp",)


def test_mtp_without_an_mtp_layer_is_refused(checkpoint_dir, tmp_path, monkeypatch):
    assert refused(plan(checkpoint_dir, tmp_path, presets=("mtp",)), monkeypatch) == (
        f"--preset mtp: --model {checkpoint_dir} has no MTP layer (its config sets none of "
        "num_nextn_predict_layers, mtp_num_hidden_layers)")


def test_a_prompt_too_long_for_the_checkpoint_is_refused_by_its_line(checkpoint_dir, tmp_path, monkeypatch):
    f = tmp_path / "p.jsonl"
    f.write_text(json.dumps({"prompt": "short"}) + "\n" + json.dumps({"prompt": "word " * 5000}) + "\n")
    msg = refused(plan(checkpoint_dir, tmp_path, prompts=f), monkeypatch)
    assert msg.startswith(f"--prompts {f} line 2: ") and msg.endswith(
        f"tokens and --max-tokens 256 do not fit the 4096 positions of --model {checkpoint_dir}")


def test_a_bad_prompts_file_is_refused_before_the_checkpoint_is_read(tmp_path, monkeypatch):
    f = tmp_path / "p.jsonl"
    f.write_text('{"messages": "hi"}\n')
    assert refused(plan(tmp_path / "no-model", tmp_path, prompts=f), monkeypatch) == (
        f'--prompts {f} line 1: "messages" must be a non-empty list')


def test_the_float32_cross_check_is_refused_where_transformers_class_is_not_the_tiny_models(
        tmp_path, tokenizer_dir, monkeypatch):
    config = {"architectures": ["Qwen3_5MoeForConditionalGeneration"], "model_type": "qwen3_5_moe",
              "text_config": model.QWEN3_5_MOE_TEXT}
    d = fake_checkpoint(tmp_path / "c", tokenizer_dir, config)
    assert refused(plan(d, tmp_path, float32_reference=True), monkeypatch).startswith(
        "--float32-reference: Qwen3_5MoeForConditionalGeneration is not one of the tiny model's classes")
    big = fake_checkpoint(tmp_path / "big", tokenizer_dir)
    with open(big / "model.safetensors", "wb") as f:
        f.truncate(served.FLOAT32_MAX_WEIGHT_BYTES + 1)  # sparse: no disk used
    assert "is too much to hold in float32" in refused(plan(big, tmp_path, float32_reference=True), monkeypatch)


# --------------------------------------------------------------------------------------------
# the report


def test_the_report_names_release_backports_configuration_and_where_errors_are(checkpoint_dir, tmp_path, monkeypatch):
    fake_gpu(monkeypatch, tmp_path, wrong=("target",))
    result = served.execute(plan(checkpoint_dir, tmp_path, gpu_memory_utilization=0.8), lambda line: None)
    head, table, below = report.model_report(result)
    console = Console(width=160, record=True)
    for line in head:
        console.print(line)
    console.print(table)
    for line in below:
        console.print(line)
    text = console.export_text()
    assert head[0] == "vLLM 0.31.0, backports: gdn-spec-state"
    assert "TP 1, gpu-memory-utilization 0.80" in head[2] and "prefix caching on" in head[2]
    assert "batch 16, graphs" in head[2]
    assert head[3].startswith("prompts built-in: 12 (code-edit 4, tool-call 4, shared-system-prompt 4)")
    assert "error: regret > 1.00 nats (plain engine's worst 0.10)" in head[4]
    assert "60% (2.80)" in text and "4000" in text
    assert below == ["ngram/target graphs: errors in tool-call (4 of 4 sequences)",
                     "verify: FAILED: speculative output is not what the model predicts"]
    assert len(text.splitlines()) < 25  # one screen


def model_options(**kw) -> Path | None:
    words = {"model_class": None, "batches": (), "prompt_set": None, "calibrate_kv": None, "rounds": 1,
             "prompt_logprobs": False, "check_accepted_counts": False} | kw
    return served.check_model_options(**words)


def test_a_model_run_takes_a_prompts_file_or_the_built_in_set(tmp_path, monkeypatch):
    assert model_options() is None
    assert model_options(batches=("16", "16"), prompt_set="mine.jsonl") == Path("mine.jsonl")
    # a file that happens to bear a prompt set's name is a file
    monkeypatch.chdir(tmp_path)
    (tmp_path / "churn").write_text("")
    assert model_options(prompt_set="churn") == Path("churn")


@pytest.mark.parametrize(("words", "message"), [
    (dict(calibrate_kv="auto"), "--calibrate-kv goes with the tiny model's prompt sets, not with --model"),
    (dict(rounds=2), "--rounds goes with the tiny model (the float32 reference), not with --model"),
    (dict(prompt_logprobs=True), "--prompt-logprobs goes with the tiny model (the float32 reference), not with "
                                 "--model"),
    (dict(check_accepted_counts=True), "--check-accepted-counts goes with the tiny model (the float32 reference), "
                                       "not with --model"),
    (dict(model_runner="v1"), "--model-runner goes with the tiny model (the float32 reference), not with --model"),
    (dict(model_class="qwen3_5"), "--model-class picks the tiny model's family; with --model the checkpoint "
                                  "decides"),
    (dict(batches=("1", "16")), "--model runs one batch size: give --batch once"),
    (dict(prompt_set="shared-prefix"), "--prompts shared-prefix is one of the tiny model's prompt sets; with "
                                       "--model, --prompts is a JSONL file of prompts"),
    # the first refusal wins, in the order above
    (dict(rounds=2, calibrate_kv="same"), "--calibrate-kv goes with the tiny model's prompt sets"),
    (dict(batches=("1", "16"), model_class="qwen3_5"), "--model-class picks the tiny model's family"),
])
def test_a_model_run_refuses_what_its_plan_cannot_take(words, message):
    with pytest.raises(UsageError) as caught:
        model_options(**words)
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize("backend, refused", [("triton", True), ("flashinfer", False)])
def test_a_model_run_asking_a_prefill_the_release_ignores_is_refused_before_anything_is_written(
    tmp_path, monkeypatch, backend, refused
):
    """vLLM 0.17.x on Hopper runs FlashInfer's GDN prefill whatever is asked: an asked Triton
    prefill would name, in the evidence, a prefill that never ran. The checkpoint's heads are its
    own, so FlashInfer goes on to the next check."""
    from types import SimpleNamespace

    prep = SimpleNamespace(checkpoint=SimpleNamespace(model_class="Qwen3_5ForCausalLM"))
    monkeypatch.setattr(served, "prepare", lambda plan: prep)
    monkeypatch.setattr(run, "preflight", lambda model_class=None: "0.17.1")
    monkeypatch.setattr(run, "gpu_capability", lambda: (9, 0))
    monkeypatch.setattr(served, "check_gpus", lambda tp: None)
    monkeypatch.setattr(run, "check_control", lambda control, version: (_ for _ in ()).throw(SystemExit("next")))
    p = plan(tmp_path / "ck", tmp_path, additional_config={"gdn_prefill_backend": backend})
    if refused:
        with pytest.raises(UsageError, match="use --prefill-backend flashinfer or default"):
            served.execute(p, lambda line: None)
    else:
        with pytest.raises(SystemExit, match="next"):
            served.execute(p, lambda line: None)
    assert not p.work.exists()
