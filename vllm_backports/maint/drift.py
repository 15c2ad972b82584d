"""How every generator ends: print the drift as a diff, and write only when asked (--write). In
check mode, which CI runs, drift exits 1."""

from __future__ import annotations

import difflib
import sys
import tomllib
from pathlib import Path

import click

from ..errors import BackportError
from ..state import write_atomic


def write_or_diff(
    path: Path, old: str, new: str, write: bool, current: str, label: str = "", exit_on_drift: bool = True
) -> bool:
    """Whether `path` drifted from `new`; the drift is printed, and written with `write`. In check
    mode drift exits 1, or is returned when `exit_on_drift` is off. `label` names the file in
    messages (default: its name)."""
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


def current_text(path: Path) -> str:
    """A generated file's text, "" before its first write."""
    return path.read_text() if path.exists() else ""


def write_region(
    home: Path, page: Path, begin: str, end: str, body: str, write: bool, current: str, text: str | None = None
) -> None:
    """write_or_diff of the page `page` (under `home`) with its `begin` ... `end` region replaced by
    `body`; `text`, the page as read already, where the body was rendered from it."""
    path = home / page
    text = path.read_text() if text is None else text
    write_or_diff(path, text, splice(text, begin, end, body, page.as_posix()), write, current, page.as_posix())


def splice(text: str, begin: str, end: str, body: str, label: str) -> str:
    """`text` with what lies between the markers `begin` and `end` replaced by `body`, on lines of
    its own. A page without both markers, in that order, is an error naming `label`: the generated
    part has nowhere to go."""
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise BackportError(f"{label}: no {begin} ... {end} region to generate into")
    return text[: start + len(begin)] + "\n" + body + "\n" + text[stop:]
