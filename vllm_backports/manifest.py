"""The manifest beside vLLM (vllm/.backports/manifest.json): which backports vllm-backports
applied there and the hashes of the files it wrote, so that a later run tells its own changes
from anyone else's. Read back as typed data, its format checked before anything trusts it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .errors import StateError
from .tree import Tree

FORMAT = 1
NAME = "manifest.json"  # in the tree's state directory


@dataclass(frozen=True)
class AppliedPatch:
    id: str
    patch: str  # its file name in the series
    sha256: str | None  # the patch file's pin when it was applied: revert refuses another one


@dataclass(frozen=True)
class FileHashes:
    pristine: str | None  # None: the series creates the file
    patched: str | None  # None: the series deletes it


@dataclass(frozen=True, kw_only=True)
class Manifest:
    vllm: str
    series: str | None
    applied: tuple[AppliedPatch, ...]
    files: Mapping[str, FileHashes]
    tool: str | None = None  # "vllm-backports VERSION" that wrote it
    updated: str | None = None  # when, UTC

    def same_as(self, other: Manifest | None) -> bool:
        """Equal but for when and by which tool version it was written: a run that would change
        only those writes nothing."""
        return other is not None and replace(self, tool=None, updated=None) == replace(other, tool=None, updated=None)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "tool": self.tool,
            "vllm": self.vllm,
            "series": self.series,
            "updated": self.updated,
            "applied": [applied_json(a) for a in self.applied],
            "files": {path: {"pristine": f.pristine, "patched": f.patched} for path, f in self.files.items()},
        }

    def to_bytes(self) -> bytes:
        return (json.dumps(self.to_json(), indent=1, sort_keys=True) + "\n").encode()


def applied_json(applied: AppliedPatch) -> dict[str, str | None]:
    return {"id": applied.id, "patch": applied.patch, "sha256": applied.sha256}


def same(a: Manifest | None, b: Manifest | None) -> bool:
    """Two manifests, either of them absent, equal but for when and by which tool they were written."""
    return a is None and b is None or a is not None and a.same_as(b)


def read(tree: Tree) -> Manifest | None:
    """The tree's manifest; None where vllm-backports has applied nothing."""
    raw = tree.read_state(NAME)
    return None if raw is None else parse(raw, tree.state_dir / NAME, tree)


def parse(raw: bytes, path: Path, tree: Tree) -> Manifest:
    """A manifest's bytes (read at `path`, named in errors) as typed data, for the vLLM
    installed in `tree`."""
    remedy = f"remove {path} after reinstalling vllm=={tree.version} (pip install --force-reinstall --no-deps)"

    def corrupted(what: str) -> StateError:
        return StateError(f"{path}: corrupted manifest ({what}); {remedy}")

    try:
        data = json.loads(raw)
    except ValueError:
        raise corrupted("not JSON") from None
    version = data.get("format") if isinstance(data, dict) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise corrupted("no format")
    if version > FORMAT:
        raise StateError(
            f"{path}: manifest format {version} is newer than this tool's ({FORMAT}); upgrade vllm-backports"
        )
    if version != FORMAT:
        raise StateError(f"{path}: manifest format {version} is unknown (this tool reads format {FORMAT}); {remedy}")
    fields: dict[str, Any] = {}
    for key, read_field in FIELDS.items():
        try:
            fields[key] = read_field(data.get(key))
        except TypeError:
            raise corrupted(f"bad {key}") from None
    manifest = Manifest(**fields)
    if manifest.vllm != tree.version:
        raise StateError(f"{path}: manifest is for vLLM {manifest.vllm}, but {tree.version} is installed; {remedy}")
    return manifest


# Each field is checked for its type: a hand-edited or truncated manifest is one line naming
# the file, not a traceback deep in a plan.
def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(value)
    return value


def _optional(value: object) -> str | None:
    return None if value is None else _text(value)


def _list(value: object) -> list:
    if not isinstance(value, list):
        raise TypeError(value)
    return value


def _dict(value: object) -> dict:
    if not isinstance(value, dict):
        raise TypeError(value)
    return value


def _applied(value: object) -> AppliedPatch:
    entry = _dict(value)
    return AppliedPatch(_text(entry.get("id")), _text(entry.get("patch")), _optional(entry.get("sha256")))


def _hashes(value: object) -> FileHashes:
    entry = _dict(value)
    return FileHashes(_optional(entry.get("pristine")), _optional(entry.get("patched")))


FIELDS: dict[str, Callable[[object], Any]] = {
    "vllm": _text,
    "series": _optional,
    "applied": lambda value: tuple(_applied(a) for a in _list(value)),
    "files": lambda value: {_text(p): _hashes(f) for p, f in _dict(value).items()},
    "tool": _optional,
    "updated": _optional,
}
