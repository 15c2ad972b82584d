"""Carry a patch to another release's pristine files: find each hunk's exact context at a new
offset, then write an exact diff for that release. Hunks whose context is gone need hand work.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass

from .patchfile import FilePatch, Hunk, Patch


@dataclass(frozen=True)
class Unported:
    path: str
    hunk: int
    reason: str


def relocate(content: bytes, fpatch: FilePatch) -> tuple[FilePatch | None, list[Unported]]:
    """The file patch with every hunk moved to where its old lines occur, nearest first."""
    if fpatch.creates:
        return fpatch, []
    lines = content.splitlines(keepends=True)
    moved: list[Hunk] = []
    problems: list[Unported] = []
    floor = 0
    delta = 0  # how much earlier hunks have grown the file
    for number, hunk in enumerate(fpatch.hunks, 1):
        size = len(hunk.old)
        stated = hunk.old_start - 1 if size else hunk.old_start
        spots = [i for i in range(floor, len(lines) - size + 1) if tuple(lines[i : i + size]) == hunk.old]
        if not spots:
            problems.append(Unported(fpatch.path, number, "context not found"))
            continue
        best = min(spots, key=lambda i: abs(i - stated))
        if len([s for s in spots if abs(s - stated) == abs(best - stated)]) > 1:
            problems.append(Unported(fpatch.path, number, "context is ambiguous"))
            continue
        old_start = best + 1 if size else best
        new_start = (best + 1 if hunk.new else best) + delta
        moved.append(Hunk(old_start, new_start, hunk.old, hunk.new))
        floor = best + size
        delta += len(hunk.new) - size
    if problems:
        return None, problems
    return FilePatch(fpatch.path, tuple(moved), fpatch.creates, fpatch.deletes), []


def format_patch(header: bytes, files: tuple[FilePatch, ...]) -> bytes:
    """Serialise file patches as a unified diff after a verbatim header."""
    out = [header]
    for f in files:
        out.append(b"--- /dev/null\n" if f.creates else f"--- a/{f.path}\n".encode())
        out.append(b"+++ /dev/null\n" if f.deletes else f"+++ b/{f.path}\n".encode())
        for h in f.hunks:
            out.append(f"@@ -{_range(h.old_start, len(h.old))} +{_range(h.new_start, len(h.new))} @@\n".encode())
            out.extend(_body(h))
    return b"".join(out)


def _range(start: int, count: int) -> str:
    return f"{start}" if count == 1 else f"{start},{count}"


def _body(h: Hunk) -> list[bytes]:
    out: list[bytes] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, h.old, h.new, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(_line(b" ", line) for line in h.old[i1:i2])
            continue
        out.extend(_line(b"-", line) for line in h.old[i1:i2])
        out.extend(_line(b"+", line) for line in h.new[j1:j2])
    return out


def _line(tag: bytes, body: bytes) -> bytes:
    if body.endswith(b"\n"):
        return tag + body
    return tag + body + b"\n\\ No newline at end of file\n"


def header_of(data: bytes) -> bytes:
    idx = data.find(b"\n--- ")
    return data[: idx + 1] if idx >= 0 else b""


def port(patch_bytes: bytes, patch: Patch, contents: Mapping[str, bytes | None]) -> tuple[bytes | None, list[Unported]]:
    files: list[FilePatch] = []
    problems: list[Unported] = []
    for fpatch in patch.files:
        if fpatch.creates:
            files.append(fpatch)
            continue
        content = contents.get(fpatch.path)
        if content is None:
            problems.append(Unported(fpatch.path, 0, "file is not in this release"))
            continue
        moved, issues = relocate(content, fpatch)
        problems.extend(issues)
        if moved:
            files.append(moved)
    if problems:
        return None, problems
    return format_patch(header_of(patch_bytes), tuple(files)), []
