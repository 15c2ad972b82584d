"""Plots of A/B results (benchmarks/bench_ab.py): per run, B/A of decode tokens/s and of TTFT at
each concurrency level with its 95% interval, the target drawn where the run has one.

    python benchmarks/bench_ab_plot.py records/runs/bench-ab/*.json

Each PNG is written beside its JSON (same name), where `python -m vllm_backports.maint
bench-table --write` links it from docs/BENCHMARKS.md. Needs matplotlib (not a dependency of the
tool: pip install matplotlib).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

PANELS = (("decode_tok_s", "decode tokens/s, B / A"), ("ttft_ms", "TTFT, B / A"))


def points(result: dict, figure: str) -> list[tuple[int, float, float, float]]:
    """(concurrency, ratio, distance down to the interval's low end, up to its high end) per level,
    in level order; a level without an interval has zero-length bars."""
    out = []
    for c in sorted((c for c in result["comparisons"] if c["figure"] == figure), key=lambda c: c["concurrency"]):
        low = c["ratio"] - c["ci_low"] if c["ci_low"] is not None else 0.0
        high = c["ci_high"] - c["ratio"] if c["ci_high"] is not None else 0.0
        out.append((c["concurrency"], c["ratio"], low, high))
    return out


def title(result: dict) -> str:
    return (
        f"{result['experiment']}, {result['shape']}, vLLM {result['vllm']}, {result['gpu']}, {result['date']}\n"
        f"B = {result['b']}; A = {result['a']}; {result['pairs']} pairs, 95% intervals"
    )


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PANELS), figsize=(10, 4), constrained_layout=True)
    for ax, (figure, label) in zip(axes, PANELS, strict=True):
        pts = points(result, figure)
        xs = list(range(len(pts)))
        ax.errorbar(xs, [p[1] for p in pts], yerr=[[p[2] for p in pts], [p[3] for p in pts]], fmt="o", capsize=6)
        ax.set_xticks(xs, [str(p[0]) for p in pts])
        ax.set_xlabel("concurrent requests")
        ax.set_ylabel(label)
        ax.axhline(1.0, color="grey", linewidth=0.8)
        target = result.get("target")
        if figure == "decode_tok_s" and target:
            ax.axhline(target["at_least"], color="red", linestyle="--", linewidth=0.8, label=f">= {target['at_least']}")
            ax.legend(loc="best")
    fig.suptitle(title(result), fontsize=9)
    fig.savefig(path, dpi=110)
    plt.close(fig)


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False, path_type=Path))
def main(results) -> None:
    for path in results:
        out = path.with_suffix(".png")
        plot(json.loads(path.read_text()), out)
        click.echo(out)


if __name__ == "__main__":
    main()
