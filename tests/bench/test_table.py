"""docs/BENCHMARKS.md's A/B table from result JSONs."""

from __future__ import annotations

import pytest

from vllm_backports.bench.table import BEGIN, END, NONE_YET, render
from vllm_backports.maint.drift import splice


def comparison(figure, c, ratio, low, high, a=1000.0):
    return {
        "figure": figure,
        "concurrency": c,
        "ratio": ratio,
        "ci_low": low,
        "ci_high": high,
        "half_width": None if low is None else (high - low) / 2 / ratio,
        "a_mean": a,
        "b_mean": a * ratio,
    }


def result(**kw):
    r = {
        "experiment": "nospec",
        "shape": "qwen3_5-9b",
        "vllm": "0.26.0",
        "date": "2026-11-30",
        "gpu": "H100",
        "a": "raw, no speculation",
        "b": "fix, no speculation",
        "layout": "resident",
        "pairs": 20,
        "target": {"at_least": 0.99, "half_width": 0.005},
        "target_met": {"met": True, "shown": True},
        "acceptance": {"a": {"1": None, "16": None}, "b": {"1": None, "16": None}},
        "comparisons": [
            comparison("decode_tok_s", 1, 0.998, 0.994, 1.002),
            comparison("ttft_ms", 1, 1.001, 0.99, 1.01, a=50.0),
            comparison("decode_tok_s", 16, 1.0004, 0.997, 1.004),
            comparison("ttft_ms", 16, 0.999, 0.98, 1.02, a=400.0),
        ],
    }
    return {**r, **kw}


def test_no_runs_says_the_figures_are_owed():
    assert render({}) == NONE_YET


def test_a_row_per_level_with_the_ratio_its_interval_and_links():
    text = render({"run1": result()}, {"run1": "run1.png"})
    rows = [x for x in text.splitlines() if x.startswith("| 2026")]
    assert len(rows) == 2
    assert "| 1 | 1000 → 998 | 0.998 [0.994, 1.002] | 1.001 [0.990, 1.010] | - | 20 (resident) |" in rows[0]
    assert ">= 0.99, ±0.5%: met |" in rows[0]
    assert "[json](../records/runs/bench-ab/run1.json), [plot](../records/runs/bench-ab/run1.png)" in rows[0]
    assert rows[1].split(" | ")[5] == "16"


def test_a_run_over_engine_pairs_started_one_after_another_says_how_many():
    rows = [x for x in render({"r": result(instances=3)}).splitlines() if x.startswith("| 2026")]
    assert "| 20 (resident, 3 engine pairs) |" in rows[0]
    assert "| 20 (resident) |" in render({"r": result(instances=1)})


def test_a_run_with_pinned_cores_says_so():
    pinned = render({"r": result(instances=2, plan={"pin_cores": True})})
    assert "| 20 (resident, 2 engine pairs, half the cores each) |" in pinned
    assert "half the cores" not in render({"r": result(instances=2, plan={"pin_cores": False})})


def verdicts(**kw) -> list[str]:
    return [row.split(" | ")[-2] for row in render({"r": result(**kw)}).splitlines() if row.startswith("| 2026")]


def test_each_level_is_judged_on_its_own_decode_interval():
    # the first level within the target, the second: above it but wider than ±0.5%, as measured
    # on vLLM 0.27.0 (c=1 ±0.52%, c=16 ±0.23%) where the run as a whole did not meet it
    wide = [comparison("decode_tok_s", 1, 1.005, 0.9998, 1.0103), comparison("ttft_ms", 1, 1.0, 0.9, 1.1),
            comparison("decode_tok_s", 16, 1.0009, 0.9986, 1.0032), comparison("ttft_ms", 16, 1.0, 0.99, 1.01)]
    assert verdicts(comparisons=wide, target_met={"met": False, "shown": True}) == [
        ">= 0.99, ±0.5%: interval above, too wide", ">= 0.99, ±0.5%: met"]


def test_verdicts_and_acceptance():
    below = [comparison("decode_tok_s", 1, 0.992, 0.9886, 0.9954), comparison("ttft_ms", 1, 1.0, 0.9, 1.1),
             comparison("decode_tok_s", 16, 0.95, 0.94, 0.96), comparison("ttft_ms", 16, 1.0, 0.99, 1.01)]
    assert verdicts(comparisons=below) == [">= 0.99, ±0.5%: met, interval reaches below", ">= 0.99, ±0.5%: not met"]
    text = render({"r": result(acceptance={"b": {"1": 0.9, "16": 0.91}})})
    assert "| 90% |" in text and "[plot]" not in text
    one = [comparison("decode_tok_s", 1, 1.0, None, None), comparison("ttft_ms", 1, 1.0, None, None)]
    assert verdicts(comparisons=one) == [">= 0.99, ±0.5%: no interval"]
    assert "| - | [json]" in render({"r": result(target=None)})


def test_runs_are_sorted_by_name_and_a_bad_one_is_named():
    text = render({"b": result(vllm="0.33.0"), "a": result(vllm="0.20.0")})
    assert text.index("0.20.0") < text.index("0.33.0")
    bad = result()
    del bad["comparisons"]
    with pytest.raises(ValueError, match="bad: missing comparisons"):
        render({"bad": bad})


def test_splice_replaces_only_between_the_markers():
    page = f"intro\n{BEGIN}\nold\n{END}\nafter\n"
    assert splice(page, BEGIN, END, "NEW", "docs/BENCHMARKS.md") == f"intro\n{BEGIN}\nNEW\n{END}\nafter\n"
