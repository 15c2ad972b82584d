"""How the GPU machine's CPUs share hardware, measured rather than read from sysfs: each CPU's
speed alone, then each pair's speed when both run at once. Two CPUs that slow each other down
share a physical core (or the hypervisor backs them with one), whatever Linux's
thread_siblings_list says; a CPU slow alone is one the hypervisor gives less time.

    python3 -m lab.cpus [--loop 400000] > cpus.json

Standard library and the project's package only: it runs on the bare machine before anything
is installed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
from collections.abc import Sequence
from itertools import combinations

from vllm_backports.bench.driver import smt_siblings


def work(loop: int) -> float:
    """Seconds this process takes for a fixed piece of pure-Python work."""
    t0 = time.perf_counter()
    sum(i * i for i in range(loop))
    return time.perf_counter() - t0


def _pinned(cpu: int, loop: int, start, out) -> None:
    os.sched_setaffinity(0, {cpu})
    work(loop // 10)  # settle on the CPU before the timed work
    start.wait()
    out.put((cpu, work(loop)))


def timed(cpus: Sequence[int], loop: int) -> dict[int, float]:
    """Each of `cpus` running the work at the same time, one process pinned to each: seconds."""
    ctx = mp.get_context("fork")
    start, out = ctx.Barrier(len(cpus)), ctx.Queue()
    procs = [ctx.Process(target=_pinned, args=(c, loop, start, out)) for c in cpus]
    for p in procs:
        p.start()
    got = dict(out.get() for _ in procs)
    for p in procs:
        p.join()
    return got


def shares(alone: dict[int, float], pairs: dict[tuple[int, int], dict[int, float]], slow: float) -> dict:
    """The pairs whose two CPUs each ran at least `slow` times their speed alone, and the groups
    they make (CPUs linked through such pairs)."""
    linked = sorted(p for p, t in pairs.items() if all(t[c] >= slow * alone[c] for c in p))
    group = {c: {c} for c in alone}
    for x, y in linked:
        merged = group[x] | group[y]
        for c in merged:
            group[c] = merged
    groups = sorted({tuple(sorted(g)) for g in group.values()})
    return {"slow_pairs": [list(p) for p in linked], "groups": [list(g) for g in groups]}


def measure(cpus: Sequence[int], loop: int, repeats: int = 3, slow: float = 1.3) -> dict:
    """Each CPU alone (the least of `repeats`), each pair at once (the least of `repeats`, each
    CPU's time against its own alone), and what they make of the machine."""
    alone = {c: min(timed([c], loop)[c] for _ in range(repeats)) for c in cpus}
    pairs: dict[tuple[int, int], dict[int, float]] = {}
    for x, y in combinations(cpus, 2):
        runs = [timed([x, y], loop) for _ in range(repeats)]
        pairs[(x, y)] = {c: min(r[c] for r in runs) for c in (x, y)}
    return {
        "loop": loop,
        "alone_ms": {str(c): round(1e3 * t, 2) for c, t in alone.items()},
        "pair_slowdown": {
            f"{x},{y}": [round(t[x] / alone[x], 2), round(t[y] / alone[y], 2)] for (x, y), t in pairs.items()
        },
        "slow": slow,
        **shares(alone, pairs, slow),
        "sysfs_siblings": {str(c): s for c, s in smt_siblings(cpus).items()},
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m lab.cpus", description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--loop", type=int, default=400_000, help="iterations of the timed work (about 25 ms on a fast core)"
    )
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    if not hasattr(os, "sched_setaffinity"):
        print("lab.cpus: this platform cannot pin a process to a CPU", file=sys.stderr)
        return 2
    cpus = sorted(os.sched_getaffinity(0))
    print(json.dumps(measure(cpus, args.loop, args.repeats)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
