"""The core: a checked Request in, a Run or a Status out; the tree found, planned, locked and
committed there, every word to the user through the callbacks it is handed."""

from __future__ import annotations

import fcntl
import threading
from pathlib import Path

import pytest

from conftest import KERNEL, MOD, MOD_FIXED
from vllm_backports import core, engine
from vllm_backports.catalogue import Catalogue
from vllm_backports.request import Command, parse_request

KERNEL_PATH = "vllm/kernels/new_kernel.py"


@pytest.fixture
def cat(home) -> Catalogue:
    return Catalogue(home.root)


def _request(cat, command, site, vllm="0.20.0", **words):
    return parse_request(cat, command, vllm=vllm, target=site, fetch=False, **words)


def _do(cat, command, site, vllm="0.20.0", **words):
    said: list[str] = []
    request = _request(cat, command, site, vllm, **words)
    go = core.status if command is Command.STATUS else core.run
    return go(cat, request, said.append, said.append), said


def test_apply_then_status_then_revert(home, cat):
    site = home.tree("0.20.0")
    applied, said = _do(cat, Command.APPLY, site)
    assert [o.state for o in applied.plan.outcomes] == [engine.APPLIED, engine.APPLIED] and said == []
    assert (site / "vllm/mod.py").read_bytes() == MOD_FIXED and (site / KERNEL_PATH).read_bytes() == KERNEL
    seen, _ = _do(cat, Command.STATUS, site)
    assert seen.consistent and seen.not_applied == [] and seen.journal is None and seen.leftovers == ()
    assert [(f.path, f.state) for f in seen.files] == [(KERNEL_PATH, "patched"), ("vllm/mod.py", "patched")]
    reverted, _ = _do(cat, Command.REVERT, site)
    assert {o.state for o in reverted.plan.outcomes} == {engine.REVERTED}
    assert (site / "vllm/mod.py").read_bytes() == MOD and not (site / KERNEL_PATH).exists()
    pristine, _ = _do(cat, Command.STATUS, site)
    assert pristine.consistent and pristine.manifest is None and pristine.not_applied == ["fix-thing", "add-kernel"]


def test_check_plans_clean_and_writes_nothing(home, cat):
    site = home.tree("0.20.0")
    checked, _ = _do(cat, Command.CHECK, site, only=("fix-thing",))
    assert [(o.id, o.state) for o in checked.plan.outcomes] == [("fix-thing", engine.CLEAN),
                                                               ("add-kernel", engine.SKIPPED)]
    assert (site / "vllm/mod.py").read_bytes() == MOD and not (site / "vllm/.backports").exists()


def test_a_release_without_a_series_has_no_plan(home, cat):
    done, _ = _do(cat, Command.APPLY, home.tree("0.19.1"), vllm="0.19.1")
    assert done.plan is None and done.resolution.release is cat.releases["0.19.1"]


def test_notes_go_through_the_callback(home, cat):
    site = home.tree("0.19.2rc1.dev42", files=home.pristine["0.20.0"])
    _, said = _do(cat, Command.APPLY, site, vllm="auto")
    assert len(said) == 1 and "is a nightly; series s1" in said[0]


def test_status_judges_a_file_edited_after_the_apply(home, cat):
    site = home.tree("0.20.0")
    _do(cat, Command.APPLY, site)
    (site / "vllm/mod.py").write_bytes(MOD_FIXED + b"# mine\n")
    seen, _ = _do(cat, Command.STATUS, site)
    assert not seen.consistent and ("vllm/mod.py", "modified") in [(f.path, f.state) for f in seen.files]


def test_check_waits_for_a_run_that_holds_the_lock(home, cat):
    """A run mid-commit holds the lock with its journal and manifest half-way: check reads only
    once it is done, as status does."""
    site = home.tree("0.20.0")
    _do(cat, Command.APPLY, site, only=("fix-thing",))
    state_dir = site / "vllm/.backports"
    done: list = []
    with open(state_dir / "lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        checker = threading.Thread(target=lambda: done.append(_do(cat, Command.CHECK, site)[0]))
        checker.start()
        checker.join(0.5)
        assert not done  # still waiting on the lock
        fcntl.flock(held, fcntl.LOCK_UN)
    checker.join(10)
    assert [(o.id, o.state) for o in done[0].plan.outcomes] == [("fix-thing", engine.ALREADY),
                                                               ("add-kernel", engine.CLEAN)]


@pytest.mark.network
def test_a_refused_fetch_run_leaves_no_fresh_copy_behind(tmp_path, monkeypatch):
    """check --fetch without --target lays out a fresh copy; a selection refused on it (here one
    that leaves out what a later patch is written on) takes that copy away again."""
    from cli_runner import run as cli

    monkeypatch.setenv("VLLM_BACKPORTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr("vllm_backports.cli.HOME", Path(__file__).resolve().parents[1])
    refused = cli("check", "--vllm", "0.22.0", "--fetch", "--skip", "gdn-spec-state")
    assert refused.code == 2 and "applies only on top of gdn-spec-state" in refused.err
    copies = lambda: [p for p in (tmp_path / "cache" / "trees").glob("0.22.0*") if p.is_dir()]  # noqa: E731
    assert copies() == []  # its lock file stays until the process ends, and goes with the next run
    done = cli("check", "--vllm", "0.22.0", "--fetch")
    assert done.code == 0 and len(copies()) == 1
