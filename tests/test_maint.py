"""The generators: check mode fails on drift and shows it; --write fixes it."""

from __future__ import annotations

import shutil
from pathlib import Path

from click.testing import CliRunner

from vllm_backports import maint

REPO = Path(__file__).resolve().parent.parent


def _copy(tmp_path: Path, monkeypatch) -> Path:
    home = tmp_path / "repo"
    home.mkdir()
    for name in ("versions.toml", "README.md", "docs/SUPPORT.md"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / name, home / name)
    shutil.copytree(REPO / "backports", home / "backports")
    monkeypatch.setattr(maint, "HOME", home)
    # The copy has no docs/evidence: its matrix starts from the hand-written cells alone (the
    # repository's own matrix, with its evidence, is checked by CI's `maint matrix`).
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    return home


def test_matrix_drift_is_reported_then_written(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
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

    home = _copy(tmp_path, monkeypatch)
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

    home = _copy(tmp_path, monkeypatch)
    (home / "docs/evidence").mkdir(parents=True)  # a directory without JSON files is no evidence
    (home / "docs/evidence/0.31.0").mkdir()
    assert CliRunner().invoke(maint.main, ["matrix"]).exit_code == 0
    cat = Catalogue(home)
    cells = [line.rsplit(" | ", 1)[1].removesuffix(" |") for line in maint.render_matrix(cat).splitlines()[2:]]
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
    home = _copy(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    toml.write_text(toml.read_text().replace('series = "0.33.0"\nbugs', 'series = ""\nbugs', 1))
    assert CliRunner().invoke(maint.main, ["matrix", "--write"]).exit_code == 0
    row = _matrix_rows((home / "README.md").read_text())["0.33.0"]
    assert row.endswith("| turboquant-prefill-fastpath | - |") and _notes(home)["0.33.0"].startswith("Series -,")


def test_matrix_refuses_bad_or_unknown_evidence_and_writes_nothing(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = _copy(tmp_path, monkeypatch)
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


def test_rehash_pins_an_edited_backport(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    patch = home / "backports/0.33.0/0001-turboquant-spec-decode.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Last-Update: 2026-11-22", b"Last-Update: 2026-11-23"))
    drift = CliRunner().invoke(maint.main, ["rehash"])
    assert drift.exit_code == 1 and "0001-turboquant-spec-decode.patch" in drift.output
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    assert CliRunner().invoke(maint.main, ["rehash"]).exit_code == 0
    from vllm_backports.catalogue import Catalogue

    assert Catalogue(home).series("0.33.0").patches[0].header["Last-Update"] == "2026-11-23"


def _edit_header(home: Path, rel: str, old: str, new: str) -> None:
    path = home / "backports" / rel
    data = path.read_bytes()
    assert old.encode() in data.split(b"\n--- ", 1)[0], old
    path.write_bytes(data.replace(old.encode(), new.encode(), 1))


def test_lint_headers_passes_on_the_repository():
    import datetime

    from vllm_backports.catalogue import Catalogue

    cat = Catalogue(REPO)
    count, problems = maint.lint_headers(cat, datetime.date(2026, 11, 25))
    assert problems == [] and count == sum(len(cat.series(n).patches) for n in cat.series_names())
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 0 and r.output.endswith("DEP-3 headers are consistent with versions.toml\n")


def test_lint_headers_lists_every_problem_with_its_file(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    tq, gdn = "0.33.0/0001-turboquant-spec-decode.patch", "0.20.0/0002-gdn-spec-state.patch"
    _edit_header(home, tq, "Forwarded: not-needed", "Forwarded: maybe")
    _edit_header(home, tq, "Last-Update: 2026-11-22", "Last-Update: 2999-01-01")
    # upstream_in says 0.32.0: the header may not say no, nor name another release
    _edit_header(home, gdn, "Applied-Upstream: 0.32.0, https", "Applied-Upstream: 0.31.0, https")
    pr = "https://github.com/vllm-project/vllm/pull/56531"
    _edit_header(home, "0.31.0/0002-gdn-spec-state.patch", f"Applied-Upstream: 0.32.0, {pr}", "Applied-Upstream: no")
    r = CliRunner().invoke(maint.main, ["lint-headers"])  # problems on stderr, which the result's output holds
    assert r.exit_code == 1
    lines = r.output.splitlines()
    assert f"backports/{tq}: Forwarded 'maybe' is not no, not-needed or a URL" in lines
    assert any(x.startswith(f"backports/{tq}: Last-Update 2999-01-01 is in the future") for x in lines)
    assert (f"backports/{gdn}: Applied-Upstream '0.31.0, https://github.com/vllm-project/vllm/pull/56531' "
            "disagrees with versions.toml: gdn-spec-state is upstream in 0.32.0") in lines
    assert ("backports/0.31.0/0002-gdn-spec-state.patch: Applied-Upstream 'no' disagrees with versions.toml: "
            "gdn-spec-state is upstream in 0.32.0") in lines
    assert lines[-1] == "4 problems in DEP-3 headers"


def test_lint_headers_checks_no_against_a_backport_not_upstream_and_the_bug(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    tq = "0.33.0/0001-turboquant-spec-decode.patch"
    _edit_header(home, tq, "Applied-Upstream: no", "Applied-Upstream: 0.34.0")
    _edit_header(home, tq, "Bug: https://github.com/vllm-project/vllm/issues/40880", "Bug: https://example.org/1")
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 1
    assert (f"backports/{tq}: Applied-Upstream '0.34.0' disagrees with versions.toml: turboquant-spec-decode has no "
            "upstream_in (say no, or give the backport upstream_in)") in r.output
    assert (f"backports/{tq}: Bug 'https://example.org/1' is not versions.toml's "
            "'https://github.com/vllm-project/vllm/issues/40880'") in r.output


def test_lint_headers_reports_unreadable_patches_and_goes_on(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    (home / "backports/0.33.0/0001-turboquant-spec-decode.patch").write_bytes(b"Description: x\n")
    (home / "backports/0.32.0/0001-turboquant-spec-decode.patch").unlink()
    _edit_header(home, "0.31.0/0002-gdn-spec-state.patch", "Forwarded: not-needed", "Forwarded: maybe")
    r = CliRunner().invoke(maint.main, ["lint-headers"])
    assert r.exit_code == 1
    assert "backports/0.33.0/0001-turboquant-spec-decode.patch: no '--- ' line: not a unified diff" in r.output
    assert "backports/0.32.0/0001-turboquant-spec-decode.patch: missing" in r.output
    assert "backports/0.31.0/0002-gdn-spec-state.patch: Forwarded 'maybe'" in r.output


def _watch_with(monkeypatch, files: dict[str, bytes]) -> dict:
    import json

    class FakeResponse:
        def raise_for_status(self):
            pass

        def json(self):
            return {"releases": {"0.33.0": [{}], "0.34.0rc1": [{}], "0.34.0": [{}]}}

    monkeypatch.setattr("requests.Session.get", lambda *a, **k: FakeResponse())
    monkeypatch.setattr(maint, "read_release", lambda v, paths: {"torch": "2.14.0", "files": dict(files)})
    result = CliRunner().invoke(maint.main, ["watch", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _pristine_like_0_33() -> dict[str, bytes]:
    """Files holding exactly the 0.33.0 series' old lines where its hunks expect them."""
    from vllm_backports.catalogue import Catalogue

    files: dict[str, bytes] = {}
    for patch in Catalogue(REPO).series("0.33.0").patches:
        for fpatch in patch.files:
            lines: list[bytes] = []
            for hunk in fpatch.hunks:
                lines += [b"# filler\n"] * (hunk.old_start - 1 - len(lines))
                lines += hunk.old
            files[fpatch.path] = b"".join(lines) + b"# tail\n"
    return files


def _state(report: dict) -> str:
    return report["releases"][0]["backports"][0]["state"]


def test_watch_classifies_a_new_release(monkeypatch):
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.hunks import apply_file

    pristine = _pristine_like_0_33()
    report = _watch_with(monkeypatch, pristine)
    assert [r["vllm"] for r in report["releases"]] == ["0.34.0"]  # pre-releases are not watched
    assert _state(report) == "clean"
    first = next(iter(pristine))
    assert _state(_watch_with(monkeypatch, {**pristine, first: b"# one more line\n" + pristine[first]})) == "port"
    fixed = {f.path: apply_file(pristine[f.path], f) for p in Catalogue(REPO).series("0.33.0").patches for f in p.files}
    assert _state(_watch_with(monkeypatch, fixed)) == "upstream"
    drift = {
        **pristine,
        first: pristine[first].replace(b"supports_spec_as_decode=False", b"supports_spec_as_decode=None"),
    }
    assert b"supports_spec_as_decode=False" in pristine[first] and _state(_watch_with(monkeypatch, drift)) == "drift"


class FakeRegistry:
    """Docker Hub's token and manifest endpoints, for one index per tag."""

    def __init__(self, platforms: dict[str, list[str]], single: frozenset[str] = frozenset()):
        self.platforms = platforms
        self.single = single  # tags served as one image manifest, its platform in the config blob
        self.asked: list[str] = []

    def get(self, url, params=None, headers=None, timeout=None):
        import json as jsonlib

        import requests

        response = requests.Response()
        if url.startswith("https://auth.docker.io/"):
            response.status_code, response._content = 200, b'{"token": "t"}'
            return response
        tag = url.rsplit("/", 1)[1]
        if "/blobs/" in url:
            os_name, arch = self.platforms[tag.removeprefix("sha256:cfg-")][0].split("/")
            response.status_code = 200
            response._content = jsonlib.dumps({"os": os_name, "architecture": arch}).encode()
            return response
        self.asked.append(tag)
        assert headers["Authorization"] == "Bearer t" and "manifest.list" in headers["Accept"]
        if tag not in self.platforms:
            response.status_code, response._content = 404, b"{}"
            return response
        response.status_code = 200
        if tag in self.single:
            response._content = jsonlib.dumps({"config": {"digest": f"sha256:cfg-{tag}"}, "layers": []}).encode()
        else:
            manifests = [{"platform": {"os": "linux", "architecture": p.split("/")[1]}} for p in self.platforms[tag]]
            manifests.append({"platform": {"os": "unknown", "architecture": "unknown"}})  # an attestation
            response._content = jsonlib.dumps({"manifests": manifests}).encode()
        response.headers["Docker-Content-Digest"] = "sha256:" + tag.encode().hex().ljust(64, "0")[:64]
        return response


def _served_tags() -> list[str]:
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.images import image_targets

    return sorted({t["base_tag"].rsplit(":", 1)[1] for t in image_targets(Catalogue(REPO))})


def test_digests_pin_each_served_base_image_and_write_only_when_asked(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    fake = FakeRegistry(dict.fromkeys(_served_tags(), ["linux/amd64", "linux/arm64"]))
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    before = (home / "versions.toml").read_text()
    drift = CliRunner().invoke(maint.main, ["digests"])
    assert drift.exit_code == 1 and "sha256:" in drift.output
    assert (home / "versions.toml").read_text() == before
    assert CliRunner().invoke(maint.main, ["digests", "--write"]).exit_code == 0
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.images import image_targets

    cat = Catalogue(home)
    targets = {t["name"]: t for t in image_targets(cat)}
    assert targets["v0-20-0-hopper"]["base"] == "vllm/vllm-openai:v0.20.0@sha256:" + b"v0.20.0".hex().ljust(64, "0")
    assert targets["v0-20-0-ampere-cu129"]["base"] == (
        "vllm/vllm-openai:v0.20.0-cu129@sha256:" + b"v0.20.0-cu129".hex().ljust(64, "0"))
    assert fake.asked.count("v0.20.0") == 2  # once per run: each tag is read once, not once per arch
    assert CliRunner().invoke(maint.main, ["digests"]).exit_code == 0


def test_digests_fail_when_a_base_image_lacks_a_platform_we_build(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    tags = _served_tags()
    fake = FakeRegistry({t: ["linux/amd64"] if t == "v0.20.0" else ["linux/amd64", "linux/arm64"] for t in tags})
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    result = CliRunner().invoke(maint.main, ["digests", "--write"])
    assert result.exit_code == 1 and "vllm/vllm-openai:v0.20.0 has no linux/arm64 image" in result.output


def test_digests_report_a_missing_tag_in_one_line_and_write_nothing(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    fake = FakeRegistry({})
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    before = (home / "versions.toml").read_text()
    result = CliRunner().invoke(maint.main, ["digests", "--write"])
    assert result.exit_code != 0 and "no such tag in the registry" in str(result.exception or result.output)
    assert (home / "versions.toml").read_text() == before


def test_rehash_pins_added_files_drops_deleted_ones_and_reads_any_key_form(tmp_path, monkeypatch):
    home = _copy(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    text = toml.read_text()
    table = '[series."0.33.0".files]\n'
    body = text[text.index(table):].split("\n\n", 1)[0]
    # A bare key, a placeholder and a comment; a new patch on disk; a pinned file deleted.
    old_pin = body.split('"0001-turboquant-spec-decode.patch" = "')[1].split('"')[0]
    edited = body.replace('"series" = ', "series = ").replace(f'"{old_pin}"', '"TODO"  # why')
    toml.write_text(text.replace(body, edited.rstrip("\n")))  # and no newline at the end of the file
    (home / "backports/0.33.0/0002-extra.patch").write_bytes(b"new\n")
    (home / "backports/0.32.0/0001-turboquant-spec-decode.patch").unlink()
    drift = CliRunner().invoke(maint.main, ["rehash"])
    assert drift.exit_code == 1 and "0002-extra.patch" in drift.output
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    again = CliRunner().invoke(maint.main, ["rehash"])
    assert again.exit_code == 0, again.output  # current now
    import tomllib

    from vllm_backports.digest import sha256

    pins = tomllib.loads(toml.read_text())["series"]
    folder = home / "backports/0.33.0"
    assert pins["0.33.0"]["files"] == {f.name: sha256(f.read_bytes()) for f in folder.iterdir()}
    assert "0001-turboquant-spec-decode.patch" not in pins["0.32.0"]["files"]
    pin = pins["0.33.0"]["files"]["0001-turboquant-spec-decode.patch"]
    assert f'"0001-turboquant-spec-decode.patch" = "{pin}"  # why' in toml.read_text()


def test_describe_gives_a_new_release_a_digest_line_for_digests_to_pin(monkeypatch):
    from types import SimpleNamespace

    wheel = SimpleNamespace(filename="vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl", sha256="ab")
    monkeypatch.setattr(maint, "read_release", lambda v, paths: {"torch": "2.14.0", "wheel": wheel,
                                                                 "record_sha256": "cd", "hashes": {}})
    result = CliRunner().invoke(maint.main, ["describe", "0.34.0"])
    assert result.exit_code == 0, result.output
    assert "\nimage_digests = {}" in result.output


def test_digests_read_a_single_platform_image_from_its_config(tmp_path, monkeypatch):
    """An amd64-only tag served as one image manifest, not an index: fine for Ampere, a missing
    arm64 for Hopper."""
    home = _copy(tmp_path, monkeypatch)
    tags = _served_tags()
    platforms = {t: ["linux/amd64"] if t == "v0.20.0" else ["linux/amd64", "linux/arm64"] for t in tags}
    fake = FakeRegistry(platforms, single=frozenset({"v0.20.0"}))
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    result = CliRunner().invoke(maint.main, ["digests"])
    assert result.exit_code == 1
    assert "vllm/vllm-openai:v0.20.0 has no linux/arm64 image (v0-20-0-hopper builds it)" in result.output
    assert "v0.20.0 has no linux/amd64" not in result.output


def test_rehash_reads_single_quoted_pins_and_ignores_dotfiles_as_the_catalogue_does(tmp_path, monkeypatch):
    import tomllib

    from vllm_backports.catalogue import Catalogue

    home = _copy(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    text = toml.read_text()
    last_series = text.rindex('[series."0.33.0".files]\n"series" = "')
    start = last_series + len('[series."0.33.0".files]\n')
    end = text.index("\n", start)
    toml.write_text(text[:start] + "'series' = 'stale'" + text[end:])
    (home / "backports/0.33.0/.series.swp").write_bytes(b"editor")
    assert CliRunner().invoke(maint.main, ["rehash", "--write"]).exit_code == 0
    pins = tomllib.loads(toml.read_text())["series"]["0.33.0"]["files"]  # parses: no duplicate key
    assert ".series.swp" not in pins and pins["series"] != "stale"
    assert Catalogue(home).series("0.33.0").patches  # loads, swap file and all
