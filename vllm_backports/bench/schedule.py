"""The order of one A/B run's engine operations: pure, so that what runs when can be tested.

Layouts, by how the two engines share the GPU:
- resident: both engines stay loaded side by side (each with its fixed KV size); rounds
  alternate between them. For models of which two copies fit on the GPU.
- sleep: both engines are started, but only the one measuring is awake; the other sleeps (vLLM's
  sleep mode, level 1: weights to host memory, KV cache dropped) and is woken for its round, CUDA
  graphs kept. For models of which one copy fits. Sleeping and waking are not timed.
- sequential: one engine at a time, all of its rounds, then the other's; pairs are then minutes
  apart, so drift of the machine is not cancelled. The fallback where sleep mode fails.

Each engine first runs `warmup` untimed rounds. Timed rounds come in pairs (A's round i, B's round
i); order "abab" puts A first in every pair, "abba" alternates which side goes first, so that a
trend within a pair falls on A and B alike.
"""

from __future__ import annotations

LAYOUTS = ("resident", "sleep", "sequential")
ORDERS = ("abab", "abba")
ARMS = ("a", "b")

# (operation, arm, round index or None); operations: start, warmup, round, profile, sleep, wake, stop
Step = tuple[str, str, int | None]


def order(pairs: int, kind: str = "abab", first: int = 0) -> list[tuple[int, str]]:
    """(round index, arm) in the order they run, rounds first .. first + pairs - 1."""
    if kind not in ORDERS:
        raise ValueError(f"order {kind!r} is not one of {', '.join(ORDERS)}")
    out: list[tuple[int, str]] = []
    for i in range(first, first + pairs):
        arms = ARMS if kind == "abab" or i % 2 == 0 else ARMS[::-1]
        out += [(i, arm) for arm in arms]
    return out


def steps(
    layout: str, pairs: int, warmup: int = 1, kind: str = "abab", first: int = 0, profile: bool = False
) -> list[Step]:
    """Every operation of a run of `pairs` timed pairs of rounds, numbered from `first`; with
    `profile`, each engine's last operation before it stops is one profiled generate."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    warm: list[Step] = [("warmup", arm, None) for arm in ARMS for _ in range(warmup)]
    timed: list[Step] = [("round", arm, i) for i, arm in order(pairs, kind, first)]
    prof: list[Step] = [("profile", arm, None) for arm in ARMS] if profile else []
    if layout == "sequential":
        out: list[Step] = []
        for arm in ARMS:
            out += [("start", arm, None)]
            out += [s for s in warm if s[1] == arm]
            out += [s for s in [*timed, *prof] if s[1] == arm]
            out += [("stop", arm, None)]
        return out
    if layout == "resident":
        return [
            ("start", "a", None),
            ("start", "b", None),
            *warm,
            *timed,
            *prof,
            ("stop", "a", None),
            ("stop", "b", None),
        ]
    # sleep: every engine asleep unless it is the one working. Every round is woken for, even a
    # second round of the same engine in a row (abba), so that all rounds start alike.
    out = []
    for arm in ARMS:
        out += [("start", arm, None), ("sleep", arm, None)]
    for op, arm, i in [*warm, *timed, *prof]:
        out += [("wake", arm, None), (op, arm, i), ("sleep", arm, None)]
    return out + [("stop", "a", None), ("stop", "b", None)]
