"""The engine process's run() on a stand-in for vLLM's LLM: judged rounds, prompt logprobs and the
accepted-count hook reach its result (the real engine needs a GPU)."""

from __future__ import annotations

import os
import sys
import types
from types import SimpleNamespace

import pytest

from vllm_backports.verify import counts, drafts, engine


class FlatLogprobs:
    """Indexes by position like vLLM's FlatLogprobs: a dict per position, empty where none."""

    def __init__(self, positions: list[dict | None]):
        self.positions = positions

    def __len__(self):
        return len(self.positions)

    def __getitem__(self, i):
        return dict(self.positions[i] or {})


class FakeLLM:
    """Round r answers each prompt with its first tokens shifted by r; prompt logprobs -0.5 per
    token, in list form or flat (vLLM gives either, by release); each generate builds one GDN step
    whose speculative counts are `counts_per_round[r]`."""

    flat = False
    counts_per_round: list[list[int]] = []
    cached: list[int] | None = None  # num_cached_tokens of each request, in every round but the first

    def __init__(self, **kwargs):
        self.kwargs, self.calls, self.accepted = kwargs, 0, 0
        if self.counts_per_round:  # the engine's start: a dummy run whose counts are not a request's
            torch = pytest.importorskip("torch")
            from vllm.v1.attention.backends.gdn_attn import GDNAttentionMetadataBuilder

            GDNAttentionMetadataBuilder().build(0, SimpleNamespace(num_spec_decodes=2,
                                                                   num_accepted_tokens=torch.tensor([0, 0])))

    def generate(self, batch, params, use_tqdm=False):
        r, self.calls = self.calls, self.calls + 1
        self.accepted += 10 * (r + 1)
        if self.counts_per_round:
            torch = pytest.importorskip("torch")
            from vllm.v1.attention.backends.gdn_attn import GDNAttentionMetadataBuilder

            values = self.counts_per_round[r]
            GDNAttentionMetadataBuilder().build(
                0, SimpleNamespace(num_spec_decodes=len(values), num_accepted_tokens=torch.tensor(values))
            )
        outs = []
        for b in batch:
            p = b["prompt_token_ids"]
            plp = None
            if params.kwargs.get("prompt_logprobs") == 0:
                plp = [None] + [{t: SimpleNamespace(logprob=-0.5 - r)} for t in p[1:]]
                plp = FlatLogprobs(plp) if self.flat else plp
            chosen = [t + r for t in p[:3]]
            completion = SimpleNamespace(token_ids=chosen, logprobs=None)
            if params.kwargs.get("logprobs") == 0:  # the chosen token's own logprob, -0.25 a round further
                olp = [{t: SimpleNamespace(logprob=-0.25 * (r + 1))} for t in chosen]
                completion.logprobs = FlatLogprobs(olp) if self.flat else olp
            out = SimpleNamespace(outputs=[completion], prompt_logprobs=plp)
            if self.cached is not None:  # the first round finds the cache empty
                out.num_cached_tokens = self.cached[len(outs)] if r else 0
            outs.append(out)
        return outs

    def get_metrics(self):
        return [SimpleNamespace(name="vllm:spec_decode_num_accepted_tokens", value=self.accepted)]


class SamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams, module.__version__ = FakeLLM, SamplingParams, "0.20.0"
    gdn = types.ModuleType(counts.BUILDER_MODULE)
    gdn.GDNAttentionMetadataBuilder = type("GDNAttentionMetadataBuilder", (), {"build": lambda self, c, m: m})
    monkeypatch.setitem(sys.modules, "vllm", module)
    monkeypatch.setitem(sys.modules, counts.BUILDER_MODULE, gdn)
    # run() sets these for vLLM; undone after each test
    for name in ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD", "VLLM_USE_FLASHINFER_SAMPLER",
                 "TRITON_CACHE_AUTOTUNING", "TRITON_CACHE_DIR", drafts.ENV):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(FakeLLM, "counts_per_round", [])
    monkeypatch.setattr(FakeLLM, "cached", None)
    return module


def spec(**kw) -> dict:
    return {"model": "m", "prompts": [[5, 6, 7, 8], [9, 10, 11]], "max_num_seqs": 2, "max_tokens": 3,
            "max_model_len": 64, "eager": True, "tp": 1, **kw}


def test_engines_keep_one_triton_cache_and_a_callers_choice_stands(fake_vllm, monkeypatch, tmp_path):
    # left unset, Inductor would put TRITON_CACHE_DIR under vLLM's compile cache, keyed by the
    # model's path, which each verify writes anew: the FLA kernels' builds never carried
    monkeypatch.delenv("TRITON_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    engine.prepare_env()
    assert os.environ["TRITON_CACHE_DIR"] == str(tmp_path / ".triton" / "cache")
    assert os.environ["TRITON_CACHE_AUTOTUNING"] == "1" and "VLLM_DISABLE_COMPILE_CACHE" not in os.environ
    monkeypatch.setenv("TRITON_CACHE_DIR", "/mine")
    engine.prepare_env()
    assert os.environ["TRITON_CACHE_DIR"] == "/mine"
    monkeypatch.setenv("TRITON_HOME", str(tmp_path / "th"))
    assert engine.triton_cache_dir() == str(tmp_path / "th" / ".triton" / "cache")


def test_one_round_returns_what_it_always_returned(fake_vllm):
    out = engine.run(spec())
    assert out["tokens"] == [[5, 6, 7], [9, 10, 11]]
    assert not {"more_rounds", "prompt_logprobs", "accepted_counts"} & set(out)


def test_rounds_keep_every_later_rounds_tokens_and_count_its_accepted_tokens(fake_vllm):
    out = engine.run(spec(rounds=3))
    assert out["tokens"] == [[5, 6, 7], [9, 10, 11]]
    assert [m["tokens"] for m in out["more_rounds"]] == [[[6, 7, 8], [10, 11, 12]], [[7, 8, 9], [11, 12, 13]]]
    assert out["spec_counters"] == {"num_accepted_tokens": 10} and out["timed_rounds_accepted"] == [20, 30]


def test_each_rounds_prefix_cache_hit_per_request_is_kept_where_vllm_gives_it(fake_vllm, monkeypatch):
    assert "cached_tokens" not in engine.run(spec(rounds=2))  # a vLLM that does not say
    monkeypatch.setattr(FakeLLM, "cached", [320, 160])
    out = engine.run(spec(rounds=2))
    assert out["cached_tokens"] == [0, 0] and out["more_rounds"][0]["cached_tokens"] == [320, 160]


def test_timed_rounds_beyond_the_judged_ones_are_timed_only(fake_vllm):
    out = engine.run(spec(rounds=2, timed_rounds=4))
    assert len(out["more_rounds"]) == 1 and len(out["timed_rounds_tokens_per_s"]) == 4


@pytest.mark.parametrize("flat", [False, True])
def test_prompt_logprobs_are_asked_as_zero_and_read_per_prompt_token(fake_vllm, monkeypatch, flat):
    monkeypatch.setattr(FakeLLM, "flat", flat)
    assert engine.sampling_kwargs(spec(prompt_logprobs=True))["prompt_logprobs"] == 0
    assert "prompt_logprobs" not in engine.sampling_kwargs(spec())
    out = engine.run(spec(prompt_logprobs=True, rounds=2))
    assert out["prompt_logprobs"] == [[None, -0.5, -0.5, -0.5], [None, -0.5, -0.5]]
    assert out["more_rounds"][0]["prompt_logprobs"] == [[None, -1.5, -1.5, -1.5], [None, -1.5, -1.5]]


@pytest.mark.parametrize("flat", [False, True])
def test_output_logprobs_are_asked_as_zero_and_read_per_chosen_token(fake_vllm, monkeypatch, flat):
    monkeypatch.setattr(FakeLLM, "flat", flat)
    assert engine.sampling_kwargs(spec(output_logprobs=True))["logprobs"] == 0
    assert "logprobs" not in engine.sampling_kwargs(spec()) and "logprobs" not in engine.sampling_kwargs(
        spec(prompt_logprobs=True)
    )
    out = engine.run(spec(output_logprobs=True, rounds=2))
    assert out["output_logprobs"] == [[-0.25] * 3, [-0.25] * 3]
    assert out["more_rounds"][0]["output_logprobs"] == [[-0.5] * 3, [-0.5] * 3]
    assert "output_logprobs" not in engine.run(spec())


def test_a_chosen_token_missing_from_vllms_logprobs_is_none():
    completion = SimpleNamespace(token_ids=[5, 6], logprobs=[{5: SimpleNamespace(logprob=-1.0)}, {7: -3.0}])
    assert engine.output_logprobs_of(SimpleNamespace(outputs=[completion])) == [-1.0, None]
    none = SimpleNamespace(outputs=[SimpleNamespace(token_ids=[5], logprobs=None)])
    assert engine.output_logprobs_of(none) is None


def test_a_prompt_token_missing_from_vllms_logprobs_is_none():
    out = SimpleNamespace(prompt_logprobs=[None, {6: SimpleNamespace(logprob=-1.0)}, {99: SimpleNamespace(logprob=-2)}])
    assert engine.prompt_logprobs_of(out, [5, 6, 7]) == [None, -1.0, None]
    assert engine.prompt_logprobs_of(SimpleNamespace(prompt_logprobs=None), [5, 6]) is None


def test_the_accepted_count_check_sees_every_round(fake_vllm, monkeypatch):
    monkeypatch.setattr(FakeLLM, "counts_per_round", [[1, 4], [2, 3], [0, 1]])
    mtp = {"method": "mtp", "num_speculative_tokens": 3}
    out = engine.run(spec(rounds=3, check_accepted_counts=True, speculative=mtp))
    c = out["accepted_counts"]
    assert c["status"] == "checked" and c["in_range"] is False and (c["min"], c["max"], c["outside"]) == (0, 4, 1)
    assert c["range"] == [1, 4] and c["builds"] == 3
    assert (c["startup"]["builds"], c["startup"]["outside"]) == (1, 2)


def test_the_accepted_count_check_says_why_it_saw_nothing(fake_vllm, monkeypatch):
    out = engine.run(spec(check_accepted_counts=True, tp=2, speculative={"method": "mtp", "num_speculative_tokens": 1}))
    assert out["accepted_counts"]["status"] == "unavailable" and "TP > 1" in out["accepted_counts"]["why"]


@pytest.mark.parametrize(("runner", "env"), [("v1", "0"), ("v2", "1")])
def test_a_spec_runner_sets_vllms_switch_and_none_leaves_the_releases(monkeypatch, runner, env):
    from vllm_backports.verify import engine

    monkeypatch.setenv("VLLM_USE_V2_MODEL_RUNNER", "unset-marker")
    engine.choose_runner({"model": "m"})
    assert os.environ["VLLM_USE_V2_MODEL_RUNNER"] == "unset-marker"
    engine.choose_runner({"model": "m", "model_runner": runner})
    assert os.environ["VLLM_USE_V2_MODEL_RUNNER"] == env


def test_drafts_are_counted_in_this_process_only_at_tp1_without_a_separate_engine_core(monkeypatch):
    from vllm_backports.verify import engine

    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    assert engine.drafts_in_this_process({"tp": 1}) and engine.drafts_in_this_process({})
    assert not engine.drafts_in_this_process({"tp": 2})
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")
    assert not engine.drafts_in_this_process({"tp": 1})


def test_engines_keep_flashinfers_sampler_off_even_where_flashinfer_imports(fake_vllm, monkeypatch):
    """Greedy engines never sample, but vLLM's start-up sampler run would build FlashInfer's
    sampling module with nvcc; a setting of the user's own stays."""
    import importlib.machinery
    import os

    flashinfer = types.ModuleType("flashinfer")
    flashinfer.__spec__ = importlib.machinery.ModuleSpec("flashinfer", None)  # found, as where it is installed
    monkeypatch.setitem(sys.modules, "flashinfer", flashinfer)
    engine.run(spec())
    assert os.environ["VLLM_USE_FLASHINFER_SAMPLER"] == "0"
    monkeypatch.setenv("VLLM_USE_FLASHINFER_SAMPLER", "1")
    engine.run(spec())
    assert os.environ["VLLM_USE_FLASHINFER_SAMPLER"] == "1"


def test_the_series_digest_is_each_applied_patchs_pin_in_order(tmp_path):
    state = tmp_path / "vllm" / ".backports"
    assert engine.manifest_patches(tmp_path / "vllm") == {}  # pristine: no manifest
    state.mkdir(parents=True)
    applied = [{"id": "b", "patch": "0001-b.patch", "sha256": "2" * 64}, {"id": "a", "patch": "0002-a.patch", "sha256": "1" * 64}]
    (state / "manifest.json").write_text(__import__("json").dumps({"applied": applied}))
    assert list(engine.manifest_patches(tmp_path / "vllm").items()) == [("b", "2" * 64), ("a", "1" * 64)]
    assert engine.manifest_backports(tmp_path / "vllm") == ["b", "a"]
    (state / "manifest.json").write_text('{"applied": [1]}')
    assert engine.manifest_patches(tmp_path / "vllm") is None and engine.manifest_backports(tmp_path / "vllm") is None
