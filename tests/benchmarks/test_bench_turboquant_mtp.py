"""The TurboQuant MTP benchmark's option handling (its measurement needs a GPU)."""

from __future__ import annotations

from click.testing import CliRunner

from benchmarks import bench_turboquant_mtp as bench


def test_it_needs_two_existing_sites(tmp_path):
    r = CliRunner().invoke(bench.main, ["--site", f"a={tmp_path}"])
    assert r.exit_code == 2 and "two or more LABEL=DIR" in r.output
    r = CliRunner().invoke(bench.main, [])
    assert r.exit_code == 2 and "--site" in r.output


def test_only_turboquant_presets_are_taken(tmp_path):
    r = CliRunner().invoke(bench.main, ["--site", f"a={tmp_path}", "--site", f"b={tmp_path}", "--kv-cache", "fp8"])
    assert r.exit_code == 2 and "turboquant_k8v4" in r.output


def test_without_a_gpu_it_says_so_in_one_line(tmp_path, monkeypatch):
    def refuse():
        from vllm_backports.errors import UsageError
        raise UsageError("verify needs a CUDA GPU; none is visible")

    monkeypatch.setattr(bench, "preflight", refuse)
    r = CliRunner().invoke(
        bench.main, ["--site", f"a={tmp_path}", "--site", f"b={tmp_path}", "--work-dir", str(tmp_path / "w")]
    )
    assert r.exit_code == 1 and r.output.strip() == "Error: verify needs a CUDA GPU; none is visible"
