"""Base images pinned by digest: every served release's `vllm/vllm-openai` tag read from the
registry, its digest written into versions.toml, and a tag that lacks a platform we build refused."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

import click
import requests

from ..catalogue import Catalogue
from ..images import image_targets
from ..registry import TagInfo, read_tag
from .drift import write_or_diff


@click.command()
@click.option(
    "--write", is_flag=True, help="Pin the digests in versions.toml (otherwise show the diff, exit 1 on drift)."
)
@click.pass_obj
def digests(home: Path, write: bool) -> None:
    """Pin every served release's base image by digest, read from the registry; fail if a base
    image lacks a platform one of our arches builds for."""
    cat = Catalogue(home)
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
    path = home / "versions.toml"
    text = path.read_text()
    # image_digests is optional in versions.toml: a release without the line gets one, first in its
    # table, or it would stay pinned by tag alone while this check said every digest was current
    unpinned = {v for v in pins if "image_digests" not in cat.data["releases"][v]}

    def pin(version: str, line: str) -> str:
        if version in unpinned:
            unpinned.discard(version)
            return pins[version] + line
        if version in pins and re.match(r"\s*image_digests\s*=", line):
            return pins[version]
        return line

    new = _edit_tables(text, r'^\[releases\."([^"]+)"\]', pin)
    for problem in missing:
        click.echo(f"error: {problem}", err=True)
    write_or_diff(path, text, new, write, "image digests are current")
    if missing:
        sys.exit(1)


def _edit_tables(text: str, header: str, edit: Callable[[str, str], str]) -> str:
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


COMMANDS = (digests,)
