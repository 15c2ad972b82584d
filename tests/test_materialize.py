"""--fetch's tree: a release's pristine files laid out as a minimal site-packages, renamed into
place whole, reused where it already holds the release; fetched through a fake (no network)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from vllm_backports import materialize
from vllm_backports.digest import sha256
from vllm_backports.errors import UsageError
from vllm_backports.materialize import STAGING_PREFIX, fetch_release
from vllm_backports.pypi import Fetched

FILES = {"vllm/a.py": b"a = 1\n", "vllm/sub/b.py": b"b = 2\n"}


def _fetched(version: str, files: dict[str, bytes] = FILES) -> Fetched:
    import base64

    rows = [f"{rel},sha256={base64.urlsafe_b64encode(bytes.fromhex(sha256(data))).decode().rstrip('=')},{len(data)}"
            for rel, data in files.items()]
    return Fetched(version=version, record="\n".join(rows).encode(),
                   metadata=f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n".encode(), files=dict(files))


def _release(version: str = "0.20.0", series: str = "0.20.0") -> SimpleNamespace:
    return SimpleNamespace(version=version, series=series)


class FakeCatalogue:
    def __init__(self, paths: tuple[str, ...] = (), created: frozenset[str] = frozenset()):
        self._series = SimpleNamespace(paths=paths, created=created)
        self.asked: list[str] = []

    def series(self, name: str):
        self.asked.append(name)
        return self._series


@pytest.fixture
def fetches(monkeypatch):
    """Each fetch asked of PyPI: (version, paths); it serves FILES."""
    asked: list[tuple[str, list[str]]] = []

    def fetch(release, paths, progress):
        asked.append((release.version, list(paths)))
        return _fetched(release.version)

    monkeypatch.setattr(materialize, "fetch", fetch)
    return asked


def test_only_the_pristine_files_the_series_patches_are_fetched(fetches):
    cat = FakeCatalogue(paths=("vllm/a.py", "vllm/new_kernel.py", "vllm/sub/b.py"),
                        created=frozenset({"vllm/new_kernel.py"}))
    fetch_release(cat, _release(), lambda _m: None)
    assert cat.asked == ["0.20.0"] and fetches == [("0.20.0", ["vllm/a.py", "vllm/sub/b.py"])]
    fetch_release(cat, _release("0.21.0", series=""), lambda _m: None)  # nothing backported yet
    assert fetches[-1] == ("0.21.0", []) and cat.asked == ["0.20.0"]


def test_an_empty_dest_gets_the_release_laid_out_as_site_packages(tmp_path, fetches):
    dest = tmp_path / "tree"
    dest.mkdir()
    tree, fetched = materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
    assert fetched is not None and fetched.version == "0.20.0" and len(fetches) == 1
    assert tree.root == dest.resolve() and tree.version == "0.20.0"
    assert tree.record == {rel: sha256(data) for rel, data in FILES.items()}
    assert {rel: (dest / rel).read_bytes() for rel in FILES} == FILES
    assert sorted(p.name for p in dest.iterdir()) == ["vllm", "vllm-0.20.0.dist-info"]
    assert [p.name for p in tmp_path.iterdir()] == ["tree"]  # no staging left beside it


def test_a_dest_holding_the_release_is_reused_without_fetching(tmp_path, fetches):
    dest = tmp_path / "tree"
    materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
    (dest / "vllm/a.py").write_bytes(b"applied\n")  # what an earlier apply left
    tree, fetched = materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
    assert fetched is None and len(fetches) == 1 and tree.version == "0.20.0"
    assert (dest / "vllm/a.py").read_bytes() == b"applied\n"


def test_a_dest_holding_another_release_is_refused_untouched(tmp_path, fetches):
    dest = tmp_path / "tree"
    materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
    with pytest.raises(UsageError, match="holds vLLM 0.20.0, not 0.21.0; use an empty directory"):
        materialize.materialize(FakeCatalogue(), _release("0.21.0"), dest, lambda _m: None)
    assert len(fetches) == 1 and (dest / "vllm-0.20.0.dist-info").is_dir()
    assert not (dest / "vllm-0.21.0.dist-info").exists()


def test_without_dest_a_fresh_tree_in_the_cache_replaces_the_last(tmp_path, monkeypatch, fetches):
    monkeypatch.setenv("VLLM_BACKPORTS_CACHE", str(tmp_path / "cache"))
    tree, _ = materialize.materialize(FakeCatalogue(), _release(), None, lambda _m: None)
    assert tree.root.parent == (tmp_path / "cache/trees").resolve() and tree.root.name.startswith("0.20.0.")
    (tree.root / "vllm/a.py").write_bytes(b"applied\n")
    again, fetched = materialize.materialize(FakeCatalogue(), _release(), None, lambda _m: None)
    assert fetched is not None and len(fetches) == 2  # never reused: the cache's tree starts pristine
    assert (again.root / "vllm/a.py").read_bytes() == FILES["vllm/a.py"]


def test_a_layout_that_fails_half_way_leaves_dest_as_it_was(tmp_path, monkeypatch):
    # vllm/a.py is written, then cannot be a directory for vllm/a.py/c.py
    broken = {"vllm/a.py": b"a\n", "vllm/a.py/c.py": b"c\n"}
    monkeypatch.setattr(materialize, "fetch", lambda release, paths, progress: _fetched(release.version, broken))
    dest = tmp_path / "tree"
    with pytest.raises(OSError):
        materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
    assert not dest.exists()  # the next --fetch starts over, not from a damaged tree


def _dead_pid() -> int:
    """A pid no process has: above the kernel's largest."""
    pid_max = Path("/proc/sys/kernel/pid_max")
    return int(pid_max.read_text()) + 1 if pid_max.exists() else 2**30


def test_layouts_of_killed_runs_are_swept_and_a_live_runs_kept(tmp_path, fetches):
    dead = tmp_path / f"{STAGING_PREFIX}tree.{_dead_pid()}"
    live = tmp_path / f"{STAGING_PREFIX}tree.{os.getppid()}"  # our parent: alive while we run
    other = tmp_path / f"{STAGING_PREFIX}other.{_dead_pid()}"  # another dest's: not this one's to sweep
    for d in (dead, live, other):
        (d / "vllm").mkdir(parents=True)
    materialize.materialize(FakeCatalogue(), _release(), tmp_path / "tree", lambda _m: None)
    assert not dead.exists() and live.is_dir() and other.is_dir()


def test_runs_side_by_side_each_get_a_tree_of_their_own_and_ended_runs_trees_go(tmp_path, monkeypatch, fetches):
    """Six runs of one release in one CI job once shared trees/0.20.0: each removed or patched
    the others' (one reported the series as already applied, from another run's patched copy).
    A copy is a live run's while its lock is held, whatever process-id space that run is in."""
    import fcntl

    monkeypatch.setenv("VLLM_BACKPORTS_CACHE", str(tmp_path / "cache"))
    trees = tmp_path / "cache" / "trees"
    copies = {n: trees / n for n in ("0.20.0.live", "0.20.0.ended", "0.21.0.ended", "0.20.0")}  # last: old layout
    for d in copies.values():
        (d / "vllm").mkdir(parents=True)
    for n in ("0.20.0.live", "0.20.0.ended", "0.21.0.ended"):
        (trees / f"{n}.lock").write_text("")
    ended_layout = trees / f"{STAGING_PREFIX}0.20.0.ended.{os.getpid()}"
    ended_layout.mkdir()
    (copies["0.20.0.live"] / "vllm" / "a.py").write_bytes(b"applied\n")
    with open(trees / "0.20.0.live.lock") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the live run's
        tree, fetched = materialize.materialize(FakeCatalogue(), _release(), None, lambda _m: None)
        again, _ = materialize.materialize(FakeCatalogue(), _release(), None, lambda _m: None)
    assert fetched is not None and tree.root != again.root  # this process's first copy is live too
    assert (tree.root / "vllm/a.py").read_bytes() == FILES["vllm/a.py"] and tree.root.is_dir()
    assert (copies["0.20.0.live"] / "vllm" / "a.py").read_bytes() == b"applied\n"
    assert not copies["0.20.0.ended"].exists() and not (trees / "0.20.0.ended.lock").exists()
    assert not ended_layout.exists() and not copies["0.20.0"].exists()
    assert copies["0.21.0.ended"].is_dir()  # another release's: its next run sweeps it
    assert sorted(p.name for p in trees.iterdir() if p.name.startswith(".")) == []  # locks renamed into place


def _laid_out_by_another_run(dest: Path, version: str) -> None:
    dist_info = dest / f"vllm-{version}.dist-info"
    dist_info.mkdir(parents=True)
    fetched = _fetched(version)
    (dist_info / "RECORD").write_bytes(fetched.record)
    (dist_info / "METADATA").write_bytes(fetched.metadata)
    (dest / "vllm" / "sub").mkdir(parents=True)
    (dest / "vllm" / "a.py").write_bytes(b"applied\n")  # and patched since
    (dest / "vllm" / "sub" / "b.py").write_bytes(FILES["vllm/sub/b.py"])


@pytest.mark.parametrize("theirs", ["0.20.0", "0.21.0"])
def test_a_target_another_run_lays_out_meanwhile_is_taken_as_it_is(tmp_path, monkeypatch, theirs):
    """Two runs given one empty --target: the one that renames its layout in second finds the
    target full; it takes that tree as it would have at its start, and leaves no layout behind."""
    dest = tmp_path / "tree"

    def fetch(release, paths, progress):
        _laid_out_by_another_run(dest, theirs)  # while this run downloads
        return _fetched(release.version)

    monkeypatch.setattr(materialize, "fetch", fetch)
    if theirs == "0.20.0":
        tree, fetched = materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
        assert fetched is None and tree.root == dest.resolve() and tree.version == "0.20.0"
    else:
        with pytest.raises(UsageError, match="holds vLLM 0.21.0, not 0.20.0"):
            materialize.materialize(FakeCatalogue(), _release(), dest, lambda _m: None)
    assert (dest / "vllm" / "a.py").read_bytes() == b"applied\n"  # the other run's tree, untouched
    assert [p.name for p in tmp_path.iterdir()] == ["tree"]  # no layout of this run's left beside it
