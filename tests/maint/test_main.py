"""The maintainer commands run as `python -m vllm_backports.maint` and as `vllm-backports maint`:
the same commands under the command line's guard, an error one line with its documented code."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cli_runner import run
from vllm_backports import maint

from .conftest import REPO, copy_checkout


def test_every_maintainer_command_is_mounted_under_the_command_line():
    from vllm_backports.cli import main

    assert main.commands["maint"] is maint.main
    assert {"describe", "port", "watch", "rehash", "lint-headers", "matrix", "evidence", "bake", "matrix-json",
            "digests", "prune-plan", "upstream-tests", "upstream-tests-doc", "bench-table",
            "owed-table", "verification-index"} == set(maint.main.commands)


def test_a_generator_runs_through_the_mount_and_keeps_its_check_mode(tmp_path, monkeypatch):
    home = copy_checkout(tmp_path, monkeypatch)
    assert run("maint", "rehash").code == 0
    patch = home / "backports/0.33.0/0001-turboquant-spec-decode.patch"
    patch.write_bytes(patch.read_bytes() + b"\n")
    drift = run("maint", "rehash")
    assert drift.code == 1 and "0001-turboquant-spec-decode.patch" in drift.out


@pytest.mark.parametrize("args, code, message", [
    (["upstream-tests", "9.9.9"], 2, "vLLM 9.9.9 is not in versions.toml"),  # a UsageError
    (["matrix-json", "nothing"], 2, "Invalid value for '{releases|images|builds|smoke|gdn-builder}'"),
    (["no-such-command"], 2, "No such command 'no-such-command'."),
])
def test_an_error_is_one_line_with_its_code_under_both_entry_points(args, code, message):
    mounted = run("maint", *args)
    assert (mounted.code, mounted.out) == (code, "")
    (line,) = mounted.err.splitlines()
    assert line.startswith("error: ") and message in line
    done = subprocess.run([sys.executable, "-m", "vllm_backports.maint", *args], capture_output=True, text=True,
                          cwd=REPO)
    assert done.returncode == code and done.stdout == "" and done.stderr == mounted.err


def test_under_json_the_error_is_one_object(tmp_path, monkeypatch):
    result = run("maint", "upstream-tests", "9.9.9", "--json")
    assert result.code == 2 and json.loads(result.out) == {"error": "vLLM 9.9.9 is not in versions.toml",
                                                           "exit_code": 2}


def test_a_backport_error_of_a_generator_is_one_line_and_writes_nothing(tmp_path, monkeypatch):
    from evidence_case import verify_json, write

    home = copy_checkout(tmp_path, monkeypatch)
    readme = (home / "README.md").read_text()
    write(home, "0.99.0", "gdn-ngram", verify_json("0.99.0"))
    result = run("maint", "matrix", "--write")
    assert result.code == 1 and result.out == ""
    assert result.err == "error: docs/evidence/0.99.0: vLLM 0.99.0 is not a release in versions.toml\n"
    assert (home / "README.md").read_text() == readme
