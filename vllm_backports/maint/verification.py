"""docs/VERIFICATION.md by release: its entries are written by date, one heading a run
("## DATE · vLLM RELEASES · MACHINE · WHAT"); this generates the index from release to the entries
that name it, newest first. CI runs it in check mode, so an entry whose heading does not say which
releases it ran fails there."""

from __future__ import annotations

import re
from pathlib import Path

import click
from packaging.version import InvalidVersion, Version

from ..catalogue import Catalogue
from ..errors import BackportError
from ..evidence import slug
from .drift import write_region
from .generated import VERIFICATION as PAGE

BEGIN, END = "<!-- by-release:begin -->", "<!-- by-release:end -->"
ENTRY = re.compile(r"^## (\d{4}-\d{2}-\d{2}) · vLLM ([^·]+?) · ([^·]+?) · .+$")
DATED = re.compile(r"^## \d{4}-\d{2}-\d{2}")


def releases_named(text: str, versions: list[str]) -> list[str]:
    """The releases of `versions` that a heading's "0.20.0, 0.26.0", "0.23.0 and 0.25.0" or
    "0.17.0 .. 0.31.0" names (a range: every release between its ends, inclusive)."""
    named: set[str] = set()
    for part in re.split(r", | and ", text.strip()):
        ends = [e.strip() for e in part.split("..")]
        try:
            low, high = Version(ends[0]), Version(ends[-1])
        except InvalidVersion:
            raise ValueError(f"{part!r} is not a release or a range of releases") from None
        if len(ends) > 2 or low > high:
            raise ValueError(f"{part!r} is not a release or a range of releases")
        found = {v for v in versions if low <= Version(v) <= high}
        if len(ends) == 1 and not found:
            raise ValueError(f"{part!r} is not a release in versions.toml")
        named |= found
    return [v for v in versions if v in named]


def entries(page: str, versions: list[str]) -> list[tuple[str, str, str, list[str]]]:
    """(heading, date, machine, releases) of every dated entry, in page order."""
    out = []
    for line in page.splitlines():
        if not DATED.match(line):
            continue
        m = ENTRY.match(line)
        if not m:
            raise BackportError(
                f"{PAGE.as_posix()}: {line!r}: a dated entry's heading is '## DATE · vLLM RELEASES · MACHINE · WHAT'"
            )
        try:
            named = releases_named(m.group(2), versions)
        except ValueError as exc:
            raise BackportError(f"{PAGE.as_posix()}: {line!r}: {exc}") from None
        out.append((line.removeprefix("## "), m.group(1), m.group(3), named))
    return out


def render(cat: Catalogue, page: str) -> str:
    """A row a release with a series: links to the entries naming it, newest first (page order
    within a date), then whose entries hold for it too, where a twin has entries not naming it."""
    found = entries(page, cat.versions)
    lines = ["| vLLM | entries, newest first |", "|---|---|"]
    for v in cat.versions:
        if not cat.releases[v].series:
            continue
        mine = sorted((e for e in found if v in e[3]), key=lambda e: e[1], reverse=True)
        parts = [", ".join(f"[{date} · {machine}](#{slug(head)})" for head, date, machine, _ in mine)] if mine else []
        if twin := next((t for t in cat.twins(v) if any(t in e[3] and v not in e[3] for e in found)), None):
            parts.append(f"the entries of {twin} (the same patched files)")
        cell = "; ".join(parts) or "none: CPU tests only"
        lines.append(f"| {v} | {cell} |")
    return "\n".join(lines)


@click.command("verification-index")
@click.option(
    "--write",
    is_flag=True,
    help="Rewrite docs/VERIFICATION.md's index by release (otherwise show the diff, exit 1 on drift).",
)
@click.pass_obj
def verification_index(home: Path, write: bool) -> None:
    """Regenerate docs/VERIFICATION.md's index from release to its dated entries."""
    text = (home / PAGE).read_text()
    index = render(Catalogue(home), text)  # a bad heading stops here, before anything is written
    write_region(home, PAGE, BEGIN, END, index, write, "index by release is current", text)


COMMANDS = (verification_index,)
