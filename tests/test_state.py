"""The transaction beside vLLM: journal, rollback of interrupted runs, the lock, in-process
failure during commit."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cli_runner import run
from conftest import KERNEL, MOD, MOD_FIXED, sha
from tree_snapshot import assert_unchanged, snapshot

REPO = Path(__file__).resolve().parent.parent
KERNEL_PATH = "vllm/kernels/new_kernel.py"


def cli(home, site: Path, *args: str, env: dict | None = None, **kw) -> subprocess.CompletedProcess:
    """`python apply.py ...` in a real process (so that os._exit really kills it)."""
    full_env = {
        **os.environ,
        "VLLM_BACKPORTS_HOME": str(home.root),
        "VLLM_BACKPORTS_CACHE": str(home.root.parent / "cache"),
        **(env or {}),
    }
    return subprocess.run([sys.executable, "apply.py", *args, "--target", str(site)], cwd=REPO, env=full_env,
                          capture_output=True, text=True, timeout=120, **kw)


def killed(home, site: Path, command: str, after: int) -> subprocess.CompletedProcess:
    done = cli(home, site, command, "--vllm", "0.20.0", env={"VLLM_BACKPORTS_TEST_KILL_AFTER": str(after)})
    assert done.returncode == 137, (done.returncode, done.stdout, done.stderr)
    return done


def journal(site: Path) -> Path:
    return site / "vllm/.backports/journal.json"


def assert_pristine(site: Path) -> None:
    assert sha((site / "vllm/mod.py").read_bytes()) == sha(MOD)
    assert not (site / KERNEL_PATH).exists()
    assert not (site / "vllm/kernels").exists()
    assert not journal(site).exists()
    assert not (site / "vllm/.backports/txn").exists()
    assert not (site / "vllm/.backports/manifest.json").exists()


def assert_patched(site: Path) -> None:
    assert sha((site / "vllm/mod.py").read_bytes()) == sha(MOD_FIXED)
    assert sha((site / KERNEL_PATH).read_bytes()) == sha(KERNEL)
    assert not journal(site).exists()
    assert not (site / "vllm/.backports/txn").exists()
    manifest = json.loads((site / "vllm/.backports/manifest.json").read_text())
    assert [a["id"] for a in manifest["applied"]] == ["fix-thing", "add-kernel"]


@pytest.fixture
def site(home):
    return home.tree("0.20.0")


# --------------------------------------------------------------------------------------------
# a killed apply


@pytest.mark.parametrize("after", [1, 2])
def test_killed_apply_is_rolled_back_then_applied_then_reverted(home, site, after):
    killed(home, site, "apply", after)
    assert journal(site).exists()
    assert sha((site / "vllm/mod.py").read_bytes()) == sha(MOD_FIXED)  # half-written
    assert (site / KERNEL_PATH).exists() == (after == 2)
    assert not (site / "vllm/.backports/manifest.json").exists()
    entries = json.loads(journal(site).read_text())["files"]
    assert [e["path"] for e in entries] == ["vllm/mod.py", KERNEL_PATH]
    assert entries[0]["before"] == sha(MOD) and entries[0]["after"] == sha(MOD_FIXED)
    assert entries[1]["before"] is None and entries[1]["after"] == sha(KERNEL)

    # check notices the journal and writes nothing
    before = snapshot(site)
    checked = run("check", "--vllm", "0.20.0", "--target", str(site))
    assert "an interrupted run left" in checked.err and str(journal(site)) in checked.err
    assert_unchanged(site, before)

    # status says the tree is inconsistent
    status = run("status", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert status.code == 1
    assert status.json["interrupted_run"] == str(journal(site))
    assert status.json["consistent"] is False
    assert_unchanged(site, before)

    # apply rolls back first, then applies
    applied = run("--vllm", "0.20.0", "--target", str(site), "--json")
    assert applied.code == 0, applied.out + applied.err
    assert applied.json["summary"] == {"applied": 2, "already": 0, "upstream": 0, "failed": 0}
    assert any("rolled back an interrupted earlier run" in n for n in applied.json["notes"])
    assert_patched(site)

    # revert restores the pristine bytes
    reverted = run("revert", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert reverted.code == 0
    assert reverted.json["summary"]["reverted"] == 2
    assert_pristine(site)
    assert not (site / "vllm/.backports").exists()


def test_check_with_a_pending_journal_does_not_blame_a_local_edit(home, site):
    killed(home, site, "apply", 1)
    checked = run("check", "--vllm", "0.20.0", "--target", str(site))
    assert "edited locally" not in checked.err
    assert checked.code == 0


@pytest.mark.parametrize("after", [1, 2])
def test_killed_apply_then_revert_leaves_pristine_bytes(home, site, after):
    killed(home, site, "apply", after)
    reverted = run("revert", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert reverted.code == 0, reverted.out
    assert [b["state"] for b in reverted.json["backports"]] == ["not-applied", "not-applied"]
    assert any("rolled back" in n for n in reverted.json["notes"])
    assert_pristine(site)


def test_killed_apply_then_revert_leaves_no_state_dir(home, site):
    pristine = snapshot(site)
    killed(home, site, "apply", 1)
    assert run("revert", "--vllm", "0.20.0", "--target", str(site)).code == 0
    assert_unchanged(site, pristine)


def test_revert_of_a_pristine_tree_writes_nothing(home, site):
    pristine = snapshot(site)
    assert run("revert", "--vllm", "0.20.0", "--target", str(site)).code == 0
    assert_unchanged(site, pristine)


def test_killed_revert_is_rolled_back(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    patched = snapshot(site)
    killed(home, site, "revert", 1)
    assert journal(site).exists()
    # revert changes the files in series order: mod.py first
    assert sha((site / "vllm/mod.py").read_bytes()) == sha(MOD)
    again = run("revert", "--vllm", "0.20.0", "--target", str(site), "--json")
    assert again.code == 0, again.out
    assert again.json["summary"]["reverted"] == 2
    assert_pristine(site)
    assert not (site / "vllm/.backports").exists()
    assert patched["vllm/mod.py"] == MOD_FIXED


def test_killed_revert_then_apply_restores_the_patched_state(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    patched = snapshot(site)
    killed(home, site, "revert", 1)
    again = run("--vllm", "0.20.0", "--target", str(site), "--json")
    assert again.code == 0
    assert again.json["summary"]["already"] == 2
    assert_patched(site)
    after = snapshot(site)
    assert {k: v for k, v in after.items() if k != "vllm/.backports/manifest.json"} == \
           {k: v for k, v in patched.items() if k != "vllm/.backports/manifest.json"}


# --------------------------------------------------------------------------------------------
# journals that cannot be trusted


def _one_error_line(result, code: int, *needles: str) -> None:
    assert result.code == code, (result.code, result.out, result.err)
    errors = [ln for ln in result.err.splitlines() if ln.startswith("error: ")]
    assert len(errors) == 1 and result.err.splitlines()[-1] == errors[0], result.err
    for needle in needles:
        assert needle in errors[0], (needle, errors[0])




@pytest.mark.parametrize("garbage", [
    b"{not json",
    b"",
    b'{"files": []}',
    b"[]",
    pytest.param(b'{"files": 3, "manifest_before": null}', id="files-not-a-list"),
    pytest.param(b'{"files": [{"path": "vllm/mod.py"}], "manifest_before": null}', id="entry-without-hashes"),
])
@pytest.mark.parametrize("command", ["apply", "revert"])
def test_corrupted_journal(home, site, garbage, command):
    killed(home, site, "apply", 1)
    journal(site).write_bytes(garbage)
    before = snapshot(site)
    result = run(command, "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "journal.json", "unreadable journal")
    assert_unchanged(site, before)
    as_json = run(command, "--vllm", "0.20.0", "--target", str(site), "--json")
    assert as_json.code == 1 and as_json.json["exit_code"] == 1 and "unreadable journal" in as_json.json["error"]
    assert_unchanged(site, before)


@pytest.mark.parametrize("command", ["apply", "revert"])
def test_file_changed_after_the_interruption(home, site, command):
    killed(home, site, "apply", 1)
    (site / "vllm/mod.py").write_bytes(MOD.replace(b"line 10\n", b"line 10 by hand\n"))
    before = snapshot(site)
    result = run(command, "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "vllm/mod.py", "changed since the interrupted run")
    assert_unchanged(site, before)


def test_damaged_backup_is_refused(home, site):
    killed(home, site, "apply", 1)
    (site / "vllm/.backports/txn/0").write_bytes(b"not the old bytes\n")
    before = snapshot(site)
    result = run("--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "backup is damaged")
    assert_unchanged(site, before)


def test_file_already_back_to_before_is_left_alone(home, site):
    """A file the killed run never got to (or that was restored by hand) needs no rollback."""
    killed(home, site, "apply", 1)
    (site / "vllm/mod.py").write_bytes(MOD)
    result = run("--vllm", "0.20.0", "--target", str(site), "--json")
    assert result.code == 0
    assert_patched(site)


# --------------------------------------------------------------------------------------------
# the lock


def test_concurrent_runs_serialize(home, site, tmp_path):
    state = site / "vllm/.backports"
    state.mkdir()
    err_path = tmp_path / "stderr.txt"
    with open(state / "lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with open(err_path, "w") as err:
            proc = subprocess.Popen([sys.executable, "apply.py", "--vllm", "0.20.0", "--target", str(site)], cwd=REPO,
                                    env={**os.environ, "VLLM_BACKPORTS_HOME": str(home.root)},
                                    stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            deadline = time.monotonic() + 30
            while "waiting for another vllm-backports run" not in err_path.read_text():
                assert proc.poll() is None, (proc.returncode, err_path.read_text())
                assert time.monotonic() < deadline, "no 'waiting' note"
                time.sleep(0.05)
            time.sleep(1.0)
            assert proc.poll() is None, "the second run did not wait for the lock"
            assert (site / "vllm/mod.py").read_bytes() == MOD
            assert not journal(site).exists()
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, (out, err_path.read_text())
    assert out.strip().splitlines()[-1] == "applied=2 already=0 upstream=0 failed=0"
    assert_patched(site)


def test_reapply_later_writes_nothing(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    before = snapshot(site)
    time.sleep(1.1)
    again = run("--vllm", "0.20.0", "--target", str(site), "--json")
    assert again.code == 0 and again.json["changed_files"] == []
    assert_unchanged(site, before)


def test_lock_is_released_after_a_run(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    with open(site / "vllm/.backports/lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # raises BlockingIOError if still held
        fcntl.flock(fh, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# failure inside commit, in-process


def _failing_replace(monkeypatch, site: Path, fail_on):
    """os.replace raising ENOSPC on the call fail_on(dst, calls_to_targets) picks."""
    real = os.replace
    target_calls: list[str] = []

    def fake(src, dst, *args, **kwargs):
        rel = Path(dst).relative_to(site).as_posix() if Path(dst).is_relative_to(site) else str(dst)
        if not rel.startswith("vllm/.backports/"):
            target_calls.append(rel)
        if fail_on(rel, target_calls):
            raise OSError(28, "No space left on device", str(dst))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", fake)
    return target_calls


FAIL_POINTS = {
    "second-target-file": lambda rel, calls: not rel.startswith("vllm/.backports/") and len(calls) == 2,
    "manifest": lambda rel, calls: rel == "vllm/.backports/manifest.json",
}


@pytest.mark.parametrize("point", sorted(FAIL_POINTS))
def test_failure_during_commit_rolls_back_at_once(home, site, monkeypatch, point):
    before = snapshot(site)
    with monkeypatch.context() as patched:
        calls = _failing_replace(patched, site, FAIL_POINTS[point])
        failed = run("--vllm", "0.20.0", "--target", str(site))
        assert failed.code == 1 and "No space left on device" in failed.err
    assert calls[0] == "vllm/mod.py"
    assert (site / "vllm/mod.py").read_bytes() == MOD
    assert not (site / KERNEL_PATH).exists()
    assert not journal(site).exists()
    assert not (site / "vllm/.backports/txn").exists()
    assert not (site / "vllm/.backports/manifest.json").exists()
    after = snapshot(site)
    for path, data in before.items():  # every file that was there has its old bytes
        assert after.get(path) == data, path
    # and the next run is a normal first apply
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    assert_patched(site)


def test_failure_during_commit_leaves_no_stray_files(home, site, monkeypatch):
    before = snapshot(site)
    with monkeypatch.context() as patched:
        _failing_replace(patched, site, FAIL_POINTS["second-target-file"])
        assert run("--vllm", "0.20.0", "--target", str(site)).code == 1
    assert_unchanged(site, before)


def test_failure_during_commit_is_reported_in_one_line(home, site, monkeypatch):
    _failing_replace(monkeypatch, site, FAIL_POINTS["second-target-file"])
    from click.testing import CliRunner

    from vllm_backports.cli import main

    result = CliRunner().invoke(main, ["--vllm", "0.20.0", "--target", str(site)])
    assert result.exit_code == 1
    assert not isinstance(result.exception, OSError), result.exception
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


# --------------------------------------------------------------------------------------------
# permission bits and temporary files across a rollback


@pytest.mark.parametrize("command", ["apply", "revert"])
def test_killed_run_rolled_back_keeps_the_file_mode(home, site, command):
    (site / "vllm/mod.py").chmod(0o750)
    killed(home, site, "apply", 2)
    assert run(command, "--vllm", "0.20.0", "--target", str(site)).code == 0
    assert (site / "vllm/mod.py").stat().st_mode & 0o7777 == 0o750


def test_failure_during_commit_keeps_the_file_mode(home, site, monkeypatch):
    (site / "vllm/mod.py").chmod(0o600)
    with monkeypatch.context() as patched:
        _failing_replace(patched, site, FAIL_POINTS["second-target-file"])
        assert run("--vllm", "0.20.0", "--target", str(site)).code == 1
    assert (site / "vllm/mod.py").read_bytes() == MOD
    assert (site / "vllm/mod.py").stat().st_mode & 0o7777 == 0o600


def test_temporary_files_of_a_killed_run_are_removed_by_the_next(home, site):
    """A kill between writing a temporary file and renaming it over the target leaves it behind."""
    before = snapshot(site)
    killed(home, site, "apply", 1)
    strays = [site / "vllm/.mod.py.99999.tmp", site / "vllm/.backports/.manifest.json.99999.tmp"]
    for stray in strays:
        stray.write_bytes(b"half")
    assert run("revert", "--vllm", "0.20.0", "--target", str(site)).code == 0
    assert_unchanged(site, before)


# --------------------------------------------------------------------------------------------
# the lock file is removed by its holder, while another run waits on it


def test_a_run_waiting_on_a_lock_file_its_holder_removed_locks_the_new_one(home, site, tmp_path):
    # Half applied, so that both revert and apply have work to do (and so take the lock).
    assert run("--vllm", "0.20.0", "--target", str(site), "--only", "fix-thing").code == 0
    state = site / "vllm/.backports"
    env = {**os.environ, "VLLM_BACKPORTS_HOME": str(home.root)}
    with open(state / "lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        procs = []
        for args in (["revert"], ["apply"]):  # revert finishes first and removes the lock file
            err = open(tmp_path / f"{args[0]}.err", "w")  # noqa: SIM115  (outlives the loop: closed below)
            procs.append(
                (
                    subprocess.Popen(
                        [sys.executable, "apply.py", *args, "--vllm", "0.20.0", "--target", str(site)],
                        cwd=REPO,
                        env=env,
                        stdout=subprocess.PIPE,
                        stderr=err,
                        text=True,
                    ),
                    err,
                )
            )
            deadline = time.monotonic() + 30
            while "waiting for another" not in (tmp_path / f"{args[0]}.err").read_text():
                assert procs[-1][0].poll() is None, (tmp_path / f"{args[0]}.err").read_text()
                assert time.monotonic() < deadline
                time.sleep(0.05)
        fcntl.flock(held, fcntl.LOCK_UN)
    for proc, err in procs:
        out, _ = proc.communicate(timeout=60)
        err.close()
        assert proc.returncode == 0, (out, (tmp_path / "revert.err").read_text(), (tmp_path / "apply.err").read_text())
    # Whichever ran second decided the end state; either way it is whole.
    if (site / "vllm/.backports/manifest.json").exists():
        assert_patched(site)
    else:
        assert_pristine(site)
        assert not state.exists()


def test_a_run_that_finds_another_mid_commit_waits_for_it_instead_of_refusing(home, site, tmp_path):
    """A revert holding the lock has removed the kernel but not yet the manifest: an apply that
    starts then sees a recorded file missing. It must wait for the lock and judge the tree the
    revert leaves, not refuse what is only half of another run's commit."""
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    state = site / "vllm/.backports"
    err_path = tmp_path / "stderr.txt"
    with open(state / "lock", "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        (site / KERNEL_PATH).unlink()  # the revert, halfway
        with open(err_path, "w") as err:
            proc = subprocess.Popen([sys.executable, "apply.py", "--vllm", "0.20.0", "--target", str(site)], cwd=REPO,
                                    env={**os.environ, "VLLM_BACKPORTS_HOME": str(home.root)},
                                    stdout=subprocess.PIPE, stderr=err, text=True)
        deadline = time.monotonic() + 30
        while "waiting for another vllm-backports run" not in err_path.read_text():
            assert proc.poll() is None, err_path.read_text()
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # The revert finishes: files pristine, manifest gone; then it lets go of the lock.
        (site / "vllm/mod.py").write_bytes(MOD)
        (state / "manifest.json").unlink()
        (site / "vllm/kernels").rmdir()
        fcntl.flock(held, fcntl.LOCK_UN)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, (out, err_path.read_text())
    assert out.strip().splitlines()[-1] == "applied=2 already=0 upstream=0 failed=0"
    assert_patched(site)


@pytest.mark.parametrize(("version", "says"), [(2, "newer than this tool's (1)"), (0, "unknown to this tool")])
@pytest.mark.parametrize("command", ["apply", "revert", "check"])
def test_a_journal_of_an_unknown_format_is_refused_and_rolls_nothing_back(home, site, version, says, command):
    killed(home, site, "apply", 1)
    data = json.loads(journal(site).read_text())
    data["format"] = version
    journal(site).write_text(json.dumps(data))
    before = snapshot(site)
    result = run(command, "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "journal.json", f"journal of format {version}, {says}", "reinstall vllm==0.20.0")
    assert_unchanged(site, before)


@pytest.mark.parametrize(("field", "value"), [
    ("mode", 1e30), ("mode", -1), ("mode", 0o10000), ("mode", "644"), ("mode", True),
    ("path", "../outside.py"), ("path", "/etc/passwd"), ("path", "vllm/../../outside.py"), ("path", "other/mod.py"),
    ("before", "not-a-sha"), ("after", 7),
])
@pytest.mark.parametrize("command", ["apply", "revert"])
def test_a_journal_entry_that_cannot_be_trusted_steers_no_write(home, site, field, value, command):
    killed(home, site, "apply", 1)
    data = json.loads(journal(site).read_text())
    data["files"][0][field] = value
    journal(site).write_text(json.dumps(data))
    before = snapshot(site)
    result = run(command, "--vllm", "0.20.0", "--target", str(site))
    _one_error_line(result, 1, "journal.json", "unreadable journal")
    assert_unchanged(site, before)


def test_a_probe_left_by_a_killed_run_is_swept_and_a_live_ones_kept(home, site):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = site / "vllm" / f".vllm-backports-probe.{int(dead.stdout)}"
    live = site / "vllm" / f".vllm-backports-probe.{os.getppid()}"
    stale.write_bytes(b"")
    live.write_bytes(b"")
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    assert not stale.exists() and live.exists()


def test_a_rollback_that_fails_too_says_so_and_the_next_run_finishes_it(home, site, monkeypatch):
    with monkeypatch.context() as patched:
        # the second target write fails, and every write after it (a disk that went read-only)
        _failing_replace(
            patched,
            site,
            lambda rel, calls: len(calls) >= 2 or (len(calls) >= 1 and rel.startswith("vllm/.backports/")),
        )
        failed = run("--vllm", "0.20.0", "--target", str(site))
    assert failed.code == 1
    assert "rolling back failed too" in failed.err and "the run was rolled back" not in failed.err
    # the first file was written and could not be put back; the kernel was never created
    assert "not restored: vllm/mod.py" in failed.err and f"as before the run: {KERNEL_PATH}" in failed.err
    assert journal(site).exists()
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0  # the cause is gone: rolls back, applies
    assert_patched(site)
    assert not journal(site).exists()


def test_a_tidy_up_failure_after_the_commit_landed_does_not_claim_a_rollback(home, site, monkeypatch):
    from vllm_backports import state

    real = state._finish
    with monkeypatch.context() as patched:
        def broken(tree):
            raise OSError(5, "Input/output error", str(tree.state_dir / "txn"))

        patched.setattr(state, "_finish", broken)
        failed = run("--vllm", "0.20.0", "--target", str(site))
    assert state._finish is real
    assert failed.code == 1 and "every change landed" in failed.err and "rolled back" not in failed.err
    # the files are as the run wrote them; the journal the tidy-up could not remove is left
    assert sha((site / "vllm/mod.py").read_bytes()) == sha(MOD_FIXED) and journal(site).exists()
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    assert_patched(site)
    assert not journal(site).exists()


def test_status_waits_out_a_run_that_holds_the_lock_instead_of_reporting_its_journal(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    lock = site / "vllm/.backports/lock"
    lock.touch()
    with open(lock, "a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a run mid-commit: its journal is on disk
        journal(site).write_text('{"files": [], "manifest_before": null}')
        proc = subprocess.Popen([sys.executable, "apply.py", "status", "--json", "--target", str(site)], cwd=REPO,
                                env={**os.environ, "VLLM_BACKPORTS_HOME": str(home.root)},
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)
            assert proc.poll() is None, ("status did not wait for the run", proc.communicate())
            journal(site).unlink()  # the run finishes its commit
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, (out, err)
    assert json.loads(out)["interrupted_run"] is None and json.loads(out)["consistent"] is True


def test_backups_without_a_journal_are_reported_by_status_and_swept_by_the_next_run(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    backups = site / "vllm/.backports/txn"
    backups.mkdir()
    (backups / "0").write_bytes(MOD)  # a run killed before its journal existed
    (site / "vllm/.backports/lock").touch()  # and its lock file
    status = run("status", "--target", str(site), "--json")
    assert status.code == 0 and status.json["leftovers"] == [str(backups), str(site / "vllm/.backports/lock")]
    assert "left by a killed run" in run("status", "--target", str(site)).out
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    assert not backups.exists() and not (site / "vllm/.backports/lock").exists()
    assert run("status", "--target", str(site), "--json").json["leftovers"] == []


def test_a_lock_file_alone_left_by_a_killed_run_goes_with_the_next_run_as_status_says(home, site):
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    lock = site / "vllm/.backports/lock"
    lock.touch()
    assert "left by a killed run" in run("status", "--target", str(site)).out
    assert run("--vllm", "0.20.0", "--target", str(site)).code == 0  # nothing else to do
    assert not lock.exists()


@pytest.mark.parametrize(("first", "after"), [("revert", 2), ("apply", 1)])
def test_status_mid_run_reads_neither_a_stale_nor_a_rebuilt_manifest(home, site, first, after):
    """A run killed mid-commit leaves the files part-way, which the next run rolls back first:
    status must not call a manifest stale, nor rebuild one, from files about to be put back."""
    if first == "revert":
        assert run("--vllm", "0.20.0", "--target", str(site)).code == 0
    killed(home, site, first, after)
    status = run("status", "--target", str(site), "--json")
    assert status.json["interrupted_run"] and status.code == 1
    assert status.json["stale_manifest"] is False and status.json["rebuilt_manifest"] is False
