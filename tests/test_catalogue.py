"""Consistency of the real versions.toml: what it says is upstream follows from each backport's
`upstream_in`, and a fix is never listed both as backported and as upstream or a known bug."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import CatalogueError

CAT = Catalogue(Path(__file__).resolve().parent.parent)


def test_upstream_lists_follow_upstream_in():
    for version, release in CAT.releases.items():
        expected = {b.id for b in CAT.backports.values() if b.upstream_in and Version(version) >= Version(b.upstream_in)}
        assert set(release.upstream) == expected, version


def test_each_fix_has_one_status_per_release():
    for version, release in CAT.releases.items():
        lists = [set(release.backports), set(release.upstream), set(release.bugs)]
        assert not (lists[0] & lists[1] or lists[0] & lists[2] or lists[1] & lists[2]), version


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("old, new, message", [
    ('torch = "2.14.0"\n', "", "[releases.\"0.33.0\"] lacks 'torch'"),
    ("cuda = 13\nwheel = \"vllm-0.33.0", "cuda = \"13\"\nwheel = \"vllm-0.33.0", "cuda must be int, not '13'"),
    ('gpus = "sm_80, sm_86 (A100, A5000, RTX 3090)"\n', "", "[arches.ampere] lacks 'gpus'"),
    ('platforms = ["linux/amd64"]\n', 'platforms = ["linux/riscv64"]\n', "no GPU runner for platform 'linux/riscv64'"),
    ('since = "0.20.0"\n', 'since = "0.2o.0"\n', "'0.2o.0' is not a version"),
    ('series = "0.33.0"\nbackports = ["turboquant-spec-decode"]', 'series = "0.33.0"\nbackports = "turboquant-spec-decode"',
     "backports must be a list of strings"),
    ('[series."0.33.0".files]\n', '[series."0.33.0".fils]\n', "unknown key 'fils'"),
], ids=["missing-key", "wrong-type", "arch-missing-key", "platform", "variant-since", "string-not-list", "series-table"])
def test_a_typo_in_versions_toml_is_one_line(tmp_path, old, new, message):
    text = (REPO / "versions.toml").read_text()
    assert old in text, old
    (tmp_path / "versions.toml").write_text(text.replace(old, new, 1))
    with pytest.raises(CatalogueError) as caught:
        Catalogue(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_each_release_lists_exactly_the_backports_its_series_applies(tmp_path):
    for version in CAT.versions:
        CAT.check_release_series(version)
    text = (REPO / "versions.toml").read_text()
    old = 'series = "0.33.0"\nbackports = ["turboquant-spec-decode"]'
    assert old in text
    (tmp_path / "versions.toml").write_text(text.replace(old, 'series = "0.33.0"\nbackports = ["gdn-spec-state"]'))
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    with pytest.raises(CatalogueError, match="lists backports gdn-spec-state, but series 0.33.0 applies turboquant-spec-decode"):
        Catalogue(tmp_path).check_release_series("0.33.0")


def test_a_series_file_listing_a_patch_twice_is_refused(tmp_path):
    shutil.copy(REPO / "versions.toml", tmp_path / "versions.toml")
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    series = tmp_path / "backports/0.33.0/series"
    series.write_text(series.read_text() + "0001-turboquant-spec-decode.patch\n")
    from vllm_backports.maint import repin

    (tmp_path / "versions.toml").write_text(repin((tmp_path / "versions.toml").read_text(), tmp_path / "backports"))
    with pytest.raises(CatalogueError, match="lists 0001-turboquant-spec-decode.patch twice"):
        Catalogue(tmp_path).series("0.33.0")
