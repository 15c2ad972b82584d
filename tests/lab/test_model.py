"""The `model` and `model-compare` steps (lab/model.py) with the GPU work faked: which verifies
`model` starts, what it refuses, and how `model-compare` reads the two references' verdicts."""

from __future__ import annotations

import json
import subprocess

import pytest

from lab import model
from lab.steps import Ctx


@pytest.fixture
def ctx(tmp_path):
    site = {"fix": tmp_path / "fix", "raw": tmp_path / "raw", "less-x": tmp_path / "less-x"}
    for path in site.values():
        path.mkdir()
    return Ctx(rel="0.28.0", home=tmp_path / "home", out=tmp_path / "out", site=site)


@pytest.fixture
def started(monkeypatch):
    """The verifies `model` would start (tag, options), and the checkpoint writer it runs."""
    runs: list[list[str]] = []
    calls: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(model, "bg", lambda ctx, args: calls.append((args[0], args[1:])) or 0)

    def run(args, **kwargs):
        runs.append(list(args))
        return subprocess.CompletedProcess(args, 0)

    monkeypatch.setattr(model.subprocess, "run", run)
    for name in ("CONTROL", "BATCH", "PREFILL", "MODEL_PROMPTS"):
        monkeypatch.delenv(name, raising=False)
    return calls, runs


def test_model_starts_a_model_verify_and_a_float32_verify_per_preset_on_the_raw_control(ctx, started):
    calls, runs = started
    assert model.model(ctx, []) == 0
    assert runs[0][1:4] == ["-m", "vllm_backports.verify.tokenizer", "/tmp/tiny-ck-0.28.0"]
    assert [tag for tag, _ in calls] == ["model-mtp", "f32-mtp", "model-ngram", "f32-ngram"]
    model_opts, f32_opts = calls[0][1], calls[1][1]
    assert model_opts[:4] == ["--model", "/tmp/tiny-ck-0.28.0", "--float32-reference", "--preset"]
    for opts in (model_opts, f32_opts):
        assert opts[opts.index("--control") + 1] == str(ctx.site["raw"])
        assert opts[opts.index("--batch") + 1] == "16" and "--kv-cache-gib" in opts
    assert "--model" not in f32_opts and "--prompts" not in f32_opts


def test_model_takes_the_control_and_the_prompt_set_it_is_given(ctx, started, monkeypatch):
    calls, runs = started
    monkeypatch.setenv("CONTROL", "less-x")
    monkeypatch.setenv("BATCH", "1")
    monkeypatch.setenv("MODEL_PROMPTS", "k-plus-1")
    assert model.model(ctx, ["ngram"]) == 0
    assert runs[1][1] == "-c" and runs[1][3:5] == ["/tmp/tiny-ck-0.28.0", "k-plus-1"]
    (tag, m), (_, f) = calls
    assert tag == "model-ngram" and m[m.index("--control") + 1] == str(ctx.site["less-x"])
    assert m[m.index("--prompts") + 1] == "/tmp/tiny-ck-0.28.0.prompts.jsonl"
    assert f[f.index("--prompts") + 1] == "k-plus-1"


@pytest.mark.parametrize("env, says", [({"CONTROL": "less-nothing"}, "no control site less-nothing for 0.28.0"),
                                       ({"BATCH": "7"}, "no shape of 7 a batch")])
def test_model_refuses_a_control_or_batch_it_does_not_have_and_starts_nothing(ctx, started, monkeypatch, capsys,
                                                                               env, says):
    calls, _ = started
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert model.model(ctx, []) == 1
    assert says in capsys.readouterr().out and calls == []


def _result(ctx, preset: str, m: dict, f: dict | None) -> None:
    ctx.res.mkdir(parents=True, exist_ok=True)
    (ctx.res / f"model-{preset}.json").write_text(json.dumps(m))
    if f is not None:
        (ctx.res / f"f32-{preset}.json").write_text(json.dumps(f))


def _pair(errors: int, f32_errors: int, agrees: bool) -> dict:
    return {"scenario": "ngram", "site": "control", "errors": errors, "worst_regret": 0.5,
            "float32_errors": f32_errors, "float32_worst_regret": 0.4, "agrees": agrees}


ROWS_ERR = [{"scenario": "baseline", "site": "target", "errors": 0},
            {"scenario": "ngram", "site": "control", "errors": 9}, {"scenario": "ngram", "site": "target", "errors": 0}]


def test_model_compare_says_the_references_agree_on_errors_when_they_do(ctx, capsys):
    m = {"calibrated": True, "float32": {"agree": True, "calibrated": True, "rows": [_pair(9, 8, True)]},
         "rows": ROWS_ERR}
    _result(ctx, "ngram", m, {"calibrated": True, "rows": ROWS_ERR})
    assert model.model_compare(ctx, []) == 0
    out = capsys.readouterr().out
    assert "ngram/control: vLLM reference 9 errors (worst 0.5), float32 on the same outputs 8" in out
    assert "ngram/control: --model errors, float32 verify errors\n" in out
    assert out.rstrip().endswith("the two references agree on every verdict, errors and clean runs")


def test_model_compare_on_clean_runs_only_says_that_is_all_it_shows(ctx, capsys):
    clean = [{"scenario": "ngram", "site": "control", "errors": 0}]
    m = {"calibrated": True, "float32": {"agree": True, "rows": [_pair(0, 0, True)]}, "rows": clean}
    _result(ctx, "mtp", m, {"calibrated": True, "rows": clean})
    model.model_compare(ctx, [])
    assert capsys.readouterr().out.rstrip().endswith("on clean runs only: no run had errors to agree on")


def test_model_compare_without_agreement_or_a_result_says_agreement_is_not_shown(ctx, capsys):
    m = {"calibrated": True, "float32": {"agree": False, "rows": [_pair(9, 0, False)]},
         "rows": [{"scenario": "ngram", "site": "control", "errors": 9}]}
    _result(ctx, "ngram", m, {"calibrated": True, "rows": [{"scenario": "ngram", "site": "control", "crashed": True,
                                                            "errors": 0}]})
    _result(ctx, "mtp", {"calibrated": True}, None)  # its float32 verify never wrote a result
    model.model_compare(ctx, [])
    out = capsys.readouterr().out
    assert "mtp: no result" in out and "DISAGREE" in out
    assert "ngram/control: --model errors, float32 verify crashed  (differs)" in out
    assert out.rstrip().endswith("agreement NOT shown (see above)")


def test_the_prompt_writer_is_python_that_compiles():
    compile(model._PROMPTS, "<model._PROMPTS>", "exec")
