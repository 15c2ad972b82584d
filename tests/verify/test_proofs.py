"""The named verify runs: what lab.steps reads of them and what the images' smoke test runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vllm_backports.verify.proofs import BLOCK_TUNED, PROOFS, option, smoke_runs, with_defaults


def test_the_cli_reads_options_and_control_site_and_an_unknown_name_fails():
    def proofs(*args):
        cmd = [sys.executable, "-m", "vllm_backports.verify.proofs", *args]
        return subprocess.run(cmd, capture_output=True, text=True)

    line = proofs("tq-continuation")
    control, *opts = line.stdout.split()
    assert line.returncode == 0 and opts == list(with_defaults(PROOFS["tq-continuation"].options))
    assert control == "less-turboquant-prefill-fastpath"
    assert proofs("tq-mtp").stdout.split()[0] == "ctl" and proofs("mtp").stdout.split()[0] == "raw"
    # a proof's own batch and mode stay, the defaults fill what it leaves out
    assert proofs("plogprobs-mtp-b1-eager").stdout.split()[1:] == [
        "--preset", "mtp", "--batch", "1", "--mode", "eager", "--prompt-logprobs"]
    assert proofs("mtp").stdout.split()[1:] == ["--preset", "mtp", "--batch", "16", "--mode", "graphs"]
    bad = proofs("gdn-ngram-typo")
    assert bad.returncode == 2 and bad.stdout == "" and "one of: gdn-ngram" in bad.stderr


def test_smoke_runs_take_users_shape_and_leave_out_what_the_release_refuses():
    runs = smoke_runs("0.20.0", "triton")
    # vLLM 0.20 refuses TurboQuant on hybrids
    assert "tq-mtp" not in runs and "tq-continuation" not in runs and "gdn-ngram" in runs
    assert {"tq-mtp", "tq-continuation"} <= set(smoke_runs("0.21.0", "triton"))
    ngram = runs["gdn-ngram"]
    assert ngram[ngram.index("--batch") + 1] == "16" and ngram[ngram.index("--mode") + 1] == "graphs"
    # a proof's own batch is kept, not doubled
    assert runs["kp1-b1"].count("--batch") == 1 and "1" in runs["kp1-b1"]
    assert all(r[r.index("--prefill-backend") + 1] == "triton" and "--model-class" not in r for r in runs.values())


def test_smoke_runs_on_flashinfer_take_a_class_whose_heads_it_runs_but_block_tuned_prompts_stay():
    runs = smoke_runs("0.28.0", "flashinfer")

    def backend(r):
        return r[r.index("--prefill-backend") + 1]

    tuned = {n for n, r in runs.items() if "--prompts" in r and r[r.index("--prompts") + 1] in BLOCK_TUNED}
    assert tuned == {"gdn-ngram-prefix", "tq-continuation", "rounds-mtp-prefix"}
    # prompts counted in the Qwen3-Next tiny model's align blocks keep its class, on Triton
    assert all(backend(runs[n]) == "triton" and "--model-class" not in runs[n] for n in tuned)
    rest = [r for n, r in runs.items() if n not in tuned]
    assert rest and all(backend(r) == "flashinfer" and r[r.index("--model-class") + 1] == "qwen3_5" for r in rest)


def test_smoke_runs_on_flashinfer_before_the_prefill_choice_leave_block_tuned_prompts_out():
    """vLLM 0.17.x runs FlashInfer's prefill on Hopper whatever is asked: the prompts tuned to the
    Qwen3-Next class have no Triton run there, and every other proof runs on the Qwen3.5 class."""
    runs, later = smoke_runs("0.17.1", "flashinfer"), smoke_runs("0.18.0", "flashinfer")
    tuned = {n for n, r in later.items() if "--prompts" in r and r[r.index("--prompts") + 1] in BLOCK_TUNED}
    assert tuned and not tuned & set(runs) and set(runs) == set(later) - tuned
    assert all(r[r.index("--prefill-backend") + 1] == "flashinfer" and "qwen3_5" in r for r in runs.values())
    # Ampere's smoke runs of the same release keep them, on Triton
    assert tuned <= set(smoke_runs("0.17.1", "triton"))


def test_ngram_proofs_run_v1_unless_they_name_a_runner_and_others_leave_it():
    for name, proof in PROOFS.items():
        opts = with_defaults(proof.options)
        ngram = opts[opts.index("--preset") + 1] == "ngram"
        runner = opts[opts.index("--model-runner") + 1] if "--model-runner" in opts else None
        ngram = ngram and "--model" not in opts  # verify --model keeps the release's runner (V1 up to 0.31.0)
        assert runner == ("v2" if name in ("gdn-ngram-v2", "tail-ngram-v2") else "v1" if ngram else None), name
    assert with_defaults(("--preset", "ngram", "--model-runner", "v2")).count("--model-runner") == 1


def test_every_proof_names_a_backport_of_the_catalogue_or_is_a_sibling_bugs_positive_control():
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.maint import HOME

    assert {p.fix for p in PROOFS.values()} - {None} <= set(Catalogue(HOME).backports)
    # A proof against the pristine release names the fix it shows, or is one of these, which
    # run the sibling bugs both sites carry: a new one has to say which it is.
    assert {n for n, p in PROOFS.items() if p.fix is None} == {
        "tail-ngram-v2", "churn-mtp-async", "churn-mtp-sync", "pc-mtp", "pc-mtp-lp", "pc-mtp-lp-kv02", "pc-mtp-lp-kv04",
        "kp1-b1", "kp1-mtp",
        "rounds-mtp-prefix", "rounds-mtp", "plogprobs-mtp-b1", "plogprobs-mtp-b1-eager", "counts-mtp-async-churn",
        "churn-mtp-async-nopc", "one-token-ngram", "one-token-ngram-nopc", "ngram-tool-calls", "qwen3_5-mtp-tp2",
        "kda-ngram",
    }
    assert PROOFS["gdn-ngram"].fix == "gdn-spec-state" and PROOFS["kp1-b1-fix"].fix == "spec-prefill-decode-graph"


def test_a_control_that_leaves_a_backport_out_cannot_name_another():
    from vllm_backports.verify.proofs import _p

    assert _p("--preset mtp", "ctl").fix == "turboquant-spec-decode"
    with pytest.raises(ValueError, match="less-spec-prefill-decode-graph control is for the backport it leaves out"):
        _p("--preset ngram", "less-spec-prefill-decode-graph", fix="gdn-spec-state")


def test_proofs_name_known_entries_of_the_catalogue_and_each_newer_report_has_one():
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.maint import HOME

    known = Catalogue(HOME).known
    named = {k for p in PROOFS.values() for k in p.known}
    assert named <= set(known)
    by_entry = {k: sorted(n for n, p in PROOFS.items() if k in p.known) for k in named}
    assert by_entry["tq-mtp-long-repetition"] == ["tq-mtp-long"] and by_entry["tq-mtp-repetition"] == ["tq-mtp-tp2"]
    assert by_entry["gdn-mtp-async-illegal-address"] == ["churn-mtp-async", "churn-mtp-async-nopc"]
    assert by_entry["gdn-one-token-first-chunk"] == ["one-token-ngram"]
    assert by_entry["ngram-tool-calls"] == ["ngram-tool-calls"]
    assert by_entry["spec-tp2-illegal-address"] == ["qwen3_5-mtp-tp2"]
    assert by_entry["kda-builder-routing"] == ["kda-ngram"]
    # every entry not yet run has a proof that runs it
    assert {k for k, e in known.items() if e.status == "not yet run"} <= named


def test_the_newer_reports_proofs_run_what_their_reports_describe():
    assert PROOFS["tq-mtp-long"].control == "ctl" and PROOFS["tq-mtp-long"].turboquant
    assert option(PROOFS["tq-mtp-long"].options, "--prompts") == "long-chunked"
    assert option(PROOFS["tq-mtp-tp2"].options, "--tp") == option(PROOFS["qwen3_5-mtp-tp2"].options, "--tp") == "2"
    # freed state slots handed out again: a pool far smaller than the lab's 2 GiB
    assert option(PROOFS["one-token-ngram"].options, "--kv-cache-gib") == "0.02"
    tools = PROOFS["ngram-tool-calls"].options
    assert [tools[i + 1] for i, o in enumerate(tools) if o == "--preset"] == ["ngram-vllm", "ngram-vllm-min8"]
    nopc = with_defaults(PROOFS["churn-mtp-async-nopc"].options)
    assert option(nopc, "--prefix-caching") == "off" and option(nopc, "--async-scheduling") == "on"


@pytest.mark.parametrize("name", sorted(PROOFS))
def test_every_proofs_options_are_ones_verify_takes(name):
    """Parsed by verify's own command line, and its plan passes the checks made before any
    engine starts: a proof that names an unknown preset or prompt set fails here, not on the GPU."""
    from vllm_backports.cli import verify_cmd
    from vllm_backports.verify.run import Plan, check_plan, check_tiny_model_options

    ctx = verify_cmd.make_context("verify", list(with_defaults(PROOFS[name].options)))
    a = ctx.params
    if a["model"] is not None:  # a checkpoint the lab writes on the GPU machine, judged by verify --model
        from vllm_backports.verify import served
        from vllm_backports.verify.proofs import WRITTEN_MODELS

        assert a["model"] in WRITTEN_MODELS
        served.check_model_options(
            model_class=None, batches=tuple(a["batches"]), prompt_set=a["prompt_set"],
            calibrate_kv=a["calibrate_kv"], rounds=a["rounds"], prompt_logprobs=a["prompt_logprobs"],
            check_accepted_counts=a["check_accepted_counts"], model_runner=a["model_runner"],
            output_logprobs=a["output_logprobs"])
        assert set(a["presets"]) <= set(served.MODEL_PRESETS)
        return
    prompt_set = check_tiny_model_options(
        model_class=a["model_class"], prefill_backend=a["prefill_backend"], prompt_set=a["prompt_set"],
        max_tokens=a["max_tokens"], max_num_batched_tokens=a["max_num_batched_tokens"],
        float32_reference=a["float32_reference"])
    check_plan(Plan(batches=tuple(int(b) for b in a["batches"]), modes=a["modes"], presets=a["presets"], tp=a["tp"],
                    threshold=None, work=Path("w"), additional_config={}, prompt_set=prompt_set,
                    prefix_caching=a["prefix_caching"], async_scheduling=a["async_scheduling"],
                    model_runner=a["model_runner"], rounds=a["rounds"]))
