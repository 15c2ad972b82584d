"""Parsing quilt patches: the DEP-3 header, file headers, hunks, and everything refused."""

from __future__ import annotations

import datetime

import pytest

from conftest import FIX, HEADER, KERNEL_PATCH
from diffs import HEAD, make_patch
from vllm_backports.errors import PatchError
from vllm_backports.patchfile import (
    Hunk,
    applied_upstream_in,
    backport_id_of,
    check_header,
    header_of,
    parse,
    parse_header,
    safe_relpath,
)

NAME = "0001-x.patch"


def body(text: str) -> bytes:
    return HEAD + text.encode()


def refuses(data: bytes, *needles: str, name: str = NAME) -> str:
    with pytest.raises(PatchError) as info:
        parse(data, name)
    message = str(info.value)
    assert message.startswith(f"{name}: "), message
    for needle in needles:
        assert needle in message, (needle, message)
    assert "\n" not in message
    return message


# ---- what parses ----------------------------------------------------------------------------


def test_parse_fix_from_the_synthetic_catalogue():
    patch = parse(FIX.encode(), "0001-fix-thing.patch")
    assert patch.backport_id == "fix-thing"
    assert patch.header["Description"] == "fix line 10"
    assert patch.header["Applied-Upstream"] == "no"
    (f,) = patch.files
    assert (f.path, f.creates, f.deletes) == ("vllm/mod.py", False, False)
    assert f.hunks == (Hunk(8, 8, (b"line 8\n", b"line 9\n", b"line 10\n", b"line 11\n", b"line 12\n"),
                            (b"line 8\n", b"line 9\n", b"line 10 fixed\n", b"line 11\n", b"line 12\n")),)


def test_parse_a_new_file():
    (f,) = parse(KERNEL_PATCH.encode(), "0002-add-kernel.patch").files
    assert f.creates and not f.deletes and f.path == "vllm/kernels/new_kernel.py"
    assert f.hunks[0].old == () and f.hunks[0].new == (b"def kernel():\n", b"    return 1\n")


def test_git_extended_headers_and_blank_lines_are_skipped():
    data = body("diff --git a/vllm/x.py b/vllm/x.py\nindex 1234567..89abcde 100644\n--- a/vllm/x.py\n+++ b/vllm/x.py\n"
                "@@ -1,2 +1,2 @@\n a\n-b\n+c\n\n")
    (f,) = parse(data, NAME).files
    assert f.hunks[0].old == (b"a\n", b"b\n") and f.hunks[0].new == (b"a\n", b"c\n")


def test_timestamps_after_a_tab_are_ignored():
    data = body("--- a/vllm/x.py\t2024-01-01 00:00:00\n+++ b/vllm/x.py\t2024-01-02 00:00:00\n@@ -1 +1 @@\n-a\n+b\n")
    assert parse(data, NAME).paths == ("vllm/x.py",)


def test_counts_default_to_one():
    (f,) = parse(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -3 +3 @@\n-a\n+b\n"), NAME).files
    assert f.hunks == (Hunk(3, 3, (b"a\n",), (b"b\n",)),)


def test_empty_context_line_without_its_space():
    """Some editors strip the single space of an empty context line."""
    (f,) = parse(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n"), NAME).files
    assert f.hunks[0].old == (b"a\n", b"\n", b"b\n")


def test_no_newline_marker_strips_only_its_side():
    data = make_patch(("vllm/x.py", b"a\nb", b"a\nb\n"))
    (f,) = parse(data, NAME).files
    assert f.hunks[0].old == (b"a\n", b"b") and f.hunks[0].new == (b"a\n", b"b\n")
    data = make_patch(("vllm/x.py", b"a\nb", b"a\nc"))
    (f,) = parse(data, NAME).files
    assert f.hunks[0].old == (b"a\n", b"b") and f.hunks[0].new == (b"a\n", b"c")


def test_no_newline_marker_after_context_strips_both_sides():
    data = body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,2 +1,2 @@\n-a\n+A\n b\n\\ No newline at end of file\n")
    (f,) = parse(data, NAME).files
    assert f.hunks[0].old == (b"a\n", b"b") and f.hunks[0].new == (b"A\n", b"b")


def test_crlf_lines_keep_their_endings():
    data = make_patch(("vllm/x.py", b"a\r\nb\r\n", b"a\r\nc\r\n"))
    (f,) = parse(data, NAME).files
    assert f.hunks[0].old == (b"a\r\n", b"b\r\n") and f.hunks[0].new == (b"a\r\n", b"c\r\n")


def test_reversed_swaps_sides_and_file_order():
    patch = parse(make_patch(("vllm/a.py", None, b"x\n"), ("vllm/b.py", b"1\n2\n", b"1\n3\n")), NAME)
    rev = patch.reversed()
    assert rev.paths == ("vllm/b.py", "vllm/a.py")
    assert rev.files[1].deletes and not rev.files[1].creates
    assert rev.files[0].hunks[0].old == patch.files[1].hunks[0].new
    assert rev.reversed() == patch


# ---- DEP-3 header ---------------------------------------------------------------------------


def test_header_continuation_lines_are_joined():
    header = parse_header("Description: first line\n second line\n\tthird line\nOrigin: upstream, https://x\n")
    assert header == {"Description": "first line\nsecond line\nthird line", "Origin": "upstream, https://x"}


def test_header_paragraph_break_ends_a_field():
    header = parse_header("Description: one\n\n continued?\nBug: b\n")
    assert header == {"Description": "one", "Bug": "b"}


def test_header_continuation_in_a_parsed_patch():
    text = HEADER.format(desc="short summary\n a longer explanation\n  over two lines")
    patch = parse((text + "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n").encode(), NAME)
    assert patch.header["Description"] == "short summary\na longer explanation\nover two lines"


@pytest.mark.parametrize("field", ["Description", "Origin", "Bug", "Forwarded", "Applied-Upstream"])
def test_missing_dep3_field(field):
    header = "".join(ln + "\n" for ln in HEAD.decode().splitlines() if not ln.startswith(f"{field}:"))
    refuses(
        (header + "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n").encode(), f"DEP-3 header lacks {field}"
    )


def test_empty_dep3_field():
    header = HEAD.decode().replace("Bug: https://github.com/vllm-project/vllm/issues/1", "Bug:")
    refuses((header + "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n").encode(), "lacks Bug")


def test_header_not_utf8():
    refuses(b"Description: \xff\n" + HEAD + b"--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n", "not UTF-8")


# ---- refused --------------------------------------------------------------------------------


def test_not_a_diff():
    refuses(HEAD + b"just words\n", "not a unified diff")


def test_wrong_counts_too_many_lines():
    refuses(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,1 +1,1 @@\n-a\n-b\n+c\n"), "wrong line counts")


def test_wrong_counts_too_few_lines_leave_a_stray_line():
    refuses(
        body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n d\n"),
        "line 12: expected a '--- '/'+++ ' file header",
    )


def test_truncated_hunk():
    refuses(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -8,5 +8,5 @@\n line 8\n line 9\n-line 10\n+line 10 fixed\n"),
            "hunk at line 8 is truncated")


def test_malformed_hunk_header():
    refuses(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1\n-a\n+b\n"), "malformed hunk header")


def test_garbage_inside_a_hunk():
    refuses(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,2 +1,2 @@\n a\n*b\n+c\n"), "unexpected", "inside a hunk")


def test_file_without_hunks():
    refuses(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n"), "vllm/x.py: no hunks")


def test_missing_plus_line():
    refuses(body("--- a/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n"), "expected a '--- '/'+++ ' file header")


def test_rename():
    refuses(
        body("--- a/vllm/a.py\n+++ b/vllm/b.py\n@@ -1 +1 @@\n-a\n+b\n"),
        "renames are not supported",
        "vllm/a.py -> vllm/b.py",
    )


def test_dev_null_on_both_sides():
    refuses(body("--- /dev/null\n+++ /dev/null\n@@ -0,0 +1 @@\n+a\n"), "both sides are /dev/null")


def test_new_file_with_old_lines():
    refuses(body("--- /dev/null\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n"), "a new file cannot have old lines")


@pytest.mark.parametrize("hunk", ["@@ -1,2 +1,2 @@\n a\n-b\n+b\n", "@@ -1 +1 @@\n a\n"])
def test_no_op_hunk(hunk):
    refuses(body("--- a/vllm/x.py\n+++ b/vllm/x.py\n" + hunk), "changes nothing")


def test_same_file_twice():
    one = "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    refuses(body(one + one), "vllm/x.py appears twice")


@pytest.mark.parametrize("name", ["fix.patch", "001-fix.patch", "0001-Fix.patch", "0001-fix.diff", "0001-.patch",
                                  "0001_fix.patch", "0001-fix.patch.orig", "0001--fix.patch", "0001-fix thing.patch"])
def test_bad_patch_name(name):
    with pytest.raises(PatchError, match="NNNN-<backport-id>.patch"):
        parse(FIX.encode(), name)


@pytest.mark.parametrize("name, bid", [("0001-fix-thing.patch", "fix-thing"), ("0042-gdn2-state.patch", "gdn2-state")])
def test_good_patch_name(name, bid):
    assert backport_id_of(name) == bid


@pytest.mark.parametrize("raw, needle", [
    (b"../evil.py", "leaves the vllm tree"),
    (b"vllm/../../evil.py", "leaves the vllm tree"),
    (b"vllm/./x.py", "leaves the vllm tree"),
    (b"/etc/x", "absolute path"),
    (b"\\\\server\\share", "absolute path"),
    (b"C:/vllm/x.py", "absolute path"),
    (b"tools/x.py", "outside vllm/"),
    (b"vllm-extra/x.py", "outside vllm/"),
    (b"\xffvllm/x.py", "not UTF-8"),
])
def test_unsafe_paths(raw, needle):
    with pytest.raises(PatchError, match=needle.replace(".", r"\.")):
        safe_relpath(raw, NAME)


def test_unsafe_path_in_a_patch_for_both_sides():
    refuses(body("--- a/../evil.py\n+++ b/../evil.py\n@@ -1 +1 @@\n-a\n+b\n"), "'../evil.py' leaves the vllm tree")
    refuses(body("--- /dev/null\n+++ /etc/x\n@@ -0,0 +1 @@\n+a\n"), "absolute path '/etc/x'")


def test_safe_path_is_normalised():
    assert safe_relpath(b"vllm//x.py\t2024-01-01", NAME) == "vllm/x.py"


@pytest.mark.parametrize("header", ["--- a/\n+++ b/vllm/x.py\n", "--- \n+++ b/vllm/x.py\n"])
def test_empty_path(header):
    refuses(body(header + "@@ -1 +1 @@\n-a\n+b\n"), "path")


# ---- DEP-3 content, as `maint lint-headers` checks it ----------------------------------------

TODAY = datetime.date(2026, 11, 25)
GOOD = {
    "Description": "fix a thing\nat length",
    "Origin": "other, https://github.com/vllm-project/vllm/pull/1",
    "Bug": "https://github.com/vllm-project/vllm/issues/1",
    "Forwarded": "not-needed",
    "Applied-Upstream": "0.32.0, https://github.com/vllm-project/vllm/pull/1",
    "Last-Update": "2026-11-25",
}


def test_a_good_header_has_no_problems():
    assert check_header(GOOD, TODAY) == []
    for origin in ("upstream", "vendor, commit:0123abcd", "https://example.org/x.patch", "backport"):
        assert check_header({**GOOD, "Origin": origin}, TODAY) == [], origin
    for forwarded in ("no", "https://github.com/vllm-project/vllm/pull/2"):
        assert check_header({**GOOD, "Forwarded": forwarded}, TODAY) == [], forwarded
    assert check_header({**GOOD, "Applied-Upstream": "no"}, TODAY) == []
    assert check_header({**GOOD, "Applied-Upstream": "0.18.0"}, TODAY) == []


@pytest.mark.parametrize(("field", "value", "needle"), [
    ("Description", "\nonly a long text", "Description has no summary"),
    ("Origin", "ours", "Origin 'ours' is not upstream|backport|vendor|other"),
    ("Origin", "other https://x", "Origin 'other https://x'"),
    ("Origin", "other, see the PR", "Origin 'other, see the PR'"),
    ("Forwarded", "yes", "Forwarded 'yes' is not no, not-needed or a URL"),
    ("Forwarded", "not needed", "Forwarded 'not needed'"),
    ("Last-Update", "2026-11-26", "Last-Update 2026-11-26 is in the future (today is 2026-11-25)"),
    ("Last-Update", "2026-02-30", "Last-Update '2026-02-30' is not a date YYYY-MM-DD"),
    ("Last-Update", "20261122", "Last-Update '20261122' is not a date"),
    ("Last-Update", "22 Nov 2026", "is not a date"),
    ("Applied-Upstream", "yes", "Applied-Upstream 'yes' is not no, or a version"),
    ("Applied-Upstream", "0.32.0 https://x", "Applied-Upstream '0.32.0 https://x'"),
])
def test_each_bad_field_is_named(field, value, needle):
    (problem,) = check_header({**GOOD, field: value}, TODAY)
    assert needle in problem


def test_every_problem_is_reported_at_once():
    header = {**GOOD, "Origin": "ours", "Forwarded": "yes", "Last-Update": "soon"}
    del header["Bug"]
    problems = check_header(header, TODAY)
    assert len(problems) == 4 and problems[0] == "lacks Bug"
    assert check_header({}, TODAY) == [f"lacks {f}" for f in (
        "Description", "Origin", "Bug", "Forwarded", "Applied-Upstream", "Last-Update")]


def test_applied_upstream_in_names_the_release():
    assert applied_upstream_in(GOOD) == "0.32.0"
    assert applied_upstream_in({**GOOD, "Applied-Upstream": "no"}) == ""
    assert applied_upstream_in({}) == ""


def test_header_of_reads_only_what_comes_before_the_diff():
    header = header_of(HEAD + b"--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1 +1 @@\n-Origin: x\n+b\n", NAME)
    assert header == parse_header(HEAD.decode())
    with pytest.raises(PatchError, match="not a unified diff"):
        header_of(HEAD, NAME)
