"""The command line: apply (the default), check, status, revert, list, verify, and the
maintainers' commands under maint. Words are parsed into a Request (request.py), the core does
the work (core.py), and this module renders what comes back.

Exit codes: 0 done; 1 drift or failure; 2 usage or bad input (nothing was changed).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import click
from rich.markup import escape
from rich.table import Table

from . import __version__, core, engine, maint
from . import manifest as manifests
from .catalogue import Catalogue, data_home
from .guard import main_guarded, run_guarded
from .pypi import Fetched
from .report import Reporter, outcome_table
from .request import Command, Output, Request, parse_request
from .resolve import Resolution
from .tree import Tree
from .verify.model import MODEL_CLASS, MODEL_CLASSES
from .verify.scenarios import MODEL_RUNNERS, PRESETS, SWITCHES, TURBOQUANT

HOME = data_home()


PATCH_HELP = {
    "vllm": "vLLM release to patch (e.g. 0.20.0), or 'auto' for the installed one.",
    "fetch": "Work on the release's pristine files fetched from PyPI (no vLLM needed).",
}
# status and revert read a tree that is there already: --vllm checks it, --fetch names a copy
# laid out before (without --target every --fetch is a fresh pristine copy, so they refuse it).
INSTALLED_HELP = {
    "vllm": "The vLLM release the tree is expected to hold (e.g. 0.20.0), or 'auto' (default): whatever it holds.",
    "fetch": "With --target DIR: the pristine copy an earlier `apply --fetch --target DIR` laid out there.",
}


def shared_options(fn=None, *, helps: dict[str, str] = PATCH_HELP, selection: bool = True):
    """--vllm, --target, --fetch, --json and (with `selection`) --only/--skip, each also taken
    from the top level (`apply.py --vllm X check`)."""
    if fn is None:
        return functools.partial(shared_options, helps=helps, selection=selection)

    options = [
        click.option("--vllm", "vllm", metavar="VERSION", help=helps["vllm"]),
        click.option(
            "--target",
            type=click.Path(file_okay=False, path_type=Path),
            help="site-packages or extracted wheel directory instead of this Python's vLLM.",
        ),
        click.option("--fetch", is_flag=True, default=None, help=helps["fetch"]),
        # status reports the whole tree: it takes no selection, and says so rather than Click
        click.option(
            "--only", multiple=True, metavar="ID", hidden=not selection, help="Only these backports (repeatable)."
        ),
        click.option(
            "--skip", multiple=True, metavar="ID", hidden=not selection, help="All but these backports (repeatable)."
        ),
        click.option("--json", "as_json", is_flag=True, default=None, help="One JSON object on stdout."),
        click.option(
            "--lock-timeout",
            type=float,
            default=None,
            metavar="SECONDS",
            help="Wait this long for another run's lock (default 60), then stop naming its PID.",
        ),
    ]

    @functools.wraps(fn)
    def wrapper(**kwargs):
        parent = click.get_current_context().find_root().params
        for key in ("vllm", "target", "fetch", "as_json", "lock_timeout"):
            if kwargs.get(key) is None:
                kwargs[key] = parent.get(key)
        for key in ("only", "skip"):
            kwargs[key] = tuple(kwargs.get(key) or ()) + tuple(parent.get(key) or ())
        return fn(**kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


# the top-level options that choose a tree and a selection: list and verify read no tree
TREE_OPTIONS = ("vllm", "target", "fetch", "only", "skip", "lock_timeout")


def guarded(fn):
    """Turn our errors into one line and the documented exit code; --json given before the
    command counts, and the tree options given there are refused rather than ignored."""

    @functools.wraps(fn)
    def wrapper(**kwargs):
        ctx = click.get_current_context()
        top = ctx.find_root().params
        kwargs["as_json"] = bool(kwargs.get("as_json") or top.get("as_json"))
        reporter = Reporter(kwargs["as_json"])

        def body() -> int | None:
            given = [f"--{k.replace('_', '-')}" for k in TREE_OPTIONS if top.get(k) not in (None, ())]
            if given:
                raise click.UsageError(
                    f"{', '.join(given)}: for apply, check, revert and status; {ctx.info_name} reads no vLLM tree"
                )
            return fn(reporter=reporter, **kwargs)

        run_guarded(reporter, body)

    return wrapper


def guarded_request(command: Command):
    """apply, check, revert and status under the guard: the words parsed into a Request, and the
    Reporter built from the Request's output mode. A refusal comes before there is a Request; the
    guard renders it in the mode the words ask for."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(vllm, target, fetch, only, skip, as_json, lock_timeout=None) -> None:
            def body() -> int:
                cat = Catalogue(HOME)
                request = parse_request(
                    cat,
                    command,
                    vllm=vllm,
                    target=target,
                    fetch=bool(fetch),
                    only=only,
                    skip=skip,
                    as_json=bool(as_json),
                    lock_timeout=lock_timeout,
                )
                return fn(cat, request, Reporter(request.output is Output.JSON))

            run_guarded(Reporter(bool(as_json)), body)

        return wrapper

    return decorate


class _Group(click.Group):
    """Click's own usage errors (a bad option, a --target that is a file) as the one JSON object
    --json promises, instead of Click's usage text on stderr; and the maintainer commands mounted
    under `maint` under the same guard."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, **extra)
        main_guarded(self, args, prog_name, complete_var=complete_var, **extra)


@click.group(cls=_Group, invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@shared_options
@click.version_option(__version__, prog_name="vllm-backports")
@click.pass_context
def main(ctx: click.Context, **kwargs) -> None:
    """Apply verified backports to a pinned vLLM release, atomically and revertibly.

    With no command, applies the series for --vllm. Exit codes: 0 done, 1 drift or failure,
    2 usage or bad input (nothing changed).
    """
    if ctx.invoked_subcommand is None:
        ctx.invoke(apply_cmd)


# Maintainers only: callable, left out of the users' --help.
maint.main.hidden = True
main.add_command(maint.main, "maint")


def _payload(command: str, tree: Tree, res: Resolution, plan: engine.Plan | None, summary: dict, extra: dict) -> dict:
    return {
        "command": command,
        "vllm": res.version,
        "series": res.series.name if res.series else None,
        "target": str(tree.root),
        "backports": [o.__dict__ for o in plan.outcomes] if plan else [],
        "summary": summary,
        "notes": (plan.notes if plan else []) + ([res.note] if res.note else []),
        **extra,
    }


def _summary_line(summary: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in summary.items())


def _nothing_backported(command: str, reporter: Reporter, tree: Tree, res: Resolution, info: dict) -> int:
    # backports the release needs, then the [known] bugs its code has that no backport fixes
    needed = list(res.release.bugs) if res.release else []
    known = list(res.release.known) if res.release else []
    bugs = ", ".join(needed + known) or "none"
    reporter.emit(
        _payload(command, tree, res, None, {}, {**info, "known_bugs": needed, "known": known}),
        None,
        [f"vLLM {res.version}: no backports shipped for this release yet (known bugs without a backport: {bugs})"],
    )
    return 0


def _run(cat: Catalogue, request: Request, reporter: Reporter) -> int:
    done = core.run(cat, request, reporter.progress, reporter.note)
    command = request.command
    tree, res, plan, name = done.tree, done.resolution, done.plan, command.value
    info = _fetched(done.fetched)
    if plan is None or res.series is None:
        return _nothing_backported(name, reporter, tree, res, info)
    dry = command is Command.CHECK
    summary = _summarise(command, plan)
    for note in plan.notes:
        reporter.note(note)
    lines = [f"[bold]vLLM {res.version}[/bold], series {res.series.name}, {escape(str(tree.root))}"]
    if plan.outcomes and all(o.state == "skipped" for o in plan.outcomes):
        lines.append("nothing selected: --skip leaves out every backport of the series")
    elif not plan.failed and not dry and not plan.changes:
        lines.append(
            "nothing to revert"
            if command is Command.REVERT
            else "nothing to do: the tree already carries what was asked"
        )
    lines.append(_summary_line(summary))
    reporter.emit(
        _payload(
            name, tree, res, plan, summary, {**info, "dry_run": dry, "changed_files": [c.path for c in plan.changes]}
        ),
        outcome_table(f"{name}: {res.series.name}", plan.outcomes),
        lines,
    )
    return 1 if plan.failed else 0


def _fetched(fetched: Fetched | None) -> dict:
    """What --fetch read from PyPI, for --json."""
    if fetched is None:
        return {}
    return {"bytes_fetched": fetched.bytes_fetched, "requests": fetched.requests, "from_cache": fetched.from_cache}


def _summarise(command: Command, plan: engine.Plan) -> dict:
    if command is Command.REVERT:
        keys = ["reverted", "not-applied", "skipped", "drift"]
        return {k.replace("-", "_"): plan.count(k) for k in keys}
    first = "clean" if command is Command.CHECK else "applied"
    out = {first: plan.count(first), "already": plan.count("already"), "upstream": plan.count("upstream")}
    if plan.count("skipped"):
        out["skipped"] = plan.count("skipped")
    out["drift" if command is Command.CHECK else "failed"] = plan.count("drift")
    return out


@main.command("apply")
@shared_options
@guarded_request(Command.APPLY)
def apply_cmd(cat: Catalogue, request: Request, reporter: Reporter) -> int:
    """Apply the series (the default command)."""
    return _run(cat, request, reporter)


@main.command("check")
@shared_options
@guarded_request(Command.CHECK)
def check_cmd(cat: Catalogue, request: Request, reporter: Reporter) -> int:
    """Dry run: what apply would do, and the first mismatching hunk of any drift."""
    return _run(cat, request, reporter)


@main.command("revert")
@shared_options(helps=INSTALLED_HELP)
@guarded_request(Command.REVERT)
def revert_cmd(cat: Catalogue, request: Request, reporter: Reporter) -> int:
    """Undo applied backports; the files get back their exact pristine bytes."""
    return _run(cat, request, reporter)


@main.command("status")
@shared_options(helps=INSTALLED_HELP, selection=False)
@guarded_request(Command.STATUS)
def status_cmd(cat: Catalogue, request: Request, reporter: Reporter) -> int:
    """What this vLLM install carries, from the manifest beside it, checked against the files."""
    seen = core.status(cat, request, reporter.progress, reporter.note)
    tree, res, manifest, journal, ok = seen.tree, seen.resolution, seen.manifest, seen.journal, seen.consistent
    applied = list(manifest.applied) if manifest else []
    not_applied = seen.not_applied
    files = [{"path": f.path, "state": f.state} for f in seen.files]
    left = seen.leftovers
    payload = {
        "command": "status",
        "vllm": res.version,
        "series": manifest.series if manifest else None,
        "target": str(tree.root),
        "applied": [manifests.applied_json(a) for a in applied],
        "files": files,
        "not_applied": not_applied,
        "interrupted_run": str(journal) if journal else None,
        "leftovers": [str(p) for p in left],
        "consistent": ok,
        "updated": manifest.updated if manifest else None,
        "stale_manifest": seen.stale_manifest,
        "rebuilt_manifest": seen.rebuilt_manifest,
    }
    table = Table(title=f"vLLM {res.version} at {tree.root}", title_justify="left", show_edge=False)
    table.add_column("backport")
    table.add_column("patch", style="dim")
    for a in applied:
        table.add_row(a.id, a.patch)
    lines = [f"{f['path']}: {f['state']}" for f in files]
    if journal:
        lines.append(f"[red]an interrupted run left {journal}; run apply or revert to roll it back[/red]")
    if left:  # harmless to the files, but not what a finished run leaves
        lines.append(f"left by a killed run: {', '.join(map(str, left))}; the next apply or revert removes it")
    if not applied and ok:  # a pristine tree (never applied, or reverted) is a state, not damage
        lines.append(f"no backports applied; the series for {res.version} has {len(not_applied)}")
    lines.append(f"applied={len(applied)} not_applied={len(not_applied)} consistent={'yes' if ok else 'no'}")
    reporter.emit(payload, table, lines)
    return 0 if ok else 1


@main.command("list")
@click.option("--json", "as_json", is_flag=True, default=None, help="One JSON object on stdout.")
@guarded
def list_cmd(reporter: Reporter, as_json) -> int:
    """The catalogue: every backport, the releases it serves, and its upstream links."""
    cat = Catalogue(HOME)
    rows = []
    for bid, bp in cat.backports.items():
        shipped = [v for v in cat.versions if bid in cat.releases[v].backports]
        pending = [v for v in cat.versions if bid in cat.releases[v].bugs]
        rows.append(
            {
                "id": bid,
                "title": bp.title,
                "bug": bp.bug,
                "upstream_in": bp.upstream_in or None,
                "releases": shipped,
                "affected_without_backport": pending,
            }
        )
    table = Table(show_edge=False)
    table.add_column("backport", no_wrap=True)  # an id split mid-word cannot be copied into --only
    for col in ("releases", "not yet backported", "upstream", "bug"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(
            r["id"],
            _span(r["releases"], cat.versions),
            _span(r["affected_without_backport"], cat.versions),
            r["upstream_in"] or "-",
            _short_bug(r["bug"]),
        )
    # bugs in the same code paths that no backport fixes, with what the GPU showed; for humans a
    # line each after the table: they are no backports, and --only cannot take them
    others, lines = [], []
    for bug in cat.known.values():
        affected = [v for v in cat.versions if bug.id in cat.releases[v].known]
        # present there, but a backport of the release's series fixes it (fixed_by)
        fixed = [v for v in cat.versions if bug.affects(v) and v not in affected]
        others.append(
            {
                "id": bug.id,
                "number": bug.number,
                "title": bug.title,
                "bug": bug.bug,
                "present": bug.present or None,
                "status": bug.status,
                "checked": bug.checked,
                "releases": affected,
                "fixed_on": fixed,
                "fixed_by": list(bug.fixed_by),
                "evidence": bug.evidence,
            }
        )
        where = _span(affected, cat.versions) if affected else "no release"
        about = f"{bug.id} ({_short_bug(bug.bug)}, {bug.status}, checked {bug.checked})"
        if fixed:
            alone = f", left alone on {where}" if affected else ""
            lines.append(
                f"known, fixed by {' or '.join(bug.fixed_by)}: {about} on {_span(fixed, cat.versions)}{alone}: "
                f"{bug.title}"
            )
        else:
            lines.append(f"known, no backport: {about} on {where}: {bug.title}")
    n_shipped = sum(1 for r in rows if r["releases"])
    known = sum(1 for r in rows if r["affected_without_backport"])
    # the known bugs some release is left with (one a series fixes everywhere it is present is not)
    left = sum(1 for o in others if o["releases"])
    summary = (
        f"backports={len(rows)} shipped={n_shipped} not_yet_backported={known} known_without_backport={left} "
        f"releases={len(cat.versions)} ({cat.versions[0]} .. {cat.versions[-1]})"
    )
    payload = {"command": "list", "backports": rows, "known": others, "releases": cat.versions}
    reporter.emit(payload, table, [*lines, summary])
    return 0


def _short_bug(url: str) -> str:
    """vLLM's issue links as vllm#N (the JSON keeps the whole URL)."""
    prefix = "https://github.com/vllm-project/vllm/issues/"
    return "vllm#" + url.removeprefix(prefix) if url.startswith(prefix) else url


def _span(versions: list[str], order: list[str]) -> str:
    """Compress consecutive releases into 'a .. b' runs."""
    if not versions:
        return "-"
    runs, current = [], [versions[0]]
    for v in versions[1:]:
        if order.index(v) == order.index(current[-1]) + 1:
            current.append(v)
        else:
            runs.append(current)
            current = [v]
    runs.append(current)
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]} .. {r[-1]}" for r in runs)


PROMPTS_HELP_ALL = (
    'With --model or --server: a JSONL file, one {"messages": [...]}, {"prompt": "..."} or '
    '{"prompt_token_ids": [...]} a line [default: the built-in set of code edits, tool calls and a shared '
    "system prompt]. Without them, the tiny model's prompt set [default: random]: random; shared-prefix "
    "(one long prefix, so prefix caching hits); k-plus-1 (half the prompts "
    "exactly k+1 tokens, a verify row's size); tq-continuation (prefix-cache continuations beside longer first "
    "chunks, TurboQuant's prefill fast path: needs --prefix-caching on); producer-consumer (one 480-token "
    "producer, then 342-token consumers of its first 330 tokens: needs --prefix-caching on); churn (64 short "
    "requests of 24 tokens, so freed rows take new requests all the time); prompt-tail (one 480-token producer, "
    "then 321-token consumers of its first 320 tokens, whose hits leave one token: needs --prefix-caching on); "
    "long-chunked (16 prompts of 2,000 to 3,936 tokens, prefilled in chunks of a 512-token budget); one-token (churn "
    "with every fourth prompt one token long); tool-calls (repeated tool-call-shaped token patterns, for vLLM's own "
    "ngram presets); align-shifts (158-token prompts whose scripted drafts end rows one token short of each "
    "160-token align block: needs --prefix-caching on)."
)

# verify's options a user sets; the rest (scenarios, batches, calibration, lab switches) keep
# working but show only under --help-all (docs/VERIFY.md describes them).
VERIFY_USER_OPTIONS = (
    "model",
    "server",
    "prompt_set",
    "presets",
    "kv_cache",
    "tp",
    "work_dir",
    "as_json",
    "help_all",
)
# what `verify --server` takes; any other option set is refused (the server's own flags decide)
SERVER_OPTIONS = (
    "server",
    "model",
    "prompt_set",
    "max_tokens",
    "threshold",
    "batches",
    "timeout",
    "work_dir",
    "as_json",
)


def _help_all(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """Print the command's help with every option, the hidden ones included."""
    if not value or ctx.resilient_parsing:
        return
    hidden = [p for p in ctx.command.params if isinstance(p, click.Option) and p.hidden]
    prompts = next(p for p in ctx.command.params if p.name == "prompt_set")
    assert isinstance(prompts, click.Option)
    short = prompts.help
    for p in hidden:
        p.hidden = False
    prompts.help = PROMPTS_HELP_ALL
    try:
        click.echo(ctx.get_help(), color=ctx.color)
    finally:
        for p in hidden:
            p.hidden = True
        prompts.help = short
    ctx.exit()


@main.command("verify", epilog="Every option, the lab's included: verify --help-all (docs/VERIFY.md).")
@click.option(
    "--help-all",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_help_all,
    help="Show every option, the lab's included, and exit.",
)
@click.option(
    "--batch",
    "batches",
    multiple=True,
    type=click.Choice(["1", "16"]),
    help="Requests a batch (repeatable; default 1 and 16; with --model one, default 16).",
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    type=click.Choice(["eager", "graphs"]),
    help="Eager or CUDA graphs (repeatable; default both; with --model graphs).",
)
@click.option(
    "--preset",
    "presets",
    multiple=True,
    type=click.Choice(sorted(PRESETS)),
    help="Speculative preset (repeatable; default ngram, scripted drafts; ngram-vllm*: vLLM's own proposer; with "
    "--model vLLM's own drafters, mtp where the checkpoint has MTP layers).",
)
@click.option("--tp", type=click.IntRange(1, 8), default=1, show_default=True, help="Tensor-parallel size.")
@click.option(
    "--threshold",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="Regret (nats below the reference's best) above which a token is an error "
    "[default: twice the plain baseline's worst, at least 1].",
)
@click.option(
    "--prefill-backend",
    type=click.Choice(["default", "triton", "flashinfer"]),
    default="default",
    show_default=True,
    help="GDN prefill backend (vLLM's additional_config gdn_prefill_backend, from vLLM 0.18.0; "
    "0.17.x runs FlashInfer's on compute capability 9.0 whatever is asked).",
)
@click.option(
    "--kv-cache",
    type=click.Choice(["auto", *TURBOQUANT]),
    default="auto",
    show_default=True,
    help="KV cache dtype for every engine of the run, baselines included (TurboQuant presets: vLLM 0.21+).",
)
@click.option(
    "--model",
    type=click.Path(),
    default=None,
    help="A local Hugging Face checkpoint of a hybrid GDN model (Qwen3-Next, Qwen3.5, Qwen3.6, Kimi Linear) to judge "
    "instead of "
    "the tiny model: its own tokenizer, chat template and prompts; the reference is this vLLM without speculation, "
    "teacher-forced over each output (docs/VERIFY.md). With --server: the served model's name [default: the one "
    "it lists].",
)
@click.option(
    "--server",
    metavar="URL",
    default=None,
    help="Judge a running `vllm serve` (e.g. http://localhost:8000) instead, through its OpenAI API: its greedy "
    "outputs, speculation and all, against its own prefill's prompt logprobs (no GPU or vLLM needed here).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="With --server: seconds one request may take, and how long a busy server (429, 503) is asked again "
    "[default: 120].",
)
@click.option(
    "--prompts",
    "prompt_set",
    metavar="SET|FILE",
    default=None,
    help='With --model or --server: a JSONL file, one {"messages": [...]}, {"prompt": "..."} or '
    '{"prompt_token_ids": [...]} a line [default: the built-in set of code edits, tool calls and a shared '
    "system prompt]. Without them, the tiny model's prompt set [default: random] (--help-all lists them).",
)
@click.option(
    "--calibrate-kv",
    type=click.Choice(["same", "auto"]),
    default=None,
    help="KV of the baseline that calibrates: same (the run's --kv-cache) or auto (bf16; the plain engine on "
    "the run's TurboQuant KV is then judged as a run, scenario no-spec) [default: auto for tq-continuation "
    "with TurboQuant KV, else same].",
)
@click.option(
    "--prefix-caching",
    type=click.Choice(SWITCHES),
    default="default",
    show_default=True,
    help="Prefix caching; default: the release's own choice (on for hybrids from 0.28).",
)
@click.option(
    "--async-scheduling",
    type=click.Choice(SWITCHES),
    default="default",
    show_default=True,
    help="Async scheduling; default: the release's own choice.",
)
@click.option(
    "--model-runner",
    type=click.Choice(MODEL_RUNNERS),
    default="default",
    show_default=True,
    help="vLLM's model runner; default: the release's own choice (V2 for MTP from 0.29, for ngram "
    "from 0.32). The named ngram proofs run v1, where spec-prefill-decode-graph acts.",
)
@click.option(
    "--control",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    default=None,
    help="A site directory holding another install of the same release (say, its pristine files): its "
    "speculative runs are judged against the same baseline, and must fail for the proof to hold.",
)
@click.option(
    "--gpu-memory-utilization",
    type=click.FloatRange(0.05, 0.95),
    default=None,
    help="Share of the GPU each engine may take (one engine runs at a time) [default: 0.35; with --model 0.90].",
)
@click.option(
    "--kv-cache-gib",
    type=click.FloatRange(min=0.0, min_open=True),
    default=None,
    help="A fixed KV cache size per engine instead of vLLM's memory profile (for a GPU shared with other processes).",
)
@click.option(
    "--model-class",
    type=click.Choice(list(MODEL_CLASSES)),
    default=MODEL_CLASS,
    show_default=True,
    help="The tiny model's family: qwen3_next (Qwen3NextForCausalLM, MoE), qwen3_5 (Qwen3_5ForCausalLM, "
    "dense) or qwen3_5_moe (Qwen3_5MoeForCausalLM); the mtp preset drafts with its MTP layer.",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1, 32768),
    default=None,
    help="With --model: tokens generated per prompt at most [default: 256] (each stops at the model's end of turn).",
)
@click.option(
    "--max-num-batched-tokens",
    type=click.IntRange(16),
    default=None,
    help="With --model: vLLM's token budget a step [default: the release's own].",
)
@click.option(
    "--float32-reference",
    is_flag=True,
    default=False,
    help="With --model on the tiny checkpoint (python -m vllm_backports.verify.tokenizer DIR): judge the same "
    "outputs by transformers in float32 too; the run fails unless both references agree on every verdict.",
)
@click.option(
    "--rounds",
    type=click.IntRange(1, 20),
    default=1,
    show_default=True,
    help="Run the prompt list this many times on each warm engine and judge every round (errors per round; "
    "a clean first round and failing later ones: state that outlives requests).",
)
@click.option(
    "--prompt-logprobs",
    is_flag=True,
    default=False,
    help="Also judge vLLM's logprob of every prompt token (prompt_logprobs=0) against the float32 reference's, "
    "with a threshold calibrated on the plain engine as for the outputs.",
)
@click.option(
    "--output-logprobs",
    is_flag=True,
    default=False,
    help="Also judge vLLM's logprob of every token it chose (logprobs=0) against the float32 reference's: "
    "a sequence whose mean difference is over 3x the plain engine's worst is an error (context read wrong "
    "moves them all, while each token's regret may stay under the threshold).",
)
@click.option(
    "--check-accepted-counts",
    is_flag=True,
    default=False,
    help="Debug: record the accepted counts the GDN metadata builder sees for speculative rows (one host sync "
    "a build) and report any outside 1..k+1.",
)
@click.option(
    "--count-align-shifts",
    is_flag=True,
    default=False,
    help="Debug: count the conv-state shifts within one block that the align-mode postprocess makes "
    "(speculation with prefix caching, vLLM 0.22.0 .. 0.33.0's V1 runner; one host sync a step).",
)
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".verify"),
    show_default=True,
    help="Where the model, engine logs and raw outputs go.",
)
@click.option("--json", "as_json", is_flag=True, default=None, help="One JSON object on stdout.")
@guarded
def verify_cmd(
    reporter: Reporter,
    batches,
    modes,
    presets,
    tp,
    threshold,
    prefill_backend,
    kv_cache,
    prompt_set,
    calibrate_kv,
    prefix_caching,
    async_scheduling,
    model_runner,
    control,
    gpu_memory_utilization,
    kv_cache_gib,
    model_class,
    model,
    server,
    timeout,
    max_tokens,
    max_num_batched_tokens,
    float32_reference,
    rounds,
    prompt_logprobs,
    output_logprobs,
    check_accepted_counts,
    count_align_shifts,
    work_dir,
    as_json,
) -> int:
    """Judge greedy speculative decoding token by token: this vLLM on a tiny model against float32
    transformers or with --model on your checkpoint (needs a GPU), or with --server a running
    vllm serve against its own prefill.

    Exit 0: every scenario's tokens are what the model predicts; 1: some are not;
    2: this machine cannot run verify, or the plain baseline itself fails (no calibration).
    """
    from .verify.report import judged_lines, output_logprob_cell, prompt_logprob_cell, verdict
    from .verify.run import Plan, check_tiny_model_options, execute

    if as_json:  # vLLM logs to stdout unless told; under --json stdout holds the one object alone
        os.environ.setdefault("VLLM_LOGGING_STREAM", "ext://sys.stderr")
    if server is not None:
        return _verify_server(reporter, server, model, prompt_set, max_tokens, threshold, batches, timeout, work_dir)
    if timeout is not None:
        raise click.UsageError("--timeout goes with --server")
    if model is not None:
        model = Path(model)
        from .verify import served

        ctx = click.get_current_context()
        given = ctx.get_parameter_source("model_class") not in (None, click.core.ParameterSource.DEFAULT)
        prompts_file = served.check_model_options(
            model_class=model_class if given else None,
            batches=tuple(batches),
            prompt_set=prompt_set,
            calibrate_kv=calibrate_kv,
            rounds=rounds,
            prompt_logprobs=prompt_logprobs,
            check_accepted_counts=check_accepted_counts,
            count_align_shifts=count_align_shifts,
            model_runner=model_runner,
            output_logprobs=output_logprobs,
        )
        return _verify_model(
            reporter,
            model=model,
            prompts_file=prompts_file,
            batches=batches,
            modes=modes,
            presets=presets,
            tp=tp,
            threshold=threshold,
            prefill_backend=prefill_backend,
            kv_cache=kv_cache,
            prefix_caching=prefix_caching,
            async_scheduling=async_scheduling,
            control=control,
            gpu_memory_utilization=gpu_memory_utilization,
            kv_cache_gib=kv_cache_gib,
            max_tokens=max_tokens,
            max_num_batched_tokens=max_num_batched_tokens,
            float32_reference=float32_reference,
            work_dir=work_dir,
        )
    prompt_set = check_tiny_model_options(
        model_class=model_class,
        prefill_backend=prefill_backend,
        prompt_set=prompt_set,
        max_tokens=max_tokens,
        max_num_batched_tokens=max_num_batched_tokens,
        float32_reference=float32_reference,
    )
    plan = Plan(
        batches=tuple(int(b) for b in batches) or (1, 16),
        modes=tuple(modes) or ("eager", "graphs"),
        presets=tuple(presets) or ("ngram",),
        tp=tp,
        threshold=threshold,
        work=work_dir,
        kv_cache=kv_cache,
        additional_config={} if prefill_backend == "default" else {"gdn_prefill_backend": prefill_backend},
        prompt_set=prompt_set,
        prefix_caching=prefix_caching,
        async_scheduling=async_scheduling,
        model_runner=model_runner,
        control=control.resolve() if control else None,
        gpu_memory_utilization=0.35 if gpu_memory_utilization is None else gpu_memory_utilization,
        kv_cache_gib=kv_cache_gib,
        model_class=model_class,
        calibrate_kv=calibrate_kv,
        rounds=rounds,
        prompt_logprobs=prompt_logprobs,
        output_logprobs=output_logprobs,
        check_accepted_counts=check_accepted_counts,
        count_align_shifts=count_align_shifts,
    )
    result = execute(plan, reporter.progress)
    # Kept before anything renders it: the GPU time that made it is the expensive part.
    (work_dir / "verify.json").write_text(json.dumps(result))
    table = Table(
        title=f"vLLM {result['vllm']}: KV {result['kv_cache']}, tokens judged by the float32 reference "
        f"(error: regret > {result['threshold']:.2f}; "
        f"baseline worst {result['baseline_worst_regret']:.2f}"
        + (f" on KV {on}" if (on := result.get("calibrated_on", result["kv_cache"])) != result["kv_cache"] else "")
        + ")",
        title_justify="left",
        show_edge=False,
    )
    for col in (
        "scenario",
        "site",
        "batch",
        "mode",
        "sequences",
        "tokens",
        "errors",
        "worst regret",
        "first error at",
        "accepted then no drafts",
        "accepted drafts",
        "prefix hits",
        "tok/s",
        *(["prompt lp errors"] if prompt_logprobs else []),
        *(["output lp drifts (worst mean)"] if output_logprobs else []),
    ):
        table.add_column(col)
    for r in result["rows"]:
        ex = r["exercised"] or {}  # scripted drafts: replayed transitions; a model drafter: vLLM's counters
        style = "green" if r["errors"] == 0 and not r.get("crashed") else "bold red"
        errors = "crashed" if r.get("crashed") else str(r["errors"])
        worst = "-" if r["worst_regret"] is None else f"{r['worst_regret']:.2f}"
        hits = ((r.get("engine") or {}).get("prefix_cache") or {}).get(
            "hits_total", (r.get("engine") or {}).get("prefix_cache")
        )
        table.add_row(
            r["scenario"],
            r["site"],
            str(r["batch"]),
            r["mode"],
            str(r["sequences"]),
            str(r["tokens"]),
            f"[{style}]{errors}[/]",
            worst,
            str(r["first_error_at"] if r["first_error_at"] is not None else "-"),
            str(ex.get("accepted_then_no_drafts", "-")),
            str(ex.get("accepted_drafts", ex.get("num_accepted_tokens", "-"))),
            "-" if hits is None else str(hits),
            f"{r['tokens_per_s']:.0f}",
            *([prompt_logprob_cell(r)] if prompt_logprobs else []),
            *([output_logprob_cell(r)] if output_logprobs else []),
        )
    line, code = verdict(result)
    reporter.emit(_verify_payload(result), table, [*judged_lines(result), line])
    return code


for _param in verify_cmd.params:
    if _param.name not in VERIFY_USER_OPTIONS and isinstance(_param, click.Option):
        _param.hidden = True
# a user's options first, in the order they matter
verify_cmd.params.sort(key=lambda p: VERIFY_USER_OPTIONS.index(p.name) if p.name in VERIFY_USER_OPTIONS else 99)


def _verify_payload(result: dict, **extra) -> dict:
    return {
        "command": "verify",
        **{k: v for k, v in result.items() if k != "rows"},
        "rows": [{k: v for k, v in r.items() if k != "regrets"} for r in result["rows"]],
        **extra,
    }


def _verify_server(
    reporter: Reporter, url, model, prompt_set, max_tokens, threshold, batches, timeout, work_dir
) -> int:
    """verify --server: every option that sets up a local engine refused, then the run (server.py)."""
    from .verify import server
    from .verify.run import work_dir_for

    ctx = click.get_current_context()
    for p in ctx.command.params:
        given = ctx.get_parameter_source(p.name) not in (None, click.core.ParameterSource.DEFAULT)
        if given and p.name not in SERVER_OPTIONS and isinstance(p, click.Option):
            raise click.UsageError(
                f"{p.opts[0]} goes with a local engine, not with --server (the server's own flags decide)"
            )
    if len(set(batches)) > 1:
        raise click.UsageError("--server runs one batch size: give --batch once")
    plan = server.ServerPlan(
        url=url,
        model=model,
        prompts=None if prompt_set is None else Path(prompt_set),
        max_tokens=server.MAX_TOKENS if max_tokens is None else max_tokens,
        threshold=threshold,
        timeout=server.TIMEOUT_S if timeout is None else timeout,
        batch=int(batches[0]) if batches else server.BATCH,
    )
    with work_dir_for(work_dir):  # made first: a finished run is not lost to a --work-dir it cannot have
        result = server.execute(plan, reporter.progress)
    (work_dir / "verify.json").write_text(json.dumps(result))
    line, code = server.verdict(result)
    payload = _verify_payload(result, verdict=line)
    payload["rows"] = [{k: v for k, v in r.items() if k not in ("regrets", "output")} for r in result["rows"]]
    reporter.emit(payload, None, server.lines(result))
    return code


def _verify_model(
    reporter: Reporter,
    *,
    model: Path,
    prompts_file: Path | None,
    batches,
    modes,
    presets,
    tp: int,
    threshold: float | None,
    prefill_backend: str,
    kv_cache: str,
    prefix_caching: str,
    async_scheduling: str,
    control: Path | None,
    gpu_memory_utilization: float | None,
    kv_cache_gib: float | None,
    max_tokens: int | None,
    max_num_batched_tokens: int | None,
    float32_reference: bool,
    work_dir: Path,
) -> int:
    """verify --model, its options checked (served.check_model_options): the run and its report."""
    from .verify import report, served

    plan = served.ModelPlan(
        model=model.resolve(),
        prompts=prompts_file,
        presets=tuple(dict.fromkeys(presets)),
        batch=int(batches[0]) if batches else 16,
        modes=tuple(dict.fromkeys(modes)) or ("graphs",),
        tp=tp,
        threshold=threshold,
        work=work_dir,
        additional_config={} if prefill_backend == "default" else {"gdn_prefill_backend": prefill_backend},
        kv_cache=kv_cache,
        prefix_caching=prefix_caching,
        async_scheduling=async_scheduling,
        control=control.resolve() if control else None,
        gpu_memory_utilization=served.MODEL_GPU_MEMORY_UTILIZATION
        if gpu_memory_utilization is None
        else gpu_memory_utilization,
        kv_cache_gib=kv_cache_gib,
        max_tokens=served.MAX_TOKENS if max_tokens is None else max_tokens,
        max_num_batched_tokens=max_num_batched_tokens,
        float32_reference=float32_reference,
    )
    result = served.execute(plan, reporter.progress)
    # Kept before anything renders it: the GPU time that made it is the expensive part.
    (work_dir / "verify.json").write_text(json.dumps(result))
    head, table, lines = report.model_report(result)
    line, code = report.verdict(result)
    reporter.emit(_verify_payload(result, verdict=line), table, lines, before=head)
    return code
