"""Which series serves a tree: releases by version, nightlies by exact match of every hunk."""

from __future__ import annotations

import json

import pytest

from cli_runner import run
from conftest import KERNEL, MOD, MOD_FIXED, sha
from tree_snapshot import assert_unchanged, snapshot
from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import UsageError
from vllm_backports.resolve import Requested, parse_vllm, resolve
from vllm_backports.tree import open_tree

NIGHTLY = "0.19.2rc1.dev42"


@pytest.fixture
def nightly(home):
    """A nightly heading for 0.20.0: its files are 0.20.0's pristine files."""
    return home.tree(NIGHTLY, files=home.pristine["0.20.0"])


@pytest.mark.parametrize("requested", ["0.19.2", "auto"])
def test_nightly_gets_the_series_whose_hunks_match(home, nightly, requested):
    result = run("--vllm", requested, "--target", str(nightly), "--json")
    assert result.code == 0, result.out + result.err
    assert result.json["series"] == "s1"
    assert result.json["vllm"] == NIGHTLY
    assert result.json["summary"] == {"applied": 2, "already": 0, "upstream": 0, "failed": 0}
    assert any("nightly" in n and "series s1" in n for n in result.json["notes"])
    assert (nightly / "vllm/mod.py").read_bytes() == MOD_FIXED
    assert (nightly / "vllm/kernels/new_kernel.py").read_bytes() == KERNEL
    manifest = json.loads((nightly / "vllm/.backports/manifest.json").read_text())
    assert manifest["series"] == "s1" and manifest["vllm"] == NIGHTLY
    assert manifest["files"]["vllm/mod.py"]["pristine"] == sha(MOD)


def test_nightly_note_on_stderr_names_the_series(home, nightly):
    result = run("--vllm", "auto", "--target", str(nightly))
    assert result.code == 0
    note = [ln for ln in result.err.splitlines() if ln.startswith("note: ")]
    assert len(note) == 1
    assert f"vLLM {NIGHTLY} is a nightly; series s1 matches every hunk exactly" in note[0]
    assert "also matching: s2" in note[0]  # s2's single patch fits too; s1 is the one ahead of 0.19.2


def test_nightly_resolution_unit(home, nightly):
    res = resolve(Catalogue(home.root), open_tree(nightly), Requested("auto"))
    assert res.release is None
    assert res.series is not None and res.series.name == "s1"
    assert res.version == NIGHTLY
    assert res.pristine == {"vllm/mod.py": sha(MOD)}


def test_nightly_past_every_series_takes_the_latest(home):
    """A nightly after the last release whose files still fit both series takes the newest one."""
    site = home.tree("0.22.0.dev3", files=home.pristine["0.20.0"])
    res = resolve(Catalogue(home.root), open_tree(site), Requested("auto"))
    assert res.series is not None and res.series.name == "s2"


# The image the #40880 reporter ran: a nightly with a local segment (its git hash)
REPORTED = "0.19.2rc1.dev21+g893611813"


def test_the_reported_nightly_image_gets_the_series_its_files_match(home):
    site = home.tree(REPORTED, files=home.pristine["0.20.0"])
    result = run("--vllm", "auto", "--target", str(site), "--json")
    assert result.code == 0, result.out + result.err
    assert result.json["series"] == "s1" and result.json["vllm"] == REPORTED
    assert (site / "vllm/mod.py").read_bytes() == MOD_FIXED


@pytest.mark.parametrize("version", [NIGHTLY, REPORTED])
def test_nightly_matching_no_series(home, tmp_path, version):
    NIGHTLY = version  # noqa: N806 - the assertions below read it
    site = home.tree(NIGHTLY, files={"vllm/mod.py": b"".join(b"other %d\n" % i for i in range(20))})
    before = snapshot(tmp_path)
    for requested in ("0.19.2", "auto"):
        result = run("--vllm", requested, "--target", str(site))
        assert result.code == 2
        assert result.out == ""
        errors = result.err.splitlines()
        assert len(errors) == 1 and errors[0].startswith("error: "), result.err
        assert f"no series matches the files of vLLM {NIGHTLY} exactly" in errors[0]
        assert "hunk #1 at line 8" in errors[0]
        assert "install a published release instead (supported:" in errors[0]
        as_json = run("--vllm", requested, "--target", str(site), "--json")
        assert as_json.code == 2 and as_json.json["exit_code"] == 2
        assert_unchanged(tmp_path, before)


def test_nightly_matches_a_series_whose_patches_touch_one_file_in_turn(home):
    """The second patch fits the file the first one leaves, which no RECORD pins."""
    from diffs import make_patch

    other = b"".join(b"o %d\n" % i for i in range(1, 21))
    first = other.replace(b"o 5\n", b"o five\n")
    files = {
        "series": b"0001-one.patch\n0002-two.patch\n",
        "0001-one.patch": make_patch(("vllm/other.py", other, first)),
        "0002-two.patch": make_patch(("vllm/other.py", first, first.replace(b"o 15\n", b"o fifteen\n"))),
    }
    (home.root / "backports/s3").mkdir()
    for name, data in files.items():
        (home.root / "backports/s3" / name).write_bytes(data)
    pins = "".join(f'"{name}" = "{sha(data)}"\n' for name, data in files.items())
    with open(home.root / "versions.toml", "a") as toml:
        toml.write(f'\n[series."s3".files]\n{pins}')
    site = home.tree(NIGHTLY, files={"vllm/other.py": other})  # no mod.py: s1 and s2 do not fit
    res = resolve(Catalogue(home.root), open_tree(site), Requested("auto"))
    assert res.series is not None and res.series.name == "s3"
    assert res.pristine == {"vllm/other.py": sha(other)}


def test_nightly_whose_file_differs_from_its_record(home, tmp_path):
    site = home.tree(NIGHTLY, files=home.pristine["0.20.0"])
    (site / "vllm/mod.py").write_bytes(MOD.replace(b"line 1\n", b"line one\n"))  # the hunks would still fit
    before = snapshot(tmp_path)
    result = run("--vllm", "auto", "--target", str(site))
    assert result.code == 2
    assert "differs from this install's RECORD" in result.err
    assert_unchanged(tmp_path, before)


def test_unpublished_version_on_a_release_tree(home, tmp_path):
    site = home.tree("0.20.0")
    before = snapshot(tmp_path)
    result = run("--vllm", "0.19.2", "--target", str(site))
    assert result.code == 2
    assert result.err.count("\n") == 1
    assert "vLLM 0.19.2 was never published" in result.err
    assert "0.19.1" in result.err and "0.20.0" in result.err and "auto" in result.err
    assert_unchanged(tmp_path, before)


def test_unpublished_version_on_a_nightly_of_another_line(home):
    site = home.tree("0.20.1.dev3", files=home.pristine["0.20.0"])
    result = run("--vllm", "0.19.2", "--target", str(site))
    assert result.code == 2
    assert "never published" in result.err and "installed here: 0.20.1.dev3" in result.err


def test_release_request_on_a_nightly_tree(home, nightly):
    result = run("--vllm", "0.20.0", "--target", str(nightly))
    assert result.code == 2
    assert f"the vLLM here is {NIGHTLY}, not 0.20.0; pass --vllm auto" in result.err
    assert f"--vllm {NIGHTLY}" not in result.err  # which --vllm would refuse: no entry names it


def test_auto_on_an_unknown_release(home):
    site = home.tree("0.18.0", files={"vllm/mod.py": MOD})
    result = run("--vllm", "auto", "--target", str(site))
    assert result.code == 2
    assert "vLLM 0.18.0 is not in versions.toml" in result.err


def test_parse_vllm(home):
    cat = Catalogue(home.root)
    assert parse_vllm(cat, "auto") == Requested("auto")
    for release in ("0.19.1", "0.20.0", "0.21.0"):
        assert parse_vllm(cat, release) == Requested(release, release=cat.releases[release])
        assert parse_vllm(cat, release).published == cat.releases[release]
    local = parse_vllm(cat, "0.20.0+cu129")  # a local build: checked against the release it was cut from
    assert local.release == cat.releases["0.20.0"] and local.published is None
    assert parse_vllm(cat, "0.19.2") == Requested("0.19.2", unpublished=cat.unpublished["0.19.2"])
    with pytest.raises(UsageError, match="not a version"):
        parse_vllm(cat, "newest")
    with pytest.raises(UsageError, match="did you mean 0.21.0"):
        parse_vllm(cat, "0.21.1")
    with pytest.raises(UsageError, match=r"did you mean 0\.20\.0\?"):  # a release named short: its first patch release
        parse_vllm(cat, "0.20")


# ---- nightlies after an apply ---------------------------------------------------------------



def test_nightly_can_be_reverted(home, nightly):
    assert run("--vllm", "auto", "--target", str(nightly)).code == 0
    result = run("revert", "--vllm", "auto", "--target", str(nightly), "--json")
    assert result.code == 0, result.out
    assert (nightly / "vllm/mod.py").read_bytes() == MOD
    assert not (nightly / "vllm/kernels").exists()


def test_nightly_apply_is_idempotent(home, nightly):
    assert run("--vllm", "auto", "--target", str(nightly)).code == 0
    again = run("--vllm", "auto", "--target", str(nightly), "--json")
    assert again.code == 0, again.out
    assert again.json["summary"]["already"] == 2


def test_nightly_status_after_apply(home, nightly):
    assert run("--vllm", "auto", "--target", str(nightly)).code == 0
    status = run("status", "--target", str(nightly), "--json")
    assert status.code == 0, status.out
    assert status.json["consistent"] is True


def test_unparsable_installed_version_with_unpublished_request(home):
    site = home.tree("0.19.2-local build", files=home.pristine["0.20.0"])
    result = run("--vllm", "0.19.2", "--target", str(site))
    assert result.code == 2
    assert "never published" in result.err


def test_a_nightly_matching_no_series_names_the_series_of_the_releases_nearest_it(home):
    site = home.tree("0.21.1.dev3", files={"vllm/mod.py": b"".join(b"other %d\n" % i for i in range(20))})
    result = run("--vllm", "auto", "--target", str(site))
    assert result.code == 2
    # s2 serves 0.21.0, s1 0.20.0: name order would give s1 first
    assert "exactly (s2: " in result.err and result.err.index("s2: ") < result.err.index("; s1: ")


def test_a_release_request_on_an_unlisted_release_gives_no_advice_auto_would_refuse(home):
    site = home.tree("0.34.0", files={"vllm/mod.py": MOD})
    result = run("--vllm", "0.20.0", "--target", str(site))
    assert result.code == 2
    assert "the vLLM here is 0.34.0, which versions.toml does not list (supported:" in result.err
    assert "--vllm auto" not in result.err
