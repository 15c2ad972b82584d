"""Scripted drafts: the ngram proposer replaced by a schedule that hits every GDN state transition.

Random weights make real ngram drafts almost never accepted, so the bug would hide. Here each
request's drafts are taken from a known greedy continuation of the same engine without
speculation, and a per-request schedule decides how many to offer and how many of them are right:
full acceptance, then a step with no drafts (the stale-slot transition), partial acceptance,
rejection. Requests run the schedule at different phases, so one batch mixes rows with and
without drafts.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from itertools import pairwise

ENV = "VLLM_BACKPORTS_VERIFY_DRAFTS"

# (drafts offered, of which correct). Every (k,k) or (k,c>0) is followed by a (0,0) somewhere.
SCHEDULE: tuple[tuple[int, int], ...] = (
    (3, 3),
    (0, 0),
    (3, 1),
    (0, 0),
    (0, 0),
    (2, 2),
    (3, 0),
    (1, 1),
    (0, 0),
    (3, 3),
    (3, 3),
    (0, 0),
)


@dataclass
class Script:
    prompts: list[list[int]]
    continuations: list[list[int]]
    k: int
    vocab: int
    schedule: tuple[tuple[int, int], ...] = SCHEDULE
    steps: dict[int, int] = field(default_factory=dict)
    # requests by their prompt's first `_head` tokens (at most 16, and no more than the shortest
    # prompt has): the lookup a step makes for every row stays short with many long prompts, as a
    # benchmark's are
    _heads: dict[tuple[int, ...], list[int]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _head: int = field(default=0, init=False, repr=False, compare=False)
    # the token table's columns that tell a row's request (the V2 hook copies no more)
    longest_prompt: int = field(default=0, init=False, repr=False, compare=False)
    # prompts as the bytes of a token table's row, per dtype: the cheapest exact comparison
    _bytes: dict = field(default_factory=dict, init=False, repr=False, compare=False)
    # drafter calls with a row the script knows: 0 after a run means the script drafted nothing
    served: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len({tuple(p) for p in self.prompts}) != len(self.prompts):
            raise ValueError("scripted drafts need distinct prompts")
        self._head = min([16] + [len(p) for p in self.prompts])
        self.longest_prompt = max(len(p) for p in self.prompts)
        for i, prompt in enumerate(self.prompts):
            self._heads.setdefault(tuple(prompt[: self._head]), []).append(i)

    def request_of(self, context: list[int]) -> int | None:
        """The first request whose prompt `context` begins with."""
        for i in self._heads.get(tuple(context[: self._head]), ()):
            prompt = self.prompts[i]
            if context[: len(prompt)] == prompt:
                return i
        return None

    def request_of_row(self, row, length: int) -> int | None:
        """request_of(row[:length]) for a row of vLLM's token table (a numpy array), without
        turning the whole row into Python ints: the hook runs for every row at every step."""
        import numpy as np

        if length < self._head:
            return None
        for i in self._heads.get(tuple(row[: self._head].tolist()), ()):
            n = len(self.prompts[i])
            key = (i, row.dtype.str)
            if key not in self._bytes:
                self._bytes[key] = np.asarray(self.prompts[i], dtype=row.dtype).tobytes()
            if length >= n and row[:n].tobytes() == self._bytes[key]:
                return i
        return None

    def propose(self, context: list[int]) -> list[int]:
        """Drafts for one row whose prompt plus output so far is `context`."""
        req = self.request_of(context)
        if req is None:
            return []
        return self.drafts_for(req, len(context) - len(self.prompts[req]))

    def drafts_for(self, req: int, done: int) -> list[int]:
        """The next step's drafts for request `req`, `done` tokens into its output."""
        step = self.steps.get(req, 0)
        self.steps[req] = step + 1
        offered, correct = self.schedule[(step + req) % len(self.schedule)]
        offered = min(offered, self.k)
        truth = self.continuations[req][done : done + offered]
        # A wrong draft is the right token plus one: guaranteed to differ, still in the vocabulary.
        return [t if j < correct else (t + 1) % self.vocab for j, t in enumerate(truth)]

    def padded(self, drafts: list[int], req: int, done: int, k: int) -> list[int]:
        """`drafts` made `k` long with wrong tokens, for a drafter that always offers k (V2's)."""
        truth = self.continuations[req]
        rest = range(done + len(drafts), done + k)
        return drafts + [((truth[j] if j < len(truth) else 0) + 1) % self.vocab for j in rest]

    def replay(self, req: int, output: list[int], always_k: bool = False) -> list[tuple[int, int]]:
        """(offered, accepted) per step, rebuilt offline from a greedy output.

        Greedy verification accepts exactly the drafts that equal the tokens the engine emitted,
        so the output alone says what every step did; no engine metrics are needed. `always_k`:
        the drafts as V2's speculator hands them on (padded to k), so a step the schedule gives
        no drafts is k rejected ones there, and V2 never runs a step without drafts.
        """
        probe = Script(self.prompts, self.continuations, self.k, self.vocab, self.schedule)
        prompt = self.prompts[req]
        done, steps = 1, []  # the prefill step emits the first token without drafts
        while done < len(output):
            offered = probe.propose(prompt + output[:done])
            if always_k:
                offered = probe.padded(offered, req, done, self.k)
            accepted = 0
            while (
                accepted < len(offered)
                and done + accepted < len(output)
                and offered[accepted] == output[done + accepted]
            ):
                accepted += 1
            steps.append((len(offered), accepted))
            done += accepted + 1
        return steps

    def to_json(self) -> str:
        return json.dumps(
            {
                "prompts": self.prompts,
                "continuations": self.continuations,
                "k": self.k,
                "vocab": self.vocab,
                "schedule": self.schedule,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Script:
        d = json.loads(text)
        schedule = tuple((int(o), int(c)) for o, c in d.get("schedule", SCHEDULE))
        return cls(d["prompts"], d["continuations"], int(d["k"]), int(d["vocab"]), schedule)


_installed: list[Script] = []


def reset(continuations: list[list[int]] | None = None) -> None:
    """Start the installed script's schedule over (a new round of the same requests), drafting
    from `continuations` when given: a benchmark hands in the engine's own previous output, so
    drafts stay right after the speculative run has parted from the plain one."""
    for script in _installed:
        script.steps.clear()
        if continuations is not None:
            script.continuations = [list(c) for c in continuations]


def install(script: Script) -> None:
    """Make vLLM's ngram drafters serve the script: V1's CPU proposer (same hook in 0.17 ..
    0.33) and, where the release has it, V2's GPU one (ngram's default runner from 0.32.0)."""
    from vllm.v1.spec_decode.ngram_proposer import NgramProposer

    _installed.append(script)
    _install_v2(script)

    # From 0.24 vLLM passes the step's draft count `k` (fewer than configured under dynamic
    # speculation); a row is never offered more than that.
    def batch_propose(self, num_requests, valid_ngram_requests, num_tokens_no_spec, token_ids_cpu, k=None):
        out: list[list[int]] = [[] for _ in range(num_requests)]
        hit = False
        for i in valid_ngram_requests:
            length = int(num_tokens_no_spec[i])
            req = script.request_of_row(token_ids_cpu[i], length)
            if req is not None:
                out[i] = script.drafts_for(req, length - len(script.prompts[req]))[:k]
                hit = True
        script.served += hit  # a call counts once a row of it is the script's, as on V2
        return out

    NgramProposer.batch_propose = batch_propose


def _install_v2(script: Script) -> None:
    """V2's ngram speculator drafts k tokens for every row on the GPU; the hook lets it run (its
    buffers and shapes stay vLLM's), then writes the script's drafts, made k long with wrong
    tokens, over the rows the script knows. It reads each row as the speculator's own kernel
    does: the request's token row and its total length, which counts the token just sampled;
    a row with nothing sampled this step (a prefill chunk short of its end) gets no drafts."""
    try:
        from vllm.v1.worker.gpu.spec_decode.ngram.speculator import NgramGPUSpeculator
    except ImportError:  # before 0.32 ngram never runs on V2
        return
    except Exception as exc:  # a V2 module that fails to load must not stop V1 runs
        print(f"verify: V2 ngram speculator not hooked: {exc}", file=sys.stderr)
        return
    import inspect

    import torch

    original = NgramGPUSpeculator.propose
    signature = inspect.signature(original)

    def propose(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        asked = signature.bind(self, *args, **kwargs).arguments
        batch = asked["input_batch"]
        n = batch.num_reqs
        if asked.get("dummy_run") or n == 0:
            return out
        rows = batch.idx_mapping[:n]
        lengths = self.req_states.total_len.gpu[rows].tolist()
        sampled = asked["num_sampled"][:n].tolist()
        # the prompts' columns only: all a row's request is told by (the sync each step stays)
        table = self.req_states.all_token_ids.gpu[rows, : script.longest_prompt].cpu().numpy()
        k = out.shape[1]
        drafts, hit = out[:n].tolist(), False
        for b in range(n):
            req = script.request_of_row(table[b], lengths[b]) if sampled[b] > 0 else None
            if req is not None:
                done = lengths[b] - len(script.prompts[req])
                drafts[b] = script.padded(script.drafts_for(req, done), req, done, k)
                hit = True
        out[:n] = torch.tensor(drafts, dtype=out.dtype, device=out.device)
        script.served += hit
        return out

    NgramGPUSpeculator.propose = propose


def served() -> int:
    """How many drafter calls the installed scripts served (a row or more each). Zero after a run
    means vLLM drafted some other way (a drafter no hook reaches), so the run exercised nothing of
    the script."""
    return sum(script.served for script in _installed)


def install_from_env() -> bool:
    path = os.environ.get(ENV)
    if not path:
        return False
    with open(path) as f:
        install(Script.from_json(f.read()))
    return True


def transitions(steps: list[tuple[int, int]]) -> dict[str, int]:
    """How often a run hit the transitions that corrupt GDN state."""
    out = {
        "steps": len(steps),
        "accepted_drafts": sum(a for _, a in steps),
        "accepted_then_no_drafts": 0,
        "partial_acceptance": 0,
    }
    for (_o1, a1), (o2, _) in pairwise(steps):
        if a1 > 0 and o2 == 0:
            out["accepted_then_no_drafts"] += 1
    out["partial_acceptance"] = sum(1 for o, a in steps if 0 < a < o)
    return out
