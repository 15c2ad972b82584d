"""What --help shows a user: the commands and options a user sets, accurate for each command;
the maintainers' commands and verify's lab options out of sight but still working."""

from __future__ import annotations

import re

from click.testing import CliRunner

from cli_runner import run
from vllm_backports import maint
from vllm_backports.cli import main


def _commands(help_text: str) -> list[str]:
    section = help_text.split("Commands:", 1)[1]
    return [line.split()[0] for line in section.splitlines() if line.startswith("  ") and line.split()]


def test_top_level_help_hides_the_maintainer_commands():
    result = run("--help")
    assert result.code == 0
    commands = _commands(result.out)
    assert "maint" not in commands
    assert {"apply", "check", "status", "revert", "list", "verify"} <= set(commands)
    assert run("maint", "--help").code == 0  # hidden, still callable


def test_maintainer_commands_refuse_without_a_checkout(tmp_path, monkeypatch):
    monkeypatch.setattr(maint, "HOME", tmp_path)  # an installed wheel: no versions.toml, README.md, docs/
    result = run("maint", "matrix")
    assert result.code == 2, (result.out, result.err)
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert "needs a checkout of vllm-backports: run it from the repository" in lines[0]


def test_status_and_revert_describe_vllm_as_what_is_installed():
    for command in ("status", "revert"):
        text = " ".join(run(command, "--help").out.split())
        assert "release to patch" not in text, command
        assert "--vllm VERSION" in text
        # --fetch works there only on a copy an earlier apply --fetch --target laid out
        assert "--fetch With --target DIR" in text, command
    status = run("status", "--help").out
    assert "--only" not in status and "--skip" not in status  # status reports the whole tree
    apply_text = " ".join(run("apply", "--help").out.split())
    assert "release to patch" in apply_text


USER_OPTIONS = ("--model", "--prompts", "--json", "--tp", "--kv-cache")
LAB_OPTIONS = ("--check-accepted-counts", "--calibrate-kv", "--model-class", "--float32-reference", "--control")


def test_verify_help_shows_a_users_options_first():
    result = run("verify", "--help")
    assert result.code == 0
    for option in USER_OPTIONS:
        assert re.search(rf"^\s+{option}\b", result.out, re.M), option
    for option in LAB_OPTIONS:
        assert option not in result.out, option
    assert "--help-all" in result.out
    assert len(result.out.splitlines()) < 50


def test_verify_help_all_lists_every_option():
    result = run("verify", "--help-all")
    assert result.code == 0
    for option in USER_OPTIONS + LAB_OPTIONS:
        assert option in result.out, option
    # the full help leaves the short one as it was
    assert "--check-accepted-counts" not in run("verify", "--help").out


def test_verify_hidden_options_still_parse():
    ctx = main.commands["verify"].make_context(
        "verify", ["--check-accepted-counts", "--calibrate-kv", "auto", "--model-class", "qwen3_5", "--rounds", "2"]
    )
    assert ctx.params["check_accepted_counts"] is True
    assert ctx.params["calibrate_kv"] == "auto"
    assert ctx.params["model_class"] == "qwen3_5"
    assert ctx.params["rounds"] == 2
    assert CliRunner().invoke(main, ["verify", "--help"]).exit_code == 0


def test_verify_help_all_names_every_prompt_set():
    from vllm_backports.verify.scenarios import PROMPT_SETS

    text = " ".join(run("verify", "--help-all").out.split())
    for name in PROMPT_SETS:
        assert f" {name} (" in text or f" {name};" in text, name
    # the short help says a prompts file goes with --server too, and in what shapes
    assert "--model or --server" in " ".join(run("verify", "--help").out.split())
