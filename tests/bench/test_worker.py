"""One engine's measurements, on a stand-in for vLLM's LLM (the real one needs a GPU)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from vllm_backports.bench import worker
from vllm_backports.verify.drafts import Script


class Params:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class FakeLLM:
    """Emits prompt[0] + step for each token; counts drafts as vLLM's metrics would."""

    per_token = 0.01  # seconds a generate takes a token

    def __init__(self, clock):
        self.clock, self.calls, self.drafted, self.accepted = clock, [], 0, 0

    def generate(self, batch, params, use_tqdm=False):
        self.calls.append((len(batch), params.max_tokens))
        self.clock.now += self.per_token * params.max_tokens
        if params.max_tokens > 1:
            self.drafted += 30
            self.accepted += 27
        return [
            SimpleNamespace(
                outputs=[SimpleNamespace(token_ids=[p["prompt_token_ids"][0] + s for s in range(params.max_tokens)])]
            )
            for p in batch
        ]

    def get_metrics(self):
        return [
            SimpleNamespace(name="vllm:spec_decode_num_draft_tokens", value=self.drafted),
            SimpleNamespace(name="vllm:spec_decode_num_accepted_tokens", value=self.accepted),
        ]


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def spec(levels=(1, 2)):
    prompts = [[100 * (i + 1), 7] for i in range(sum(levels))]
    return {"levels": list(levels), "prompts": prompts, "max_tokens": 11}


def test_a_round_times_first_token_and_full_generate_per_level():
    clock = Clock()
    llm = FakeLLM(clock)
    bench = worker.Bench(llm, Params, spec(), clock=clock)
    out = bench.round()["levels"]
    assert llm.calls == [(1, 1), (1, 11), (2, 1), (2, 11)]
    assert out["2"]["ttft_s"] == pytest.approx(0.01) and out["2"]["decode_s"] == pytest.approx(0.11)
    assert out["2"]["requests"] == 2 and out["2"]["tokens"] == 22 and out["2"]["max_tokens"] == 11
    assert (out["1"]["drafts"], out["1"]["accepted"]) == (30, 27)  # this generate's counts, not the totals
    assert (out["2"]["drafts"], out["2"]["accepted"]) == (30, 27)


def test_a_level_keeps_its_full_generates_window_on_the_wall_clock():
    clock, wall = Clock(), Clock()
    wall.now = 1_795_900_000.0
    llm = FakeLLM(clock)
    plain = llm.generate

    def generate(batch, params, use_tqdm=False):  # the wall clock runs with the timer
        before = clock.now
        done = plain(batch, params, use_tqdm)
        wall.now += clock.now - before
        return done

    llm.generate = generate
    out = worker.Bench(llm, Params, spec(), clock=clock, wall=wall).round()["levels"]
    # level 1: a first-token generate (0.01 s), then the full one; level 2 after it
    assert out["1"]["decode_window"] == pytest.approx([1_795_900_000.01, 1_795_900_000.12])
    assert out["2"]["decode_window"] == pytest.approx([1_795_900_000.13, 1_795_900_000.24])


def test_a_level_times_the_decode_steps_of_its_full_generate_alone():
    clock = Clock()

    class Stepping(FakeLLM):
        """As vLLM's step loop: a prefill step of 30 ms, then one of 5 ms a further token."""

        per_token = 0.0  # the steps take the time

        def __init__(self, clock):
            super().__init__(clock)
            self.took = 0.0

            def step():
                clock.now += self.took
                return []

            self.llm_engine = SimpleNamespace(step=step)

        def generate(self, batch, params, use_tqdm=False):
            for i in range(params.max_tokens):
                self.took = 0.03 if i == 0 else 0.005
                self.llm_engine.step()
            return super().generate(batch, params, use_tqdm)

    llm = Stepping(clock)
    out = worker.Bench(llm, Params, spec(), clock=clock, step_clock=clock).round()["levels"]
    for level in ("1", "2"):
        assert out[level]["ttft_s"] == pytest.approx(0.03)
        # the full generate's prefill step began before the first token's time: left out; the
        # first-token generate's step is not among them either
        seen = out[level]["pace"]
        assert (seen["steps"], seen["prefill_steps"]) == (10, 1)
        assert seen["max_ms"] == pytest.approx(5.0) and seen["long"] == 0
    assert not hasattr(type(llm.llm_engine), "step") and callable(llm.llm_engine.step)  # put back


def test_a_stand_in_without_an_engine_records_no_pace():
    out = worker.Bench(FakeLLM(Clock()), Params, spec(), clock=Clock()).round()["levels"]
    assert "pace" not in out["1"]


def test_at_one_request_ttft_is_the_median_of_its_samples_and_elsewhere_one_timing():
    clock = Clock()
    llm = FakeLLM(clock)
    jitter = iter([0.05, 0.0, 0.0, 0.3, 0.0])  # host stalls on two of five one-token generates
    plain = llm.generate

    def generate(batch, params, use_tqdm=False):
        if params.max_tokens == 1 and len(batch) == 1:
            clock.now += next(jitter)
        return plain(batch, params, use_tqdm)

    llm.generate = generate
    bench = worker.Bench(llm, Params, {**spec(), "ttft_samples": 5}, clock=clock)
    out = bench.round()["levels"]
    assert llm.calls == [(1, 1)] * 5 + [(1, 11), (2, 1), (2, 11)]
    assert out["1"]["ttft_samples_s"] == pytest.approx([0.06, 0.01, 0.01, 0.31, 0.01])
    assert out["1"]["ttft_s"] == pytest.approx(0.01)  # the stalls do not move it
    assert "ttft_samples_s" not in out["2"] and out["2"]["ttft_s"] == pytest.approx(0.01)


def test_each_level_has_its_own_prompts():
    bench = worker.Bench(FakeLLM(Clock()), Params, spec((1, 16, 64)))
    firsts = [tuple(p["prompt_token_ids"][0] for p in bench.batch(lv)) for lv in ("1", "16", "64")]
    assert [len(x) for x in firsts] == [1, 16, 64]
    assert len(set(firsts[0] + firsts[1] + firsts[2])) == 81


def test_scripted_drafts_follow_each_requests_own_last_output():
    s = spec()
    script = Script(s["prompts"], [[] for _ in s["prompts"]], k=3, vocab=100000, schedule=((3, 3),))
    script.steps[1] = 5
    bench = worker.Bench(FakeLLM(Clock()), Params, s, script=script)
    bench.round()
    assert script.continuations[0] == [100 + i for i in range(11)]
    assert script.continuations[2] == [300 + i for i in range(11)]
    assert script.steps == {}  # the schedule starts over for every full generate


def test_without_metrics_no_acceptance_is_claimed():
    class NoMetrics(FakeLLM):
        def get_metrics(self):
            raise AttributeError("no metrics API")

    out = worker.Bench(NoMetrics(Clock()), Params, spec()).round()["levels"]["1"]
    assert out["drafts"] is None and out["accepted"] is None


def test_engine_arguments_dummy_weights_release_default_graphs_no_prefix_cache():
    base = {"model": "/m", "max_model_len": 700, "max_num_seqs": 64, "kv_cache_memory_bytes": 2**33}
    kw = worker.engine_kwargs({**base, "speculative": {"method": "mtp", "num_speculative_tokens": 3}})
    assert kw["load_format"] == "dummy" and kw["dtype"] == "bfloat16" and kw["enforce_eager"] is False
    assert "compilation_config" not in kw and kw["enable_prefix_caching"] is False
    assert kw["speculative_config"]["method"] == "mtp" and "enable_sleep_mode" not in kw
    assert worker.engine_kwargs({**base, "sleep": True})["enable_sleep_mode"] is True


def test_serve_answers_each_request_and_stops():
    replies = []
    slept = []
    llm = SimpleNamespace(sleep=lambda level: slept.append(level), wake_up=lambda: slept.append("wake"))
    bench = SimpleNamespace(round=lambda: {"levels": {"1": {}}})
    requests = [json.dumps({"op": op}) for op in ("round", "sleep", "wake", "bogus", "stop", "round")]
    worker.serve(bench, llm, iter(requests), replies.append)
    assert [r["ok"] for r in replies] == [True, True, True, False, True]
    assert replies[0]["levels"] == {"1": {}} and slept == [1, "wake"] and "unknown op" in replies[3]["error"]


class Param:
    def __init__(self):
        self.data = self
        self.zeroed = 0

    def zero_(self):
        self.zeroed += 1


class Module:
    """A module tree as named_modules(remove_duplicate=False) walks it: every path, shared ones
    included."""

    def __init__(self, weight=None, **children):
        self.weight, self.children = weight, children

    def named_modules(self, prefix="", remove_duplicate=True):
        assert remove_duplicate is False  # a tied head is reachable only under its second name
        yield prefix, self
        for name, child in self.children.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name, remove_duplicate)


def test_zero_lm_heads_zeroes_the_models_and_the_drafters_lm_head_once_each():
    shared, own, norm = Param(), Param(), Param()
    head = Module(shared)
    target = Module(lm_head=head, model=Module(norm=Module(norm)))
    runner = SimpleNamespace(
        get_model=lambda: target,
        model="a CUDA-graph wrapper, not the model",
        # MTP with its own head, and the target's head shared as well
        get_draft_model=lambda: Module(model=Module(lm_head=Module(own)), lm_head=head),
    )
    got = worker.zero_lm_heads(SimpleNamespace(model_runner=runner))
    assert got == ["model:lm_head.weight", "drafter:model.lm_head.weight", "drafter:lm_head.weight (shared)"]
    assert (shared.zeroed, own.zeroed, norm.zeroed) == (1, 1, 0)


def test_the_drafter_is_found_where_the_runner_holds_it_when_get_draft_model_knows_none():
    own = Param()
    runner = SimpleNamespace(
        get_model=lambda: Module(lm_head=Module(Param())),
        get_draft_model=lambda: None,  # V2 knows draft-model speculators only
        speculator=SimpleNamespace(model=Module(lm_head=Module(own))),
    )
    assert worker.zero_lm_heads(SimpleNamespace(model_runner=runner))[-1] == "drafter:lm_head.weight"
    assert own.zeroed == 1


def test_a_head_tied_to_the_embedding_is_found_under_its_lm_head_name():
    embedding = Module(Param())
    target = Module(model=Module(embed_tokens=embedding), lm_head=embedding)
    runner = SimpleNamespace(model=target, drafter=SimpleNamespace(model=None))
    assert worker.zero_lm_heads(SimpleNamespace(model_runner=runner)) == ["model:lm_head.weight"]
    assert embedding.weight.zeroed == 1


def test_a_model_without_an_lm_head_yields_nothing():
    runner = SimpleNamespace(model=Module(model=Module(norm=Module(Param()))))
    assert worker.zero_lm_heads(SimpleNamespace(model_runner=runner)) == []


def test_constant_logits_refuses_an_engine_where_a_worker_found_no_head_it_needs():
    from vllm_backports.errors import BackportError

    class LLM:
        def __init__(self, answers):
            self.answers, self.sent = answers, []

        def collective_rpc(self, method):
            self.sent.append(method)
            return self.answers

    both = ["model:lm_head.weight", "drafter:lm_head.weight (shared)"]
    llm = LLM([both, both])
    assert worker.constant_logits(llm, drafter=True) == sorted(both)
    assert llm.sent == [worker.zero_lm_heads]
    assert worker.constant_logits(LLM([["model:lm_head.weight"]]), drafter=False) == ["model:lm_head.weight"]
    for answers, drafter, what in (
        ([], False, "model"),
        ([["model:lm_head.weight"], []], False, "model"),
        ([["model:lm_head.weight"]], True, "drafter"),  # MTP would draft as drawn: acceptance 0
        ([["drafter:lm_head.weight"]], True, "model"),
    ):
        with pytest.raises(BackportError, match=f"no lm_head of the {what} found to zero"):
            worker.constant_logits(LLM(answers), drafter=drafter)
