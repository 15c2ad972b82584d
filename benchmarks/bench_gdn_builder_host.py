"""Host time of the installed release's GDN metadata builder, pristine against patched, per step.

    python benchmarks/bench_gdn_builder_host.py [--decodes 16] [--prefills 0] [--out F.json]

Needs torch and a vLLM release that `gdn-spec-state` serves, importable on the CPU (as in
.ci/cpu-vllm-env.sh); no GPU. Both builders load into one process (tests/release/gdn_builder.py)
and build the same batch in alternating samples, so drift lands on both alike.

Without a speculative config the series change nothing the GPU is handed (the builders' outputs
are compared here, and tests/release/test_gdn_routing.py checks it on every release); what is left
to cost is host time in the patched lines, and this measures it for the builder, which runs once a
step per KV cache group. Set beside a step's time, it bounds the no-speculation slowdown far
below the 1% that end-to-end rounds on a GPU cannot resolve. The runner's own no-speculation
additions are two `speculative_config is not None` tests a step and are not timed.

With ngram configured and every decode row draft-free (what ngram gives on most steps), the two
builders do different work on purpose: pristine sends the rows down the plain path (from the
stale slot 0), patched keeps them on the speculative path. That mode is the fix's own host cost.

`ngram-plain` is the step gdn-draft-free-plain sends down the plain path (no row drafted, none
did at its last step): the release hands its builder no counts there; the series hands the patched
one every row's -1, which it routes before it finds no speculative row; the candidate
gdn-draft-free-lean (benchmarks/alternatives) hands it none, as the release does (`lean`). All
three must build the release's metadata.
"""

from __future__ import annotations

import importlib.metadata
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BACKPORT = "gdn-spec-state"


def _time_ns(build, calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        build()
    return (time.perf_counter_ns() - start) / calls


def measure(decodes: int, prefills: int, calls: int, samples: int) -> dict:
    import pytest
    import torch

    from tests.release import gdn_builder
    from tests.release.conftest import CATALOGUE

    version = importlib.metadata.version("vllm")
    release = CATALOGUE.releases.get(version)
    if release is None or BACKPORT not in release.backports:
        raise click.ClickException(f"vLLM {version} is installed; {BACKPORT} does not serve it")
    query_lens = [1] * decodes + [64] * prefills
    computed = [200 + r for r in range(decodes)] + [0] * prefills
    k = gdn_builder.K
    with tempfile.TemporaryDirectory() as tmp, pytest.MonkeyPatch.context() as mp, gdn_builder.cpu_only(mp):
        try:
            modules = gdn_builder.modules(Path(tmp), release)
        except pytest.skip.Exception as e:  # the installed file is not the release's pristine one
            raise click.ClickException(str(e)) from None
        batch = gdn_builder.batch(torch, query_lens, computed)
        drafts = torch.tensor([0] * decodes + [-1] * prefills, dtype=torch.int32)
        accepted = torch.tensor([1 + r % (k + 1) for r in range(decodes + prefills)], dtype=torch.int32)
        result = {"vllm": version, "decodes": decodes, "prefills": prefills, "calls_per_sample": calls,
                  "samples": samples, "modes": {}}
        counts = {"num_accepted_tokens": accepted, "num_decode_draft_tokens_cpu": drafts}
        # a step gdn-draft-free-plain sends down the plain path: every row -1
        plain_counts = {**counts, "num_decode_draft_tokens_cpu": torch.full_like(drafts, -1)}
        for mode in ("none", "ngram", "ngram-plain"):
            speculative = mode != "none"
            builders = {side: gdn_builder.builder(torch, modules[side], speculative) for side in modules}
            kwargs = {"none": {}, "ngram": counts, "ngram-plain": plain_counts}[mode]
            calls_of = {side: (lambda b=b, kw=kwargs: b.build(0, batch, **kw)) for side, b in builders.items()}
            if mode == "ngram-plain":
                # the release hands the builder no counts on a step without drafts; so does the
                # candidate gdn-draft-free-lean, to the patched builder
                calls_of["pristine"] = lambda b=builders["pristine"]: b.build(0, batch)
                calls_of["lean"] = lambda b=builders["patched"]: b.build(0, batch)
            if mode != "ngram":
                built = {side: call() for side, call in calls_of.items()}
                if not all(gdn_builder.same(torch, built["pristine"], other) for other in built.values()):
                    raise click.ClickException(f"{mode}: the patched builder built other metadata")
            result["modes"][mode] = timed(calls_of, calls, samples)
    return result


def timed(calls_of: dict, calls: int, samples: int) -> dict:
    """Median ns a call of each side, over samples taken in a rotating order, beside pristine's."""
    for call in calls_of.values():
        _time_ns(call, calls)  # warm-up
    sides = list(calls_of)
    ns: dict[str, list[float]] = {side: [] for side in sides}
    for n in range(samples):
        for side in sides[n % len(sides) :] + sides[: n % len(sides)]:
            ns[side].append(_time_ns(calls_of[side], calls))
    med = {side: statistics.median(v) for side, v in ns.items()}
    row: dict = {}
    for side in sides:
        row[f"{side}_ns"] = round(med[side])
        # Per-sample spread of each side, so the difference can be read against the noise.
        row[f"{side}_ns_range"] = [round(min(ns[side])), round(max(ns[side]))]
        if side != "pristine":
            row[f"{side}_minus_pristine_ns"] = round(med[side] - med["pristine"])
            row[f"{side}_over_pristine"] = round(med[side] / med["pristine"], 3)
    return row


@click.command()
@click.option("--decodes", type=click.IntRange(1, 64), default=16, show_default=True, help="One-token decode rows.")
@click.option("--prefills", type=click.IntRange(0, 8), default=0, show_default=True, help="64-token prompt chunks.")
@click.option("--calls", type=click.IntRange(1, 100000), default=2000, show_default=True, help="Builds per sample.")
@click.option("--samples", type=click.IntRange(2, 200), default=21, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON here.")
def main(decodes: int, prefills: int, calls: int, samples: int, out: Path | None) -> None:
    """Time the GDN builder's build() per step, pristine against patched, on the CPU."""
    result = measure(decodes, prefills, calls, samples)
    text = json.dumps(result, indent=2)
    click.echo(text)
    if out:
        out.write_text(text + "\n")


if __name__ == "__main__":
    main()
