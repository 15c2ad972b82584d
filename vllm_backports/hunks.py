"""Apply file patches to bytes, strictly: every hunk at its stated line, exact context, no fuzz.

A hunk that does not match is drift; we report where and never guess.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .patchfile import FilePatch


@dataclass(frozen=True)
class Mismatch:
    path: str
    hunk: int  # 1-based index within the file patch
    line: int  # 1-based line in the file where the hunk should start
    reason: str

    def __str__(self) -> str:
        return f"{self.path}: hunk #{self.hunk} at line {self.line}: {self.reason}"


def apply_file(content: bytes | None, patch: FilePatch) -> bytes | None | Mismatch:
    """The new content (None: the file is deleted), or where it does not match."""
    if patch.creates:
        if content is not None:
            return Mismatch(patch.path, 1, 1, "file already exists")
        return b"".join(patch.hunks[0].new)
    if content is None:
        return Mismatch(patch.path, 1, 1, "file is missing")
    lines = content.splitlines(keepends=True)
    out: list[bytes] = []
    pos = 0
    for number, hunk in enumerate(patch.hunks, 1):
        # A hunk that only adds lines names the line *after* which it inserts.
        start = hunk.old_start - 1 if hunk.old else hunk.old_start
        if start < pos:
            return Mismatch(patch.path, number, hunk.old_start, "hunks overlap or are out of order")
        if not hunk.old and start > len(lines):
            return Mismatch(patch.path, number, hunk.old_start, f"file has only {len(lines)} lines")
        actual = lines[start : start + len(hunk.old)]
        if tuple(actual) != hunk.old:
            return Mismatch(patch.path, number, hunk.old_start, _first_difference(hunk.old, actual, start))
        out.extend(lines[pos:start])
        out.extend(hunk.new)
        pos = start + len(hunk.old)
    out.extend(lines[pos:])
    result = b"".join(out)
    if patch.deletes:
        return None if result == b"" else Mismatch(patch.path, len(patch.hunks), 1, "file has extra lines")
    return result


def apply_patches(
    contents: Mapping[str, bytes | None], patches: Iterable[FilePatch]
) -> dict[str, bytes | None] | Mismatch:
    """The files after every file patch in turn, or where the first that does not fit fails.

    A later patch sees what the earlier ones left: a series numbers each patch against the files
    the ones before it leave, not against the pristine release. None is an absent file (one a
    patch creates, before it; one it deletes, after it)."""
    out = dict(contents)
    for fpatch in patches:
        result = apply_file(out.get(fpatch.path), fpatch)
        if isinstance(result, Mismatch):
            return result
        out[fpatch.path] = result
    return out


def _first_difference(expected: tuple[bytes, ...], actual: list[bytes], start: int) -> str:
    for k, want in enumerate(expected):
        if k >= len(actual):
            return f"file ends at line {start + k}, expected {_show(want)}"
        if actual[k] != want:
            return f"line {start + k + 1} is {_show(actual[k])}, expected {_show(want)}"
    return "mismatch"


def _show(line: bytes) -> str:
    text = line.decode("utf-8", "replace").rstrip("\r\n")
    return repr(text if len(text) <= 80 else text[:77] + "...")
