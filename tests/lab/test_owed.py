"""lab.owed: the core proofs no evidence of today's series shows, cut into machines."""

from __future__ import annotations

from pathlib import Path

from evidence_case import verify_json, write
from lab import owed
from lab.proofs import core
from vllm_backports.catalogue import Catalogue
from vllm_backports.maint.generated import shipped_patches

REPO = Path(__file__).resolve().parents[2]


def home_with(tmp_path: Path) -> Path:
    """The checkout's catalogue and backports, with no evidence of its own."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "versions.toml").symlink_to(REPO / "versions.toml")
    (home / "backports").symlink_to(REPO / "backports")
    return home


def test_a_proof_of_todays_patches_is_made_and_one_of_other_patches_is_owed(tmp_path):
    home = home_with(tmp_path)
    cat = Catalogue(home)
    before = {o.release: o.proofs for o in owed.owed(home, cat)}
    assert before["0.23.0"] == tuple(core(cat, "0.23.0"))  # no evidence: the whole core set
    today = shipped_patches(cat, "0.23.0")
    carried = list(cat.releases["0.23.0"].backports)
    write(home, "0.23.0", "gdn-ngram", verify_json("0.23.0", target_backports=carried, target_patches=today))
    stale = {**today, "gdn-spec-state": "0" * 64}
    write(home, "0.23.0", "mtp", verify_json("0.23.0", preset="mtp", target_backports=carried, target_patches=stale))
    after = {o.release: o.proofs for o in owed.owed(home, cat)}
    assert "gdn-ngram" not in after["0.23.0"] and "mtp" in after["0.23.0"]
    assert after["0.23.0"] == tuple(p for p in before["0.23.0"] if p != "gdn-ngram")


def test_twins_are_proven_once_and_every_owed_proof_is_a_core_one(tmp_path):
    home = home_with(tmp_path)
    cat = Catalogue(home)
    due = owed.owed(home, cat)
    releases = [o.release for o in due]
    assert "0.22.0" in releases and "0.22.1" not in releases  # same patched files
    for o in due:
        assert set(o.proofs) <= set(core(cat, o.release))
        assert o.own_cuda == (cat.releases[o.release].cuda != 13)


def test_machines_keep_one_torch_together_and_within_what_a_machine_holds():
    def o(release, torch, n, own_cuda=False):
        return owed.Owed(release, torch, own_cuda, tuple(f"p{i}" for i in range(n)))

    due = [o("0.20.0", "2.11.0", 4), o("0.21.0", "2.11.0", 8), o("0.22.0", "2.11.0", 7), o("0.27.0", "2.13.0", 20)]
    due += [o("0.17.0", "2.10.0", 5, True), o("0.18.0", "2.10.0", 4, True)]
    cut = owed.machines(due)
    assert [[x.release for x in m] for m in cut] == [
        ["0.27.0"],  # newest torch first; more than a machine holds: alone
        ["0.20.0", "0.21.0"],  # 12 of 16
        ["0.22.0"],
        ["0.17.0"],  # its own CUDA stack: one wave of 8
        ["0.18.0"],
    ]
    assert owed.plan_line(cut[1]) == "python -m lab plan 0.20.0:p0,p1,p2,p3 0.21.0:p0,p1,p2,p3,p4,p5,p6,p7"


def test_small_machines_of_two_torches_share_one_within_a_wave():
    def o(release, torch, n, own_cuda=False):
        return owed.Owed(release, torch, own_cuda, tuple(f"p{i}" for i in range(n)))

    # 2026-11-29: 0.28.0 .. 0.31.0 fill two machines, 0.32.0 (torch 2.13) and 0.33.0 (2.14) owe
    # two proofs each: one machine, not two
    due = [o("0.28.0", "2.13.0", 8), o("0.29.0", "2.13.0", 8), o("0.32.0", "2.13.0", 2), o("0.33.0", "2.14.0", 2)]
    assert [[x.release for x in m] for m in owed.machines(due)] == [["0.33.0", "0.32.0"], ["0.28.0", "0.29.0"]]
    # more than a wave together, a third torch, or a CUDA stack of its own: apart
    due = [o("0.32.0", "2.13.0", 5), o("0.33.0", "2.14.0", 4)]
    assert len(owed.machines(due)) == 2
    due = [o("0.26.0", "2.11.0", 2), o("0.32.0", "2.13.0", 2), o("0.33.0", "2.14.0", 2)]
    assert [[x.release for x in m] for m in owed.machines(due)] == [["0.33.0", "0.32.0"], ["0.26.0"]]
    due = [o("0.33.0", "2.14.0", 2), o("0.17.0", "2.10.0", 2, True)]
    assert len(owed.machines(due)) == 2


def test_a_proof_a_reproduced_upstream_bug_stops_is_not_in_the_core_set():
    cat = Catalogue(REPO)
    assert "align-allocate-shrink" in cat.releases["0.20.0"].known
    assert "gdn-ngram-prefix" not in core(cat, "0.20.0")
    assert "gdn-ngram-prefix" in core(cat, "0.23.0")  # upstream's fix is in 0.23.0
