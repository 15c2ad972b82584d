"""The runbook's steps on the GPU machine, for any release `python -m lab bundle REL` staged (repo
root, after install.sh has installed it into $HOME/vllm-site; one step a call, each under the
600 s limit; lab/runbook/plan.py prints the calls):

    REL=0.26.0 python3 -m lab.steps put p0 p1            # pieces of .stage-REL carried in this call
    REL=0.26.0 python3 -m lab.steps chain [PROOF...]     # install.sh, fi-site, setup, the proofs, detached
    REL=0.26.0 python3 -m lab.steps setup                # the sites below; the release's builder tests
    REL=0.26.0 python3 -m lab.steps proofs [SITE@]PROOF...   # each a verify against its control (bg)
    REL=0.26.0 python3 -m lab.steps bg TAG VERIFY-OPTIONS...  # one verify, detached, in a slot
    REL=0.26.0 python3 -m lab.steps poll 500             # wait for the verifies; $OUT/results.tgz
    python3 -m lab.steps collect 540 /root/h1 /root/h2   # poll over several HOMEs; $OUT/res.tgz
    REL=0.26.0 python3 -m lab.steps verify fix mtp 16 graphs turboquant_k8v4   # one, in the call
    REL=0.28.0 python3 -m lab.steps upstream-gpu         # the release's own tests (lab.chain)
    REL=0.31.0 python3 -m lab.steps fastpath             # tests/gpu/test_turboquant_prefill_fastpath.py
    REL=0.33.0 python3 -m lab.steps fi-site              # FlashInfer into $HOME/fi-site (lab.sites)
    REL=0.31.0 python3 -m lab.steps model [PRESET...]; ... poll 500; ... model-compare   (lab.model)
    REL=0.28.0 python3 -m lab.steps bench-ab start|queue|poll|profiles ...   (lab.bench_queue)
    REL=0.21.0 python3 -m lab.steps bench-tq PASSES [ROUNDS]; ... bench-gdn PASSES ROUNDS [MODE [--no-ngram]]

Several releases share one machine, each staged under a HOME of its own (`HOME=/root/h2 REL=X
... put p0`, then `chain`): every path is under $HOME or named by $REL. GPU=N runs the step's
work on GPU N alone (nvidia-smi's numbering), so that A/B queues of several releases run side by
side, one a GPU. TP=2 runs `verify` at tensor parallel 2; PREFILL=flashinfer on FlashInfer's GDN
prefill, from $HOME/fi-site. Standard library only, beside the project's own package.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import sites
from .sites import SAFE_ENV

PY = sys.executable


class Refused(SystemExit):
    """A step refused before it started anything: its message on stdout, status 2 (or `code`)."""

    def __init__(self, message: str, code: int = 2):
        print(message, flush=True)
        super().__init__(code)


@dataclass
class Ctx:
    """What every step reads of its environment: the release, its HOME, $OUT and GPU=N."""

    rel: str
    home: Path
    out: Path
    gpu: str | None = None
    site: dict[str, Path] = field(default_factory=dict)

    @property
    def res(self) -> Path:
        return self.home / "verify-results"

    @property
    def chains(self) -> Path:
        """Where a running chain leaves its marker, machine-wide: what an A/B queue waits for."""
        return Path(os.environ.get("CHAINS_DIR", "/tmp/chains"))

    @classmethod
    def from_env(cls) -> Ctx:
        rel = os.environ.get("REL", "")
        if not rel:
            raise Refused("REL: set REL to the staged release", 1)
        gpu = os.environ.get("GPU") or None
        if gpu is not None and not re.fullmatch(r"[0-9]+", gpu):
            raise Refused(f"GPU={gpu}: give one GPU's index, as nvidia-smi numbers them")
        home = Path(os.environ.get("HOME", "/root"))
        out = Path(os.environ.get("OUT") or "/tmp/out")
        out.mkdir(parents=True, exist_ok=True)
        return cls(rel, home, out, gpu, sites.paths(rel, home))


def rc_of(returncode: int) -> int:
    """A status as a shell reports it: 128 + N for a process killed by signal N."""
    return 128 - returncode if returncode < 0 else returncode


def verify_one(ctx: Ctx, site: str, preset: str, batch: str, mode: str, kv: str) -> None:
    """One verify of SITE in this call, its JSON and logs under $OUT."""
    from .verifies import summary

    tp, prefill = os.environ.get("TP", "1"), os.environ.get("PREFILL", "triton")
    tag = f"{kv}-{site}-{preset}-b{batch}-{mode}-tp{tp}-{prefill}"
    cmd = [PY, "apply.py", "verify", "--prefill-backend", prefill, "--work-dir", f"/tmp/v-{ctx.rel}-{tag}", "--json"]
    cmd += ["--tp", tp, "--kv-cache", kv, "--preset", preset, "--batch", batch, "--mode", mode]
    with open(ctx.out / f"{tag}.json", "w") as f:
        rc = subprocess.run(cmd, stdout=f, env={**os.environ, "PYTHONPATH": str(ctx.site[site])}).returncode
    print(f"{tag}: exit {rc}", flush=True)
    summary(ctx.out / f"{tag}.json")
    subprocess.run(
        ["tar", "-czf", str(ctx.out / f"{tag}-logs.tgz"), "--exclude=model", "-C", "/tmp", f"v-{ctx.rel}-{tag}"],
        stderr=subprocess.DEVNULL,
    )


def fastpath(ctx: Ctx) -> None:
    """vLLM #46460 on this release's real backend and kernels: the test builds the released,
    series-less-the-fix and shipped backends from the pristine site itself."""
    env = {**os.environ, "PYTHONPATH": f"{ctx.site['raw']}:.gpu-pytest", "VLLM_BACKPORTS_REQUIRE_VLLM": "1"}
    cmd = [PY, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", "--tb=short"]
    with open(ctx.out / "fastpath.txt", "w") as f:
        rc = subprocess.run([*cmd, "tests/gpu/test_turboquant_prefill_fastpath.py"], stdout=f, stderr=f, env=env)
    print(f"fastpath: exit {rc.returncode}")
    pick = re.compile(r"^[0-9.]+ cuda |passed|failed|FAILED|Error")
    print("\n".join([x for x in (ctx.out / "fastpath.txt").read_text().splitlines() if pick.search(x)][-20:]))


def bench_script(ctx: Ctx, which: str, args: list[str]) -> None:
    """bench-tq PASSES [ROUNDS] (the first site is the ratios' baseline) or bench-gdn PASSES ROUNDS
    [MODE [--no-ngram]] (raw against fix, no speculation and ngram)."""
    if which == "bench-tq":
        cmd = [PY, "benchmarks/bench_turboquant_mtp.py", f"--site=p65={ctx.site['p65']}"]
        cmd += [f"--site=fix={ctx.site['fix']}"]
        cmd += ["--passes", (args + ["1"])[0], "--rounds", (args[1:] + ["3"])[0], "--kv-cache", "turboquant_k8v4"]
        cmd += ["--out", str(ctx.out / "bench-tq-mtp.json")]
    else:
        mode = (args[2:] + ["eager"])[0]
        cmd = [PY, "benchmarks/bench_gdn_decode.py", f"--site=raw={ctx.site['raw']}"]
        cmd += [f"--site=fix={ctx.site['fix']}"]
        cmd += ["--passes", (args + ["2"])[0], "--rounds", (args[1:] + ["5"])[0], "--mode", mode, *args[3:4]]
        cmd += ["--prefill-backend", "triton", "--out", str(ctx.out / f"bench-gdn-{mode}.json")]
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print("\n".join(done.stdout.splitlines()[-40:]))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        raise Refused("usage: REL=X python3 -m lab.steps STEP [ARG...] (the module's docstring lists them)")
    step, args = argv[0], argv[1:]
    sys.stdout.reconfigure(line_buffering=True)  # in order with what the step's processes write
    if step == "collect":  # over HOMEs named on its line: no release of its own
        from .verifies import collect

        os.environ.setdefault("REL", "-")
    ctx = Ctx.from_env()
    os.environ.update(SAFE_ENV)
    if ctx.gpu is not None:
        os.environ.update(CUDA_VISIBLE_DEVICES=ctx.gpu, CUDA_DEVICE_ORDER="PCI_BUS_ID")
    if step == "bench-ab":
        from . import bench_queue

        return bench_queue.main(ctx, args)
    if step in ("chain", "put", "upstream-gpu"):
        from . import chain

        return getattr(chain, step.replace("-", "_"))(ctx, args) or 0
    if step in ("setup", "fi-site"):
        return getattr(sites, step.replace("-", "_"))(ctx) or 0
    if step in ("proofs", "bg", "poll", "watchdog"):
        from . import verifies

        return getattr(verifies, step)(ctx, args) or 0
    if step == "collect":
        return collect(ctx, float(args[0]), [Path(h) for h in args[1:]]) or 0
    if step in ("model", "model-compare"):
        from . import model

        return getattr(model, step.replace("-", "_"))(ctx, args) or 0
    if step == "verify":
        verify_one(ctx, *args[:5])
    elif step == "fastpath":
        fastpath(ctx)
    elif step in ("bench-tq", "bench-gdn"):
        bench_script(ctx, step, args)
    else:
        raise Refused(f"unknown step {step}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
