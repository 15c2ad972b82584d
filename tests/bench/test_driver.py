"""An A/B run driven end to end through engine processes that stand in for vLLM's
(fake_bench_worker.py): the schedule they receive, the progress kept, resuming, a crash."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from vllm_backports.bench import driver, schedule
from vllm_backports.errors import BackportError, UsageError

HERE = Path(__file__).resolve().parent


def site(where: Path, version: str = "0.26.0") -> Path:
    info = where / f"vllm-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n")
    return where


@pytest.fixture
def sites(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(HERE))  # the engines import the stand-in from here
    return {"fix": site(tmp_path / "fix"), "raw": site(tmp_path / "raw")}


def plan(tmp_path, sites, **kw):
    base = {
        "experiment": "ngram-90",
        "shape": "qwen3_5-9b",
        "sites": sites,
        "out": tmp_path / "run",
        "pairs": 3,
        "warmup": 1,
        "layout": "sleep",
        "levels": (1, 4),
        "prompt_len": 16,
        "max_tokens": 101,
    }
    return driver.Plan(**{**base, **kw})


def go(
    p, clock_reads=None, registered=frozenset({"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"}), sampler=None
):
    reads = clock_reads if clock_reads is not None else []

    def clocks():
        reads.append(1)
        return {"clocks.sm": 1980}

    return driver.run(
        p,
        lambda m: None,
        clocks,
        lambda: {"gpu": "Fake GPU", "date": "2026-11-25T10:00:00Z"},
        module="fake_bench_worker",
        architectures=lambda where: registered,
        sampler=sampler,
    )


class FakeSampler:
    """A clocks.Sampler that saw the power cap hold back every other window."""

    def __init__(self, path):
        self.path, self.events, self.windows, self.seen = path, [], [], []

    def start(self):
        self.events.append("start")

    def stop(self):
        self.events.append("stop")

    def window(self, t0, t1):
        self.windows.append((t0, t1))
        capped = len(self.windows) % 2 == 0
        self.seen.append({"samples": 3, "sm_mhz": [1890, 1980], "reasons": ["sw_power_cap"] if capped else []})
        return self.seen[-1]


def test_a_run_sends_each_engine_its_schedule_and_keeps_every_round(tmp_path, sites):
    p = plan(tmp_path, sites, profile=4)
    result = go(p)
    out = p.out
    for arm in "ab":
        ops = (out / f"{arm}-0.spec.ops").read_text().split()
        # a warm-up is an untimed round on the wire
        steps = schedule.steps("sleep", 3, 1, profile=True)
        want = [op.replace("warmup", "round") for op, x, _ in steps if x == arm and op != "start"]
        assert ops == want
    lines = [json.loads(x) for x in (out / "progress.jsonl").read_text().splitlines()]
    assert [(x["arm"], x["round"]) for x in lines] == [(a, i) for i in range(3) for a in "ab"]
    assert all(x["sm_clock_mhz"] == 1980 for x in lines)
    # B has speculation and decodes twice as fast in the stand-in
    assert result["ratio"] == pytest.approx(2.0) and result["pairs"] == 3
    assert result["acceptance"]["b"] == {"1": 0.9, "4": 0.9} and result["acceptance"]["a"]["4"] is None
    assert (result["date"], result["gpu"], result["vllm"]) == ("2026-11-25", "Fake GPU", "0.26.0")
    assert json.loads((out / "result.json").read_text()) == result
    specs = {arm: json.loads((out / f"{arm}-0.spec.json").read_text()) for arm in "ab"}
    assert "speculative" not in specs["a"] and specs["b"]["speculative"]["method"] == "ngram"
    assert specs["b"]["acceptance_schedule"][0] == [3, 3] and specs["a"]["sleep"] is True
    assert specs["a"]["prompts"] == specs["b"]["prompts"] and len(specs["a"]["prompts"]) == 5
    assert specs["a"]["ttft_samples"] == specs["b"]["ttft_samples"] == 5  # the median of 5 at 1 request
    meta = json.loads((out / "run.json").read_text())
    assert meta["instances"][0]["clocks_before"] == {"clocks.sm": 1980} and "clocks_after" in meta["instances"][0]
    assert json.loads((out / "model/config.json").read_text())["model_type"] == "qwen3_5"


def test_a_second_run_resumes_with_new_engines_and_numbers_on(tmp_path, sites):
    go(plan(tmp_path, sites, pairs=2, layout="resident"))
    result = go(plan(tmp_path, sites, pairs=5, layout="resident"))
    lines = [json.loads(x) for x in (tmp_path / "run/progress.jsonl").read_text().splitlines()]
    assert sorted({(x["instance"], x["round"]) for x in lines}) == [(0, 0), (0, 1), (1, 2), (1, 3), (1, 4)]
    assert result["pairs"] == 5 and result["instances"] == 2
    assert (tmp_path / "run/a-1.log").exists()
    # already complete: no engine starts, and the record of starts is left as it was
    go(plan(tmp_path, sites, pairs=5, layout="resident"))
    assert not (tmp_path / "run/a-2.spec.json").exists()
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert [(x["instance"], x["pairs"]) for x in meta["instances"]] == [(0, 2), (1, 3)]


def test_restarts_spread_the_pairs_over_fresh_engine_pairs_that_the_interval_groups(tmp_path, sites):
    result = go(plan(tmp_path, sites, pairs=7, layout="resident", restarts=3))
    lines = [json.loads(x) for x in (tmp_path / "run/progress.jsonl").read_text().splitlines()]
    by_instance = {}
    for x in lines:
        by_instance.setdefault(x["instance"], set()).add(x["round"])
    assert by_instance == {0: {0, 1, 2}, 1: {3, 4}, 2: {5, 6}}  # ceil(7/3) = 3, then to 5, then to 7
    assert result["pairs"] == 7 and result["instances"] == 3
    for instance in range(3):  # each share started its own engines
        assert (tmp_path / f"run/a-{instance}.spec.json").exists() and (
            tmp_path / f"run/b-{instance}.spec.json"
        ).exists()
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert [x["pairs"] for x in meta["instances"]] == [3, 2, 2]
    assert meta["plan"]["pairs"] == 7 and meta["plan"]["restarts"] == 3  # the run as asked, not a share


def test_restarts_resume_a_run_where_it_stands_and_refuse_shares_under_two_pairs(tmp_path, sites):
    go(plan(tmp_path, sites, pairs=3, layout="resident"))
    go(plan(tmp_path, sites, pairs=8, layout="resident", restarts=2))  # the 5 owed go to two new starts
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert [x["pairs"] for x in meta["instances"]] == [3, 3, 2]
    with pytest.raises(UsageError, match="--restarts 3: 1 pairs owed, fewer than two for each of 3"):
        go(plan(tmp_path, sites, pairs=9, layout="resident", restarts=3))
    with pytest.raises(UsageError, match="--restarts 3: 5 pairs owed"):
        go(plan(tmp_path / "other", sites, pairs=5, restarts=3))
    assert not (tmp_path / "other").exists()
    # a finished run asks for nothing more, restarts or not
    assert go(plan(tmp_path, sites, pairs=8, layout="resident", restarts=4))["pairs"] == 8
    assert not (tmp_path / "run/a-3.spec.json").exists()


def test_core_sets_give_the_arms_disjoint_equal_halves_swapped_on_odd_instances():
    low, high = list(range(8)), list(range(8, 16))
    assert driver.core_sets(range(16), 0) == {"a": low, "b": high}
    assert driver.core_sets(range(16), 1) == {"a": high, "b": low}
    assert driver.core_sets(range(16), 2) == {"a": low, "b": high}
    assert driver.core_sets(range(16), 3) == {"a": high, "b": low}
    # the cores a run was given, in any order, not numbered from 0; an odd one left out
    assert driver.core_sets([20, 3, 12, 7, 11], 0) == {"a": [3, 7], "b": [11, 12]}
    assert driver.core_sets([9, 6, 8, 7], 1) == {"a": [8, 9], "b": [6, 7]}


def test_core_sets_keep_a_physical_cores_threads_in_one_half():
    # Linux's usual numbering on a host of 8 physical cores, 2 threads each: cpu n and n + 8 share one
    siblings = {c: sorted({c % 8, c % 8 + 8}) for c in range(16)}
    sets = driver.core_sets(range(16), 0, siblings)
    assert sets == {"a": [0, 1, 2, 3, 8, 9, 10, 11], "b": [4, 5, 6, 7, 12, 13, 14, 15]}
    assert driver.core_sets(range(16), 1, siblings) == {"a": sets["b"], "b": sets["a"]}
    assert driver.core_sets(range(16), 0) == {"a": list(range(8)), "b": list(range(8, 16))}  # without: by number
    # threads numbered side by side already, or none shared: the halves by number
    adjacent = {c: [c - c % 2, c - c % 2 + 1] for c in range(16)}
    assert driver.core_sets(range(16), 0, adjacent) == {"a": list(range(8)), "b": list(range(8, 16))}
    # a sibling the run was not given does not move its partner
    assert driver.core_sets([0, 1, 2, 3], 0, {0: [0, 8], 1: [1, 9], 2: [2, 10], 3: [3, 11]}) == {
        "a": [0, 1],
        "b": [2, 3],
    }
    # pairs and lone threads mixed: the pairs go whole, the lone threads fill the room left
    n8 = {0: [0, 8], 8: [0, 8], 1: [1, 9], 9: [1, 9], 2: [2], 3: [3]}
    assert driver.core_sets([0, 8, 1, 9, 2, 3], 0, n8) == {"a": [0, 2, 8], "b": [1, 3, 9]}
    # three pairs in halves of three: one pair has to be split, and only one
    three = {c: [c % 4, c % 4 + 4] for c in (0, 1, 2, 4, 5, 6)}
    sets = driver.core_sets([0, 1, 2, 4, 5, 6], 0, three)
    assert sum(len({c % 4 for c in half}) for half in sets.values()) == 4  # 3 physical cores, 1 in both
    # a CPU missing from the map stands alone
    assert driver.core_sets(range(4), 0, {0: [0, 2], 2: [0, 2]}) == {"a": [0, 2], "b": [1, 3]}


def test_smt_siblings_read_linux_lists_and_leave_an_unlisted_cpu_alone(tmp_path):
    for cpu, text in {0: "0,8", 8: "0,8", 1: "1-2", 3: "3"}.items():
        (tmp_path / f"cpu{cpu}" / "topology").mkdir(parents=True)
        (tmp_path / f"cpu{cpu}" / "topology" / "thread_siblings_list").write_text(text + "\n")
    (tmp_path / "cpu6" / "topology").mkdir(parents=True)
    (tmp_path / "cpu6" / "topology" / "thread_siblings_list").write_text("\n")  # empty: not a list
    got = driver.smt_siblings([0, 8, 1, 3, 5, 6], tmp_path)
    assert got == {0: [0, 8], 8: [0, 8], 1: [1, 2], 3: [3], 5: [5], 6: [6]}


def test_pin_cores_is_refused_in_one_line_under_four_cores_or_where_nothing_can_pin(tmp_path, sites, monkeypatch):
    with pytest.raises(UsageError, match="--pin-cores: 3 core.s. available, 4 at least") as refused:
        driver.core_sets([0, 1, 2], 0)
    assert "\n" not in str(refused.value)
    monkeypatch.setattr(driver.os, "sched_getaffinity", lambda pid: {0, 1, 2})
    with pytest.raises(UsageError, match="--pin-cores: 3 core.s. available"):
        go(plan(tmp_path, sites, pin_cores=True))
    monkeypatch.setattr(driver.os, "sched_getaffinity", lambda pid: set(range(16)))
    monkeypatch.delattr(driver.os, "sched_setaffinity")
    with pytest.raises(UsageError, match="--pin-cores: this platform cannot pin a process to cores") as refused:
        go(plan(tmp_path, sites, pin_cores=True))
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "run").exists()  # refused before anything was written
    assert go(plan(tmp_path, sites, pairs=1))["pairs"] == 1  # without --pin-cores the same host runs


def test_pin_cores_is_refused_with_an_odd_number_of_engine_pairs(tmp_path, sites, monkeypatch):
    monkeypatch.setattr(driver.os, "sched_getaffinity", lambda pid: set(range(16)))
    for restarts in (1, 3):
        with pytest.raises(UsageError, match=f"--pin-cores needs an even --restarts .*, not {restarts}$"):
            go(plan(tmp_path, sites, pairs=6, layout="resident", restarts=restarts, pin_cores=True))
    assert not (tmp_path / "run").exists()


def watch_pinning(monkeypatch) -> dict[str, list]:
    """Each engine started, by tag: the sched_setaffinity calls its Popen's preexec_fn makes, run
    here, where they can be seen, instead of in the child; the engine then starts unpinned."""
    started: dict[str, list] = {}
    calls: list = []
    real = subprocess.Popen
    monkeypatch.setattr(driver.os, "sched_setaffinity", lambda pid, cores: calls.append((pid, list(cores))))

    def popen(args, preexec_fn=None, **kw):
        calls.clear()
        if preexec_fn is not None:
            preexec_fn()
        started[Path(args[-1]).name.removesuffix(".spec.json")] = list(calls)
        return real(args, **kw)

    monkeypatch.setattr(driver.subprocess, "Popen", popen)
    return started


@pytest.mark.parametrize("layout", schedule.LAYOUTS)
def test_pin_cores_starts_each_arm_on_its_half_and_swaps_the_halves_each_engine_pair(
    tmp_path, sites, monkeypatch, layout
):
    monkeypatch.setattr(driver.os, "sched_getaffinity", lambda pid: set(range(9)))  # core 8 left out
    started = watch_pinning(monkeypatch)
    result = go(plan(tmp_path, sites, pairs=4, layout=layout, restarts=2, pin_cores=True))
    assert result["pairs"] == 4 and result["instances"] == 2
    low, high = [0, 1, 2, 3], [4, 5, 6, 7]
    assert started == {"a-0": [(0, low)], "b-0": [(0, high)], "a-1": [(0, high)], "b-1": [(0, low)]}
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert [x["cores"] for x in meta["instances"]] == [{"a": low, "b": high}, {"a": high, "b": low}]
    assert meta["plan"]["pin_cores"] is True


def test_without_pin_cores_no_engine_is_pinned_and_none_recorded(tmp_path, sites, monkeypatch):
    started = watch_pinning(monkeypatch)
    go(plan(tmp_path, sites, pairs=2, layout="resident"))
    assert started == {"a-0": [], "b-0": []}
    meta = json.loads((tmp_path / "run/run.json").read_text())
    assert "cores" not in meta["instances"][0] and meta["plan"]["pin_cores"] is False


def test_a_pinned_engine_and_the_processes_it_starts_run_on_its_cores_alone(tmp_path, monkeypatch):
    own = sorted(os.sched_getaffinity(0))
    if len(own) < 2:
        pytest.skip("one core: nothing narrower to pin an engine to")
    monkeypatch.setenv("PYTHONPATH", str(HERE))
    for tag, cores, seen in (("a-0", own[-1:], own[-1:]), ("b-0", None, own)):
        w = driver.Worker(tag, {"report_cores": True}, tmp_path, tmp_path, "fake_bench_worker", cores)
        w.stop()
        assert w.ready["cores"] == {"own": seen, "child": seen}
    assert sorted(os.sched_getaffinity(0)) == own  # the driver's own cores untouched


def test_an_engine_that_dies_is_reported_with_its_log_and_the_rounds_before_it_kept(tmp_path, sites):
    p = plan(tmp_path, sites, experiment="nospec", layout="sequential", extra={"die_at_round": 3})
    with pytest.raises(BackportError, match="engine a-0 ended .exit 1.: CUDA error: an illegal memory access"):
        go(p)
    lines = (p.out / "progress.jsonl").read_text().splitlines()
    assert len(lines) == 1  # the warm-up, then one timed round, then the crash


def test_plans_that_cannot_run_are_refused_before_any_engine(tmp_path, sites):
    with pytest.raises(UsageError, match="needs --site p65=DIR"):
        go(plan(tmp_path, {"fix": sites["fix"]}, experiment="tq-mtp"))
    other = site(tmp_path / "other", "0.27.0")
    with pytest.raises(UsageError, match="one release"):
        go(plan(tmp_path, {"raw": sites["raw"], "fix": other}, experiment="nospec"))
    with pytest.raises(UsageError, match="not one of the levels"):
        go(plan(tmp_path, sites, profile=64))
    assert not (tmp_path / "run").exists()


def test_a_run_directory_holds_one_experiment(tmp_path, sites):
    go(plan(tmp_path, sites, pairs=2))
    with pytest.raises(UsageError, match="holds a run of ngram-90"):
        go(plan(tmp_path, sites, experiment="nospec", pairs=4))


FAKE_VLLM = """
import json, os, sys, time
from types import SimpleNamespace

__version__ = "0.26.0"


class SamplingParams:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class LLM:
    def __init__(self, **kw):
        from vllm.v1.spec_decode.ngram_proposer import NgramProposer

        print("INFO a line vLLM prints to stdout")
        self.kw = kw
        with open(os.environ["FAKE_VLLM_RECORD"], "a") as f:
            f.write(json.dumps({"kwargs": kw, "scripted": NgramProposer.batch_propose is not None}) + "\\n")

    def collective_rpc(self, method):
        # one worker, whose model has a head and a norm, as vLLM calls a callable: with the worker
        class Param:
            def __init__(self):
                self.data, self.zeroed = self, False

            def zero_(self):
                self.zeroed = True

        params = {"lm_head.weight": Param(), "model.norm.weight": Param(), "mtp.lm_head.weight": Param()}
        modules = [(name.rsplit(".", 1)[0], SimpleNamespace(weight=w)) for name, w in params.items()]
        target = SimpleNamespace(named_modules=lambda remove_duplicate=True: iter([("", None), *modules[:2]]))
        mtp = SimpleNamespace(named_modules=lambda remove_duplicate=True: iter([("lm_head", modules[2][1])]))
        drafter = SimpleNamespace(model=mtp) if self.kw.get("speculative_config") else None
        found = method(SimpleNamespace(model_runner=SimpleNamespace(model=target, drafter=drafter)))
        with open(os.environ["FAKE_VLLM_RECORD"], "a") as f:
            f.write(json.dumps({"zeroed": {k: v.zeroed for k, v in params.items()}}) + "\\n")
        return [found]

    def generate(self, batch, params, use_tqdm=False):
        time.sleep(0.02 * params.max_tokens)  # a full generate well past its first token
        return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[5] * params.max_tokens)]) for _ in batch]

    def get_metrics(self):
        return []

    def sleep(self, level=1):
        print("sleeping")

    def wake_up(self):
        pass
"""


def fake_vllm_site(tmp_path, monkeypatch, version: str) -> tuple[Path, Path]:
    """A fix site holding the stand-in vllm package (FAKE_VLLM) that the real worker imports, and
    the file where its engines record themselves."""
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("FAKE_VLLM_RECORD", str(record))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    fix = site(tmp_path / "fix", version)
    pkg = fix / "vllm"
    (pkg / "v1/spec_decode").mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_VLLM)
    (pkg / "v1/__init__.py").write_text("")
    (pkg / "v1/spec_decode/__init__.py").write_text("")
    (pkg / "v1/spec_decode/ngram_proposer.py").write_text("class NgramProposer:\n    batch_propose = None\n")
    return record, fix


def test_the_real_worker_speaks_to_the_driver_through_vllms_prints(tmp_path, monkeypatch):
    """bench.worker itself, on a stand-in vllm package in each site: the reply channel survives
    what vLLM prints, the engine arguments are the benchmark's, the scripted drafter is installed
    for the ngram arm only."""
    record, fix = fake_vllm_site(tmp_path, monkeypatch, "0.26.0")
    pkg = fix / "vllm"
    # a release from before 0.27.0: Qwen3.5 only as the multimodal class
    (pkg / "model_executor/models").mkdir(parents=True)
    (pkg / "model_executor/__init__.py").write_text("")
    (pkg / "model_executor/models/__init__.py").write_text(
        "class ModelRegistry:\n    get_supported_archs = staticmethod(lambda: ['Qwen3_5ForConditionalGeneration'])\n"
    )
    (pkg / "engine").mkdir()
    (pkg / "engine/__init__.py").write_text("")
    (pkg / "engine/arg_utils.py").write_text(
        "import dataclasses\n@dataclasses.dataclass\nclass EngineArgs:\n    language_model_only: bool = False\n"
    )
    p = plan(tmp_path, {"fix": fix}, pairs=2, levels=(1, 2), max_tokens=9)
    result = driver.run(p, lambda m: None, lambda: {}, lambda: {"gpu": "Fake", "date": "2026-11-25"})
    assert result["pairs"] == 2 and {c["concurrency"] for c in result["comparisons"]} == {1, 2}
    engines = [json.loads(x) for x in record.read_text().splitlines()]
    a, b = engines
    assert (a["scripted"], b["scripted"]) == (False, True)
    for e in engines:
        kw = e["kwargs"]
        assert kw["load_format"] == "dummy" and kw["enable_sleep_mode"] is True
        assert kw["enable_prefix_caching"] is False and "compilation_config" not in kw
        assert kw["kv_cache_memory_bytes"] == 10 * 2**30 and kw["max_num_seqs"] == 2
        assert kw["language_model_only"] is True  # the multimodal layout, text model alone
    assert "speculative_config" not in a["kwargs"] and b["kwargs"]["speculative_config"]["method"] == "ngram"
    assert "INFO a line vLLM prints" in (p.out / "a-0.log").read_text()
    config = json.loads((p.out / "model/config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"]
    assert config["vision_config"]["out_hidden_size"] == config["text_config"]["hidden_size"] == 4096


def test_qwen3_5_shapes_take_the_layout_the_sites_vllm_registers(tmp_path, sites):
    go(plan(tmp_path, sites, pairs=1, out=tmp_path / "new"), registered={"Qwen3_5ForCausalLM"})
    assert json.loads((tmp_path / "new/model/config.json").read_text())["architectures"] == ["Qwen3_5ForCausalLM"]
    assert "text_only" not in json.loads((tmp_path / "new/a-0.spec.json").read_text())
    go(plan(tmp_path, sites, pairs=1, out=tmp_path / "old"), registered={"Qwen3_5ForConditionalGeneration"})
    config = json.loads((tmp_path / "old/model/config.json").read_text())
    assert config["architectures"] == ["Qwen3_5ForConditionalGeneration"] and "vision_config" in config
    assert all(json.loads((tmp_path / f"old/{e}-0.spec.json").read_text())["text_only"] for e in "ab")
    # Qwen3-Next has no multimodal twin: its sites are not asked
    go(plan(tmp_path, sites, pairs=1, out=tmp_path / "next", shape="qwen3_next-80b-e128"), registered=None)
    assert json.loads((tmp_path / "next/model/config.json").read_text())["architectures"] == ["Qwen3NextForCausalLM"]


def test_a_site_whose_vllm_cannot_list_its_models_stops_the_run_before_anything_is_written(tmp_path, sites):
    # the site's own vllm shadows any installed in the test's Python, as it does for the engines
    (sites["raw"] / "vllm").mkdir()
    (sites["raw"] / "vllm/__init__.py").write_text("raise ImportError('a vLLM that does not import')\n")
    with pytest.raises(BackportError, match="does not list its models: ImportError: a vLLM that does not import"):
        driver.run(plan(tmp_path, sites, experiment="nospec"), lambda m: None, lambda: {}, lambda: {})
    assert not (tmp_path / "run").exists()


def test_a_given_multimodal_config_starts_text_only_and_a_finished_run_asks_no_site(tmp_path, sites):
    own = tmp_path / "config.json"
    own.write_text(
        json.dumps(
            {
                "architectures": ["Qwen3_5ForConditionalGeneration"],
                "model_type": "qwen3_5",
                "text_config": {"vocab_size": 5000},
            }
        )
    )
    p = plan(tmp_path, sites, pairs=1, config=own)
    go(p, registered=None)  # a config of the checkpoint's own: no site is asked
    assert all(json.loads((p.out / f"{e}-0.spec.json").read_text())["text_only"] for e in "ab")
    written = (p.out / "model/config.json").read_text()
    go(plan(tmp_path, sites, pairs=1), registered=None)  # every pair there: nothing asked or rewritten
    assert (p.out / "model/config.json").read_text() == written and not (p.out / "a-1.spec.json").exists()


def test_mtp_100_asks_both_engines_for_constant_logits_and_only_b_for_mtp(tmp_path, sites):
    go(plan(tmp_path, sites, experiment="mtp-100", pairs=2))
    specs = {arm: json.loads((tmp_path / "run" / f"{arm}-0.spec.json").read_text()) for arm in "ab"}
    assert specs["a"]["constant_logits"] is True and specs["b"]["constant_logits"] is True
    assert "speculative" not in specs["a"] and specs["b"]["speculative"]["method"] == "mtp"
    # other experiments leave the model's logits as drawn
    go(plan(tmp_path, sites, experiment="mtp", pairs=2, out=tmp_path / "run2"))
    assert "constant_logits" not in json.loads((tmp_path / "run2" / "b-0.spec.json").read_text())


def test_fixcost_ngram_sparse_sends_both_sites_ngram_with_mostly_draft_free_steps(tmp_path, sites):
    go(plan(tmp_path, sites, experiment="fixcost-ngram-sparse", pairs=2))
    specs = {arm: json.loads((tmp_path / "run" / f"{arm}-0.spec.json").read_text()) for arm in "ab"}
    assert specs["a"]["speculative"] == specs["b"]["speculative"] and specs["b"]["speculative"]["method"] == "ngram"
    assert specs["a"]["acceptance_schedule"] == specs["b"]["acceptance_schedule"] == [[3, 3]] + [[0, 0]] * 9


def test_the_real_worker_zeroes_the_lm_head_for_constant_logits_and_says_so(tmp_path, monkeypatch):
    record, fix = fake_vllm_site(tmp_path, monkeypatch, "0.27.0")
    p = plan(tmp_path, {"fix": fix}, experiment="mtp-100", pairs=2, levels=(1,), max_tokens=9)
    driver.run(
        p,
        lambda m: None,
        lambda: {},
        lambda: {"gpu": "Fake", "date": "2026-11-28"},
        architectures=lambda where: {"Qwen3_5ForCausalLM"},
    )
    lines = [json.loads(x) for x in record.read_text().splitlines()]
    engines, zeroed = [x for x in lines if "kwargs" in x], [x["zeroed"] for x in lines if "zeroed" in x]
    # both arms: the model's head zeroed and nothing else; B's MTP head as well
    assert len(engines) == 2
    assert zeroed == [
        {"lm_head.weight": True, "model.norm.weight": False, "mtp.lm_head.weight": False},
        {"lm_head.weight": True, "model.norm.weight": False, "mtp.lm_head.weight": True},
    ]
    meta = json.loads((p.out / "run.json").read_text())
    assert [meta["instances"][0]["engines"][arm]["zeroed"] for arm in "ab"] == [
        ["model:lm_head.weight"],
        ["drafter:lm_head.weight", "model:lm_head.weight"],
    ]


def test_each_round_records_what_the_sampler_saw_while_it_was_timed(tmp_path, sites):
    made = []

    def sampler(path):
        made.append(FakeSampler(path))
        return made[-1]

    result = go(plan(tmp_path, sites, pairs=2), sampler=sampler)
    (s,) = made
    assert s.path == tmp_path / "run" / "gpu-0.csv" and s.events == ["start", "stop"]
    lines = [json.loads(x) for x in (tmp_path / "run" / "progress.jsonl").read_text().splitlines()]
    # a timed round (warm-ups are not asked): each level's full generate, then the round from its
    # start to its end, each level's window inside the round's
    asked = []
    for x in lines:
        levels = list(x["levels"].values())
        asked += [tuple(lv["decode_window"]) for lv in levels] + [(x["t0"], x["t"])]
        assert all(x["t0"] <= lv["decode_window"][0] <= lv["decode_window"][1] <= x["t"] for lv in levels)
    assert asked == s.windows and all(t0 < t1 for t0, t1 in s.windows[len(levels) :: len(levels) + 1])
    # each answer is kept where it was asked for
    kept = [g for x in lines for g in [*(lv["gpu"] for lv in x["levels"].values()), x["gpu"]]]
    assert kept == s.seen
    meta = json.loads((tmp_path / "run" / "run.json").read_text())
    assert meta["instances"][0]["gpu_samples"] == "gpu-0.csv"
    assert result["gpu_during_rounds"]["b"]["rounds"] == 2
    levels = {lv: [y["levels"][lv]["gpu"] for y in lines if y["arm"] == "b"] for lv in lines[0]["levels"]}
    for lv, seen in levels.items():
        held = sum("sw_power_cap" in g["reasons"] for g in seen)
        assert result["gpu_during_decodes"]["b"][lv]["reasons"] == ({"sw_power_cap": held} if held else {})


def test_a_run_without_a_sampler_has_no_gpu_record(tmp_path, sites):
    result = go(plan(tmp_path, sites, pairs=1))
    assert result["gpu_during_rounds"] is None and result["gpu_during_decodes"] is None


STAT = """cpu  40 0 20 900 5 0 0 7 0 0
cpu0 10 1 4 100 2 1 2 3 0 0
cpu1 30 0 16 800 3 0 0 4 0 0

intr 12345 0 0
ctxt 999
"""


def test_cpu_times_reads_each_cpus_busy_idle_and_steal_from_proc_stat(tmp_path):
    stat = tmp_path / "stat"
    stat.write_text(STAT)
    # busy: user + nice + system + irq + softirq; idle: idle + iowait; the all-CPU line left out
    assert driver.cpu_times(stat) == {0: (18, 102, 3), 1: (46, 803, 4)}


@pytest.mark.parametrize("text", [None, "", "cpu0 1 2 x 4 5 6 7 8\n", "cpu0 1 2 3\n"])
def test_cpu_times_is_none_where_proc_stat_is_missing_or_not_understood(tmp_path, text):
    stat = tmp_path / "stat"
    if text is not None:
        stat.write_text(text)
    assert driver.cpu_times(stat) is None


def test_cpu_use_gives_each_cpus_busy_and_stolen_share_between_two_readings():
    before = {0: (100, 900, 0), 1: (50, 50, 10), 2: (0, 0, 0), 7: (1, 1, 1)}
    after = {0: (150, 950, 0), 1: (60, 130, 20), 2: (0, 0, 0), 8: (1, 1, 1)}
    got = driver.cpu_use(before, after)  # 2 did nothing; 7 and 8 were read once only
    assert got == {"busy": {"0": 0.5, "1": 0.1, "2": 0.0}, "steal": {"0": 0.0, "1": 0.1, "2": 0.0}}
    # 3's idle went back (iowait may): counted as none, not as negative time
    assert driver.cpu_use({3: (10, 50, 0)}, {3: (20, 40, 0)}) == {"busy": {"3": 1.0}, "steal": {"3": 0.0}}
    assert driver.cpu_use(None, after) is None and driver.cpu_use({7: (1, 1, 1)}, {8: (1, 1, 1)}) is None


def test_each_timed_round_records_what_every_cpu_did_and_none_where_it_cannot_be_read(tmp_path, sites, monkeypatch):
    rounds = [0]  # the ticks move only while an engine runs a round: a reading beside it reads nothing
    ask = driver.Worker.ask

    def counting(self, op, **kw):
        reply = ask(self, op, **kw)
        rounds[0] += op == "round"
        return reply

    def ticks():
        n = rounds[0]
        return {0: (10 * n, 10 * n, 0), 1: (0, 30 * n, 10 * n)}  # cpu 0 half busy, cpu 1 a quarter stolen

    monkeypatch.setattr(driver.Worker, "ask", counting)
    monkeypatch.setattr(driver, "cpu_times", ticks)
    go(plan(tmp_path, sites, pairs=2, warmup=0))
    lines = [json.loads(x) for x in (tmp_path / "run" / "progress.jsonl").read_text().splitlines()]
    assert len(lines) == 4
    assert all(x["cpus"] == {"busy": {"0": 0.5, "1": 0.0}, "steal": {"0": 0.0, "1": 0.25}} for x in lines)
    monkeypatch.setattr(driver, "cpu_times", lambda: None)
    go(plan(tmp_path, sites, pairs=3, warmup=0))
    lines = [json.loads(x) for x in (tmp_path / "run" / "progress.jsonl").read_text().splitlines()]
    assert len(lines) == 6 and not any("cpus" in x for x in lines[4:])
