"""Decode throughput of the installed vLLM on verify's tiny hybrid model, with and without
speculation: the speed side of the GDN backports.

    python benchmarks/bench_gdn_decode.py --label unpatched --out unpatched.json [--prefill-backend triton]
    python apply.py --vllm X
    python benchmarks/bench_gdn_decode.py --label patched --out patched.json [--prefill-backend triton]
    python benchmarks/bench_gdn_decode.py --compare unpatched.json patched.json
    python benchmarks/bench_gdn_decode.py --site unpatched=DIR --site patched=DIR2 --passes 3   # A B A B ...

Two engines per run, each in its own process, eager unless `--mode graphs`: no speculation, and
(unless `--no-ngram`, which leaves the no-speculation side alone for the >= 0.99 target) ngram
k=3 whose drafts are scripted to be always right (the limit of a repetitive workload, where ngram
finds the continuation in the context every step): each timed round drafts from the engine's own
output of the round before, and the accepted drafts per round are reported beside the speed.
Each engine generates once to warm up, then times `--rounds` identical rounds; the median is
reported. The model is tiny, so these numbers weigh the per-step host work (where the backports
add their few lines) more than a real model would.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import sites as sites_  # noqa: E402
from vllm_backports.errors import BackportError  # noqa: E402
from vllm_backports.verify import drafts, model, scenarios  # noqa: E402
from vllm_backports.verify.run import exercised, preflight, run_engine  # noqa: E402

ALWAYS_RIGHT = ((3, 3),)


def measure(work: Path, backend: str, rounds: int, batch: int, max_tokens: int, checkpoint: Path | None = None,
            eager: bool = True, ngram: bool = True) -> dict:
    vllm_version = preflight()
    work.mkdir(parents=True, exist_ok=True)
    model_dir = model.write_model(checkpoint or work / "model")
    ps = scenarios.prompts(batch, model.vocab_size())
    spec = {"model": str(model_dir), "prompts": ps, "max_num_seqs": batch, "max_tokens": max_tokens,
            "max_model_len": 512, "eager": eager, "tp": 1, "timed_rounds": rounds,
            "additional_config": {} if backend == "default" else {"gdn_prefill_backend": backend}}
    base = run_engine(spec, work, "nospec", None)
    nospec = statistics.median(base["timed_rounds_tokens_per_s"])
    head = {"vllm": vllm_version, "batch": batch, "max_tokens": max_tokens, "rounds": rounds,
            "mode": "eager" if eager else "graphs", "nospec_tokens_per_s": round(nospec, 1)}
    if not ngram:
        return {**head, "nospec_rounds": base["timed_rounds_tokens_per_s"]}
    preset = scenarios.PRESETS["ngram"]
    script = drafts.Script(ps, base["tokens"], k=preset["num_speculative_tokens"], vocab=model.vocab_size(),
                           schedule=ALWAYS_RIGHT)
    spec_run = run_engine(dict(spec, speculative=preset, drafts_follow_own_output=True), work, "ngram", script)
    ngram = statistics.median(spec_run["timed_rounds_tokens_per_s"])
    return {**head, "ngram_tokens_per_s": round(ngram, 1),
            "ngram_speedup": round(ngram / nospec, 3),
            # The warm-up round drafts from the plain run's output and stops matching where the
            # speculative run parts from it at a near-tie; each timed round drafts from the round
            # before it, so acceptance there is what a repetitive workload would give.
            "ngram_warmup_exercised": exercised(script, spec_run["tokens"]),
            "ngram_rounds_accepted": spec_run["timed_rounds_accepted"],
            "nospec_rounds": base["timed_rounds_tokens_per_s"], "ngram_rounds": spec_run["timed_rounds_tokens_per_s"]}


def compare(before: dict, after: dict) -> dict:
    return {"nospec_patched_over_unpatched": round(after["nospec_tokens_per_s"] / before["nospec_tokens_per_s"], 3),
            "ngram_patched_over_unpatched": round(after["ngram_tokens_per_s"] / before["ngram_tokens_per_s"], 3),
            "speedup_unpatched": before["ngram_speedup"], "speedup_patched": after["ngram_speedup"]}


@click.command()
@click.option("--label", default="run", help="Name stored with the result (e.g. patched).")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON here.")
@click.option("--prefill-backend", type=click.Choice(["default", "triton", "flashinfer"]), default="default")
@click.option("--rounds", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--batch", type=click.IntRange(1, 64), default=16, show_default=True)
@click.option("--max-tokens", type=click.IntRange(8, 400), default=256, show_default=True)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(tempfile.gettempdir()) / "bench-gdn",
    show_default=True,
    help="Model, engine specs and logs.",
)
@click.option("--compare", "pair", nargs=2, type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Compare two earlier results (unpatched, patched) instead of measuring.")
@click.option(
    "--site",
    "sites",
    multiple=True,
    metavar="LABEL=DIR",
    help="A site-packages holding one vLLM variant (repeat; 2 or more): measure them in turn, --passes times.",
)
@click.option("--passes", type=click.IntRange(1, 20), default=3, show_default=True, help="With --site.")
@click.option("--mode", type=click.Choice(["eager", "graphs"]), default="eager", show_default=True,
              help="graphs: CUDA graphs on, so host work weighs less and rounds spread less.")
@click.option("--no-ngram", is_flag=True, help="Time the no-speculation engine only.")
def main(label, out, prefill_backend, rounds, batch, max_tokens, work_dir, pair, sites, passes, mode, no_ngram) -> None:
    if pair:
        result = compare(*(json.loads(p.read_text()) for p in pair))
    else:
        parsed = sites_.parse(sites) if sites else []
        try:
            if sites:
                # Every pass of every site runs the same checkpoint: write it once.
                result = sites_.interleave(parsed, passes, lambda tag: measure(
                    work_dir / tag, prefill_backend, rounds, batch, max_tokens, checkpoint=work_dir / "model",
                    eager=mode == "eager", ngram=not no_ngram),
                    keys=("nospec_tokens_per_s",) if no_ngram else ("nospec_tokens_per_s", "ngram_tokens_per_s"))
            else:
                result = {"label": label, **measure(work_dir, prefill_backend, rounds, batch, max_tokens,
                                                    eager=mode == "eager", ngram=not no_ngram)}
        except BackportError as exc:
            raise click.ClickException(str(exc)) from None
    sites_.emit(result, out)


if __name__ == "__main__":
    main()
