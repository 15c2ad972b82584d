"""The journal of a commit, read back after a crash: its format checked first, then every field
that could steer a write, and written as the same bytes a commit always wrote."""

from __future__ import annotations

import json

import pytest

from vllm_backports.errors import StateError
from vllm_backports.journal import FORMAT, Entry, Journal, parse, read
from vllm_backports.tree import open_tree

JOURNAL = Journal(
    started="2026-11-25T00:00:00Z",
    manifest_before=None,
    files=(Entry("vllm/mod.py", 0o644, "a" * 64, "b" * 64), Entry("vllm/new.py", None, None, "c" * 64)),
)


@pytest.fixture
def tree(home):
    return open_tree(home.tree("0.20.0"))


def test_written_bytes_keep_their_layout_and_read_back_the_same(tree):
    raw = JOURNAL.to_bytes()
    assert raw == json.dumps({
        "format": 1,
        "started": "2026-11-25T00:00:00Z",
        "manifest_before": None,
        "files": [{"path": "vllm/mod.py", "mode": 0o644, "before": "a" * 64, "after": "b" * 64},
                  {"path": "vllm/new.py", "mode": None, "before": None, "after": "c" * 64}],
    }, indent=1).encode()
    assert parse(raw, tree.state_dir / "journal.json", tree) == JOURNAL
    assert read(tree) is None  # no commit under way


def test_an_entry_without_a_mode_is_read_as_one_of_an_older_commit(tree):
    data = json.loads(JOURNAL.to_bytes())
    del data["files"][0]["mode"]
    assert parse(json.dumps(data).encode(), tree.state_dir / "journal.json", tree).files[0].mode is None


@pytest.mark.parametrize(("version", "says"), [(2, "newer than this tool's (1)"), (0, "unknown to this tool")])
def test_an_unknown_format_is_refused_in_one_line_with_the_remedy(tree, version, says):
    data = {**json.loads(JOURNAL.to_bytes()), "format": version}
    with pytest.raises(StateError) as caught:
        parse(json.dumps(data).encode(), tree.state_dir / "journal.json", tree)
    message = str(caught.value)
    assert f"journal of format {version}, {says}" in message and "reinstall vllm==0.20.0" in message
    assert "\n" not in message and FORMAT == 1


@pytest.mark.parametrize("raw", [
    b"{not json",
    b"[]",
    json.dumps({"files": [], "manifest_before": None}).encode(),  # every journal ever written had a format
    json.dumps({"format": "1", "files": [], "manifest_before": None}).encode(),
    json.dumps({"format": 1, "files": [], "manifest_before": 3}).encode(),
    json.dumps({"format": 1, "files": ["vllm/mod.py"], "manifest_before": None}).encode(),
    json.dumps({"format": 1, "files": [{"path": "vllm/../x.py", "before": None, "after": None}],
                "manifest_before": None}).encode(),
])
def test_a_journal_that_cannot_be_trusted_is_unreadable(tree, raw):
    with pytest.raises(StateError, match="interrupted run left an unreadable journal; reinstall vllm==0.20.0"):
        parse(raw, tree.state_dir / "journal.json", tree)
