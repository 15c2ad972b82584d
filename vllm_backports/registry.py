"""Read an image tag's digest and platforms from a container registry (Docker Registry HTTP API v2,
anonymous pull token), so images can be built on a base pinned by digest. The digest pinned is the
sha256 of the manifest as received, which must be the one the registry's header names."""

from __future__ import annotations

from dataclasses import dataclass

import requests

from .digest import sha256
from .errors import BackportError

# Docker Hub's registry and token service; `vllm/vllm-openai` lives there.
REGISTRY = "https://registry-1.docker.io"
AUTH = "https://auth.docker.io/token"
INDEX_TYPES = ("application/vnd.oci.image.index.v1+json", "application/vnd.docker.distribution.manifest.list.v2+json")
MANIFEST_TYPES = ("application/vnd.oci.image.manifest.v1+json", "application/vnd.docker.distribution.manifest.v2+json")


@dataclass(frozen=True)
class TagInfo:
    image: str  # repository:tag as asked
    digest: str  # of the index (multi-platform) or of the single manifest
    platforms: tuple[str, ...]  # "linux/amd64", ...: an index's entries, or a single image's own


def split(image: str) -> tuple[str, str]:
    repo, sep, tag = image.rpartition(":")
    if not sep or not repo or "/" in tag:
        raise BackportError(f"image {image!r} is not repository:tag")
    return repo, tag


def read_tag(session: requests.Session, image: str) -> TagInfo:
    repo, tag = split(image)
    try:
        token = session.get(
            AUTH, params={"service": "registry.docker.io", "scope": f"repository:{repo}:pull"}, timeout=30
        )
        token.raise_for_status()
        auth = {"Authorization": f"Bearer {token.json()['token']}"}
        response = session.get(
            f"{REGISTRY}/v2/{repo}/manifests/{tag}",
            timeout=30,
            headers={**auth, "Accept": ", ".join(INDEX_TYPES + MANIFEST_TYPES)},
        )
    except requests.RequestException as exc:
        raise BackportError(f"cannot reach the registry for {image}: {exc}") from None
    if response.status_code == 404:
        raise BackportError(f"{image}: no such tag in the registry")
    if not response.ok:
        raise BackportError(f"{image}: registry answered HTTP {response.status_code}")
    digest = response.headers.get("Docker-Content-Digest", "")
    if not digest.startswith("sha256:"):
        raise BackportError(f"{image}: the registry sent no content digest")
    # The header is the registry's word; the digest pinned must be that of the bytes it sent.
    if (actual := "sha256:" + sha256(response.content)) != digest:
        raise BackportError(f"{image}: the manifest received hashes to {actual}, not the registry's digest {digest}")
    body = response.json()
    if "manifests" not in body and "config" in body:
        # A single-platform image: its platform is in the config blob, not in the manifest.
        try:
            config = session.get(f"{REGISTRY}/v2/{repo}/blobs/{body['config']['digest']}", timeout=30, headers=auth)
            config.raise_for_status()
            raw = config.json()
        except (requests.RequestException, ValueError, KeyError) as exc:
            raise BackportError(f"{image}: cannot read the image's config from the registry: {exc}") from None
        return TagInfo(image, digest, (f"{raw.get('os')}/{raw.get('architecture')}",))
    platforms = tuple(
        sorted(
            f"{m['platform']['os']}/{m['platform']['architecture']}"
            for m in body.get("manifests", [])
            # Indexes also list attestation manifests, whose platform is unknown/unknown.
            if m.get("platform", {}).get("os") not in (None, "unknown")
        )
    )
    return TagInfo(image, digest, platforms)
