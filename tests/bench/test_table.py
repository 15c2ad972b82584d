"""docs/BENCHMARKS.md's A/B table from result JSONs."""

from __future__ import annotations

import pytest

from vllm_backports.bench.table import BEGIN, END, NONE_YET, render, splice


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
    assert "[json](runs/bench-ab/run1.json), [plot](runs/bench-ab/run1.png)" in rows[0]
    assert rows[1].split(" | ")[5] == "16"


def test_verdicts_and_acceptance_are_shown_as_the_result_says():
    r = result(target_met={"met": True, "shown": False}, acceptance={"b": {"1": 0.9, "16": 0.91}})
    text = render({"r": r})
    assert "met, interval reaches below" in text and "| 90% |" in text and "[plot]" not in text
    assert ": not met |" in render({"r": result(target_met={"met": False, "shown": False})})
    assert ": interval above, too wide |" in render({"r": result(target_met={"met": False, "shown": True})})
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
    assert splice(page, "NEW") == f"intro\n{BEGIN}\nNEW\n{END}\nafter\n"
