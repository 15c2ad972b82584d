"""Retention of published images: which superseded `-bp` builds the registry may delete."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import click

from ..catalogue import Catalogue
from ..images import image_targets, prune_plan


@click.command("prune-plan")
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
@click.pass_obj
def prune_plan_cmd(home: Path, versions_file: Path, notes_file: Path, days: int) -> None:
    """Print, as JSON, the image versions retention may delete: superseded `-bp` builds older than
    --days that no release note names. Tags images carry now and untagged versions are kept."""
    # `gh api --paginate` writes one JSON list a page, back to back.
    decoder, text, versions, at = json.JSONDecoder(), versions_file.read_text(), [], 0
    while text[at:].strip():
        at += len(text[at:]) - len(text[at:].lstrip())
        try:
            page, at = decoder.raw_decode(text, at)
        except ValueError as exc:
            raise click.BadParameter(f"{versions_file}: not JSON at character {at}: {exc}") from None
        if not isinstance(page, list):
            raise click.BadParameter(f"{versions_file}: expected JSON lists of versions, one a page")
        versions += page
    current = {tag for t in image_targets(Catalogue(home)) for tag in t["tags"]}
    current = {tag.rsplit(":", 1)[1] for tag in current}
    cutoff = datetime.now(UTC) - timedelta(days=days)
    click.echo(json.dumps(prune_plan(versions, notes_file.read_text(), current, cutoff), indent=1))


COMMANDS = (prune_plan_cmd,)
