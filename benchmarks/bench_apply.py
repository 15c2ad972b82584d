"""Apply and revert the series on a real installed vLLM (a full site-packages install).

    python benchmarks/bench_apply.py --site DIR [--repeat 10]

DIR is a site-packages holding vllm and vllm-X.dist-info (e.g. `pip install --no-deps
--target DIR vllm==0.20.0`, or the GPU machine's staged install). Each round times a whole
`apply.py` process (interpreter start included) for apply, and for revert; the tree ends as it
began. Prints one JSON object.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import click

REPO = Path(__file__).resolve().parent.parent


def _timed(args: list[str]) -> tuple[float, dict]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, str(REPO / "apply.py"), *args, "--json"], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if out.returncode:
        raise SystemExit(out.stdout + out.stderr)
    return elapsed, json.loads(out.stdout)


@click.command()
@click.option("--site", type=click.Path(exists=True, file_okay=False, path_type=Path), required=True)
@click.option("--repeat", type=click.IntRange(min=1), default=10)
def main(site: Path, repeat: int) -> None:
    applies, reverts, noops = [], [], []
    version = None
    for _ in range(repeat):
        t, out = _timed(["apply", "--vllm", "auto", "--target", str(site)])
        assert out["summary"]["applied"] >= 1, out
        version = out["vllm"]
        applies.append(t)
        t, out = _timed(["apply", "--vllm", "auto", "--target", str(site)])
        assert out["changed_files"] == [], out
        noops.append(t)
        t, out = _timed(["revert", "--vllm", "auto", "--target", str(site)])
        reverts.append(t)

    def stats(xs: list[float]) -> dict:
        return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "runs": len(xs)}

    print(json.dumps({"vllm": version, "site": str(site), "apply_s": stats(applies),
                      "apply_again_s": stats(noops), "revert_s": stats(reverts)}, indent=2))


if __name__ == "__main__":
    main()
