"""The generated files: README's support matrix and arch table, docs/SUPPORT.md, the GPU evidence
page, images/bake-data.json, docs/UPSTREAM-TESTS.md and docs/BENCHMARKS.md's A/B table, each from
versions.toml and the results kept in docs/. CI runs each generator in check mode; the CI
matrices, which are printed rather than written, are in ci."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from packaging.version import Version

from ..bench import table as bench_table_
from ..catalogue import KNOWN_STATUSES, SCENARIOS, Catalogue
from ..errors import BackportError, CatalogueError, EvidenceError
from ..evidence import (
    EVIDENCE_DIR,
    PAGE,
    heading,
    load,
    matrix_status,
    render_page,
    slug,
    with_digests,
    with_upstream_fixes,
)
from ..images import BAKE_DATA, render_bake_data
from ..upstream_tests import markdown, series_patches, stale_patches
from ..verify.proofs import PROOFS
from .drift import current_text, splice, write_or_diff, write_region

MATRIX_BEGIN, MATRIX_END = "<!-- support-matrix:begin -->", "<!-- support-matrix:end -->"
# The owed scenarios' meanings and the dated notes live on their own generated page, so the
# README's matrix stays a table a reader takes in at a glance.
NOTES = Path("docs/SUPPORT.md")
# The README counts a release's owed runs and links to the generated table of every release's
# (maint owed-table, on the page of GPU runs; maint verification-index writes there too); the
# scenarios themselves are listed in NOTES.
VERIFICATION = Path("docs/VERIFICATION.md")
OWED_HEADING = "Runs still owed"


def shipped_patches(cat: Catalogue, version: str) -> dict[str, str]:
    """What apply.py's manifest records on `version` today: each backport its series applies there
    (those upstream in the release are found in place, not applied), in series order, with its
    patch file's pin in versions.toml. A release on another's series compares with that series."""
    r = cat.releases[version]
    if not r.series:
        return {}
    series = cat.series(r.series)
    return {p.backport_id: series.pinned[p.name] for p in series.patches if p.backport_id in r.backports}


def judged_evidence(home: Path, cat: Catalogue | None = None) -> dict:
    """The GPU evidence as the generated pages count it: evidence.load (a bad file stops here,
    before versions.toml is read), each file's patches compared with the release's shipped series
    (evidence.with_digests), with the weak runs that show a release's upstream fix holding told
    apart (evidence.with_upstream_fixes)."""
    found = load(home)
    cat = cat or Catalogue(home)
    shipped = {v: shipped_patches(cat, v) for v in found if v in cat.releases}
    upstream = {v: r.upstream for v, r in cat.releases.items()}
    return with_upstream_fixes(with_digests(found, shipped), upstream, {name: p.fix for name, p in PROOFS.items()})


def _known_evidence(cat: Catalogue, evidence: dict) -> None:
    for release, summaries in evidence.items():
        if release not in cat.releases:
            raise EvidenceError(
                f"{EVIDENCE_DIR.as_posix()}/{release}: vLLM {release} is not a release in versions.toml"
            )
        carried = set(cat.releases[release].backports)
        for s in summaries:
            # a run whose target lacks a backport the series carries now may be owed again
            current = s.target_backports is None or carried <= set(s.target_backports)
            if s.name in cat.releases[release].owed and current:
                raise CatalogueError(
                    f'versions.toml: [releases."{release}"]: owes {s.name!r}, but {EVIDENCE_DIR.as_posix()}/'
                    f"{s.link} ran it; remove it from owed"
                )


def twin_with_evidence(cat: Catalogue, version: str, evidence: dict) -> str | None:
    """The first of a release's twins (byte-identical patched files, Catalogue.twins) with GPU
    evidence: its runs hold for this release too, beside any of the release's own."""
    return next((t for t in cat.twins(version) if t in evidence), None)


def owed(cat: Catalogue, version: str, evidence: dict) -> tuple[str, ...]:
    """The scenarios still owed on a GPU: the release's own, and those of the twin whose evidence
    its status shows (the same bytes owe the same runs)."""
    via = twin_with_evidence(cat, version, evidence)
    due = set(cat.releases[version].owed) | set(cat.releases[via].owed if via else ())
    return tuple(name for name in SCENARIOS if name in due)


def _gpu(cat: Catalogue, version: str, evidence: dict, page: str) -> str:
    """The generated GPU status: the release's evidence counted, then its first twin's with evidence
    (the same bytes, so those runs hold here too); "" when neither has any."""
    own = [matrix_status(evidence[version], page)] if version in evidence else []
    twin = twin_with_evidence(cat, version, evidence)
    return "; ".join(own + ([f"same patched files as {twin}: {matrix_status(evidence[twin], page)}"] if twin else []))


def owed_link(due: tuple[str, ...]) -> str:
    """How many runs a release still owes, linked to the table of the runs still owed."""
    runs = f"{len(due)} run" + ("" if len(due) == 1 else "s")
    return f"[owed: {runs}]({VERIFICATION.as_posix()}#{slug(OWED_HEADING)})"


def status(cat: Catalogue, version: str, evidence: dict) -> str:
    """A release's short status for the README: its GPU evidence counted (or that of the release
    with the same patched files), how many runs it still owes (listed in its notes), a link to its
    notes."""
    r = cat.releases[version]
    if not r.series:
        return "-"
    parts = [_gpu(cat, version, evidence, PAGE.as_posix()) or "CPU-tested"]
    if due := owed(cat, version, evidence):
        parts.append(owed_link(due))
    parts.append(f"[notes]({NOTES.as_posix()}#{slug(heading(version))})")
    return "; ".join(parts)


KNOWN_HEADING = "Known bugs the series leave alone"


def known_cell(cat: Catalogue, version: str) -> str:
    """The matrix's cell of bugs without a backport: backports the series lacks yet, then the
    [known] bugs the release's code has, by their upstream numbers, grouped by what the GPU showed,
    linked to the notes' table of them."""
    r = cat.releases[version]
    groups = []
    for state in KNOWN_STATUSES:
        numbers = [cat.known[k].number for k in r.known if cat.known[k].status == state]
        if numbers:
            groups.append(f"{', '.join(numbers)} ({state})")
    parts = list(r.bugs)
    if groups:
        parts.append(f"[{'; '.join(groups)}]({NOTES.as_posix()}#{slug(KNOWN_HEADING)})")
    return "; ".join(parts) or "-"


def render_known(cat: Catalogue) -> list[str]:
    """The notes' table of the [known] bugs: where each is, what the GPU showed."""
    lines = [
        f"## {KNOWN_HEADING}",
        "",
        "Upstream reports of silent corruption in the code paths the series patch that no backport here",
        "fixes: the releases whose code has each, read release by release, and what the GPU showed",
        "(`known` in `versions.toml`; the reading, with file and line, in",
        '[SIBLING-BUGS.md](SIBLING-BUGS.md)), and the day that status was last checked. "not yet run":',
        "the code has it, no GPU run has tried it. The support matrix lists them per release.",
        "",
        "| bug | what | releases | status | last checked | evidence |",
        "|---|---|---|---|---|---|",
    ]
    for k in cat.known.values():
        where = f"`{k.present}`" if k.present else "no code path found"
        lines.append(f"| [{k.number}]({k.bug}) | {k.title} | {where} | {k.status} | {k.checked} | {k.evidence} |")
    return lines + [""]


def render_matrix(cat: Catalogue, evidence: dict | None = None) -> str:
    """The README's support matrix: one short status cell a release (evidence.load: release ->
    summaries)."""
    evidence = evidence or {}
    _known_evidence(cat, evidence)
    rows = [
        "| vLLM | torch / CUDA | series | backports | fixed upstream | known bugs, no backport yet | status |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in cat.versions:
        r = cat.releases[v]
        rows.append(
            f"| {v} | {r.torch} / {r.cuda} | {r.series or '-'} | {', '.join(r.backports) or '-'} | "
            f"{', '.join(r.upstream) or '-'} | {known_cell(cat, v)} | {status(cat, v, evidence)} |"
        )
    return "\n".join(rows)


def _section(cat: Catalogue, version: str, evidence: dict, page: str) -> list[str]:
    """A release's part of docs/SUPPORT.md, below its heading."""
    r = cat.releases[version]
    lines = [f"Series {r.series or '-'}, torch {r.torch}, CUDA {r.cuda}.", ""]
    if not r.series:
        return lines + ["Nothing is backported to this release yet.", ""]
    gpu = _gpu(cat, version, evidence, page)
    lines += [f"Status: CPU-tested; {gpu or 'not run on a GPU'}.", ""]
    if due := owed(cat, version, evidence):
        lines += ["Owed on a GPU:", ""] + [f"- `{name}`: {SCENARIOS[name]}" for name in due] + [""]
    if r.notes:
        lines += ["Notes:", ""] + [f"- {note}" for note in r.notes] + [""]
    return lines


def render_notes(cat: Catalogue, evidence: dict | None = None) -> str:
    """docs/SUPPORT.md: how far each release is proven: a status generated from its GPU evidence
    (or its twin's), then the scenarios it owes and its dated notes from versions.toml."""
    evidence = evidence or {}
    _known_evidence(cat, evidence)
    page = PAGE.relative_to(NOTES.parent).as_posix()  # links resolve from this page's folder
    lines = [
        "# Support notes",
        "",
        "Generated from `versions.toml` and `docs/evidence/` by `python -m vllm_backports.maint matrix --write`",
        '(CI fails on drift); the README\'s support matrix links here. "CPU-tested" means: the series',
        "applies exactly to the release's real pristine files from PyPI, the patched files compile, a",
        "second run changes nothing, and revert restores the RECORD hashes. A release's GPU status is",
        f"counted from its evidence, listed run by run on [its page]({page}); a release whose series",
        "and pristine files (their pinned sha256) are another's has the same patched bytes, so that",
        "release's evidence, and what it owes, hold for it too, beside its own. What is owed, and the",
        "notes, are `owed` and `notes` in `versions.toml`.",
        "",
        "What a status counts. A **proof** is a run whose target (the series) is clean and whose control",
        "(the release without the fix) failed: **control wrong**, errors in every control run, or",
        "**control crashed**, every control run failed and one engine died; it counts only when the",
        "target recorded the patches shipped today (each patch's sha256 as pinned in `versions.toml`).",
        "**Earlier revision**: a proof of other patches, or from before verify recorded them; run it",
        "again to count. **Weak**: the control passes though the run reached the bug's path; **not",
        "exercised**: the control passes and the bug's path never ran (no accepted draft then a step",
        'without drafts, no draft accepted, or no prefix-cache hit); neither proves anything. "no proof',
        'of today\'s series": the release has no current proof. "same patched files as X": the same',
        'series on the same pristine files as X, whose evidence holds. "known bugs, no backport yet":',
        'the table below. "owed: N runs": scenarios not yet run on a GPU there, every release\'s in the',
        "[table of runs still owed](VERIFICATION.md#runs-still-owed).",
        "",
    ]
    if cat.known:
        lines += render_known(cat)
    for v in cat.versions:
        lines += [f"## {heading(v)}", ""] + _section(cat, v, evidence, page)
    return "\n".join(lines)


@click.command()
@click.option(
    "--write", is_flag=True, help="Rewrite README.md and docs/SUPPORT.md (otherwise show the diff, exit 1 on drift)."
)
@click.pass_obj
def matrix(home: Path, write: bool) -> None:
    """Regenerate the support matrix in README.md and the notes in docs/SUPPORT.md from
    versions.toml and docs/evidence/."""
    path = home / "README.md"
    text = path.read_text()
    cat = Catalogue(home)
    evidence = judged_evidence(home, cat)  # a bad file stops here, before anything is written
    new = splice(text, MATRIX_BEGIN, MATRIX_END, render_matrix(cat, evidence), "README.md")
    new = splice(new, ARCH_BEGIN, ARCH_END, render_arches(cat), "README.md")
    notes_path = home / NOTES
    notes = render_notes(cat, evidence)
    old_notes = current_text(notes_path)
    # Both files are checked before either check exits, so one run shows all the drift.
    drift = write_or_diff(path, text, new, write, "support matrix is current", exit_on_drift=False)
    drift |= write_or_diff(
        notes_path, old_notes, notes, write, "support notes are current", NOTES.as_posix(), exit_on_drift=False
    )
    if drift and not write:
        sys.exit(1)


@click.command()
@click.option(
    "--write", is_flag=True, help="Rewrite docs/evidence/README.md (otherwise show the diff, exit 1 on drift)."
)
@click.pass_obj
def evidence(home: Path, write: bool) -> None:
    """Regenerate docs/evidence/README.md from the verify JSON files in docs/evidence/<release>/."""
    path = home / PAGE
    page = render_page(judged_evidence(home))  # a bad file stops here, before anything is written
    write_or_diff(path, current_text(path), page, write, "evidence page is current", PAGE.as_posix())


ARCH_BEGIN, ARCH_END = "<!-- arch-table:begin -->", "<!-- arch-table:end -->"


def render_arches(cat: Catalogue) -> str:
    rows = ["| arch | platforms | GPUs | GDN prefill default | why it differs |", "|---|---|---|---|---|"]
    for a in cat.arches.values():
        rows.append(f"| {a.name} | {', '.join(a.platforms)} | {a.gpus} | {a.gdn_prefill_backend} | {a.why} |")
    return "\n".join(rows)


@click.command()
@click.option("--write", is_flag=True, help="Rewrite images/bake-data.json (otherwise show the diff, exit 1 on drift).")
@click.pass_obj
def bake(home: Path, write: bool) -> None:
    """Regenerate images/bake-data.json, the releases, variants and arches images/docker-bake.hcl
    crosses, from versions.toml."""
    path = home / BAKE_DATA
    new = render_bake_data(Catalogue(home))
    write_or_diff(path, current_text(path), new, write, "bake data is current", BAKE_DATA)


@click.command("upstream-tests-doc")
@click.option(
    "--write", is_flag=True, help="Rewrite docs/UPSTREAM-TESTS.md (otherwise show the diff, exit 1 on drift)."
)
@click.pass_obj
def upstream_tests_doc(home: Path, write: bool) -> None:
    """Regenerate docs/UPSTREAM-TESTS.md from docs/upstream-tests/<release>.json (CPU) and
    docs/upstream-tests/gpu/<release>.json (GPU)."""
    root = home / "docs" / "upstream-tests"

    cat = Catalogue(home)

    def read(folder: Path, *, gpu: bool = False) -> list[dict]:
        reports = []
        for f in sorted(folder.glob("*.json"), key=lambda p: Version(p.stem)):
            where = f"docs/upstream-tests/{f.relative_to(root).as_posix()}"
            try:
                data = json.loads(f.read_text())
            except ValueError as exc:
                raise BackportError(f"{where}: not JSON ({exc})") from None
            # a table run before its release's series changed says nothing of what ships
            release = cat.releases.get(data["vllm"])
            if release is None or release.series != data["series"]:
                now = f"series {release.series}" if release and release.series else "no series"
                raise BackportError(
                    f"{where}: ran series {data['series']}, vLLM {data['vllm']} now has {now}; "
                    f"run `{data['command']}` again"
                )
            if "patches" in data and (changed := stale_patches(data["patches"], series_patches(cat, data["series"]))):
                # a GPU table waits for device time: it stays, marked as of the series before
                if gpu:
                    reports.append({**data, "stale": changed})
                    continue
                raise BackportError(
                    f"{where}: series {data['series']} has changed since it ran ({', '.join(changed)}); "
                    f"run `{data['command']}` again"
                )
            reports.append(data)
        return reports

    path = home / "docs" / "UPSTREAM-TESTS.md"
    text = markdown(read(root), read(root / "gpu", gpu=True))
    write_or_diff(path, current_text(path), text, write, "upstream test results are current")


BENCHMARKS = Path("docs/BENCHMARKS.md")


@click.command("bench-table")
@click.option(
    "--write", is_flag=True, help="Rewrite docs/BENCHMARKS.md's A/B table (otherwise show the diff, exit 1 on drift)."
)
@click.pass_obj
def bench_table(home: Path, write: bool) -> None:
    """Regenerate the A/B table in docs/BENCHMARKS.md from records/runs/bench-ab/*.json, linking each
    run's PNG of the same name where there is one."""
    runs = home / bench_table_.RUNS
    results, plots = {}, {}
    for f in sorted(runs.glob("*.json")):
        try:
            results[f.stem] = json.loads(f.read_text())
        except ValueError as exc:
            raise BackportError(f"{f.name}: not JSON ({exc})") from None
        if f.with_suffix(".png").exists():
            plots[f.stem] = f.stem + ".png"
    try:
        table = bench_table_.render(results, plots)
    except (ValueError, KeyError, TypeError) as exc:
        raise BackportError(f"{bench_table_.RUNS}: {exc}") from None
    write_region(home, BENCHMARKS, bench_table_.BEGIN, bench_table_.END, table, write, "A/B table is current")


COMMANDS = (matrix, evidence, bake, upstream_tests_doc, bench_table)
