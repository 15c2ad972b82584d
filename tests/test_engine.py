"""Planning a run: outcomes, the changes handed to state.commit, and the manifest, computed in
memory from a tree, a resolution and the selection (nothing here writes to the tree)."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import KERNEL, MOD, MOD_FIXED, sha
from vllm_backports import engine
from vllm_backports.catalogue import Catalogue
from vllm_backports.errors import StateError, TargetError, UsageError
from vllm_backports.resolve import parse_vllm, resolve
from vllm_backports.tree import open_tree

KERNEL_PATH = "vllm/kernels/new_kernel.py"
BOTH = {"fix-thing", "add-kernel"}


def _setup(home, version="0.20.0", files=None):
    cat = Catalogue(home.root)
    tree = open_tree(home.tree(version, files=files))
    return cat, tree, resolve(cat, tree, parse_vllm(cat, version))


def _states(plan: engine.Plan) -> list[tuple[str, str]]:
    return [(o.id, o.state) for o in plan.outcomes]


def _patched(plan: engine.Plan) -> dict[str, bytes | None]:
    return {c.path: c.after for c in plan.changes}


# ---- select ---------------------------------------------------------------------------------


def test_select_takes_everything_by_default_and_narrows_with_only_and_skip(home):
    cat, _, res = _setup(home)
    assert engine.select(res.series, (), ()) == BOTH
    assert engine.select(res.series, ("fix-thing",), ()) == {"fix-thing"}
    assert engine.select(res.series, (), ("fix-thing",)) == {"add-kernel"}


def test_select_names_the_near_miss_or_lists_the_series(home):
    _, _, res = _setup(home)
    with pytest.raises(UsageError, match=r"no backport 'fix-thin' in series s1 \(did you mean fix-thing\?\)"):
        engine.select(res.series, ("fix-thin",), ())
    with pytest.raises(UsageError, match=r"\(series s1 has: fix-thing, add-kernel\)"):
        engine.select(res.series, (), ("zzz",))


def test_select_keeps_halves_of_one_fix_together(home):
    _, _, res = _setup(home)
    together = {"add-kernel": ("fix-thing",)}
    assert engine.select(res.series, (), (), together) == BOTH
    assert engine.select(res.series, (), ("fix-thing", "add-kernel"), together) == set()
    with pytest.raises(UsageError, match="add-kernel and fix-thing go together in series s1"):
        engine.select(res.series, ("add-kernel",), (), together)
    # a partner the series does not carry binds nothing
    assert engine.select(res.series, ("add-kernel",), (), {"add-kernel": ("elsewhere",)}) == {"add-kernel"}


# ---- plan_apply -----------------------------------------------------------------------------


def test_apply_on_a_pristine_tree_plans_every_file_and_the_manifest(home):
    _, tree, res = _setup(home)
    plan = engine.plan_apply(tree, res, None, BOTH)
    assert _states(plan) == [("fix-thing", engine.APPLIED), ("add-kernel", engine.APPLIED)]
    assert _patched(plan) == {"vllm/mod.py": MOD_FIXED, KERNEL_PATH: KERNEL}
    assert {c.path: c.before for c in plan.changes} == {"vllm/mod.py": MOD, KERNEL_PATH: None}
    m = plan.manifest.to_json()  # as manifest.json holds it
    assert (m["format"], m["vllm"], m["series"]) == (1, "0.20.0", "s1")
    pinned = res.series.pinned
    assert m["applied"] == [
        {"id": "fix-thing", "patch": "0001-fix-thing.patch", "sha256": pinned["0001-fix-thing.patch"]},
        {"id": "add-kernel", "patch": "0002-add-kernel.patch", "sha256": pinned["0002-add-kernel.patch"]},
    ]
    assert m["files"] == {"vllm/mod.py": {"pristine": sha(MOD), "patched": sha(MOD_FIXED)},
                          KERNEL_PATH: {"pristine": None, "patched": sha(KERNEL)}}
    assert not plan.failed and plan.count(engine.APPLIED) == 2
    assert tree.read("vllm/mod.py") == MOD and tree.read(KERNEL_PATH) is None  # planned, not written


def test_apply_over_its_own_result_is_already_and_changes_nothing(home):
    _, tree, res = _setup(home)
    first = engine.plan_apply(tree, res, None, BOTH)
    again = engine.plan_apply(tree, res, first.manifest, BOTH, view=_patched(first))
    assert _states(again) == [("fix-thing", engine.ALREADY), ("add-kernel", engine.ALREADY)]
    assert again.changes == [] and [a.patch for a in again.manifest.applied] == [
        a.patch for a in first.manifest.applied]


def test_a_skipped_backport_is_left_out_of_the_changes_and_the_manifest(home):
    _, tree, res = _setup(home)
    plan = engine.plan_apply(tree, res, None, {"add-kernel"})
    assert _states(plan) == [("fix-thing", engine.SKIPPED), ("add-kernel", engine.APPLIED)]
    assert _patched(plan) == {KERNEL_PATH: KERNEL}
    assert [a.id for a in plan.manifest.applied] == ["add-kernel"]
    assert set(plan.manifest.files) == {KERNEL_PATH}


def test_nothing_chosen_plans_no_manifest(home):
    _, tree, res = _setup(home)
    plan = engine.plan_apply(tree, res, None, set())
    assert plan.manifest is None and plan.changes == [] and plan.count(engine.SKIPPED) == 2


def test_a_fix_the_release_carries_is_upstream(home):
    _, tree, res = _setup(home, "0.21.0")
    plan = engine.plan_apply(tree, res, None, {"fix-thing"})
    assert plan.outcomes == [engine.Outcome("fix-thing", "0001-fix-thing.patch", engine.UPSTREAM,
                                            "the release already carries this change")]
    assert plan.changes == [] and plan.manifest is None


def test_a_file_the_patch_does_not_fit_is_drift_with_the_hunk_named(home):
    other = MOD.replace(b"line 9\n", b"line nine\n")
    _, tree, res = _setup(home, files={"vllm/mod.py": other})
    res = dataclasses.replace(res, pristine={"vllm/mod.py": sha(other)})  # a release whose pristine file moved on
    plan = engine.plan_apply(tree, res, None, BOTH)
    (drift,) = [o for o in plan.outcomes if o.state == engine.DRIFT]
    assert drift.id == "fix-thing" and "hunk #1" in drift.detail
    assert plan.failed and _patched(plan) == {KERNEL_PATH: KERNEL}


def test_a_local_edit_is_refused_before_anything_is_planned(home):
    _, tree, res = _setup(home)
    with pytest.raises(TargetError, match=r"vllm/mod.py: edited locally .*\(no vllm-backports manifest here"):
        engine.plan_apply(tree, res, None, BOTH, view={"vllm/mod.py": MOD + b"# mine\n"})


@pytest.mark.parametrize("applied", [{"fix-thing"}, BOTH])
def test_files_the_series_wrote_with_no_manifest_beside_them_are_read_as_its_own(home, applied):
    """A copy that left out vllm/.backports/ (dot-folders dropped): its files were refused as
    edited locally, and revert could not take them back."""
    _, tree, res = _setup(home)
    view = _patched(engine.plan_apply(tree, res, None, applied))
    plan = engine.plan_revert(tree, res, None, BOTH, view=view)
    assert plan.notes[0].startswith("no manifest here, and the files are what the series writes (")
    assert {o.id for o in plan.outcomes if o.state == engine.REVERTED} == applied
    assert _patched(plan) == {p: None if p == KERNEL_PATH else MOD for p in view}  # pristine again
    assert _states(engine.plan_apply(tree, res, None, applied, view=view)) == [
        (b, engine.ALREADY if b in applied else engine.SKIPPED) for b in ("fix-thing", "add-kernel")
    ]


def test_with_no_manifest_a_file_the_series_does_not_explain_is_still_an_edit(home):
    _, tree, res = _setup(home)
    view = _patched(engine.plan_apply(tree, res, None, BOTH))
    view["vllm/mod.py"] = view["vllm/mod.py"] + b"# mine\n"
    with pytest.raises(TargetError, match=r"vllm/mod.py: edited locally .*\(no vllm-backports manifest here"):
        engine.plan_revert(tree, res, None, BOTH, view=view)


def test_another_builds_record_is_refused(home):
    _, tree, res = _setup(home)
    res = dataclasses.replace(res, pristine={"vllm/mod.py": sha(b"another build")})
    with pytest.raises(TargetError, match="RECORD does not match PyPI's vLLM 0.20.0; it is another build"):
        engine.plan_apply(tree, res, None, BOTH)


def test_a_manifest_left_on_pristine_files_is_stale_and_dropped(home):
    _, tree, res = _setup(home)
    # as if written, then vllm reinstalled (the manifest of an edit only: a created file the
    # manifest records and the tree lacks is refused as missing instead)
    manifest = engine.plan_apply(tree, res, None, {"fix-thing"}).manifest
    plan = engine.plan_apply(tree, res, manifest, BOTH)
    assert plan.notes == ["the manifest was stale (every file is pristine again); starting fresh"]
    assert plan.count(engine.APPLIED) == 2


# ---- plan_revert ----------------------------------------------------------------------------


def test_revert_restores_the_pristine_bytes_and_drops_the_manifest(home):
    _, tree, res = _setup(home)
    applied = engine.plan_apply(tree, res, None, BOTH)
    plan = engine.plan_revert(tree, res, applied.manifest, BOTH, view=_patched(applied))
    assert _states(plan) == [("fix-thing", engine.REVERTED), ("add-kernel", engine.REVERTED)]
    assert _patched(plan) == {"vllm/mod.py": MOD, KERNEL_PATH: None} and plan.manifest is None


def test_revert_of_one_keeps_the_other_in_the_manifest(home):
    _, tree, res = _setup(home)
    applied = engine.plan_apply(tree, res, None, BOTH)
    plan = engine.plan_revert(tree, res, applied.manifest, {"add-kernel"}, view=_patched(applied))
    assert _states(plan) == [("fix-thing", engine.SKIPPED), ("add-kernel", engine.REVERTED)]
    assert _patched(plan) == {KERNEL_PATH: None}
    assert [a.id for a in plan.manifest.applied] == ["fix-thing"]


def test_revert_without_a_manifest_reverts_nothing_and_says_so(home):
    _, tree, res = _setup(home)
    plan = engine.plan_revert(tree, res, None, BOTH)
    assert plan.count(engine.NOT_APPLIED) == 2 and plan.changes == []
    assert plan.notes == ["this vLLM carries no backports from vllm-backports"]


def test_revert_refuses_a_patch_that_changed_since_it_was_applied(home):
    _, tree, res = _setup(home)
    applied = engine.plan_apply(tree, res, None, BOTH)
    manifest = dataclasses.replace(
        applied.manifest, applied=tuple(dataclasses.replace(a, sha256="0" * 64) for a in applied.manifest.applied))
    with pytest.raises(StateError, match="0002-add-kernel.patch changed since it was applied"):
        engine.plan_revert(tree, res, manifest, BOTH, view=_patched(applied))
