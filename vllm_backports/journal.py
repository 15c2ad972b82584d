"""The journal of a commit under way (vllm/.backports/journal.json): each file's hash before and
after, and the manifest before, written before the first file changes. A run killed mid-commit
leaves it, and the next run rolls the tree back by it.

It is read back after a crash, so every field is checked before it steers a write: its format
first, then each path (inside the package), hash (a sha256 or null) and mode (permission bits).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from .errors import StateError
from .tree import Tree

FORMAT = 1
NAME = "journal.json"  # in the tree's state directory


@dataclass(frozen=True)
class Entry:
    path: str
    mode: int | None  # permission bits before the run; None for a file the run creates
    before: str | None  # sha256 before the run, None: absent
    after: str | None  # sha256 the run writes, None: removed


@dataclass(frozen=True)
class Journal:
    started: str  # when, UTC
    manifest_before: str | None  # the manifest's text before the run, None: there was none
    files: tuple[Entry, ...]

    def to_bytes(self) -> bytes:
        data = {
            "format": FORMAT,
            "started": self.started,
            "manifest_before": self.manifest_before,
            "files": [{"path": e.path, "mode": e.mode, "before": e.before, "after": e.after} for e in self.files],
        }
        return json.dumps(data, indent=1).encode()


def read(tree: Tree) -> Journal | None:
    """The journal an interrupted run left; None when no commit is under way or interrupted."""
    raw = tree.read_state(NAME)
    return None if raw is None else parse(raw, tree.state_dir / NAME, tree)


def parse(raw: bytes, path: Path, tree: Tree) -> Journal:
    remedy = f"reinstall vllm=={tree.version} and remove {tree.state_dir}"
    unreadable = StateError(f"{path}: interrupted run left an unreadable journal; {remedy}")
    try:
        data = json.loads(raw)
    except ValueError:
        raise unreadable from None
    version = data.get("format") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise unreadable
    if version != FORMAT:
        newer = "newer than this tool's" if version > FORMAT else "unknown to this tool, which reads"
        raise StateError(
            f"{path}: an interrupted run left a journal of format {version}, {newer} ({FORMAT}); roll it back "
            f"with the vllm-backports version that wrote it, or {remedy}"
        )
    try:
        manifest_before = data["manifest_before"]
        entries = data["files"]
        if not isinstance(entries, list) or not (manifest_before is None or isinstance(manifest_before, str)):
            raise unreadable
        files = tuple(
            Entry(_path(e["path"]), _mode(e.get("mode")), _sha(e["before"]), _sha(e["after"])) for e in entries
        )
        started = data.get("started")
    except (ValueError, KeyError, TypeError, AttributeError):
        raise unreadable from None
    return Journal(started if isinstance(started, str) else "", manifest_before, files)


def _path(value: object) -> str:
    path = PurePosixPath(value) if isinstance(value, str) else None
    if path is None or path.is_absolute() or ".." in path.parts or path.parts[:1] != ("vllm",):
        raise ValueError(value)
    return str(path)


def _sha(value: object) -> str | None:
    if value is None or (isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)):
        return value
    raise ValueError(value)


def _mode(value: object) -> int | None:
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0o7777):
        return value
    raise ValueError(value)
