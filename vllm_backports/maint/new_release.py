"""Adding a vLLM release: its versions.toml stanza read off PyPI (`describe`), and a series
carried over to it when its files moved (`port`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click
from packaging.version import Version

from ..catalogue import Catalogue, series_entry
from ..errors import BackportError
from ..hunks import Mismatch, apply_patches
from ..patchfile import parse
from ..port import port as port_patch
from ..pypi import read_release


@click.command()
@click.argument("version")
@click.option("--series", "series_name", default="", help="Series that serves the release.")
@click.pass_obj
def describe(home: Path, version: str, series_name: str) -> None:
    """Print a [releases."VERSION"] stanza read off the PyPI wheel."""
    cat = Catalogue(home)
    paths = list(cat.series(series_name).paths) if series_name else []
    info = read_release(version, paths)
    major = int(info.torch.split(".")[1]) if info.torch else 0
    lines = [
        f'[releases."{version}"]',
        f'torch = "{info.torch}"',
        f"cuda = {12 if major < 11 else 13}",
        f'wheel = "{info.wheel.filename}"',
        f'wheel_sha256 = "{info.wheel.sha256}"',
        f'record_sha256 = "{info.record_sha256}"',
        f'series = "{series_name}"',
        "image_digests = {}  # `maint digests --write` pins them",
        f'[releases."{version}".files]',
        *(f'"{p}" = "{info.hashes[p]}"' for p in paths if p in info.hashes),
    ]
    click.echo("\n".join(lines))


@click.command()
@click.argument("series_name")
@click.argument("version")
@click.option("--name", default="", help="Name of the new series (default: VERSION).")
@click.option("--write", is_flag=True, help="Write backports/NAME/ (otherwise print the diffs).")
@click.pass_obj
def port(home: Path, series_name: str, version: str, name: str, write: bool) -> None:
    """Carry SERIES_NAME to VERSION: relocate hunks, regenerate exact diffs, list hand work.
    Backports upstream by VERSION (their upstream_in) are left out of the new series."""
    cat = Catalogue(home)
    series = cat.series(series_name)
    target = home / "backports" / (name or version)
    if write and target.exists():
        raise BackportError(f"{target} exists: remove it first, or name the new series with --name")
    info = read_release(version, list(series.paths))
    contents: dict[str, bytes | None] = dict(info.files)  # as the patches before the current one leave them
    out: dict[str, bytes] = {}
    left_out: set[str] = set()
    failed = False
    for patch in series.patches:
        upstream_in = cat.backports[patch.backport_id].upstream_in
        if upstream_in and Version(version) >= Version(upstream_in):
            click.echo(f"left out: {patch.name}: {patch.backport_id} is upstream from {upstream_in}", err=True)
            left_out.add(patch.name)
            continue
        data = cat.series_file(series_name, patch.name)
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
        for line in cat.series_file(series_name, "series").decode().splitlines(keepends=True)
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


COMMANDS = (describe, port)
