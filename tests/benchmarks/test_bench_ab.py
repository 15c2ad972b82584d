"""The A/B benchmark's command line: option handling and summarize (runs need a GPU; the driver's
own tests run them on stand-in engines)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from benchmarks import bench_ab
from vllm_backports.errors import BackportError


def test_sites_must_be_label_and_existing_directory(tmp_path):
    r = CliRunner().invoke(
        bench_ab.main,
        ["run", "--experiment", "nospec", "--shape", "qwen3_5-9b", "--out", str(tmp_path / "o"), "--site", "raw"],
    )
    assert r.exit_code == 2 and "LABEL=DIR" in r.output


def run_nospec(tmp_path, *options: str):
    """`run` of nospec into tmp_path/o, both sites tmp_path (which holds no vLLM)."""
    out, site = str(tmp_path / "o"), str(tmp_path)
    args = ["run", "--experiment", "nospec", "--shape", "qwen3_5-9b", "--out", out, "--site", f"raw={site}"]
    return CliRunner().invoke(bench_ab.main, [*args, "--site", f"fix={site}", *options])


def test_pin_cores_reaches_the_plan_and_is_off_unless_asked(tmp_path, monkeypatch):
    plans = []

    def run(plan, *args, **kw):
        plans.append(plan)
        raise BackportError("no engines in this test")

    monkeypatch.setattr(bench_ab.driver, "run", run)
    assert run_nospec(tmp_path, "--pin-cores").exit_code == 1
    assert run_nospec(tmp_path).exit_code == 1
    assert [p.pin_cores for p in plans] == [True, False]


def test_a_site_without_vllm_is_refused_in_one_line(tmp_path):
    r = run_nospec(tmp_path)
    assert r.exit_code == 1 and "no vLLM installed there" in r.output and not (tmp_path / "o").exists()


def test_summarize_makes_the_result_of_the_rounds_so_far_and_copies_it(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(
        json.dumps(
            {
                "experiment": "nospec",
                "shape": "qwen3_5-9b",
                "vllm": "0.26.0",
                "a": "raw",
                "b": "fix",
                "layout": "sleep",
                "target": None,
            }
        )
    )
    level = {"requests": 16, "max_tokens": 101, "ttft_s": 0.1}
    lines = [
        {"arm": arm, "round": i, "instance": 0, "levels": {"16": {**level, "decode_s": d}}}
        for i in range(3)
        for arm, d in (("a", 1.1), ("b", 1.0))
    ]
    (run / "progress.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"arm": "a", "ro')
    copy = tmp_path / "docs/x.json"
    r = CliRunner().invoke(bench_ab.main, ["summarize", str(run), "--copy", str(copy), "--resamples", "100"])
    assert r.exit_code == 0, r.output
    assert "B/A 1.1111" in r.output and "3 pairs" in r.output
    assert json.loads(copy.read_text()) == json.loads((run / "result.json").read_text())


def test_summarize_tells_what_held_each_arms_rounds_back(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    meta = {"experiment": "nospec", "shape": "qwen3_6-27b", "vllm": "0.27.0", "a": "raw", "b": "fix", "layout": "sleep"}
    (run / "run.json").write_text(json.dumps({**meta, "target": None}))
    level = {"requests": 1, "max_tokens": 128, "ttft_s": 0.08, "decode_s": 2.0}
    capped = {"samples": 9, "sm_mhz": [1875, 1965], "reasons": ["sw_power_cap"]}
    free = {"samples": 9, "sm_mhz": [1965, 1980], "reasons": []}
    lines = [
        {"arm": arm, "round": i, "instance": 0, "levels": {"1": level}, "gpu": gpu}
        for i in range(2)
        for arm, gpu in (("a", free), ("b", capped))
    ]
    (run / "progress.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = CliRunner().invoke(bench_ab.main, ["summarize", str(run), "--resamples", "100"])
    assert r.exit_code == 0, r.output
    assert (
        "during a's rounds (2 of 2 sampled): SM clock {'min': 1965, 'max': 1980}, rounds held back by nothing"
        in r.output
    )
    assert "during b's rounds (2 of 2 sampled): SM clock {'min': 1875, 'max': 1965}" in r.output
    assert "rounds held back {'sw_power_cap': 2}" in r.output


def test_summarize_tells_whether_stalls_make_an_arms_spread(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    meta = {
        "experiment": "nospec",
        "shape": "qwen3_5-9b",
        "vllm": "0.27.0",
        "a": "raw",
        "b": "fix",
        "layout": "resident",
    }
    (run / "run.json").write_text(json.dumps({**meta, "target": None}))

    def level(decode_s, excess, probe_us):
        steps = {
            "steps": 120,
            "median_ms": 8.0,
            "max_ms": 8.0 + excess,
            "long": int(excess > 0),
            "long_excess_ms": excess,
            "probe_us": probe_us,
        }
        return {
            "requests": 1,
            "max_tokens": 128,
            "ttft_s": 0.04,
            "decode_s": decode_s,
            "pace": {**steps, "gc": 0, "gc_ms": 0.0},
        }

    lines = [
        {"arm": arm, "round": i, "instance": 0, "levels": {"1": level(d, e, (900.0 if arm == "a" else 1700.0) + i)}}
        for i, (d, e) in enumerate(((1.0, 0.0), (1.0, 0.0), (1.3, 300.0)))
        for arm in "ab"
    ]
    (run / "progress.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r = CliRunner().invoke(bench_ab.main, ["summarize", str(run), "--resamples", "100"])
    assert r.exit_code == 0, r.output
    assert "a's steps at 1: median 8.00 ms (rounds 8.00 to 8.00); 0.3 long a round, 100.0 ms beyond" in r.output
    assert "long steps hold 100% of the slow rounds' time past the median" in r.output
    assert "a's steps at 1: " in r.output and "host probe 901 us (rounds 900 to 902)" in r.output
    assert "host probe 1701 us (rounds 1700 to 1702)" in r.output  # b's


def test_the_machine_record_names_the_gpu_the_run_computes_on(monkeypatch):
    monkeypatch.setattr(bench_ab, "machine", lambda: {"gpu": "NVIDIA H200", "gpus": 1})
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    monkeypatch.setattr(bench_ab.os, "sched_getaffinity", lambda pid: {16, 17, 18})
    pairs = {16: [16, 48], 17: [17, 49], 18: [18]}  # 48 and 49: threads the run was not given
    monkeypatch.setattr(bench_ab.driver, "smt_siblings", lambda cpus: {c: pairs[c] for c in cpus})
    assert bench_ab.ran_on() == {
        "gpu": "NVIDIA H200", "gpus": 1, "gpu_index": 1, "cores": 3, "smt_siblings": [[16, 48], [17, 49], [18]]}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-5f0c")
    assert bench_ab.ran_on()["gpu_index"] == "GPU-5f0c"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")

    def no_torch():
        raise ImportError("no torch")

    monkeypatch.setattr(bench_ab, "machine", no_torch)
    monkeypatch.setattr(bench_ab.clocks, "read", lambda gpu=None: {"name": "NVIDIA H200"})
    got = bench_ab.ran_on()
    assert (got["gpu"], got["gpu_index"]) == ("NVIDIA H200", 0) and "no torch" in got["error"]


def test_ttft_samples_below_one_are_refused_before_anything_runs(tmp_path):
    r = run_nospec(tmp_path, "--ttft-samples", "0")
    assert r.exit_code == 2 and "--ttft-samples" in r.output and not (tmp_path / "o").exists()


def profile_run(tmp_path, levels=(16,)):
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"a": "p65, mtp", "b": "fix, mtp"}))
    for level in levels:
        for arm, calls, host in (("a", 240, 372520.0), ("b", 60, 11750.0)):
            rows = [
                {
                    "name": "vllm::unified_attention",
                    "on": "host",
                    "calls": calls,
                    "self_device_us": 0.0,
                    "self_cpu_us": host,
                },
                {
                    "name": "_tq_decode_stage1",
                    "on": "device",
                    "calls": calls * 13,
                    "self_device_us": 4e4,
                    "self_cpu_us": 0.0,
                },
            ]
            (run / f"profile-{arm}-0-c{level}.json").write_text(json.dumps(rows))
    return run


def test_profile_diff_sets_the_arms_side_by_side(tmp_path):
    run = profile_run(tmp_path)
    r = CliRunner().invoke(bench_ab.main, ["profile-diff", str(run)])
    assert r.exit_code == 0, r.output
    assert "A = p65, mtp; B = fix, mtp; 16 requests, instance 0" in r.output
    assert "host time, in all: A      372.5 ms  B       11.8 ms  B/A 0.032" in r.output
    first = r.output.splitlines()[4].split()
    assert first == ["vllm::unified_attention", "240", "60", "0.00", "0.00", "372.52", "11.75"]
    r = CliRunner().invoke(bench_ab.main, ["profile-diff", str(run), "--json"])
    got = json.loads(r.output)
    assert got["totals"]["a"]["self_device_us"] == 4e4 and got["ops"][1]["calls"] == [3120, 780]


def test_profile_diff_asks_for_a_level_where_it_cannot_tell(tmp_path):
    run = profile_run(tmp_path, levels=(1, 16))
    r = CliRunner().invoke(bench_ab.main, ["profile-diff", str(run)])
    assert r.exit_code == 2 and "profiles at levels 1, 16: pick with --level" in r.output
    r = CliRunner().invoke(bench_ab.main, ["profile-diff", str(run), "--instance", "3"])
    assert r.exit_code == 2 and "levels none" in r.output
    r = CliRunner().invoke(bench_ab.main, ["profile-diff", str(run), "--level", "64"])
    assert r.exit_code == 1 and "no profile profile-a-0-c64.json or profile-a-0-c64.txt" in r.output
