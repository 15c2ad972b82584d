"""What each A/B run compares, and the scripted ngram drafts."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab import sites
from lab.machine import ALT
from lab.sites import candidate
from vllm_backports.bench.experiments import EXPERIMENTS, SCRIPTS, K, script_text, scripted_fraction
from vllm_backports.verify.scenarios import PRESETS


@pytest.mark.parametrize("level", [n for n in SCRIPTS if n.isdigit()])
def test_each_level_scripts_that_fraction_of_right_drafts(level):
    schedule = SCRIPTS[level]
    assert scripted_fraction(schedule) == pytest.approx(int(level) / 100)
    assert all(offered == K and 0 <= right <= offered for offered, right in schedule)


def test_sparse_drafts_on_one_step_in_ten_and_leaves_the_rest_draft_free():
    schedule = SCRIPTS["sparse"]
    assert [o for o, _ in schedule].count(0) == 9 and len(schedule) == 10
    assert scripted_fraction(schedule) == 1.0
    assert script_text("sparse") == "drafts 1 step in 10, 100% scripted"
    assert script_text("90") == "90% scripted"


def test_arms_name_presets_that_exist_and_scripted_acceptance_is_ngram_only():
    for e in EXPERIMENTS.values():
        for arm in (e.a, e.b):
            assert arm.speculative is None or arm.speculative in PRESETS
            assert arm.script is None or (arm.speculative == "ngram" and arm.script in SCRIPTS)
            assert PRESETS.get(arm.speculative or "ngram")["num_speculative_tokens"] == K


def test_targets_are_the_issues():
    assert (EXPERIMENTS["nospec"].at_least, EXPERIMENTS["nospec"].half_width) == (0.99, 0.005)
    assert EXPERIMENTS["nospec"].sites() == ("raw", "fix")
    assert EXPERIMENTS["tq-mtp"].at_least == 2.0 and EXPERIMENTS["tq-mtp"].sites() == ("p65", "fix")
    assert EXPERIMENTS["ngram-90"].sites() == ("fix",)


def test_every_site_an_experiment_uses_is_one_the_runbook_builds_and_hands_to_bench_ab():
    labels = set(sites.paths("0.0.0", Path("/home")))
    assert {f"less-{b}" for b in sites.LESS} <= labels
    handed = set(sites.BENCH_SITES)
    assert handed <= labels
    for e in EXPERIMENTS.values():
        # alt-NAME: a candidate's site, which lab.machine builds from benchmarks/alternatives/NAME
        alt = {s for s in e.sites() if s.startswith(ALT)}
        assert set(e.sites()) - alt <= handed, e.name
        assert all(candidate(s.removeprefix(ALT), "0.27.0").is_file() for s in alt), e.name


def test_describe_says_what_an_arm_runs():
    assert EXPERIMENTS["ngram-50"].b.describe() == "fix, ngram (50% scripted)"
    assert EXPERIMENTS["tq-mtp"].a.describe() == "p65, mtp, turboquant_k8v4"


def test_mtp_100_runs_both_arms_with_every_logit_zero_and_only_b_speculates():
    e = EXPERIMENTS["mtp-100"]
    assert e.a.constant_logits and e.b.constant_logits and e.sites() == ("fix",)
    assert (e.a.speculative, e.b.speculative) == (None, "mtp")
    assert e.b.describe() == "fix, mtp, logits all 0"
    assert not any(arm.constant_logits for name, x in EXPERIMENTS.items() if name != "mtp-100" for arm in (x.a, x.b))


@pytest.mark.parametrize(
    ("name", "preset"), [("fixcost-ngram-90", "ngram"), ("fixcost-ngram-sparse", "ngram"), ("fixcost-mtp", "mtp")]
)
def test_fixcost_runs_the_same_speculation_on_the_pristine_and_the_fixed_site(name, preset):
    e = EXPERIMENTS[name]
    assert e.sites() == ("raw", "fix")
    assert (e.a.speculative, e.a.script) == (e.b.speculative, e.b.script)
    assert e.b.speculative == preset and e.at_least is None


def test_what_gdn_draft_free_plain_saves_is_the_series_without_it_against_the_series():
    # the same sparse ngram on both arms, where it changes which GDN path a step takes
    e = EXPERIMENTS["dfp-ngram-sparse"]
    assert e.sites() == ("less-gdn-draft-free-plain", "fix")
    assert (e.a.speculative, e.a.script) == (e.b.speculative, e.b.script) == ("ngram", "sparse")
    assert e.at_least is None


def test_the_lean_candidate_is_measured_against_the_pristine_release_as_the_series_is():
    # leancost-ngram-sparse is fixcost-ngram-sparse with the candidate's site in the series' place
    lean, fix = EXPERIMENTS["leancost-ngram-sparse"], EXPERIMENTS["fixcost-ngram-sparse"]
    assert lean.sites() == ("raw", "alt-gdn-draft-free-lean")
    assert (lean.a, lean.at_least) == (fix.a, fix.at_least)
    assert (lean.b.speculative, lean.b.script) == (fix.b.speculative, fix.b.script)
