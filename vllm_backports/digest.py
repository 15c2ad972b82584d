"""sha256 as the project pins it: lowercase hex, and None for a file that is absent."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_of(data: bytes | None) -> str | None:
    """A file's hash, None for a file that is absent (before it is created, after it is removed)."""
    return None if data is None else sha256(data)


def sha256_file(path: Path) -> str:
    """A file's hash read in blocks: a release's archive can be larger than memory should hold."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
