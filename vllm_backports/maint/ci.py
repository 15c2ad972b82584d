"""The CI matrices, printed as JSON for GitHub Actions' fromJSON: the releases and GDN builder
jobs of .github/workflows/ci.yml, and the image builds, publishes and smoke runs of
.github/workflows/images.yml, each derived from versions.toml. Nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ..catalogue import Catalogue
from ..images import ci_matrix, gdn_builder_matrix, publish_matrices, smoke_targets


@click.command("matrix-json")
@click.argument("kind", type=click.Choice(["releases", "images", "builds", "smoke", "gdn-builder"]))
@click.pass_obj
def matrix_json(home: Path, kind: str) -> None:
    """Print a GitHub Actions matrix as JSON (for fromJSON)."""
    cat = Catalogue(home)
    if kind == "releases":
        data = ci_matrix(cat)
    elif kind == "gdn-builder":
        data = gdn_builder_matrix(cat)
    elif kind in ("images", "builds"):
        data = publish_matrices(cat)[kind]
    else:
        data = {"include": smoke_targets(cat)}
    click.echo(json.dumps(data, separators=(",", ":")))


COMMANDS = (matrix_json,)
