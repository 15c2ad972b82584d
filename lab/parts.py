"""The transport: blobs cut into parts of at most a given size (one part a device call), and put
back together on the far side, each blob checked against its sha256 before anything uses it.

A part is a folder of chunk files named `<sha256>.<offset>`: the bytes of that blob from that
offset. The blobs are laid end to end and cut every `limit` bytes, so the parts are as few as the
bytes allow and a blob larger than a part spans several. Standard library only: the far side
runs it with the GPU machine's bare python3.

A wheel's members are deflated one by one, which leaves CUDA's libraries about a third larger
than xz makes them. `repack` stores a wheel's members uncompressed and xz-compresses the whole
(the blob that travels); `unpacked` turns it back into an installable wheel on the far side: the
same members, names and modes, stored rather than deflated.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from zipfile import ZIP_STORED, ZipFile, ZipInfo

BLOCK = 1 << 20
LIMIT = 64 << 20  # what one call of the GPU machine carries, the working tree included
# The machine's check counts the tree as it sits on disk: a 3-byte file takes a 4 KiB block,
# and so does each folder.
# With some 2,200 files in 356 folders that is 8 MiB more than their bytes, enough to refuse a
# full part.
DISK_BLOCK = 4096


def tree_size(root: Path) -> int:
    """What every call carries besides its parts: tracked files and untracked ones git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    files = [root / n for n in out.decode().split("\0") if n and (root / n).is_file()]
    folders = {p for f in files for p in f.relative_to(root).parents}  # "." too; each a block on disk
    return sum(-(-f.stat().st_size // DISK_BLOCK) * DISK_BLOCK for f in files) + len(folders) * DISK_BLOCK


def pack(blobs: Iterable[tuple[str, Path]], limit: int, out: Path) -> list[Path]:
    """Write (sha256, path) blobs, each once, into parts out/p000, out/p001, ... of at most
    `limit` bytes each; returns the part folders. `out` is emptied first."""
    if limit < 1:
        raise ValueError("a part holds at least one byte")
    if out.exists():
        shutil.rmtree(out)
    parts: list[Path] = []
    room = 0
    seen: set[str] = set()
    for digest, path in blobs:
        if digest in seen:
            continue
        seen.add(digest)
        size = path.stat().st_size
        offset = 0
        with open(path, "rb") as src:
            while offset < size or (size == 0 and offset == 0):
                if room == 0:
                    parts.append(out / f"p{len(parts):03d}")
                    parts[-1].mkdir(parents=True)
                    room = limit
                take = min(room, size - offset)
                with open(parts[-1] / f"{digest}.{offset}", "wb") as dst:
                    _copy(src, dst, take)
                offset += take
                room -= take
                if size == 0:
                    break
    return parts


def _copy(src, dst, length: int) -> None:
    while length:
        chunk = src.read(min(BLOCK, length))
        if not chunk:
            raise OSError("the blob ended early")
        dst.write(chunk)
        length -= len(chunk)


def put(part: Path, store: Path) -> int:
    """Copy one part's chunks into `store`/chunks; returns the bytes copied."""
    chunks = store / "chunks"
    chunks.mkdir(parents=True, exist_ok=True)
    total = 0
    for f in sorted(part.iterdir()):
        digest, _, offset = f.name.partition(".")
        if len(digest) != 64 or not offset.isdigit():
            raise ValueError(f"{f}: not a chunk (<sha256>.<offset>)")
        tmp = chunks / f"{f.name}.tmp"
        shutil.copyfile(f, tmp)
        os.replace(tmp, chunks / f.name)
        total += f.stat().st_size
    return total


def index(part_dirs: Iterable[Path], root: Path) -> dict[str, list[str]]:
    """Each part (its path under `root`) and the chunk files it holds, for `unput`."""
    return {p.relative_to(root).as_posix(): sorted(f.name for f in p.iterdir()) for p in part_dirs}


def unput(parts_index: dict[str, list[str]], store: Path, digests: Iterable[str]) -> list[str]:
    """The parts of `parts_index` holding a chunk of one of `digests` that `store` lacks: neither
    the chunk is there nor the blob it belongs to, joined (`assemble`, `unpacked`)."""
    wanted = {d for d in digests if not ((store / d).is_file() or (store / f"{d}.whl").is_file())}
    chunks = store / "chunks"
    return [
        part
        for part, names in parts_index.items()
        if any(n.partition(".")[0] in wanted and not (chunks / n).is_file() for n in names)
    ]


def assemble(store: Path, digest: str, size: int) -> Path:
    """The blob `digest` of `size` bytes at store/<digest>, joined from its chunks and checked; a
    blob already joined is reused. Raises ValueError naming what is missing or wrong."""
    whole = store / digest
    if whole.is_file() and whole.stat().st_size == size:
        return whole
    # two plans may cut a blob at other offsets: a warm machine can hold chunks of both, so the
    # chunks are followed from byte 0, each from where the last ended, and any other left alone
    at = {int(p.name.split(".")[1]): p for p in (store / "chunks").glob(f"{digest}.*") if not p.name.endswith(".tmp")}
    pieces: list[tuple[int, Path]] = []
    expected = 0
    while expected < size:
        if expected not in at:
            if any(o > expected for o in at):
                raise ValueError(f"blob {digest[:12]}: no chunk at byte {expected} (a part was not put)")
            break
        pieces.append((expected, at[expected]))
        expected += at[expected].stat().st_size
        if expected == pieces[-1][0]:  # an empty chunk short of the end: nothing follows it
            break
    if expected != size:
        raise ValueError(f"blob {digest[:12]}: {expected} of {size} bytes put (a part was not put)")
    h = hashlib.sha256()
    tmp = store / f"{digest}.tmp"
    with open(tmp, "wb") as dst:
        for _, piece in pieces:
            with open(piece, "rb") as src:
                while chunk := src.read(BLOCK):
                    h.update(chunk)
                    dst.write(chunk)
    if h.hexdigest() != digest:
        tmp.unlink()
        raise ValueError(f"blob {digest[:12]}: its chunks hash to {h.hexdigest()[:12]}")
    os.replace(tmp, whole)
    for _, piece in pieces:
        piece.unlink()
    return whole


def scratch(folder: Path, suffix: str) -> Path:
    """A new empty file in `folder` no other process writes: plans, and the machine's threads, may
    make the same blob at once."""
    fd, name = tempfile.mkstemp(suffix=suffix, dir=folder)
    os.close(fd)
    return Path(name)


def repack(wheel: Path, dest: Path) -> None:
    """`wheel`'s members, stored uncompressed in a zip that is xz-compressed into `dest`."""
    stored_zip, xz = scratch(dest.parent, ".zip.tmp"), scratch(dest.parent, ".xz.tmp")
    try:
        with ZipFile(wheel) as src, ZipFile(stored_zip, "w", ZIP_STORED) as out:
            for info in src.infolist():
                stored = ZipInfo(info.filename, info.date_time)
                stored.external_attr, stored.create_system = info.external_attr, info.create_system
                if info.is_dir():
                    out.writestr(stored, b"")
                    continue
                with src.open(info) as r, out.open(stored, "w", force_zip64=info.file_size > 1 << 31) as w:
                    shutil.copyfileobj(r, w, BLOCK)
        with open(stored_zip, "rb") as r, lzma.open(xz, "wb", preset=6) as w:
            shutil.copyfileobj(r, w, BLOCK)
        os.replace(xz, dest)
    finally:
        stored_zip.unlink(missing_ok=True)
        xz.unlink(missing_ok=True)


def unpacked(store: Path, digest: str, size: int) -> Path:
    """The wheel a `repack`ed blob holds, at store/<digest>.whl, joined, checked and decompressed
    once (xz checks its own CRC). Raises ValueError for a blob that is not one."""
    whole = store / f"{digest}.whl"
    if whole.is_file():
        return whole
    tmp = scratch(store, ".whl.tmp")
    try:
        with lzma.open(assemble(store, digest, size), "rb") as r, open(tmp, "wb") as w:
            shutil.copyfileobj(r, w, BLOCK)
        os.replace(tmp, whole)
    except (lzma.LZMAError, EOFError) as exc:
        raise ValueError(f"blob {digest[:12]}: not a repacked wheel ({exc})") from None
    finally:
        tmp.unlink(missing_ok=True)
    return whole
