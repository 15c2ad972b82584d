"""The transport: blobs cut into parts of a limit and joined again, checked by sha256."""

from __future__ import annotations

import hashlib
import subprocess

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


def test_the_parts_a_store_lacks_are_named_until_they_are_put_or_their_blob_is_joined(tmp_path):
    a = blob(tmp_path, "a", b"y" * 9000)  # p000, p001, p002
    b = blob(tmp_path, "b", b"z" * 100)  # in p002 beside a's tail
    out = parts.pack([a, b], 4000, tmp_path / "parts")
    index = parts.index(out, tmp_path)
    assert list(index) == ["parts/p000", "parts/p001", "parts/p002"]
    assert index["parts/p002"] == sorted([f"{a[0]}.8000", f"{b[0]}.0"])
    store = tmp_path / "store"
    assert parts.unput(index, store, [a[0], b[0]]) == list(index)  # a bare machine: every part
    parts.put(out[0], store)
    parts.put(out[2], store)
    assert parts.unput(index, store, [a[0], b[0]]) == ["parts/p001"]
    assert parts.unput(index, store, [b[0]]) == []  # only the blobs asked about count
    parts.put(out[1], store)
    parts.assemble(store, a[0], 9000)  # its chunks go: the joined blob stands for them
    assert parts.unput(index, store, [a[0], b[0]]) == []


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


def test_chunks_of_a_blob_cut_elsewhere_by_another_plan_are_left_alone(tmp_path):
    """A warm machine may hold chunks of one blob from two plans that cut it at other offsets."""
    a = blob(tmp_path, "a", bytes(range(256)) * 40)  # 10240 bytes
    b = blob(tmp_path, "b", b"x" * 3000)
    store = tmp_path / "store"
    first = parts.pack([b, a], 4000, tmp_path / "first")  # a's chunks at 0, 1000, 5000, 9000
    parts.put(first[1], store)  # part of it put, then another plan
    second = parts.pack([a], 4000, tmp_path / "second")  # at 0, 4000, 8000
    for p in second:
        parts.put(p, store)
    assert parts.unput(parts.index(second, tmp_path), store, [a[0]]) == []
    assert parts.assemble(store, a[0], 10240).read_bytes() == a[1].read_bytes()


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


def test_a_repacked_wheel_travels_smaller_and_comes_back_with_the_same_members(tmp_path):
    import zipfile

    from fake_wheel import wheel

    import os

    # repeats farther apart than deflate's 32 KiB window, as kernels for several GPUs in one library
    lib = os.urandom(200_000) * 4
    w = wheel(tmp_path, "fakecuda", "12.8")
    with zipfile.ZipFile(w, "a") as z:  # deflated, as wheels are; an executable and a folder entry keep their modes
        z.writestr("fakecuda/lib/libfake.so.12", lib, zipfile.ZIP_DEFLATED)
        tool = zipfile.ZipInfo("fakecuda/bin/tool", (2024, 1, 2, 3, 4, 6))
        tool.external_attr = 0o100755 << 16
        z.writestr(tool, b"#!/bin/sh\n", zipfile.ZIP_DEFLATED)
        z.writestr(zipfile.ZipInfo("fakecuda/empty/"), b"")
    packed = tmp_path / "packed.xz"
    parts.repack(w, packed)
    assert w.stat().st_size > 790_000 and packed.stat().st_size < 210_000
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    store = tmp_path / "store"
    for p in parts.pack([(digest, packed)], 1000, tmp_path / "parts"):
        parts.put(p, store)
    back = parts.unpacked(store, digest, packed.stat().st_size)
    assert back == store / f"{digest}.whl" and parts.unpacked(store, digest, 0) == back  # made once
    with zipfile.ZipFile(w) as a, zipfile.ZipFile(back) as b:
        assert [i.filename for i in a.infolist()] == [i.filename for i in b.infolist()]
        for x, y in zip(a.infolist(), b.infolist(), strict=True):
            assert (a.read(x), x.external_attr, x.date_time) == (b.read(y), y.external_attr, y.date_time)
            assert y.compress_type == zipfile.ZIP_STORED
    assert not [f for f in store.iterdir() if f.name.endswith(".tmp")]


def test_a_repacked_wheel_installs_with_pip(tmp_path):
    import subprocess
    import sys

    from fake_wheel import wheel

    (tmp_path / "w").mkdir()
    w = wheel(tmp_path / "w", "fakecuda", "12.8")
    packed = tmp_path / "packed.xz"
    parts.repack(w, packed)
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    (tmp_path / "store" / "chunks").mkdir(parents=True)
    (tmp_path / "store" / "chunks" / f"{digest}.0").write_bytes(packed.read_bytes())
    whl = tmp_path / "wheels" / w.name
    whl.parent.mkdir()
    whl.hardlink_to(parts.unpacked(tmp_path / "store", digest, packed.stat().st_size))
    cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(tmp_path / "site")]
    subprocess.run([*cmd, str(whl)], check=True)
    assert (tmp_path / "site" / "fakecuda" / "__init__.py").read_text() == "__version__ = VERSION = '12.8'\n"


def test_a_damaged_repacked_blob_fails_its_hash_and_leaves_no_wheel(tmp_path):
    from fake_wheel import wheel

    packed = tmp_path / "packed.xz"
    parts.repack(wheel(tmp_path), packed)
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    (tmp_path / "store" / "chunks").mkdir(parents=True)
    (tmp_path / "store" / "chunks" / f"{digest}.0").write_bytes(packed.read_bytes()[:-1] + b"\0")
    with pytest.raises(ValueError, match="hash to"):
        parts.unpacked(tmp_path / "store", digest, packed.stat().st_size)
    assert not list((tmp_path / "store").glob("*.whl*"))


def test_a_blob_that_is_not_a_repacked_wheel_is_refused_in_one_line_and_leaves_nothing(tmp_path):
    data = b"PK\x03\x04 a wheel, not xz"
    digest = hashlib.sha256(data).hexdigest()
    (tmp_path / "store" / "chunks").mkdir(parents=True)
    (tmp_path / "store" / "chunks" / f"{digest}.0").write_bytes(data)
    with pytest.raises(ValueError, match=f"blob {digest[:12]}: not a repacked wheel"):
        parts.unpacked(tmp_path / "store", digest, len(data))
    assert sorted(f.name for f in (tmp_path / "store").iterdir()) == sorted(["chunks", digest])


def test_tree_size_counts_what_travels_in_whole_disk_blocks(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("ignored/\n")  # 9 bytes: one block
    (tmp_path / "small").write_bytes(b"abc")  # one block
    (tmp_path / "big").write_bytes(b"x" * (parts.DISK_BLOCK + 1))  # two blocks
    (tmp_path / "ignored").mkdir()
    (tmp_path / "ignored" / "huge").write_bytes(b"y" * 100_000)  # stays behind: not counted
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "file").write_bytes(b"z")  # one block, and one for each folder
    assert parts.tree_size(tmp_path) == (4 + 1 + 1 + 2) * parts.DISK_BLOCK  # files, the root, sub/, deeper/
