"""On the GPU machine: put the staged parts, install each release, build the sites its proofs
compare, run the proofs detached from the call, and collect what they wrote.

    python3 -m lab.machine put .lab/parts/p000 [.lab/parts/p001 ...]
    python3 -m lab.machine start 0.22.0 0.23.0:gdn-ngram,tq-mtp [--slots 8]
    python3 -m lab.machine start 0.26.0:bench=qwen3_5-9b/fixcost-ngram-sparse=30 \
        --bench-args "--layout resident --levels 1 --profile 1 --prefill-backend triton"
    python3 -m lab.machine collect [--wait 540]        # results under $OUT/results.tgz
    python3 -m lab.machine gpus 2                      # exit 1 unless 2 GPUs are here (a TP=2 plan's first call)

Everything lives under $VLLM_BACKPORTS_LAB_HOME (default ~/lab): the store of blobs, each wheel
installed once (installed/<sha256>), each release's pristine install (those wheels' files
hard-linked) and sites, and results/<release>/<proof>.{json,err,rc}. A job with a
FlashInfer proof (or one whose model needs the CuTe DSL that set brings, lab.proofs.takes_fi_site)
installs its stage's FlashInfer set into <release>/fi-site, which only those proofs put on their
path, after their sites (FlashInfer's one at a time unless its GDN prefill is pre-built).
`start` copies the tool into the lab first and runs from that copy: the call's own tree is
removed when the call ends, and a process whose working directory vanished fails. A release's proofs start as soon as
it is installed, while the next one installs; at most `--slots` verifies run at once, and a
memory watchdog kills the youngest verify when the machine runs short (a machine out of memory
stops answering and loses every result on it) and starts it once more when memory is back.
A/B benchmarks (`bench=SHAPE/EXPERIMENT[=PAIRS]`, benchmarks/bench_ab.py) run after every proof
has ended, one at a time: a timing needs the GPU and the host to itself.
Standard library only, beside the project's own package.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import functools
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from . import parts
from .sites import SAFE_ENV, TOOL

BENCH = "bench="
DEFAULT_BENCH_ARGS = "--layout resident --prefill-backend triton"  # start's --bench-args, when not given
# SITE@PROOF: the proof on another target than the shipped series, alt-NAME for a candidate kept
# in benchmarks/alternatives/NAME/<release>/ (its results are not evidence of the series)
ALT = "alt-"
# FlashInfer's site of a release (<release>/fi-site, its stage's `flashinfer` set): on the path of
# the proofs that take it only (lab.proofs.takes_fi_site), after their sites: importable, it
# changes the sampler of every run
FI = "fi-site"


def proof_of(item: str) -> str:
    return item.partition("@")[2] or item


def target_of(item: str) -> str:
    return item.partition("@")[0] if "@" in item else "fix"


# What comes back of a benchmark's folder: not its profiler traces (tens of MiB each; their
# tables come back) nor engine logs whole (their tails do)
BENCH_LEFT_OUT = (".trace.json", ".log")
HEALTH_TIMEOUT_S = 900.0  # how long a server proof's `vllm serve` may take to answer /health
WATCH_MIB = 6144  # available memory under which the watchdog kills the youngest verify
SLOTS = 8  # verifies at once, each with its own fixed KV size on the one GPU (--slots)
ERR_TAIL = 200_000  # bytes of each verify's stderr that come back (progress bars fill megabytes)


def lab_home() -> Path:
    return Path(os.environ.get("VLLM_BACKPORTS_LAB_HOME", Path.home() / "lab"))


def parse_jobs(specs: list[str], default: dict[str, list[str]] | None = None) -> list[dict]:
    """RELEASE or RELEASE:NAME,NAME... as jobs, each NAME a proof or bench=SHAPE/EXPERIMENT[=PAIRS];
    a bare release runs `default[release]`."""
    jobs = []
    for spec in specs:
        release, _, names = spec.partition(":")
        items = [n for n in names.split(",") if n] if names else list((default or {}).get(release, []))
        if not items:
            raise SystemExit(f"{spec}: no proofs to run")
        benches = [_bench(n) for n in items if n.startswith(BENCH)]
        proofs = list(dict.fromkeys(n for n in items if not n.startswith(BENCH)))
        if unknown := [n for n in proofs if proof_of(n) not in known_proofs()]:
            raise SystemExit(
                f"{spec}: no proof named {', '.join(map(proof_of, unknown))} (python -m lab core REL lists some)"
            )
        jobs.append({"release": release, "proofs": proofs, "benches": benches})
    return jobs


def known_proofs() -> set[str]:
    """Every proof a job may name: verify's own and the served ones."""
    from vllm_backports.verify.proofs import PROOFS

    from .serve import SERVER_PROOFS

    return {*PROOFS, *SERVER_PROOFS}


def _bench(item: str) -> dict:
    shape, slash, rest = item.removeprefix(BENCH).partition("/")
    experiment, _, pairs = rest.partition("=")
    if not slash or not shape or not experiment or (pairs and not (pairs.isdigit() and int(pairs) >= 2)):
        raise SystemExit(f"{item}: write bench=SHAPE/EXPERIMENT[=PAIRS], PAIRS at least 2")
    return {"shape": shape, "experiment": experiment, "pairs": int(pairs or 20)}


def merge_trees(sources: list[tuple[str, Path]], dest: Path) -> None:
    """The files of the (name, folder) `sources` hard-linked into `dest`, folders merged (namespace
    packages such as nvidia/ span wheels). A path two sources hold must hold the same bytes (the
    CUDA 12 wheels' nvidia/__init__.py): one pip --target of them all would keep one of two
    different files by the order it installs them in, so a difference is an error naming both."""
    owner: dict[Path, str] = {}
    for label, src in sources:
        for root, _dirs, files in os.walk(src):
            here = dest / Path(root).relative_to(src)
            here.mkdir(parents=True, exist_ok=True)
            for name in files:
                source, target = Path(root) / name, here / name
                if target not in owner:
                    os.link(source, target)
                    owner[target] = label
                elif not filecmp.cmp(source, target, shallow=False):
                    rel = target.relative_to(dest).as_posix()
                    raise ValueError(f"{rel}: {owner[target]} and {label} hold it with different bytes")


class Runner:
    """One run of jobs on this machine; `verify` builds each proof's command (tests give a fake)."""

    def __init__(
        self,
        home: Path,
        jobs: list[dict],
        slots: int = SLOTS,
        watch_mib: int = WATCH_MIB,
        bench_args: list | None = None,
    ):
        self.home, self.jobs, self.slots, self.watch_mib = home, jobs, slots, watch_mib
        self.bench_args = list(bench_args or [])
        self.sites: dict[str, dict[str, Path]] = {}
        self.results = home / "results"
        self.lock = threading.Lock()
        self.model_lock = threading.Lock()  # one checkpoint written at a time (write_model)
        # a verify runs only in one of `slots`: proofs that take turns (lab.proofs.takes_turns)
        # wait in a queue of their own, not in a slot, so the others fill the slots meanwhile
        self.slot = threading.BoundedSemaphore(slots)
        self.running: dict[str, tuple[subprocess.Popen, float]] = {}
        self.killed: set[str] = set()
        self.stop = threading.Event()
        # shared objects the proofs' processes had mapped, by release: which staged wheels a run
        # ever opened (a CUDA 12 stack brings GBs that torch may never load)
        self.libraries: dict[str, set[str]] = {}
        self._checkpoints: dict[str, threading.Event] = {}
        self._checkpoint_errors: dict[str, str] = {}
        self.health_timeout = HEALTH_TIMEOUT_S

    def event(self, **fields) -> None:
        with self.lock, open(self.home / "timeline.jsonl", "a") as f:
            f.write(json.dumps({"t": round(time.time(), 1), **fields}) + "\n")

    # -- installing -------------------------------------------------------------------------
    def _link(self, release: str, blobs: list[dict], folder: str) -> Path:
        """The stage's `blobs`, joined from the store (a repacked wheel decompressed, several at
        once), hard-linked under their names into <release>/folder."""
        out = self.home / release / folder
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        store = self.home / "store"

        def wheel(blob: dict) -> Path:
            join = parts.unpacked if blob.get("packed_from") else parts.assemble
            return join(store, blob["sha256"], blob["size"])

        with ThreadPoolExecutor(8) as pool:  # lzma lets go of the GIL while it decompresses
            for blob, path in zip(blobs, pool.map(wheel, blobs), strict=True):
                os.link(path, out / blob["name"])
        return out

    def _stage(self, release: str) -> dict:
        return json.loads((self.home / "stage" / f"{release}.json").read_text())

    def install(self, release: str) -> Path:
        """<release>/pristine: the files of every wheel of its stage, hard-linked from installed/,
        where each wheel is installed once a machine, whichever releases share it (a CUDA 12
        stack is 8 GiB unpacked, the same for 0.17 .. 0.19)."""
        blobs = self._stage(release)["blobs"]
        wheels = self._link(release, blobs, "wheels")
        pristine = self.home / release / "pristine"
        shutil.rmtree(pristine, ignore_errors=True)
        with ThreadPoolExecutor(8) as pool:
            dirs = list(pool.map(lambda b: self._installed(wheels / b["name"], b["sha256"]), blobs))
        merge_trees([(b["name"], d) for b, d in zip(blobs, dirs, strict=True)], pristine)
        return pristine

    def _installed(self, wheel: Path, digest: str) -> Path:
        """installed/<digest>: `wheel` installed alone by pip, made once. pip installs into a
        folder no earlier attempt touched (into one that holds a package already, pip --target
        skips that package and exits 0), and a rename ends it, so a folder there is a whole
        install."""
        out = self.home / "installed" / digest
        if out.is_dir():
            return out
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f"{digest}.", suffix=".tmp", dir=out.parent))
        cmd = [sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile"]
        env = {**os.environ, "PIP_ROOT_USER_ACTION": "ignore"}  # once a wheel, not once a run
        subprocess.run([*cmd, "--target", str(tmp), str(wheel)], check=True, env=env)
        os.replace(tmp, out)
        return out

    def fi_site(self, release: str, pristine: Path) -> Path:
        """<release>/fi-site: the stage's FlashInfer set installed as lab.sites.fi_install does for
        the runbook; what each FlashInfer import finds in it goes to <release>'s fi-site.log."""
        from .sites import fi_check, fi_install

        blobs = self._stage(release).get("flashinfer")
        if not blobs:
            raise ValueError("its stage has no FlashInfer (python -m lab plan REL:PROOF stages it)")
        got = self._link(release, blobs, "fi-wheels")
        role = {b["name"]: b["role"] for b in blobs}
        wheels = sorted(got / n for n, r in role.items() if r == "flashinfer")
        fi_install(wheels, sorted(got / n for n, r in role.items() if r == "fi-aot"), self.home / release, pristine)
        with open(self.results / release / "fi-site.log", "w") as log:
            rc = fi_check(pristine, self.home / release, log)
        if rc != 0:  # or each of its proofs spends its engine starts finding that out
            raise RuntimeError(f"FlashInfer does not import from it (results/{release}/fi-site.log)")
        return self.home / release / FI

    @functools.cached_property
    def touched(self) -> list[str]:
        """Every vLLM file a patch touches (lab.sites.touched), read once a run: every site needs
        the same list."""
        from .sites import touched

        return touched()

    def site(self, release: str, name: str, pristine: Path) -> Path:
        """Site `name` of `release`: a hard-linked copy of the pristine install with its own copy of
        every file a patch touches, patched by apply.py as lab.proofs.site_skips says."""
        from vllm_backports.catalogue import Catalogue

        from .proofs import site_skips

        if name.startswith(ALT):
            return self.alt_site(release, name, pristine)
        return self._build(release, name, site_skips(name, Catalogue(Path(".")).releases[release].backports), pristine)

    def _build(self, release: str, name: str, skips: list[str] | None, pristine: Path) -> Path:
        from .sites import site_copy

        site = self.home / release / f"site-{name}"
        site_copy(pristine, site, self.touched, check=True)
        if skips is not None:
            out = self.results / release / f"apply-{name}.json"
            cmd = [sys.executable, "apply.py", "--vllm", release, "--target", str(site), *skips, "--json"]
            with open(out, "w") as f:
                done = subprocess.run(cmd, stdout=f, env={**os.environ, "PYTHONPATH": str(site)})
            if done.returncode != 0:
                raise RuntimeError(f"site {name}: apply.py exited {done.returncode} ({out})")
        return site

    def alt_site(self, release: str, name: str, pristine: Path) -> Path:
        """Site alt-NAME: the shipped series, then the candidate benchmarks/alternatives/NAME keeps
        for this release, applied exactly (no fuzz) by the project's own hunks."""
        from .sites import apply_candidate, candidate

        patch = candidate(name.removeprefix(ALT), release)
        if not patch.is_file():
            raise ValueError(f"site {name}: no candidate for {release} ({patch})")
        site = self._build(release, name, [], pristine)  # its own copy of the shipped series
        try:
            apply_candidate(site, patch)
        except RuntimeError as exc:
            raise RuntimeError(f"site {name}: {exc}") from None
        return site

    # -- proving -----------------------------------------------------------------------------
    def verify(self, release: str, name: str, target: Path, control: Path) -> list[str]:
        from vllm_backports.verify.proofs import PROOFS, with_defaults

        options = list(with_defaults(PROOFS[proof_of(name)].options))
        if "--model" in options:  # a checkpoint write_model writes: its folder
            at = options.index("--model") + 1
            options[at] = str(self.model_dir(release, options[at]))
        if "--prefill-backend" not in options:
            options += ["--prefill-backend", "triton"]
        if "--kv-cache-gib" not in options:  # a fixed KV size each: engines share the GPU
            options += ["--kv-cache-gib", "2"]
        return [sys.executable, "apply.py", "verify", "--work-dir", str(self.work(release, name)), "--json", *options]

    def work(self, release: str, name: str) -> Path:
        return self.home / release / "work" / name

    def model_dir(self, release: str, model: str) -> Path:
        from vllm_backports.verify.proofs import WRITTEN_MODELS

        return self.home / release / "models" / model if model in WRITTEN_MODELS else Path(model)

    def write_model(self, release: str, name: str, target: Path) -> int:
        """The checkpoint the proof's --model names, where the lab writes it (WRITTEN_MODELS), by
        the proof's own site, once a release (the writer reuses what it wrote); 0 where none."""
        from vllm_backports.verify.proofs import PROOFS, WRITTEN_MODELS, option

        model = option(PROOFS[proof_of(name)].options, "--model")
        if model not in WRITTEN_MODELS:
            return 0
        cmd = [sys.executable, "-m", WRITTEN_MODELS[model], str(self.model_dir(release, model))]
        env = {**os.environ, "PYTHONPATH": str(target)}
        with self.model_lock, open(self.results / release / f"{name}.model.log", "w") as log:
            return subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode

    def prove(self, release: str, name: str, target: Path, control: Path, tries: int = 2) -> int:
        from .proofs import takes_fi_site
        from .sites import fi_path

        out = self.results / release
        if rc := self.write_model(release, name, target):
            (out / f"{name}.err").write_text(f"not run: writing its --model exited {rc} ({name}.model.log)\n")
            (out / f"{name}.rc").write_text(f"{rc}\n")
            self.event(release=release, what=name, event="end", rc=rc)
            return rc
        # an earlier run's engine logs would come back as this one's (engine_startups)
        shutil.rmtree(self.work(release, name), ignore_errors=True)
        cmd = self.verify(release, name, target, control) + ["--control", str(control)]
        cmd += ["--gpu-memory-utilization", "0.08"]
        stem = self.results / release / name
        if not takes_fi_site(release, name):
            return self._attempts(release, name, cmd, target, stem, tries)
        # FlashInfer after the target's site (verify puts the control's before it for the control's
        # engines); MAX_JOBS bounds a JIT build's nvcc jobs, as the runbook's verifies
        path = f"{target}:{fi_path(self.home / release)}"
        return self._attempts(release, name, cmd, path, stem, tries, {"MAX_JOBS": os.environ.get("MAX_JOBS", "4")})

    def in_slot(self, work, *args) -> int:
        """`work(*args)` once one of the slots is free, holding it until it returns."""
        with self.slot:
            return work(*args)

    def _attempts(
        self,
        release: str,
        name: str,
        cmd: list[str],
        site: Path | str,
        stem: Path,
        tries: int = 2,
        env: dict | None = None,
    ) -> int:
        """`cmd` on `site`'s Python path (a path list too), detached, `env` added, its stdout and
        stderr in STEM.json and STEM.err, run once more when the watchdog killed it; its exit in STEM.rc."""
        key = f"{release}/{name}"
        env = {**os.environ, **SAFE_ENV, "PYTHONPATH": str(site), "PYTHONUNBUFFERED": "1", **(env or {})}
        stem.parent.mkdir(parents=True, exist_ok=True)
        rc = 1
        for attempt in range(1, tries + 1):
            while self.watch_mib and _available_mib() < 2 * self.watch_mib:
                time.sleep(5)  # a restart waits for the memory its kill gave back
            self.event(release=release, what=name, event="start", attempt=attempt)
            with open(f"{stem}.json", "w") as stdout, open(f"{stem}.err", "w") as stderr:
                proc = subprocess.Popen(cmd, stdout=stdout, stderr=stderr, env=env, start_new_session=True)
                with self.lock:
                    self.running[key] = (proc, time.time())
                rc = proc.wait()
                with self.lock:
                    self.running.pop(key, None)
                    killed = key in self.killed
                    self.killed.discard(key)
            self.event(release=release, what=name, event="end", rc=rc, killed=killed)
            if not killed:
                break
        Path(f"{stem}.rc").write_text(f"{rc}\n")
        _trim(Path(f"{stem}.err"))
        return rc

    # -- serving (lab/serve.py) ----------------------------------------------------------------
    def checkpoint(self, release: str, site: Path) -> Path:
        """The tiny checkpoint the release's servers load, written once on `site`'s Python path
        (the first leg writes it, the others wait for it)."""
        with self.lock:
            first = release not in self._checkpoints
            done = self._checkpoints.setdefault(release, threading.Event())
        directory = self.home / release / "server-model"
        if first:
            env = {**os.environ, "PYTHONPATH": str(site)}
            cmd = [sys.executable, "-m", "vllm_backports.verify.tokenizer", str(directory)]
            try:
                subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            except (OSError, subprocess.CalledProcessError) as exc:
                said = getattr(exc, "stderr", b"") or b""
                self._checkpoint_errors[release] = f"{exc}: {said[-300:].decode(errors='replace').strip()}"
            finally:
                done.set()
        done.wait()
        if release in self._checkpoint_errors:
            raise RuntimeError(self._checkpoint_errors[release])
        return directory

    def serve_command(self, release: str, name: str, leg: str, site: Path, checkpoint: Path, out: Path) -> list[str]:
        from .serve import SERVER_PROOFS, write_prompts

        proof = SERVER_PROOFS[name]
        prompts = out.parent / "prompts.jsonl"
        if not prompts.exists():
            write_prompts(prompts, proof["prompts"])
        speculative = "" if leg == "plain" else json.dumps(proof["speculative"])
        cmd = [sys.executable, "-m", "lab.serve", "leg", "--leg", leg, "--site", str(site)]
        return cmd + [
            "--checkpoint",
            str(checkpoint),
            "--prompts",
            str(prompts),
            "--out",
            str(out),
            f"--speculative={speculative}",
            f"--health-timeout={self.health_timeout}",
        ]

    def serve_leg(self, release: str, name: str, leg: str, site: Path, fix: Path) -> int:
        """One leg of a server proof in a slot; what its server left (a killed leg's) is stopped."""
        out = self.results / release / name / leg
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        try:
            checkpoint = self.checkpoint(release, fix)
        except RuntimeError as exc:
            (out / "leg.json").write_text(json.dumps({"leg": leg, "rc": 2, "status": f"no checkpoint: {exc}"}))
            return 2
        cmd = self.serve_command(release, name, leg, site, checkpoint, out)
        try:
            return self._attempts(release, f"{name}/{leg}", cmd, site, out / "run")
        finally:
            if (out / "server.log").exists():
                _trim(out / "server.log")
            pgid = out / "server.pgid"
            if pgid.exists():
                with contextlib.suppress(ProcessLookupError, ValueError, PermissionError):
                    os.killpg(int(pgid.read_text()), signal.SIGKILL)

    def pair(self, release: str, name: str) -> int:
        """The proof's verify JSON from its legs (lab.serve.pair), where records.py reads a proof's."""
        from .serve import pair

        out = self.results / release
        data, lines = pair(out / name, release, name, self.machine_facts())
        (out / f"{name}.err").write_text("\n".join(lines) + "\n")
        if data is None:
            (out / f"{name}.json").write_text("")
            rc = 2
        else:
            (out / f"{name}.json").write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
            rc = 0 if data["passed"] else 1
        (out / f"{name}.rc").write_text(f"{rc}\n")
        self.event(release=release, what=name, event="paired", rc=rc)
        return rc

    def machine_facts(self) -> dict:
        gpu = _machine()["gpu"].split("\n")
        return {
            "gpu": gpu[0].split(",")[0].strip(),
            "gpus": len([g for g in gpu if g.strip()]),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }

    # -- benchmarking ------------------------------------------------------------------------
    def bench_command(self, release: str, bench: dict, out: Path, sites: dict[str, Path]) -> list[str]:
        cmd = [sys.executable, "benchmarks/bench_ab.py", "run", "--experiment", bench["experiment"]]
        cmd += ["--shape", bench["shape"], "--pairs", str(bench["pairs"]), "--out", str(out)]
        return cmd + [f"--site={label}={path}" for label, path in sites.items()] + self.bench_args

    def bench(self, release: str, bench: dict) -> int:
        """One A/B run, alone on the machine, over the sites its experiment compares."""
        from vllm_backports.bench.experiments import EXPERIMENTS

        name = f"bench-{bench['experiment']}-{bench['shape']}"
        out = self.results / release / name
        out.mkdir(parents=True, exist_ok=True)
        self.event(release=release, what=name, event="start")
        try:
            labels = EXPERIMENTS[bench["experiment"]].sites()
            have = self.sites[release]
            for label in labels:
                if label not in have:
                    have[label] = self.site(release, label, self.home / release / "pristine")
            sites = {label: have[label] for label in labels}
        except (KeyError, ValueError, RuntimeError, OSError, subprocess.CalledProcessError) as exc:
            (out / "run.err").write_text(f"not run: {exc}\n")
            (out / "run.rc").write_text("2\n")
            self.event(release=release, what=name, event="end", rc=2)
            return 2
        env = {**os.environ, **SAFE_ENV, "PYTHONUNBUFFERED": "1"}
        with open(out / "run.out", "a") as stdout, open(out / "run.err", "a") as stderr:
            rc = subprocess.run(self.bench_command(release, bench, out, sites), stdout=stdout, stderr=stderr, env=env)
        (out / "run.rc").write_text(f"{rc.returncode}\n")
        self.event(release=release, what=name, event="end", rc=rc.returncode)
        return rc.returncode

    def sample_libraries(self) -> set[str]:
        """What the running proofs' processes map, added to their release's; the releases that gained."""
        with self.lock:
            running = [(key.split("/", 1)[0], proc.pid) for key, (proc, _) in self.running.items()]
        grew = set()
        for release, sid in running:
            known = self.libraries.setdefault(release, set())
            new = mapped_libraries(session_pids(sid)) - known
            if new:
                known |= new
                grew.add(release)
        return grew

    def write_libraries(self, releases: set[str] | None = None) -> None:
        """Each release's libraries.json, whole (a collect reads it while proofs still run)."""
        for release, paths in self.libraries.items():
            if releases is not None and release not in releases:
                continue
            base = str(self.home / release) + "/"
            rel = sorted(p[len(base) :] if p.startswith(base) else p for p in paths)
            # written beside results/, not in it: collect may be packing that folder
            tmp = self.home / f".libraries-{release}.tmp"
            tmp.write_text(json.dumps(rel, indent=0) + "\n")
            os.replace(tmp, self.results / release / "libraries.json")

    def watchdog(self) -> None:
        while not self.stop.wait(5):
            # written as they grow: a run the machine's time cuts short still says what it mapped;
            # a write that fails must not end the memory watchdog
            with contextlib.suppress(OSError):
                self.write_libraries(self.sample_libraries())
            if _available_mib() >= self.watch_mib:
                continue
            with self.lock:
                if not self.running:
                    continue
                key, (proc, _) = max(self.running.items(), key=lambda kv: kv[1][1])
                self.killed.add(key)
            self.event(what=key, event="killed", available_mib=_available_mib())
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            self.stop.wait(20)  # the memory comes back before the next look

    def beat(self) -> None:
        """Touch the heartbeat while this process lives, benchmarks included (see run_gone)."""
        while True:
            with contextlib.suppress(OSError):  # a full disk must not end the run
                (self.home / "heartbeat").touch()
            time.sleep(HEARTBEAT_S)

    def run(self) -> int:
        from .proofs import control_site, takes_turns
        from .serve import LEGS, is_server_proof

        self.results.mkdir(parents=True, exist_ok=True)
        threading.Thread(target=self.beat, daemon=True).start()
        watchdog = threading.Thread(target=self.watchdog, daemon=True)
        watchdog.start()
        futures: list[Future] = []
        served: list[tuple[str, str]] = []
        # `turns` runs the proofs that take turns, one at a time, each in a slot once it starts
        with ThreadPoolExecutor(self.slots) as pool, ThreadPoolExecutor(1) as turns:

            def submit_all(release: str, names: list[str]) -> None:
                sites = self.sites[release]
                for name in names:
                    if is_server_proof(name):  # a leg a slot, paired once all have ended
                        for leg, site in LEGS.items():
                            pool.submit(self.in_slot, self.serve_leg, release, name, leg, sites[site], sites["fix"])
                        served.append((release, name))
                    else:
                        target, control = sites[target_of(name)], sites[control_site(proof_of(name))]
                        queue = turns if takes_turns(name, prebuilt_fi(self.home / release)) else pool
                        futures.append(queue.submit(self.in_slot, self.prove, release, name, target, control))

            for job in self.jobs:
                release = job["release"]
                (self.results / release).mkdir(parents=True, exist_ok=True)
                self.event(release=release, what="install", event="start")
                try:
                    pristine = self.install(release)
                    sites = self.sites[release] = {"fix": self.site(release, "fix", pristine)}
                except (OSError, ValueError, RuntimeError, subprocess.CalledProcessError) as exc:
                    self.event(release=release, what="install", event="end", error=str(exc))
                    (self.results / release / "install.err").write_text(f"{exc}\n")
                    continue
                # a control site that cannot be built costs its proofs alone, each saying why
                unbuilt: dict[str, str] = {}
                for name in job["proofs"]:
                    for kind in _sites_of(release, name):
                        if kind in sites or kind in unbuilt:
                            continue
                        try:
                            sites[kind] = (
                                self.fi_site(release, pristine) if kind == FI else self.site(release, kind, pristine)
                            )
                        except (OSError, ValueError, RuntimeError, subprocess.CalledProcessError) as exc:
                            unbuilt[kind] = f"site {kind} not built: {exc}"
                self.event(release=release, what="install", event="end")
                runnable = []
                for name in job["proofs"]:
                    missing = [unbuilt[k] for k in _sites_of(release, name) if k in unbuilt]
                    if missing:
                        (self.results / release / f"{name}.err").write_text("; ".join(missing) + "\n")
                        (self.results / release / f"{name}.rc").write_text("2\n")
                    else:
                        runnable.append(name)
                submit_all(release, runnable)
        failed = sum(1 for f in futures if f.exception() is not None or f.result() != 0)
        failed += sum(1 for release, name in served if self.pair(release, name) != 0)
        self.stop.set()
        watchdog.join()
        self.write_libraries()
        benches = [
            (job["release"], b) for job in self.jobs if job["release"] in self.sites for b in job.get("benches", [])
        ]
        bench_failed = sum(1 for release, b in benches if self.bench(release, b) != 0)
        done = f"{len(futures) + len(served)} proofs, {failed} exited non-zero"
        if benches:
            done += f"; {len(benches)} benchmarks, {bench_failed} exited non-zero"
        (self.home / "done").write_text(done + "\n")
        return 0


def session_pids(sid: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes of session `sid`: a proof's verify and every engine it started (each proof
    runs in a session of its own)."""
    pids = []
    for d in proc.iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone between the listing and the read
        if len(fields) > 3 and fields[3] == str(sid):
            pids.append(int(d.name))
    return pids


def mapped_libraries(pids: list[int], proc: Path = Path("/proc")) -> set[str]:
    """The shared objects these processes have mapped now."""
    out = set()
    for pid in pids:
        try:
            maps = (proc / str(pid) / "maps").read_text()
        except OSError:
            continue
        for line in maps.splitlines():
            fields = line.split(None, 5)
            if len(fields) == 6 and ".so" in fields[5]:
                out.add(fields[5].removesuffix(" (deleted)").strip())
    return out


def _sites_of(release: str, name: str) -> tuple[str, ...]:
    """The sites a job item runs on: a proof's target and control (and fi-site where the proof
    takes it on `release`), a server proof's legs'."""
    from .proofs import control_site, takes_fi_site
    from .serve import LEGS, is_server_proof

    if is_server_proof(name):
        return tuple(dict.fromkeys(LEGS.values()))
    return target_of(name), control_site(proof_of(name)), *((FI,) if takes_fi_site(release, name) else ())


def prebuilt_fi(home: Path) -> bool:
    """Whether HOME's FlashInfer site holds a pre-built GDN prefill (lab.sites.fi_install put it
    where FlashInfer loads it without a build). Another module pre-built (0.7.x's sampling) leaves
    the prefill to compile at engine start."""
    return (home / "fi-site" / "flashinfer" / "data" / "aot" / "gdn_prefill_sm90" / "gdn_prefill_sm90.so").is_file()


def _available_mib() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 1 << 30  # unknown: never kill on a guess


# What vLLM says of its start-up, in every engine log a proof leaves: how long the engine's start
# took and where (compiling, loading a compiled graph from the cache, capturing CUDA graphs), the
# cost that dominates a proof's device time (init engine 137 to 143 s on 0.24.0's servers,
# compilation 20 to 27 s of it; 2026-11-29, H200).
STARTUP = (
    "init engine (profile, create kv cache, warmup model) took",
    "torch.compile took",
    "torch.compile takes",
    "Compiling a graph for",
    "Directly load the compiled graph",
    "Dynamo bytecode transform time",
    "Graph capturing finished",
    "Memory profiling takes",
    "Model loading took",
)


def engine_startups(home: Path) -> None:
    """results/REL/engines/PROOF.txt: the STARTUP lines of each engine log of the proof's work
    folder, a line each, prefixed by the engine's tag (the logs stay on the machine)."""
    for work in sorted(home.glob("*/work/*")):
        release, proof = work.parent.parent.name, work.name
        lines = []
        for log in sorted(work.glob("*.log")):
            try:
                with open(log, errors="replace") as f:
                    lines += [f"{log.stem}: {line.strip()}" for line in f if any(m in line for m in STARTUP)]
            except OSError as exc:  # a collect must bring back what it can
                lines.append(f"{log.stem}: not read: {exc}")
        if lines and (home / "results" / release).is_dir():
            out = home / "results" / release / "engines" / f"{proof}.txt"
            out.parent.mkdir(exist_ok=True)
            out.write_text("\n".join(lines) + "\n")


def _tail(src: Path, dest: Path, size: int = 20_000) -> None:
    with open(src, "rb") as f:
        f.seek(max(0, src.stat().st_size - size))
        dest.write_bytes(f.read())


def _trim(path: Path) -> None:
    if path.stat().st_size > ERR_TAIL:
        with open(path, "rb") as f:
            f.seek(-ERR_TAIL, os.SEEK_END)
            tail = f.read()
        path.write_bytes(b"[...]\n" + tail)


def row_cells(data: dict) -> list[str]:
    """A verify JSON's speculative rows, a cell each: scenario/site:errors/tokens, or dead."""
    return [
        f"{r['scenario']}/{r.get('site', 'target')}:" + ("dead" if r.get("crashed") else f"{r['errors']}/{r['tokens']}")
        for r in data.get("rows", [])
        if r["scenario"] != "baseline"
    ]


def detach(cmd: list[str], cwd: Path | None = None, log: Path | None = None, **popen) -> subprocess.Popen:
    """`cmd` in a session of its own, so that it outlives the calling shell and the call's tree,
    stdin closed, stdout and stderr written to `log` (or dropped)."""
    with open(log or os.devnull, "wb") as out:
        return subprocess.Popen(
            cmd,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **popen,
        )


def status_lines(home: Path) -> list[str]:
    """A line per proof: its exit and each site's errors of its tokens, or what it is doing."""
    lines = []
    for rc in sorted((home / "results").glob("*/bench-*/run.rc")):
        lines.append(f"{rc.parent.parent.name}/{rc.parent.name}: exit {rc.read_text().strip()}")
    for err in sorted((home / "results").glob("*/*.err")):
        key = f"{err.parent.name}/{err.stem}"
        if err.stem == "install":
            lines.append(f"{key}: FAILED {err.read_text().strip()}")
            continue
        rc = err.with_suffix(".rc")
        if not rc.exists():
            tail = err.read_bytes()[-4000:].decode(errors="replace").replace("\r", "\n").strip().splitlines()
            lines.append(f"{key}: running: {(tail or [''])[-1][:160]}")
            continue
        try:
            data = json.loads(err.with_suffix(".json").read_text())
            lines.append(f"{key}: exit {rc.read_text().strip()}, {data.get('proof')}: {' '.join(row_cells(data))}")
        except (OSError, ValueError, KeyError, TypeError):
            lines.append(f"{key}: exit {rc.read_text().strip()}, no verdict: {err.read_text()[-300:].strip()}")
    return lines


class NothingStarted(Exception):
    """The machine holds no run: `start` never ran here or failed, or the machine was given back."""


# The run touches its heartbeat this often; one older than STALE_S without `done` is a run that
# died (killed, out of memory): waiting on it would only spend device time.
HEARTBEAT_S, STALE_S = 10, 60


def run_gone(home: Path) -> bool:
    """Whether the run `start` detached has stopped beating without writing `done`."""
    if (home / "done").exists():
        return False
    try:
        return time.time() - (home / "heartbeat").stat().st_mtime > STALE_S
    except OSError:
        return False  # not yet beating (or a run of a tool before the heartbeat): only `done` tells


# collect's exit code for each state of the run it leaves
COLLECTED = {"done": 0, "running": 3, "died": 5}


def run_state(home: Path) -> str:
    """The run's state: "done", "died" (run_gone) or "running"."""
    return "done" if (home / "done").exists() else "died" if run_gone(home) else "running"


def collect(home: Path, wait: float, out: Path) -> str:
    """Wait until the run is done or `wait` seconds pass; print its state; write results.tgz;
    return the state printed ("done", "running" or "died").

    Waiting stops early when the run has died; a machine where nothing was started (a fresh
    one, after the last was given back, or one whose `start` failed) raises NothingStarted
    before any wait."""
    if not (home / "jobs.json").exists():
        raise NothingStarted(f"collect: nothing was started on this machine ({home} has no jobs.json)")
    deadline = time.time() + wait
    while time.time() < deadline and run_state(home) == "running":
        time.sleep(10)
    for line in status_lines(home):
        print(line)
    state = run_state(home)
    if state == "done":
        print("done: " + (home / "done").read_text().strip())
    else:
        print("the run died without finishing (run.log says why)" if state == "died" else "still running")
    out.mkdir(parents=True, exist_ok=True)
    for log in (home / "results").glob("*/bench-*/*.log"):
        _tail(log, log.with_name(log.name + ".tail"))
    engine_startups(home)

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        in_bench = "/bench-" in info.name
        return None if in_bench and info.name.endswith(BENCH_LEFT_OUT) else info

    with tarfile.open(out / "results.tgz", "w:gz") as tar:
        for name in ("results", "timeline.jsonl", "run.log", "machine.json", "jobs.json", "done"):
            if (home / name).exists():
                tar.add(home / name, arcname=name, filter=keep)
    return state


def start(specs: list[str], slots: int, source: Path, home: Path, bench_args: str = "") -> None:
    from vllm_backports.catalogue import Catalogue

    from .proofs import core, multi_gpu

    home.mkdir(parents=True, exist_ok=True)
    # the last run's state goes first: a start that fails below must not leave it for collect
    for stale in ("done", "timeline.jsonl", "jobs.json", "heartbeat"):
        (home / stale).unlink(missing_ok=True)
    shutil.rmtree(home / "results", ignore_errors=True)
    catalogue = Catalogue(source)
    jobs = parse_jobs(specs, {r: core(catalogue, r) for r in catalogue.releases})
    # a TP=2 verify on one GPU dies at its engine's start, minutes into the run: refuse it here
    if need := multi_gpu(jobs):
        check_gpus(max(need.values()), f"start: {', '.join(need)}")
    tool = home / "tool"
    shutil.rmtree(tool, ignore_errors=True)
    tool.mkdir()
    for name in TOOL:
        src = source / name
        if src.is_dir():
            shutil.copytree(src, tool / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, tool / name)
    (home / "stage").mkdir(exist_ok=True)
    for stage in (source / ".lab" / "stage").glob("*.json"):
        shutil.copy2(stage, home / "stage" / stage.name)
    missing = [j["release"] for j in jobs if not (home / "stage" / f"{j['release']}.json").exists()]
    if missing:
        raise SystemExit(f"start: no stage of {', '.join(missing)} (put its parts with .lab/stage)")
    if owed := _unput(home, [j["release"] for j in jobs]):
        # a machine given back between two calls keeps nothing; the next call starts a bare one
        raise SystemExit(f"start: parts not on this machine: {' '.join(owed)} (put them again, then start)")
    (home / "jobs.json").write_text(json.dumps({"jobs": jobs, "slots": slots, "bench_args": shlex.split(bench_args)}))
    (home / "machine.json").write_text(json.dumps(_machine()))
    env = {**os.environ, **SAFE_ENV, "VLLM_BACKPORTS_LAB_HOME": str(home)}
    try:
        detach([sys.executable, "-m", "lab.machine", "run"], tool, home / "run.log", env=env)
    except OSError:
        (home / "jobs.json").unlink()
        raise
    for job in jobs:
        benches = [f"bench={b['shape']}/{b['experiment']}={b['pairs']}" for b in job["benches"]]
        print(f"started {job['release']}: {', '.join(job['proofs'] + benches)}")


def _unput(home: Path, releases: list[str]) -> list[str]:
    """The parts of the plan's index (stage/parts.json, none before it was written) that hold
    bytes of the releases' blobs this machine's store lacks."""
    index = home / "stage" / "parts.json"
    if not index.is_file():
        return []
    stages = [json.loads((home / "stage" / f"{r}.json").read_text()) for r in releases]
    digests = [b["sha256"] for s in stages for b in (*s.get("blobs", ()), *s.get("flashinfer", ()))]
    return parts.unput(json.loads(index.read_text()), home / "store", digests)


def _gpu_count() -> int:
    """The GPUs a verify started from here sees: those nvidia-smi lists (0 where it cannot run),
    no more than CUDA_VISIBLE_DEVICES names where it is set (nvidia-smi does not read it). A GPU
    split by MIG counts as one, as nvidia-smi lists it."""
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return 0
    count = sum(1 for line in listed.splitlines() if re.match(r"GPU \d+: ", line))
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None:
        count = min(count, len([d for d in visible.split(",") if d.strip()]))
    return count


def check_gpus(need: int, what: str) -> None:
    """Exit in one line unless this machine has `need` GPUs for `what`."""
    if (have := _gpu_count()) < need:
        raise SystemExit(f"{what}: needs {need} GPUs, this machine has {have} (ask for a kind with {need})")


def _machine() -> dict:
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"], capture_output=True, text=True
        ).stdout.strip()
    except OSError:
        gpu = ""
    return {"gpu": gpu, "cores": os.cpu_count(), "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m lab.machine")
    sub = parser.add_subparsers(dest="step", required=True)
    p = sub.add_parser("put")
    p.add_argument("parts", nargs="+", type=Path)
    s = sub.add_parser("start")
    s.add_argument("jobs", nargs="+", metavar="RELEASE[:PROOF,...]")
    s.add_argument("--slots", type=int, default=SLOTS)
    s.add_argument("--bench-args", default=DEFAULT_BENCH_ARGS, help="bench_ab.py run's options")
    g = sub.add_parser("gpus", help="exit 1, in one line, unless this machine has N GPUs")
    g.add_argument("need", type=int)
    sub.add_parser("run")
    c = sub.add_parser("collect")
    c.add_argument("--wait", type=float, default=0)
    args = parser.parse_args(argv)
    home = lab_home()
    if args.step == "put":
        for part in args.parts:
            print(f"put {part}: {parts.put(part, home / 'store') >> 20} MiB")
    elif args.step == "gpus":
        check_gpus(args.need, "gpus")
    elif args.step == "start":
        start(args.jobs, args.slots, Path.cwd(), home, args.bench_args)
    elif args.step == "run":
        spec = json.loads((home / "jobs.json").read_text())
        return Runner(home, spec["jobs"], spec["slots"], bench_args=spec.get("bench_args")).run()
    else:
        try:
            state = collect(home, args.wait, Path(os.environ.get("OUT", "/tmp/out")))
        except NothingStarted as exc:
            # at once, not after --wait: a machine given back keeps neither parts nor run
            print(f"{exc}: put the parts and start again", file=sys.stderr)
            return 4
        return COLLECTED[state]
    return 0


if __name__ == "__main__":
    sys.exit(main())
