"""Parse quilt-style patches (DEP-3 header, then unified diff) into typed data.

Everything is bytes so that applying and reverting are byte-exact. Reversing a patch is a
transformation of this data, never a second code path (as in patch-package).
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from .errors import PatchError

REQUIRED_FIELDS = ("Description", "Origin", "Bug", "Forwarded", "Applied-Upstream")
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z-]*):\s?(.*)$")


@dataclass(frozen=True)
class Hunk:
    old_start: int  # 1-based, as in the @@ line; 0 for an empty side
    new_start: int
    old: tuple[bytes, ...]  # lines with their endings
    new: tuple[bytes, ...]

    def reversed(self) -> Hunk:
        return Hunk(self.new_start, self.old_start, self.new, self.old)


@dataclass(frozen=True)
class FilePatch:
    path: str  # relative to site-packages, e.g. vllm/v1/attention/backends/x.py
    hunks: tuple[Hunk, ...]
    creates: bool = False  # old side is /dev/null
    deletes: bool = False  # new side is /dev/null

    def reversed(self) -> FilePatch:
        return FilePatch(
            self.path,
            tuple(h.reversed() for h in self.hunks),
            creates=self.deletes,
            deletes=self.creates,
        )


@dataclass(frozen=True)
class Patch:
    name: str  # file name in the series, e.g. 0001-turboquant-cudagraph.patch
    backport_id: str
    header: dict[str, str] = field(compare=False)
    files: tuple[FilePatch, ...]

    def reversed(self) -> Patch:
        return replace(self, files=tuple(f.reversed() for f in reversed(self.files)))

    @property
    def paths(self) -> tuple[str, ...]:
        return tuple(f.path for f in self.files)


def backport_id_of(name: str) -> str:
    m = re.fullmatch(r"\d{4}-([a-z0-9][a-z0-9-]*)\.patch", name)
    if not m:
        raise PatchError(f"{name}: patch names must look like NNNN-<backport-id>.patch")
    return m.group(1)


def safe_relpath(raw: bytes, patch_name: str) -> str:
    """The path a diff line names, refused if it could leave the vllm tree."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise PatchError(f"{patch_name}: a file path is not UTF-8") from None
    text = text.split("\t", 1)[0].strip()
    if not text or text in ("a/", "b/"):
        raise PatchError(f"{patch_name}: a file header names no path")
    path = PurePosixPath(text)
    if path.is_absolute() or text.startswith("\\") or ":" in path.parts[0]:
        raise PatchError(f"{patch_name}: absolute path {text!r} is not allowed")
    if ".." in path.parts or "." in text.split("/"):
        raise PatchError(f"{patch_name}: path {text!r} leaves the vllm tree")
    if not path.parts or path.parts[0] != "vllm":
        raise PatchError(f"{patch_name}: path {text!r} is outside vllm/")
    if len(path.parts) > 1 and path.parts[1] == ".backports":
        raise PatchError(f"{patch_name}: path {text!r} is vllm-backports' own state")
    return str(path)


def _strip_prefix(raw: bytes, prefix: bytes) -> bytes:
    return raw[len(prefix) :] if raw.startswith(prefix) else raw


def parse_header(text: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    last = None
    for line in text.splitlines():
        if not line.strip():
            last = None
            continue
        m = _FIELD.match(line)
        if m and not line[0].isspace():
            last = m.group(1)
            fields[last] = m.group(2).strip()
        elif last and line[0].isspace():
            fields[last] = (fields[last] + "\n" + line.strip()).strip()
    return fields


def _diff_start(lines: list[bytes], name: str) -> int:
    start = next((i for i, line in enumerate(lines) if line.startswith(b"--- ")), None)
    if start is None:
        raise PatchError(f"{name}: no '--- ' line: not a unified diff")
    return start


def header_of(data: bytes, name: str) -> dict[str, str]:
    """The DEP-3 fields of a patch file: the text before its first '--- ' line."""
    lines = data.splitlines(keepends=True)
    try:
        return parse_header(b"".join(lines[: _diff_start(lines, name)]).decode("utf-8"))
    except UnicodeDecodeError:
        raise PatchError(f"{name}: the DEP-3 header is not UTF-8") from None


ORIGIN_KINDS = ("upstream", "backport", "vendor", "other")
# What a DEP-3 field may point at: a URL, or a commit as `commit:<id>`.
_REF = r"(?:https?://\S+|commit:[0-9a-f]{7,40})"
_ORIGIN = re.compile(rf"(?:(?:{'|'.join(ORIGIN_KINDS)})(?:, {_REF})?|{_REF})")
_FORWARDED = re.compile(rf"no|not-needed|{_REF}")
_APPLIED = re.compile(rf"(?P<version>[0-9][0-9A-Za-z.+-]*)(?:, {_REF})?")


def check_header(header: dict[str, str], today: datetime.date) -> list[str]:
    """What is wrong with a DEP-3 header's content, every problem at once (empty when nothing):
    a maintainer's lint, stricter than parse(), which only needs the required fields present."""
    problems = [f"lacks {f}" for f in (*REQUIRED_FIELDS, "Last-Update") if f not in header]
    if "Description" in header and not header["Description"].split("\n", 1)[0].strip():
        problems.append("Description has no summary on its first line")
    if "Origin" in header and not _ORIGIN.fullmatch(header["Origin"]):
        problems.append(
            f"Origin {header['Origin']!r} is not {'|'.join(ORIGIN_KINDS)}, optionally then ', URL' "
            "(or a URL or commit:ID alone)"
        )
    if "Forwarded" in header and not _FORWARDED.fullmatch(header["Forwarded"]):
        problems.append(f"Forwarded {header['Forwarded']!r} is not no, not-needed or a URL")
    if "Last-Update" in header:
        try:
            # fromisoformat alone would take 20261122 too
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", header["Last-Update"]):
                raise ValueError
            updated = datetime.date.fromisoformat(header["Last-Update"])
        except ValueError:
            problems.append(f"Last-Update {header['Last-Update']!r} is not a date YYYY-MM-DD")
        else:
            if updated > today:
                problems.append(f"Last-Update {updated} is in the future (today is {today})")
    applied = header.get("Applied-Upstream")
    if applied is not None and applied != "no" and not _APPLIED.fullmatch(applied):
        problems.append(f"Applied-Upstream {applied!r} is not no, or a version optionally then ', URL'")
    return problems


def applied_upstream_in(header: dict[str, str]) -> str:
    """The release an Applied-Upstream field names, "" for `no` (or a field check_header refuses)."""
    m = _APPLIED.fullmatch(header.get("Applied-Upstream", "no"))
    return m.group("version") if m else ""


def parse(data: bytes, name: str) -> Patch:
    backport_id = backport_id_of(name)
    lines = data.splitlines(keepends=True)
    start = _diff_start(lines, name)
    header = header_of(data, name)
    missing = [f for f in REQUIRED_FIELDS if not header.get(f)]
    if missing:
        raise PatchError(f"{name}: DEP-3 header lacks {', '.join(missing)}")

    files: list[FilePatch] = []
    i = start
    while i < len(lines):
        line = lines[i]
        if line.startswith(b"diff ") or line.startswith(b"index ") or not line.strip():
            i += 1
            continue
        if not line.startswith(b"--- ") or i + 1 >= len(lines) or not lines[i + 1].startswith(b"+++ "):
            raise PatchError(f"{name}: line {i + 1}: expected a '--- '/'+++ ' file header")
        old_raw = line[4:].rstrip(b"\r\n")
        new_raw = lines[i + 1][4:].rstrip(b"\r\n")
        creates = old_raw.split(b"\t")[0] == b"/dev/null"
        deletes = new_raw.split(b"\t")[0] == b"/dev/null"
        if creates and deletes:
            raise PatchError(f"{name}: line {i + 1}: both sides are /dev/null")
        old_path = None if creates else safe_relpath(_strip_prefix(old_raw, b"a/"), name)
        new_path = None if deletes else safe_relpath(_strip_prefix(new_raw, b"b/"), name)
        if old_path and new_path and old_path != new_path:
            raise PatchError(f"{name}: line {i + 1}: renames are not supported ({old_path} -> {new_path})")
        path = old_path or new_path
        assert path is not None
        i += 2
        hunks: list[Hunk] = []
        while i < len(lines) and lines[i].startswith(b"@@"):
            hunk, i = _parse_hunk(lines, i, name)
            hunks.append(hunk)
        if not hunks:
            raise PatchError(f"{name}: {path}: no hunks")
        if any(f.path == path for f in files):
            raise PatchError(f"{name}: {path} appears twice")
        if creates and (len(hunks) != 1 or hunks[0].old):
            raise PatchError(f"{name}: {path}: a new file cannot have old lines or several hunks")
        if deletes and (len(hunks) != 1 or hunks[0].new):
            raise PatchError(f"{name}: {path}: a deleted file takes exactly one hunk with no new lines")
        files.append(FilePatch(path, tuple(hunks), creates=creates, deletes=deletes))
    return Patch(name=name, backport_id=backport_id, header=header, files=tuple(files))


def _parse_hunk(lines: list[bytes], i: int, name: str) -> tuple[Hunk, int]:
    m = _HUNK.match(lines[i])
    if not m:
        raise PatchError(f"{name}: line {i + 1}: malformed hunk header")
    old_start, new_start = int(m.group(1)), int(m.group(3))
    old_count = int(m.group(2)) if m.group(2) is not None else 1
    new_count = int(m.group(4)) if m.group(4) is not None else 1
    old: list[bytes] = []
    new: list[bytes] = []
    i += 1
    while len(old) < old_count or len(new) < new_count:
        if i >= len(lines):
            raise PatchError(f"{name}: hunk at line {old_start} is truncated")
        line = lines[i]
        tag, body = line[:1], line[1:]
        if line in (b"\n", b"\r\n"):  # some editors strip the space of empty context lines
            tag, body = b" ", line
        if tag == b" ":
            old.append(body)
            new.append(body)
        elif tag == b"-":
            old.append(body)
        elif tag == b"+":
            new.append(body)
        else:
            raise PatchError(f"{name}: line {i + 1}: unexpected {line[:20]!r} inside a hunk")
        i += 1
        if i < len(lines) and lines[i].startswith(b"\\"):  # "\ No newline at end of file"
            target = old if tag == b"-" else new if tag == b"+" else None
            for side in (target,) if target is not None else (old, new):
                side[-1] = side[-1].rstrip(b"\r\n")
            i += 1
    if len(old) != old_count or len(new) != new_count:
        raise PatchError(f"{name}: hunk at line {old_start} has wrong line counts")
    if old == new:
        raise PatchError(f"{name}: hunk at line {old_start} changes nothing")
    return Hunk(old_start, new_start, tuple(old), tuple(new)), i
