"""The manifest beside vLLM, read back as typed data: its format checked first, every field
checked for its type, and written as the same bytes a run always wrote."""

from __future__ import annotations

import dataclasses
import json

import pytest

from vllm_backports.errors import StateError
from vllm_backports.manifest import FORMAT, AppliedPatch, FileHashes, Manifest, parse, read, same
from vllm_backports.tree import open_tree

MANIFEST = Manifest(
    vllm="0.20.0",
    series="s1",
    applied=(AppliedPatch("fix-thing", "0001-fix-thing.patch", "a" * 64),),
    files={"vllm/mod.py": FileHashes("b" * 64, "c" * 64), "vllm/new.py": FileHashes(None, "d" * 64)},
    tool="vllm-backports 0.1.0",
    updated="2026-11-25T00:00:00Z",
)


@pytest.fixture
def tree(home):
    return open_tree(home.tree("0.20.0"))


def _raw(**changes) -> bytes:
    return json.dumps({**MANIFEST.to_json(), **changes}).encode()


def test_written_bytes_read_back_as_the_same_manifest(tree):
    raw = MANIFEST.to_bytes()
    assert json.loads(raw) == {
        "format": 1,
        "tool": "vllm-backports 0.1.0",
        "vllm": "0.20.0",
        "series": "s1",
        "updated": "2026-11-25T00:00:00Z",
        "applied": [{"id": "fix-thing", "patch": "0001-fix-thing.patch", "sha256": "a" * 64}],
        "files": {"vllm/mod.py": {"pristine": "b" * 64, "patched": "c" * 64},
                  "vllm/new.py": {"pristine": None, "patched": "d" * 64}},
    }
    assert raw.endswith(b"}\n") and raw == (json.dumps(json.loads(raw), indent=1, sort_keys=True) + "\n").encode()
    assert parse(raw, tree.state_dir / "manifest.json", tree) == MANIFEST


def test_a_tree_without_a_manifest_has_none(tree):
    assert read(tree) is None
    tree.state_dir.mkdir()
    (tree.state_dir / "manifest.json").write_bytes(MANIFEST.to_bytes())
    assert read(tree) == MANIFEST


@pytest.mark.parametrize(("version", "message"), [
    (2, "manifest format 2 is newer than this tool's (1); upgrade vllm-backports"),
    (0, "manifest format 0 is unknown (this tool reads format 1); remove "),
])
def test_an_unknown_format_is_refused_in_one_line(tree, version, message):
    with pytest.raises(StateError) as caught:
        parse(_raw(format=version), tree.state_dir / "manifest.json", tree)
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert FORMAT == 1


@pytest.mark.parametrize(("raw", "what"), [
    (b"\x00garbage{", "not JSON"),
    (b"[]", "no format"),
    (_raw(format="1"), "no format"),
    (_raw(format=True), "no format"),
    (_raw(applied={"id": "x"}), "bad applied"),
    (_raw(applied=[{"id": "x"}]), "bad applied"),
    (_raw(applied=[{"id": "x", "patch": "p", "sha256": 3}]), "bad applied"),
    (_raw(files=[]), "bad files"),
    (_raw(files={"vllm/mod.py": {"patched": 1}}), "bad files"),
    (_raw(vllm=None), "bad vllm"),
    (_raw(series=["s1"]), "bad series"),
])
def test_a_corrupted_manifest_names_what_is_wrong(tree, raw, what):
    with pytest.raises(StateError, match=rf"manifest.json: corrupted manifest \({what}\); remove .*0\.20\.0"):
        parse(raw, tree.state_dir / "manifest.json", tree)


def test_a_manifest_for_another_release_is_refused(tree):
    with pytest.raises(StateError, match="manifest is for vLLM 0.19.1, but 0.20.0 is installed"):
        parse(_raw(vllm="0.19.1"), tree.state_dir / "manifest.json", tree)


def test_optional_fields_may_be_absent_as_in_older_hand_edits(tree):
    raw = json.dumps({"format": 1, "vllm": "0.20.0", "applied": [{"id": "x", "patch": "p"}], "files": {"f": {}}})
    got = parse(raw.encode(), tree.state_dir / "manifest.json", tree)
    assert got.applied == (AppliedPatch("x", "p", None),) and got.files == {"f": FileHashes(None, None)}
    assert (got.series, got.tool, got.updated) == (None, None, None)


def test_same_ignores_only_when_and_by_which_tool_it_was_written():
    later = dataclasses.replace(MANIFEST, tool="vllm-backports 9", updated="2027-01-01T00:00:00Z")
    assert same(MANIFEST, later) and same(None, None)
    assert not same(MANIFEST, None) and not same(None, MANIFEST)
    assert not same(MANIFEST, dataclasses.replace(MANIFEST, applied=()))
