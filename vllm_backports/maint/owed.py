"""docs/VERIFICATION.md's table of the runs still owed on a GPU, generated from each release's
`owed` in versions.toml. CI runs it in check mode."""

from __future__ import annotations

from pathlib import Path

import click

from ..catalogue import SCENARIOS, Catalogue
from ..evidence import load
from .drift import write_region
from .generated import VERIFICATION as PAGE
from .generated import owed

BEGIN, END = "<!-- owed-table:begin -->", "<!-- owed-table:end -->"
NOTHING = "Nothing is owed: every scenario `owed` in `versions.toml` named has run on a GPU."


def rows(cat: Catalogue, evidence: dict) -> list[tuple[tuple[str, ...], str, tuple[str, ...]]]:
    """(releases, series, scenarios) a row, in version order of each row's first release. Releases
    of one series that owe the same scenarios share a row: twins owe what each other owes (the same
    patched bytes), so twins land in one row."""
    shared: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for v in cat.versions:
        if due := owed(cat, v, evidence):
            shared.setdefault((cat.releases[v].series, due), []).append(v)
    return [(tuple(releases), series, due) for (series, due), releases in shared.items()]


def render(cat: Catalogue, evidence: dict | None = None) -> str:
    """The owed releases, then a legend of the scenarios they owe (only those), in SCENARIOS' order."""
    found = rows(cat, evidence or {})
    if not found:
        return NOTHING
    lines = ["| vLLM | series | owed |", "|---|---|---|"]
    for releases, series, due in found:
        lines.append(f"| {', '.join(releases)} | {series or '-'} | {', '.join(f'`{n}`' for n in due)} |")
    named = {n for _, _, due in found for n in due}
    lines += ["", "| scenario | what it runs |", "|---|---|"]
    lines += [f"| `{n}` | {SCENARIOS[n]} |" for n in SCENARIOS if n in named]
    return "\n".join(lines)


@click.command("owed-table")
@click.option(
    "--write",
    is_flag=True,
    help="Rewrite docs/VERIFICATION.md's owed table (otherwise show the diff, exit 1 on drift).",
)
@click.pass_obj
def owed_table(home: Path, write: bool) -> None:
    """Regenerate the table of runs still owed in docs/VERIFICATION.md from `owed` in versions.toml
    (with docs/evidence/: a release without evidence owes what the twin whose evidence covers it
    owes, as in the support matrix)."""
    table = render(Catalogue(home), load(home))  # a bad file stops here, before anything is written
    write_region(home, PAGE, BEGIN, END, table, write, "owed table is current")


COMMANDS = (owed_table,)
