"""Carrying a patch to another release: relocate hunks by exact context, write an exact diff."""

from __future__ import annotations

import pytest

from diffs import HEAD, make_patch
from vllm_backports.hunks import Mismatch, apply_file
from vllm_backports.patchfile import FilePatch, Hunk, parse
from vllm_backports.port import Unported, format_patch, header_of, port, relocate

OLD = b"".join(b"line %d\n" % i for i in range(1, 61))


def change(data: bytes) -> bytes:
    """The backport: one line changed near the top, two lines removed and one added further down."""
    return data.replace(b"line 10\n", b"line 10 fixed\n").replace(b"line 40\nline 41\n", b"merged 40-41\n")


def patch_for(content: bytes, n: int = 3):
    return parse(make_patch(("vllm/x.py", content, change(content)), n=n), "0001-x.patch")


def insert_after(data: bytes, anchor: bytes, lines: int, tag: bytes = b"moved") -> bytes:
    extra = b"".join(b"%s %d\n" % (tag, i) for i in range(lines))
    return data.replace(anchor, anchor + extra, 1)


@pytest.mark.parametrize("shift_top, shift_middle", [(0, 0), (5, 0), (0, 3), (7, 2), (1, 11)])
@pytest.mark.parametrize("context", [3, 1])
def test_relocate_follows_moved_hunks(shift_top, shift_middle, context):
    fpatch = patch_for(OLD, context).files[0]
    moved_release = insert_after(b"".join(b"top %d\n" % i for i in range(shift_top)) + OLD, b"line 25\n", shift_middle)
    if shift_top or shift_middle:
        assert isinstance(apply_file(moved_release, fpatch), Mismatch)  # the strict engine will not guess
    relocated, problems = relocate(moved_release, fpatch)
    assert problems == [] and relocated is not None
    h1, h2 = relocated.hunks
    assert h1.old_start == fpatch.hunks[0].old_start + shift_top
    assert h2.old_start == fpatch.hunks[1].old_start + shift_top + shift_middle
    # new_start accounts for what earlier hunks add or remove (hunk 1 keeps the size)
    assert h2.new_start == h2.old_start
    assert [(h.old, h.new) for h in relocated.hunks] == [(h.old, h.new) for h in fpatch.hunks]
    assert apply_file(moved_release, relocated) == change(moved_release)
    assert apply_file(change(moved_release), relocated.reversed()) == moved_release


def test_new_start_follows_growth_of_earlier_hunks():
    old = OLD
    new = old.replace(b"line 10\n", b"a\nb\nc\n").replace(b"line 40\n", b"forty\n")
    fpatch = parse(make_patch(("vllm/x.py", old, new)), "0001-x.patch").files[0]
    release = b"pre\n" * 4 + old
    relocated, problems = relocate(release, fpatch)
    assert not problems
    assert relocated.hunks[1].old_start == fpatch.hunks[1].old_start + 4
    assert relocated.hunks[1].new_start == relocated.hunks[1].old_start + 2
    assert apply_file(release, relocated) == b"pre\n" * 4 + new


def test_format_patch_reparses_to_the_same_hunks():
    fpatch = patch_for(OLD).files[0]
    release = insert_after(b"x\n" * 9 + OLD, b"line 30\n", 4)
    relocated, _ = relocate(release, fpatch)
    text = format_patch(HEAD, (relocated,))
    assert text.startswith(HEAD)
    reparsed = parse(text, "0001-x.patch")
    assert reparsed.files == (relocated,)
    assert reparsed.header["Description"] == "generated"


@pytest.mark.parametrize("old, new", [
    (b"a\nb\nc", b"a\nB\nc"),  # no newline at end of file on both sides
    (b"a\nb\nc", b"a\nb\nc\n"),  # newline added
    (b"a\r\nb\r\nc\r\n", b"a\r\nB\r\nc\r\n"),  # CRLF
    (b"a\nb\nc\nd\ne\nf\n", b"a\nx\ny\nc\nd\nf\n"),  # replace and delete inside one hunk
])
def test_format_patch_round_trip_of_odd_lines(old, new):
    fpatch = parse(make_patch(("vllm/x.py", old, new)), "0001-x.patch").files[0]
    text = format_patch(HEAD, (fpatch,))
    assert parse(text, "0001-x.patch").files == (fpatch,)
    assert apply_file(old, parse(text, "0001-x.patch").files[0]) == new


def test_format_patch_create_and_delete():
    patch = parse(make_patch(("vllm/new.py", None, b"x\ny\n"), ("vllm/gone.py", b"1\n2\n", None)), "0001-x.patch")
    text = format_patch(HEAD, patch.files)
    assert b"--- /dev/null\n+++ b/vllm/new.py\n" in text
    assert b"--- a/vllm/gone.py\n+++ /dev/null\n" in text
    assert parse(text, "0001-x.patch").files == patch.files


def test_context_gone_is_unported():
    fpatch = patch_for(OLD).files[0]
    release = OLD.replace(b"line 41\n", b"line 41 (rewritten upstream)\n")
    relocated, problems = relocate(release, fpatch)
    assert relocated is None
    assert problems == [Unported("vllm/x.py", 2, "context not found")]


def test_ambiguous_context_is_unported():
    hunk = Hunk(5, 5, (b"same\n", b"target\n"), (b"same\n", b"fixed\n"))
    fpatch = FilePatch("vllm/x.py", (hunk,))
    lines = [b"filler %d\n" % i for i in range(12)]
    lines[1:3] = [b"same\n", b"target\n"]  # index 1: 3 lines before the stated index 4
    lines[7:9] = [b"same\n", b"target\n"]  # index 7: 3 lines after
    relocated, problems = relocate(b"".join(lines), fpatch)
    assert relocated is None
    assert problems == [Unported("vllm/x.py", 1, "context is ambiguous")]


def test_nearest_of_several_spots_wins():
    hunk = Hunk(5, 5, (b"same\n", b"target\n"), (b"same\n", b"fixed\n"))
    lines = [b"filler %d\n" % i for i in range(14)]
    lines[1:3] = [b"same\n", b"target\n"]  # 3 before
    lines[9:11] = [b"same\n", b"target\n"]  # 5 after
    relocated, problems = relocate(b"".join(lines), FilePatch("vllm/x.py", (hunk,)))
    assert not problems and relocated.hunks[0].old_start == 2


def test_port_whole_patch():
    data = make_patch(("vllm/x.py", OLD, change(OLD)), ("vllm/new.py", None, b"k\n"))
    patch = parse(data, "0001-x.patch")
    release = b"shifted\n" * 6 + OLD
    out, problems = port(data, patch, {"vllm/x.py": release})
    assert problems == [] and out is not None
    assert header_of(out) == header_of(data) == HEAD
    ported = parse(out, "0001-x.patch")
    assert ported.header == patch.header
    assert ported.paths == patch.paths
    assert apply_file(release, ported.files[0]) == change(release)
    assert ported.files[1] == patch.files[1]


def test_port_reports_every_problem():
    data = make_patch(("vllm/x.py", OLD, change(OLD)), ("vllm/y.py", b"a\nb\n", b"a\nc\n"))
    patch = parse(data, "0001-x.patch")
    out, problems = port(data, patch, {"vllm/x.py": OLD.replace(b"line 9\n", b"nine\n")})
    assert out is None
    assert problems == [
        Unported("vllm/x.py", 1, "context not found"),
        Unported("vllm/y.py", 0, "file is not in this release"),
    ]
