"""An A/B run's progress lines made into its result: pure, so that a run can be summarised while
it is still going (poll) and again after it is resumed.

A progress line is one arm's round: {"arm": "a"|"b", "round": i, "instance": n, "levels":
{"16": {"ttft_s", "decode_s", "max_tokens", "requests", "drafts", "accepted", and where sampled
"decode_window" and "gpu": the window of its full generate, "pace": its steps (pace.summary)},
...}, "sm_clock_mhz": ..., "t0", "t", "gpu": clocks.Sampler.window(t0, t) where sampled}. Per
concurrency level: TTFT is the time to the first token of every request (a generate of one
token), TPOT the rest of a full generate over its remaining tokens, and decode tokens/s the
level's requests over TPOT.
"""

from __future__ import annotations

from collections import Counter

from . import pace
from .stats import bootstrap_ratio

SCHEMA = 1
# figure -> whether a larger value is better
FIGURES = {"decode_tok_s": True, "tpot_ms": False, "ttft_ms": False}
# the figure at the top of a result: decode tokens/s at 16 requests (or the most measured, without 16)
HEADLINE = {"figure": "decode_tok_s", "concurrency": 16}


def figures(level: dict) -> dict[str, float]:
    """One level of one round as the figures compared."""
    tpot = (level["decode_s"] - level["ttft_s"]) / (level["max_tokens"] - 1)
    if tpot <= 0:
        raise ValueError(f"a full generate ({level['decode_s']} s) took no longer than its first token")
    return {"decode_tok_s": level["requests"] / tpot, "tpot_ms": tpot * 1e3, "ttft_ms": level["ttft_s"] * 1e3}


def pairs(lines: list[dict]) -> list[tuple[dict, dict, int]]:
    """(A's round, B's round, instance) for every round index both arms completed in one
    instance, in round order; a round of one arm alone (a run cut off mid-pair) is left out."""
    by: dict[tuple[int, int, str], dict] = {}
    for line in lines:
        by[(line["instance"], line["round"], line["arm"])] = line
    out = []
    for inst, i, arm in sorted(by):
        if arm == "a" and (inst, i, "b") in by:
            out.append((by[(inst, i, "a")], by[(inst, i, "b")], inst))
    return out


def acceptance(lines: list[dict], level: str) -> float | None:
    """Accepted draft tokens over drafted ones at one level, over all of an arm's rounds; None
    without speculation (or counters)."""
    drafted = sum(x["levels"][level].get("drafts") or 0 for x in lines)
    accepted = sum(x["levels"][level].get("accepted") or 0 for x in lines)
    return accepted / drafted if drafted else None


def summarise(meta: dict, lines: list[dict], resamples: int = 4000) -> dict:
    """The result JSON of a run: `meta` (what ran, where; it carries the experiment's target as
    "target": {"at_least", "half_width"}) with a comparison per figure and concurrency level, and
    the headline's ratio, ci_low and ci_high at the top."""
    matched = pairs(lines)
    levels = sorted({lv for a, _, _ in matched for lv in a["levels"]}, key=int)
    comparisons = []
    for lv in levels:
        got = [(figures(a["levels"][lv]), figures(b["levels"][lv]), inst) for a, b, inst in matched]
        for name, higher in FIGURES.items():
            xa, xb = [g[0][name] for g in got], [g[1][name] for g in got]
            ci = bootstrap_ratio(xa, xb, [g[2] for g in got], resamples=resamples) if len(got) >= 2 else None
            comparisons.append(
                {
                    "figure": name,
                    "higher_is_better": higher,
                    "concurrency": int(lv),
                    "a_mean": sum(xa) / len(xa),
                    "b_mean": sum(xb) / len(xb),
                    "ratio": ci.ratio if ci else sum(xb) / sum(xa),
                    "ci_low": ci.low if ci else None,
                    "ci_high": ci.high if ci else None,
                    "half_width": ci.half_width if ci else None,
                    "pairs": len(got),
                }
            )
    by_arm = {arm: [x for x in lines if x["arm"] == arm] for arm in ("a", "b")}
    at = HEADLINE["concurrency"] if str(HEADLINE["concurrency"]) in levels else int(levels[-1]) if levels else None
    headline = {"figure": HEADLINE["figure"], "concurrency": at}
    head = next((c for c in comparisons if c["figure"] == headline["figure"] and c["concurrency"] == at), None)
    clocks = [x["sm_clock_mhz"] for x in lines if x.get("sm_clock_mhz")]
    sampled = any("gpu" in x for x in lines)  # runs from before the sampler have none
    stepped = any("pace" in lv for x in lines for lv in x["levels"].values())  # nor before pace
    counted = any("cpus" in x for x in lines)  # nor before the CPU record
    return {
        "schema": SCHEMA,
        **meta,
        "pairs": len(matched),
        "instances": len({inst for _, _, inst in matched}),
        "headline": headline,
        "ratio": head["ratio"] if head else None,
        "ci_low": head["ci_low"] if head else None,
        "ci_high": head["ci_high"] if head else None,
        "target_met": target_met(meta.get("target"), comparisons),
        "acceptance": {arm: {lv: acceptance(rows, lv) for lv in levels} for arm, rows in by_arm.items()},
        "sm_clock_mhz": {"min": min(clocks), "max": max(clocks)} if clocks else None,
        "gpu_during_rounds": {arm: during(rows) for arm, rows in by_arm.items()} if sampled else None,
        "gpu_during_decodes": (
            {arm: {lv: during(rows, lv) for lv in levels} for arm, rows in by_arm.items()} if sampled else None
        ),
        "pace_during_decodes": (
            {arm: {lv: paced(rows, lv) for lv in levels} for arm, rows in by_arm.items()} if stepped else None
        ),
        "cpus_during_rounds": {arm: cpus_during(rows) for arm, rows in by_arm.items()} if counted else None,
        "comparisons": comparisons,
    }


BUSY = 0.5  # a CPU busy at least this share of a round counts as a busy CPU of it


def cpus_during(lines: list[dict]) -> dict:
    """What the CPUs did over an arm's timed rounds (each round's `cpus`): how many rounds had
    how many CPUs busy, and the most any CPU had stolen in a round. An arm whose rounds differ in
    busy CPUs, or meet steal, ran beside something its code does not explain."""
    seen = [x["cpus"] for x in lines if x.get("cpus")]
    busy = Counter(str(sum(share >= BUSY for share in c["busy"].values())) for c in seen)
    stolen = [share for c in seen for share in c["steal"].values()]
    return {
        "rounds": len(seen),
        "busy_cpus": dict(sorted(busy.items(), key=lambda kv: int(kv[0]))),
        "steal_max": max(stolen) if stolen else None,
    }


def paced(lines: list[dict], level: str) -> dict | None:
    """The pace of an arm's full generates at one level (pace.over_rounds), from the rounds that
    timed their steps."""
    at = [x["levels"].get(level, {}) for x in lines]
    return pace.over_rounds([(x["decode_s"], x["pace"]) for x in at if x.get("pace")])


def during(lines: list[dict], level: str | None = None) -> dict:
    """What the clock did over an arm's timed rounds, from their samples (or, given a level, over
    that level's full generates alone): the SM clock's least and most, the rounds sampled, and per
    throttle reason the rounds it held back."""
    seen = [x["levels"].get(level, {}) for x in lines] if level is not None else lines
    windows = [x["gpu"] for x in seen if x.get("gpu", {}).get("samples")]
    sm = [mhz for w in windows if w.get("sm_mhz") for mhz in w["sm_mhz"]]
    held: dict[str, int] = {}
    for w in windows:
        for reason in w.get("reasons", []):
            held[reason] = held.get(reason, 0) + 1
    return {
        "rounds": len(lines),
        "sampled": len(windows),
        "sm_mhz": {"min": min(sm), "max": max(sm)} if sm else None,
        "reasons": dict(sorted(held.items())),
    }


def target_met(target: dict | None, comparisons: list[dict]) -> dict | None:
    """The target read on B/A of decode tokens/s at every level: "met" where the ratio is at
    least the target and the interval no wider than its half-width; "shown" where the whole
    interval lies at or above the target. None without a target; each None without intervals."""
    if not target:
        return None
    decode = [c for c in comparisons if c["figure"] == "decode_tok_s"]
    if not decode or any(c["ci_low"] is None for c in decode):
        return {"met": None, "shown": None}
    met = all(c["ratio"] >= target["at_least"] for c in decode)
    if target.get("half_width") is not None:
        met = met and all(c["half_width"] <= target["half_width"] for c in decode)
    return {"met": met, "shown": all(c["ci_low"] >= target["at_least"] for c in decode)}
