"""A/B runs of benchmarks/bench_ab.py on the runbook's sites (docs/BENCHMARKS.md, "A/B runs on
models of users' sizes"):

    REL=0.28.0 python3 -m lab.steps bench-ab start EXPERIMENT SHAPE PAIRS [LAYOUT [OPTIONS...]]
    REL=0.28.0 python3 -m lab.steps bench-ab queue SHAPE PAIRS LAYOUT EXPERIMENT[=PAIRS]... [-- OPTIONS...]
    REL=0.28.0 python3 -m lab.steps bench-ab poll SECONDS [NAME...]
    REL=0.28.0 python3 -m lab.steps bench-ab profiles NAME

start: one run in a process session of its own (it outlives the call), in
$HOME/bench-ab/REL-EXPERIMENT-SHAPE; started again with more PAIRS it resumes there with new
engines. Sites: every one of lab.sites.BENCH_SITES this release has. Its wrapper's pid is in
run.pid before `start` returns, and the wrapper writes run.rc when the run ends.

queue: the experiments one after another, each as `start` runs it, from one detached job, so that
no gap between two calls leaves the GPU idle. A run needs the GPU to itself: each waits until no
chain, verify, upstream-gpu run or other A/B run is left on its GPU (queues of several HOMEs take
turns; with GPU=N, queues on other GPUs run beside it). Runs that cannot run end with a status
that says why: the chain failed, the fix site carries no backport, `start` failed, the run vanished.

poll: wait until the runs end or SECONDS pass, print each one's summary so far, and bring back
their records, progress and log tails ($OUT/bench-ab.tgz). profiles: a run's torch profiler
traces and tables ($OUT/bench-ab-profiles-NAME.tgz; run with --profile LEVEL).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

from . import sites
from .machine import detach
from .steps import PY, Ctx, Refused, rc_of

# What else needs the GPU: a verify, the release's own GPU tests, an A/B run (its wrapper too)
BUSY = re.compile(r"apply\.py verify|lab\.steps upstream-gpu|bench_ab\.py run")
CHAIN_YOUNG = 60  # seconds a chain's marker without a pid yet counts as a chain starting


def now() -> str:
    return time.strftime("%H:%M:%S")


def gpu_cores(gpu: str | None) -> list[int] | None:
    """With GPU=N, the Nth of as many equal shares of the host's cores as it has GPUs, so that
    engines starting on one GPU (they compile on every core they may) leave the cores of a
    host-bound run on another alone; None without GPU=N or on a host of one GPU."""
    if gpu is None:
        return None
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    except OSError:
        return None
    n = sum(line.startswith("GPU") for line in listed.splitlines())
    cores = sorted(os.sched_getaffinity(0))
    share = len(cores) // n if n > 1 else 0
    g = int(gpu)
    return cores[g * share : (g + 1) * share] if share and g < n else None


def start(ctx: Ctx, exp: str, shape: str, pairs: str, layout: str = "sleep", options: list[str] = ()) -> None:
    name = f"{ctx.rel}-{exp}-{shape}"
    d = ctx.home / "bench-ab" / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "run.rc").unlink(missing_ok=True)
    have = [f"--site={s}={ctx.site[s]}" for s in sites.BENCH_SITES if ctx.site[s].is_dir()]
    src = Path(f"/tmp/vb-bench-{name}")
    sites.tool_copy(src)
    with open(d / f"clocks-{int(time.time())}.txt", "w") as f:
        try:
            smi = ["nvidia-smi", "-q", "-d", "CLOCK,PERFORMANCE", *(["-i", ctx.gpu] if ctx.gpu else [])]
            subprocess.run(smi, stdout=f, stderr=subprocess.STDOUT)
        except OSError as exc:
            f.write(f"{exc}\n")
    cores = gpu_cores(ctx.gpu)
    if cores:
        with open(d / "run.err", "a") as f:
            f.write(f"cores {','.join(map(str, cores))}\n")
    run = [PY, "benchmarks/bench_ab.py", "run", "--experiment", exp, "--shape", shape, "--pairs", pairs]
    run += ["--layout", layout, "--out", str(d), *have, *options]
    wrap = [PY, "-m", "lab.bench_queue", "wrap", str(d), ",".join(map(str, cores or [])), "--", *run]
    # the wrapper's pid is written before `start` returns (a new session, not a fork of one), so a
    # queue never mistakes a run not yet exec'd for one gone
    (d / "run.pid").unlink(missing_ok=True)
    proc = detach(wrap, src)
    (d / "run.pid").write_text(f"{proc.pid}\n")
    shown = " ".join(have + list(options))
    print(f"started {name}: {exp} on {shape}, {pairs} pairs in all, layout {layout}, sites {shown}", flush=True)


def wrap(d: Path, cores: str, cmd: list[str]) -> int:
    """The run's wrapper: the run on its cores, its output in run.out and run.err, its status in
    run.rc (none when the wrapper is killed with it)."""
    if cores:
        os.sched_setaffinity(0, {int(c) for c in cores.split(",")})
    with open(d / "run.out", "a") as out, open(d / "run.err", "a") as err:
        rc = rc_of(subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err).returncode)
    (d / "run.rc").write_text(f"{rc}\n")
    return rc


def alive(pid: str) -> bool:
    """Whether process `pid` runs: a zombie whose parent has not reaped it yet counts as gone."""
    try:
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (OSError, ValueError):
        return False
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def chains(folder: Path) -> bool:
    """Whether a chain runs: a marker with a live pid, or one just made (no pid yet). A marker
    its chain removes between the looks is gone, not a fault."""
    try:
        markers = list(folder.iterdir())
    except OSError:
        return False
    for m in markers:
        try:
            pid = m.read_text().strip()
            if not pid:
                if time.time() - os.stat(m).st_mtime < CHAIN_YOUNG:
                    return True
                continue
        except OSError:
            continue
        try:
            os.kill(int(pid), 0)
            return True
        except PermissionError:
            return True
        except (OSError, ValueError):
            continue
    return False


def busy(gpu: str | None) -> bool:
    """Whether a verify, upstream-gpu run or A/B run shares this queue's GPU: with GPU=N, one whose
    CUDA_VISIBLE_DEVICES names N or is unset (it sees every GPU); else any."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            line = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if not BUSY.search(line):
            continue
        if gpu is None:
            return True
        try:
            env = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            return True  # not ours to read: it may be on any GPU
        key = b"CUDA_VISIBLE_DEVICES="
        seen = next((e[len(key) :].decode() for e in env if e.startswith(key)), "")
        if not seen or gpu in seen.split(","):
            return True
    return False


def parse_queue(args: list[str]) -> tuple[str, str, str, list[str], list[str]]:
    if len(args) < 3:
        raise Refused("bench-ab queue: SHAPE PAIRS LAYOUT EXPERIMENT...")
    shape, pairs, layout, rest = args[0], args[1], args[2], args[3:]
    cut = rest.index("--") if "--" in rest else len(rest)
    exps, options = rest[:cut], rest[cut + 1 :]
    if not exps:
        raise Refused("bench-ab queue: name at least one experiment")
    for e in exps:
        if "=" in e and not re.fullmatch(r"[1-9][0-9]*", e.partition("=")[2]):
            raise Refused(f"bench-ab queue: {e}: write EXPERIMENT=PAIRS, PAIRS a positive number")
    return shape, pairs, layout, exps, options


def queue(ctx: Ctx, args: list[str]) -> None:
    shape, pairs, layout, exps, options = parse_queue(args)
    root = ctx.home / "bench-ab"
    root.mkdir(parents=True, exist_ok=True)
    # one queue a release and HOME: a second would take the first one's folders from under it.
    # The job holds this lock (the same open file) until it ends; the runs it starts do not.
    lock = os.open(root / f"queue-{ctx.rel}.lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log = root / f"queue-{ctx.rel}.log"
        raise Refused(f"bench-ab queue: a queue of {ctx.rel} still runs under {ctx.home} ({log}): poll it") from None
    # poll counts a queued run as running: its folder exists, without run.rc
    for e in exps:
        d = root / f"{ctx.rel}-{e.partition('=')[0]}-{shape}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "run.rc").unlink(missing_ok=True)
        with open(d / "run.err", "a") as f:
            f.write(f"queued at {now()}\n")
    src = root / f"queue-{ctx.rel}"
    sites.tool_copy(src)
    job = [PY, "-m", "lab.bench_queue", "job", json.dumps([shape, pairs, layout, exps, options])]
    env = {**os.environ, "OUT": str(root / "queue-out")}
    detach(job, src, root / f"queue-{ctx.rel}.log", env=env, pass_fds=(lock,))
    print(
        f"queued on {ctx.rel}, {shape}, {pairs} pairs, layout {layout}: {' '.join(exps)}"
        + (f" with {' '.join(options)}" if options else "")
    )


def job(ctx: Ctx, shape: str, pairs: str, layout: str, exps: list[str], options: list[str]) -> int:
    """The queue's detached job (the tool's copy in $HOME/bench-ab/queue-REL is its tree)."""
    sys.stdout.reconfigure(line_buffering=True)
    every = float(os.environ.get("QUEUE_EVERY", "10"))
    root = ctx.home / "bench-ab"

    def stop(why: str, status: int) -> int:
        for e in exps:
            d = root / f"{ctx.rel}-{e.partition('=')[0]}-{shape}"
            if not (d / "run.rc").exists():
                with open(d / "run.err", "a") as f:
                    f.write(f"not run: {why}\n")
                (d / "run.rc").write_text(f"{status}\n")
        print(f"{now()} stopped: {why}")
        return status

    # one A/B run a machine, over every HOME: a queue without GPU=N holds the machine lock alone;
    # queues with GPU=N share it, each holding the lock of its GPU alone as well (taken in that
    # order by all, so no two wait on each other)
    lock = os.environ.get("QUEUE_LOCK", "/tmp/bench-ab.lock")
    machine = os.open(lock, os.O_WRONLY | os.O_CREAT, 0o644)
    mine = os.open(f"{lock}.gpu{ctx.gpu}", os.O_WRONLY | os.O_CREAT, 0o644) if ctx.gpu else None
    for item in exps:
        exp, _, own = item.partition("=")
        d = root / f"{ctx.rel}-{exp}-{shape}"
        fcntl.flock(machine, fcntl.LOCK_SH if mine is not None else fcntl.LOCK_EX)
        if mine is not None:
            fcntl.flock(mine, fcntl.LOCK_EX)
        # chains are waited for on every GPU: they install and set up with every core
        while chains(ctx.chains) or busy(ctx.gpu):
            time.sleep(every)
        try:
            rc = (ctx.home / "chain.rc").read_text().strip()
        except OSError:
            rc = "0"
        if rc != "0":
            why = f"the chain of {ctx.rel} ended with exit {rc} ({ctx.home}/chain.log)"
            return stop(why, int(rc) if rc.isdigit() else 1)
        # setup goes on past a series that did not apply: the fix site must carry it
        if not sites.applied_of(ctx.rel, ctx.site["fix"]):
            return stop(f"the fix site {ctx.site['fix']} carries no backport", 3)
        print(f"{now()} {exp}")
        try:
            start(ctx, exp, shape, own or pairs, layout, options)
        except Exception as exc:  # any failure of start is this run's, not the queue's
            with open(d / "run.err", "a") as f:
                f.write(f"not run: bench-ab start failed ({exc})\n")
            (d / "run.rc").write_text("2\n")
        while not (d / "run.rc").exists():
            # a run gone without a status (killed with its wrapper) ends here, not in a wait forever
            pid = (d / "run.pid").read_text().strip() if (d / "run.pid").exists() else ""
            if not alive(pid):
                time.sleep(1)
                if not (d / "run.rc").exists():
                    with open(d / "run.err", "a") as f:
                        f.write("the run ended without a status\n")
                    (d / "run.rc").write_text("125\n")
            time.sleep(every)
        if mine is not None:
            fcntl.flock(mine, fcntl.LOCK_UN)
        fcntl.flock(machine, fcntl.LOCK_UN)
    print(f"{now()} done")
    return 0


def poll(ctx: Ctx, args: list[str]) -> None:
    root = ctx.home / "bench-ab"
    deadline = time.monotonic() + float(args[0] if args else 500)
    names = args[1:] or sorted(p.name for p in root.glob(f"{ctx.rel}-*") if p.is_dir())
    while time.monotonic() < deadline and any(not (root / n / "run.rc").exists() for n in names):
        time.sleep(10)
    keep = []
    for n in names:
        d = root / n
        rc = (d / "run.rc").read_text().strip() if (d / "run.rc").exists() else None
        err = (d / "run.err").read_text(errors="replace").splitlines() if (d / "run.err").exists() else []
        print(f"== {n}: exit {rc}" if rc is not None else f"== {n}: running: {(err or [''])[-1]}", flush=True)
        progress = (d / "progress.jsonl").exists() and (d / "progress.jsonl").stat().st_size > 0
        if progress and (d / "run.json").exists():
            summarize = [PY, "benchmarks/bench_ab.py", "summarize", str(d)]
            done = subprocess.run(summarize, capture_output=True, text=True)
            print("\n".join((done.stdout + done.stderr).splitlines()[-20:]))
        if rc not in (None, "0"):
            print("\n".join(err[-5:]))
        # fewer requests at once than the 64 asked means the KV size is too small (--kv-cache-gib)
        concurrency = set()
        for log in sorted(d.glob("*.log")):
            lines = log.read_text(errors="replace").splitlines()
            concurrency |= {"  Maximum" + x.rsplit("Maximum", 1)[1] for x in lines if "Maximum concurrency" in x}
            log.with_name(log.name + ".tail").write_text("".join(x + "\n" for x in lines[-200:]))
        for line in sorted(concurrency):
            print(line)
        # the profiles' tables come back, their Chrome traces (tens of MiB) only through `profiles`
        for pattern in ("*.json", "*.jsonl", "*.tail", "*.txt", "gpu-*.csv", "run.*"):
            keep += [p for p in sorted(d.glob(pattern)) if not p.name.endswith(".trace.json") and p not in keep]
    with tarfile.open(ctx.out / "bench-ab.tgz", "w:gz") as tar:
        for p in keep:
            tar.add(p, arcname=str(p.relative_to(root)))


def profiles(ctx: Ctx, name: str) -> None:
    root = ctx.home / "bench-ab"
    with tarfile.open(ctx.out / f"bench-ab-profiles-{name}.tgz", "w:gz") as tar:
        for p in sorted((root / name).glob("profile-*")):
            tar.add(p, arcname=str(p.relative_to(root)))
    for p in sorted(ctx.out.iterdir()):
        print(f"{p.stat().st_size:>12} {p.name}")


def main(ctx: Ctx, args: list[str]) -> int:
    sub, rest = (args[0], args[1:]) if args else ("", [])
    if sub == "start":
        if len(rest) < 3:
            raise Refused("bench-ab start EXPERIMENT SHAPE PAIRS [LAYOUT [OPTIONS...]]")
        start(ctx, rest[0], rest[1], rest[2], rest[3] if len(rest) > 3 else "sleep", rest[4:])
    elif sub == "queue":
        queue(ctx, rest)
    elif sub == "poll":
        poll(ctx, rest)
    elif sub == "profiles":
        profiles(ctx, rest[0])
    else:
        raise Refused("bench-ab: start, queue, poll or profiles")
    return 0


if __name__ == "__main__":
    what, rest = sys.argv[1], sys.argv[2:]
    if what == "wrap":
        sys.exit(wrap(Path(rest[0]), rest[1], rest[3:]))
    sys.exit(job(Ctx.from_env(), *json.loads(rest[0])))
