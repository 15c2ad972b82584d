"""Where vLLM lives: the installed distribution (found through importlib.metadata, without
importing vllm), a site-packages or extracted-wheel directory, or a tree materialised from PyPI.
"""

from __future__ import annotations

import binascii
import csv
import importlib.metadata
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from .errors import PatchError, TargetError, UsageError
from .record import parse_record

STATE_DIR = ".backports"


@dataclass(frozen=True)
class Tree:
    root: Path  # the directory holding vllm/ and vllm-X.dist-info/
    version: str
    record: dict[str, str]  # pristine sha256 per path, from the dist-info RECORD

    @property
    def state_dir(self) -> Path:
        path = self.root / "vllm" / STATE_DIR
        # Through a link the manifest, journal and backups would be written outside the package.
        if path.is_symlink():
            raise TargetError(f"{path}: is a symlink; the state directory must be a directory inside the package")
        return path

    def state_path(self, name: str, directory: bool = False) -> Path:
        """An entry of the state directory, refused when it is a link or not what vllm-backports
        writes there (a regular file, or the backups' directory): through a link a sweep or a
        rollback would delete or overwrite files outside the package, and opening a FIFO waits
        for a writer for ever."""
        path = self.state_dir / name
        try:
            mode = path.lstat().st_mode
        except (FileNotFoundError, NotADirectoryError):
            return path
        if stat.S_ISDIR(mode) if directory else stat.S_ISREG(mode):
            return path
        what = "a symlink" if stat.S_ISLNK(mode) else "not a directory" if directory else "not a regular file"
        raise TargetError(f"{path}: is {what}; vllm-backports wrote no such thing there: remove it and run again")

    def read_state(self, name: str) -> bytes | None:
        """A file of the state directory (the manifest, the journal); None where there is none."""
        try:
            return read_regular(self.state_path(name), follow=False)
        except FileNotFoundError:
            return None

    def path(self, rel: str) -> Path:
        """The file for a patch path, refused if links lead it out of the vllm tree."""
        full = self.root / rel
        top = (self.root / "vllm").resolve()
        parent = full.parent.resolve()
        if parent != top and top not in parent.parents:
            raise PatchError(f"{rel}: resolves outside the vllm tree (through a symlink)")
        if full.is_symlink():
            raise PatchError(f"{rel}: is a symlink; refusing to write through it")
        return full

    def read(self, rel: str) -> bytes | None:
        path = self.path(rel)
        try:
            kind = path.lstat().st_mode
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(kind):
            raise TargetError(f"{rel}: is a directory")
        if not stat.S_ISREG(kind):  # reading a FIFO would wait for a writer for ever
            raise TargetError(f"{rel}: is not a regular file (a FIFO, socket or device); reinstall vllm")
        return read_regular(path)


def read_regular(path: Path, follow: bool = True) -> bytes:
    """The bytes of a regular file, refusing anything else without blocking: opening a FIFO for
    reading waits for a writer, so it is opened non-blocking and checked before it is read."""
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == getattr(os, "ELOOP", 40) and not follow:
            raise TargetError(f"{path}: is a symlink; refusing to read through it") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise TargetError(f"{path}: is not a regular file (a FIFO, socket or device); reinstall vllm")
        return fh.read()


def _dist_info(root: Path) -> Path:
    found = sorted(root.glob("vllm-*.dist-info"))
    if not found:
        raise UsageError(
            f"{root}: no vllm-*.dist-info here; --target takes a site-packages directory or an extracted wheel"
        )
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise TargetError(f"{root}: several vLLM installs ({names}); remove the stale dist-info")
    return found[0]


def _version_of(dist_info: Path) -> str:
    try:
        for line in read_regular(dist_info / "METADATA").decode("utf-8").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    except FileNotFoundError:
        pass
    except UnicodeDecodeError:
        raise TargetError(f"{dist_info / 'METADATA'}: not UTF-8 text; the install is damaged, reinstall vllm") from None
    raise TargetError(f"{dist_info}: no METADATA with a Version line")


def open_tree(root: Path) -> Tree:
    root = root.resolve()
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory")
    dist_info = _dist_info(root)
    if not (root / "vllm").is_dir():
        raise TargetError(f"{root}: has {dist_info.name} but no vllm/ package")
    try:
        record = parse_record(read_regular(dist_info / "RECORD"))
    except FileNotFoundError:
        raise TargetError(f"{dist_info}: no RECORD, so the pristine files cannot be verified") from None
    except (UnicodeDecodeError, csv.Error, binascii.Error) as exc:
        raise TargetError(
            f"{dist_info / 'RECORD'}: unreadable ({exc.__class__.__name__}); the install is damaged, reinstall vllm"
        ) from None
    return Tree(root=root, version=_version_of(dist_info), record=record)


def installed_tree(can_fetch: bool = True) -> Tree:
    """This Python's vLLM. `can_fetch`: whether the command could work on PyPI's files instead
    (apply and check can; status and revert read a tree that is there)."""
    try:
        dist = importlib.metadata.distribution("vllm")
    except importlib.metadata.PackageNotFoundError:
        instead = ", or --fetch to work on PyPI's files" if can_fetch else " holding a vLLM"
        raise UsageError(f"no vLLM is installed in this Python; pass --target DIR{instead}") from None
    return open_tree(Path(str(dist.locate_file(""))))
