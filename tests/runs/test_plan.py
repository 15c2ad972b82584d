"""lab/runbook/plan.py: the staging calls, each under what one call may carry."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("plan", REPO / "lab/runbook/plan.py")
plan = importlib.util.module_from_spec(spec)
sys.modules["plan"] = plan  # its dataclasses look their module up
spec.loader.exec_module(plan)
MIB = 2**20


def stage(root: Path, release: str, parts: list[int], fi: list[int] = ()) -> None:
    """.stage-REL as `python -m lab bundle` writes it (pN/part.N and install.sh), and FlashInfer's parts."""
    s = root / f".stage-{release}"
    for i, mib in enumerate(parts):
        (s / f"p{i}").mkdir(parents=True)
        (s / f"p{i}" / f"part.{i}").write_bytes(b"x" * mib * MIB)
    for i, mib in enumerate(fi):
        (root / f".stage-fi-{release}" / f"p{i}").mkdir(parents=True)
        (root / f".stage-fi-{release}" / f"p{i}" / f"fi.tar.{i}").write_bytes(b"x" * mib * MIB)
    (s / "install.sh").write_text("#!/bin/sh\n")


def test_every_piece_once_each_call_within_room_and_the_chain_last_with_install(tmp_path):
    stage(tmp_path, "0.25.0", [58, 58, 8], fi=[57, 1])
    calls = plan.plan(tmp_path, [("0.25.0", ["gdn-ngram-b1", "gdn-ngram-flashinfer"])], 61 * MIB)
    carried = [c for call in calls for c in call["carry"]]
    assert sorted(carried) == sorted(
        [
            ".stage-0.25.0/p0",
            ".stage-0.25.0/p1",
            ".stage-0.25.0/p2",
            ".stage-fi-0.25.0/p0",
            ".stage-fi-0.25.0/p1",
            ".stage-0.25.0/install.sh",
        ]
    )
    assert all(call["mib"] <= 61 for call in calls)
    assert len(calls) == 4  # 58 + 1, 58, 57, 8 (+ install.sh): small pieces share a call
    assert (
        ".stage-0.25.0/install.sh" in calls[-1]["carry"]
        and "chain gdn-ngram-b1 gdn-ngram-flashinfer" in calls[-1]["command"]
    )
    assert not any("chain" in c["command"] for c in calls[:-1])
    assert all(c["command"].startswith("HOME=/root/h1 REL=0.25.0 python3 -m lab.steps put ") for c in calls)


def test_flashinfer_pieces_are_carried_only_for_a_flashinfer_proof(tmp_path):
    stage(tmp_path, "0.25.0", [58], fi=[57])
    calls = plan.plan(tmp_path, [("0.25.0", ["tq-continuation"])], 61 * MIB)
    assert not any("fi" in path for c in calls for path in c["carry"])
    with pytest.raises(SystemExit, match="plan: unknown proof tq-continuatio "):
        plan.plan(tmp_path, [("0.25.0", ["tq-continuatio"])], 61 * MIB)


def test_upstream_gpu_carries_the_sdist_and_names_it_to_the_chain(tmp_path):
    stage(tmp_path, "0.26.0", [58])
    with pytest.raises(SystemExit, match=r"plan: .stage-sdist-0.26.0 missing: run lab/runbook/stage-sdist.sh 0.26.0"):
        plan.plan(tmp_path, [("0.26.0", ["gdn-ngram", "upstream-gpu"])], 61 * MIB)
    sdist = tmp_path / ".stage-sdist-0.26.0"
    sdist.mkdir()
    (sdist / "vllm-0.26.0.tar.gz").write_bytes(b"x" * 37 * MIB)
    (sdist / "sdist.sha256").write_text("a\n")
    calls = plan.plan(tmp_path, [("0.26.0", ["gdn-ngram", "upstream-gpu"])], 61 * MIB)
    put = [c for c in calls if ".stage-sdist-0.26.0" in c["carry"]]
    assert len(put) == 1 and " put " in put[0]["command"] and "sdist" in put[0]["command"].split(" put ")[1].split()
    assert "chain gdn-ngram upstream-gpu" in calls[-1]["command"]
    # without it, no sdist travels; and it asks for one GPU
    calls = plan.plan(tmp_path, [("0.26.0", ["gdn-ngram"])], 61 * MIB)
    assert not any("sdist" in path for c in calls for path in c["carry"]) and plan.gpus_needed("upstream-gpu") == 1


def test_each_release_carries_its_bundle_parts_only_fa2_coming_with_its_wheel(tmp_path, capsys):
    # FA2 is inside the release's wheel (python -m lab bundle carries it verbatim): no FA2 piece
    # travels and none is asked for, even where an older .stage-REL left an fa2 folder
    stage(tmp_path, "0.21.0", [58])
    stage(tmp_path, "0.22.0", [58, 3])
    (tmp_path / ".stage-0.22.0" / "fa2").mkdir()
    calls = plan.plan(tmp_path, [("0.21.0", ["tq-continuation"]), ("0.22.0", ["tq-continuation"])], 60 * MIB)
    assert sorted(path for c in calls for path in c["carry"]) == [
        ".stage-0.21.0/install.sh",
        ".stage-0.21.0/p0",
        ".stage-0.22.0/install.sh",
        ".stage-0.22.0/p0",
        ".stage-0.22.0/p1",
    ]
    assert not any("fa2" in c["command"] for c in calls) and "FA2" not in capsys.readouterr().err


def test_a_piece_over_a_call_and_a_release_not_staged_are_refused(tmp_path):
    stage(tmp_path, "0.25.0", [61])
    with pytest.raises(
        SystemExit,
        match=r"plan: .stage-0.25.0/p0 is 61.0 MiB, over a call's 60.0 MiB beside a 3.0 "
        r"MiB tree: stage it again in smaller parts \(python -m lab bundle REL --part-mb 59; "
        r"python -m lab flashinfer REL --part-mb 59\)",
    ):
        plan.plan(tmp_path, [("0.25.0", ["gdn-ngram"])], 60 * MIB)
    with pytest.raises(SystemExit, match=r"plan: .stage-0.99.0/install.sh missing: run python -m lab bundle 0.99.0"):
        plan.plan(tmp_path, [("0.99.0", ["gdn-ngram"])], 60 * MIB)


def test_a_proof_at_tensor_parallel_two_asks_for_the_two_gpu_kind(tmp_path, monkeypatch, capsys):
    assert plan.gpus_needed("tp2") == 2 and plan.gpus_needed("gdn-ngram") == 1
    stage(tmp_path, "0.20.0", [8])
    monkeypatch.setattr(plan, "ROOT", tmp_path)
    monkeypatch.setattr(plan, "tree_size", lambda root: 0)
    assert plan.main(["0.20.0:gdn-ngram"]) == 0 and "GPUs" not in capsys.readouterr().err
    assert plan.main(["0.20.0:gdn-ngram,tp2"]) == 0
    assert "the runs take 2 GPUs: make every call on a kind with at least 2" in capsys.readouterr().err


def test_bench_queues_ab_runs_after_a_chain_without_proofs(tmp_path):
    stage(tmp_path, "0.26.0", [58])
    calls = plan.plan(tmp_path, [("0.26.0", ["bench=qwen3_5-9b/ngram-90+mtp"])], 61 * MIB)
    last = calls[-1]["command"]
    # setup only (`chain none`), then the queue, with the defaults: 20 pairs, resident, Triton prefill
    assert "chain none && HOME=/root/h1 REL=0.26.0 python3 -m lab.steps bench-ab queue " in last
    assert last.endswith("queue qwen3_5-9b 20 resident ngram-90 mtp -- --prefill-backend triton")
    assert plan.gpus_needed("bench=qwen3_5-9b/mtp") == 1
    # beside proofs the chain runs them, and the queue waits for them on the machine
    calls = plan.plan(tmp_path, [("0.26.0", ["gdn-ngram", "bench=qwen3_6-27b/nospec/40/sleep"])], 61 * MIB)
    assert "chain gdn-ngram && " in calls[-1]["command"]
    assert calls[-1]["command"].endswith("queue qwen3_6-27b 40 sleep nospec -- --prefill-backend triton")
    # several releases: every queue goes in the last call, after the last chain has started
    stage(tmp_path, "0.28.0", [58])
    calls = plan.plan(
        tmp_path, [("0.26.0", ["bench=qwen3_5-9b/mtp"]), ("0.28.0", ["gdn-ngram", "bench=qwen3_5-9b/nospec"])], 61 * MIB
    )
    assert not any("bench-ab" in c["command"] for c in calls[:-1])
    last = calls[-1]["command"]
    assert last.index("chain gdn-ngram") < last.index("REL=0.26.0 python3 -m lab.steps bench-ab queue")
    assert last.index("REL=0.26.0 python3 -m lab.steps bench-ab queue") < last.index(
        "REL=0.28.0 python3 -m lab.steps bench-ab queue"
    )
    assert "HOME=/root/h1 REL=0.26.0 python3 -m lab.steps bench-ab queue qwen3_5-9b 20 resident mtp" in last
    # one queue a release (lab.bench_queue refuses a second while the first runs)
    with pytest.raises(SystemExit, match="0.26.0: one bench= a release; join its experiments with +"):
        plan.plan(tmp_path, [("0.26.0", ["bench=qwen3_5-9b/mtp", "bench=qwen3_6-27b/nospec"])], 61 * MIB)


def test_with_two_gpus_the_queues_go_to_each_in_turn(tmp_path, monkeypatch, capsys):
    for rel in ("0.26.0", "0.27.0", "0.28.0"):
        stage(tmp_path, rel, [58])
    runs = [(rel, ["bench=qwen3_5-9b/mtp"]) for rel in ("0.26.0", "0.27.0", "0.28.0")]
    last = plan.plan(tmp_path, runs, 61 * MIB, gpus=2)[-1]["command"]
    assert "GPU=0 HOME=/root/h1 REL=0.26.0 python3 -m lab.steps bench-ab queue" in last
    assert "GPU=1 HOME=/root/h2 REL=0.27.0 python3 -m lab.steps bench-ab queue" in last
    assert "GPU=0 HOME=/root/h3 REL=0.28.0 python3 -m lab.steps bench-ab queue" in last
    # beside each other, the pairs alternate which arm goes first
    assert last.count("-- --prefill-backend triton --order abba") == 3
    # one GPU: no GPU= at all, the queues take turns machine-wide, in bench_ab's own order
    alone = plan.plan(tmp_path, runs, 61 * MIB)[-1]["command"]
    assert "GPU=" not in alone and "--order" not in alone
    monkeypatch.setattr(plan, "ROOT", tmp_path)
    monkeypatch.setattr(plan, "tree_size", lambda root: 0)
    assert plan.main(["--gpus", "2", "0.26.0:bench=qwen3_5-9b/mtp"]) == 0
    assert "make every call on a kind with at least 2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        plan.main(["--gpus", "0", "0.26.0:bench=qwen3_5-9b/mtp"])
    assert "--gpus 0: at least 1" in capsys.readouterr().err


def test_early_queues_go_out_with_their_own_chain_on_their_gpus(tmp_path):
    for rel in ("0.26.0", "0.27.0"):
        stage(tmp_path, rel, [58])
    runs = [("0.26.0", ["bench=qwen3_5-9b/tq-mtp=8+nospec/24"]), ("0.27.0", ["bench=qwen3_5-9b/mtp"])]
    calls = plan.plan(tmp_path, runs, 61 * MIB, gpus=2, early=True)
    chains = [c["command"] for c in calls if "chain none" in c["command"]]
    assert len(chains) == 2 and chains[-1] == calls[-1]["command"]
    assert chains[0].endswith(
        "GPU=0 HOME=/root/h1 REL=0.26.0 python3 -m lab.steps bench-ab queue qwen3_5-9b "
        "24 resident tq-mtp=8 nospec -- --prefill-backend triton --order abba"
    )
    assert "REL=0.26.0 python3 -m lab.steps bench-ab" not in chains[1]
    assert "GPU=1 HOME=/root/h2 REL=0.27.0 python3 -m lab.steps bench-ab queue" in chains[1]
    assert sum(c["command"].count("bench-ab queue") for c in calls) == 2


@pytest.mark.parametrize(
    "token, message",
    [
        ("bench=qwen3_5-9b", "write bench=SHAPE/EXPERIMENT"),
        ("bench=qwen3_5-9b/mtp/20/resident/x", "write bench=SHAPE/EXPERIMENT"),
        ("bench=qwen3-9b/mtp", "unknown shape qwen3-9b"),
        ("bench=qwen3_5-9b/ngram-9", "unknown experiment ngram-9"),
        ("bench=qwen3_5-9b/mtp/0", "pairs must be a positive number, not 0"),
        ("bench=qwen3_5-9b/mtp/20/resdent", "unknown layout resdent"),
        ("bench=qwen3_5-9b/nospec+mtp=0", "mtp=0: write EXPERIMENT=PAIRS"),
        ("bench=qwen3_5-9b/mtp=x", "mtp=x: write EXPERIMENT=PAIRS"),
        ("bench=qwen3_5-9b/mtpp=8", "unknown experiment mtpp"),
    ],
)
def test_a_bad_bench_token_is_refused(tmp_path, token, message):
    stage(tmp_path, "0.26.0", [58])
    with pytest.raises(SystemExit, match=message):
        plan.plan(tmp_path, [("0.26.0", [token])], 61 * MIB)


def test_bench_profile_ends_every_queue_with_the_profile_option(tmp_path, monkeypatch, capsys):
    stage(tmp_path, "0.26.0", [58])
    runs = [("0.26.0", ["bench=qwen3_5-9b/fixcost-ngram-90+mtp-100"])]
    last = plan.plan(tmp_path, runs, 61 * MIB, profile=16)[-1]["command"]
    assert last.endswith("fixcost-ngram-90 mtp-100 -- --prefill-backend triton --profile 16")
    assert "--profile" not in plan.plan(tmp_path, runs, 61 * MIB)[-1]["command"]
    monkeypatch.setattr(plan, "ROOT", tmp_path)
    monkeypatch.setattr(plan, "tree_size", lambda root: 0)
    with pytest.raises(SystemExit):
        plan.main(["--bench-profile", "0", "0.26.0:bench=qwen3_5-9b/mtp"])
    assert "--bench-profile 0: at least 1 request" in capsys.readouterr().err


def test_bench_levels_go_to_every_queue_and_a_bad_list_is_refused(tmp_path, monkeypatch, capsys):
    stage(tmp_path, "0.26.0", [58])
    runs = [("0.26.0", ["bench=qwen3_5-9b/fixcost-ngram-sparse"])]
    last = plan.plan(tmp_path, runs, 61 * MIB, profile=1, levels="1")[-1]["command"]
    assert last.endswith("fixcost-ngram-sparse -- --prefill-backend triton --profile 1 --levels 1")
    monkeypatch.setattr(plan, "ROOT", tmp_path)
    monkeypatch.setattr(plan, "tree_size", lambda root: 0)
    for argv, said in (
        (["--bench-levels", "1,x"], "--bench-levels 1,x: positive numbers of requests, comma-separated"),
        (["--bench-levels", "0"], "--bench-levels 0: positive numbers"),
        (["--bench-levels", "1", "--bench-profile", "16"], "--bench-profile 16: not one of --bench-levels 1"),
    ):
        with pytest.raises(SystemExit):
            plan.main([*argv, "0.26.0:bench=qwen3_5-9b/mtp"])
        assert said in capsys.readouterr().err


def test_a_release_named_twice_is_refused(tmp_path):
    stage(tmp_path, "0.26.0", [58])
    with pytest.raises(SystemExit, match="0.26.0 named twice"):
        plan.plan(tmp_path, [("0.26.0", ["bench=qwen3_5-9b/mtp"]), ("0.26.0", ["gdn-ngram"])], 61 * MIB, gpus=2)


def test_an_experiment_on_a_site_the_release_has_no_port_for_is_refused(tmp_path):
    # P65 is kept for a few releases only (benchmarks/alternatives/turboquant-cudagraph); refused
    # before the release's staging is looked at (0.28.0 has none here), so nothing is staged for it
    refused = r"tq-mtp needs the p65 site, which .*turboquant-cudagraph has for .*0\.27\.0, not 0\.28\.0"
    with pytest.raises(SystemExit, match=refused):
        plan.plan(tmp_path, [("0.28.0", ["bench=qwen3_5-9b/nospec+tq-mtp"])], 61 * MIB)
    stage(tmp_path, "0.27.0", [58])
    last = plan.plan(tmp_path, [("0.27.0", ["bench=qwen3_5-9b/tq-mtp"])], 61 * MIB)[-1]["command"]
    assert last.endswith("queue qwen3_5-9b 20 resident tq-mtp -- --prefill-backend triton")


def test_a_proof_of_an_alternatives_site_goes_to_the_chain_as_site_at_proof(tmp_path):
    # lab.verifies.proofs runs SITE@PROOF as PROOF's verify of SITE's install against PROOF's control
    stage(tmp_path, "0.26.0", [58])
    last = plan.plan(tmp_path, [("0.26.0", ["p65@tq-mtp", "gdn-ngram"])], 61 * MIB)[-1]["command"]
    assert last.endswith("lab.steps chain p65@tq-mtp gdn-ngram")
    assert plan.gpus_needed("p65@tq-mtp") == 1


@pytest.mark.parametrize(
    "token, message",
    [
        ("xx@gdn-ngram", r"xx is no alternative's site \(p65\)"),
        ("p65@nope", "unknown proof nope"),
    ],
)
def test_a_proof_of_an_unknown_site_or_proof_is_refused(tmp_path, token, message):
    stage(tmp_path, "0.26.0", [58])
    with pytest.raises(SystemExit, match=message):
        plan.plan(tmp_path, [("0.26.0", [token])], 61 * MIB)


def test_a_proof_of_a_site_the_release_has_no_port_for_is_refused_before_staging(tmp_path):
    # nothing is staged for 0.28.0 here: the refusal comes first
    with pytest.raises(SystemExit, match="turboquant-cudagraph has no port for 0.28.0"):
        plan.plan(tmp_path, [("0.28.0", ["p65@tq-mtp"])], 61 * MIB)


def test_a_run_of_the_series_less_a_backport_it_does_not_carry_is_refused_before_staging(tmp_path):
    with pytest.raises(SystemExit, match="the series of 0.32.0 does not carry gdn-draft-free-plain"):
        plan.plan(tmp_path, [("0.32.0", ["bench=qwen3_5-9b/dfp-ngram-sparse"])], 61 * MIB)
    stage(tmp_path, "0.26.0", [58])
    last = plan.plan(tmp_path, [("0.26.0", ["bench=qwen3_5-9b/dfp-ngram-sparse"])], 61 * MIB)[-1]["command"]
    assert last.endswith("queue qwen3_5-9b 20 resident dfp-ngram-sparse -- --prefill-backend triton")
