"""Render results: rich tables for people, one JSON object for machines."""

from __future__ import annotations

import json
import os
import sys

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

STYLE = {
    "applied": "green",
    "reverted": "green",
    "clean": "cyan",
    "already": "dim",
    "upstream": "blue",
    "drift": "bold red",
    "skipped": "dim",
    "not-applied": "dim",
}


PIPED_WIDTH = 10_000  # a table is as wide as its rows need, up to this


class Reporter:
    def __init__(self, as_json: bool):
        self.as_json = as_json
        self.out = Console(highlight=False, soft_wrap=True)
        if not self.out.is_terminal and "COLUMNS" not in os.environ:
            # piped or redirected: a table row stays one line for grep, however long (rich
            # would otherwise fold it at 80 columns); COLUMNS still sets a width when asked
            self.out = Console(highlight=False, soft_wrap=True, width=PIPED_WIDTH)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)

    def progress(self, message: str) -> None:
        if not self.as_json and sys.stderr.isatty():
            self.err.print(f"[dim]{escape(message)}[/dim]")
        elif not self.as_json:
            self.err.print(escape(message))

    def note(self, message: str) -> None:
        if not self.as_json:
            self.err.print(f"note: {escape(message)}")

    def emit(self, payload: dict, table: Table | None, lines: list[str], before: list[str] | None = None) -> None:
        if self.as_json:
            click.echo(json.dumps(payload, indent=2, sort_keys=True))
            return
        for line in before or []:
            self.out.print(line)
        if table is not None and table.row_count:
            self.out.print(table)
        for line in lines:
            self.out.print(line)

    def error(self, message: str, code: int) -> None:
        message = one_line(message)
        if self.as_json:
            click.echo(json.dumps({"error": message, "exit_code": code}))
        else:
            self.err.print(f"[bold red]error:[/bold red] {escape(message)}")


def one_line(text: str) -> str:
    """`text` with its control characters escaped (a newline as \\n): an error echoes what was
    typed, and stays one line whatever that was."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)


def outcome_table(title: str, outcomes) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False)
    table.add_column("backport")
    table.add_column("patch", style="dim")
    table.add_column("state")
    table.add_column("detail", overflow="fold")
    for o in outcomes:
        table.add_row(escape(o.id), escape(o.patch), f"[{STYLE.get(o.state, '')}]{o.state}[/]", escape(o.detail))
    return table
