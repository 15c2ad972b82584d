"""lab.sites.without: the --skip options that leave a backport out of a release's series together
with what is written on its lines (the ctl and less-ID control sites), from lab.proofs.WRITTEN_ON,
the one table the lab and the runbook read."""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_runner import run
from lab import sites
from lab.proofs import WRITTEN_ON
from vllm_backports.catalogue import Catalogue

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = Catalogue(ROOT)


def without(release: str, backport: str) -> list[str]:
    return sites.without(release, backport, ROOT)


@pytest.mark.parametrize(
    "release, backport, skips",
    [
        # 0.20: turboquant-prefill-fastpath is written on turboquant-spec-decode; nothing on it
        ("0.20.0", "turboquant-spec-decode", ["turboquant-spec-decode", "turboquant-prefill-fastpath"]),
        ("0.20.0", "turboquant-prefill-fastpath", ["turboquant-prefill-fastpath"]),
        # 0.21 .. 0.23: turboquant-decode-workspace is written on both
        (
            "0.22.1",
            "turboquant-spec-decode",
            ["turboquant-spec-decode", "turboquant-prefill-fastpath", "turboquant-decode-workspace"],
        ),
        ("0.23.0", "turboquant-prefill-fastpath", ["turboquant-prefill-fastpath", "turboquant-decode-workspace"]),
        ("0.23.0", "turboquant-decode-workspace", ["turboquant-decode-workspace"]),
        # 0.24: the release reserves the scratch itself, so the series does not carry it
        ("0.24.0", "turboquant-prefill-fastpath", ["turboquant-prefill-fastpath"]),
        # 0.25 and 0.26: turboquant-kv-shape's hunks in the runner sit below spec-prefill-decode-graph's
        ("0.26.0", "spec-prefill-decode-graph", ["spec-prefill-decode-graph", "turboquant-kv-shape"]),
        ("0.27.0", "spec-prefill-decode-graph", ["spec-prefill-decode-graph"]),
    ],
)
def test_a_backport_leaves_with_what_is_written_on_it(release, backport, skips):
    assert without(release, backport) == [x for s in skips for x in ("--skip", s)]


TQ_RELEASES = [v for v in CATALOGUE.versions if "turboquant-spec-decode" in CATALOGUE.releases[v].backports]


# These two read each release's pristine files from PyPI (check --fetch): release tests
@pytest.mark.network
@pytest.mark.parametrize("release", TQ_RELEASES)
def test_written_on_is_what_apply_py_finds_stacked(release):
    """The table is kept by hand; apply.py derives the same stacking by planning the series. Its
    skips must be accepted there, and each backport the table adds must be one apply.py would
    refuse to keep."""
    for backport in WRITTEN_ON:
        if backport not in CATALOGUE.releases[release].backports:
            continue
        skips = without(release, backport)
        done = run("check", "--vllm", release, "--fetch", *skips)
        assert done.code == 0, (skips, done.err)
        for kept in skips[3::2]:  # every --skip after the backport's own
            fewer = [x for pair in zip(skips[::2], skips[1::2], strict=True) if pair[1] != kept for x in pair]
            refused = run("check", "--vllm", release, "--fetch", *fewer)
            assert refused.code == 2 and f"{kept} applies only on top of" in refused.err, (fewer, refused.err)


LESS = sites.LESS


@pytest.mark.network
@pytest.mark.parametrize(
    "release, backport", [(v, b) for v in CATALOGUE.versions for b in LESS if b in CATALOGUE.releases[v].backports]
)
def test_each_less_site_is_the_series_apply_py_installs_less_that_backport(release, backport):
    # every less-ID site is made: where a later patch's hunks sit below ID's (turboquant-kv-shape
    # below spec-prefill-decode-graph on 0.25 and 0.26), that patch leaves with it
    done = run("check", "--vllm", release, "--fetch", *without(release, backport))
    assert done.code == 0, done.err
