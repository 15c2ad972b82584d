"""docs/VERIFICATION.md's table of runs still owed, generated from `owed` in versions.toml: the
checkout's table is current, twins share a row, check mode fails on drift and --write fixes it."""

from __future__ import annotations

import re
import shutil

from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.catalogue import SCENARIOS, Catalogue
from vllm_backports.evidence import load
from vllm_backports.maint import generated, owed

from .conftest import REPO, copy_checkout


def _region(text: str) -> str:
    return text[text.index(owed.BEGIN) + len(owed.BEGIN) : text.index(owed.END)].strip("\n")


def _rows(table: str) -> dict[str, tuple[str, list[str]]]:
    """The first table's rows: releases -> (series, scenarios)."""
    out = {}
    for line in table.split("\n\n")[0].splitlines()[2:]:
        releases, series, names = line.strip("|").split(" | ")
        out[releases.strip()] = (series, re.findall(r"`([^`]+)`", names))
    return out


def test_the_checkouts_owed_table_is_current():
    """What CI's `maint owed-table` checks, so that a stale table fails here too."""
    text = (REPO / owed.PAGE).read_text()
    assert _region(text) == owed.render(Catalogue(REPO), load(REPO))


def test_the_real_catalogue_renders_each_owing_release_once_and_twins_together():
    cat, evidence = Catalogue(REPO), load(REPO)
    table = owed.render(cat, evidence)
    rows = _rows(table)
    due = {v: generated.owed(cat, v, evidence) for v in cat.versions}
    listed = [v for releases in rows for v in releases.split(", ")]
    assert sorted(listed) == sorted(v for v in cat.versions if due[v])  # each once, none owing nothing
    for releases, (series, names) in rows.items():
        for v in releases.split(", "):
            assert cat.releases[v].series == series and tuple(names) == due[v], v
    # a release that lists nothing itself but whose twin's evidence covers it (0.25.1 today) owes
    # what the twin owes, in the twin's row, beside a release that lists those runs itself
    # (test_a_twin_without_evidence_owes_in_its_twins_row checks this on a catalogue of its own)
    borrowed = [v for v in listed if not cat.releases[v].owed]
    for releases, (_series, names) in rows.items():
        members = releases.split(", ")
        if any(v in borrowed for v in members):
            assert any(set(cat.releases[v].owed) == set(names) for v in members), releases
    if not rows:  # nothing owed anywhere: one sentence, no table and no legend
        assert table == owed.NOTHING
        return
    # the legend: every scenario owed, once, with its meaning, and no other
    legend = table.split("\n\n")[1].splitlines()[2:]
    owed_anywhere = {n for _, names in rows.values() for n in names}
    assert legend == [f"| `{n}` | {SCENARIOS[n]} |" for n in SCENARIOS if n in owed_anywhere]


def test_a_twin_without_evidence_owes_in_its_twins_row(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    from .test_generated import _small_home

    # 0.22.1 has the same patched files as 0.22.0, whose evidence covers it
    home = _small_home(tmp_path, monkeypatch, {"0.22.0": (["tp2"], [])})
    write(home, "0.22.0", "gdn-ngram", verify_json("0.22.0"))
    assert _rows(owed.render(Catalogue(home), load(home))) == {"0.22.0, 0.22.1": ("0.22.0", ["tp2"])}
    # a twin that owes a run of its own owes both, in a row of its own
    (tmp_path / "b").mkdir()
    home = _small_home(tmp_path / "b", monkeypatch, {"0.22.0": (["tp2"], []), "0.22.1": (["pc-mtp"], [])})
    write(home, "0.22.0", "gdn-ngram", verify_json("0.22.0"))
    rows = _rows(owed.render(Catalogue(home), load(home)))
    assert rows["0.22.0"] == ("0.22.0", ["tp2"]) and set(rows["0.22.1"][1]) == {"tp2", "pc-mtp"}


def _copy(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    shutil.copy(REPO / owed.PAGE, home / owed.PAGE)
    shutil.copytree(REPO / "docs/evidence", home / "docs/evidence")
    return home


def test_owed_table_drift_is_reported_then_written(tmp_path, monkeypatch):
    from toml_case import with_owed

    home = _copy(tmp_path, monkeypatch)
    page = home / owed.PAGE
    toml = home / "versions.toml"
    toml.write_text(with_owed(toml.read_text(), "0.31.0", ["gdn-ngram-flashinfer", "tp2"]))
    assert CliRunner().invoke(maint.main, ["owed-table", "--write"]).exit_code == 0
    before = page.read_text()
    toml.write_text(with_owed(toml.read_text(), "0.31.0", ["tp2"]))
    drift = CliRunner().invoke(maint.main, ["owed-table"])
    assert drift.exit_code == 1 and "-| 0.31.0 | 0.31.0 | `gdn-ngram-flashinfer`, `tp2` |" in drift.output
    assert page.read_text() == before
    assert CliRunner().invoke(maint.main, ["owed-table", "--write"]).exit_code == 0
    after = page.read_text()
    assert _rows(_region(after))["0.31.0"] == ("0.31.0", ["tp2"])
    # only the region changes: the prose around it is the maintainers'
    assert after.split(owed.BEGIN)[0] == before.split(owed.BEGIN)[0]
    assert after.split(owed.END)[1] == before.split(owed.END)[1]
    assert CliRunner().invoke(maint.main, ["owed-table"]).exit_code == 0


def test_nothing_owed_says_so(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    toml.write_text(re.sub(r"^owed = \[.*?\]\n", "", toml.read_text(), flags=re.M | re.S))
    assert Catalogue(home).releases["0.27.0"].owed == ()
    assert CliRunner().invoke(maint.main, ["owed-table", "--write"]).exit_code == 0
    assert _region((home / owed.PAGE).read_text()) == owed.NOTHING


def test_a_page_without_the_markers_is_refused_and_left_alone(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    page = home / owed.PAGE
    page.write_text(page.read_text().replace(owed.END, ""))
    text = page.read_text()
    r = CliRunner().invoke(maint.main, ["owed-table", "--write"])
    assert r.exit_code != 0 and "docs/VERIFICATION.md: no <!-- owed-table:begin -->" in str(r.exception)
    assert page.read_text() == text
