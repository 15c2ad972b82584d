"""The error guard every command runs under: one line and the documented exit code, never a
traceback; under --json one JSON object."""

from __future__ import annotations

import json

import click
import pytest

from vllm_backports.errors import BackportError, UsageError
from vllm_backports.guard import main_guarded, run_guarded
from vllm_backports.report import Reporter


def _raise(exc: BaseException):
    def body():
        raise exc

    return body


@pytest.mark.parametrize("exc, code, message", [
    (UsageError("bad request"), 2, "bad request"),
    (BackportError("drift"), 1, "drift"),
    (click.BadParameter("no such thing"), 2, "Invalid value: no such thing"),
    (click.Abort(), 1, "aborted"),
    (FileNotFoundError(2, "No such file or directory", "/x/y"), 1, "/x/y: No such file or directory"),
    (KeyboardInterrupt(), 1, "interrupted; nothing was left half-written"),
])
def test_what_a_command_raises_is_one_json_line_with_its_code(exc, code, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        run_guarded(Reporter(as_json=True), _raise(exc))
    assert exit_.value.code == code
    assert json.loads(capsys.readouterr().out) == {"error": message, "exit_code": code}


def test_a_body_that_returns_exits_with_its_code():
    for returned, code in ((None, 0), (0, 0), (1, 1)):
        with pytest.raises(SystemExit) as exit_:
            run_guarded(Reporter(as_json=False), lambda r=returned: r)
        assert exit_.value.code == code


def test_a_click_usage_error_is_one_line_and_help_still_exits_0(capsys):
    @click.command()
    @click.option("--n", type=int)
    def cmd(n):
        """Help text."""

    with pytest.raises(SystemExit) as exit_:
        main_guarded(cmd, ["--n", "x"], prog_name="prog")
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exit_:
        main_guarded(cmd, ["--help"], prog_name="prog")
    assert exit_.value.code == 0 and "Help text." in capsys.readouterr().out
