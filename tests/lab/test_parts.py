"""The transport: blobs cut into parts of a limit and joined again, checked by sha256."""

from __future__ import annotations

import hashlib

import pytest

from lab import parts


def blob(tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return hashlib.sha256(data).hexdigest(), path


def test_blobs_cut_at_the_limit_and_joined_again_byte_for_byte(tmp_path):
    a = blob(tmp_path, "a", bytes(range(256)) * 40)  # 10240 bytes: spans three parts of 4000
    b = blob(tmp_path, "b", b"x" * 3000)
    out = parts.pack([a, b, a], 4000, tmp_path / "parts")  # a twice: kept once
    assert [p.name for p in out] == ["p000", "p001", "p002", "p003"]
    assert all(sum(f.stat().st_size for f in p.iterdir()) <= 4000 for p in out)
    assert sum(f.stat().st_size for p in out for f in p.iterdir()) == 10240 + 3000
    store = tmp_path / "store"
    for p in out:
        parts.put(p, store)
    for digest, path in (a, b):
        joined = parts.assemble(store, digest, path.stat().st_size)
        assert joined.read_bytes() == path.read_bytes()
    assert not list((store / "chunks").iterdir())  # chunks go once joined
    assert parts.assemble(store, a[0], 10240).read_bytes() == a[1].read_bytes()  # joined once, reused


def test_a_part_not_put_is_named_and_nothing_is_joined(tmp_path):
    a = blob(tmp_path, "a", b"y" * 9000)
    out = parts.pack([a], 4000, tmp_path / "parts")
    store = tmp_path / "store"
    parts.put(out[0], store)
    parts.put(out[2], store)
    with pytest.raises(ValueError, match="no chunk at byte 4000"):
        parts.assemble(store, a[0], 9000)
    assert not (store / a[0]).exists()
    parts.put(out[1], store)
    assert parts.assemble(store, a[0], 9000).read_bytes() == b"y" * 9000


def test_a_chunk_with_other_bytes_fails_its_hash_and_leaves_no_blob(tmp_path):
    a = blob(tmp_path, "a", b"z" * 5000)
    out = parts.pack([a], 4000, tmp_path / "parts")
    (out[1] / f"{a[0]}.4000").write_bytes(b"Z" * 1000)
    store = tmp_path / "store"
    for p in out:
        parts.put(p, store)
    with pytest.raises(ValueError, match="hash to"):
        parts.assemble(store, a[0], 5000)
    assert not (store / a[0]).exists() and not list(store.glob("*.tmp"))


def test_a_missing_tail_is_named(tmp_path):
    a = blob(tmp_path, "a", b"q" * 5000)
    out = parts.pack([a], 4000, tmp_path / "parts")
    parts.put(out[0], tmp_path / "store")
    with pytest.raises(ValueError, match="4000 of 5000 bytes"):
        parts.assemble(tmp_path / "store", a[0], 5000)


def test_put_refuses_a_folder_that_is_not_a_part(tmp_path):
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not a chunk"):
        parts.put(tmp_path / "p", tmp_path / "store")
