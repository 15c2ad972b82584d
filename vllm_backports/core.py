"""The core of a run, as pypa/installer's is: a checked Request in, a result out. It finds the
tree, plans in memory, takes the lock and commits, and judges what status sees; the CLI only
parses, wires the progress and note callbacks, and renders.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import engine, state
from . import journal as journals
from . import manifest as manifests
from .catalogue import Catalogue
from .digest import sha256_of
from .errors import BackportError, UsageError
from .manifest import Manifest
from .materialize import materialize
from .pypi import Fetched
from .request import Command, Request, together
from .resolve import Resolution, resolve
from .tree import Tree, installed_tree, open_tree

Say = Callable[[str], None]


@dataclass(frozen=True)
class Run:
    """What apply, check or revert did (check: would do)."""

    tree: Tree
    resolution: Resolution
    fetched: Fetched | None  # what --fetch read from PyPI; None without it, or for a reused --target
    plan: engine.Plan | None  # None: nothing is backported to this release


@dataclass(frozen=True)
class FileState:
    path: str
    state: str  # patched, pristine or modified


@dataclass(frozen=True)
class Status:
    """What a tree carries, read under the shared lock, with the verdict on it."""

    tree: Tree
    resolution: Resolution
    manifest: Manifest | None
    files: tuple[FileState, ...]  # each recorded file's state; without a manifest, the series' modified ones
    journal: Path | None  # an interrupted run's journal
    leftovers: tuple[Path, ...]  # what killed runs left that no run needs
    stale_manifest: bool = False  # a manifest was left, and every file is pristine again: read as none
    rebuilt_manifest: bool = False  # none was there, and the files are what the series writes: rebuilt

    @property
    def not_applied(self) -> list[str]:
        expected = [p.backport_id for p in self.resolution.series.patches] if self.resolution.series else []
        applied = {a.id for a in self.manifest.applied} if self.manifest else set()
        return [b for b in expected if b not in applied]

    @property
    def consistent(self) -> bool:
        """No interrupted run, and every file as vllm-backports wrote it (or pristine, none written)."""
        return not self.journal and all(f.state == "patched" for f in self.files)


def run(cat: Catalogue, request: Request, progress: Say, note: Say) -> Run:
    """Apply, check or revert the series of the vLLM the request names."""
    assert request.command is not Command.STATUS
    tree, res, fetched = _open(cat, request, progress, note)
    try:
        return _run(cat, request, note, tree, res, fetched)
    except BackportError:
        if request.fresh_copy:  # a refused or failed run leaves no copy of its own behind
            shutil.rmtree(tree.root, ignore_errors=True)
        raise


def _run(cat: Catalogue, request: Request, note: Say, tree: Tree, res: Resolution, fetched: Fetched | None) -> Run:
    if res.series is None:
        return Run(tree, res, fetched, None)
    chosen = engine.select(res.series, request.only, request.skip, together(cat))
    # Read under the shared lock, as status reads: a run mid-commit would otherwise show its live
    # journal as an interrupted run, or a file it has written but not yet recorded as an edit.
    with state.reading(tree, note, request.lock_timeout):
        if not chosen >= {p.backport_id for p in res.series.patches}:  # a selection: does it cut a stack?
            if request.command is Command.REVERT:
                _refuse_unstacking(tree, res, chosen)
            else:
                _refuse_unstacked(tree, res, chosen)
        # a check, or a selection of nothing (every backport skipped), writes nothing
        dry = _dry_run(request.command, tree, res, chosen) if request.command is Command.CHECK or not chosen else None
    plan = dry if dry is not None else _write(request.command, tree, res, chosen, note, request.lock_timeout)
    if request.fresh_copy and request.command is Command.APPLY:
        plan.notes.append(f"patched files in {tree.root} (a fresh copy each run; --target DIR keeps one)")
    return Run(tree, res, fetched, plan)


def status(cat: Catalogue, request: Request, progress: Say, note: Say) -> Status:
    """What the tree carries, from the manifest beside it, checked against the files."""
    tree, res, _ = _open(cat, request, progress, note)
    with state.reading(tree, note, request.lock_timeout):
        journal = state.pending_journal(tree)
        manifest = manifests.read(tree)
        # Both read the files as the next run does, which an interrupted run's journal would roll
        # back first: with one pending, the files are mid-run and the status says so instead.
        contents = {p: tree.read(p) for p in res.series.paths} if res.series is not None else None
        clean = contents is not None and engine.shipped(res, contents)
        stale = journal is None and manifest is not None and clean
        if stale:
            # as apply reads it: typically `pip install --force-reinstall vllm`, which puts the
            # files back and leaves vllm/.backports/ as it was
            note("the manifest is stale: every file is pristine again; the next apply starts fresh")
            manifest = None
        rebuilt = False
        if journal is None and manifest is None and contents is not None and not clean:
            # as apply, check and revert read it: a copy that left out vllm/.backports/
            manifest = engine.rebuilt(tree, res, contents)
            rebuilt = manifest is not None
            if rebuilt:
                note("no manifest here, and the files are what the series writes: read as applied (apply writes it)")
        files = _file_states(tree, res, manifest)
        left = state.leftovers(tree)  # under the shared lock no run is under way
    return Status(tree, res, manifest, files, journal, tuple(left), stale, rebuilt)


def _open(cat: Catalogue, request: Request, progress: Say, note: Say) -> tuple[Tree, Resolution, Fetched | None]:
    fetched = None
    if request.fetch:
        release = request.vllm.published
        assert release is not None  # parse_request refuses --fetch without one
        tree, fetched = materialize(cat, release, request.target, progress)
    else:
        can_fetch = request.command in (Command.APPLY, Command.CHECK)
        tree = open_tree(request.target) if request.target else installed_tree(can_fetch)
    res = resolve(cat, tree, request.vllm)
    if res.note:
        note(res.note)
    return tree, res, fetched


def _file_states(tree: Tree, res: Resolution, manifest: Manifest | None) -> tuple[FileState, ...]:
    files = []
    for path, entry in sorted(manifest.files.items() if manifest else ()):
        now = sha256_of(tree.read(path))
        verdict = "patched" if now == entry.patched else "pristine" if now == entry.pristine else "modified"
        files.append(FileState(path, verdict))
    if manifest is None and res.series is not None:
        # Nothing recorded: every file the series touches must then be as the release ships it.
        for path in res.series.paths:
            if sha256_of(tree.read(path)) != res.shipped(path):
                files.append(FileState(path, "modified"))
    return tuple(files)


def _plan(
    command: Command,
    tree: Tree,
    res: Resolution,
    manifest: Manifest | None,
    chosen: set[str],
    view: dict[str, bytes | None] | None = None,
) -> engine.Plan:
    if command is Command.REVERT:
        return engine.plan_revert(tree, res, manifest, chosen, view)
    plan = engine.plan_apply(tree, res, manifest, chosen, view)
    if command is Command.CHECK:
        plan.outcomes = [
            engine.Outcome(o.id, o.patch, engine.CLEAN) if o.state == engine.APPLIED else o for o in plan.outcomes
        ]
    return plan


def _next_view(tree: Tree) -> tuple[Manifest | None, dict[str, bytes | None] | None, Path | None]:
    """The manifest and files as the next real run will see them, after it rolls back any
    interrupted run (whose journal is named), which a dry run must not write."""
    rollback = state.rollback_plan(tree)
    if rollback is None:
        return manifests.read(tree), None, None
    journal = tree.state_dir / journals.NAME
    manifest = None
    if rollback.manifest_before is not None:
        manifest = manifests.parse(rollback.manifest_before.encode(), journal, tree)
    return manifest, rollback.files, journal


def _dry_run(command: Command, tree: Tree, res: Resolution, chosen: set[str]) -> engine.Plan:
    """Plan against the tree as the next real run would see it, writing nothing."""
    manifest, view, journal = _next_view(tree)
    plan = _plan(command, tree, res, manifest, chosen, view)
    if journal is not None:
        plan.notes.append(f"an interrupted run left {journal}; the next apply or revert rolls it back first")
    return plan


def _refuse_unstacked(tree: Tree, res: Resolution, chosen: set[str]) -> None:
    """A later patch may be written on an earlier one's lines (its hunks' context is the earlier
    patch's output), so leaving the earlier one out makes it fail as if the release had drifted.
    Which patches stack so is derived here, by planning the whole series beside the selection,
    and turned into a usage error before anything is touched."""
    assert res.series is not None
    ids = [p.backport_id for p in res.series.patches]
    manifest, view, _ = _next_view(tree)
    partial = _plan(Command.CHECK, tree, res, manifest, chosen, view)
    if not partial.failed:
        return
    whole = {o.id: o.state for o in _plan(Command.CHECK, tree, res, manifest, set(ids), view).outcomes}
    paths: dict[str, set[str]] = {}
    for p in res.series.patches:
        paths.setdefault(p.backport_id, set()).update(p.paths)
    for o in partial.outcomes:
        if o.state != engine.DRIFT or whole.get(o.id) == engine.DRIFT:
            continue
        left_out = [bid for bid in ids[: ids.index(o.id)] if bid not in chosen]
        # name the left-out patches that touch the same files; any left-out one if none does
        under = [bid for bid in left_out if paths[bid] & paths[o.id]] or left_out
        raise UsageError(
            f"{o.id} applies only on top of {', '.join(under)} in series {res.series.name}, which this "
            f"selection leaves out: select {'them' if len(under) > 1 else 'it'} too, or leave {o.id} out"
        )


def _refuse_unstacking(tree: Tree, res: Resolution, chosen: set[str]) -> None:
    """The revert side of _refuse_unstacked: reverting a patch that a kept one is written on may
    itself succeed (its hunks above the kept one's), but leaves the kept one on lines that no
    longer hold, so the next revert drifts and the release's bytes are out of reach. Derived by
    planning the whole revert after the selected one, and refused before anything is touched."""
    assert res.series is not None
    ids = [p.backport_id for p in res.series.patches]
    manifest, view, _ = _next_view(tree)
    partial = _plan(Command.REVERT, tree, res, manifest, chosen, view)
    if partial.failed:
        # The selected patch does not reverse under a kept one written on its lines; where the
        # whole revert goes through, that is the selection's fault, not drift.
        if _plan(Command.REVERT, tree, res, manifest, set(ids), view).failed:
            return
        drifted = [o.id for o in partial.outcomes if o.state == engine.DRIFT]
        if manifest is None:  # the files the series wrote, with no manifest: as the revert reads them
            manifest = engine.rebuilt(tree, res, {p: (view or {}).get(p, tree.read(p)) for p in res.series.paths})
        applied = {a.id for a in manifest.applied} if manifest else set()
        kept = [b for b in ids[ids.index(drifted[-1]) + 1 :] if b not in chosen and b in applied]
        if not kept:
            return
        raise UsageError(
            f"{', '.join(drifted)} cannot be reverted in series {res.series.name} while {', '.join(kept)} "
            f"stays applied on its lines; select {', '.join(kept)} too"
        )
    if not partial.changes:
        return
    after = {**(view or {}), **{c.path: c.after for c in partial.changes}}
    rest = _plan(Command.REVERT, tree, res, partial.manifest, set(ids), after)
    stuck = [o.id for o in rest.outcomes if o.state == engine.DRIFT]
    if stuck:
        reverted = [o.id for o in partial.outcomes if o.state == engine.REVERTED]
        raise UsageError(
            f"{', '.join(stuck)} is written on {', '.join(reverted)} in series {res.series.name}: reverting "
            f"{'them' if len(reverted) > 1 else 'it'} alone would leave the tree where no later revert "
            f"restores the release's bytes; select {', '.join(stuck)} too"
        )


def _needs_commit(plan: engine.Plan, manifest: Manifest | None) -> bool:
    return not plan.failed and (bool(plan.changes) or not manifests.same(plan.manifest, manifest))


def _write(
    command: Command, tree: Tree, res: Resolution, chosen: set[str], note: Say, lock_timeout: float
) -> engine.Plan:
    """Plan, and commit under the lock what the plan changes."""
    assert res.series is not None
    refused: BackportError | None = None
    if not state.pending_journal(tree):
        # Validate without touching the tree: refusals and no-op runs must not even create
        # vllm/.backports. Another run may be mid-commit (its files written, its manifest not
        # yet): where one holds the lock, judge again under it once that run is done; where none
        # does (it may have finished since), judge once more before refusing.
        for attempt in (1, 2):
            manifest = manifests.read(tree)
            try:
                plan = _plan(command, tree, res, manifest, chosen)
            except BackportError as exc:
                if tree.state_path(state.LOCK).exists() or state.pending_journal(tree):
                    refused = exc
                    break
                if attempt == 2:
                    raise
            else:
                if not _needs_commit(plan, manifest) and not state.leftovers(tree):
                    return plan  # leftovers of a killed run are swept under the lock below
                break
    try:
        state.check_writable(tree, list(res.series.paths))
    except BackportError:
        if refused is not None:
            raise refused from None  # the tree's own problem comes first
        raise
    with state.locked(tree, note, lock_timeout):
        restored = state.recover(tree)
        if restored:
            note(f"rolled back an interrupted run ({', '.join(restored)} restored)")
        manifest = manifests.read(tree)
        plan = _plan(command, tree, res, manifest, chosen)
        if restored:
            plan.notes.append(f"rolled back an interrupted earlier run ({len(restored)} files)")
        if _needs_commit(plan, manifest):
            state.commit(tree, plan.changes, plan.manifest)
        return plan
