"""How the GPU machine's CPUs share hardware, measured rather than read from sysfs: each CPU's
time for a fixed piece of Python alone, then pairs of CPUs running it at once. Two CPUs that
slow each other down share a physical core (or the hypervisor backs them with one), whatever
Linux's thread_siblings_list says. The 1.3x threshold has not yet met a machine with SMT: the
H100 machines of 2026-12-07 have none (every pair within 1.11x).

    python3 -m lab.cpus [--loop 400000] > cpus.json

Up to 16 CPUs every pair is timed (120 pairs, about 25 s); above that, the pairs a numbering
scheme makes siblings (neighbours, CPUs half the count apart) and those sysfs lists, so that
a machine of 128 CPUs is done in one call too. Standard library and the project's package
only: it runs on the bare machine before anything is installed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import queue
import sys
import time
from collections.abc import Sequence
from itertools import combinations

from vllm_backports.bench.driver import smt_siblings

ALL_PAIRS = 16  # up to this many CPUs every pair is timed
WAIT_S = 60  # a timed run that has not reported by then has lost a process


def work(loop: int) -> float:
    """Seconds this process takes for a fixed piece of pure-Python work."""
    t0 = time.perf_counter()
    sum(i * i for i in range(loop))
    return time.perf_counter() - t0


def _pinned(cpu: int, loop: int, start, out) -> None:
    try:
        os.sched_setaffinity(0, {cpu})
        work(loop // 10)  # settle on the CPU before the timed work
        start.wait(WAIT_S)
        out.put((cpu, work(loop)))
    except Exception as e:  # the parent says which CPU failed instead of waiting for it
        start.abort()
        out.put((cpu, f"{type(e).__name__}: {e}"))


def timed(cpus: Sequence[int], loop: int) -> dict[int, float]:
    """Each of `cpus` running the work at the same time, one process pinned to each: seconds.
    RuntimeError, in one line, where a CPU cannot be pinned or a process does not report."""
    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(len(cpus)), ctx.Queue()
    procs = [ctx.Process(target=_pinned, args=(c, loop, start, out)) for c in cpus]
    for p in procs:
        p.start()
    try:
        got = dict(out.get(timeout=WAIT_S) for _ in procs)
    except queue.Empty:
        raise RuntimeError(f"CPUs {list(cpus)}: a process reported nothing in {WAIT_S} s") from None
    finally:
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
    failed = {c: t for c, t in got.items() if isinstance(t, str)}
    if failed:
        raise RuntimeError("; ".join(f"CPU {c}: {why}" for c, why in sorted(failed.items())))
    return got


def candidate_pairs(cpus: Sequence[int], siblings: dict[int, list[int]]) -> list[tuple[int, int]]:
    """The pairs to time: all of them up to ALL_PAIRS CPUs; above, neighbours by number, CPUs
    half the count apart (the two ways hosts number a core's threads) and sysfs's siblings."""
    if len(cpus) <= ALL_PAIRS:
        return list(combinations(cpus, 2))
    order, half = sorted(cpus), len(cpus) // 2
    given = set(order)
    picked = {(order[i], order[i + 1]) for i in range(len(order) - 1)}
    picked |= {(order[i], order[i + half]) for i in range(len(order) - half)}
    picked |= {(min(c, s), max(c, s)) for c in order for s in siblings.get(c, []) if s != c and s in given}
    return sorted(picked)


def shares(alone: dict[int, float], pairs: dict[tuple[int, int], list[dict[int, float]]], slow: float) -> dict:
    """The pairs that ran slow together, and the groups they make (CPUs linked through such
    pairs). A run's slowdown is the mean of its two CPUs' against their time alone, so a host
    that runs the two one after the other (one slowed in one run, the other in the next) counts
    as well as a shared core (both slowed); a pair is slow when its least slowdown over the runs
    is at least `slow`."""
    linked = sorted(p for p, runs in pairs.items() if least(p, runs, alone) >= slow)
    group = {c: {c} for c in alone}
    for x, y in linked:
        merged = group[x] | group[y]
        for c in merged:
            group[c] = merged
    groups = sorted({tuple(sorted(g)) for g in group.values()})
    return {"slow_pairs": [list(p) for p in linked], "groups": [list(g) for g in groups]}


def least(pair: tuple[int, int], runs: list[dict[int, float]], alone: dict[int, float]) -> float:
    """The least over `runs` of the pair's mean slowdown against each CPU's time alone."""
    return min(sum(run[c] / alone[c] for c in pair) / 2 for run in runs)


def measure(cpus: Sequence[int], loop: int, repeats: int = 3, slow: float = 1.3) -> dict:
    """Each CPU alone (the least of `repeats`), each candidate pair at once (`repeats` runs),
    and what they make of the machine."""
    siblings = smt_siblings(cpus)
    alone = {c: min(timed([c], loop)[c] for _ in range(repeats)) for c in cpus}
    pairs = {(x, y): [timed([x, y], loop) for _ in range(repeats)] for x, y in candidate_pairs(cpus, siblings)}
    return {
        "loop": loop,
        "alone_ms": {str(c): round(1e3 * t, 2) for c, t in alone.items()},
        "pair_slowdown": {f"{x},{y}": round(least((x, y), runs, alone), 2) for (x, y), runs in pairs.items()},
        "slow": slow,
        **shares(alone, pairs, slow),
        "sysfs_siblings": {str(c): s for c, s in siblings.items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.cpus", description=__doc__.split("\n\n")[0])
    ap.add_argument("--loop", type=int, default=400_000, help="iterations of the work (18 ms on an H100 machine's CPU)")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if not hasattr(os, "sched_setaffinity"):
        print("lab.cpus: this platform cannot pin a process to a CPU", file=sys.stderr)
        return 2
    try:
        print(json.dumps(measure(sorted(os.sched_getaffinity(0)), args.loop, args.repeats)))
    except RuntimeError as e:
        print(f"lab.cpus: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
