"""lab.owed: the core proofs no evidence of today's series shows, cut into machines."""

from __future__ import annotations

import re
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


def test_earlier_lists_proofs_of_an_earlier_series_only_core_or_not_and_those_needing_gpus_apart(
    tmp_path, monkeypatch
):
    import json

    home = home_with(tmp_path)
    cat = Catalogue(home)
    today = shipped_patches(cat, "0.23.0")
    carried = list(cat.releases["0.23.0"].backports)
    stale = {**today, "gdn-spec-state": "0" * 64}
    assert "ngram-tool-calls" not in core(cat, "0.23.0")  # not core: `owed` alone never names it
    for name, patches in (("ngram-tool-calls", stale), ("tp2", stale), ("gdn-ngram", stale), ("mtp", today)):
        write(home, "0.23.0", name, verify_json("0.23.0", target_backports=carried, target_patches=patches))
    write(home, "0.23.0", "gdn-ngram-v1", verify_json("0.23.0", target_backports=carried, target_patches=stale))
    one, wide = owed.earlier(home, cat)
    # a proof the lab no longer knows (gdn-ngram-v1) is left out; mtp was run on today's series
    assert [(x.release, x.proofs) for x in one] == [("0.23.0", ("gdn-ngram", "ngram-tool-calls"))]
    assert wide == ["0.23.0:tp2"]
    merged = {x.release: x.proofs for x in owed.merged(owed.owed(home, cat), one)}
    core_due = {x.release: x.proofs for x in owed.owed(home, cat)}
    assert merged["0.23.0"] == core_due["0.23.0"] + ("ngram-tool-calls",)  # gdn-ngram is core: once
    assert set(merged) == set(core_due)
    lines = owed_output(monkeypatch, home, "--earlier")
    n = sum(len(p) for p in merged.values())
    assert lines[0].startswith(f"{n} core proofs owed or proofs of an earlier series only on {len(merged)} releases, ")
    assert "1 of an earlier series need several GPUs, not in these machines: 0.23.0:tp2" in lines
    assert any("0.23.0:" in line and "ngram-tool-calls" in line for line in lines if "lab plan" in line)
    assert json.loads("\n".join(owed_output(monkeypatch, home, "--earlier", "--json")))["several_gpus"] == ["0.23.0:tp2"]
    assert not any("ngram-tool-calls" in line for line in owed_output(monkeypatch, home))  # core only


def o(release, torch, n, own_cuda=False):
    return owed.Owed(release, torch, own_cuda, tuple(f"p{i}" for i in range(n)))


def test_a_machine_holds_what_the_estimate_fits_in_28_minutes():
    # the machine's torch: 7 parts a release; 0.26.0 .. 0.20.0 as run on 2026-11-29 (24 proofs)
    today = [o("0.20.0", "2.11.0", 3), o("0.20.1", "2.11.0", 4), o("0.21.0", "2.11.0", 8), o("0.26.0", "2.11.0", 9)]
    assert owed.parts_of(today) == 28 and owed.fits(today)
    assert not owed.fits([*today, o("0.22.0", "2.11.0", 1)])  # a fourth wave
    # a torch stack is counted once a machine, whichever releases share it
    assert owed.parts_of([o("0.28.0", "2.13.0", 8), o("0.29.0", "2.13.0", 8)]) == 2 * 7 + 20
    assert owed.parts_of([o("0.32.0", "2.13.0", 2), o("0.33.0", "2.14.0", 2)]) == 2 * 7 + 2 * 20
    assert owed.parts_of([o("0.17.0", "2.10.0", 4, True), o("0.19.0", "2.10.0", 4, True)]) == 2 * 7 + 81


def test_machines_fill_first_fit_newest_torch_first_and_a_release_too_big_is_cut():
    due = [o("0.20.0", "2.11.0", 4), o("0.21.0", "2.11.0", 8), o("0.22.0", "2.11.0", 7), o("0.26.0", "2.11.0", 9)]
    due += [o("0.27.0", "2.13.0", 40), o("0.17.0", "2.10.0", 4, True), o("0.17.1", "2.10.0", 4, True)]
    due += [o("0.18.0", "2.10.0", 4, True)]
    cut = owed.machines(due)
    assert [[(x.release, len(x.proofs)) for x in m] for m in cut] == [
        # newest torch first; more than a machine holds (five waves): cut, its first piece alone
        [("0.27.0", 32)],
        [("0.27.0", 8), ("0.20.0", 4), ("0.21.0", 8)],  # the rest of it, and what fits beside it
        [("0.22.0", 7), ("0.26.0", 9)],
        [("0.17.0", 4), ("0.17.1", 4), ("0.18.0", 4)],  # one CUDA 12 stack for the three
    ]
    assert owed.plan_line(cut[1]).startswith("python -m lab plan 0.27.0:p32,p33,")
    assert all(owed.fits(m) for m in cut)
    assert all(len({x.release for x in m}) == len(m) for m in cut)  # a release once a machine


def test_small_releases_of_other_torches_share_a_machine():
    # 2026-11-29: 0.32.0 (torch 2.13) and 0.33.0 (2.14) owe two proofs each, 0.28.0 (2.13) eight
    due = [o("0.28.0", "2.13.0", 8), o("0.29.0", "2.13.0", 8), o("0.32.0", "2.13.0", 2), o("0.33.0", "2.14.0", 2)]
    due.append(o("0.30.0", "2.13.0", 8))
    assert [[x.release for x in m] for m in owed.machines(due)] == [
        ["0.33.0", "0.28.0", "0.29.0", "0.32.0"],  # 20 proofs, three waves, two torch stacks
        ["0.30.0"],
    ]


def test_a_proof_a_reproduced_upstream_bug_stops_is_not_in_the_core_set():
    cat = Catalogue(REPO)
    assert "align-allocate-shrink" in cat.releases["0.20.0"].known
    assert "gdn-ngram-prefix" not in core(cat, "0.20.0")
    assert "gdn-ngram-prefix" in core(cat, "0.23.0")  # upstream's fix is in 0.23.0


def test_flashinfer_proofs_run_one_at_a_time_and_fill_a_machine_sooner():
    """vLLM 0.17.x's core proofs all run on FlashInfer, one after another: two such releases do
    not fit one machine that their proof count alone (two waves) would fit."""
    cat = Catalogue(REPO)
    fi = [owed.Owed(r, "2.10.0", True, tuple(core(cat, r))) for r in ("0.17.0", "0.17.1")]
    plain = [owed.Owed(r, "2.10.0", True, tuple(f"p{i}" for i in range(len(core(cat, r))))) for r in ("0.17.0", "0.17.1")]
    assert owed.fits(plain) and not owed.fits(fi)
    cut = owed.machines(fi)
    # neither release fits a machine alone: each is cut into runs of proofs that do, in order
    assert all(owed.fits(m) for m in cut) and len(cut) > 2
    for release, proofs in ((o.release, o.proofs) for o in fi):  # each proof once
        assert sorted(p for m in cut for x in m if x.release == release for p in x.proofs) == sorted(proofs)


def test_flashinfer_proofs_of_a_release_with_its_module_pre_built_run_in_the_waves(tmp_path):
    home = home_with(tmp_path)
    cat = Catalogue(home)
    assert [o.fi_prebuilt for o in owed.owed(home, cat) if o.release == "0.17.0"] == [False]
    assert owed.serial_flashinfer("0.17.0", core(cat, "0.17.0"), home) == len(core(cat, "0.17.0")) > 1
    (home / ".stage-fi-prebuilt-0.17.0").mkdir()
    (home / ".stage-fi-prebuilt-0.17.0" / "fi-aot-sampling-sm90a.tar.xz").write_bytes(b"xz")
    assert owed.serial_flashinfer("0.17.0", core(cat, "0.17.0"), home) > 0  # the prefill still builds
    (home / ".stage-fi-prebuilt-0.17.0" / "fi-aot-gdn_prefill_sm90-sm90a.tar.xz").write_bytes(b"xz")
    assert [o.fi_prebuilt for o in owed.owed(home, cat) if o.release == "0.17.0"] == [True]
    assert owed.serial_flashinfer("0.17.0", core(cat, "0.17.0"), home) == 0
    both = [owed.Owed(r, "2.10.0", True, tuple(core(cat, r)), True) for r in ("0.17.0", "0.17.1")]
    assert owed.fits(both)  # as many proofs of any other kind would: see the test above


def test_a_release_that_fits_a_machine_alone_stays_whole():
    whole = o("0.20.0", "2.11.0", 8)
    assert owed.pieces(whole) == [whole]
    big = o("0.27.0", "2.13.0", 40)
    cut = owed.pieces(big)
    assert len(cut) > 1 and all(owed.fits([x]) for x in cut)
    assert [p for x in cut for p in x.proofs] == list(big.proofs)


def with_status(home: Path, statuses: dict[str, str]) -> None:
    """The home's versions.toml, a copy of the checkout's with these [known.ID] statuses."""
    text = (REPO / "versions.toml").read_text()
    for known, status in statuses.items():
        at = re.search(rf"(?m)^\[known\.{re.escape(known)}\]$", text).start()
        end = text.find("\n[", at + 1)
        end = len(text) if end < 0 else end
        entry, n = re.subn(r'(?m)^status = ".*"$', f'status = "{status}"', text[at:end], count=1)
        assert n == 1, known
        text = text[:at] + entry + text[end:]
    (home / "versions.toml").unlink()
    (home / "versions.toml").write_text(text)
    known = Catalogue(home).known
    assert {k: known[k].status for k in statuses} == statuses


def test_the_reports_no_gpu_has_run_are_listed_with_the_proofs_that_name_them(tmp_path):
    home = home_with(tmp_path)
    with_status(home, {"tq-mtp-repetition": "not yet run", "align-shift-copy-race": "not yet run"})
    got = {r.known: r for r in owed.reports(Catalogue(home))}
    assert got["tq-mtp-repetition"].bug == "#53180"
    assert got["tq-mtp-repetition"].proofs == (("tq-mtp-tp2", 2),)
    assert ("align-shift-ngram", 1) in got["align-shift-copy-race"].proofs
    # a report once run leaves the list
    with_status(home, {"tq-mtp-repetition": "not reproduced"})
    assert "tq-mtp-repetition" not in {r.known for r in owed.reports(Catalogue(home))}


def owed_output(monkeypatch, home: Path, *args: str, tree: int = 0, code: int = 0) -> list[str]:
    """`python -m lab owed ARGS` on `home`, whose working tree (what travels with each part) is
    `tree` bytes."""
    from click.testing import CliRunner

    from lab import __main__ as lab_main

    monkeypatch.setattr(lab_main, "ROOT", home)
    monkeypatch.setattr(lab_main, "tree_size", lambda root: tree)
    done = CliRunner().invoke(lab_main.main, ["owed", *args])
    assert done.exit_code == code, done.output
    return done.output.splitlines()


# The one machine `owed` offered on 2026-12-07 before it counted parts by today's tree: 0.27.0's
# four proofs, 0.28.0's one and 0.29.0's two, three of them on FlashInfer (taking turns)
FI = "gdn-ngram-flashinfer"
DEC_07 = [
    owed.Owed("0.27.0", "2.13.0", False, ("mtp", "tq-mtp", "tq-continuation", FI)),
    owed.Owed("0.28.0", "2.13.0", False, (FI,)),
    owed.Owed("0.29.0", "2.13.0", False, ("tq-continuation", FI)),
]


def test_parts_are_counted_by_the_bytes_a_part_holds_today():
    mib = 1 << 20
    # parts of 51 MiB, the figures' own: 41 parts, and the estimate fits 28 minutes
    assert owed.parts_of(DEC_07) == 3 * 7 + 20 and owed.fits(DEC_07)
    # parts of 34 MiB, as `plan` cut them that day: more parts, and the machine is too full (`plan`
    # said 29 min). The counts are a little above the parts `plan` cut: 58, 49 and 37
    assert owed.parts_of(DEC_07, 34 * mib) == 62 and not owed.fits(DEC_07, 34 * mib)
    assert owed.parts_of([DEC_07[0], DEC_07[2]], 34 * mib) == 51
    assert owed.parts_of([DEC_07[1]], 34 * mib) == 41
    cut = owed.machines(DEC_07, 34 * mib)
    assert len(cut) == 2 and all(owed.fits(m, 34 * mib) for m in cut)
    assert sorted(p for m in cut for x in m for p in x.proofs) == sorted(p for x in DEC_07 for p in x.proofs)


def test_owed_cuts_machines_by_the_parts_todays_tree_leaves(tmp_path, monkeypatch):
    import json

    from lab import __main__ as lab_main

    home = home_with(tmp_path)
    due = owed.owed(home)
    for tree in (0, 28 << 20):
        room = lab_main.LIMIT - tree - lab_main.MARGIN
        got = json.loads("\n".join(owed_output(monkeypatch, home, "--json", tree=tree)))["machines"]
        assert got == [owed.plan_line(m) for m in owed.machines(due, room)]
    # with no evidence every release owes its core set: smaller parts, more machines
    assert len(owed.machines(due, 34 << 20)) > len(owed.machines(due, 62 << 20))


def test_owed_marks_the_machines_todays_parts_make_too_long(tmp_path, monkeypatch):
    from lab import __main__ as lab_main

    home = home_with(tmp_path)
    note = "   # more than one 30-minute machine by the estimate"
    plans = [line for line in owed_output(monkeypatch, home) if line.startswith("  python -m lab plan ")]
    assert plans and not any(line.endswith(note) for line in plans)
    # a tree that leaves 1 MiB a part: hundreds of puts, and no release fits a machine
    crowded = lab_main.LIMIT - lab_main.MARGIN - (1 << 20)
    plans = [line for line in owed_output(monkeypatch, home, tree=crowded) if line.startswith("  python -m lab plan ")]
    assert plans and all(line.endswith(note) for line in plans)


def test_owed_refuses_in_one_line_a_tree_that_leaves_no_room_for_parts(tmp_path, monkeypatch):
    from lab.parts import LIMIT

    home = home_with(tmp_path)
    lines = owed_output(monkeypatch, home, tree=LIMIT, code=1)
    assert len(lines) == 1 and lines[0].startswith("Error: the working tree leaves ") and "for parts" in lines[0]
    # with nothing owed there are no parts to cut: the reports are listed all the same
    monkeypatch.setattr(owed, "owed", lambda root, cat=None: [])
    lines = owed_output(monkeypatch, home, tree=LIMIT)
    assert lines[0] == "every release has a proof of today's series for each of its core proofs"


def test_owed_prints_the_unrun_reports_after_the_plan_lines(tmp_path, monkeypatch):
    import json

    home = home_with(tmp_path)
    with_status(home, {"tq-mtp-repetition": "not yet run", "spec-tp2-illegal-address": "not yet run"})
    cat = Catalogue(home)
    lines = owed_output(monkeypatch, home)
    n = len(owed.reports(cat))
    head = lines.index(f'{n} upstream reports no GPU has run yet ([known.*] status "not yet run"):')
    assert head > 1 and all(line.startswith("  python -m lab plan ") for line in lines[1:head])
    tq = cat.known["tq-mtp-repetition"]
    assert f"  {tq.number} [known.tq-mtp-repetition], present {tq.present}: tq-mtp-tp2 (2 GPUs)" in lines[head + 1 :]
    got = json.loads("\n".join(owed_output(monkeypatch, home, "--json")))["reports"]["spec-tp2-illegal-address"]
    tp2 = cat.known["spec-tp2-illegal-address"]
    assert got == {"bug": tp2.number, "present": tp2.present, "proofs": {"qwen3_5-mtp-tp2": 2}}


def test_owed_with_no_core_proof_owed_still_lists_the_reports(tmp_path, monkeypatch):
    home = home_with(tmp_path)
    unrun = {k for k, v in Catalogue(home).known.items() if v.status == "not yet run"}
    with_status(home, {k: "not reproduced" for k in unrun} | {"tq-mtp-repetition": "not yet run"})
    monkeypatch.setattr(owed, "owed", lambda root, cat=None: [])
    lines = owed_output(monkeypatch, home)
    assert lines[:2] == [
        "every release has a proof of today's series for each of its core proofs",
        '1 upstream report no GPU has run yet ([known.*] status "not yet run"):',
    ]
    assert lines[2].startswith("  #53180 [known.tq-mtp-repetition]") and len(lines) == 3
    with_status(home, {k: "not reproduced" for k in unrun | {"tq-mtp-repetition"}})
    assert owed_output(monkeypatch, home) == ["every release has a proof of today's series for each of its core proofs"]
