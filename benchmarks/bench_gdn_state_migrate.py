"""Cost of the state copy that the gdn-state-migrate alternative adds, against the bytes it moves.

    python benchmarks/bench_gdn_state_migrate.py [--out F.json]

For one GDN layer of Qwen3-Next-80B-A3B at TP 1 (32 value heads of 128x128 state, conv dim 8192,
conv kernel 4, 3 speculative tokens), a batch of 64 requests of which R need their state moved:
the kernel time per call (CUDA events over 100 calls captured in one CUDA graph, beside the time
of back-to-back eager launches, which is the host's), the bytes it must move (read
and write of each moved SSM slot and conv window), and the bandwidth that implies against the
GPU's peak. R = 0 is the price of a step where nothing moves (launch and one load per program).
The routing fix (gdn-spec-state) moves nothing: its cost is in the end-to-end benchmark.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.alternatives.created import migrate_kernel  # noqa: E402

# Peak HBM bandwidth, GB/s, from the vendors' datasheets.
PEAK_GBPS = {"H100 80GB HBM3": 3350, "H100 PCIe": 2000, "H200": 4800, "A100-SXM4-80GB": 2039,
             "A100-SXM4-40GB": 1555, "A100 80GB PCIe": 1935}


def _peak(name: str) -> int | None:
    for key, gbps in PEAK_GBPS.items():
        if key in name:
            return gbps
    return None


def measure(migrate, torch, rows: int, batch: int, ssm_dtype, iters: int) -> dict:
    heads, dk, dv, dim, window, num_spec = 32, 128, 128, 8192, 3, 3
    slots = batch * (num_spec + 1) + 1
    conv = torch.randn(slots, dim, window + num_spec, device="cuda", dtype=torch.bfloat16)
    ssm = torch.randn(slots, heads, dv, dk, device="cuda", dtype=ssm_dtype)
    blocks = torch.arange(1, slots, device="cuda", dtype=torch.int32).view(batch, num_spec + 1)
    shift = torch.zeros(batch, device="cuda", dtype=torch.int32)
    shift[:rows] = num_spec  # every moved row accepted all its drafts last step
    src = blocks.gather(1, shift.long()[:, None])[:, 0].contiguous()
    dst = blocks[:, 0].contiguous()
    for _ in range(5):
        migrate(conv, ssm, src, dst, shift, window)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(iters):
        migrate(conv, ssm, src, dst, shift, window)
    end.record()
    torch.cuda.synchronize()
    eager_us = start.elapsed_time(end) * 1000 / iters
    # Back-to-back launches from Python measure the host (about 50 us a launch). Inside a CUDA
    # graph, as in vLLM's full decode graphs, only the kernel's own time is left.
    per_graph = 100
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(per_graph):
            migrate(conv, ssm, src, dst, shift, window)
    graph.replay()
    torch.cuda.synchronize()
    replays = max(1, iters // per_graph)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    torch.cuda.synchronize()
    us = start.elapsed_time(end) * 1000 / (replays * per_graph)
    moved = rows * 2 * (ssm[0].numel() * ssm.element_size() + dim * window * conv.element_size())
    return {"rows_moved": rows, "batch": batch, "ssm_dtype": str(ssm_dtype).removeprefix("torch."),
            "us_in_graph": round(us, 2), "us_eager_launch": round(eager_us, 2), "bytes": moved,
            "gbps": round(moved / us / 1e3, 1) if rows else None}


@click.command()
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON here.")
@click.option("--iters", type=click.IntRange(10, 100000), default=2000, show_default=True)
def main(out: Path | None, iters: int) -> None:
    import torch

    if not torch.cuda.is_available():
        raise click.ClickException("needs a CUDA GPU")
    migrate = migrate_kernel(Path(tempfile.mkdtemp()))
    name = torch.cuda.get_device_name()
    peak = _peak(name)
    results = [measure(migrate, torch, r, 64, dt, iters)
               for dt in (torch.bfloat16, torch.float32) for r in (0, 1, 4, 16, 64)]
    for r in results:
        r["of_peak"] = round(r["gbps"] / peak, 3) if peak and r["gbps"] else None
    report = {"gpu": name, "peak_gbps": peak, "iters": iters, "layer": "Qwen3-Next-80B-A3B GDN, TP 1",
              "results": results}
    click.echo(
        "| SSM dtype | rows moved of 64 | µs a call in a CUDA graph | µs a call, eager launches | bytes moved "
        "| GB/s | of peak |"
    )
    click.echo("|---|---|---|---|---|---|---|")
    for r in results:
        click.echo(
            f"| {r['ssm_dtype']} | {r['rows_moved']} | {r['us_in_graph']} | {r['us_eager_launch']} | {r['bytes']:,} | "
            f"{r['gbps'] or '-'} | {r['of_peak'] or '-'} |"
        )
    if out:
        out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
