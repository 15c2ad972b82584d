"""`maint prune-plan`: its inputs checked before anything is planned."""

from __future__ import annotations

from click.testing import CliRunner

from vllm_backports import maint


def test_prune_plan_refuses_a_versions_file_that_is_not_json_lists(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("")
    for text, needle in (('[{"id": 1}] oops', "not JSON at character"), ('{"id": 1}', "expected JSON lists")):
        versions = tmp_path / "versions.json"
        versions.write_text(text)
        r = CliRunner().invoke(maint.main, ["prune-plan", "--versions", str(versions), "--notes", str(notes)])
        assert r.exit_code == 2, r.output
        assert needle in r.output and "Traceback" not in r.output
