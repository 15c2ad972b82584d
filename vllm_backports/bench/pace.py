"""The pace of vLLM's step loop during one timed generate: how long each `LLMEngine.step` call
took, seen from the process that calls generate, and how long that process spent in Python's
garbage collector meanwhile. The prefill's steps, long in every round alike, are left out: the
figures are those of the decode. Beside them, how fast the process ran a fixed piece of host work
just before (`probe`).

At 1 request a round is a hundred-odd steps of a few milliseconds, and single rounds of one arm
have read 30 to 40% slower than the arm's median with the GPU's clock steady and no throttle
reason set (docs/BENCHMARKS.md: 0.27.0, H200, 2026-11-28 23:35 UTC). A round slowed by a few long steps (a stall) and a
round whose every step is slower point to different causes; these figures tell them apart. At 1
request a step is bound by the host, and two engines' processes in one run have run the same
host ops at rates 1.9x apart (0.26.0 and 0.21.0, H200, 2026-11-29 01:18 UTC): the probe tells
an arm whose process ran slow from an arm whose code does more.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Sequence
from typing import Any

LONG = 2.0  # a step at least this many times its round's median step counts as long
PROBE = 20_000  # the probe's loop: under a millisecond of one core's Python (0.56 ms on a 2-core CPU machine)


def probe(clock: Callable[[], float], repeats: int = 5) -> float:
    """Microseconds this process takes for a fixed piece of pure-Python work, the median of
    `repeats`: the host's speed as this process meets it (its core's clock, what shares the
    core)."""
    took = []
    for _ in range(repeats):
        t0 = clock()
        sum(i * i for i in range(PROBE))
        took.append(clock() - t0)
    return 1e6 * statistics.median(took)


class Pace:
    """Within `with Pace(llm, clock) as pace:`, every `llm.llm_engine.step()` is timed (when it
    began, from entry, and how long it took) and every collection of the garbage collector too;
    on leaving, the engine is as it was. An engine that steps is probed on entry (`probe_us`);
    an `llm` without one (a stand-in) yields no steps, no probe and `summary()` None."""

    def __init__(self, llm, clock: Callable[[], float]):
        self.engine: Any = getattr(llm, "llm_engine", None)
        self.clock = clock
        self.steps: list[float] = []
        self.starts: list[float] = []  # seconds from entry, one a step
        self._entered = 0.0
        self.pauses: list[float] = []
        self._step: Callable | None = None
        self._own = False  # whether the engine held `step` itself (not through its class)
        self.probe_us: float | None = None
        self._gc_from: float | None = None

    def __enter__(self) -> Pace:
        step = getattr(self.engine, "step", None)
        if callable(step):
            self._step, self._own = step, "step" in getattr(self.engine, "__dict__", {})

            def timed(*args, **kwargs):
                t0 = self.clock()
                try:
                    return step(*args, **kwargs)
                finally:
                    self.starts.append(t0 - self._entered)
                    self.steps.append(self.clock() - t0)

            try:
                self.engine.step = timed
            except AttributeError:  # an engine with slots or a read-only step: the round untimed
                self._step = None
        if self._step is not None:
            self.probe_us = probe(self.clock)
        gc.callbacks.append(self._collected)
        self._entered = self.clock()
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._collected)
        if self._step is not None:
            if self._own:
                self.engine.step = self._step
            else:
                del self.engine.step
            self._step = None

    def _collected(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_from = self.clock()
        elif self._gc_from is not None:
            self.pauses.append(self.clock() - self._gc_from)
            self._gc_from = None

    def summary(self, after: float = 0.0) -> dict | None:
        """summary() of the steps begun `after` seconds from entry or later (the decode's, given
        the time to the batch's first tokens), with `prefill_steps`: how many began before, and
        `probe_us`: probe() on entry."""
        kept = [d for t, d in zip(self.starts, self.steps, strict=True) if t >= after]
        seen = summary(kept, self.pauses)
        if seen is None:
            return None
        return {**seen, "prefill_steps": len(self.steps) - len(kept), "probe_us": self.probe_us}


def summary(steps: Sequence[float], pauses: Sequence[float] = ()) -> dict | None:
    """One round's figures (milliseconds): steps, their median and longest, the long ones (at
    least LONG times the median) and what they took beyond the median, and the collector's
    pauses. None without steps."""
    if not steps:
        return None
    median = statistics.median(steps)
    long = [s for s in steps if s >= LONG * median]
    return {
        "steps": len(steps),
        "median_ms": 1e3 * median,
        "max_ms": 1e3 * max(steps),
        "long": len(long),
        "long_excess_ms": 1e3 * sum(s - median for s in long),
        "gc": len(pauses),
        "gc_ms": 1e3 * sum(pauses),
    }


def over_rounds(rounds: Sequence[tuple[float, dict]]) -> dict | None:
    """An arm's rounds at one level, as (decode seconds, summary()): the median step over rounds
    (with its least and most), long steps and collector time per round, and `long_share`: of the
    time the rounds slower than the arm's median round took beyond it, the part their long steps
    took beyond the rounds' median time in long steps (near 1: stalls make the spread; near 0:
    whole rounds ran slower). So a long step that every round has alike (a prefill step, in
    records from before summary() left those out) counts for nothing.
    None without rounds; `long_share` None when no round is slower than the median."""
    if not rounds:
        return None
    typical = statistics.median(d for d, _ in rounds)
    usual = statistics.median(p["long_excess_ms"] for _, p in rounds)
    slow = [(d, p) for d, p in rounds if d > typical]
    beyond = sum(d - typical for d, _ in slow)
    stalled = sum(max(0.0, p["long_excess_ms"] - usual) for _, p in slow) / 1e3
    medians = [p["median_ms"] for _, p in rounds]
    probes = [p["probe_us"] for _, p in rounds if p.get("probe_us") is not None]  # none in older records
    return {
        "rounds": len(rounds),
        "step_median_ms": {"median": statistics.median(medians), "min": min(medians), "max": max(medians)},
        "long_per_round": statistics.fmean(p["long"] for _, p in rounds),
        "long_excess_ms_per_round": statistics.fmean(p["long_excess_ms"] for _, p in rounds),
        "gc_ms_per_round": statistics.fmean(p["gc_ms"] for _, p in rounds),
        "long_share": stalled / beyond if beyond > 0 else None,
        "probe_us": ({"median": statistics.median(probes), "min": min(probes), "max": max(probes)} if probes else None),
    }
