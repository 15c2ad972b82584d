"""One engine of an A/B run, in its own process, serving the driver's requests until told to stop:
`python -m vllm_backports.bench.worker SPEC.json`.

Requests come one JSON line at a time on stdin ({"op": "round" | "sleep" | "wake" | "profile" |
"stop"}); each reply is one JSON line on the stdout the process started with, which is kept for
replies alone: everything vLLM prints goes to stderr (the engine's log).

A round runs every concurrency level in turn on the one engine (its CUDA graphs serve them all):
a generate of one token a request (TTFT), then a full generate of max_tokens (TTFT plus decode),
each timed by wall clock. With scripted ngram drafts (verify.drafts), each level's requests draft
from their own output of the round before, so the scripted fraction of right drafts holds after
the speculative run parts from any other.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from . import pace


def engine_kwargs(spec: dict) -> dict:
    """LLM(...) arguments: verify's (engine.llm_kwargs) with dummy weights, the release's default
    compilation (no capture sizes of verify's own), prefix caching off (every round repeats the
    same prompts and must do the same work) and sleep mode where the layout needs it."""
    from ..verify import engine

    kwargs = engine.llm_kwargs({**spec, "eager": False, "dtype": "bfloat16"})
    kwargs.pop("compilation_config", None)
    kwargs["load_format"] = "dummy"
    kwargs["enable_prefix_caching"] = False
    if spec.get("sleep"):
        kwargs["enable_sleep_mode"] = True
    return kwargs


class Bench:
    """The measurements of one engine: `llm` is vLLM's LLM (or a stand-in with generate and
    get_metrics), `params` vLLM's SamplingParams class."""

    def __init__(
        self,
        llm,
        params,
        spec: dict,
        script=None,
        clock=time.perf_counter,
        wall=time.time,
        step_clock=time.perf_counter,
    ):
        # wall: the host's clock, the one the driver's GPU sampler stamps its samples with;
        # step_clock: the one vLLM's steps are timed by (the host's own, where `clock` times rounds alone)
        self.llm, self.spec, self.script, self.clock, self.wall = llm, spec, script, clock, wall
        self.step_clock = step_clock
        self.first = params(temperature=0.0, max_tokens=1, ignore_eos=True)
        self.full = params(temperature=0.0, max_tokens=spec["max_tokens"], ignore_eos=True)
        # prompt index (in spec["prompts"], all levels' prompts one after the other) per level
        self.index: dict[str, list[int]] = {}
        start = 0
        for level in spec["levels"]:
            self.index[str(level)] = list(range(start, start + level))
            start += level

    def batch(self, level: str) -> list[dict]:
        return [{"prompt_token_ids": self.spec["prompts"][i]} for i in self.index[level]]

    def counters(self) -> dict:
        from ..verify import engine

        return engine.spec_counters(self.llm) or {}

    def level(self, level: str) -> dict:
        batch = self.batch(level)
        # one prefill of one request is a few tens of ms, where host jitter alone moves a single
        # timing by half: there the median of several is kept; a larger level's prefill is long
        # enough that one timing resolves it
        ttfts = []
        for _ in range(self.spec.get("ttft_samples", 1) if len(batch) == 1 else 1):
            t0 = self.clock()
            self.llm.generate(batch, self.first, use_tqdm=False)
            ttfts.append(self.clock() - t0)
        ttft = statistics.median(ttfts)
        if self.script is not None:
            self.script.steps.clear()  # the schedule starts over for these requests
        before = self.counters()
        with pace.Pace(self.llm, self.step_clock) as steps:
            w0, t0 = self.wall(), self.clock()
            outs = self.llm.generate(batch, self.full, use_tqdm=False)
            decode, w1 = self.clock() - t0, self.wall()
        after = self.counters()
        tokens = [list(o.outputs[0].token_ids) for o in outs]
        if self.script is not None:
            for i, out in zip(self.index[level], tokens, strict=True):
                self.script.continuations[i] = out
        delta = {k: after.get(k, 0) - before.get(k, 0) for k in ("num_draft_tokens", "num_accepted_tokens")}
        return {
            "requests": len(batch),
            "max_tokens": self.spec["max_tokens"],
            "tokens": sum(map(len, tokens)),
            "ttft_s": ttft,
            **({"ttft_samples_s": ttfts} if len(ttfts) > 1 else {}),
            "decode_s": decode,
            "decode_window": [w0, w1],
            "drafts": delta["num_draft_tokens"] if after else None,
            "accepted": delta["num_accepted_tokens"] if after else None,
            # the steps begun before the first tokens would have come are the prefill's
            **({"pace": seen} if (seen := steps.summary(after=ttft)) else {}),
        }

    def round(self) -> dict:
        return {"levels": {str(lv): self.level(str(lv)) for lv in self.spec["levels"]}}

    def profile(self, level: str, max_tokens: int, path: str) -> dict:
        """One full generate of `level` under torch's profiler: a Chrome trace and a table of the
        kernels and ops by their own device time, for the places a fix costs time."""
        import torch
        from torch.profiler import ProfilerActivity, profile

        from . import profiles

        params = type(self.full)(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=False) as prof:
            self.llm.generate(self.batch(level), params, use_tqdm=False)
            torch.cuda.synchronize()
        prof.export_chrome_trace(path + ".trace.json")
        averages = prof.key_averages()
        for key in ("self_device_time_total", "self_cuda_time_total"):  # renamed in torch 2.4+
            try:
                table = averages.table(sort_by=key, row_limit=60)
                break
            except (AttributeError, KeyError, ValueError):
                continue
        else:
            table = averages.table(row_limit=60)
        Path(path + ".txt").write_text(table)
        # every row, names whole: the table above keeps 60 and cuts long kernel names short
        Path(path + ".json").write_text(json.dumps(profiles.rows(averages), indent=0) + "\n")
        return {"trace": path + ".trace.json", "table": path + ".txt", "ops": path + ".json"}


def zero_lm_heads(worker) -> list[str]:
    """In each of vLLM's workers (LLM.collective_rpc): zero the lm_head of the model and of its
    drafter (MTP's own, or the target's it shares), so that every logit is 0 and argmax, the
    target's greedy pick and the MTP drafter's alike, is token 0: every draft is right. The
    weights change in place, so the captured CUDA graphs read them; the work per step is the
    model's as drawn. A head tied to the embedding is found under its lm_head name too (the
    inputs then embed to 0, at the same cost). Returns "model:NAME" and "drafter:NAME" for each
    head found, a head the drafter shares with the model marked "(shared)" and zeroed once."""
    runner = worker.model_runner

    def unwrapped(getter: str, *paths: str) -> Any:
        # past the CUDA-graph wrappers where the runner can say (0.26 .. 0.33); else where the
        # model is held (V2's get_draft_model knows only some speculators)
        get = getattr(runner, getter, None)
        found = get() if callable(get) else None
        for path in paths:
            if found is not None:
                break
            found = runner
            for part in path.split("."):
                found = getattr(found, part, None)
        return found

    zeroed: list[str] = []
    seen: set[int] = set()
    for label, module in (
        ("model", unwrapped("get_model", "model")),
        ("drafter", unwrapped("get_draft_model", "drafter.model", "speculator.model")),
    ):
        # every name a module is reachable by: a tied head's first name is the embedding's
        subs = module.named_modules(remove_duplicate=False) if hasattr(module, "named_modules") else ()
        for name, sub in subs:
            weight = getattr(sub, "weight", None)
            if name.split(".")[-1] != "lm_head" or weight is None:
                continue
            if id(weight) in seen:
                zeroed.append(f"{label}:{name}.weight (shared)")
                continue
            seen.add(id(weight))
            weight.data.zero_()
            zeroed.append(f"{label}:{name}.weight")
    return zeroed


def constant_logits(llm, drafter: bool) -> list[str]:
    """zero_lm_heads in every worker. Refuses an engine where a worker found no head of the model,
    or, when it speculates (`drafter`), none of its drafter: the run would measure the model as
    drawn, or MTP with nothing accepted, and call it something else."""
    from ..errors import BackportError

    found = llm.collective_rpc(zero_lm_heads)
    wanted = ("model:", "drafter:") if drafter else ("model:",)
    for names in found or [[]]:
        missing = [w.rstrip(":") for w in wanted if not any(n.startswith(w) for n in names)]
        if missing:
            raise BackportError(f"constant logits: no lm_head of the {' or '.join(missing)} found to zero ({found!r})")
    return sorted({name for names in found for name in names})


def serve(bench: Bench, llm, requests, reply) -> None:
    """Answer the driver's requests until "stop" or the end of input."""
    for line in requests:
        req = json.loads(line)
        op, t0 = req["op"], time.perf_counter()
        if op == "round":
            out = bench.round()
        elif op == "sleep":
            llm.sleep(level=1)
            out = {}
        elif op == "wake":
            llm.wake_up()
            out = {}
        elif op == "profile":
            out = bench.profile(str(req["level"]), int(req["max_tokens"]), req["path"])
        elif op == "stop":
            reply({"ok": True})
            return
        else:
            out = {"error": f"unknown op {op!r}"}
        reply({"ok": "error" not in out, "s": time.perf_counter() - t0, **out})


def main(argv: list[str]) -> int:
    # Replies go to the stdout this process was started with; vLLM's prints join its log.
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    def reply(obj: dict) -> None:
        channel.write(json.dumps(obj) + "\n")
        channel.flush()

    spec = json.loads(Path(argv[0]).read_text())
    from ..verify import drafts, engine

    engine.prepare_env()
    script = None
    if spec.get("acceptance_schedule") is not None:
        schedule = tuple((int(o), int(c)) for o, c in spec["acceptance_schedule"])
        script = drafts.Script(
            spec["prompts"], [[] for _ in spec["prompts"]], k=spec["k"], vocab=spec["vocab"], schedule=schedule
        )
        drafts.install(script)
    from vllm import LLM, SamplingParams

    started = time.perf_counter()
    llm = LLM(**engine_kwargs(spec))
    ready = {"ok": True, "start_s": time.perf_counter() - started, "engine": engine.describe_or_error(llm)}
    if spec.get("constant_logits"):
        # in this process: prepare_env keeps the engine core here (no multiprocessing), so
        # zero_lm_heads reaches the worker without being serialised
        ready["zeroed"] = constant_logits(llm, drafter=bool(spec.get("speculative")))
    reply(ready)
    serve(Bench(llm, SamplingParams, spec, script), llm, sys.stdin, reply)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
