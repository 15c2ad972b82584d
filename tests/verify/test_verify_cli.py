"""`apply.py verify` where it cannot run: one line, exit 2, nothing written."""

from __future__ import annotations

import importlib.util
import os

import pytest

from cli_runner import run

pytestmark = pytest.mark.skipif(importlib.util.find_spec("vllm") is not None,
                                reason="vLLM is installed here: verify would really run")


def test_without_vllm_verify_refuses_in_one_line(tmp_path):
    work = tmp_path / "work"
    r = run("verify", "--work-dir", str(work))
    assert r.code == 2
    assert r.err.strip().splitlines() == [
        "error: verify needs vLLM installed in this Python (run it in the image), "
        "or --server URL to check a running vLLM server"
    ]
    assert not work.exists()


def test_json_error(tmp_path):
    r = run("verify", "--json", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and r.json["exit_code"] == 2 and "vLLM" in r.json["error"]


@pytest.mark.parametrize("args", [["--batch", "3"], ["--mode", "fast"], ["--threshold", "0"], ["--tp", "0"]])
def test_bad_options_are_usage_errors(tmp_path, args):
    r = run("verify", "--work-dir", str(tmp_path / "w"), *args)
    assert r.code == 2
    assert not (tmp_path / "w").exists()


def test_engine_process_finds_this_package_from_any_directory(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from vllm_backports.verify import drafts
    from vllm_backports.verify.run import PACKAGE_ROOT, engine_env

    env = engine_env(tmp_path / "d.json")
    assert env[drafts.ENV] == str(tmp_path / "d.json")
    assert drafts.ENV not in engine_env(None)
    where = subprocess.run([sys.executable, "-c", "import vllm_backports.verify.engine as e; print(e.__file__)"],
                           cwd=tmp_path, env=env, capture_output=True, text=True, check=True).stdout
    assert Path(where.strip()).is_relative_to(PACKAGE_ROOT)


def test_turboquant_kv_is_refused_where_vllm_refuses_it_on_hybrids():
    from vllm_backports.errors import UsageError
    from vllm_backports.verify.run import check_kv_cache

    with pytest.raises(UsageError, match="0.20.2 refuses TurboQuant KV on hybrid models"):
        check_kv_cache("0.20.2", "turboquant_k8v4")
    check_kv_cache("0.21.0", "turboquant_k8v4")
    check_kv_cache("0.20.0", "auto")


def test_unknown_kv_cache_is_a_usage_error_and_writes_nothing(tmp_path):
    r = run("verify", "--kv-cache", "fp4", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and "'fp4' is not one of" in r.err
    assert not (tmp_path / "w").exists()


def test_unknown_model_class_is_a_usage_error_and_writes_nothing(tmp_path):
    r = run("verify", "--model-class", "llama", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and r.err.strip().splitlines() == [
        "error: Invalid value for '--model-class': 'llama' is not one of 'qwen3_next', 'qwen3_5', 'qwen3_5_moe'."]
    r = run("verify", "--model-class", "llama", "--json", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and r.json["exit_code"] == 2 and "'llama' is not one of" in r.json["error"]
    assert "\n" not in r.out.strip()
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("name", ["qwen3_next", "qwen3_5", "qwen3_5_moe"])
def test_every_model_class_is_accepted_up_to_the_vllm_check(tmp_path, name):
    r = run("verify", "--model-class", name, "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and "verify needs vLLM installed" in r.err
    assert not (tmp_path / "w").exists()



@pytest.mark.parametrize("as_json", [True, False])
def test_a_crashed_control_renders_and_the_result_is_kept_first(tmp_path, monkeypatch, as_json):
    from vllm_backports.verify import run as verify_run

    work = tmp_path / "w"
    crashed = {"scenario": "mtp", "site": "control", "batch": 16, "mode": "graphs", "sequences": 24, "tokens": 0,
               "errors": 0, "worst_regret": None, "first_error_at": None, "bad_sequences": 0, "crashed": "exit -6",
               "exercised": None, "same_as_baseline": 0, "tokens_per_s": 0.0, "start_s": 0.0, "engine": None,
               "regrets": []}
    target = {**crashed, "site": "target", "tokens": 3072, "worst_regret": 0.05, "crashed": None}
    del target["crashed"]
    result = {"vllm": "0.28.0", "kv_cache": "turboquant_k8v4", "threshold": 1.0, "baseline_worst_regret": 0.05,
              "calibrated": True, "passed": True, "control_failed": True, "proof": "control fails, target passes",
              "rows": [target, crashed]}

    def fake_execute(plan, progress):
        plan.work.mkdir(parents=True)
        return result

    monkeypatch.setattr(verify_run, "execute", fake_execute)
    monkeypatch.setenv("COLUMNS", "250")  # rich truncates cells to the terminal's width
    r = run("verify", "--work-dir", str(work), *(["--json"] if as_json else []))
    assert r.code == 0
    assert (work / "verify.json").exists()
    if as_json:
        assert r.json["rows"][1]["crashed"] == "exit -6"
    else:
        assert "crashed" in r.out and "control fails" in r.out


def test_tq_continuation_without_prefix_caching_is_refused_in_one_line(tmp_path):
    r = run("verify", "--prompts", "tq-continuation", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and r.err.strip().splitlines() == [
        "error: --prompts tq-continuation needs --prefix-caching on (its prompts are there to hit the prefix cache)"]
    r = run("verify", "--prompts", "tq-continuation", "--prefix-caching", "on", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and "verify needs vLLM installed" in r.err  # accepted up to the vLLM check
    assert not (tmp_path / "w").exists()


def test_unknown_calibrate_kv_is_a_usage_error(tmp_path):
    r = run("verify", "--calibrate-kv", "fp8", "--work-dir", str(tmp_path / "w"))
    assert r.code == 2 and "'fp8' is not one of 'same', 'auto'" in r.err
    assert not (tmp_path / "w").exists()


def test_the_title_says_when_a_bf16_baseline_calibrated(tmp_path, monkeypatch):
    from vllm_backports.verify import run as verify_run

    result = {"vllm": "0.22.0", "kv_cache": "turboquant_k8v4", "calibrated_on": "auto", "threshold": 1.0,
              "baseline_worst_regret": 0.2, "calibrated": True, "passed": True,
              "rows": [{"scenario": "no-spec", "site": "target", "batch": 16, "mode": "graphs", "sequences": 24,
                        "tokens": 3072, "errors": 0, "worst_regret": 0.2, "first_error_at": None, "bad_sequences": 0,
                        "exercised": None, "same_as_baseline": 24, "tokens_per_s": 1.0, "start_s": 0.0,
                        "engine": {"prefix_cache": {"hits": 4000, "queries": 9000}}, "regrets": []}]}

    def fake_execute(plan, progress):
        assert plan.calibrate_kv == "auto" and plan.prompt_set == "tq-continuation"
        plan.work.mkdir(parents=True)
        return result

    monkeypatch.setattr(verify_run, "execute", fake_execute)
    monkeypatch.setenv("COLUMNS", "250")
    r = run("verify", "--prompts", "tq-continuation", "--prefix-caching", "on", "--calibrate-kv", "auto",
            "--kv-cache", "turboquant_k8v4", "--work-dir", str(tmp_path / "w"))
    assert r.code == 0 and "baseline worst 0.20 on KV auto)" in r.out


def test_a_release_without_the_prefill_choice_is_refused_what_hopper_would_run():
    """vLLM 0.17.x runs FlashInfer's GDN prefill on every capability 9.0 GPU whatever is asked: a
    model of other heads, or an explicit Triton prefill, is refused before engines start."""
    from vllm_backports.errors import UsageError
    from vllm_backports.verify.run import check_prefill

    def hopper():
        return (9, 0)

    why = r"vLLM 0\.17\.1 runs FlashInfer's GDN prefill on every compute capability 9\.0 GPU whatever --prefill-backend asks"
    for heads in (128, 64, None):
        with pytest.raises(UsageError, match=why + r".*: use --prefill-backend flashinfer or default$"):
            check_prefill("0.17.1", heads, "triton", hopper)
    for backend in ("default", "flashinfer"):
        with pytest.raises(UsageError, match=why + r".*; it runs GDN heads of 128 only and .* has 64: use --model-class qwen3_5"):
            check_prefill("0.17.1", 64, backend, hopper)
        check_prefill("0.17.1", 128, backend, hopper)
        check_prefill("0.17.1", None, backend, hopper)  # a checkpoint's own heads: not known here
    with pytest.raises(UsageError, match=r"vLLM 0\.17\.2rc1\.dev21\+g1 runs FlashInfer"):
        check_prefill("0.17.2rc1.dev21+g1", 128, "triton", hopper)  # a nightly counts by its numbers
    check_prefill("0.17.0", 64, "triton", lambda: (8, 6))  # Ampere takes the Triton prefill
    check_prefill("0.17.0", 64, "triton", lambda: (10, 0))  # so does Blackwell: 0.17 asks for 9.0 exactly
    # the release reads the choice: the GPU is not even asked
    check_prefill("0.18.0", 64, "triton", lambda: pytest.fail("asked"))
    check_prefill("0.18.0rc1", 64, "triton", lambda: pytest.fail("asked"))
    check_prefill("0.18", 64, "triton", lambda: pytest.fail("asked"))


def test_json_sends_vllms_own_logs_to_stderr(monkeypatch, tmp_path):
    # vLLM logs to stdout by default: under --json that would break the one object there
    monkeypatch.delenv("VLLM_LOGGING_STREAM", raising=False)
    run("verify", "--work-dir", str(tmp_path / "w"))
    assert "VLLM_LOGGING_STREAM" not in os.environ
    run("verify", "--json", "--work-dir", str(tmp_path / "w"))
    assert os.environ["VLLM_LOGGING_STREAM"] == "ext://sys.stderr"
    monkeypatch.setenv("VLLM_LOGGING_STREAM", "ext://sys.stdout")  # a user's own choice stands
    run("--json", "verify", "--work-dir", str(tmp_path / "w"))
    assert os.environ["VLLM_LOGGING_STREAM"] == "ext://sys.stdout"
