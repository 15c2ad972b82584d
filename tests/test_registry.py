"""Reading an image tag's digest and platforms from a registry, against a fake session (no
network): the token, the manifest, and the digest pinned only when it is the manifest's own."""

from __future__ import annotations

import hashlib
import json

import pytest
import requests

from vllm_backports import registry
from vllm_backports.errors import BackportError


def _response(status: int, body: bytes, headers: dict[str, str] | None = None) -> requests.Response:
    response = requests.Response()
    response.status_code, response._content = status, body
    response.headers.update(headers or {})
    return response


def _digest(body: bytes) -> str:
    return "sha256:" + hashlib.sha256(body).hexdigest()


INDEX = json.dumps({
    "manifests": [
        {"platform": {"os": "linux", "architecture": "arm64"}},
        {"platform": {"os": "linux", "architecture": "amd64"}},
        {"platform": {"os": "unknown", "architecture": "unknown"}},  # an attestation
    ]
}).encode()


class FakeSession:
    """The token service, one manifest and any config blobs; each URL asked is kept."""

    def __init__(self, manifest: requests.Response, blobs: dict[str, bytes] | None = None):
        self.manifest, self.blobs = manifest, blobs or {}
        self.asked: list[tuple[str, dict | None]] = []

    def get(self, url, params=None, headers=None, timeout=None):
        self.asked.append((url, headers))
        if url == registry.AUTH:
            return _response(200, b'{"token": "tok"}')
        if "/blobs/" in url:
            return _response(200, self.blobs[url.rsplit("/", 1)[1]])
        return self.manifest


def test_the_digest_is_the_manifests_own_when_the_header_names_it():
    session = FakeSession(_response(200, INDEX, {"Docker-Content-Digest": _digest(INDEX)}))
    info = registry.read_tag(session, "vllm/vllm-openai:v0.20.0")
    assert info == registry.TagInfo("vllm/vllm-openai:v0.20.0", _digest(INDEX), ("linux/amd64", "linux/arm64"))


@pytest.mark.parametrize("header", [
    _digest(INDEX + b" "),  # the digest of other bytes than those sent
    "sha256:" + "0" * 64,
    _digest(INDEX).upper().replace("SHA256:", "sha256:"),  # pins are lowercase hex
])
def test_a_header_digest_that_is_not_the_bodys_sha256_is_refused_in_one_line(header):
    session = FakeSession(_response(200, INDEX, {"Docker-Content-Digest": header}))
    with pytest.raises(BackportError) as err:
        registry.read_tag(session, "vllm/vllm-openai:v0.20.0")
    message = str(err.value)
    assert "\n" not in message and message.startswith("vllm/vllm-openai:v0.20.0: ")
    assert _digest(INDEX) in message and header in message


def test_a_single_image_manifest_is_checked_before_its_config_is_read():
    manifest = json.dumps({"config": {"digest": "sha256:cfg"}, "layers": []}).encode()
    blobs = {"sha256:cfg": b'{"os": "linux", "architecture": "amd64"}'}
    good = FakeSession(_response(200, manifest, {"Docker-Content-Digest": _digest(manifest)}), blobs)
    assert registry.read_tag(good, "vllm/vllm-openai:v0.20.0").platforms == ("linux/amd64",)
    bad = FakeSession(_response(200, manifest, {"Docker-Content-Digest": _digest(b"other")}), blobs)
    with pytest.raises(BackportError, match="not the registry's digest"):
        registry.read_tag(bad, "vllm/vllm-openai:v0.20.0")
    assert not [url for url, _ in bad.asked if "/blobs/" in url]


@pytest.mark.parametrize("image", ["vllm/vllm-openai", ":v0.20.0", "localhost:5000/vllm"])
def test_an_image_that_is_not_repository_colon_tag_is_refused(image):
    with pytest.raises(BackportError, match="is not repository:tag"):
        registry.split(image)


def test_the_repository_is_what_precedes_the_last_colon():
    assert registry.split("localhost:5000/vllm:v1") == ("localhost:5000/vllm", "v1")


def test_the_manifest_is_asked_for_with_the_pull_token_and_every_manifest_type():
    session = FakeSession(_response(200, INDEX, {"Docker-Content-Digest": _digest(INDEX)}))
    registry.read_tag(session, "vllm/vllm-openai:v0.20.0")
    (url, headers), = [(u, h) for u, h in session.asked if u != registry.AUTH]
    assert url == f"{registry.REGISTRY}/v2/vllm/vllm-openai/manifests/v0.20.0"
    assert headers["Authorization"] == "Bearer tok"
    assert set(headers["Accept"].split(", ")) == set(registry.INDEX_TYPES + registry.MANIFEST_TYPES)


@pytest.mark.parametrize("response, message", [
    (_response(404, b"{}"), "vllm/vllm-openai:v9: no such tag in the registry"),
    (_response(500, b"{}"), "vllm/vllm-openai:v9: registry answered HTTP 500"),
    (_response(200, INDEX), "vllm/vllm-openai:v9: the registry sent no content digest"),
    (_response(200, INDEX, {"Docker-Content-Digest": "sha512:abc"}), "the registry sent no content digest"),
])
def test_a_registry_answer_that_pins_nothing_is_one_error(response, message):
    with pytest.raises(BackportError) as err:
        registry.read_tag(FakeSession(response), "vllm/vllm-openai:v9")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_an_unreachable_registry_is_one_error_naming_the_image():
    class Down:
        def get(self, *a, **k):
            raise requests.ConnectionError("connection refused")

    with pytest.raises(BackportError, match=r"cannot reach the registry for vllm/vllm-openai:v0\.20\.0: connection"):
        registry.read_tag(Down(), "vllm/vllm-openai:v0.20.0")


def test_a_config_blob_that_cannot_be_read_is_one_error():
    manifest = json.dumps({"config": {"digest": "sha256:cfg"}, "layers": []}).encode()
    session = FakeSession(_response(200, manifest, {"Docker-Content-Digest": _digest(manifest)}), {"sha256:cfg": b"<"})
    with pytest.raises(BackportError, match="cannot read the image's config from the registry"):
        registry.read_tag(session, "vllm/vllm-openai:v0.20.0")


def test_an_index_of_attestations_alone_has_no_platforms():
    index = json.dumps({"manifests": [{"platform": {"os": "unknown", "architecture": "unknown"}}, {}]}).encode()
    session = FakeSession(_response(200, index, {"Docker-Content-Digest": _digest(index)}))
    assert registry.read_tag(session, "vllm/vllm-openai:v0.20.0").platforms == ()
