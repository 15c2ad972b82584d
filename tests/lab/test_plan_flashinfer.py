"""`python -m lab plan` with a FlashInfer proof: the release's FlashInfer set staged beside its own
wheels, in the same parts, recorded apart in its stage; refused in one line where a pin needs a
module pre-built with nvcc that is not here. The release's own staging is a stand-in (no network)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from fake_wheel import wheel
from lab import __main__ as lab_main
from lab import stage

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A checkout (the real catalogue) whose lab cache holds 0.25.0's resolution and a stand-in stage."""
    root = tmp_path / "repo"
    root.mkdir()
    for name in ("versions.toml", "backports"):
        (root / name).symlink_to(REPO / name)
    cache = tmp_path / "cache"
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_CACHE", str(cache))
    (cache / "resolve").mkdir(parents=True)
    (cache / "resolve" / "0.25.0.txt").write_text("vllm==0.25.0\nflashinfer-python==0.6.13\nquack-kernels==0.5.0\n")
    own = stage.into_store(wheel(tmp_path, "vllm", "0.25.0"), "vllm")
    monkeypatch.setattr(lab_main, "ROOT", root)
    monkeypatch.setattr(lab_main, "tree_size", lambda root: 0)
    monkeypatch.setattr(stage, "stage", lambda release, home, log: stage.Stage(release, "2.11.0", (own,)))
    fetched: list = []

    def download(pins, dest, run=None):
        fetched.append(pins)
        dest.mkdir(parents=True, exist_ok=True)
        return [wheel(dest, n.replace("-", "_"), v) for n, v in sorted(pins.items())]

    monkeypatch.setattr(stage, "download", download)
    return root, fetched


def plan(*jobs: str):
    return CliRunner().invoke(lab_main.main, ["plan", *jobs])


def test_a_pin_that_builds_with_nvcc_is_refused_in_one_line_until_its_module_is_prebuilt(repo):
    root, fetched = repo
    done = plan("0.25.0:gdn-ngram,gdn-ngram-flashinfer")
    assert done.exit_code == 1 and not fetched and not (root / ".lab").exists()
    assert done.output == (
        "Error: vLLM 0.25.0: flashinfer-python 0.6.13 builds its GDN prefill with nvcc; "
        "pre-build it first: python -m lab flashinfer-jit 0.25.0\n"
    )
    # without a FlashInfer proof nothing of FlashInfer is asked for
    assert plan("0.25.0:gdn-ngram").exit_code == 0 and not fetched
    assert "flashinfer" not in json.loads((root / ".lab" / "stage" / "0.25.0.json").read_text())


def test_the_flashinfer_set_is_staged_apart_from_the_releases_wheels_in_the_same_parts(repo):
    root, fetched = repo
    prebuilt = root / ".stage-fi-prebuilt-0.25.0"
    prebuilt.mkdir()
    (prebuilt / "fi-aot-gdn_prefill_sm90-sm90a.tar.xz").write_bytes(b"the module")
    done = plan("0.25.0:gdn-ngram,gdn-ngram-flashinfer")
    assert done.exit_code == 0, done.output
    assert fetched == [{"flashinfer-python": "0.6.13", "quack-kernels": "0.5.0"}]
    staged = json.loads((root / ".lab" / "stage" / "0.25.0.json").read_text())
    assert [b["name"] for b in staged["blobs"]] == ["vllm-0.25.0-py3-none-any.whl"]
    assert [(b["name"], b["role"]) for b in staged["flashinfer"]] == [
        ("flashinfer_python-0.6.13-py3-none-any.whl", "flashinfer"),
        ("quack_kernels-0.5.0-py3-none-any.whl", "flashinfer"),
        ("fi-aot-gdn_prefill_sm90-sm90a.tar.xz", "fi-aot"),
    ]
    chunks = {c.name.partition(".")[0] for c in (root / ".lab" / "parts").glob("p*/*")}
    assert chunks == {b["sha256"] for b in staged["blobs"] + staged["flashinfer"]}
    # the index the last call carries, so `start` can name a part a machine never got
    index = json.loads((root / ".lab" / "stage" / "parts.json").read_text())
    assert index == {
        f".lab/parts/{p.name}": sorted(c.name for c in p.iterdir()) for p in (root / ".lab" / "parts").iterdir()
    }
    assert "python3 -m lab.machine start 0.25.0:gdn-ngram,gdn-ngram-flashinfer" in done.output


def test_a_bare_release_whose_core_set_runs_flashinfer_has_its_set_staged(repo):
    root, fetched = repo
    (stage.cache() / "resolve" / "0.26.0.txt").write_text("vllm==0.26.0\nflashinfer-python==0.6.14\n")
    done = plan("0.26.0")
    assert done.exit_code == 0, done.output
    assert fetched == [{"flashinfer-python": "0.6.14"}]  # the CuTe-DSL prefill: nothing to pre-build
    staged = json.loads((root / ".lab" / "stage" / "0.26.0.json").read_text())
    assert [b["name"] for b in staged["flashinfer"]] == ["flashinfer_python-0.6.14-py3-none-any.whl"]


def test_the_estimate_counts_parts_installs_a_cold_wave_and_warm_ones():
    # 2026-12-06, H100: 0.20.0, 0.20.1, 0.24.0 and 0.25.0, 25 parts, 26 proofs; 15 had ended 9.1 min
    # after the first install, 11 min held from the machine's start (27 s of it), 8 were running
    today = lab_main.estimate(25, {"0.20.0": 5, "0.20.1": 5, "0.24.0": 8, "0.25.0": 8})
    assert today == round(210 + 25 * 4.5 + 4 * 55 + 7 * 60 + 3 * 4 * 60) <= lab_main.MACHINE_S
    assert lab_main.estimate(1, {"0.26.0": 1}) == lab_main.estimate(1, {"0.26.0": 8}) == round(210 + 4.5 + 55 + 420)
    assert lab_main.estimate(1, {"0.26.0": 9}) == round(210 + 4.5 + 55 + 420 + 240)
    assert lab_main.estimate(3, {}) == round(210 + 3 * 4.5)  # the start and parts alone
    assert lab_main.estimate(3, {}, benches=500) == round(210 + 3 * 4.5 + 500)


def _bench_runs():
    """(bench_ab.py's options, pairs, seconds it took) of each A/B benchmark lab.machine ran on the
    H100, read from the records: what the estimate was fitted to."""
    out = []
    for timeline in sorted((REPO / "records/runs").glob("2026-12-0*-h100-lab-*/**/timeline.jsonl")):
        jobs = json.loads((timeline.parent / "jobs.json").read_text())
        began = {}
        for line in map(json.loads, timeline.read_text().splitlines()):
            if line["what"].startswith("bench-"):
                if line["event"] == "start":
                    began[line["what"]] = line["t"]
                else:
                    (bench,) = [
                        b
                        for j in jobs["jobs"]
                        if j["release"] == line["release"]
                        for b in j["benches"]
                        if line["what"] == f"bench-{b['experiment']}-{b['shape']}"
                    ]
                    out.append((jobs["bench_args"], bench["pairs"], line["t"] - began[line["what"]]))
    return out


def test_a_benchmark_is_estimated_at_most_15_percent_short_of_each_recorded_run_and_35_long():
    # the releases differ by about 15% in what an engine takes to start, and 0.29.0's start
    # faster still (lab.owed): an estimate may run long, where device time is left over, but
    # not short, where a machine ends before its results are collected
    from lab.owed import BenchOptions

    runs = _bench_runs()
    assert len(runs) >= 6 and sum("--pin-cores" in args for args, _, _ in runs) >= 3
    for args, pairs, took in runs:
        assert -0.15 * took <= BenchOptions.parse(args).seconds(pairs) - took <= 0.35 * took, (args, pairs, took)


def test_the_benchmark_options_are_read_as_bench_ab_py_reads_them():
    from lab.owed import BenchOptions

    assert BenchOptions.parse(["--layout", "resident"]) == BenchOptions(restarts=1, levels=(1, 16, 64))
    both = BenchOptions.parse(["--levels=1,64", "--restarts", "4", "--pin-cores", "--pairs", "12"])
    assert both == BenchOptions(restarts=4, levels=(1, 64), pairs=12, pinned=True)
    assert both.seconds(30) == round(4 * 220 + 12 * (2.5 + 10))  # --pairs overrides the job's 30
    # what bench_ab.py would refuse on the machine is refused before anything is staged
    for bad, says in (
        (["--restarts", "--pin-cores"], "take numbers"),
        (["--restarts="], "take numbers"),
        (["--levels", "1,x"], "take numbers"),
        (["--pin-cores"], r"--pin-cores needs an even --restarts \(each arm as long on each half\), not 1"),
        (["--pin-cores", "--restarts", "3"], "not 3"),
    ):
        with pytest.raises(ValueError, match=says):
            BenchOptions.parse(bad)


def test_the_estimate_runs_flashinfer_proofs_one_after_another():
    """lab.machine runs FlashInfer proofs without a pre-built GDN prefill under one lock: ten of them outlast the waves of the same
    ten proofs, and a few run inside the waves beside them."""
    waves = round(210 + 90 * 4.5 + 2 * 55 + 420 + 240)
    assert lab_main.estimate(90, {"0.17.0": 5, "0.17.1": 5}) == waves
    assert lab_main.estimate(90, {"0.17.0": 5, "0.17.1": 5}, 10) == round(210 + 90 * 4.5 + 2 * 55 + 10 * 6 * 60)
    assert lab_main.estimate(90, {"0.17.0": 5, "0.17.1": 5}, 1) == waves


def test_plan_says_what_device_time_it_needs_and_when_it_will_not_fit(repo):
    done = plan("0.25.0:gdn-ngram,mtp")
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1] == "about 12 min of device time, by the H100 runs of 2026-12-06"
    # a benchmark runs after the proofs and counts with lab.machine's default options: 1, 16 and 64
    # requests, one engine pair
    done = plan("0.25.0:gdn-ngram,mtp,bench=qwen3_5-9b/fixcost-ngram-sparse=16")
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1] == "about 21 min of device time, 9 of them benchmarks, by the H100 runs of 2026-12-06"
    args = ["--bench-args", "--levels 1 --restarts 4"]
    done = CliRunner().invoke(lab_main.main, ["plan", "0.25.0:bench=qwen3_5-9b/fixcost-ngram-sparse=16", *args])
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1] == "about 18 min of device time, 13 of them benchmarks, by the H100 runs of 2026-12-06"
    # options bench_ab.py would refuse: one line, nothing staged
    shutil.rmtree(repo[0] / ".lab")
    args = ["--bench-args", "--levels 1 --pin-cores"]
    done = CliRunner().invoke(lab_main.main, ["plan", "0.25.0:bench=qwen3_5-9b/fixcost-ngram-sparse=16", *args])
    assert done.exit_code == 2 and not (repo[0] / ".lab").exists()
    assert done.output.splitlines()[-1] == (
        "Error: --bench-args: --pin-cores needs an even --restarts (each arm as long on each half), not 1"
    )
    many = ",".join(["gdn-ngram", "mtp", "tq-mtp", "kp1-b1-fix", "gdn-ngram-kp1", "gdn-ngram-prefix", "tq-continuation"])
    done = plan(*(f"{r}:{many}" for r in ("0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0")), f"0.25.0:{many},gdn-ngram-b1,bench=x/y")
    assert done.exit_code == 0, done.output
    assert done.output.splitlines()[-1].endswith("more than one 30-minute machine holds: split the jobs")


def test_a_tp2_plan_names_the_two_gpu_kind_in_every_call_it_prints(repo):
    done = plan("0.25.0:tq-mtp-tp2")
    assert done.exit_code == 0, done.output
    runs = [line for line in done.output.splitlines() if line.lstrip().startswith("run ")]
    assert runs and all(" kind=nvidia-h100-x2 " in line for line in runs)
    assert "command: python3 -m lab.machine gpus 2 && " in runs[0]
    done = plan("0.25.0:tq-mtp")
    assert done.exit_code == 0 and "kind=" not in done.output
