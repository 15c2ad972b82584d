"""Maintainer commands: describe a PyPI release as a versions.toml stanza, port a series to a
release, re-pin backport hashes, and regenerate the support matrix and the GPU evidence page.
Each prints what it would write and writes only with --write.
"""

from __future__ import annotations

import difflib
import re
import sys
import tomllib
from pathlib import Path

import click
import requests

from .catalogue import CHECKOUT, Catalogue, series_entry, series_files, sha256
from .errors import BackportError, EvidenceError
from .patchfile import parse
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

    from .hunks import Mismatch
    from .port import advance

    cat = Catalogue(HOME)
    series = cat.series(series_name)
    target = HOME / "backports" / (name or version)
    if write and target.exists():
        raise BackportError(f"{target} exists: remove it first, or name the new series with --name")
    info = read_release(version, list(series.paths))
    contents = dict(info["files"])  # as the patches before the current one leave them
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
        after = advance(contents, parse(new, patch.name))  # what we write must parse and apply
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


def render_matrix(cat: Catalogue, evidence: dict | None = None) -> str:
    """The support matrix. A release with GPU evidence (evidence.load: release -> summaries) gets
    a status generated from it before its hand-written `verified` text."""
    from .evidence import EVIDENCE_DIR, matrix_status

    evidence = evidence or {}
    for release in evidence:
        if release not in cat.releases:
            raise EvidenceError(
                f"{EVIDENCE_DIR.as_posix()}/{release}: vLLM {release} is not a release in versions.toml"
            )
    rows = [
        "| vLLM | torch / CUDA | series | backports | fixed upstream | known bugs, no backport yet | verification |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in cat.versions:
        r = cat.releases[v]
        verified = f"{matrix_status(evidence[v])}; {r.verified}" if v in evidence else r.verified
        rows.append(
            f"| {v} | {r.torch} / {r.cuda} | {r.series or '-'} | {', '.join(r.backports) or '-'} | "
            f"{', '.join(r.upstream) or '-'} | {', '.join(r.bugs) or '-'} | {verified} |"
        )
    return "\n".join(rows)


@main.command()
@click.option("--write", is_flag=True, help="Rewrite README.md (otherwise show the diff, exit 1 on drift).")
def matrix(write: bool) -> None:
    """Regenerate the support matrix in README.md from versions.toml and docs/evidence/."""
    from .evidence import load

    path = HOME / "README.md"
    text = path.read_text()
    start, end = text.index(MATRIX_BEGIN) + len(MATRIX_BEGIN), text.index(MATRIX_END)
    cat = Catalogue(HOME)
    new = text[:start] + "\n" + render_matrix(cat, load(HOME)) + "\n" + text[end:]
    a, b = new.index(ARCH_BEGIN) + len(ARCH_BEGIN), new.index(ARCH_END)
    new = new[:a] + "\n" + render_arches(cat) + "\n" + new[b:]
    _write_or_diff(path, text, new, write, "support matrix is current")


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
@click.option(
    "--write", is_flag=True, help="Rewrite images/docker-bake.hcl (otherwise show the diff, exit 1 on drift)."
)
def bake(write: bool) -> None:
    """Regenerate images/docker-bake.hcl (release x arch) from versions.toml."""
    from .images import render_bake

    path = HOME / "images" / "docker-bake.hcl"
    _write_or_diff(
        path, path.read_text() if path.exists() else "", render_bake(Catalogue(HOME)), write, "bake file is current"
    )


@main.command("matrix-json")
@click.argument("kind", type=click.Choice(["releases", "images", "smoke", "gdn-builder"]))
def matrix_json(kind: str) -> None:
    """Print a GitHub Actions matrix as JSON (for fromJSON)."""
    import json

    from .images import ci_matrix, gdn_builder_matrix, image_targets, smoke_targets

    cat = Catalogue(HOME)
    if kind == "releases":
        data = ci_matrix(cat)
    elif kind == "gdn-builder":
        data = gdn_builder_matrix(cat)
    elif kind == "images":
        data = {"include": [{k: t[k] for k in ("name", "vllm", "arch", "revision")} for t in image_targets(cat)]}
    else:
        data = {"include": smoke_targets(cat)}
    click.echo(json.dumps(data, separators=(",", ":")))


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
    passes pristine and not patched without an explanation in backports/upstream-tests.toml."""
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


def _write_or_diff(path: Path, old: str, new: str, write: bool, current: str, label: str = "") -> None:
    """Generators print a diff and write only when asked; in check mode drift exits 1 (for CI).
    `label` names the file in messages (default: its name)."""
    label = label or path.name
    if new == old:
        click.echo(f"{label}: {current}")
        return
    click.echo("".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), label, label)))
    if not write:
        sys.exit(1)
    if path.suffix == ".toml":
        try:
            tomllib.loads(new)
        except tomllib.TOMLDecodeError as exc:
            raise BackportError(f"{path.name}: the rewrite would not parse ({exc}); nothing written") from None
    target = path.resolve()  # through a symlink, keeping the file's mode
    if not target.exists():  # a generated file's first write
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, new.encode(), 0o644)
        return
    write_atomic(target, new.encode(), target.stat().st_mode & 0o7777)  # a full disk must not leave half a file


if __name__ == "__main__":
    try:
        main()
    except BackportError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
