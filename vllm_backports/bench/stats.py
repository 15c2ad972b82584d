"""The statistics of an A/B run: a paired bootstrap interval on the ratio B/A of a figure.

Rounds come in pairs (A's round i and B's round i, adjacent in time), so slow drift of the
machine falls on both sides of a pair; the bootstrap resamples pairs, never A and B apart. Pairs
measured by different engine instances (a resumed run starts new engines) form groups, and with
two or more groups the bootstrap resamples groups first and pairs within them, so that a
difference between one engine start and the next widens the interval instead of hiding in it.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CENTRES: dict[str, Callable[[Sequence[float]], float]] = {"mean": statistics.fmean, "median": statistics.median}


@dataclass(frozen=True)
class Interval:
    ratio: float  # the statistic on the data as measured
    low: float
    high: float
    n: int  # pairs
    groups: int

    @property
    def half_width(self) -> float:
        """Half the interval's width, relative to the ratio (0.005: +-0.5%)."""
        return (self.high - self.low) / 2 / self.ratio


def ratio(a: Sequence[float], b: Sequence[float], centre: str = "mean") -> float:
    """centre(b) / centre(a)."""
    f = CENTRES[centre]
    return f(b) / f(a)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile (0..1) of sorted values, linear between order statistics."""
    if not sorted_values:
        raise ValueError("no values")
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_ratio(
    a: Sequence[float],
    b: Sequence[float],
    groups: Sequence[int] | None = None,
    centre: str = "mean",
    level: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
) -> Interval:
    """Percentile bootstrap interval of centre(b) / centre(a) over paired rounds (a[i], b[i]).

    `groups[i]` names the engine instance pair i came from; None: one group. Deterministic for
    a given seed."""
    if len(a) != len(b):
        raise ValueError(f"paired rounds needed: {len(a)} of A, {len(b)} of B")
    if len(a) < 2:
        raise ValueError("at least two pairs of rounds are needed for an interval")
    if min(a) <= 0 or min(b) <= 0:
        raise ValueError("figures must be positive")
    groups = list(groups) if groups is not None else [0] * len(a)
    if len(groups) != len(a):
        raise ValueError("one group per pair")
    members: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        members.setdefault(g, []).append(i)
    clusters = list(members.values())
    rng = random.Random(seed)
    f = CENTRES[centre]
    stats = []
    for _ in range(resamples):
        picked = rng.choices(clusters, k=len(clusters)) if len(clusters) > 1 else clusters
        idx = [i for c in picked for i in rng.choices(c, k=len(c))]
        stats.append(f([b[i] for i in idx]) / f([a[i] for i in idx]))
    stats.sort()
    tail = (1 - level) / 2
    return Interval(ratio(a, b, centre), percentile(stats, tail), percentile(stats, 1 - tail), len(a), len(clusters))
