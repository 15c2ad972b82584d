"""The lab's commands on a maintainer's machine (the GPU side is lab.machine):

    python -m lab plan 0.22.0 0.23.0:gdn-ngram,tq-mtp   # stage, pack, print the GPU machine's calls
    python -m lab evidence RESULTS.tgz [--write]        # their verify JSON as docs/evidence/
    python -m lab core 0.22.0                           # a release's core proof set
    python -m lab bundle 0.26.0                         # .stage-0.26.0/ for the runbook (lab/runbook/)
    python -m lab flashinfer 0.33.0                     # .stage-fi-0.33.0/: FlashInfer for the runbook
    python -m lab flashinfer-jit 0.25.0                 # .stage-fi-prebuilt-0.25.0/: its nvcc module, pre-built

A GPU machine without network takes its inputs as calls of at most `--limit` bytes each (the
working tree travels with every call): `plan` writes the parts under .lab/parts/ and the stages
under .lab/stage/, and prints one call a part, the last one starting the proofs, then the
`collect` calls that bring the results back. On a GPU host of your own, run the printed commands
there in order, from this checkout.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path

import click

from vllm_backports.catalogue import Catalogue

from . import bundle, parts, stage
from .machine import DEFAULT_BENCH_ARGS, parse_jobs
from .owed import ESTIMATED_BY, MACHINE_S, BenchOptions, estimate, serial_flashinfer
from .parts import LIMIT, tree_size
from .proofs import core, multi_gpu, takes_fi_site

ROOT = Path(__file__).resolve().parents[1]
MARGIN = 2 << 20  # what the tree may grow by between planning and the calls


def part_room(limit: int = LIMIT) -> int:
    """Bytes a part may hold: what a call carries less the working tree that travels with it."""
    room = limit - tree_size(ROOT) - MARGIN
    if room < 1 << 20:
        raise click.ClickException(f"the working tree leaves {room} bytes of a {limit}-byte call for parts")
    return room


# the device kind a plan's calls name when a proof runs at that tensor parallel size (the two-GPU
# kind may come as H200s; lab.machine start refuses a machine with fewer GPUs)
TP_KIND = {2: "nvidia-h100-x2"}


def calls(part_dirs: list[str], jobs: list[str], wait: int = 540, bench_args: str = "", gpus: int = 1) -> list[dict]:
    """The device calls: one a part, the last also starting the jobs, then one collect. Jobs that
    need `gpus` > 1 name the kind with that many in every call (a call of another kind would
    start another machine), and the first call checks the machine has them before any put."""
    out = [{"command": f"python3 -m lab.machine put {p}", "carry": [p]} for p in part_dirs]
    start = f"python3 -m lab.machine start {' '.join(jobs)}"
    if bench_args:
        start += f" --bench-args {shlex.quote(bench_args)}"
    if out:
        out[-1] = {"command": out[-1]["command"] + " && " + start, "carry": [*out[-1]["carry"], ".lab/stage"]}
    else:
        out.append({"command": start, "carry": [".lab/stage"]})
    out.append({"command": f"python3 -m lab.machine collect --wait {wait}", "carry": []})
    if gpus == 1:
        return out
    out[0] = {**out[0], "command": f"python3 -m lab.machine gpus {gpus} && {out[0]['command']}"}
    return [{**call, "kind": TP_KIND[gpus]} for call in out]


def gpus_for(jobs: list[dict]) -> int:
    """The GPUs the jobs' (parsed) machine needs: their proofs' largest tensor parallel size."""
    need = max(multi_gpu(jobs).values(), default=1)
    if need > 1 and need not in TP_KIND:
        raise click.UsageError(f"a proof runs at TP={need}, and no device kind with {need} GPUs is known to plan")
    return need


def with_flashinfer(stages: list[stage.Stage], jobs: list[dict]) -> list[stage.Stage]:
    """`stages`, each whose job (of `jobs`, parsed) runs a proof that takes the FlashInfer site
    (lab.proofs.takes_fi_site) with its FlashInfer set (lab.flashinfer.lab_set); every release is
    checked before any set is fetched, and a refusal is one line."""
    from . import flashinfer

    wanted = {j["release"] for j in jobs if any(takes_fi_site(j["release"], p) for p in j["proofs"])}
    try:
        picked = {r: flashinfer.lab_set(r, ROOT) for r in sorted(wanted)}
    except flashinfer.Refused as e:
        raise click.ClickException(str(e)) from None
    return [replace(s, flashinfer=stage.flashinfer(*picked[s.release])) if s.release in picked else s for s in stages]


@click.group()
def main() -> None:
    """The GPU lab: stage releases, run their proofs, keep the evidence."""


@main.command("core")
@click.argument("releases", nargs=-1, required=True)
def core_cmd(releases: tuple[str, ...]) -> None:
    """Print each release's core proof set."""
    catalogue = Catalogue(ROOT)
    for release in releases:
        if release not in catalogue.releases:
            raise click.UsageError(f"vLLM {release} is not in versions.toml")
        click.echo(f"{release}: {' '.join(core(catalogue, release))}")


@main.command()
@click.argument("jobs", nargs=-1, required=True)
@click.option("--limit", type=int, default=LIMIT, show_default=True, help="Bytes one call carries, tree included.")
@click.option("--json", "as_json", is_flag=True, help="One object a call: command, carry (and kind, for TP=2).")
@click.option("--bench-args", default="", help="bench_ab.py run's options for bench= items (else lab.machine's).")
def plan(jobs: tuple[str, ...], limit: int, as_json: bool, bench_args: str) -> None:
    """Stage RELEASE[:PROOF,...] jobs and print the calls that prove them on a GPU machine."""
    catalogue = Catalogue(ROOT)
    releases = [j.partition(":")[0] for j in jobs]
    for release in releases:
        if release not in catalogue.releases:
            raise click.UsageError(f"vLLM {release} is not in versions.toml")
    try:  # lab.machine's own options when --bench-args is not given
        options = BenchOptions.parse(shlex.split(bench_args or DEFAULT_BENCH_ARGS))
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    room = part_room(limit)
    parsed = parse_jobs(list(jobs), {r: core(catalogue, r) for r in releases})
    need_gpus = gpus_for(parsed)  # refused before anything is staged
    log = (lambda m: click.echo(m, err=True)) if as_json else click.echo
    stages = [stage.stage(r, ROOT, log) for r in releases]
    stages = [stage.packed(s, log) for s in with_flashinfer(stages, parsed)]
    lab = ROOT / ".lab"
    shutil.rmtree(lab / "stage", ignore_errors=True)
    for s in stages:
        s.write(lab / "stage" / f"{s.release}.json")
    store = stage.cache() / "store"
    blobs = [(b.sha256, store / b.sha256) for s in stages for b in (*s.blobs, *s.flashinfer)]
    packed = parts.pack(blobs, room, lab / "parts")
    # travels with the stages in the last call: `start` names the parts a machine never got
    (lab / "stage" / "parts.json").write_text(json.dumps(parts.index(packed, ROOT)))
    part_dirs = [p.relative_to(ROOT).as_posix() for p in packed]
    found = calls(part_dirs, list(jobs), bench_args=bench_args, gpus=need_gpus)
    if as_json:
        click.echo(json.dumps(found, indent=1))
        return
    total = sum(b.size for s in stages for b in {x.sha256: x for x in (*s.blobs, *s.flashinfer)}.values())
    log(f"{len(part_dirs)} parts of at most {room >> 20} MiB ({total >> 20} MiB before sharing), {len(found)} calls:")
    for call in found:
        kind = f" kind={call['kind']}" if "kind" in call else ""
        log(f"  run carry={json.dumps(call['carry'])}{kind} command: {call['command']}")
    fi = sum(serial_flashinfer(j["release"], j["proofs"], ROOT) for j in parsed)
    benches = sum(options.seconds(b["pairs"]) for j in parsed for b in j["benches"])
    # benches-only jobs install too
    need = estimate(len(part_dirs), {j["release"]: len(j["proofs"]) for j in parsed}, fi, benches)
    over = f"; more than one {MACHINE_S // 60}-minute machine holds: split the jobs" if need > MACHINE_S else ""
    counted = f", {benches / 60:.0f} of them benchmarks" if benches else ""
    log(f"about {need / 60:.0f} min of device time{counted}, by {ESTIMATED_BY}{over}")


@main.command("bundle")
@click.argument("release")
@click.option("--part-mb", type=int, default=50, show_default=True, help="MiB a part holds at most.")
def bundle_cmd(release: str, part_mb: int) -> None:
    """Stage RELEASE and write .stage-RELEASE/ (parts and install.sh) for lab/runbook/plan.py."""
    if release not in Catalogue(ROOT).releases:
        raise click.UsageError(f"vLLM {release} is not in versions.toml")
    if part_mb < 1:
        raise click.UsageError("--part-mb: at least 1")
    bundle.bundle(release, ROOT, part_mb, click.echo)


@main.command("flashinfer")
@click.argument("release")
@click.option(
    "--part-mb",
    type=int,
    default=54,
    envvar="PART_MB",
    show_envvar=True,
    show_default=True,
    help="MiB a part holds at most.",
)
def flashinfer_cmd(release: str, part_mb: int) -> None:
    """Write .stage-fi-RELEASE/ (FlashInfer's wheels and pre-built modules, in parts) for the runbook."""
    from . import flashinfer

    try:
        flashinfer.stage(release, ROOT, part_mb, log=click.echo)
    except flashinfer.Refused as e:
        click.echo(str(e), err=True)
        sys.exit(e.code)


@main.command("flashinfer-jit")
@click.argument("release")
@click.option(
    "--module", envvar="MODULE", show_envvar=True, default="", help="sampling or gdn_prefill_sm90 (default: the pin's)."
)
@click.option(
    "--same-as",
    envvar="SAME_AS",
    show_envvar=True,
    default="",
    help="Take this release's build if the build is the same.",
)
def flashinfer_jit_cmd(release: str, module: str, same_as: str) -> None:
    """Pre-build RELEASE's FlashInfer nvcc module for sm_90a into .stage-fi-prebuilt-RELEASE/.

    Honours PY (a Python with torch), WORK (~/.cache/fi-prebuild), MAX_JOBS (2) and CUDA_HOME."""
    from . import flashinfer

    try:
        flashinfer.build(flashinfer.plan_build(release, module, same_as), ROOT, log=click.echo)
    except flashinfer.Refused as e:
        click.echo(str(e), err=True)
        sys.exit(e.code)


@main.command()
@click.argument("results", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--write", is_flag=True, help="Write docs/evidence/<release>/<proof>.json (else only report).")
@click.option(
    "--record",
    type=click.Path(path_type=Path),
    help="With --write, keep the run as records/runs/NAME/run: its files less the evidence, and summary.txt.",
)
def evidence(results: Path, write: bool, record: Path | None) -> None:
    """Check a results.tgz from `lab.machine collect` and keep its verify JSON as evidence."""
    from .records import read_results, summary_lines, write_record

    if record is not None:
        # refused before any evidence is written: the record drops the JSON docs/evidence keeps
        if not write:
            raise click.UsageError("--record needs --write: the record leaves out the JSON --write keeps")
        if record.exists():
            raise click.UsageError(f"--record {record}: exists (a record is written once; name another)")
    found = read_results(results, ROOT, write=write)
    for line in summary_lines(found):
        click.echo(line)
    if not write:
        click.echo("(not written: --write keeps them under docs/evidence/)")
    if record is not None:
        write_record(results, found, record)
        click.echo(f"record: {record} (summary.txt; the README is yours to write)")
    if any(r.problem for r in found.proofs):
        sys.exit(1)


@main.command("minutes")
@click.option("--write", is_flag=True, help="Rewrite the table (otherwise show the diff, exit 1 on drift).")
def minutes_cmd(write: bool) -> None:
    """docs/VERIFICATION.md's device minutes per release, from the timeline.jsonl of every lab run
    kept under records/runs. CI runs it in check mode."""
    from vllm_backports.errors import BackportError
    from vllm_backports.maint.drift import write_region

    from .records import MINUTES_BEGIN, MINUTES_END, render_minutes, run_minutes

    try:
        table = render_minutes(run_minutes(ROOT / "records" / "runs"))
        write_region(
            ROOT, Path("docs/VERIFICATION.md"), MINUTES_BEGIN, MINUTES_END, table, write, "device minutes are current"
        )
    except (BackportError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None


@main.command("owed")
@click.option("--json", "as_json", is_flag=True, help="One object: owed proofs, machines, unrun reports.")
@click.option(
    "--earlier",
    is_flag=True,
    help="Also every proof, core or not, whose evidence carries only an earlier series (one-GPU work).",
)
def owed_cmd(as_json: bool, earlier: bool) -> None:
    """The core proofs no evidence of today's series shows, release by release, as the `lab plan`
    lines that would make them (one a machine, releases of one torch together); then the upstream
    reports no GPU has run yet, with the proofs that would."""
    from . import owed

    cat = Catalogue(ROOT)
    due = owed.owed(ROOT, cat)
    wide: list[str] = []
    if earlier:
        stale, wide = owed.earlier(ROOT, cat)
        due = owed.merged(due, stale)
    # the parts `plan` would cut today (the tree that travels grows); with nothing owed, none
    room = part_room() if due else LIMIT
    cut = owed.machines(due, room)
    unrun = owed.reports(cat)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "owed": {o.release: list(o.proofs) for o in due},
                    "machines": [owed.plan_line(m) for m in cut],
                    **({"several_gpus": wide} if earlier else {}),
                    "reports": {r.known: {"bug": r.bug, "present": r.present, "proofs": dict(r.proofs)} for r in unrun},
                }
            )
        )
        return
    what = "core proofs owed or proofs of an earlier series only" if earlier else "core proofs owed"
    if not due:
        click.echo(
            "every release has a proof of today's series for each of its " + ("proofs" if earlier else "core proofs")
        )
    else:
        click.echo(f"{sum(len(o.proofs) for o in due)} {what} on {len(due)} releases, {len(cut)} machines:")
    for m in cut:
        # only a single proof longer than a machine can be left over by machines()
        over = "" if owed.fits(m, room) else f"   # more than one {MACHINE_S // 60}-minute machine by the estimate"
        click.echo("  " + owed.plan_line(m) + over)
    if wide:
        click.echo(f"{len(wide)} of an earlier series need several GPUs, not in these machines: {' '.join(wide)}")
    if unrun:
        reports = "report" if len(unrun) == 1 else "reports"
        click.echo(f'{len(unrun)} upstream {reports} no GPU has run yet ([known.*] status "not yet run"):')
    for r in unrun:
        named = ", ".join(n if g == 1 else f"{n} ({g} GPUs)" for n, g in r.proofs) or "no proof names it"
        click.echo(f"  {r.bug} [known.{r.known}], present {r.present}: {named}")


@main.command("libraries")
@click.argument("results", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def libraries_cmd(results: Path) -> None:
    """Which staged wheels a run's processes ever mapped a shared object of (lab.machine samples
    them every 5 s): a wheel none of whose libraries was mapped is a candidate to leave out of
    the stage, to be confirmed by a run without it."""
    from .records import libraries, wheel_use

    found = libraries(results)
    if not found:
        raise click.ClickException(f"{results}: no results/<release>/libraries.json in it")
    for release, mapped in sorted(found.items()):
        staged = stage.cache() / "stages" / f"{release}.json"
        if not staged.is_file():
            raise click.ClickException(f"{staged}: no stage of {release} here (python -m lab plan {release})")
        rows = wheel_use(mapped, json.loads(staged.read_text())["blobs"], stage.cache() / "store")
        unused = [w for w in rows if w.libraries and not w.mapped]
        mib = sum(w.size for w in unused) / 2**20
        click.echo(f"{release}: {len(unused)} wheels with libraries none of which was mapped, {mib:.0f} MiB")
        for w in rows:
            click.echo(f"  {w.name}: {w.size / 2**20:.0f} MiB, {w.mapped} of {w.libraries} libraries mapped")


if __name__ == "__main__":
    main()
