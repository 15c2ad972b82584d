"""sha256 as versions.toml pins it: lowercase hex, None for an absent file, the same read in blocks."""

from __future__ import annotations

import hashlib

from vllm_backports.digest import sha256, sha256_file, sha256_of


def test_hex_digest_and_none_for_an_absent_file():
    assert sha256(b"abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert sha256_of(b"abc") == sha256(b"abc") and sha256_of(None) is None
    assert sha256_of(b"") == hashlib.sha256(b"").hexdigest()  # an empty file is present


def test_a_file_read_in_blocks_hashes_as_its_bytes(tmp_path):
    data = bytes(range(256)) * 8193  # over two of sha256_file's 1 MiB blocks, not a multiple of one
    path = tmp_path / "archive"
    path.write_bytes(data)
    assert sha256_file(path) == sha256(data)
