"""The sha256 pins of every backport file in versions.toml (`[series."S".files]`): re-pin edited
files, add new ones, drop deleted ones; comments and the table's layout stay."""

from __future__ import annotations

import re
from pathlib import Path

import click

from ..catalogue import series_files
from ..digest import sha256
from .drift import write_or_diff


@click.command()
@click.option("--write", is_flag=True, help="Rewrite versions.toml (otherwise show the diff, exit 1 on drift).")
@click.pass_obj
def rehash(home: Path, write: bool) -> None:
    """Pin the sha256 of every file in each series' directory in versions.toml: re-pin edited
    ones, add new ones, drop deleted ones (tables `[series."S".files]`)."""
    path = home / "versions.toml"
    text = path.read_text()
    write_or_diff(path, text, repin(text, home / "backports"), write, "backport hashes are current")


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


COMMANDS = (rehash,)
