"""Plan a run over a vLLM tree: classify every backport of the series, compute all new file
contents in memory, and hand the result to state.commit (or to nobody, for a dry run).
"""

from __future__ import annotations

import difflib
import time
from dataclasses import dataclass, field

from . import __version__
from .catalogue import Series
from .digest import sha256, sha256_of
from .errors import StateError, TargetError, UsageError
from .hunks import Mismatch, apply_patches
from .manifest import AppliedPatch, FileHashes, Manifest
from .patchfile import Patch
from .resolve import Resolution
from .state import Change
from .tree import Tree

# apply/check states
APPLIED, CLEAN, ALREADY, UPSTREAM, DRIFT, SKIPPED = "applied", "clean", "already", "upstream", "drift", "skipped"
# revert states
REVERTED, NOT_APPLIED = "reverted", "not-applied"


@dataclass(frozen=True)
class Outcome:
    id: str
    patch: str
    state: str
    detail: str = ""


@dataclass
class Plan:
    outcomes: list[Outcome]
    changes: list[Change]
    manifest: Manifest | None
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(o.state == DRIFT for o in self.outcomes)

    def count(self, state: str) -> int:
        return sum(o.state == state for o in self.outcomes)


def select(
    series: Series, only: tuple[str, ...], skip: tuple[str, ...], together: dict[str, tuple[str, ...]] | None = None
) -> set[str]:
    ids = [p.backport_id for p in series.patches]
    for wanted in only + skip:
        if wanted not in ids:
            hint = difflib.get_close_matches(wanted, ids, n=1)
            more = f" (did you mean {hint[0]}?)" if hint else f" (series {series.name} has: {', '.join(ids)})"
            raise UsageError(f"no backport {wanted!r} in series {series.name}{more}")
    chosen = (set(only) if only else set(ids)) - set(skip)
    for bid, partners in (together or {}).items():
        for partner in partners:
            if bid in ids and partner in ids and (bid in chosen) != (partner in chosen):
                raise UsageError(f"{bid} and {partner} go together in series {series.name}: select both or neither")
    return chosen


def _contents(
    tree: Tree,
    res: Resolution,
    manifest: Manifest | None,
    notes: list[str],
    view: dict[str, bytes | None] | None = None,
) -> tuple[dict[str, bytes | None], Manifest | None]:
    """Current bytes of every series file, each proven to be pristine or our own patched state."""
    assert res.series is not None
    created = res.series.created
    contents = {p: view[p] if view is not None and p in view else tree.read(p) for p in res.series.paths}
    clean = shipped(res, contents)
    if manifest is None and not clean:
        manifest = rebuilt(tree, res, contents)
        if manifest is not None:
            ids = ", ".join(a.id for a in manifest.applied)
            notes.append(f"no manifest here, and the files are what the series writes ({ids}): rebuilt from them")
    recorded = manifest.files if manifest else {}
    for path, data in contents.items():
        if data is None:
            if path in created and path not in recorded:
                continue
            raise TargetError(f"{path}: missing from the vLLM tree; reinstall vllm=={res.version}")
        now = sha256(data)
        pristine = res.pristine.get(path)
        if path not in created and tree.record.get(path) != pristine:
            raise TargetError(
                f"{path}: this install's RECORD does not match PyPI's vLLM {res.version}; it is another build"
            )
        if now != pristine and (path not in recorded or now != recorded[path].patched):
            unrecorded = "" if manifest else " (no vllm-backports manifest here to tell its own changes by)"
            raise TargetError(
                f"{path}: edited locally (sha256 {now[:12]} is neither pristine nor what vllm-backports "
                f"wrote{unrecorded}); undo the edit or reinstall vllm=={res.version}"
            )
    if manifest and clean:
        # Typically `pip install --force-reinstall vllm`: files are back to pristine and the
        # manifest left behind no longer describes them.
        notes.append("the manifest was stale (every file is pristine again); starting fresh")
        manifest = None
    return contents, manifest


def rebuilt(tree: Tree, res: Resolution, contents: dict[str, bytes | None]) -> Manifest | None:
    """With no manifest beside the files (a copy that left out vllm/.backports/): the manifest a
    run applying the series' patches would have written, where reversing some of them, last
    first, takes every file back to the bytes the release ships; else None. None as well where
    the install's RECORD is not the release's (another build, which every command refuses)."""
    assert res.series is not None
    if any(p not in res.series.created and tree.record.get(p) != res.pristine.get(p) for p in res.series.paths):
        return None
    now = dict(contents)
    found: list[Patch] = []
    for patch in reversed(res.series.patches):
        back = apply_patches(now, patch.reversed().files)
        if not isinstance(back, Mismatch):
            now, found = back, [patch, *found]
    if not found or not shipped(res, now):
        return None
    return _manifest(res, contents, found)


def shipped(res: Resolution, contents: dict[str, bytes | None]) -> bool:
    """Whether every file of the series is, in `contents`, as the release ships it."""
    assert res.series is not None
    return all(sha256_of(contents[p]) == res.shipped(p) for p in res.series.paths)


def plan_apply(
    tree: Tree,
    res: Resolution,
    manifest: Manifest | None,
    chosen: set[str],
    view: dict[str, bytes | None] | None = None,
) -> Plan:
    notes: list[str] = []
    assert res.series is not None
    contents, manifest = _contents(tree, res, manifest, notes, view)
    start = dict(contents)
    ours = {a.patch: a for a in manifest.applied} if manifest else {}
    outcomes: list[Outcome] = []
    applied_now: list[Patch] = []
    for patch in res.series.patches:
        if patch.backport_id not in chosen:
            outcomes.append(Outcome(patch.backport_id, patch.name, SKIPPED))
            continue
        if _recorded(patch, res.series.pinned[patch.name], manifest, start):
            # Known by the manifest, not by reversing it here: its hunks are numbered before the
            # later patches, which may have moved its lines since.
            outcomes.append(Outcome(patch.backport_id, patch.name, ALREADY))
            continue
        forward = apply_patches(contents, patch.files)
        if not isinstance(forward, Mismatch):
            contents = forward
            applied_now.append(patch)
            outcomes.append(Outcome(patch.backport_id, patch.name, APPLIED))
            continue
        backward = apply_patches(contents, patch.reversed().files)
        if isinstance(backward, Mismatch):
            outcomes.append(Outcome(patch.backport_id, patch.name, DRIFT, str(forward)))
        elif patch.name in ours:
            outcomes.append(Outcome(patch.backport_id, patch.name, ALREADY))
        elif all(sha256_of(start[p]) == res.shipped(p) for p in patch.paths):
            outcomes.append(Outcome(patch.backport_id, patch.name, UPSTREAM, "the release already carries this change"))
        else:
            outcomes.append(Outcome(patch.backport_id, patch.name, ALREADY, "present, applied outside vllm-backports"))
    changes = [Change(p, start[p], contents[p]) for p in res.series.paths if start[p] != contents[p]]
    new_manifest = _manifest(res, contents, [p for p in res.series.patches if p.name in ours or p in applied_now])
    return Plan(outcomes, changes, new_manifest, notes)


def _recorded(patch: Patch, pinned: str, manifest: Manifest | None, start: dict[str, bytes | None]) -> bool:
    """Whether the manifest records `patch` as applied, pinned as `pinned` (the patch file now),
    over files that are still what vllm-backports wrote."""
    if manifest is None:
        return False
    entry = next((a for a in manifest.applied if a.patch == patch.name), None)
    if entry is None or entry.sha256 != pinned:
        return False
    return all(p in manifest.files and sha256_of(start[p]) == manifest.files[p].patched for p in patch.paths)


def plan_revert(
    tree: Tree,
    res: Resolution,
    manifest: Manifest | None,
    chosen: set[str],
    view: dict[str, bytes | None] | None = None,
) -> Plan:
    notes: list[str] = []
    assert res.series is not None
    # Also without a manifest: files that are not pristine then were changed by someone else (or
    # the manifest was deleted), and "nothing to revert" would be a false all-clear.
    contents, manifest = _contents(tree, res, manifest, notes, view)
    if manifest is None:
        return Plan(
            [Outcome(p.backport_id, p.name, NOT_APPLIED) for p in res.series.patches],
            [],
            None,
            notes + ["this vLLM carries no backports from vllm-backports"],
        )
    start = dict(contents)
    ours = {a.patch: a for a in manifest.applied} if manifest else {}
    outcomes: list[Outcome] = []
    remaining: list[Patch] = []
    for patch in reversed(res.series.patches):
        entry = ours.get(patch.name)
        if entry is None:
            outcomes.append(Outcome(patch.backport_id, patch.name, NOT_APPLIED))
            continue
        if patch.backport_id not in chosen:
            outcomes.append(Outcome(patch.backport_id, patch.name, SKIPPED))
            remaining.append(patch)
            continue
        if entry.sha256 != res.series.pinned[patch.name]:
            raise StateError(
                f"{patch.name} changed since it was applied; revert with the vllm-backports version that "
                f"applied it, or reinstall vllm=={res.version}"
            )
        backward = apply_patches(contents, patch.reversed().files)
        if isinstance(backward, Mismatch):
            outcomes.append(Outcome(patch.backport_id, patch.name, DRIFT, str(backward)))
            remaining.append(patch)
            continue
        contents = backward
        outcomes.append(Outcome(patch.backport_id, patch.name, REVERTED))
    outcomes.reverse()
    touched = {p for patch in remaining for p in patch.paths}
    for path in res.series.paths:
        if path in touched or start[path] == contents[path]:
            continue
        expected = res.shipped(path)
        got = sha256_of(contents[path])
        if got != expected:
            raise StateError(
                f"{path}: reverting would not restore the pristine bytes (sha256 {str(got)[:12]}, "
                f"RECORD {str(expected)[:12]}); reinstall vllm=={res.version}"
            )
    changes = [Change(p, start[p], contents[p]) for p in res.series.paths if start[p] != contents[p]]
    kept = [p for p in res.series.patches if p in remaining]
    return Plan(outcomes, changes, _manifest(res, contents, kept) if kept else None, notes)


def _manifest(res: Resolution, contents: dict[str, bytes | None], applied: list[Patch]) -> Manifest | None:
    if not applied:
        return None
    assert res.series is not None
    paths = {p for patch in applied for p in patch.paths}
    return Manifest(
        tool=f"vllm-backports {__version__}",
        vllm=res.version,
        series=res.series.name,
        updated=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        applied=tuple(AppliedPatch(p.backport_id, p.name, res.series.pinned[p.name]) for p in applied),
        files={
            path: FileHashes(res.pristine.get(path), sha256_of(contents[path]))
            for path in res.series.paths
            if path in paths
        },
    )
