"""How generators end: a region of a page replaced between its markers, and drift shown as a diff,
fatal in check mode, written with --write."""

from __future__ import annotations

import pytest

from vllm_backports.errors import BackportError
from vllm_backports.maint.drift import current_text, splice, write_or_diff

PAGE = "# Title\n\nprose\n<!-- x:begin -->\nold\nlines\n<!-- x:end -->\n\nafter\n"


def test_splice_replaces_only_what_lies_between_the_markers():
    new = splice(PAGE, "<!-- x:begin -->", "<!-- x:end -->", "new", "page.md")
    assert new == "# Title\n\nprose\n<!-- x:begin -->\nnew\n<!-- x:end -->\n\nafter\n"
    assert splice(new, "<!-- x:begin -->", "<!-- x:end -->", "new", "page.md") == new


@pytest.mark.parametrize("page", [
    PAGE.replace("<!-- x:end -->", ""),
    PAGE.replace("<!-- x:begin -->", ""),
    "<!-- x:end -->\n<!-- x:begin -->\n",  # the end before the beginning
])
def test_splice_refuses_a_page_without_its_region(page):
    with pytest.raises(BackportError, match=r"^page.md: no <!-- x:begin --> \.\.\. <!-- x:end --> region"):
        splice(page, "<!-- x:begin -->", "<!-- x:end -->", "new", "page.md")


def test_drift_exits_1_in_check_mode_and_is_written_with_write(tmp_path, capsys):
    path = tmp_path / "page.md"
    path.write_text("old\n")
    with pytest.raises(SystemExit) as exit_:
        write_or_diff(path, "old\n", "new\n", False, "current")
    assert exit_.value.code == 1 and "-old\n+new" in capsys.readouterr().out and path.read_text() == "old\n"
    assert write_or_diff(path, "old\n", "new\n", False, "current", exit_on_drift=False) is True
    assert write_or_diff(path, "old\n", "new\n", True, "current") is True and path.read_text() == "new\n"
    assert write_or_diff(path, "new\n", "new\n", False, "current") is False
    assert capsys.readouterr().out.endswith("page.md: current\n")


def test_a_generated_file_is_written_the_first_time_and_reads_empty_before(tmp_path):
    path = tmp_path / "docs" / "new.md"
    assert current_text(path) == ""
    assert write_or_diff(path, "", "first\n", True, "current") is True and path.read_text() == "first\n"
