"""Consistency of the real versions.toml: what it says is upstream follows from each backport's
`upstream_in`, and a fix is never listed both as backported and as upstream or a known bug."""

from __future__ import annotations

from pathlib import Path

from packaging.version import Version

from vllm_backports.catalogue import Catalogue

CAT = Catalogue(Path(__file__).resolve().parent.parent)


def test_upstream_lists_follow_upstream_in():
    for version, release in CAT.releases.items():
        expected = {b.id for b in CAT.backports.values() if b.upstream_in and Version(version) >= Version(b.upstream_in)}
        assert set(release.upstream) == expected, version


def test_each_fix_has_one_status_per_release():
    for version, release in CAT.releases.items():
        lists = [set(release.backports), set(release.upstream), set(release.bugs)]
        assert not (lists[0] & lists[1] or lists[0] & lists[2] or lists[1] & lists[2]), version
