"""A/B performance runs on models of users' sizes (vllm_backports.bench): two engines, pristine
against patched or without against with speculation, in interleaved rounds on one GPU, every
figure a ratio B/A with a 95% bootstrap interval.

    python benchmarks/bench_ab.py run --experiment nospec --shape qwen3_5-9b \\
        --site raw=DIR --site fix=DIR2 --out RUN_DIR --pairs 20 --layout resident
    python benchmarks/bench_ab.py summarize RUN_DIR [--copy records/runs/bench-ab/NAME.json]
    python benchmarks/bench_ab.py profile-diff RUN_DIR        # after a run with --profile LEVEL

`run` writes RUN_DIR/progress.jsonl a round at a time and RUN_DIR/result.json at the end; run
again with the same RUN_DIR and a larger --pairs, it resumes with new engines. `summarize` makes
result.json from what is there (a run still going included) and prints it in brief; --copy keeps
the result where docs/BENCHMARKS.md's table is generated from (python -m vllm_backports.maint
bench-table --write). Plots: benchmarks/bench_ab_plot.py.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from vllm_backports.bench import clocks, driver, experiments, profiles, schedule, shapes
from vllm_backports.errors import BackportError
from vllm_backports.verify.run import machine


def brief(result: dict) -> str:
    """A few lines for a terminal: B/A per figure and level, with intervals and acceptance."""
    lines = [
        f"{result['experiment']} on {result['shape']}, vLLM {result['vllm']}: B = {result['b']}, A = {result['a']}; "
        f"{result['pairs']} pairs, {result['instances']} instance(s), layout {result['layout']}, "
        f"SM clock {result.get('sm_clock_mhz')}"
    ]
    for c in result["comparisons"]:
        ci = "" if c["ci_low"] is None else f" [{c['ci_low']:.4f}, {c['ci_high']:.4f}] ±{100 * c['half_width']:.2f}%"
        lines.append(
            f"  c={c['concurrency']:<3} {c['figure']:<13} A {c['a_mean']:10.2f}  B {c['b_mean']:10.2f}  "
            f"B/A {c['ratio']:.4f}{ci}"
        )
    lines.append(f"  acceptance {result['acceptance']}; target {result.get('target')}: {result.get('target_met')}")
    for arm, seen in (result.get("gpu_during_rounds") or {}).items():
        lines.append(
            f"  during {arm}'s rounds ({seen['sampled']} of {seen['rounds']} sampled): "
            f"SM clock {seen['sm_mhz']}, rounds held back {seen['reasons'] or 'by nothing'}"
        )
        for level, at in (result.get("gpu_during_decodes") or {}).get(arm, {}).items():
            if at["sampled"]:
                lines.append(
                    f"    its decodes at {level}: SM clock {at['sm_mhz']}, held back {at['reasons'] or 'by nothing'}"
                )
    for arm, at_levels in (result.get("pace_during_decodes") or {}).items():
        for level, p in at_levels.items():
            if p:
                lines.append(f"  {arm}'s steps at {level}: {pace_line(p)}")
    return "\n".join(lines)


def pace_line(p: dict) -> str:
    """pace.over_rounds in a line: whether stalls or whole slower rounds make an arm's spread, and
    how fast the arm's process ran host work."""
    m, h = p["step_median_ms"], p.get("probe_us")
    share = "no round slower than the median" if p["long_share"] is None else f"{100 * p['long_share']:.0f}%"
    probed = "" if not h else f"; host probe {h['median']:.0f} us (rounds {h['min']:.0f} to {h['max']:.0f})"
    return (
        f"median {m['median']:.2f} ms (rounds {m['min']:.2f} to {m['max']:.2f}); "
        f"{p['long_per_round']:.1f} long a round, {p['long_excess_ms_per_round']:.1f} ms beyond the median; "
        f"GC {p['gc_ms_per_round']:.1f} ms a round; long steps hold {share} of the slow rounds' time past the median"
        f"{probed}"
    )


def ran_on() -> dict:
    """verify's record of the machine, with nvidia-smi's index of the GPU the run had (on a host
    of several, the run beside it is on another); where torch cannot say (a driver without it),
    the GPU's name from nvidia-smi and the date."""
    try:
        record = machine()
    except Exception as exc:  # a record, never a reason to stop a run
        from datetime import UTC, datetime

        record = {
            "gpu": clocks.read().get("name"),
            "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "error": f"{type(exc).__name__}: {exc}",
        }
    gpu = clocks.visible_gpu()  # an index as nvidia-smi counts, or a UUID
    # the cores the run may use: a share of the host's where each GPU's run has its own
    own = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    # which of them share a physical core: --pin-cores keeps those in one arm's half
    smt = [list(g) for g in sorted({tuple(g) for g in driver.smt_siblings(own).values()})]
    return {**record, "gpu_index": int(gpu) if gpu.isdigit() else gpu, "cores": len(own), "smt_siblings": smt}


def parse_sites(values: tuple[str, ...]) -> dict[str, Path]:
    out = {}
    for v in values:
        label, sep, path = v.partition("=")
        if not sep or not Path(path).is_dir():
            raise click.BadParameter(f"{v!r}: give LABEL=DIR, an existing directory", param_hint="--site")
        out[label] = Path(path)
    return out


@click.group()
def main() -> None:
    """A/B runs: run, summarize."""


@main.command()
@click.option("--experiment", type=click.Choice(list(experiments.EXPERIMENTS)), required=True)
@click.option("--shape", type=click.Choice(list(shapes.SHAPES)), required=True)
@click.option(
    "--site", "sites", multiple=True, metavar="LABEL=DIR", help="A site-packages per label the experiment names."
)
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), required=True, help="The run's directory.")
@click.option("--pairs", type=click.IntRange(2, 500), default=20, show_default=True, help="Timed pairs in all.")
@click.option("--warmup", type=click.IntRange(1, 10), default=2, show_default=True, help="Untimed rounds per engine.")
@click.option("--layout", type=click.Choice(schedule.LAYOUTS), default="sleep", show_default=True)
@click.option("--order", type=click.Choice(schedule.ORDERS), default="abab", show_default=True)
@click.option("--levels", default="1,16,64", show_default=True, help="Concurrent requests, comma-separated.")
@click.option("--prompt-len", type=click.IntRange(8, 8192), default=512, show_default=True)
@click.option("--max-tokens", type=click.IntRange(8, 4096), default=128, show_default=True)
@click.option("--kv-cache-gib", type=float, help="Fixed KV size of each engine (default: the shape's).")
@click.option(
    "--gpu-memory-utilization", type=float, default=None, help="Default 0.85 (sleep, sequential), 0.45 (resident)."
)
@click.option(
    "--prefill-backend", type=click.Choice(["default", "triton", "flashinfer"]), default="default", show_default=True
)
@click.option(
    "--config", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="A checkpoint's own config.json."
)
@click.option("--profile", type=int, help="After the rounds, profile one generate per engine at this level.")
@click.option(
    "--ttft-samples",
    type=click.IntRange(1, 50),
    default=5,
    show_default=True,
    help="One-token generates timed each round at 1 request; TTFT is their median.",
)
@click.option(
    "--restarts",
    type=click.IntRange(1, 250),
    default=1,
    show_default=True,
    help="Engine pairs the pairs are spread over, each started fresh (their spread widens the interval).",
)
@click.option(
    "--pin-cores",
    is_flag=True,
    help="Pin arm A's engine to one half of the cores and B's to the other, swapped on every other "
    "engine pair: with --restarts 2 or more each arm runs on both halves. A physical core's "
    "hardware threads stay in one half.",
)
@click.option("--lock-clocks", type=int, metavar="MHZ", help="Lock the SM clock for the run (root; own machines only).")
def run(
    experiment,
    shape,
    sites,
    out,
    pairs,
    warmup,
    layout,
    order,
    levels,
    prompt_len,
    max_tokens,
    kv_cache_gib,
    gpu_memory_utilization,
    prefill_backend,
    config,
    profile,
    ttft_samples,
    restarts,
    pin_cores,
    lock_clocks,
) -> None:
    """Run (or resume) one A/B run."""
    if gpu_memory_utilization is None:
        gpu_memory_utilization = 0.45 if layout == "resident" else 0.85
    plan = driver.Plan(
        experiment=experiment,
        shape=shape,
        sites=parse_sites(sites),
        out=out,
        pairs=pairs,
        warmup=warmup,
        layout=layout,
        order=order,
        levels=tuple(int(x) for x in levels.split(",")),
        prompt_len=prompt_len,
        max_tokens=max_tokens,
        kv_cache_gib=kv_cache_gib,
        gpu_memory_utilization=gpu_memory_utilization,
        prefill_backend=prefill_backend,
        config=config,
        profile=profile,
        ttft_samples=ttft_samples,
        restarts=restarts,
        pin_cores=pin_cores,
    )
    locked = clocks.lock(lock_clocks) if lock_clocks else None
    try:
        result = driver.run(plan, lambda m: click.echo(m, err=True), clocks.read, ran_on, sampler=clocks.Sampler)
    except BackportError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if locked is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / "clock-lock.json").write_text(json.dumps({"lock": locked, "unlock": clocks.unlock()}) + "\n")
    click.echo(brief(result))


@main.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--copy", type=click.Path(dir_okay=False, path_type=Path), help="Also write the result here.")
@click.option("--resamples", type=click.IntRange(100, 100000), default=4000, show_default=True)
def summarize(run_dir, copy, resamples) -> None:
    """result.json from the run's progress so far, printed in brief."""
    try:
        result = driver.write_result(run_dir, resamples)
    except (OSError, ValueError, KeyError) as exc:
        raise click.ClickException(f"{run_dir}: {exc}") from None
    if copy:
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(json.dumps(result, indent=2) + "\n")
    click.echo(brief(result))


@main.command("profile-diff")
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--instance", type=click.IntRange(0), default=0, show_default=True, help="The engines' start.")
@click.option("--level", type=click.IntRange(1), help="The level profiled (default: the one the files name).")
@click.option("--top", type=click.IntRange(1), default=15, show_default=True, help="Ops listed.")
@click.option("--json", "as_json", is_flag=True, help="Totals and every op as JSON.")
def profile_diff(run_dir, instance, level, top, as_json) -> None:
    """Arm A's profile beside arm B's (run with --profile LEVEL): the own device and host time of
    each, then the ops whose own time differs most, with their launches."""
    if level is None:
        files = run_dir.glob(f"profile-a-{instance}-c*")
        named = {m.group(1) for f in files if (m := re.search(r"-c(\d+)[.]", f.name))}
        if len(named) != 1:
            found = ", ".join(sorted(named)) or "none"
            raise click.UsageError(f"{run_dir}: instance {instance} has profiles at levels {found}: pick with --level")
        level = int(named.pop())
    try:
        (ops_a, tot_a), (ops_b, tot_b) = (profiles.read(run_dir / f"profile-{arm}-{instance}-c{level}") for arm in "ab")
    except (OSError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    rows = profiles.compare(ops_a, ops_b)
    speed = profiles.host_speed(rows)
    if as_json:
        totals = {"a": tot_a, "b": tot_b}
        click.echo(
            json.dumps({"level": level, "instance": instance, "totals": totals, "host_speed": speed, "ops": rows})
        )
        return
    meta_path = run_dir / "run.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    click.echo(f"A = {meta.get('a', 'arm a')}; B = {meta.get('b', 'arm b')}; {level} requests, instance {instance}")
    for key, what in (("self_device_us", "device"), ("self_cpu_us", "host")):
        a, b = tot_a.get(key), tot_b.get(key)
        if a is not None and b is not None:
            ratio = f"  B/A {b / a:.3f}" if a else ""
            click.echo(f"  {what} time, in all: A {a / 1e3:10.1f} ms  B {b / 1e3:10.1f} ms{ratio}")
    if speed:
        a, b = speed["host_a_us"], speed["host_b_at_a_us"]
        click.echo(
            f"  host time at A's process speed (B's {speed['speed']:.3f}x A's, the median of {speed['ops']} ops"
            f" launched alike): A {a / 1e3:.1f} ms  B {b / 1e3:.1f} ms  B/A {b / a:.3f}"
        )
    cells = "  {:<56} {:>8} {:>8} {:>9} {:>9} {:>9} {:>9}"
    click.echo(cells.format("op", "calls A", "calls B", "dev A ms", "dev B ms", "host A ms", "host B ms"))
    for r in rows[:top]:
        ms = ["-" if us is None else f"{us / 1e3:.2f}" for us in (*r["self_device_us"], *r["self_cpu_us"])]
        calls = ["-" if n is None else n for n in r["calls"]]
        click.echo(cells.format(r["name"][:56], *calls, *ms))
    more = sum(1 for r in rows[top:] if r["calls"][0] != r["calls"][1])
    if more:
        click.echo(f"  {more} more op(s) launched a different number of times, or in one profile only (--top)")
    if any(None in r["calls"] for r in rows):
        click.echo("  -: not in that profile's table (60 rows at most, from the runs before JSON profiles)")


if __name__ == "__main__":
    main()
