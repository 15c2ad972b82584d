"""MTP decode throughput with a TurboQuant KV cache and CUDA graphs on, on verify's tiny hybrid
model with its MTP layer: the speed side of turboquant-spec-decode against P65.

    python benchmarks/bench_turboquant_mtp.py --site p65=DIR --site fix=DIR2 --passes 2 --out r.json

Each DIR is a site-packages holding one vLLM variant (the same release, each with its series
applied). Per site and pass one engine runs: MTP k=3, the --kv-cache preset, default CUDA graph
mode (FULL_AND_PIECEWISE), `--batch` requests. It generates once to warm up, then times `--rounds`
identical rounds; the median is reported with the accepted draft tokens of every round, so a
speed-up that comes from different acceptance shows. P65 runs verify batches outside full graphs;
the fix replays them. The model is tiny, so per-step launch and host work weigh more than on a
real model, where attention is a larger share of each step.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import sites as sites_  # noqa: E402
from vllm_backports.errors import BackportError  # noqa: E402
from vllm_backports.verify import model, scenarios  # noqa: E402
from vllm_backports.verify.run import preflight, run_engine  # noqa: E402


def measure(work: Path, checkpoint: Path, kv_cache: str, rounds: int, batch: int, max_tokens: int) -> dict:
    vllm_version = preflight()
    work.mkdir(parents=True, exist_ok=True)
    model_dir = model.write_model(checkpoint, mtp=True)
    spec = {"model": str(model_dir), "prompts": scenarios.prompts(batch, model.vocab_size()), "max_num_seqs": batch,
            "max_tokens": max_tokens, "max_model_len": 512, "eager": False, "tp": 1, "timed_rounds": rounds,
            "kv_cache_dtype": kv_cache, "speculative": scenarios.PRESETS["mtp"],
            "additional_config": {"gdn_prefill_backend": "triton"}}
    run = run_engine(spec, work, "mtp", None)
    return {"vllm": vllm_version, "kv_cache": kv_cache, "batch": batch, "max_tokens": max_tokens,
            "tokens_per_s": round(statistics.median(run["timed_rounds_tokens_per_s"]), 1),
            "rounds_tokens_per_s": [round(x, 1) for x in run["timed_rounds_tokens_per_s"]],
            "rounds_accepted": run["timed_rounds_accepted"], "start_s": round(run["start_s"], 1)}


@click.command()
@click.option(
    "--site",
    "sites",
    multiple=True,
    required=True,
    metavar="LABEL=DIR",
    help="A site-packages holding one vLLM variant (repeat; 2 or more); the first is the baseline of the ratios.",
)
@click.option("--passes", type=click.IntRange(1, 10), default=2, show_default=True)
@click.option("--kv-cache", type=click.Choice(scenarios.TURBOQUANT), default="turboquant_k8v4", show_default=True)
@click.option("--rounds", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--batch", type=click.IntRange(1, 16), default=16, show_default=True)
@click.option("--max-tokens", type=click.IntRange(8, 400), default=256, show_default=True)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(tempfile.gettempdir()) / "bench-tq-mtp",
    show_default=True,
    help="Model, engine specs and logs.",
)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON here.")
def main(sites, passes, kv_cache, rounds, batch, max_tokens, work_dir, out) -> None:
    parsed = sites_.parse(sites)
    try:
        result = sites_.interleave(parsed, passes, lambda tag: measure(
            work_dir / tag, work_dir / "model", kv_cache, rounds, batch, max_tokens), keys=("tokens_per_s",))
    except BackportError as exc:
        raise click.ClickException(str(exc)) from None
    sites_.emit(result, out)


if __name__ == "__main__":
    main()
