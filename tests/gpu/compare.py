"""Compare the runs of turboquant_graphs.py against the reference: per run, sequences identical
to the reference, first divergence positions and throughput. Prints a Markdown table."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str) -> None:
    data = json.loads(Path(path).read_text())
    ref = data["reference"]["tokens"]
    print("| run | CG support | identical to reference | first divergence (median, min) | tokens/s |")
    print("|---|---|---|---|---|")
    for mode, run in data.items():
        firsts = []
        for a, b in zip(run["tokens"], ref, strict=False):
            diff = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
            if diff is not None:
                firsts.append(diff)
        same = len(ref) - len(firsts)
        spread = f"{sorted(firsts)[len(firsts) // 2]}, {min(firsts)}" if firsts else "-"
        print(f"| {mode} | {run['cudagraph_support']} | {same}/{len(ref)} | {spread} | {run['tokens_per_s']:.0f} |")


if __name__ == "__main__":
    main(sys.argv[1])
