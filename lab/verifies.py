"""The runbook's verifies: the proof set started detached (`proofs`, `bg`), under slots and a
memory watchdog, and read back (`poll` for one HOME, `collect` over several).

    REL=0.26.0 python3 -m lab.steps proofs [SITE@]PROOF...
    REL=0.26.0 [TARGET=raw] python3 -m lab.steps bg TAG VERIFY-OPTIONS...
    REL=0.26.0 python3 -m lab.steps poll SECONDS
    python3 -m lab.steps collect SECONDS HOME...

Slots, machine-wide, over every HOME: at most MAX_VERIFIES verifies at once (default 8), and one
FlashInfer verify at a time, its JIT builds at MAX_JOBS ninja jobs (default 4). On 2026-11-25 two
H200 machines stopped answering, and everything on them was lost, with 23 and then 11 verifies
started at once, three and four of them FlashInfer runs that JIT-build kernels with nvcc at engine
start. A verify waiting for its slot says so in its .err file. The watchdog (one a machine, the
first `bg` starts it) kills the youngest verify's processes when available memory falls under
WATCH_MIB (default 6144), its wrapper aside, which records the failing exit; /tmp/watchdog.log
says which, and collect shows it.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

from . import sites
from .machine import detach, row_cells
from .steps import PY, Ctx, rc_of

DEFAULT_PROOFS = ("gdn-ngram", "tq-mtp", "gdn-ngram-prefix", "gdn-ngram-kp1", "mtp")
WRAPPER = "lab.verifies slot-run"  # the command line of a verify's wrapper, its session's leader
VERIFY = re.compile(r"(^|/)python3[.0-9]* apply\.py verify")


def summary(path: Path) -> None:
    """A verify's JSON, a line a row."""
    try:
        d = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        print(f"{path}: no result ({exc})")
        return
    keys = ("vllm", "kv_cache", "threshold", "baseline_worst_regret", "calibrated", "passed", "proof")
    print({k: d.get(k) for k in keys})
    engine_keys = ("backports", "prefix_caching", "mamba_cache_mode", "async_scheduling", "model_runner")
    engine_keys += ("cudagraph_mode", "prefix_cache")
    for r in d.get("rows", []):
        e = r.get("engine") or {}
        cols = ("scenario", "batch", "mode", "sequences", "tokens", "errors", "bad_sequences", "worst_regret")
        cols2 = ("first_error_at", "exercised", "same_as_baseline", "tokens_per_s")
        print(
            r["scenario"],
            r.get("site", "target"),
            *(r[k] for k in cols[1:]),
            *(r[k] for k in cols2),
            r.get("start_s"),
            {k: e.get(k) for k in engine_keys},
        )
        if r.get("prefix_hit_lengths"):
            print("  prefix hits (tokens: requests):", r["prefix_hit_lengths"])
        if r.get("rounds"):
            rounds = [
                (x["errors"], x.get("accepted"), x.get("prompt_logprob_errors"), x.get("prefix_hit_lengths"))
                for x in r["rounds"]
            ]
            print("  rounds:", rounds)
        if r.get("prompt_logprobs"):
            lp = r["prompt_logprobs"]
            print("  prompt logprobs:", {k: lp.get(k) for k in ("errors", "positions", "worst_difference", "missing")})
        if r.get("accepted_counts"):
            c = r["accepted_counts"]
            keys = ("status", "why", "in_range", "min", "max", "outside", "builds")
            startup = {k: (c.get("startup") or {}).get(k) for k in ("min", "max", "outside", "builds")}
            print("  accepted counts:", {k: c.get(k) for k in keys}, "startup:", startup)
        if r.get("align_shifts"):
            print("  align shifts:", r["align_shifts"])
    if d.get("prompt_logprobs"):
        print("prompt logprobs calibration:", d["prompt_logprobs"])


def bg(ctx: Ctx, args: list[str], target: str | None = None) -> int:
    """TAG VERIFY-OPTIONS...: one verify of the fix site (TARGET=NAME: another site) in a process
    session of its own, so that it outlives the call; several share the GPU when each takes a
    fixed --kv-cache-gib."""
    tag, options = args[0], args[1:]
    target = target or os.environ.get("TARGET") or "fix"
    ctx.res.mkdir(parents=True, exist_ok=True)
    (ctx.res / f"{tag}.rc").unlink(missing_ok=True)  # a restart is not its last run's result
    src = Path(f"/tmp/vb-{ctx.rel}-{tag}")
    sites.tool_copy(src)
    # FlashInfer lives in a site of its own, on the path of FlashInfer runs only: importable, it
    # changes the sampler of every other run too
    extra = sites.fi_path(ctx.home) if " --prefill-backend flashinfer " in f" {' '.join(options)} " else ""
    detach([PY, "-m", "lab.steps", "watchdog"], src)
    env = {**os.environ, "EXTRA": extra, "MAXV": os.environ.get("MAX_VERIFIES", "8")}
    detach([PY, "-m", *WRAPPER.split(), str(ctx.site[target]), tag, str(ctx.res), *options], src, env=env)
    print(f"started {tag}: verify {' '.join(options)}", flush=True)
    return 0


def slot(pool: str, n: int, err) -> int:
    """Hold one of N lock files of POOL until this process ends; its descriptor."""
    err.write(f"waiting for one of {n} {pool} slots\n")
    err.flush()
    while True:
        for i in range(1, n + 1):
            fd = os.open(f"/tmp/slot-{pool}.{i}", os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            err.write(f"{pool} slot taken at {time.strftime('%H:%M:%S')}\n")
            err.flush()
            return fd
        time.sleep(10)


def slot_run(site: str, tag: str, res: Path, options: list[str]) -> int:
    """The verify's wrapper: its slots (the FlashInfer one first: waiting for it should not hold a
    verify slot), the verify, its status in TAG.rc."""
    rel, extra = os.environ["REL"], os.environ.get("EXTRA", "")
    with open(res / f"{tag}.json", "w") as out, open(res / f"{tag}.err", "w") as err:
        if extra:
            slot("flashinfer", 1, err)
        slot("verify", int(os.environ.get("MAXV", "8")), err)
        env = {**os.environ, "PYTHONPATH": site + (f":{extra}" if extra else "")}
        env["MAX_JOBS"] = os.environ.get("MAX_JOBS", "4")
        cmd = [PY, "apply.py", "verify", "--work-dir", f"/tmp/v-{rel}-{tag}", "--json", *options]
        rc = rc_of(subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env).returncode)
    (res / f"{tag}.rc").write_text(f"{rc}\n")
    return rc


def available_kib() -> int:
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    return next(int(x.split()[1]) for x in meminfo if x.startswith("MemAvailable"))


def _stat(pid: str) -> list[str]:
    """/proc/PID/stat's fields after the command's name (state first)."""
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


def _cmdline(pid: str) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")


def youngest_verify() -> tuple[str, str] | None:
    """The youngest verify a wrapper started, and its session: (pid, sid)."""
    found = []
    for p in (x.name for x in Path("/proc").iterdir() if x.name.isdigit()):
        try:
            if not VERIFY.search(_cmdline(p)):
                continue
            fields = _stat(p)
            sid = fields[3]
            if WRAPPER in _cmdline(sid):
                found.append((int(fields[19]), p, sid))
        except (OSError, IndexError):
            continue
    return max(found)[1:] if found else None


def watchdog(ctx: Ctx, _args: list[str]) -> int:
    lock = os.open("/tmp/watchdog.lock", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return 0
    every, floor = float(os.environ.get("WATCH_EVERY", "5")), int(os.environ.get("WATCH_MIB", "6144"))
    while True:
        time.sleep(every)
        avail = available_kib() >> 10
        victim = youngest_verify() if avail < floor else None
        if not victim:
            continue
        pid, sid = victim
        with open("/tmp/watchdog.log", "a") as log:
            log.write(f"{time.strftime('%H:%M:%S')} {avail} MiB available: killed verify {_cmdline(pid)[:160]}\n")
        for p in (x.name for x in Path("/proc").iterdir() if x.name.isdigit() and x.name != sid):
            try:
                if _stat(p)[3] == sid:
                    os.kill(int(p), signal.SIGKILL)
            except (OSError, IndexError):
                continue
        time.sleep(20)  # the memory comes back before the next look


def proofs(ctx: Ctx, names: list[str], start: Callable[..., int] = bg) -> int:
    """[SITE@]NAME...: each a verify of the fix site (of SITE, tagged SITE-NAME) against its
    proof's control, all at once on one GPU (a fixed KV size each); names from
    vllm_backports/verify/proofs.py. A proof whose site this release lacks is left out, saying so."""
    from vllm_backports.verify.proofs import PROOFS, with_defaults

    for item in names or DEFAULT_PROOFS:
        target, name, tag = "fix", item, item
        if "@" in item:
            target, name = item.split("@", 1)
            tag = f"{target}-{name}"
        if name not in PROOFS:
            print(f"unknown proof {name}")
            continue
        kind, opts = PROOFS[name].control, list(with_defaults(PROOFS[name].options))
        if "--model" in opts:  # a checkpoint lab.machine writes first (WRITTEN_MODELS)
            print(f"{name}: runs under lab.machine (python -m lab plan REL:{name}), which writes its model", flush=True)
            continue
        control = ctx.site.get(kind)
        if target not in ctx.site or not ctx.site[target].is_dir():
            print(f"{tag}: no {target} site for {ctx.rel}", flush=True)
            continue
        if control is None or not control.is_dir():
            print(f"{name}: no control site {control or 'for it'} for {ctx.rel}", flush=True)
            continue
        prefill = [] if "--prefill-backend" in opts else ["--prefill-backend", os.environ.get("PREFILL", "triton")]
        kv = [] if "--kv-cache-gib" in opts else ["--kv-cache-gib", "2"]
        start(ctx, [tag, *opts, "--control", str(control), *prefill, *kv, "--gpu-memory-utilization", "0.08"], target)
    return 0


def _running(err: Path) -> bool:
    return err.is_file() and not err.with_suffix(".rc").exists()


def poll(ctx: Ctx, args: list[str]) -> int:
    """SECONDS: wait until every verify bg started has ended, or SECONDS; bring back what there is."""
    deadline = time.monotonic() + float(args[0] if args else 500)
    while time.monotonic() < deadline and any(_running(e) for e in ctx.res.glob("*.err")):
        time.sleep(10)
    for err in sorted(ctx.res.glob("*.err")):
        rc = err.with_suffix(".rc")
        if rc.exists():
            print(f"== {err.stem}: exit {rc.read_text().strip()}", flush=True)
            if err.with_suffix(".json").exists():
                summary(err.with_suffix(".json"))
            else:
                print("\n".join(err.read_text(errors="replace").splitlines()[-3:]))
        else:
            print(f"== {err.stem}: running: {(err.read_text(errors='replace').splitlines() or [''])[-1]}")
    if ctx.res.is_dir():
        with tarfile.open(ctx.out / "results.tgz", "w:gz") as tar:
            tar.add(ctx.res, arcname=".")

    def logs(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        name = Path(info.name).name
        return None if name == "model" or name.endswith(".out.json") else info

    with tarfile.open(ctx.out / "logs.tgz", "w:gz") as tar:
        for work in sorted(Path("/tmp").glob(f"v-{ctx.rel}-*")):
            tar.add(work, arcname=work.name, filter=logs)
    return 0


def collect_line(run: Path) -> str:
    """One verify of a HOME, a line: its rows' errors, or the last line its stderr says something on."""
    err, rc = run.with_suffix(".err"), run.with_suffix(".rc")
    if not rc.exists():
        # progress bars end in carriage returns, a waiting verify's slot line is its only one
        tail = err.read_bytes()[-4000:].decode(errors="replace").replace("\r", "\n").splitlines()
        said = [x for x in tail if x.strip() and "Writing model shards" not in x]
        return f"{run}: running: {(said or [''])[-1][:200]}"
    status = rc.read_text().strip()
    try:
        d = json.loads(run.with_suffix(".json").read_text())
        cells = row_cells(d)
        return " ".join([f"{run}.json", "exit", status, str(d.get("vllm")), "proof", str(d.get("proof")), *cells])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        last = (err.read_text(errors="replace").splitlines() or [""])[-1]
        return f"{run}: exit {status}: {last}"


def collect(ctx: Ctx, seconds: float, homes: list[Path]) -> int:
    """poll over the results of several releases staged side by side (one HOME each), in one
    archive ($OUT/res.tgz) with a line per run."""
    deadline = time.monotonic() + seconds
    errs = lambda: [e for h in homes for e in sorted((h / "verify-results").glob("*.err"))]  # noqa: E731
    while time.monotonic() < deadline and any(_running(e) for e in errs()):
        time.sleep(10)
    for err in errs():
        print(collect_line(err.with_suffix("")))
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    avail = available_kib() >> 20
    print(f"machine: load {load}, {avail} GiB available")
    watch = Path("/tmp/watchdog.log")
    if watch.exists():
        print("memory watchdog:")
        print("\n".join(watch.read_text().splitlines()[-5:]))
    with tarfile.open(ctx.out / "res.tgz", "w:gz") as tar:
        for h in homes:
            if (h / "verify-results").is_dir():
                tar.add(h / "verify-results", arcname=f"{str(h).lstrip('/')}/verify-results")
    return 0


if __name__ == "__main__":
    sys.exit(slot_run(sys.argv[2], sys.argv[3], Path(sys.argv[4]), sys.argv[5:]))
