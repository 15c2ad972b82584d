"""The strict engine: every hunk at its stated line with exact context; apply then reverse-apply
gives back the original bytes."""

from __future__ import annotations

import pytest

from diffs import make_patch
from vllm_backports.hunks import Mismatch, apply_file, apply_patches
from vllm_backports.patchfile import FilePatch, Hunk, parse

BASE = b"".join(b"line %d\n" % i for i in range(1, 41))


CASES = {
    "modify-middle": (BASE, BASE.replace(b"line 20\n", b"line twenty\n")),
    "only-add-middle": (BASE, BASE.replace(b"line 20\n", b"line 20\nnew a\nnew b\n")),
    "only-remove-middle": (BASE, BASE.replace(b"line 20\nline 21\n", b"")),
    "change-first-line": (BASE, b"first!\n" + BASE[len(b"line 1\n") :]),
    "add-at-start": (BASE, b"# header\n" + BASE),
    "remove-at-start": (BASE, BASE[len(b"line 1\nline 2\n") :]),
    "change-last-line": (BASE, BASE.replace(b"line 40\n", b"line forty\n")),
    "add-at-end": (BASE, BASE + b"tail 1\ntail 2\n"),
    "remove-at-end": (BASE, BASE.replace(b"line 39\nline 40\n", b"")),
    "two-hunks-apart": (BASE, BASE.replace(b"line 5\n", b"line five\n").replace(b"line 35\n", b"")),
    "hunks-that-grow-and-shrink": (
        BASE,
        BASE.replace(b"line 3\n", b"a\nb\nc\n").replace(b"line 30\nline 31\nline 32\n", b"z\n"),
    ),
    "no-newline-at-eof-change-last": (BASE[:-1], BASE[:-1].replace(b"line 40", b"line 40 changed")),
    "no-newline-at-eof-add-newline": (BASE[:-1], BASE),
    "no-newline-at-eof-drop-newline": (BASE, BASE[:-1]),
    "no-newline-untouched-end": (BASE[:-1], BASE[:-1].replace(b"line 38\n", b"line 38 x\n")),
    "no-newline-far-from-change": (BASE[:-1], BASE[:-1].replace(b"line 2\n", b"line 2 x\n")),
    "crlf": (BASE.replace(b"\n", b"\r\n"), BASE.replace(b"\n", b"\r\n").replace(b"line 10\r\n", b"line 10 fixed\r\n")),
    "crlf-to-lf-one-line": (
        BASE.replace(b"\n", b"\r\n"),
        BASE.replace(b"\n", b"\r\n").replace(b"line 7\r\n", b"line 7\n"),
    ),
    "crlf-no-newline-at-eof": (
        BASE.replace(b"\n", b"\r\n")[:-2],
        BASE.replace(b"\n", b"\r\n")[:-2].replace(b"line 40", b"end"),
    ),
    "empty-lines-in-context": (
        BASE.replace(b"line 9\n", b"\n").replace(b"line 11\n", b"\n"),
        BASE.replace(b"line 9\n", b"\n").replace(b"line 11\n", b"\n").replace(b"line 10\n", b"ten\n"),
    ),
    "everything-replaced": (b"a\nb\n", b"c\nd\ne\n"),
}


@pytest.mark.parametrize("context", [3, 1, 0])
@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip(case, context):
    old, new = CASES[case]
    patch = parse(make_patch(("vllm/x.py", old, new), n=context), "0001-x.patch")
    (fpatch,) = patch.files
    assert apply_file(old, fpatch) == new
    assert apply_file(new, fpatch.reversed()) == old
    (back,) = patch.reversed().files
    assert apply_file(new, back) == old


def test_round_trip_create_and_delete():
    data = b"def f():\n    return 1\n"
    patch = parse(make_patch(("vllm/new.py", None, data), ("vllm/old.py", BASE, None)), "0001-x.patch")
    create, delete = patch.files
    assert create.creates and not create.deletes and delete.deletes and not delete.creates
    assert apply_file(None, create) == data
    assert apply_file(BASE, delete) is None
    rev = patch.reversed()
    assert [f.path for f in rev.files] == ["vllm/old.py", "vllm/new.py"]
    assert apply_file(None, rev.files[0]) == BASE
    assert apply_file(data, rev.files[1]) is None


def test_multi_file_patch_applies_each_file():
    a, b = BASE, BASE.replace(b"line", b"row")
    patch = parse(
        make_patch(("vllm/a.py", a, a.replace(b"line 4\n", b"")), ("vllm/b.py", b, b + b"more\n")), "0001-x.patch"
    )
    assert patch.paths == ("vllm/a.py", "vllm/b.py")
    assert apply_file(a, patch.files[0]) == a.replace(b"line 4\n", b"")
    assert apply_file(b, patch.files[1]) == b + b"more\n"


# ---- strictness -----------------------------------------------------------------------------


def _fix_patch() -> FilePatch:
    fixed = BASE.replace(b"line 10\n", b"line 10 fixed\n")
    return parse(make_patch(("vllm/x.py", BASE, fixed)), "0001-x.patch").files[0]


@pytest.mark.parametrize("shift", [1, -1])
def test_shifted_context_is_a_mismatch(shift):
    fpatch = _fix_patch()
    shifted = b"extra\n" + BASE if shift == 1 else BASE[len(b"line 1\n"):]
    result = apply_file(shifted, fpatch)
    assert isinstance(result, Mismatch)
    assert (result.path, result.hunk, result.line) == ("vllm/x.py", 1, 7)
    assert str(result).startswith("vllm/x.py: hunk #1 at line 7: line 7 is ")


def test_mismatch_names_the_hunk_and_the_line():
    old = BASE
    new = BASE.replace(b"line 5\n", b"five\n").replace(b"line 30\n", b"thirty\n")
    fpatch = parse(make_patch(("vllm/x.py", old, new)), "0001-x.patch").files[0]
    assert len(fpatch.hunks) == 2
    drifted = old.replace(b"line 31\n", b"line 31 \n")  # a trailing space in hunk 2's context
    result = apply_file(drifted, fpatch)
    assert isinstance(result, Mismatch)
    assert result.hunk == 2 and result.line == 27
    assert "line 31 is 'line 31 ', expected 'line 31'" in str(result)
    assert "hunk #2 at line 27" in str(result)


def test_no_fuzz_for_a_changed_context_line():
    fpatch = _fix_patch()
    assert isinstance(apply_file(BASE.replace(b"line 12\n", b"line 12!\n"), fpatch), Mismatch)
    assert isinstance(apply_file(BASE.replace(b"line 10\n", b"line 10\r\n"), fpatch), Mismatch)


def test_already_applied_is_a_mismatch_forward_and_clean_backward():
    fpatch = _fix_patch()
    fixed = BASE.replace(b"line 10\n", b"line 10 fixed\n")
    assert isinstance(apply_file(fixed, fpatch), Mismatch)
    assert apply_file(fixed, fpatch.reversed()) == BASE


def test_file_shorter_than_the_hunk():
    result = apply_file(b"line 1\nline 2\n", _fix_patch())
    assert isinstance(result, Mismatch)
    assert "file ends at line" in result.reason


def test_create_over_an_existing_file_and_patch_of_a_missing_file():
    create = parse(make_patch(("vllm/n.py", None, b"x\n")), "0001-x.patch").files[0]
    assert apply_file(b"", create) == Mismatch("vllm/n.py", 1, 1, "file already exists")
    assert apply_file(None, _fix_patch()) == Mismatch("vllm/x.py", 1, 1, "file is missing")


def test_delete_of_a_file_with_extra_lines():
    delete = parse(make_patch(("vllm/x.py", b"a\nb\n", None)), "0001-x.patch").files[0]
    result = apply_file(b"a\nb\nc\n", delete)
    assert isinstance(result, Mismatch) and result.reason == "file has extra lines"


def test_overlapping_hunks():
    h1 = Hunk(5, 5, (b"line 5\n", b"line 6\n"), (b"five\n", b"line 6\n"))
    h2 = Hunk(6, 6, (b"line 6\n",), (b"six\n",))
    result = apply_file(BASE, FilePatch("vllm/x.py", (h1, h2)))
    assert isinstance(result, Mismatch) and result.hunk == 2 and "overlap" in result.reason


def test_insertion_beyond_the_end_is_a_mismatch():
    hunk = Hunk(100, 101, (), (b"new\n",))
    assert isinstance(apply_file(BASE, FilePatch("vllm/x.py", (hunk,))), Mismatch)


def test_create_with_two_hunks_is_whole_or_refused():
    body = b"--- /dev/null\n+++ b/vllm/n.py\n@@ -0,0 +1,2 @@\n+a\n+b\n@@ -0,0 +3 @@\n+c\n"
    from diffs import HEAD
    from vllm_backports.errors import PatchError

    try:
        patch = parse(HEAD + body, "0001-x.patch")
    except PatchError:
        return  # refusing is fine
    assert apply_file(None, patch.files[0]) == b"a\nb\nc\n"


# ---- apply_patches: a series of patches over several files ----------------------------------

FIRST = BASE.replace(b"line 5\n", b"line five\n")
SECOND = FIRST.replace(b"line 30\n", b"line 30\nadded\n")


def _series() -> list[FilePatch]:
    """Three patches numbered as a series is: each against the files the ones before it leave."""
    return [
        *parse(make_patch(("vllm/x.py", BASE, FIRST)), "0001-a.patch").files,
        *parse(make_patch(("vllm/new.py", None, b"new\n"), ("vllm/gone.py", b"old\n", None)), "0002-b.patch").files,
        *parse(make_patch(("vllm/x.py", FIRST, SECOND)), "0003-c.patch").files,
    ]


def test_apply_patches_gives_each_patch_the_files_the_ones_before_it_left():
    start = {"vllm/x.py": BASE, "vllm/gone.py": b"old\n", "vllm/untouched.py": b"u\n"}
    after = apply_patches(start, _series())
    assert after == {"vllm/x.py": SECOND, "vllm/new.py": b"new\n", "vllm/gone.py": None, "vllm/untouched.py": b"u\n"}
    assert start["vllm/x.py"] == BASE and "vllm/new.py" not in start  # the input is left as it was
    # reversed, in reverse order, the same primitive gives back the start (absent files as None)
    back = apply_patches(after, [f.reversed() for f in reversed(_series())])
    assert back == {**start, "vllm/new.py": None}


def test_apply_patches_stops_at_the_first_patch_that_does_not_fit():
    start = {"vllm/x.py": BASE.replace(b"line 30\n", b"line thirty\n"), "vllm/gone.py": b"old\n"}
    result = apply_patches(start, _series())
    assert isinstance(result, Mismatch) and result.path == "vllm/x.py" and "line thirty" in result.reason
    missing = apply_patches({"vllm/x.py": BASE}, _series())
    assert missing == Mismatch("vllm/gone.py", 1, 1, "file is missing")
