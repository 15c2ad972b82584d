"""The decode benchmark's --site option, and the A/B interleaving it uses (benchmarks/sites.py),
with a stand-in for the GPU measurement."""

from __future__ import annotations

import os
import sys

import pytest

from benchmarks import bench_gdn_decode as bench
from benchmarks import sites


def test_sites_take_turns_and_ratios_are_paired_within_a_pass(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/before")
    seen = []
    speeds = {"a": [100.0, 80.0, 90.0], "b": [99.0, 84.0, 90.0]}  # the machine drifts between passes

    def measure_one(tag):
        label, n = tag.split("-pass")
        seen.append((tag, os.environ["PYTHONPATH"]))
        assert sys.path[0] == os.environ["PYTHONPATH"]  # the variant's version is read in this process
        v = speeds[label][int(n)]
        return {"nospec_tokens_per_s": v, "ngram_tokens_per_s": 2 * v}

    out = sites.interleave([("a", "/site-a"), ("b", "/site-b")], 3, measure_one, keys=("nospec_tokens_per_s",))
    assert seen == [("a-pass0", "/site-a"), ("b-pass0", "/site-b"), ("a-pass1", "/site-a"),
                    ("b-pass1", "/site-b"), ("a-pass2", "/site-a"), ("b-pass2", "/site-b")]
    ratios = out["ratios"]["b/a"]["nospec_tokens_per_s"]
    assert ratios["by_pass"] == [0.99, 1.05, 1.0]
    assert ratios["median"] == 1.0
    assert os.environ["PYTHONPATH"] == "/before" and "/site-a" not in sys.path and "/site-b" not in sys.path


def test_environment_is_restored_when_a_measurement_fails(monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)

    def measure_one(tag):
        raise RuntimeError("engine died")

    with pytest.raises(RuntimeError):
        sites.interleave([("a", "/site-a"), ("b", "/site-b")], 1, measure_one, keys=("nospec_tokens_per_s",))
    assert "PYTHONPATH" not in os.environ


def test_one_site_or_a_missing_directory_is_refused(tmp_path):
    from click.testing import CliRunner

    r = CliRunner().invoke(bench.main, ["--site", f"a={tmp_path}"])
    assert r.exit_code == 2 and "two or more LABEL=DIR" in r.output
    r = CliRunner().invoke(bench.main, ["--site", f"a={tmp_path}", "--site", f"b={tmp_path / 'nope'}"])
    assert r.exit_code == 2 and "two or more LABEL=DIR" in r.output


def test_graphs_mode_without_ngram_starts_one_engine_with_graphs_per_site_and_pass(monkeypatch, tmp_path):
    from click.testing import CliRunner

    specs = []

    def fake_engine(spec, work, name, script):
        specs.append((name, spec["eager"], os.environ["PYTHONPATH"]))
        return {
            "timed_rounds_tokens_per_s": [100.0, 101.0, 99.0] if os.environ["PYTHONPATH"].endswith("/a") else [99.0] * 3
        }

    monkeypatch.setattr(bench, "preflight", lambda: "0.20.0")
    monkeypatch.setattr(bench.model, "write_model", lambda directory, mtp=False: directory)
    monkeypatch.setattr(bench, "run_engine", fake_engine)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    r = CliRunner().invoke(
        bench.main,
        ["--site", f"a={tmp_path / 'a'}", "--site", f"b={tmp_path / 'b'}", "--passes", "2",
         "--mode", "graphs", "--no-ngram", "--work-dir", str(tmp_path / "w")],
    )
    assert r.exit_code == 0, r.output
    assert specs == [("nospec", False, str(tmp_path / p)) for p in ("a", "b", "a", "b")]
    import json

    out = json.loads(r.output)
    assert out["ratios"]["b/a"] == {"nospec_tokens_per_s": {"by_pass": [0.99, 0.99], "median": 0.99}}
    assert out["runs"]["a"][0]["mode"] == "graphs" and "ngram_tokens_per_s" not in out["runs"]["a"][0]
