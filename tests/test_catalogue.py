"""The real versions.toml: a release's backports and upstream lists are derived (from its series
and from each backport's `upstream_in`), and a fix is never both backported and upstream or a
known bug; typos are one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from packaging.version import Version

from toml_case import with_owed
from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import CatalogueError

CAT = Catalogue(Path(__file__).resolve().parent.parent)


def test_upstream_lists_follow_upstream_in():
    for version, release in CAT.releases.items():
        expected = {
            b.id for b in CAT.backports.values() if b.upstream_in and Version(version) >= Version(b.upstream_in)
        }
        assert set(release.upstream) == expected, version


def test_each_fix_has_one_status_per_release():
    for version, release in CAT.releases.items():
        lists = [set(release.backports), set(release.upstream), set(release.bugs)]
        assert not (lists[0] & lists[1] or lists[0] & lists[2] or lists[1] & lists[2]), version


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize(
    "old, new, message",
    [
        ('torch = "2.14.0"\n', "", "[releases.\"0.33.0\"] lacks 'torch'"),
        ('cuda = 13\nwheel = "vllm-0.33.0', 'cuda = "13"\nwheel = "vllm-0.33.0', "cuda must be int, not '13'"),
        ('gpus = "sm_80, sm_86 (A100, A5000, RTX 3090)"\n', "", "[arches.ampere] lacks 'gpus'"),
        (
            'platforms = ["linux/amd64"]\n',
            'platforms = ["linux/riscv64"]\n',
            "no GPU runner for platform 'linux/riscv64'",
        ),
        ('since = "0.20.0"\n', 'since = "0.2o.0"\n', "'0.2o.0' is not a version"),
        (
            'series = "0.33.0"\n',
            'series = "0.33.0"\nbugs = "turboquant-prefill-fastpath"\n',
            "bugs must be a list of strings",
        ),
        ('[series."0.33.0".files]\n', '[series."0.33.0".fils]\n', "unknown key 'fils'"),
        ('owed = ["gdn-ngram-flashinfer", "tp2"]\n', 'owed = ["gdn-ngram-flashinfr"]\n',
         "owed names unknown scenario 'gdn-ngram-flashinfr' (did you mean 'gdn-ngram-flashinfer'?)"),
        ('owed = ["gdn-ngram-flashinfer", "tp2"]\n', 'owed = ["tp2", "tp2"]\n',
         "owed lists a scenario twice"),
        ('owed = ["gdn-ngram-flashinfer", "tp2"]\n', 'owed = "tp2"\n',
         "owed must be a list of strings"),
        ('notes = [\n  "2026-11-25: its ngram runs', 'notes = [\n  "2026-11-25 its ngram runs',
         'is not one line "YYYY-MM-DD: what"'),
        ('notes = [\n  "2026-11-25: its ngram runs', 'notes = [\n  "2026-11-31: its ngram runs',
         "2026-11-31 is not a date"),
        ('notes = [\n  "2026-11-25: its ngram runs', 'notes = [\n  "2026-11-25: ' + "x" * 120,
         "characters, over 120"),
        ('notes = [\n  "2026-11-25: its ngram runs', 'notes = [\n  2026-11-25, "its ngram runs',
         "notes must be a list of strings"),
        ('owed = ["gdn-ngram-flashinfer", "tp2"]\n', 'verified = "applies cleanly"\n',
         "'verified' is replaced by owed and notes"),
        ('owed = ["gdn-ngram-flashinfer", "tp2"]\n', "ran_on_gpu = true\n",
         "'ran_on_gpu' is replaced by docs/evidence/<release>/"),
        ('owed = ["gdn-ngram-flashinfer", "tp2"]\n', 'covered_by = "0.32.0"\n',
         "'covered_by' is replaced by the pinned hashes"),
        ('present = ">=0.19.0"\nstatus = "not reproduced"', 'present = ">=0.19.0"\nstatus = "maybe"',
         "[known.async-count-moved-rows]: status 'maybe' is not one of reproduced, not reproduced, not yet run, "
         "absent"),
        ('present = ">=0.19.0"\n', 'present = "from 0.19"\n',
         "[known.async-count-moved-rows]: present 'from 0.19' is not a version specifier"),
        ('bug = "https://github.com/vllm-project/vllm/issues/53505"\n',
         'bug = "https://github.com/vllm-project/vllm/issues/53505"\npresent = ">=0.20.0"\n',
         "[known.align-backward-copy]: an absent bug is present in no release; drop present"),
        ("[known.align-backward-copy]", "[known.gdn-spec-state]",
         "[known.gdn-spec-state]: 'gdn-spec-state' is a backport's id: a known bug has no backport"),
        ('[known.align-backward-copy]\n', '[known.align-backward-copy]\nseen = "once"\n',
         "unknown key 'seen' in [known.align-backward-copy]"),
        ('present = ">=0.19.0"\nstatus = "not reproduced"', 'present = " "\nstatus = "reproduced"',
         "[known.async-count-moved-rows]: a reproduced bug is present somewhere; say where in present"),
        ('title = "prompt_logprobs are wrong with MTP"', 'title = "prompt_logprobs | MTP"',
         "[known.prompt-logprobs-mtp]: title must be one line without '|'"),
        ('[releases."0.33.0"]\n', '[releases."0.33.0"]\nknown = ["prompt-logprobs-mtp"]\n',
         "'known' is derived from the [known] bugs' present; remove it"),
        ('present = ">=0.19.0"\nstatus = "not reproduced"', 'status = "not yet run"',
         "[known.async-count-moved-rows]: a not yet run bug is present somewhere; say where in present"),
        ('checked = "2026-11-29"\n', "",
         "[known.align-allocate-shrink] lacks 'checked'"),
        ('checked = "2026-11-29"\n', 'checked = "2026-11-31"\n',
         "[known.align-allocate-shrink]: checked '2026-11-31' is not a date YYYY-MM-DD"),
        ('checked = "2026-11-29"\n', 'checked = "29.11.2026"\n',
         "[known.align-allocate-shrink]: checked '29.11.2026' is not a date YYYY-MM-DD"),
        ('checked = "2026-11-29"\n', 'checked = 2026-11-29\n',
         "[known.align-allocate-shrink]: checked must be str, not datetime.date(2026, 11, 29)"),
        ('when = { speculative = ["*"], tensor_parallel_size = 2 }', 'when = { speculative = ["*"], tp = 2 }',
         "unknown key 'tp' in [known.spec-tp2-illegal-address] when"),
        ('when = { speculative = ["*"], tensor_parallel_size = 2 }', 'when = { speculative = "mtp" }',
         "[known.spec-tp2-illegal-address] when: speculative must be a list of strings"),
        ('when = { speculative = ["*"], tensor_parallel_size = 2 }', 'when = { tensor_parallel_size = "2" }',
         "[known.spec-tp2-illegal-address]: when.tensor_parallel_size must be int, not '2'"),
        ('when = { speculative = ["*"], tensor_parallel_size = 2 }', 'fixed_by = ["gdn-spec-stat"]',
         "[known.spec-tp2-illegal-address]: fixed_by names 'gdn-spec-stat', which is no backport"),
    ],
    ids=[
        "missing-key",
        "wrong-type",
        "arch-missing-key",
        "platform",
        "variant-since",
        "string-not-list",
        "series-table",
        "owed-unknown",
        "owed-twice",
        "owed-not-list",
        "note-form",
        "note-date",
        "note-long",
        "note-not-string",
        "retired-verified",
        "retired-ran-on-gpu",
        "retired-covered-by",
        "known-status",
        "known-present",
        "known-absent-present",
        "known-backport-id",
        "known-unknown-key",
        "known-reproduced-nowhere",
        "known-pipe",
        "known-derived",
        "known-not-yet-run-nowhere",
        "known-checked-missing",
        "known-checked-bad-day",
        "known-checked-form",
        "known-checked-toml-date",
        "known-when-key",
        "known-when-list",
        "known-when-type",
        "known-fixed-by",
    ],
)
def test_a_typo_in_versions_toml_is_one_line(tmp_path, old, new, message):
    text = with_owed((REPO / "versions.toml").read_text(), "0.31.0", ["gdn-ngram-flashinfer", "tp2"])
    assert old in text, old
    (tmp_path / "versions.toml").write_text(text.replace(old, new, 1))
    shutil.copytree(REPO / "backports", tmp_path / "backports")  # the releases' lists are read from it
    with pytest.raises(CatalogueError) as caught:
        Catalogue(tmp_path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_every_known_bug_says_when_it_was_last_checked():
    for bug in CAT.known.values():
        assert len(bug.checked) == 10 and bug.checked.startswith("2026-"), bug.id
    assert CAT.known["align-allocate-shrink"].checked == "2026-11-29"


def test_known_bugs_are_derived_per_release_from_their_present_releases():
    assert CAT.releases["0.17.0"].known == (
        "accepted-count-index",
        "align-allocate-shrink",
        "prompt-logprobs-mtp",
        "gdn-one-token-first-chunk",
    )
    # 0.28.0's copy chunks alone let the shift overlap; upstream's ordered copy arrived in 0.29.0
    assert [v for v, r in CAT.releases.items() if "align-shift-copy-race" in r.known] == ["0.28.0"]
    # present there, but fixed by a backport the series ships (fixed_by)
    assert "ngram-tool-calls" not in CAT.releases["0.17.0"].known and "ngram-tool-calls" in CAT.releases["0.33.0"].known
    assert "gdn-one-token-first-chunk" in CAT.releases["0.30.0"].known
    assert "gdn-one-token-first-chunk" not in CAT.releases["0.31.0"].known
    assert "async-count-moved-rows" in CAT.releases["0.19.0"].known
    assert "async-count-moved-rows" not in CAT.releases["0.18.1"].known
    # the coordinator over-hit of #53912 is gone from 0.26.0
    assert "prefix-cache-mtp-hit" in CAT.releases["0.25.1"].known
    assert "prefix-cache-mtp-hit" not in CAT.releases["0.26.0"].known
    # a bug no release's code has is listed on none
    assert not any("align-backward-copy" in r.known for r in CAT.releases.values())
    assert CAT.known["async-count-moved-rows"].number == "#51571"


def test_owed_and_notes_default_to_empty(tmp_path):
    text = with_owed((REPO / "versions.toml").read_text(), "0.31.0", ["gdn-ngram-flashinfer", "tp2"])
    (tmp_path / "versions.toml").write_text(text)
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    assert Catalogue(tmp_path).releases["0.31.0"].owed == ("gdn-ngram-flashinfer", "tp2")
    assert CAT.releases["0.20.2"].owed == () and CAT.releases["0.20.2"].notes == ()


def test_every_named_verify_run_is_a_scenario_a_release_may_owe():
    """The proofs lab.steps starts (vllm_backports/verify/proofs.py) and SCENARIOS name the same
    runs, tp2 (on the two-GPU kind) among them: a proof added there can be owed here."""
    from vllm_backports.catalogue import SCENARIOS
    from vllm_backports.verify.proofs import PROOFS

    assert set(SCENARIOS) == set(PROOFS)


def test_twins_are_the_same_series_on_the_same_pristine_files():
    assert CAT.twins("0.22.1") == ["0.22.0"] and CAT.twins("0.22.0") == ["0.22.1"]
    assert CAT.twins("0.23.0") == []  # its own series
    assert CAT.twins("0.17.0") == []  # 0.17.1 has a series of its own


def test_a_twin_with_one_pristine_file_different_is_none(tmp_path):
    text = (REPO / "versions.toml").read_text()
    start = text.index('[releases."0.22.1".files]')
    old = text[start:].split("\n")[1]  # the first pinned file of 0.22.1
    path, _, digest = old.partition(" = ")
    (tmp_path / "versions.toml").write_text(text[:start] + text[start:].replace(old, f'{path} = "{"0" * 64}"', 1))
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    cat = Catalogue(tmp_path)
    assert cat.twins("0.22.1") == [] and cat.twins("0.22.0") == [] and digest != f'"{"0" * 64}"'


def test_a_releases_backports_are_what_its_series_applies_less_what_is_upstream():
    for version, release in CAT.releases.items():
        if not release.series:
            assert release.backports == (), version
            continue
        applied = tuple(p.backport_id for p in CAT.series(release.series).patches)
        assert release.backports == tuple(b for b in applied if b not in release.upstream), version
    assert CAT.releases["0.31.0"].backports == (
        "turboquant-spec-decode", "gdn-spec-state", "gdn-spec-state-v2-runner", "spec-prefill-decode-graph",
        "turboquant-prefill-fastpath", "gdn-draft-free-plain", "spec-pad-new-prompt")
    assert CAT.releases["0.33.0"].backports == (
        "turboquant-spec-decode", "spec-prefill-decode-graph", "turboquant-prefill-fastpath", "spec-pad-new-prompt")
    assert (
        "gdn-spec-state" in CAT.releases["0.33.0"].upstream and "gdn-spec-state" not in CAT.releases["0.31.0"].upstream
    )


@pytest.mark.parametrize("key", ["backports", "upstream"])
def test_a_derived_list_written_by_hand_is_refused(tmp_path, key):
    text = (REPO / "versions.toml").read_text()
    old = 'series = "0.33.0"\n'
    assert old in text
    (tmp_path / "versions.toml").write_text(text.replace(old, old + f'{key} = ["gdn-spec-state"]\n', 1))
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    with pytest.raises(CatalogueError) as caught:
        Catalogue(tmp_path)
    assert str(caught.value) == (f'versions.toml: [releases."0.33.0"]: {key!r} is derived from '
                                 + ("its series' patches" if key == "backports" else "the backports' upstream_in")
                                 + "; remove it")


def test_a_tampered_series_file_is_refused_when_the_lists_are_derived(tmp_path):
    shutil.copy(REPO / "versions.toml", tmp_path / "versions.toml")
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    series = tmp_path / "backports/0.33.0/series"
    series.write_text(series.read_text() + "# edited\n")
    with pytest.raises(CatalogueError, match="backports/0.33.0/series: sha256 differs"):
        Catalogue(tmp_path)


def test_a_series_file_listing_a_patch_twice_is_refused(tmp_path):
    shutil.copy(REPO / "versions.toml", tmp_path / "versions.toml")
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    series = tmp_path / "backports/0.33.0/series"
    series.write_text(series.read_text() + "0001-turboquant-spec-decode.patch\n")
    from vllm_backports.maint.pins import repin

    (tmp_path / "versions.toml").write_text(repin((tmp_path / "versions.toml").read_text(), tmp_path / "backports"))
    with pytest.raises(CatalogueError, match="lists 0001-turboquant-spec-decode.patch twice"):
        Catalogue(tmp_path).series("0.33.0")


def test_a_releases_image_defaults_to_its_official_tag(tmp_path):
    assert all(r.image == f"vllm/vllm-openai:v{v}" for v, r in CAT.releases.items())
    text = (REPO / "versions.toml").read_text()
    old = 'series = "0.33.0"\n'
    (tmp_path / "versions.toml").write_text(text.replace(old, old + 'image = "example.org/vllm:0.33.0"\n', 1))
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    cat = Catalogue(tmp_path)
    assert cat.releases["0.33.0"].image == "example.org/vllm:0.33.0"
    assert cat.releases["0.32.0"].image == "vllm/vllm-openai:v0.32.0"


def test_a_series_releases_are_derived_from_the_releases():
    for name in CAT.series_names():
        assert CAT.series(name).releases == tuple(v for v in CAT.versions if CAT.releases[v].series == name), name
    assert CAT.series("0.22.0").releases == ("0.22.0", "0.22.1")


def test_a_series_releases_written_by_hand_are_refused(tmp_path):
    text = (REPO / "versions.toml").read_text()
    old = '[series."0.33.0".files]\n'
    assert old in text
    (tmp_path / "versions.toml").write_text(text.replace(old, 'releases = ["0.33.0"]\n' + old, 1))
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    with pytest.raises(CatalogueError) as caught:
        Catalogue(tmp_path)
    assert str(caught.value) == (
        "versions.toml: [series.\"0.33.0\"]: 'releases' is derived from the releases' series; remove it"
    )


def test_two_series_pinning_identical_files_are_refused(tmp_path):
    text = (REPO / "versions.toml").read_text()
    start = text.index('[series."0.33.0".files]')
    twin = text[start:].replace('[series."0.33.0".files]', '[series."0.33.1".files]', 1)
    (tmp_path / "versions.toml").write_text(text + "\n" + twin)
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    shutil.copytree(REPO / "backports/0.33.0", tmp_path / "backports/0.33.1")
    with pytest.raises(CatalogueError) as caught:
        Catalogue(tmp_path)
    assert str(caught.value) == (
        'versions.toml: [series."0.33.0"] and [series."0.33.1"] pin identical files: keep one, '
        "and name it as the series of the other's releases"
    )


def test_a_series_file_is_read_through_its_pin_or_as_it_stands(tmp_path):
    shutil.copy(REPO / "versions.toml", tmp_path / "versions.toml")
    shutil.copytree(REPO / "backports", tmp_path / "backports")
    cat = Catalogue(tmp_path)
    patch = tmp_path / "backports/0.33.0/0001-turboquant-spec-decode.patch"
    assert cat.series_file("0.33.0", patch.name) == patch.read_bytes()
    patch.write_bytes(patch.read_bytes() + b"\n")
    with pytest.raises(CatalogueError, match="0001-turboquant-spec-decode.patch: sha256 differs"):
        cat.series_file("0.33.0", patch.name)
    assert cat.series_file_unpinned("0.33.0", patch.name) == patch.read_bytes()
    with pytest.raises(FileNotFoundError):
        cat.series_file_unpinned("0.33.0", "0009-absent.patch")


def test_each_patch_of_a_shipped_series_has_a_number_of_its_own():
    # quilt and patch-package users read the number as the order; two alike leave it to the series file
    cat = Catalogue(REPO)
    for name in cat.series_names():
        numbers = [p.name.split("-", 1)[0] for p in cat.series(name).patches]
        assert len(numbers) == len(set(numbers)), (name, numbers)
