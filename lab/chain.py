"""A release's pieces onto the GPU machine (`put`), its install, setup and proofs run detached
(`chain`), and the release's own tests on the GPU (`upstream-gpu`).

    HOME=/root/h2 REL=0.26.0 python3 -m lab.steps put p0 [fi-p0 sdist ...]
    HOME=/root/h2 REL=0.26.0 python3 -m lab.steps chain [PROOF...] [upstream-gpu]
    REL=0.28.0 python3 -m lab.steps upstream-gpu

`chain` runs install.sh (carried as .stage-REL/install.sh with the last bundle part), fi-site
where FlashInfer's parts were put to $HOME/fi, setup and the proofs, from a copy of this tree under
$HOME/repo, so that the call returns at once and the next release can be staged while this one
runs. It leaves a marker in $CHAINS_DIR (default /tmp/chains) before the call returns, writes its
pid there, and removes it when it ends, beside its status in $HOME/chain.rc: what an A/B queue
waits for. SKIP_INSTALL=1 starts again after an install that went through. No proof names: the
default set; upstream-gpu alone, or `none`: setup only. The machine goes back 30 s after a call
ends: keep a `collect` call in flight while the runs go on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from .machine import detach
from .steps import PY, Ctx, rc_of

UPSTREAM = "upstream-gpu"


def put(ctx: Ctx, pieces: list[str]) -> int:
    """Pieces of .stage-REL and .stage-fi-REL carried in this call, each where install.sh, fi-site
    and upstream-gpu read it: pN (a bundle part), fi-pN (a FlashInfer part), sdist (the release's
    source archive, lab/runbook/stage-sdist.sh)."""
    for p in pieces:
        if p.startswith("fi-p") and p[4:].isdigit():
            src, dst = Path(f".stage-fi-{ctx.rel}/{p[3:]}").glob("*"), ctx.home / "fi"
        elif p.startswith("p") and p[1:2].isdigit():
            src, dst = Path(f".stage-{ctx.rel}/{p}").glob("part.*"), ctx.home / "vllm-stage"
        elif p == "sdist":
            src, dst = Path(f".stage-sdist-{ctx.rel}").glob("*"), ctx.home / "sdist"
        else:
            print(f"put: unknown piece {p}")
            return 1
        files = sorted(src)
        if not files:
            print(f"put: nothing carried for {p}")
            return 1
        dst.mkdir(parents=True, exist_ok=True)
        for f in files:
            shutil.copy(f, dst / f.name)
    print(f"put under {ctx.home}: {' '.join(pieces)}")
    return 0


def chain(ctx: Ctx, names: list[str]) -> int:
    repo = ctx.home / "repo"
    repo.mkdir(parents=True, exist_ok=True)
    if os.environ.get("SKIP_INSTALL", "0") != "1":
        try:
            shutil.copy(f".stage-{ctx.rel}/install.sh", ctx.home / "install.sh")
        except OSError as exc:
            print(f"chain: {exc}")
            return 1
    top = shutil.ignore_patterns(".stage-*")
    shutil.copytree(".", repo, symlinks=True, dirs_exist_ok=True, ignore=lambda d, n: top(d, n) if d == "." else ())
    ups = UPSTREAM in names
    proofs = [n for n in names if n != UPSTREAM]
    if ups and not (ctx.home / "sdist/sdist.sha256").is_file():
        print("chain: upstream-gpu needs the sdist put first (put sdist)")
        return 1
    if names and not proofs:
        proofs = ["none"]
    if ups:  # an earlier chain's result must not read as this one's: collect shows it waiting
        ctx.res.mkdir(parents=True, exist_ok=True)
        for old in ctx.res.glob(f"{UPSTREAM}*"):
            old.unlink()
        (ctx.res / f"{UPSTREAM}.err").write_text("upstream-gpu: waiting for the chain's setup\n")
    # made before this call returns, so that nothing started after it misses the chain
    mark = ctx.chains / str(ctx.home).replace("/", "_")
    ctx.chains.mkdir(parents=True, exist_ok=True)
    mark.touch()
    (ctx.home / "chain.rc").unlink(missing_ok=True)
    env = {**os.environ, "OUT": str(ctx.home / "out"), "CHAIN_MARK": str(mark), "CHAIN_UPSTREAM": str(int(ups))}
    detach([PY, "-m", "lab.chain", *proofs], repo, ctx.home / "chain.log", env=env)
    print(f"chain of {ctx.rel} started under {ctx.home}: {' '.join(names)}")
    return 0


def run_chain(ctx: Ctx, proofs: list[str]) -> int:
    """The detached chain, in $HOME/repo."""
    mark = Path(os.environ["CHAIN_MARK"])
    mark.write_text(f"{os.getpid()}\n")
    steps = [PY, "-m", "lab.steps"]

    def run(cmd: list[str], **kw) -> int:
        sys.stdout.flush()
        return rc_of(subprocess.run(cmd, stdin=subprocess.DEVNULL, **kw).returncode)

    s = 0 if os.environ.get("SKIP_INSTALL", "0") == "1" else run(["bash", str(ctx.home / "install.sh")])
    if s == 0 and (ctx.home / "fi").is_dir():
        run([*steps, "fi-site"])
    if s == 0:
        s = run([*steps, "setup"])
    if s == 0 and proofs != ["none"]:
        s = run([*steps, "proofs", *proofs])
    if os.environ.get("CHAIN_UPSTREAM") == "1":
        res = ctx.res
        if s == 0:
            with open(res / f"{UPSTREAM}.err", "w") as err:
                rc = run([*steps, UPSTREAM], stdout=err, stderr=subprocess.STDOUT, env={**os.environ, "OUT": str(res)})
            (res / f"{UPSTREAM}.rc").write_text(f"{rc}\n")
        else:
            with open(res / f"{UPSTREAM}.err", "a") as err:
                err.write(f"upstream-gpu not run: the chain stopped before it (exit {s})\n")
            (res / f"{UPSTREAM}.rc").write_text(f"{s}\n")
    (ctx.home / "chain.rc").write_text(f"{s}\n")
    mark.unlink(missing_ok=True)
    return s


def upstream_gpu(ctx: Ctx, _args: list[str]) -> int:
    """The release's own tests that exercise the series' files, on the GPU, pristine (the raw site)
    and patched (a copy apply.py patches): `maint upstream-tests --device cuda` from the archive of
    lab/runbook/stage-sdist.sh, carried as .stage-sdist-REL in this call or put before as the piece
    sdist (chain runs it so); exits as the tests' run did. Each side may take UPSTREAM_TIMEOUT s
    (default 1500): 0.28.0's pristine side took 417 s on an H200 beside other verifies and 0.31.0's
    ran past 560 s (2026-11-27); the chain runs this step detached, so no call's 600 s bounds it."""
    sd = Path(f".stage-sdist-{ctx.rel}")
    if not sd.is_dir():
        sd = ctx.home / "sdist"
    archives = sorted(sd.glob("vllm-*.tar.gz"))
    if not archives:
        print(f"upstream-gpu: no vllm-*.tar.gz in {sd}")
        return 1
    # upstream's conftest imports tblib, which the GPU image lacks: its wheel comes with the archive
    t = Path(f"/tmp/upstream-site-{ctx.rel}")
    shutil.rmtree(t, ignore_errors=True)
    pip = [PY, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--target", str(t)]
    if subprocess.run([*pip, *map(str, sd.glob("tblib-*.whl"))]).returncode != 0:
        return 1
    report, text = ctx.out / f"upstream-gpu-{ctx.rel}.json", ctx.out / f"upstream-gpu-{ctx.rel}.txt"
    cmd = [PY, "-m", "vllm_backports.maint", "upstream-tests", ctx.rel, "--device", "cuda", "--sdist", str(archives[0])]
    cmd += ["--sha256", (sd / "sdist.sha256").read_text().strip()]
    cmd += ["--timeout", os.environ.get("UPSTREAM_TIMEOUT", "1500")]
    env = {**os.environ, "PYTHONPATH": f"{ctx.site['raw']}:{t}:.gpu-pytest"}
    with open(text, "w") as f:
        rc = rc_of(subprocess.run([*cmd, "--json", "--out", str(report)], stdout=f, stderr=f, env=env).returncode)
    print(f"upstream-gpu: exit {rc}")
    try:
        import json

        d = json.loads(report.read_text())
        print(d["verdict"], d["totals"], d["machine"].get("gpu"))
    except (OSError, ValueError, KeyError):
        print("\n".join(text.read_text(errors="replace").splitlines()[-5:]))
    return rc


if __name__ == "__main__":
    sys.exit(run_chain(Ctx.from_env(), sys.argv[1:]))
