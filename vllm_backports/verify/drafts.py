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
    # An align block's size, or 0: rows are brought to one token short of each block's end and
    # offered one right draft there, so the postprocess shifts their conv window by one row within
    # the block (vLLM #50729's overlapping copy; verify/shifts.py counts them). V1's drafter only.
    land_on: int = 0
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
    # the script as tensors beside V2's drafts (_OnDevice), made at V2's first call, remade by reset
    _device: _OnDevice | None = field(default=None, init=False, repr=False, compare=False)

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
        if self.land_on:
            offered, correct = self._landing(len(self.prompts[req]) + done, offered, correct)
        offered = min(offered, self.k)
        truth = self.continuations[req][done : done + offered]
        # A wrong draft is the right token plus one: guaranteed to differ, still in the vocabulary.
        return [t if j < correct else (t + 1) % self.vocab for j, t in enumerate(truth)]

    def _landing(self, length: int, offered: int, correct: int) -> tuple[int, int]:
        """The schedule's step for a row of `length` tokens (the last one sampled, not yet run):
        at one token short of a block's end, one draft and it right, so the step's running state
        has seen `length` tokens and the block completes one token later; before it, no more
        right than keeps the row from passing that point. One draft, not k: the runner keeps the
        running state in the block of the step's last scheduled token (preprocess_mamba), so a
        second draft would put it in the next block and make the shift a copy across blocks."""
        to_go = -(length + 1) % self.land_on
        if to_go == 0:
            return 1, 1
        return offered, min(correct, to_go - 1)

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
        probe = Script(self.prompts, self.continuations, self.k, self.vocab, self.schedule, land_on=self.land_on)
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
                "land_on": self.land_on,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> Script:
        d = json.loads(text)
        schedule = tuple((int(o), int(c)) for o, c in d.get("schedule", SCHEDULE))
        return cls(
            d["prompts"], d["continuations"], int(d["k"]), int(d["vocab"]), schedule, land_on=int(d.get("land_on", 0))
        )


_installed: list[Script] = []


def reset(continuations: list[list[int]] | None = None) -> None:
    """Start the installed script's schedule over (a new round of the same requests), drafting
    from `continuations` when given: a benchmark hands in the engine's own previous output, so
    drafts stay right after the speculative run has parted from the plain one."""
    for script in _installed:
        script.steps.clear()
        if script._device is not None:  # V2's tensors start over too, its count kept
            script.served += int(script._device.served)
            script._device = None
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


class _OnDevice:
    """A script as tensors on the device of V2's drafts, so that its hook drafts there without
    reading anything back: a read each step would wait for the GPU in a runner that otherwise
    runs ahead of it, and benchmarks time V2 ngram runs through this hook. It drafts exactly what
    Script.drafts_for and Script.padded give for the same rows (tests/verify/test_drafts.py)."""

    def __init__(self, script: Script, device, torch) -> None:
        count, width = len(script.prompts), script.longest_prompt
        prompts = torch.zeros((count, width), dtype=torch.int64)
        beyond = torch.ones((count, width), dtype=torch.bool)  # past a prompt's end any token matches
        longest = max([1] + [len(c) for c in script.continuations])
        continuations = torch.zeros((count, longest), dtype=torch.int64)
        for i, (prompt, cont) in enumerate(zip(script.prompts, script.continuations, strict=True)):
            prompts[i, : len(prompt)] = torch.tensor(prompt)
            beyond[i, : len(prompt)] = False
            continuations[i, : len(cont)] = torch.tensor(cont, dtype=torch.int64)
        self.prompts, self.beyond = prompts.to(device), beyond.to(device)
        self.continuations = continuations.to(device)
        self.prompt_len = torch.tensor([len(p) for p in script.prompts], device=device)
        self.known_len = torch.tensor([len(c) for c in script.continuations], device=device)
        self.offered = torch.tensor([o for o, _ in script.schedule], device=device)
        self.correct = torch.tensor([c for _, c in script.schedule], device=device)
        self.steps = torch.zeros(count, dtype=torch.int64, device=device)
        self.served = torch.zeros((), dtype=torch.int64, device=device)
        self.k, self.vocab, self.torch = script.k, script.vocab, torch

    def draft(self, table, lengths, sampled, out) -> None:
        """Overwrite the rows of `out` (one a batch row) whose token rows (`table`, their first longest_prompt columns;
        `lengths` counting the token just sampled) are the script's and that sampled a token."""
        torch = self.torch
        n, k = out.shape  # the batch's rows, their draft slots
        # match[b, r]: row b holds prompt r whole; the first match, as request_of_row takes it
        match = ((table[:, None, :] == self.prompts[None]) | self.beyond[None]).all(-1)
        match &= lengths[:, None] >= self.prompt_len[None]
        known = match.any(1) & (sampled > 0)
        req = match.to(torch.int32).argmax(1)
        done = lengths - self.prompt_len[req]
        # rows of one request (a prompt that begins another's) take its schedule's steps in row
        # order, as the host's loop does
        row = torch.arange(n, device=out.device)
        before = (req[:, None] == req[None, :]) & known[None, :] & (row[None, :] < row[:, None])
        phase = (self.steps[req] + before.sum(1) + req) % len(self.offered)
        right = torch.minimum(torch.clamp(self.offered[phase], max=self.k), self.correct[phase])
        at = torch.arange(k, device=out.device)
        pos = done[:, None] + at[None]
        inside = pos < self.known_len[req][:, None]
        truth = self.continuations[req[:, None], pos.clamp(0, self.continuations.shape[1] - 1)]
        truth = torch.where(inside, truth, torch.zeros_like(truth))
        drafted = torch.where(inside & (at[None] < right[:, None]), truth, (truth + 1) % self.vocab)
        out.copy_(torch.where(known[:, None], drafted.to(out.dtype), out))
        self.steps.index_add_(0, req, known.to(torch.int64))
        self.served += known.any().to(torch.int64)


def _install_v2(script: Script) -> None:
    """V2's ngram speculator drafts k tokens for every row on the GPU; the hook lets it run (its
    buffers and shapes stay vLLM's), then writes the script's drafts, made k long with wrong
    tokens, over the rows the script knows, on the GPU as well (_OnDevice). It reads each row as
    the speculator's own kernel does: the request's token row and its total length, which counts
    the token just sampled; a row with nothing sampled this step (a prefill chunk short of its
    end) gets no drafts."""
    try:
        from vllm.v1.worker.gpu.spec_decode.ngram.speculator import NgramGPUSpeculator
    except ImportError:  # before 0.32 ngram never runs on V2
        return
    except Exception as exc:  # a V2 module that fails to load must not stop V1 runs
        print(f"verify: V2 ngram speculator not hooked: {exc}", file=sys.stderr)
        return
    if script.land_on:  # its drafts are made on the device (_OnDevice), which does not land rows
        print("verify: V2 ngram speculator not hooked: landing on block ends is V1's only", file=sys.stderr)
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
        if script._device is None:
            script._device = _OnDevice(script, out.device, torch)
        rows = batch.idx_mapping[:n]
        script._device.draft(
            self.req_states.all_token_ids.gpu[rows, : script.longest_prompt],
            self.req_states.total_len.gpu[rows],
            asked["num_sampled"][:n],
            out[:n],
        )
        return out

    NgramGPUSpeculator.propose = propose


def served() -> int:
    """How many drafter calls the installed scripts served (a row or more each). Zero after a run
    means vLLM drafted some other way (a drafter no hook reaches), so the run exercised nothing of
    the script. V2's count is on the GPU: reading it waits for the GPU, once, after the run."""
    on_device = (int(s._device.served) for s in _installed if s._device is not None)
    return sum(script.served for script in _installed) + sum(on_device)


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
