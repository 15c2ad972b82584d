"""The core proof set of a release and the apply.py options that build each control site."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.proofs import core, gpus, multi_gpu, site_skips, takes_fi_site, uses_flashinfer
from vllm_backports.catalogue import Catalogue

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def catalogue():
    return Catalogue(ROOT)


def test_every_backport_of_a_series_has_a_core_proof_where_one_can_run(catalogue):
    got = core(catalogue, "0.23.0")
    assert got[:4] == ["gdn-ngram", "gdn-ngram-kp1", "gdn-ngram-prefix", "mtp"]
    assert {"tq-mtp", "kp1-b1-fix", "tq-continuation", "qwen3_5-tq-mtp"} <= set(got)
    assert "gdn-ngram-b1" in got  # gdn-draft-free-plain's
    assert "gdn-ngram-b1" not in core(catalogue, "0.33.0")  # no series of gdn-spec-state's routing


@pytest.mark.parametrize(
    "release, runs",
    [("0.20.0", False), ("0.25.0", False), ("0.26.0", True), ("0.27.0", True), ("0.31.0", True), ("0.33.0", False)],
)
def test_flashinfer_is_core_where_the_gdn_fix_ships_and_its_pin_needs_no_nvcc_build(catalogue, release, runs):
    """Before 0.26.0 FlashInfer's GDN prefill is an nvcc build (lab.flashinfer); 0.33.0 has the fix upstream."""
    assert ("gdn-ngram-flashinfer" in core(catalogue, release)) is runs


@pytest.mark.parametrize("release", ["0.17.0", "0.17.1"])
def test_a_release_without_the_prefill_choice_runs_each_proof_as_its_flashinfer_twin(catalogue, release):
    """On the lab's Hopper GPUs vLLM 0.17.x runs FlashInfer's prefill whatever verify asks; the
    shared-prefix proof (prompts tuned to the Qwen3-Next class) has no twin and no run there."""
    from vllm_backports.verify.proofs import PROOFS, option

    got = core(catalogue, release)
    assert got == [
        "gdn-ngram-flashinfer",
        "gdn-ngram-kp1-flashinfer",
        "mtp-flashinfer",
        "kp1-b1-fix-flashinfer",
        "gdn-ngram-b1-flashinfer",
    ]
    assert [n.removesuffix("-flashinfer") for n in got] == [n for n in core(catalogue, "0.18.0") if n != "gdn-ngram-prefix"]
    for name in got:
        twin = PROOFS[name.removesuffix("-flashinfer")]
        opts = PROOFS[name].options
        assert uses_flashinfer(name) and option(opts, "--model-class") == "qwen3_5"
        assert PROOFS[name].control == twin.control
        assert [o for o in opts if o not in ("--model-class", "qwen3_5", "--prefill-backend", "flashinfer")] == list(
            twin.options
        )
    assert not any(uses_flashinfer(n) for n in core(catalogue, "0.18.0"))


def test_a_proof_uses_flashinfer_by_its_prefill_backend_under_any_site():
    assert uses_flashinfer("gdn-ngram-flashinfer") and uses_flashinfer("alt-x@gdn-ngram-flashinfer")
    assert not uses_flashinfer("gdn-ngram") and not uses_flashinfer("server-ngram")


def test_kimi_proofs_take_the_flashinfer_site_where_their_model_imports_the_cute_dsl():
    assert takes_fi_site("0.31.0", "kda-ngram") and takes_fi_site("0.31.0", "alt-kda-spec-consistent@kda-ngram")
    assert not takes_fi_site("0.29.0", "kda-ngram") and not takes_fi_site("0.31.0", "gdn-ngram")
    assert takes_fi_site("0.29.0", "gdn-ngram-flashinfer") and not takes_fi_site("0.31.0", "server-ngram")


def test_no_turboquant_proof_where_turboquant_cannot_start_on_hybrids(catalogue):
    got = core(catalogue, "0.20.0")
    assert "gdn-ngram" in got and not any(n.startswith("tq-") or "tq-" in n for n in got)


def test_a_release_with_the_gdn_fix_upstream_runs_no_gdn_proof(catalogue):
    got = core(catalogue, "0.33.0")
    assert got and not any(n.startswith("gdn-") or n == "mtp" for n in got)


def test_each_site_leaves_out_its_backport_and_what_is_written_on_it():
    carried = ("turboquant-spec-decode", "gdn-spec-state", "turboquant-prefill-fastpath", "turboquant-decode-workspace")
    assert site_skips("raw", carried) is None and site_skips("fix", carried) == []
    assert site_skips("ctl", carried) == [
        "--skip",
        "turboquant-spec-decode",
        "--skip",
        "turboquant-prefill-fastpath",
        "--skip",
        "turboquant-decode-workspace",
    ]
    assert site_skips("less-turboquant-prefill-fastpath", carried[:3]) == ["--skip", "turboquant-prefill-fastpath"]
    with pytest.raises(ValueError, match="does not carry spec-prefill-decode-graph"):
        site_skips("less-spec-prefill-decode-graph", carried)
    with pytest.raises(ValueError, match="unknown site"):
        site_skips("p65", carried)


TQ = [v for v in Catalogue(ROOT).versions if "turboquant-spec-decode" in Catalogue(ROOT).releases[v].backports]


@pytest.mark.network
@pytest.mark.parametrize("release", TQ)
def test_every_control_site_is_a_selection_apply_py_accepts(release):
    """WRITTEN_ON is kept by hand; apply.py derives the stacking from the series. The skips of each
    control site a core proof runs on must be accepted there, on the release's real files."""
    from cli_runner import run
    from lab.proofs import control_site

    cat = Catalogue(ROOT)
    carried = cat.releases[release].backports
    sites = sorted({control_site(n) for n in core(cat, release)} - {"raw"})
    assert sites  # a TurboQuant release has at least its ctl site
    for site in sites:
        skips = site_skips(site, carried)
        done = run("check", "--vllm", release, "--fetch", *skips)
        assert done.code == 0, (site, skips, done.err)


def test_a_proof_needs_as_many_gpus_as_its_tensor_parallel_size():
    from vllm_backports.verify.proofs import PROOFS

    assert {n for n in PROOFS if gpus(n) > 1} == {"tp2", "tq-mtp-tp2", "qwen3_5-mtp-tp2"}
    assert gpus("tq-mtp-tp2") == gpus("qwen3_5-mtp-tp2") == 2
    assert gpus("ctl@tq-mtp-tp2") == 2  # a SITE@PROOF item runs its proof's verify
    assert gpus("tq-mtp") == gpus("gdn-ngram") == 1
    assert gpus("server-ngram") == 1  # served proofs name no --tp


def test_multi_gpu_names_each_job_item_that_needs_more_than_one_gpu():
    from lab.machine import parse_jobs

    jobs = parse_jobs(["0.27.1:tq-mtp,tq-mtp-tp2", "0.28.0:ctl@qwen3_5-mtp-tp2,bench=qwen3_5-9b/mtp", "0.26.0:gdn-ngram"])
    assert multi_gpu(jobs) == {"0.27.1:tq-mtp-tp2": 2, "0.28.0:ctl@qwen3_5-mtp-tp2": 2}
    assert multi_gpu(parse_jobs(["0.26.0:gdn-ngram,tq-mtp"])) == {}
