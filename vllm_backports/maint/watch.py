"""Watch PyPI for vLLM releases newer than versions.toml, and say of each how the newest series
fits it: clean, upstream, port (the context moved) or drift."""

from __future__ import annotations

import json
from pathlib import Path

import click
import requests
from packaging.version import Version

from ..catalogue import Catalogue, Series
from ..hunks import Mismatch, apply_file
from ..port import relocate
from ..pypi import published, read_release


def classify(series: Series, pristine: dict[str, bytes]) -> list[dict]:
    """Each backport of `series` against a release's pristine files. Patches are checked in
    order, each against the files the ones before it would leave; each file of a patch on its
    own, as one file may carry its change upstream while another's context moved."""
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


@click.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON object on stdout.")
@click.pass_obj
def watch(home: Path, as_json: bool) -> None:
    """Check every vLLM release on PyPI newer than versions.toml against the newest series."""
    cat = Catalogue(home)
    newest = Version(cat.versions[-1])
    new = sorted(
        (v for v in published(requests.Session()) if not Version(v).is_prerelease and Version(v) > newest),
        key=Version,
    )
    # The newest series, even when the newest release needs none.
    series = cat.series(next(cat.releases[v].series for v in reversed(cat.versions) if cat.releases[v].series))
    report: list[dict] = []
    for version in new:
        info = read_release(version, list(series.paths))
        outcomes = classify(series, info.files)
        report.append({"vllm": version, "torch": info.torch, "series_checked": series.name, "backports": outcomes})
    if as_json:
        click.echo(json.dumps({"newest_known": str(newest), "releases": report}, indent=2))
        return
    if not report:
        click.echo(f"no vLLM release on PyPI newer than {newest}")
    for r in report:
        for b in r["backports"]:
            click.echo(f"{r['vllm']}: {b['id']}: {b['state']} {b['detail']}".rstrip())


COMMANDS = (watch,)
