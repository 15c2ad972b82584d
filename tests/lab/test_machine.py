"""The GPU machine's side of the lab, run here with a fake verify: install from the store, run
proofs in slots, a memory watchdog that kills and restarts, and collect."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import subprocess
import tarfile
import time
from pathlib import Path

import pytest

from fake_wheel import wheel
from lab import machine, parts


class FakeRunner(machine.Runner):
    """Sites are folders; a verify is a Python one-liner that writes the JSON the script says."""

    script = "import json, sys; print(json.dumps({'proof': 'control fails, target passes', 'rows': []}))"

    def site(self, release, name, pristine):
        (self.home / release / name).mkdir(parents=True, exist_ok=True)
        return self.home / release / name

    def verify(self, release, name, target, control):
        return [sys.executable, "-c", self.script]


def staged(tmp_path, release="0.22.0"):
    home = tmp_path / "lab"
    w = wheel(tmp_path)
    digest = hashlib.sha256(w.read_bytes()).hexdigest()
    (home / "stage").mkdir(parents=True)
    blob = {"name": w.name, "sha256": digest, "size": w.stat().st_size, "role": "vllm"}
    (home / "stage" / f"{release}.json").write_text(
        json.dumps({"release": release, "torch": "2.11.0", "blobs": [blob]})
    )
    for p in parts.pack([(digest, w)], 300, tmp_path / "parts"):
        parts.put(p, home / "store")
    (home / "jobs.json").write_text("{}")  # what `start` leaves: collect reads it as "a run was started"
    return home


def test_a_release_installs_from_its_chunks_and_its_proofs_run_in_slots(tmp_path):
    home = staged(tmp_path)
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["gdn-ngram", "tq-mtp", "mtp"]}], slots=2, watch_mib=0)
    assert runner.run() == 0
    assert (home / "0.22.0" / "pristine" / "fakepkg" / "__init__.py").read_text() == "__version__ = VERSION = '1.0'\n"
    res = home / "results" / "0.22.0"
    for name in ("gdn-ngram", "tq-mtp", "mtp"):
        assert (res / f"{name}.rc").read_text() == "0\n"
        assert json.loads((res / f"{name}.json").read_text())["proof"] == "control fails, target passes"
    events = [json.loads(x) for x in (home / "timeline.jsonl").read_text().splitlines()]
    assert [e["event"] for e in events if e["what"] == "install"] == ["start", "end"]
    assert sum(e["event"] == "end" for e in events) == 4
    assert (home / "done").read_text() == "3 proofs, 0 exited non-zero\n"


def test_a_release_whose_parts_were_not_all_put_fails_alone_saying_why(tmp_path):
    home = staged(tmp_path)
    store = home / "store"
    for chunk in sorted((store / "chunks").iterdir())[1:2]:
        chunk.unlink()
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["gdn-ngram"]}], watch_mib=0)
    runner.run()
    assert "a part was not put" in (home / "results" / "0.22.0" / "install.err").read_text()
    assert (home / "done").read_text() == "0 proofs, 0 exited non-zero\n"
    assert any("FAILED" in line for line in machine.status_lines(home))


def test_a_repacked_dependency_installs_beside_the_releases_own_wheel(tmp_path):
    home = staged(tmp_path)
    (tmp_path / "w").mkdir()
    dep = wheel(tmp_path / "w", "fakecuda", "12.8")
    packed = tmp_path / "fakecuda.xz"
    parts.repack(dep, packed)
    digest = hashlib.sha256(packed.read_bytes()).hexdigest()
    for p in parts.pack([(digest, packed)], 300, tmp_path / "parts-dep"):
        parts.put(p, home / "store")
    spec = json.loads((home / "stage" / "0.22.0.json").read_text())
    size, was = packed.stat().st_size, hashlib.sha256(dep.read_bytes()).hexdigest()
    spec["blobs"].append({"name": dep.name, "sha256": digest, "size": size, "role": "wheel", "packed_from": was})
    (home / "stage" / "0.22.0.json").write_text(json.dumps(spec))
    assert FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run() == 0
    pristine = home / "0.22.0" / "pristine"
    assert (pristine / "fakecuda" / "__init__.py").read_text() == "__version__ = VERSION = '12.8'\n"
    assert (pristine / "fakepkg" / "__init__.py").is_file()


def test_a_damaged_repacked_dependency_fails_its_release_not_the_run(tmp_path):
    home = staged(tmp_path)
    data = b"not xz"
    digest = hashlib.sha256(data).hexdigest()
    (home / "store" / "chunks" / f"{digest}.0").write_bytes(data)
    spec = json.loads((home / "stage" / "0.22.0.json").read_text())
    spec["blobs"].append({"name": "x-1-py3-none-any.whl", "sha256": digest, "size": 6, "role": "wheel", "packed_from": "0"})
    (home / "stage" / "0.22.0.json").write_text(json.dumps(spec))
    assert FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run() == 0
    assert "not a repacked wheel" in (home / "results" / "0.22.0" / "install.err").read_text()
    assert (home / "done").read_text() == "0 proofs, 0 exited non-zero\n"


def test_a_release_s_proofs_start_together_in_the_slots(tmp_path):
    home = staged(tmp_path)
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["gdn-ngram", "mtp", "gdn-ngram-kp1"]}])
    runner.watch_mib = 0
    runner.script = "import time, json; time.sleep(0.5); print(json.dumps({'rows': []}))"
    assert runner.run() == 0
    events = [json.loads(x) for x in (home / "timeline.jsonl").read_text().splitlines()]
    at = {(e["what"], e["event"]): e["t"] for e in events if e["what"] != "install"}
    others = [at[(n, "start")] for n in ("mtp", "gdn-ngram-kp1")]
    assert max(others) < at[("gdn-ngram", "end")]  # all three at once, in 8 slots
    assert (home / "done").read_text() == "3 proofs, 0 exited non-zero\n"


def test_the_watchdog_kills_the_youngest_verify_and_it_runs_once_more(tmp_path, monkeypatch):
    home = staged(tmp_path)
    flag = tmp_path / "first-try-done"

    class Slow(FakeRunner):
        # the first try sleeps until killed; the second returns at once
        script = (
            f"import os, time, pathlib; f = pathlib.Path({str(flag)!r})\n"
            "if not f.exists(): f.write_text('x'); time.sleep(60)\n"
            "print('{\"rows\": []}')"
        )

    runner = Slow(home, [{"release": "0.22.0", "proofs": ["gdn-ngram"]}], watch_mib=100)
    low = iter([50] + [1 << 20] * 10_000)  # short of memory once, then plenty
    monkeypatch.setattr(machine, "_available_mib", lambda: 1 << 20 if not runner.running else next(low))
    monkeypatch.setattr(runner.stop, "wait", lambda s: runner.stop.is_set() or __import__("time").sleep(0.2))
    runner.run()
    events = [json.loads(x) for x in (home / "timeline.jsonl").read_text().splitlines()]
    ends = [e for e in events if e["event"] == "end" and e["what"] == "gdn-ngram"]
    assert [e["killed"] for e in ends] == [True, False] and ends[1]["rc"] == 0
    assert any(e["event"] == "killed" for e in events)


def test_collect_prints_a_line_a_proof_and_packs_the_results(tmp_path, capsys):
    home = staged(tmp_path)
    FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run()
    (home / "results" / "0.22.0" / "slow.err").write_text("Loading\rengine 40%\r")
    assert machine.collect(home, 0, tmp_path / "out") == "done"
    out = capsys.readouterr().out
    assert "0.22.0/mtp: exit 0, control fails, target passes" in out and "0.22.0/slow: running: engine 40%" in out
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        names = tar.getnames()
    assert "results/0.22.0/mtp.json" in names and "timeline.jsonl" in names


def test_collect_brings_each_engine_s_start_up_lines_back(tmp_path):
    home = staged(tmp_path)
    FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run()
    work = home / "0.22.0" / "work" / "mtp"
    work.mkdir(parents=True, exist_ok=True)
    (work / "b16-graphs-baseline.log").write_text(
        "INFO 11-29 [gpu_model_runner.py:1] Model loading took 0.05 GiB memory and 0.57 seconds\n"
        "INFO 11-29 [default_loader.py:2] Loading weights took 0.05 seconds\n"
        "INFO 11-29 [monitor.py:3] torch.compile took 20.04 s in total\n"
        "INFO 11-29 [core.py:4] init engine (profile, create kv cache, warmup model) took 136.66 s\n"
    )
    (work / "b16-graphs-mtp.log").write_text("INFO [backends.py:5] Directly load the compiled graph(s) from the cache\n")
    (work / "b16-graphs-mtp.spec.json").write_text("{}")
    assert machine.collect(home, 0, tmp_path / "out") == "done"
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        text = tar.extractfile("results/0.22.0/engines/mtp.txt").read().decode()
    assert text.splitlines() == [
        "b16-graphs-baseline: INFO 11-29 [gpu_model_runner.py:1] Model loading took 0.05 GiB memory and 0.57 seconds",
        "b16-graphs-baseline: INFO 11-29 [monitor.py:3] torch.compile took 20.04 s in total",
        "b16-graphs-baseline: INFO 11-29 [core.py:4] init engine (profile, create kv cache, warmup model) took 136.66 s",
        "b16-graphs-mtp: INFO [backends.py:5] Directly load the compiled graph(s) from the cache",
    ]


def test_a_proof_run_again_leaves_no_engine_log_of_the_run_before(tmp_path):
    home = staged(tmp_path)
    old = home / "0.22.0" / "work" / "mtp" / "b16-graphs-ngram-control.log"
    old.parent.mkdir(parents=True)
    old.write_text("INFO torch.compile took 99.0 s in total\n")
    FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run()
    assert machine.collect(home, 0, tmp_path / "out") == "done"
    assert not old.exists()
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        assert "results/0.22.0/engines/mtp.txt" not in tar.getnames()


def test_jobs_name_their_proofs_or_take_the_releases_default():
    assert machine.parse_jobs(["0.22.0:mtp,tq-mtp", "0.23.0"], {"0.23.0": ["gdn-ngram"]}) == [
        {"release": "0.22.0", "proofs": ["mtp", "tq-mtp"], "benches": []},
        {"release": "0.23.0", "proofs": ["gdn-ngram"], "benches": []},
    ]
    import pytest

    with pytest.raises(SystemExit, match="no proofs"):
        machine.parse_jobs(["0.99.0"], {})


def test_benchmarks_run_after_every_proof_alone_over_their_experiments_sites(tmp_path):
    home = staged(tmp_path)
    order = tmp_path / "order.txt"

    class Bench(FakeRunner):
        script = f"import pathlib; open({str(order)!r}, 'a').write('proof\\n'); print('{{}}')"
        built: list = []

        def site(self, release, name, pristine):
            self.built.append(name)
            return super().site(release, name, pristine)

        def bench_command(self, release, bench, out, sites):
            assert sorted(sites) == ["fix", "less-gdn-draft-free-plain"]
            return [sys.executable, "-c", f"open({str(order)!r}, 'a').write('bench\\n'); print('ran')"]

    jobs = machine.parse_jobs(["0.26.0:gdn-ngram,mtp,bench=qwen3_5-9b/dfp-ngram-sparse=30"])
    assert jobs[0]["benches"] == [{"shape": "qwen3_5-9b", "experiment": "dfp-ngram-sparse", "pairs": 30}]
    (home / "stage" / "0.22.0.json").rename(home / "stage" / "0.26.0.json")
    runner = Bench(home, jobs, slots=2, watch_mib=0)
    runner.run()
    assert order.read_text() == "proof\nproof\nbench\n"
    assert "less-gdn-draft-free-plain" in runner.built
    out = home / "results" / "0.26.0" / "bench-dfp-ngram-sparse-qwen3_5-9b"
    assert (out / "run.rc").read_text() == "0\n" and (out / "run.out").read_text() == "ran\n"
    assert (home / "done").read_text() == "2 proofs, 0 exited non-zero; 1 benchmarks, 0 exited non-zero\n"
    (out / "profile.trace.json").write_text("x" * 1000)
    (out / "engine.log").write_text("line\n" * 10)
    machine.collect(home, 0, tmp_path / "out")
    with tarfile.open(tmp_path / "out" / "results.tgz") as tar:
        names = tar.getnames()
    bench = "results/0.26.0/bench-dfp-ngram-sparse-qwen3_5-9b"
    assert f"{bench}/run.rc" in names and f"{bench}/engine.log.tail" in names
    assert f"{bench}/profile.trace.json" not in names and f"{bench}/engine.log" not in names


def test_a_bench_item_is_checked_when_it_is_read():
    import pytest

    for bad in ("bench=qwen3_5-9b", "bench=/mtp", "bench=qwen3_5-9b/mtp=1", "bench=qwen3_5-9b/mtp=x"):
        with pytest.raises(SystemExit, match="bench=SHAPE/EXPERIMENT"):
            machine.parse_jobs([f"0.26.0:{bad}"])


def test_a_control_site_that_cannot_be_built_costs_its_proofs_alone(tmp_path):
    home = staged(tmp_path)

    class NoCtl(FakeRunner):
        def site(self, release, name, pristine):
            if name == "ctl":
                raise RuntimeError("site ctl: apply.py exited 2")
            return super().site(release, name, pristine)

    NoCtl(home, [{"release": "0.22.0", "proofs": ["gdn-ngram", "tq-mtp"]}], watch_mib=0).run()
    res = home / "results" / "0.22.0"
    assert (res / "gdn-ngram.rc").read_text() == "0\n"
    assert (res / "tq-mtp.rc").read_text() == "2\n" and "site ctl not built" in (res / "tq-mtp.err").read_text()
    assert (home / "done").read_text() == "1 proofs, 0 exited non-zero\n"


def test_a_candidate_runs_as_site_at_proof_over_the_proofs_control(tmp_path):
    home = staged(tmp_path, "0.29.0")
    seen = {}

    class Cand(FakeRunner):
        def prove(self, release, name, target, control, tries=2):
            seen[name] = (target.name, control.name)
            return super().prove(release, name, target, control, tries)

    runner = Cand(home, machine.parse_jobs(["0.29.0:gdn-ngram,alt-kda-spec-consistent@kda-ngram"]), watch_mib=0)
    runner.run()
    assert seen == {
        "gdn-ngram": ("fix", "raw"),
        "alt-kda-spec-consistent@kda-ngram": ("alt-kda-spec-consistent", "raw"),
    }
    assert machine.proof_of("alt-x@gdn-ngram-b1") == "gdn-ngram-b1" and machine.target_of("gdn-ngram") == "fix"


def test_a_candidate_site_is_the_series_then_the_candidate_applied_exactly(tmp_path, monkeypatch):
    from pathlib import Path as P

    home = tmp_path / "lab"
    runner = machine.Runner(home, [], watch_mib=0)
    release = "0.29.0"
    built = home / release / "site-alt-kda-spec-consistent"

    def fake_build(rel, name, skips, pristine):
        assert skips == []  # the whole shipped series
        kda_file = built / "vllm/models/kimi_k3/nvidia/kda_metadata.py"
        kda_file.parent.mkdir(parents=True)
        kda_file.write_bytes(b"not the file the candidate was written for\n")
        return built

    monkeypatch.setattr(runner, "_build", fake_build)
    monkeypatch.chdir(P(__file__).resolve().parents[2])
    import pytest

    with pytest.raises(RuntimeError, match="site alt-kda-spec-consistent: .*kda_metadata.py"):
        runner.site(release, "alt-kda-spec-consistent", tmp_path)
    with pytest.raises(ValueError, match="no candidate for 0.26.0"):
        runner.site("0.26.0", "alt-kda-spec-consistent", tmp_path)


def test_the_libraries_a_proofs_processes_map_are_recorded_by_release(tmp_path, monkeypatch):
    """A verify (and the engines it starts, in its session) maps a site's shared object: the run
    records it, relative to the release's folder, for `lab libraries`."""
    import glob
    import shutil
    import sysconfig

    home = staged(tmp_path)
    so = home / "0.22.0" / "fix" / "nvidia" / "x" / "lib" / "libx.so.1"
    so.parent.mkdir(parents=True)
    shutil.copy(glob.glob(sysconfig.get_config_var("DESTSHARED") + "/_json*.so")[0], so)

    class Mapping(FakeRunner):
        # a child process of the verify maps the library, as an engine process would
        script = (
            "import subprocess, sys\n"
            f"subprocess.run([sys.executable, '-c', {f'import ctypes, time; ctypes.CDLL({str(so)!r}); time.sleep(2)'!r}])\n"
            "print('{\"rows\": []}')"
        )

    runner = Mapping(home, [{"release": "0.22.0", "proofs": ["gdn-ngram"]}], watch_mib=0)
    monkeypatch.setattr(runner.stop, "wait", lambda s: runner.stop.is_set() or __import__("time").sleep(0.2))
    runner.run()
    mapped = json.loads((home / "results" / "0.22.0" / "libraries.json").read_text())
    assert "fix/nvidia/x/lib/libx.so.1" in mapped


def test_libraries_are_written_while_proofs_run_and_only_when_they_grow(tmp_path, monkeypatch):
    """A run cut short by the machine's time still brings back what its proofs mapped."""
    home = staged(tmp_path)
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["gdn-ngram"]}], watch_mib=0)
    (runner.results / "0.22.0").mkdir(parents=True)
    mapped = {str(home / "0.22.0" / "fix" / "libx.so.1")}
    monkeypatch.setattr(machine, "session_pids", lambda sid: [sid])
    monkeypatch.setattr(machine, "mapped_libraries", lambda pids: set(mapped))
    runner.running["0.22.0/gdn-ngram"] = (__import__("types").SimpleNamespace(pid=7), 0.0)
    assert runner.sample_libraries() == {"0.22.0"}
    runner.write_libraries({"0.22.0"})
    out = runner.results / "0.22.0" / "libraries.json"
    assert json.loads(out.read_text()) == ["fix/libx.so.1"]
    assert runner.sample_libraries() == set()  # nothing new: nothing to write
    mapped.add("/usr/lib/libcuda.so.1")
    assert runner.sample_libraries() == {"0.22.0"}
    runner.write_libraries({"0.22.0"})
    assert json.loads(out.read_text()) == ["/usr/lib/libcuda.so.1", "fix/libx.so.1"]
    assert not list(out.parent.glob("*.tmp")) and not list(home.glob(".libraries-*"))


def test_a_libraries_write_that_fails_leaves_the_memory_watchdog_running(tmp_path, monkeypatch):
    home = staged(tmp_path)
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["gdn-ngram"]}], watch_mib=1)
    ticks = iter([False, False, True])
    monkeypatch.setattr(runner.stop, "wait", lambda s: next(ticks))
    monkeypatch.setattr(runner, "sample_libraries", lambda: {"0.22.0"})
    writes = []

    def full_disk(releases):
        writes.append(releases)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(runner, "write_libraries", full_disk)
    monkeypatch.setattr(machine, "_available_mib", lambda: 10**6)
    runner.watchdog()  # returns only once stop is set: both failed writes were survived
    assert writes == [{"0.22.0"}, {"0.22.0"}]


def test_session_pids_and_maps_read_from_proc(tmp_path):
    proc = tmp_path / "proc"
    for pid, stat, maps in (
        (10, "10 (python3) S 1 10 10 0", "7f00-7f01 r-xp 0 08:01 5 /lab/0.22.0/fix/libcudnn.so.9\n"),
        (11, "11 (VLLM::EngineCore) S 10 10 10 0", "7f00-7f01 r-xp 0 08:01 6 /lab/libnccl.so.2 (deleted)\n"),
        (12, "12 (a) b) S 1 12 12 0", "7f00-7f01 r-xp 0 08:01 7 /lab/other.so\n"),  # ")" in its name
    ):
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(stat)
        (proc / str(pid) / "maps").write_text(maps + "7f02-7f03 rw-p 0 00:00 0 [heap]\n")
    (proc / "self").mkdir()
    assert sorted(machine.session_pids(10, proc)) == [10, 11]
    assert machine.mapped_libraries([10, 11, 99], proc) == {"/lab/0.22.0/fix/libcudnn.so.9", "/lab/libnccl.so.2"}


def test_a_proof_on_a_checkpoint_the_lab_writes_writes_it_first_with_its_site(tmp_path, monkeypatch):
    from vllm_backports.verify import proofs

    home = staged(tmp_path)
    site = home / "0.22.0" / "fix"
    site.mkdir(parents=True)
    writer = "import pathlib, sys; d = pathlib.Path(sys.argv[1]); d.mkdir(parents=True)"
    (site / "fakewriter.py").write_text(writer + "; (d / 'config.json').write_text('{}')")
    monkeypatch.setitem(proofs.WRITTEN_MODELS, "tiny-kimi-k3", "fakewriter")
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["kda-ngram"]}], slots=1, watch_mib=0)
    assert runner.run() == 0
    assert (home / "0.22.0" / "models" / "tiny-kimi-k3" / "config.json").is_file()
    assert (home / "results" / "0.22.0" / "kda-ngram.rc").read_text() == "0\n"
    # verify --model is handed that folder
    cmd = machine.Runner.verify(runner, "0.22.0", "kda-ngram", site, site)
    assert cmd[cmd.index("--model") + 1] == str(home / "0.22.0" / "models" / "tiny-kimi-k3")


def test_a_checkpoint_that_cannot_be_written_fails_its_proof_saying_so(tmp_path, monkeypatch):
    from vllm_backports.verify import proofs

    home = staged(tmp_path)
    monkeypatch.setitem(proofs.WRITTEN_MODELS, "tiny-kimi-k3", "no_such_writer_module")
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["kda-ngram"]}], slots=1, watch_mib=0)
    runner.run()
    assert (home / "done").read_text() == "1 proofs, 1 exited non-zero\n"
    res = home / "results" / "0.22.0"
    assert (res / "kda-ngram.rc").read_text() == "1\n"
    assert "writing its --model exited 1" in (res / "kda-ngram.err").read_text()
    assert "No module named no_such_writer_module" in (res / "kda-ngram.model.log").read_text()


def start_here(tmp_path, monkeypatch) -> tuple[Path, Path, list]:
    """A checkout (the real catalogue) with an empty .lab/stage as the working directory, a lab
    home, and `detach` recording what `start` would run: (source, home, started)."""
    root = Path(__file__).resolve().parents[2]
    source = tmp_path / "src"
    (source / ".lab" / "stage").mkdir(parents=True)
    for name in ("versions.toml", "backports"):
        (source / name).symlink_to(root / name)
    monkeypatch.setattr(machine, "TOOL", ())
    started: list = []
    monkeypatch.setattr(machine, "detach", lambda cmd, cwd, log, env: started.append(cmd))
    home = tmp_path / "home"
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_HOME", str(home))
    monkeypatch.chdir(source)
    return source, home, started


def test_start_writes_the_jobs_and_detaches_the_run(tmp_path, monkeypatch):
    source, home, started = start_here(tmp_path, monkeypatch)
    (source / ".lab" / "stage" / "0.22.0.json").write_text("{}")
    machine.main(["start", "--slots", "3", "0.22.0:mtp"])
    spec = json.loads((home / "jobs.json").read_text())
    assert spec["slots"] == 3 and spec["jobs"][0]["proofs"] == ["mtp"]
    assert started == [[sys.executable, "-m", "lab.machine", "run"]]


def test_start_names_the_parts_a_bare_machine_never_got_and_starts_nothing(tmp_path, monkeypatch):
    """A machine given back between two `put` calls keeps nothing: the parts put before it are
    gone, and every install of the run would fail at once."""
    source, home, started = start_here(tmp_path, monkeypatch)
    w = wheel(tmp_path)
    digest = hashlib.sha256(w.read_bytes()).hexdigest()
    blob = {"name": w.name, "sha256": digest, "size": w.stat().st_size, "role": "vllm"}
    (source / ".lab" / "stage" / "0.22.0.json").write_text(json.dumps({"release": "0.22.0", "blobs": [blob]}))
    packed = parts.pack([(digest, w)], 300, source / ".lab" / "parts")
    assert len(packed) > 2
    (source / ".lab" / "stage" / "parts.json").write_text(json.dumps(parts.index(packed, source)))
    for p in packed[1:]:  # p000 went to a machine given back since
        parts.put(p, home / "store")
    with pytest.raises(SystemExit) as exc:
        machine.main(["start", "0.22.0:mtp"])
    assert str(exc.value) == "start: parts not on this machine: .lab/parts/p000 (put them again, then start)"
    assert not started and not (home / "jobs.json").exists()  # collect: nothing was started
    parts.put(packed[0], home / "store")
    machine.main(["start", "0.22.0:mtp"])
    assert started and (home / "jobs.json").is_file()


def test_start_refuses_a_tp2_proof_on_one_gpu_and_starts_nothing(tmp_path, monkeypatch):
    """Its engine would die at start, minutes into the run, beside proofs that pass."""
    source, home, started = start_here(tmp_path, monkeypatch)
    (source / ".lab" / "stage" / "0.27.0.json").write_text("{}")
    home.mkdir()
    for stale in ("done", "jobs.json", "timeline.jsonl"):  # the last run's
        (home / stale).write_text("{}")
    monkeypatch.setattr(machine, "_gpu_count", lambda: 1)
    with pytest.raises(SystemExit) as exc:
        machine.main(["start", "0.27.0:tq-mtp,tq-mtp-tp2"])
    assert str(exc.value) == "start: 0.27.0:tq-mtp-tp2: needs 2 GPUs, this machine has 1 (ask for a kind with 2)"
    # nothing started, and collect does not report the last run as this one's
    assert not started and not any((home / n).exists() for n in ("done", "jobs.json", "timeline.jsonl"))
    monkeypatch.setattr(machine, "_gpu_count", lambda: 2)
    machine.main(["start", "0.27.0:tq-mtp,tq-mtp-tp2"])
    assert started and (home / "jobs.json").is_file()


def test_start_asks_nvidia_smi_nothing_for_tp1_proofs(tmp_path, monkeypatch):
    source, home, started = start_here(tmp_path, monkeypatch)
    (source / ".lab" / "stage" / "0.27.0.json").write_text("{}")
    monkeypatch.setattr(machine, "_gpu_count", lambda: pytest.fail("counted GPUs for TP=1 proofs"))
    machine.main(["start", "0.27.0:tq-mtp"])
    assert started


def test_gpu_count_reads_nvidia_smis_list(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        "#!/bin/sh\n[ \"$1\" = -L ] || exit 9\n"
        "echo 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-a)'\n"
        "echo '  MIG 1g.10gb Device 0: (UUID: MIG-b)'\n"
        "echo 'GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-c)'\n"
    )
    smi.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert machine._gpu_count() == 2
    # nvidia-smi lists every GPU whatever CUDA_VISIBLE_DEVICES says; a verify sees only those named
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert machine._gpu_count() == 1
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert machine._gpu_count() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2,3")
    assert machine._gpu_count() == 2
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert machine._gpu_count() == 0


def test_the_gpus_step_exits_in_one_line_without_the_gpus(monkeypatch):
    monkeypatch.setattr(machine, "_gpu_count", lambda: 1)
    with pytest.raises(SystemExit) as exc:
        machine.main(["gpus", "2"])
    assert str(exc.value) == "gpus: needs 2 GPUs, this machine has 1 (ask for a kind with 2)"
    monkeypatch.setattr(machine, "_gpu_count", lambda: 2)
    assert not machine.main(["gpus", "2"])


def fi_staged(tmp_path, fi_wheels, release="0.26.0", module="gdn_prefill_sm90"):
    """staged(), and a FlashInfer set in the release's stage: `fi_wheels` and, unless `module` is
    None, that module pre-built."""
    import io

    home = staged(tmp_path, release)
    aot = tmp_path / f"fi-aot-{module}-sm90a.tar.xz"
    with tarfile.open(aot, "w:xz") as tar:
        info = tarfile.TarInfo(f"flashinfer/data/aot/{module}/{module}.so")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"elf"))
    blobs = []
    for path, role in [*((w, "flashinfer") for w in fi_wheels), *([(aot, "fi-aot")] if module else [])]:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        blobs.append({"name": path.name, "sha256": digest, "size": path.stat().st_size, "role": role})
        for p in parts.pack([(digest, path)], 1 << 20, tmp_path / "fi-parts"):
            parts.put(p, home / "store")
    stage_json = home / "stage" / f"{release}.json"
    stage_json.write_text(json.dumps({**json.loads(stage_json.read_text()), "flashinfer": blobs}))
    return home


GDN_PREFILL = {"flashinfer/gdn_prefill.py": ""}  # what the import check after the install imports


def test_a_flashinfer_set_that_does_not_import_fails_its_proofs_alone_saying_where(tmp_path):
    (tmp_path / "w").mkdir()
    home = fi_staged(tmp_path, [wheel(tmp_path / "w", "flashinfer", "0.6.14")])  # no gdn_prefill
    jobs = [{"release": "0.26.0", "proofs": ["gdn-ngram", "gdn-ngram-flashinfer"]}]
    assert FakeRunner(home, jobs, slots=2, watch_mib=0).run() == 0
    res = home / "results" / "0.26.0"
    assert (res / "gdn-ngram.rc").read_text() == "0\n"
    assert (res / "gdn-ngram-flashinfer.rc").read_text() == "2\n"
    assert "FlashInfer does not import from it (results/0.26.0/fi-site.log)" in (
        res / "gdn-ngram-flashinfer.err"
    ).read_text()
    assert "No module named 'flashinfer.gdn_prefill'" in (res / "fi-site.log").read_text()


class PathRunner(FakeRunner):
    """Each verify says the Python path it was given."""

    script = "import json, os; print(json.dumps({'proof': os.environ['PYTHONPATH'], 'rows': []}))"


def test_flashinfer_goes_into_a_site_of_its_own_on_the_path_of_flashinfer_proofs_only(tmp_path):
    (tmp_path / "w").mkdir()
    home = fi_staged(tmp_path, [wheel(tmp_path / "w", "flashinfer", "0.6.14", extra=GDN_PREFILL)])
    jobs = [{"release": "0.26.0", "proofs": ["gdn-ngram", "gdn-ngram-flashinfer"]}]
    assert PathRunner(home, jobs, slots=2, watch_mib=0).run() == 0
    fi = home / "0.26.0" / "fi-site"
    assert (fi / "flashinfer" / "__init__.py").is_file()
    assert (fi / "flashinfer/data/aot/gdn_prefill_sm90/gdn_prefill_sm90.so").read_bytes() == b"elf"
    assert not (home / "0.26.0" / "pristine" / "flashinfer").exists()  # the release's sites stay without it
    res = home / "results" / "0.26.0"
    paths = {n: json.loads((res / f"{n}.json").read_text())["proof"].split(":") for n in jobs[0]["proofs"]}
    assert paths["gdn-ngram"] == [str(home / "0.26.0" / "fix")]
    assert paths["gdn-ngram-flashinfer"] == [str(home / "0.26.0" / "fix"), str(fi)]
    assert (home / "done").read_text() == "2 proofs, 0 exited non-zero\n"


class OverlapRunner(FakeRunner):
    """Each verify marks its start in a folder, waits up to 3 s for another to start, says how
    many had started and not ended, holds 1 s (the other's count, taken as it starts, sees this
    one running) and marks its end."""

    script = (
        "import json, os, pathlib, time; d = pathlib.Path(os.environ['RUNNING']); pid = os.getpid()\n"
        "(d / f'start-{pid}').touch(); end = time.time() + 3\n"
        "count = lambda kind: len(list(d.glob(kind + '-*')))\n"
        "while count('start') < 2 and time.time() < end: time.sleep(0.05)\n"
        "seen = count('start') - count('end'); time.sleep(1); (d / f'end-{pid}').touch()\n"
        "print(json.dumps({'proof': seen, 'rows': []}))"
    )


@pytest.mark.parametrize(
    "module, seen", [("gdn_prefill_sm90", [2, 2]), (None, [1, 1]), ("sampling", [1, 1])]
)
def test_flashinfer_proofs_run_side_by_side_only_where_their_module_is_pre_built(tmp_path, monkeypatch, module, seen):
    """Where the GDN prefill is not pre-built FlashInfer builds it at engine start, and those
    proofs take turns; another module pre-built (0.7.x's sampling) changes nothing."""
    (tmp_path / "w").mkdir()
    home = fi_staged(tmp_path, [wheel(tmp_path / "w", "flashinfer", "0.6.4", extra=GDN_PREFILL)], "0.17.0", module)
    (tmp_path / "running").mkdir()
    monkeypatch.setenv("RUNNING", str(tmp_path / "running"))
    jobs = [{"release": "0.17.0", "proofs": ["gdn-ngram-flashinfer", "mtp-flashinfer"]}]
    assert OverlapRunner(home, jobs, slots=2, watch_mib=0).run() == 0
    assert machine.prebuilt_fi(home / "0.17.0") is (module == "gdn_prefill_sm90")
    res = home / "results" / "0.17.0"
    assert [json.loads((res / f"{n}.json").read_text())["proof"] for n in jobs[0]["proofs"]] == seen


def test_a_proof_waiting_for_its_turn_leaves_its_slot_to_the_others(tmp_path, monkeypatch):
    """Two FlashInfer proofs that take turns and one other, in two slots: the other runs beside
    the first FlashInfer proof, not after the second stops waiting."""
    (tmp_path / "w").mkdir()
    home = fi_staged(tmp_path, [wheel(tmp_path / "w", "flashinfer", "0.6.4", extra=GDN_PREFILL)], "0.17.0", None)
    (tmp_path / "running").mkdir()
    monkeypatch.setenv("RUNNING", str(tmp_path / "running"))
    jobs = [{"release": "0.17.0", "proofs": ["gdn-ngram-flashinfer", "mtp-flashinfer", "gdn-ngram"]}]
    assert OverlapRunner(home, jobs, slots=2, watch_mib=0).run() == 0
    res = home / "results" / "0.17.0"
    seen = {n: json.loads((res / f"{n}.json").read_text())["proof"] for n in jobs[0]["proofs"]}
    assert seen["gdn-ngram-flashinfer"] == seen["gdn-ngram"] == 2
    assert (home / "done").read_text() == "3 proofs, 0 exited non-zero\n"


def test_a_cutlass_dsl_without_a_cuda_toolkit_flavor_is_left_off_flashinfers_path(tmp_path):
    (tmp_path / "w").mkdir()
    dsl = "nvidia_cutlass_dsl/python_packages"
    cutlass = wheel(
        tmp_path / "w",
        "nvidia_cutlass_dsl",
        "4.8.1",
        extra={
            "nvidia_cutlass_dsl.pth": dsl + "\n",
            f"{dsl}/cutlass/__init__.py": "raise RuntimeError('No CTK flavor found')\n",
        },
    )
    home = fi_staged(tmp_path, [wheel(tmp_path / "w", "flashinfer", "0.6.8.post1", extra=GDN_PREFILL), cutlass], "0.20.0")
    PathRunner(home, [{"release": "0.20.0", "proofs": ["gdn-ngram-flashinfer"]}], watch_mib=0).run()
    assert (home / "0.20.0" / "fi-off" / "nvidia_cutlass_dsl.pth").is_file()
    got = json.loads((home / "results" / "0.20.0" / "gdn-ngram-flashinfer.json").read_text())["proof"]
    assert got == f"{home / '0.20.0' / 'fix'}:{home / '0.20.0' / 'fi-site'}"  # no dsl_packages dir


def test_a_flashinfer_set_that_does_not_install_costs_its_proofs_alone(tmp_path):
    (tmp_path / "w").mkdir()
    broken = tmp_path / "w" / "flashinfer-0.6.14-py3-none-any.whl"
    broken.write_bytes(b"not a zip")
    home = fi_staged(tmp_path, [broken])
    FakeRunner(home, [{"release": "0.26.0", "proofs": ["gdn-ngram", "gdn-ngram-flashinfer"]}], watch_mib=0).run()
    res = home / "results" / "0.26.0"
    assert (res / "gdn-ngram.rc").read_text() == "0\n"
    assert (res / "gdn-ngram-flashinfer.rc").read_text() == "2\n"
    err = (res / "gdn-ngram-flashinfer.err").read_text()
    assert err.startswith("site fi-site not built: pip install exited 1: ") and err.count("\n") == 1
    assert (home / "done").read_text() == "1 proofs, 0 exited non-zero\n"


def test_a_stage_without_flashinfer_fails_a_flashinfer_proof_saying_how_to_stage_it(tmp_path):
    home = staged(tmp_path, "0.26.0")
    FakeRunner(home, [{"release": "0.26.0", "proofs": ["gdn-ngram-flashinfer"]}], watch_mib=0).run()
    res = home / "results" / "0.26.0"
    assert (res / "gdn-ngram-flashinfer.rc").read_text() == "2\n"
    assert "its stage has no FlashInfer (python -m lab plan" in (res / "gdn-ngram-flashinfer.err").read_text()


def _two_releases(tmp_path):
    home = staged(tmp_path, "0.22.0")
    stage = json.loads((home / "stage" / "0.22.0.json").read_text())
    (home / "stage" / "0.23.0.json").write_text(json.dumps({**stage, "release": "0.23.0"}))
    return home


def test_a_release_s_proofs_start_as_it_is_installed_not_after_earlier_work(tmp_path):
    import time

    home = _two_releases(tmp_path)

    class Runner(FakeRunner):
        def install(self, release):  # a later release's install takes minutes on the machine
            time.sleep(3 if release == "0.23.0" else 0)
            return super().install(release)

        def verify(self, release, name, target, control):  # 0.22.0's gdn-ngram outlasts 0.23.0's install
            s = 5 if (release, name) == ("0.22.0", "gdn-ngram") else 0
            return [sys.executable, "-c", f"import time; time.sleep({s}); print('{{\"rows\": []}}')"]

    jobs = [{"release": r, "proofs": ["gdn-ngram", "mtp"]} for r in ("0.22.0", "0.23.0")]
    assert Runner(home, jobs, watch_mib=0).run() == 0
    events = [json.loads(x) for x in (home / "timeline.jsonl").read_text().splitlines()]
    at = {(e["release"], e["what"], e["event"]): e["t"] for e in events}
    for name in ("gdn-ngram", "mtp"):
        assert at[("0.23.0", name, "start")] - at[("0.23.0", "install", "end")] < 1.5
        assert at[("0.23.0", name, "start")] < at[("0.22.0", "gdn-ngram", "end")]


def test_a_proof_that_raises_is_counted_and_the_run_still_ends(tmp_path):
    home = staged(tmp_path)

    class Raising(FakeRunner):
        def prove(self, release, name, target, control, tries=2):
            if name == "gdn-ngram":
                raise OSError("boom")
            return super().prove(release, name, target, control, tries)

    Raising(home, [{"release": "0.22.0", "proofs": ["gdn-ngram", "mtp"]}], watch_mib=0).run()
    assert (home / "results/0.22.0/mtp.rc").read_text() == "0\n"
    assert (home / "done").read_text() == "2 proofs, 1 exited non-zero\n"


def test_a_proof_name_no_table_knows_is_refused_before_anything_runs():
    with pytest.raises(SystemExit, match="0.22.0:mtp,gdn-ngarm: no proof named gdn-ngarm"):
        machine.parse_jobs(["0.22.0:mtp,gdn-ngarm"])
    with pytest.raises(SystemExit, match="no proof named nope"):
        machine.parse_jobs(["0.22.0:alt-x@nope"])
    assert machine.parse_jobs(["0.22.0:mtp,server-ngram,mtp,raw@gdn-ngram"])[0]["proofs"] == [
        "mtp",
        "server-ngram",
        "raw@gdn-ngram",
    ]


def test_collect_on_a_machine_where_nothing_started_fails_at_once(tmp_path, monkeypatch, capsys):
    # a machine given back between calls comes back bare: waiting there would spend device time
    home = tmp_path / "lab"
    (home / "store").mkdir(parents=True)  # parts put, never started
    slept = []
    monkeypatch.setattr(machine.time, "sleep", slept.append)
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_HOME", str(home))
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    assert machine.main(["collect", "--wait", "540"]) == 4
    assert slept == [] and not (tmp_path / "out").exists()
    assert "nothing was started on this machine" in capsys.readouterr().err


def test_collect_stops_waiting_when_the_run_died(tmp_path, monkeypatch, capsys):
    home = staged(tmp_path)
    (home / "results" / "0.22.0").mkdir(parents=True)
    (home / "results" / "0.22.0" / "mtp.err").write_text("engine 40%\n")
    beat = home / "heartbeat"
    beat.touch()
    stale = time.time() - machine.STALE_S - 5
    os.utime(beat, (stale, stale))  # killed a while ago: no beat since
    monkeypatch.setattr(machine.time, "sleep", lambda s: pytest.fail("waited on a run that died"))
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_HOME", str(home))
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    assert machine.main(["collect", "--wait", "540"]) == 5
    assert "0.22.0/mtp: running" in capsys.readouterr().out
    assert (tmp_path / "out" / "results.tgz").exists()


def test_collect_waits_on_a_run_that_beats(tmp_path, monkeypatch, capsys):
    home = staged(tmp_path)
    os.utime(home / "jobs.json", (0, 0))
    (home / "heartbeat").touch()
    os.utime(home / "heartbeat", (0, 0))
    slept = []
    monkeypatch.setattr(machine.time, "sleep", slept.append)
    # the clock: the deadline, the first look, the heartbeat 5 s old, then past the deadline
    monkeypatch.setattr(machine.time, "time", itertools.chain([0, 0, 5], itertools.repeat(20)).__next__)
    assert machine.collect(home, 15, tmp_path / "out") == "running"
    assert slept == [10] and "still running" in capsys.readouterr().out


def test_a_run_beats_and_a_failed_start_leaves_nothing_to_collect(tmp_path, monkeypatch):
    home = staged(tmp_path)
    FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run()
    assert (home / "heartbeat").exists() and (home / "done").exists()
    # a second start that fails (no stage of its release) must not leave the first run's done
    root = Path(__file__).resolve().parents[2]
    source = tmp_path / "src"
    source.mkdir()
    for name in ("versions.toml", "backports"):
        (source / name).symlink_to(root / name)
    monkeypatch.setattr(machine, "TOOL", ())
    monkeypatch.setattr(machine, "detach", lambda *a, **k: pytest.fail("detached without a stage"))
    monkeypatch.setenv("VLLM_BACKPORTS_LAB_HOME", str(home))
    monkeypatch.setenv("OUT", str(tmp_path / "out"))
    monkeypatch.chdir(source)
    with pytest.raises(SystemExit, match="no stage of 0.23.0"):
        machine.main(["start", "0.23.0:mtp"])
    assert machine.main(["collect", "--wait", "540"]) == 4
    assert not (home / "results").exists()


def test_releases_sharing_a_wheel_install_it_once_and_link_its_files(tmp_path):
    """Two releases of one stack: the shared wheel is installed once, each pristine install holds
    its files as links of those, and a namespace folder two wheels share holds both wheels' files."""
    home = _two_releases(tmp_path)
    (tmp_path / "w").mkdir()
    ns = {"nvidia/__init__.py": ""}
    deps = [
        wheel(tmp_path / "w", "fakecublas", "12.8", extra={**ns, "nvidia/cublas/lib/libcublas.so.12": "cublas"}),
        wheel(tmp_path / "w", "fakecudnn", "9.1", extra={**ns, "nvidia/cudnn/lib/libcudnn.so.9": "cudnn"}),
    ]
    digests = []
    for dep in deps:
        digest = hashlib.sha256(dep.read_bytes()).hexdigest()
        digests.append(digest)
        for p in parts.pack([(digest, dep)], 300, tmp_path / f"parts-{dep.name}"):
            parts.put(p, home / "store")
        blob = {"name": dep.name, "sha256": digest, "size": dep.stat().st_size, "role": "wheel"}
        for release in ("0.22.0", "0.23.0"):
            spec = json.loads((home / "stage" / f"{release}.json").read_text())
            spec["blobs"].append(blob)
            (home / "stage" / f"{release}.json").write_text(json.dumps(spec))
    pip_runs = []

    class Counting(FakeRunner):
        def _installed(self, wheel, digest):
            if not (self.home / "installed" / digest).is_dir():
                pip_runs.append(wheel.name)
            return super()._installed(wheel, digest)

    jobs = [{"release": r, "proofs": ["mtp"]} for r in ("0.22.0", "0.23.0")]
    assert Counting(home, jobs, watch_mib=0).run() == 0
    assert sorted(pip_runs) == sorted(["fakepkg-1.0-py3-none-any.whl", *(d.name for d in deps)])  # once each
    one, two = (home / r / "pristine" for r in ("0.22.0", "0.23.0"))
    for rel in ("nvidia/cublas/lib/libcublas.so.12", "nvidia/cudnn/lib/libcudnn.so.9", "fakepkg/__init__.py"):
        assert (one / rel).stat().st_ino == (two / rel).stat().st_ino
        assert (one / rel).stat().st_nlink >= 3  # installed/, and both releases
    assert (one / "nvidia/cublas/lib/libcublas.so.12").read_text() == "cublas"
    assert {p.name for p in (one / "nvidia").iterdir()} == {"__init__.py", "cublas", "cudnn"}
    assert (one / "fakecudnn-9.1.dist-info" / "RECORD").is_file()
    assert not list((home / "installed").glob("*.tmp"))  # every install ended in its rename


def test_merge_trees_links_files_merges_folders_and_refuses_a_path_held_twice_differently(tmp_path):
    a, b, c, dest = tmp_path / "a", tmp_path / "b", tmp_path / "c", tmp_path / "dest"
    for src in (a, b, c):
        (src / "pkg").mkdir(parents=True)
        (src / "pkg" / "__init__.py").write_text("")  # the same bytes in each: one file
        (src / "pkg" / f"only-{src.name}.py").write_text(src.name)
    machine.merge_trees([("a.whl", a), ("b.whl", b)], dest)
    assert sorted(p.name for p in (dest / "pkg").iterdir()) == ["__init__.py", "only-a.py", "only-b.py"]
    assert (dest / "pkg" / "only-a.py").stat().st_ino == (a / "pkg" / "only-a.py").stat().st_ino
    (c / "pkg" / "only-a.py").write_text("not a's")
    with pytest.raises(ValueError, match=r"^pkg/only-a.py: a.whl and c.whl hold it with different bytes$"):
        machine.merge_trees([("a.whl", a), ("c.whl", c)], tmp_path / "dest2")


def test_two_wheels_of_a_stage_that_disagree_on_a_file_fail_their_release_saying_which(tmp_path):
    home = staged(tmp_path)
    (tmp_path / "w").mkdir()
    dep = wheel(tmp_path / "w", "fakeother", "1.0", extra={"fakepkg/__init__.py": "other = 1\n"})
    digest = hashlib.sha256(dep.read_bytes()).hexdigest()
    for p in parts.pack([(digest, dep)], 300, tmp_path / "parts-dep"):
        parts.put(p, home / "store")
    spec = json.loads((home / "stage" / "0.22.0.json").read_text())
    spec["blobs"].append({"name": dep.name, "sha256": digest, "size": dep.stat().st_size, "role": "wheel"})
    (home / "stage" / "0.22.0.json").write_text(json.dumps(spec))
    FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run()
    err = (home / "results" / "0.22.0" / "install.err").read_text()
    assert "fakepkg/__init__.py: fakepkg-1.0-py3-none-any.whl and fakeother-1.0-py3-none-any.whl" in err


def test_a_stale_folder_of_an_attempt_before_is_never_installed_into(tmp_path, monkeypatch):
    """pip --target into a folder that holds a package skips it and exits 0: an install must go
    into a folder of its own, whatever an earlier attempt left."""
    home = staged(tmp_path)
    digest = json.loads((home / "stage" / "0.22.0.json").read_text())["blobs"][0]["sha256"]
    stale = home / "installed" / f"{digest}.tmp" / "fakepkg"
    stale.mkdir(parents=True)
    (stale / "half.py").write_text("")
    monkeypatch.setattr(machine.shutil, "rmtree", lambda *a, **k: None)  # a removal that failed
    assert FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run() == 0
    pkg = home / "0.22.0" / "pristine" / "fakepkg"
    assert (pkg / "__init__.py").read_text() == "__version__ = VERSION = '1.0'\n" and not (pkg / "half.py").exists()


def test_an_install_that_pip_refuses_leaves_no_installed_folder_to_reuse(tmp_path, monkeypatch):
    home = staged(tmp_path)
    runner = FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0)
    real = subprocess.run

    def failing(cmd, *a, **k):
        if "--target" in cmd:
            target = Path(cmd[cmd.index("--target") + 1])
            target.mkdir(parents=True)
            (target / "half").write_text("")  # pip died partway
            raise subprocess.CalledProcessError(1, cmd)
        return real(cmd, *a, **k)

    monkeypatch.setattr(machine.subprocess, "run", failing)
    runner.run()
    assert (home / "results" / "0.22.0" / "install.err").is_file()
    assert not any(p.is_dir() and not p.name.endswith(".tmp") for p in (home / "installed").iterdir())
    monkeypatch.setattr(machine.subprocess, "run", real)
    assert FakeRunner(home, [{"release": "0.22.0", "proofs": ["mtp"]}], watch_mib=0).run() == 0
    assert (home / "0.22.0" / "pristine" / "fakepkg" / "__init__.py").is_file()
    assert not (home / "0.22.0" / "pristine" / "half").exists()
