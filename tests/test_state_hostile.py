"""What a hostile tester did to the state directory and the lock: links, FIFOs, a stopped lock
holder, forged journal entries, edits made while a run commits. Each must be refused in one line
and change nothing, or be waited out with a limit that names the holder."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_runner import run
from conftest import MOD, MOD_FIXED, sha
from test_state import _one_error_line, killed
from tree_snapshot import assert_unchanged, snapshot


@pytest.fixture
def site(home):
    return home.tree("0.20.0")


@pytest.mark.parametrize("name", ["txn", "journal.json", "manifest.json", "lock"])
@pytest.mark.parametrize("command", ["apply", "revert", "status"])
def test_a_state_entry_that_is_a_link_is_refused_and_nothing_outside_is_touched(site, tmp_path, name, command):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    (site / "vllm/.backports").mkdir()
    (site / "vllm/.backports" / name).symlink_to(outside if name == "txn" else outside / "keep")
    before = snapshot(site)
    result = run(command, "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, name, "symlink")
    assert (outside / "keep").read_text() == "x" and sorted(os.listdir(outside)) == ["keep"]
    assert_unchanged(site, before)


@pytest.mark.parametrize("where", ["vllm/.backports/lock", "vllm/.backports/journal.json",
                                   "vllm/.backports/manifest.json", "RECORD", "METADATA"])
def test_a_fifo_where_a_file_is_read_is_refused_at_once(site, where):
    if where in ("RECORD", "METADATA"):
        path = site / "vllm-0.20.0.dist-info" / where
        path.unlink()
    else:
        path = site / where
        path.parent.mkdir(exist_ok=True)
    os.mkfifo(path)
    for command in ("apply", "status"):
        started = time.monotonic()
        result = run(command, "--vllm", "0.20.0", "--target", str(site))
        assert time.monotonic() - started < 30
        _one_error_line(result, 1, "not a regular file")


def test_a_stopped_lock_holder_is_named_and_the_wait_ends(home, site):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import fcntl, os, sys, time; p = sys.argv[1]; os.makedirs(os.path.dirname(p), exist_ok=True);"
         "f = open(p, 'a+'); fcntl.flock(f, fcntl.LOCK_EX); f.seek(0); f.truncate(); f.write(f'{os.getpid()}\\n');"
         "f.flush(); print('held', flush=True); time.sleep(120)",
         str(site / "vllm/.backports/lock")],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        os.kill(holder.pid, signal.SIGSTOP)
        before = snapshot(site)
        for command in ("apply", "status"):
            started = time.monotonic()
            result = run(command, "--vllm", "0.20.0", "--target", str(site), "--lock-timeout", "1")
            assert time.monotonic() - started < 20
            # the wait the run was given, not what was left of it when it last looked
            _one_error_line(result, 1, f"PID {holder.pid} for over 1 s;", "--lock-timeout")
        assert_unchanged(site, before)
    finally:
        holder.kill()
        holder.wait()


def test_a_forged_created_entry_cannot_delete_a_package_file(home, tmp_path):
    site = home.tree("0.20.0", dest=tmp_path / "s", files={**home.pristine["0.20.0"], "vllm/other.py": b"kept\n"})
    killed(home, site, "apply", 1)
    journal = site / "vllm/.backports/journal.json"
    data = json.loads(journal.read_text())
    victim = site / "vllm/other.py"
    data["files"].append({"path": "vllm/other.py", "mode": None, "before": None, "after": sha(victim.read_bytes())})
    journal.write_text(json.dumps(data))
    before = snapshot(site)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "vllm/other.py", "journal")
    assert victim.exists()
    assert_unchanged(site, before)


def test_a_forged_before_hash_is_refused_before_any_file_is_restored(home, site):
    killed(home, site, "apply", 2)
    journal = site / "vllm/.backports/journal.json"
    data = json.loads(journal.read_text())
    forged = b"forged\n"
    entry = data["files"][-1]
    entry["before"] = sha(forged)
    (site / "vllm/.backports/txn" / str(len(data["files"]) - 1)).write_bytes(forged)
    journal.write_text(json.dumps(data))
    before = snapshot(site)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, entry["path"], "journal")
    assert_unchanged(site, before)
    assert journal.exists()


def test_an_edit_made_while_the_run_commits_stops_it_naming_the_file(home, site, monkeypatch):
    from vllm_backports import state

    real = state.write_atomic
    edited = MOD.replace(b"line 10\n", b"line 10 by hand\n")

    def edit_then_write(path, data, mode=None):
        real(path, data, mode)
        if Path(path).name == "journal.json":  # someone's editor saves as the commit begins
            (site / "vllm/mod.py").write_bytes(edited)

    monkeypatch.setattr(state, "write_atomic", edit_then_write)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "vllm/mod.py", "changed while")
    assert (site / "vllm/mod.py").read_bytes() == edited  # the edit is kept, not overwritten
    assert not (site / "vllm/.backports/journal.json").exists()
    assert not (site / "vllm/kernels").exists()


def test_a_run_that_fails_before_its_journal_leaves_no_backups(home, site, monkeypatch):
    from vllm_backports import state

    real = state.write_atomic

    def full_disk(path, data, mode=None):
        if "/txn/" in str(path):
            raise OSError(28, "No space left on device", str(path))
        return real(path, data, mode)

    monkeypatch.setattr(state, "write_atomic", full_disk)
    before = snapshot(site)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    assert result.code == 1
    assert_unchanged(site, before, allow_added=())
    assert not (site / "vllm/.backports").exists()
    monkeypatch.undo()
    status = run("status", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert "killed" not in json.dumps(status.json)


def test_status_beside_a_finishing_run_reads_the_lock_file_that_is_there(home, site):
    """A reader that locked the file a finishing holder just removed must not read beside the
    next run's commit: it locks the one there now."""
    from vllm_backports import state
    from vllm_backports.tree import open_tree

    tree = open_tree(site)
    tree.state_dir.mkdir()
    lock = tree.state_dir / "lock"
    lock.write_text("")
    with open(lock) as old:
        fcntl.flock(old, fcntl.LOCK_EX)
        os.unlink(lock)  # the holder ends: its file goes
        with open(lock, "a+") as new:  # the next run's file, held
            fcntl.flock(new, fcntl.LOCK_EX)
            with pytest.raises(state.LockTimeout), state.reading(tree, timeout=0.5):
                pass


def test_a_probe_that_cannot_be_removed_is_named_not_left_unsaid(site, monkeypatch):
    real = Path.unlink

    def stuck(self, *args, **kwargs):
        if self.name.startswith(".vllm-backports-probe."):
            raise OSError(16, "Device or resource busy", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "unlink", stuck)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, ".vllm-backports-probe.", "remove it by hand")


def test_files_of_another_owner_are_refused_rather_than_taken(site, monkeypatch):
    from vllm_backports import state

    uid = os.stat(site / "vllm/mod.py").st_uid
    monkeypatch.setattr(state.os, "geteuid", lambda: uid + 1)  # a user who can write the directories
    before = snapshot(site)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "vllm/mod.py", f"owned by uid {uid}", "run as its owner")
    assert_unchanged(site, before, allow_added=("vllm/.backports",))


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file another owner")
def test_root_restoring_a_file_keeps_its_owner(home, site):
    os.chown(site / "vllm/mod.py", 4242, 4242)
    killed(home, site, "apply", 1)
    assert run("revert", "--vllm", "0.20.0", "--target", str(site)).code == 0
    st = os.stat(site / "vllm/mod.py")
    assert (st.st_uid, st.st_gid) == (4242, 4242) and (site / "vllm/mod.py").read_bytes() == MOD


@pytest.mark.parametrize(("err", "words"), [
    (30, "read-only file system"),  # EROFS: running as the owner would not help
    (13, "run as the owner"),  # EACCES
])
def test_an_unwritable_directory_says_why(site, monkeypatch, err, words):
    real = Path.write_bytes

    def refuse(self, data):
        if self.name.startswith(".vllm-backports-probe."):
            raise OSError(err, os.strerror(err), str(self))
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", refuse)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, words)
    if err == 30:
        assert "run as the owner" not in result.err


def test_a_file_that_cannot_be_replaced_is_named_not_its_temporary_copy(site, monkeypatch):
    from vllm_backports import state

    real = os.replace

    def immutable(src, dst, *args, **kwargs):
        if str(dst).endswith("vllm/mod.py"):
            raise OSError(1, "Operation not permitted", str(src))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(state.os, "replace", immutable)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "vllm/mod.py: Operation not permitted")
    assert ".tmp" not in result.err
    assert (site / "vllm/mod.py").read_bytes() == MOD


def test_tidying_up_that_fails_after_the_journal_went_says_what_is_left(site, monkeypatch):
    from vllm_backports import state

    def stuck(backups):
        raise OSError(5, "Input/output error", str(backups / "0"))

    monkeypatch.setattr(state, "_remove_backups", stuck)
    result = run("apply", "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "every change landed", "txn is left")
    assert "journal.json is left" not in result.err and not (site / "vllm/.backports/journal.json").exists()
    assert (site / "vllm/mod.py").read_bytes() == MOD_FIXED
