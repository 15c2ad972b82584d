"""lab.bench_queue, `python3 -m lab.steps bench-ab queue`: experiments run one after another from one
detached job, after the verifies on the machine have ended, each through `bench-ab start`, a
failing one not stopping the rest. benchmarks/bench_ab.py is a stand-in that records when each run
starts and ends."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("bash") is None or shutil.which("pgrep") is None,
    reason="needs bash and pgrep",
)

STAND_IN = """\
import os, signal, sys, time
args = sys.argv[1:]
exp, out = args[args.index("--experiment") + 1], args[args.index("--out") + 1]
trace = out + "/../trace"
with open(trace, "a") as f:
    f.write(f"start {exp} {time.time()} {' '.join(args)}\\n")
with open(out + "/gpu", "w") as f:  # the GPUs the run was given, and in which order they count
    f.write(f"{os.environ.get('CUDA_VISIBLE_DEVICES')} {os.environ.get('CUDA_DEVICE_ORDER')}")
with open(out + "/cores", "w") as f:  # the cores it may run on
    f.write(",".join(map(str, sorted(os.sched_getaffinity(0)))))
meet = os.environ.get("STAND_IN_MEET")  # runs that should overlap wait here for each other
if meet:
    open(os.path.join(meet, exp), "w").close()
    deadline = time.time() + 20
    while len(os.listdir(meet)) < 2 and time.time() < deadline:
        time.sleep(0.05)
time.sleep(float(os.environ.get("STAND_IN_SECONDS", "0.5")))
with open(trace, "a") as f:
    f.write(f"end {exp} {time.time()}\\n")
if exp == "ngram-50":  # killed with its wrapper: no status written
    os.kill(os.getppid(), signal.SIGKILL)
sys.exit(3 if exp == "ngram-0" else 0)
"""
# apply.py status as the fix site answers it: the series applied, or (STAND_IN_APPLIED="") none
STATUS = """\
import json, os
print(json.dumps({"applied": [a for a in os.environ.get("STAND_IN_APPLIED", "x").split(",") if a]}))
"""


@pytest.fixture
def tree(tmp_path):
    """A working tree with the lab, a stand-in bench_ab.py and what `start` copies."""
    root = tmp_path / "tree"
    shutil.copytree(REPO / "lab", root / "lab", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "benchmarks").mkdir()
    (root / "benchmarks/bench_ab.py").write_text(STAND_IN)
    for d in ("vllm_backports", "backports"):
        (root / d).mkdir()
    (root / "apply.py").write_text(STATUS)
    (root / "versions.toml").write_text("[releases]\n")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "python3").symlink_to(sys.executable)
    rel = f"0.0.0-q{uuid.uuid4().hex[:8]}"  # `start` copies the tree to /tmp/vb-bench-REL-...
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "REL": rel,
        "OUT": str(tmp_path / "out"),
        "QUEUE_EVERY": "0.2",
        "QUEUE_LOCK": str(tmp_path / "bench-ab.lock"),
        "CHAINS_DIR": str(tmp_path / "chains"),
        "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}",
    }
    yield root, env, tmp_path / "home" / "bench-ab"
    for p in Path("/tmp").glob(f"vb-bench-{rel}-*"):
        shutil.rmtree(p, ignore_errors=True)


def steps(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lab.steps", *args], cwd=root, env=env, capture_output=True, text=True, timeout=60
    )


def wait_done(bench: Path, rel: str, seconds: float = 30, ended: str = "done") -> str:
    """The queue's log once its last line says it ENDED (done, or stopped: WHY)."""
    log = bench / f"queue-{rel}.log"
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        last = log.read_text().rstrip().splitlines()[-1:] if log.exists() else []
        if last and last[0].split(" ", 1)[-1].startswith(ended):
            return log.read_text()
        time.sleep(0.2)
    raise AssertionError(f"the queue did not finish: {log.read_text() if log.exists() else 'no log'}")


def rcs(bench: Path, env: dict, *exps: str) -> dict[str, str]:
    return {e: (bench / f"{env['REL']}-{e}-tiny/run.rc").read_text().strip() for e in exps}


def errs(bench: Path, env: dict, exp: str) -> str:
    return (bench / f"{env['REL']}-{exp}-tiny/run.err").read_text()


def trace(bench: Path) -> list[list[str]]:
    return [line.split() for line in (bench / "trace").read_text().splitlines()]


def spans(*benches: Path) -> dict[str, tuple[float, float]]:
    """Each run's start and end, by experiment, over the queues' folders."""
    out: dict[str, list[float]] = {}
    for bench in benches:
        for e in trace(bench):
            out.setdefault(e[1], []).append(float(e[2]))
    return {k: (v[0], v[1]) for k, v in out.items()}


def test_experiments_run_in_order_one_at_a_time_and_a_failure_does_not_stop_the_rest(tree):
    root, env, bench = tree
    done = steps(
        root, env, "bench-ab", "queue", "tiny", "4", "resident", "ngram-90", "ngram-0", "mtp", "--", "--x", "1"
    )
    assert done.returncode == 0, done.stderr
    assert "ngram-90 ngram-0 mtp" in done.stdout
    # queued runs are visible to poll at once: a folder each, no run.rc yet
    for e in ("ngram-90", "ngram-0", "mtp"):
        assert (bench / f"{env['REL']}-{e}-tiny").is_dir()
    wait_done(bench, env["REL"])
    events = trace(bench)
    assert [(e[0], e[1]) for e in events] == [
        ("start", "ngram-90"),
        ("end", "ngram-90"),
        ("start", "ngram-0"),
        ("end", "ngram-0"),
        ("start", "mtp"),
        ("end", "mtp"),
    ]
    # each starts after the one before it ended: never two on the GPU at once
    times = [float(e[2]) for e in events]
    assert times == sorted(times)
    start = events[0]
    assert start[start.index("--shape") + 1] == "tiny" and start[start.index("--pairs") + 1] == "4"
    assert start[start.index("--layout") + 1] == "resident" and start[-2:] == ["--x", "1"]
    assert rcs(bench, env, "ngram-90", "ngram-0", "mtp") == {"ngram-90": "0", "ngram-0": "3", "mtp": "0"}


def test_an_experiment_can_have_its_own_number_of_pairs(tree):
    root, env, bench = tree
    assert steps(root, env, "bench-ab", "queue", "tiny", "4", "resident", "tq-mtp=2", "nospec").returncode == 0
    wait_done(bench, env["REL"])
    pairs = {e[1]: e[e.index("--pairs") + 1] for e in trace(bench) if e[0] == "start"}
    assert pairs == {"tq-mtp": "2", "nospec": "4"}
    assert (bench / f"{env['REL']}-tq-mtp-tiny/run.rc").read_text().strip() == "0"


def test_one_experiment_queued_at_growing_pairs_resumes_its_run_in_one_folder(tree):
    # how a run gets new engines part way (bench_ab resumes a folder with more pairs): each
    # start waits for the one before, all in the experiment's one folder
    root, env, bench = tree
    queued = ("fixcost-ngram-sparse=2", "fixcost-ngram-sparse=4", "fixcost-ngram-sparse=6")
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", *queued).returncode == 0
    wait_done(bench, env["REL"])
    events = trace(bench)
    assert [(e[0], e[1]) for e in events] == [("start", "fixcost-ngram-sparse"), ("end", "fixcost-ngram-sparse")] * 3
    assert [e[e.index("--pairs") + 1] for e in events if e[0] == "start"] == ["2", "4", "6"]
    outs = {e[e.index("--out") + 1] for e in events if e[0] == "start"}
    assert outs == {str(bench / f"{env['REL']}-fixcost-ngram-sparse-tiny")}
    assert rcs(bench, env, "fixcost-ngram-sparse") == {"fixcost-ngram-sparse": "0"}


@pytest.mark.parametrize("token", ["tq-mtp=", "tq-mtp=0", "tq-mtp=x"])
def test_pairs_that_are_not_a_positive_number_are_refused_and_write_nothing(tree, token):
    root, env, bench = tree
    done = steps(root, env, "bench-ab", "queue", "tiny", "4", "resident", "nospec", token)
    assert done.returncode == 2 and "EXPERIMENT=PAIRS" in done.stdout
    assert not list(bench.glob(f"{env['REL']}-*")) and not (bench / f"queue-{env['REL']}.log").exists()


@pytest.mark.parametrize(
    "what",
    # a verify as bg starts it, the release's own GPU tests, an A/B run started by hand
    ["python3 apply.py verify", "python3 -m lab.steps upstream-gpu", "python3 benchmarks/bench_ab.py run"],
)
def test_the_first_run_waits_for_what_else_runs_on_the_machine(tree, tmp_path, what):
    root, env, bench = tree
    # a process that reads as WHAT to pgrep -f and says when it ended
    ended = tmp_path / "ended"
    body = f"import time; time.sleep(2); open({str(ended)!r}, 'w').write(repr(time.time()))"
    other = subprocess.Popen(["bash", "-c", f'exec -a "{what}" {sys.executable} -c "{body}"'])
    try:
        time.sleep(0.3)
        assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
        other.wait(timeout=20)
        wait_done(bench, env["REL"])
    finally:
        other.kill()
    assert float(trace(bench)[0][2]) > float(ended.read_text())


def test_queues_of_two_homes_never_run_at_once(tree, tmp_path):
    root, env, bench = tree
    other = {**env, "HOME": str(tmp_path / "home2")}
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec", "mtp").returncode == 0
    assert steps(root, other, "bench-ab", "queue", "tiny", "2", "resident", "ngram-90", "tq-mtp").returncode == 0
    wait_done(bench, env["REL"])
    wait_done(tmp_path / "home2" / "bench-ab", env["REL"])
    runs = sorted(spans(bench, tmp_path / "home2" / "bench-ab").values())
    assert len(runs) == 4
    assert all(a[1] <= b[0] for a, b in zip(runs, runs[1:], strict=False))  # each ends before the next starts


def test_a_running_chain_holds_the_queue_until_its_marker_goes(tree, tmp_path):
    root, env, bench = tree
    chains = tmp_path / "chains"
    chains.mkdir()
    (chains / "_root_h9").touch()  # as `chain` marks itself before its call returns, no pid yet
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    time.sleep(1.5)
    assert not (bench / "trace").exists()
    gone = time.time()
    (chains / "_root_h9").unlink()
    wait_done(bench, env["REL"])
    assert float(trace(bench)[0][2]) > gone


def test_a_marker_gone_between_two_looks_does_not_end_the_queue(tree, tmp_path, monkeypatch):
    """A chain removes its marker as it ends; the queue may have read it (no pid yet) just before
    and find it gone when it asks its age. Simulated with an os.stat that finds no such file: the
    marker is passed over, and the queue, given no marker at all, runs to its end."""
    from lab import bench_queue

    root, env, bench = tree
    chains = tmp_path / "chains"
    chains.mkdir()
    (chains / "_root_h9").touch()
    real = os.stat

    def gone(path, *args, **kwargs):
        if str(path).startswith(str(chains)):
            raise FileNotFoundError(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(bench_queue.os, "stat", gone)
    assert bench_queue.chains(chains) is False
    monkeypatch.undo()
    assert bench_queue.chains(chains) is True  # the same marker, its age read: a chain starting
    (chains / "_root_h9").unlink()
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    wait_done(bench, env["REL"], seconds=10)


def test_a_marker_whose_chain_died_does_not_hold_the_queue(tree, tmp_path):
    root, env, bench = tree
    chains = tmp_path / "chains"
    chains.mkdir()
    dead = subprocess.run(["bash", "-c", "echo $$"], capture_output=True, text=True).stdout.strip()
    (chains / "_root_h9").write_text(dead + "\n")
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    wait_done(bench, env["REL"], seconds=5)


def test_a_failed_chain_stops_the_queue_with_its_status(tree):
    root, env, bench = tree
    stage = root / f".stage-{env['REL']}"
    stage.mkdir()
    (stage / "install.sh").write_text("sleep 1; exit 7\n")
    chain = steps(root, env, "chain", "none")
    assert chain.returncode == 0, chain.stdout + chain.stderr
    marks = list(Path(env["CHAINS_DIR"]).iterdir())
    assert [m.name for m in marks] == [env["HOME"].replace("/", "_")]  # there before the call returned
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec", "mtp").returncode == 0
    log = wait_done(bench, env["REL"], ended="stopped")
    assert "the chain of" in log and "ended with exit 7" in log
    assert (Path(env["HOME"]) / "chain.rc").read_text().strip() == "7" and not marks[0].exists()
    assert rcs(bench, env, "nospec", "mtp") == {"nospec": "7", "mtp": "7"}
    assert "not run: the chain of" in errs(bench, env, "mtp") and not (bench / "trace").exists()


def test_a_fix_site_without_the_series_stops_the_queue(tree):
    root, env, bench = tree
    env = {**env, "STAND_IN_APPLIED": ""}
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    assert "carries no backport" in wait_done(bench, env["REL"], ended="stopped")
    assert rcs(bench, env, "nospec") == {"nospec": "3"} and not (bench / "trace").exists()


def test_a_run_gone_without_a_status_ends_and_the_next_one_runs(tree):
    root, env, bench = tree
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "ngram-50", "mtp").returncode == 0
    wait_done(bench, env["REL"])
    assert rcs(bench, env, "ngram-50", "mtp") == {"ngram-50": "125", "mtp": "0"}
    assert "the run ended without a status" in errs(bench, env, "ngram-50")


def test_a_second_queue_of_a_release_is_refused_while_the_first_runs(tree):
    root, env, bench = tree
    env = {**env, "STAND_IN_SECONDS": "2"}
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    time.sleep(0.5)
    second = steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "mtp")
    assert second.returncode == 2 and "still runs under" in second.stdout
    assert not (bench / f"{env['REL']}-mtp-tiny").exists()
    log = wait_done(bench, env["REL"])
    assert "nospec" in log and rcs(bench, env, "nospec") == {"nospec": "0"}
    # once it has ended, a new queue is taken
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "mtp").returncode == 0


def test_a_queue_without_an_experiment_is_refused_and_writes_nothing(tree):
    root, env, bench = tree
    done = steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "--", "--x", "1")
    assert done.returncode == 2 and "name at least one experiment" in done.stdout
    assert not (bench / f"queue-{env['REL']}.log").exists()
    assert not list(bench.glob(f"{env['REL']}-*"))


def test_queues_on_two_gpus_run_side_by_side_each_on_its_own(tree, tmp_path):
    root, env, bench = tree
    meet = tmp_path / "meet"
    meet.mkdir()
    env = {**env, "STAND_IN_MEET": str(meet)}
    other, bench2 = {**env, "HOME": str(tmp_path / "home2")}, tmp_path / "home2" / "bench-ab"
    assert steps(root, {**env, "GPU": "0"}, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    assert steps(root, {**other, "GPU": "1"}, "bench-ab", "queue", "tiny", "2", "resident", "mtp").returncode == 0
    wait_done(bench, env["REL"])
    wait_done(bench2, env["REL"])
    got = spans(bench, bench2)
    assert got["nospec"][0] < got["mtp"][1] and got["mtp"][0] < got["nospec"][1]  # they overlap
    assert (bench / f"{env['REL']}-nospec-tiny/gpu").read_text() == "0 PCI_BUS_ID"
    assert (bench2 / f"{env['REL']}-mtp-tiny/gpu").read_text() == "1 PCI_BUS_ID"


@pytest.mark.skipif(
    shutil.which("taskset") is None or len(os.sched_getaffinity(0)) < 2, reason="needs taskset and 2 cores"
)
def test_runs_on_two_gpus_each_get_their_share_of_the_cores(tree, tmp_path):
    root, env, bench = tree
    shim = tmp_path / "smi"
    shim.mkdir()
    smi = shim / "nvidia-smi"  # a host of two GPUs
    smi.write_text('#!/bin/sh\n[ "$1" = -L ] && printf "GPU 0: H200\\nGPU 1: H200\\n"\n')
    smi.chmod(0o755)
    env = {**env, "PATH": f"{shim}{os.pathsep}{env['PATH']}"}
    mine = sorted(os.sched_getaffinity(0))
    other, bench2 = {**env, "HOME": str(tmp_path / "home2")}, tmp_path / "home2" / "bench-ab"
    assert steps(root, {**env, "GPU": "0"}, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    assert steps(root, {**other, "GPU": "1"}, "bench-ab", "queue", "tiny", "2", "resident", "mtp").returncode == 0
    wait_done(bench, env["REL"])
    wait_done(bench2, env["REL"])
    share = len(mine) // 2
    assert (bench / f"{env['REL']}-nospec-tiny/cores").read_text() == ",".join(map(str, mine[:share]))
    assert (bench2 / f"{env['REL']}-mtp-tiny/cores").read_text() == ",".join(map(str, mine[share : 2 * share]))
    # without GPU=N a run keeps every core
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "ngram-90").returncode == 0
    wait_done(bench, env["REL"])
    assert (bench / f"{env['REL']}-ngram-90-tiny/cores").read_text() == ",".join(map(str, mine))


@pytest.mark.parametrize(
    ("theirs", "waits"),
    # another GPU's run does not hold the queue; one on its GPU, or on every GPU, does
    [({"CUDA_VISIBLE_DEVICES": "0"}, False), ({"CUDA_VISIBLE_DEVICES": "0,1"}, True), ({}, True)],
)
def test_a_queue_on_one_gpu_waits_only_for_what_runs_there(tree, tmp_path, theirs, waits):
    """A run the queue must not wait for outlives the whole queue (the queue ends while it still
    runs: no timing on a loaded machine can make that pass by chance); one it must wait for ends
    before the queue's run starts."""
    root, env, bench = tree
    ended = tmp_path / "ended"
    body = f"import time; time.sleep({2 if waits else 120}); open({str(ended)!r}, 'w').write(repr(time.time()))"
    mine = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    other = subprocess.Popen(
        ["bash", "-c", f'exec -a "python3 benchmarks/bench_ab.py run" {sys.executable} -c "{body}"'],
        env={**mine, **theirs},
    )
    try:
        time.sleep(0.3)
        assert steps(root, {**env, "GPU": "1"}, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
        wait_done(bench, env["REL"])
        if not waits:
            assert other.poll() is None and not ended.exists()
            return
        other.wait(timeout=20)
    finally:
        other.kill()
    assert float(trace(bench)[0][2]) > float(ended.read_text())


@pytest.mark.parametrize("gpu", ["x", "0,1", "-1"])
def test_a_gpu_that_is_not_one_index_is_refused_and_writes_nothing(tree, gpu):
    root, env, bench = tree
    done = steps(root, {**env, "GPU": gpu}, "bench-ab", "queue", "tiny", "2", "resident", "nospec")
    assert done.returncode == 2 and "give one GPU's index" in done.stdout
    assert not bench.exists() or not list(bench.glob(f"{env['REL']}-*"))


def test_poll_brings_back_each_runs_record_clock_samples_and_profile_tables_but_not_the_traces(tree, tmp_path):
    import tarfile

    root, env, bench = tree
    run = bench / f"{env['REL']}-ngram-90-tiny"
    run.mkdir(parents=True)
    kept = ("result.json", "run.json", "progress.jsonl", "run.rc", "profile-a-0-c16.txt", "clocks-1.txt", "gpu-0.csv")
    for name in kept:
        (run / name).write_text("0\n")
    (run / "profile-a-0-c16.trace.json").write_text("{}")
    (run / "a-0.log").write_text("INFO Maximum concurrency for 654 tokens per request: 75.80x\n")
    done = steps(root, env, "bench-ab", "poll", "1")
    assert done.returncode == 0, done.stderr
    assert "Maximum concurrency for 654 tokens per request: 75.80x" in done.stdout
    with tarfile.open(tmp_path / "out" / "bench-ab.tgz") as tgz:
        names = {Path(m).name for m in tgz.getnames()}
    assert {*kept, "a-0.log.tail"} <= names
    assert "profile-a-0-c16.trace.json" not in names


def test_a_queue_on_every_gpu_and_one_on_gpu_one_take_turns_even_when_started_together(tree, tmp_path):
    root, env, bench = tree
    env = {**env, "STAND_IN_SECONDS": "1.5"}
    other, bench2 = {**env, "HOME": str(tmp_path / "home2"), "GPU": "1"}, tmp_path / "home2" / "bench-ab"
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    assert steps(root, other, "bench-ab", "queue", "tiny", "2", "resident", "mtp").returncode == 0
    wait_done(bench, env["REL"])
    wait_done(bench2, env["REL"])
    runs = sorted(spans(bench, bench2).values())
    assert len(runs) == 2 and runs[0][1] <= runs[1][0]  # one ended before the other started


def test_a_run_not_yet_in_the_process_table_is_not_taken_for_one_gone(tree):
    """On a loaded machine the detached run may not have exec'd by the queue's first look, so no
    command line names it yet; the queue must wait for it, not write it off as ended without a
    status. A `pgrep` that never sees a run by its folder stands in for that look."""
    root, env, bench = tree
    env = {**env, "STAND_IN_SECONDS": "2"}
    shim = Path(env["PATH"].split(os.pathsep)[0])
    real = shutil.which("pgrep")
    (shim / "pgrep").write_text(f'#!/bin/sh\ncase "$*" in *{bench}*) exit 1;; esac\nexec {real} "$@"\n')
    (shim / "pgrep").chmod(0o755)
    assert steps(root, env, "bench-ab", "queue", "tiny", "2", "resident", "nospec").returncode == 0
    wait_done(bench, env["REL"])
    assert rcs(bench, env, "nospec") == {"nospec": "0"}, errs(bench, env, "nospec")
