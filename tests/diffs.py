"""Make unified diffs of bytes for the parser and engine tests (difflib, plus the
'\\ No newline at end of file' marker difflib does not write)."""

from __future__ import annotations

import difflib

from conftest import HEADER

HEAD = HEADER.format(desc="generated").encode()


def lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


def file_diff(path: str, old: bytes | None, new: bytes | None, n: int = 3) -> bytes:
    """A unified diff of one file; None on a side means /dev/null (create or delete)."""
    src = b"/dev/null" if old is None else f"a/{path}".encode()
    dst = b"/dev/null" if new is None else f"b/{path}".encode()
    out = []
    for line in difflib.diff_bytes(difflib.unified_diff, lines(old or b""), lines(new or b""), src, dst, n=n):
        if line.startswith((b"---", b"+++", b"@@")):
            out.append(line if line.endswith(b"\n") else line + b"\n")
        elif line.endswith(b"\n"):
            out.append(line)
        else:
            out.append(line + b"\n\\ No newline at end of file\n")
    return b"".join(out)


def make_patch(*files: tuple[str, bytes | None, bytes | None], n: int = 3, header: bytes = HEAD) -> bytes:
    return header + b"".join(file_diff(path, old, new, n) for path, old, new in files)
