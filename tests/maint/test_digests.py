"""`maint digests`: base images pinned by the digests a registry reports."""

from __future__ import annotations

import hashlib

from click.testing import CliRunner

from vllm_backports import maint

from .conftest import REPO, copy_checkout


class FakeRegistry:
    """Docker Hub's token and manifest endpoints, for one index per tag."""

    def __init__(self, platforms: dict[str, list[str]], single: frozenset[str] = frozenset()):
        self.platforms = platforms
        self.single = single  # tags served as one image manifest, its platform in the config blob
        self.asked: list[str] = []
        self.digests: dict[str, str] = {}  # tag -> the sha256 of the manifest served for it

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
            # annotated with its tag, so that each tag's manifest, and so its digest, is its own
            response._content = jsonlib.dumps({"manifests": manifests, "annotations": {"tag": tag}}).encode()
        self.digests[tag] = "sha256:" + hashlib.sha256(response._content).hexdigest()
        response.headers["Docker-Content-Digest"] = self.digests[tag]
        return response


def _served_tags() -> list[str]:
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.images import image_targets

    return sorted({t["base_tag"].rsplit(":", 1)[1] for t in image_targets(Catalogue(REPO))})


def test_digests_pin_each_served_base_image_and_write_only_when_asked(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
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
    assert fake.digests["v0.20.0"] != fake.digests["v0.20.0-cu129"]
    assert targets["v0-20-0-hopper"]["base"] == "vllm/vllm-openai:v0.20.0@" + fake.digests["v0.20.0"]
    assert targets["v0-20-0-ampere-cu129"]["base"] == "vllm/vllm-openai:v0.20.0-cu129@" + fake.digests["v0.20.0-cu129"]
    assert fake.asked.count("v0.20.0") == 2  # once per run: each tag is read once, not once per arch
    assert CliRunner().invoke(maint.main, ["digests"]).exit_code == 0


def test_digests_fail_when_a_base_image_lacks_a_platform_we_build(tmp_path, monkeypatch):
    copy_checkout(tmp_path, monkeypatch)
    tags = _served_tags()
    fake = FakeRegistry({t: ["linux/amd64"] if t == "v0.20.0" else ["linux/amd64", "linux/arm64"] for t in tags})
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    result = CliRunner().invoke(maint.main, ["digests", "--write"])
    assert result.exit_code == 1 and "vllm/vllm-openai:v0.20.0 has no linux/arm64 image" in result.output


def test_digests_report_a_missing_tag_in_one_line_and_write_nothing(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    fake = FakeRegistry({})
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    before = (home / "versions.toml").read_text()
    result = CliRunner().invoke(maint.main, ["digests", "--write"])
    assert result.exit_code != 0 and "no such tag in the registry" in str(result.exception or result.output)
    assert (home / "versions.toml").read_text() == before


def test_digests_read_a_single_platform_image_from_its_config(tmp_path, monkeypatch):
    """An amd64-only tag served as one image manifest, not an index: fine for Ampere, a missing
    arm64 for Hopper."""
    copy_checkout(tmp_path, monkeypatch)
    tags = _served_tags()
    platforms = {t: ["linux/amd64"] if t == "v0.20.0" else ["linux/amd64", "linux/arm64"] for t in tags}
    fake = FakeRegistry(platforms, single=frozenset({"v0.20.0"}))
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    result = CliRunner().invoke(maint.main, ["digests"])
    assert result.exit_code == 1
    assert "vllm/vllm-openai:v0.20.0 has no linux/arm64 image (v0-20-0-hopper builds it)" in result.output
    assert "v0.20.0 has no linux/amd64" not in result.output


def test_digests_pin_a_release_whose_stanza_has_no_image_digests_line(tmp_path, monkeypatch):
    # image_digests is optional: a release without it must be pinned too, not left by tag
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    last = _served_tags()[-1].removeprefix("v").removesuffix("-cu129")
    text = toml.read_text()
    header = f'[releases."{last}"]\n'
    start = text.index(header)
    end = text.find("\n[", start + 1)
    end = len(text) if end == -1 else end
    stanza = text[start:end]
    line = next(ln for ln in stanza.splitlines(keepends=True) if ln.startswith("image_digests ="))
    toml.write_text(text[:start] + stanza.replace(line, "") + text[end:])
    fake = FakeRegistry(dict.fromkeys(_served_tags(), ["linux/amd64", "linux/arm64"]))
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    assert CliRunner().invoke(maint.main, ["digests"]).exit_code == 1  # drift: the line is owed
    assert CliRunner().invoke(maint.main, ["digests", "--write"]).exit_code == 0
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.images import image_targets

    targets = [t for t in image_targets(Catalogue(home)) if t["vllm"] == last]
    assert targets and all("@sha256:" in t["base"] for t in targets)
    assert CliRunner().invoke(maint.main, ["digests"]).exit_code == 0
    assert toml.read_text().count(header) == 1


def test_digests_rewrite_a_line_spaced_another_way_instead_of_adding_one(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    toml = home / "versions.toml"
    text = toml.read_text()
    assert "\nimage_digests = {}" in text
    toml.write_text(text.replace("\nimage_digests = {}", "\nimage_digests={}", 1))
    fake = FakeRegistry(dict.fromkeys(_served_tags(), ["linux/amd64", "linux/arm64"]))
    monkeypatch.setattr("requests.Session.get", lambda self, *a, **k: fake.get(*a, **k))
    assert CliRunner().invoke(maint.main, ["digests", "--write"]).exit_code == 0
    import tomllib

    tomllib.loads(toml.read_text())  # one image_digests a table, or TOML refuses the file
    assert "image_digests={}" not in toml.read_text()
