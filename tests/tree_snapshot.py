"""Byte-exact snapshots of a directory tree, for asserting that a refused run changed nothing."""

from __future__ import annotations

import os
from pathlib import Path

DIR = "<dir>"


def snapshot(root: Path, mtimes: bool = False) -> dict[str, object]:
    """Every path under root (root itself included): file bytes, '<dir>', or ('symlink', target).

    With mtimes, directories also record their st_mtime_ns, so a file created and removed again
    in them (a probe written through a symlink, say) shows up.
    """
    root = Path(root)
    out: dict[str, object] = {".": (DIR, root.stat().st_mtime_ns) if mtimes else DIR}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in dirnames + filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                out[rel] = ("symlink", os.readlink(full))
            elif full.is_dir():
                out[rel] = (DIR, full.stat().st_mtime_ns) if mtimes else DIR
            else:
                out[rel] = full.read_bytes()
    return out


def diff(before: dict[str, object], after: dict[str, object]) -> str:
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    return f"added={added} removed={removed} changed={changed}"


def assert_unchanged(root: Path, before: dict[str, object], allow_added: frozenset[str] = frozenset(),
                     mtimes: bool = False) -> None:
    """The tree is exactly as snapshotted, except for paths in allow_added (known leaks only)."""
    after = snapshot(root, mtimes=mtimes)
    for path in allow_added:
        if path not in before:
            after.pop(path, None)
    assert after == before, diff(before, after)
