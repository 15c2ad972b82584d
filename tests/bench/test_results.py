"""Progress lines to a run's result: the figures, the pairing, acceptance and the targets."""

from __future__ import annotations

import pytest

from vllm_backports.bench.results import acceptance, cpus_during, during, figures, paced, pairs, summarise, target_met


def level(decode_s, ttft_s=0.1, requests=16, max_tokens=101, drafts=None, accepted=None):
    return {
        "requests": requests,
        "max_tokens": max_tokens,
        "ttft_s": ttft_s,
        "decode_s": decode_s,
        "drafts": drafts,
        "accepted": accepted,
    }


def line(arm, i, inst=0, decode_s=1.1, **kw):
    return {"arm": arm, "round": i, "instance": inst, "levels": {"16": level(decode_s, **kw)}, "sm_clock_mhz": 1980}


def test_figures_split_a_generate_into_first_token_and_the_rest():
    f = figures(level(decode_s=1.1, ttft_s=0.1, requests=16, max_tokens=101))
    assert f["tpot_ms"] == pytest.approx(10.0)  # 1.0 s over the 100 tokens after the first
    assert f["decode_tok_s"] == pytest.approx(1600.0)
    assert f["ttft_ms"] == pytest.approx(100.0)
    with pytest.raises(ValueError):
        figures(level(decode_s=0.1, ttft_s=0.2))


def test_pairs_match_round_and_instance_and_drop_a_half_pair():
    lines = [line("a", 0), line("b", 0), line("b", 1), line("a", 1), line("a", 2), line("a", 3, inst=1)]
    got = [(a["round"], b["round"], inst) for a, b, inst in pairs(lines)]
    assert got == [(0, 0, 0), (1, 1, 0)]


def test_acceptance_is_accepted_over_drafted_over_all_rounds():
    rows = [line("b", 0, drafts=300, accepted=270), line("b", 1, drafts=100, accepted=50)]
    assert acceptance(rows, "16") == pytest.approx(320 / 400)
    assert acceptance([line("a", 0)], "16") is None


def test_summary_of_a_run_where_b_decodes_twice_as_fast():
    lines = []
    for i in range(4):
        lines += [line("a", i, decode_s=2.1 + 0.01 * i), line("b", i, decode_s=1.1 + 0.005 * i, drafts=10, accepted=9)]
    meta = {"experiment": "x", "target": {"at_least": 2.0, "half_width": None}}
    r = summarise(meta, lines, resamples=200)
    assert r["experiment"] == "x" and r["pairs"] == 4 and r["instances"] == 1
    decode = next(c for c in r["comparisons"] if c["figure"] == "decode_tok_s")
    assert decode["ratio"] == pytest.approx(2.0, rel=1e-3)
    assert decode["ci_low"] <= decode["ratio"] <= decode["ci_high"]
    assert (r["ratio"], r["ci_low"], r["ci_high"]) == (decode["ratio"], decode["ci_low"], decode["ci_high"])
    ttft = next(c for c in r["comparisons"] if c["figure"] == "ttft_ms")
    assert ttft["ratio"] == pytest.approx(1.0) and ttft["higher_is_better"] is False
    assert r["acceptance"] == {"a": {"16": None}, "b": {"16": pytest.approx(0.9)}}
    assert r["sm_clock_mhz"] == {"min": 1980, "max": 1980}


def test_a_single_pair_has_no_interval_and_no_verdict():
    r = summarise({"target": {"at_least": 0.99, "half_width": 0.005}}, [line("a", 0), line("b", 0)])
    assert r["ci_low"] is None and r["target_met"] == {"met": None, "shown": None}


def _decode(ratio, low, high, hw):
    return {"figure": "decode_tok_s", "ratio": ratio, "ci_low": low, "ci_high": high, "half_width": hw}


def test_target_met_needs_the_ratio_and_the_width_and_shown_needs_the_whole_interval():
    t = {"at_least": 0.99, "half_width": 0.005}
    assert target_met(t, [_decode(0.995, 0.991, 0.999, 0.004)]) == {"met": True, "shown": True}
    assert target_met(t, [_decode(0.995, 0.988, 1.002, 0.007)]) == {"met": False, "shown": False}
    assert target_met(t, [_decode(0.992, 0.988, 0.996, 0.004)]) == {"met": True, "shown": False}
    # every level counts
    assert target_met(t, [_decode(1.0, 0.996, 1.004, 0.004), _decode(0.98, 0.976, 0.984, 0.004)])["met"] is False
    assert target_met({"at_least": 2.0}, [_decode(2.1, 1.9, 2.3, 0.09)]) == {"met": True, "shown": False}
    assert target_met(None, [_decode(1.0, 1.0, 1.0, 0.0)]) is None


def test_the_headline_is_16_requests_or_else_the_most_measured():
    lines = [line("a", i) for i in range(2)] + [line("b", i, decode_s=2.1) for i in range(2)]
    assert summarise({}, lines)["headline"] == {"figure": "decode_tok_s", "concurrency": 16}
    for x in lines:
        x["levels"] = {"1": x["levels"]["16"], "4": x["levels"]["16"]}
    r = summarise({}, lines)
    assert r["headline"]["concurrency"] == 4 and r["ratio"] == pytest.approx(0.5)


def test_during_counts_the_rounds_each_reason_held_back_and_leaves_unsampled_ones_out():
    rows = [
        {**line("a", 0), "gpu": {"samples": 4, "sm_mhz": [1905, 1980], "reasons": ["sw_power_cap"]}},
        {**line("a", 1), "gpu": {"samples": 3, "sm_mhz": [1875, 1950], "reasons": ["sw_power_cap", "hw_slowdown"]}},
        {**line("a", 2), "gpu": {"samples": 0, "error": "the sampler exited 127"}},
        line("a", 3),  # a round from before the sampler
    ]
    assert during(rows) == {
        "rounds": 4,
        "sampled": 2,
        "sm_mhz": {"min": 1875, "max": 1980},
        "reasons": {"hw_slowdown": 1, "sw_power_cap": 2},
    }
    assert during([line("a", 0)]) == {"rounds": 1, "sampled": 0, "sm_mhz": None, "reasons": {}}


def test_during_a_level_reads_that_levels_own_windows_alone():
    rows = [line("a", i) for i in range(3)]
    rows[0]["levels"]["16"]["gpu"] = {"samples": 5, "sm_mhz": [1185, 1980], "reasons": ["sw_power_cap"]}
    rows[1]["levels"]["16"]["gpu"] = {"samples": 5, "sm_mhz": [1980, 1980], "reasons": []}
    rows[1]["gpu"] = {"samples": 9, "sm_mhz": [1100, 1980], "reasons": ["hw_slowdown"]}  # the round's: not read
    assert during(rows, "16") == {
        "rounds": 3,
        "sampled": 2,
        "sm_mhz": {"min": 1185, "max": 1980},
        "reasons": {"sw_power_cap": 1},
    }
    assert during(rows, "64")["sampled"] == 0  # a level the rounds do not have


def test_paced_reads_each_levels_own_steps_from_the_rounds_that_timed_them():
    rows = [line("a", i, decode_s=d) for i, d in enumerate((1.0, 1.0, 1.4))]
    for row, excess in zip(rows, (0.0, 0.0, 400.0), strict=True):
        row["levels"]["16"]["pace"] = {
            "median_ms": 8.0,
            "long": int(excess > 0),
            "long_excess_ms": excess,
            "gc_ms": 0.5,
        }
    rows.append(line("a", 3, decode_s=5.0))  # a round from before pace: left out
    got = paced(rows, "16")
    assert got["rounds"] == 3 and got["long_share"] == pytest.approx(1.0)
    assert got["gc_ms_per_round"] == pytest.approx(0.5)
    assert paced(rows, "64") is None


def test_a_run_from_before_pace_has_no_pace_in_its_result():
    lines = [line(arm, i) for i in range(2) for arm in "ab"]
    assert summarise({"experiment": "x"}, lines, resamples=50)["pace_during_decodes"] is None
    lines[0]["levels"]["16"]["pace"] = {"median_ms": 8.0, "long": 0, "long_excess_ms": 0.0, "gc_ms": 0.0}
    got = summarise({"experiment": "x"}, lines, resamples=50)["pace_during_decodes"]
    assert got["a"]["16"]["rounds"] == 1 and got["b"]["16"] is None


def test_cpus_during_counts_rounds_by_busy_cpus_and_keeps_the_most_stolen():
    one = {"busy": {"0": 1.0, "1": 0.1, "2": 0.49}, "steal": {"0": 0.0, "1": 0.02, "2": 0.0}}
    two = {"busy": {"0": 0.99, "1": 0.5, "2": 0.0}, "steal": {"0": 0.3, "1": 0.0, "2": 0.0}}
    rows = [{**line("a", 0), "cpus": one}, {**line("a", 1), "cpus": two}, {**line("a", 2), "cpus": one}, line("a", 3)]
    # the round without a record is left out; a CPU at exactly half a round counts as busy
    assert cpus_during(rows) == {"rounds": 3, "busy_cpus": {"1": 2, "2": 1}, "steal_max": 0.3}
    assert cpus_during([line("a", 0)]) == {"rounds": 0, "busy_cpus": {}, "steal_max": None}


def test_a_run_from_before_the_cpu_record_has_none_in_its_result():
    lines = [line(arm, i) for i in range(2) for arm in "ab"]
    assert summarise({"experiment": "x"}, lines, resamples=50)["cpus_during_rounds"] is None
    lines[1]["cpus"] = {"busy": {"0": 1.0}, "steal": {"0": 0.0}}
    got = summarise({"experiment": "x"}, lines, resamples=50)["cpus_during_rounds"]
    assert got == {
        "a": {"rounds": 0, "busy_cpus": {}, "steal_max": None},
        "b": {"rounds": 1, "busy_cpus": {"1": 1}, "steal_max": 0.0},
    }
