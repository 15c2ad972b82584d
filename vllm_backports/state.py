"""How changes to a vLLM tree land: under a lock in vllm/.backports/, through a journal
(journal.py), ending with the manifest (manifest.py) that says what the tree carries.

Every run computes all new contents first; `commit` then backs up the old bytes, writes a journal,
replaces each file through a temporary file, fsync and rename, writes the manifest and drops the
journal. A run killed in between leaves the journal, and the next run rolls the tree back to the
exact bytes it had before.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from .digest import sha256, sha256_of
from .errors import BackportError, LockTimeout, StateError, TargetError
from .journal import NAME as JOURNAL
from .journal import Entry, Journal
from .journal import read as read_journal
from .manifest import NAME as MANIFEST
from .manifest import Manifest
from .manifest import parse as parse_manifest
from .tree import Tree


@dataclass(frozen=True)
class Change:
    path: str
    before: bytes | None  # None: the file did not exist
    after: bytes | None  # None: the file is removed


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` through a temporary file, fsync and rename. The file keeps its owner where
    this process may give it (root restoring another user's file would otherwise take it), and
    an error names `path`, not the temporary file the user never made."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        owner = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        owner = None
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        if owner is not None and os.geteuid() == 0 and (owner.st_uid, owner.st_gid) != (os.getuid(), os.getgid()):
            os.chown(tmp, owner.st_uid, owner.st_gid)
        os.replace(tmp, path)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError) and exc.filename == str(tmp):
            exc.filename = str(path)
        raise
    _fsync_dir(path.parent)


def remove_pycache(path: Path) -> None:
    cache = path.parent / "__pycache__"
    if cache.is_dir() and path.suffix == ".py":
        for pyc in cache.glob(f"{path.stem}.*.pyc"):
            pyc.unlink(missing_ok=True)


def remove_file(path: Path, top: Path) -> None:
    """Delete a file we created, and the directories we created for it once they are empty."""
    path.unlink(missing_ok=True)
    remove_pycache(path)
    for d in (path.parent / "__pycache__", *path.parents):
        if d == top or top not in d.parents:
            break
        try:
            d.rmdir()
        except OSError:
            if d.name != "__pycache__":
                break


PROBE = ".vllm-backports-probe"
LOCK = "lock"  # in the state directory
BACKUPS = "txn"  # in the state directory: each changed file's bytes before a commit, by index


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def left_by_dead_processes(directory: Path, prefix: str) -> list[Path]:
    """Entries named PREFIX.PID in directory whose process is gone (a live run's are its own)."""
    found = []
    for path in directory.glob(f"{prefix}.*"):
        pid = path.name.rsplit(".", 1)[1]
        if pid.isdigit() and int(pid) != os.getpid() and not process_alive(int(pid)):
            found.append(path)
    return found


def sweep_probes(directory: Path) -> None:
    """Remove writability probes that a run killed between writing and removing them left in
    the package."""
    for probe in left_by_dead_processes(directory, PROBE):
        probe.unlink(missing_ok=True)


def check_writable(tree: Tree, paths: list[str]) -> None:
    """Refuse before writing anything if any directory we would write to is not writable."""
    dirs = {tree.root / "vllm"} | {(tree.root / p).parent for p in paths}
    for d in sorted(dirs):
        while not d.exists() and d != tree.root:
            d = d.parent  # a series may add a directory: its nearest existing parent must be writable
        sweep_probes(d)
        probe = d / f"{PROBE}.{os.getpid()}"
        try:
            probe.write_bytes(b"")
        except FileNotFoundError:
            raise TargetError(f"{d}: directory is missing") from None
        except OSError as exc:
            raise TargetError(f"{d}: {_unwritable(exc)}") from None
        try:
            probe.unlink()
        except OSError as exc:
            raise TargetError(f"{probe}: cannot remove this test file ({exc.strerror}); remove it by hand") from None
    euid = os.geteuid()
    for rel in paths:
        try:
            uid = os.stat(tree.root / rel, follow_symlinks=False).st_uid
        except (FileNotFoundError, NotADirectoryError):
            continue
        if euid not in (0, uid):
            raise TargetError(
                f"{rel}: owned by uid {uid}, not this user (uid {euid}); rewriting it would change its owner: "
                "run as its owner"
            )


def _unwritable(exc: OSError) -> str:
    """Why a directory cannot be written, as the error says it: only a permission error is
    cured by running as the owner."""
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"not writable ({exc.strerror}); run as the owner of this vLLM install"
    if exc.errno == errno.EROFS:
        return "on a read-only file system; remount it read-write or patch a copy (--target)"
    return f"cannot be written ({exc.strerror})"


LOCK_TIMEOUT = 60.0  # seconds a run waits for another's lock before it gives up, naming it


def _open_lock(tree: Tree, create: bool):
    """The lock file, opened without following a link or waiting on a FIFO, and refused unless it
    is a regular file; None where there is none and `create` is false."""
    path = tree.state_path(LOCK)
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENXIO):  # a link put there since, or a FIFO
            raise TargetError(f"{path}: is not a regular file; remove it and run again") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TargetError(f"{path}: is not a regular file; remove it and run again")
    return os.fdopen(fd, "r+")


def lock_holder(fh) -> str:
    """Who holds the lock, as the holder wrote it: 'PID 123' (or 'another run')."""
    try:
        fh.seek(0)
        pid = fh.read(32).strip()
    except OSError:
        pid = ""
    return f"PID {pid}" if pid.isdigit() else "another run"


def _wait_for(fh, how: int, tree: Tree, deadline: float, timeout: float, notify: Callable[[str], None]) -> None:
    """Take flock `how` on fh, waiting until the monotonic `deadline` and saying who holds it;
    `timeout` is the whole wait the run was given (a run may wait on more than one lock file),
    the figure the refusal names."""
    try:
        fcntl.flock(fh, how | fcntl.LOCK_NB)
        return
    except BlockingIOError:
        pass
    holder = lock_holder(fh)
    notify(f"waiting for another vllm-backports run ({holder}) on {tree.root}")
    while True:
        time.sleep(0.05)
        try:
            fcntl.flock(fh, how | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockTimeout(
                    f"{tree.state_path(LOCK)}: held by {lock_holder(fh)} for over {timeout:g} s; "
                    "if that process is stopped or hung, end it and run again (--lock-timeout waits longer)"
                ) from None


def _same_file(fh, path: Path) -> bool:
    try:
        current = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    mine = os.fstat(fh.fileno())
    return (current.st_dev, current.st_ino) == (mine.st_dev, mine.st_ino)


@contextlib.contextmanager
def locked(
    tree: Tree, notify: Callable[[str], None] = lambda _m: None, timeout: float = LOCK_TIMEOUT
) -> Iterator[None]:
    """Hold vllm/.backports/lock. On the way out the holder removes the lock file (and the
    directory once nothing else is left in it), so a clean tree is as pip left it. Only a holder
    removes it: a run that waited on the removed file sees that it is gone and locks the one
    there now, so two runs never hold different lock files at once."""
    lock = tree.state_path(LOCK)
    made_dir = not tree.state_dir.exists()
    deadline = time.monotonic() + timeout
    while True:
        tree.state_dir.mkdir(exist_ok=True)
        found = lock.exists()
        try:
            fh = _open_lock(tree, create=True)
        except FileNotFoundError:
            continue  # a holder finishing just now removed the directory: make it again
        try:
            _wait_for(fh, fcntl.LOCK_EX, tree, deadline, timeout, notify)
        except BaseException:
            fh.close()
            raise
        if _same_file(fh, lock):
            break
        fh.close()  # the holder we waited for removed this file: lock the one there now
    found_text = ""
    try:  # say who holds it, for a run that has to wait (as apt names its lock's holder)
        fh.seek(0)
        found_text = fh.read(64)
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
    except OSError:
        pass
    ok = False
    try:
        sweep_tmp(tree.state_dir)
        sweep_leftovers(tree)
        yield
        ok = True
    finally:
        try:
            # A run that fails leaves a killed run's lock file as it found it: nothing is
            # written on an error.
            if ok or not found or not any(p.name != LOCK for p in tree.state_dir.iterdir()):
                lock.unlink(missing_ok=True)
                if ok or made_dir:  # a failed run leaves a directory it found as it found it
                    tree.state_dir.rmdir()  # only when empty
            else:  # a killed run's lock file, left as found: its text too
                fh.seek(0)
                fh.truncate()
                fh.write(found_text)
                fh.flush()
        except OSError:
            pass
        finally:
            fh.close()  # releases the lock


@contextlib.contextmanager
def reading(
    tree: Tree, notify: Callable[[str], None] = lambda _m: None, timeout: float = LOCK_TIMEOUT
) -> Iterator[None]:
    """A consistent view for readers (status, check, the checks before a run): a shared lock on
    the lock file while a run may hold it, so a reader waits out a commit instead of reporting
    its journal as an interrupted run. Writes nothing: with no lock file, no run is under way.
    The lock taken must be on the file still there: a holder removes its lock file as it ends,
    and a reader that locked the removed one would read beside the next run's commit."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fh = _open_lock(tree, create=False)
        except (FileNotFoundError, NotADirectoryError):
            fh = None
        if fh is None:
            yield
            return
        with fh:
            _wait_for(fh, fcntl.LOCK_SH, tree, deadline, timeout, notify)
            if _same_file(fh, tree.state_path(LOCK)):
                yield
                return


def _orphan_backups(tree: Tree) -> Path | None:
    """Backups without a journal: left by a run killed before its journal was written, or while
    tidying up after it was removed. No rollback can use them."""
    backups = tree.state_path(BACKUPS, directory=True)
    return backups if backups.is_dir() and not tree.state_path(JOURNAL).exists() else None


def leftovers(tree: Tree) -> list[Path]:
    """What killed runs left that no run needs: orphan backups, and a lock file (while no run
    holds it, as under `reading`, none should be there). The next apply or revert removes both."""
    lock = tree.state_path(LOCK)
    return [p for p in (_orphan_backups(tree), lock if lock.exists() else None) if p is not None]


def _remove_backups(backups: Path) -> None:
    for f in backups.iterdir():
        f.unlink()
    backups.rmdir()


def sweep_leftovers(tree: Tree) -> None:
    """Call with the lock held: no other run is writing (the lock file goes when the run ends)."""
    if (backups := _orphan_backups(tree)) is not None:
        _remove_backups(backups)


def sweep_tmp(directory: Path, name: str = "*") -> None:
    """Remove temporary files that write_atomic left when the process died before its rename.
    Call with the lock held: no other run is writing."""
    if directory.is_dir():
        for tmp in directory.glob(f".{name}.*.tmp"):
            tmp.unlink(missing_ok=True)


def pending_journal(tree: Tree) -> Path | None:
    path = tree.state_path(JOURNAL)
    return path if path.exists() else None


@dataclass(frozen=True)
class Rollback:
    files: dict[str, bytes | None]  # path -> the bytes it had before the interrupted run
    manifest_before: str | None
    modes: dict[str, int]  # path -> its permission bits before the run (older journals lack them)


def rollback_plan(tree: Tree) -> Rollback | None:
    """What undoing an interrupted run would restore, verified but not written."""
    journal = read_journal(tree)
    if journal is None:
        return None
    _check_entries(tree, journal)
    backups = tree.state_path(BACKUPS, directory=True)
    files: dict[str, bytes | None] = {}
    for n, entry in enumerate(journal.files):
        rel, before_sha = entry.path, entry.before
        current = tree.read(rel)
        now = sha256_of(current)
        if now == before_sha:
            files[rel] = current
            continue
        if now != entry.after:
            raise StateError(
                f"{rel}: changed since the interrupted run (matches neither its old nor new bytes); "
                f"reinstall vllm=={tree.version}"
            )
        before = None
        if before_sha is not None:
            try:
                before = (backups / str(n)).read_bytes()
            except OSError:
                before = None
            if before is None or sha256(before) != before_sha:
                raise StateError(f"{backups / str(n)}: backup is damaged; reinstall vllm=={tree.version}")
        files[rel] = before
    modes = {e.path: e.mode for e in journal.files if e.mode is not None}
    return Rollback(files, journal.manifest_before, modes)


def _check_entries(tree: Tree, journal: Journal) -> None:
    """Refuse a journal whose entries name bytes this install never had before a run: every
    file's bytes before a run are RECORD's (pristine) or what vllm-backports wrote (the manifest
    of before the run), and a file absent before is one RECORD does not list. Acting on any other
    entry would delete or overwrite a package file on the journal's word alone."""
    where = tree.state_path(JOURNAL)
    written: dict[str, str | None] = {}
    if journal.manifest_before is not None:
        try:
            before = parse_manifest(journal.manifest_before.encode(), where, tree)
        except BackportError:
            raise StateError(
                f"{where}: unreadable journal (its manifest_before); reinstall vllm=={tree.version}"
            ) from None
        written = {path: f.patched for path, f in before.files.items()}
    seen = set()
    for e in journal.files:
        possible: set[str | None] = {tree.record[e.path]} if e.path in tree.record else {None}
        if e.path in written:
            possible.add(written[e.path])
        if e.before not in possible or e.path in seen:
            raise StateError(
                f"{where}: its entry for {e.path} names bytes this install never had before a run "
                "(neither RECORD's nor what vllm-backports wrote); refusing to act on it: "
                f"reinstall vllm=={tree.version}"
            )
        seen.add(e.path)


def recover(tree: Tree) -> list[str]:
    """Roll an interrupted run back; return the paths restored. Call with the lock held."""
    plan = rollback_plan(tree)
    if plan is None:
        return []
    restored = []
    for rel, before in plan.files.items():
        target = tree.path(rel)
        sweep_tmp(target.parent, target.name)
        current = target.read_bytes() if target.exists() else None
        mode = plan.modes.get(rel)
        if mode is None and target.exists():
            mode = target.stat().st_mode & 0o7777  # commit kept it: the file's mode before the run
        if current == before:
            if before is not None and mode is not None and target.stat().st_mode & 0o7777 != mode:
                os.chmod(target, mode)
            if before is None:
                remove_file(target, tree.root / "vllm")  # directories made for it go too
            continue
        restored.append(rel)
        if before is None:
            remove_file(target, tree.root / "vllm")
        else:
            write_atomic(target, before, mode)
            remove_pycache(target)
    manifest = tree.state_path(MANIFEST)
    if plan.manifest_before is None:
        manifest.unlink(missing_ok=True)
    else:
        write_atomic(manifest, plan.manifest_before.encode())
    _finish(tree)
    return restored


def _where_rollback_stopped(tree: Tree) -> tuple[list[str], list[str]]:
    """The journal's files that hold their bytes from before the run, and the others."""
    back: list[str] = []
    not_back: list[str] = []
    try:
        journal = read_journal(tree)
        for e in journal.files if journal else ():
            (back if sha256_of(tree.read(e.path)) == e.before else not_back).append(e.path)
    except (OSError, BackportError):
        return [], ["(could not read them back)"]
    return back, not_back


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


def _finish(tree: Tree) -> None:
    tree.state_path(JOURNAL).unlink(missing_ok=True)
    backups = tree.state_path(BACKUPS, directory=True)
    if backups.is_dir():
        _remove_backups(backups)
    _fsync_dir(tree.state_dir)


def _test_kill_point(n: int) -> None:
    # Lets the test suite kill the process mid-commit, as a power cut or SIGKILL would.
    if os.environ.get("VLLM_BACKPORTS_TEST_KILL_AFTER") == str(n):
        os._exit(137)


def commit(tree: Tree, changes: list[Change], manifest: Manifest | None) -> None:
    """Land every change and the new manifest, or none of them. Call with the lock held."""
    state = tree.state_dir
    backups = tree.state_path(BACKUPS, directory=True)
    old_manifest = tree.state_path(MANIFEST)
    entries = []
    try:
        backups.mkdir(exist_ok=True)
        for n, change in enumerate(changes):
            if change.before is not None:
                write_atomic(backups / str(n), change.before)
            target = tree.path(change.path)  # a path that leads out of the package stops here, before the journal
            mode = target.stat().st_mode & 0o7777 if change.before is not None else None
            entries.append(Entry(change.path, mode, sha256_of(change.before), sha256_of(change.after)))
        journal = Journal(
            started=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            manifest_before=old_manifest.read_text() if old_manifest.exists() else None,
            files=tuple(entries),
        )
        write_atomic(tree.state_path(JOURNAL), journal.to_bytes())
    except BaseException as failure:
        # No journal yet: no file of the package was touched. The backups go with the failure,
        # or status would take them for a killed run's.
        tree.state_path(JOURNAL).unlink(missing_ok=True)
        if backups.is_dir():
            with contextlib.suppress(OSError):
                _remove_backups(backups)
        if isinstance(failure, OSError):
            raise StateError(f"{_why(failure)}; nothing was changed") from failure
        raise
    try:
        for n, change in enumerate(changes, 1):
            target = tree.path(change.path)
            if sha256_of(tree.read(change.path)) != sha256_of(change.before):
                # Edited since this run read it (an editor saving now): keep that edit, and let
                # the rollback undo only what this run already wrote.
                write_atomic(tree.state_path(JOURNAL), replace(journal, files=journal.files[: n - 1]).to_bytes())
                raise StateError(
                    f"{change.path}: changed while this run was writing; the edit is kept, the run rolled back: "
                    "run again once nothing else writes to vLLM"
                )
            if change.after is None:
                remove_file(target, tree.root / "vllm")
            else:
                mode = target.stat().st_mode & 0o7777 if target.exists() else 0o644
                target.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(target, change.after, mode)
            remove_pycache(target)
            _test_kill_point(n)
        if manifest is None:
            old_manifest.unlink(missing_ok=True)
        else:
            write_atomic(old_manifest, manifest.to_bytes())
    except BaseException as failure:
        # Failed in-process (disk full, Ctrl-C): undo now rather than on the next run.
        try:
            recover(tree)
        except Exception as again:  # a read-only remount or a dying disk fails the undo as well
            back, not_back = _where_rollback_stopped(tree)
            raise StateError(
                f"{_why(failure)}; rolling back failed too ({_why(again)}): "
                f"as before the run: {', '.join(back) or 'none'}; not restored: {', '.join(not_back) or 'none'}; "
                f"{state / JOURNAL} is kept, and the next run rolls back once the cause is fixed "
                "(`apply.py status` shows it)"
            ) from failure
        if isinstance(failure, OSError):
            raise StateError(f"{_why(failure)}; the run was rolled back: every file is as it was") from failure
        raise
    try:
        _finish(tree)
    except OSError as exc:
        if (state / JOURNAL).exists():
            raise StateError(
                f"every change landed, but tidying up failed ({_why(exc)}): {state / JOURNAL} is left, "
                "so the next run takes this one for interrupted and undoes it first; fix the cause and "
                "run again"
            ) from exc
        raise StateError(
            f"every change landed, but tidying up failed ({_why(exc)}): {state / BACKUPS} is left; "
            "the next run removes it"
        ) from exc
