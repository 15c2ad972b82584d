"""docs/VERIFICATION.md's index by release, generated from its dated entries' headings: the
checkout's index is current, headings name releases as lists, "and" and ranges, a heading that
names none it can read is refused before anything is written, and --write fixes drift."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import BackportError
from vllm_backports.maint import verification

from .conftest import REPO, copy_checkout

VERSIONS = ["0.20.0", "0.20.1", "0.21.0", "0.22.0", "0.31.0"]


def _region(text: str) -> str:
    return text[text.index(verification.BEGIN) + len(verification.BEGIN) : text.index(verification.END)].strip("\n")


def test_the_checkouts_index_is_current():
    """What CI's `maint verification-index` checks, so that a stale index fails here too."""
    text = (REPO / verification.PAGE).read_text()
    assert _region(text) == verification.render(Catalogue(REPO), text)


@pytest.mark.parametrize(
    ("named", "releases"),
    [
        ("0.31.0, 0.20.0", ["0.20.0", "0.31.0"]),
        ("0.20.1 and 0.22.0", ["0.20.1", "0.22.0"]),
        ("0.20.1 .. 0.22.0", ["0.20.1", "0.21.0", "0.22.0"]),
        ("0.20.0, 0.21.0 .. 0.31.0", ["0.20.0", "0.21.0", "0.22.0", "0.31.0"]),
    ],
)
def test_headings_name_releases_as_lists_and_ranges(named, releases):
    assert verification.releases_named(named, VERSIONS) == releases


@pytest.mark.parametrize(
    ("named", "why"),
    [
        ("0.19.0", "'0.19.0' is not a release in versions.toml"),
        ("several", "'several' is not a release or a range of releases"),
        ("0.31.0 .. 0.20.0", "'0.31.0 .. 0.20.0' is not a release or a range of releases"),
    ],
)
def test_a_heading_naming_no_release_it_can_read_is_refused(named, why):
    with pytest.raises(ValueError, match=f"^{why}$"):
        verification.releases_named(named, VERSIONS)


def test_entries_link_newest_first_and_a_twin_without_entries_points_to_its_twin():
    cat = Catalogue(REPO)
    twin, of = next((v, t) for v in cat.versions for t in cat.twins(v) if t < v)
    page = "\n".join(
        [
            "# V",
            "## Runs still owed",  # not dated: no entry
            f"## 2026-11-22 · vLLM {of} · one H100 80GB · the first",
            f"## 2026-11-25 · vLLM {of}, 0.33.0 · H200 · the second",
        ]
    )
    rows = {line.split(" | ")[0].strip("| "): line for line in verification.render(cat, page).splitlines()[2:]}
    assert rows[of].index("2026-11-25 · H200") < rows[of].index("2026-11-22 · one H100 80GB")
    assert "(#2026-11-25--vllm-" in rows[of]
    assert rows[twin].endswith(f"| the entries of {of} (the same patched files) |")
    assert rows["0.17.0"].endswith("| none: CPU tests only |")


def test_a_twin_with_entries_of_its_own_points_to_its_twins_too_unless_they_name_it():
    cat = Catalogue(REPO)
    twin, of = next((v, t) for v in cat.versions for t in cat.twins(v) if t < v)

    def rows(*entries: str) -> dict[str, str]:
        page = "\n".join(["# V", *entries])
        return {line.split(" | ")[0].strip("| "): line for line in verification.render(cat, page).splitlines()[2:]}

    both = f"## 2026-11-22 · vLLM {of}, {twin} · CPU · both"
    got = rows(both)
    assert "the entries of" not in got[of] + got[twin]  # every entry naming one names the other
    got = rows(both, f"## 2026-11-25 · vLLM {twin} · H100 · its own")
    assert got[of].endswith(f"; the entries of {twin} (the same patched files) |")
    assert got[twin].index("2026-11-25 · H100") < got[twin].index("2026-11-22 · CPU")
    assert "the entries of" not in got[twin]


def test_a_bad_heading_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    page = home / verification.PAGE
    shutil.copy(REPO / verification.PAGE, page)
    assert CliRunner().invoke(maint.main, ["verification-index"]).exit_code == 0
    entry = "\n## 2026-11-30 · H200 · no releases named\n"
    bad = page.read_text().replace("\n## Runs still owed", entry + "\n## Runs still owed")
    page.write_text(bad)
    r = CliRunner().invoke(maint.main, ["verification-index", "--write"])
    assert isinstance(r.exception, BackportError)
    assert "a dated entry's heading is '## DATE · vLLM RELEASES · MACHINE · WHAT'" in str(r.exception)
    assert page.read_text() == bad


def test_check_mode_fails_on_drift_and_write_fixes_it(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    page = home / verification.PAGE
    text = (REPO / verification.PAGE).read_text()
    page.write_text(text.replace(f"{verification.BEGIN}\n", f"{verification.BEGIN}\nstale\n"))
    assert CliRunner().invoke(maint.main, ["verification-index"]).exit_code == 1
    assert CliRunner().invoke(maint.main, ["verification-index", "--write"]).exit_code == 0
    assert page.read_text() == text
