"""Lay out a release's pristine files from PyPI as a minimal site-packages tree (--fetch)."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import IO

from .catalogue import Catalogue, Release
from .errors import UsageError
from .pypi import Fetched, cache_root, fetch
from .state import left_by_dead_processes
from .tree import Tree, open_tree


def fetch_release(cat: Catalogue, release: Release, progress: Callable[[str], None]) -> Fetched:
    needed: list[str] = []
    if release.series:
        series = cat.series(release.series)
        needed = [p for p in series.paths if p not in series.created]
    return fetch(release, needed, progress)


def materialize(
    cat: Catalogue, release: Release, dest: Path | None, progress: Callable[[str], None]
) -> tuple[Tree, Fetched | None]:
    """A tree of the release's pristine files at dest (default: a fresh one in the cache).

    An existing dest that already holds this release is reused as it is, so that apply, status
    and revert can be run against it in turn.
    """
    if dest is None:
        # a fresh name: the layouts of killed runs go with their copies' locks (_own_copy)
        dest = _own_copy(cache_root() / "trees", release.version)
    elif _holds_files(dest):
        return _reused(dest, release), None
    else:
        _sweep_staging(dest)
    fetched = fetch_release(cat, release, progress)
    # Laid out beside dest and renamed into place: a run killed half way leaves dest as it was
    # (absent or empty), so the next --fetch starts over instead of finding a damaged tree.
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = dest.parent / f"{STAGING_PREFIX}{dest.name}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        dist_info = staging / f"vllm-{release.version}.dist-info"
        dist_info.mkdir(parents=True)
        (staging / "vllm").mkdir()
        (dist_info / "RECORD").write_bytes(fetched.record)
        (dist_info / "METADATA").write_bytes(fetched.metadata)
        for rel, data in fetched.files.items():
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        try:
            os.rename(staging, dest)  # replaces an empty dest directory, never a full one
        except OSError:
            if not _holds_files(dest):
                raise
            # another run given the same --target laid it out after this one found it empty:
            # take its tree as an existing dest is taken (its lock orders what runs on it next)
            shutil.rmtree(staging, ignore_errors=True)
            return _reused(dest, release), None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return open_tree(dest), fetched


def _holds_files(dest: Path) -> bool:
    return dest.is_dir() and any(dest.iterdir())


def _reused(dest: Path, release: Release) -> Tree:
    """The tree an existing dest holds, refused unless it is `release`."""
    tree = open_tree(dest)
    if tree.version != release.version:
        raise UsageError(
            f"{dest} holds vLLM {tree.version}, not {release.version}; use an empty directory with --fetch"
        )
    return tree


STAGING_PREFIX = ".vllm-backports-fetching."

# the lock of each copy this process laid out in the cache, held until the process ends
_HELD: list[IO[str]] = []


def _own_copy(trees: Path, version: str) -> Path:
    """A copy of its own for this run, trees/VERSION.ID, held by an flock on trees/VERSION.ID.lock
    until the process ends. Runs side by side (a CI matrix; containers or hosts sharing the cache,
    where process ids tell nothing) must neither remove nor patch each other's copies. The copies
    of runs that have ended, whose locks nobody holds, go first, with what they were laying out
    and the folder of the layout before copies of their own (trees/VERSION)."""
    trees.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(trees / version, ignore_errors=True)
    for lock in trees.glob(f"{version}.*.lock"):
        with open(lock) as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a run under way holds it
            name = lock.name.removesuffix(".lock")
            for ended in (trees / name, *trees.glob(f"{STAGING_PREFIX}{name}.*")):
                shutil.rmtree(ended, ignore_errors=True)
            lock.unlink(missing_ok=True)
    name = f"{version}.{uuid.uuid4().hex[:12]}"
    # locked under a name no other run looks at, then renamed: a lock file sweepers can see is held
    fd, held = tempfile.mkstemp(dir=trees, prefix=f".{name}.")
    fh = os.fdopen(fd, "w")
    fcntl.flock(fh, fcntl.LOCK_EX)
    os.rename(held, trees / f"{name}.lock")
    _HELD.append(fh)
    return trees / name


def _sweep_staging(dest: Path) -> None:
    """Remove layouts that killed runs left beside dest (their process is gone)."""
    for old in left_by_dead_processes(dest.parent, f"{STAGING_PREFIX}{dest.name}"):
        shutil.rmtree(old, ignore_errors=True)
