"""The generators of README's matrix and docs/SUPPORT.md: check mode fails on drift and shows it;
--write fixes it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.catalogue import SCENARIOS, Catalogue
from vllm_backports.maint import generated

from .conftest import copy_checkout

# Where a matrix cell's count of owed runs links: the heading of docs/VERIFICATION.md's owed table.
OWED = "docs/VERIFICATION.md#runs-still-owed"


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
    from toml_case import with_owed

    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    toml.write_text(with_owed(toml.read_text(), "0.31.0", ["gdn-ngram-flashinfer", "tp2"]))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    before, notes_before = _matrix_rows((home / "README.md").read_text()), _notes(home)
    write(home, "0.31.0", "gdn-ngram", _current(home, "0.31.0"))
    write(home, "0.31.0", "tq-mtp", _current(home, "0.31.0", preset="mtp", control_errors=0))
    drift = CliRunner().invoke(maint.main, ["matrix"])
    assert drift.exit_code == 1 and "+| 0.31.0 |" in drift.output
    assert "docs/SUPPORT.md" in drift.output  # both files' drift shown by one run
    assert _matrix_rows((home / "README.md").read_text()) == before
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    after, notes_after = _matrix_rows((home / "README.md").read_text()), _notes(home)
    status = "GPU (H100, 2026-11-25): 1 proof, 1 weak, 0 failing"
    assert after["0.31.0"].rsplit(" | ", 1)[1] == (
        f"{status} ([evidence](docs/evidence/README.md#vllm-0310)); [owed: 2 runs]({OWED}); "
        "[notes](docs/SUPPORT.md#vllm-0310) |"
    )
    assert after["0.31.0"].rsplit(" | ", 1)[0] == before["0.31.0"].rsplit(" | ", 1)[0]
    assert {v: r for v, r in after.items() if v != "0.31.0"} == {v: r for v, r in before.items() if v != "0.31.0"}
    # the notes link to the evidence page from their own folder; owed and notes stay as they were
    assert notes_before["0.31.0"].count("Status: CPU-tested; not run on a GPU.\n") == 1
    gpu = f"Status: CPU-tested; {status} ([evidence](evidence/README.md#vllm-0310))."
    assert notes_after["0.31.0"] == notes_before["0.31.0"].replace("Status: CPU-tested; not run on a GPU.", gpu)
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    # the anchor is the page's heading for the release
    assert CliRunner().invoke(maint.main, ["evidence", "--write"]).exit_code == 0
    from vllm_backports.evidence import slug

    headings = [
        line[3:] for line in (home / "docs/evidence/README.md").read_text().splitlines() if line.startswith("## ")
    ]
    assert "#vllm-0310" in after["0.31.0"] and [slug(h) for h in headings] == ["vllm-0310"]


def test_matrix_without_evidence_says_cpu_tested_and_what_is_owed(tmp_path, monkeypatch):
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.evidence import slug

    home = copy_checkout(tmp_path, monkeypatch)
    (home / "docs/evidence").mkdir(parents=True)  # a directory without JSON files is no evidence
    (home / "docs/evidence/0.31.0").mkdir()
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    cat = Catalogue(home)
    cells = [line.rsplit(" | ", 1)[1].removesuffix(" |") for line in generated.render_matrix(cat).splitlines()[2:]]
    owed = {v: [n for n in SCENARIOS if n in cat.releases[v].owed] for v in cat.versions}
    link = {v: f"[notes](docs/SUPPORT.md#{slug(f'vLLM {v}')})" for v in cat.versions}
    runs = {v: f"{len(owed[v])} run{'s' * (len(owed[v]) != 1)}" for v in cat.versions}
    due = {v: [f"[owed: {runs[v]}]({OWED})"] if owed[v] else [] for v in cat.versions}
    assert cells == ["; ".join(["CPU-tested", *due[v], link[v]]) for v in cat.versions]
    # every note of versions.toml is on the page, under its release
    for v, body in _notes(home).items():
        assert body.count("Status: CPU-tested; not run on a GPU.") == 1
        assert all(f"\n- {note}" in body for note in cat.releases[v].notes), v
    # every link in the matrix lands on a heading of the notes
    notes = (home / "docs/SUPPORT.md").read_text().splitlines()
    headings = {slug(line[3:]) for line in notes if line.startswith("## ")}
    assert {c.rsplit("#", 1)[1].removesuffix(")") for c in cells} <= headings


def test_the_owed_count_links_to_the_heading_of_the_generated_owed_table():
    from vllm_backports.evidence import slug
    from vllm_backports.maint import owed

    assert generated.owed_link(("tp2",)) == f"[owed: 1 run]({OWED})"
    assert generated.owed_link(("tq-mtp-4bit_nc", "tq-continuation", "tp2")) == f"[owed: 3 runs]({OWED})"
    page, anchor = OWED.split("#")
    assert page == owed.PAGE.as_posix()
    text = (REPO / page).read_text()
    # the heading the anchor names is the section that holds the table maint owed-table writes
    section = next(s for s in text.split("\n## ")[1:] if slug(s.partition("\n")[0]) == anchor)
    assert owed.BEGIN in section and owed.END in section


def test_matrix_cell_of_a_release_without_a_series_is_a_dash(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    # without its series the release is left with the bug that series fixes
    toml.write_text(toml.read_text().replace('series = "0.33.0"\n',
                                             'series = ""\nbugs = ["turboquant-prefill-fastpath"]\n', 1))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    row = _matrix_rows((home / "README.md").read_text())["0.33.0"]
    known = (
        "[#52475, #51562, #56077 (reproduced); #51571, #50021, #53488, #53726 (not reproduced); #53180, #41190 (not yet run)]"
        "(docs/SUPPORT.md#known-bugs-the-series-leave-alone)"
    )
    assert row.endswith(f"| turboquant-prefill-fastpath; {known} | - |")
    assert _notes(home)["0.33.0"].startswith("Series -,")


def test_known_bugs_cell_groups_by_what_the_gpu_showed(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    old = 'present = ">=0.17.0"\nstatus = "not reproduced"'
    toml.write_text(toml.read_text().replace(old, old.replace('"not reproduced"', '"reproduced"'), 1))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    row = _matrix_rows((home / "README.md").read_text())["0.20.0"]
    groups = (
        "#50021, #39271 (reproduced); #51571, #53912, #53488, #53726, #51565 (not reproduced); "
        "#41190 (not yet run)"
    )
    assert f"| [{groups}](docs/SUPPORT.md#known" in row
    table = (home / "docs/SUPPORT.md").read_text()
    assert "| [#50021](https://github.com/vllm-project/vllm/issues/50021) | " in table
    assert "| no code path found | absent | 2026-11-25 |" in table
    assert "| `>=0.18.0` | not yet run | 2026-11-29 |" in table  # the day its status was last checked


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


# ---- a small catalogue of its own: two releases on one series (twins) and one without a series --

REPO = Path(__file__).resolve().parent.parent.parent
README = (
    "# x\n\n<!-- support-matrix:begin -->\n<!-- support-matrix:end -->\n\n"
    "<!-- arch-table:begin -->\n<!-- arch-table:end -->\n"
)


def _chunks(text: str) -> dict[str, str]:
    """versions.toml cut at each table header, by header (a table's sub-tables are chunks too)."""
    out: dict[str, str] = {}
    head = ""
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            head = line.strip()
        out[head] = out.get(head, "") + line
    return out


def _small_home(tmp_path: Path, monkeypatch, own: dict[str, tuple[list[str], list[str]]]) -> Path:
    """0.22.0 and 0.22.1 (series 0.22.0, same pristine files) and 0.99.0 (no series), each with
    the owed and notes given; the backports, the series and the pins copied from the checkout."""
    chunks = _chunks((REPO / "versions.toml").read_text())
    parts = ["schema = 1\n"]
    parts += [c for h, c in chunks.items() if h.startswith("[backports.")]
    parts += [chunks['[series."0.22.0"]'], chunks['[series."0.22.0".files]']]
    for v in ("0.22.0", "0.22.1"):
        stanza = "".join(
            line for line in chunks[f'[releases."{v}"]'].splitlines(keepends=True)
            if not line.startswith(("owed", "notes", "  ", "]"))
        )
        owed, notes = own.get(v, ([], []))
        parts += [stanza.rstrip("\n") + f"\nowed = {owed!r}\nnotes = {notes!r}\n".replace("'", '"')]
        parts += [chunks[f'[releases."{v}".files]']]
    parts += ['[releases."0.99.0"]\ntorch = "2.99.0"\ncuda = 13\nwheel = "w"\nwheel_sha256 = "0"\n'
              'record_sha256 = "0"\n']
    home = tmp_path / "small"
    home.mkdir()
    (home / "versions.toml").write_text("\n".join(parts))
    (home / "README.md").write_text(README)
    shutil.copytree(REPO / "backports/0.22.0", home / "backports/0.22.0")
    monkeypatch.setattr(maint, "HOME", home)
    return home


def _current(home: Path, release: str, **case) -> dict:
    """A run whose target carried the patches `release` ships today, as verify records them."""
    from evidence_case import verify_json

    now = generated.shipped_patches(Catalogue(home), release)
    return verify_json(release, target_backports=list(now), target_patches=now, **case)


# what backports/0.22.0/series carries, by backport id
SERIES_0_22 = [p.backport_id for p in Catalogue(REPO).series("0.22.0").patches]

OWN = {
    "0.22.0": (["tq-continuation", "tq-mtp-4bit_nc"], ["2026-11-22: a kernel test passes"]),
    "0.22.1": (["tp2"], []),
}


def test_small_catalogue_with_evidence_generates_status_owed_and_notes(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = _small_home(tmp_path, monkeypatch, OWN)
    write(home, "0.22.0", "gdn-ngram", _current(home, "0.22.0"))
    write(home, "0.22.0", "tq-mtp", _current(home, "0.22.0", preset="mtp", control_errors=0))
    r = CliRunner().invoke(maint.main, ["matrix"])
    assert r.exit_code == 1 and "docs/SUPPORT.md" in r.output
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    cells = {v: row.rsplit(" | ", 1)[1] for v, row in _matrix_rows((home / "README.md").read_text()).items()}
    gpu = "GPU (H100, 2026-11-25): 1 proof, 1 weak, 0 failing"
    assert cells == {
        "0.22.0": f"{gpu} ([evidence](docs/evidence/README.md#vllm-0220)); [owed: 2 runs]({OWED}); "
        "[notes](docs/SUPPORT.md#vllm-0220) |",
        # no evidence of its own, the same patched files as 0.22.0: its evidence, and what both owe
        "0.22.1": f"same patched files as 0.22.0: {gpu} ([evidence](docs/evidence/README.md#vllm-0220)); "
        f"[owed: 3 runs]({OWED}); [notes](docs/SUPPORT.md#vllm-0221) |",
        "0.99.0": "- |",
    }
    notes = _notes(home)
    assert notes["0.22.0"] == "\n".join([
        "Series 0.22.0, torch 2.11.0, CUDA 13.",
        "",
        f"Status: CPU-tested; {gpu} ([evidence](evidence/README.md#vllm-0220)).",
        "",
        "Owed on a GPU:",
        "",
        f"- `tq-mtp-4bit_nc`: {SCENARIOS['tq-mtp-4bit_nc']}",
        f"- `tq-continuation`: {SCENARIOS['tq-continuation']}",
        "",
        "Notes:",
        "",
        "- 2026-11-22: a kernel test passes",
    ])
    assert notes["0.22.1"].split("\n\n")[1] == (
        f"Status: CPU-tested; same patched files as 0.22.0: {gpu} ([evidence](evidence/README.md#vllm-0220))."
    )
    assert "Notes:" not in notes["0.22.1"]  # 0.22.0's notes are its own
    assert notes["0.99.0"] == "Series -, torch 2.99.0, CUDA 13.\n\nNothing is backported to this release yet."


def test_a_release_with_evidence_of_its_own_shows_its_twins_too(tmp_path, monkeypatch):
    from evidence_case import write

    home = _small_home(tmp_path, monkeypatch, OWN)
    write(home, "0.22.0", "gdn-ngram", _current(home, "0.22.0"))
    write(home, "0.22.1", "tq-mtp", _current(home, "0.22.1", preset="mtp", control_errors=0))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    cells = {v: row.rsplit(" | ", 1)[1] for v, row in _matrix_rows((home / "README.md").read_text()).items()}
    one = "GPU (H100, 2026-11-25): 1 proof, 0 weak, 0 failing ([evidence](docs/evidence/README.md#vllm-0220))"
    weak = "no proof of today's series: 0 earlier revision, 1 weak, 0 failing (H100, 2026-11-25; [evidence](docs/evidence/README.md#vllm-0221))"
    assert cells["0.22.1"].startswith(f"{weak}; same patched files as 0.22.0: {one}; [owed: ")
    assert cells["0.22.0"].startswith(f"{one}; same patched files as 0.22.1: {weak}; [owed: ")
    # a run of its own does not drop what its twin owes: the same bytes owe the same runs
    assert f"[owed: 3 runs]({OWED})" in cells["0.22.1"] and f"[owed: 3 runs]({OWED})" in cells["0.22.0"]


def test_small_catalogue_without_evidence_is_cpu_tested_and_owes_its_own(tmp_path, monkeypatch):
    home = _small_home(tmp_path, monkeypatch, OWN)
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    cells = {v: row.rsplit(" | ", 1)[1] for v, row in _matrix_rows((home / "README.md").read_text()).items()}
    assert cells["0.22.1"] == f"CPU-tested; [owed: 1 run]({OWED}); [notes](docs/SUPPORT.md#vllm-0221) |"
    assert _notes(home)["0.22.1"].split("\n\n")[1] == "Status: CPU-tested; not run on a GPU."


def test_a_scenario_owed_and_in_the_evidence_is_refused_in_one_line(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = _small_home(tmp_path, monkeypatch, {"0.22.0": (["gdn-ngram"], [])})
    write(home, "0.22.0", "gdn-ngram", verify_json("0.22.0", target_backports=SERIES_0_22))
    r = CliRunner().invoke(maint.main, ["matrix", "--write"])
    assert r.exit_code == 1 and str(r.exception) == (
        "versions.toml: [releases.\"0.22.0\"]: owes 'gdn-ngram', but docs/evidence/0.22.0/gdn-ngram.json ran it; "
        "remove it from owed"
    )
    assert (home / "README.md").read_text() == README and not (home / "docs/SUPPORT.md").exists()


def test_a_scenario_run_before_a_backport_joined_the_series_may_be_owed_again(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = _small_home(tmp_path, monkeypatch, {"0.22.0": (["gdn-ngram"], [])})
    older = {b: sha for b, sha in generated.shipped_patches(Catalogue(home), "0.22.0").items()
             if b != "turboquant-decode-workspace"}
    write(home, "0.22.0", "gdn-ngram", verify_json("0.22.0", target_backports=list(older), target_patches=older))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    cells = {v: row.rsplit(" | ", 1)[1] for v, row in _matrix_rows((home / "README.md").read_text()).items()}
    assert f"[owed: 1 run]({OWED})" in cells["0.22.0"]
    assert cells["0.22.0"].startswith("no proof of today's series: 1 earlier revision, 0 weak, 0 failing")


def test_bench_table_is_generated_from_the_run_jsons_and_links_their_plots(tmp_path, monkeypatch):
    from vllm_backports.bench import table

    home = tmp_path / "repo"
    (home / "docs").mkdir(parents=True)
    page = home / "docs/BENCHMARKS.md"
    page.write_text(f"# Benchmarks\n\n{table.BEGIN}\n{table.NONE_YET}\n{table.END}\n\nmore\n")
    monkeypatch.setattr(maint, "HOME", home)
    assert CliRunner().invoke(maint.main, ["bench-table"]).exit_code == 0
    runs = home / "records/runs/bench-ab"
    runs.mkdir(parents=True)
    comparisons = [
        {"figure": f, "concurrency": 16, "ratio": 1.001, "ci_low": 0.998, "ci_high": 1.004, "half_width": 0.003,
         "a_mean": 2000.0, "b_mean": 2002.0}
        for f in ("decode_tok_s", "ttft_ms")
    ]
    result = {"experiment": "nospec", "shape": "qwen3_5-9b", "vllm": "0.26.0", "date": "2026-11-30", "gpu": "H100",
              "a": "raw", "b": "fix", "layout": "sleep", "pairs": 20, "comparisons": comparisons}
    (runs / "r1.json").write_text(json.dumps(result))
    (runs / "r1.png").write_bytes(b"png")
    drift = CliRunner().invoke(maint.main, ["bench-table"])
    assert drift.exit_code == 1 and "1.001 [0.998, 1.004]" in drift.output
    assert table.NONE_YET in page.read_text()
    assert CliRunner().invoke(maint.main, ["bench-table", "--write"]).exit_code == 0
    text = page.read_text()
    assert "[plot](../records/runs/bench-ab/r1.png)" in text and text.endswith(f"{table.END}\n\nmore\n")
    assert CliRunner().invoke(maint.main, ["bench-table"]).exit_code == 0
    (runs / "r2.json").write_text("{not json")
    bad = CliRunner().invoke(maint.main, ["bench-table", "--write"])
    assert bad.exit_code != 0 and "r2.json: not JSON" in str(bad.exception or bad.output)


def _upstream_table(home: Path, version: str, patches: dict | None) -> Path:
    """A committed upstream-tests table of `version`, recording `patches` (or nothing of them)."""
    data = json.loads((REPO / "docs" / "upstream-tests" / f"{version}.json").read_text())
    data.pop("patches", None)
    if patches is not None:
        data["patches"] = patches
    path = home / "docs" / "upstream-tests" / f"{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_an_upstream_table_run_before_its_series_changed_fails_the_doc_check(tmp_path, monkeypatch):
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.upstream_tests import series_patches

    home = copy_checkout(tmp_path, monkeypatch)
    current = series_patches(Catalogue(home), "0.26.0")
    _upstream_table(home, "0.26.0", current)
    assert CliRunner().invoke(maint.main, ["upstream-tests-doc", "--write"]).exit_code == 0
    text = (home / "docs" / "UPSTREAM-TESTS.md").read_text()
    assert f"its {len(current)} patches as they ship (sha256 recorded)" in text

    first = next(iter(current))
    _upstream_table(home, "0.26.0", {**current, first: "0" * 64})
    before = (home / "docs" / "UPSTREAM-TESTS.md").read_bytes()
    done = CliRunner().invoke(maint.main, ["upstream-tests-doc", "--write"])
    assert done.exit_code == 1
    assert str(done.exception) == (
        f"docs/upstream-tests/0.26.0.json: series 0.26.0 has changed since it ran ({first}); "
        "run `python -m vllm_backports.maint upstream-tests 0.26.0` again"
    )
    assert (home / "docs" / "UPSTREAM-TESTS.md").read_bytes() == before  # nothing written

    # a table of a series the release no longer takes
    table = _upstream_table(home, "0.26.0", current)
    table.write_text(table.read_text().replace('"series": "0.26.0"', '"series": "0.25.0"'))
    done = CliRunner().invoke(maint.main, ["upstream-tests-doc", "--write"])
    assert done.exit_code == 1
    assert str(done.exception) == (
        "docs/upstream-tests/0.26.0.json: ran series 0.25.0, vLLM 0.26.0 now has series 0.26.0; "
        "run `python -m vllm_backports.maint upstream-tests 0.26.0` again"
    )


def test_a_gpu_upstream_table_run_before_its_series_changed_stays_marked_stale(tmp_path, monkeypatch):
    # a GPU table waits for device time, where a CPU one fails the check (above)
    from vllm_backports.upstream_tests import series_patches

    home = copy_checkout(tmp_path, monkeypatch)
    current = series_patches(Catalogue(home), "0.28.0")
    first = next(iter(current))
    data = json.loads((REPO / "docs/upstream-tests/gpu/0.28.0.json").read_text())
    table = home / "docs/upstream-tests/gpu/0.28.0.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps({**data, "patches": {**current, first: "0" * 64}}))
    assert CliRunner().invoke(maint.main, ["upstream-tests-doc", "--write"]).exit_code == 0
    text = (home / "docs" / "UPSTREAM-TESTS.md").read_text()
    section = text[text.index("## vLLM 0.28.0 on a GPU") :]
    assert section.split("\n")[2].endswith(
        f"its {len(current)} patches as they were then (sha256 recorded). **Stale:** the series has changed since"
        f" ({first}); a run of it as it ships is owed."
    )


def test_an_upstream_table_without_patch_hashes_says_so(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    _upstream_table(home, "0.26.0", None)
    assert CliRunner().invoke(maint.main, ["upstream-tests-doc", "--write"]).exit_code == 0
    assert "(run before tables recorded the patches' sha256)." in (home / "docs" / "UPSTREAM-TESTS.md").read_text()


def test_the_kept_evidence_tells_an_upstream_fix_from_a_weak_scenario():
    """On the runs kept in docs/evidence: 0.33.0 ships no GDN fix (upstream from 0.32.0), and its
    clean pristine GDN runs count as that fix holding only where the same proof failed a pristine
    release before; the V2 runs, whose steps never reached the GDN transition, are not exercised."""
    judged = generated.judged_evidence(maint.CHECKOUT)
    by_name = {s.name: s for s in judged["0.33.0"]}
    assert (by_name["gdn-ngram"].verdict, by_name["gdn-ngram"].failed_pristine_on) == ("upstream-fixed", "0.31.0")
    for release in ("0.32.0", "0.33.0"):  # V2 verifies k drafts every step: 0 accepted-then-no-drafts
        v2 = {s.name: s.verdict for s in judged[release] if s.name in ("gdn-ngram-v2", "tail-ngram-v2")}
        assert v2 == {"gdn-ngram-v2": "not exercised", "tail-ngram-v2": "not exercised"}, release
    not_exercised = sorted((r, s.name) for r, ss in judged.items() for s in ss if s.verdict == "not exercised")
    # and vLLM's own ngram on tool-call prompts, which proposed no draft after an accepted one (0.22.0)
    # or none at all (0.26.0, 0.28.0)
    assert not_exercised == [
        ("0.22.0", "ngram-tool-calls"),
        ("0.26.0", "ngram-tool-calls"),
        ("0.28.0", "ngram-tool-calls"),
        ("0.32.0", "gdn-ngram-v2"),
        ("0.32.0", "tail-ngram-v2"),
        ("0.33.0", "gdn-ngram-v2"),
        ("0.33.0", "tail-ngram-v2"),
    ]
    assert by_name["kp1-b1-fix"].verdict == "control wrong"
    # the failing runs are one-token-ngram before spec-pad-new-prompt joined the series, whose own
    # proof (spec-pad-ngram) ran with it since
    failing = sorted((r, s.name, s.digest) for r, ss in judged.items() for s in ss if s.verdict == "fails")
    assert failing == [(r, "one-token-ngram", "earlier revision") for r in ("0.26.0", "0.29.0", "0.31.0")]
    assert {r for r, ss in judged.items() for s in ss if s.name == "spec-pad-ngram" and s.verdict == "control wrong"} == {
        "0.25.0", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"}
    assert {s.verdict for s in judged["0.31.0"] if s.name != "one-token-ngram"} <= {"control wrong", "weak"}
    assert "control crashed" in {s.verdict for s in judged["0.21.0"]}  # TurboQuant's pristine engines died


def test_a_kept_file_is_a_proof_of_todays_series_only_with_todays_patches():
    """A file written before verify recorded engine.patches is an earlier revision; one that
    records them is current exactly when they are the pins the release ships today."""
    import json

    cat = Catalogue(maint.CHECKOUT)
    judged = generated.judged_evidence(maint.CHECKOUT)
    seen = set()
    for release, summaries in judged.items():
        for s in summaries:
            data = json.loads((maint.CHECKOUT / "docs/evidence" / s.link).read_text())
            recorded = [r["engine"].get("patches") for r in data["rows"] if r["site"] == "target" and r.get("engine")]
            if not recorded or any(p is None for p in recorded):
                assert s.digest != "current", s.link
                continue
            same = all(p == generated.shipped_patches(cat, release) for p in recorded)
            assert (s.digest == "current") is same, s.link
            seen.add(s.digest)
    assert "current" in seen  # else the rule above was never exercised


def test_the_shipped_patches_are_the_releases_series_less_what_it_has_upstream():
    """What apply.py's manifest records today: the series' backports the release does not carry
    upstream (Release.backports, in series order), each with its patch file's pin; a release on
    another's series compares with that series."""
    cat = Catalogue(REPO)
    series = cat.series("0.20.0")
    pins = {p.backport_id: series.pinned[p.name] for p in series.patches}
    shipped = generated.shipped_patches(cat, "0.20.1")
    assert cat.releases["0.20.1"].series == "0.20.0" and shipped == generated.shipped_patches(cat, "0.20.0")
    assert list(shipped) == list(cat.releases["0.20.1"].backports)
    assert all(shipped[b] == pins[b] for b in shipped)
    assert generated.shipped_patches(cat, "0.33.0").keys() == set(cat.releases["0.33.0"].backports)
