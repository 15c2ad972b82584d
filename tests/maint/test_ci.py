"""`maint matrix-json`: the CI matrices, printed as one line of JSON for fromJSON, from the
versions.toml of the checkout it is pointed at, with every field the workflows read."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.catalogue import Catalogue
from vllm_backports.images import ci_matrix, gdn_builder_matrix, publish_matrices, smoke_targets

from .conftest import REPO, copy_checkout


def _printed(kind: str) -> str:
    result = CliRunner().invoke(maint.main, ["matrix-json", kind])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize("kind", ["releases", "images", "builds", "smoke", "gdn-builder"])
def test_each_kind_is_one_compact_line_of_its_matrix(kind):
    cat = Catalogue(REPO)
    expected = {
        "releases": ci_matrix(cat),
        "gdn-builder": gdn_builder_matrix(cat),
        "images": publish_matrices(cat)["images"],
        "builds": publish_matrices(cat)["builds"],
        "smoke": {"include": smoke_targets(cat)},
    }[kind]
    out = _printed(kind)
    # one line (GITHUB_OUTPUT takes name=value a line) and no spaces between tokens
    assert out == json.dumps(expected, separators=(",", ":")) + "\n"
    assert json.loads(out)["include"]


def test_the_matrix_is_of_the_checkout_the_commands_are_pointed_at(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    toml.write_text(toml.read_text().replace('torch = "2.14.0"', 'torch = "2.14.1"'))
    rows = {r["vllm"]: r for r in json.loads(_printed("gdn-builder"))["include"]}
    assert rows["0.33.0"]["torch"] == "2.14.1"
    releases = [r["vllm"] for r in json.loads(_printed("releases"))["include"]]
    assert releases == Catalogue(home).versions


def _jobs(workflow: str) -> dict[str, str]:
    """A workflow's jobs, each as its text."""
    text = (REPO / ".github/workflows" / workflow).read_text()
    parts = re.split(r"^  ([a-z-]+):\n", text[text.index("\njobs:\n") :], flags=re.M)[1:]
    return dict(zip(parts[::2], parts[1::2], strict=True))


@pytest.mark.parametrize("workflow, kinds", [
    ("ci.yml", {"releases", "gdn-builder"}),
    ("images.yml", {"builds", "images", "smoke"}),
])
def test_every_matrix_field_a_workflow_reads_is_in_every_row_the_command_prints(workflow, kinds):
    jobs = _jobs(workflow)
    gen = jobs["matrix"]
    # the matrix job prints each kind into a variable, then into the output of that kind's name
    printed = dict(re.findall(r"^ +(\w+)=\$\(python -m vllm_backports\.maint matrix-json ([\w-]+)\)$", gen, re.M))
    outputs = dict(re.findall(r'^ +echo "([\w-]+)=\$(\w+)" >> "\$GITHUB_OUTPUT"$', gen, re.M))
    read = set()
    for name, text in jobs.items():
        m = re.search(r"fromJSON\(needs\.matrix\.outputs\.([\w-]+)\)", text)
        if not m:
            continue
        kind = printed[outputs[m.group(1)]]
        assert m.group(1) == kind, f"{name} reads output {m.group(1)!r}, filled by `matrix-json {kind}`"
        fields = set(re.findall(r"(?<![\w.])matrix\.(\w+)", text))
        rows = json.loads(_printed(kind))["include"]
        assert rows and fields, name
        missing = {f for f in fields for row in rows if f not in row}
        assert not missing, f"{workflow}: {name} reads matrix.{missing} that `matrix-json {kind}` lacks"
        read.add(kind)
    assert read == kinds
