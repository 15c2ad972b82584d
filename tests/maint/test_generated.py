"""The generators of README's matrix and docs/SUPPORT.md: check mode fails on drift and shows it;
--write fixes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.maint import generated

from .conftest import copy_checkout


def test_matrix_drift_is_reported_then_written(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    toml = home / "versions.toml"
    toml.write_text(toml.read_text().replace('torch = "2.14.0"', 'torch = "2.14.1"'))
    drift = CliRunner().invoke(maint.main, ["matrix"])
    assert drift.exit_code == 1 and "2.14.1" in drift.output
    assert "2.14.1" not in (home / "README.md").read_text()
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    assert "| 0.33.0 | 2.14.1 / 13 |" in (home / "README.md").read_text()


def _matrix_rows(readme: str) -> dict[str, str]:
    return {line.split(" | ")[0].removeprefix("| "): line for line in readme.splitlines() if line.startswith("| 0.")}


def _notes(home: Path) -> dict[str, str]:
    """docs/SUPPORT.md's text under each release's heading."""
    out: dict[str, str] = {}
    for section in (home / "docs/SUPPORT.md").read_text().split("\n## vLLM ")[1:]:
        version, _, body = section.partition("\n")
        out[version] = body.strip()
    return out


def test_matrix_cell_is_the_status_of_the_releases_evidence(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = copy_checkout(tmp_path, monkeypatch)
    before, notes_before = _matrix_rows((home / "README.md").read_text()), _notes(home)
    write(home, "0.31.0", "gdn-ngram", verify_json())
    write(home, "0.31.0", "tq-mtp", verify_json(preset="mtp", control_errors=0))
    drift = CliRunner().invoke(maint.main, ["matrix"])
    assert drift.exit_code == 1 and "+| 0.31.0 |" in drift.output
    assert "docs/SUPPORT.md" in drift.output  # both files' drift shown by one run
    assert _matrix_rows((home / "README.md").read_text()) == before
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    after, notes_after = _matrix_rows((home / "README.md").read_text()), _notes(home)
    status = "GPU (H100, 2026-11-25): 1 proof, 1 weak, 0 failing"
    assert after["0.31.0"].rsplit(" | ", 1)[1] == (
        f"{status} ([evidence](docs/evidence/README.md#vllm-0310)); [notes](docs/SUPPORT.md#vllm-0310) |"
    )
    assert after["0.31.0"].rsplit(" | ", 1)[0] == before["0.31.0"].rsplit(" | ", 1)[0]
    assert {v: r for v, r in after.items() if v != "0.31.0"} == {v: r for v, r in before.items() if v != "0.31.0"}
    # the notes link to the evidence page from their own folder, before the hand-written text
    header, _, verified = notes_before["0.31.0"].partition("\n\n")
    assert notes_after["0.31.0"] == f"{header}\n\n{status} ([evidence](evidence/README.md#vllm-0310)); {verified}"
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    # the anchor is the page's heading for the release
    assert CliRunner().invoke(maint.main, ["evidence", "--write"]).exit_code == 0
    from vllm_backports.evidence import slug

    headings = [
        line[3:] for line in (home / "docs/evidence/README.md").read_text().splitlines() if line.startswith("## ")
    ]
    assert "#vllm-0310" in after["0.31.0"] and [slug(h) for h in headings] == ["vllm-0310"]


def test_matrix_without_evidence_is_short_and_the_notes_hold_the_verified_text(tmp_path, monkeypatch):
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.evidence import slug

    home = copy_checkout(tmp_path, monkeypatch)
    (home / "docs/evidence").mkdir(parents=True)  # a directory without JSON files is no evidence
    (home / "docs/evidence/0.31.0").mkdir()
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    cat = Catalogue(home)
    cells = [line.rsplit(" | ", 1)[1].removesuffix(" |") for line in generated.render_matrix(cat).splitlines()[2:]]
    said = {True: "ran on a GPU", False: "CPU-tested"}
    assert cells == [
        f"{said[cat.releases[v].ran_on_gpu]}; [notes](docs/SUPPORT.md#{slug('vLLM ' + v)})" for v in cat.versions
    ]
    assert {v: body.rsplit("\n\n", 1)[1] for v, body in _notes(home).items()} == {
        v: cat.releases[v].verified for v in cat.versions
    }
    # every link in the matrix lands on a heading of the notes
    notes = (home / "docs/SUPPORT.md").read_text().splitlines()
    headings = {slug(line[3:]) for line in notes if line.startswith("## ")}
    assert {c.rsplit("#", 1)[1].removesuffix(")") for c in cells} <= headings


def test_matrix_cell_of_a_release_without_a_series_is_a_dash(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    # without its series the release is left with the bug that series fixes
    toml.write_text(toml.read_text().replace('series = "0.33.0"\nbugs = []',
                                             'series = ""\nbugs = ["turboquant-prefill-fastpath"]', 1))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    row = _matrix_rows((home / "README.md").read_text())["0.33.0"]
    assert row.endswith("| turboquant-prefill-fastpath | - |") and _notes(home)["0.33.0"].startswith("Series -,")


def test_matrix_refuses_bad_or_unknown_evidence_and_writes_nothing(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = copy_checkout(tmp_path, monkeypatch)
    readme, notes = (home / "README.md").read_text(), (home / "docs/SUPPORT.md").read_text()
    write(home, "0.99.0", "gdn-ngram", verify_json("0.99.0"))
    r = CliRunner().invoke(maint.main, ["matrix", "--write"])
    unknown = "docs/evidence/0.99.0: vLLM 0.99.0 is not a release in versions.toml"
    assert r.exit_code == 1 and unknown in str(r.exception)
    shutil.rmtree(home / "docs/evidence/0.99.0")
    write(home, "0.31.0", "gdn-ngram", verify_json("0.30.0"))
    r = CliRunner().invoke(maint.main, ["matrix", "--write"])
    assert r.exit_code == 1 and str(r.exception).startswith("docs/evidence/0.31.0/gdn-ngram.json: ran vLLM 0.30.0")
    assert (home / "README.md").read_text() == readme
    assert (home / "docs/SUPPORT.md").read_text() == notes
