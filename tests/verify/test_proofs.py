"""The named verify runs: what lab.steps reads of them and what the images' smoke test runs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from vllm_backports.verify.proofs import BLOCK_TUNED, PROOFS, smoke_runs, with_defaults


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


def test_ngram_proofs_run_v1_unless_they_name_a_runner_and_others_leave_it():
    for name, proof in PROOFS.items():
        opts = with_defaults(proof.options)
        ngram = opts[opts.index("--preset") + 1] == "ngram"
        runner = opts[opts.index("--model-runner") + 1] if "--model-runner" in opts else None
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
    }
    assert PROOFS["gdn-ngram"].fix == "gdn-spec-state" and PROOFS["kp1-b1-fix"].fix == "spec-prefill-decode-graph"


def test_a_control_that_leaves_a_backport_out_cannot_name_another():
    from vllm_backports.verify.proofs import _p

    assert _p("--preset mtp", "ctl").fix == "turboquant-spec-decode"
    with pytest.raises(ValueError, match="less-spec-prefill-decode-graph control is for the backport it leaves out"):
        _p("--preset ngram", "less-spec-prefill-decode-graph", fix="gdn-spec-state")
