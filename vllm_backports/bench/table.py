"""docs/BENCHMARKS.md's A/B table, generated from the result JSONs in records/runs/bench-ab/ (one a
run, written by `benchmarks/bench_ab.py summarize`): pure, checked by CI through
`python -m vllm_backports.maint bench-table`."""

from __future__ import annotations

from pathlib import PurePosixPath

from .results import target_met

RUNS = PurePosixPath("records/runs/bench-ab")
BEGIN, END = "<!-- bench-ab:begin -->", "<!-- bench-ab:end -->"
NONE_YET = "No A/B run has been recorded yet: the figures are owed (see the command above)."
REQUIRED = ("experiment", "shape", "vllm", "date", "gpu", "a", "b", "layout", "pairs", "comparisons")


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _ci(c: dict) -> str:
    if c["ci_low"] is None:
        return f"{c['ratio']:.3f} (one pair: no interval)"
    return f"{c['ratio']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}]"


def _target(result: dict, decode: dict) -> str:
    """The experiment's target read on this level's decode B/A alone: a run is met only where
    every level is (its `target_met`), but a reader of one row wants that row's verdict."""
    target = result.get("target")
    if not target:
        return "-"
    aim = f">= {target['at_least']}"
    if target.get("half_width") is not None:
        aim += f", ±{100 * target['half_width']:.1f}%"
    got = target_met(target, [decode])
    if not got or got.get("met") is None:
        return f"{aim}: no interval"
    if got["met"]:
        verdict = "met" if got["shown"] else "met, interval reaches below"
    else:
        # the whole interval above the target, but wider than the target's half-width
        verdict = "interval above, too wide" if got["shown"] else "not met"
    return f"{aim}: {verdict}"


def rows(name: str, result: dict, json_link: str, plot: str | None) -> list[str]:
    """One line per concurrency level of one run: decode tokens/s and TTFT, B against A."""
    missing = [k for k in REQUIRED if k not in result]
    if missing:
        raise ValueError(f"{name}: missing {', '.join(missing)}")
    by = {(c["figure"], c["concurrency"]): c for c in result["comparisons"]}
    levels = sorted({c for _, c in by})
    out = []
    for lv in levels:
        d, t = by[("decode_tok_s", lv)], by[("ttft_ms", lv)]
        acc = result.get("acceptance", {}).get("b", {}).get(str(lv))
        link = f"[json]({json_link})" + (f", [plot]({plot})" if plot else "")
        # engine pairs started one after another within the run (--restarts): their spread is inside
        # the interval
        layout = result["layout"] + (f", {n} engine pairs" if (n := result.get("instances", 1)) > 1 else "")
        # --pin-cores: each arm on half the cores, so its absolute speed is not the unpinned runs'
        layout += ", half the cores each" if (result.get("plan") or {}).get("pin_cores") else ""
        out.append(
            f"| {result['date']} | {result['gpu']} | {result['vllm']} | {result['shape']} | "
            f"{result['b']} / {result['a']} | {lv} | {d['a_mean']:.0f} → {d['b_mean']:.0f} | {_ci(d)} | "
            f"{_ci(t)} | {_pct(acc)} | {result['pairs']} ({layout}) | {_target(result, d)} | {link} |"
        )
    return out


def render(
    results: dict[str, dict], plots: dict[str, str] | None = None, base: str = "../records/runs/bench-ab"
) -> str:
    """The table of `results` (file stem -> result JSON), sorted by stem; `plots` maps a stem to
    its PNG. Links are relative to docs/ (`base`: where the files lie from there)."""
    plots = plots or {}
    head = [
        "| date | GPU | vLLM | shape | B / A | requests | decode tok/s, A → B | decode B/A [95% CI] | "
        "TTFT B/A [95% CI] | B's drafts accepted | pairs (layout) | target | files |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    if not results:
        return NONE_YET
    body = []
    for name in sorted(results):
        plot = f"{base}/{plots[name]}" if name in plots else None
        body += rows(name, results[name], f"{base}/{name}.json", plot)
    return "\n".join(head + body)
