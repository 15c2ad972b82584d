"""The A/B plots: the bars drawn are the result's intervals."""

from __future__ import annotations

import pytest

from benchmarks import bench_ab_plot as plots


def comparison(figure, c, ratio, low, high):
    return {"figure": figure, "concurrency": c, "ratio": ratio, "ci_low": low, "ci_high": high}


RESULT = {
    "experiment": "nospec",
    "shape": "qwen3_5-9b",
    "vllm": "0.26.0",
    "gpu": "H100",
    "date": "2026-11-30",
    "a": "raw",
    "b": "fix",
    "pairs": 20,
    "target": {"at_least": 0.99, "half_width": 0.005},
    "comparisons": [
        comparison("decode_tok_s", 64, 1.01, 1.0, 1.03),
        comparison("decode_tok_s", 1, 0.995, 0.99, 1.0),
        comparison("ttft_ms", 1, 1.2, None, None),
    ],
}


def test_points_are_in_level_order_with_the_distances_to_the_interval():
    got = plots.points(RESULT, "decode_tok_s")
    assert [p[0] for p in got] == [1, 64]
    assert got[0][1:] == pytest.approx((0.995, 0.005, 0.005))
    assert got[1][1:] == pytest.approx((1.01, 0.01, 0.02))
    assert plots.points(RESULT, "ttft_ms") == [(1, 1.2, 0.0, 0.0)]


def test_a_png_is_written(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "r.png"
    plots.plot(RESULT, out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
