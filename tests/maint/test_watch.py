"""`maint watch`: each backport of the newest series against a newer release's files."""

from __future__ import annotations

from types import SimpleNamespace

from click.testing import CliRunner

from vllm_backports import maint
from vllm_backports.maint import watch

from .conftest import REPO


def _watch_with(monkeypatch, files: dict[str, bytes]) -> dict:
    import json

    class FakeResponse:
        def raise_for_status(self):
            pass

        def json(self):
            return {"releases": {"0.33.0": [{}], "0.34.0rc1": [{}], "0.34.0": [{}]}}

    monkeypatch.setattr("requests.Session.get", lambda *a, **k: FakeResponse())
    monkeypatch.setattr(watch, "read_release", lambda v, paths: SimpleNamespace(torch="2.14.0", files=dict(files)))
    result = CliRunner().invoke(maint.main, ["watch", "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def _pristine_like_0_33() -> dict[str, bytes]:
    """Files holding exactly the 0.33.0 series' old lines where its hunks expect them: those of the
    first patch that touches each file (a later one's are what the earlier ones leave)."""
    from vllm_backports.catalogue import Catalogue

    files: dict[str, bytes] = {}
    for patch in Catalogue(REPO).series("0.33.0").patches:
        for fpatch in patch.files:
            if fpatch.path in files:
                continue
            lines: list[bytes] = []
            for hunk in fpatch.hunks:
                lines += [b"# filler\n"] * (hunk.old_start - 1 - len(lines))
                lines += hunk.old
            files[fpatch.path] = b"".join(lines) + b"# tail\n"
    return files


def _state(report: dict) -> str:
    return report["releases"][0]["backports"][0]["state"]


def test_watch_classifies_a_new_release(monkeypatch):
    from vllm_backports.catalogue import Catalogue
    from vllm_backports.hunks import apply_file

    pristine = _pristine_like_0_33()
    report = _watch_with(monkeypatch, pristine)
    assert [r["vllm"] for r in report["releases"]] == ["0.34.0"]  # pre-releases are not watched
    assert _state(report) == "clean"
    first = next(iter(pristine))
    assert _state(_watch_with(monkeypatch, {**pristine, first: b"# one more line\n" + pristine[first]})) == "port"
    # the first backport's own fix, upstream
    first_fix = Catalogue(REPO).series("0.33.0").patches[0]
    fixed = {**pristine, **{f.path: apply_file(pristine[f.path], f) for f in first_fix.files}}
    assert _state(_watch_with(monkeypatch, fixed)) == "upstream"
    drift = {
        **pristine,
        first: pristine[first].replace(b"supports_spec_as_decode=False", b"supports_spec_as_decode=None"),
    }
    assert b"supports_spec_as_decode=False" in pristine[first] and _state(_watch_with(monkeypatch, drift)) == "drift"
