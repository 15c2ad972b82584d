"""One A/B run on the GPU: the two engines (bench.worker processes) driven through
schedule.steps, every timed round appended to progress.jsonl as it ends, the result written
from those lines (results.summarise).

A run lives in one directory. Started again with the same directory and a larger number of
pairs, it resumes: new engines (a new instance; the bootstrap treats instances as groups) run the
pairs still owed, numbered on from the last. run.json keeps what ran and the GPU's clock state at
each start and end.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from ..errors import BackportError, UsageError
from ..verify import scenarios
from ..verify.model import is_multimodal
from ..verify.run import engine_env, site_version
from . import experiments, results, schedule, shapes
from .clocks import Sampler

WORKER = "vllm_backports.bench.worker"
LEVELS = (1, 16, 64)


@dataclass(frozen=True)
class Plan:
    experiment: str
    shape: str
    sites: dict[str, Path]  # label -> site-packages
    out: Path
    pairs: int = 20
    warmup: int = 2
    layout: str = "sleep"
    order: str = "abab"
    levels: tuple[int, ...] = LEVELS
    prompt_len: int = 512
    max_tokens: int = 128
    kv_cache_gib: float | None = None  # None: the shape's
    gpu_memory_utilization: float = 0.85
    prefill_backend: str = "default"
    config: Path | None = None  # a checkpoint's own config.json instead of the shape's
    profile: int | None = None  # a concurrency level to profile each arm at, after the rounds
    profile_tokens: int = 16
    ttft_samples: int = 5  # one-token generates timed a round at 1 request, their median kept
    # Engine pairs the pairs are spread over, each started fresh: where one start's process
    # placement runs faster than the next, the groups' spread widens the interval (stats.py)
    restarts: int = 1
    # Arm A's engine on one half of the driver's cores, B's on the other, swapped on every other
    # engine pair: at 1 request a step is host-bound, and where the OS places each engine's
    # processes sets its host speed (in one profiled generate each, the ops of two processes ran
    # 1.18x and 1.43x apart, 0.31.0 on an H100, 2026-12-06). The halves are split by CPU number,
    # not by physical core or NUMA node.
    pin_cores: bool = False
    extra: dict = field(default_factory=dict)


def check(plan: Plan) -> str:
    """Refuse a plan that cannot run, before any engine starts; the release both sites hold."""
    if plan.experiment not in experiments.EXPERIMENTS:
        raise UsageError(f"experiment {plan.experiment!r} is not one of {', '.join(experiments.EXPERIMENTS)}")
    if plan.shape not in shapes.SHAPES:
        raise UsageError(f"shape {plan.shape!r} is not one of {', '.join(shapes.SHAPES)}")
    if plan.layout not in schedule.LAYOUTS or plan.order not in schedule.ORDERS:
        raise UsageError(f"layout one of {schedule.LAYOUTS}, order one of {schedule.ORDERS}")
    exp = experiments.EXPERIMENTS[plan.experiment]
    missing = [s for s in exp.sites() if s not in plan.sites]
    if missing:
        raise UsageError(f"experiment {exp.name} needs {' '.join('--site ' + m + '=DIR' for m in missing)}")
    versions = {s: site_version(plan.sites[s]) for s in exp.sites()}
    if len(set(versions.values())) != 1:
        raise UsageError(f"both sites must hold one release: {versions}")
    if plan.restarts < 1:
        raise UsageError(f"--restarts {plan.restarts}: one engine pair at least")
    if plan.profile is not None and plan.profile not in plan.levels:
        raise UsageError(f"--profile {plan.profile} is not one of the levels {plan.levels}")
    if plan.pin_cores:
        core_sets(own_cores(), 0)  # refused before anything is written, not at the first engine start
        check_pinned_restarts(plan.restarts)
    return next(iter(versions.values()))


def check_pinned_restarts(restarts: int) -> None:
    """--pin-cores with `restarts` engine pairs, or UsageError: with an odd number one arm runs
    longer on one half of the cores, and that half's speed would move the ratio."""
    if restarts % 2:
        raise UsageError(f"--pin-cores needs an even --restarts (each arm as long on each half), not {restarts}")


def own_cores() -> list[int]:
    """The cores the driver may run on, which --pin-cores shares out between the arms."""
    if not hasattr(os, "sched_setaffinity"):
        raise UsageError("--pin-cores: this platform cannot pin a process to cores (no sched_setaffinity)")
    return sorted(os.sched_getaffinity(0))


def smt_siblings(cpus: Sequence[int], root: Path = Path("/sys/devices/system/cpu")) -> dict[int, list[int]]:
    """Each CPU's hardware threads on its physical core (itself included), as Linux lists them;
    a CPU Linux says nothing of stands alone."""
    out: dict[int, list[int]] = {}
    for cpu in cpus:
        try:
            text = (root / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip()
            ids: list[int] = []
            for part in text.split(","):
                first, _, last = part.partition("-")
                ids.extend(range(int(first), int(last or first) + 1))
        except (OSError, ValueError):  # unreadable or not a list: the CPU stands alone
            ids = []
        out[cpu] = sorted(set(ids) | {cpu})
    return out


PROC_STAT = Path("/proc/stat")


def cpu_times(stat: Path | None = None) -> dict[int, tuple[int, int, int]] | None:
    """Each CPU's (busy, idle, steal) ticks since boot from /proc/stat; None where it cannot be
    read (not Linux). Busy is user, nice, system, irq and softirq; steal is the time the
    hypervisor ran something else while this CPU had work."""
    try:
        lines = (stat or PROC_STAT).read_text().splitlines()
        out: dict[int, tuple[int, int, int]] = {}
        for line in lines:
            name, *fields = line.split() or [""]
            if not name.startswith("cpu") or name == "cpu":
                continue
            # guest and guest_nice (columns 9, 10) are counted in user and nice already
            user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in fields[:8])
            out[int(name[3:])] = (user + nice + system + irq + softirq, idle + iowait, steal)
        return out or None
    except (OSError, ValueError):
        return None


def cpu_use(before: dict | None, after: dict | None) -> dict | None:
    """What each CPU of both cpu_times() readings did between them, as shares of its ticks: busy
    and stolen. A timed round's reading tells a round slowed by its own threads' placement (a
    second busy CPU, steal) from one whose code did more."""
    if not before or not after:
        return None
    busy, steal = {}, {}
    for c in sorted(before.keys() & after.keys()):
        d = [max(y - x, 0) for x, y in zip(before[c], after[c], strict=True)]  # iowait can go back (proc(5))
        total = sum(d)
        busy[str(c)] = round(d[0] / total, 2) if total else 0.0
        steal[str(c)] = round(d[2] / total, 2) if total else 0.0
    return {"busy": busy, "steal": steal} if busy else None


def core_sets(
    available: Sequence[int], instance: int, siblings: dict[int, list[int]] | None = None
) -> dict[str, list[int]]:
    """Each arm's cores on engine pair `instance`: two disjoint halves of equal size (an odd core
    left out), swapped on odd instances so that over two or more pairs each arm runs on both and
    a difference between the halves falls between groups (the interval), not in the ratio.
    With `siblings` (smt_siblings), a physical core's hardware threads go whole into one half,
    the largest groups first, split only where no half has room left for them: an arm's threads
    on the other arm's physical cores would run at the speed the other arm leaves them."""
    given = set(available)
    if len(given) < 4:
        raise UsageError(f"--pin-cores: {len(given)} core(s) available, 4 at least (two for each arm)")
    half = len(given) // 2
    groups: dict[int, list[int]] = {}  # a physical core's threads among those given, by the lowest
    for c in sorted(given):
        groups.setdefault(min((set((siblings or {}).get(c, ())) | {c}) & given), []).append(c)
    # larger groups first, each whole into the first half with room; a group no half has room
    # for is split. Without siblings every CPU is its own group: the halves by number.
    low: list[int] = []
    high: list[int] = []
    for group in sorted(groups.values(), key=lambda g: (-len(g), g[0])):
        whole = next((h for h in (low, high) if len(h) + len(group) <= half), None)
        if whole is not None:
            whole.extend(group)
            continue
        for c in group:
            room = next((h for h in (low, high) if len(h) < half), None)
            if room is not None:
                room.append(c)
    low, high = sorted(low), sorted(high)
    return {"a": high, "b": low} if instance % 2 else {"a": low, "b": high}


def prompts(plan: Plan, vocab: int) -> list[list[int]]:
    """Distinct random prompts of prompt_len tokens, one set per level, one after the other (the
    same for both arms and every round). Token ids above the first 1000 leave special ids out."""
    rng = random.Random(1)
    out: list[list[int]] = []
    for _ in range(sum(plan.levels)):
        out.append([rng.randrange(1000, vocab) for _ in range(plan.prompt_len)])
    return out


def site_architectures(site: Path) -> set[str]:
    """What the site's vLLM registers (verify.run.registry_architectures), asked of a Python that
    runs on the site as the engines do: the driver itself need not import vLLM."""
    probe = (
        "import json; from vllm_backports.verify.run import registry_architectures; "
        "print(json.dumps(sorted(registry_architectures())))"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, env=engine_env(None, site), timeout=300
        )
    except subprocess.TimeoutExpired:
        raise BackportError(f"the vLLM of {site} did not list its models within 300 s") from None
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["(nothing on stderr)"])[-1]
        raise BackportError(f"the vLLM of {site} does not list its models: {last}")
    return set(json.loads(lines[-1]))


def engine_spec(plan: Plan, arm: experiments.Arm, model_dir: Path, vocab: int, text_only: bool = False) -> dict:
    shape = shapes.SHAPES[plan.shape]
    gib = plan.kv_cache_gib if plan.kv_cache_gib is not None else shape.kv_cache_gib
    spec: dict = {
        "model": str(model_dir),
        "prompts": prompts(plan, vocab),
        "levels": list(plan.levels),
        "max_tokens": plan.max_tokens,
        "max_num_seqs": max(plan.levels),
        "max_model_len": plan.prompt_len + plan.max_tokens + 2 * experiments.K + 8,
        "tp": 1,
        "gpu_memory_utilization": plan.gpu_memory_utilization,
        "kv_cache_memory_bytes": int(gib * 2**30),
        "additional_config": {} if plan.prefill_backend == "default" else {"gdn_prefill_backend": plan.prefill_backend},
        "sleep": plan.layout == "sleep",
        "vocab": vocab,
        "k": experiments.K,
        "ttft_samples": plan.ttft_samples,
        **({"text_only": True} if text_only else {}),  # a multimodal layout (shapes.architecture_for)
        **plan.extra,
    }
    if arm.speculative:
        spec["speculative"] = scenarios.PRESETS[arm.speculative]
    if arm.script is not None:
        spec["acceptance_schedule"] = [list(x) for x in experiments.SCRIPTS[arm.script]]
    if arm.kv_cache != "auto":
        spec["kv_cache_dtype"] = arm.kv_cache
    if arm.constant_logits:
        spec["constant_logits"] = True
    return spec


class Worker:
    """One engine process and its request channel."""

    def __init__(
        self, tag: str, spec: dict, site: Path, work: Path, module: str = WORKER, cores: Sequence[int] | None = None
    ):
        self.tag, self.log = tag, work / f"{tag}.log"
        spec_path = work / f"{tag}.spec.json"
        spec_path.write_text(json.dumps(spec))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, str(spec_path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(self.log, "w"),  # noqa: SIM115 (the child holds it)
            env=engine_env(None, site),
            text=True,
            # set in the child before exec: vLLM's EngineCore and all else the engine starts inherit it
            preexec_fn=None if cores is None else lambda: os.sched_setaffinity(0, cores),
        )
        self.ready = self.read()

    def read(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            rc = self.proc.wait()
            tail = self.log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise BackportError(f"engine {self.tag} ended (exit {rc}): {tail[0][:300]}; full log: {self.log}")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise BackportError(f"engine {self.tag}: {reply.get('error', reply)}")
        return reply

    def ask(self, op: str, **kw) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **kw}) + "\n")
        self.proc.stdin.flush()
        return self.read()

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(BackportError, BrokenPipeError, OSError):
                self.ask("stop")
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def read_lines(path: Path) -> list[dict]:
    """The progress lines so far; a last line cut off mid-write is left out."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def run(
    plan: Plan,
    progress: Callable[[str], None],
    clocks: Callable[[], dict],
    machine: Callable[[], dict],
    module: str = WORKER,
    architectures: Callable[[Path], set[str]] = site_architectures,
    sampler: Callable[[Path], Sampler] | None = None,
) -> dict:
    """Run the pairs still owed and return the run's result (also written to result.json).
    `architectures`: what a site's vLLM registers, asked only for a shape with a multimodal twin.
    `sampler`: a clocks.Sampler writing to the path given, to record what the GPU's clock did
    while each round was timed (the round's "gpu" in progress.jsonl). With `plan.restarts` N the
    pairs go to N engine pairs in turn, each a resumed run of its share (a new instance)."""
    release = check(plan)
    done = min(len(results.pairs(read_lines(plan.out / "progress.jsonl"))), plan.pairs)
    owed = plan.pairs - done
    if plan.restarts > 1 and 0 < owed < 2 * plan.restarts:
        raise UsageError(
            f"--restarts {plan.restarts}: {owed} pairs owed, fewer than two for each of {plan.restarts} engine pairs"
        )
    result: dict = {}
    for k in range(1, plan.restarts + 1):
        upto = done + -(-owed * k // plan.restarts)  # ceil: the last share ends at plan.pairs
        result = _run(
            replace(plan, pairs=upto), plan, release, progress, clocks, machine, module, architectures, sampler
        )
    return result


def _run(
    plan: Plan,
    whole: Plan,
    release: str,
    progress: Callable[[str], None],
    clocks: Callable[[], dict],
    machine: Callable[[], dict],
    module: str,
    architectures: Callable[[Path], set[str]],
    sampler: Callable[[Path], Sampler] | None,
) -> dict:
    exp = experiments.EXPERIMENTS[plan.experiment]
    shape = shapes.SHAPES[plan.shape]
    config = json.loads(plan.config.read_text()) if plan.config else None
    meta_path, progress_path = plan.out / "run.json", plan.out / "progress.jsonl"
    lines = read_lines(progress_path)
    instance = max((x["instance"] for x in lines), default=-1) + 1
    first = max((x["round"] for x in lines), default=-1) + 1
    owed = plan.pairs - len(results.pairs(lines))
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else None
    if meta is not None and (meta["experiment"], meta["shape"], meta["vllm"]) != (exp.name, shape.name, release):
        raise UsageError(f"{plan.out} holds a run of {meta['experiment']} on {meta['shape']}, vLLM {meta['vllm']}")
    if owed <= 0:
        return write_result(plan.out)  # every pair is there: no engine starts
    architecture = None
    if config is None and shape.multimodal_architecture:
        architecture = shapes.architecture_for(shape, architectures(plan.sites[exp.a.site]))
    plan.out.mkdir(parents=True, exist_ok=True)
    model_dir = shapes.write(plan.out / "model", shape, config, architecture)
    # what was written decides, a checkpoint's own config (--config) included
    written = json.loads((model_dir / "config.json").read_text())
    text_only = is_multimodal((written.get("architectures") or [""])[0])
    vocab = int((config or {}).get("text_config", config or {}).get("vocab_size", shape.vocab))
    if meta is None:
        ran_on = machine()
        meta = {
            "date": str(ran_on.get("date", ""))[:10],
            "gpu": ran_on.get("gpu"),
            "experiment": exp.name,
            "shape": shape.name,
            "shape_about": shape.about,
            "vllm": release,
            "a": exp.a.describe(),
            "b": exp.b.describe(),
            "target": {"at_least": exp.at_least, "half_width": exp.half_width} if exp.at_least else None,
            "layout": plan.layout,
            "order": plan.order,
            "levels": list(plan.levels),
            "prompt_len": plan.prompt_len,
            "max_tokens": plan.max_tokens,
            "sites": {k: str(v) for k, v in plan.sites.items()},
            # the run as asked for, not the share of it this start runs
            "plan": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(whole).items() if k != "sites"},
            "machine": ran_on,
            "instances": [],
        }
    cores = None
    if plan.pin_cores:
        own = own_cores()
        cores = core_sets(own, instance, smt_siblings(own))
    record: dict = {
        "instance": instance,
        "layout": plan.layout,
        "pairs": owed,
        **({"cores": cores} if cores else {}),
        "clocks_before": clocks(),
        "engines": {},
    }
    sampling = sampler(plan.out / f"gpu-{instance}.csv") if sampler else None
    if sampling is not None:
        record["gpu_samples"] = sampling.path.name
    meta["instances"].append(record)
    meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    workers: dict[str, Worker] = {}
    arms = {"a": exp.a, "b": exp.b}
    try:
        if sampling is not None:
            sampling.start()
        steps = schedule.steps(plan.layout, owed, plan.warmup, plan.order, first, profile=plan.profile is not None)
        for n, (op, arm, i) in enumerate(steps):
            progress(f"[{n + 1}/{len(steps)}] {op} {arm}" + ("" if i is None else f" round {i}"))
            if op == "start":
                spec = engine_spec(plan, arms[arm], model_dir, vocab, text_only)
                site, pinned = plan.sites[arms[arm].site], cores[arm] if cores else None
                workers[arm] = Worker(f"{arm}-{instance}", spec, site, plan.out, module, pinned)
                record["engines"][arm] = workers[arm].ready
                meta_path.write_text(json.dumps(meta, indent=2) + "\n")
            elif op == "stop":
                workers.pop(arm).stop()
            elif op in ("warmup", "round"):
                ticks = cpu_times() if op == "round" else None  # a warm-up's CPUs are not recorded
                t0 = time.time()
                reply = workers[arm].ask("round")
                if op == "round":
                    t1 = time.time()
                    used = cpu_use(ticks, cpu_times())
                    if sampling is not None:  # the clock while each level decoded, apart
                        for level in reply["levels"].values():
                            if "decode_window" in level:
                                level["gpu"] = sampling.window(*level["decode_window"])
                    line = {
                        "arm": arm,
                        "round": i,
                        "instance": instance,
                        "levels": reply["levels"],
                        "sm_clock_mhz": clocks().get("clocks.sm"),
                        "t0": t0,
                        "t": t1,
                        **({"gpu": sampling.window(t0, t1)} if sampling is not None else {}),
                        **({"cpus": used} if used else {}),
                    }
                    with open(progress_path, "a") as f:
                        f.write(json.dumps(line) + "\n")
            elif op == "profile":
                path = plan.out / f"profile-{arm}-{instance}-c{plan.profile}"
                workers[arm].ask("profile", level=plan.profile, max_tokens=plan.profile_tokens, path=str(path))
            else:  # sleep, wake
                workers[arm].ask(op)
    finally:
        for w in workers.values():
            w.stop()
        if sampling is not None:
            sampling.stop()
        record["clocks_after"] = clocks()
        meta_path.write_text(json.dumps(meta, indent=2) + "\n")
    return write_result(plan.out)


def write_result(out: Path, resamples: int = 4000) -> dict:
    """result.json from run.json and progress.jsonl as they stand (a run still going included)."""
    meta = json.loads((out / "run.json").read_text())
    result = results.summarise(meta, read_lines(out / "progress.jsonl"), resamples)
    (out / "result.json").write_text(json.dumps(result, indent=2) + "\n")
    return result
