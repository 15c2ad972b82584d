"""`maint port` of each series to its own first release, against PyPI's pristine files: every
patch comes back with the hunks it ships (same places, same lines), patches after the first that
touch the same file included (they are numbered against the files the earlier ones leave)."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.maint.watch import classify
from vllm_backports.patchfile import parse
from vllm_backports.pypi import read_release

from .conftest import CATALOGUE, REPO

SERIES = {name: min(CATALOGUE.series(name).releases, key=CATALOGUE.versions.index) for name in CATALOGUE.series_names()}


@pytest.mark.parametrize("name", sorted(SERIES))
def test_port_to_its_own_release_gives_back_the_shipped_hunks(name, tmp_path, monkeypatch):
    home = tmp_path / "repo"
    home.mkdir()
    shutil.copy(REPO / "versions.toml", home / "versions.toml")
    shutil.copytree(REPO / "backports", home / "backports")
    monkeypatch.setattr(maint, "HOME", home)
    result = CliRunner().invoke(maint.main, ["port", name, SERIES[name], "--name", "ported", "--write"])
    assert result.exit_code == 0, result.output
    shipped = CATALOGUE.series(name)
    lines = (home / "backports/ported/series").read_text().splitlines()
    ported = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    assert ported == [p.name for p in shipped.patches]
    for patch in shipped.patches:
        again = parse((home / "backports/ported" / patch.name).read_bytes(), patch.name)
        assert [(f.path, f.hunks) for f in again.files] == [(f.path, f.hunks) for f in patch.files], patch.name


CLAIMS = [(name, v) for name in sorted(SERIES) for v in CATALOGUE.series(name).releases]


@pytest.mark.parametrize("name, version", CLAIMS, ids=[f"{n}-on-{v}" for n, v in CLAIMS])
def test_watch_calls_every_series_clean_on_each_release_it_serves(name, version):
    """What `maint watch` would say of a new release whose files are this one's."""
    files = read_release(version, list(CATALOGUE.series(name).paths)).files
    outcomes = classify(CATALOGUE.series(name), files)
    assert {o["id"]: o["state"] for o in outcomes} == {p.backport_id: "clean" for p in CATALOGUE.series(name).patches}
