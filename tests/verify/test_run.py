"""verify's orchestration without a GPU: sites, verdicts of a control and a target."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vllm_backports.errors import UsageError
from vllm_backports.verify.run import (
    PACKAGE_ROOT,
    Plan,
    check_tiny_model_options,
    conclude,
    engine_env,
    site_version,
)


def stand_in_run(monkeypatch, version: str, engine, reference) -> None:
    """verify's run with stand-ins for what needs a GPU: the release `version` at both sites, the
    tiny Qwen3-Next checkpoint, `engine` for every engine process and `reference` for float32."""
    from vllm_backports.verify import run

    monkeypatch.setattr(run, "preflight", lambda model_class: version)
    monkeypatch.setattr(run, "site_version", lambda site: version)
    monkeypatch.setattr(run, "machine", lambda: {"gpu": "none"})
    monkeypatch.setattr(run.model, "write_model", lambda d, mtp=False, model_class=None, architecture=None: d)
    monkeypatch.setattr(run, "registry_architectures", lambda: {"Qwen3NextForCausalLM"})
    monkeypatch.setattr(run, "run_engine", engine)
    monkeypatch.setattr(run, "Reference", reference)


def row(site: str, scenario: str, errors: int) -> dict:
    return {"site": site, "scenario": scenario, "errors": errors}


def plan(tmp_path: Path, control: Path | None, **kw) -> Plan:
    return Plan(batches=(16,), modes=("graphs",), presets=("ngram",), tp=1, threshold=None, work=tmp_path,
                additional_config={}, control=control, **kw)


def test_a_control_that_fails_and_a_target_that_passes_is_a_proof(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "ngram", 0), row("control", "ngram", 214)]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.31.0")
    assert r["passed"] and r["control_failed"] and r["proof"] == "control fails, target passes"


def test_a_clean_control_makes_the_scenario_weak_not_a_proof(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "ngram", 0), row("control", "ngram", 0)]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.31.0")
    assert r["passed"] and r["control_failed"] is False and r["proof"].startswith("weak")


def test_the_control_never_decides_whether_the_target_passes(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "ngram", 3), row("control", "ngram", 200)]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.31.0")
    assert not r["passed"] and r["proof"] == "target fails"
    assert "proof" not in conclude(rows[:2], 0.2, 1.0, plan(tmp_path, None), "0.31.0")


def test_a_baseline_error_means_no_calibration(tmp_path):
    rows = [row("target", "baseline", 1), row("target", "ngram", 0)]
    assert conclude(rows, 0.2, 1.0, plan(tmp_path, None), "0.31.0")["calibrated"] is False
    assert conclude(rows[1:], 3.5, 1.0, plan(tmp_path, None), "0.31.0")["calibrated"] is False


def test_the_scenario_names_the_model_class_the_plan_ran(tmp_path):
    rows = [row("target", "baseline", 0)]
    assert conclude(rows, 0.2, 1.0, plan(tmp_path, None), "0.31.0")["scenario"]["model_class"] == "qwen3_next"
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, None, model_class="qwen3_5"), "0.31.0")
    assert r["scenario"]["model_class"] == "qwen3_5"


def test_the_control_site_comes_before_this_pythons_vllm(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/opt/site")
    parts = engine_env(None, tmp_path / "ctl")["PYTHONPATH"].split(os.pathsep)
    assert parts == [str(PACKAGE_ROOT), str(tmp_path / "ctl"), "/opt/site"]
    assert engine_env(None)["PYTHONPATH"].split(os.pathsep) == [str(PACKAGE_ROOT), "/opt/site"]


def test_site_version_reads_the_metadata_without_importing(tmp_path):
    info = tmp_path / "vllm-0.31.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.31.0\n")
    assert site_version(tmp_path) == "0.31.0"
    with pytest.raises(UsageError, match="no vLLM installed there"):
        site_version(tmp_path / "empty")


def test_a_crashed_control_is_a_failed_control(tmp_path):
    rows = [row("target", "baseline", 0), row("target", "mtp", 0), {**row("control", "mtp", 0), "crashed": "exit -6"}]
    r = conclude(rows, 0.2, 1.0, plan(tmp_path, tmp_path), "0.28.0")
    assert r["control_failed"] and r["proof"] == "control fails, target passes"


class FakeReference:
    def __init__(self, *args, **kwargs):
        pass

    def regrets(self, prompt, output):
        return [0.0] * len(output)


def fake_session(monkeypatch, tmp_path, crash_on: str):
    """execute() with every GPU step replaced: engines return the prompt's first tokens, and the
    engine of `crash_on` ("control" or "target") dies as a real one does."""
    from vllm_backports.errors import BackportError

    def engine(spec, work, tag, script, site=None):
        dead = site is not None if crash_on == "control" else (site is None and "baseline" not in tag)
        if dead:
            raise BackportError(f"engine run {tag} failed (exit -6): illegal memory access")
        return {"tokens": [p[:4] for p in spec["prompts"]], "tokens_per_s": 1.0, "engine": {"backports": []}}

    stand_in_run(monkeypatch, "0.28.0", engine, FakeReference)
    return Plan(batches=(16,), modes=("graphs",), presets=("mtp",), tp=1, threshold=None, work=tmp_path / "w",
                additional_config={}, control=tmp_path)


def test_execute_records_a_control_engine_that_dies_and_still_judges_the_target(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    # the control site's manifest names what it carries, though its engine never could
    (tmp_path / "vllm" / ".backports").mkdir(parents=True)
    (tmp_path / "vllm" / ".backports" / "manifest.json").write_text('{"applied": [{"id": "gdn-spec-state"}]}')
    result = execute(fake_session(monkeypatch, tmp_path, "control"), lambda line: None)
    control = [r for r in result["rows"] if r["site"] == "control"]
    assert len(control) == 1 and "illegal memory access" in control[0]["crashed"] and control[0]["tokens"] == 0
    assert control[0]["backports"] == ["gdn-spec-state"] and control[0]["engine"] is None
    target = [r for r in result["rows"] if r["site"] == "target" and r["scenario"] == "mtp"]
    assert target[0]["tokens"] > 0 and target[0]["errors"] == 0
    assert result["proof"] == "control fails, target passes"


def test_execute_never_excuses_a_target_engine_that_dies(tmp_path, monkeypatch):
    from vllm_backports.errors import BackportError
    from vllm_backports.verify.run import execute

    with pytest.raises(BackportError, match="illegal memory access"):
        execute(fake_session(monkeypatch, tmp_path, "target"), lambda line: None)


def test_engine_clock_counts_engines_and_estimates_the_rest():
    from vllm_backports.verify.run import EngineClock

    t = [0.0]
    clock = EngineClock(4, now=lambda: t[0])
    assert clock.next("b16-graphs-baseline") == "engine 1/4: b16-graphs-baseline"
    t[0] = 120.0
    assert clock.next("b16-graphs-ngram") == "engine 2/4: b16-graphs-ngram (about 6 min left)"
    t[0] = 240.0
    assert clock.next("b16-graphs-ngram-control") == "engine 3/4: b16-graphs-ngram-control (about 4 min left)"
    t[0] = 400.0
    assert clock.done("reference") == "reference (400 s of engines)"


def test_execute_reports_every_engine_of_the_session(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    lines: list[str] = []
    execute(fake_session(monkeypatch, tmp_path, "control"), lines.append)
    assert [ln.split(":")[0] for ln in lines[:3]] == ["engine 1/3", "engine 2/3", "engine 3/3"]
    assert lines[-1].startswith("reference")


class MarkedReference(FakeReference):
    """Token 1 (eos, never in a prompt) is a wrong choice: an engine that emits it has errors."""

    def regrets(self, prompt, output):
        return [5.0 if t == 1 else 0.1 for t in output]


def tq_session(monkeypatch, tmp_path, control: bool = True, wrong: tuple[str, ...] = ("control",), **kw):
    """execute() of a tq-continuation plan on TurboQuant KV with every GPU step replaced; engines
    on the sites in `wrong` emit wrong tokens. Returns the plan and the specs the engines got."""

    specs: list[dict] = []

    def engine(spec, work, tag, script, site=None):
        specs.append({**spec, "tag": tag, "site": "control" if site else "target", "script": script})
        bad = ("control" if site else "target") in wrong and "baseline" not in tag
        return {"tokens": [[1] * 4 if bad else p[:4] for p in spec["prompts"]], "tokens_per_s": 1.0,
                "engine": {"prefix_cache": {"hits": 4000, "queries": 9000}}}

    stand_in_run(monkeypatch, "0.22.0", engine, MarkedReference)
    p = Plan(batches=(16,), modes=("graphs",), presets=("ngram",), tp=1, threshold=None, work=tmp_path / "w",
             additional_config={}, control=tmp_path if control else None, kv_cache="turboquant_k8v4",
             prompt_set="tq-continuation", prefix_caching="on", **kw)
    return p, specs


def test_tq_continuation_calibrates_on_bf16_and_judges_the_turboquant_baseline(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, specs = tq_session(monkeypatch, tmp_path)
    lines: list[str] = []
    result = execute(p, lines.append)
    assert [(s["tag"], s["site"], s.get("kv_cache_dtype")) for s in specs] == [
        ("b16-graphs-baseline", "target", None),
        ("b16-graphs-no-spec", "target", "turboquant_k8v4"),
        ("b16-graphs-no-spec-control", "control", "turboquant_k8v4"),
        ("b16-graphs-ngram", "target", "turboquant_k8v4"),
        ("b16-graphs-ngram-control", "control", "turboquant_k8v4"),
    ]
    assert all(s["enable_prefix_caching"] is True and s["max_model_len"] == 928 for s in specs)
    assert all(s["max_num_batched_tokens"] == 886 for s in specs)
    assert [ln.split(":")[0] for ln in lines[:5]] == [f"engine {i}/5" for i in range(1, 6)]
    # the scripted drafts follow the plain engine on the run's own KV, not the bf16 one
    ngram = next(s for s in specs if s["tag"] == "b16-graphs-ngram")
    assert ngram["script"].continuations == [q[:4] for q in ngram["prompts"]]
    assert result["calibrated_on"] == "auto" and result["kv_cache"] == "turboquant_k8v4"
    assert result["calibrated"] and result["baseline_worst_regret"] == 0.1 and result["threshold"] == 1.0
    rows = {(r["scenario"], r["site"]): r for r in result["rows"]}
    assert set(rows) == {("baseline", "target"), ("no-spec", "target"), ("no-spec", "control"),
                         ("ngram", "target"), ("ngram", "control")}
    assert rows[("no-spec", "control")]["errors"] == 24 * 4 and rows[("no-spec", "target")]["errors"] == 0
    assert rows[("no-spec", "target")]["engine"]["prefix_cache"] == {"hits": 4000, "queries": 9000}
    assert result["passed"] and result["proof"] == "control fails, target passes"


def test_a_turboquant_baseline_with_errors_fails_the_target_instead_of_the_calibration(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, _ = tq_session(monkeypatch, tmp_path, control=False, wrong=("target",))
    result = execute(p, lambda line: None)
    assert result["calibrated"] and not result["passed"]
    assert {r["scenario"]: r["errors"] for r in result["rows"]} == {"baseline": 0, "no-spec": 96, "ngram": 96}


def test_a_clean_turboquant_baseline_on_the_control_keeps_the_proof_weak(tmp_path, monkeypatch):
    from vllm_backports.verify import run

    p, _ = tq_session(monkeypatch, tmp_path)
    rows = [row("target", "baseline", 0), row("target", "no-spec", 0), row("target", "ngram", 0),
            row("control", "no-spec", 0), row("control", "ngram", 40)]
    r = run.conclude(rows, 0.1, 1.0, p, "0.22.0")
    assert r["control_failed"] is False and r["proof"].startswith("weak")


def test_calibrate_kv_same_keeps_the_turboquant_baseline_as_the_calibration(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, specs = tq_session(monkeypatch, tmp_path, control=False, calibrate_kv="same")
    result = execute(p, lambda line: None)
    assert [(s["tag"], s.get("kv_cache_dtype")) for s in specs] == [
        ("b16-graphs-baseline", "turboquant_k8v4"), ("b16-graphs-ngram", "turboquant_k8v4")]
    assert result["calibrated_on"] == "turboquant_k8v4"


@pytest.mark.parametrize(("kv_cache", "prompt_set", "calibrate_kv", "on_auto"), [
    ("turboquant_k8v4", "tq-continuation", None, True),
    ("turboquant_k8v4", "tq-continuation", "same", False),
    ("turboquant_k8v4", "random", None, False),
    ("turboquant_k8v4", "random", "auto", True),
    ("auto", "tq-continuation", None, False),
    ("auto", "random", "auto", False),  # a bf16 run's own baseline is already one
])
def test_which_baseline_calibrates(tmp_path, kv_cache, prompt_set, calibrate_kv, on_auto):
    from vllm_backports.verify.run import calibrates_on_auto, engine_count

    p = plan(tmp_path, tmp_path, kv_cache=kv_cache, prompt_set=prompt_set, calibrate_kv=calibrate_kv,
             prefix_caching="on")
    assert calibrates_on_auto(p) is on_auto
    assert engine_count(p) == (5 if on_auto else 3)
    expected = "auto" if on_auto else kv_cache
    assert conclude([row("target", "baseline", 0)], 0.1, 1.0, p, "0.22.0")["calibrated_on"] == expected


@pytest.mark.parametrize("prompt_set", ["tq-continuation", "producer-consumer"])
@pytest.mark.parametrize("prefix_caching", ["default", "off"])
def test_a_prefix_cache_prompt_set_without_prefix_caching_on_is_refused_before_anything_starts(
        tmp_path, monkeypatch, prefix_caching, prompt_set):
    from vllm_backports.verify import run

    monkeypatch.setattr(run, "preflight", lambda model_class: pytest.fail("started"))
    p = plan(tmp_path, None, prompt_set=prompt_set, prefix_caching=prefix_caching)
    with pytest.raises(UsageError) as err:
        run.execute(p, lambda line: None)
    assert str(err.value) == (
        f"--prompts {prompt_set} needs --prefix-caching on (its prompts are there to hit the prefix cache)")
    assert not (tmp_path / "model").exists()


def test_an_unknown_calibrate_kv_is_refused(tmp_path):
    from vllm_backports.verify.run import check_plan

    with pytest.raises(UsageError, match="calibrate_kv 'fp8' is not one of same, auto"):
        check_plan(plan(tmp_path, None, calibrate_kv="fp8"))
    check_plan(plan(tmp_path, None, calibrate_kv="auto"))


def test_earlier_plans_start_the_engines_they_always_started(tmp_path, monkeypatch):
    from vllm_backports.verify.run import engine_count

    assert engine_count(plan(tmp_path, None)) == 2
    assert engine_count(plan(tmp_path, tmp_path, kv_cache="turboquant_k8v4")) == 3


class RoundsReference(MarkedReference):
    """Prompt token logprobs are -1.0 everywhere, output token logprobs -2.0 (what a clean engine
    returns, up to noise)."""

    def prompt_logprobs(self, prompt):
        return [-1.0] * (len(prompt) - 1)

    def output_logprobs(self, prompt, output):
        return [-2.0] * len(output)


def rounds_session(monkeypatch, tmp_path, *, bad_round: int | None = None, bad_logprobs_on: str | None = None,
                   baseline_noise: float = 0.1, shifted_on: str | None = None, shifted_from: int = 1, **kw):
    """execute() of an MTP plan with a control, every GPU step replaced: the control's engine
    emits wrong tokens from round `bad_round` on; the engines of `bad_logprobs_on` ("control",
    "target") return prompt logprobs 4 nats off at token 2; the baseline's are off by
    `baseline_noise`; output logprobs are the reference's, the baseline's off by a tenth of
    `baseline_noise` at one token, those of `shifted_on` ("control", "target", "baseline") 0.05
    nats off at every token of every other sequence from round `shifted_from` on. Returns the plan
    and the specs the engines got."""

    specs: list[dict] = []

    def engine(spec, work, tag, script, site=None):
        where = "control" if site else "target"
        specs.append({**spec, "tag": tag, "site": where})
        baseline = "baseline" in tag

        def one_round(r: int) -> dict:
            wrong = where == "control" and not baseline and bad_round is not None and r >= bad_round
            out: dict = {"tokens": [[1] * 4 if wrong else p[:4] for p in spec["prompts"]]}
            # an empty prefix cache in round 1, then every other request hits 160 tokens
            out["cached_tokens"] = [160 * (r > 1 and i % 2) for i in range(len(spec["prompts"]))]
            if spec.get("prompt_logprobs"):
                off = -1.0 - (baseline_noise if baseline else 0.0)
                lps = [[None] + [off] * (len(p) - 1) for p in spec["prompts"]]
                if where == bad_logprobs_on and not baseline:
                    for lp in lps:
                        lp[2] = -5.0
                out["prompt_logprobs"] = lps
            if spec.get("output_logprobs"):
                olps = [[-2.0] * len(t) for t in out["tokens"]]
                shifted = ("baseline" if baseline else where) == shifted_on and r >= shifted_from
                for i, lp in enumerate(olps):
                    if baseline:
                        lp[0] -= baseline_noise / 10
                    if shifted and i % 2:
                        olps[i] = [x - 0.05 for x in olps[i]]
                out["output_logprobs"] = olps
            return out

        rounds = [one_round(r) for r in range(1, spec.get("rounds", 1) + 1)]
        out = {**rounds[0], "tokens_per_s": 1.0, "engine": {"backports": []},
               "spec_counters": None if baseline else {"num_accepted_tokens": 100},
               "timed_rounds_accepted": [0 if baseline else 90 - 40 * i for i in range(len(rounds) - 1)]}
        if len(rounds) > 1:
            out["more_rounds"] = rounds[1:]
        if spec.get("check_accepted_counts"):
            out["accepted_counts"] = {"status": "checked", "in_range": True}
        if spec.get("count_align_shifts"):
            out["align_shifts"] = {"status": "counted", "in_block_shifts": {"1": 2}}
        return out

    stand_in_run(monkeypatch, "0.20.0", engine, RoundsReference)
    p = Plan(batches=(1,), modes=("graphs",), presets=("mtp",), tp=1, threshold=None, work=tmp_path / "w",
             additional_config={}, control=tmp_path, **kw)
    return p, specs


def test_every_round_is_judged_and_reported_by_round(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, specs = rounds_session(monkeypatch, tmp_path, bad_round=2, rounds=3)
    assert all(s["rounds"] == 3 for s in specs)
    result = execute(p, lambda line: None)
    control = next(r for r in result["rows"] if r["site"] == "control")
    # a clean first round, then failing ones: the signature of state that outlives requests
    assert [x["errors"] for x in control["rounds"]] == [0, 48, 48]
    assert [x["same_as_baseline"] for x in control["rounds"]] == [12, 0, 0]
    assert [x["accepted"] for x in control["rounds"]] == [100, 90, 50]
    half = control["sequences"] // 3 // 2
    assert [x["prefix_hit_lengths"] for x in control["rounds"]] == [{"0": 2 * half}] + [{"0": half, "160": half}] * 2
    assert control["prefix_hit_lengths"] == {"0": 4 * half, "160": 2 * half}  # the row's: every round
    assert control["errors"] == 96 and control["sequences"] == 36 and control["tokens"] == 144
    target = next(r for r in result["rows"] if r["site"] == "target" and r["scenario"] == "mtp")
    assert [x["errors"] for x in target["rounds"]] == [0, 0, 0] and target["sequences"] == 36
    base = next(r for r in result["rows"] if r["scenario"] == "baseline")
    assert [x["accepted"] for x in base["rounds"]] == [None, None, None]
    assert result["scenario"]["rounds"] == 3 and result["proof"] == "control fails, target passes"


def test_one_round_sends_and_returns_what_it_always_did(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, specs = rounds_session(monkeypatch, tmp_path, bad_round=1)
    sent = {k for s in specs for k in s}
    assert not {"rounds", "prompt_logprobs", "output_logprobs", "check_accepted_counts", "count_align_shifts"} & sent
    result = execute(p, lambda line: None)
    assert "prompt_logprobs" not in result and "output_logprobs" not in result
    extras = {"rounds", "prompt_logprobs", "output_logprobs", "accepted_counts", "align_shifts"}
    assert not any(extras & set(r) for r in result["rows"])
    assert result["proof"] == "control fails, target passes"


def test_prompt_logprobs_calibrate_on_the_baseline_and_fail_the_site_that_strays(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, _ = rounds_session(monkeypatch, tmp_path, bad_logprobs_on="control", baseline_noise=0.7, prompt_logprobs=True)
    result = execute(p, lambda line: None)
    assert result["prompt_logprobs"] == {"threshold": 1.4, "baseline_worst_difference": 0.7, "calibrated": True}
    control = next(r for r in result["rows"] if r["site"] == "control")
    # the tokens are clean (sampling came before the drafter); the prompt logprobs are not
    assert control["errors"] == 0
    assert control["prompt_logprobs"]["errors"] == 12 and control["prompt_logprobs"]["first_error_at"] == 2
    assert control["prompt_logprobs"]["positions"] == 12 * 39
    target = next(r for r in result["rows"] if r["site"] == "target" and r["scenario"] == "mtp")
    assert target["prompt_logprobs"]["errors"] == 0
    assert result["passed"] and result["calibrated"] and result["proof"] == "control fails, target passes"


def test_prompt_logprob_errors_on_the_target_fail_it(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, _ = rounds_session(monkeypatch, tmp_path, bad_logprobs_on="target", prompt_logprobs=True, rounds=2)
    result = execute(p, lambda line: None)
    target = next(r for r in result["rows"] if r["site"] == "target" and r["scenario"] == "mtp")
    assert target["errors"] == 0 and target["prompt_logprobs"]["errors"] == 24
    assert [x["prompt_logprob_errors"] for x in target["rounds"]] == [12, 12]
    assert not result["passed"] and result["proof"] == "target fails"


def test_a_baseline_whose_prompt_logprobs_stray_means_no_calibration(tmp_path, monkeypatch):
    from vllm_backports.verify.run import CALIBRATION_CAP, execute

    p, _ = rounds_session(monkeypatch, tmp_path, baseline_noise=CALIBRATION_CAP + 0.5, prompt_logprobs=True)
    result = execute(p, lambda line: None)
    assert result["baseline_worst_regret"] <= CALIBRATION_CAP
    assert not result["prompt_logprobs"]["calibrated"] and not result["calibrated"]


def test_output_logprobs_calibrate_on_the_baseline_and_fail_the_site_whose_sequences_shift(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, specs = rounds_session(monkeypatch, tmp_path, shifted_on="control", baseline_noise=0.1, output_logprobs=True)
    assert all(s.get("output_logprobs") for s in specs)
    result = execute(p, lambda line: None)
    # the baseline's worst sequence: one token of four off by 0.01, a mean of 0.0025, times 3
    assert result["output_logprobs"] == {
        "threshold": 0.0075, "baseline_worst_mean_difference": 0.0025, "calibrated": True}
    control = next(r for r in result["rows"] if r["site"] == "control")
    # its tokens are the model's; every other sequence's logprobs sit 0.05 nats off
    assert control["errors"] == 0 and control["output_logprobs"]["errors"] == 6
    assert control["output_logprobs"]["worst_mean_difference"] == 0.05
    target = next(r for r in result["rows"] if r["site"] == "target" and r["scenario"] == "mtp")
    assert target["output_logprobs"]["errors"] == 0
    assert result["scenario"]["output_logprobs"] is True
    assert result["passed"] and result["calibrated"] and result["proof"] == "control fails, target passes"


def test_output_logprob_drift_on_the_target_fails_it(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, _ = rounds_session(monkeypatch, tmp_path, shifted_on="target", baseline_noise=0.0, output_logprobs=True)
    result = execute(p, lambda line: None)
    assert result["output_logprobs"]["threshold"] == 0.005  # a baseline without noise: the floor
    target = next(r for r in result["rows"] if r["site"] == "target" and r["scenario"] == "mtp")
    assert target["errors"] == 0 and target["output_logprobs"]["errors"] == 6
    assert not result["passed"] and result["proof"] == "target fails"


def test_output_logprob_drift_is_judged_by_round(tmp_path, monkeypatch):
    from vllm_backports.verify.report import verdict
    from vllm_backports.verify.run import execute

    # the control drifts from round 2 on: a clean first round, then state that outlives requests
    p, _ = rounds_session(monkeypatch, tmp_path, shifted_on="control", shifted_from=2, rounds=3, output_logprobs=True)
    result = execute(p, lambda line: None)
    control = next(r for r in result["rows"] if r["site"] == "control")
    assert [x["output_logprob_errors"] for x in control["rounds"]] == [0, 6, 6]
    assert control["output_logprobs"]["errors"] == 12 and control["output_logprobs"]["sequences"] == 36
    assert result["proof"] == "control fails, target passes"
    # the plain engine drifting in round 2: only its first round calibrates, and the round is named
    p, _ = rounds_session(monkeypatch, tmp_path, shifted_on="baseline", shifted_from=2, rounds=2, output_logprobs=True)
    result = execute(p, lambda line: None)
    base = next(r for r in result["rows"] if r["scenario"] == "baseline")
    assert [x["output_logprob_errors"] for x in base["rounds"]] == [0, 6] and not result["calibrated"]
    line, code = verdict(result)
    assert code == 2 and "the plain baseline's round 2 strays from the reference" in line


def test_a_baseline_whose_output_logprobs_stray_means_no_calibration(tmp_path, monkeypatch):
    from vllm_backports.verify.run import OUTPUT_LOGPROB_CAP, execute

    # one token of four off by a tenth of the noise: a mean of noise / 40
    p, _ = rounds_session(monkeypatch, tmp_path, baseline_noise=40 * (OUTPUT_LOGPROB_CAP + 0.1), output_logprobs=True)
    result = execute(p, lambda line: None)
    assert not result["output_logprobs"]["calibrated"] and not result["calibrated"]


@pytest.mark.parametrize(("option", "key", "report"), [
    ("check_accepted_counts", "accepted_counts", {"status": "checked", "in_range": True}),
    ("count_align_shifts", "align_shifts", {"status": "counted", "in_block_shifts": {"1": 2}}),
])
def test_the_debug_counts_go_to_speculative_engines_only(tmp_path, monkeypatch, option, key, report):
    from vllm_backports.verify.run import execute

    p, specs = rounds_session(monkeypatch, tmp_path, **{option: True})
    assert [s.get(option) for s in specs] == []  # nothing ran yet
    result = execute(p, lambda line: None)
    assert [(s["tag"], s.get(option)) for s in specs] == [
        ("b1-graphs-baseline", None), ("b1-graphs-mtp", True), ("b1-graphs-mtp-control", True)]
    assert [r.get(key) for r in result["rows"]] == [None, report, report]
    assert result["scenario"][option] is True


def test_rounds_below_one_are_refused(tmp_path):
    from vllm_backports.verify.run import check_plan

    with pytest.raises(UsageError, match="rounds 0: at least 1"):
        check_plan(plan(tmp_path, None, rounds=0))


def test_only_the_plain_engines_first_round_calibrates_and_its_later_rounds_are_judged():
    from vllm_backports.verify.run import score, verdicts

    base = {"scenario": "baseline", "site": "target", "batch": 1, "mode": "graphs", "prompts": [[2], [3]],
            "tokens": [[5], [6]], "baseline_tokens": [[5], [6]], "tokens_per_s": 1.0,
            "more_rounds": [{"tokens": [[5], [7]]}]}
    rows, noise, threshold = score([(base, [[0.2], [0.3], [0.1], [2.5]])], None)
    assert (noise, threshold) == (0.3, 1.0)  # 2.5 comes from round 2: judged, not calibrating
    assert [x["errors"] for x in rows[0]["rounds"]] == [0, 1] and rows[0]["errors"] == 1
    assert [x["same_as_baseline"] for x in rows[0]["rounds"]] == [2, 1]
    assert not verdicts(rows, noise, False)["calibrated"]


@pytest.mark.parametrize(
    ("registered", "architecture", "text_only"),
    [
        # vLLM 0.27.0 and later: the text-only class
        ({"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"}, "Qwen3_5ForCausalLM", False),
        # vLLM 0.17.0 .. 0.26.0: only the multimodal class, started with language_model_only
        ({"Qwen3_5ForConditionalGeneration", "Qwen3_5MTP"}, "Qwen3_5ForConditionalGeneration", True),
    ],
)
def test_the_registry_decides_the_checkpoints_architecture_and_text_only_engines(
    tmp_path, monkeypatch, registered, architecture, text_only
):
    from vllm_backports.verify import run

    written, specs = [], []

    def write_model(d, mtp=False, model_class=None, architecture=None):
        written.append((model_class, architecture))
        return d

    def engine(spec, work, tag, script, site=None):
        specs.append(spec)
        return {"tokens": [p[:4] for p in spec["prompts"]], "tokens_per_s": 1.0, "engine": {}}

    monkeypatch.setattr(run, "preflight", lambda model_class: "0.26.0")
    monkeypatch.setattr(run, "machine", lambda: {"gpu": "none"})
    monkeypatch.setattr(run, "registry_architectures", lambda: registered)
    monkeypatch.setattr(run.model, "write_model", write_model)
    monkeypatch.setattr(run, "run_engine", engine)
    monkeypatch.setattr(run, "Reference", FakeReference)
    result = run.execute(plan(tmp_path, None, model_class="qwen3_5"), lambda line: None)
    assert written == [("qwen3_5", architecture)]
    assert len(specs) == 2 and all(s.get("text_only", False) is text_only for s in specs)
    assert result["scenario"]["architecture"] == architecture


def test_prefix_hit_lengths_count_requests_by_cached_prompt_tokens():
    from vllm_backports.verify.run import hit_lengths

    assert hit_lengths([320, 160, 0, 320, None]) == {"0": 1, "160": 1, "320": 2}
    assert list(hit_lengths([320, 0, 160])) == ["0", "160", "320"]  # increasing, not first seen
    assert hit_lengths(None) is None and hit_lengths([None, None]) is None


def test_sequences_split_by_round_in_the_order_the_engine_returned_them():
    from vllm_backports.verify.run import by_round

    seqs = [[0.1], [0.2], [0.3], [0.4], [0.5], [0.6]]
    assert by_round(seqs, 1) == [seqs]
    assert by_round(seqs, 3) == [[[0.1], [0.2]], [[0.3], [0.4]], [[0.5], [0.6]]]
    assert by_round([], 2) == [[], []]


def test_the_references_prompt_logprobs_are_computed_once_a_prompt():
    from vllm_backports.verify.run import PromptLogprobs

    asked = []

    class Counting:
        def prompt_logprobs(self, prompt):
            asked.append(list(prompt))
            return [-float(len(prompt))] * (len(prompt) - 1)

    reference = PromptLogprobs(Counting())
    assert reference([1, 2, 3]) == [-3.0, -3.0] and reference([1, 2, 3]) == [-3.0, -3.0]
    assert reference([4, 5]) == [-2.0]
    assert asked == [[1, 2, 3], [4, 5]]


def tiny(**kw) -> str:
    words = {"model_class": "qwen3_next", "prefill_backend": "default", "prompt_set": None, "max_tokens": None,
             "max_num_batched_tokens": None, "float32_reference": False} | kw
    return check_tiny_model_options(**words)


def test_the_tiny_model_takes_its_prompt_sets_random_by_default():
    assert tiny() == "random"
    assert tiny(prompt_set="churn") == "churn"
    assert tiny(model_class="qwen3_5", prefill_backend="flashinfer") == "random"


@pytest.mark.parametrize(("words", "message"), [
    (dict(max_tokens=64), "--max-tokens goes with --model (the tiny model's runs fix their own)"),
    (dict(max_num_batched_tokens=512), "--max-num-batched-tokens goes with --model (the tiny model's runs fix "
                                       "their own)"),
    (dict(float32_reference=True), "--float32-reference goes with --model (without it, verify always judges by "
                                   "float32)"),
    (dict(prefill_backend="flashinfer"), "--prefill-backend flashinfer: FlashInfer's GDN prefill runs heads of 128 "
                                         "only; the qwen3_next tiny model has 64 (use --model-class qwen3_5 or "
                                         "qwen3_5_moe)"),
    (dict(prompt_set="prompts.jsonl"), "--prompts prompts.jsonl: not one of the tiny model's prompt sets (align-shifts, churn, "
                                       "k-plus-1, long-chunked, one-token, producer-consumer, prompt-tail, random, "
                                       "shared-prefix, tool-calls, tq-continuation); a JSONL file of prompts goes "
                                       "with --model or --server"),
    # the first refusal wins: a --model option before the prompt set
    (dict(max_tokens=64, prompt_set="prompts.jsonl"), "--max-tokens goes with --model"),
])
def test_the_tiny_model_refuses_what_its_plan_cannot_take(words, message):
    with pytest.raises(UsageError) as caught:
        tiny(**words)
    assert str(caught.value).startswith(message)


def ngram_session(monkeypatch, tmp_path, served: dict[str, int], **kw):
    """execute() of an ngram plan with a control, every GPU step replaced: each site's speculative
    engine says how many proposer calls its script served (`served`, by site). Returns the plan
    and the specs the engines got."""

    specs: list[dict] = []

    def engine(spec, work, tag, script, site=None):
        where = "control" if site else "target"
        specs.append({**spec, "tag": tag})
        out = {"tokens": [p[:4] for p in spec["prompts"]], "tokens_per_s": 1.0, "engine": {"backports": []}}
        return out if script is None else {**out, "scripted": True, "script_served": served[where]}

    stand_in_run(monkeypatch, "0.33.0", engine, FakeReference)
    p = Plan(batches=(16,), modes=("graphs",), presets=("ngram",), tp=1, threshold=None, work=tmp_path / "w",
             additional_config={}, control=tmp_path, **kw)
    return p, specs


@pytest.mark.parametrize("unasked", ["target", "control"])
def test_a_script_vllm_never_asked_fails_the_verify_and_is_no_failed_control(tmp_path, monkeypatch, unasked):
    from vllm_backports.errors import DraftsNotServed
    from vllm_backports.verify.run import execute

    p, _ = ngram_session(monkeypatch, tmp_path, {"target": 5, "control": 5, unasked: 0})
    with pytest.raises(DraftsNotServed, match=r"b16-graphs-ngram.*never asked.*--model-runner v1") as caught:
        execute(p, lambda line: None)
    assert caught.value.exit_code == 2


def test_the_model_runner_asked_reaches_every_engine_and_the_result(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    p, specs = ngram_session(monkeypatch, tmp_path, {"target": 5, "control": 5}, model_runner="v1")
    result = execute(p, lambda line: None)
    assert specs and all(s["model_runner"] == "v1" for s in specs)
    # scripted rows say what the script served; the baseline, unscripted, says nothing of it
    served = {r["site"]: r.get("script_served") for r in result["rows"] if r["scenario"] == "ngram"}
    assert served == {"target": 5, "control": 5}
    assert all("script_served" not in r for r in result["rows"] if r["scenario"] == "baseline")
    assert result["scenario"]["model_runner"] == "v1" and result["proof"] == "weak: the control passes too"
    # left to the release, the specs say nothing of it (earlier plans send what they always sent)
    p, specs = ngram_session(monkeypatch, tmp_path / "again", {"target": 5, "control": 5})
    assert execute(p, lambda line: None)["scenario"]["model_runner"] == "default"
    assert specs and not any("model_runner" in s for s in specs)


def test_an_unknown_model_runner_is_refused(tmp_path):
    from vllm_backports.errors import UsageError
    from vllm_backports.verify.run import check_plan

    with pytest.raises(UsageError, match="model_runner 'v3' is not one of default, v1, v2"):
        check_plan(plan(tmp_path, None, model_runner="v3"))


TEARDOWN = (
    "[rank0]:[W1127 17:04:12.700241722 ProcessGroupNCCL.cpp:1575] Warning: WARNING: destroy_process_group() "
    "was not called before program exit, which can leak resources."
)


def test_crash_line_skips_teardown_warnings_for_the_exception():
    from vllm_backports.verify.run import crash_line

    log = "\n".join([
        "INFO 11-27 17:03:58 [core.py:340] init engine took 52.24 s",
        "Traceback (most recent call last):",
        '  File "turboquant_attn.py", line 412, in forward',
        "(EngineCore_DP0 pid=4121) torch.AcceleratorError: CUDA error: an illegal memory access was encountered",
        "/usr/lib/python3.12/multiprocessing/resource_tracker.py:279: UserWarning: leaked semaphore objects",
        TEARDOWN,
    ])
    assert crash_line(log) == (
        "(EngineCore_DP0 pid=4121) torch.AcceleratorError: CUDA error: an illegal memory access was encountered"
    )


def test_crash_line_prefers_the_cause_to_the_exception_that_wraps_it():
    from vllm_backports.verify.run import crash_line

    log = "\n".join([
        "NotImplementedError: TurboQuant does not support speculative decoding with k > 1",
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
        "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue.",
        TEARDOWN,
    ])
    assert crash_line(log).startswith("NotImplementedError: TurboQuant")
    # with only wrappers, the last of them still beats a warning
    assert crash_line("\n".join(log.splitlines()[1:])).startswith("vllm.v1.engine.exceptions.EngineDeadError")


def test_crash_line_falls_back_to_the_last_line_or_says_there_was_none():
    from vllm_backports.verify.run import crash_line

    assert crash_line("loading weights\nSegmentation fault (core dumped)\n") == "Segmentation fault (core dumped)"
    assert crash_line("  \n\n") == "no output"
    # a warning category is not an exception that ended the run
    assert crash_line("UserWarning: something\nKilled") == "Killed"


def test_a_dead_engine_reports_its_exception_line_and_its_log(tmp_path, monkeypatch):
    import subprocess

    from vllm_backports.errors import BackportError
    from vllm_backports.verify import run

    def dies(cmd, env, stdout, stderr, check):
        stdout.write("ValueError: block_size 160 is not a multiple of 16\n" + TEARDOWN + "\n")
        return subprocess.CompletedProcess(cmd, 1)

    monkeypatch.setattr(run.subprocess, "run", dies)
    with pytest.raises(BackportError) as err:
        run.run_engine({"prompts": []}, tmp_path, "b16-graphs-mtp-control", None)
    assert "(exit 1): ValueError: block_size 160" in str(err.value)
    assert str(tmp_path / "b16-graphs-mtp-control.log") in str(err.value)


@pytest.mark.parametrize(
    "line",
    [
        "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
        "(EngineCore_DP0 pid=7) ERROR 11-27 17:04:12 [core.py:708] ValueError: block_size 160 is not a multiple of 16",
        "  what():  CUDA error: an illegal memory access was encountered",
    ],
)
def test_crash_line_reads_rank_logger_and_cxx_prefixes(line):
    from vllm_backports.verify.run import crash_line

    log = "\n".join([
        "INFO 11-27 17:03:58 [core.py:340] starting",
        line,
        "Exception: Call to collective_rpc method failed",
        "frame #50: _start + 0x25 (0x5a1b2c in /usr/bin/python3)",
        TEARDOWN,
    ])
    assert crash_line(log) == line.strip()


def scenario_session(monkeypatch, tmp_path, prompt_set: str, presets: tuple[str, ...], **kw):
    """execute() of a plan of `prompt_set` with a control, every GPU step replaced (engines return
    a prompt's first tokens). Returns the result and the specs the engines got."""
    from vllm_backports.verify.run import execute

    specs: list[dict] = []

    def engine(spec, work, tag, script, site=None):
        specs.append({**spec, "tag": tag, "site": "control" if site else "target", "script": script})
        out = {"tokens": [p[:4] for p in spec["prompts"]], "tokens_per_s": 1.0, "engine": {"backports": []}}
        return out if script is None else {**out, "scripted": True, "script_served": 3}

    stand_in_run(monkeypatch, "0.27.0", engine, FakeReference)
    p = Plan(batches=(16,), modes=("graphs",), presets=presets, tp=1, threshold=None, work=tmp_path / "w",
             additional_config={}, control=tmp_path, prompt_set=prompt_set, **kw)
    return execute(p, lambda line: None), specs


def test_long_chunked_engines_get_its_length_and_budget_and_the_json_its_longest_prompt(tmp_path, monkeypatch):
    from vllm_backports.verify.scenarios import PRESETS

    result, specs = scenario_session(monkeypatch, tmp_path, "long-chunked", ("mtp",), kv_cache="turboquant_k8v4")
    assert [(s["tag"], s["site"]) for s in specs] == [
        ("b16-graphs-baseline", "target"), ("b16-graphs-mtp", "target"), ("b16-graphs-mtp-control", "control")]
    for s in specs:
        assert (s["max_model_len"], s["max_num_batched_tokens"], s["max_tokens"]) == (4096, 512, 128)
        assert s["kv_cache_dtype"] == "turboquant_k8v4" and len(s["prompts"]) == 16
        assert max(map(len, s["prompts"])) == 3936 and s["script"] is None
    assert [s.get("speculative") for s in specs] == [None, PRESETS["mtp"], PRESETS["mtp"]]
    assert result["scenario"]["max_prompt_tokens"] == 3936
    assert [r["max_prompt_tokens"] for r in result["rows"]] == [3936] * 3


def test_one_token_engines_get_a_script_of_its_prompts_and_the_small_kv_pool_asked(tmp_path, monkeypatch):
    result, specs = scenario_session(monkeypatch, tmp_path, "one-token", ("ngram",), kv_cache_gib=0.02)
    assert all(s["kv_cache_memory_bytes"] == int(0.02 * 2**30) and s["max_tokens"] == 24 for s in specs)
    scripted = [s for s in specs if s["script"] is not None]
    assert [s["tag"] for s in scripted] == ["b16-graphs-ngram", "b16-graphs-ngram-control"]
    for s in scripted:
        script = s["script"]
        assert script.prompts == s["prompts"] and len(s["prompts"]) == 64
        assert all(script.request_of(p) == i for i, p in enumerate(s["prompts"]))
    assert result["scenario"]["max_prompt_tokens"] == 40 and result["passed"]


def test_align_shift_engines_get_a_script_that_lands_rows_on_the_align_block(tmp_path, monkeypatch):
    from vllm_backports.verify import scenarios

    result, specs = scenario_session(monkeypatch, tmp_path, "align-shifts", ("ngram",), prefix_caching="on",
                                     count_align_shifts=True)
    scripted = [s for s in specs if s["script"] is not None]
    assert [s["tag"] for s in scripted] == ["b16-graphs-ngram", "b16-graphs-ngram-control"]
    assert all(s["script"].land_on == scenarios.ALIGN_BLOCK and s["count_align_shifts"] for s in scripted)
    assert all(s.get("drafts_follow_own_output") for s in scripted)
    assert all(s["max_tokens"] == scenarios.ALIGN_SHIFT_MAX_TOKENS for s in specs)
    assert result["scenario"]["max_prompt_tokens"] == scenarios.ALIGN_SHIFT_PROMPT_LEN
    # other prompt sets keep the schedule as it was
    _, specs = scenario_session(monkeypatch, tmp_path / "other", "one-token", ("ngram",))
    assert {s["script"].land_on for s in specs if s["script"] is not None} == {0}
    assert not any(s.get("drafts_follow_own_output") for s in specs)


def test_tool_calls_run_vllms_own_ngram_unscripted_at_each_lookup(tmp_path, monkeypatch):
    from vllm_backports.verify.scenarios import PRESETS

    result, specs = scenario_session(monkeypatch, tmp_path, "tool-calls", ("ngram-vllm", "ngram-vllm-min8"))
    assert all(s["script"] is None and s["max_model_len"] == 512 for s in specs)
    assert [(s["tag"], s.get("speculative")) for s in specs] == [
        ("b16-graphs-baseline", None),
        ("b16-graphs-ngram-vllm", PRESETS["ngram-vllm"]),
        ("b16-graphs-ngram-vllm-control", PRESETS["ngram-vllm"]),
        ("b16-graphs-ngram-vllm-min8", PRESETS["ngram-vllm-min8"]),
        ("b16-graphs-ngram-vllm-min8-control", PRESETS["ngram-vllm-min8"]),
    ]
    longest = max(map(len, specs[0]["prompts"]))
    assert result["scenario"]["max_prompt_tokens"] == longest > 150


def test_a_crashed_controls_row_records_its_longest_prompt_too(tmp_path, monkeypatch):
    from vllm_backports.verify.run import execute

    result = execute(fake_session(monkeypatch, tmp_path, "control"), lambda line: None)
    assert [(r["site"], r["max_prompt_tokens"]) for r in result["rows"]] == [
        ("target", 40), ("target", 40), ("control", 40)]


def test_a_release_without_the_prefill_choice_is_refused_on_hopper_before_any_engine(tmp_path, monkeypatch):
    """vLLM 0.17.1 on an H100 with the default Qwen3-Next class: FlashInfer's prefill would stop
    every engine at its first prefill; verify says so in one line and writes nothing."""
    from vllm_backports.errors import UsageError
    from vllm_backports.verify import run

    stand_in_run(monkeypatch, "0.17.1", lambda *a, **k: pytest.fail("an engine started"), None)
    monkeypatch.setattr(run, "gpu_capability", lambda: (9, 0))
    work = tmp_path / "w"
    with pytest.raises(UsageError, match="vLLM 0.17.1 runs FlashInfer's GDN prefill on every compute capability 9.0"):
        run.execute(plan(work, None), lambda line: None)
    assert not work.exists()


def test_a_work_dir_under_a_folder_it_may_not_read_is_a_usage_error(tmp_path, monkeypatch):
    from vllm_backports.verify.run import work_dir_for

    def denied(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "exists", denied)
    with pytest.raises(UsageError, match=r"^--work-dir .*/w: Permission denied$"):
        with work_dir_for(tmp_path / "w"):
            pass
