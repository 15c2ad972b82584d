"""The command line's words as one frozen Request, refused in full before any tree is read."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import UsageError
from vllm_backports.request import Command, Output, Request, parse_request


@pytest.fixture
def cat(home) -> Catalogue:
    return Catalogue(home.root)


def _parse(cat, command=Command.APPLY, *, vllm="0.20.0", target=None, fetch=False, only=(), skip=(), lock_timeout=None):
    return parse_request(
        cat, command, vllm=vllm, target=target, fetch=fetch, only=only, skip=skip, lock_timeout=lock_timeout
    )


def test_a_request_is_frozen_data_naming_its_release(cat, tmp_path):
    request = _parse(cat, Command.CHECK, target=tmp_path, only=("fix-thing",))
    assert request.command is Command.CHECK and request.command.value == "check"
    assert request.vllm.release is cat.releases["0.20.0"] and request.target == tmp_path
    assert (request.only, request.skip, request.fetch) == (("fix-thing",), (), False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.fetch = True  # type: ignore[misc]
    assert _parse(cat, vllm=None).vllm.text == "auto" and _parse(cat, vllm=None).vllm.release is None


@pytest.mark.parametrize(("words", "message"), [
    (dict(vllm=" "), "--vllm needs a version"),
    (dict(vllm="newest"), "--vllm 'newest' is not a version"),
    (dict(vllm="0.21.1"), "vLLM 0.21.1 is not in versions.toml"),
    (dict(vllm="0.19.2", fetch=True), "vLLM 0.19.2 was never published"),
    (dict(vllm="0.20.0+cu129", fetch=True), "--fetch needs --vllm with a published release"),
    (dict(vllm="auto", fetch=True), "--fetch needs --vllm with a published release"),
    (dict(only=("fix-thin",)), "no backport 'fix-thin' in series s1 (did you mean fix-thing?)"),
    # not "did you mean 0.20.1?": a pre-release is found from its files, by auto
    (dict(vllm="0.20.0rc1"), "vLLM 0.20.0rc1 is a pre-release, which versions.toml does not list"),
    (dict(vllm="0.21.1.dev5"), "with it installed, --vllm auto finds the series its files match"),
])
def test_bad_words_are_one_usage_error(cat, words, message):
    with pytest.raises(UsageError) as caught:
        _parse(cat, **words)
    assert message in str(caught.value)


@pytest.mark.parametrize("command", [Command.REVERT, Command.STATUS])
def test_revert_and_status_refuse_a_fresh_copy(cat, command):
    with pytest.raises(UsageError, match=f"^{command.value} --fetch needs --target DIR"):
        _parse(cat, command, fetch=True)
    assert _parse(cat, Command.APPLY, fetch=True).fresh_copy


def test_a_selection_is_checked_against_the_series_of_the_release_named(cat):
    assert _parse(cat, only=("add-kernel",), fetch=True, target=Path("/nowhere/yet")).only == ("add-kernel",)
    # 0.19.1 has no series and auto has none until the tree is read: the core checks those
    assert _parse(cat, vllm="0.19.1", only=("anything",)).only == ("anything",)
    assert _parse(cat, vllm="auto", only=("anything",)).only == ("anything",)


@pytest.mark.parametrize(("words", "flag"), [
    (dict(only=("fix-thing",)), "--only"),
    (dict(skip=("fix-thing",)), "--skip"),
    (dict(only=("fix-thing",), skip=("add-kernel",)), "--only"),
])
def test_status_refuses_a_selection(cat, words, flag):
    with pytest.raises(UsageError) as caught:
        _parse(cat, Command.STATUS, **words)
    assert str(caught.value) == f"{flag} goes with apply, revert and check, not status"
    assert _parse(cat, Command.STATUS).command is Command.STATUS


def test_request_holds_what_the_core_needs_and_nothing_of_the_command_line(cat):
    assert {f.name for f in dataclasses.fields(Request)} == {
        "command", "vllm", "target", "fetch", "only", "skip", "output", "lock_timeout"}


def test_a_lock_timeout_outside_its_range_is_refused(cat):
    assert _parse(cat, lock_timeout=5).lock_timeout == 5
    for bad in (-1, 86401):
        with pytest.raises(UsageError, match="--lock-timeout takes seconds"):
            _parse(cat, lock_timeout=bad)


def test_the_output_mode_is_part_of_the_request(cat):
    assert _parse(cat).output is Output.TEXT
    as_json = parse_request(cat, Command.STATUS, vllm="0.20.0", target=None, fetch=False, as_json=True)
    assert as_json.output is Output.JSON
