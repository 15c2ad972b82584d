"""Maintainer commands: describe a PyPI release as a versions.toml stanza, port a series to a
release, re-pin backport hashes, and regenerate the support matrix and the GPU evidence page.
Each prints what it would write and writes only with --write.
"""

from __future__ import annotations

import datetime
import difflib
import re
import sys
import tomllib
from pathlib import Path

import click
import requests

from .catalogue import CHECKOUT, Catalogue, series_entry, series_files, series_order
from .digest import sha256
from .errors import BackportError, EvidenceError
from .patchfile import applied_upstream_in, backport_id_of, check_header, header_of, parse
from .port import port as port_patch
from .pypi import INDEX, WheelReader, release_files
from .record import parse_record
from .state import write_atomic

# Maintainers edit and regenerate the checkout's files, never an installed wheel's copy of them.
HOME = CHECKOUT


def _wheel_for(session: requests.Session, version: str):
    """The x86_64 wheel pip would pick (highest build tag); python files are arch-independent."""
    wheels = [w for w in release_files(session, version) if w.filename.endswith("x86_64.whl")]
    if not wheels:
        raise click.ClickException(f"vLLM {version} has no x86_64 wheel on PyPI")

    def build(name: str) -> int:
        parts = name[:-4].split("-")
        return int(parts[2]) if len(parts) == 6 else -1

    return max(wheels, key=lambda w: build(w.filename))


def read_release(version: str, paths: list[str]) -> dict:
    session = requests.Session()
    wheel = _wheel_for(session, version)
    reader = WheelReader(session, wheel, version)
    record = reader.read(f"{reader.dist_info}/RECORD")
    metadata = reader.read(f"{reader.dist_info}/METADATA").decode()
    hashes = parse_record(record)
    torch = re.search(r"^Requires-Dist: torch==([\w.]+)", metadata, re.M)
    files = {p: reader.read(p) for p in paths if p in hashes}
    return {
        "wheel": wheel,
        "record_sha256": sha256(record),
        "torch": torch.group(1) if torch else "",
        "hashes": hashes,
        "files": files,
    }


@click.group()
def main() -> None:
    """Maintainer tools for the backport catalogue."""


@main.command()
@click.argument("version")
@click.option("--series", "series_name", default="", help="Series that serves the release.")
def describe(version: str, series_name: str) -> None:
    """Print a [releases."VERSION"] stanza read off the PyPI wheel."""
    cat = Catalogue(HOME)
    paths = list(cat.series(series_name).paths) if series_name else []
    info = read_release(version, paths)
    major = int(info["torch"].split(".")[1]) if info["torch"] else 0
    lines = [
        f'[releases."{version}"]',
        f'torch = "{info["torch"]}"',
        f"cuda = {12 if major < 11 else 13}",
        f'wheel = "{info["wheel"].filename}"',
        f'wheel_sha256 = "{info["wheel"].sha256}"',
        f'record_sha256 = "{info["record_sha256"]}"',
        f'series = "{series_name}"',
        f'image = "vllm/vllm-openai:v{version}"',
        "image_digests = {}  # `maint digests --write` pins them",
        f'[releases."{version}".files]',
        *(f'"{p}" = "{info["hashes"][p]}"' for p in paths if p in info["hashes"]),
    ]
    click.echo("\n".join(lines))


@main.command()
@click.argument("series_name")
@click.argument("version")
@click.option("--name", default="", help="Name of the new series (default: VERSION).")
@click.option("--write", is_flag=True, help="Write backports/NAME/ (otherwise print the diffs).")
def port(series_name: str, version: str, name: str, write: bool) -> None:
    """Carry SERIES_NAME to VERSION: relocate hunks, regenerate exact diffs, list hand work.
    Backports upstream by VERSION (their upstream_in) are left out of the new series."""
    from packaging.version import Version

    from .hunks import Mismatch, apply_patches

    cat = Catalogue(HOME)
    series = cat.series(series_name)
    target = HOME / "backports" / (name or version)
    if write and target.exists():
        raise BackportError(f"{target} exists: remove it first, or name the new series with --name")
    info = read_release(version, list(series.paths))
    contents: dict[str, bytes | None] = dict(info["files"])  # as the patches before the current one leave them
    out: dict[str, bytes] = {}
    left_out: set[str] = set()
    failed = False
    for patch in series.patches:
        upstream_in = cat.backports[patch.backport_id].upstream_in
        if upstream_in and Version(version) >= Version(upstream_in):
            click.echo(f"left out: {patch.name}: {patch.backport_id} is upstream from {upstream_in}", err=True)
            left_out.add(patch.name)
            continue
        data = (series.root / patch.name).read_bytes()
        new, problems = port_patch(data, patch, contents)
        for p in problems:
            failed = True
            click.echo(f"hand work: {patch.name}: {p.path} hunk #{p.hunk}: {p.reason}", err=True)
        if new is None:
            continue
        after = apply_patches(contents, parse(new, patch.name).files)  # what we write must parse and apply
        if isinstance(after, Mismatch):
            failed = True
            click.echo(
                f"hand work: {patch.name}: the ported patch does not apply after the ones before it: {after}", err=True
            )
            continue
        contents = after
        out[patch.name] = new
    if failed:
        sys.exit(1)
    kept = [
        line
        for line in (series.root / "series").read_text().splitlines(keepends=True)
        if series_entry(line) not in left_out
    ]
    out = {"series": "".join(kept).encode(), **out}
    for fname, data in out.items():
        if write:
            target.mkdir(parents=True, exist_ok=True)
            (target / fname).write_bytes(data)
        else:
            click.echo(f"== {target.name}/{fname}\n{data.decode()}")
    click.echo(f"ported {series_name} -> {target.name}: {len(out) - 1} patches" + ("" if write else " (dry run)"))


def lint_headers(cat: Catalogue, today: datetime.date) -> tuple[int, list[str]]:
    """(patches read, problems): every series' patch header checked for content and against its
    backport in versions.toml, each problem naming its file. Files are read as they are, not
    through their pins (`maint rehash` checks those), so one run reports everything."""
    problems: list[str] = []
    count = 0
    for name in cat.series_names():
        folder = cat.home / "backports" / name
        try:
            order = series_order((folder / "series").read_bytes())
        except FileNotFoundError:
            problems.append(f"backports/{name}: no series file")
            continue
        for fname in order:
            where = f"backports/{name}/{fname}"
            count += 1
            try:
                bid = backport_id_of(fname)
                header = header_of((folder / fname).read_bytes(), fname)
            except FileNotFoundError:
                problems.append(f"{where}: missing")
                continue
            except BackportError as exc:
                problems.append(f"{where}: {str(exc).removeprefix(fname + ': ')}")
                continue
            found = check_header(header, today)
            backport = cat.backports.get(bid)
            if backport is None:
                found.append(f"backport {bid!r} is not in versions.toml")
            else:
                found += _against_catalogue(header, backport)
            problems += [f"{where}: {p}" for p in found]
    return count, problems


def _against_catalogue(header: dict[str, str], backport) -> list[str]:
    """Where a header and versions.toml disagree: upstream_in is the release that first carries
    the fix, Applied-Upstream must name that release (or say no when there is none), and Bug the
    same bug."""
    found = []
    applied = header.get("Applied-Upstream")
    if applied is not None:
        named = applied_upstream_in(header)
        if backport.upstream_in and named != backport.upstream_in:
            found.append(
                f"Applied-Upstream {applied!r} disagrees with versions.toml: {backport.id} "
                f"is upstream in {backport.upstream_in}"
            )
        elif not backport.upstream_in and applied != "no":
            found.append(
                f"Applied-Upstream {applied!r} disagrees with versions.toml: {backport.id} has no upstream_in "
                "(say no, or give the backport upstream_in)"
            )
    if "Bug" in header and header["Bug"] != backport.bug:
        found.append(f"Bug {header['Bug']!r} is not versions.toml's {backport.bug!r}")
    return found


@main.command("lint-headers")
def lint_headers_command() -> None:
    """Check every series' DEP-3 headers: Description, Origin, Forwarded, Last-Update, and
    Applied-Upstream and Bug against versions.toml. Lists every problem; exit 1 on any."""
    count, problems = lint_headers(Catalogue(HOME), datetime.datetime.now(datetime.UTC).date())
    for problem in problems:
        click.echo(problem, err=True)
    if problems:
        click.echo(f"{len(problems)} problems in DEP-3 headers", err=True)
        sys.exit(1)
    click.echo(f"{count} patches: DEP-3 headers are consistent with versions.toml")


@main.command()
@click.option("--write", is_flag=True, help="Rewrite versions.toml (otherwise show the diff, exit 1 on drift).")
def rehash(write: bool) -> None:
    """Pin the sha256 of every file in each series' directory in versions.toml: re-pin edited
    ones, add new ones, drop deleted ones (tables `[series."S".files]`)."""
    path = HOME / "versions.toml"
    text = path.read_text()
    _write_or_diff(path, text, repin(text, HOME / "backports"), write, "backport hashes are current")


PIN = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_.-]+))\s*=\s*(?:"[^"]*"|'[^']*')\s*(#.*)?$""")


def repin(text: str, backports: Path) -> str:
    out: list[str] = []
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        out.append(lines[i])
        m = re.match(r'^\[series\."([^"]+)"\.files\]', lines[i])
        i += 1
        if not m:
            continue
        folder = backports / m.group(1)
        on_disk = series_files(folder)
        body: list[str] = []
        while i < len(lines) and not lines[i].startswith("["):
            body.append(lines[i])
            i += 1
        pinned, kept = set(), []
        for line in body:
            pm = PIN.match(line.rstrip("\n"))
            if not pm:
                kept.append(line)  # blank lines and comments stay
                continue
            name = pm.group(1) or pm.group(2) or pm.group(3)
            if name not in on_disk:
                continue  # the file is gone: so is its pin
            pinned.add(name)
            comment = f"  {pm.group(4)}" if pm.group(4) else ""
            kept.append(f'"{name}" = "{sha256((folder / name).read_bytes())}"{comment}\n')
        # New files go after the last pin, before the blank lines that end the table.
        tail = len(kept)
        while tail and not kept[tail - 1].strip():
            tail -= 1
        added = [f'"{name}" = "{sha256((folder / name).read_bytes())}"\n' for name in on_disk if name not in pinned]
        if added and tail and not kept[tail - 1].endswith("\n"):
            kept[tail - 1] += "\n"  # the table ended the file without a newline
        out.extend(kept[:tail] + added + kept[tail:])
    return "".join(out)


def _edit_tables(text: str, header: str, edit) -> str:
    """versions.toml with `edit(key, line)` applied to every line of each table whose header
    matches `header` (its one group is the key); other lines, headers included, unchanged."""
    out, key = [], None
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            m = re.match(header, line)
            key = m.group(1) if m else None
        elif key is not None:
            line = edit(key, line)
        out.append(line)
    return "".join(out)


MATRIX_BEGIN, MATRIX_END = "<!-- support-matrix:begin -->", "<!-- support-matrix:end -->"
# The long verification notes live on their own generated page, so the README's matrix stays a
# table a reader takes in at a glance.
NOTES = Path("docs/SUPPORT.md")


def _known_evidence(cat: Catalogue, evidence: dict) -> None:
    from .evidence import EVIDENCE_DIR

    for release in evidence:
        if release not in cat.releases:
            raise EvidenceError(
                f"{EVIDENCE_DIR.as_posix()}/{release}: vLLM {release} is not a release in versions.toml"
            )


def status(cat: Catalogue, version: str, evidence: dict) -> str:
    """A release's short status for the README: its GPU evidence counted, else whether it ran on
    a GPU at all, with a link to its notes."""
    from .evidence import heading, matrix_status, slug

    r = cat.releases[version]
    notes = f"[notes]({NOTES.as_posix()}#{slug(heading(version))})"
    if version in evidence:
        return f"{matrix_status(evidence[version])}; {notes}"
    if not r.series:
        return "-"
    return f"{'ran on a GPU' if r.ran_on_gpu else 'CPU-tested'}; {notes}"


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
            f"{', '.join(r.upstream) or '-'} | {', '.join(r.bugs) or '-'} | {status(cat, v, evidence)} |"
        )
    return "\n".join(rows)


def render_notes(cat: Catalogue, evidence: dict | None = None) -> str:
    """docs/SUPPORT.md: how far each release is proven, the hand-written `verified` text after a
    status generated from its GPU evidence."""
    from .evidence import PAGE, heading, matrix_status

    evidence = evidence or {}
    _known_evidence(cat, evidence)
    page = PAGE.relative_to(NOTES.parent).as_posix()  # links resolve from this page's folder
    lines = [
        "# Support notes",
        "",
        "Generated from `versions.toml` and `docs/evidence/` by `python -m vllm_backports.maint matrix --write`",
        '(CI fails on drift); the README\'s support matrix links here. "CPU-tested" means: the series',
        "applies exactly to the release's real pristine files from PyPI, the patched files compile, a",
        "second run changes nothing, and revert restores the RECORD hashes. Where a release has GPU",
        f"evidence, its notes start with counts generated from it, listed run by run on [its page]({page}).",
        "",
    ]
    for v in cat.versions:
        r = cat.releases[v]
        verified = r.verified
        if v in evidence:
            verified = f"{matrix_status(evidence[v], page)}; {verified}"
        lines += [f"## {heading(v)}", "", f"Series {r.series or '-'}, torch {r.torch}, CUDA {r.cuda}.", ""]
        lines += [verified, ""]
    return "\n".join(lines)


@main.command()
@click.option(
    "--write", is_flag=True, help="Rewrite README.md and docs/SUPPORT.md (otherwise show the diff, exit 1 on drift)."
)
def matrix(write: bool) -> None:
    """Regenerate the support matrix in README.md and the notes in docs/SUPPORT.md from
    versions.toml and docs/evidence/."""
    from .evidence import load

    path = HOME / "README.md"
    text = path.read_text()
    start, end = text.index(MATRIX_BEGIN) + len(MATRIX_BEGIN), text.index(MATRIX_END)
    cat = Catalogue(HOME)
    evidence = load(HOME)  # a bad file stops here, before anything is written
    new = text[:start] + "\n" + render_matrix(cat, evidence) + "\n" + text[end:]
    a, b = new.index(ARCH_BEGIN) + len(ARCH_BEGIN), new.index(ARCH_END)
    new = new[:a] + "\n" + render_arches(cat) + "\n" + new[b:]
    notes_path = HOME / NOTES
    notes = render_notes(cat, evidence)
    old_notes = notes_path.read_text() if notes_path.exists() else ""
    # Both files are checked before either check exits, so one run shows all the drift.
    drift = _write_or_diff(path, text, new, write, "support matrix is current", exit_on_drift=False)
    drift |= _write_or_diff(
        notes_path, old_notes, notes, write, "support notes are current", NOTES.as_posix(), exit_on_drift=False
    )
    if drift and not write:
        sys.exit(1)


@main.command()
@click.option(
    "--write", is_flag=True, help="Rewrite docs/evidence/README.md (otherwise show the diff, exit 1 on drift)."
)
def evidence(write: bool) -> None:
    """Regenerate docs/evidence/README.md from the verify JSON files in docs/evidence/<release>/."""
    from .evidence import PAGE, load, render_page

    path = HOME / PAGE
    page = render_page(load(HOME))  # a bad file stops here, before anything is written
    _write_or_diff(
        path, path.read_text() if path.exists() else "", page, write, "evidence page is current", PAGE.as_posix()
    )


ARCH_BEGIN, ARCH_END = "<!-- arch-table:begin -->", "<!-- arch-table:end -->"


def render_arches(cat: Catalogue) -> str:
    rows = ["| arch | platforms | GPUs | GDN prefill default | why it differs |", "|---|---|---|---|---|"]
    for a in cat.arches.values():
        rows.append(f"| {a.name} | {', '.join(a.platforms)} | {a.gpus} | {a.gdn_prefill_backend} | {a.why} |")
    return "\n".join(rows)


@main.command()
@click.option("--write", is_flag=True, help="Rewrite images/bake-data.json (otherwise show the diff, exit 1 on drift).")
def bake(write: bool) -> None:
    """Regenerate images/bake-data.json, the releases, variants and arches images/docker-bake.hcl
    crosses, from versions.toml."""
    from .images import BAKE_DATA, render_bake_data

    path = HOME / BAKE_DATA
    new = render_bake_data(Catalogue(HOME))
    _write_or_diff(path, path.read_text() if path.exists() else "", new, write, "bake data is current", BAKE_DATA)


@main.command("matrix-json")
@click.argument("kind", type=click.Choice(["releases", "images", "builds", "smoke", "gdn-builder"]))
def matrix_json(kind: str) -> None:
    """Print a GitHub Actions matrix as JSON (for fromJSON)."""
    import json

    from .images import ci_matrix, gdn_builder_matrix, publish_matrices, smoke_targets

    cat = Catalogue(HOME)
    if kind == "releases":
        data = ci_matrix(cat)
    elif kind == "gdn-builder":
        data = gdn_builder_matrix(cat)
    elif kind in ("images", "builds"):
        data = publish_matrices(cat)[kind]
    else:
        data = {"include": smoke_targets(cat)}
    click.echo(json.dumps(data, separators=(",", ":")))


@main.command("prune-plan")
@click.option(
    "--versions",
    "versions_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="The registry's package versions (GitHub's API, one JSON list or several).",
)
@click.option(
    "--notes",
    "notes_file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Every release note's text.",
)
@click.option(
    "--days", type=click.IntRange(min=1), default=180, show_default=True, help="Keep versions younger than this."
)
def prune_plan_cmd(versions_file: Path, notes_file: Path, days: int) -> None:
    """Print, as JSON, the image versions retention may delete: superseded `-bp` builds older than
    --days that no release note names. Tags images carry now and untagged versions are kept."""
    import json
    from datetime import UTC, datetime, timedelta

    from .images import image_targets, prune_plan

    # `gh api --paginate` writes one JSON list a page, back to back.
    decoder, text, versions, at = json.JSONDecoder(), versions_file.read_text(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        page, at = decoder.raw_decode(text, at)
        versions += page
    current = {tag for t in image_targets(Catalogue(HOME)) for tag in t["tags"]}
    current = {tag.rsplit(":", 1)[1] for tag in current}
    cutoff = datetime.now(UTC) - timedelta(days=days)
    click.echo(json.dumps(prune_plan(versions, notes_file.read_text(), current, cutoff), indent=1))


def classify(series, pristine: dict[str, bytes]) -> list[dict]:
    """Each backport of `series` against a release's pristine files: clean, upstream, port (the
    context moved) or drift. Patches are checked in order, each against the files the ones before
    it would leave."""
    from .hunks import Mismatch, apply_file
    from .port import relocate

    files: dict[str, bytes | None] = dict(pristine)
    outcomes = []
    for patch in series.patches:
        state, detail = "clean", ""
        for fpatch in patch.files:
            content = files.get(fpatch.path)
            if content is None and not fpatch.creates:
                state, detail = "drift", f"{fpatch.path} is gone"
                break
            forward = apply_file(content, fpatch)
            if not isinstance(forward, Mismatch):
                files[fpatch.path] = forward
                continue
            if not isinstance(apply_file(content, fpatch.reversed()), Mismatch):
                state, detail = "upstream", f"{fpatch.path} already carries the change"
                continue
            moved, problems = relocate(content or b"", fpatch)
            carried = None if moved is None else apply_file(content, moved)
            if carried is not None and not isinstance(carried, Mismatch):
                files[fpatch.path] = carried
                state, detail = "port", f"{fpatch.path}: context moved; `maint port` carries it"
            else:
                state, detail = "drift", "; ".join(f"{p.path} hunk #{p.hunk}: {p.reason}" for p in problems)
                break
        outcomes.append({"id": patch.backport_id, "state": state, "detail": detail})
    return outcomes


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
def watch(as_json: bool) -> None:
    """Check every vLLM release on PyPI newer than versions.toml against the newest series."""
    import json

    from packaging.version import Version

    cat = Catalogue(HOME)
    session = requests.Session()
    response = session.get(INDEX, timeout=30)
    response.raise_for_status()
    newest = Version(cat.versions[-1])
    new = sorted(
        (
            v
            for v, files in response.json()["releases"].items()
            if files and not Version(v).is_prerelease and Version(v) > newest
        ),
        key=Version,
    )
    # The newest series, even when the newest release needs none.
    series = cat.series(next(cat.releases[v].series for v in reversed(cat.versions) if cat.releases[v].series))
    report = []
    for version in new:
        info = read_release(version, list(series.paths))
        outcomes = classify(series, info["files"])
        report.append({"vllm": version, "torch": info["torch"], "series_checked": series.name, "backports": outcomes})
    if as_json:
        click.echo(json.dumps({"newest_known": str(newest), "releases": report}, indent=2))
        return
    if not report:
        click.echo(f"no vLLM release on PyPI newer than {newest}")
    for r in report:
        for b in r["backports"]:
            click.echo(f"{r['vllm']}: {b['id']}: {b['state']} {b['detail']}".rstrip())


@main.command()
@click.option(
    "--write", is_flag=True, help="Pin the digests in versions.toml (otherwise show the diff, exit 1 on drift)."
)
def digests(write: bool) -> None:
    """Pin every served release's base image by digest, read from the registry; fail if a base
    image lacks a platform one of our arches builds for."""
    from .images import image_targets
    from .registry import TagInfo, read_tag

    cat = Catalogue(HOME)
    session = requests.Session()
    read: dict[str, TagInfo] = {}
    by_release: dict[str, dict[str, str]] = {}
    missing = []
    for target in image_targets(cat):
        tag = target["base_tag"]
        if tag not in read:
            read[tag] = read_tag(session, tag)
        lacks = [p for p in target["platforms"] if p not in read[tag].platforms]
        if lacks:
            missing.append(f"{tag} has no {', '.join(lacks)} image ({target['name']} builds it)")
        by_release.setdefault(target["vllm"], {})[target["digest_key"]] = read[tag].digest
    pins = {
        version: "image_digests = { " + ", ".join(f'"{k}" = "{d}"' for k, d in keys.items()) + " }\n"
        for version, keys in by_release.items()
    }
    path = HOME / "versions.toml"
    text = path.read_text()
    new = _edit_tables(
        text,
        r'^\[releases\."([^"]+)"\]',
        lambda version, line: pins[version] if version in pins and line.startswith("image_digests =") else line,
    )
    for problem in missing:
        click.echo(f"error: {problem}", err=True)
    _write_or_diff(path, text, new, write, "image digests are current")
    if missing:
        sys.exit(1)


@main.command("upstream-tests")
@click.argument("version")
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON report here.")
@click.option("--timeout", default=1800, show_default=True, help="Seconds each side's pytest may run.")
@click.option("--keep", is_flag=True, help="Keep the work directory (tests, patched copy, raw results).")
def upstream_tests(version: str, as_json: bool, out: Path | None, timeout: int, keep: bool) -> None:
    """Run VERSION's own tests that exercise the files its series patches (from its PyPI source
    archive) against the installed release, pristine and patched, on the CPU. Exit 1 when a test
    passes pristine and not patched without an explanation in docs/upstream-tests/explained.toml."""
    import json
    import platform
    import shutil
    import tempfile
    from datetime import UTC, datetime

    from rich.console import Console

    from . import upstream_tests as ut

    work = Path(tempfile.mkdtemp(prefix=f"vllm-upstream-tests-{version}-"))
    try:
        data = ut.run(version, HOME, work, timeout=timeout)
    finally:
        if keep:
            click.echo(f"work directory kept: {work}", err=True)
        else:
            shutil.rmtree(work, ignore_errors=True)
    data["command"] = f"python -m vllm_backports.maint upstream-tests {version}"
    data["host"] = f"{platform.system()} {platform.machine()}"
    data["date"] = datetime.now(UTC).date().isoformat()
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        console = Console(highlight=False, soft_wrap=True)
        console.print(ut.table(data))
        for line in ut.summary_lines(data):
            console.print(line, markup=False)
    if data["verdict"] != "ok":
        sys.exit(1)


@main.command("upstream-tests-doc")
@click.option(
    "--write", is_flag=True, help="Rewrite docs/UPSTREAM-TESTS.md (otherwise show the diff, exit 1 on drift)."
)
def upstream_tests_doc(write: bool) -> None:
    """Regenerate docs/UPSTREAM-TESTS.md from docs/upstream-tests/<release>.json."""
    import json

    from packaging.version import Version

    from .upstream_tests import markdown

    files = sorted((HOME / "docs" / "upstream-tests").glob("*.json"), key=lambda p: Version(p.stem))
    reports = []
    for f in files:
        try:
            reports.append(json.loads(f.read_text()))
        except ValueError as exc:
            raise BackportError(f"{f.name}: not JSON ({exc})") from None
    path = HOME / "docs" / "UPSTREAM-TESTS.md"
    _write_or_diff(
        path, path.read_text() if path.exists() else "", markdown(reports), write, "upstream test results are current"
    )


def _write_or_diff(
    path: Path, old: str, new: str, write: bool, current: str, label: str = "", exit_on_drift: bool = True
) -> bool:
    """Generators print a diff and write only when asked; in check mode drift exits 1 (for CI), or
    is returned when `exit_on_drift` is off. `label` names the file in messages (default: its name)."""
    label = label or path.name
    if new == old:
        click.echo(f"{label}: {current}")
        return False
    click.echo("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), label, label)))
    if not write:
        if exit_on_drift:
            sys.exit(1)
        return True
    if path.suffix == ".toml":
        try:
            tomllib.loads(new)
        except tomllib.TOMLDecodeError as exc:
            raise BackportError(f"{path.name}: the rewrite would not parse ({exc}); nothing written") from None
    target = path.resolve()  # through a symlink, keeping the file's mode
    if not target.exists():  # a generated file's first write
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, new.encode(), 0o644)
        return True
    write_atomic(target, new.encode(), target.stat().st_mode & 0o7777)  # a full disk must not leave half a file
    return True


if __name__ == "__main__":
    try:
        main()
    except BackportError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
